#!/usr/bin/env node
// http-load.mjs: a page against its own bytes served as a static file.
//
// Usage:
//   node end2end/bench/http-load.mjs --base http://127.0.0.1:3000 \
//     --page archive=/issues --page issue=/issues/the-loop-that-could-not-stop \
//     --static-dir target/site/pkg/$(cat target/site/pkg/build-id) \
//     --static-prefix /pkg/$(cat target/site/pkg/build-id) \
//     [--header 'Cookie: x=y']... [--duration 10] [--warmup 1] [--connections 64] \
//     [--open-connections 256] [--repeat 3] [--workers 1] [--timeout 10] \
//     [--min-ratio 0.30] [--max-p99-ms 25] [--json]
//
// What it does, for each --page NAME=PATH:
//   setup  GET the page once (no Accept-Encoding), write the exact response
//          body to DIR/bench-NAME.html, GET PREFIX/bench-NAME.html from the same
//          server and require byte-identical output (exit 1 otherwise). DIR must
//          be the directory the server serves at PREFIX (for `fixedpoint serve`,
//          the current build's directory, $LEPTOS_SITE_ROOT/pkg/<build-id>,
//          by default target/site/pkg/$(cat target/site/pkg/build-id)).
//   A      closed loop ("peak"): --connections keep-alive connections, each
//          sending its next request as soon as the previous response ends, for
//          --duration seconds after --warmup seconds. Page and static twin are
//          interleaved (page, static, page, static, ...) for --repeat rounds so
//          machine noise hits both alike; the reported peak is the median.
//   B      open loop at half of THAT target's median peak: requests are sent on
//          a fixed schedule that does not wait for responses, and latency is
//          measured from the scheduled send time (no coordinated omission), so
//          queueing in the client or the server shows up in the numbers.
//          Also interleaved over --repeat rounds; p50/p99 are medians of rounds.
//   report per target: peak r/s, page/static ratio, p50/p99/max at half peak,
//          PASS/FAIL against ratio >= --min-ratio and p99 < --max-p99-ms.
//
// Exit status: 0 when the measurement ran (even if a target FAILs), 1 when the
// setup failed or any request got a non-2xx answer or a socket error, 2 on a
// usage error. The bench-*.html files are removed at the end (also on Ctrl-C).
//
// Caveats: the client is node; one worker thread tops out somewhere around
// 10-20k requests/s, and on a small machine it shares the CPU with the server.
// --workers W spreads the load over W worker_threads (histograms are merged);
// a warning is printed when the client's CPU time during a phase exceeds 90%
// of wall time per worker, which means the client, not the server, was the
// limit (typically for the static twin, which then inflates the ratio).
// Latencies go into a log-linear histogram (exact below 128 us, 64 sub-buckets
// per power of two above, <1% error), so memory is constant however long it runs.
// Node 20+, built-in modules only.

import http from "node:http";
import https from "node:https";
import { statSync, unlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { Worker, isMainThread, parentPort } from "node:worker_threads";

// ---------------------------------------------------------------- histogram

const SUB_BITS = 6;
const SUB = 1 << SUB_BITS; // linear sub-buckets per power of two
const LINEAR = 2 * SUB; // values below this many microseconds are exact
const MAX_US = 2 ** 31 - 1; // ~35 minutes; anything longer is clamped
const NBUCKETS = LINEAR + (31 - SUB_BITS - 1) * SUB;

function bucketOf(us) {
  const v = Math.max(0, Math.min(MAX_US, Math.round(us)));
  if (v < LINEAR) return v;
  const shift = 31 - Math.clz32(v) - SUB_BITS; // >= 1
  return LINEAR + (shift - 1) * SUB + ((v >>> shift) - SUB);
}

function bucketMid(index) {
  if (index < LINEAR) return index;
  const k = index - LINEAR;
  const shift = Math.floor(k / SUB) + 1;
  const mantissa = (k % SUB) + SUB;
  const low = mantissa * 2 ** shift;
  const high = (mantissa + 1) * 2 ** shift - 1;
  return (low + high) / 2;
}

class Histogram {
  constructor() {
    this.counts = new Float64Array(NBUCKETS);
    this.total = 0;
    this.min = Infinity;
    this.max = 0;
    this.sum = 0;
  }
  record(us) {
    this.counts[bucketOf(us)] += 1;
    this.total += 1;
    this.sum += us;
    if (us < this.min) this.min = us;
    if (us > this.max) this.max = us;
  }
  merge(other) {
    for (let i = 0; i < NBUCKETS; i++) this.counts[i] += other.counts[i];
    this.total += other.total;
    this.sum += other.sum;
    this.min = Math.min(this.min, other.min);
    this.max = Math.max(this.max, other.max);
    return this;
  }
  // Microseconds at quantile q (0..1); bucket midpoint clamped to the exact extremes.
  quantile(q) {
    if (this.total === 0) return NaN;
    const rank = Math.max(1, Math.ceil(q * this.total));
    let seen = 0;
    for (let i = 0; i < NBUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= rank) return Math.min(this.max, Math.max(this.min, bucketMid(i)));
    }
    return this.max;
  }
  toJSON() {
    return { counts: this.counts, total: this.total, min: this.min, max: this.max, sum: this.sum };
  }
  static from(o) {
    const h = new Histogram();
    h.counts = o.counts instanceof Float64Array ? o.counts : Float64Array.from(o.counts);
    h.total = o.total;
    h.min = o.min;
    h.max = o.max;
    h.sum = o.sum;
    return h;
  }
}

