//! Fixtures per rule and language: each case is a small loop and the exact set
//! of exits it implements. Negative cases hide the same words in comments,
//! docstrings, strings and heredocs, or use them where they cannot end a loop.

use auditor::{audit, render_text, ExitId, Language, Report};
use ExitId::*;
use Language::*;

fn check(language: Language, source: &str, expected: &[ExitId]) {
    let report = audit(source, None, Some(language));
    let text = render_text(&Report::from(report.clone()));
    assert_eq!(report.found(), expected, "\n--- source ---\n{source}\n--- report ---\n{text}");
}

fn has_warning(language: Language, source: &str, code: &str) -> bool {
    audit(source, None, Some(language)).warnings.iter().any(|w| w.code == code)
}

#[test]
fn e1_goal_met() {
    check(Python, "while True:\n    r = step()\n    if not r.tool_calls:\n        break\n", &[E1]);
    check(Python, "while True:\n    r = step()\n    if r.stop_reason == 'end_turn':\n        break\n", &[E1]);
    check(Python, "while queue:\n    handle(queue.pop())\n", &[E1]);
    check(
        Python,
        "while True:\n    out = run()\n    if 'TASK_COMPLETE' in out:\n        return out\n",
        &[E1],
    );
    check(JavaScript, "while (true) {\n  const r = await step();\n  if (r.done) break;\n}\n", &[E1]);
    check(
        TypeScript,
        "while (true) {\n  const m: Msg = await next();\n  if (!m.toolCalls.length) { return m; }\n}\n",
        &[E1],
    );
    check(Bash, "while true; do\n  run\n  if grep -q DONE out.log; then break; fi\ndone\n", &[E1]);
    check(Bash, "while true; do\n  agent\n  pytest -q && break\ndone\n", &[E1]);
    check(
        Go,
        "package a\nfunc f() {\n\tfor {\n\t\tr := step()\n\t\tif r.Finished {\n\t\t\treturn\n\t\t}\n\t}\n}\n",
        &[E1],
    );
    check(
        Rust,
        "fn f() {\n    loop {\n        let r = step();\n        if r.is_done() { break; }\n    }\n}\n",
        &[E1],
    );
    check(Bash, "until make check; do\n  fix\ndone\n", &[E1]);
    check(
        Python,
        "def route(state):\n    if state['score'] >= 0.9:\n        return END\n    return 'revise'\ng = StateGraph(S)\n",
        &[E1],
    );
}

#[test]
fn e1_decoys_are_not_exits() {
    check(Python, "while True:\n    # if done: break\n    step()\n", &[]);
    check(Python, "while True:\n    \"\"\"if done: break\"\"\"\n    step()\n", &[]);
    check(Python, "while True:\n    print('done: break out when finished')\n    step()\n", &[]);
    check(JavaScript, "while (true) {\n  /* if (done) break; */\n  step();\n}\n", &[]);
    check(JavaScript, "while (true) {\n  log(`done ${x}`);\n  step();\n}\n", &[]);
    check(Bash, "while true; do\n  cat <<EOF\nif done; then break; fi\nEOF\n  step\ndone\n", &[]);
    check(
        Rust,
        "fn f() {\n    loop {\n        let s = r#\"if done { break }\"#;\n        step(s);\n    }\n}\n",
        &[],
    );
    check(Go, "package a\nfunc f() {\n\tfor {\n\t\t// if done { return }\n\t\tlog(\"done\")\n\t}\n}\n", &[]);
    // A done flag that is set but never decides anything.
    check(Python, "while True:\n    done = check()\n    step(done)\n", &[]);
}

