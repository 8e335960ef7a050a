// Finishes wasm-split's loader for the site, in the bundle directory DIR:
//   node .ci/link-split-loader.mjs DIR
//
// 1. The loader goes by the name Leptos links it by. Leptos (without its
//    own file hashing) preloads the loader as `__wasm_split.<22 _>.js`, so
//    the file wasm-split wrote as `__wasm_split.js` takes that name, and the
//    main module's imports of it follow.
// 2. The route modules each page needs, for Leptos to preload: wasm-split
//    does not write its prefetch map from the command line, so it is read
//    back from the loader it wrote (each `__wasm_split_load_<route>` export,
//    its own module and the chunks it waits for) into
//    `__wasm_split_manifest.json`, `{"<route>": ["chunk_17", ..., "split_..."]}`.
// 3. A module that fails to load first asks the page what to do
//    (`window.__fixedpointModuleFailed`, see app/src/components/stale_build.rs):
//    a page of an earlier build loads the page it was going to afresh
//    instead of reporting the failure.
// Each step checks that the loader is shaped as expected and fails the build
// otherwise (a new wasm-split version must be looked at, not half-patched).
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2];
const LEPTOS_NAME = "__wasm_split.______________________.js";
const fail = (message) => {
  console.error(`link-split-loader: ${message}`);
  process.exit(1);
};

// 1. The name.
const main = join(dir, "fixedpoint.js");
const glue = readFileSync(main, "utf8");
const imports = glue.split('from "./__wasm_split.js"').length - 1;
if (imports === 0) fail("fixedpoint.js does not import ./__wasm_split.js");
writeFileSync(main, glue.replaceAll('from "./__wasm_split.js"', `from "./${LEPTOS_NAME}"`));
renameSync(join(dir, "__wasm_split.js"), join(dir, LEPTOS_NAME));
const loaderPath = join(dir, LEPTOS_NAME);
let loader = readFileSync(loaderPath, "utf8");

// 2. The manifest.
const fileOf = (body) => {
  const match = /new URL\("\.\/([\w-]+)\.wasm", import\.meta\.url\)/.exec(body);
  return match && match[1];
};
const chunks = new Map();
for (const match of loader.matchAll(/^const (__chunk_\d+) = makeLoad\(([\s\S]*?)\n, \[\]\);$/gm)) {
  const file = fileOf(match[2]);
  if (!file) fail(`no module file for ${match[1]}`);
  chunks.set(match[1], file);
}
const manifest = {};
for (const match of loader.matchAll(
  /^export const __wasm_split_load_(\w+) = wrapAsyncCb\(makeLoad\(([\s\S]*?)\n, \[([\w, ]*)\]\)\);$/gm,
)) {
  const [, route, fetcher, deps] = match;
  const modules = deps
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean)
    .map((name) => chunks.get(name) ?? fail(`${route} waits for ${name}, which the loader does not define`));
  // A route with no code of its own has no module to fetch.
  const own = fileOf(fetcher);
  if (own) modules.push(own);
  manifest[route] = modules;
}
if (Object.keys(manifest).length === 0) fail("no route loaders found in the loader");
writeFileSync(join(dir, "__wasm_split_manifest.json"), JSON.stringify(manifest));

// 3. The recovery.
const CATCH = "        } catch (e) {\n            console.error(e);\n";
if (loader.split(CATCH).length !== 2) fail("the loader's failure branch is not where it was expected");
loader = loader.replace(
  CATCH,
  "        } catch (e) {\n" +
    "            // The page may load the address it was going to afresh instead\n" +
    "            // (a module of an earlier build); then this never resolves.\n" +
    "            await globalThis.__fixedpointModuleFailed?.(e);\n" +
    "            console.error(e);\n",
);
writeFileSync(loaderPath, loader);
console.error(
  `link-split-loader: ${Object.keys(manifest).length} routes, ${chunks.size} shared chunks, ${imports} imports renamed`,
);
