// A real SMTP server for browser tests: Python's aiosmtpd (installed into
// end2end/.venv by .ci/lib.sh) writing every message it receives into a
// maildir. `nextMail(to)` waits for a message to that address and returns its
// decoded plain text body (and HTML part, and unsubscribe headers), parsed by
// Python's own email package.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "./server.mjs";

const PYTHON = resolve(import.meta.dirname, "..", ".venv", "bin", "python");

function answers(port) {
  return new Promise((done) => {
    const socket = createConnection({ port, host: "127.0.0.1" }, () => {
      socket.end();
      done(true);
    });
    socket.on("error", () => done(false));
  });
}

export async function startSmtpSink() {
  const dir = mkdtempSync(join(tmpdir(), "fixedpoint-smtp-"));
  const maildir = join(dir, "mail");
  const port = await freePort();
  const child = spawn(
    PYTHON,
    ["-m", "aiosmtpd", "-n", "-l", `127.0.0.1:${port}`, "-c", "aiosmtpd.handlers.Mailbox", maildir],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  const deadline = Date.now() + 20_000;
  while (!(await answers(port))) {
    if (child.exitCode !== null) throw new Error(`aiosmtpd exited (${child.exitCode}); run .ci/lib.sh's ensure_smtp_sink`);
    if (Date.now() > deadline) throw new Error("aiosmtpd did not start in 20 s");
    await new Promise((r) => setTimeout(r, 100));
  }
  const read = (file) =>
    JSON.parse(
      execFileSync(PYTHON, [
        "-c",
        "import email, email.policy, json, sys; m = email.message_from_binary_file(open(sys.argv[1], 'rb'), policy=email.policy.default);" +
          "text = m.get_body(preferencelist=('plain',)); html = m.get_body(preferencelist=('html',));" +
          "print(json.dumps({'to': str(m['To']), 'subject': str(m['Subject']), 'body': text.get_content() if text else ''," +
          " 'html': html.get_content() if html else None, 'listUnsubscribe': m['List-Unsubscribe'] and str(m['List-Unsubscribe'])," +
          " 'listUnsubscribePost': m['List-Unsubscribe-Post'] and str(m['List-Unsubscribe-Post'])}))",
        file,
      ]).toString(),
    );
  const seen = new Set();
  return {
    url: `smtp://127.0.0.1:${port}`,
    async nextMail(to, timeout = 20_000) {
      const until = Date.now() + timeout;
      for (;;) {
        for (const sub of ["new", "cur"]) {
          let files = [];
          try {
            files = readdirSync(join(maildir, sub));
          } catch {
            // The maildir appears with the first message.
          }
          for (const name of files) {
            const file = join(maildir, sub, name);
            if (seen.has(file)) continue;
            const mail = read(file);
            if (mail.to.includes(to)) {
              seen.add(file);
              return mail;
            }
          }
        }
        if (Date.now() > until) throw new Error(`no mail to ${to} within ${timeout} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop() {
      child.kill("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