#[test]
fn e2_turn_cap() {
    check(Python, "for _ in range(10):\n    step()\n", &[E2]);
    check(Python, "turn = 0\nwhile True:\n    turn += 1\n    if turn >= MAX_TURNS:\n        break\n", &[E2]);
    check(Python, "for i in range(len(items)):\n    step(items[i])\n", &[]);
    check(JavaScript, "for (let step = 0; step < maxSteps; step++) { await run(); }\n", &[E2]);
    check(Bash, "for i in $(seq 1 10); do\n  run\ndone\n", &[E2]);
    check(Bash, "i=0\nwhile [ $i -lt $MAX_ITERATIONS ]; do\n  run\n  i=$((i+1))\ndone\n", &[E2]);
    check(Go, "package a\nfunc f() {\n\tfor i := 0; i < maxIters; i++ {\n\t\tstep()\n\t}\n}\n", &[E2]);
    check(Rust, "fn f() {\n    for _ in 0..MAX_STEPS {\n        step();\n    }\n}\n", &[E2]);
    check(Python, "result = Runner.run_sync(agent, 'x', max_turns=5)\n", &[E2]);
    // A retry count of one request is not a loop bound.
    check(Python, "client = OpenAI(max_retries=3)\nwhile True:\n    client.step()\n", &[]);
}

#[test]
fn e3_budget_cap() {
    check(
        Python,
        "while True:\n    spent += r.usage.total_tokens\n    if spent > TOKEN_BUDGET:\n        break\n",
        &[E3],
    );
    check(JavaScript, "while (costUsd < maxCostUsd) { costUsd += await step(); }\n", &[E3]);
    // max_tokens caps one answer, not the loop.
    check(Python, "while True:\n    client.create(max_tokens=100)\n", &[]);
}

#[test]
fn e4_wall_clock() {
    check(
        Python,
        "start = time.time()\nwhile True:\n    if time.time() - start > 600:\n        break\n",
        &[E4],
    );
    check(Go, "package a\nfunc f() {\n\tfor time.Since(start) < limit {\n\t\tstep()\n\t}\n}\n", &[E4]);
    check(Bash, "timeout 600 ./agent.sh\nwhile true; do\n  ./step.sh || break\ndone\n", &[E4]);
    // A timeout on one request, or an exception class named Timeout, is not a wall clock.
    check(Python, "while True:\n    try:\n        requests.get(u, timeout=10)\n    except requests.Timeout:\n        break\n", &[]);
    check(Bash, "while true; do\n  timeout 60 ./step.sh\ndone\n", &[]);
}

#[test]
fn e5_no_progress() {
    check(Python, "seen = set()\nwhile True:\n    h = digest(state)\n    if h in seen:\n        break\n    seen.add(h)\n", &[E5]);
    check(
        Python,
        "prev = None\nwhile True:\n    cur = step()\n    if cur == prev:\n        break\n    prev = cur\n",
        &[E5],
    );
    check(Bash, "while true; do\n  run\n  git diff --quiet && break\ndone\n", &[E5]);
    check(
        TypeScript,
        "while (true) {\n  const k = key();\n  if (recent.includes(k)) break;\n  recent.push(k);\n}\n",
        &[E5],
    );
    check(
        Rust,
        "fn f() {\n    loop {\n        if stall_count > 3 { break; }\n        step();\n    }\n}\n",
        &[E5],
    );
}

#[test]
fn e5_warns_when_the_compared_value_never_moves() {
    let source = "prev = load()\nwhile True:\n    cur = step()\n    if cur == prev:\n        break\n";
    check(Python, source, &[]);
    assert!(has_warning(Python, source, "stale-progress-check"));
    // A repeat count held against its maximum: the maximum is meant not to
    // move, the count does.
    let counted = "while True:\n    sig = signature(step())\n    if sig == last:\n        self.duplicate_count += 1\n        if self.duplicate_count >= self.max_duplicates:\n            break\n    last = sig\n";
    check(Python, counted, &[E5]);
    assert!(!has_warning(Python, counted, "stale-progress-check"));
    // A detector that says the loop is stuck.
    check(
        JavaScript,
        "while (true) {\n  const d = detect(call);\n  if (d.stuck) break;\n  run(call);\n}\n",
        &[E5],
    );
}

