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
// What a page reports when the reader leaves it while one of its route
// modules is still on its way: the browser aborts the fetch, and the loader
// Leptos' `#[lazy_route]` generates panics into the console of the page
// being replaced. The reader sees nothing of it (the next page is loading),
// and on a slow machine a test that moves on right after a client-side
// navigation meets it now and then. Only these exact messages pass; any
// other console error, failed request or aborted non-module fetch still
// fails the test.
const LEFT_WHILE_LOADING = [
  "WebAssembly compilation aborted: Network error: Response body loading was aborted",
  "load callback should succeed: SplitLoaderError",
];

export function watchErrors(page) {
  const errors = [];
  // The loader's panic ends in a trap, which the page reports as its own
  // error ("unreachable"): that one passes only after the panic's message.
  let leftWhileLoading = false;
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    if (LEFT_WHILE_LOADING.some((known) => message.text().includes(known))) {
      leftWhileLoading = true;
      return;
    }
    errors.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => {
    if (leftWhileLoading && error.message === "unreachable") return;
    errors.push(`page error: ${error.message} (on ${page.url()})`);
  });
  page.on("requestfailed", (request) => {
    const aborted = request.failure()?.errorText === "net::ERR_ABORTED";
    // Leaving a page ends its live streams (EventSource): the browser aborts
    // them, which is not a failure; nor is a route module left behind.
    if (aborted && request.resourceType() === "eventsource") return;
    if (aborted && /^\/pkg\/[0-9a-f]+\/[\w-]+\.wasm$/.test(new URL(request.url()).pathname)) return;
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