// ---------------------------------------------------------------- load generation (worker side)

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

function requestOptions(url, headers, agent) {
  const u = new URL(url);
  return {
    mod: u.protocol === "https:" ? https : http,
    opts: {
      protocol: u.protocol,
      hostname: u.hostname.replace(/^\[|\]$/g, ""),
      port: u.port || undefined,
      path: u.pathname + u.search,
      method: "GET",
      headers,
      agent,
    },
  };
}

// Returns send(cb): one GET; cb(errorKind | null, bodyBytes) exactly once.
function makeSender(spec, agent) {
  const { mod, opts } = requestOptions(spec.url, spec.headers, agent);
  return function send(cb) {
    let done = false;
    const finish = (kind, bytes) => {
      if (done) return;
      done = true;
      cb(kind, bytes);
    };
    const req = mod.request(opts, (res) => {
      let bytes = 0;
      res.on("data", (chunk) => {
        bytes += chunk.length;
      });
      res.on("end", () => {
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        finish(ok ? null : `HTTP ${res.statusCode}`, bytes);
      });
      res.on("error", (e) => finish(e.code || e.message, bytes));
      res.on("close", () => finish("response closed early", bytes));
    });
    req.setTimeout(spec.timeoutMs, () => req.destroy(Object.assign(new Error("timeout"), { code: "timeout" })));
    req.on("error", (e) => finish(e.code || e.message || "socket error", 0));
    req.end();
  };
}

function newStats() {
  return { ok: 0, errors: 0, errorKinds: {}, bytes: 0, badLength: 0, hist: new Histogram() };
}

function account(st, spec, kind, bytes, latencyUs) {
  if (kind) {
    st.errors += 1;
    st.errorKinds[kind] = (st.errorKinds[kind] || 0) + 1;
    return;
  }
  st.ok += 1;
  st.bytes += bytes;
  if (spec.expectLength != null && bytes !== spec.expectLength) st.badLength += 1;
  st.hist.record(latencyUs);
}

const threadCpuMs = () => {
  if (typeof process.threadCpuUsage !== "function") return null; // node >= 23.9 only
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};

function newAgent(spec) {
  const Agent = spec.url.startsWith("https:") ? https.Agent : http.Agent;
  return new Agent({
    keepAlive: true,
    maxSockets: spec.connections,
    maxFreeSockets: spec.connections,
    scheduling: "fifo",
  });
}