#[test]
fn e7_failures_kept_on_an_object_called_context_are_a_threshold() {
    let source = "async function run(context) {\n  for (;;) {\n    try {\n      await step();\n      context.consecutiveFailures = 0;\n    } catch (error) {\n      context.consecutiveFailures++;\n    }\n    if (context.consecutiveFailures >= context.options.maxFailures) {\n      return false;\n    }\n  }\n}\n";
    check(JavaScript, source, &[E7]);
    // A context's own cancellation is still a stop from outside.
    check(Go, "package a\nfunc f(ctx context.Context) {\n\tfor {\n\t\tif ctx.Err() != nil {\n\t\t\treturn\n\t\t}\n\t\tstep()\n\t}\n}\n", &[E8]);
}

#[test]
fn e6_a_rust_repl_ends_on_ctrl_d_quit_and_ctrl_c() {
    let repl = "fn f(rl: &mut Editor) {\n    loop {\n        match rl.readline(\"> \") {\n            Ok(line) => match parse(&line) {\n                ChatCommand::Quit => break,\n                _ => ask(&line),\n            },\n            Err(ReadlineError::Eof) => break,\n            Err(e) => eprintln!(\"{e}\"),\n        }\n    }\n}\n";
    check(Rust, repl, &[E6]);
    let flag = "fn f(ctrlc: Option<&Flag>) {\n    loop {\n        if ctrlc.is_some_and(|c| c.interrupted.load(Ordering::SeqCst)) {\n            break;\n        }\n        step();\n    }\n}\n";
    check(Rust, flag, &[E6]);
}

#[test]
fn e6_human_interrupt() {
    check(
        Python,
        "while True:\n    try:\n        step()\n    except KeyboardInterrupt:\n        break\n",
        &[E6],
    );
    check(Python, "while True:\n    if input('go on? ') != 'y':\n        break\n", &[E6]);
    check(JavaScript, "process.on('SIGINT', () => process.exit(0));\nwhile (true) { step(); }\n", &[E6]);
}

#[test]
fn e6_warns_when_the_interrupt_is_swallowed() {
    let source = "while True:\n    try:\n        step()\n    except KeyboardInterrupt:\n        continue\n";
    check(Python, source, &[]);
    assert!(has_warning(Python, source, "interrupt-swallowed"));
}

#[test]
fn e7_error_threshold() {
    check(
        Python,
        "while True:\n    try:\n        step()\n    except Exception:\n        failures += 1\n        if failures >= 3:\n            raise\n",
        &[E7],
    );
    // Returning on the first error is not a threshold.
    check(Go, "package a\nfunc f() error {\n\tfor {\n\t\tif err := step(); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n}\n", &[]);
}

#[test]
fn e8_external_event() {
    check(Python, "while True:\n    if os.path.exists('STOP'):\n        break\n    step()\n", &[E8]);
    check(Bash, "while true; do\n  [ -f STOP ] && break\n  step\ndone\n", &[E8]);
    check(Go, "package a\nfunc f(ctx context.Context) {\n\tfor {\n\t\tselect {\n\t\tcase <-ctx.Done():\n\t\t\treturn\n\t\tdefault:\n\t\t}\n\t}\n}\n", &[E8]);
    check(TypeScript, "while (true) {\n  if (signal.aborted) break;\n  await step();\n}\n", &[E8]);
    check(Rust, "fn f() {\n    loop {\n        if token.is_cancelled() { break; }\n    }\n}\n", &[E8]);
    // STOP in a printed string is not a STOP file.
    check(Python, "while True:\n    print('touch STOP to stop')\n    step()\n", &[]);
}

#[test]
fn warnings_a_reviewer_wants() {
    assert!(has_warning(Python, "while True:\n    step()\n", "infinite-loop-without-exit"));
    assert!(!has_warning(
        Python,
        "while True:\n    if step():\n        break\n",
        "infinite-loop-without-exit"
    ));
    assert!(has_warning(
        Python,
        "MAX_TURNS = 10\nwhile True:\n    if step():\n        break\n",
        "bound-not-enforced"
    ));
    assert!(!has_warning(
        Python,
        "MAX_TURNS = 10\nfor _ in range(MAX_TURNS):\n    step()\n",
        "bound-not-enforced"
    ));
    assert!(has_warning(
        Python,
        "agent = create_react_agent(m, tools)\nagent.invoke({})\n",
        "framework-default-bound"
    ));
    assert!(!has_warning(
        Python,
        "agent = create_react_agent(m, tools)\nagent.invoke({}, config={'recursion_limit': 9})\n",
        "framework-default-bound"
    ));
    assert!(has_warning(Python, "while True:\n    if x ==\n", "parse-error"));
}

