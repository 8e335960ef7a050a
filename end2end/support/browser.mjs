// Launches Debian's chromium through playwright-core (no browser download:
// these machines cannot fetch one). playwright gives every launch a fresh,
// temporary profile of its own.
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

// Collects console errors and failed requests of a page so a test can assert
// that none happened.
export function watchErrors(page) {
  const errors = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => errors.push(`page error: ${error.message}`));
  page.on("requestfailed", (request) => {
    // Leaving a page ends its live streams (EventSource): the browser aborts
    // them, which is not a failure.
    if (request.resourceType() === "eventsource" && request.failure()?.errorText === "net::ERR_ABORTED") return;
    errors.push(`request failed: ${request.url()} ${request.failure()?.errorText}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) errors.push(`HTTP ${response.status()}: ${response.url()}`);
  });
  return errors;
}

// Waits until Leptos has hydrated the page: the wasm module is instantiated
// and the event handlers are attached.
export async function waitForHydration(page) {
  await page.waitForFunction(() => window.__fixedpointHydrated === true, null, { timeout: 20_000 });
}
