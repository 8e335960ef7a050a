// Starts a real `fixedpoint serve` for a test file: its own SQLite database
// in a temporary directory, a free port, and the built site bundle. Resolves
// once /healthz answers 200; `stop()` sends SIGTERM and waits for the exit.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..", "..");

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolvePort(port));
    });
  });
}

// The built site the tests serve, and the build its bundle is
// (`pkg/build-id`: the files are under `pkg/<id>/`).
export const SITE_ROOT = process.env.LEPTOS_SITE_ROOT ?? join(ROOT, "target", "site");

export function buildId(siteRoot = SITE_ROOT) {
  return readFileSync(join(siteRoot, "pkg", "build-id"), "utf8").trim();
}

// `siteRoot` serves another build; `port` listens where an earlier server
// did (the same origin, as a deploy keeps it).
export async function startServer({ env = {}, siteRoot = SITE_ROOT, port } = {}) {
  const bin = process.env.FIXEDPOINT_BIN ?? join(ROOT, "target", "debug", "fixedpoint");
  const dir = mkdtempSync(join(tmpdir(), "fixedpoint-e2e-"));
  port ??= await freePort();
  const base = `http://127.0.0.1:${port}`;
  const databaseUrl = `sqlite://${join(dir, "e2e.db")}?mode=rwc`;
  const child = spawn(bin, ["serve"], {
    cwd: dir,
    env: {
      ...process.env,
      FIXEDPOINT_ADDR: `127.0.0.1:${port}`,
      DATABASE_URL: databaseUrl,
      PUBLIC_URL: base,
      LEPTOS_SITE_ROOT: siteRoot,
      RUST_LOG: process.env.RUST_LOG ?? "warn",
      ...env,
    },
    stdio: ["ignore", "inherit", "pipe"],
  });
  let log = "";
  child.stderr.on("data", (chunk) => {
    log += chunk;
    process.stderr.write(chunk);
  });
  const exited = new Promise((done) => child.on("exit", (code, signal) => done({ code, signal })));

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`fixedpoint exited early (${child.exitCode}):\n${log}`);
    try {
      const response = await fetch(`${base}/healthz`);
      if (response.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`fixedpoint did not become healthy in 60 s:\n${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    base,
    port,
    dir,
    databaseUrl,
    log: () => log,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      const result = await exited;
      rmSync(dir, { recursive: true, force: true });
      return result;
    },
  };
}