/// What the verdict leaves unsaid, at the line of the loop that decides it.
#[test]
fn backstop_and_completion_check_warnings() {
    let line_of = |language: Language, source: &str, code: &str| {
        audit(source, None, Some(language))
            .warnings
            .iter()
            .find(|w| w.code == code)
            .and_then(|w| w.start_line)
    };
    // CONVERGES with nothing that bounds it: the loop's header.
    let unbounded = "def run(agent):\n    while True:\n        reply = agent.step()\n        if not reply.tool_calls:\n            break\n";
    assert_eq!(line_of(Python, unbounded, "no-backstop"), Some(2));
    assert_eq!(line_of(Python, unbounded, "no-completion-check"), None);
    // A bound beside the check: nothing to say.
    let bounded =
        "for turn in range(40):\n    reply = agent.step()\n    if not reply.tool_calls:\n        break\n";
    assert_eq!(line_of(Python, bounded, "no-backstop"), None);
    assert_eq!(line_of(Python, bounded, "no-completion-check"), None);
    // DIVERGES: it only runs out.
    let capped =
        "package a\n\nfunc run(a Agent) {\n\tfor i := 0; i < maxIterations; i++ {\n\t\ta.Step()\n\t}\n}\n";
    assert_eq!(line_of(Go, capped, "no-completion-check"), Some(4));
    assert_eq!(line_of(Go, capped, "no-backstop"), None);
    // UNDEFINED has its own warning; the outer loop, not an inner one, is named.
    assert_eq!(line_of(Bash, "while true; do\n  step\ndone\n", "no-backstop"), None);
    let nested = "while (true) {\n  const r = await step();\n  for (const c of r.calls) {\n    run(c);\n  }\n  if (r.done) break;\n}\n";
    assert_eq!(line_of(JavaScript, nested, "no-backstop"), Some(1));
}

#[test]
fn findings_filtered_by_severity_and_successes_in_a_row_are_goals_met() {
    // The newsletter's first issue: nothing blocking left is the goal.
    check(
        Python,
        "def run(task, agent, check):\n    draft = agent.start(task)\n    for _ in range(MAX_TURNS):\n        blocking = [f for f in check(draft) if f.severity == \"blocking\"]\n        if not blocking:\n            return draft\n        draft = agent.revise(draft, blocking)\n",
        &[E1, E2],
    );
    // Completions counted in a row (reset when a pass is not complete) are
    // a goal met, not an error threshold.
    check(
        Bash,
        "while [ $iteration -le $MAX_ITERATIONS ]; do\n  run_agent\n  if check_completion; then\n    ((consecutive_complete++))\n    if [[ $consecutive_complete -ge $required_verifications ]]; then\n      exit 0\n    fi\n  else\n    consecutive_complete=0\n  fi\n  ((iteration++))\ndone\n",
        &[E1, E2],
    );
    // Failures in a row still are one.
    check(
        Bash,
        "while true; do\n  if run_agent; then\n    consecutive_failures=0\n  else\n    ((consecutive_failures++))\n    if [[ $consecutive_failures -ge 3 ]]; then\n      exit 1\n    fi\n  fi\ndone\n",
        &[E7],
    );
}

