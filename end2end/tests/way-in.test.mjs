// The reader's way in, as a new reader walks it: a free reader meets a paid
// issue's paywall, signs in with the link a real SMTP server received, lands
// back on the issue, pays for Pro from the paywall through the local fake of
// Stripe Checkout (the real Stripe cannot be reached from these machines),
// reads the thank-you page once Stripe's webhook has come, and follows its
// link back to the issue, now whole. On a phone (390 px) and a desktop
// (1280 px), with axe on every page of ours.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { launchBrowser, watchErrors, waitForHydration } from "../support/browser.mjs";
import { startServer } from "../support/server.mjs";
import { startFakeStripe } from "../support/fake-stripe.mjs";
import { startSmtpSink } from "../support/smtp.mjs";

const SHOTS = resolve(import.meta.dirname, "..", "screenshots");
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const ISSUE = "/issues/fixed-points-and-cycles";
const PAID_MARKER = "The digest trick: hash the state, not the transcript.";
const WEBHOOK_SECRET = "whsec_way_in_test";

async function visit(page, url) {
  await page.goto(url);
  await waitForHydration(page);
}

// axe's serious and critical findings on the page, and whether the page
// scrolls sideways (it must not, at any width).
async function check(page, what) {
  await page.addScriptTag({ content: AXE });
  const result = await page.evaluate(async () => await window.axe.run(document));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
  assert.deepEqual(bad, [], `axe on ${what}`);
  const sideways = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  assert.equal(sideways, false, `${what} does not scroll sideways`);
}

describe("the reader's way in", () => {
  let smtp;
  let stripe;
  let server;
  let browser;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    smtp = await startSmtpSink();
    stripe = await startFakeStripe({ webhookSecret: WEBHOOK_SECRET });
    server = await startServer({
      env: {
        SMTP_URL: smtp.url,
        STRIPE_SECRET_KEY: "sk_test_way_in",
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
    await smtp?.stop();
  });

  for (const [width, email] of [
    [390, "phone-reader@example.com"],
    [1280, "desk-reader@example.com"],
  ]) {
    test(`paywall, sign in, back to the issue, pay, thanks, the whole issue (${width} px)`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      const page = await context.newPage();
      const errors = watchErrors(page);
      const shot = (name) => page.screenshot({ path: join(SHOTS, `way-in-${name}-${width}.png`), fullPage: true });

      // The paywall of a paid issue, signed out.
      await visit(page, `${server.base}${ISSUE}`);
      const card = page.getByTestId("upgrade-card");
      assert.match(await card.innerText(), /for Pro readers/);
      await check(page, "the paywall, signed out");
      await shot("paywall");

      // Sign in from it: the mailed link and its confirm page bring the
      // reader back to the issue.
      await card.getByTestId("upgrade-signin").click();
      await page.waitForURL(/\/signin\?next=/);
      await waitForHydration(page);
      await check(page, "the sign-in page");
      await page.getByLabel("Email address").fill(email);
      await page.getByRole("button", { name: "Mail me a sign-in link" }).click();
      await page.getByTestId("signin-sent").waitFor();
      const mail = await smtp.nextMail(email);
      const link = /https?:\/\/\S+\/signin\/verify\?\S*token=fps_[0-9a-f]{64}/.exec(mail.body)?.[0];
      assert.ok(link?.startsWith(server.base), mail.body);
      assert.ok(link.includes(`next=${ISSUE}&`), `the link carries the issue: ${link}`);
      await visit(page, link);
      await check(page, "the confirm page");
      await Promise.all([page.waitForURL(`${server.base}${ISSUE}`), page.getByTestId("verify-submit").click()]);
      await waitForHydration(page);

      // Back on the issue, signed in: the plans are on the paywall itself.
      assert.equal(await page.getByTestId("issue-paid").count(), 0, "still free");
      await page.getByTestId("checkout-pro_yearly").waitFor();
      assert.match(await card.innerText(), /A year costs \$180 paid monthly \(12 × \$15\) or \$250 paid at once\./);
      await check(page, "the paywall, signed in");
      await shot("paywall-signed-in");

      // Pay through (the fake) Stripe Checkout, which sends the webhook and
      // then the reader to the thank-you page.
      await page.getByTestId("checkout-pro_yearly").click();
      await page.waitForURL(/\/checkout\/cs_/);
      assert.ok(page.url().startsWith(stripe.url), "the button leads to the (fake) Stripe Checkout");
      assert.match(await page.getByTestId("fake-stripe-price").innerText(), /250/);
      await page.getByTestId("fake-stripe-pay").click();
      await page.waitForURL(`${server.base}/checkout/thanks?next=${ISSUE}`);
      await waitForHydration(page);
      const status = page.getByTestId("thanks-status");
      assert.equal(await status.getAttribute("data-tier"), "pro");
      assert.match(await status.innerText(), /You are a Pro reader now\./);
      await check(page, "the thank-you page");
      await shot("thanks");

      // Its link goes back to the issue, now whole.
      const back = page.getByTestId("thanks-back");
      assert.match(await back.innerText(), /Back to .Fixed points and cycles./);
      await Promise.all([page.waitForURL(`${server.base}${ISSUE}`), back.click()]);
      await waitForHydration(page);
      assert.match(await page.getByTestId("issue-paid").innerText(), new RegExp(PAID_MARKER));
      assert.equal(await page.getByTestId("upgrade-card").count(), 0);
      await check(page, "the whole issue");

      // The fake Stripe's pages are not ours (its missing favicon is a
      // console error without a URL); every HTTP error of this site counts.
      const ours = errors.filter((e) => !e.includes(stripe.url) && !e.startsWith("console: Failed to load resource"));
      assert.deepEqual(ours, []);
      await context.close();
    });
  }
});