// Phase A: `connections` loops, each sending back to back until the window ends.
// A response counts when it ends inside [warmup end, window end].
async function runClosed(spec) {
  const agent = newAgent(spec);
  const send = makeSender(spec, agent);
  const st = newStats();
  await sleep(spec.startAt - Date.now());
  const t0 = performance.now();
  const cpu0 = threadCpuMs();
  const mStart = t0 + spec.warmupMs;
  const mEnd = mStart + spec.durationMs;
  const once = () => new Promise((r) => send((kind, bytes) => r([kind, bytes])));
  async function connection() {
    while (performance.now() < mEnd) {
      const s = performance.now();
      const [kind, bytes] = await once();
      const e = performance.now();
      if (e >= mStart && e <= mEnd) account(st, spec, kind, bytes, (e - s) * 1000);
      if (kind && !kind.startsWith("HTTP ")) await sleep(5); // refused/reset: do not spin
    }
  }
  await Promise.all(Array.from({ length: spec.connections }, connection));
  const wallMs = performance.now() - t0;
  const cpu1 = threadCpuMs();
  agent.destroy();
  return {
    ...st,
    hist: st.hist.toJSON(),
    windowMs: spec.durationMs,
    goodInWindow: st.ok,
    wallMs,
    threadCpuMs: cpu0 == null ? null : cpu1 - cpu0,
  };
}

// Phase B: request i is due at first + i/rate regardless of earlier responses.
// Requests due inside the window have their latency measured from the due time
// (late timer ticks and client-side queueing included); achieved rate counts
// good responses that ended inside the window.
function runOpen(spec) {
  return new Promise((resolveRun) => {
    const agent = newAgent(spec);
    const send = makeSender(spec, agent);
    const st = newStats();
    const lag = new Histogram();
    const interval = 1000 / spec.rate;
    let t0, mStart, mEnd, first, cpu0;
    let i = 0;
    let inflight = 0;
    let maxInflight = 0;
    let windowPending = 0;
    let sent = 0;
    let goodInWindow = 0;
    let scheduling = true;
    let finished = false;
    let drainTimer = null;

    function fire(due) {
      const inWindow = due >= mStart && due < mEnd;
      if (inWindow) {
        sent += 1;
        windowPending += 1;
        lag.record((performance.now() - due) * 1000);
      }
      inflight += 1;
      if (inflight > maxInflight) maxInflight = inflight;
      send((kind, bytes) => {
        if (finished) return;
        const e = performance.now();
        inflight -= 1;
        if (inWindow) {
          windowPending -= 1;
          account(st, spec, kind, bytes, (e - due) * 1000);
        }
        if (!kind && e >= mStart && e <= mEnd) goodInWindow += 1;
        maybeFinish();
      });
    }

    function tick() {
      const now = performance.now();
      let due = first + i * interval;
      while (due <= now && due < mEnd) {
        fire(due);
        i += 1;
        due = first + i * interval;
      }
      if (due < mEnd) {
        setTimeout(tick, due - performance.now());
      } else {
        scheduling = false;
        drainTimer = setTimeout(() => {
          // Whatever is still outstanding never answered: count it as failed.
          if (windowPending > 0) {
            st.errors += windowPending;
            st.errorKinds["unfinished at drain"] = (st.errorKinds["unfinished at drain"] || 0) + windowPending;
          }
          finish();
        }, spec.timeoutMs + 2000);
        maybeFinish();
      }
    }

    function maybeFinish() {
      if (!scheduling && inflight === 0) finish();
    }

    function finish() {
      if (finished) return;
      finished = true;
      clearTimeout(drainTimer);
      const wallMs = performance.now() - t0;
      const cpu1 = threadCpuMs();
      agent.destroy();
      resolveRun({
        ...st,
        hist: st.hist.toJSON(),
        lag: lag.toJSON(),
        windowMs: spec.durationMs,
        goodInWindow,
        sent,
        maxInflight,
        hitCap: maxInflight > spec.connections ? 1 : 0,
        wallMs,
        threadCpuMs: cpu0 == null ? null : cpu1 - cpu0,
      });
    }

    sleep(spec.startAt - Date.now()).then(() => {
      t0 = performance.now();
      cpu0 = threadCpuMs();
      mStart = t0 + spec.warmupMs;
      mEnd = mStart + spec.durationMs;
      first = t0 + spec.offset * interval; // workers interleave their schedules
      tick();
    });
  });
}

if (!isMainThread) {
  parentPort.on("message", async (msg) => {
    if (msg.cmd === "exit") {
      parentPort.close();
      return;
    }
    const result = msg.spec.mode === "closed" ? await runClosed(msg.spec) : await runOpen(msg.spec);
    parentPort.postMessage(result);
  });
}

