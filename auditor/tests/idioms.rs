//! The idioms of real agent loops, exit by exit and language by language
//! (issue 17's list), and the checks that live behind calls. Each case is
//! written for this file in the shape the frameworks and agent CLIs use; the
//! real-world evaluation set (`eval/real/`) measures how far they carry.

use auditor::{audit, render_text, ExitId, Language, Report};
use ExitId::*;
use Language::*;

fn check(language: Language, source: &str, expected: &[ExitId]) {
    let report = audit(source, None, Some(language));
    let text = render_text(&Report::from(report.clone()));
    assert_eq!(report.found(), expected, "\n--- source ---\n{source}\n--- report ---\n{text}");
}

/// The evidence lines of one exit.
fn evidence_lines(language: Language, source: &str, id: ExitId) -> Vec<usize> {
    let report = audit(source, None, Some(language));
    let exit = report.exits.iter().find(|e| e.id == id).expect("every exit has a row");
    exit.evidence.iter().map(|e| e.start_line).collect()
}

/// The audit finds no exit `id` in `source` (whatever else it finds).
fn check_absent(language: Language, source: &str, id: ExitId) {
    let found = audit(source, None, Some(language)).found();
    assert!(!found.contains(&id), "{id:?} found in {found:?}:\n{source}");
}

fn warnings(language: Language, source: &str) -> Vec<String> {
    audit(source, None, Some(language))
        .warnings
        .into_iter()
        .map(|w| format!("{}: {}", w.code, w.message))
        .collect()
}