#[test]
fn budget_checks_behind_calls_and_run_out_replies_are_budgets_and_bare_budget_fields_are_not() {
    // A budget check's verdict leaves the loop: Go's error value, Python's
    // result, Rust's `?` on a check defined in the source that hands it on.
    check(
        Go,
        "package main\n\nfunc run(opts Options) error {\n\tfor {\n\t\tif err := checkBudget(opts); err != nil {\n\t\t\treturn err\n\t\t}\n\t\treply := callModel(opts)\n\t\tif len(reply.ToolCalls) == 0 {\n\t\t\treturn nil\n\t\t}\n\t}\n}\n",
        &[E1, E3],
    );
    check(
        Rust,
        "impl Agent {\n    fn check_budget(&self) -> Result<()> {\n        BudgetContext { tracker: &self.tracker }.check()\n    }\n    fn run(&mut self) -> Result<()> {\n        loop {\n            self.check_budget()?;\n            let reply = self.client.send(&self.messages)?;\n            if reply.tool_calls.is_empty() {\n                return Ok(());\n            }\n        }\n    }\n}\n",
        &[E1, E3],
    );
    // The same call to a check the paste does not hold is a warning, not E3.
    let unseen = "impl Agent {\n    fn run(&mut self) -> Result<()> {\n        loop {\n            self.check_budget()?;\n            let reply = self.client.send(&self.messages)?;\n            if reply.tool_calls.is_empty() {\n                return Ok(());\n            }\n        }\n    }\n}\n";
    check(Rust, unseen, &[E1]);
    assert!(has_warning(Rust, unseen, "check-not-in-source"));
    // The reply or the output says the context or the usage ran out.
    check(
        Python,
        "def run(state):\n    while True:\n        state = generate(state)\n        if state.output.stop_reason == \"model_length\":\n            break\n        if not state.output.tool_calls:\n            return state\n",
        &[E1, E3],
    );
    check(
        Bash,
        "while true; do\n  claude -p \"$PROMPT\" > \"$OUT\"\n  if grep -qi \"usage limit reached\" \"$OUT\"; then\n    break\n  fi\n  grep -q COMPLETE \"$OUT\" && exit 0\ndone\n",
        &[E1, E3],
    );
    // Tokens weighed to decide when to compact the history: the loop goes on.
    check(
        Python,
        "class Runner:\n    def _check_and_compact(self):\n        tokens_used = self.usage.total_tokens\n        if tokens_used < self.threshold:\n            return False\n        self.messages = summarise(self.messages)\n        return True\n\n    def run(self):\n        while self.turns < self.max_turns:\n            self.turns += 1\n            if not self._check_and_compact():\n                reply = self.client.create(self.messages)\n            if not reply.tool_calls:\n                return reply\n",
        &[E1, E2],
    );
    // A struct field or a logged key named budget says nothing of spend; a
    // budget built from a count of passes is a turn cap.
    check(
        Go,
        "package main\n\nfunc (e *Engine) Run(ctx context.Context) error {\n\tfor step := 0; step < e.maxSteps; step++ {\n\t\treq := Request{Budgets: e.budget.Snapshot()}\n\t\treply := e.planner.Plan(ctx, req)\n\t\tif reply.Done {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn nil\n}\n",
        &[E1, E2],
    );
    check(Python, "def run(agent, task):\n    agent.run(task, max_budget_usd=2.5)\n", &[E3]);
}

#[test]
fn client_and_step_timeouts_and_escalations_without_a_person_are_not_exits() {
    // A client's timeout bounds each request it makes.
    check(
        Rust,
        "fn run(config: &Config) -> Result<()> {\n    let http = reqwest::Client::builder()\n        .timeout(config.http_timeout)\n        .build()?;\n    for _ in 0..config.max_turns {\n        let reply = ask(&http)?;\n        if reply.tool_calls.is_empty() {\n            return Ok(());\n        }\n    }\n    Ok(())\n}\n",
        &[E1, E2],
    );
    // A context named for one step bounds that step; one around the run
    // bounds the run.
    let step = "package main\n\nfunc (r *Runner) Run(ctx context.Context) error {\n\tprepCtx, prepCancel := context.WithTimeout(ctx, 30*time.Second)\n\tdefer prepCancel()\n\tr.prepare(prepCtx)\n\tfor i := 0; i < r.maxTurns; i++ {\n\t\treply := r.model.Call(ctx)\n\t\tif len(reply.ToolCalls) == 0 {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn nil\n}\n";
    check(Go, step, &[E1, E2]);
    check(
        Go,
        &step
            .replace("prepCtx, prepCancel", "ctx, cancel")
            .replace("prepCancel()", "cancel()")
            .replace("r.prepare(prepCtx)", "r.prepare(ctx)"),
        &[E1, E2, E4],
    );
    // Escalated by its own stuck tracker: no person is named.
    check(
        Python,
        "def run(agent):\n    for _ in range(MAX_TURNS):\n        reply = agent.step()\n        if reply.escalated:\n            return reply\n        if not reply.tool_calls:\n            return reply\n",
        &[E1, E2],
    );
    check(
        Python,
        "def run(agent):\n    for _ in range(MAX_TURNS):\n        reply = agent.step()\n        if reply.escalate_to_human:\n            return reply\n        if not reply.tool_calls:\n            return reply\n",
        &[E1, E2, E6],
    );
}

