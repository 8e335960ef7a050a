// Sign-in as a reader does it: ask for a link, receive it through a real SMTP
// server, open it, confirm, see the account, sign out.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { launchBrowser, watchErrors, waitForHydration } from "../support/browser.mjs";
import { startServer } from "../support/server.mjs";
import { startSmtpSink } from "../support/smtp.mjs";

const SHOTS = resolve(import.meta.dirname, "..", "screenshots");
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

// Opens a page and waits until its bundle has loaded and hydrated: leaving a
// page while its wasm still downloads aborts that request, which the error
// watch would report.
async function visit(page, url) {
  const response = await page.goto(url);
  await waitForHydration(page);
  return response;
}

describe("accounts", () => {
  let smtp;
  let server;
  let browser;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    smtp = await startSmtpSink();
    server = await startServer({ env: { SMTP_URL: smtp.url } });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.stop();
  });

  test("sign in from the mailed link, see the account, sign out", async () => {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    await visit(page, `${server.base}/`);
    await page.getByRole("link", { name: "Sign in", exact: true }).click();
    await page.waitForURL(`${server.base}/signin`);
    await waitForHydration(page);
    await page.getByLabel("Email address").fill("reader@example.com");
    await page.getByRole("button", { name: "Mail me a sign-in link" }).click();
    await page.getByTestId("signin-sent").waitFor();

    const mail = await smtp.nextMail("reader@example.com");
    assert.equal(mail.subject, "Your Fixed Point sign-in link");
    const link = /https?:\/\/\S+\/signin\/verify\?token=fps_[0-9a-f]{64}/.exec(mail.body)?.[0];
    assert.ok(link, `a link in the mail:\n${mail.body}`);
    assert.ok(link.startsWith(server.base), "the link points at this site (PUBLIC_URL)");

    // Opening the link shows a button; only pressing it signs in.
    await visit(page, link);
    assert.equal(await page.getByRole("link", { name: "Sign in", exact: true }).count(), 1, "not signed in yet");
    await page.screenshot({ path: join(SHOTS, "signin-confirm.png") });
    await Promise.all([page.waitForURL(`${server.base}/account`), page.getByTestId("verify-submit").click()]);
    await waitForHydration(page);
    assert.equal(await page.getByTestId("account-email").innerText(), "reader@example.com");
    assert.equal(await page.getByRole("link", { name: "Account", exact: true }).count(), 1);
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === "fp_session");
    assert.ok(session?.httpOnly && session.sameSite === "Lax", JSON.stringify(session));
    assert.equal(await page.evaluate(() => document.cookie.includes("fp_session")), false, "scripts cannot read it");
    await page.screenshot({ path: join(SHOTS, "account.png"), fullPage: true });

    // The link is spent.
    await visit(page, link);
    await page.getByTestId("verify-submit").click();
    await page.getByTestId("verify-error").waitFor();
    await waitForHydration(page);

    await visit(page, `${server.base}/account`);
    await Promise.all([page.waitForURL(`${server.base}/`), page.getByTestId("signout").click()]);
    await waitForHydration(page);
    assert.equal(await page.getByRole("link", { name: "Sign in", exact: true }).count(), 1);
    const account = await visit(page, `${server.base}/account`);
    assert.equal(account.status(), 401);
    // The spent link's page (400) and the signed-out account (401) are
    // expected refusals; anything else is a fault.
    assert.deepEqual(errors.filter((e) => !/HTTP (400|401)|status of (400|401)/.test(e)), []);
    await page.close();
  });

  test("a team admin manages tokens and members; the operator sees the outbox", async () => {
    // The operator's commands, against the running server's database.
    const cli = (...args) =>
      execFileSync(process.env.FIXEDPOINT_BIN ?? "../target/debug/fixedpoint", args, {
        env: { ...process.env, DATABASE_URL: server.databaseUrl, RUST_LOG: "warn" },
      }).toString();
    cli("team", "create", "acme");
    cli("team", "add-member", "acme", "lead@example.com", "--admin");
    cli("admin", "grant", "lead@example.com");

    const page = await browser.newPage();
    const errors = watchErrors(page);
    await visit(page, `${server.base}/signin`);
    await page.getByLabel("Email address").fill("lead@example.com");
    await page.getByRole("button", { name: "Mail me a sign-in link" }).click();
    await page.getByTestId("signin-sent").waitFor();
    const mail = await smtp.nextMail("lead@example.com");
    await visit(page, /https?:\/\/\S+token=fps_[0-9a-f]{64}/.exec(mail.body)[0]);
    await Promise.all([page.waitForURL(`${server.base}/account`), page.getByTestId("verify-submit").click()]);
    await waitForHydration(page);

    await page.getByRole("link", { name: "acme" }).click();
    await page.waitForURL(`${server.base}/teams/acme`);
    // Each page loads its own code: a form sent while it is still on its
    // way aborts the fetch, and the departing page reports that.
    await waitForHydration(page);
    await page.getByLabel("New loop token, named").fill("nightly");
    await page.getByRole("button", { name: "Create token" }).click();
    const token = await page.getByTestId("new-token").locator("code").innerText();
    assert.match(token, /^fpl_[0-9a-f]{64}$/);
    await page.screenshot({ path: join(SHOTS, "team.png"), fullPage: true });
    // The token reports a round; then it is revoked and stops at once.
    const round = () =>
      fetch(`${server.base}/api/v1/loops/nightly/rounds`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ round: 1, state: "a1", findings: [] }),
      });
    assert.equal((await round()).status, 200);
    // The dashboard shows the loop the token just reported.
    await visit(page, `${server.base}/`);
    await page.getByRole("link", { name: "Loops", exact: true }).click();
    await page.waitForURL(`${server.base}/loops`);
    await waitForHydration(page);
    await page.getByTestId("loop-nightly").getByRole("link").click();
    await page.getByTestId("chart").locator("svg").waitFor();
    await waitForHydration(page);
    assert.match(await page.getByTestId("timeline").innerText(), /^a1$/);
    await page.getByTestId("stop").click();
    await page.getByTestId("stop-confirm").click();
    await page.getByTestId("pending").filter({ hasText: "STOP" }).waitFor();
    // Live: the next round appears without a reload, and its response
    // carries the STOP, which the page then no longer shows as pending.
    await page.getByTestId("live-status").filter({ hasText: "Live" }).waitFor();
    const second = await fetch(`${server.base}/api/v1/loops/nightly/rounds`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ round: 2, state: "b2", findings: [{ target: { path: "draft.md", start_line: 4, end_line: 9 }, severity: "blocking", criterion: "tests", message: "still failing" }] }),
    });
    assert.equal(second.status, 200);
    assert.equal((await second.json()).operator.stop, true, "the STOP is delivered in the next round's response");
    await page.getByTestId("rounds").locator("tbody tr").nth(1).waitFor({ timeout: 10_000 });
    await page.getByTestId("timeline").filter({ hasText: "b2" }).waitFor();
    assert.equal(await page.getByTestId("pending").count(), 0);
    await page.screenshot({ path: join(SHOTS, "loop.png"), fullPage: true });
    // Two rounds compared: the blocking finding round 2 brought is new.
    await page.getByLabel("Round", { exact: true }).selectOption("1");
    await page.getByLabel("against round").selectOption("2");
    await Promise.all([page.waitForURL(/a=1&b=2/), page.getByRole("button", { name: "Compare" }).click()]);
    await waitForHydration(page);
    assert.match(await page.getByTestId("diff-new").innerText(), /draft\.md/);
    // A round stored after the page was rendered, before its live stream
    // connected, still appears without a reload: the stream resumes after
    // the newest round the page was rendered with. The stream's request is
    // held back until the round is stored, so the race is run every time.
    const post = (loop, body) =>
      fetch(`${server.base}/api/v1/loops/${loop}/rounds`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    assert.equal((await post("fresh", { round: 1, state: "f1", findings: [] })).status, 200);
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await page.route("**/loops/fresh/events*", async (route) => { await held; await route.continue(); });
    await visit(page, `${server.base}/loops/fresh`);
    assert.match(await page.getByTestId("timeline").innerText(), /^f1$/);
    assert.equal((await post("fresh", { round: 2, state: "f2", findings: [] })).status, 200);
    release();
    await page.getByTestId("timeline").filter({ hasText: "f2" }).waitFor({ timeout: 10_000 });
    await page.getByTestId("live-status").filter({ hasText: "Live" }).waitFor();
    await page.unroute("**/loops/fresh/events*");
    // Another team's loop does not exist for this reader.
    cli("team", "create", "beta");
    const betaToken = cli("token", "create", "--team", "beta", "--name", "x").trim().split("\n").pop();
    const beta = await fetch(`${server.base}/api/v1/loops/hidden/rounds`, {
      method: "POST",
      headers: { authorization: `Bearer ${betaToken}`, "content-type": "application/json" },
      body: JSON.stringify({ round: 1, state: "z1", findings: [] }),
    });
    assert.equal(beta.status, 200);
    // (Fetched with the page's session rather than opened, so the expected
    // 404s are not counted as the page's errors.)
    const foreign = await page.request.get(`${server.base}/loops/hidden?team=beta`);
    assert.equal(foreign.status(), 404);
    assert.match(await foreign.text(), /data-testid="not-found"/);
    assert.ok(!(await foreign.text()).includes("z1"), "nothing of the other team's loop");
    assert.equal((await page.request.get(`${server.base}/loops/hidden/view.json?team=beta`)).status(), 404);
    assert.equal((await page.request.get(`${server.base}/loops/hidden/events?team=beta`)).status(), 404);
    await visit(page, `${server.base}/teams/acme`);
    assert.equal(await page.getByTestId("tokens").locator("tbody tr").count(), 1);
    await page.getByTestId("tokens").getByRole("button", { name: "Revoke" }).click();
    await page.getByTestId("tokens").getByText(/revoked/).waitFor();
    assert.equal((await round()).status, 401);

    await page.getByLabel("Invite a member by email").fill("new@example.com");
    await page.getByRole("button", { name: "Invite" }).click();
    await page.getByTestId("team-notice").filter({ hasText: "Added new@example.com" }).waitFor();
    assert.match((await smtp.nextMail("new@example.com")).subject, /added to a team/);

    // Phone width: the account pages never scroll sideways (wide tables
    // scroll inside their own box).
    await page.setViewportSize({ width: 360, height: 800 });
    for (const path of ["/loops", "/loops/nightly", "/teams/acme", "/account"]) {
      await visit(page, `${server.base}${path}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
      assert.equal(overflow, false, `no horizontal scroll at 360 px on ${path}`);
      await page.addScriptTag({ content: AXE });
      const result = await page.evaluate(async () => await window.axe.run(document));
      const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
      assert.deepEqual(bad, [], `axe on ${path}`);
    }
    await visit(page, `${server.base}/loops/nightly`);
    await page.screenshot({ path: join(SHOTS, "loop-phone.png"), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 720 });

    await visit(page, `${server.base}/admin/outbox`);
    assert.match(await page.getByTestId("outbox").innerText(), /You were added to a team/);
    assert.match(await page.getByTestId("admin-accounts").innerText(), /new@example\.com/);
    await page.screenshot({ path: join(SHOTS, "admin.png"), fullPage: true });
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("the sign-in pages have no serious accessibility violation", async () => {
    const page = await browser.newPage();
    for (const path of ["/signin", "/signin/verify?token=fps_x"]) {
      await visit(page, `${server.base}${path}`);
      await page.addScriptTag({ content: AXE });
      const result = await page.evaluate(async () => await window.axe.run(document));
      const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
      assert.deepEqual(bad, [], path);
    }
    await page.close();
  });
});
