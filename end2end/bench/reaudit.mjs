// The audit page's re-audit outside the browser: the page's Python engine
// module (the one its worker loads) run in node's V8 on the browser test's
// 2,000-line file, one character typed at its end per edit, each audit timed
// as the worker times it. Given a second build's module directory, the two
// take turns, round after round, so both see the same machine.
//
//   node end2end/bench/reaudit.mjs target/site/pkg/<build id> [BASELINE_DIR]
//
// A directory holds `auditor-python.js` and `auditor-python_bg.wasm` (what
// `.ci/build-site.sh` writes, or `wasm-bindgen --target web --out-name
// auditor-python` of a `wasm-engine` build with the `python` feature). It
// prints, per module, the median and the fastest edit of each round and the
// median of the rounds' medians: on a shared 2-core machine a round's
// median moves by a third; the fastest edit moves less.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { reauditSource } from "../support/reaudit-source.mjs";

const dirs = process.argv.slice(2);
if (dirs.length === 0 || dirs.length > 2) {
  console.error("usage: node end2end/bench/reaudit.mjs MODULE_DIR [BASELINE_DIR]");
  process.exit(2);
}
if (dirs.length === 2 && resolve(dirs[0]) === resolve(dirs[1])) {
  // (Node would load one module for both: one engine measured twice.)
  console.error("error: the module and the baseline are the same directory");
  process.exit(2);
}
const ROUNDS = 5;
const EDITS = 101;

async function engine(dir) {
  const js = resolve(dir, "auditor-python.js");
  const wasm = resolve(dir, "auditor-python_bg.wasm");
  let bytes;
  let glue;
  try {
    bytes = readFileSync(wasm);
    // Each module is its own instance, with a session of its own.
    glue = await import(pathToFileURL(js).href);
  } catch {
    console.error(`error: ${dir} holds no auditor-python.js and auditor-python_bg.wasm (build the site, or bind a wasm-engine build)`);
    process.exit(2);
  }
  if (typeof glue.initSync !== "function" || typeof glue.audit !== "function") {
    console.error(`error: ${js} is not the auditor's module (no initSync or audit)`);
    process.exit(2);
  }
  glue.initSync({ module: bytes });
  return glue;
}

const start = reauditSource();

// A report that is not the file's (a module that answers fast with nothing)
// ends the run: only a real audit's time counts.
function checked(json, what) {
  const report = JSON.parse(json);
  if (report.verdict !== "CONVERGES" || report.loops?.length !== 1) {
    console.error(`error: ${what}: expected one loop and CONVERGES, got ${json.slice(0, 200)}`);
    process.exit(1);
  }
}

function round(glue) {
  let file = start;
  // The first audit parses the whole file; the edits reuse its tree.
  checked(glue.audit(file, "python", ""), "the first audit");
  const times = [];
  let json = "";
  for (let i = 0; i < EDITS; i++) {
    file += "x";
    const t = performance.now();
    json = glue.audit(file, "python", "");
    times.push(performance.now() - t);
  }
  checked(json, "the last edit");
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(EDITS / 2)], fastest: times[0] };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const engines = await Promise.all(dirs.map(engine));
const results = dirs.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  // (Each goes first in every other round.)
  const order = r % 2 === 0 ? engines.keys() : [...engines.keys()].reverse();
  for (const i of order) results[i].push(round(engines[i]));
}
const names = dirs.length === 2 ? ["module", "baseline"] : ["module"];
for (const [i, rounds] of results.entries()) {
  const medians = rounds.map((x) => x.median.toFixed(2)).join(", ");
  const fastest = rounds.map((x) => x.fastest.toFixed(2)).join(", ");
  console.log(`${names[i]}: re-audit medians per round ${medians} ms; fastest edits ${fastest} ms`);
  console.log(`${names[i]}: median of the rounds' medians ${median(rounds.map((x) => x.median)).toFixed(2)} ms, of their fastest ${median(rounds.map((x) => x.fastest)).toFixed(2)} ms`);
}
if (results.length === 2) {
  const ratio = (key) => (median(results[0].map((x) => x[key])) / median(results[1].map((x) => x[key]))).toFixed(2);
  console.log(`ratio module/baseline: medians ${ratio("median")}, fastest ${ratio("fastest")}`);
}
