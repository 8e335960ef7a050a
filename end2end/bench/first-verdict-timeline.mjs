// Where the time to the audit page's first in-browser verdict goes: five
// cold loads of /audit (a browser context each), and for each the moments
// (ms after navigation) of the page's milestones, the main module's and the
// worker's fetches, the worker's first report and the verdict's mark.
//
//   node end2end/bench/first-verdict-timeline.mjs http://127.0.0.1:3000
//
// A diagnosis tool beside the browser test that measures the budget (the
// test prints the median; this prints the parts).
import { launchBrowser } from "../support/browser.mjs";

const base = process.argv[2] ?? "http://127.0.0.1:3000";
const browser = await launchBrowser();
const rows = [];
for (let run = 0; run < 5; run++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.addInitScript(() => {
    // When the page hydrated, and when the worker's first message came.
    const started = performance.now();
    window.__timeline = { started };
    const Native = window.Worker;
    window.Worker = function (...args) {
      window.__timeline.workerCreated ??= performance.now();
      const worker = new Native(...args);
      worker.addEventListener("message", () => {
        window.__timeline.workerFirst ??= performance.now();
      });
      return worker;
    };
    window.Worker.prototype = Native.prototype;
    const watch = setInterval(() => {
      if (window.__fixedpointHydrated && !window.__timeline.hydrated) {
        window.__timeline.hydrated = performance.now();
      }
      if (window.__timeline.hydrated && performance.getEntriesByName("fixedpoint:first-verdict").length) {
        clearInterval(watch);
      }
    }, 2);
  });
  await page.goto(`${base}/audit`);
  await page.waitForFunction(() => performance.getEntriesByName("fixedpoint:first-verdict").length > 0, null, {
    timeout: 20_000,
  });
  const own = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    const paint = performance.getEntriesByType("paint").map((p) => [p.name, p.startTime]);
    return {
      origin: performance.timeOrigin,
      responseEnd: nav.responseEnd,
      domInteractive: nav.domInteractive,
      domContentLoaded: nav.domContentLoadedEventEnd,
      load: nav.loadEventEnd,
      paint,
      timeline: window.__timeline,
      verdict: performance.getEntriesByName("fixedpoint:first-verdict")[0].startTime,
      files: performance
        .getEntriesByType("resource")
        .filter((e) => /\.(wasm|js)$/.test(new URL(e.name).pathname))
        .map((e) => [new URL(e.name).pathname.split("/").pop(), Math.round(e.startTime), Math.round(e.responseEnd), e.encodedBodySize]),
    };
  });
  const worker = page.workers()[0]
    ? await page.workers()[0].evaluate(() => ({
        origin: performance.timeOrigin,
        files: performance
          .getEntriesByType("resource")
          .map((e) => [new URL(e.name).pathname.split("/").pop(), e.startTime, e.responseEnd, e.encodedBodySize]),
      }))
    : { origin: own.origin, files: [] };
  const shift = worker.origin - own.origin;
  rows.push({ ...own, workerFiles: worker.files.map(([n, s, e, b]) => [n, Math.round(s + shift), Math.round(e + shift), b]) });
  await context.close();
}
await browser.close();
for (const row of rows) {
  console.log(
    `verdict ${row.verdict.toFixed(0)} ms | response ${row.responseEnd.toFixed(0)} | interactive ${row.domInteractive.toFixed(0)} | dcl ${row.domContentLoaded.toFixed(0)} | load ${row.load.toFixed(0)} | hydrated ${row.timeline.hydrated?.toFixed(0)} | worker created ${row.timeline.workerCreated?.toFixed(0)} | worker's first message ${row.timeline.workerFirst?.toFixed(0)} | ${row.paint.map(([n, t]) => `${n} ${t.toFixed(0)}`).join(", ")}`,
  );
  for (const [name, start, end, bytes] of row.files) console.log(`  page   ${name} ${start}-${end} ms ${bytes} B`);
  for (const [name, start, end, bytes] of row.workerFiles) console.log(`  worker ${name} ${start}-${end} ms ${bytes} B`);
}
const verdicts = rows.map((r) => r.verdict).sort((a, b) => a - b);
console.log(`median first verdict ${verdicts[2].toFixed(0)} ms`);
