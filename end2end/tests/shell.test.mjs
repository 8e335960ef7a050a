// The site shell: home page, hydration, JavaScript off, 404, phone width.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, statSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { launchBrowser, watchErrors, waitForHydration } from "../support/browser.mjs";
import { buildId, SITE_ROOT, startServer } from "../support/server.mjs";

const SHOTS = resolve(import.meta.dirname, "..", "screenshots");

describe("site shell", () => {
  let server;
  let browser;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    const result = await server?.stop();
    // Graceful shutdown: SIGTERM ends the process cleanly, not by the signal.
    assert.equal(result?.code, 0, `server exit ${JSON.stringify(result)}`);
  });

  test("home page loads, hydrates and has no console errors", async () => {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    const wasm = [];
    page.on("response", async (response) => {
      if (response.url().endsWith(".wasm")) wasm.push(response.url());
    });
    const response = await page.goto(server.base + "/");
    assert.equal(response.status(), 200);
    await waitForHydration(page);
    assert.match(await page.locator("h1").first().innerText(), /know when it is done/);
    for (const name of ["Audit", "Loops", "Archive", "Pricing", "Sign in"]) {
      assert.equal(await page.getByRole("link", { name, exact: true }).count(), 1, `header link ${name}`);
    }
    assert.equal(wasm.length, 1, `one wasm module on the home page: ${wasm}`);
    await page.screenshot({ path: join(SHOTS, "home.png"), fullPage: true });
    assert.deepEqual(errors, []);

    const file = join(SITE_ROOT, "pkg", buildId(), "fixedpoint_bg.wasm");
    const raw = statSync(file).size;
    const gz = gzipSync(readFileSync(file), { level: 9 }).length;
    const br = statSync(file + ".br").size;
    console.log(`# home page wasm: ${raw} bytes raw, ${gz} bytes gzip -9, ${br} bytes brotli (what the browser downloads)`);
    await page.close();
  });

  test("the hydrated exit explorer responds to a click", async () => {
    const page = await browser.newPage();
    const errors = watchErrors(page);
    await page.goto(server.base + "/");
    await waitForHydration(page);
    const detail = page.getByTestId("exit-detail");
    assert.match(await detail.innerText(), /E1 goal met/);
    await page.getByTestId("chip-E5").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="exit-detail"]').innerText.includes("E5 no progress"));
    assert.equal(await page.getByTestId("chip-E5").getAttribute("aria-pressed"), "true");
    assert.equal(await page.getByTestId("chip-E1").getAttribute("aria-pressed"), "false");
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("the home page reads with JavaScript disabled", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const response = await page.goto(server.base + "/");
    assert.equal(response.status(), 200);
    assert.match(await page.locator("h1").first().innerText(), /know when it is done/);
    const text = await page.locator("main").innerText();
    for (const label of ["goal met", "turn cap", "no progress", "external event"]) {
      assert.ok(text.includes(label), `${label} visible without JavaScript`);
    }
    await context.close();
  });

  test("an unknown path shows the 404 page with status 404", async () => {
    const page = await browser.newPage();
    const response = await page.goto(server.base + "/no/such/page");
    assert.equal(response.status(), 404);
    assert.match(await page.getByTestId("not-found").innerText(), /404/);
    await page.close();
  });

  test("the home page fits a phone-width screen", async () => {
    const context = await browser.newContext({ viewport: { width: 360, height: 740 }, deviceScaleFactor: 2 });
    const page = await context.newPage();
    await page.goto(server.base + "/");
    await waitForHydration(page);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `no horizontal scroll at 360 px (overflow ${overflow}px)`);
    await page.screenshot({ path: join(SHOTS, "home-phone.png"), fullPage: true });
    await context.close();
  });
});
