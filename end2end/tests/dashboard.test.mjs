// The loops dashboard as a team lead reads it: six loops of about 30 rounds
// each (one converging to done, one stalled, one thrashing, one cycling
// A-B-A, one wedged on a fixed point, one ended by its budget), at 1280 and
// 390 px. Each loop's diagnosis is in the first screen, the list colours
// every class and puts what needs a person first, STOP is confirmed and
// only offered on a running run, and the next answer's advice is `stop`.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { launchBrowser, watchErrors, waitForHydration } from "../support/browser.mjs";
import { startServer } from "../support/server.mjs";
import { startSmtpSink } from "../support/smtp.mjs";

const SHOTS = resolve(import.meta.dirname, "..", "screenshots");
const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const ROUNDS = 30;

async function visit(page, url) {
  const response = await page.goto(url);
  await waitForHydration(page);
  return response;
}

const finding = (criterion, severity = "blocking") => ({
  target: { path: "draft.md", start_line: 1 },
  severity,
  criterion,
  message: `${criterion} still fails`,
});

// The six loops, round by round: each entry is the body of one round.
function fixture() {
  const loops = {};
  // Converging: one blocking finding fewer each round, done at the last.
  loops.drafter = Array.from({ length: ROUNDS }, (_, i) => {
    const left = ROUNDS - 1 - i;
    return {
      state: `d${i}`,
      findings: Array.from({ length: left }, (_, k) => finding(`c${k}`)),
      spent: { usd: 0.1 },
      ...(left === 0 ? { exit: "E1" } : {}),
    };
  });
  // Stalled: the state moves, the same two blocking findings stay.
  loops.stuck = Array.from({ length: ROUNDS }, (_, i) => ({
    state: `s${i}`,
    findings: [finding("tests"), finding("lint")],
    spent: { tokens: 1000 },
  }));
  // Thrashing: two blocking findings each round, never the same two.
  loops.flailer = Array.from({ length: ROUNDS }, (_, i) => ({
    state: `t${i}`,
    findings: [finding(`x${i}`), finding(`y${i}`)],
  }));
  // Cycling: the states A and B in turn.
  loops.pendulum = Array.from({ length: ROUNDS }, (_, i) => ({
    state: i % 2 === 0 ? "aaaa0000" : "bbbb1111",
    findings: [finding(i % 2 === 0 ? "a" : "b")],
  }));
  // Wedged: converging for 12 rounds, then the same state from round 12.
  loops.wedge = Array.from({ length: ROUNDS }, (_, i) => ({
    state: i < 11 ? `w${i}` : "wedgedcafe",
    findings: Array.from({ length: i < 11 ? 14 - i : 3 }, (_, k) => finding(`k${k}`)),
  }));
  // Ended by its budget, still blocked, the last round rate-limited.
  loops.spender = Array.from({ length: ROUNDS }, (_, i) => ({
    state: `b${i}`,
    findings: [finding(`m${i % 3}`), finding("tests")],
    spent: { usd: 0.5, tokens: 20000 },
    ...(i === ROUNDS - 1 ? { exit: "E3", error: { code: "rate_limit", body: "429 Too Many Requests" } } : {}),
  }));
  return loops;
}