#[test]
fn each_alternative_of_an_or_pattern_is_its_own_test() {
    // `MaxTokens | EndTurn`: the words of one alternative do not join the
    // other's into a turn cap.
    check(
        Rust,
        "async fn run(&mut self) -> Result<()> {\n    loop {\n        let reply = self.client.send(&self.messages).await?;\n        match reply.stop_reason {\n            StopReason::ToolUse => self.run_tools(&reply).await?,\n            StopReason::MaxTokens | StopReason::EndTurn => break,\n        }\n    }\n    Ok(())\n}\n",
        &[E1],
    );
    // A set of typed commands stays one test of what the person typed.
    check(
        Rust,
        "fn repl() {\n    loop {\n        let mut input = String::new();\n        std::io::stdin().read_line(&mut input).unwrap();\n        match input.trim() {\n            \"/quit\" | \"/exit\" | \"/q\" => break,\n            text => ask(text),\n        }\n    }\n}\n",
        &[E6],
    );
}

#[test]
fn a_wait_inside_a_pass_is_not_the_loops_clock() {
    // A helper the agent loop calls each pass that polls until a service is
    // ready, or sleeps in slices until its time is up: its clock ends the
    // wait, not the loop.
    check(
        Python,
        "def wait_ready(limit):\n    start = time.monotonic()\n    while time.monotonic() - start < limit:\n        if ready():\n            return True\n        time.sleep(1)\n\nwhile True:\n    wait_ready(30)\n    reply = agent.step()\n    if not reply.tool_calls:\n        break\n",
        &[E1],
    );
    check(
        Bash,
        "nap() {\n  local elapsed=0\n  while (( elapsed < $1 )); do\n    sleep 15\n    elapsed=$(( elapsed + 15 ))\n  done\n}\nwhile true; do\n  claude -p \"$PROMPT\"\n  nap 60\ndone\n",
        &[],
    );
    // The agent loop's own clock counts, sleep between passes or not.
    check(
        Python,
        "start = time.monotonic()\nwhile time.monotonic() - start < LIMIT:\n    reply = agent.step()\n    time.sleep(1)\n",
        &[E4],
    );
    // And so does a deadline kept by the loop that a helper's wait lives in.
    check(
        Bash,
        "nap() {\n  sleep \"$1\"\n}\nSTART=$(date +%s)\nwhile true; do\n  claude -p \"$PROMPT\"\n  if (( $(date +%s) - START > MAX_SECONDS )); then break; fi\n  nap 60\ndone\n",
        &[E4],
    );
}

