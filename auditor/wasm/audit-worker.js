// The auditor's worker. The audit page starts it; it loads the auditor
// (tree-sitter and the grammars, compiled to WebAssembly) and answers the
// page's messages. Nothing here touches the network except fetching the
// modules themselves: the source stays in this browser. build-site copies it
// into the bundle's directory (`/pkg/<build id>/`), so it loads the auditor
// of its own build, whatever the server serves by then.
//
// The grammars are most of the auditor's bytes, so build-site makes a module
// per family of languages (`auditor-python.js`, `auditor-javascript.js` for
// JavaScript, TypeScript and TSX, `-bash`, `-go`, `-rust`) and one with them
// all (`auditor.js`). An audit loads the module of the language the page
// says the paste most likely is (`hint`, from the lines only one language
// writes) and asks it whether its grammars can tell the paste's language
// the way all of them would; only when they cannot does it load the module
// with every grammar, which then answers everything.
//
// Messages in:  {type: "warm", hint}                        (fetch a grammar early)
//               {type: "audit",  id, source, language, path, hint}
//               {type: "render", id, format, source, language, path, hint}
//               {type: "pack",   id, source, language}      (share link)
//               {type: "unpack", id, fragment}
// Messages out: {type: "ready", ms} | {type: "failed", message}
//               {type: "report", id, json, ms, module} | {type: "rendered", id, format, text}
//               {type: "packed", id, fragment} | {type: "unpacked", id, source, language}
//               {type: "error", id, message}

const started = performance.now();
const FAMILY = { python: "python", javascript: "javascript", typescript: "javascript", tsx: "javascript", bash: "bash", go: "go", rust: "rust" };
const modules = new Map();

// The module of `family` ("all" for every grammar), fetched and compiled once.
function load(family) {
  if (!modules.has(family)) {
    const name = family === "all" ? "auditor" : `auditor-${family}`;
    const loading = import(`./${name}.js`).then(async (module) => {
      await module.default({ module_or_path: new URL(`./${name}_bg.wasm`, import.meta.url) });
      return module;
    });
    // The page falls back to the server's form; a later audit tries again.
    loading.catch((error) => {
      modules.delete(family);
      postMessage({ type: "failed", message: `${name}: ${error}` });
    });
    modules.set(family, loading);
  }
  return modules.get(family);
}

// The module that audits `source` and the language to audit it as ("" lets
// the module detect it, or report that it cannot).
async function engineFor(source, language, path, hint) {
  if (!modules.has("all")) {
    const family = FAMILY[hint] || "python";
    const module = await load(family);
    const found = module.language_at_hand(source, language || "", path || "");
    if (found) return { module, family, language: found === "-" ? "" : found };
  }
  return { module: await load("all"), family: "all", language: language || "" };
}

postMessage({ type: "ready", ms: performance.now() - started });

// Share links: the source, deflated and base64url-encoded, after a version
// and the language: `v1.python.<data>`. Fragments never reach a server.
async function pack(source, language) {
  const stream = new Blob([source]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  const data = btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return `v1.${language || "auto"}.${data}`;
}

async function unpack(fragment) {
  const match = /^v1\.([a-z]+)\.([A-Za-z0-9_-]*)$/.exec(fragment);
  if (!match) throw new Error("this share link is not one the audit page made");
  const base64 = match[2].replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64 + "===".slice((base64.length + 3) % 4));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  const source = await new Response(stream).text();
  return { source, language: match[1] };
}

onmessage = async (event) => {
  const message = event.data;
  try {
    switch (message.type) {
      case "audit": {
        const t0 = performance.now();
        const engine = await engineFor(message.source, message.language, message.path, message.hint);
        const t1 = performance.now();
        const json = engine.module.audit(message.source, engine.language, message.path || "");
        postMessage({ type: "report", id: message.id, json, ms: performance.now() - t1, module: engine.family, loaded: t1 - t0 });
        break;
      }
      case "render": {
        const engine = await engineFor(message.source, message.language, message.path, message.hint);
        const text = engine.module.render(message.format, message.source, engine.language, message.path || "");
        postMessage({ type: "rendered", id: message.id, format: message.format, text });
        break;
      }
      case "warm":
        // The page's early script: the opening source's grammar, fetched
        // and compiled while the page loads.
        if (FAMILY[message.hint]) await load(FAMILY[message.hint]);
        break;
      case "pack":
        postMessage({ type: "packed", id: message.id, fragment: await pack(message.source, message.language) });
        break;
      case "unpack": {
        const { source, language } = await unpack(message.fragment);
        postMessage({ type: "unpacked", id: message.id, source, language });
        break;
      }
      default:
        postMessage({ type: "error", id: message.id, message: `unknown message type ${message.type}` });
    }
  } catch (error) {
    postMessage({ type: "error", id: message.id, message: error && error.message ? error.message : String(error) });
  }
};
