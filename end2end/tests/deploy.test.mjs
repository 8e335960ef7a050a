// Deploys never break an open page: the bundle's files are named by their
// build (`/pkg/<id>/`), immutable; pages are `no-cache` and preload the
// modules they need; a page opened before a new build is served keeps
// navigating (a full load of the new build where its own files are gone).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchBrowser, waitForHydration } from "../support/browser.mjs";
import { buildId, SITE_ROOT, startServer } from "../support/server.mjs";

const IMMUTABLE = "public, max-age=31536000, immutable";

// A second build of the site, as the next deploy brings it: the same files
// under another id, and none of the first build's left (the next build
// after that would have removed them; the server serves its own build only
// anyway). The stylesheet differs by a comment, so the two builds differ.
function nextBuild(oldId) {
  const root = mkdtempSync(join(tmpdir(), "fixedpoint-next-build-"));
  cpSync(SITE_ROOT, root, { recursive: true, filter: (source) => !source.startsWith(join(SITE_ROOT, "pkg")) });
  const newId = [...oldId].reverse().join("") === oldId ? "0".repeat(oldId.length) : [...oldId].reverse().join("");
  const pkg = join(root, "pkg", newId);
  cpSync(join(SITE_ROOT, "pkg", oldId), pkg, { recursive: true });
  const css = join(pkg, "fixedpoint.css");
  writeFileSync(css, `${readFileSync(css, "utf8")}\n/* build ${newId} */\n`);
  for (const copy of ["fixedpoint.css.br", "fixedpoint.css.gz"]) rmSync(join(pkg, copy), { force: true });
  writeFileSync(join(root, "pkg", "build-id"), `${newId}\n`);
  return { root, newId };
}

// The id build-site gives the files of DIR: the SHA-256 of `sha256sum`'s
// lines for them (sorted by name), its first 16 hex digits.
function contentId(dir) {
  const sha256 = (data) => createHash("sha256").update(data).digest("hex");
  const names = readdirSync(dir).filter((name) => !name.startsWith(".")).sort();
  const lines = names.map((name) => `${sha256(readFileSync(join(dir, name)))}  ./${name}\n`).join("");
  return sha256(lines).slice(0, 16);
}

// Everything a page reports that could be a fault: console errors, page
// errors, failed requests and 4xx/5xx answers, each with its address.
function watch(page) {
  const seen = [];
  page.on("console", (message) => {
    if (message.type() === "error") seen.push({ kind: "console", text: message.text(), url: message.location()?.url ?? "" });
  });
  page.on("pageerror", (error) => seen.push({ kind: "pageerror", text: error.message, url: page.url() }));
  page.on("requestfailed", (request) =>
    seen.push({ kind: "requestfailed", text: request.failure()?.errorText ?? "", url: request.url() }),
  );
  page.on("response", (response) => {
    if (response.status() >= 400) seen.push({ kind: "status", text: String(response.status()), url: response.url() });
  });
  return seen;
}