describe("loops dashboard", () => {
  let smtp;
  let server;
  let browser;
  let token;
  // One signed-in browser context for every test (the sign-in mails of one
  // address are rate-limited).
  let context;

  const post = (loop, body) =>
    fetch(`${server.base}/api/v1/loops/${loop}/rounds`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    smtp = await startSmtpSink();
    server = await startServer({ env: { SMTP_URL: smtp.url } });
    browser = await launchBrowser();
    context = await browser.newContext();
    const cli = (...args) =>
      execFileSync(process.env.FIXEDPOINT_BIN ?? "../target/debug/fixedpoint", args, {
        env: { ...process.env, DATABASE_URL: server.databaseUrl, RUST_LOG: "warn" },
      }).toString();
    cli("team", "create", "six");
    cli("team", "add-member", "six", "lead@example.com", "--admin");
    token = cli("token", "create", "--team", "six", "--name", "fixture").trim().split("\n").pop();
    for (const [loop, rounds] of Object.entries(fixture())) {
      for (const [index, body] of rounds.entries()) {
        const response = await post(loop, { round: index + 1, ...body });
        assert.equal(response.status, 200, `${loop} round ${index + 1}: ${await response.text()}`);
      }
    }
  });

  before(async () => {
    const page = await context.newPage();
    await signIn(page);
    await page.close();
  });

  async function open(width, height) {
    const page = await context.newPage();
    await page.setViewportSize({ width, height });
    return page;
  }

  after(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.stop();
  });

  async function signIn(page) {
    await visit(page, `${server.base}/signin`);
    await page.getByLabel("Email address").fill("lead@example.com");
    await page.getByRole("button", { name: "Mail me a sign-in link" }).click();
    await page.getByTestId("signin-sent").waitFor();
    const mail = await smtp.nextMail("lead@example.com");
    await visit(page, /https?:\/\/\S+token=fps_[0-9a-f]{64}/.exec(mail.body)[0]);
    await Promise.all([page.waitForURL(`${server.base}/account`), page.getByTestId("verify-submit").click()]);
    await waitForHydration(page);
  }

  async function axe(page, what) {
    await page.addScriptTag({ content: AXE });
    const result = await page.evaluate(async () => await window.axe.run(document));
    const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id);
    assert.deepEqual(bad, [], `axe on ${what}`);
  }

  const EXPECTED = {
    drafter: ["done", /^Done: converged at round 30$/],
    stuck: ["stalled", /^Stalled for 29 rounds: the same 2 blocking findings$/],
    flailer: ["thrashing", /^Thrashing for 29 rounds: 2 blocking findings, different ones each round$/],
    pendulum: ["cycling", /^Cycling with period 2 for 28 rounds$/],
    wedge: ["wedged", /^Wedged on state wedgedca since round 12, 3 blocking findings$/],
    spender: ["failed", /^Ended by its budget cap at round 30, 2 blocking findings left$/],
  };

  for (const [width, height] of [[1280, 900], [390, 844]]) {
    test(`the list and each loop's diagnosis at ${width} px`, async () => {
      const page = await open(width, height);
      const errors = watchErrors(page);
      await visit(page, `${server.base}/loops`);
      const list = page.getByTestId("loop-list");
      await list.waitFor();
      await page.getByTestId("legend").first().waitFor();
      const rows = list.locator("tbody tr");
      assert.equal(await rows.count(), 6);
      // Every class has its colour, and the list starts with what needs a person.
      const seen = await rows.evaluateAll((trs) =>
        trs.map((tr) => ({
          loop: tr.dataset.testid.replace(/^loop-/, ""),
          diagnosis: tr.dataset.diagnosis,
          background: getComputedStyle(tr.querySelector("td")).backgroundColor,
        })),
      );
      for (const row of seen) {
        assert.equal(row.diagnosis, EXPECTED[row.loop][0], `${row.loop} in the list`);
        assert.notEqual(row.background, "rgba(0, 0, 0, 0)", `${row.loop} is coloured`);
      }
      assert.deepEqual(
        seen.map((row) => row.diagnosis),
        ["cycling", "wedged", "thrashing", "stalled", "failed", "done"],
        "ordered by what needs attention",
      );
      const colours = new Set(seen.map((row) => row.background));
      assert.ok(colours.size >= 3, `bad, warn and good rows look different: ${[...colours]}`);
      assert.match(await page.getByTestId("loop-spender").innerText(), /\$15\.00/);
      assert.match(await page.getByTestId("loop-stuck").innerText(), /30,000 tokens/);
      assert.match(await page.getByTestId("loop-stuck").innerText(), /just now|min ago/);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
      assert.equal(overflow, false, `no horizontal scroll at ${width} px`);
      await axe(page, `/loops at ${width}`);
      await page.screenshot({ path: join(SHOTS, `dashboard-list-${width}.png`), fullPage: true });

      // A filter by diagnosis keeps only those loops.
      await visit(page, `${server.base}/loops?diagnosis=wedged`);
      assert.equal(await page.getByTestId("loop-list").locator("tbody tr").count(), 1);

      for (const [loop, [word, headline]] of Object.entries(EXPECTED)) {
        await visit(page, `${server.base}/loops/${loop}`);
        const panel = page.getByTestId("diagnosis");
        assert.equal(await panel.getAttribute("data-diagnosis"), word, loop);
        assert.match(await page.getByTestId("diagnosis-headline").innerText(), headline);
        const box = await page.getByTestId("diagnosis-headline").boundingBox();
        assert.ok(box && box.y + box.height <= height, `${loop}: the diagnosis is in the first screen (${box?.y})`);
        const stop = page.getByTestId("stop");
        const ended = ["drafter", "spender"].includes(loop);
        assert.equal(await stop.count(), ended ? 0 : 1, `${loop}: STOP only on a running run`);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
        assert.equal(overflow, false, `${loop}: no horizontal scroll at ${width} px`);
        if (["wedge", "pendulum", "flailer", "spender"].includes(loop)) {
          await page.screenshot({ path: join(SHOTS, `dashboard-${loop}-${width}.png`) });
        }
        if (loop === "stuck") {
          // On a phone each round is a compact card whose cells say what
          // they are, so 30 rounds are a few screens.
          const cardLike = await page.getByTestId("rounds").locator("tbody tr").first().evaluate((tr) => getComputedStyle(tr).display);
          assert.equal(cardLike, width < 640 ? "flex" : "table-row", `rounds at ${width} px`);
          const tall = await page.evaluate(() => document.documentElement.scrollHeight);
          console.log(`# the stuck loop's page (30 rounds) at ${width} px: ${tall} px tall`);
          if (width < 640) assert.ok(tall < 7000, `the page of 30 rounds is ${tall} px tall at ${width} px`);
          await page.screenshot({ path: join(SHOTS, `dashboard-stuck-full-${width}.png`), fullPage: true });
        }
      }
      // A round opens from its row and from its bar, with its messages.
      await visit(page, `${server.base}/loops/stuck`);
      await Promise.all([page.waitForURL(/round=5/), page.getByRole("link", { name: "Open round 5" }).click()]);
      await waitForHydration(page);
      const detail = page.getByTestId("round-detail");
      assert.match(await detail.getByRole("heading").first().innerText(), /^Round 5: stalled$/);
      assert.match(await page.getByTestId("round-findings").innerText(), /tests still fails/);
      await Promise.all([
        page.waitForURL(/round=3/),
        page.getByTestId("chart").locator("svg a").nth(2).click(),
      ]);
      await waitForHydration(page);
      assert.match(await page.getByTestId("round-detail").getByRole("heading").first().innerText(), /^Round 3: stalled$/);
      await visit(page, `${server.base}/loops/spender?round=30`);
      assert.match(await page.getByTestId("round-error").innerText(), /rate_limit[\s\S]*429 Too Many Requests/);
      if (width === 1280) await page.screenshot({ path: join(SHOTS, "dashboard-round-1280.png"), fullPage: true });
      // The budget's end is told apart from a convergence.
      await visit(page, `${server.base}/loops/spender`);
      assert.match(
        await page.getByTestId("diagnosis-ended").innerText(),
        /^Ended by E3 \(budget cap, a bound\) at round 30, with the error rate_limit$/,
      );
      assert.match(await page.getByTestId("diagnosis-spend").innerText(), /\$15\.00 · 600,000 tokens/);
      await axe(page, `/loops/spender at ${width}`);
      assert.deepEqual(errors, []);
      await page.close();
    });
  }

  // The issue's `.loop/` journal, as `fixedpoint push` sends it: each
  // missing check a blocking finding, the ratchet after each iteration.
  const missing = (...checks) =>
    checks.map((check) => ({ target: { id: `test:${check}` }, severity: "blocking", criterion: "verify", message: `${check} missing` }));
  // What each iteration wrote: the fourth is the first with one word
  // changed, a near repeat (its SimHash within 3 bits) under a new digest.
  const NOTE =
    "A loop that only stops at its budget cannot tell that it has finished. Give it a check that compares " +
    "this pass with the last, and a number that must move, and it can. We keep the last digest of the draft, " +
    "the blocking findings of the judge and the ratchet, and stop when two passes agree or when the ratchet " +
    "has not moved for three rounds. The operator can always press STOP, and the loop reads it before the " +
    "next round begins, so nothing is lost when a person steps in. ";
  const CLIMBER = [
    { state: "i1", text: NOTE, findings: missing("audit", "push", "import"), ratchet: { value: 6, best: 6, stall_count: 0 } },
    { state: "i2", text: "Wired the audit step into the gate.", findings: missing("push", "import"), ratchet: { value: 7, best: 7, stall_count: 0 } },
    { state: "i3", text: "Pushed half of the rounds, then the token ran out.", findings: missing("push", "import"), ratchet: { value: 8, best: 8, stall_count: 0 } },
    { state: "i4", text: NOTE.replace("three rounds", "four rounds"), findings: missing("push", "import"), ratchet: { value: 9, best: 9, stall_count: 0 } },
  ];

  for (const [width, height] of [[1280, 900], [390, 844]]) {
    test(`a loop whose ratchet moves is never shown as a stall, at ${width} px`, async () => {
      if (width === 1280) {
        const answers = [];
        for (const [index, body] of CLIMBER.entries()) {
          const response = await post("climber", { round: index + 1, ...body });
          assert.equal(response.status, 200);
          answers.push(await response.json());
        }
        assert.deepEqual(answers.map((a) => a.near_seen_at), [[], [], [], [1]], "round 4 has been here before");
      }
      const page = await open(width, height);
      const errors = watchErrors(page);
      await visit(page, `${server.base}/loops/climber`);
      assert.equal(await page.getByTestId("diagnosis").getAttribute("data-diagnosis"), "converging");
      assert.match(
        await page.getByTestId("diagnosis-headline").innerText(),
        /^Converging: the ratchet 7 → 9 for 2 rounds, 2 blocking findings to go$/,
      );
      // The chart draws the ratchet in a lane of its own and marks the
      // rounds that moved it; none of them is drawn as a stall.
      const chart = page.getByTestId("chart");
      assert.match(await chart.locator("svg").innerHTML(), /ratchet: the one number the loop must move/);
      assert.equal(await chart.locator("title", { hasText: /: ratcheting, the ratchet moved$/ }).count(), 2);
      assert.equal(await chart.locator("title", { hasText: /: stalled$/ }).count(), 0);
      assert.equal(await chart.locator("title", { hasText: /: ratchet \d+$/ }).count(), 4);
      // The near repeat: ringed on the chart, named in its row.
      assert.equal(await chart.locator("title", { hasText: /^round 4: near repeat of an earlier round$/ }).count(), 1);
      assert.equal(await page.getByTestId("near-4").innerText(), "round 1");
      const lane = await chart.locator("text", { hasText: "ratchet: the one number" }).boundingBox();
      assert.ok(lane && lane.height >= 11, `the lane's title is readable at ${width} px (${lane?.height})`);
      // A round opens with its ratchet.
      await visit(page, `${server.base}/loops/climber?round=3`);
      assert.match(await page.getByTestId("round-detail").getByRole("heading").first().innerText(), /^Round 3: ratcheting$/);
      assert.equal(await page.getByTestId("round-ratchet").innerText(), "8 (best 8, 0 rounds without a move)");
      await page.screenshot({ path: join(SHOTS, `dashboard-climber-${width}.png`), fullPage: width === 1280 });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
      assert.equal(overflow, false, `no horizontal scroll at ${width} px`);
      await axe(page, `/loops/climber at ${width}`);
      assert.deepEqual(errors, []);
      await page.close();
    });
  }

  test("the list follows new rounds without a reload", async () => {
    const page = await open(1280, 900);
    const errors = watchErrors(page);
    await visit(page, `${server.base}/loops`);
    await page.getByTestId("live-status").filter({ hasText: "Live" }).waitFor();
    assert.equal(await page.getByTestId("loop-newcomer").count(), 0);
    // A new loop's first round, then its state repeated: it appears, then
    // turns to a fixed point, in the open list.
    assert.equal((await post("newcomer", { round: 1, state: "n1", findings: [finding("tests")] })).status, 200);
    await page.locator('[data-testid="loop-newcomer"][data-diagnosis="started"]').waitFor({ timeout: 10_000 });
    assert.equal((await post("newcomer", { round: 2, state: "n1", findings: [finding("tests")] })).status, 200);
    await page.locator('[data-testid="loop-newcomer"][data-diagnosis="wedged"]').waitFor({ timeout: 10_000 });
    // What needs a person comes first, live too.
    const first = await page.getByTestId("loop-list").locator("tbody tr").first().getAttribute("data-diagnosis");
    assert.ok(["cycling", "wedged"].includes(first), first);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("a new reader makes a team on the web and connects a loop with its snippet", async () => {
    const page = await open(390, 844);
    const errors = watchErrors(page);
    // A slug that is not one is refused, naming the field; nothing is made.
    await visit(page, `${server.base}/account`);
    await page.getByLabel("Create a team, named").fill("six");
    await Promise.all([page.waitForLoadState("load"), page.getByTestId("create-team").click()]);
    assert.match(await page.locator("body").innerText(), /slug: the team six exists already/);
    await waitForHydration(page);
    await page.getByLabel("Create a team, named").fill("night-shift");
    await Promise.all([page.waitForURL(`${server.base}/teams/night-shift`), page.getByTestId("create-team").click()]);
    await waitForHydration(page);
    // An empty team shows how to connect a loop; a new token goes into the lines.
    await page.getByTestId("connect-loop").waitFor();
    assert.match(await page.getByTestId("snippet-curl").innerText(), /\$FIXEDPOINT_TOKEN/);
    await page.getByLabel("New loop token, named").fill("first");
    await page.getByRole("button", { name: "Create token" }).click();
    const token = await page.getByTestId("new-token").locator("code").innerText();
    const python = await page.getByTestId("snippet-Python").innerText();
    assert.ok(python.includes(token), "the snippet carries the new token");
    assert.ok(python.includes(`${server.base}/api/v1/loops/my-loop/rounds`), python);
    await page.screenshot({ path: join(SHOTS, "team-connect-390.png"), fullPage: true });
    // The snippet, run as it is, reports a round.
    const out = execFileSync("python3", ["-c", python]).toString();
    assert.match(out, /'class': 'first'/, out);
    assert.match(out, /'advice': 'continue'/, out);
    await visit(page, `${server.base}/loops`);
    await page.getByTestId("loop-my-loop").waitFor();
    // (The refused slug's page is a 409, as it should be.)
    assert.deepEqual(errors.filter((e) => !/HTTP 409|status of 409/.test(e)), []);
    await page.close();
  });

  test("STOP asks to be confirmed, and the next answer's advice is stop", async () => {
    const page = await open(1280, 900);
    const errors = watchErrors(page);
    await visit(page, `${server.base}/loops/stuck`);
    const confirm = page.getByTestId("stop-confirm");
    assert.equal(await confirm.isVisible(), false, "nothing is sent by the first press");
    await page.getByTestId("stop").click();
    await confirm.waitFor({ state: "visible" });
    await page.screenshot({ path: join(SHOTS, "dashboard-stop-confirm.png") });
    await Promise.all([page.waitForLoadState("load"), confirm.click()]);
    await page.getByTestId("pending").filter({ hasText: "STOP" }).waitFor();
    const next = await post("stuck", { round: ROUNDS + 1, state: "s-next", findings: [finding("tests"), finding("lint")] });
    assert.equal(next.status, 200);
    const answer = await next.json();
    assert.equal(answer.operator.stop, true);
    assert.equal(answer.advice, "stop");
    // The open page follows: the run is stopped and offers no STOP.
    await page.locator('[data-testid="diagnosis"][data-diagnosis="stopped"]').waitFor({ timeout: 10_000 });
    assert.match(await page.getByTestId("diagnosis-headline").innerText(), /^Stopped by the operator at round 31$/);
    assert.equal(await page.getByTestId("stop").count(), 0, "a stopped run offers no STOP");
    assert.deepEqual(errors, []);
    await page.close();
  });
});