#[test]
fn a_retry_counts_only_when_running_out_of_it_ends_the_loop_that_calls_it() {
    let helper = "def call_model(msgs):\n    for attempt in range(MAX_RETRIES):\n        try:\n            return client.chat(msgs)\n        except RateLimitError:\n            time.sleep(2 ** attempt)\n    raise RuntimeError('out of retries')\n\n";
    // The caller lets the error through: running out of tries ends the run.
    check(
        Python,
        &format!("{helper}for turn in range(MAX_TURNS):\n    reply = call_model(msgs)\n    if not reply.tool_calls:\n        break\n"),
        &[E1, E2, E7],
    );
    // The caller swallows it and goes on to the next turn: not an exit.
    check(
        Python,
        &format!("{helper}for turn in range(MAX_TURNS):\n    try:\n        reply = call_model(msgs)\n    except Exception as e:\n        msgs.append(str(e))\n        continue\n    if not reply.tool_calls:\n        break\n"),
        &[E1, E2],
    );
    // A method whose loop asks another object's method of the same name
    // (`asserted_module.aforward`) is the loop itself, not a retry inside a
    // caller: its counter of every pass is a turn cap.
    check(
        Python,
        "class Asserted:\n    async def aforward(self, **kw):\n        pred = await self.module.acall(**kw)\n        num_tries = 0\n        done = self.assertion(pred)\n        while not done and num_tries <= self.max_tries:\n            better = self.revise(pred)\n            pred = await better.aforward(**kw)\n            done = self.assertion(pred)\n            num_tries += 1\n        return pred\n",
        &[E1, E2],
    );
    // In a function that calls itself for the next turn, a loop before that
    // call retries the turn's request; one that holds the call is the
    // agent's loop, and the recursion its retry.
    check(
        Go,
        "package a\nfunc (d *Req) Send(ctx context.Context) error {\n\tvar resp *Resp\n\tvar err error\n\tfor i := 0; i < conf.RetryTimes; i++ {\n\t\tresp, err = d.client.Create(ctx)\n\t\tif err == nil {\n\t\t\tbreak\n\t\t}\n\t}\n\tif err != nil {\n\t\treturn err\n\t}\n\tif len(resp.ToolCalls) > 0 {\n\t\treturn d.Send(ctx)\n\t}\n\treturn nil\n}\n",
        &[E1, E7],
    );
    check(
        JavaScript,
        "function generate(contents, retry) {\n  let more = true;\n  do {\n    retry--;\n    const res = fetchModel(contents);\n    if (res.status === 500) {\n      return generate(contents, retry);\n    }\n    more = res.functionCalls.length > 0;\n  } while (more && retry > 0);\n}\n",
        &[E1, E2],
    );
}

#[test]
fn a_walk_over_items_in_a_helper_a_loop_calls_ends_the_walk_not_the_loop() {
    let helper = "def repeated_warning(history, name, args):\n    for past_name, past_args in history:\n        if past_name == name and past_args == args:\n            return 'You already called this tool with these arguments.'\n    return None\n\n";
    check(
        Python,
        &format!("{helper}for turn in range(MAX_TURNS):\n    reply = llm(msgs)\n    if not reply.tool_calls:\n        break\n    for call in reply.tool_calls:\n        msgs.append(repeated_warning(history, call.name, call.args) or run(call))\n"),
        &[E1, E2],
    );
}

#[test]
fn a_detector_speaks_only_when_the_loop_leaves_on_what_it_detects() {
    check(
        Python,
        "while True:\n    step = agent.step()\n    if detector.loop_detected:\n        break\n",
        &[E5],
    );
    // Leaving only when no oscillation was found is not a no-progress exit.
    check(
        Go,
        "package a\nfunc run() {\n\tfor {\n\t\tstep := next()\n\t\tif plan.Complete() && !oscillationDetected {\n\t\t\tbreak\n\t\t}\n\t\tact(step)\n\t}\n}\n",
        &[E1],
    );
    // A step that calls itself again when a cycle is found (to retry
    // without the repeated tool) goes on: not a no-progress exit either.
    check(
        TypeScript,
        "async function runIteration(request: Req): Promise<Out> {\n  const response = await model.create(request);\n  for (const call of response.toolCalls) {\n    checker.register(call);\n    if (checker.cycleFound) {\n      return await runIteration(forbid(request, call));\n    }\n  }\n  return response;\n}\nwhile (!state.answer) {\n  state.answer = (await runIteration(request)).answer;\n}\n",
        &[E1],
    );
}