describe("deploys", () => {
  let browser;
  let server;
  let next;
  const oldId = buildId();

  before(async () => {
    browser = await launchBrowser();
    server = await startServer();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    if (next) rmSync(next.root, { recursive: true, force: true });
  });

  test("the bundle's files are named by their build and kept for a year; pages are no-cache", async () => {
    assert.match(oldId, /^[0-9a-f]{16}$/);
    assert.equal(contentId(join(SITE_ROOT, "pkg", oldId)), oldId, "the build id is the hash of the build's files");
    const files = readdirSync(join(SITE_ROOT, "pkg", oldId));
    const auditors = ["", "-python", "-javascript", "-bash", "-go", "-rust"].flatMap((f) => [`auditor${f}.js`, `auditor${f}_bg.wasm`]);
    for (const name of ["fixedpoint.js", "fixedpoint_bg.wasm", "fixedpoint.css", "audit-worker.js", ...auditors]) {
      assert.ok(files.includes(name), `${name} is in the build's directory`);
    }
    assert.ok(files.filter((name) => /^(split|chunk)_.*\.wasm$/.test(name)).length > 100, "the route modules too");
    // Nothing of the bundle sits outside a build's directory.
    for (const entry of readdirSync(join(SITE_ROOT, "pkg"))) {
      assert.ok(entry === "build-id" || /^[0-9a-f]{16}$/.test(entry), `pkg/${entry} is a build or the build id`);
    }

    const page = await browser.newPage();
    const seen = watch(page);
    const bundle = [];
    page.on("response", (response) => {
      if (new URL(response.url()).pathname.startsWith("/pkg/")) bundle.push(response);
    });
    const response = await page.goto(`${server.base}/signin`);
    assert.equal(response.status(), 200);
    assert.equal(response.headers()["cache-control"], "no-cache", "the page is revalidated every time");
    await waitForHydration(page);
    assert.ok(bundle.length > 10, `the page fetched its modules (${bundle.length})`);
    for (const file of bundle) {
      const path = new URL(file.url()).pathname;
      assert.ok(path.startsWith(`/pkg/${oldId}/`), `${path} is under the build's directory`);
      assert.equal(file.status(), 200, path);
      assert.equal(file.headers()["cache-control"], IMMUTABLE, path);
    }
    // The modules of the sign-in page are preloaded by the page itself, as
    // the manifest build-site wrote says, and nothing else of the routes.
    const manifest = JSON.parse(readFileSync(join(SITE_ROOT, "pkg", oldId, "__wasm_split_manifest.json"), "utf8"));
    const [route] = Object.keys(manifest).filter((name) => name.startsWith("__signin_route_view"));
    const expected = manifest[route].map((module) => `/pkg/${oldId}/${module}.wasm`).sort();
    const preloaded = await page.$$eval('link[rel="preload"][as="fetch"]', (links) =>
      links.map((link) => new URL(link.href).pathname).filter((path) => /\/(split|chunk)_/.test(path)).sort(),
    );
    assert.deepEqual(preloaded, expected);
    const modules = await page.$$eval('link[rel="modulepreload"]', (links) =>
      links.map((link) => new URL(link.href).pathname),
    );
    for (const module of ["fixedpoint.js", "__wasm_split.______________________.js"]) {
      assert.ok(modules.includes(`/pkg/${oldId}/${module}`), `${module} is preloaded as a module: ${modules}`);
    }
    assert.ok(
      await page.$(`link[rel="preload"][as="fetch"][type="application/wasm"][href="/pkg/${oldId}/fixedpoint_bg.wasm"]`),
      "the main module's wasm is preloaded",
    );
    // An address outside the build is a 404 that no cache keeps.
    const stale = await fetch(`${server.base}/pkg/fixedpoint.js`);
    assert.equal(stale.status, 404);
    assert.equal(stale.headers.get("cache-control"), "no-store");
    assert.deepEqual(seen, []);
    await page.close();
  });

  test("a page opened before a new build is served keeps navigating", async () => {
    const page = await browser.newPage();
    const seen = watch(page);
    await page.goto(`${server.base}/`);
    await waitForHydration(page);
    // A mark of this document: a full load starts a new one without it.
    await page.evaluate(() => {
      window.__openedBeforeTheDeploy = true;
    });

    // The deploy: the server stops, the next build starts on the same port.
    const port = server.port;
    await server.stop();
    next = nextBuild(oldId);
    server = await startServer({ siteRoot: next.root, port });
    const old = await fetch(`${server.base}/pkg/${oldId}/fixedpoint.js`);
    assert.equal(old.status, 404, "the new server serves nothing of the old build");

    // The old page goes to a page whose modules it never loaded: its loader
    // finds them gone and the page loads the address afresh.
    await page.getByRole("link", { name: "Sign in", exact: true }).click();
    await page.waitForFunction(() => location.pathname === "/signin" && window.__openedBeforeTheDeploy !== true, null, {
      timeout: 20_000,
    });
    await waitForHydration(page);
    assert.equal(await page.locator("h1").first().innerText(), "Sign in");
    assert.equal(await page.evaluate(() => document.documentElement.dataset.pkg), `/pkg/${next.newId}`);

    // The new build goes on navigating in the page, the audit page's worker
    // and auditor (the opening example is Python) coming from the new build too.
    const auditor = page.waitForResponse((response) => new URL(response.url()).pathname.endsWith("/auditor-python_bg.wasm"));
    await page.getByRole("link", { name: "Audit", exact: true }).click();
    await page.waitForFunction(() => location.pathname === "/audit");
    await page.locator("h1", { hasText: "Audit a loop" }).waitFor();
    assert.equal(await page.evaluate(() => window.__openedBeforeTheDeploy), undefined);
    const engine = await auditor;
    assert.equal(new URL(engine.url()).pathname, `/pkg/${next.newId}/auditor-python_bg.wasm`);
    assert.equal(engine.status(), 200);
    assert.equal(engine.headers()["cache-control"], IMMUTABLE);
    await page.waitForFunction(() => /Audited in/.test(document.querySelector('[data-testid="engine-status"]')?.textContent ?? ""), null, {
      timeout: 20_000,
    });

    // What went wrong on the way is only the old build's files missing
    // (their 404s, the browser's note of each, and the fetches the full
    // load cut short), and at least one was asked for: the old page did
    // meet the new server.
    const oldFiles = `/pkg/${oldId}/`;
    const faults = seen.filter(
      (fault) =>
        !(
          new URL(fault.url || "http://x/").pathname.startsWith(oldFiles) &&
          (fault.kind === "status" ||
            (fault.kind === "requestfailed" && fault.text === "net::ERR_ABORTED") ||
            (fault.kind === "console" && fault.text.startsWith("Failed to load resource")))
        ),
    );
    assert.deepEqual(faults, []);
    assert.ok(
      seen.some((fault) => fault.kind === "status" && fault.text === "404"),
      `the old page asked for its build's modules: ${JSON.stringify(seen)}`,
    );
    await page.close();
  });
});
