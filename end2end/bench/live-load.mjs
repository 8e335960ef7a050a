#!/usr/bin/env node
// live-load.mjs: many live-stream (server-sent events) clients on one
// instance, then a burst of rounds; how long each round takes to reach every
// client, and what the connections cost the server in memory.
//
// Usage:
//   node end2end/bench/live-load.mjs [--bin PATH] [--clients 1000] [--rounds 100]
//     [--burst-rate 0] [--post-concurrency 1] [--connect-concurrency 100]
//     [--timeout 30] [--json]
//
//   --bin PATH               the fixedpoint binary (default: $FIXEDPOINT_BIN, else
//                            target/release/fixedpoint if built, else target/debug)
//   --clients N              concurrent live-stream connections (default 1000)
//   --rounds R               rounds in the burst (default 100)
//   --burst-rate X           rounds per second; 0 (default) sends each POST as soon
//                            as a slot is free (see --post-concurrency)
//   --post-concurrency K     POSTs in flight at once (default 1). Above 1, two
//                            rounds of one run can reach the database out of order
//                            and the later-numbered one wins: the other gets 409
//                            ("rounds are strictly increasing") and is reported
//                            as a failed POST and as missing deliveries.
//   --connect-concurrency C  stream connections being opened at once (default 100)
//   --timeout S              seconds allowed for connecting, and for the last
//                            deliveries after the last POST answered (default 30)
//   --json                   print one JSON object instead of the table
//
// What it does: starts `fixedpoint serve` on a free port with a SQLite database
// in a temporary directory; with the CLI creates a team, a member, a loop token
// and a sign-in link, which it redeems (POST /signin/verify) for a session
// cookie; stores one warm-up round (run "warmup") so the loop exists; checks
// that one stream answers `text/event-stream`; then opens --clients streams
//   GET /loops/{loop}/events?team=SLUG   (Cookie, Accept: text/event-stream)
// each on its own socket, waits until every one has its response headers and no
// event has arrived for half a second, and sends rounds 1..R of a new run
// ("bench-<hex>") to POST /api/v1/loops/{loop}/rounds. Every `event: round`
// whose data names this loop, run and a round in 1..R counts as a delivery.
//
// Latency of a delivery = when the client read it - when the POST of its round
// was sent (also reported: - when that POST's answer arrived, which can be
// negative since the event may overtake the answer; and - the event's
// created_at, the server's clock at storing, millisecond resolution).
// Server memory is VmRSS/VmHWM from /proc/PID/status before connecting, after
// connecting and after the burst; per connection = (after connect - before) / N.
//
// Exit status: 0 when every client received every round; 1 when a delivery is
// missing, a connection failed or a stream broke, or a POST failed; 2 on a
// usage error, a file descriptor limit too low, or a failed setup.
//
// Caveats: clients, POSTs and timing share one node thread, on the same
// machine as the server. A delivery is timed when node reads the socket, so a
// client that cannot keep up adds its own queueing to the numbers; the report
// warns when the client used more than 90% of a core during the burst.
// Linux only (/proc). Node 20+, built-in modules only.