#[test]
fn a_history_fetched_or_handed_to_a_model_is_not_a_repetition_check() {
    check(Python, "while True:\n    state = step()\n    if state in seen_states:\n        break\n    seen_states.add(state)\n", &[E5]);
    check(
        Python,
        "while True:\n    history = agent.get_conversation_history()\n    while history is None:\n        refresh()\n        history = agent.get_conversation_history()\n    if input('> ') == 'quit':\n        break\n",
        &[E6],
    );
    check(
        Rust,
        "fn run() -> Result<String> {\n    for _ in 0..MAX_TURNS {\n        let reply = match provider.chat_with_history(&history).await {\n            Ok(r) => r,\n            Err(e) => return Err(e),\n        };\n        if reply.tool_calls.is_empty() {\n            return Ok(reply.text);\n        }\n    }\n    bail!(\"out of turns\")\n}\n",
        &[E1, E2],
    );
}

#[test]
fn a_persons_answer_is_one_asked_of_them_not_a_name_that_says_input_or_permission() {
    // A permission level compared with a mode is a setting.
    check(
        TypeScript,
        "for (let round = 0; ; round++) {\n  const r = await model.call(msgs);\n  if (opts.permissionLevel !== 'autopilot' || r.done) {\n    break;\n  }\n}\n",
        &[E1],
    );
    // A file named for a tool's input is no one's answer.
    check(
        Bash,
        "for i in $(seq 1 \"$MAX\"); do\n  claude -p \"$PROMPT\" > out.json\n  if ! apply_fix \"$fix_input_json\"; then\n    break\n  fi\ndone\n",
        &[E2],
    );
    // Asking the user whether to go on is theirs, by prompt or by line.
    check(
        Python,
        "while True:\n    reply = agent.step()\n    should_retry = ask_confirm('Retry the failed question?')\n    if not should_retry:\n        break\n",
        &[E6],
    );
    check(
        Go,
        "package a\nfunc chat(p *Prompter) {\n\tfor {\n\t\tline, ok := p.Readline()\n\t\tif !ok {\n\t\t\treturn\n\t\t}\n\t\tsend(line)\n\t}\n}\n",
        &[E6],
    );
}

#[test]
fn a_flag_named_for_stopping_says_what_the_condition_that_set_it_says() {
    // `aborted` only says the loop stopped: the loop detector set it.
    check(
        Python,
        "def run(msgs):\n    for turn in range(MAX_TURNS):\n        reply = llm(msgs)\n        aborted = False\n        for call in reply.tool_calls:\n            verdict = loop_detector.check_tool_call(call.name)\n            if verdict.stuck:\n                aborted = True\n                break\n        if aborted:\n            break\n",
        &[E2, E5],
    );
    // A flag whose own name says what it found keeps its word.
    check(
        Python,
        "def run(msgs):\n    for turn in range(MAX_TURNS):\n        reply = llm(msgs)\n        duplicate_detected = False\n        for call in reply.tool_calls:\n            if call.key in done_calls:\n                duplicate_detected = True\n                break\n        if duplicate_detected:\n            break\n",
        &[E2, E5],
    );
}

#[test]
fn a_context_made_with_a_timeout_is_the_clock_and_a_context_fetched_is_not_a_cancellation() {
    check(
        Go,
        "package a\nfunc (r *Runner) Execute(ctx context.Context) error {\n\texecCtx, cancel := context.WithTimeout(ctx, r.Timeout)\n\tdefer cancel()\n\tfor {\n\t\tif execCtx.Err() != nil {\n\t\t\treturn execCtx.Err()\n\t\t}\n\t\tstep(execCtx)\n\t}\n}\n",
        &[E4],
    );
    check(
        Go,
        "package a\nfunc (r *Runner) Resume(ctx context.Context) error {\n\tfor {\n\t\tstate, err := r.getContext(ctx)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif state.Done {\n\t\t\treturn nil\n\t\t}\n\t}\n}\n",
        &[E1],
    );
    check(
        Go,
        "package a\nfunc run(ctx context.Context) {\n\tfor {\n\t\tif ctx.Err() != nil {\n\t\t\treturn\n\t\t}\n\t\tstep(ctx)\n\t}\n}\n",
        &[E8],
    );
}