#[test]
fn e1_no_tool_calls_left() {
    check(
        Python,
        "def run(messages):\n    while True:\n        reply = llm.chat(messages)\n        if reply.tool_calls:\n            messages += execute(reply.tool_calls)\n        else:\n            return reply.content\n",
        &[E1],
    );
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Run(ctx context.Context) (string, error) {\n\tfor {\n\t\tresp, err := a.model.Generate(ctx, a.msgs)\n\t\tif err != nil {\n\t\t\treturn \"\", err\n\t\t}\n\t\tif len(resp.ToolCalls) == 0 {\n\t\t\treturn resp.Content, nil\n\t\t}\n\t\ta.handle(resp.ToolCalls)\n\t}\n}\n",
        &[E1],
    );
    check(
        Rust,
        "async fn run(&mut self) -> Result<String> {\n    loop {\n        let reply = self.client.chat(&self.history).await?;\n        if reply.tool_calls.is_empty() {\n            return Ok(reply.text);\n        }\n        self.call_tools(reply.tool_calls).await?;\n    }\n}\n",
        &[E1],
    );
    check(
        TypeScript,
        "async function run(messages: Message[]): Promise<string> {\n  while (true) {\n    const res = await client.messages.create({ model, messages });\n    if (res.stop_reason === \"end_turn\") return text(res);\n    messages.push(...(await runTools(res)));\n  }\n}\n",
        &[E1],
    );
    check(
        JavaScript,
        "async function loop(messages) {\n  for (;;) {\n    const completion = await openai.chat.completions.create({ model, messages, tools });\n    const choice = completion.choices[0];\n    if (choice.finish_reason === 'stop') return choice.message.content;\n    messages.push(...(await handle(choice.message.tool_calls)));\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn e1_finish_actions_and_final_answers() {
    check(
        Python,
        "while True:\n    output = agent.plan(steps)\n    if isinstance(output, AgentFinish):\n        return output.return_values\n    steps.append(take(output))\n",
        &[E1],
    );
    check(
        Python,
        "while True:\n    action = agent.step(state)\n    if isinstance(action, FinishAction):\n        break\n    state = env.apply(action)\n",
        &[E1],
    );
    check(
        Python,
        "while True:\n    msg = model.query(history)\n    if msg['role'] == 'exit':\n        break\n    history.append(msg)\n",
        &[E1],
    );
    check(
        Python,
        "while True:\n    obs, info = env.step(model.act(obs))\n    if 'submission' in info:\n        return info['submission']\n",
        &[E1],
    );
    check(
        TypeScript,
        "while (!state.result) {\n  const reply = await llm.generate(state.messages);\n  state.result = reply.finalAnswer;\n}\n",
        &[E1],
    );
}

#[test]
fn e1_termination_conditions() {
    check(
        Python,
        "async def run(self, task):\n    while True:\n        reply = await self.speaker.respond(task)\n        stop_message = await self._termination_condition(reply)\n        if stop_message is not None:\n            return stop_message\n",
        &[E1],
    );
    check(
        Python,
        "while True:\n    reply = agent.generate_reply(messages)\n    if self._is_termination_msg(reply):\n        break\n    messages.append(reply)\n",
        &[E1],
    );
}

#[test]
fn e1_a_state_machine_ends_on_a_finish_action() {
    check(
        Python,
        "class Controller:\n    def run(self):\n        while self.state == AgentState.RUNNING:\n            action = self.agent.step(self.history)\n            self.dispatch(action)\n\n    def on_finish(self, action):\n        self.state = AgentState.FINISHED\n",
        &[E1],
    );
    check(
        TypeScript,
        "class Agent {\n  state = 'running';\n  async run() {\n    while (this.state === 'running') {\n      await this.step();\n    }\n  }\n  finish() {\n    this.state = 'completed';\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn e1_what_the_reply_was_to_produce_parsed_out_of_it() {
    // The coder's reply carries the pull request's number: the task loop is
    // done and returns into the review.
    let source = "def run_task(task, max_rounds):\n    for attempt in range(max_rounds):\n        output = run_agent(prompt)\n        pr_number = parse_pr_number(output)\n        if pr_number is not None:\n            return run_review(pr_number)\n        prompt = clarify(output)\n";
    check(Python, source, &[E1, E2]);
    assert_eq!(evidence_lines(Python, source, E1), [5]);
    // Decoy: a parsed error is no result.
    check(
        Python,
        "def run_task(task, max_rounds):\n    for attempt in range(max_rounds):\n        output = run_agent(prompt)\n        error = parse_error(output)\n        if error is not None:\n            return report(error)\n        prompt = clarify(output)\n",
        &[E2],
    );
}

#[test]
fn a_break_in_a_switch_leaves_the_switch_not_the_loop() {
    // The `done` case's `break` ends the switch; the events go on.
    let js = "async function run(loop) {\n  for await (const event of loop.run(messages)) {\n    switch (event.type) {\n      case 'done':\n        log(event);\n        break;\n      default:\n        break;\n    }\n  }\n}\n";
    check(TypeScript, js, &[]);
    // A labelled break leaves the loop it names.
    let labelled = "async function run(loop) {\n  events: for await (const event of loop.run(messages)) {\n    switch (event.type) {\n      case 'done':\n        break events;\n    }\n  }\n}\n";
    check(TypeScript, labelled, &[E1]);
    // Go: the same in a `select`, and the labelled form.
    let go = "package agent\n\nfunc run(events chan Event, stop chan struct{}) {\n\tfor {\n\t\tselect {\n\t\tcase <-stop:\n\t\t\tbreak\n\t\tcase ev := <-events:\n\t\t\thandle(ev)\n\t\t}\n\t}\n}\n";
    check_absent(Go, go, E8);
    let go_labelled = go.replace("\tfor {", "Loop:\n\tfor {").replace("\t\t\tbreak\n", "\t\t\tbreak Loop\n");
    check(Go, &go_labelled, &[E8]);
}

#[test]
fn a_method_asked_whether_to_go_on_is_no_goal() {
    // `should_continue(state)` is the runtime's policy: turns, spend or the
    // work, the name does not say which.
    check(
        Python,
        "class Runtime:\n    async def execute(self, state):\n        while True:\n            state = await self.loop.step(state)\n            if not self.loop.should_continue(state):\n                break\n",
        &[],
    );
    // The pass's own reply that asks for no more is the model's answer.
    check(
        Python,
        "class Runtime:\n    async def execute(self, state):\n        while True:\n            reply = await self.model.step(state)\n            if not reply.should_continue:\n                break\n",
        &[E1],
    );
}

#[test]
fn a_timeout_on_stopping_is_no_wall_clock_of_the_loop() {
    // `stop()` waits five seconds for the polling task it told to stop.
    let stopping = "class Bot:\n    async def poll(self):\n        while not self._stop_event.is_set():\n            await self.answer(fetch())\n\n    async def stop(self):\n        self._stop_event.set()\n        await asyncio.wait_for(self._task, timeout=5.0)\n";
    check(Python, stopping, &[E8]);
    // A timeout around the run itself is one.
    let running = stopping.replace("async def stop(self)", "async def run_bot(self)");
    check(Python, &running, &[E4, E8]);
    // By the name's own words: `shut_down`, Go's `Shutdown`.
    check(Python, &stopping.replace("async def stop(self)", "async def shut_down(self)"), &[E8]);
    check_absent(
        Go,
        "package bot\n\nfunc (b *Bot) Poll(ctx context.Context) {\n\tfor ctx.Err() == nil {\n\t\tb.answer(fetch())\n\t}\n}\n\nfunc (b *Bot) Shutdown() {\n\tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)\n\tdefer cancel()\n\tb.wait(ctx)\n}\n",
        E4,
    );
    // A context named for shutting down bounds that step, whatever function
    // it sits in.
    check_absent(
        Go,
        "package bot\n\nfunc (b *Bot) Serve(ctx context.Context) {\n\tfor ctx.Err() == nil {\n\t\tb.answer(fetch())\n\t}\n\tshutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)\n\tdefer cancel()\n\tb.wait(shutdownCtx)\n}\n",
        E4,
    );
}

#[test]
fn a_stop_event_of_the_reply_stream_is_no_outside_stop() {
    // Bedrock's `messageStop` chunk ends one streamed reply: the model
    // stopped writing, nobody outside asked.
    check_absent(
        TypeScript,
        "async function* converse(client, input) {\n  let stopReason = '';\n  do {\n    const response = await client.send(new ConverseStreamCommand(input));\n    for await (const chunk of response.stream) {\n      if (chunk.contentBlockDelta) {\n        yield chunk.contentBlockDelta.delta.text;\n      } else if (chunk.messageStop) {\n        stopReason = chunk.messageStop.stopReason ?? '';\n        break;\n      }\n    }\n    input.messages.push(await runTools(input));\n  } while (stopReason === 'tool_use');\n}\n",
        E8,
    );
    // A stop flag set from outside still is one.
    check(
        TypeScript,
        "async function run(agent) {\n  while (true) {\n    if (agent.stopRequested) break;\n    await agent.step();\n  }\n}\n",
        &[E8],
    );
}

#[test]
fn whether_a_call_needs_approval_is_no_persons_answer() {
    // The exit under `NeedsApproval` is the approval step's own error.
    let go = "package agent\n\nfunc run(ctx Context, calls []Call) error {\n\tfor _, tc := range calls {\n\t\tif tc.NeedsApproval {\n\t\t\tif err := requestApproval(ctx, tc); err != nil {\n\t\t\t\treturn err\n\t\t\t}\n\t\t}\n\t\texecute(tc)\n\t}\n\treturn nil\n}\n";
    check_absent(Go, go, E6);
    // A pass whose result says approval is required hands the run over.
    check(
        Python,
        "def run(messages):\n    while True:\n        result = run_tool(llm(messages))\n        approval_required = result.get(\"approval_required\")\n        if approval_required:\n            return ask_user(result)\n        messages.append(result)\n",
        &[E6],
    );
}

#[test]
fn a_line_editors_end_of_input_is_the_persons() {
    check(
        Rust,
        "async fn repl(editor: &mut Editor) -> Result<()> {\n    loop {\n        let line = match editor.read_line(\"> \").await? {\n            ReadLineResult::Line(text) => text,\n            ReadLineResult::Eof => break,\n        };\n        run_turn(&line).await?;\n    }\n    Ok(())\n}\n",
        &[E6],
    );
}

#[test]
fn denials_that_trip_a_breaker_are_an_error_threshold() {
    // Denied calls counted in the dispatch until they trip: the breaker's
    // limit ends the run, not a person's answer.
    check(
        TypeScript,
        "async function runTurn(state) {\n  for (;;) {\n    const result = await runIteration(state);\n    if (!result.needsToolDispatch) break;\n    const denialTrip = await dispatchAndAppend(result.state);\n    if (denialTrip) {\n      return;\n    }\n  }\n}\n",
        &[E1, E7],
    );
}

#[test]
fn a_recursion_that_goes_on_while_the_check_fails_ends_when_it_passes() {
    // The refinement calls itself again only while the reply's JSON does
    // not validate; the count of tries caps it.
    check(
        Go,
        "package refine\n\nfunc refine(ctx Context, tries int) {\n\tif tries >= maxTries {\n\t\treturn\n\t}\n\tpost(ctx, func(body []byte) {\n\t\tout, err := ValidateJson(body)\n\t\tif err == nil {\n\t\t\tsend(out)\n\t\t} else {\n\t\t\trefine(ctx, tries+1)\n\t\t}\n\t})\n}\n",
        &[E1, E2],
    );
    // The same as a loop's own condition.
    check(
        Go,
        "package refine\n\nfunc refine(reply string) string {\n\tout, err := ValidateJson(reply)\n\tfor err != nil {\n\t\treply = askAgain(reply, err)\n\t\tout, err = ValidateJson(reply)\n\t}\n\treturn out\n}\n",
        &[E1],
    );
}

#[test]
fn blank_lines_typed_in_a_row_are_no_error_threshold() {
    // The reader of a multi-line message stops at a blank line.
    check_absent(
        Go,
        "package main\n\nfunc readMessage(reader *bufio.Reader) string {\n\tvar lines []string\n\temptyLineCount := 0\n\tfor {\n\t\tline, _ := reader.ReadString('\\n')\n\t\tif line == \"\\n\" {\n\t\t\temptyLineCount++\n\t\t\tif emptyLineCount >= 1 && len(lines) > 0 {\n\t\t\t\tbreak\n\t\t\t}\n\t\t\tcontinue\n\t\t}\n\t\temptyLineCount = 0\n\t\tlines = append(lines, line)\n\t\tsend(lines)\n\t}\n\treturn strings.Join(lines, \"\")\n}\n",
        E7,
    );
}

#[test]
fn a_slice_of_a_collection_walked_is_no_turn_cap() {
    // Rust: `&history[start..]` is a walk over messages, `0..max` a count.
    check_absent(
        Rust,
        "fn persist(history: &[Message], start: usize) {\n    for msg in &history[start..] {\n        store.save(msg);\n    }\n}\n",
        E2,
    );
    check_absent(
        Rust,
        "fn persist(history: &[Message], a: usize, b: usize) {\n    for msg in history[a..b].iter() {\n        store.save(msg);\n    }\n}\n",
        E2,
    );
    check(
        Rust,
        "async fn run(&mut self) {\n    for _ in 0..self.max_turns {\n        self.step().await;\n    }\n}\n",
        &[E2],
    );
    check(
        Rust,
        "async fn run(&mut self) {\n    for turn in (0..self.max_turns).rev() {\n        self.step(turn).await;\n    }\n}\n",
        &[E2],
    );
}

#[test]
fn e1_work_drained_and_markers_found() {
    check(
        Python,
        "while True:\n    assign(tasks, workers)\n    if not tasks and all(w.idle for w in workers):\n        break\n",
        &[E1],
    );
    check(
        Bash,
        "while true; do\n  claude -p \"$(cat PROMPT.md)\"\n  grep -q 'COMPLETE' plan.md && break\ndone\n",
        &[E1],
    );
    check(
        Bash,
        "while :; do\n  out=$(codex exec \"$PROMPT\")\n  if [[ \"$out\" == *\"<promise>DONE</promise>\"* ]]; then\n    break\n  fi\ndone\n",
        &[E1],
    );
    check(
        Python,
        "signals = 0\nwhile True:\n    out = run_agent()\n    if EXIT_SIGNAL in out:\n        signals += 1\n    if signals >= 2:\n        break\n",
        &[E1],
    );
    check(
        Go,
        "package loop\n\nfunc run(ctx context.Context) {\n\tfor {\n\t\tout := agent.Step(ctx)\n\t\tif strings.Contains(out, CompletionPromise) {\n\t\t\treturn\n\t\t}\n\t}\n}\n",
        &[E1],
    );
}

#[test]
fn e1_a_review_loop_ends_when_nothing_is_left_to_fix() {
    check(Python, "while True:\n    findings = check(draft)\n    if not findings:\n        break\n    draft = revise(draft, findings)\n", &[E1]);
    check(
        JavaScript,
        "while (true) {\n  const issues = await review(code);\n  if (issues.length === 0) break;\n  code = await fix(code, issues);\n}\n",
        &[E1],
    );
    check(
        Python,
        "for _ in range(max_revisions):\n    notes = reviewer.run(draft).get('review')\n    if notes is None:\n        break\n    draft = reviser.run(draft, notes)\n",
        &[E1, E2],
    );
    check(
        Rust,
        "fn refine(mut draft: String) -> String {\n    loop {\n        let failing_tests = run_tests(&draft);\n        if failing_tests.is_empty() {\n            return draft;\n        }\n        draft = fix(draft, failing_tests);\n    }\n}\n",
        &[E1],
    );
}

#[test]
fn e2_counts_whatever_they_are_called() {
    // The design note's example: no word says "turn".
    check(
        Python,
        "calls_left = MAX_LLM_CALL_PER_RUN\nwhile calls_left > 0:\n    calls_left -= 1\n    out = llm.chat(messages)\n    used_any_tool = False\n    for msg in out:\n        if detect_tool(msg):\n            used_any_tool = True\n            run_tool(msg)\n    if not used_any_tool:\n        break\n",
        &[E1, E2],
    );
    check(
        Python,
        "iterations = 0\nwhile self._should_continue(iterations, time_elapsed):\n    iterations += 1\n    self._take_next_step()\n",
        &[E2],
    );
    check(
        Python,
        "iterations = 0\nwhile True:\n    if has_reached_max_iterations(iterations, max_iter):\n        break\n    iterations += 1\n    step()\n",
        &[E2],
    );
    check(
        TypeScript,
        "let remainingSteps = 8;\nwhile (remainingSteps > 0) {\n  remainingSteps--;\n  await step();\n}\n",
        &[E2],
    );
    check(
        Bash,
        "n=0\nwhile true; do\n  claude -p \"$P\"\n  n=$((n+1))\n  [ \"$n\" -ge 20 ] && break\ndone\n",
        &[E2],
    );
}

#[test]
fn e3_budget_errors_and_shell_costs() {
    check(
        Python,
        "while True:\n    try:\n        agent.step()\n    except CostLimitExceeded:\n        break\n",
        &[E3],
    );
    check(
        Python,
        "try:\n    while True:\n        agent.step()\nexcept BudgetExceededError:\n    print('out of budget')\n",
        &[E3],
    );
    check(
        Bash,
        "total_cost=0\nwhile true; do\n  cost=$(claude -p \"$P\" --output-format json | jq .cost_usd)\n  total_cost=$(echo \"$total_cost + $cost\" | bc)\n  if (( $(echo \"$total_cost > $MAX_COST\" | bc -l) )); then\n    break\n  fi\ndone\n",
        &[E3],
    );
    check(Python, "while True:\n    if ctx_full:\n        return summary\n    ctx_full = step()\n", &[E3]);
}

#[test]
fn e4_deadlines_kept_by_helpers() {
    check(
        Python,
        "timer = Timer(600)\nwhile True:\n    if timer.expired():\n        break\n    step()\n",
        &[E4],
    );
    check(
        TypeScript,
        "while (true) {\n  if (this.clock.timeExceeded()) break;\n  await this.step();\n}\n",
        &[E4],
    );
    check(
        Python,
        "termination = TextMentionTermination('TERMINATE') | TimeoutTermination(300)\nteam = RoundRobinGroupChat(agents, termination_condition=termination)\n",
        &[E1, E4],
    );
}

#[test]
fn e5_repetition_and_loop_detectors() {
    check(
        Python,
        "repeats = 0\nwhile True:\n    call = model.next_call()\n    sig = json.dumps(call)\n    if sig == last_sig:\n        repeats += 1\n    else:\n        repeats = 0\n    last_sig = sig\n    if repeats >= 3:\n        break\n",
        &[E5],
    );
    check(
        TypeScript,
        "while (true) {\n  const call = await next();\n  if (this.loopDetector.detect(call)) {\n    break;\n  }\n  await run(call);\n}\n",
        &[E5],
    );
    check(
        Go,
        "package a\n\nfunc run() {\n\tfor {\n\t\tif breaker.NoProgress() {\n\t\t\treturn\n\t\t}\n\t\tstep()\n\t}\n}\n",
        &[E5],
    );
}

#[test]
fn e6_people_who_stop_or_approve() {
    check(
        Python,
        "while True:\n    call = agent.next_call()\n    if not await self.request_approval(call):\n        break\n    run(call)\n",
        &[E6],
    );
    check(TypeScript, "while (true) {\n  const r = await step();\n  if (userCancelled) return;\n}\n", &[E6]);
    check(
        Python,
        "import signal\nsignal.signal(signal.SIGINT, on_interrupt)\nwhile True:\n    step()\n",
        &[E6],
    );
    check(
        Go,
        "package main\n\nfunc main() {\n\ts := bufio.NewScanner(os.Stdin)\n\tfor s.Scan() {\n\t\treply(s.Text())\n\t}\n}\n",
        &[E6],
    );
    // A person's "exit" is theirs, not the goal.
    check(
        JavaScript,
        "while (true) {\n  const request = await ui.input('You:');\n  const command = request.trim();\n  if (command === 'exit') break;\n  await agent.process(command);\n}\n",
        &[E6],
    );
}

#[test]
fn e7_failures_counted_whatever_their_name() {
    check(
        Python,
        "retries = 0\nwhile command_failed and retries < 2:\n    out = fix(out)\n    command_failed = run(out).returncode != 0\n    if command_failed:\n        retries += 1\n",
        &[E1, E7],
    );
    check(
        JavaScript,
        "let mistakes = 0;\nwhile (true) {\n  const r = await step();\n  if (!r.ok) mistakes++;\n  if (mistakes >= 3) throw new Error('too many mistakes');\n}\n",
        &[E7],
    );
    check(
        Go,
        "package a\n\nfunc run() error {\n\tfor turn := 0; ; turn++ {\n\t\tvar resp *Resp\n\t\tvar err error\n\t\tfor i := 0; i < retryTimes; i++ {\n\t\t\tresp, err = client.Call()\n\t\t\tif err == nil {\n\t\t\t\tbreak\n\t\t\t}\n\t\t}\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif resp.Done {\n\t\t\treturn nil\n\t\t}\n\t}\n}\n",
        &[E1, E7],
    );
}

#[test]
fn e8_stops_from_outside() {
    check(
        Python,
        "class Runner:\n    def run(self):\n        while True:\n            if self.state.stopped:\n                break\n            self.step()\n",
        &[E8],
    );
    check(
        Python,
        "class Runner:\n    def run(self):\n        while self.running:\n            self.step()\n\n    def stop(self):\n        self.running = False\n",
        &[E8],
    );
    check(
        TypeScript,
        "while (true) {\n  const hookResult = await this.hooks.onStep(state);\n  if (hookResult.shouldStop) break;\n  await this.step();\n}\n",
        &[E8],
    );
    check(Python, "try:\n    while True:\n        step()\nexcept asyncio.CancelledError:\n    pass\n", &[E8]);
}

#[test]
fn checks_behind_calls_are_followed_two_levels_deep() {
    let source = "class Agent:\n    def run(self):\n        while not self.should_stop():\n            self.step()\n\n    def should_stop(self):\n        return self.over_budget() or self.steps >= self.max_steps\n\n    def over_budget(self):\n        return self.cost > self.budget\n";
    check(Python, source, &[E2, E3]);
    // Evidence at both places: the call in the loop (line 3) and the check.
    assert!(evidence_lines(Python, source, E2).contains(&3), "{:?}", evidence_lines(Python, source, E2));
    assert!(evidence_lines(Python, source, E2).contains(&7));
    assert!(evidence_lines(Python, source, E3).contains(&10));
    let raising = "class Agent:\n    def run(self):\n        while True:\n            self._check_balance()\n            self.step()\n\n    def _check_balance(self):\n        if self.spent_usd > self.max_usd:\n            raise RuntimeError('budget')\n";
    check(Python, raising, &[E3]);
    let go = "package a\n\nfunc (a *A) Run() error {\n\tfor {\n\t\tif err := a.checkBudget(); err != nil {\n\t\t\treturn err\n\t\t}\n\t\ta.step()\n\t}\n}\n\nfunc (a *A) checkBudget() error {\n\tif a.cost > a.maxCost {\n\t\treturn errBudget\n\t}\n\treturn nil\n}\n";
    check(Go, go, &[E3]);
    // A raise caught inside the loop does not leave it.
    let caught = "class Agent:\n    def run(self):\n        while True:\n            try:\n                self._check_balance()\n            except RuntimeError:\n                pass\n\n    def _check_balance(self):\n        if self.spent_usd > self.max_usd:\n            raise RuntimeError('budget')\n";
    check(Python, caught, &[]);
}

#[test]
fn a_check_that_is_not_in_the_paste_is_named_not_claimed() {
    let source = "while True:\n    self._check_budget()\n    reply = self.llm.chat(self.messages)\n    if not reply.tool_calls:\n        break\n";
    check(Python, source, &[E1]);
    let found = warnings(Python, source);
    assert!(
        found.iter().any(|w| w.starts_with("check-not-in-source") && w.contains("paste `_check_budget`")),
        "{found:?}"
    );
}

#[test]
fn decoys_still_find_nothing() {
    // Per-request settings and words in strings are not exits.
    check(Python, "while True:\n    r = client.create(max_tokens=4096, timeout=30)\n    log('max iterations reached? no')\n", &[]);
    check(
        TypeScript,
        "while (true) {\n  // if (done) break;\n  const r = await fetch(url, { signal: AbortSignal.timeout(5000) });\n}\n",
        &[],
    );
    // A break out of a walk over one reply's tool calls ends the walk only.
    check(
        Python,
        "while True:\n    reply = llm.chat(messages)\n    for call in reply.calls:\n        if call.name == 'noop':\n            break\n        run(call)\n",
        &[],
    );
    // A retry of one request that succeeds is not the agent's goal.
    check(
        Python,
        "while True:\n    for attempt in range(3):\n        try:\n            reply = llm.chat(messages)\n            break\n        except RateLimitError:\n            time.sleep(2)\n    messages.append(reply)\n",
        &[],
    );
}

/// Loops in the shapes that Python agent frameworks give them (written for
/// this file: a final answer or a finish step, a step budget, a cost limit,
/// a stop flag, consecutive failures).
#[test]
fn framework_shaped_python_loops() {
    check(
        Python,
        "def run(self, task):\n    final_answer = None\n    self.step_number = 1\n    while final_answer is None and self.step_number <= self.max_steps:\n        step = self._step()\n        final_answer = step.final_answer\n        self.step_number += 1\n    return final_answer\n",
        &[E1, E2],
    );
    check(
        Python,
        "async def run(agent, input, max_turns=10):\n    current_turn = 0\n    while True:\n        current_turn += 1\n        if current_turn > max_turns:\n            raise MaxTurnsExceeded(max_turns)\n        result = await run_single_turn(agent, input)\n        if isinstance(result.next_step, NextStepFinalOutput):\n            return result.final_output\n",
        &[E1, E2],
    );
    check(
        Python,
        "while len(history) - init_len < max_turns and active_agent:\n    message = get_chat_completion(active_agent, history)\n    history.append(message)\n    if not message.tool_calls or not execute_tools:\n        break\n    handle_tool_calls(message.tool_calls)\n",
        &[E1, E2],
    );
    check(
        Python,
        "while not isinstance(formatted_answer, AgentFinish):\n    if self._has_reached_max_iterations():\n        formatted_answer = self._force_final_answer()\n        break\n    formatted_answer = self._invoke_loop_step()\n    self.iterations += 1\n",
        &[E1, E2],
    );
    check(
        Python,
        "def run(self):\n    while True:\n        try:\n            self.step()\n        except NonTerminatingException as e:\n            self.add_message('user', str(e))\n        except TerminatingException as e:\n            return type(e).__name__, str(e)\n\ndef step(self):\n    if 0 < self.step_limit <= self.model.n_calls or 0 < self.cost_limit <= self.model.cost:\n        raise LimitsExceeded()\n    output = self.execute(self.parse(self.model.query(self.messages)))\n    if output.startswith('COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'):\n        raise Submitted(output)\n",
        &[E1, E2, E3],
    );
    check(
        Python,
        "for step in range(max_steps):\n    if self.state.stopped:\n        break\n    if self.state.consecutive_failures >= self.settings.max_failures:\n        break\n    await self.step()\n    if self.state.history.is_done():\n        break\n",
        &[E1, E2, E7, E8],
    );
    check(
        Python,
        "for idx in range(self.max_iters):\n    pred = self.react(trajectory=trajectory)\n    if pred.next_tool_name == 'finish':\n        break\n    trajectory.append(self.tools[pred.next_tool_name](**pred.next_tool_args))\n",
        &[E1, E2],
    );
    check(
        Python,
        "while n_round > 0:\n    n_round -= 1\n    await self.env.run()\n    if self.env.is_idle:\n        break\n",
        &[E1, E2],
    );
    check(
        Python,
        "counter = 0\nwhile counter < max_chaining_steps:\n    step_response = agent.step(next_message)\n    counter += 1\n    if not step_response.heartbeat_request:\n        break\n",
        &[E1, E2],
    );
    check(
        Python,
        "for _ in range(max_turns):\n    assistant_response, user_response = society.step(input_msg)\n    if assistant_response.terminated or user_response.terminated:\n        break\n    input_msg = assistant_response.msg\n",
        &[E1, E2],
    );
    check(
        Python,
        "while True:\n    if task_list:\n        task = task_list.popleft()\n        result = execution_agent(objective, task)\n        task_list.extend(task_creation_agent(objective, result))\n    else:\n        print('All tasks complete')\n        break\n",
        &[E1],
    );
    check(
        Python,
        "while True:\n    self.send_message(message)\n    if not self.reflected_message:\n        break\n    if self.num_reflections >= self.max_reflections:\n        self.io.tool_warning('Only 3 reflections allowed, stopping.')\n        return\n    self.num_reflections += 1\n    message = self.reflected_message\n",
        &[E1, E2],
    );
    check(
        Python,
        "while not done:\n    step_output = self.step()\n    done = step_output.done\n    if self.model.stats.instance_cost > self.cost_limit:\n        raise CostLimitExceededError()\n",
        &[E1, E3],
    );
    check(
        Python,
        "while True:\n    post = self.planner.reply(memory)\n    if post.send_to == 'User':\n        return post\n    round_num += 1\n    if round_num >= self.max_internal_chat_round_num:\n        raise Exception('too many rounds')\n",
        &[E1, E2],
    );
}

/// Loops in the shapes that TypeScript agent CLIs give them.
#[test]
fn framework_shaped_typescript_loops() {
    check(
        TypeScript,
        "async *run(request: Request, signal: AbortSignal) {\n  let turns = 0;\n  while (turns < MAX_TURNS) {\n    turns++;\n    if (signal.aborted) return;\n    const events = this.turn.run(request, signal);\n    for await (const event of events) {\n      if (this.loopDetector.addAndCheck(event)) {\n        yield { type: 'loop_detected' };\n        return;\n      }\n      yield event;\n    }\n    if (!this.pendingToolCalls.length) return;\n  }\n}\n",
        &[E1, E2, E5, E8],
    );
    check(
        TypeScript,
        "while (!this.abort) {\n  const didEndLoop = await this.recursivelyMakeRequests(userContent);\n  if (didEndLoop) {\n    break;\n  }\n  this.consecutiveMistakeCount++;\n  if (this.consecutiveMistakeCount >= 3) {\n    const { response } = await this.ask('mistake_limit_reached');\n    if (response !== 'messageResponse') break;\n  }\n}\n",
        // (Asking the user after the third mistake is not recognised as a
        // person's decision yet: `this.ask` is too common a name.)
        &[E1, E7, E8],
    );
    check(
        TypeScript,
        "const result = await generateText({\n  model,\n  tools,\n  stopWhen: [stepCountIs(10), hasToolCall('finalAnswer')],\n  prompt,\n});\n",
        &[E1, E2],
    );
}

#[test]
fn a_flag_taken_whole_from_a_call_speaks_by_its_name() {
    // `done` comes out of the environment's step: nothing in the loop says
    // why, so the flag's own name does.
    let env_step = "async def rollout(env, agent):\n    done = False\n    while not done:\n        action = await agent(obs)\n        obs, reward, done, truncated = await env.step(action)\n    return reward\n";
    check(Python, env_step, &[E1]);
    // A callee in the paste that answers with a local flag is followed to
    // the guards that turn the flag on.
    let callee_flag = "class Agent:\n    def should_stop(self, step, info):\n        stop = False\n        if info.terminated:\n            stop = True\n        elif step >= self.max_steps:\n            stop = True\n        return stop, 'why'\n\n    def run(self, env):\n        step, should_stop = 0, False\n        while not should_stop:\n            step += 1\n            info = env.step(self.llm(env.obs))\n            should_stop, reason = self.should_stop(step, info)\n";
    check(Python, callee_flag, &[E1, E2]);
    assert!(
        evidence_lines(Python, callee_flag, E1).contains(&4),
        "{:?}",
        evidence_lines(Python, callee_flag, E1)
    );
    // A callee in the paste whose checks name no exit leaves the word to
    // the flag's name.
    let judge = "class Tester:\n    def ends(self, reply):\n        verdict = self.llm.generate(reply)\n        if 'yes' in verdict.lower():\n            return True\n        return False\n\n    def run(self):\n        conversation_end = False\n        while not conversation_end:\n            reply = self.agent.respond(self.history)\n            conversation_end = self.ends(reply)\n";
    check(Python, judge, &[E1]);
}

#[test]
fn a_search_that_found_its_marker_is_goal_met() {
    check(
        Python,
        "while turn < self.max_turn:\n    turn += 1\n    answer = self.llm.chat(messages).content\n    found = re.search(r\"Status:\\s*(success|done)\", answer)\n    if found:\n        break\n",
        &[E1, E2],
    );
    check(
        JavaScript,
        "for (let i = 0; i < 10; i++) {\n  const out = await agent.run(task);\n  const finished = out.includes('TASK_COMPLETE');\n  if (finished) break;\n}\n",
        &[E1, E2],
    );
    // What was searched for is no marker: nothing is claimed.
    check(
        Python,
        "while True:\n    out = llm.chat(messages).content\n    m = re.search(r\"```python(.*)```\", out)\n    if m:\n        break\n",
        &[],
    );
}

#[test]
fn an_emptiness_test_of_a_length_is_no_turn_cap() {
    // `len(tool_calls) > 0` asks whether the reply has tool calls: when it
    // has none the loop returns the answer.
    check(
        Go,
        "package a\n\nfunc (a *Agent) Query(ctx context.Context) (*Response, error) {\n\tfor {\n\t\tresp, err := a.client.Chat(ctx, a.msgs)\n\t\tif err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t\tmessage := resp.Choices[0].Message\n\t\tif len(message.ToolCalls) > 0 {\n\t\t\ta.run(message.ToolCalls)\n\t\t\tcontinue\n\t\t}\n\t\treturn &Response{Content: message.Content}, nil\n\t}\n}\n",
        &[E1],
    );
    // A build and its tests passing, their status kept in `_RC` variables.
    check(
        Bash,
        "while [[ \"$iter\" -le \"$max_iter\" ]]; do\n  codex exec \"$PROMPT\"\n  BUILD_RC=1; TEST_RC=1\n  make build && BUILD_RC=0\n  make test && TEST_RC=0\n  if [[ \"$BUILD_RC\" -eq 0 && \"$TEST_RC\" -eq 0 ]]; then\n    exit 0\n  fi\n  iter=$((iter+1))\ndone\n",
        &[E1, E2],
    );
}

#[test]
fn a_walk_over_a_plan_ends_when_the_work_is_done() {
    check(
        Python,
        "def run(self, task):\n    plan = self.planner.plan(task)\n    for step in plan.steps:\n        response = self.executor.run(step)\n        self.done.append((step, response))\n    return self.done[-1]\n",
        &[E1],
    );
    // A walk over the tool calls of one reply is no plan, and a plan walked
    // inside another loop ends only that walk.
    check(Python, "for call in reply.tool_calls:\n    run(call)\n", &[]);
    check(
        Go,
        "package a\n\nfunc pulse(rooms []Room) {\n\tfor _, room := range rooms {\n\t\tplan := schedule(room)\n\t\tfor _, task := range plan.DueTasks {\n\t\t\trun(task)\n\t\t}\n\t}\n}\n",
        &[],
    );
}

#[test]
fn an_attempt_that_gets_through_is_goal_met() {
    // Generated code is run until it runs: the return in the `try` is the
    // attempt that passed; the failures are counted against a limit.
    check(
        Python,
        "def execute(self, code):\n    attempts = 0\n    while attempts <= self.max_retries:\n        try:\n            result = self.run_code(code)\n            return self.parse(result)\n        except Exception as e:\n            attempts += 1\n            if attempts > self.max_retries:\n                raise\n            code = self.fix(code, e)\n",
        &[E1, E7],
    );
    // A retry around one request, in a function the agent's loop calls each
    // pass, is not the agent's goal.
    check(
        Python,
        "def ask(client, messages):\n    while True:\n        try:\n            return client.chat(messages)\n        except RateLimitError:\n            time.sleep(1)\n\ndef run(client, messages):\n    while True:\n        reply = ask(client, messages)\n        if not reply.tool_calls:\n            return reply.content\n        messages += execute(reply.tool_calls)\n",
        &[E1],
    );
    assert!(!evidence_lines(
        Python,
        "def ask(client, messages):\n    while True:\n        try:\n            return client.chat(messages)\n        except RateLimitError:\n            time.sleep(1)\n\ndef run(client, messages):\n    while True:\n        reply = ask(client, messages)\n        if not reply.tool_calls:\n            return reply.content\n        messages += execute(reply.tool_calls)\n",
        E1
    )
    .contains(&4));
}

#[test]
fn a_status_that_is_no_longer_running_is_goal_met() {
    check(
        TypeScript,
        "async function run(this: Agent, taskId: string) {\n  while (true) {\n    const task = await this.tasks.find(taskId);\n    if (task.status !== TaskStatus.RUNNING) {\n      return task;\n    }\n    const reply = await this.model.generate(task);\n    if (reply.setStatus === 'completed') await this.tasks.update(taskId, { status: TaskStatus.COMPLETED });\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn an_interrupt_nothing_ties_to_a_person_is_a_stop_from_outside() {
    // `self.interrupted`, set by whoever holds the agent: E8.
    check(
        Rust,
        "impl Agent {\n    pub async fn run(&mut self) -> Result<String> {\n        loop {\n            if self.interrupted.load(Ordering::SeqCst) {\n                return Ok(String::new());\n            }\n            let reply = self.llm.chat(&self.history).await?;\n            if reply.tool_calls.is_empty() {\n                return Ok(reply.text);\n            }\n        }\n    }\n}\n",
        &[E1, E8],
    );
    check(JavaScript, "while (true) {\n  if (checkInterrupt()) break;\n  await step();\n}\n", &[E8]);
    // Ctrl-C is a person's.
    check(Python, "try:\n    while True:\n        step()\nexcept KeyboardInterrupt:\n    pass\n", &[E6]);
    check(
        Python,
        "import signal, sys\ndef on_sigint(sig, frame):\n    sys.exit(0)\nsignal.signal(signal.SIGINT, on_sigint)\nwhile True:\n    step()\n",
        &[E6],
    );
}

#[test]
fn stops_that_are_no_stop_from_outside() {
    // The end of what a loop walks, a stop span, a signal handed to one
    // request, a completion tool's stop.
    check(
        Python,
        "while True:\n    try:\n        event = next(stream)\n    except StopIteration:\n        break\n    handle(event)\n",
        &[],
    );
    check(
        Go,
        "package a\n\nfunc (a *A) Run(ctx context.Context) error {\n\tfor i := 0; i < a.max; i++ {\n\t\terr := a.tracer.SpanStop(ctx)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n\treturn nil\n}\n",
        &[E2],
    );
    check(
        TypeScript,
        "for (let turn = 0; turn < maxTurns; turn++) {\n  const reply = await client.create({ messages }, { signal: controller.signal });\n  if (!reply.toolCalls.length) return reply.text;\n}\n",
        &[E1, E2],
    );
    check(
        Python,
        "while True:\n    action = agent.act(obs)\n    obs = env.run(action)\n    if self.complete_tool.should_stop:\n        return self.complete_tool.answer\n",
        &[E1],
    );
}

#[test]
fn shell_counters_and_counts_made_in_a_walk() {
    check(Bash, "for ((i=1; i<=LOOPS; i++)); do\n  claude -p \"$PROMPT\"\ndone\n", &[E2]);
    check(
        Bash,
        "i=0\nwhile true; do\n  ((i++))\n  if [ $i -ge $MAX ]; then break; fi\n  claude -p x\ndone\n",
        &[E2],
    );
    // `completed` moves once per finished worker, in a walk over them: the
    // loop ends when every story is done, not after so many passes.
    check(
        Bash,
        "while [ $completed -lt $total_stories ]; do\n  launch_workers\n  for id in $(finished_workers); do\n    collect \"$id\"\n    ((completed++))\n  done\n  sleep 1\ndone\n",
        &[E1],
    );
}

#[test]
fn settings_of_one_request_are_no_budget() {
    check(
        TypeScript,
        "while (true) {\n  const reply = await client.messages.create({ model, messages, thinking: { type: 'enabled', budget_tokens: 1024 } });\n  if (reply.stop_reason === 'end_turn') break;\n}\n",
        &[E1],
    );
}

#[test]
fn failures_counted_after_a_retry_that_got_through() {
    // The inner loop retries a step: after `if err == nil { break }` comes
    // the failure path, and `recoveries` counts failures across the steps.
    let go = "package a\n\nfunc run() error {\n\trecoveries := 0\n\tfor step := 1; step <= maxSteps; step++ {\n\t\tfor {\n\t\t\tresp, err := execute(ctx, prompt)\n\t\t\tif err == nil {\n\t\t\t\tbreak\n\t\t\t}\n\t\t\tif recoveries >= maxRecoveries {\n\t\t\t\treturn err\n\t\t\t}\n\t\t\trecoveries++\n\t\t}\n\t}\n\treturn nil\n}\n";
    check(Go, go, &[E2, E7]);
    // In a loop of its own, every pass but the one that got through comes
    // that way: the count is of passes.
    check(
        Python,
        "attempts = 0\nwhile attempts < max_attempts:\n    answer = llm.solve(problem)\n    if is_correct(answer):\n        break\n    attempts += 1\n",
        &[E1, E2],
    );
}

#[test]
fn a_shell_string_holds_no_words_of_its_expansions() {
    // `"$EXIT_CODE"` is a variable, not the word "exit"; a status other
    // than zero is some failure's code.
    check(
        Bash,
        "while true; do\n  cursor-agent -p \"$TASK\"\n  EXIT_CODE=$?\n  if [ \"$EXIT_CODE\" -eq 1 ]; then\n    break\n  fi\ndone\n",
        &[],
    );
    check(
        Bash,
        "while true; do\n  out=$(claude -p x)\n  if [ \"$out\" == \"DONE\" ]; then break; fi\ndone\n",
        &[E1],
    );
}

#[test]
fn a_commands_flags_say_nothing_of_why_the_loop_ends() {
    check(
        Bash,
        "for i in $(seq 1 20); do\n  if claude -p \"$PROMPT\" --dangerously-skip-permissions --approve-mcps; then\n    echo ok\n  fi\ndone\n",
        &[E2],
    );
}

#[test]
fn the_last_actions_all_alike_are_no_progress() {
    // Comparing the newest entries of one history with each other is a
    // repetition check (E5), in either spelling.
    check(
        Python,
        "actions = []\nwhile True:\n    action = agent.act(obs)\n    actions.append(action)\n    if len(actions) >= 3 and actions[-1] == actions[-2] == actions[-3]:\n        break\n    obs = env.step(action)\n",
        &[E5],
    );
    check(
        Python,
        "history = []\nfor turn in range(MAX_TURNS):\n    call = model.next_tool_call(history)\n    history.append(call)\n    if len(set(history[-4:])) == 1:\n        break\n    run(call)\n",
        &[E2, E5],
    );
    check(
        TypeScript,
        "const seen: string[] = [];\nwhile (true) {\n  const step = await agent.step();\n  seen.push(step.action);\n  if (new Set(seen.slice(-3)).size === 1) {\n    break;\n  }\n}\n",
        &[E5],
    );
}

#[test]
fn a_loop_detector_that_aborts_is_no_stop_from_outside() {
    // `loop_detector.should_abort()` saw the agent repeat itself: E5, not
    // a stop request (E8).
    check(
        Python,
        "while True:\n    reply = llm.chat(messages)\n    messages.append(reply)\n    if loop_detector.should_abort(messages):\n        break\n    run_tools(reply)\n",
        &[E5],
    );
}

#[test]
fn a_branch_that_says_the_work_is_done_before_it_leaves() {
    // Nothing in `parsed == nil` says done; the branch does, by the reason it
    // records before leaving.
    check(
        Go,
        "package a\n\nfunc run() {\n\tfor turn := 1; turn <= cfg.MaxTurns; turn++ {\n\t\tcontent := chat(messages)\n\t\tparsed := intent.Parse(content)\n\t\tif parsed == nil {\n\t\t\tresult.Output = content\n\t\t\tresult.ExitReason = \"final_answer\"\n\t\t\tbreak\n\t\t}\n\t\texecute(parsed)\n\t}\n}\n",
        &[E1, E2],
    );
    // A return that says so itself.
    check(
        TypeScript,
        "async function run() {\n  for (let i = 0; i < maxIterations; i++) {\n    const last = await step();\n    if (shouldBreakLoop(last)) {\n      return { status: 'success', content: last.content };\n    }\n  }\n}\n",
        &[E1, E2],
    );
    // A reason that names a limit or a failure says no such thing.
    check(
        Go,
        "package a\n\nfunc run() {\n\tfor turn := 1; turn <= cfg.MaxTurns; turn++ {\n\t\tparsed := intent.Parse(chat(messages))\n\t\tif parsed == nil {\n\t\t\tresult.ExitReason = \"parse_failed\"\n\t\t\tbreak\n\t\t}\n\t}\n}\n",
        &[E2],
    );
}

#[test]
fn nothing_to_execute_and_nobody_to_hand_off_to() {
    check(
        Python,
        "for step in range(MAX_STEPS):\n    decoded = handler.decode(model.query(messages))\n    if is_empty_execute_response(decoded):\n        break\n    run(decoded)\n",
        &[E1, E2],
    );
    check(
        TypeScript,
        "while (state.steps < this.config.maxSteps) {\n  const result = await node.run();\n  const handoff = result.handoff;\n  if (!handoff?.agentId) {\n    break;\n  }\n  state.steps++;\n}\n",
        &[E1, E2],
    );
}

#[test]
fn a_bash_elif_is_a_guard_of_its_own() {
    // The `break` under `elif` is guarded by the elif's command, not only by
    // the `if` before it failing.
    check(
        Bash,
        "while true; do\n  if [[ -n \"$RETRY\" ]]; then\n    T=\"$RETRY\"\n  elif ! T=\"$(get_next_task \"$F\")\"; then\n    break\n  fi\n  claude -p \"$T\"\ndone\n",
        &[E1],
    );
}

#[test]
fn a_try_else_that_returns_is_the_attempt_that_got_through() {
    // `def complete` calling `self._chat_model.complete()` calls another
    // object's method: the function is no recursion and no step of a loop.
    // The `else` of the try returns the parsed reply; what follows the try
    // runs only after a failure, so `num_retry` counts failures.
    check(
        Python,
        "class Retrying:\n    def complete(self, messages):\n        num_retry = 0\n        while True:\n            try:\n                message = self._chat_model.complete(messages=messages)\n            except ToolSchemaParseError as e:\n                if num_retry >= self._max_retries:\n                    raise\n                messages += self._make_retry_messages(e)\n            else:\n                return message\n            num_retry += 1\n",
        &[E1, E7],
    );
    // A comment after the return does not hide it.
    check(
        Python,
        "class Retrying:\n    def complete(self, messages):\n        num_retry = 0\n        while True:\n            try:\n                message = self._chat_model.complete(messages=messages)\n            except ToolSchemaParseError as e:\n                if num_retry >= self._max_retries:\n                    raise\n                messages += self._make_retry_messages(e)\n            else:\n                return message\n                # parsed: done\n            num_retry += 1\n",
        &[E1, E7],
    );
}

#[test]
fn work_left_on_a_checklist_keeps_the_loop_going() {
    check(
        Bash,
        "while grep -q '\\* \\[ \\]' FEATURE_CHECKLIST.md; do\n  cursor-agent -p \"$PROMPT\"\ndone\n",
        &[E1],
    );
    check(
        Bash,
        "while grep -Eq '^\\s*\\*\\s\\[\\s\\]' \"$FEATURE_FILE\"; do\n  claude -p \"$PROMPT\"\ndone\n",
        &[E1],
    );
}

#[test]
fn a_flag_of_completion_raised_before_leaving() {
    check(
        Bash,
        "iteration=0\nwhile [ $iteration -lt $MAX ]; do\n  iteration=$((iteration+1))\n  if run_iteration $iteration; then\n    completed=true\n    break\n  fi\ndone\n",
        &[E1, E2],
    );
    // A flag that says it failed is not one.
    check(
        Bash,
        "iteration=0\nwhile [ $iteration -lt $MAX ]; do\n  iteration=$((iteration+1))\n  if run_iteration $iteration; then\n    not_completed=true\n    break\n  fi\ndone\n",
        &[E2],
    );
}

#[test]
fn a_reply_with_something_to_say_ends_the_turn() {
    check(
        Go,
        "package a\n\nfunc run() {\n\tfor i := 0; i < maxIterations; i++ {\n\t\tresponse := llm.Call(ctx, messages)\n\t\tresponseContent := strings.TrimSpace(response.Content)\n\t\tif responseContent != \"\" {\n\t\t\tbreak\n\t\t}\n\t}\n}\n",
        &[E1, E2],
    );
    // An error message that is not empty is no answer.
    check(
        Go,
        "package a\n\nfunc run() {\n\tfor i := 0; i < maxIterations; i++ {\n\t\tresponse := llm.Call(ctx, messages)\n\t\tif response.ErrorContent != \"\" {\n\t\t\tbreak\n\t\t}\n\t}\n}\n",
        &[E2],
    );
}

#[test]
fn a_comment_after_continue_still_skips_what_follows() {
    // The break runs only when neither `if` continued; the comment after the
    // second `continue` is not its last statement.
    check(
        JavaScript,
        "async function work() {\n  let iterations = 0;\n  while (iterations < maxIterations) {\n    iterations++;\n    const response = await llm.chat(messages);\n    const toolCalls = parser.parseToolCalls(response.content);\n    if (toolCalls?.length > 0) {\n      for (const tc of toolCalls) { execute(tc); }\n      continue; // Continue loop to process tool results\n    }\n    // No tool calls - worker is done\n    break;\n  }\n}\n",
        &[E1, E2],
    );
}

#[test]
fn a_status_among_the_end_statuses() {
    check(
        TypeScript,
        "const endTaskStatuses = new Set([TaskStatus.COMPLETED, TaskStatus.FAILED]);\nwhile (true) {\n  if (endTaskStatuses.has(taskState.status)) {\n    break;\n  }\n  const step = await agent.step();\n  if (step.type === \"complete\") {\n    taskState.status = TaskStatus.COMPLETED;\n  }\n}\n",
        &[E1],
    );
    check(
        Python,
        "while True:\n    if run.state in TERMINAL_STATES:\n        break\n    run = client.poll(run.id)\n",
        &[E1],
    );
}

#[test]
fn functions_that_call_each_other_round_are_one_recursion() {
    // The streaming client's shape: `finish` runs the pending tool calls and
    // asks the model again through `request`, whose stream callback calls
    // `finish`. No loop statement anywhere; the tool-call check is the exit.
    let source = "export function stream(payload: any, options: any) {\n  let pending: any[] = [];\n  let done = false;\n  const finish = () => {\n    if (done) return;\n    if (pending.length > 0) {\n      runTools(pending).then(() => {\n        pending = [];\n        setTimeout(() => request(payload), 50);\n      });\n      return;\n    }\n    done = true;\n    options.onFinish();\n  };\n  function request(body: any) {\n    openStream(body, {\n      onmessage(msg: any) {\n        if (msg.tool_calls) pending.push(...msg.tool_calls);\n      },\n      onclose() {\n        finish();\n      },\n    });\n  }\n  request(payload);\n}\n";
    check(TypeScript, source, &[E1]);
    // Python, methods of one object: `step` calls `act`, which calls `step`
    // again until the model submits.
    check(
        Python,
        "class Agent:\n    def step(self, obs):\n        action = self.llm.decide(obs)\n        if action.kind == 'submit':\n            return action.answer\n        return self.act(action)\n\n    def act(self, action):\n        obs = self.env.run(action)\n        return self.step(obs)\n",
        &[E1],
    );
}

#[test]
fn a_recursion_through_a_function_defined_further_down_keeps_its_guard() {
    // Bedrock's tool-use examples: the model's reply is handled by
    // `processResponse`, which calls `handleToolUse` (defined after it) only
    // while the stop reason is `tool_use`; that one runs the tools and calls
    // `processResponse` back. The guard of the call down the file ends it.
    let source = "async function processResponse(response, messages) {\n  if (response.stopReason === \"tool_use\") {\n    await handleToolUse(response, messages);\n  }\n  if (response.stopReason === \"end_turn\") {\n    console.log(response.output.message.content[0].text);\n  }\n}\n\nasync function handleToolUse(response, messages) {\n  messages.push(response.output.message);\n  messages.push(await runTools(response.output.message));\n  await processResponse(await send(messages), messages);\n}\n";
    check(JavaScript, source, &[E1]);
    assert_eq!(evidence_lines(JavaScript, source, E1), vec![2]);
    // The same in Python, the helper a method of the class further down.
    check(
        Python,
        "class Chat:\n    def handle(self, reply):\n        if reply.stop_reason == 'tool_use':\n            self.use_tools(reply)\n\n    def use_tools(self, reply):\n        results = run_tools(reply)\n        self.handle(self.client.send(results))\n",
        &[E1],
    );
    // Decoy: a guarded call of a function defined further down that never
    // calls back is no recursion, and its guard ends nothing.
    check(
        JavaScript,
        "async function processResponse(response) {\n  if (response.stopReason === \"tool_use\") {\n    await handleToolUse(response);\n  }\n}\n\nasync function handleToolUse(response) {\n  await runTools(response.output.message);\n}\n",
        &[],
    );
}

#[test]
fn tanstack_ai_runs_are_bounded_by_their_loop_strategy() {
    // TanStack AI's `chat()` runs tool calls until the model answers; its
    // `agentLoopStrategy` caps the iterations.
    let source = "import { chat, maxIterations } from '@tanstack/ai'\n\nexport function answer(messages: Message[]) {\n  return chat({\n    adapter: openaiText('gpt-5'),\n    tools: [searchTool],\n    agentLoopStrategy: maxIterations(10),\n    maxTokens: 2048,\n    messages,\n  })\n}\n";
    check(TypeScript, source, &[E2]);
    assert_eq!(evidence_lines(TypeScript, source, E2), vec![7]);
    // Decoy: a function named `chat` without a loop strategy is no run.
    check(
        TypeScript,
        "export function reply(room: Room, text: string) {\n  return chat({ room, text, maxTokens: 200 })\n}\n",
        &[],
    );
}

#[test]
fn a_call_on_another_object_of_the_same_name_is_no_cycle() {
    // `run` calls `self.step`, and `step` calls `tool.run`: another object's
    // `run`, not this one's. No recursion, so the loop in `run` alone decides.
    let source = "class Agent:\n    def run(self, task):\n        while True:\n            self.step(task)\n\n    def step(self, task):\n        for tool in self.tools:\n            tool.run(task)\n";
    check(Python, source, &[]);
    assert!(
        warnings(Python, source).iter().any(|w| w.starts_with("infinite-loop-without-exit")),
        "{:?}",
        warnings(Python, source)
    );
}

#[test]
fn a_namesake_called_on_another_receiver_is_no_recursion() {
    // `Tool::new` in `fn new` and `agent.run` in `def run` call another
    // type's or object's function of the same name: no loop at all.
    let rust = "impl Analyzer {\n    pub fn new(config: Config) -> Self {\n        let tool = Tool::new(config.clone());\n        let agent = Agent::new(tool);\n        Self { agent }\n    }\n}\n";
    assert!(
        warnings(Rust, rust).iter().any(|w| w.starts_with("no-loop-found")),
        "{:?}",
        warnings(Rust, rust)
    );
    let python = "class Worker:\n    def run(self, task):\n        result = agent.run(task)\n        if result.ok:\n            return result\n";
    assert!(
        warnings(Python, python).iter().any(|w| w.starts_with("no-loop-found")),
        "{:?}",
        warnings(Python, python)
    );
    // Its own receiver still recurses.
    check(
        Python,
        "class Worker:\n    def run(self, task, depth=0):\n        if depth >= 5:\n            return None\n        return self.run(task, depth + 1)\n",
        &[E2],
    );
}

#[test]
fn autogen_assistant_agent_runs_are_framework_loops() {
    // AgentChat's `AssistantAgent(...).run(task=...)` calls the model and
    // its tools until it answers; a timeout around the run is its wall clock.
    check(
        Python,
        "async def solve(question):\n    agent = AssistantAgent(name=\"calc\", model_client=client, workbench=bench)\n    response = await asyncio.wait_for(agent.run(task=question), timeout=300.0)\n    return response.messages[-1].content\n",
        &[E4],
    );
}

#[test]
fn a_function_called_again_from_its_own_callback_recurses() {
    // The recursive research call sits in the arrow handed to `map`: it is
    // still the function calling itself, while depth is left.
    check(
        TypeScript,
        "export async function research(query: string, depth: number): Promise<string[]> {\n  const questions = await plan(query);\n  const found = await Promise.all(\n    questions.map(async (q) => {\n      const notes = await search(q);\n      if (depth > 1) {\n        return research(q, depth - 1);\n      }\n      return notes;\n    }),\n  );\n  return found.flat();\n}\n",
        &[E2],
    );
}

#[test]
fn a_file_the_prompt_asks_the_agent_to_write_when_done_is_its_answer() {
    // The prompt tells the agent to create `notes/audit-state.txt` once every
    // check passes; finding it ends the loop.
    let told = "while true; do\n  codex exec \"Fix one failing check. When every check passes, create notes/audit-state.txt and stop.\"\n  if [ -f \"notes/audit-state.txt\" ]; then\n    exit 0\n  fi\n  sleep 2\ndone\n";
    check(Bash, told, &[E1]);
    // The same check, with a prompt that never names the file: nothing
    // says who writes it, so it is no goal.
    let untold = "while true; do\n  codex exec \"Fix one failing check.\"\n  if [ -f \"notes/audit-state.txt\" ]; then\n    exit 0\n  fi\n  sleep 2\ndone\n";
    check(Bash, untold, &[]);
}

#[test]
fn the_end_of_what_a_person_types_is_theirs_to_give() {
    // Lines of standard input behind a macro (`pin!`); the stream ends when
    // the person closes it: a human interrupt, not a goal met.
    check(
        Rust,
        "async fn repl(agent: &mut Agent) -> Result<()> {\n    let mut lines = std::pin::pin!({\n        let reader = tokio::io::BufReader::new(tokio::io::stdin());\n        tokio_stream::wrappers::LinesStream::new(reader.lines())\n    });\n    loop {\n        let line = match lines.next().await {\n            Some(Ok(line)) => line,\n            Some(Err(e)) => return Err(e.into()),\n            None => break,\n        };\n        let reply = agent.chat(line).await?;\n        println!(\"{reply}\");\n    }\n    Ok(())\n}\n",
        &[E6],
    );
}

#[test]
fn a_wait_for_budget_that_gives_up_ends_the_loop() {
    check(
        Bash,
        "for i in $(seq 1 \"$MAX_ROUNDS\"); do\n  if ! wait_for_budget \"claude\"; then\n    echo \"no budget left\"\n    break\n  fi\n  claude -p \"$PROMPT\"\ndone\n",
        &[E2, E3],
    );
    // Waiting for the build is no budget.
    check(
        Bash,
        "for i in $(seq 1 \"$MAX_ROUNDS\"); do\n  if ! wait_for_build; then\n    break\n  fi\n  claude -p \"$PROMPT\"\ndone\n",
        &[E2],
    );
}

#[test]
fn an_allowance_spent_by_skips_ends_the_loop_once_used_up() {
    // `if left > 0 { left -= 1; continue }` right before the exit: empty
    // replies are retried a few times, then the loop gives up.
    check(
        Rust,
        "async fn run(&self) -> Result<()> {\n    let mut empty_retries_left = 2;\n    loop {\n        let response = self.provider.chat().await?;\n        if response.has_tool_calls() {\n            self.exec(response).await;\n        } else if let Some(content) = response.content {\n            return Ok(Some(content));\n        } else {\n            if empty_retries_left > 0 {\n                empty_retries_left -= 1;\n                continue;\n            }\n            warn!(\"giving up\");\n            break;\n        }\n    }\n    Ok(None)\n}\n",
        &[E1, E7],
    );
    check(
        Go,
        "package agent\n\nfunc (t *Loop) Run() error {\n\tfor {\n\t\tresp := t.llm.Complete(t.msgs)\n\t\tif resp.Terminal() {\n\t\t\treturn nil\n\t\t}\n\t\tif nudges < maxNudges {\n\t\t\tnudges++\n\t\t\tt.msgs = append(t.msgs, nudge)\n\t\t\tcontinue\n\t\t}\n\t\treturn errors.New(\"no terminal call\")\n\t}\n}\n",
        &[E1, E7],
    );
    // A skip that spends nothing is no allowance: the exit after it ends
    // the loop on the first pass that is not skipped.
    check(
        Go,
        "package agent\n\nfunc (t *Loop) Run() error {\n\tfor {\n\t\tresp := t.llm.Complete(t.msgs)\n\t\tif resp.Terminal() {\n\t\t\treturn nil\n\t\t}\n\t\tif len(resp.Calls) > 0 {\n\t\t\tt.handle(resp.Calls)\n\t\t\tcontinue\n\t\t}\n\t\treturn errors.New(\"no terminal call\")\n\t}\n}\n",
        &[E1],
    );
    // Each skipped pass counted by its own name is a turn cap.
    check(
        Python,
        "def run():\n    turns = 0\n    while True:\n        reply = llm(messages)\n        if reply.done:\n            return reply\n        if turns < MAX_TURNS:\n            turns += 1\n            continue\n        break\n",
        &[E1, E2],
    );
}

#[test]
fn retries_that_run_out_before_a_guarded_exit_end_the_loop() {
    // Go puts the statements of the guard's block in a list of their own.
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Run() {\n\tfor {\n\t\tvar response string\n\t\tfor attempt := 0; attempt < a.retryAttempts; attempt++ {\n\t\t\tresp, err := a.client.Create(prompt)\n\t\t\tif err == nil {\n\t\t\t\tresponse = resp\n\t\t\t\tbreak\n\t\t\t}\n\t\t}\n\t\tif response == \"\" {\n\t\t\tlog.Error().Msg(\"failed\")\n\t\t\tbreak\n\t\t}\n\t\ta.handle(response)\n\t}\n}\n",
        &[E7],
    );
}

#[test]
fn failures_told_by_an_exit_status_are_counted_as_failures() {
    // A script's non-zero return code spends a retry (not a pass); a
    // script that ran clean is the goal.
    check(
        Python,
        "def main():\n    retries = 3\n    while True:\n        code = llm(prompt)\n        return_code = run(code)\n        if return_code != 0:\n            retries -= 1\n            if retries <= 0:\n                break\n        else:\n            return\n",
        &[E1, E7],
    );
    // The other branch of a success status: a debug attempt is spent only
    // when the report is not a success.
    check(
        Python,
        "def fix(report):\n    attempt = 0\n    while True:\n        if attempt > max_attempts:\n            break\n        report = debugger.analyze(run())\n        if report.get('status') == 'success':\n            break\n        else:\n            attempt += 1\n",
        &[E1, E7],
    );
    // Bash: a stall counted on failed rounds (`rc -eq 0` not holding) or
    // on an empty output, in a group after `&&`, is an error threshold.
    check(
        Bash,
        "stall=0\nwhile true; do\n  codex exec \"$PROMPT\" > \"$out\"\n  if [[ ! -s \"$out\" ]]; then\n    stall=$((stall+1))\n    [[ \"$stall\" -ge 3 ]] && { echo \"3 stalls, stopping\"; return 4; }\n    continue\n  fi\n  stall=0\n  run_tests\ndone\n",
        &[E7],
    );
    check(
        Bash,
        "stall=0\nwhile true; do\n  codex exec \"$PROMPT\"\n  run_tests; RC=$?\n  if [[ \"$RC\" -eq 0 ]]; then\n    stall=0\n  else\n    stall=$((stall+1))\n    [[ \"$stall\" -ge 3 ]] && { echo \"stopping\"; return 4; }\n  fi\ndone\n",
        &[E7],
    );
    // A stall counted on passes that changed nothing stays no progress.
    check(
        Bash,
        "stall=0\nwhile true; do\n  codex exec \"$PROMPT\"\n  if git diff --quiet; then\n    stall=$((stall+1))\n    [[ \"$stall\" -ge 3 ]] && { echo \"no change\"; break; }\n  else\n    stall=0\n  fi\ndone\n",
        &[E5],
    );
}

#[test]
fn a_detector_behind_a_call_speaks_by_the_answers_that_take_the_exit() {
    // `detectRepetition` returns false while there is too little history:
    // that answer lets the loop go on, so it says nothing about a turn cap;
    // the detector's own name tells the exit.
    check(
        TypeScript,
        "async function run(agent: Agent) {\n  const recent: string[] = [];\n  const detectRepetition = (text: string): boolean => {\n    if (recent.length < 2) return false;\n    return recent.some((prev) => overlap(text, prev) > 0.8);\n  };\n  while (true) {\n    const reply = await agent.step();\n    if (detectRepetition(reply.text)) {\n      break;\n    }\n    recent.push(reply.text);\n  }\n}\n",
        &[E5],
    );
}

#[test]
fn an_abort_threshold_counts_what_its_counter_sees() {
    // Tool results flagged by a loop detector, counted against an abort
    // threshold: no progress, not a cancellation from outside.
    check(
        TypeScript,
        "const AGENT_LOOP_ABORT_THRESHOLD = 3;\nasync function run(model: Model) {\n  let loopFireCount = 0;\n  while (true) {\n    const results = await model.callTools();\n    for (const tr of results) {\n      if (tr.result.loopDetected) loopFireCount++;\n    }\n    if (loopFireCount >= AGENT_LOOP_ABORT_THRESHOLD) {\n      return 'loop-aborted';\n    }\n  }\n}\n",
        &[E5],
    );
}

#[test]
fn a_line_a_person_types_in_a_shell_or_at_a_terminal() {
    // `read -p` asks a person; the arms of the case are what they may type.
    check(
        Bash,
        "while true; do\n  claude -p \"$PROMPT\"\n  read -p \"Choose an option: \" user_choice\n  case \"$user_choice\" in\n    q|Q)\n      break\n      ;;\n    *)\n      ;;\n  esac\ndone\n",
        &[E6],
    );
    check(Bash, "while read -e -p \">> \" query; do\n  llm \"$query\"\ndone\n", &[E6]);
    // A line read from a file or a pipe is nobody's answer.
    check(Bash, "git ls-files | while IFS= read -r f; do\n  claude -p \"review $f\"\ndone\n", &[]);
    // Rust and Go hand the name to the reader.
    check(
        Rust,
        "fn run() -> io::Result<()> {\n    loop {\n        let mut intent = String::new();\n        io::stdin().read_line(&mut intent)?;\n        if intent.trim().is_empty() {\n            break;\n        }\n        agent.step(&intent);\n    }\n    Ok(())\n}\n",
        &[E6],
    );
    check(
        Go,
        "package main\n\nfunc main() {\n\tfor {\n\t\tvar answer string\n\t\tfmt.Scanln(&answer)\n\t\tif answer == \"\" {\n\t\t\treturn\n\t\t}\n\t\tagent.Step(answer)\n\t}\n}\n",
        &[E6],
    );
}

#[test]
fn each_type_a_handler_catches_speaks_for_itself() {
    // Ctrl-C is the person's; a cancelled task is a stop from outside.
    check(
        Python,
        "async def run(agent):\n    try:\n        while True:\n            step = await agent.step()\n            if step.done:\n                return step\n    except (TimeoutError, asyncio.CancelledError, KeyboardInterrupt):\n        raise\n",
        &[E1, E6, E8],
    );
    check(
        Python,
        "def run(agent):\n    while True:\n        try:\n            agent.step()\n        except (KeyboardInterrupt, asyncio.CancelledError):\n            break\n",
        &[E6, E8],
    );
}

#[test]
fn bash_functions_are_checks_behind_calls() {
    // A script's loop asks its own functions; each answers by its status
    // (`return 1` is no), and `f || break` leaves when `f` says no.
    let script = "check_progress() {\n    if [[ \"$STALLS\" -ge \"$MAX_STALLS\" ]]; then\n        return 1\n    fi\n    return 0\n}\nwithin_turns() {\n    [[ \"$ITERATION\" -gt \"$MAX_ITERATIONS\" ]] && return 1\n    return 0\n}\nis_done() {\n    if grep -q 'COMPLETE' plan.md; then\n        return 0\n    fi\n    return 1\n}\nwhile true; do\n  check_progress || break\n  within_turns || break\n  if is_done; then break; fi\n  claude -p \"$(cat PROMPT.md)\"\ndone\n";
    check(Bash, script, &[E1, E2, E5]);
    assert_eq!(evidence_lines(Bash, script, E5), vec![2, 18]);
    assert_eq!(evidence_lines(Bash, script, E2), vec![8, 19]);
    // The status that leaves is the one followed: here `is_done` answers
    // yes (`return 0`) when the marker is found, and the loop leaves on yes.
    assert_eq!(evidence_lines(Bash, script, E1), vec![12, 20]);
}

#[test]
fn e1_passes_without_a_tool_call_counted() {
    // Two replies in a row with no tool call: the model has answered. Not a
    // failure counted (E7), and no pass compared with an earlier one (E5).
    check(
        TypeScript,
        "let consecutiveNoToolIterations = 0;\nwhile (iteration < maxIterations) {\n  iteration++;\n  const response = await chat(messages);\n  const calls = parseToolCalls(response);\n  if (calls.length === 0) {\n    consecutiveNoToolIterations++;\n    if (consecutiveNoToolIterations >= 2) {\n      break;\n    }\n    continue;\n  }\n  consecutiveNoToolIterations = 0;\n  await runTools(calls);\n}\n",
        &[E1, E2],
    );
    // A status code asks which error came back, not how many: no E7.
    check(
        TypeScript,
        "while (true) {\n  try {\n    const reply = await client.chat(messages);\n    if (!reply.toolCalls.length) return reply.text;\n    await run(reply.toolCalls);\n  } catch (err) {\n    if (err.statusCode === 400) {\n      useThinking = false;\n      continue;\n    }\n    throw err;\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn bash_trap_whose_handler_goes_on_ends_nothing() {
    // The handler only cleans up: the signal is handled and the loop goes on.
    let stays = "cleanup() {\n    log \"Cleaning up...\"\n    tmux kill-session -t \"$SESSION\" 2>/dev/null || true\n}\ntrap cleanup INT TERM\nfor i in $(seq 1 20); do\n  claude -p \"$(cat PROMPT.md)\"\ndone\n";
    check(Bash, stays, &[E2]);
    // One that exits, or turns on a flag the loop reads, ends it.
    let exits = stays.replace("2>/dev/null || true\n}", "2>/dev/null || true\n    exit 130\n}");
    check(Bash, &exits, &[E2, E6, E8]);
    let flag = "on_stop() {\n    STOP=1\n}\ntrap on_stop INT TERM\nSTOP=0\nwhile [ \"$STOP\" -eq 0 ]; do\n  claude -p \"$(cat PROMPT.md)\"\ndone\n";
    check(Bash, flag, &[E6, E8]);
}

#[test]
fn e5_a_flag_raised_under_a_detector_says_what_the_detector_says() {
    // The flag is turned on under two conditions: the nearer one (how bad
    // the verdict is) names no exit, the one around it (the watcher finds
    // the agent stuck) does, and decides, as the nearest guard that says
    // anything decides for an exit.
    let nested = "async function run(agent: Agent) {\n  let halt = false;\n  while (true) {\n    const calls = await agent.next();\n    for (const call of calls) {\n      const verdict = watcher.check(call.name, call.args);\n      if (verdict.stuck) {\n        if (verdict.level === \"severe\") {\n          halt = true;\n        } else {\n          agent.remind(verdict.message);\n        }\n      }\n      await agent.run(call);\n    }\n    if (halt) break;\n  }\n}\n";
    check(TypeScript, nested, &[E5]);
    check(
        Python,
        "def run(agent):\n    halt = False\n    while True:\n        for call in agent.next():\n            verdict = watcher.check(call)\n            if verdict.stuck:\n                if verdict.level == 'severe':\n                    halt = True\n            agent.run(call)\n        if halt:\n            break\n",
        &[E5],
    );
    // Decoy: the stuck verdict only reminds the model; the flag is raised
    // under conditions that name no exit (a tool name, a mode).
    let decoy = "async function run(agent: Agent) {\n  let leave = false;\n  while (true) {\n    const calls = await agent.next();\n    for (const call of calls) {\n      const verdict = watcher.check(call.name, call.args);\n      if (verdict.stuck) {\n        agent.remind(verdict.message);\n      }\n      if (call.name === \"deploy\") {\n        if (mode === \"dry\") {\n          leave = true;\n        }\n      }\n      await agent.run(call);\n    }\n    if (leave) break;\n  }\n}\n";
    check(TypeScript, decoy, &[]);
}

#[test]
fn e5_a_comparison_in_a_helper_sees_what_the_helper_takes_each_call() {
    // `previous` is taken from the history inside the helper, on every
    // call: the comparison sees this pass against the last one.
    let fresh = "def settled(answer, answers):\n    previous = answers[-1] if answers else None\n    if answer == previous:\n        return True\n    return False\n\ndef run(agent):\n    answers = []\n    while True:\n        answer = agent.step()\n        if settled(answer, answers):\n            break\n        answers.append(answer)\n";
    check(Python, fresh, &[E5]);
    assert!(warnings(Python, fresh).iter().all(|w| !w.starts_with("stale-progress-check")));
    // Decoy: the helper compares with a value the loop's function set once
    // before the loop and nothing updates: a stale check, not an exit.
    let stale = "def settled(answer):\n    if answer == previous_answer:\n        return True\n    return False\n\ndef run(agent):\n    global previous_answer\n    previous_answer = agent.step()\n    while True:\n        answer = agent.step()\n        if settled(answer):\n            break\n";
    check(Python, stale, &[]);
    assert!(warnings(Python, stale).iter().any(|w| w.starts_with("stale-progress-check")));
}

#[test]
fn e5_a_counter_named_for_failures_that_counts_passes_without_progress() {
    // The counter is called failures, but the loop moves it only when a
    // pass changed nothing: it counts stalls.
    let script = "#!/bin/bash\nmade_progress() {\n    local added\n    added=\"$(git diff --numstat HEAD~1 | wc -l)\"\n    [[ \"$added\" -gt 0 ]]\n}\nFAILURES=0\nwhile true; do\n    if [[ \"$FAILURES\" -ge 3 ]]; then\n        echo \"no progress for three passes\"\n        break\n    fi\n    claude -p \"$(cat PROMPT.md)\"\n    if made_progress; then\n        FAILURES=0\n    else\n        FAILURES=$((FAILURES + 1))\n    fi\ndone\n";
    check(Bash, script, &[E5]);
    check(
        Python,
        "def run(agent, repo):\n    failures = 0\n    while failures < 3:\n        agent.step()\n        if repo.has_changes():\n            failures = 0\n        else:\n            failures += 1\n",
        &[E5],
    );
    // Decoys: failures counted when a pass fails stay an error threshold,
    // and so does a counter moved both on failed passes and on idle ones.
    check(
        Python,
        "def run(agent):\n    failures = 0\n    while failures < 3:\n        result = agent.step()\n        if result.failed:\n            failures += 1\n        else:\n            failures = 0\n",
        &[E7],
    );
    check(
        Python,
        "def run(agent, repo):\n    failures = 0\n    while failures < 3:\n        result = agent.step()\n        if result.failed:\n            failures += 1\n        elif not repo.has_changes():\n            failures += 1\n        else:\n            failures = 0\n",
        &[E7],
    );
}

#[test]
fn e5_a_state_already_marked_in_a_map_of_seen_ones() {
    // `visited[next]` read as a truth value asks whether `next` was marked
    // on an earlier pass: routing back to an agent already seen is a cycle.
    check(
        Go,
        "package agent\n\nfunc (w *Workflow) Run(ctx context.Context) error {\n\tvisited := map[string]bool{}\n\tcurrent := w.start\n\tfor {\n\t\treply, err := w.agents[current].Step(ctx)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tnext := w.route(reply)\n\t\tif visited[next] {\n\t\t\treturn nil\n\t\t}\n\t\tvisited[next] = true\n\t\tcurrent = next\n\t}\n}\n",
        &[E5],
    );
    check(
        JavaScript,
        "async function browse(agent, start) {\n  const seen = {};\n  let page = start;\n  while (true) {\n    if (seen[page]) break;\n    seen[page] = true;\n    page = await agent.nextPage(page);\n  }\n}\n",
        &[E5],
    );
    // Decoys: a lookup in a map of finished agents says the work is done;
    // a seen entry that only skips a pass ends nothing; an entry named by a
    // string is a field, not a key the loop marks.
    check(
        Go,
        "package agent\n\nfunc (w *Workflow) Run(ctx context.Context) error {\n\tcurrent := w.start\n\tfor {\n\t\treply := w.agents[current].Step(ctx)\n\t\tcurrent = w.route(reply)\n\t\tif w.finished[current] {\n\t\t\treturn nil\n\t\t}\n\t}\n}\n",
        &[E1],
    );
    check(
        Go,
        "package agent\n\nfunc (w *Workflow) Run(ctx context.Context) {\n\tvisited := map[string]bool{}\n\tfor i := 0; i < 10; i++ {\n\t\tnext := w.route(w.step(ctx))\n\t\tif visited[next] {\n\t\t\tcontinue\n\t\t}\n\t\tvisited[next] = true\n\t}\n}\n",
        &[E2],
    );
    check(
        Python,
        "def run(agent):\n    while True:\n        seen = agent.step()\n        if seen[\"cycle\"]:\n            print(seen)\n        if seen[\"final\"]:\n            break\n",
        &[E1],
    );
}

#[test]
fn e5_stale_passes_counted_or_tracked() {
    // Passes that found nothing new to do, counted to a limit or kept by a
    // tracker that says when to give up: no progress, not a cancellation.
    check(
        Rust,
        "fn run(ctx: &mut Ctx) {\n    loop {\n        let outcome = run_iteration(ctx);\n        if outcome.found_work {\n            ctx.stale_tracker.reset();\n        } else {\n            ctx.stale_tracker.mark_stale();\n            if ctx.stale_tracker.should_abort() {\n                break;\n            }\n        }\n    }\n}\n",
        &[E5],
    );
    check(
        Python,
        "def run(agent):\n    stale_rounds = 0\n    while stale_rounds < 3:\n        found = agent.step()\n        if found:\n            stale_rounds = 0\n        else:\n            stale_rounds += 1\n",
        &[E5],
    );
    // Decoys: a heartbeat or a lock grown stale is no pass without
    // progress.
    check(
        Python,
        "def run(agent, worker):\n    while True:\n        if worker.heartbeat.is_stale():\n            break\n        agent.step()\n",
        &[],
    );
    check(
        Python,
        "def run(agent, lock):\n    for attempt in range(5):\n        if lock.stale_count > 2:\n            break\n        agent.step()\n",
        &[E2],
    );
}

#[test]
fn the_end_of_a_stream_read_a_chunk_a_pass_is_no_exit() {
    // A reader pumped into a response: `done` is the iterator protocol's
    // end of input, not the work done.
    let pump = "export async function relay(res: Response, readable: ReadableStream) {\n  const reader = readable.getReader()\n  while (true) {\n    const { done, value } = await reader.read()\n    if (done) break\n    res.write(value)\n  }\n  res.end()\n}\n";
    check(TypeScript, pump, &[]);
    // The same with a generator stepped by hand.
    let generator = "async function drain(events) {\n  for (;;) {\n    const result = await events.next();\n    if (result.done) return;\n    console.log(result.value);\n  }\n}\n";
    check(JavaScript, generator, &[]);
    // Decoys: a step of the agent that says it is done is the goal met, and
    // a pump inside an agent loop leaves the agent loop's own exits alone.
    let step = "async function run(agent: Agent) {\n  for (let turn = 0; turn < 20; turn++) {\n    const { done, answer } = await agent.step()\n    if (done) return answer\n  }\n}\n";
    check(TypeScript, step, &[E1, E2]);
    let nested = "async function run(agent: Agent) {\n  while (true) {\n    const reply = await agent.reply()\n    const reader = reply.body.getReader()\n    while (true) {\n      const { done, value } = await reader.read()\n      if (done) break\n      show(value)\n    }\n    if (!reply.toolCalls.length) return reply\n  }\n}\n";
    check(TypeScript, nested, &[E1]);
    assert_eq!(evidence_lines(TypeScript, nested, E1), vec![10]);
}

#[test]
fn an_abort_controller_nobody_aborts_is_no_stop() {
    // Made for one framework run and handed to it: nothing here aborts it.
    let handed = "export async function handle(req: Request, params: Params) {\n  const abortController = new AbortController()\n  const stream = chat({\n    adapter,\n    messages: params.messages,\n    agentLoopStrategy: maxIterations(10),\n    abortController,\n  })\n  return toServerSentEventsStream(stream, abortController)\n}\n";
    check(TypeScript, handed, &[E2]);
    // Decoys: aborted when another part of the program says stop, or kept
    // where a caller can abort it.
    let aborted = "export async function chatLoop(agent: Agent, session: Session) {\n  const controller = new AbortController()\n  session.onStop(() => controller.abort())\n  while (true) {\n    const reply = await agent.reply({ signal: controller.signal })\n    if (!reply.toolCalls.length) return reply\n  }\n}\n";
    check(TypeScript, aborted, &[E1, E8]);
    let kept = "class Runner {\n  async run(agent: Agent) {\n    this.controller = new AbortController()\n    while (true) {\n      const reply = await agent.reply({ signal: this.controller.signal })\n      if (!reply.toolCalls.length) return reply\n    }\n  }\n}\n";
    check(TypeScript, kept, &[E1, E8]);
}

#[test]
fn an_abort_controller_aborted_on_ctrl_c_is_a_human_interrupt() {
    // Ctrl-C on the readline prompt aborts the request underway.
    let readline = "export async function mainCliLoop(agent: Agent) {\n  const rl = readline.createInterface({ input: stdin, output: stdout })\n  let abortController = new AbortController()\n  rl.on(\"SIGINT\", () => {\n    abortController.abort()\n    abortController = new AbortController()\n  })\n  while (true) {\n    const input = await rl.question(\"> \")\n    for await (const chunk of agent.run(input, { abortSignal: abortController.signal })) {\n      stdout.write(chunk)\n    }\n  }\n}\n";
    check(TypeScript, readline, &[E6]);
    assert_eq!(evidence_lines(TypeScript, readline, E6), vec![4]);
    // Escape aborts the request underway, and the run with it.
    let escape = "export async function chatLoop(agent: Agent) {\n  const controller = new AbortController()\n  process.stdin.on('keypress', (_, key) => { if (key.name === 'escape') controller.abort() })\n  while (true) {\n    const reply = await agent.reply({ signal: controller.signal })\n    if (!reply.toolCalls.length) return reply\n  }\n}\n";
    check(TypeScript, escape, &[E1, E6]);
    assert_eq!(evidence_lines(TypeScript, escape, E6), vec![3]);
    // The prompt's close (Ctrl-D, or Ctrl-C closing it) wired to the signal.
    let close = "async function chat(client) {\n  const rl = readline.createInterface({ input: process.stdin, output: process.stdout })\n  const ac = new AbortController()\n  const onClose = () => ac.abort()\n  rl.on(\"close\", onClose)\n  while (true) {\n    let message\n    try {\n      message = await rl.question(\"Query: \", { signal: ac.signal })\n    } catch {\n      break\n    }\n    console.log(await client.ask(message))\n  }\n}\n";
    check(JavaScript, close, &[]);
    // Decoy: a socket's close is the other side going away, a stop from
    // outside.
    let socket = "async function serve(ws, agent) {\n  const controller = new AbortController()\n  ws.on(\"close\", () => controller.abort())\n  while (true) {\n    const reply = await agent.reply({ signal: controller.signal })\n    if (!reply.toolCalls.length) return reply\n  }\n}\n";
    check(JavaScript, socket, &[E1, E8]);
}

#[test]
fn a_retry_two_calls_below_the_loop_is_an_error_threshold() {
    // The reflection loop asks `critique`, which asks `_complete`, whose
    // loop retries the request and re-raises on the last try: the tries are
    // an error threshold, and the request getting through is no goal met.
    let source = "def _complete(client, messages):\n    for attempt in range(3):\n        try:\n            resp = client.chat(messages)\n            return resp.content\n        except ApiError:\n            if attempt == 2:\n                raise\n            time.sleep(1)\n\ndef critique(client, answer):\n    return _complete(client, [answer])\n\ndef improve(client, answer, rounds=2):\n    for round in range(rounds):\n        notes = critique(client, answer)\n        answer = revise(client, answer, notes)\n    return answer\n";
    check(Python, source, &[E2, E7]);
    assert_eq!(evidence_lines(Python, source, E2), [15]);
    assert_eq!(evidence_lines(Python, source, E7), [2, 7]);
    // The same helper, called by nothing that loops, is a loop of its own:
    // its tries are passes and getting through is its goal.
    check(
        Python,
        "def _complete(client, messages):\n    for attempt in range(3):\n        try:\n            resp = client.chat(messages)\n            return resp.content\n        except ApiError:\n            if attempt == 2:\n                raise\n            time.sleep(1)\n",
        &[E1, E2],
    );
}

#[test]
fn a_retry_decorator_on_a_helper_of_the_pass_is_an_error_threshold() {
    // `@retry(stop=stop_after_attempt(5))` on the model call that a step of
    // the loop makes: five failed tries end the run, whatever the turn.
    let source = "class Agent:\n    @retry(stop=stop_after_attempt(5), reraise=True)\n    async def _call_model(self, history):\n        return await self.client.create(history)\n\n    async def _step(self):\n        reply = await self._call_model(self.history)\n        return reply\n\n    async def run(self):\n        for i in range(self.max_rounds):\n            reply = await self._step()\n            if reply.is_stop:\n                break\n";
    check(Python, source, &[E1, E2, E7]);
    assert_eq!(evidence_lines(Python, source, E2), [11]);
    // On the function that is the loop itself, the tries are its passes,
    // and the check that passes is its goal.
    check(
        Python,
        "@retry(stop=stop_after_attempt(5))\ndef solve(task):\n    answer = llm.solve(task)\n    if not check(answer):\n        raise NotYet()\n    return answer\n",
        &[E1, E2],
    );
}

#[test]
fn nothing_left_unfinished_is_goal_met() {
    check(
        Python,
        "def main(seqs):\n    turn = 0\n    while True:\n        active = [s for s in seqs if not s['finished']]\n        outputs = generate(active)\n        for seq, out in zip(active, outputs):\n            if not find_query(out):\n                seq['finished'] = True\n        unfinished = [s for s in seqs if not s['finished']]\n        if not unfinished:\n            break\n        turn += 1\n        if turn >= MAX_TURN:\n            break\n",
        &[E1, E2],
    );
    // Work that is still unfinished is no reason to stop.
    check(
        Python,
        "def main(seqs):\n    while True:\n        unfinished = [s for s in seqs if not s['finished']]\n        if unfinished:\n            log(unfinished)\n        generate(unfinished)\n",
        &[],
    );
}

#[test]
fn timeouts_in_a_row_are_an_error_threshold_and_stalls_a_setting() {
    check(
        Python,
        "def run(self):\n    for i in range(self.max_iterations):\n        result = self.run_once(timeout=600)\n        if result.timed_out:\n            self.consecutive_timeouts += 1\n            if self.consecutive_timeouts >= self.max_timeouts:\n                return 'stagnation'\n            continue\n        self.consecutive_timeouts = 0\n",
        &[E2, E7],
    );
    // A whole run's timeout is still a wall clock.
    check(
        Python,
        "def run(self):\n    start = time.monotonic()\n    while True:\n        self.step()\n        if time.monotonic() - start > self.timeout:\n            break\n",
        &[E4],
    );
    // Magentic's rounds without progress, set on the framework's builder.
    check(
        Python,
        "async def main():\n    workflow = MagenticBuilder(participants=[researcher]).with_manager(max_round_count=20, max_stall_count=3).build()\n    async for event in workflow.run(task, stream=True):\n        print(event)\n",
        &[E2, E5],
    );
}

#[test]
fn a_callers_abort_signal_handed_to_each_request_is_a_stop_from_outside() {
    check(
        TypeScript,
        "export async function runAgent(prompt: string, options: { signal?: AbortSignal; maxTurns: number }) {\n  const messages = [{ role: \"user\", content: prompt }];\n  for (let turn = 0; turn < options.maxTurns; turn += 1) {\n    const response = await client.messages.create({ model, messages, signal: options.signal });\n    const calls = response.content.filter((b) => b.type === \"tool_use\");\n    if (calls.length === 0) return text(response);\n    messages.push(...(await runTools(calls)));\n  }\n  throw new Error(\"out of turns\");\n}\n",
        &[E1, E2, E8],
    );
    // A timeout made for each request is that request's, not the run's.
    check(
        TypeScript,
        "export async function runAgent(prompt: string) {\n  const messages = [{ role: \"user\", content: prompt }];\n  for (let turn = 0; turn < 10; turn += 1) {\n    const response = await client.messages.create({ model, messages, signal: AbortSignal.timeout(30000) });\n    if (response.stop_reason === \"end_turn\") return text(response);\n    messages.push(...(await runTools(response)));\n  }\n}\n",
        &[E1, E2],
    );
    // Nor is a controller of the paste that nothing aborts.
    check(
        TypeScript,
        "export async function runAgent(prompt: string) {\n  const controller = new AbortController();\n  const messages = [{ role: \"user\", content: prompt }];\n  for (let turn = 0; turn < 10; turn += 1) {\n    const response = await client.messages.create({ model, messages, signal: controller.signal });\n    if (response.stop_reason === \"end_turn\") return text(response);\n    messages.push(...(await runTools(response)));\n  }\n}\n",
        &[E1, E2],
    );
}

#[test]
fn a_line_read_after_a_printed_prompt_is_a_persons() {
    // `echo -ne "You: "` then `read -r input`: the /exit typed there is a
    // person's, not the work done.
    check(
        Bash,
        "while true; do\n    echo -ne \"You: \"\n    read -r input || break\n    [[ -z \"$input\" ]] && continue\n    [[ \"$input\" == \"/exit\" ]] && { echo \"Goodbye!\"; break; }\n    send_message \"$input\"\ndone\n",
        &[E6],
    );
    // A line read from a pipe, with no prompt before it, is the work's.
    check(
        Bash,
        "tail -f queue.txt | while true; do\n    read -r task || break\n    [[ \"$task\" == \"DONE\" ]] && break\n    claude -p \"$task\"\ndone\n",
        &[E1],
    );
}

#[test]
fn a_step_that_gives_back_its_final_output_is_goal_met() {
    check(
        Rust,
        "pub async fn run(&mut self) -> Result<String> {\n    loop {\n        if let Some(content) = self.step().await? {\n            return Ok(content);\n        }\n    }\n}\n",
        &[E1],
    );
    // An item taken from a stream is no answer.
    check(
        Rust,
        "pub async fn pump(&mut self) -> Result<()> {\n    loop {\n        if let Some(event) = self.events.recv().await {\n            self.handle(event);\n        } else {\n            return Ok(());\n        }\n    }\n}\n",
        &[],
    );
}

#[test]
fn an_error_that_comes_with_a_persons_choice_is_no_answer() {
    // (The person's choice ending the loop, `for action != apply`, is not
    // read yet: only the error beside it is checked here.)
    let report = audit(
        "package main\n\nfunc run() error {\n\tfor action != apply {\n\t\tcompletion, err := generate(prompt)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tfmt.Print(completion)\n\t\taction, err = userActionPrompt()\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif action == dontApply {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn nil\n}\n",
        None,
        Some(Go),
    );
    assert!(!report.found().contains(&E1), "{:?}", report.found());
}

#[test]
fn a_fantasy_agent_with_a_step_limit_is_capped() {
    check(
        Go,
        "package main\n\nfunc main() {\n\tagent := fantasy.NewAgent(\n\t\tmodel,\n\t\tfantasy.WithTools(tool),\n\t\tfantasy.WithStopConditions(fantasy.StepCountIs(10)),\n\t)\n\tresult, err := agent.Generate(ctx, fantasy.AgentCall{Prompt: \"hi\"})\n\tif err != nil {\n\t\tos.Exit(1)\n\t}\n\tfmt.Println(result.Response.Content.Text())\n}\n",
        &[E2],
    );
}

#[test]
fn a_name_that_holds_several_ways_out_is_read_part_by_part() {
    // `if (!willContinue) return` with the reasons to go on kept in one name
    // a line above: no tool calls is the goal met, the caller's abort a stop
    // from outside.
    let source = "async function run(messages, options) {\n  while (true) {\n    const reply = await model.chat(messages);\n    const toolCalls = reply.toolCalls ?? [];\n    const willContinue = toolCalls.length > 0 && !options.signal.aborted;\n    if (!willContinue) return reply.text;\n    messages.push(...(await runTools(toolCalls)));\n  }\n}\n";
    check(JavaScript, source, &[E1, E8]);
    assert_eq!(evidence_lines(JavaScript, source, E1), [6]);
    // Python: either way out, named `done`.
    check(
        Python,
        "def run(agent, max_turns):\n    turn = 0\n    while True:\n        reply = agent.step()\n        turn += 1\n        done = not reply.tool_calls or turn >= max_turns\n        if done:\n            break\n",
        &[E1, E2],
    );
    // A name that needs both parts is read whole: here it says nothing.
    check(
        Python,
        "def run(agent):\n    while True:\n        reply = agent.step()\n        quiet = not reply.tool_calls and reply.turn > 3\n        if quiet:\n            log(reply)\n        agent.update(reply)\n",
        &[],
    );
}

#[test]
fn the_values_of_a_text_template_set_nothing() {
    // `MAX_DRIVING_HOURS=` fills in a prompt: no wall clock, no cap.
    check(
        Python,
        "async def run_agent(agent, config):\n    query = config.template.format(LOCATION=config.location, MAX_DRIVING_HOURS=config.max_driving_hours, MAX_TURNS=10)\n    return await agent.run_async(query)\n",
        &[],
    );
    // The same names handed to a run bound it.
    check(
        Python,
        "async def run_agent(agent, config):\n    query = config.template.format(LOCATION=config.location)\n    return await agent.run_async(query, max_turns=10)\n",
        &[E2],
    );
}

#[test]
fn a_progress_bar_over_a_range_counts_passes() {
    // `tqdm(range(...))`, directly or through the name it was given.
    check(
        Python,
        "def run(self):\n    pbar = tqdm(range(1, self.max_iterations + 1), desc='Iterations')\n    for i in pbar:\n        result = self.run_claude(prompt)\n        if self.count_tasks().remaining == 0:\n            return 0\n    return 1\n",
        &[E1, E2],
    );
    check(
        Python,
        "def run(agent, n):\n    for turn in tqdm(range(n)):\n        reply = agent.step()\n        log(reply)\n",
        &[E2],
    );
    // A progress bar over a collection is a walk over it.
    check(
        Python,
        "def run(agent, prompts):\n    pbar = tqdm(prompts)\n    for prompt in pbar:\n        reply = agent.step(prompt)\n        log(reply)\n",
        &[],
    );
}

#[test]
fn go_ranges_over_a_count_not_over_a_slice_of_steps() {
    // Go 1.22 ranges over an integer: a turn cap.
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor i := range a.maxTurns {\n\t\ta.step(ctx, i)\n\t}\n\treturn nil\n}\n",
        &[E2],
    );
    // A slice of the pipeline's configured steps is walked once per pass.
    check(
        Go,
        "package agent\n\nfunc (l *Loop) runSteps(ctx context.Context) error {\n\tfor _, stepCfg := range l.config.Steps {\n\t\tif err := l.run(ctx, stepCfg); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n\treturn nil\n}\n",
        &[],
    );
}

#[test]
fn a_queue_of_prompts_running_dry_is_the_work_done() {
    check(
        Python,
        "async def run_agent(self, prompt):\n    current = prompt\n    while True:\n        async for event in self.agent.run(current):\n            self.render(event)\n        queued = self._dequeue_next_prompt()\n        if queued is None:\n            break\n        current = queued\n",
        &[E1],
    );
}

#[test]
fn a_round_that_had_no_tools_ends_the_run() {
    check(
        Python,
        "async def run_auto_rounds(self):\n    while True:\n        had_tools_this_round = False\n        async for chunk in self.engine.run_stream(self.messages):\n            if chunk.get('type') == 'round_complete':\n                had_tools_this_round = bool(chunk.get('had_tool_calls', False))\n                break\n        if not had_tools_this_round:\n            break\n",
        &[E1],
    );
}

#[test]
fn a_request_to_terminate_is_an_outside_stop_not_the_work_done() {
    // A flag set by a signal handler asks the loop to stop: E8, not E1.
    check(
        Python,
        "class Researcher:\n    def __init__(self):\n        self.should_terminate = threading.Event()\n        signal.signal(signal.SIGTERM, self._on_signal)\n\n    def _on_signal(self, signum, frame):\n        self.should_terminate.set()\n\n    def research(self):\n        while not self.should_terminate.is_set():\n            areas = self.llm.focus_areas(self.doc)\n            self.doc += self.search(areas)\n",
        &[E8],
    );
    // A flag the loop sets itself when the work is done stays goal met.
    check(
        Python,
        "def research(self):\n    finished = False\n    while not finished:\n        reply = self.llm.step(self.doc)\n        finished = reply.complete\n",
        &[E1],
    );
}

#[test]
fn timeouts_of_one_batch_or_one_step_and_rate_windows_bound_no_run() {
    // A helper bounds one batch of tool calls with its own context; the
    // agent's loop checks the task's context, which no timeout made.
    check(
        Go,
        "package agent\n\nfunc (t *Task) run() error {\n\tfor iter := 0; iter < t.max; iter++ {\n\t\tresp := t.ask()\n\t\tif err := t.executeBatch(resp.Calls); err != nil {\n\t\t\treturn err\n\t\t}\n\t}\n\treturn nil\n}\n\nfunc (t *Task) executeBatch(calls []Call) error {\n\tctx, cancel := context.WithTimeout(t.ctx, 5*time.Minute)\n\tdefer cancel()\n\tfor _, call := range calls {\n\t\tif err := checkContext(ctx); err != nil {\n\t\t\treturn err\n\t\t}\n\t\tt.exec(ctx, call)\n\t}\n\treturn nil\n}\n\nfunc checkContext(ctx context.Context) error {\n\tselect {\n\tcase <-ctx.Done():\n\t\treturn ctx.Err()\n\tdefault:\n\t\treturn nil\n\t}\n}\n",
        &[E2, E8],
    );
    // A closure that a step's helper makes bounds that step.
    check(
        Go,
        "package agent\n\nfunc (l *Loop) Run(ctx context.Context) error {\n\tfor i := 0; i < l.max; i++ {\n\t\tl.executeStep(ctx, i)\n\t}\n\treturn nil\n}\n\nfunc (l *Loop) executeStep(ctx context.Context, i int) error {\n\texec := func(c context.Context) error { return l.agent.Execute(c) }\n\tif l.timeout > 0 {\n\t\tinner := exec\n\t\texec = func(c context.Context) error {\n\t\t\ttimeoutCtx, cancel := context.WithTimeout(c, l.timeout)\n\t\t\tdefer cancel()\n\t\t\treturn inner(timeoutCtx)\n\t\t}\n\t}\n\treturn exec(ctx)\n}\n",
        &[E2],
    );
    // The same context made around the whole run bounds it.
    check(
        Go,
        "package agent\n\nfunc (l *Loop) Run(parent context.Context) error {\n\tctx, cancel := context.WithTimeout(parent, time.Hour)\n\tdefer cancel()\n\tfor {\n\t\tif ctx.Err() != nil {\n\t\t\treturn ctx.Err()\n\t\t}\n\t\tl.agent.Execute(ctx)\n\t}\n}\n",
        &[E4],
    );
    // A rate limit's sliding window spaces actions out.
    check(
        JavaScript,
        "async function main() {\n  const stamps = [];\n  while (true) {\n    const now = Date.now();\n    while (stamps.length && now - stamps[0] > rateWindowMs) stamps.shift();\n    const action = await agent.next();\n    stamps.push(now);\n    await env.apply(action);\n  }\n}\n",
        &[],
    );
}

#[test]
fn a_cancellation_the_code_ties_to_a_person_is_theirs() {
    // The error it throws names the user.
    check(
        TypeScript,
        "async function runAgent(signal?: AbortSignal) {\n  while (true) {\n    const reply = await llm.chat(messages, { signal });\n    if (!reply.toolCalls.length) return reply.text;\n    for (const call of reply.toolCalls) {\n      if (signal?.aborted) throw new UserAbortError();\n      messages.push(await run(call));\n    }\n  }\n}\n",
        &[E1, E6],
    );
    // The reason it records is a code that names the user.
    check(
        TypeScript,
        "class Runner {\n  cancel(): void {\n    this.cancelled = true;\n    this.state.abortReason = 'user_interrupt';\n  }\n  async runLoop() {\n    while (!this.cancelled) {\n      const result = await this.turn();\n      if (result.taskComplete) return { abortedReason: undefined };\n    }\n    return { abortedReason: 'user_interrupt' };\n  }\n}\n",
        &[E1, E6],
    );
    // A message for a reader that mentions the user ties nothing.
    check(
        Python,
        "async def run(self):\n    while True:\n        if self.cancel_event.is_set():\n            yield InterruptedEvent(message='Interrupted by user')\n            break\n        reply = await self.llm.step()\n        if not reply.tool_calls:\n            return\n",
        &[E1, E8],
    );
}

#[test]
fn ways_out_that_are_no_ways_of_their_own() {
    // The try ends by returning the report: its handler is on the way out.
    check(
        Python,
        "async def run(self):\n    while True:\n        content = await self.client.complete(self.trace)\n        output = parse(content)\n        if output.is_last:\n            try:\n                report = await self.build_report()\n                return report\n            except (asyncio.TimeoutError, asyncio.CancelledError) as e:\n                return f'Error: {e}'\n        self.trace.append(await self.execute(output))\n",
        &[E1],
    );
    // Without the return at the end of the try, the cancellation is a way out.
    check(
        Python,
        "async def run(self):\n    while True:\n        try:\n            content = await self.client.complete(self.trace)\n        except asyncio.CancelledError:\n            return None\n        self.trace.append(content)\n",
        &[E8],
    );
    // A budget that says stop is the budget cap.
    check(
        Rust,
        "fn run(&mut self) {\n    loop {\n        match check_budget(self.cost_usd, &self.budget) {\n            BudgetDecision::Stop { message } => {\n                warn(&message);\n                return;\n            }\n            BudgetDecision::Continue => {}\n        }\n        self.step();\n    }\n}\n",
        &[E3],
    );
    // A stopping function handed to the agent is a condition on its output.
    check(
        Python,
        "def run(self, task):\n    while True:\n        response = self.llm(task)\n        if self.stopping_func is not None and self.stopping_func(response):\n            break\n",
        &[E1],
    );
    // A progress record's work left is the work, not a comparison of passes.
    check(
        Python,
        "def run(self):\n    while True:\n        self.run_claude(self.prompt)\n        progress = self.count_tasks()\n        if progress.remaining == 0:\n            return 0\n",
        &[E1],
    );
}

#[test]
fn a_loop_that_starts_workers_counts_no_passes() {
    check(
        TypeScript,
        "async function start(options: Options) {\n  state.running = true;\n  for (let i = 0; i < options.concurrency; i++) {\n    void workerLoop(`worker-${i}`);\n  }\n}\n",
        &[],
    );
    check(
        Python,
        "def start(self, max_workers):\n    for _ in range(max_workers):\n        threading.Thread(target=self.worker).start()\n",
        &[],
    );
    // A count of passes stays a turn cap.
    check(
        Python,
        "def run(agent, max_steps):\n    for step in range(max_steps):\n        agent.step()\n",
        &[E2],
    );
}

#[test]
fn e6_a_line_typed_into_a_readline_interface_or_a_prompt_helper_of_the_paste() {
    // `for await (line of rl)` over standard input: `/exit` is what the
    // person typed, not the work done.
    check(
        TypeScript,
        "import * as readline from 'node:readline'\n\nexport async function repl(agent: Agent) {\n  const rl = readline.createInterface({ input: process.stdin, output: process.stdout })\n  for await (const raw of rl) {\n    const line = raw.trim()\n    if (line === '/exit') break\n    await agent.runTurn(line)\n  }\n}\n",
        &[E6],
    );
    // A helper of the paste that asks the question: its answer is typed.
    check(
        TypeScript,
        "async function getPrompt(): Promise<string> {\n  const rl = readline.createInterface({ input: process.stdin, output: process.stdout })\n  return await new Promise((accept) => rl.question('> ', accept))\n}\n\nexport async function chat(session: Session) {\n  while (true) {\n    const input = await getPrompt()\n    if (input === '.exit')\n      break\n    await session.prompt(input)\n  }\n}\n",
        &[E6],
    );
    // Decoy: a helper that also asks the person something but answers more
    // than their line (the responses, or nothing once none are pending).
    check(
        Python,
        "async def process_event_stream(stream):\n    requests = []\n    async for event in stream:\n        if event.request:\n            requests.append(event)\n    if not requests:\n        return None\n    return {r.id: input(r.prompt) for r in requests}\n\n\nasync def main(workflow):\n    pending = await process_event_stream(workflow.run_stream('go'))\n    while pending is not None:\n        pending = await process_event_stream(workflow.send_responses_streaming(pending))\n",
        &[E1],
    );
    // Decoy: a reader over a file is no person.
    check(
        TypeScript,
        "export async function replay(agent: Agent, file: string) {\n  const rl = readline.createInterface({ input: fs.createReadStream(file) })\n  for await (const line of rl) {\n    if (line === 'DONE') break\n    await agent.runTurn(line)\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn e1_nothing_still_active() {
    check(
        Python,
        "def rollout(policy, env, batch, max_turns):\n    active = list(range(len(batch)))\n    for turn in range(max_turns):\n        if len(active) == 0:\n            break\n        out = policy.generate([batch[i] for i in active])\n        done = env.step(out)\n        active = [i for i, d in zip(active, done) if not d]\n",
        &[E1, E2],
    );
    // Decoy: a switch someone else turns off.
    check(
        Python,
        "def serve(self):\n    while True:\n        if not self.active:\n            break\n        self.agent.step()\n",
        &[E8],
    );
}

#[test]
fn e6_ctrl_c_at_a_line_editor_s_prompt_is_the_person_s() {
    check(
        Rust,
        "fn repl(agent: &mut Agent) {\n    let mut rl = DefaultEditor::new().unwrap();\n    loop {\n        match rl.readline(\"> \") {\n            Ok(line) => agent.run_turn(&line),\n            Err(ReadlineError::Interrupted) => {\n                println!(\"Interrupted\");\n                break;\n            }\n            Err(err) => {\n                eprintln!(\"{err}\");\n            }\n        }\n    }\n}\n",
        &[E6],
    );
}

#[test]
fn e8_is_not_the_program_s_own_exit_nor_the_failure_of_a_call_handed_a_context() {
    // `except SystemExit`: the loop's own `/exit` command called sys.exit().
    check(
        Python,
        "def repl(agent):\n    while True:\n        try:\n            agent.run_turn()\n        except SystemExit:\n            break\n",
        &[],
    );
    // A planner handed something called a context failed: its error, not a
    // cancellation.
    check(
        Rust,
        "async fn run(&mut self, task: &str) -> Result<()> {\n    loop {\n        let plan = match self.planner.plan(task, Some(&current_context)).await {\n            Ok(p) => p,\n            Err(e) => return Err(e),\n        };\n        if plan.is_complete() {\n            break;\n        }\n        self.executor.execute(&plan).await?;\n    }\n    Ok(())\n}\n",
        &[E1],
    );
    // Go's cancelled context still is.
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor {\n\t\tif ctx.Err() != nil {\n\t\t\treturn ctx.Err()\n\t\t}\n\t\ta.step(ctx)\n\t}\n}\n",
        &[E8],
    );
}

#[test]
fn e1_a_judge_s_finding_on_this_pass_s_output() {
    check(
        Python,
        "def attack(self, target):\n    for _ in range(self.num_turns):\n        feedback = generate(judge_prompt(target.reply), Feedback, self.model)\n        if feedback.jailbroken:\n            break\n        target.send(improve(feedback.suggestion))\n",
        &[E1, E2],
    );
    // Decoys: what a person said, and a judge's refusal.
    check(
        Python,
        "def refine(draft):\n    while True:\n        user_feedback = input('Changes? ')\n        if user_feedback.lower() in ['y', 'yes']:\n            return draft\n        draft = llm.revise(draft, user_feedback)\n",
        &[E6],
    );
    check(
        Python,
        "def attack(self, target):\n    for _ in range(self.num_turns):\n        judge_res = generate(judge_prompt(target.reply), Judge, self.model)\n        if judge_res.refusal:\n            break\n        target.send(next_prompt())\n",
        &[E2],
    );
}

#[test]
fn handlers_of_a_loop_detector_s_and_a_run_clock_s_errors() {
    check(
        Python,
        "def demo(client):\n    for i in range(1000):\n        try:\n            client.chat(messages)\n        except agentbudget.LoopDetected:\n            break\n",
        &[E2, E5],
    );
    check(
        Python,
        "def run(self, task):\n    self.budget.start()\n    while True:\n        try:\n            reply = self.step(task)\n        except BudgetTimeoutError:\n            stop_reason = 'timeout'\n            break\n        if not reply.tool_uses:\n            break\n",
        &[E1, E4],
    );
    // A bare timeout may be one request's.
    check(
        Python,
        "def run(self, task):\n    while True:\n        try:\n            reply = self.step(task)\n        except TimeoutError:\n            break\n        if not reply.tool_uses:\n            break\n",
        &[E1],
    );
}

#[test]
fn a_person_s_cancel_by_its_answer_its_reason_or_its_key() {
    // A typed answer "cancel".
    check(
        Python,
        "def review(plan):\n    while True:\n        choice = input('approve, refine or cancel? ')\n        if choice == 'cancel':\n            return None\n        plan = llm.refine(plan, choice)\n",
        &[E6],
    );
    // A cancellation whose reason is the user, as a code.
    check(
        TypeScript,
        "class Task {\n  private controller = new AbortController();\n  stop() {\n    this.controller.abort('user-abort');\n  }\n  async run() {\n    while (!this.controller.signal.aborted) {\n      await this.step();\n    }\n  }\n}\n",
        &[E6],
    );
    // Decoy: a message for a reader ties nothing.
    check(
        Python,
        "async def run(self):\n    while True:\n        if self.cancel_event.is_set():\n            yield InterruptedEvent(message='Interrupted by user')\n            break\n        await self.step()\n",
        &[E8],
    );
    // A flag of the key itself.
    check(
        Python,
        "async def repl(agent):\n    while True:\n        was_plain_ctrl_c = await read_key()\n        if was_plain_ctrl_c:\n            break\n        await agent.turn()\n",
        &[E6],
    );
}

#[test]
fn clocks_of_one_request_and_controllers_named_for_a_clock_are_no_outside_stop() {
    // A controller named for the timeout that aborts it is the clock's.
    check(
        TypeScript,
        "export async function runTask(agent: Agent) {\n  const timeoutController = new AbortController();\n  setTimeout(() => timeoutController.abort(), 60_000);\n  for (let turn = 0; turn < 10; turn++) {\n    await agent.step({ signal: timeoutController.signal });\n  }\n}\n",
        &[E2],
    );
    // How long the first token may take is one request's limit.
    check(
        TypeScript,
        "export async function execute(props: Props) {\n  return runLoop({\n    maxIterations: 10,\n    maxTimeToFirstToken: props.options?.maxTimeToFirstToken,\n  });\n}\n",
        &[E2],
    );
}

#[test]
fn an_evaluator_s_approval_and_passes_that_did_nothing() {
    // The evaluators' approval of the critiques is the models' goal check
    // (E1), no person's (E6).
    check(
        Go,
        "package agent\n\nfunc (ge *GeneratorEvaluator) Run(ctx context.Context) (string, error) {\n\tfor i := 0; i < ge.maxRounds; i++ {\n\t\tdraft := ge.generate(ctx)\n\t\tcritiques := ge.evaluate(ctx, draft)\n\t\tif ge.isApproved(critiques) {\n\t\t\treturn draft, nil\n\t\t}\n\t}\n\treturn \"\", errTooManyRounds\n}\n",
        &[E1, E2],
    );
    // Decoy: a person's approval of the feedback is theirs, not the goal.
    check_absent(
        Python,
        "def review(drafts):\n    for draft in drafts:\n        choice = input(\"Approve? \")\n        if approves_issues(choice):\n            return draft\n",
        E1,
    );
    check(
        Python,
        "def main(agent, max_iterations):\n    consecutive_unproductive = 0\n    for i in range(max_iterations):\n        changed = agent.iterate()\n        consecutive_unproductive = 0 if changed else consecutive_unproductive + 1\n        if consecutive_unproductive >= 3:\n            break\n",
        &[E2, E5],
    );
}

#[test]
fn what_a_command_handler_answers_about_typed_input_is_the_person_s() {
    // A field of what was read, handed to a handler: its answer `exit` is
    // the person's, not the work being done.
    check(
        TypeScript,
        "async function main() {\n  while (true) {\n    let input: InputResult;\n    try {\n      input = await readline({ cwd });\n    } catch {\n      break;\n    }\n    const result = await handleCommand(input.command, input.args);\n    if (result.type === \"exit\") {\n      return;\n    }\n    await runAgent(input.text);\n  }\n}\n",
        &[E6],
    );
}

#[test]
fn a_countdown_set_to_zero_on_the_final_answer_ends_the_loop() {
    let source = "class Chat {\n  async iterate(): Promise<void> {\n    while (this.iterationSteps > 0) {\n      const response = await this.complete();\n      const { toolCalls, finalAnswer } = this.organize(response);\n      if (toolCalls.length) {\n        await this.callTools(toolCalls);\n        this.iterationSteps--;\n      } else {\n        this.answer = finalAnswer;\n        this.iterationSteps = 0;\n      }\n    }\n  }\n}\n";
    check(TypeScript, source, &[E1, E2]);
    // The countdown alone, run down each pass, stays a turn cap.
    check(
        TypeScript,
        "class Chat {\n  async iterate(): Promise<void> {\n    while (this.iterationSteps > 0) {\n      await this.complete();\n      this.iterationSteps--;\n    }\n  }\n}\n",
        &[E2],
    );
}

#[test]
fn a_last_step_and_a_reply_in_plain_text_are_the_work_done() {
    check(
        Python,
        "async def run(api, task_id):\n    steps_remaining = True\n    while steps_remaining:\n        step = await api.execute_agent_task_step(task_id=task_id)\n        if not step or step.is_last:\n            steps_remaining = False\n",
        &[E1],
    );
    check(
        Python,
        "def respond(self, message):\n    result = self.get_response(message)\n    while True:\n        if isinstance(result, str):\n            break\n        self.add_results(result)\n        result = self.get_response(None)\n    return result\n",
        &[E1],
    );
}

#[test]
fn a_handler_around_the_call_of_the_loop_s_function_ends_its_loop() {
    let source = "class Assistant:\n    def query(self, prompt):\n        stats = {'completed': False}\n        try:\n            stats = self._streamed_query(prompt)\n            stats['completed'] = True\n        except KeyboardInterrupt:\n            stats['message'] = '[Chat Interrupted]'\n        return stats\n\n    def _streamed_query(self, prompt):\n        for turn in range(self.max_turns):\n            reply = self.client.chat(prompt)\n            if not reply.tool_calls:\n                return {'reply': reply}\n            self.run_tools(reply.tool_calls)\n";
    check(Python, source, &[E1, E2, E6]);
    // A handler that catches nothing the rules read adds nothing.
    check(Python, &source.replace("KeyboardInterrupt", "ValueError"), &[E1, E2]);
}

#[test]
fn asking_whether_the_session_should_exit_is_a_stop_from_outside() {
    check(
        Python,
        "from agent_context import should_exit\n\ndef stream(self):\n    while True:\n        if should_exit(self.session_id):\n            break\n        self.step()\n",
        &[E8],
    );
}

#[test]
fn a_call_a_person_turned_down_ends_the_loop_as_theirs() {
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor turn := 0; turn < a.maxTurns; turn++ {\n\t\tresult := a.step(ctx)\n\t\tif result.ToolRejected {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn nil\n}\n",
        &[E2, E6],
    );
    // A filter's or a model's rejection is no person's.
    let filtered = "package agent\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor turn := 0; turn < a.maxTurns; turn++ {\n\t\tresult := a.step(ctx)\n\t\tif result.GuardrailRejected {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn nil\n}\n";
    check_absent(Go, filtered, E6);
}

#[test]
fn a_reply_with_no_code_to_run_is_the_answer() {
    check(
        Python,
        "class Coder:\n    def run(self, task, max_steps=10):\n        for step in range(max_steps):\n            reply = self.llm.chat(task)\n            code_blocks = self.extract_code_blocks(reply)\n            if not code_blocks:\n                return reply\n            task = self.execute(code_blocks)\n",
        &[E1, E2],
    );
}

#[test]
fn a_go_iterator_whose_consumer_stops_asking_ends_the_loop() {
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Run(ctx context.Context) iter.Seq2[*Message, error] {\n\treturn func(yield func(*Message, error) bool) {\n\t\tfor i := 0; i < a.maxIterations; i++ {\n\t\t\tmsg, err := a.model.Generate(ctx)\n\t\t\tif err != nil {\n\t\t\t\tyield(nil, err)\n\t\t\t\treturn\n\t\t\t}\n\t\t\tif !yield(msg, nil) {\n\t\t\t\treturn\n\t\t\t}\n\t\t}\n\t}\n}\n",
        &[E2, E8],
    );
}

#[test]
fn no_invocations_gathered_from_the_reply_is_the_work_done() {
    check(
        TypeScript,
        "export async function verify(ctx: Ctx) {\n  for (let turn = 0; turn < 12; turn++) {\n    const { content } = await ctx.client.complete({ messages: history });\n    const invocations: Invocation[] = [];\n    for (const part of content) {\n      if (part.type === 'text') finalText = part.text;\n      else if (part.kind === 'capability') invocations.push(part);\n    }\n    if (invocations.length === 0) break;\n    history.push(await run(invocations));\n  }\n}\n",
        &[E1, E2],
    );
}

#[test]
fn an_inner_counted_loop_s_initializer_resets_no_outer_counter() {
    // `i := 0` of the inner walk declares a new `i`: the outer loop's `i`
    // still counts every pass (a turn cap, not failures).
    check(
        Go,
        "package agent\n\nfunc (e *Engine) Run(ctx context.Context) error {\n\tfor i := 0; i < e.maxIter; i++ {\n\t\tresult, err := e.step(ctx)\n\t\tif err != nil {\n\t\t\tcontinue\n\t\t}\n\t\tfor i := 0; i < len(result.Calls); i++ {\n\t\t\te.run(result.Calls[i])\n\t\t}\n\t}\n\treturn nil\n}\n",
        &[E2],
    );
}

#[test]
fn a_field_s_declared_default_and_a_person_s_decline_are_no_outside_stop() {
    // A class field with its default sets nothing while the loop runs.
    let source = "class AgentOptions:\n    max_turns: int | None | NotGiven = NOT_GIVEN\n\n\nclass Agent:\n    def run(self, options):\n        max_turns = options.max_turns\n        turn = 0\n        while not max_turns or turn < max_turns:\n            turn += 1\n            reply = self.llm.chat()\n            if not reply.tool_calls:\n                return reply\n";
    check_absent(Python, source, E8);
    // A person who interrupted or turned a call down is no outside event.
    let declined = "def chat_loop(manager):\n    while True:\n        if has_recent_interrupt_or_decline(manager.log):\n            break\n        manager.step()\n\n\ndef has_recent_interrupt_or_decline(log):\n    return any(m.interrupted or m.declined for m in log[-3:])\n";
    check_absent(Python, declined, E8);
}

#[test]
fn keeping_the_context_short_is_no_budget() {
    // A helper that drops old messages until they fit: its loop trims and
    // the agent goes on.
    check(
        Python,
        "def trim_messages(messages, model):\n    limit = CTX_LIMIT[model]\n    while len(messages) > 1 and count_tokens(messages, model) > limit:\n        messages.pop(1)\n    return messages\n\n\ndef run(agent, max_turns=40):\n    for turn in range(max_turns):\n        messages = trim_messages(agent.messages, agent.model)\n        reply = agent.llm(messages)\n        if reply.strip().lower() == 'done':\n            break\n",
        &[E1, E2],
    );
    // A context overflow answered by compaction: what leaves is every other
    // error (`else: raise`), or the compaction failing, not the budget.
    check(
        Python,
        "async def run(self):\n    for turn in range(self.max_turns):\n        try:\n            reply = await self.think(messages)\n        except ChatError as e:\n            if 'context_length_exceeded' in str(e):\n                messages = await self.compact(messages)\n                continue\n            else:\n                raise\n        if not reply.tool_calls:\n            return reply\n",
        &[E1, E2],
    );
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Run(ctx context.Context) (string, error) {\n\tfor i := 0; i < a.maxIter; i++ {\n\t\tres, err := a.llm.Call(ctx, a.msgs)\n\t\tif err != nil {\n\t\t\tif apiErr.IsContextOverflow() {\n\t\t\t\tif compactErr := a.mgr.DoCompact(ctx); compactErr != nil {\n\t\t\t\t\treturn \"\", compactErr\n\t\t\t\t}\n\t\t\t\tcontinue\n\t\t\t}\n\t\t\treturn \"\", err\n\t\t}\n\t\tif len(res.ToolCalls) == 0 {\n\t\t\treturn res.Text, nil\n\t\t}\n\t}\n\treturn \"\", ErrMaxIterations\n}\n",
        &[E1, E2],
    );
    // Giving up when a compaction did not help is the budget's way out.
    check(
        TypeScript,
        "async function ask(agent: Agent) {\n  let iterations = 0;\n  while (iterations < agent.maxIterations) {\n    iterations++;\n    const data = await agent.complete();\n    if (data.error?.type === 'exceed_context_size_error') {\n      const summarized = await agent.summarizeToFit();\n      if (summarized) continue;\n      return data.error.message;\n    }\n    if (!data.toolCalls?.length) return data.text;\n  }\n}\n",
        &[E1, E2, E3],
    );
}

#[test]
fn a_budget_of_things_or_of_one_reply_is_no_spend() {
    // States explored against `budget.maxStates`: a size cap, no spend.
    check(
        TypeScript,
        "async function explore(opts: Opts) {\n  const budget = { maxIterations: 200, maxStates: 500, ...opts.budget };\n  let iteration = 0;\n  while (true) {\n    iteration++;\n    if (iteration >= budget.maxIterations) break;\n    if (graph.stateCount >= budget.maxStates) break;\n    const decision = await opts.oracle.decide(state);\n    if (decision.kind === 'stop') break;\n  }\n}\n",
        &[E1, E2],
    );
    // One reply's token cap weighed against another's.
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor turn := 0; turn < a.MaxTurns; turn++ {\n\t\treply, err := a.send(ctx)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif reply.Truncated && a.MaxTokensEscalate > a.MaxTokens {\n\t\t\treturn ErrTruncated\n\t\t}\n\t\tif len(reply.ToolUses) == 0 {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn nil\n}\n",
        &[E1, E2],
    );
}

#[test]
fn one_rate_limit_or_a_round_of_tests_is_no_error_threshold() {
    // The first rate-limit error returns at once: one failure, no limit.
    check(
        Python,
        "def run(self, task):\n    turn_count = 0\n    while turn_count < self.max_turns:\n        turn_count += 1\n        try:\n            response = self.client.messages.create(messages=messages)\n        except anthropic.RateLimitError:\n            return 'Error: API rate limit reached.'\n        if response.stop_reason == 'end_turn':\n            break\n",
        &[E1, E2],
    );
    // Rounds of tests inside a pass, counted against a multiple of the
    // tries: each round is a pass of the test loop, not a failure.
    check(
        Python,
        "def execute(self, max_tries=5):\n    round = 0\n    while round <= max_tries:\n        code = self.write_code()\n        test_round = 0\n        while test_round < 2 * max_tries and not error_flag:\n            time.sleep(1)\n            findings = self.check(code)\n            if not findings:\n                break\n            code = self.fix(code, findings)\n            test_round += 1\n        if not findings:\n            return code\n        round += 1\n",
        &[E1, E2],
    );
}

#[test]
fn a_hook_the_caller_plugged_in_can_stop_the_run() {
    // A pre-iteration hook's error ends the run.
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Generate(ctx context.Context) (*Response, error) {\n\tfor i := 0; i < a.maxIterations; i++ {\n\t\tfor _, hook := range a.hooks.PreIteration {\n\t\t\tif err := hook(ctx, hctx); err != nil {\n\t\t\t\treturn nil, err\n\t\t\t}\n\t\t}\n\t\tresp, err := a.llm.Generate(ctx, a.msgs)\n\t\tif err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t\tif len(resp.ToolCalls) == 0 {\n\t\t\treturn resp, nil\n\t\t}\n\t}\n\treturn nil, ErrMaxIterations\n}\n",
        &[E1, E2, E8],
    );
    // A lifecycle hook that answers stop.
    check(
        TypeScript,
        "async function run(agent: Agent, input: string) {\n  for (let i = 0; i < agent.maxIter; i++) {\n    if (agent.lifecycles?.onStart) {\n      const modified = await agent.lifecycles.onStart({ agent, input });\n      if (modified.stop) {\n        return result;\n      }\n    }\n    const output = await agent.infer(input);\n    if (output.toolCalls.length === 0) return output;\n  }\n}\n",
        &[E1, E2, E8],
    );
    // Callbacks asked whether the run may go on, through a helper.
    check(
        Python,
        "class Agent:\n    async def _on_run_continue(self, items):\n        for callback in self.callbacks:\n            if not await callback.on_run_continue(items):\n                return False\n        return True\n\n    async def run(self, messages):\n        while True:\n            should_continue = await self._on_run_continue(messages)\n            if not should_continue:\n                break\n            reply = await self.model(messages)\n            if not reply.tool_calls:\n                return reply\n",
        &[E1, E8],
    );
}

#[test]
fn a_setting_or_an_event_sink_is_no_hook_that_stops() {
    // `continue_on_fail` is a setting: a failed run ends the campaign.
    let campaign = "def campaign(prds, continue_on_fail=False):\n    for prd in prds:\n        code = run_ralph(prd)\n        if code != 0 and not continue_on_fail:\n            return code\n    return 0\n";
    check_absent(Python, campaign, E8);
    // A callback that receives stream events fails as a writer fails.
    let sink = "package agent\n\nfunc rounds(ctx context.Context, callback func(Event) error) error {\n\tfor len(calls) > 0 {\n\t\tfor ev := range stream(ctx) {\n\t\t\tif err := callback(ev); err != nil {\n\t\t\t\treturn err\n\t\t\t}\n\t\t}\n\t\tcalls = next(ctx)\n\t}\n\treturn nil\n}\n";
    check_absent(Go, sink, E8);
}

#[test]
fn a_run_handed_back_to_wait_for_a_person_is_theirs() {
    // The model's action asks the user; the loop returns for the answer.
    check(
        Python,
        "def run(self, task):\n    for step in range(self.max_steps):\n        action_name, description = self.parse(self.model(task))\n        if action_name == 'ask_user_question':\n            return description\n        if action_name == 'terminate':\n            return self.final_answer()\n",
        &[E1, E2, E6],
    );
    // A tool result that awaits the user ends the turn.
    check(
        TypeScript,
        "async function runTurn(args: Args) {\n  for (let step = 0; step < args.maxSteps; step++) {\n    const reply = await args.model(messages);\n    if (!reply.toolCalls.length) return reply.text;\n    for (const item of await runTools(reply.toolCalls)) {\n      if (item.result.awaitUser) {\n        return item.result.output;\n      }\n    }\n  }\n}\n",
        &[E1, E2, E6],
    );
    // Calls waiting for approval stop the stream.
    check(
        Python,
        "def call_stream(self, messages, max_steps=10):\n    for i in range(max_steps):\n        reply = self.llm(messages)\n        if not reply.tool_calls:\n            return reply\n        pending_approvals = []\n        for call in reply.tool_calls:\n            result = self.run_tool(call)\n            if result.status == Status.APPROVAL_REQUIRED:\n                pending_approvals.append(result)\n        if pending_approvals:\n            return pending_approvals\n",
        &[E1, E2, E6],
    );
}

#[test]
fn a_rust_matches_macro_asks_whether_the_person_typed_quit() {
    // The `!` of `matches!` negates nothing.
    check(
        Rust,
        "async fn repl(agent: &mut Agent) -> anyhow::Result<()> {\n    let mut lines = BufReader::new(tokio::io::stdin()).lines();\n    loop {\n        let Some(line) = lines.next_line().await? else {\n            break;\n        };\n        let prompt = line.trim();\n        if matches!(prompt, \"exit\" | \"quit\") {\n            break;\n        }\n        agent.turn(prompt).await?;\n    }\n    Ok(())\n}\n",
        &[E6],
    );
}

#[test]
fn a_reply_with_nothing_to_run_or_no_tool_outputs_is_the_answer() {
    // The generation does not end inside a code block: nothing to run.
    check(
        Python,
        "async def generate(self, request, max_code_executions=8):\n    for generation_index in range(max_code_executions):\n        output = await self.llm.generate(request)\n        if output.endswith(code_end) and output.rfind(code_begin) > output.rfind(code_end, 0, -1):\n            result = await self.execute(output)\n            request['prompt'] += result\n        else:\n            break\n    return output\n",
        &[E1, E2],
    );
    // Tool outputs gathered only from calls: none means the model answered.
    check(
        TypeScript,
        "async function run(client: Client, input: Item[]) {\n  let nextInput = input;\n  while (true) {\n    const response = await client.responses.create({ input: nextInput });\n    const toolOutputs: Item[] = [];\n    for (const item of response.output) {\n      if (item.type === 'function_call') toolOutputs.push(await call(item));\n    }\n    if (toolOutputs.length === 0) break;\n    nextInput = toolOutputs;\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn tests_that_pass_a_drained_inbox_and_a_round_that_reports_the_goal() {
    // `while returncode != 0:` is left when the tests pass.
    check(
        Python,
        "async def debug_loop(state):\n    returncode, stdout, stderr = run_in_sandbox(state)\n    while returncode != 0:\n        plan = diagnose(stdout, stderr)\n        state = apply(plan, state)\n        returncode, stdout, stderr = run_in_sandbox(state)\n    return state\n",
        &[E1],
    );
    // The inbox of queued inputs drained once shutdown is asked.
    check(
        Rust,
        "async fn drive(inner: Arc<Mutex<Inner>>, agent: Agent) {\n    loop {\n        let next = {\n            let mut inner = inner.lock().await;\n            if inner.shutdown && inner.inbox.is_empty() {\n                return;\n            }\n            inner.inbox.pop_front()\n        };\n        if let Some(input) = next {\n            agent.run(input).await;\n        }\n    }\n}\n",
        &[E1, E8],
    );
    // The round performed says whether it reached the goal.
    check(
        Python,
        "def run(self):\n    turn = 1\n    while turn <= self.max_turns and not self._got_root:\n        self._got_root = self.perform_round(turn)\n        turn += 1\n",
        &[E1, E2],
    );
}

#[test]
fn a_rust_loop_inside_a_stream_macro_is_read() {
    // `async_stream::stream! { ... }`: the grammar keeps the body as tokens;
    // the loop inside is the agent's, its exits found like any other.
    check(
        Rust,
        "impl Runner {\n    fn run<'a>(&'a self, messages: Vec<Message>) -> impl Stream<Item = Event> + 'a {\n        let max_turns = self.config.max_turns.unwrap_or(10);\n        Box::pin(async_stream::stream! {\n            let mut turns = 0;\n            loop {\n                if turns >= max_turns {\n                    break;\n                }\n                turns += 1;\n                let response = self.adapter.chat(&messages).await;\n                if response.tool_calls.is_empty() {\n                    yield Event::Done(response.text);\n                    return;\n                }\n                for call in response.tool_calls {\n                    yield Event::Tool(self.run_tool(call).await);\n                }\n            }\n        })\n    }\n}\n",
        &[E1, E2],
    );
    // `try_stream!` too, with a cancellation token handed in.
    check(
        Rust,
        "fn turns(agent: Agent, cancel: CancellationToken) -> impl Stream<Item = Result<Chunk>> {\n    try_stream! {\n        loop {\n            if cancel.is_cancelled() {\n                return;\n            }\n            let reply = agent.step().await?;\n            if reply.done {\n                break;\n            }\n            yield reply.chunk;\n        }\n    }\n}\n",
        &[E1, E8],
    );
}

#[test]
fn a_context_whatever_its_name_a_kill_callback_and_a_ctrl_c_that_shuts_down() {
    // `<-rctx.io.Done()` in a select: the caller's context, not the work.
    check(
        Go,
        "func (a *Agent) Run(ctx context.Context) (string, error) {\n\trctx := runContexts{io: ctx}\n\tfor i := 0; i < a.maxIterations; i++ {\n\t\tselect {\n\t\tcase <-rctx.io.Done():\n\t\t\treturn \"\", rctx.io.Err()\n\t\tdefault:\n\t\t}\n\t\tresp, err := a.provider.Complete(rctx.io, a.msgs)\n\t\tif err != nil {\n\t\t\treturn \"\", err\n\t\t}\n\t\tif len(resp.ToolCalls) == 0 {\n\t\t\treturn resp.Text, nil\n\t\t}\n\t}\n\treturn \"\", nil\n}\n",
        &[E1, E2, E8],
    );
    // A callable that says the task was killed.
    check(
        Python,
        "def agentic_loop(client, messages, is_killed):\n    for iteration in range(MAX_ITERATIONS):\n        if is_killed():\n            return 'killed'\n        reply = client.chat(messages)\n        if not reply.tool_calls:\n            return reply.content\n        messages += run_tools(reply.tool_calls)\n",
        &[E1, E2, E8],
    );
    // Ctrl-C whose handler shuts down: the person's (E6), not an outside
    // event, whatever the handler calls.
    check(
        JavaScript,
        "process.on('SIGINT', async () => {\n  await shutdown();\n  process.exit(0);\n});\nwhile (true) {\n  const text = await rl.question('you> ');\n  if (text === 'exit') break;\n  await agent.respond(text);\n}\n",
        &[E6],
    );
    // A pause signal handed in from outside.
    check(
        JavaScript,
        "async function runTurnLoop(agent, pauseSignal) {\n  while (true) {\n    if (pauseSignal.isPaused()) {\n      pauseSignal.reset();\n      break;\n    }\n    const reply = await agent.call();\n    if (reply.toolCalls.length === 0) break;\n    await agent.runTools(reply.toolCalls);\n  }\n}\n",
        &[E1, E8],
    );
}

#[test]
fn a_turn_that_came_back_whole_a_grader_that_passed_and_a_compaction_cap() {
    // The turn is not truncated: it finished on its own; compactions
    // exhausted while the context is over its limit end it on the window.
    check(
        Rust,
        "async fn run(&self, mut session: Session, query: &str) -> Result<Outcome> {\n    let mut turns = 0;\n    let mut compactions_performed = 0;\n    loop {\n        let response = self.agent.turn(&mut session, query).await?;\n        turns += 1;\n        if !response.truncated {\n            break;\n        }\n        if turns >= self.config.max_turns {\n            break;\n        }\n        if self.estimate_tokens(&session) >= self.config.threshold_tokens() {\n            if compactions_performed >= self.config.max_compactions {\n                break;\n            }\n            self.compact(&mut session).await?;\n            compactions_performed += 1;\n        }\n    }\n    Ok(Outcome::new(turns))\n}\n",
        &[E1, E2, E3],
    );
    // A grader's verdict that is not FAIL returns the work.
    check(
        Python,
        "def dispatch_with_retry(task, dispatch_fn, grade_fn, max_attempts=2):\n    for n in range(1, max_attempts + 1):\n        transcript = dispatch_fn(task)\n        report = grade_fn(transcript)\n        if report.verdict != 'FAIL':\n            return report\n        task = tighten(task, report)\n    return report\n",
        &[E1, E2],
    );
}

#[test]
fn a_reply_that_is_not_of_the_tool_kind_falls_through_to_the_answer() {
    check(
        Python,
        "def ask(self, user_message):\n    tool_steps = 0\n    while tool_steps < self.max_steps:\n        raw = self.model_client.complete(self.prompt(user_message))\n        kind, payload = self.parse(raw)\n        if kind == 'tool':\n            tool_steps += 1\n            self.run_tool(payload)\n            continue\n        if kind == 'retry':\n            continue\n        final = (payload or raw).strip()\n        return final\n    return 'stopped'\n",
        &[E1, E2],
    );
    // Leaving when the reply IS of the tool kind says nothing of the work.
    check_absent(
        Python,
        "def ask(self):\n    for _ in range(8):\n        kind, payload = self.parse(self.model.complete())\n        if kind == 'tool':\n            return payload\n",
        E1,
    );
}

#[test]
fn a_bound_whose_names_are_bare_but_whose_values_are_tokens_is_a_budget() {
    check(
        Rust,
        "async fn turn(&self, session: &mut Session) -> Result<Response> {\n    let mut iterations = 0;\n    let (mut total_input_tokens, mut total_output_tokens) = (0, 0);\n    loop {\n        iterations += 1;\n        if iterations > self.config.max_iterations {\n            return Ok(Response::truncated());\n        }\n        let response = self.backend.complete(session).await?;\n        total_input_tokens += response.usage.input_tokens;\n        total_output_tokens += response.usage.output_tokens;\n        if let Some(max) = self.config.max_total_tokens {\n            let total = total_input_tokens + total_output_tokens;\n            if total > max {\n                return Ok(Response::truncated());\n            }\n        }\n        if !response.has_tool_use() {\n            return Ok(Response::done(response.text()));\n        }\n    }\n}\n",
        &[E1, E2, E3],
    );
}

#[test]
fn go_methods_that_call_each_other_through_their_receiver_recurse() {
    // `a.streamResponse` calls `a.handleToolCalls`, which calls
    // `a.streamResponse` again: a loop until a reply has no tool calls.
    check(
        Go,
        "package agent\n\nfunc (a *AgentLoop) streamResponse(ctx context.Context) error {\n\treply, err := a.provider.Chat(ctx, a.history)\n\tif err != nil {\n\t\treturn err\n\t}\n\tif len(reply.ToolCalls) > 0 {\n\t\treturn a.handleToolCalls(ctx, reply.ToolCalls)\n\t}\n\treturn nil\n}\n\nfunc (a *AgentLoop) handleToolCalls(ctx context.Context, calls []ToolCall) error {\n\tfor _, tc := range calls {\n\t\ta.history = append(a.history, a.run(tc))\n\t}\n\treturn a.streamResponse(ctx)\n}\n",
        &[E1],
    );
}

#[test]
fn a_rust_let_else_guards_its_way_out() {
    // `let Some(request) = queued else { return; }`: the queue drained.
    check(
        Rust,
        "impl Controller {\n    async fn child_loop(&self, child_id: &str) {\n        loop {\n            let request = {\n                let mut state = self.state.write().await;\n                state.queue.pop_front()\n            };\n            let Some(request) = request else {\n                return;\n            };\n            self.run_child_once(child_id, request).await;\n        }\n    }\n}\n",
        &[E1],
    );
    // A game loop until someone wins.
    check(
        TypeScript,
        "async function play(board: Board, players: Player[]) {\n  let turn = 0;\n  while (!board.checkWinner() && !board.isFull()) {\n    const move = await players[turn % 2].model.nextMove(board);\n    board.makeMove(move);\n    turn++;\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn the_tools_saying_the_run_must_stop_is_the_work_done() {
    check(
        TypeScript,
        "export function freeRunner(toolChain: ToolChain, complete: Completer) {\n  return async function* runner(): AsyncGenerator<Message> {\n    const message = await complete();\n    yield message;\n    for await (const toolMessage of toolChain.run(message)) {\n      yield toolMessage;\n    }\n    if (!toolChain.mustStop()) {\n      yield* runner();\n    }\n  };\n}\n",
        &[E1],
    );
}

#[test]
fn a_check_passed_a_text_reply_no_replan_no_hand_off_and_no_more_needed() {
    // The output passed a check that returned no error.
    check(
        Go,
        "package fix\n\nfunc (t *Fixer) Fix(prompt string) (string, error) {\n\tfor i := 0; i < t.maxRetries; i++ {\n\t\tresp, err := t.engine.Chat(prompt)\n\t\tif err != nil {\n\t\t\treturn \"\", err\n\t\t}\n\t\tout := extract(resp.Text)\n\t\tif err := t.validateJSON(out); err != nil {\n\t\t\tcontinue\n\t\t}\n\t\treturn out, nil\n\t}\n\treturn \"\", errFailed\n}\n",
        &[E1, E2],
    );
    // The reply is of the text kind: the answer.
    check(
        Python,
        "def run(client, messages):\n    for _ in range(10):\n        response = client.parse(messages)\n        if response.type == 'text':\n            print(response.text)\n            break\n        messages.append(call_tool(response))\n",
        &[E1, E2],
    );
    // The joiner did not ask to plan again.
    check(
        Python,
        "def run(self, question):\n    for _ in range(self.max_replans):\n        plan = self.planner.plan(question)\n        answer, is_replan = self.join(self.execute(plan))\n        if not is_replan:\n            break\n    return answer\n",
        &[E1, E2],
    );
    // Not a hand-off to another agent: the final response.
    check(
        Python,
        "async def execute(self, agent, request):\n    while True:\n        response = await agent.run(request)\n        if not isinstance(response, AgentTransfer):\n            return response\n        agent = self.agents[response.target]\n",
        &[E1],
    );
    // The loop runs while more information is required.
    check(
        Python,
        "def research(self, question):\n    assessment = self.assess(question, [])\n    notes = []\n    while assessment.more_info_required:\n        notes.append(self.search(assessment.query))\n        assessment = self.assess(question, notes)\n    return notes\n",
        &[E1],
    );
    // A check that failed leaves with its error: not the work done.
    check_absent(
        Go,
        "package fix\n\nfunc (t *Fixer) Fix(prompt string) (string, error) {\n\tfor {\n\t\tout := t.engine.Chat(prompt)\n\t\tif err := t.validateJSON(out); err != nil {\n\t\t\treturn \"\", err\n\t\t}\n\t\tt.apply(out)\n\t}\n}\n",
        E1,
    );
}

#[test]
fn a_choice_to_cancel_at_a_review_step_is_the_persons() {
    check(
        Python,
        "def plan_loop(agent, on_plan):\n    for _ in range(5):\n        plan = agent.make_plan()\n        action = on_plan(plan)\n        if action == 'cancel':\n            return None\n        agent.revise(plan, action)\n",
        &[E2, E6],
    );
    check_absent(
        Python,
        "def plan_loop(agent, on_plan):\n    while True:\n        plan = agent.make_plan()\n        action = on_plan(plan)\n        if action == 'cancel':\n            return None\n",
        E8,
    );
    // An error named for an abort is no one's choice.
    check(
        JavaScript,
        "async function run(agent, signal) {\n  while (true) {\n    try {\n      const reply = await agent.step({ signal });\n      if (reply.toolCalls.length === 0) return reply.text;\n    } catch (error) {\n      if (error.name === 'AbortError') return null;\n      throw error;\n    }\n  }\n}\n",
        &[E1, E8],
    );
}

#[test]
fn a_rust_pass_that_goes_on_while_tools_are_called_ends_with_the_reply() {
    // `if let ... && !calls.is_empty() { ...; continue; }` then `return`:
    // the return runs once the model asked for nothing.
    check(
        Rust,
        "async fn run(client: &Client, mut messages: Vec<Message>) -> Result<String> {\n    loop {\n        let result = client.chat(messages.clone()).await?;\n        if let Some(ref tool_calls) = result.tool_calls\n            && !tool_calls.is_empty()\n        {\n            for tc in tool_calls {\n                messages.push(run_tool(tc).await);\n            }\n            continue;\n        }\n        return Ok(result.content);\n    }\n}\n",
        &[E1],
    );
    check(
        Rust,
        "async fn run(client: &Client, mut messages: Vec<Message>) -> Result<String> {\n    loop {\n        let result = client.chat(messages.clone()).await?;\n        if !result.tool_calls.is_empty() {\n            for tc in result.tool_calls {\n                messages.push(run_tool(tc).await);\n            }\n            continue;\n        }\n        return Ok(result.content);\n    }\n}\n",
        &[E1],
    );
}

#[test]
fn an_agent_loop_inside_a_walk_over_a_work_list_keeps_its_own_condition() {
    // The outer loop walks the files by index; the agent loop in it runs
    // while the coverage is below the desired one and the passes last.
    check(
        Go,
        "package gen\n\nfunc (g *Gen) Start() error {\n\tfor i := 0; i < len(g.Files); i++ {\n\t\titerations := 1\n\t\tfor g.cov.Current < g.cov.Desired && iterations <= g.maxIterations {\n\t\t\ttests := g.ai.GenerateTests(g.Files[i])\n\t\t\tg.run(tests)\n\t\t\titerations++\n\t\t}\n\t}\n\treturn nil\n}\n",
        &[E1, E2],
    );
}

#[test]
fn a_cancellation_the_code_ties_to_the_user_is_the_persons() {
    // A tool's result compared with the text its cancel gives.
    check(
        Python,
        "def run(self, task):\n    for step in range(self.max_steps):\n        reply = self.llm.chat(self.messages)\n        result = self.run_tool(reply.tool_call)\n        if str(result).strip() == \"Operation cancelled by user.\":\n            return \"Operation cancelled by user.\"\n        self.messages.append(result)\n",
        &[E2, E6],
    );
    check_absent(
        Python,
        "def run(self, task):\n    for step in range(self.max_steps):\n        reply = self.llm.chat(self.messages)\n        result = self.run_tool(reply.tool_call)\n        if str(result).strip() == \"Operation cancelled by user.\":\n            return \"Operation cancelled by user.\"\n        self.messages.append(result)\n",
        E8,
    );
    // The reason handed on when the session is cancelled names the user.
    check(
        Rust,
        "impl Runner {\n    async fn run(&self, mut session: Session) -> Outcome {\n        loop {\n            if session.is_cancelled() {\n                return self.complete(&mut session, CompletionReason::UserCancelled);\n            }\n            let reply = self.model.next(&session).await;\n            session.apply(reply);\n        }\n    }\n}\n",
        &[E6],
    );
    // A library's own wording of its abort, on an error, ties nothing.
    check_absent(
        JavaScript,
        "async function iterate(agent) {\n  while (true) {\n    try {\n      await agent.turn();\n    } catch (error) {\n      if (error?.message === 'Claude Code process aborted by user') return;\n      throw error;\n    }\n  }\n}\n",
        E6,
    );
}

#[test]
fn failed_tries_counted_against_a_limit_are_an_error_threshold() {
    // A try counted only when the pass got nothing back.
    check(
        Python,
        "def run(self, obs):\n    retry_count = 0\n    step_idx = 0\n    while not self.done and step_idx < self.max_steps:\n        action = self.predict(obs)\n        if action is None:\n            retry_count += 1\n            if retry_count > 3:\n                break\n            obs = 'Give a valid action.'\n        else:\n            obs = self.env.step(action)\n            step_idx += 1\n",
        &[E1, E2, E7],
    );
    // Counted just before the `if` whose `continue` spends the allowance;
    // the `break` after it runs once it is spent.
    check(
        JavaScript,
        "async function run(model, messages) {\n  let errorRetryCount = 0;\n  for (let step = 0; step < 20; step++) {\n    const reply = await model.generate(messages);\n    if (reply.error) {\n      errorRetryCount++;\n      log(`attempt ${errorRetryCount}`);\n      if (errorRetryCount <= MAX_ERROR_RETRIES) {\n        await sleep(1000 * errorRetryCount);\n        continue;\n      }\n      messages.push('Error: the model failed.');\n      break;\n    }\n    messages.push(reply.text);\n  }\n}\n",
        &[E2, E7],
    );
}

#[test]
fn a_measure_no_better_than_the_last_rounds_is_no_progress() {
    // This round's count of findings against the last round's.
    check(
        Python,
        "def refine(draft):\n    issues_before = review(draft)\n    for _ in range(8):\n        draft = revise(draft, issues_before)\n        issues_after = review(draft)\n        if len(issues_after) >= len(issues_before):\n            break\n        issues_before = issues_after\n    return draft\n",
        &[E2, E5],
    );
    // In a shell driver: the count of open tasks after the round against
    // the count before it.
    check(
        Bash,
        "PREV=$(grep -c '^- \\[ \\]' plan.md)\nwhile true; do\n  claude -p \"$(cat prompt.md)\"\n  AFTER=$(grep -c '^- \\[ \\]' plan.md)\n  if [ \"$AFTER\" -ge \"$PREV\" ]; then\n    break\n  fi\n  PREV=$AFTER\ndone\n",
        &[E5],
    );
    // Two different measures are not one measure over two rounds, in
    // any language.
    check_absent(
        JavaScript,
        "async function refine(draft) {\n  let warningsBefore = lint(draft).warnings;\n  while (true) {\n    draft = await revise(draft);\n    const errorsAfter = lint(draft).errors;\n    if (errorsAfter.length >= warningsBefore.length) {\n      break;\n    }\n  }\n}\n",
        E5,
    );
    check_absent(
        Python,
        "def refine(draft):\n    tokens_before = count(draft)\n    while True:\n        draft = revise(draft)\n        if len(draft.current_errors) > tokens_before:\n            break\n",
        E5,
    );
}

#[test]
fn gnu_timeouts_status_is_the_wall_clock() {
    check(
        Bash,
        "for i in $(seq 1 20); do\n  timeout 600 claude -p \"$(cat PROMPT.md)\"\n  rc=$?\n  if [ $rc -eq 124 ]; then\n    echo 'agent ran out of time'\n    exit 1\n  fi\ndone\n",
        &[E2, E4],
    );
    // Another status is not the timeout's.
    check_absent(
        Bash,
        "for i in $(seq 1 20); do\n  timeout 600 claude -p \"$(cat PROMPT.md)\"\n  rc=$?\n  if [ $rc -eq 2 ]; then\n    echo 'agent ran out of time'\n    exit 1\n  fi\ndone\n",
        E4,
    );
}

#[test]
fn a_person_answering_at_the_terminal_or_the_approval_step_can_stop_it() {
    // rich's prompt asks the person; answering no returns.
    check(
        Python,
        "from rich.prompt import Prompt\n\ndef run(self, task):\n    messages = [task]\n    while True:\n        reply = self.client.messages.create(messages=messages)\n        if reply.stop_reason != 'tool_use':\n            return reply\n        for call in reply.tool_calls:\n            answer = Prompt.ask(f'Run {call.name}?', choices=['y', 'n'])\n            if answer in ['n', 'no']:\n                return None\n            messages.append(self.execute(call))\n",
        &[E1, E6],
    );
    // A model asked a question is no person.
    check_absent(
        Python,
        "def run(self, task):\n    while True:\n        answer = self.agent.ask(task)\n        if answer in ['n', 'no']:\n            return None\n        task = answer\n",
        E6,
    );
    // The approval step's answer is to cancel.
    check(
        Python,
        "async def run(self):\n    while True:\n        reply = await self.model.complete(self.messages)\n        if not reply.tool_calls:\n            return reply\n        approval_result = await self.request_approval(reply.tool_calls)\n        if approval_result == 'cancel':\n            break\n        await self.execute(reply.tool_calls)\n",
        &[E1, E6],
    );
}

#[test]
fn a_way_out_that_names_the_budget_says_why_the_loop_ends() {
    // A hook's stop, left with the budget's error.
    check(
        Go,
        "package agent\n\nfunc Run(ctx context.Context, opt Options) (Result, error) {\n\tfor {\n\t\tfor _, h := range opt.Hooks.PreModel {\n\t\t\td := h(ctx, usage)\n\t\t\tif d.Stop {\n\t\t\t\treturn Result{StopReason: \"budget\"}, fmt.Errorf(\"%w: %s\", ErrBudget, d.Reason)\n\t\t\t}\n\t\t}\n\t\treply := chat(ctx, messages)\n\t\tmessages = append(messages, reply)\n\t}\n}\n",
        &[E3],
    );
    // The same stop left with another error is not the budget's.
    check_absent(
        Go,
        "package agent\n\nfunc Run(ctx context.Context, opt Options) (Result, error) {\n\tfor {\n\t\tfor _, h := range opt.Hooks.PreModel {\n\t\t\td := h(ctx, usage)\n\t\t\tif d.Stop {\n\t\t\t\treturn Result{}, ErrStopped\n\t\t\t}\n\t\t}\n\t\treply := chat(ctx, messages)\n\t\tmessages = append(messages, reply)\n\t}\n}\n",
        E3,
    );
    // A wrapped error that mentions a budget in its message, and a done
    // check whose result names one, are not the budget's.
    check_absent(
        Go,
        "package agent\n\nfunc (a *Agent) Loop(ctx context.Context) error {\n\tfor {\n\t\tlimits, err := a.loadBudget(ctx)\n\t\tif err != nil {\n\t\t\treturn fmt.Errorf(\"load budget exceeded the retries: %w\", err)\n\t\t}\n\t\ta.step(ctx, limits)\n\t}\n}\n",
        E3,
    );
    check_absent(
        Python,
        "def run(self):\n    while True:\n        reply = self.model.complete(self.messages)\n        if reply.done:\n            return Result(text=reply.text, budget_exceeded=False)\n        self.messages.append(reply)\n",
        E3,
    );
    // A context too long for the model, a second time, ends the loop.
    check(
        Go,
        "package agent\n\nfunc (a *Agent) Loop(ctx context.Context) error {\n\tfor {\n\t\tresp, err := a.llm.Chat(ctx, a.messages)\n\t\tif err != nil {\n\t\t\tif errors.Is(err, llm.ErrContextTooLong) {\n\t\t\t\treturn fmt.Errorf(\"context exhausted: %w\", err)\n\t\t\t}\n\t\t\treturn err\n\t\t}\n\t\ta.messages = append(a.messages, resp)\n\t}\n}\n",
        &[E3],
    );
    // A monitor of tokens asked whether everything should pause.
    check(
        TypeScript,
        "async function* execute(this: Leader, feature: Feature) {\n  while (true) {\n    if (this.tokenMonitor.shouldPauseAll()) {\n      yield { type: 'error', message: 'token limit reached' };\n      return;\n    }\n    await this.model.next(feature);\n  }\n}\n",
        &[E3],
    );
}

#[test]
fn a_persons_input_submitted_is_not_the_work_done() {
    check_absent(
        Rust,
        "async fn run(app: &mut App) -> Result<()> {\n    loop {\n        match tui.read_input().await {\n            Ok(tui::InputResult::Submitted(value)) => {\n                if tx.send(value).is_err() {\n                    break;\n                }\n            }\n            Ok(tui::InputResult::Exit) => break,\n            Err(e) => return Err(e),\n        }\n    }\n    Ok(())\n}\n",
        E1,
    );
}

#[test]
fn a_guard_against_looping_that_gives_up_is_no_progress() {
    check(
        TypeScript,
        "async function run(this: SubAgent, task: string) {\n  while (true) {\n    const reply = await this.model.complete(this.messages);\n    if (!reply.toolCalls.length) {\n      return reply.text;\n    }\n    const decision = this.loopGuard.observe(reply.toolCalls);\n    if (decision.exhausted) {\n      return 'Stopped: the same tool calls kept repeating.';\n    }\n    await this.execute(reply.toolCalls);\n  }\n}\n",
        &[E1, E5],
    );
    // A guard of the loop's turns is a cap, not a repeat detector.
    check_absent(
        TypeScript,
        "async function run(this: SubAgent, task: string) {\n  let turn = 0;\n  while (true) {\n    turn++;\n    if (this.loopGuard.maxTurnsReached(turn)) {\n      return 'Stopped.';\n    }\n    await this.step();\n  }\n}\n",
        E5,
    );
}

#[test]
fn a_state_change_a_tool_asks_for_is_no_stall() {
    check_absent(
        Rust,
        "impl Agent {\n    async fn run(&mut self) {\n        loop {\n            let reply = self.llm.send_message(&self.conversation).await;\n            let result = self.executor.execute(&reply).await;\n            match result.state_change {\n                Some(AgentStateChange::Done) => break,\n                Some(AgentStateChange::Wait) => continue,\n                None => {}\n            }\n        }\n    }\n}\n",
        E5,
    );
}

#[test]
fn a_run_marked_finalized_is_done() {
    check(
        Python,
        "async def run(self):\n    for i in range(self.max_steps):\n        if self._finalized:\n            break\n        await self.step()\n",
        &[E1, E2],
    );
}

#[test]
fn comments_between_a_skip_and_the_exit_do_not_hide_the_skip() {
    check(
        TypeScript,
        "async function generate(messages: Message[], maxRetries: number) {\n  let retries = 0;\n  while (retries <= maxRetries) {\n    const result = await llm(messages);\n    const verdict = await checkGuardrails(result);\n    if (!verdict.success) {\n      messages.push({ role: 'user', content: verdict.error });\n      retries++;\n      continue;\n    }\n    // every guardrail passed:\n    // apply what they changed\n    // and hand the reply back.\n    if (verdict.content !== undefined) {\n      result.content = verdict.content;\n    }\n    // the tool calls too,\n    // even an empty list.\n    const calls = verdict.toolCalls;\n    result.toolCalls = calls;\n    return result;\n  }\n  throw new Error('no valid reply');\n}\n",
        &[E1, E7],
    );
}

#[test]
fn a_step_that_asks_a_persons_approval_or_a_call_turned_down_hands_the_run_back() {
    check(
        TypeScript,
        "async function agentLoop(thread: Thread): Promise<Thread> {\n  while (true) {\n    const nextStep = await b.DetermineNextStep(thread.serializeForLLM());\n    thread.events.push({ type: 'tool_call', data: nextStep });\n    switch (nextStep.intent) {\n      case 'done_for_now':\n        return thread;\n      case 'request_approval_from_manager':\n        return thread;\n      default:\n        thread.events.push(await runTool(nextStep));\n    }\n  }\n}\n",
        &[E1, E6],
    );
    check(
        Python,
        "async def run(self):\n    while True:\n        outcome = await self.turn()\n        if outcome.stop_reason == 'tool_rejected':\n            return None\n        self.history.append(outcome)\n",
        &[E6],
    );
}

#[test]
fn empty_cases_fall_through_to_the_exit_below_them() {
    check(
        JavaScript,
        "async function loop(thread) {\n  for (;;) {\n    const step = await next(thread);\n    switch (step.intent) {\n      case 'done_for_now':\n      // the person is asked\n      case 'request_more_information':\n        return thread;\n      default:\n        thread.push(await run(step));\n    }\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn a_line_a_person_typed_is_not_the_work_done() {
    // reedline's answer when the person typed a line.
    check_absent(
        Rust,
        "fn repl(rl: &mut Reedline) {\n    loop {\n        match rl.read_line(&prompt) {\n            Ok(Signal::Success(line)) => {\n                if tx.send(line).is_err() {\n                    break;\n                }\n            }\n            Ok(Signal::CtrlD) => break,\n            _ => {}\n        }\n    }\n}\n",
        E1,
    );
}

#[test]
fn a_shell_loop_over_the_lines_of_one_reply_is_not_the_work_done() {
    // A shell loop over the tool calls of one reply, a line at a time.
    check_absent(
        Bash,
        "process_tool_calls() {\n  local tool_calls=$(echo \"$response\" | jq -c '.message.tool_calls[]')\n  while IFS= read -r tool_call; do\n    name=$(echo \"$tool_call\" | jq -r '.function.name')\n    run_tool \"$name\"\n  done <<< \"$tool_calls\"\n}\n",
        E1,
    );
}

#[test]
fn an_approval_by_a_majority_of_evaluators_is_no_person() {
    check_absent(
        Go,
        "package loop\n\nfunc (ge *GE) Run(ctx context.Context) (string, error) {\n\tfor {\n\t\tdraft := ge.generate(ctx)\n\t\tswitch ge.opts.approvalStrategy {\n\t\tcase ApprovalMajority:\n\t\t\tif ge.majority(draft) {\n\t\t\t\treturn draft, nil\n\t\t\t}\n\t\t}\n\t}\n}\n",
        E6,
    );
}

#[test]
fn a_name_whose_value_only_mentions_approval_is_asked_of_nobody() {
    check_absent(
        Python,
        "def run(self):\n    while True:\n        reply = self.model.complete(self.messages)\n        outcome = self.dispatch_approved_tool(reply.tool)\n        if not outcome:\n            break\n        self.messages.append(outcome)\n",
        E6,
    );
}

#[test]
fn the_time_left_run_down_to_nothing_is_the_wall_clock() {
    check(
        Python,
        "def develop(self):\n    deadline = time.monotonic() + TIMEOUT_DEVELOP\n    while True:\n        remaining = deadline - time.monotonic()\n        if remaining <= 0:\n            break\n        self.pipeline.run_cycle(timeout=remaining)\n",
        &[E4],
    );
}

#[test]
fn a_wait_on_a_thread_with_its_own_timeout_is_one_requests() {
    check_absent(
        Python,
        "class Agent:\n    def call_model(self, messages, timeout=60):\n        result = {}\n        thread = threading.Thread(target=lambda: result.update(reply=self.client.chat(messages)))\n        thread.start()\n        start = time.time()\n        while thread.is_alive():\n            if time.time() - start > timeout:\n                return None\n            thread.join(timeout=0.5)\n        return result['reply']\n\n    def run(self, task):\n        messages = [task]\n        while True:\n            reply = self.call_model(messages)\n            if reply is None:\n                return 'timed out'\n            if not reply.tool_calls:\n                return reply.text\n            messages.append(self.execute(reply.tool_calls))\n",
        E4,
    );
}

#[test]
fn too_many_invalid_actions_caught_to_leave_is_an_error_threshold() {
    check(
        Python,
        "def launch(self, max_steps=None):\n    while True:\n        try:\n            timestep = self.arena.step()\n        except TooManyInvalidActions as e:\n            print(e)\n            break\n        if timestep.terminal:\n            break\n",
        &[E1, E7],
    );
}

#[test]
fn the_contexts_size_past_its_cap_is_the_budget() {
    check(
        Rust,
        "fn run(messages: &mut Vec<Message>) {\n    let mut iteration = 0;\n    loop {\n        iteration += 1;\n        if iteration >= MAX_ITERATIONS {\n            break;\n        }\n        let context_size: usize = messages.iter().map(|m| m.content.len()).sum();\n        if context_size > MAX_CONTEXT_CHARS {\n            break;\n        }\n        let reply = call_model(messages);\n        messages.push(reply);\n    }\n}\n",
        &[E2, E3],
    );
    // A loop that drops the oldest message until the context fits trims
    // and goes on.
    check_absent(
        Python,
        "def fit(context):\n    while len(context) > MAX_CONTEXT_CHARS:\n        context.pop(0)\n    return context\n",
        E3,
    );
}

#[test]
fn a_framework_run_capped_by_an_option_or_a_setter_has_a_turn_cap() {
    check(
        Go,
        "package main\n\nfunc main() {\n\tagent := react.New(llm, tools)\n\tagent.SetMaxIterations(10)\n\tfor scanner.Scan() {\n\t\tanswer, err := agent.Run(ctx, scanner.Text())\n\t\tif err != nil {\n\t\t\tlog.Fatal(err)\n\t\t}\n\t\tfmt.Println(answer)\n\t}\n}\n",
        &[E2],
    );
}

#[test]
fn an_option_of_the_agents_cap_is_a_turn_cap() {
    check(
        Go,
        "package main\n\nfunc main() {\n\tagent := agents.New(llm, agents.WithMaxSteps(10))\n\tfor scanner.Scan() {\n\t\tfmt.Println(agent.Run(ctx, scanner.Text()))\n\t}\n}\n",
        &[E2],
    );
}

#[test]
fn a_cap_of_the_frameworks_loops_is_a_turn_cap() {
    check(
        TypeScript,
        "async function main() {\n  const result = await runAgentLoop({ model, tools, maxLoops: 5 });\n  console.log(result.text);\n}\n",
        &[E2],
    );
}

#[test]
fn a_flag_set_two_calls_below_the_loop_is_the_loops_own_decision() {
    // `run_planning` is called in the loop; the method it calls sets the
    // flag when nothing is left to do: goal met, nothing from outside.
    let source = "class Runner:\n    def run(self):\n        while not self.stop_flag:\n            self.run_planning()\n            self.turns += 1\n            if self.turns >= self.max_turns:\n                self.stop_flag = True\n\n    def run_planning(self):\n        plan = self.planner.plan()\n        self.postprocess(plan)\n\n    def postprocess(self, plan):\n        if plan.is_final:\n            self.stop_flag = True\n";
    check(Python, source, &[E1, E2]);
    // Set by a method the loop never calls, it is a stop from outside.
    let outside = "class Runner:\n    def run(self):\n        while not self.stop_flag:\n            self.step()\n\n    def stop(self):\n        self.stop_flag = True\n";
    check(Python, outside, &[E8]);
}

#[test]
fn a_context_handed_to_a_completion_check_is_no_cancellation() {
    check(
        Python,
        "def run(self, ctx):\n    for step in range(self.max_steps):\n        parsed = self.parse(self.model.generate(ctx.messages))\n        if self.strategy.is_done(parsed, ctx):\n            return parsed\n",
        &[E1, E2],
    );
    // The context's own answer still is.
    check(
        Go,
        "package a\n\nfunc (a *A) Run(ctx context.Context) error {\n\tfor {\n\t\tif ctx.Err() != nil {\n\t\t\treturn ctx.Err()\n\t\t}\n\t\ta.step(ctx)\n\t}\n}\n",
        &[E8],
    );
}

#[test]
fn rethrowing_every_error_but_the_abort_is_no_external_event() {
    check_absent(
        TypeScript,
        "async function repl(rl) {\n  while (true) {\n    const line = await next(rl);\n    try {\n      await agent.run(line);\n    } catch (error) {\n      if (!isAbortError(error)) {\n        throw error;\n      }\n    }\n  }\n}\n",
        E8,
    );
    // Leaving on the abort is one.
    check(
        TypeScript,
        "async function run(agent) {\n  while (true) {\n    try {\n      await agent.step();\n    } catch (error) {\n      if (isAbortError(error)) {\n        return;\n      }\n    }\n  }\n}\n",
        &[E8],
    );
}

#[test]
fn kill_dash_zero_asks_whether_a_process_lives() {
    check_absent(
        Bash,
        "#!/bin/bash\nclaude -p \"$PROMPT\" &\nAGENT_PID=$!\nwhile true; do\n  if ! kill -0 \"$AGENT_PID\" 2>/dev/null; then\n    break\n  fi\n  sleep 5\ndone\n",
        E8,
    );
}

#[test]
fn a_stop_asked_of_the_reply_is_no_external_event() {
    check(
        Python,
        "class Orchestrator:\n    def run(self):\n        while not self.done:\n            self.step()\n\n    def step(self):\n        agent_msg = self.agent.generate_next_message(self.message)\n        if self.agent.is_stop(agent_msg):\n            self.done = True\n        self.message = agent_msg\n",
        &[E1],
    );
}

#[test]
fn an_interval_between_passes_is_no_wall_clock() {
    check_absent(
        Python,
        "def run():\n    scheduler = Scheduler(max_interval_minutes=config.max_interval_minutes)\n    while True:\n        agent.run_cycle()\n        scheduler.wait()\n",
        E4,
    );
}

#[test]
fn a_timeout_around_one_request_bounds_the_request() {
    check_absent(
        Rust,
        "async fn run(&mut self) -> Result<(), AgentError> {\n    loop {\n        let req = self.request();\n        let res = match timeout(Duration::from_secs(self.timeout_secs), self.provider.infer(&req)).await {\n            Ok(res) => res?,\n            Err(_) => return Err(AgentError::Timeout),\n        };\n        if res.tool_calls.is_empty() {\n            return Ok(());\n        }\n    }\n}\n",
        E4,
    );
}

#[test]
fn a_context_with_a_timeout_made_in_each_pass_bounds_the_pass() {
    let per_pass = "package a\n\nfunc (e *E) Run(ctx context.Context) error {\n\tfor {\n\t\ttimeoutCtx, cancel := context.WithTimeout(ctx, e.streamTimeout)\n\t\tstream := e.model.Stream(timeoutCtx)\n\t\tfor {\n\t\t\tselect {\n\t\t\tcase chunk, ok := <-stream:\n\t\t\t\tif !ok {\n\t\t\t\t\tcancel()\n\t\t\t\t\treturn nil\n\t\t\t\t}\n\t\t\t\te.add(chunk)\n\t\t\tcase <-timeoutCtx.Done():\n\t\t\t\tcancel()\n\t\t\t\treturn timeoutCtx.Err()\n\t\t\t}\n\t\t}\n\t}\n}\n";
    check_absent(Go, per_pass, E4);
    // Made once around the loop, it bounds the run.
    let around = "package a\n\nfunc (e *E) Run(ctx context.Context) error {\n\trunCtx, cancel := context.WithTimeout(ctx, e.limit)\n\tdefer cancel()\n\tfor {\n\t\tif runCtx.Err() != nil {\n\t\t\treturn runCtx.Err()\n\t\t}\n\t\te.step(runCtx)\n\t}\n}\n";
    check(Go, around, &[E4]);
}

#[test]
fn a_timeout_in_a_callback_written_in_the_loop_bounds_one_request() {
    check_absent(
        Go,
        "package a\n\nfunc (e *E) Run(ctx context.Context) error {\n\tfor round := 0; round < e.maxRounds; round++ {\n\t\tresp, err := validator.Retry(ctx, func(ctx context.Context) (*Resp, error) {\n\t\t\tretryCtx, cancel := context.WithTimeout(ctx, e.streamTimeout)\n\t\t\tdefer cancel()\n\t\t\treturn e.model.Request(retryCtx)\n\t\t})\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\te.apply(resp)\n\t}\n\treturn nil\n}\n",
        E4,
    );
}

#[test]
fn a_branch_compared_with_its_base_is_no_stall_check() {
    // `git diff --quiet main...feature`: is there anything to review at all.
    check_absent(
        Bash,
        "#!/bin/bash\nfor round in $(seq 1 \"$MAX_ROUNDS\"); do\n  if git diff --quiet \"$TARGET_BRANCH...$CURRENT_BRANCH\"; then\n    echo 'nothing to review'\n    break\n  fi\n  codex exec \"review and fix\"\ndone\n",
        E5,
    );
    // The work tree after a pass is.
    check(
        Bash,
        "#!/bin/bash\nwhile true; do\n  claude -p \"$PROMPT\"\n  if git diff --quiet; then\n    break\n  fi\n  git commit -am wip\ndone\n",
        &[E5],
    );
}

#[test]
fn a_repetition_detectors_setting_is_not_its_exit() {
    // The detector's error is caught and the loop goes on.
    check_absent(
        Python,
        "def run(task):\n    loop_guard = LoopGuard(max_repeats=3, window=8)\n    for step in range(MAX_STEPS):\n        try:\n            reply = client.chat(messages, guards=[loop_guard])\n        except LoopDetected:\n            messages.append(nudge())\n            continue\n        if reply.stop_reason == 'end_turn':\n            return reply\n",
        E5,
    );
    // Caught to leave, it is one.
    check(
        Python,
        "def run(task):\n    loop_guard = LoopGuard(max_repeats=3, window=8)\n    for step in range(MAX_STEPS):\n        try:\n            reply = client.chat(messages, guards=[loop_guard])\n        except LoopDetected:\n            break\n        messages.append(reply)\n",
        &[E2, E5],
    );
}

#[test]
fn a_loop_that_calls_nothing_is_no_agents_turn_cap() {
    // The helper's walk to the common prefix is bounded; the agent's loop
    // is not.
    let source = "def common_prefix(names):\n    prefix = names[0]\n    for n in names[1:]:\n        i = 0\n        cap = min(len(prefix), len(n))\n        while i < cap and prefix[i] == n[i]:\n            i += 1\n        prefix = prefix[:i]\n    return prefix\n\nasync def drive(runtime):\n    async for event in runtime.events():\n        if event.kind == 'final':\n            return event.text\n";
    check_absent(Python, source, E2);
    // A loop that calls the model is one.
    check(
        Python,
        "def run():\n    i = 0\n    while i < 10:\n        reply = llm.chat(messages)\n        i += 1\n",
        &[E2],
    );
}

#[test]
fn a_score_named_by_its_key_reaching_its_target_is_goal_met() {
    check(
        Python,
        "def chain_refine(self, query, max_steps=5):\n    for step_num in range(max_steps):\n        result = self.handle_query(query)\n        if result.get('confidence', 0) > 0.9:\n            break\n        query = 'Refine: ' + query\n",
        &[E1, E2],
    );
}

#[test]
fn nothing_ready_to_run_is_the_plan_drained() {
    check(
        Python,
        "async def execute(self):\n    while True:\n        ready_nodes = self.get_ready_nodes()\n        if not ready_nodes:\n            break\n        await asyncio.gather(*[self.execute_node(n) for n in ready_nodes])\n",
        &[E1],
    );
}

#[test]
fn a_graphs_human_confirm_step_waits_for_a_person() {
    // In the `else` of the check, the way out is the person's typed quit:
    // the next step's name says nothing of the work being done.
    check(
        Python,
        "async def chat(app):\n    while True:\n        if app.get_next_action().name == 'human_confirm':\n            answer = input('Allow? (y/n): ')\n            await app.step(answer)\n        else:\n            prompt = input('> ')\n            if prompt in ['exit', 'quit']:\n                break\n            await app.step(prompt)\n",
        &[E6],
    );
    check(
        Python,
        "async def chat(app):\n    while True:\n        if app.get_next_action().name == 'human_confirm':\n            return app.state\n        await app.step()\n",
        &[E6],
    );
}

#[test]
fn a_cap_set_to_infinity_is_no_cap() {
    check(
        TypeScript,
        "const MAX_AGENT_STEPS = Infinity;\n\nasync function run(messages) {\n  let step = 0;\n  while (step < MAX_AGENT_STEPS) {\n    step++;\n    const reply = await client.chat(messages);\n    if (!reply.toolCalls.length) return reply.text;\n  }\n}\n",
        &[E1],
    );
    check(
        Python,
        "MAX_TURNS = math.inf\n\ndef run():\n    turn = 0\n    while turn < MAX_TURNS:\n        turn += 1\n        reply = llm.chat(messages)\n        if not reply.tool_calls:\n            return reply\n",
        &[E1],
    );
    // A number is one.
    check(
        TypeScript,
        "const MAX_AGENT_STEPS = 20;\n\nasync function run(messages) {\n  let step = 0;\n  while (step < MAX_AGENT_STEPS) {\n    step++;\n    const reply = await client.chat(messages);\n    if (!reply.toolCalls.length) return reply.text;\n  }\n}\n",
        &[E1, E2],
    );
}

#[test]
fn the_attempts_of_a_retry_loop_inside_are_no_turn_cap() {
    // The raise leaves the agent's loop too, but what it counts is the
    // retries of one model call.
    check(
        Python,
        "def run(self):\n    while True:\n        for attempt in range(self.max_retries):\n            try:\n                reply = self.client.messages.create(messages=self.history)\n                break\n            except RateLimitError:\n                if attempt == self.max_retries - 1:\n                    raise\n                time.sleep(2 ** attempt)\n        if reply.stop_reason == 'end_turn':\n            return reply\n        self.history.append(self.run_tools(reply))\n",
        &[E1, E7],
    );
}

#[test]
fn a_result_saying_the_person_declined_is_their_refusal() {
    check(
        Python,
        "async def solve(self, task):\n    for step in range(self.max_iters):\n        result = await self.execute_action(task, step)\n        if 'User declined to execute tool' in result.error:\n            break\n",
        &[E2, E6],
    );
}

#[test]
fn a_transcript_grown_past_its_size_is_a_context_limit() {
    check(
        JavaScript,
        "async function runAgentTask(task) {\n  const messages = [task];\n  for (;;) {\n    const reply = await model.chat(messages);\n    messages.push(reply);\n    if (!reply.toolCalls.length) return reply.text;\n    if (JSON.stringify(messages).length > maxChars) {\n      break;\n    }\n  }\n}\n",
        &[E1, E3],
    );
}

#[test]
fn the_last_attempt_of_a_request_retried_is_an_error_threshold() {
    check(
        JavaScript,
        "async function callModel(messages, maxRetries) {\n  for (let attempt = 1; attempt <= maxRetries; attempt++) {\n    try {\n      return await client.chat(messages);\n    } catch (error) {\n      if (attempt === maxRetries) {\n        throw error;\n      }\n      await sleep(1000 * attempt);\n    }\n  }\n}\n\nasync function run(messages) {\n  while (true) {\n    const reply = await callModel(messages, 3);\n    if (!reply.toolCalls.length) return reply.text;\n    messages.push(...(await runTools(reply.toolCalls)));\n  }\n}\n",
        &[E1, E7],
    );
}

#[test]
fn a_cap_that_falls_back_to_infinity_is_still_a_cap() {
    check(
        TypeScript,
        "async function run(messages, opts) {\n  const maxSteps = opts.maxSteps ?? Infinity;\n  let step = 0;\n  while (step < maxSteps) {\n    step++;\n    const reply = await client.chat(messages);\n    if (!reply.toolCalls.length) return reply.text;\n  }\n}\n",
        &[E1, E2],
    );
}

#[test]
fn a_timeout_given_to_each_task_of_a_walk_bounds_its_run() {
    check(
        Go,
        "package a\n\nfunc (a *A) RunAll(ctx context.Context, tasks []Task) {\n\tfor _, task := range tasks {\n\t\ttaskCtx, cancel := context.WithTimeout(ctx, a.perTask)\n\t\tfor {\n\t\t\tif taskCtx.Err() != nil {\n\t\t\t\tbreak\n\t\t\t}\n\t\t\ta.step(taskCtx, task)\n\t\t}\n\t\tcancel()\n\t}\n}\n",
        &[E4],
    );
}

#[test]
fn a_loop_that_calls_nothing_keeps_its_other_exits() {
    // A value received from a channel is no call; beside a loop that calls
    // the model, the final reply still ends it (its bound is read as a
    // computation's: a known limit of the rule).
    let source = "package a\n\nfunc (a *A) produce() {\n\tfor {\n\t\ta.replies <- a.model.Generate(a.messages)\n\t}\n}\n\nfunc (a *A) Run() Event {\n\tgo a.produce()\n\tfor i := 0; i < a.maxTurns; i++ {\n\t\tev := <-a.replies\n\t\tif ev.Final {\n\t\t\treturn ev\n\t\t}\n\t}\n\treturn Event{}\n}\n";
    let found = audit(source, None, Some(Go)).found();
    assert!(found.contains(&E1), "{found:?}");
}

#[test]
fn a_stop_reached_without_a_condition_stays_a_stop_from_outside() {
    // `stop()` is also the host's; the loop calls it from its error
    // handler, under no guard of its own.
    check(
        TypeScript,
        "class Runner {\n  async run() {\n    while (this.running) {\n      try {\n        await this.step();\n      } catch (e) {\n        this.fail(e);\n      }\n    }\n  }\n  fail(e) {\n    this.emit('error', e);\n    this.stop();\n  }\n  stop() {\n    this.running = false;\n  }\n}\n",
        &[E8],
    );
}

#[test]
fn a_database_refusing_a_user_is_no_persons_refusal() {
    check_absent(
        Python,
        "def run():\n    for attempt in range(5):\n        try:\n            reply = llm.chat(messages)\n        except Exception as e:\n            if 'Access denied for user' in str(e):\n                break\n",
        E6,
    );
}

#[test]
fn a_flag_turned_on_deeper_in_the_pass_speaks_through_its_guards() {
    // `if halted: break` first thing in the round; the flag is turned on
    // two walks down, once for the spend and once for the failures.
    let source = "def run(tasks, budget):\n    halted = False\n    spent = 0\n    failures = 0\n    for round_no in range(10):\n        if halted:\n            break\n        for task in tasks:\n            reply = llm.chat(task)\n            spent += reply.cost\n            if spent >= budget:\n                halted = True\n                break\n            if reply.error:\n                failures += 1\n                if failures >= 3:\n                    halted = True\n                    break\n";
    check(Python, source, &[E2, E3, E7]);
    assert!(evidence_lines(Python, source, E7).contains(&16), "{:?}", evidence_lines(Python, source, E7));
}

#[test]
fn e1_no_next_stream_handed_over() {
    check(
        TypeScript,
        "async function* run(first) {\n  let current = first;\n  while (true) {\n    let nextStream = null;\n    for await (const msg of current) {\n      if (msg.type === 'stream') nextStream = msg.stream;\n      else yield msg;\n    }\n    if (!nextStream) break;\n    current = nextStream;\n  }\n}\n",
        &[E1],
    );
}

#[test]
fn e1_a_score_equal_to_its_maximum() {
    check(
        Rust,
        "fn run(&self, cycles: usize) {\n    for _ in 0..cycles {\n        match self.run_cycle() {\n            Ok(result) => {\n                if result.score == result.max_score {\n                    break;\n                }\n            }\n            Err(e) => warn!(\"{e}\"),\n        }\n    }\n}\n",
        &[E1, E2],
    );
}

#[test]
fn e6_the_escape_keys_watcher_cancelled() {
    let source = "async def goal_loop(session, esc):\n    while True:\n        reply = await session.turn()\n        if esc.cancelled.is_set():\n            return reply\n";
    check(Python, source, &[E6]);
}

#[test]
fn e5_a_loop_checks_verdict_to_abort() {
    let source = "fn run(&mut self, detector: &mut LoopDetector) -> Result<(), AgentError> {\n    loop {\n        let decision = self.llm.decide()?;\n        let sig: Vec<String> = decision.calls.iter().map(|c| c.name.clone()).collect();\n        match detector.check(&sig) {\n            LoopCheckResult::Abort => return Err(AgentError::Stuck),\n            LoopCheckResult::Ok => {}\n        }\n        self.act(decision);\n    }\n}\n";
    check_absent(Rust, source, E8);
    assert!(audit(source, None, Some(Rust)).found().contains(&E5));
    // A health check of the loop's own process is no loop detector.
    let health = source
        .replace("detector: &mut LoopDetector", "monitor: &Monitor")
        .replace("detector.check(&sig)", "monitor.check_loop_health(&sig)")
        .replace("LoopCheckResult::", "LoopHealthCheck::");
    check_absent(Rust, &health, E5);
}

#[test]
fn tasks_in_progress_are_no_progress_check() {
    check_absent(
        Python,
        "def execute(project):\n    while True:\n        result = project.step()\n        status = result.get('project_status', {})\n        in_progress = status.get('in_progress', 0)\n        if in_progress == 0:\n            break\n",
        E5,
    );
}

#[test]
fn a_hash_found_changed_is_no_stall() {
    // Leaving because HEAD moved is a safety stop; leaving because it did
    // not move is the stall.
    let moved = "package a\n\nfunc refine(repo string) error {\n\tfor i := 0; i < 10; i++ {\n\t\tbefore, err := git.ResolveSHA(repo, \"HEAD\")\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\trunAgent(repo)\n\t\tafter, err := git.ResolveSHA(repo, \"HEAD\")\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif after != before {\n\t\t\treturn fmt.Errorf(\"HEAD moved\")\n\t\t}\n\t}\n\treturn nil\n}\n";
    check_absent(Go, moved, E5);
    let still = moved.replace("after != before", "after == before");
    assert!(audit(&still, None, Some(Go)).found().contains(&E5), "{still}");
    // An `until` leaves when its comparison holds, as an `if` does.
    let until = "#!/bin/bash\nbefore=\"\"\nafter=\"start\"\nuntil [ \"$after\" = \"$before\" ]; do\n  before=$(git rev-parse HEAD)\n  claude -p \"$(cat prompt.md)\"\n  after=$(git rev-parse HEAD)\ndone\n";
    assert!(audit(until, None, Some(Bash)).found().contains(&E5), "{until}");
    check_absent(Bash, &until.replace("\"$after\" = \"$before\"", "\"$after\" != \"$before\""), E5);
}

#[test]
fn a_results_error_is_no_result() {
    check_absent(
        Python,
        "def run(agent):\n    for turn in range(20):\n        result = agent.step()\n        if result.get('error'):\n            break\n",
        E1,
    );
}

#[test]
fn e4_a_controller_only_a_timer_aborts() {
    let source = "async function run(task: string, timeoutMs: number) {\n  const controller = new AbortController();\n  const timer = setTimeout(() => controller.abort(), timeoutMs);\n  const messages = [{ role: 'user', content: task }];\n  while (!controller.signal.aborted) {\n    const reply = await model.chat(messages, { signal: controller.signal });\n    if (!reply.toolCalls.length) break;\n    messages.push(...(await runTools(reply.toolCalls)));\n  }\n  clearTimeout(timer);\n}\n";
    check(TypeScript, source, &[E1, E4]);
    // Aborted by a stop button as well, it is a stop from outside.
    let stoppable = source.replace(
        "  clearTimeout(timer);\n}\n",
        "  clearTimeout(timer);\n}\nfunction stop() {\n  controller.abort();\n}\n",
    );
    check_absent(TypeScript, &stoppable, E4);
    assert!(audit(&stoppable, None, Some(TypeScript)).found().contains(&E8));
    // A timer that polls for a stop file before it aborts is no deadline.
    let polled = source.replace(
        "setTimeout(() => controller.abort(), timeoutMs)",
        "setInterval(() => { if (existsSync(STOP_FILE)) controller.abort(); }, 1000)",
    );
    check_absent(TypeScript, &polled, E4);
    assert!(audit(&polled, None, Some(TypeScript)).found().contains(&E8), "{polled}");
}

#[test]
fn a_goals_kind_is_no_goal_met() {
    let routed = "fn run(&mut self) -> Result<()> {\n    for iteration in 1..=self.max_iterations {\n        let reply = self.llm.reason(&self.goal)?;\n        if self.is_game_goal() {\n            return self.create_game(reply);\n        }\n        self.act(reply)?;\n    }\n    Ok(())\n}\n";
    check(Rust, routed, &[E2]);
    let met = routed.replace("self.is_game_goal()", "self.is_goal_met()");
    check(Rust, &met, &[E1, E2]);
}

#[test]
fn e8_a_stopfile_written_as_one_word() {
    check(
        Bash,
        "#!/bin/bash\nSTOPFILE=\"$ROOT/loop.stop\"\nDURATION_SECONDS=86400\nstart_ts=$(date +%s)\nend_ts=$((start_ts + DURATION_SECONDS))\nwhile [ \"$(date +%s)\" -lt \"$end_ts\" ]; do\n  if [ -f \"$STOPFILE\" ]; then\n    break\n  fi\n  codex exec \"$(cat prompt.md)\"\ndone\n",
        &[E4, E8],
    );
}

#[test]
fn e6_exit_typed_at_a_prompt_user_helper() {
    check(
        Go,
        "package a\n\nfunc chat(c *Client) error {\n\tfor {\n\t\treply, err := c.Send(input)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tfmt.Println(reply)\n\t\tusrInput, err := cli.PromptUser()\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif usrInput == \"\" || usrInput == \"exit\" {\n\t\t\treturn nil\n\t\t}\n\t\tinput = usrInput\n\t}\n}\n",
        &[E6],
    );
}

#[test]
fn e1_an_answer_returned_after_the_skip_of_tool_calls_and_its_bookkeeping() {
    // The only way back to the top is the `continue` under "has tool calls";
    // nine statements of rendering and logging sit between it and the
    // return (the old window read eight).
    let source = "class Loop {\n  async run() {\n    while (this.turns < MAX_TURNS) {\n      this.turns++;\n      const reply = await this.model.chat(this.history);\n      this.history.push(reply);\n      if (reply.tool_calls && reply.tool_calls.length > 0) {\n        await this.runTools(reply.tool_calls);\n        continue;\n      }\n      const a = reply.usage?.input;\n      const b = reply.usage?.output;\n      const c = a + b;\n      const d = formatCount(a);\n      const e = formatCount(b);\n      const f = formatCount(c);\n      const g = `${d}/${e}/${f}`;\n      logger.info(g);\n      print(reply.text);\n      return reply.text;\n    }\n  }\n}\n";
    check(JavaScript, source, &[E1, E2]);
}

#[test]
fn e1_getattr_names_the_attribute_it_reads() {
    let source = "async def execute(self, plan):\n    i = 0\n    while i < len(plan.steps):\n        answer = await self.run_step(plan.steps[i])\n        review = await self.planner.refine(plan, answer)\n        if getattr(review, \"is_done\", False):\n            return answer\n        i += 1\n";
    assert!(evidence_lines(Python, source, E1).contains(&6), "{source}");
    // (The walk over the plan's steps is goal met by itself, at its header.)
    let other = source.replace("\"is_done\"", "\"new_steps\"");
    assert_eq!(evidence_lines(Python, &other, E1), vec![3], "{other}");
}

#[test]
fn e5_a_detectors_flag_raised_before_the_break() {
    // The guard asks which action the settings chose; the branch says why
    // it leaves: the loop was found repeating itself.
    let source = "async function run(agent, detector, onLoop) {\n  let loopDetected = false;\n  for (let turn = 0; turn < 30; turn++) {\n    const reply = await agent.step();\n    const seen = detector.record(reply.calls);\n    if (seen) {\n      const action = await onLoop(seen);\n      if (action === 'terminate') {\n        loopDetected = true;\n        break;\n      }\n    }\n    if (!reply.calls.length) return reply.text;\n  }\n}\n";
    check(JavaScript, source, &[E1, E2, E5]);
    let plain = source.replace("loopDetected = true;", "logged = true;");
    check_absent(JavaScript, &plain, E5);
    // A cap beside the detector in the guard stays the cap it names.
    let capped = "async function run(agent, detector) {\n  let loopDetected = false;\n  let turn = 0;\n  while (true) {\n    const reply = await agent.step();\n    turn++;\n    if (turn >= maxTurns || detector.isLooping(reply.calls)) {\n      loopDetected = true;\n      break;\n    }\n    if (!reply.calls.length) return reply.text;\n  }\n}\n";
    check(JavaScript, capped, &[E1, E2, E5]);
}

#[test]
fn e6_a_person_asked_whether_to_go_on_after_a_doom_loop() {
    // The detector fires in a walk over the reply's calls; a person then
    // decides, through the approval callback, whether the run goes on.
    let source = "fn run(&mut self) -> Result<Outcome> {\n    for _turn in 0..self.max_turns {\n        let reply = self.model.complete(&self.messages)?;\n        if reply.tool_calls.is_empty() {\n            return Ok(Outcome::Done(reply.text));\n        }\n        let mut doom_loop_detected = false;\n        for call in reply.tool_calls.iter() {\n            if self.tracker.record(&call.name, &call.args) {\n                doom_loop_detected = true;\n                break;\n            }\n        }\n        if doom_loop_detected {\n            let user_wants_continue = if let Some(ref cb) = self.approval_cb {\n                cb(&self.continue_request()).unwrap_or(false)\n            } else {\n                false\n            };\n            if !user_wants_continue {\n                return Ok(Outcome::Stopped);\n            }\n            self.tracker.reset();\n        }\n        self.run_tools(&reply.tool_calls)?;\n    }\n    Ok(Outcome::Cap)\n}\n";
    check(Rust, source, &[E1, E2, E5, E6]);
}

#[test]
fn e4_a_deadline_handed_to_the_run_an_excerpt_configures() {
    let source = "package main\n\nfunc runTask(client *Client, task string, limit time.Duration, steps int) error {\n\tctx, cancel := context.WithTimeout(context.Background(), limit)\n\tdefer cancel()\n\tres, err := agent.Run(ctx, client, task, agent.Config{MaxSteps: steps})\n\tif err != nil {\n\t\treturn err\n\t}\n\tfmt.Println(res.Final)\n\treturn nil\n}\n";
    check(Go, source, &[E2, E4]);
    // A deadline for something else (a probe) is not the run's.
    let probe = "package main\n\nfunc runTask(client *Client, task string, limit time.Duration, steps int) error {\n\tpctx, cancel := context.WithTimeout(context.Background(), limit)\n\tdefer cancel()\n\tif err := client.Ping(pctx); err != nil {\n\t\treturn err\n\t}\n\tres, err := agent.Run(context.Background(), client, task, agent.Config{MaxSteps: steps})\n\tif err != nil {\n\t\treturn err\n\t}\n\tfmt.Println(res.Final)\n\treturn nil\n}\n";
    check(Go, probe, &[E2]);
    // A context of the same name made in another function is not the run's.
    let elsewhere = "package main\n\nfunc ping(c *Client) error {\n\tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)\n\tdefer cancel()\n\treturn c.Ping(ctx)\n}\n\nfunc runTask(ctx context.Context, c *Client, task string) error {\n\t_, err := agent.Run(ctx, c, task, agent.Config{MaxSteps: 20})\n\treturn err\n}\n";
    check(Go, elsewhere, &[E2]);
}

#[test]
fn e3_a_budget_of_steps_spent_is_a_turn_cap() {
    let source = "async function run(engine, config) {\n  const stepBudget = { spent: 0 };\n  for (let i = 0; i < config.maxIterations; i++) {\n    const plan = await engine.plan();\n    if (stepBudget.spent + plan.steps.length > config.maxStepsPerRun) {\n      throw new Error('step budget exceeded');\n    }\n    stepBudget.spent += plan.steps.length;\n    if (await engine.execute(plan)) return;\n  }\n}\n";
    check_absent(JavaScript, source, E3);
    let money = source
        .replace(
            "stepBudget.spent + plan.steps.length > config.maxStepsPerRun",
            "budget.spent + plan.cost > config.maxCostUsd",
        )
        .replace("stepBudget", "budget");
    assert!(audit(&money, None, Some(JavaScript)).found().contains(&E3), "{money}");
    // A budget of money whose names also say a step stays a budget.
    let dollars = source.replace(
        "stepBudget.spent + plan.steps.length > config.maxStepsPerRun",
        "stepBudget.spentUsd + plan.stepCost > config.maxUsd",
    );
    assert!(audit(&dollars, None, Some(JavaScript)).found().contains(&E3), "{dollars}");
}

#[test]
fn e1_an_approval_a_reviewing_model_gave() {
    let source = "async function main() {\n  for (let i = 1; i <= MAX_ROUNDS; i++) {\n    await runBuilder(task);\n    const review = await runReviewer();\n    const isApproved = reviewApproves(review.output);\n    if (isApproved) {\n      break;\n    }\n  }\n}\n";
    check(TypeScript, source, &[E1, E2]);
    // A person's approval stays theirs.
    let person = source.replace("reviewApproves(review.output)", "await askHumanApproval(rl, review.output)");
    check(TypeScript, &person, &[E2, E6]);
    // Nor is an approval of a review a person confirms.
    let confirmed = source.replace("reviewApproves(review.output)", "await confirmReview(rl, review.output)");
    check_absent(TypeScript, &confirmed, E1);
}

#[test]
fn a_value_a_helper_made_is_judged_by_the_helper_checks() {
    // `timeout_text = _timeout_text(...)` then `if timeout_text: break`:
    // the helper's own comparison of the elapsed time decides, whatever its
    // name says.
    let source = "import time\n\ndef _timeout_text(task_start, limit):\n    elapsed = time.monotonic() - task_start\n    if elapsed < limit:\n        return \"\"\n    return \"Task exceeded its time limit\"\n\ndef run(agent, limit):\n    task_start = time.monotonic()\n    while True:\n        reply = agent.step()\n        if not reply.tool_calls:\n            return reply\n        timeout_text = _timeout_text(task_start, limit)\n        if timeout_text:\n            break\n";
    check(Python, source, &[E1, E4]);
    // The helper answers yes or no somewhere: only the way out that gives
    // the answer the loop leaves on counts (`exit := handleCommand(line)`
    // returns `true` on /quit, a bare `return` after listing no jobs).
    let go = "package main\n\nfunc handleCommand(line string) (exit bool, prompt string) {\n\tswitch line {\n\tcase \"/quit\":\n\t\treturn true, \"\"\n\tcase \"/jobs\":\n\t\tjobs := listJobs()\n\t\tif len(jobs) == 0 {\n\t\t\treturn\n\t\t}\n\t}\n\treturn false, line\n}\n\nfunc repl(a *Agent) {\n\tfor {\n\t\tline := readLine()\n\t\texit, prompt := handleCommand(line)\n\t\tif exit {\n\t\t\treturn\n\t\t}\n\t\ta.Run(prompt)\n\t}\n}\n";
    check(Go, go, &[E6]);
    // A helper that returns what it computed is asked for that value, not
    // for a decision: its cap on the actions it keeps is no turn cap.
    let computed = "import re\n\ndef extract_actions(text):\n    acts = re.findall(r\"ACTION: (.*)\", text)\n    if len(acts) > MAX_ACTIONS_PER_STEP:\n        return acts[:MAX_ACTIONS_PER_STEP]\n    return acts\n\ndef run(agent):\n    while True:\n        reply = agent.step()\n        actions = extract_actions(reply)\n        if not actions:\n            break\n        agent.act(actions)\n";
    check_absent(Python, computed, E2);
    // A reason returned as a message when the budget is spent, `false`
    // while it is not: the message is the loop's way out.
    let budget = "function checkBudget(usage) {\n  if (usage.costUsd < MAX_COST_USD) return false;\n  return `Budget exceeded: ${usage.costUsd}`;\n}\n\nasync function run(agent) {\n  while (true) {\n    const reply = await agent.step();\n    if (reply.toolCalls.length === 0) return reply;\n    const why = checkBudget(agent.usage);\n    if (why) break;\n  }\n}\n";
    check(JavaScript, budget, &[E1, E3]);
    // The yes or no of a tuple answers only for the name at its place:
    // `reply, done = step()` then `if not reply:` asks for the reply.
    let tuple = "import time\n\ndef step(agent, deadline):\n    if time.time() > deadline:\n        return None, True\n    return agent.reply(), False\n\ndef run(agent, deadline):\n    while True:\n        reply, done = step(agent, deadline)\n        if not reply:\n            break\n        agent.act(reply)\n";
    check_absent(Python, tuple, E4);
    check(Python, &tuple.replace("if not reply:", "if done:"), &[E4]);
}

#[test]
fn a_yes_or_no_returned_from_a_walk_over_tool_calls_answers_the_caller() {
    let source = "class Runner {\n  async executeOneTurn(state) {\n    const reply = await this.llm.call(state.history);\n    if (reply.toolCalls.length === 0) {\n      return false;\n    }\n    for (const call of reply.toolCalls) {\n      try {\n        await this.tools.run(call);\n        state.consecutiveToolErrors = 0;\n      } catch (error) {\n        state.consecutiveToolErrors++;\n        if (state.consecutiveToolErrors >= MAX_CONSECUTIVE_TOOL_ERRORS) {\n          return false;\n        }\n      }\n    }\n    return true;\n  }\n\n  async run(state) {\n    while (state.turn < state.maxTurns) {\n      state.turn++;\n      const shouldContinue = await this.executeOneTurn(state);\n      if (!shouldContinue) {\n        break;\n      }\n    }\n  }\n}\n";
    check(TypeScript, source, &[E1, E2, E7]);
}

#[test]
fn a_recursion_that_hands_on_a_count_moved_by_one_is_capped() {
    let source = "async function run(opts: Opts, question: string): Promise<string> {\n  const step = async (results: string[], remaining: number): Promise<string> => {\n    if (remaining <= 0) return 'out of steps';\n    const { content } = await opts.llm.chat({ messages: [question, ...results] });\n    const calls = parse(content);\n    if (calls.length > 0) {\n      const next = await runTools(calls);\n      return await step(next, remaining - 1);\n    }\n    return content;\n  };\n  return await step([], 6);\n}\n";
    check(TypeScript, source, &[E1, E2]);
    // Handed on unchanged, the count is work left, not turns.
    check_absent(TypeScript, &source.replace("remaining - 1", "remaining"), E2);
    // A recursive helper that asks no model takes no turns, though its
    // depth grows by one a call.
    let helper = "def _truncate(value, level):\n    if level > 3:\n        return \"...\"\n    if isinstance(value, list):\n        return [_truncate(v, level + 1) for v in value]\n    return value\n\ndef run(agent):\n    while True:\n        reply = agent.llm.chat(agent.history)\n        if not reply.tool_calls:\n            return _truncate(reply.content, 0)\n        agent.run_tools(reply.tool_calls)\n";
    check_absent(Python, helper, E2);
}

#[test]
fn the_bound_of_an_agent_loop_inside_a_repl_is_its_cap() {
    // The outer loop reads what a person types: the inner one is the
    // agent's, and its bound is the agent's turn cap.
    let source = "def chat(client):\n    messages = []\n    while True:\n        user_text = input(\"> \")\n        if user_text.lower() in (\"quit\", \"exit\"):\n            break\n        messages.append(user_text)\n        turns = 0\n        while turns < MAX_AGENT_TURNS:\n            turns += 1\n            messages, done = run_agent_turn(client, messages)\n            if done:\n                break\n";
    check(Python, source, &[E1, E2, E6]);
    // The same loops, the outer one fed by a queue: it is the agent's, and
    // the inner bound ends only the inner loop.
    let queued = source
        .replace("user_text = input(\"> \")", "user_text = jobs.get()")
        .replace("        if user_text.lower() in (\"quit\", \"exit\"):\n            break\n", "");
    check_absent(Python, &queued, E2);
    // Nor does a person asked for approval inside an agent's pass make it a
    // REPL: the bounded loop after it retries one step.
    let approval = "def run(agent):\n    while True:\n        reply = agent.step()\n        if reply.done:\n            break\n        if reply.risky and input(\"Run? [y/N] \") != \"y\":\n            continue\n        n = 0\n        while n < 3:\n            n += 1\n            if agent.tools.run(reply):\n                break\n";
    check_absent(Python, approval, E2);
}

#[test]
fn a_flag_forced_by_a_bound_is_that_bound() {
    // `force_answer = True` when the steps or the time ran out, then `if
    // force_answer: return`: the loop ends on both bounds, not on a goal.
    let source = "import time\n\ndef agent_loop(agent, max_n_steps, max_time_seconds):\n    state = agent.start()\n    start_time = time.time()\n    while True:\n        force_answer = False\n        if state.timestep == max_n_steps or time.time() - start_time > max_time_seconds:\n            force_answer = True\n        action = agent.navigate(state, force_answer=force_answer)\n        if force_answer:\n            return action.content\n        elif action.kind == \"answer\":\n            return action.content\n        state = agent.update(state, action)\n";
    check(Python, source, &[E1, E2, E4]);
    // The goal is the answer the model chose, not the forced one.
    assert_eq!(evidence_lines(Python, source, E1), vec![13], "{source}");
}

#[test]
fn a_team_reaching_consensus_is_done() {
    let source = "package team\n\nfunc (t *Team) Run(ctx context.Context, task string) (string, error) {\n\tconsensusReached := false\n\tfor round := 0; round < t.maxRounds; round++ {\n\t\tresponses := t.ask(ctx, task)\n\t\t_, reached := t.strategy.Evaluate(responses)\n\t\tif reached {\n\t\t\tconsensusReached = true\n\t\t}\n\t\tif consensusReached {\n\t\t\tbreak\n\t\t}\n\t}\n\treturn t.combine(), nil\n}\n";
    check(Go, source, &[E1, E2]);
}

#[test]
fn e6_a_task_left_waiting_on_a_persons_clarification() {
    let source = "package agent\n\nfunc (o *Orchestrator) loop(record *Task) {\n\tfor turn := 0; turn < o.maxTurns; turn++ {\n\t\tout := o.model.Step(record)\n\t\tif record.Status == \"awaiting_clarification\" {\n\t\t\to.save(record)\n\t\t\treturn\n\t\t}\n\t\tif len(out.ToolCalls) == 0 {\n\t\t\treturn\n\t\t}\n\t}\n}\n";
    check(Go, source, &[E1, E2, E6]);
}

#[test]
fn e6_a_prompt_that_returns_nothing_ends_the_session() {
    let source = "export async function startREPL(container) {\n  while (true) {\n    const input = await promptInput();\n    if (input === null) {\n      break;\n    }\n    await container.orchestrator.process(input);\n  }\n}\n";
    check(TypeScript, source, &[E6]);
    // A tool's input schema is no person's input.
    let schema = "async function run(agent, tool) {\n  while (true) {\n    const reply = await agent.step();\n    if (reply.toolCalls.length === 0) return reply;\n    const schema = tool.get_input_schema();\n    if (!schema) break;\n  }\n}\n";
    check_absent(JavaScript, schema, E6);
}

#[test]
fn e5_a_pass_that_finds_nothing_new() {
    // The queries the model proposes, less those tried before: none left
    // means another pass would learn nothing.
    let comprehension = "def research(topic, tried):\n    queries = [topic]\n    for depth in range(5):\n        notes = llm.summarise(search(queries))\n        proposed = llm.next_queries(notes)\n        fresh = [q for q in proposed if q not in tried]\n        tried.update(fresh)\n        if not fresh:\n            break\n        queries = fresh\n";
    check(Python, comprehension, &[E2, E5]);
    assert_eq!(evidence_lines(Python, comprehension, E5), vec![8], "{comprehension}");
    // The same test inside a helper the loop calls.
    let helper = "def new_results(queries, seen_urls):\n    found = []\n    for result in search(queries):\n        if result.url in seen_urls:\n            continue\n        seen_urls.add(result.url)\n        found.append(result)\n    return found\n\ndef run(agent, seen_urls):\n    while True:\n        results = new_results(agent.queries(), seen_urls)\n        if not results:\n            return agent.report()\n        agent.read(results)\n";
    check(Python, helper, &[E5]);
    let typescript = "async function research(topic: string, maxIterations: number) {\n  const cites: Source[] = [];\n  for (let i = 0; i < maxIterations; i++) {\n    const sources = await search(topic);\n    const unseen = sources.filter((s) => !cites.some((c) => c.id === s.id));\n    if (unseen.length === 0) {\n      break;\n    }\n    cites.push(unseen[0]);\n    topic = await model.refine(topic, unseen[0]);\n  }\n  return cites;\n}\n";
    check(TypeScript, typescript, &[E2, E5]);
    let go = "package agent\n\nfunc (a *Agent) fresh(links []string) []string {\n\tvar out []string\n\tfor _, l := range links {\n\t\tif a.visited[l] {\n\t\t\tcontinue\n\t\t}\n\t\tout = append(out, l)\n\t}\n\treturn out\n}\n\nfunc (a *Agent) Crawl(ctx context.Context) {\n\tfor {\n\t\tlinks := a.fresh(a.model.NextLinks(ctx))\n\t\tif len(links) == 0 {\n\t\t\treturn\n\t\t}\n\t\ta.read(links)\n\t}\n}\n";
    check(Go, go, &[E5]);
}

#[test]
fn e5_nothing_new_asks_for_a_memory_of_what_was_met() {
    // Tools left once the disabled are taken out: a fixed list, no memory.
    let fixed = "def run(agent, disabled):\n    while True:\n        offered = [t for t in agent.tools() if t not in disabled]\n        if not offered:\n            break\n        agent.step(offered)\n";
    check_absent(Python, fixed, E5);
    // Tasks left once the finished are taken out: the work is done.
    let work_left = "def run(agent, tasks, completed):\n    while True:\n        fresh = [t for t in tasks if t not in completed]\n        if not fresh:\n            break\n        completed.add(agent.work(fresh[0]))\n";
    check_absent(Python, work_left, E5);
    // Leaving when something new turned up is not a stall.
    let found_new = "def run(agent, seen):\n    while True:\n        fresh = [q for q in agent.propose() if q not in seen]\n        seen.update(fresh)\n        if fresh:\n            return fresh\n";
    check_absent(Python, found_new, E5);
}

#[test]
fn e1_ready_work_less_what_has_a_result_is_work_left() {
    // Not "nothing new": the ready tasks with no result yet are the work
    // left, and a loop that ends when none is left has done it.
    let source = "async def execute_plan(self, planner):\n    results = {}\n    while True:\n        ready_tasks = planner.get_ready_tasks()\n        pending = [task for task in ready_tasks if task.id not in results]\n        if not pending:\n            break\n        pairs = await asyncio.gather(*[self.delegate(t) for t in pending])\n        results.update(dict(pairs))\n    return results\n";
    check(Python, source, &[E1]);
}

#[test]
fn a_failed_call_under_a_detector_is_no_exit_of_the_detector() {
    // The detector only makes the loop send a warning; the return leaves
    // because that send failed once.
    let source = "package agent\n\nfunc (a *Agent) Run(ctx context.Context) (*Result, error) {\n\tfor turns := 0; turns < a.maxTurns; turns++ {\n\t\tresp, err := a.client.Send(ctx, history)\n\t\tif err != nil {\n\t\t\treturn nil, err\n\t\t}\n\t\tif len(resp.ToolCalls) == 0 {\n\t\t\treturn &Result{Text: resp.Text}, nil\n\t\t}\n\t\tloopDetected := a.detector.Record(resp.ToolCalls)\n\t\tif loopDetected {\n\t\t\t_, err = a.client.Send(ctx, warn(history))\n\t\t\tif err != nil {\n\t\t\t\treturn nil, err\n\t\t\t}\n\t\t\tcontinue\n\t\t}\n\t\thistory = a.run(resp.ToolCalls)\n\t}\n\treturn nil, errTooMany\n}\n";
    check(Go, source, &[E1, E2]);
    // When the call that failed is the one the condition names, the
    // condition says what was waited for: a person's approval.
    let approval = "package agent\n\nfunc Generate(ctx context.Context, onToolApproval func(string) (bool, error)) error {\n\tfor step := 0; step < maxSteps; step++ {\n\t\treply := model.Call(ctx)\n\t\tif len(reply.ToolCalls) == 0 {\n\t\t\treturn nil\n\t\t}\n\t\tfor _, call := range reply.ToolCalls {\n\t\t\tif onToolApproval != nil {\n\t\t\t\tapproved, err := onToolApproval(call.Name)\n\t\t\t\tif err != nil {\n\t\t\t\t\treturn err\n\t\t\t\t}\n\t\t\t\tif !approved {\n\t\t\t\t\tcontinue\n\t\t\t\t}\n\t\t\t}\n\t\t\trun(call)\n\t\t}\n\t}\n\treturn nil\n}\n";
    check(Go, approval, &[E1, E2, E6]);
}

#[test]
fn e7_nudges_about_progress_are_counted_not_compared() {
    // `progress_nudges < 2` counts corrective nudges: an allowance of
    // tries, not a pass compared with the one before. The answer is the
    // reply with no tool calls, read through the list it was copied from.
    let source = "async def run(self):\n    progress_nudges = 0\n    for iterations in range(MAX_ITERATIONS):\n        raw_text, native_tool_calls = await self._call_model()\n        text_calls = parse_tool_calls(raw_text)\n        if native_tool_calls:\n            all_calls = native_tool_calls\n        else:\n            all_calls = text_calls\n        if not all_calls:\n            final = raw_text.strip()\n            if looks_like_progress_only(final) and progress_nudges < 2:\n                progress_nudges += 1\n                self.messages.append(nudge())\n                continue\n            return final\n        self.execute(all_calls)\n";
    check(Python, source, &[E1, E2, E7]);
}

#[test]
fn e1_a_result_of_work_on_typed_settings_is_not_typed() {
    // The settings were typed at a prompt before the loops; what the build
    // returns is the build's answer, not the person's.
    let source = "def main(sourcelang=None):\n    if not sourcelang:\n        sourcelang = typer.prompt(\"Source language\")\n    globals = Globals(sourcelang)\n    while True:\n        result = run_dockerfile(globals)\n        if result == \"success\":\n            break\n        debug_error(result, globals)\n";
    check(Python, source, &[E1]);
}

#[test]
fn e7_tries_spent_only_when_a_reply_was_cut_off() {
    let source = "async function* run(client: Client, maxRecovery: number) {\n  let recoveryAttempts = 0;\n  for (let turn = 0; turn < 50; turn++) {\n    const reply = await client.chat(messages);\n    const isTruncated = reply.finishReason === \"length\" || reply.finishReason === \"max_tokens\";\n    if (isTruncated) {\n      if (recoveryAttempts >= maxRecovery) {\n        return;\n      }\n      recoveryAttempts++;\n      continue;\n    }\n    if (!reply.toolCalls.length) return reply;\n  }\n}\n";
    check(TypeScript, source, &[E1, E2, E7]);
}

#[test]
fn e2_a_budget_of_iterations_is_a_turn_cap() {
    let source = "export class IterationBudget {\n  private consumed = 0;\n  constructor(readonly max = 25) {}\n  get exhausted(): boolean {\n    return this.consumed >= this.max;\n  }\n  consume(): void {\n    this.consumed++;\n  }\n}\nexport async function run(model: Model, maxIterations: number) {\n  const budget = new IterationBudget(maxIterations);\n  while (true) {\n    if (budget.exhausted) {\n      return;\n    }\n    budget.consume();\n    const reply = await model.chat(messages);\n    if (!reply.toolCalls.length) return reply;\n  }\n}\n";
    check(TypeScript, source, &[E1, E2]);
}

#[test]
fn e3_a_context_length_exceeded_again_after_compressing() {
    let source = "async function run(provider: Provider, compressor: Compressor) {\n  let compressionAttempted = false;\n  for (let turn = 0; turn < 30; turn++) {\n    let reply;\n    try {\n      reply = await provider.chat(messages);\n    } catch (err) {\n      if (err instanceof ProviderError && err.contextLengthExceeded) {\n        if (compressionAttempted) {\n          return;\n        }\n        messages = await compressor.compress(messages);\n        compressionAttempted = true;\n        continue;\n      }\n      throw err;\n    }\n    if (!reply.toolCalls.length) return reply;\n  }\n}\n";
    check(TypeScript, source, &[E1, E2, E3]);
}

#[test]
fn e7_replans_spent_in_a_walk_before_giving_up() {
    // The `break` out of the walk over ready nodes starts the next pass
    // with a new plan; once the replans are spent, a failure returns.
    let source = "package agent\n\nfunc (a *Agent) RunWithPlan(ctx context.Context) (*Result, error) {\n\tconst maxReplans = 3\n\treplans := 0\n\tfor {\n\t\tready := a.planner.ReadyNodes(a.tree)\n\t\tif len(ready) == 0 {\n\t\t\tbreak\n\t\t}\n\t\tfor _, node := range ready {\n\t\t\tresult := a.executeNode(ctx, node)\n\t\t\tif result.Success {\n\t\t\t\tcontinue\n\t\t\t}\n\t\t\tif replans < maxReplans {\n\t\t\t\ta.tree = a.planner.Replan(ctx, result.Error)\n\t\t\t\treplans++\n\t\t\t\tbreak\n\t\t\t}\n\t\t\treturn &Result{Failed: true}, nil\n\t\t}\n\t}\n\treturn &Result{}, nil\n}\n";
    check(Go, source, &[E1, E7]);
}

#[test]
fn e8_a_state_set_to_stop_elsewhere() {
    let source = "class Agent {\n  async run(maxCycles) {\n    let cycle = 0;\n    while (cycle < maxCycles && this.state != \"stop\") {\n      cycle++;\n      await this.step();\n    }\n  }\n  stop() {\n    this.state = \"stop\";\n  }\n}\n";
    check(JavaScript, source, &[E2, E8]);
    // A reply's status is the model's, set on each pass: the work is done.
    let reply = "async function run(client) {\n  while (true) {\n    const reply = await client.chat(messages);\n    if (reply.status == \"stop\") break;\n    messages.push(reply);\n  }\n}\n";
    check_absent(JavaScript, reply, E8);
    // Nor a state the pass sets itself, in a method it calls.
    let own = "class Agent:\n    def run(self):\n        while self.status != \"stop\":\n            self.step()\n\n    def step(self):\n        reply = self.llm.chat(self.messages)\n        if not reply.tool_calls:\n            self.status = \"stop\"\n";
    check_absent(Python, own, E8);
}

#[test]
fn e6_a_question_left_for_the_person() {
    let source = "fn run(engine: &mut Engine) -> Outcome {\n    for turn in 0..engine.max_turns {\n        let reply = engine.model.complete(&engine.messages);\n        if reply.stop_reason == StopReason::EndTurn {\n            return Outcome::Done(reply.text);\n        }\n        for call in reply.tool_calls() {\n            match engine.tools.run(call) {\n                Ok(ToolOutput::ClarificationNeeded(question)) => return Outcome::Question(question),\n                Ok(ToolOutput::Text(text)) => engine.messages.push(text),\n                Err(e) => engine.messages.push(e.to_string()),\n            }\n        }\n    }\n    Outcome::OutOfTurns\n}\n";
    check(Rust, source, &[E1, E2, E6]);
}

#[test]
fn e6_an_abort_the_code_calls_the_users() {
    let source = "export async function runAgentLoop(input: LoopInput) {\n  for (let step = 1; step <= input.maxSteps; step++) {\n    if (input.signal.aborted) throw new AppError(\"USER_CANCELLED\", \"Operation cancelled.\");\n    const response = await complete({ messages, signal: input.signal });\n    if (!response.toolCalls.length) return response;\n  }\n}\n";
    check(TypeScript, source, &[E1, E2, E6]);
    // Without the code, the caller's abort is an outside event.
    let plain = source.replace("\"USER_CANCELLED\", ", "");
    check(TypeScript, &plain, &[E1, E2, E8]);
}

#[test]
fn e5_the_last_few_signatures_all_the_same() {
    let source = "export async function run(model: Model) {\n  const signatures: string[] = [];\n  for (let step = 0; step < 40; step++) {\n    const response = await model.chat(messages);\n    if (!response.toolCalls.length) return response;\n    for (const call of response.toolCalls) {\n      const signature = `${call.name}:${call.arguments}`;\n      signatures.push(signature);\n      if (signatures.length >= 4 && signatures.slice(-4).every((x) => x === signature))\n        throw new Error(\"loop detected\");\n    }\n  }\n}\n";
    check(TypeScript, source, &[E1, E2, E5]);
}

#[test]
fn e6_a_repl_reads_the_line_its_reader_gets() {
    // `exit` typed at the prompt is the person's, not an action's.
    let source = "pub fn run_repl<R: BufRead, W: Write>(reader: &mut R, writer: &mut W) -> Result<()> {\n    loop {\n        write!(writer, \"> \")?;\n        writer.flush()?;\n        let mut input = String::new();\n        if reader.read_line(&mut input)? == 0 {\n            break;\n        }\n        let input = input.trim();\n        if input == \"exit\" || input == \"quit\" {\n            break;\n        }\n        run_agent(input)?;\n    }\n    Ok(())\n}\n";
    check(Rust, source, &[E6]);
}

#[test]
fn review_counterexamples_of_the_wave_31_rules() {
    // A walk over this reply's tool calls that skips those handled before
    // keeps the calls to run: none left is the answer, not a stall.
    let calls = "class Agent:\n    def act(self, calls):\n        out = []\n        for call in calls:\n            if call.id in self.handled:\n                continue\n            self.handled.add(call.id)\n            out.append(self.tools.run(call))\n        return out\n\n    def run(self):\n        for turn in range(20):\n            reply = self.llm.chat(self.messages)\n            outputs = self.act(reply.tool_calls)\n            if not outputs:\n                return reply.text\n";
    check_absent(Python, calls, E5);
    // Passes since the last improvement are a stall counter.
    let stall = "def run(agent):\n    best = 0\n    steps_since_improvement = 0\n    for step in range(100):\n        score = agent.step()\n        if score > best:\n            best = score\n            steps_since_improvement = 0\n        else:\n            steps_since_improvement += 1\n        if steps_since_improvement >= 5:\n            break\n";
    check(Python, stall, &[E2, E5]);
    // A detector read from a field: the failed send under it is still no
    // exit of the detector.
    let field = "package agent\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor turns := 0; turns < a.maxTurns; turns++ {\n\t\tresp, err := a.client.Send(ctx, a.history)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif len(resp.ToolCalls) == 0 {\n\t\t\treturn nil\n\t\t}\n\t\ta.record(resp.ToolCalls)\n\t\tif a.loopDetected {\n\t\t\t_, err = a.client.Send(ctx, a.warning())\n\t\t\tif err != nil {\n\t\t\t\treturn err\n\t\t\t}\n\t\t\tcontinue\n\t\t}\n\t\ta.run(resp.ToolCalls)\n\t}\n\treturn nil\n}\n";
    check(Go, field, &[E1, E2]);
    // No clarification asked for: the answer is the goal.
    let none_asked = "def run(agent):\n    for turn in range(10):\n        reply = agent.step()\n        if reply.clarification_request is None:\n            return reply.answer\n";
    check_absent(Python, none_asked, E6);
    // Each of the last checks passed: no repetition.
    let passed = "async function run(agent) {\n  const checks = [];\n  for (let i = 0; i < 10; i++) {\n    checks.push(await agent.verify());\n    if (checks.slice(-3).every((c) => c.status === \"passed\")) break;\n  }\n}\n";
    check_absent(JavaScript, passed, E5);
    // A template read line by line is no person typing.
    let template = "fn load_prompt<R: BufRead>(reader: &mut R) -> String {\n    let mut out = String::new();\n    loop {\n        let mut line = String::new();\n        if reader.read_line(&mut line).unwrap() == 0 {\n            break;\n        }\n        if line.trim() == \"exit\" {\n            break;\n        }\n        out.push_str(&line);\n    }\n    out\n}\n";
    check_absent(Rust, template, E6);
}

#[test]
fn tool_calls_run_under_two_ifs_then_the_reply_is_returned() {
    // `if let Some(calls) = tool_calls { if !calls.is_empty() { ...;
    // continue } }` then `return Ok(content)`: no tool calls is the answer.
    let nested = "async fn run(&self) -> Result<String> {\n    let mut iterations = 0;\n    loop {\n        iterations += 1;\n        if iterations > self.config.max_iterations {\n            return Err(Error::Max);\n        }\n        let raw = self.provider.send_message_with_tools(msgs, tools).await?;\n        let tool_calls = parse(&raw).ok();\n        if let Some(calls) = tool_calls {\n            if !calls.is_empty() {\n                for call in &calls {\n                    let result = self.execute_tool_call(call).await?;\n                    conversation.add_user(&result);\n                }\n                continue;\n            }\n        }\n        let content = raw.text();\n        return Ok(content);\n    }\n}\n";
    check(Rust, nested, &[E1, E2]);
    // The inner skip may end a longer body: the calls are rebuilt first.
    let rebuilt = "def run(agent):\n    for turn in range(10):\n        reply = agent.llm.chat(agent.messages)\n        if reply.tool_call_parts:\n            tool_calls = [build(p) for p in reply.tool_call_parts]\n            if tool_calls:\n                agent.execute(tool_calls)\n                continue\n        return reply.text\n";
    check(Python, rebuilt, &[E1, E2]);
    // An outer if whose body does more after the inner skip is no skip.
    let more = "def run(agent):\n    for turn in range(10):\n        reply = agent.llm.chat(agent.messages)\n        if reply.ready:\n            if reply.partial:\n                continue\n            agent.log(reply)\n        return reply.text\n";
    check(Python, more, &[E2]);
}

#[test]
fn a_generator_of_an_agents_run_ends_when_the_run_does() {
    // `iterator = app.evo.run({goal})`: its `done` is the run's end.
    let run = "async function handleGoal(app, goal) {\n  const iterator = app.evo.run({ goal });\n  while (true) {\n    const response = await iterator.next();\n    if (response.done) {\n      console.log(response.value);\n      break;\n    }\n    console.log(response.value);\n  }\n}\n";
    check(TypeScript, run, &[E1]);
    // A stream's reader running dry says nothing of the work.
    let stream = "async function pump(res) {\n  const reader = res.body.getReader();\n  while (true) {\n    const { done, value } = await reader.read();\n    if (done) break;\n    handle(value);\n  }\n}\n";
    check_absent(TypeScript, stream, E1);
}

#[test]
fn wave_32_precision_fixes() {
    // A called tool looked up in the registry of tools by its name is no
    // "no tool calls left".
    let lookup = "def main():\n    while True:\n        reply, tool_calls = llm.chat(messages)\n        for call in tool_calls:\n            name = call.get(\"function\", {}).get(\"name\", \"\")\n            if name in tools_dict:\n                sys.exit(0)\n";
    check_absent(Python, lookup, E1);
    // The last item of a walk is no turn cap.
    let last = "async function* loop(llm, chat) {\n  while (true) {\n    const result = await llm.getResponse(chat);\n    for (let i = 0; i < result.outputs.length; i++) {\n      if (i === result.outputs.length - 1 && result.terminate) {\n        return result.outputs[i];\n      }\n      yield result.outputs[i];\n    }\n  }\n}\n";
    check_absent(TypeScript, last, E2);
    // Any error collected, `len(errs) > 0`, is one failure as much as ten.
    let any = "package a\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor i := 0; i < a.max; i++ {\n\t\treply := a.model.Complete(ctx, a.history)\n\t\tvar errs []error\n\t\tfor _, call := range reply.Calls {\n\t\t\tif err := a.exec(call); err != nil {\n\t\t\t\terrs = append(errs, err)\n\t\t\t}\n\t\t}\n\t\tif len(errs) > 0 {\n\t\t\treturn errors.Join(errs...)\n\t\t}\n\t}\n\treturn nil\n}\n";
    check_absent(Go, any, E7);
    // What leaves under a reply that asked for tools is no answer.
    let asked = "def main():\n    while True:\n        text, tool_calls = llm.chat(messages)\n        if tool_calls:\n            for call in tool_calls:\n                try:\n                    ok = input('run it? ')\n                except KeyboardInterrupt:\n                    sys.exit(0)\n                messages.append(run(call))\n        else:\n            messages.append(text)\n";
    check_absent(Python, asked, E1);
    // The pass before compared with this one is no error threshold.
    let before = "async function fix(report, scan) {\n  for (let i = 0; i < 5; i++) {\n    const outstanding = (await scan()).filter((f) => f.error);\n    report.history.push({ remaining: outstanding.length });\n    if (i > 0 && report.history[i - 1].remaining === outstanding.length) {\n      break;\n    }\n  }\n}\n";
    check_absent(JavaScript, before, E7);
    // Errors counted to a limit still are a threshold.
    let many = "package a\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tvar errs []error\n\tfor i := 0; i < a.max; i++ {\n\t\tif err := a.step(ctx); err != nil {\n\t\t\terrs = append(errs, err)\n\t\t}\n\t\tif len(errs) >= 3 {\n\t\t\treturn errors.Join(errs...)\n\t\t}\n\t}\n\treturn nil\n}\n";
    assert!(audit(many, None, Some(Go)).found().contains(&E7));
}

#[test]
fn wave_32_recall_idioms() {
    // The most common of the last calls seen three times: a repeat.
    let common = "from collections import Counter\n\ndef run(agent):\n    recent = []\n    while True:\n        reply = agent.llm.chat(agent.messages)\n        if not reply.tool_calls:\n            return reply.text\n        for tc in reply.tool_calls:\n            recent.append((tc.name, hash(str(tc.arguments))))\n        if len(recent) >= 6:\n            freq = Counter(recent[-6:])\n            top = freq.most_common(1)[0]\n            if top[1] >= 3:\n                return 'loop detected'\n        agent.run(reply.tool_calls)\n";
    check(Python, common, &[E1, E5]);
    // The provider's error says the tokens overflowed the window.
    let overflow = "async def run(self, session):\n    for i in range(50):\n        result = await self.call_model(session)\n        if result.get(\"error\") == \"token_overflow\":\n            result, msg = await self.handle_overflow(session)\n            if msg:\n                return msg\n        if not result.get(\"tool_calls\"):\n            return result[\"text\"]\n        await self.run_tools(result[\"tool_calls\"])\n";
    check(Python, overflow, &[E1, E2, E3]);
    // `tc`, a tool call's short name: none left is the answer.
    let tc = "def run(agent):\n    for turn in range(8):\n        tc_list = sorted(agent.stream_reply().values(), key=lambda t: t.index)\n        if not tc_list:\n            return agent.text\n        agent.execute(tc_list)\n";
    check(Python, tc, &[E1, E2]);
}

#[test]
fn rust_replies_matched_by_variant_and_skips_inside_a_success_arm() {
    // The reply's text variant, matched, is the answer.
    let variant = "async fn run(&mut self) -> Result<String> {\n    let answer;\n    loop {\n        let outcome = llm.chat_with_tool_defs(&model, &msgs, &defs).await?;\n        let calls = match outcome {\n            crate::llm::ChatOutcome::Text(text) => {\n                answer = text;\n                break;\n            }\n            crate::llm::ChatOutcome::ToolCalls { calls, .. } => calls,\n        };\n        self.run_tools(calls).await?;\n    }\n    Ok(answer)\n}\n";
    check(Rust, variant, &[E1]);
    // A stream's delta variant is no answer.
    let delta = "async fn pump(&mut self) -> Result<()> {\n    loop {\n        let event = self.model.next_event().await?;\n        match event {\n            ModelEvent::TextDelta(delta) => {\n                self.buffer.push_str(&delta);\n                break;\n            }\n            _ => {}\n        }\n    }\n    Ok(())\n}\n";
    check_absent(Rust, delta, E1);
    // An empty list of calls goes on past a skip whose `else` continues,
    // inside the arm for the call's success.
    let arm = "async fn run(&mut self) -> Result<String> {\n    let mut iteration = 0;\n    loop {\n        iteration += 1;\n        if iteration > self.max {\n            return Err(Error::Max);\n        }\n        match client.chat_stream(request.clone(), tx).await {\n            Ok(response) => {\n                if let Some(tool_calls) = response.tool_calls.clone() {\n                    if tool_calls.is_empty() {\n                        // the final answer\n                    } else {\n                        self.run_tools(tool_calls).await?;\n                        continue;\n                    }\n                }\n                return Ok(response.content);\n            }\n            Err(e) => return Err(e),\n        }\n    }\n}\n";
    check(Rust, arm, &[E1, E2]);
}

#[test]
fn review_counterexamples_of_the_wave_32_rules() {
    // Outside the arm for a read's success, the skip before the `match` is no guard of it.
    let source = "async fn chat(&mut self) -> Result<()> {\n    let stdin = std::io::stdin();\n    loop {\n        let reply = self.llm.chat(&self.messages).await?;\n        if !reply.tool_calls.is_empty() {\n            self.run_tools(&reply.tool_calls).await?;\n            continue;\n        }\n        println!(\"{}\", reply.text);\n        let mut line = String::new();\n        match stdin.read_line(&mut line) {\n            Ok(0) => break,\n            Ok(_) => self.messages.push(Message::user(line)),\n            Err(e) => return Err(e.into()),\n        }\n    }\n    Ok(())\n}\n";
    check_absent(Rust, source, E1);
    // Nor of a cancel received in an `Ok` arm.
    let source = "async fn run(&mut self, mut cancel_rx: Receiver<Command>) -> Result<()> {\n    for _ in 0..self.max_turns {\n        let reply = self.llm.chat(&self.messages).await?;\n        if !reply.tool_calls.is_empty() {\n            self.run_tools(&reply.tool_calls).await?;\n            continue;\n        }\n        self.messages.push(Message::assistant(reply.text));\n        match cancel_rx.try_recv() {\n            Ok(Command::Cancel) => return Ok(()),\n            _ => {}\n        }\n    }\n    Ok(())\n}\n";
    check_absent(Rust, source, E1);
    // An exit nested in the arm for the reply's text is the person's, not the answer's.
    let source = "async fn chat_loop(&mut self) -> Result<()> {\n    loop {\n        match self.llm.chat(&self.messages).await? {\n            ChatOutcome::Text(text) => {\n                println!(\"{text}\");\n                let line = read_user_line()?;\n                if line.trim() == \"/quit\" {\n                    break;\n                }\n                self.messages.push(Message::user(line));\n            }\n            ChatOutcome::ToolCalls(calls) => self.run_tools(calls).await?,\n        }\n    }\n    Ok(())\n}\n";
    check_absent(Rust, source, E1);
    // A count of turns equal to a number is a turn cap.
    let source = "def run(agent):\n    turn_count = 0\n    while True:\n        turn_count += 1\n        if turn_count == 30:\n            break\n        reply = agent.llm.chat(agent.messages)\n        if not reply.tool_calls:\n            return reply.text\n        agent.execute(reply.tool_calls)\n";
    check(Python, source, &[E1, E2]);
    // So in Go.
    let source = "package a\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\titerCount := 0\n\tfor {\n\t\titerCount++\n\t\tif iterCount == 25 {\n\t\t\treturn ErrTooManyTurns\n\t\t}\n\t\treply, err := a.llm.Chat(ctx, a.history)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif len(reply.ToolCalls) == 0 {\n\t\t\treturn nil\n\t\t}\n\t\ta.runTools(ctx, reply.ToolCalls)\n\t}\n}\n";
    check(Go, source, &[E1, E2]);
    // Votes counted to a majority are no repeat.
    let source = "from collections import Counter\n\ndef self_consistent_answer(llm, question, max_samples=10):\n    votes = Counter()\n    for _ in range(max_samples):\n        answer = llm.generate(question, temperature=0.8)\n        votes[extract_final(answer)] += 1\n        if votes.most_common(1)[0][1] >= 3:\n            return votes.most_common(1)[0][0]\n    return votes.most_common(1)[0][0]\n";
    check_absent(Python, source, E5);
    // A field of one tool call checked is no "no calls left".
    let source = "def run(agent, steps=10):\n    for step in range(steps):\n        reply = agent.llm.chat(agent.messages)\n        agent.messages.append(reply.message)\n        for tc in reply.tool_calls or []:\n            if not tc.function.arguments:\n                raise ValueError(f\"malformed tool call {tc.id}\")\n            agent.messages.append(agent.execute(tc))\n";
    check_absent(Python, source, E1);
    // A command's output read to its end is no agent's run.
    let source = "async function collectOutput(sandbox: Sandbox, cmd: string): Promise<string> {\n  const lines = sandbox.runCommand(cmd);\n  let out = \"\";\n  while (true) {\n    const chunk = await lines.next();\n    if (chunk.done) break;\n    out += chunk.value;\n  }\n  return out;\n}\n";
    check_absent(TypeScript, source, E1);
    // Any error but the overflow leaves: no budget.
    let source = "def run(agent):\n    for turn in range(30):\n        result = agent.call_model(agent.session)\n        if result.get(\"error\"):\n            if result[\"error\"] != \"token_overflow\":\n                raise RuntimeError(result[\"error\"])\n            agent.session.compact()\n            continue\n        if not result.get(\"tool_calls\"):\n            return result[\"text\"]\n        agent.run_tools(result[\"tool_calls\"])\n";
    check_absent(Python, source, E3);
    // Nor any error but the context length exceeded.
    let source = "def run(agent):\n    for turn in range(30):\n        result = agent.call_model(agent.session)\n        if result.get(\"error\"):\n            if result[\"error\"] != \"context_length_exceeded\":\n                raise RuntimeError(result[\"error\"])\n            agent.session.compact()\n            continue\n        if not result.get(\"tool_calls\"):\n            return result[\"text\"]\n        agent.run_tools(result[\"tool_calls\"])\n";
    check_absent(Python, source, E3);
}

#[test]
fn a_signal_copied_from_a_controller_a_timer_aborts_is_a_deadline() {
    // `setTimeout(function abortTimedOutRun() { timedOut = true;
    // runController.abort(); }, ms)`, then `signal = runController.signal`.
    let timer = "async function run(agent, options) {\n  var runController = new AbortController();\n  var timedOut = false;\n  var timeoutHandle = setTimeout(function abortTimedOutRun() {\n    timedOut = true;\n    runController.abort();\n  }, options.timeoutMs);\n  var signal = runController.signal;\n  for (var iteration = 0; iteration < 50; iteration++) {\n    if (signal.aborted) {\n      throw new Error('Operation was aborted');\n    }\n    var response = await agent.chat(signal);\n    if (!response.toolCalls.length) return response.text;\n  }\n}\n";
    check(JavaScript, timer, &[E1, E2, E4]);
    // A signal the caller hands in is an outside event.
    let caller = "async function run(agent, options) {\n  var signal = options.signal;\n  for (var iteration = 0; iteration < 50; iteration++) {\n    if (signal.aborted) {\n      throw new Error('Operation was aborted');\n    }\n    var response = await agent.chat(signal);\n    if (!response.toolCalls.length) return response.text;\n  }\n}\n";
    check(JavaScript, caller, &[E1, E2, E8]);
}

#[test]
fn wave_33_idioms() {
    // Bash: a tool-use reply runs the tools and continues; anything else
    // breaks. The bare `break` runs only when the skip did not.
    let bash = "#!/bin/bash\ni=0\nwhile [ \"$i\" -lt 10 ]; do\n  i=$((i + 1))\n  resp=\"$(curl -s https://api.example.com/v1/messages)\"\n  stop_reason=\"$(printf '%s' \"$resp\" | jq -r '.stop_reason')\"\n  if [[ \"$stop_reason\" == \"tool_use\" ]]; then\n    run_tools \"$resp\"\n    continue\n  fi\n  break\ndone\n";
    check(Bash, bash, &[E1, E2]);
    // A skip that does not continue guards nothing.
    let logs = "#!/bin/bash\ni=0\nwhile [ \"$i\" -lt 10 ]; do\n  i=$((i + 1))\n  resp=\"$(curl -s https://api.example.com/v1/messages)\"\n  stop_reason=\"$(printf '%s' \"$resp\" | jq -r '.stop_reason')\"\n  if [[ \"$stop_reason\" == \"tool_use\" ]]; then\n    echo \"tools asked\"\n  fi\n  break\ndone\n";
    check_absent(Bash, logs, E1);

    // An event of threads, whatever it is called, set by another thread.
    let event = "import threading\ndebate_over = threading.Event()\n\ndef worker(client, rounds):\n    for i in range(rounds):\n        if debate_over.is_set():\n            break\n        reply = client.chat(messages)\n";
    check(Python, event, &[E2, E8]);
    let waiting = "import threading\nshutdown = threading.Event()\n\ndef worker(client):\n    while not shutdown.is_set():\n        reply = client.chat(messages)\n        if not reply.tool_calls:\n            return reply.text\n";
    check(Python, waiting, &[E1, E8]);
    // (An event named for the work done is not an outside stop.)
    let done = "import threading\n\ndef worker(client, rounds, answer_done: threading.Event):\n    for i in range(rounds):\n        if answer_done.is_set():\n            break\n        reply = client.chat(messages)\n";
    check_absent(Python, done, E8);

    // A function that calls itself again from its `catch`, counting the
    // failed calls against a limit: an error threshold, not a turn cap.
    let retry = "async function run(client: Client, max_retries: number) {\n  let attempts = 0\n  const callWithRetries = async (): Promise<Answer> => {\n    try {\n      const data = await client.chat(messages)\n      const validation = schema.safeParse(data)\n      if (!validation.success) {\n        throw validation.error\n      }\n      return validation.data\n    } catch (error) {\n      if (attempts < max_retries) {\n        attempts++\n        return await callWithRetries()\n      } else {\n        throw error\n      }\n    }\n  }\n  return callWithRetries()\n}\n";
    check(TypeScript, retry, &[E1, E7]);
    // A depth counted on every call is still a turn cap.
    let depth = "async function solve(client: Client, task: string, depth = 0): Promise<string> {\n  if (depth >= 5) {\n    throw new Error('too deep')\n  }\n  const reply = await client.chat(task)\n  if (reply.done) {\n    return reply.text\n  }\n  return solve(client, reply.next, depth + 1)\n}\n";
    check(TypeScript, depth, &[E1, E2]);

    // A walk by index over the plan's tasks (repairs inserted as it goes)
    // ends when the work is done.
    let plan = "impl Orchestrator {\n    async fn run(&self, mut plan: Plan) -> Result<String> {\n        let mut index = 0;\n        while index < plan.tasks.len() {\n            let task = &mut plan.tasks[index];\n            let output = self.execute_task(task).await?;\n            if !self.review(&output).await? {\n                plan.tasks.insert(index + 1, Task::repair(&output));\n            }\n            index += 1;\n        }\n        Ok(plan.summary())\n    }\n}\n";
    check(Rust, plan, &[E1]);
    // A cap named for a length is no walk.
    let cap = "def run(node, config):\n    while node.get_depth() < config.max_subtask_chain_length:\n        node = node.expand(llm)\n";
    check(Python, cap, &[E2]);

    // A decision the loop waits for after a detector fires: the person's,
    // and the detector that asked still counts.
    let paused = "class Controller {\n  async run(turnId) {\n    let repeats = 0;\n    let last = \"\";\n    while (true) {\n      const response = await this.agent.next();\n      if (response.type !== \"tool_call\") break;\n      const signature = JSON.stringify(response.toolCalls);\n      repeats = signature === last ? repeats + 1 : 0;\n      last = signature;\n      if (repeats >= MAX_REPEATS) {\n        const decision = await this.#waitForLoopRecoveryDecision(turnId, \"repeating\");\n        if (decision === \"stop\") {\n          return;\n        }\n        repeats = 0;\n      }\n      await this.runTools(response.toolCalls);\n    }\n  }\n}\n";
    check(JavaScript, paused, &[E1, E5, E6]);
    // A count of repeats below its limit goes on; at it, the loop leaves.
    let limit = "async function run(agent) {\n  let repeatedRounds = 0;\n  let last = \"\";\n  for (let turn = 0; turn < 40; turn++) {\n    const reply = await agent.next();\n    if (!reply.toolCalls.length) return reply.text;\n    const signature = JSON.stringify(reply.toolCalls);\n    if (signature === last) {\n      repeatedRounds++;\n      if (repeatedRounds < MAX_REPEATED_ROUNDS) {\n        continue;\n      } else {\n        return;\n      }\n    }\n    last = signature;\n    await agent.runTools(reply.toolCalls);\n  }\n}\n";
    check(JavaScript, limit, &[E1, E2, E5]);
}

#[test]
fn an_attempt_that_got_through_and_a_persons_go_ahead() {
    // `try: self.set_output(json.loads(answer)); return`: the bare exit
    // right after the work in the try is the attempt that got through.
    let parsed = "import json\n\nclass LLM:\n    def invoke(self, prompt, max_retries=3):\n        for _ in range(max_retries + 1):\n            answer = self.chat(prompt)\n            try:\n                self.set_output(json.loads(answer))\n                return\n            except Exception:\n                prompt += \"\\nThe answer could not be parsed as JSON\"\n";
    check(Python, parsed, &[E1, E2]);
    // (A bare exit first thing in the try, with no work before it, is not.)
    let bare = "class LLM:\n    def invoke(self, prompt, max_retries=3):\n        for _ in range(max_retries + 1):\n            answer = self.chat(prompt)\n            try:\n                break\n            except Exception:\n                prompt += \"again\"\n";
    check_absent(Python, bare, E1);
    // A reply skipped when it carries the error marker, then kept and the
    // loop left: the attempt that got through.
    let marker = "class LLM:\n    def invoke(self, prompt, max_retries=3):\n        for _ in range(max_retries + 1):\n            ans = self.chat(prompt)\n            if ans.find(\"**ERROR**\") >= 0:\n                continue\n            self.set_output(\"content\", ans)\n            break\n";
    check(Python, marker, &[E1, E2]);
    // (A skip that is no failure says nothing of the exit after it.)
    let empty = "class LLM:\n    def invoke(self, prompt, max_retries=3):\n        for _ in range(max_retries + 1):\n            ans = self.chat(prompt)\n            if self.verbose:\n                continue\n            self.set_output(\"content\", ans)\n            break\n";
    check_absent(Python, empty, E1);
    // A person's go-ahead after testing the work: theirs, not goal met.
    let go_ahead = "def run(self):\n    while True:\n        response = self.ask_human(convo)\n        user_feedback = response[\"user_input\"] if \"user_input\" in response else None\n        if user_feedback == \"continue\":\n            return {\"success\": True}\n        self.fix(user_feedback)\n";
    check(Python, go_ahead, &[E6]);
}

#[test]
fn review_counterexamples_of_the_wave_33_rules() {
    // A skip taken when nothing failed: the exit after it is the failure's.
    let python = "def run(agent):\n    while True:\n        result = agent.step()\n        if result.done:\n            return result.output\n        if not result.error:\n            continue\n        log.error(\"step failed: %s\", result.error)\n        break\n";
    let lines = evidence_lines(Python, python, E1);
    assert!(lines.contains(&4) && !lines.contains(&6) && !lines.contains(&9), "{lines:?}\n{python}");
    // A break in a catch after a failed reply's skip is an error exit.
    let js = "async function run(llm, messages) {\n  while (true) {\n    const res = await llm(messages);\n    if (res.error) { await sleep(1000); continue; }\n    try { await runTool(JSON.parse(res.content)); }\n    catch (e) { console.error(\"bad tool call\", e); break; }\n  }\n}\n";
    check_absent(JavaScript, js, E1);
    // A recursion's turn count, moved on every call and in its catch too,
    // is a turn cap.
    let turns = "async function runAgent(messages, turn = 0) {\n  turn++;\n  if (turn > MAX_TURNS) return \"max turns reached\";\n  try {\n    const r = await model.chat(messages);\n    if (!r.toolCalls.length) return r.text;\n    messages.push(...await runTools(r.toolCalls));\n  } catch (e) { turn++; }\n  return runAgent(messages, turn);\n}\n";
    check(JavaScript, turns, &[E1, E2]);
    // An event named for the clock is the clock's.
    let clock = "import threading\ntime_up_event = threading.Event()\n\ndef run(agent):\n    threading.Timer(MAX_RUNTIME_S, time_up_event.set).start()\n    while not time_up_event.is_set():\n        agent.step()\n";
    check_absent(Python, clock, E8);
    // Answers that agree up to a threshold: a loop's condition read as written.
    let consensus = "def ask(llm, question):\n    identical_answers = 0\n    last = None\n    while identical_answers < CONSENSUS_THRESHOLD:\n        answer = llm(question)\n        identical_answers = identical_answers + 1 if answer == last else 0\n        last = answer\n    return last\n";
    check_absent(Python, consensus, E5);
    // A count of a plan's retries is no walk over the plan.
    let retries = "def run(planner):\n    plan_retry_count = 0\n    while plan_retry_count < 3:\n        plan = planner.make_plan(llm)\n        plan_retry_count += 1\n";
    check_absent(Python, retries, E1);
    // A decision a planner model makes, in a file whose other function waits for a person's.
    let planner = "async function run(planner, state) {\n  while (true) {\n    const decision = await planner.decide(state);\n    if (decision === \"stop\") break;\n    state = await act(decision);\n  }\n}\n\nasync function review() {\n  const decision = await waitForApproval();\n  return decision;\n}\n";
    check_absent(JavaScript, planner, E6);
    // A simulated user is a model, not a person.
    let simulated = "def evaluate(agent, user_simulator, history):\n    for turn in range(20):\n        reply = agent.respond(history)\n        history.append(reply)\n        user_response = user_simulator.generate(history)\n        if user_response == \"done\":\n            break\n        history.append(user_response)\n";
    check_absent(Python, simulated, E6);
}

#[test]
fn a_chat_repl_left_by_the_persons_quit_command() {
    // Rust: the line read into `line`, trimmed, and matched against the
    // command that leaves: the person's, not the work's.
    let rust = "fn chat() -> io::Result<()> {\n    loop {\n        print!(\"You> \");\n        let mut line = String::new();\n        if io::stdin().read_line(&mut line)? == 0 {\n            break;\n        }\n        let input = line.trim();\n        match input {\n            \"/exit\" => break,\n            \"/help\" => print_help(),\n            _ => run_agent(input)?,\n        }\n    }\n    Ok(())\n}\n";
    check(Rust, rust, &[E6]);
    assert!(evidence_lines(Rust, rust, E6).contains(&10), "{:?}", evidence_lines(Rust, rust, E6));
    // Go: a slash command's handler, handed the scanned line, says quit.
    let go = "package main\n\nfunc chat(ctx context.Context, h *Handler, a *Agent) error {\n\tscanner := bufio.NewScanner(os.Stdin)\n\tfor {\n\t\tif !scanner.Scan() {\n\t\t\treturn nil\n\t\t}\n\t\tline := strings.TrimSpace(scanner.Text())\n\t\tif strings.HasPrefix(line, \"/\") {\n\t\t\tresult := h.Handle(ctx, line)\n\t\t\tif result.Handled {\n\t\t\t\tif result.Quit {\n\t\t\t\t\treturn nil\n\t\t\t\t}\n\t\t\t\tcontinue\n\t\t\t}\n\t\t}\n\t\tif err := a.Run(ctx, line); err != nil {\n\t\t\tfmt.Println(err)\n\t\t}\n\t}\n}\n";
    check(Go, go, &[E6]);
    assert!(evidence_lines(Go, go, E6).contains(&13), "{:?}", evidence_lines(Go, go, E6));
    // The work's own result still ends the work, `return nil` or not.
    let work = "package main\n\nfunc run(ctx context.Context, a *Agent, task string) error {\n\tfor turn := 0; turn < maxTurns; turn++ {\n\t\tresult := a.Step(ctx, task)\n\t\tif result.Done {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn errTooManyTurns\n}\n";
    check(Go, work, &[E1, E2]);
    // A case over what the model said is no person's command.
    let model = "fn run(agent: &mut Agent) {\n    for _ in 0..MAX_TURNS {\n        let reply = agent.step();\n        match reply.action.as_str() {\n            \"finish\" => break,\n            _ => agent.act(&reply),\n        }\n    }\n}\n";
    check(Rust, model, &[E1, E2]);
}

#[test]
fn a_rollout_ends_when_no_environment_is_left_running() {
    let rollout = "def rollout(self, batch):\n    env_outputs = self.envs.reset()\n    for turn in range(self.max_turn):\n        actions = self.policy.generate(env_outputs)\n        env_outputs = self.envs.step(actions)\n        if len(env_outputs) == 0:\n            break\n    return self.envs.get_rollout_states()\n";
    check(Python, rollout, &[E1, E2]);
    // An environment's settings running out say nothing of the episodes.
    let settings = "def run(agent):\n    for turn in range(MAX_TURNS):\n        env_config = agent.load_env_config()\n        if not env_config:\n            break\n        agent.step(env_config)\n";
    check_absent(Python, settings, E1);
}

#[test]
fn an_assistant_reply_and_a_timeout_around_one_jobs_run() {
    // The prediction is the assistant's reply, not an API call: answered.
    let harness = "def run(self, predict_func, history):\n    predictions = []\n    while True:\n        prediction = predict_func(history)\n        if prediction[\"role\"] == \"assistant\":\n            predictions.append(prediction)\n            break\n        elif prediction[\"role\"] == \"api\":\n            history.append(self.execute_tool(**prediction[\"request\"]))\n    return predictions\n";
    check(Python, harness, &[E1]);
    // A role compared in a person's line is not the model's answer.
    let typed = "def chat(agent):\n    while True:\n        role = input(\"role> \")\n        if role == \"assistant\":\n            break\n        agent.step(role)\n";
    check_absent(Python, typed, E1);
    // The timeout wraps the whole agent run; the loop calls a field's
    // method that happens to share the name.
    let executor = "class Executor:\n    async def execute(self, job):\n        try:\n            return await asyncio.wait_for(self._inner(job), timeout=job.timeout)\n        except TimeoutError:\n            return None\n\n    async def _inner(self, job):\n        for iteration in range(job.max_iterations):\n            reply = await self.llm.complete(job.messages)\n            if not reply.tool_uses:\n                return reply.text\n            for tool_use in reply.tool_uses:\n                await self._tools.execute(tool_use)\n";
    check(Python, executor, &[E1, E2, E4]);
    // A timeout in a helper the agent's turns call bounds one step.
    let step = "class Agent:\n    async def run(self, task):\n        while True:\n            reply = await self.execute(task)\n            if reply.done:\n                return reply\n\n    async def execute(self, task):\n        return await asyncio.wait_for(self.llm.complete(task), timeout=30)\n";
    check_absent(Python, step, E4);
}

#[test]
fn review_counterexamples_of_this_sessions_rules() {
    // A per-tool timeout in a helper that a walk over the calls uses
    // bounds one tool, not the run.
    let per_tool = "class Agent:\n    async def run(self, task):\n        while True:\n            reply = await self.llm.complete(self.history)\n            if not reply.tool_calls:\n                return reply.text\n            await self.run_tools(reply.tool_calls)\n\n    async def run_tools(self, calls):\n        for call in calls:\n            self.history.append(await self.execute(call))\n\n    async def execute(self, call):\n        return await asyncio.wait_for(self.tools[call.name](**call.args), timeout=30)\n";
    check_absent(Python, per_tool, E4);
    // A task typed once before the run: the result the agent makes of it
    // is the work's, and its quit decision is no person's.
    let task_once = "def main(agent):\n    task = input(\"Task: \")\n    for turn in range(MAX_TURNS):\n        result = agent.step(task)\n        if result is not None:\n            print(result)\n            break\n";
    check(Python, task_once, &[E1, E2]);
    let decision = "def main(agent, env):\n    goal = input(\"Goal: \")\n    for turn in range(MAX_TURNS):\n        decision = agent.decide(goal, env.observe())\n        if decision.quit:\n            break\n        env.act(decision)\n";
    check_absent(Python, decision, E6);
    let stop_reason = "package main\n\nfunc run(ctx context.Context, client *Client) error {\n\tscanner := bufio.NewScanner(os.Stdin)\n\tscanner.Scan()\n\ttask := scanner.Text()\n\tfor turn := 0; turn < maxTurns; turn++ {\n\t\tresp := client.Complete(ctx, task)\n\t\tswitch resp.StopReason {\n\t\tcase \"stop\":\n\t\t\treturn nil\n\t\t}\n\t\ttask = resp.Next\n\t}\n\treturn errTooManyTurns\n}\n";
    check_absent(Go, stop_reason, E6);
    // A Go loop that prints the answer and reports success with `return nil`.
    let go_answer = "package main\n\nfunc (a *Agent) Run(ctx context.Context) error {\n\tfor turn := 0; turn < a.MaxTurns; turn++ {\n\t\tresp, err := a.llm.Chat(ctx, a.history)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif resp.Content != \"\" {\n\t\t\tfmt.Println(resp.Content)\n\t\t\treturn nil\n\t\t}\n\t\ta.runTools(ctx, resp.Calls)\n\t}\n\treturn ErrMaxTurns\n}\n";
    check(Go, go_answer, &[E1, E2]);
    // An assistant reply that carries tool calls is no answer.
    let with_tools = "def run(llm, history):\n    for turn in range(MAX_TURNS):\n        msg = llm.next(history)\n        if msg[\"role\"] == \"assistant\" and msg.get(\"tool_calls\"):\n            history.extend(run_tools(msg[\"tool_calls\"]))\n            continue\n        history.append(msg)\n";
    check_absent(Python, with_tools, E1);
}

#[test]
fn an_episode_inside_a_loop_over_runs_and_a_build_that_passes() {
    // Each pass of the outer loop is one whole episode: the loop that steps
    // the episode is the agent's, and the environment ending it is the
    // goal met, not an inner retry's end.
    let episodes = "def run_experiment(env, agent, num_runs):\n    for i in range(num_runs):\n        obs, _ = env.reset(seed=i)\n        done = False\n        while not done:\n            action = agent.get_action(obs)\n            obs, reward, terminated, truncated, _ = env.step(action)\n            done = terminated or truncated\n";
    check(Python, episodes, &[E1, E2]);
    // A loop of turns around an inner wait is still the agent's: the
    // inner loop's end is no exit of it.
    let turns = "def run(agent, max_turns):\n    for turn in range(max_turns):\n        job = agent.submit()\n        done = False\n        while not done:\n            done = job.poll().finished\n        agent.observe(job)\n";
    check_absent(Python, turns, E1);
    // The build ran without throwing: the flag is set and the repair loop
    // leaves, its work done.
    let build = "async function repair(dir, maxRetries) {\n  let testPassed = false;\n  for (let attempt = 1; attempt <= maxRetries; attempt++) {\n    try {\n      await runCommand('npm', ['run', 'build'], dir);\n      console.log('build passed');\n      testPassed = true;\n      break;\n    } catch (error) {\n      await callQAAgent(error.message, dir);\n    }\n  }\n  return testPassed;\n}\n";
    check(JavaScript, build, &[E1, E2]);
    // An exit after nothing but a flag and no work is no attempt that got
    // through.
    let flag_only = "async function wait(maxRetries) {\n  let ready = false;\n  for (let attempt = 1; attempt <= maxRetries; attempt++) {\n    try {\n      ready = true;\n      break;\n    } catch (error) {\n      await sleep(100);\n    }\n  }\n}\n";
    check_absent(JavaScript, flag_only, E1);
}

#[test]
fn a_game_that_is_over_ends_the_episode() {
    let game = "class Orchestrator:\n    def run(self, state):\n        while not self.game_over_flag and self.turns < self.max_turns:\n            self.turns += 1\n            state = self.agent.act(state)\n            is_game_over, reason = self.env.is_game_over(state)\n            if is_game_over:\n                self.game_over_flag = True\n";
    check(Python, game, &[E1, E2]);
}

#[test]
fn review_counterexamples_of_the_runs_and_the_flags() {
    // A cap of the steps of one episode is a count of passes: the loop
    // inside it retries one step.
    let per_episode = "def run(llm, env, obs, max_steps_per_episode):\n    for step in range(max_steps_per_episode):\n        valid = False\n        while not valid:\n            reply = llm.chat(obs)\n            valid = is_valid_action(reply)\n        obs = env.step(parse(reply))\n";
    check_absent(Python, per_episode, E1);
    // A wait for a job inside a loop over runs is no agent loop.
    let wait = "def run(llm, task, max_runs):\n    for i in range(max_runs):\n        job = llm.start(task)\n        while not job.is_done():\n            time.sleep(2)\n";
    check_absent(Python, wait, E1);
    // A flag of a failure set before the exit is the failure's way out.
    let aborted = "async function notify(maxRetries) {\n  let aborted = false;\n  for (let i = 0; i < maxRetries; i++) {\n    try {\n      await notifyOperator();\n      aborted = true;\n      break;\n    } catch (e) {\n      await sleep(1000);\n    }\n  }\n}\n";
    check_absent(JavaScript, aborted, E1);
    // The work, the flag, the exit: the build passed.
    let passed = "async function repair(dir, maxRetries) {\n  for (let attempt = 1; attempt <= maxRetries; attempt++) {\n    try {\n      await runCommand('npm', ['run', 'build'], dir);\n      testPassed = true;\n      break;\n    } catch (error) {\n      await callQAAgent(error.message, dir);\n    }\n  }\n}\n";
    check(JavaScript, passed, &[E1, E2]);
}

#[test]
fn a_history_grown_to_its_budget_counts_the_passes() {
    // Each pass adds its solutions to the history; the budget is how many
    // the run may make, not money or tokens.
    let search = "class Search:\n    def run(self):\n        while len(self.run_history) < self.budget:\n            offspring = self.llm.sample(self.population)\n            for p in offspring:\n                self.run_history.append(p)\n";
    check(Python, search, &[E2]);
    // A budget of tokens stays the budget rule's.
    let tokens = "def run(llm, messages, token_budget):\n    while len(messages) < token_budget:\n        messages.append(llm.chat(messages))\n";
    check_absent(Python, tokens, E2);
    // The size of the conversation is no count of passes.
    let size = "def run(self, llm, history):\n    while True:\n        history.append(llm.chat(history))\n        if len(json.dumps(history)) > self.char_budget:\n            break\n";
    check_absent(Python, size, E2);
}

#[test]
fn a_destructuring_that_names_nothing_is_read() {
    // `const {} = step()` gives no name: the assignment has no target.
    let empty = "async function run(agent) {\n  while (true) {\n    const {} = await agent.step();\n    if (agent.done) {\n      break;\n    }\n  }\n}\n";
    check(JavaScript, empty, &[E1]);
}

#[test]
fn passes_that_brought_nothing_counted_in_a_row_are_no_progress() {
    let empty = "async function run(agent) {\n  let consecutiveEmptyIterations = 0;\n  const EMPTY_ITERATION_LIMIT = 5;\n  for (let iteration = 0; iteration < this.maxIterations; iteration++) {\n    const parsed = await agent.step();\n    if (parsed.answer) {\n      return parsed.answer;\n    }\n    if (!parsed.toolCalls.length) {\n      consecutiveEmptyIterations++;\n      if (consecutiveEmptyIterations >= EMPTY_ITERATION_LIMIT) {\n        return 'stuck';\n      }\n    } else {\n      consecutiveEmptyIterations = 0;\n    }\n  }\n}\n";
    check(TypeScript, empty, &[E1, E2, E5]);
    // Empty replies counted are the model failing to answer: an error threshold.
    let replies = "async function run(agent) {\n  let emptyResponseIterations = 0;\n  while (true) {\n    const reply = await agent.step();\n    if (reply.done) {\n      return reply;\n    }\n    if (!reply.text) {\n      emptyResponseIterations++;\n      if (emptyResponseIterations >= 3) {\n        throw new Error('the model keeps answering nothing');\n      }\n    }\n  }\n}\n";
    check_absent(TypeScript, replies, E5);
    // Empty turns are empty replies too.
    let turns = "async function run(agent) {\n  let emptyTurnCount = 0;\n  for (let i = 0; i < 50; i++) {\n    const reply = await agent.step();\n    if (reply.done) {\n      return reply;\n    }\n    if (!reply.text) {\n      emptyTurnCount++;\n      if (emptyTurnCount >= MAX_EMPTY_TURNS) {\n        return;\n      }\n    }\n  }\n}\n";
    check_absent(TypeScript, turns, E5);
    // Rounds counted when they failed are failures.
    let failed = "def run(agent):\n    empty_rounds = 0\n    for i in range(30):\n        try:\n            if agent.step().done:\n                return\n        except Exception:\n            empty_rounds += 1\n            if empty_rounds >= 3:\n                break\n";
    check_absent(Python, failed, E5);
}

#[test]
fn the_agent_loop_inside_a_walk_over_sprints_is_read() {
    // Each sprint is a whole run of the work; the loop inside it that runs
    // the worker until the evaluator passes it is the agent's.
    let sprints = "async function run(worker: Worker) {\n  for (let sprint = 1; sprint <= totalSprints; sprint++) {\n    let passed = false;\n    let revision = 0;\n    while (!passed && revision <= maxRevisions) {\n      await runAgentPhase(worker, task);\n      const result = parseEvaluationResult(path, sprint);\n      if (result === 'pass') {\n        passed = true;\n      } else {\n        revision++;\n      }\n    }\n  }\n}\n";
    assert!(
        audit(sprints, None, Some(TypeScript)).found().contains(&E1),
        "the evaluator's pass ends the revision loop"
    );
}
