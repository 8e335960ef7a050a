// The auditor's worker. The audit page starts it; it loads the auditor
// (tree-sitter and the six grammars, compiled to WebAssembly) and answers the
// page's messages. Nothing here touches the network except fetching the
// module itself: the source stays in this browser. build-site copies it into
// the bundle's directory (`/pkg/<build id>/`), so it loads the auditor of its
// own build, whatever the server serves by then.
//
// Messages in:  {type: "audit",  id, source, language, path}
//               {type: "render", id, format, source, language, path}
//               {type: "pack",   id, source, language}      (share link)
//               {type: "unpack", id, fragment}
// Messages out: {type: "ready", ms} | {type: "failed", message}
//               {type: "report", id, json, ms} | {type: "rendered", id, format, text}
//               {type: "packed", id, fragment} | {type: "unpacked", id, source, language}
//               {type: "error", id, message}
import init, { audit, render } from "./auditor.js";

const started = performance.now();
const ready = init({ module_or_path: new URL("./auditor_bg.wasm", import.meta.url) }).then(
  () => postMessage({ type: "ready", ms: performance.now() - started }),
  (error) => {
    postMessage({ type: "failed", message: String(error) });
    throw error;
  },
);

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
        await ready;
        const t0 = performance.now();
        const json = audit(message.source, message.language, message.path || "");
        postMessage({ type: "report", id: message.id, json, ms: performance.now() - t0 });
        break;
      }
      case "render": {
        await ready;
        const text = render(message.format, message.source, message.language, message.path || "");
        postMessage({ type: "rendered", id: message.id, format: message.format, text });
        break;
      }
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