import http from "node:http";
import { execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";

const ROOT = resolve(import.meta.dirname, "..", "..");
const TEAM = "bench";
const EMAIL = "bench@example.com";
const LOOP = "live-bench";
const IDLE_MS = 500;

// ---------------------------------------------------------------- arguments

const USAGE =
  "usage: node end2end/bench/live-load.mjs [--bin PATH] [--clients 1000] [--rounds 100] " +
  "[--burst-rate 0] [--post-concurrency 1] [--connect-concurrency 100] [--timeout 30] [--json]";

function usageError(message) {
  process.stderr.write(`live-load: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    bin: process.env.FIXEDPOINT_BIN ?? null,
    clients: 1000,
    rounds: 100,
    burstRate: 0,
    postConcurrency: 1,
    connectConcurrency: 100,
    timeout: 30,
    json: false,
  };
  const numeric = {
    "--clients": ["clients", 1, true],
    "--rounds": ["rounds", 1, true],
    "--burst-rate": ["burstRate", 0, false],
    "--post-concurrency": ["postConcurrency", 1, true],
    "--connect-concurrency": ["connectConcurrency", 1, true],
    "--timeout": ["timeout", 0.1, false],
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const take = () => {
      if (value !== undefined) return value;
      if (i + 1 >= argv.length) usageError(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === "--help" || arg === "-h") {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else if (arg === "--json") {
      opts.json = true;
    } else if (arg === "--bin") {
      opts.bin = take();
    } else if (arg in numeric) {
      const [key, min, integer] = numeric[arg];
      const text = take();
      const n = Number(text);
      if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
        usageError(`${arg} wants ${integer ? "an integer" : "a number"} >= ${min}, not ${JSON.stringify(text)}`);
      }
      opts[key] = n;
    } else {
      usageError(`unknown argument ${JSON.stringify(argv[i])}`);
    }
  }
  if (opts.rounds > 1_000_000) usageError("--rounds is too large");
  if (!opts.bin) {
    const release = join(ROOT, "target", "release", "fixedpoint");
    opts.bin = existsSync(release) ? release : join(ROOT, "target", "debug", "fixedpoint");
  }
  opts.bin = resolve(opts.bin);
  try {
    accessSync(opts.bin, constants.X_OK);
  } catch {
    usageError(`no executable at ${opts.bin} (build it, or pass --bin)`);
  }
  return opts;
}

// ---------------------------------------------------------------- system

// The soft limit on open files, which a spawned server inherits.
function openFileLimit() {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = line?.slice("Max open files".length).trim().split(/\s+/)[0];
    return soft === "unlimited" ? Infinity : Number(soft);
  } catch {
    return NaN;
  }
}

// VmRSS and VmHWM of a process in KiB, or null when /proc has no answer.
function readMemory(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rss_kib: field("VmRSS"), hwm_kib: field("VmHWM") };
  } catch {
    return null;
  }
}

function freePort() {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.on("error", fail);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- the server

class Server {
  constructor(bin) {
    this.bin = bin;
    this.dir = mkdtempSync(join(tmpdir(), "fixedpoint-live-load-"));
    this.child = null;
    this.exited = null;
    this.logTail = "";
  }

  env() {
    return {
      ...process.env,
      FIXEDPOINT_ADDR: `127.0.0.1:${this.port}`,
      DATABASE_URL: `sqlite://${join(this.dir, "live-load.db")}?mode=rwc`,
      PUBLIC_URL: this.base,
      LEPTOS_SITE_ROOT: this.siteRoot,
      RUST_LOG: process.env.RUST_LOG ?? "warn",
    };
  }

  async start() {
    this.port = await freePort();
    this.base = `http://127.0.0.1:${this.port}`;
    const built = join(ROOT, "target", "site");
    this.siteRoot = process.env.LEPTOS_SITE_ROOT ?? (existsSync(built) ? built : join(this.dir, "site"));
    mkdirSync(this.siteRoot, { recursive: true });
    this.child = spawn(this.bin, ["serve"], { cwd: this.dir, env: this.env(), stdio: ["ignore", "pipe", "pipe"] });
    const keep = (chunk) => {
      this.logTail = (this.logTail + chunk).slice(-16_384);
    };
    this.child.stdout.on("data", keep);
    this.child.stderr.on("data", keep);
    this.exited = new Promise((done) => this.child.on("exit", (code, signal) => done({ code, signal })));
    this.child.on("error", (error) => keep(`spawn error: ${error.message}\n`));

    const deadline = Date.now() + 60_000;
    for (;;) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`fixedpoint serve exited early (${this.child.exitCode ?? this.child.signalCode}):\n${this.logTail}`);
      }
      const status = await request(this.base, "GET", "/healthz").then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      if (Date.now() > deadline) throw new Error(`fixedpoint serve was not healthy within 60 s:\n${this.logTail}`);
      await sleep(100);
    }
    return this;
  }

  // Runs a CLI subcommand against the server's database; its stdout.
  cli(...args) {
    try {
      return execFileSync(this.bin, args, { cwd: this.dir, env: this.env(), timeout: 60_000, stdio: "pipe" }).toString();
    } catch (error) {
      throw new Error(`fixedpoint ${args.join(" ")} failed: ${error.stderr?.toString() || error.message}`);
    }
  }

  alive() {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  // SIGTERM, SIGKILL after `graceMs`; then the temporary directory goes.
  async stop(graceMs = 10_000) {
    let forced = false;
    if (this.alive()) {
      this.child.kill("SIGTERM");
      const timer = new Promise((r) => setTimeout(() => r("timeout"), graceMs));
      if ((await Promise.race([this.exited, timer])) === "timeout") {
        forced = true;
        this.child.kill("SIGKILL");
        await this.exited;
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    return { forced };
  }

  // For process exit: nothing asynchronous is possible any more.
  stopNow() {
    if (this.alive()) this.child.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// A plain request; resolves with status, headers, body text and timings.
function request(base, method, path, { headers = {}, body, agent } = {}) {
  return new Promise((done, fail) => {
    const url = new URL(path, base);
    const req = http.request(url, { method, headers, agent: agent ?? false });
    const sentAt = performance.now();
    req.on("error", fail);
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer in 30 s`)));
    req.on("response", (res) => {
      const answeredAt = performance.now();
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => done({ status: res.statusCode, headers: res.headers, body: text, sentAt, answeredAt }));
      res.on("error", fail);
    });
    req.end(body);
  });
}

// Team, member, loop token and a signed-in session cookie, by the CLI.
async function setUp(server) {
  server.cli("team", "create", TEAM);
  server.cli("team", "add-member", TEAM, EMAIL);
  const token = server.cli("token", "create", "--team", TEAM, "--name", "live-load").trim().split("\n").pop().trim();
  const link = server.cli("login-link", EMAIL).trim().split("\n").pop().trim();
  const secret = new URL(link).searchParams.get("token");
  if (!token || !secret) throw new Error(`could not read the token (${token}) or the sign-in link (${link})`);
  const answer = await request(server.base, "POST", "/signin/verify", {
    headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-origin" },
    body: new URLSearchParams({ token: secret }).toString(),
  });
  const cookie = (answer.headers["set-cookie"] ?? [])
    .map((c) => /^fp_session=([^;]*)/.exec(c)?.[1])
    .find(Boolean);
  if (answer.status !== 303 || !cookie) {
    throw new Error(`sign-in answered ${answer.status} without an fp_session cookie: ${answer.body.slice(0, 300)}`);
  }
  return { token, cookie: `fp_session=${cookie}` };
}

function roundBody(run, round) {
  const state = createHash("sha256").update(`${run}:${round}`).digest("hex").slice(0, 16);
  return JSON.stringify({ round, run, state, findings: [] });
}

// ---------------------------------------------------------------- SSE client

// One live-stream connection with an incremental event-stream parser (the
// WHATWG rules: LF, CRLF or CR line ends, which may straddle chunks; `:`
// comments; data lines joined with "\n"; dispatch on a blank line).
class Client {
  constructor(index, bench) {
    this.index = index;
    this.bench = bench;
    this.req = null;
    this.connected = false;
    this.closedByUs = false;
    this.failed = null; // why the connection never opened
    this.broken = null; // why an open stream ended early
    this.pending = ""; // an unfinished line
    this.afterCR = false;
    this.started = false;
    this.eventType = "";
    this.data = [];
    this.lastId = "";
    this.lastNumericId = -Infinity;
    this.received = 0;
    this.connectMs = NaN;
  }

  open() {
    const b = this.bench;
    return new Promise((done) => {
      const t0 = performance.now();
      const req = http.request(b.streamUrl, {
        agent: b.streamAgent,
        headers: { accept: "text/event-stream", "cache-control": "no-cache", cookie: b.cookie },
      });
      this.req = req;
      let settled = false;
      const settle = () => {
        if (!settled) {
          settled = true;
          done();
        }
      };
      const timer = setTimeout(() => {
        if (!this.connected) req.destroy(new Error(`no response headers within ${b.opts.timeout} s`));
      }, b.opts.timeout * 1000);
      req.on("error", (error) => {
        clearTimeout(timer);
        if (this.closedByUs) return settle();
        if (!this.connected) this.failed ??= error.code ?? error.message;
        else this.broken ??= error.code ?? error.message;
        settle();
      });
      req.on("response", (res) => {
        clearTimeout(timer);
        const type = String(res.headers["content-type"] ?? "");
        if (res.statusCode !== 200 || !type.startsWith("text/event-stream")) {
          this.failed = `HTTP ${res.statusCode} ${type || "(no content-type)"}`;
          res.resume();
          req.destroy();
          return settle();
        }
        this.connected = true;
        this.connectMs = performance.now() - t0;
        b.connectedCount++;
        settle();
        res.setEncoding("utf8");
        res.on("data", (chunk) => this.feed(chunk, performance.now()));
        res.on("end", () => {
          if (!this.closedByUs) this.broken ??= "the server ended the stream";
        });
        res.on("error", (error) => {
          if (!this.closedByUs) this.broken ??= error.code ?? error.message;
        });
      });
      req.end();
    });
  }

  close() {
    this.closedByUs = true;
    this.req?.destroy();
  }

  feed(chunk, at) {
    let text = chunk;
    if (text.length === 0) return;
    if (!this.started) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    if (this.afterCR && text.charCodeAt(0) === 10) start = 1; // the LF of a CRLF split over chunks
    this.afterCR = false;
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = this.pending + text.slice(start, i);
      this.pending = "";
      if (c === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) i++;
        } else {
          this.afterCR = true;
        }
      }
      start = i + 1;
      this.line(line, at);
    }
    if (start < text.length) this.pending += text.slice(start);
  }

  line(line, at) {
    if (line === "") return this.dispatch(at);
    if (line.charCodeAt(0) === 58 /* : */) {
      this.bench.comments++;
      return;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "event") this.eventType = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id") {
      if (!value.includes("\0")) this.lastId = value;
    } else if (field === "retry") this.bench.retryLines++;
  }

  dispatch(at) {
    const type = this.eventType || "message";
    const data = this.data;
    this.eventType = "";
    this.data = [];
    if (data.length === 0) return;
    this.bench.onEvent(this, type, data.join("\n"), this.lastId, at);
  }
}

// ---------------------------------------------------------------- the bench

class Bench {
  constructor(opts, server, session) {
    this.opts = opts;
    this.server = server;
    this.cookie = session.cookie;
    this.token = session.token;
    this.run = `bench-${randomBytes(4).toString("hex")}`;
    this.streamUrl = new URL(`/loops/${encodeURIComponent(LOOP)}/events?team=${encodeURIComponent(TEAM)}`, server.base);
    this.streamAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    this.postAgent = new http.Agent({ keepAlive: true, maxSockets: opts.postConcurrency });
    const n = opts.clients * opts.rounds;
    this.arrival = new Float64Array(n).fill(NaN); // performance.now() of (client, round)
    this.sentAt = new Float64Array(opts.rounds + 1).fill(NaN);
    this.answeredAt = new Float64Array(opts.rounds + 1).fill(NaN);
    this.createdAt = new Float64Array(opts.rounds + 1).fill(NaN); // server's unix ms
    this.clients = [];
    this.connectedCount = 0;
    this.delivered = 0;
    this.duplicates = 0;
    this.preBurstEvents = 0;
    this.foreignEvents = 0; // round events of another loop/run, or a round outside 1..R
    this.otherTypes = {};
    this.badData = 0;
    this.idRegressions = 0;
    this.comments = 0;
    this.retryLines = 0;
    this.lastEventAt = -Infinity;
    this.burstStarted = false;
    this.target = Infinity; // deliveries after which the burst is complete
    this.onComplete = null;
    this.postFailures = [];
  }

  onEvent(client, type, data, id, at) {
    this.lastEventAt = at;
    const numericId = Number(id);
    if (id !== "" && Number.isFinite(numericId)) {
      if (numericId <= client.lastNumericId) this.idRegressions++;
      client.lastNumericId = numericId;
    }
    if (type !== "round") {
      this.otherTypes[type] = (this.otherTypes[type] ?? 0) + 1;
      return;
    }
    if (!this.burstStarted) {
      this.preBurstEvents++;
      return;
    }
    let event;
    try {
      event = JSON.parse(data);
    } catch {
      this.badData++;
      return;
    }
    const round = event?.round;
    if (event?.loop !== LOOP || event?.run !== this.run || !Number.isInteger(round) || round < 1 || round > this.opts.rounds) {
      this.foreignEvents++;
      return;
    }
    const slot = client.index * this.opts.rounds + (round - 1);
    if (!Number.isNaN(this.arrival[slot])) {
      this.duplicates++;
      return;
    }
    this.arrival[slot] = at;
    client.received++;
    this.delivered++;
    if (Number.isNaN(this.createdAt[round]) && Number.isFinite(event.created_at)) this.createdAt[round] = event.created_at;
    if (this.delivered >= this.target) this.onComplete?.();
  }

  async probe() {
    const answer = await new Promise((done, fail) => {
      const req = http.request(this.streamUrl, {
        agent: false,
        headers: { accept: "text/event-stream", cookie: this.cookie },
      });
      req.setTimeout(30_000, () => req.destroy(new Error("no response headers in 30 s")));
      req.on("error", fail);
      req.on("response", (res) => {
        const result = { status: res.statusCode, type: String(res.headers["content-type"] ?? "") };
        if (result.status === 200 && result.type.startsWith("text/event-stream")) {
          req.destroy();
          return done(result);
        }
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => (body += c));
        res.on("end", () => done({ ...result, body }));
      });
      req.end();
    });
    if (answer.status !== 200 || !answer.type.startsWith("text/event-stream")) {
      throw new Error(
        `GET ${this.streamUrl.pathname}${this.streamUrl.search} answered ${answer.status} ` +
          `(${answer.type || "no content-type"}), not a text/event-stream: does this binary serve the live stream yet?` +
          (answer.body ? `\n${answer.body.slice(0, 300)}` : ""),
      );
    }
  }

  async warmUp() {
    const answer = await this.post(1, "warmup");
    if (answer.status !== 200) throw new Error(`the warm-up round answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  }

  post(round, run = this.run) {
    return request(this.server.base, "POST", `/api/v1/loops/${encodeURIComponent(LOOP)}/rounds`, {
      agent: this.postAgent,
      headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
      body: roundBody(run, round),
    });
  }

  // Opens every client, at most --connect-concurrency handshakes at a time.
  async connectAll() {
    const { clients, connectConcurrency } = this.opts;
    const t0 = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < clients) {
        const client = new Client(next++, this);
        this.clients.push(client);
        await client.open();
      }
    };
    await Promise.all(Array.from({ length: Math.min(connectConcurrency, clients) }, worker));
    this.clients.sort((a, b) => a.index - b.index);
    return performance.now() - t0;
  }

  // Until no event has arrived for IDLE_MS (the streams' replay, if any, is over).
  async waitIdle() {
    const start = performance.now();
    const deadline = start + this.opts.timeout * 1000;
    for (;;) {
      const now = performance.now();
      const quietSince = Math.max(this.lastEventAt, start);
      if (now - quietSince >= IDLE_MS || now > deadline) return;
      await sleep(Math.max(10, IDLE_MS - (now - quietSince)));
    }
  }

  async burst() {
    const { rounds, burstRate, postConcurrency, timeout } = this.opts;
    const live = this.clients.filter((c) => c.connected && !c.broken).length;
    this.burstStarted = true;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let okRounds = 0;
    await new Promise((done) => {
      let next = 1;
      let inFlight = 0;
      let finished = 0;
      let timer = null;
      const pump = () => {
        timer = null;
        while (inFlight < postConcurrency && next <= rounds) {
          if (burstRate > 0) {
            const due = t0 + ((next - 1) * 1000) / burstRate;
            const now = performance.now();
            if (due > now + 0.5) {
              timer ??= setTimeout(pump, due - now);
              return;
            }
          }
          const round = next++;
          inFlight++;
          this.post(round)
            .then(
              (answer) => {
                this.sentAt[round] = answer.sentAt;
                this.answeredAt[round] = answer.answeredAt;
                if (answer.status === 200) okRounds++;
                else this.postFailures.push({ round, status: answer.status, body: answer.body.slice(0, 200) });
              },
              (error) => this.postFailures.push({ round, status: 0, body: error.message }),
            )
            .finally(() => {
              inFlight--;
              finished++;
              if (finished === rounds) done();
              else if (timer === null) pump();
            });
        }
      };
      pump();
    });
    const postsDone = performance.now();
    // The deliveries that can still come: every open stream, every stored round.
    this.target = live * okRounds;
    if (this.delivered < this.target) {
      await new Promise((done) => {
        const timer = setTimeout(done, timeout * 1000);
        this.onComplete = () => {
          clearTimeout(timer);
          done();
        };
      });
    }
    this.onComplete = null;
    const end = performance.now();
    const cpu = process.cpuUsage(cpu0);
    return {
      t0,
      postsMs: postsDone - t0,
      wallMs: end - t0,
      clientCpuShare: (cpu.user + cpu.system) / 1000 / (end - t0),
      okRounds,
    };
  }

  closeAll() {
    for (const client of this.clients) client.close();
    this.streamAgent.destroy();
    this.postAgent.destroy();
  }
}

// ---------------------------------------------------------------- statistics

function summarize(values) {
  const n = values.length;
  if (n === 0) return { count: 0, p50: null, p90: null, p99: null, max: null, mean: null };
  const sorted = Float64Array.from(values).sort();
  const at = (p) => sorted[Math.min(n - 1, Math.max(0, Math.ceil((p / 100) * n) - 1))];
  let sum = 0;
  for (const v of sorted) sum += v;
  return { count: n, min: sorted[0], p50: at(50), p90: at(90), p99: at(99), max: sorted[n - 1], mean: sum / n };
}

function report(opts, bench, server, connectMs, burst, memory) {
  const { clients, rounds } = opts;
  const fromSent = [];
  const fromAnswer = [];
  const fromCreated = [];
  const perRoundSpread = [];
  let lastArrival = -Infinity;
  const epoch = performance.timeOrigin;
  for (let r = 1; r <= rounds; r++) {
    let first = Infinity;
    let last = -Infinity;
    for (let c = 0; c < clients; c++) {
      const at = bench.arrival[c * rounds + (r - 1)];
      if (Number.isNaN(at)) continue;
      fromSent.push(at - bench.sentAt[r]);
      fromAnswer.push(at - bench.answeredAt[r]);
      if (!Number.isNaN(bench.createdAt[r])) fromCreated.push(epoch + at - bench.createdAt[r]);
      if (at < first) first = at;
      if (at > last) last = at;
    }
    if (last >= first) perRoundSpread.push(last - first);
    if (last > lastArrival) lastArrival = last;
  }
  const expected = clients * rounds;
  const failedClients = bench.clients.filter((c) => c.failed);
  const brokenClients = bench.clients.filter((c) => c.broken);
  const reasons = {};
  for (const c of failedClients) reasons[`connect: ${c.failed}`] = (reasons[`connect: ${c.failed}`] ?? 0) + 1;
  for (const c of brokenClients) reasons[`stream: ${c.broken}`] = (reasons[`stream: ${c.broken}`] ?? 0) + 1;
  const connectTimes = bench.clients.filter((c) => c.connected).map((c) => c.connectMs);
  const [before, afterConnect, afterBurst] = memory;
  const perConnection =
    before && afterConnect && bench.connectedCount > 0 ? (afterConnect.rss_kib - before.rss_kib) / bench.connectedCount : null;
  const missing = expected - bench.delivered;
  const clientErrors = failedClients.length + brokenClients.length;
  return {
    ok: missing === 0 && clientErrors === 0 && bench.postFailures.length === 0,
    binary: opts.bin,
    server_pid: server.child.pid,
    clients,
    rounds,
    run: bench.run,
    burst_rate: opts.burstRate,
    post_concurrency: opts.postConcurrency,
    connections: {
      connected: bench.connectedCount,
      failed: failedClients.length,
      broken: brokenClients.length,
      connect_all_ms: connectMs,
      connect_ms: summarize(connectTimes),
    },
    deliveries: {
      expected,
      received: bench.delivered,
      missing,
      duplicates: bench.duplicates,
      clients_complete: bench.clients.filter((c) => c.received === rounds).length,
      foreign_round_events: bench.foreignEvents,
      pre_burst_round_events: bench.preBurstEvents,
      other_event_types: bench.otherTypes,
      unreadable_data: bench.badData,
      id_regressions: bench.idRegressions,
      comment_lines: bench.comments,
      retry_lines: bench.retryLines,
    },
    latency_ms: {
      from_post_sent: summarize(fromSent),
      from_post_answer: summarize(fromAnswer),
      from_created_at: summarize(fromCreated),
      round_fanout_spread: summarize(perRoundSpread),
    },
    burst: {
      rounds_stored: burst.okRounds,
      posts_ms: burst.postsMs,
      post_round_trip_ms: summarize(
        Array.from({ length: rounds }, (_, i) => bench.answeredAt[i + 1] - bench.sentAt[i + 1]).filter((v) => !Number.isNaN(v)),
      ),
      first_post_to_last_delivery_ms: lastArrival > -Infinity ? lastArrival - burst.t0 : null,
      client_cpu_share: burst.clientCpuShare,
      post_failures: bench.postFailures,
    },
    server_memory_kib: {
      before_connect: before,
      after_connect: afterConnect,
      after_burst: afterBurst,
      per_connection_rss: perConnection,
    },
    client_errors: reasons,
  };
}

function printTable(r) {
  const ms = (v) => (v === null || v === undefined || Number.isNaN(v) ? "-" : v.toFixed(1));
  const mib = (kib) => (kib === null || kib === undefined || Number.isNaN(kib) ? "-" : `${(kib / 1024).toFixed(1)} MiB`);
  const pad = (s, n) => String(s).padStart(n);
  const lines = [];
  lines.push(`live-load: ${r.clients} clients x ${r.rounds} rounds, run ${r.run}`);
  lines.push(`  server ${r.binary} (pid ${r.server_pid})`);
  lines.push(
    `  burst: ${r.burst_rate > 0 ? `${r.burst_rate} rounds/s` : "as fast as possible"}, ${r.post_concurrency} POST(s) in flight`,
  );
  lines.push("");
  const c = r.connections;
  lines.push(
    `connections   ${c.connected}/${r.clients} open in ${ms(c.connect_all_ms)} ms` +
      ` (per connection p50 ${ms(c.connect_ms.p50)} ms, max ${ms(c.connect_ms.max)} ms); failed ${c.failed}, broken ${c.broken}`,
  );
  const d = r.deliveries;
  lines.push(
    `deliveries    ${d.received}/${d.expected} received, missing ${d.missing}, duplicates ${d.duplicates},` +
      ` clients with every round ${d.clients_complete}/${r.clients}`,
  );
  const extras = [];
  if (d.foreign_round_events) extras.push(`${d.foreign_round_events} round events of another loop/run`);
  if (d.pre_burst_round_events) extras.push(`${d.pre_burst_round_events} round events before the burst`);
  for (const [type, n] of Object.entries(d.other_event_types)) extras.push(`${n} "${type}" events`);
  if (d.unreadable_data) extras.push(`${d.unreadable_data} events with unreadable data`);
  if (d.id_regressions) extras.push(`${d.id_regressions} ids not increasing`);
  extras.push(`${d.comment_lines} comment lines`, `${d.retry_lines} retry lines`);
  lines.push(`              also: ${extras.join(", ")}`);
  lines.push("");
  lines.push(`latency (ms)                 ${["p50", "p90", "p99", "max", "mean"].map((h) => pad(h, 8)).join("")}`);
  const row = (label, s) =>
    lines.push(`  ${label.padEnd(27)}${[s.p50, s.p90, s.p99, s.max, s.mean].map((v) => pad(ms(v), 8)).join("")}`);
  row("from POST sent", r.latency_ms.from_post_sent);
  row("from POST answer", r.latency_ms.from_post_answer);
  row("from created_at (1 ms res)", r.latency_ms.from_created_at);
  row("per-round spread (1st-last)", r.latency_ms.round_fanout_spread);
  row("POST round trip", r.burst.post_round_trip_ms);
  lines.push("");
  const b = r.burst;
  lines.push(
    `burst         ${b.rounds_stored}/${r.rounds} rounds stored; POSTs took ${ms(b.posts_ms)} ms;` +
      ` first POST to last delivery ${ms(b.first_post_to_last_delivery_ms)} ms`,
  );
  lines.push(`              client CPU during the burst: ${(b.client_cpu_share * 100).toFixed(0)}% of one core`);
  lines.push("");
  const m = r.server_memory_kib;
  lines.push(`server memory      ${pad("VmRSS", 12)}${pad("VmHWM", 12)}`);
  for (const [label, s] of [
    ["before connect", m.before_connect],
    ["after connect", m.after_connect],
    ["after burst", m.after_burst],
  ]) {
    lines.push(`  ${label.padEnd(16)}${pad(mib(s?.rss_kib), 12)}${pad(mib(s?.hwm_kib), 12)}`);
  }
  lines.push(
    `  per connection  ${m.per_connection_rss === null ? "-" : `${m.per_connection_rss.toFixed(1)} KiB`} RSS` +
      " ((after connect - before) / connected)",
  );
  lines.push("");
  const errors = Object.entries(r.client_errors);
  lines.push(`client errors ${errors.length === 0 ? "none" : ""}`);
  for (const [reason, n] of errors) lines.push(`  ${n} x ${reason}`);
  for (const f of b.post_failures.slice(0, 10)) lines.push(`  POST round ${f.round}: ${f.status} ${f.body}`);
  if (b.post_failures.length > 10) lines.push(`  ... and ${b.post_failures.length - 10} more failed POSTs`);
  if (b.client_cpu_share > 0.9) {
    lines.push("");
    lines.push("warning: the client used over 90% of a core during the burst; the latencies include its own queueing.");
  }
  lines.push("");
  lines.push(r.ok ? "result: OK, every client received every round" : "result: FAILED (see above)");
  process.stdout.write(`${lines.join("\n")}\n`);
}

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const need = 2 * opts.clients + 100;
  const limit = openFileLimit();
  if (!(limit >= need)) {
    process.stderr.write(
      `live-load: the open-file limit is ${Number.isNaN(limit) ? "unknown" : limit}, and ${opts.clients} clients need` +
        ` at least ${need} (a socket on each side; the server inherits this limit).\n` +
        `Raise it in this shell first, e.g.:  ulimit -n ${Math.max(8192, need)}\n`,
    );
    process.exit(2);
  }

  const server = new Server(opts.bin);
  let bench = null;
  let stopping = false;
  const onSignal = async (signal) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`\nlive-load: ${signal}, stopping the server\n`);
    bench?.closeAll();
    await server.stop(3000).catch(() => server.stopNow());
    process.exit(130);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);
  process.on("exit", () => server.stopNow());

  let result;
  try {
    await server.start();
    const session = await setUp(server);
    bench = new Bench(opts, server, session);
    await bench.warmUp();
    await bench.probe();
    await sleep(250);
    const before = readMemory(server.child.pid);
    const connectMs = await bench.connectAll();
    if (bench.connectedCount === 0) {
      const sample = bench.clients.find((c) => c.failed)?.failed;
      throw new Error(`no stream connected (first failure: ${sample})`);
    }
    await bench.waitIdle();
    const afterConnect = readMemory(server.child.pid);
    const burst = await bench.burst();
    const afterBurst = readMemory(server.child.pid);
    result = report(opts, bench, server, connectMs, burst, [before, afterConnect, afterBurst]);
  } catch (error) {
    if (stopping) return;
    process.stderr.write(`live-load: ${error.message}\n`);
    bench?.closeAll();
    await server.stop(3000).catch(() => server.stopNow());
    process.exit(2);
  }
  if (stopping) return;
  bench.closeAll();
  const stopped = await server.stop();
  result.server_needed_sigkill = stopped.forced;
  if (opts.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    printTable(result);
    if (stopped.forced) process.stdout.write("note: the server did not stop within 10 s of SIGTERM and was killed\n");
  }
  process.exit(result.ok ? 0 : 1);
}

main();
