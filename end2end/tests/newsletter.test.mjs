// The newsletter by email as a reader meets it: subscribe from an issue page,
// confirm from the mailed link, receive the next issue, unsubscribe from the
// link in that mail; with JavaScript and without.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { launchBrowser, watchErrors, waitForHydration } from "../support/browser.mjs";
import { startServer } from "../support/server.mjs";
import { startSmtpSink } from "../support/smtp.mjs";

const SHOTS = resolve(import.meta.dirname, "..", "screenshots");
const BIN = process.env.FIXEDPOINT_BIN ?? resolve(import.meta.dirname, "..", "..", "target", "debug", "fixedpoint");

describe("newsletter by email", () => {
  let smtp;
  let server;
  let browser;
  let issues;
  let sent = 0;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    issues = mkdtempSync(join(tmpdir(), "fixedpoint-issues-"));
    smtp = await startSmtpSink();
    server = await startServer({ env: { SMTP_URL: smtp.url, FIXEDPOINT_MAIL_RATE_PER_SECOND: "0" } });
    browser = await launchBrowser();
    // A subscriber of long standing, so that every send has a recipient.
    writeFileSync(join(issues, "list.csv"), "email\nregular@example.com\n");
    execFileSync(BIN, ["subscribers", "import", join(issues, "list.csv"), "--confirmed"], {
      env: { ...process.env, DATABASE_URL: server.databaseUrl, RUST_LOG: "warn" },
    });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.stop();
    rmSync(issues, { recursive: true, force: true });
  });

  // Publishes and sends a new issue with the operator's commands.
  function sendIssue() {
    sent += 1;
    const slug = `weekly-${sent}`;
    writeFileSync(
      join(issues, `${slug}.md`),
      `---\ntitle: "Weekly ${sent}"\nslug: ${slug}\ndate: 2026-12-0${sent}\ntier: free\nsummary: "Issue ${sent}."\n---\nThe body of weekly ${sent}.\n\n` +
        "```python\nwhile not judge(draft).done:  # one pass of the loop, with a comment long enough to pass a phone's width\n    draft = revise(draft)\n```\n",
    );
    const env = { ...process.env, DATABASE_URL: server.databaseUrl, RUST_LOG: "warn" };
    execFileSync(BIN, ["issues", "import", issues], { env });
    return { slug, out: execFileSync(BIN, ["issues", "send", slug], { env }).toString() };
  }

  async function journey(page, email, javascript) {
    const open = async (url) => {
      await page.goto(url);
      if (javascript) await waitForHydration(page);
    };
    // Subscribe from an issue page.
    await open(`${server.base}/issues/the-loop-that-could-not-stop`);
    const form = page.getByTestId("subscribe-form-issue");
    await form.getByLabel("Email address").fill(email);
    await Promise.all([page.waitForURL(`${server.base}/subscribe?sent=1`), form.getByRole("button", { name: "Subscribe" }).click()]);
    await page.getByTestId("subscribe-sent").waitFor();

    // Confirm from the mail: the link opens a page; only its button confirms.
    const confirmation = await smtp.nextMail(email);
    assert.equal(confirmation.subject, "Confirm your Fixed Point subscription");
    const link = /https?:\/\/\S+\/subscribe\/confirm\?token=fpc_[0-9a-f]{64}/.exec(confirmation.body)?.[0];
    assert.ok(link?.startsWith(server.base), confirmation.body);
    await open(link);
    await page.screenshot({ path: join(SHOTS, `subscribe-confirm-${javascript ? "js" : "nojs"}.png`) });
    await page.getByTestId("confirm-submit").click();
    await page.getByTestId("subscribe-confirmed").waitFor();

    // The next issue arrives.
    const { slug, out } = sendIssue();
    assert.match(out, /queued weekly-\d .* for \d+ recipients/, out);
    const issue = await smtp.nextMail(email);
    assert.match(issue.subject, /^Weekly \d$/);
    assert.ok(issue.body.includes(`${server.base}/issues/${slug}`), issue.body);
    assert.ok(issue.html?.includes("The body of weekly"), "an HTML part too");
    assert.equal(issue.listUnsubscribePost, "List-Unsubscribe=One-Click");
    const unsubscribe = /<(\S+\/unsubscribe\/fpu_[0-9a-f]{64})>/.exec(issue.listUnsubscribe)?.[1];
    assert.ok(unsubscribe, issue.listUnsubscribe);
    assert.ok(issue.body.includes(unsubscribe), "the same link is in the text");
    if (javascript) await readOnAPhone(issue.html);

    // Unsubscribe from the mail's link: a page with a button.
    await open(unsubscribe);
    await page.getByTestId("unsubscribe-submit").click();
    await page.getByTestId("unsubscribed").waitFor();
    await page.screenshot({ path: join(SHOTS, `unsubscribed-${javascript ? "js" : "nojs"}.png`) });

    // And the issue after that does not come.
    const next = sendIssue();
    const status = execFileSync(BIN, ["issues", "delivery", next.slug], {
      env: { ...process.env, DATABASE_URL: server.databaseUrl, RUST_LOG: "warn" },
    }).toString();
    assert.match(status, /queued: \d+/);
    await assert.rejects(smtp.nextMail(email, 3_000), /no mail to/);
  }

  // The HTML part as a phone's mail app shows it (390 px, no stylesheet:
  // every style is inline): nothing scrolls sideways, the code keeps the
  // site's colours and wraps.
  async function readOnAPhone(html) {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, javaScriptEnabled: false });
    const mail = await context.newPage();
    await mail.setContent(html);
    await mail.screenshot({ path: join(SHOTS, "newsletter-mail-phone.png"), fullPage: true });
    const sideways = await mail.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    assert.equal(sideways, false, "the mail does not scroll sideways at 390 px");
    assert.equal(await mail.locator("style, link[rel=stylesheet]").count(), 0, "styles are inline only");
    const keyword = mail.locator("pre.code .hl-keyword").first();
    assert.equal(await keyword.evaluate((el) => getComputedStyle(el).color), "rgb(240, 163, 94)", "the site's keyword colour");
    assert.equal(await mail.locator("pre.code").evaluate((el) => getComputedStyle(el).whiteSpace), "pre-wrap");
    await context.close();
  }

  test("subscribe, confirm, receive, unsubscribe (JavaScript on)", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = watchErrors(page);
    await journey(page, "js-reader@example.com", true);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("subscribe, confirm, receive, unsubscribe (JavaScript off)", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await journey(page, "nojs-reader@example.com", false);
    await context.close();
  });
});
