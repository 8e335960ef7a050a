// Reading and paying as readers do: the archive and the paywall for a free
// and a Pro reader (with and without JavaScript), then the pricing page, a
// founder checkout through the local fake of Stripe (the real Stripe cannot
// be reached from these machines), the signed webhook, the live seat
// counter, and the founder-only issue opening.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { launchBrowser, watchErrors, waitForHydration } from "../support/browser.mjs";
import { startServer } from "../support/server.mjs";
import { startFakeStripe } from "../support/fake-stripe.mjs";

const SHOTS = resolve(import.meta.dirname, "..", "screenshots");
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const PRO_MARKER = "The digest trick: hash the state, not the transcript.";
const FOUNDER_MARKER = "Founders read this first.";
const WEBHOOK_SECRET = "whsec_browser_test";

async function visit(page, url) {
  const response = await page.goto(url);
  await waitForHydration(page);
  return response;
}

describe("subscriptions", () => {
  let stripe;
  let server;
  let browser;

  const cli = (...args) =>
    execFileSync(process.env.FIXEDPOINT_BIN ?? "../target/debug/fixedpoint", args, {
      env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.base, RUST_LOG: "warn" },
    }).toString();

  // Signs `email` in on `context` through a one-time link (the support tool).
  async function signIn(context, email) {
    const link = cli("login-link", email).trim().split("\n").pop();
    const page = await context.newPage();
    await page.goto(link);
    await page.getByTestId("verify-submit").click();
    await page.waitForURL(/\/account/);
    await page.close();
  }

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    stripe = await startFakeStripe({ webhookSecret: WEBHOOK_SECRET });
    server = await startServer({
      env: {
        STRIPE_SECRET_KEY: "sk_test_browser",
        STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
        STRIPE_API_BASE: stripe.url,
        STRIPE_PRICE_PRO_MONTHLY: "price_pro_monthly",
        STRIPE_PRICE_PRO_YEARLY: "price_pro_yearly",
        STRIPE_PRICE_FOUNDER_YEARLY: "price_founder_yearly",
      },
    });
    stripe.state.config.webhook_url = `${server.base}/stripe/webhook`;
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await stripe?.close();
  });

  test("a free reader meets the upgrade card; a Pro reader reads to the end", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = watchErrors(page);
    const bodies = [];
    page.on("response", async (response) => {
      try {
        bodies.push(await response.text());
      } catch {
        // Redirects and aborted bodies have no text.
      }
    });

    await visit(page, `${server.base}/`);
    await page.getByTestId("latest-issue").getByRole("link", { name: "The loop that could not stop" }).waitFor();
    await page.getByRole("link", { name: "Archive" }).click();
    await page.waitForURL(`${server.base}/issues`);
    await waitForHydration(page);
    await page.screenshot({ path: join(SHOTS, "archive.png"), fullPage: true });
    await page.getByRole("link", { name: "Fixed points and cycles" }).click();
    await page.waitForURL(/fixed-points-and-cycles/);
    await waitForHydration(page);
    await page.getByTestId("upgrade-card").waitFor();
    assert.match(await page.getByTestId("upgrade-card").innerText(), /for Pro readers/);
    await page.screenshot({ path: join(SHOTS, "issue-locked.png"), fullPage: true });

    await signIn(context, "reader@example.com");
    await visit(page, `${server.base}/issues/fixed-points-and-cycles`);
    await page.getByTestId("upgrade-card").waitFor();
    for (const body of bodies) assert.ok(!body.includes(PRO_MARKER), "no response to a free reader carries the paid part");

    cli("grant", "reader@example.com", "--tier", "pro", "--days", "30");
    await visit(page, `${server.base}/issues/fixed-points-and-cycles`);
    assert.match(await page.getByTestId("issue-paid").innerText(), /The digest trick/);
    assert.equal(await page.getByTestId("upgrade-card").count(), 0);
    const pre = page.locator("pre.code .hl-keyword").first();
    assert.ok(await pre.count(), "code is highlighted");
    await page.screenshot({ path: join(SHOTS, "issue-pro.png"), fullPage: true });

    await page.addScriptTag({ content: AXE });
    const result = await page.evaluate(async () => await window.axe.run(document));
    const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
    assert.deepEqual(bad, [], "issue page");
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("without JavaScript both readers get their page", async () => {
    const anonymous = await browser.newContext({ javaScriptEnabled: false });
    const page = await anonymous.newPage();
    await page.goto(`${server.base}/issues/fixed-points-and-cycles`);
    assert.match(await page.getByTestId("upgrade-card").innerText(), /for Pro readers/);
    assert.ok(!(await page.content()).includes(PRO_MARKER));
    await anonymous.close();

    const pro = await browser.newContext({ javaScriptEnabled: false });
    // Sign in with the form (no script needed), then read.
    const link = cli("login-link", "nojs@example.com").trim().split("\n").pop();
    cli("grant", "nojs@example.com", "--tier", "pro");
    const proPage = await pro.newPage();
    await proPage.goto(link);
    await proPage.getByTestId("verify-submit").click();
    await proPage.waitForURL(/\/account/);
    await proPage.goto(`${server.base}/issues/fixed-points-and-cycles`);
    assert.match(await proPage.getByTestId("issue-paid").innerText(), /The digest trick/);
    await pro.close();
  });

  test("pricing, founder checkout through Stripe, the webhook, the live counter, the founder issue", async () => {
    const watcherContext = await browser.newContext();
    const watcher = await watcherContext.newPage();
    await visit(watcher, `${server.base}/pricing`);
    assert.match(await watcher.getByTestId("founder-count").innerText(), /^0 of 100 founder seats taken/);

    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = watchErrors(page);
    await visit(page, `${server.base}/pricing`);
    // Signed out, the plans ask to sign in first.
    await page.getByTestId("signin-to-founder").waitFor();
    await page.setViewportSize({ width: 360, height: 800 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    assert.equal(overflow, false, "no horizontal scroll at 360 px");
    await page.screenshot({ path: join(SHOTS, "pricing-phone.png"), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.addScriptTag({ content: AXE });
    const result = await page.evaluate(async () => await window.axe.run(document));
    const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
    assert.deepEqual(bad, [], "pricing page");

    await signIn(context, "founder@example.com");
    await visit(page, `${server.base}/pricing`);
    await page.screenshot({ path: join(SHOTS, "pricing.png"), fullPage: true });
    await page.getByTestId("checkout-founder_yearly").click();
    await page.waitForURL(/\/checkout\/cs_/);
    assert.ok(page.url().startsWith(stripe.url), "the button leads to the (fake) Stripe Checkout");
    await page.getByTestId("fake-stripe-pay").click();
    await page.waitForURL(`${server.base}/checkout/thanks`);
    await waitForHydration(page);
    assert.equal(await page.getByTestId("thanks-status").getAttribute("data-tier"), "founder");
    assert.equal(await page.getByTestId("thanks-back").count(), 0, "no page to go back to from the pricing page");
    await visit(page, `${server.base}/account`);
    assert.match(await page.getByTestId("account-tier").innerText(), /Founder/);

    // The other reader's pricing page follows the live count.
    await watcher.getByTestId("founder-taken").filter({ hasText: "1" }).waitFor({ timeout: 10_000 });
    assert.match(await watcher.getByTestId("founder-count").innerText(), /^1 of 100 founder seats taken/);
    const api = await (await fetch(`${server.base}/api/v1/founders`)).json();
    assert.deepEqual(api, { taken: 1, total: 100, open: true });

    await visit(page, `${server.base}/issues/founders-field-notes`);
    assert.match(await page.getByTestId("issue-paid").innerText(), new RegExp(FOUNDER_MARKER));
    // The fake Stripe's pages are not ours (its missing favicon is a console
    // error without a URL); every HTTP error of this site is still caught
    // (as "HTTP <status>: <url>").
    const ours = errors.filter((e) => !e.includes(stripe.url) && !e.startsWith("console: Failed to load resource"));
    assert.deepEqual(ours, []);
    await watcherContext.close();
    await context.close();
  });
});