// ---------------------------------------------------------------- main thread

const USAGE = `usage: node http-load.mjs --base URL --page NAME=PATH [--page NAME=PATH]...
                         --static-dir DIR [--static-prefix /pkg] [--header 'Name: value']...
                         [--duration S=10] [--warmup S=1] [--connections N=64]
                         [--open-connections N=4*connections] [--repeat K=3] [--workers W=1]
                         [--timeout S=10] [--min-ratio 0.30] [--max-p99-ms 25] [--json]`;

class UsageError extends Error {}

function parseArgs(argv) {
  const o = {
    base: null,
    pages: [],
    staticDir: null,
    staticPrefix: "/pkg",
    headers: {},
    duration: 10,
    warmup: 1,
    connections: 64,
    openConnections: null,
    repeat: 3,
    workers: 1,
    timeout: 10,
    minRatio: 0.3,
    maxP99Ms: 25,
    json: false,
  };
  const num = (flag, v, { int = false, min = 0 } = {}) => {
    const n = Number(v);
    if (!Number.isFinite(n) || (int && !Number.isInteger(n)) || n < min)
      throw new UsageError(`${flag}: expected ${int ? "an integer" : "a number"} >= ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    let flag = argv[i];
    let value;
    const eq = flag.indexOf("=");
    if (flag.startsWith("--") && eq > 0) {
      value = flag.slice(eq + 1);
      flag = flag.slice(0, eq);
    }
    const take = () => {
      if (value !== undefined) return value;
      if (i + 1 >= argv.length) throw new UsageError(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case "-h":
      case "--help":
        throw new UsageError("");
      case "--base":
        o.base = take().replace(/\/+$/, "");
        break;
      case "--page": {
        const v = take();
        const m = /^([A-Za-z0-9_-]+)=(\/.*)$/.exec(v);
        if (!m) throw new UsageError(`--page: expected NAME=/path with NAME in [A-Za-z0-9_-], got ${JSON.stringify(v)}`);
        if (o.pages.some((p) => p.name === m[1])) throw new UsageError(`--page: duplicate name ${m[1]}`);
        o.pages.push({ name: m[1], path: m[2] });
        break;
      }
      case "--static-dir":
        o.staticDir = take();
        break;
      case "--static-prefix":
        o.staticPrefix = "/" + take().replace(/^\/+|\/+$/g, "");
        break;
      case "--header": {
        const v = take();
        const c = v.indexOf(":");
        if (c <= 0) throw new UsageError(`--header: expected 'Name: value', got ${JSON.stringify(v)}`);
        o.headers[v.slice(0, c).trim().toLowerCase()] = v.slice(c + 1).trim();
        break;
      }
      case "--duration":
        o.duration = num(flag, take(), { min: 0.1 });
        break;
      case "--warmup":
        o.warmup = num(flag, take());
        break;
      case "--connections":
        o.connections = num(flag, take(), { int: true, min: 1 });
        break;
      case "--open-connections":
        o.openConnections = num(flag, take(), { int: true, min: 1 });
        break;
      case "--repeat":
        o.repeat = num(flag, take(), { int: true, min: 1 });
        break;
      case "--workers":
        o.workers = num(flag, take(), { int: true, min: 1 });
        break;
      case "--timeout":
        o.timeout = num(flag, take(), { min: 0.1 });
        break;
      case "--min-ratio":
        o.minRatio = num(flag, take());
        break;
      case "--max-p99-ms":
        o.maxP99Ms = num(flag, take());
        break;
      case "--json":
        o.json = true;
        break;
      default:
        throw new UsageError(`unknown argument ${JSON.stringify(argv[i])}`);
    }
  }
  if (!o.base) throw new UsageError("--base is required");
  try {
    const u = new URL(o.base);
    if (!/^https?:$/.test(u.protocol)) throw new Error();
  } catch {
    throw new UsageError(`--base: not an http(s) URL: ${o.base}`);
  }
  if (o.pages.length === 0) throw new UsageError("at least one --page NAME=PATH is required");
  if (!o.staticDir) throw new UsageError("--static-dir is required");
  let dirOk = false;
  try {
    dirOk = statSync(o.staticDir).isDirectory();
  } catch {}
  if (!dirOk) throw new UsageError(`--static-dir: ${o.staticDir} is not a directory`);
  o.openConnections ??= 4 * o.connections;
  if (o.connections < o.workers || o.openConnections < o.workers)
    throw new UsageError("--connections and --open-connections must be at least --workers");
  return o;
}

// One plain GET on a fresh connection, whole body as a Buffer.
function fetchOnce(url, headers, timeoutMs) {
  return new Promise((resolveGet, reject) => {
    const { mod, opts } = requestOptions(url, headers, false);
    const req = mod.request(opts, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolveGet({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

const median = (xs) => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
const fmtInt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "-");
const fmtMs = (n) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 1) : "-");
const pad = (s, n) => String(s).padStart(n);
const padR = (s, n) => String(s).padEnd(n);

class SetupError extends Error {}

async function main() {
  let opt;
  try {
    opt = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (e.message) console.error(`http-load: ${e.message}`);
    console.error(USAGE);
    return e.message ? 2 : 0;
  }

  const log = (...a) => console.error(...a);
  const warnings = [];
  const warn = (msg) => {
    warnings.push(msg);
    log(`WARNING: ${msg}`);
  };

  const created = [];
  const cleanup = () => {
    while (created.length) {
      const f = created.pop();
      try {
        unlinkSync(f);
      } catch {}
    }
  };
  const onSignal = (sig) => {
    cleanup();
    log(`http-load: interrupted (${sig}); removed the bench files`);
    process.exit(130);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  const workers = [];
  try {
    // ---- setup: snapshot each page and check the static twin serves identical bytes
    const setupHeaders = { ...opt.headers };
    delete setupHeaders["accept-encoding"]; // the snapshot must be the identity bytes
    const compressedLoad = "accept-encoding" in opt.headers;
    const timeoutMs = opt.timeout * 1000;
    const targets = [];
    for (const p of opt.pages) {
      const pageUrl = opt.base + p.path;
      const file = `bench-${p.name}.html`;
      const staticPath = `${opt.staticPrefix}/${file}`;
      const staticUrl = opt.base + staticPath;
      let page;
      try {
        page = await fetchOnce(pageUrl, setupHeaders, timeoutMs);
      } catch (e) {
        throw new SetupError(`GET ${pageUrl} failed: ${e.message}`);
      }
      if (page.status < 200 || page.status >= 300) throw new SetupError(`GET ${pageUrl} answered ${page.status}, not 2xx`);
      if (page.headers["content-encoding"] && page.headers["content-encoding"] !== "identity")
        throw new SetupError(`GET ${pageUrl} came back ${page.headers["content-encoding"]}-encoded without Accept-Encoding`);
      const filePath = resolve(join(opt.staticDir, file));
      writeFileSync(filePath, page.body);
      created.push(filePath);
      let twin;
      try {
        twin = await fetchOnce(staticUrl, setupHeaders, timeoutMs);
      } catch (e) {
        throw new SetupError(`GET ${staticUrl} failed: ${e.message}`);
      }
      if (twin.status !== 200)
        throw new SetupError(
          `GET ${staticUrl} answered ${twin.status}: is ${opt.staticDir} the directory the server serves at ${opt.staticPrefix}?`,
        );
      if (!twin.body.equals(page.body)) {
        let at = 0;
        while (at < page.body.length && at < twin.body.length && page.body[at] === twin.body[at]) at++;
        throw new SetupError(
          `${staticUrl} (${twin.body.length} bytes, content-encoding ${twin.headers["content-encoding"] ?? "none"}) ` +
            `differs from ${pageUrl} (${page.body.length} bytes) at byte ${at}`,
        );
      }
      log(`setup: ${p.name}: ${pageUrl} -> ${filePath} (${page.body.length} bytes), ${staticUrl} identical`);
      const expectLength = compressedLoad ? null : page.body.length;
      const pair = { page: p.name, bytes: page.body.length };
      targets.push({ ...pair, name: p.name, kind: "page", url: pageUrl, expectLength, peakRuns: [], halfRuns: [] });
      targets.push({ ...pair, name: `${p.name} [static]`, kind: "static", url: staticUrl, expectLength, peakRuns: [], halfRuns: [] });
    }

    // ---- load workers
    const workerUrl = new URL(import.meta.url);
    for (let k = 0; k < opt.workers; k++) {
      const w = new Worker(workerUrl);
      w.on("error", (e) => {
        log(`http-load: worker ${k} crashed: ${e.stack || e}`);
        cleanup();
        process.exit(1);
      });
      workers.push(w);
    }
    const ask = (w, msg) =>
      new Promise((r) => {
        w.once("message", r);
        w.postMessage(msg);
      });
    const share = (n, k) => Math.floor(n / opt.workers) + (k < n % opt.workers ? 1 : 0);

    async function phase(target, mode, rate) {
      const delayMs = 100;
      const startAt = Date.now() + delayMs;
      const connections = mode === "closed" ? opt.connections : opt.openConnections;
      const cpu0 = process.cpuUsage();
      const w0 = performance.now() + delayMs;
      const parts = await Promise.all(
        workers.map((w, k) =>
          ask(w, {
            cmd: "run",
            spec: {
              mode,
              url: target.url,
              headers: { "user-agent": "fixedpoint-http-load", ...opt.headers },
              connections: share(connections, k),
              rate: rate / opt.workers,
              offset: k / opt.workers,
              startAt,
              warmupMs: opt.warmup * 1000,
              durationMs: opt.duration * 1000,
              timeoutMs,
              expectLength: target.expectLength,
            },
          }),
        ),
      );
      const wallMs = performance.now() - w0;
      const cpu = process.cpuUsage(cpu0);
      const cpuMs = (cpu.user + cpu.system) / 1000;

      const hist = new Histogram();
      const lag = new Histogram();
      const r = { ok: 0, errors: 0, errorKinds: {}, bytes: 0, badLength: 0, goodInWindow: 0, sent: 0, maxInflight: 0, hitCap: 0 };
      for (const part of parts) {
        hist.merge(Histogram.from(part.hist));
        if (part.lag) lag.merge(Histogram.from(part.lag));
        for (const key of ["ok", "errors", "bytes", "badLength", "goodInWindow", "sent", "maxInflight", "hitCap"]) r[key] += part[key] || 0;
        for (const [kind, n] of Object.entries(part.errorKinds)) r.errorKinds[kind] = (r.errorKinds[kind] || 0) + n;
      }
      const seconds = opt.duration;
      const out = {
        mode,
        rps: r.goodInWindow / seconds,
        offeredRps: mode === "open" ? rate : null,
        sentRps: mode === "open" ? r.sent / seconds : null,
        requests: r.ok,
        errors: r.errors,
        errorKinds: r.errorKinds,
        badLength: r.badLength,
        mbPerSec: r.bytes / seconds / 1e6,
        p50Ms: hist.quantile(0.5) / 1000,
        p90Ms: hist.quantile(0.9) / 1000,
        p99Ms: hist.quantile(0.99) / 1000,
        maxMs: hist.total ? hist.max / 1000 : NaN,
        meanMs: hist.total ? hist.sum / hist.total / 1000 : NaN,
        maxInflight: mode === "open" ? r.maxInflight : null,
        schedLagP99Ms: mode === "open" && lag.total ? lag.quantile(0.99) / 1000 : null,
        clientCpuPct: (cpuMs / wallMs) * 100,
        clientSaturated: cpuMs / wallMs > 0.9 * opt.workers,
      };
      const what = `${target.name} ${mode === "closed" ? "peak" : `@${fmtInt(rate)} r/s`}`;
      if (out.clientSaturated)
        warn(
          `${what}: client CPU ${out.clientCpuPct.toFixed(0)}% of wall time with ${opt.workers} worker(s) ` +
            `(> 90% per worker): the load tool was saturated, so this number may measure node rather than the server`,
        );
      parts.forEach((part, k) => {
        if (part.threadCpuMs != null && part.threadCpuMs / part.wallMs > 0.9)
          warn(`${what}: worker ${k} busy ${((100 * part.threadCpuMs) / part.wallMs).toFixed(0)}% of wall time (saturated)`);
      });
      if (mode === "open") {
        if (out.schedLagP99Ms > 5)
          warn(`${what}: the client sent late (p99 timer lag ${fmtMs(out.schedLagP99Ms)} ms); latencies include that delay`);
        if (r.hitCap > 0)
          warn(
            `${what}: up to ${r.maxInflight} requests were outstanding at once, more than the ${connections} ` +
              `open-loop connections; the excess waited in the client (counted in latency; see --open-connections)`,
          );
      }
      if (r.badLength > 0)
        warn(`${what}: ${r.badLength} responses differed in length from the ${target.bytes}-byte snapshot (non-deterministic page?)`);
      if (r.errors > 0)
        warn(`${what}: ${r.errors} errors: ${Object.entries(r.errorKinds).map(([k, n]) => `${k} x${n}`).join(", ")}`);
      return out;
    }

    const phaseSeconds = opt.warmup + opt.duration + 0.2;
    const total = targets.length * opt.repeat * 2 * phaseSeconds;
    log(
      `plan: ${targets.length} targets x ${opt.repeat} repeats x 2 phases x ~${phaseSeconds.toFixed(1)} s ` +
        `= ~${Math.ceil(total)} s; ${opt.connections} connections, ${opt.workers} worker(s)`,
    );

    // ---- phase A: closed loop, interleaved page/static
    for (let rep = 1; rep <= opt.repeat; rep++) {
      for (const t of targets) {
        const r = await phase(t, "closed", 0);
        t.peakRuns.push(r);
        log(
          `[A ${rep}/${opt.repeat}] ${padR(t.name, 24)} peak ${pad(fmtInt(r.rps), 8)} r/s  p50 ${fmtMs(r.p50Ms)} ms  ` +
            `p99 ${fmtMs(r.p99Ms)} ms  err ${r.errors}  client cpu ${r.clientCpuPct.toFixed(0)}%`,
        );
      }
    }
    for (const t of targets) t.peak = median(t.peakRuns.map((r) => r.rps));

    // ---- phase B: open loop at half of each target's median peak, interleaved
    for (let rep = 1; rep <= opt.repeat; rep++) {
      for (const t of targets) {
        const rate = t.peak / 2;
        if (!(rate > 0)) {
          if (rep === 1) warn(`${t.name}: no successful requests at peak, skipping the half-peak phase`);
          continue;
        }
        const r = await phase(t, "open", rate);
        t.halfRuns.push(r);
        log(
          `[B ${rep}/${opt.repeat}] ${padR(t.name, 24)} @${pad(fmtInt(rate), 7)} r/s  achieved ${pad(fmtInt(r.rps), 7)}  ` +
            `p50 ${fmtMs(r.p50Ms)} ms  p99 ${fmtMs(r.p99Ms)} ms  max ${fmtMs(r.maxMs)} ms  err ${r.errors}  ` +
            `client cpu ${r.clientCpuPct.toFixed(0)}%`,
        );
      }
    }

    // ---- summary
    let totalErrors = 0;
    const summary = [];
    for (const t of targets) {
      const twin = targets.find((x) => x.page === t.page && x.kind === "static");
      const errorsOf = (x) => [...x.peakRuns, ...x.halfRuns].reduce((n, r) => n + r.errors, 0);
      const errors = errorsOf(t);
      totalErrors += errors;
      const half = {
        offeredRps: t.peak / 2,
        achievedRps: median(t.halfRuns.map((r) => r.rps)),
        p50Ms: median(t.halfRuns.map((r) => r.p50Ms)),
        p99Ms: median(t.halfRuns.map((r) => r.p99Ms)),
        maxMs: t.halfRuns.reduce((m, r) => (Number.isFinite(r.maxMs) ? Math.max(m, r.maxMs) : m), -Infinity),
      };
      if (half.maxMs === -Infinity) half.maxMs = NaN;
      const s = {
        name: t.name,
        kind: t.kind,
        url: t.url,
        bytes: t.bytes,
        peakRps: t.peak,
        peakRuns: t.peakRuns.map((r) => r.rps),
        peakP50Ms: median(t.peakRuns.map((r) => r.p50Ms)),
        peakP99Ms: median(t.peakRuns.map((r) => r.p99Ms)),
        half,
        errors,
        clientSaturated: [...t.peakRuns, ...t.halfRuns].some((r) => r.clientSaturated),
        runs: { peak: t.peakRuns, half: t.halfRuns },
      };
      if (t.kind === "page") {
        s.ratio = t.peak / twin.peak;
        s.ratioPass = s.ratio >= opt.minRatio;
        s.p99Pass = half.p99Ms < opt.maxP99Ms;
        s.pass = s.ratioPass && s.p99Pass && errors === 0 && errorsOf(twin) === 0;
      } else {
        s.p99Pass = half.p99Ms < opt.maxP99Ms;
      }
      summary.push(s);
    }

    if (opt.json) {
      process.stdout.write(
        JSON.stringify(
          {
            base: opt.base,
            config: {
              duration: opt.duration,
              warmup: opt.warmup,
              connections: opt.connections,
              openConnections: opt.openConnections,
              repeat: opt.repeat,
              workers: opt.workers,
              minRatio: opt.minRatio,
              maxP99Ms: opt.maxP99Ms,
            },
            targets: summary,
            warnings,
            errors: totalErrors,
          },
          (k, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v),
          2,
        ) + "\n",
      );
    } else {
      const head =
        `${padR("target", 24)} ${pad("bytes", 7)} ${pad("peak r/s", 9)}  ${padR("runs", 22)} ${pad("p99@pk", 7)} ` +
        `${pad("ratio", 6)}  ${pad("half r/s", 9)} ${pad("achieved", 9)} ${pad("p50 ms", 7)} ${pad("p99 ms", 7)} ` +
        `${pad("max ms", 7)} ${pad("errors", 6)}  verdict`;
      const lines = [
        "",
        `${opt.base}  duration ${opt.duration}s (+${opt.warmup}s warmup)  connections ${opt.connections}  ` +
          `repeat ${opt.repeat}  workers ${opt.workers}  (medians across repeats; ms at half peak)`,
        head,
        "-".repeat(head.length),
      ];
      for (const s of summary) {
        const verdict = s.kind === "page" ? (s.pass ? "PASS" : "FAIL") : "-";
        lines.push(
          `${padR(s.name, 24)} ${pad(s.bytes, 7)} ${pad(fmtInt(s.peakRps), 9)}  ${padR(s.peakRuns.map(fmtInt).join(" "), 22)} ` +
            `${pad(fmtMs(s.peakP99Ms), 7)} ${pad(s.kind === "page" ? s.ratio.toFixed(3) : "", 6)}  ` +
            `${pad(fmtInt(s.half.offeredRps), 9)} ${pad(fmtInt(s.half.achievedRps), 9)} ${pad(fmtMs(s.half.p50Ms), 7)} ` +
            `${pad(fmtMs(s.half.p99Ms), 7)} ${pad(fmtMs(s.half.maxMs), 7)} ${pad(s.errors, 6)}  ${verdict}` +
            (s.clientSaturated ? "  (client saturated)" : ""),
        );
      }
      lines.push("");
      for (const s of summary.filter((x) => x.kind === "page")) {
        lines.push(
          `${s.pass ? "PASS" : "FAIL"} ${s.name}: page/static ${s.ratio.toFixed(3)} ` +
            `(${s.ratioPass ? ">=" : "<"} ${opt.minRatio.toFixed(2)}), p99 at half peak ${fmtMs(s.half.p99Ms)} ms ` +
            `(${s.p99Pass ? "<" : ">="} ${opt.maxP99Ms} ms)` +
            (s.pass || !(s.ratioPass && s.p99Pass) ? "" : ", but requests failed"),
        );
      }
      if (warnings.length) lines.push(`${warnings.length} warning(s), see above`);
      if (totalErrors) lines.push(`ERROR: ${totalErrors} failed requests (non-2xx or socket errors); exit status 1`);
      console.log(lines.join("\n"));
    }
    return totalErrors > 0 ? 1 : 0;
  } catch (e) {
    if (e instanceof SetupError) {
      log(`http-load: setup failed: ${e.message}`);
      return 1;
    }
    throw e;
  } finally {
    cleanup();
    for (const w of workers) w.postMessage({ cmd: "exit" });
  }
}

if (isMainThread) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      console.error(`http-load: ${e.stack || e}`);
      process.exitCode = 1;
    },
  );
}
