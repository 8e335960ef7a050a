//! E1, goal met (DETECT).
//!
//! # What it detects
//! A loop that leaves because the work is judged done.
//!
//! # Why it matters
//! It is the only exit that knows the loop has finished rather than run out:
//! with it (or E5) the verdict is CONVERGES.
//!
//! # What counts
//! A condition that ends the loop and reads: no tool calls left
//! (`if not msg.tool_calls`, `stop_reason == "end_turn"`), a finish, done,
//! complete or submit action, tests passing (`if pytest; then break`,
//! `returncode == 0`), an empty work queue (`while queue:`), a completion marker
//! found in output (`"DONE" in out`, `grep -q DONE log`), a success status, a
//! score reaching its target. Framework settings that end the framework's loop
//! on success: `is_termination_msg=`, AutoGen's `TextMentionTermination`,
//! the AI SDK's `hasToolCall(...)`, TanStack AI's `untilFinishReason(...)`,
//! `tool_use_behavior="stop_on_first_tool"`,
//! smolagents' `final_answer_checks=`, a CrewAI task's `guardrail=`,
//! LangGraph's `tools_condition` and routers that `return END` under such a
//! condition.
//!
//! # What does not
//! The same words in comments, docstrings or log messages; a `done` flag that
//! never decides whether the loop continues; `ctx.Done()` (that is E8).
//!
//! # Example
//! ```text
//! while True:
//!     reply = client.messages.create(...)
//!     if reply.stop_reason == "end_turn":   # E1
//!         break
//! ```

use super::{ClauseView, COUNT_WORDS};
use crate::facts::{last_name, CallFact, Clause, Facts, KwargFact, Role};
use crate::words::{contains_ignoring_case, split_identifier};

const DONE_WORDS: &[&str] = &["done", "goal", "pass", "final", "submit", "submitted", "lgtm", "answer"];
const MARKER_LITERALS: &[&str] = &[
    "done", "goal", "pass", "final", "end", "submit", "lgtm", "stop", "exit", "nothing", "approve", "idle",
    "ok", "thank", "answer",
];
/// Words of a failure: a result's error is no result.
const FAILURE_WORDS: &[&str] = &["error", "errors", "fail", "failed", "failure"];
const SCORE_WORDS: &[&str] = &[
    "score",
    "accuracy",
    "reward",
    "confidence",
    "quality",
    "coverage",
    "target",
    "desired",
    "rating",
    "grade",
];
/// Words of a constant that holds a completion marker (`EXIT_PHRASE`,
/// `DONE_MARKER`, `COMPLETION_SIGNAL`).
const MARKER_NAMES: &[&str] = &["phrase", "marker", "sentinel", "signal", "keyword", "token"];

/// Passes in a row on which the model asked for nothing, counted to a limit
/// (`if consecutiveNoToolIterations >= 2: break`, `count_empty_action >=
/// threshold`): the model has answered and has nothing left to do. It is no
/// failure (an error threshold) and compares no pass with an earlier one
/// (no progress). (A model that failed to use a command it was told to use,
/// `no_command_count`, made a mistake: that stays with the error threshold.)
/// What a handler made of the line a person typed this pass (`result :=
/// slashHandler.Handle(ctx, line)` ... `if result.Handled`): the REPL's
/// command, not the work's result. (An agent run on the typed line, `result
/// = await agent.run(answer)`, is the work's.)
fn handles_a_typed_command(view: &ClauseView<'_>) -> bool {
    view.from_input
        && view.asks_each_pass
        && view.any(&["handle", "handler", "handled", "command", "commands", "cmd", "slash"])
}

pub(crate) fn passes_without_action(view: &ClauseView<'_>) -> bool {
    view.clause.ordering
        && (view.failure_counter || view.counted || view.any(&["len", "consecutive"]))
        && view.any(&["no", "empty", "without"])
        && view.any(&["tool", "tools", "action", "actions"])
        && !view.has("error")
}

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    // No tool calls left, or the model's own stop reason.
    // (`while IFS= read -r tool_call` reads the calls of one reply, a line
    // at a time: the loop ends when they run out, which says nothing of
    // the work.)
    // (`tc` is a tool call's usual short name: `if not tc_list: return`;
    // not a field of one, `if not tc.function.arguments`.)
    let calls_named = ((view.has("tool") || view.has("function"))
        && view.any(&["call", "calls", "called", "use", "uses", "used", "using", "invocations", "requests"]))
        || ((clause.negated || clause.zero) && names_the_calls_tc(clause));
    let reads_lines = clause.command && clause.call_root.as_deref() == Some("read");
    if calls_named && !reads_lines && !looks_a_tool_up(clause) && !asked_for_tools(view) {
        return true;
    }
    // `block.type == "tool_use"`, `part.kind === "function_call"`.
    if view.any_literal(&["tool", "function"])
        && view.any_literal(&["use", "call", "calls"])
        && (clause.equality || clause.membership || !clause.callees.is_empty())
    {
        return true;
    }
    // This pass's reply is of the text kind (`if response.type == "text":
    // break`), or not of the tool kind (`if kind == "tool": ... continue`
    // before a `return final` the other kinds fall through to): an
    // answer, not a call.
    if clause.equality && view.this_pass && view.any(&["kind", "type"]) {
        let is_text =
            view.any_literal(&["text"]) && !clause.negated && !clause.differs && view.role == Role::Guard;
        let not_a_tool = view.any_literal(&["tool"]) && clause.negated;
        if is_text || not_a_tool {
            return true;
        }
    }
    // An arm for the reply's text variant (`ChatOutcome::Text(text) => {
    // ...; break }` beside `ChatOutcome::ToolCalls { .. }`): an answer.
    if clause.equality && view.role == Role::Guard && !clause.negated && answer_variant(view) {
        return true;
    }
    // An assistant run that no longer requires action
    // (`run.status != "requires_action"`).
    if view.any_literal(&["requires", "required"]) && view.any_literal(&["action"]) && clause.equality {
        return true;
    }
    // The newest message is not a tool result (`last.Role != RoleTool`).
    if view.has("role") && view.has("tool") && clause.equality {
        return true;
    }
    // Until the newest message is the assistant's own (its final reply).
    if view.role == Role::LoopCondition && clause.equality && view.any_literal(&["assistant"]) {
        return true;
    }
    // `if has_tools and len(tool_messages) != 0: return self.send(...)`,
    // `if not had_tools_this_round: break`.
    if view.has("tool") && view.any(&["has", "had", "have", "result", "results", "message", "messages"]) {
        return true;
    }
    // This pass's reply carries an answer and the loop returns it
    // (`if response.content: return ...`); not what the line a person typed
    // this pass made.
    if view.this_pass
        && view.returns_value
        && !clause.negated
        && !clause.ordering
        && !handles_a_typed_command(view)
        && view.any(&["content", "text", "answer", "output", "result"])
    {
        return true;
    }
    // What this pass parsed out of its reply is there, and the loop returns
    // with it (`pr_number = parse_pr_number(output)` ... `if pr_number is
    // not None: return review(pr_number)`): the reply carried what the task
    // was to produce.
    let present = if clause.none_literal {
        clause.differs != clause.negated
    } else {
        !clause.negated && !clause.equality && !clause.ordering && !clause.membership
    };
    if present
        && view.this_pass
        && view.returns_value
        && view.role == Role::Guard
        && !view.from_input
        && view.any(&["parse", "parsed", "extract", "extracted"])
        && !view.any(&["error", "fail", "failed", "failure"])
    {
        return true;
    }
    // The model answered in plain text rather than with calls
    // (`if isinstance(result, str): break` over a reply that is either).
    if view.any_callee(&["isinstance"])
        && view.has("str")
        && !clause.negated
        && view.any(&["response", "reply", "result", "answer", "output", "completion"])
    {
        return true;
    }
    // This pass's turn came back whole, not cut short (`if
    // !response.truncated { break }`): it finished on its own.
    if view.has("truncated") && clause.negated && view.this_pass && !clause.ordering && !clause.equality {
        return true;
    }
    // A grader's verdict that is not a failure (`if report.verdict !=
    // "FAIL": return report`): the work passed.
    if clause.differs
        && view.any_literal(&["error"])
        && view.any(&["verdict", "grade", "graded", "outcome"])
        && view.role == Role::Guard
    {
        return true;
    }
    // The round says whether it reached the goal: the truth of what a call
    // that performs the round returned (`self._got_root =
    // self.perform_round(turn)` ... `while ... and not self._got_root`,
    // `if agent.perform_round(turn) is True:`).
    let performs_round = view.any(&["perform", "execute"]) && view.any(&["round", "step", "turn"]);
    if performs_round
        && (view.this_pass || !view.callees.is_empty())
        && !clause.ordering
        && !clause.none_literal
        && !view.any(&["error", "fail", "failed", "failure"])
    {
        return true;
    }
    // This pass's reply leaves nothing to run: no invocations gathered
    // from it (`if (invocations.length === 0) break`), no code block in it
    // (`if not code_blocks: return reply`). Like a reply without tool
    // calls, it is the answer.
    // (So are no tool outputs gathered from it, `if (toolOutputs.length
    // === 0) break`: only calls make outputs.)
    let invocations = (view.this_pass || view.assigned_in_loop)
        && (view.any(&["invocation", "invocations"])
            || (view.has("tool") && view.any(&["outputs", "results"]) && !view.expanded));
    let code = view.this_pass
        && view.has("code")
        && view.any(&["block", "blocks", "snippet", "snippets", "extract", "extracted"]);
    if (invocations || code) && view.tests_nothing() && !view.has("error") {
        return true;
    }
    // The reply does not end in a code block to run (`if
    // output.endswith(code_end) ...: execute ... else: break`).
    if clause.negated
        && view.any_callee(&["endswith", "endsWith", "ends_with", "HasSuffix"])
        && view.has("code")
    {
        return true;
    }
    // The step this pass ran says it was the last (the Agent Protocol's
    // `step.is_last`; `last` reads as `prev`).
    if view.this_pass && view.has("is") && view.has("prev") && view.any(&["step", "turn", "action", "task"]) {
        return true;
    }
    if view.has("reason") && view.any(&["stop", "done"]) && !view.any_literal(&["max", "length", "token"]) {
        return true;
    }
    // This pass's reply says it stopped (`res.Stopped`, `response.stop`), or
    // the loop decided it should (`should_stop = True` on a finishing tool).
    // (An error check reads its own words: `err = tracer.SpanStop(ctx)`.)
    if (view.this_pass || view.assigned_in_loop)
        && view.has("stop")
        && !clause.ordering
        && !(view.expanded && view.has("error"))
    {
        return true;
    }
    // A completion marker or success status compared with the output.
    let searches = clause.membership
        || clause.equality
        || view.any_callee(&[
            "contains",
            "includes",
            "grep",
            "search",
            "match",
            "startswith",
            "endswith",
            "find",
            "has",
        ]);
    // (What a person typed is theirs: `if command == "exit"` is E6.)
    if searches && view.any_literal(MARKER_LITERALS) && !view.from_input {
        return true;
    }
    if searches && marker_constant(view) {
        return true;
    }
    // A search for a completion marker that found it (`m =
    // re.search(r"Status: success", reply)` ... `if m: break`).
    if !clause.negated
        && !clause.ordering
        && !view.from_input
        && view.searched.iter().any(|word| MARKER_LITERALS.contains(word))
    {
        return true;
    }
    // The step reported that it ended the loop (`if (didEndLoop) break`).
    if view.any(&["end", "ends", "ended"])
        && view.any(&["loop", "conversation", "chat", "session", "episode", "game", "dialog", "dialogue"])
    {
        return true;
    }
    // An exit or finish action (`action.Exit`, `isinstance(a, ExitAction)`).
    if view.has("action") && view.has("exit") {
        return true;
    }
    // A reviewer that approves, or nothing left to fix. (Critiques are
    // "issue" to the words: `ge.isApproved(critiques)` after the evaluators
    // ran is the models' approval.)
    if view.has("critic") && view.any(&["approve", "pass", "done", "ok", "lgtm"]) {
        return true;
    }
    if view.has("approve")
        && view.any(&["evaluate", "issue"])
        && !clause.negated
        && !view.from_input
        && !view.any(&["human", "input", "confirm"])
    {
        return true;
    }
    if view.has("issue") && view.tests_nothing() {
        return true;
    }
    if error_collection(view) && view.tests_nothing() && !clause.ordering {
        return true;
    }
    // A build or a check that wrote nothing to its error stream
    // (`if stderr.trim().is_empty() { break }`).
    if view.tests_nothing()
        && !clause.ordering
        && clause.idents.iter().any(|ident| ident.eq_ignore_ascii_case("stderr"))
    {
        return true;
    }
    // Tests passing, or a command that succeeded.
    if view.any_callee(&["test"])
        || (view.has("test") && (clause.command || view.any(&["pass", "ok", "done"])))
    {
        return true;
    }
    // A check that returned no error (`if err := t.validateJSON(out); err
    // != nil { continue }` ... `return out`): the output passed it.
    // (A loop's own condition, or a recursion's guard, is left when it
    // turns false: the recursion that goes on only while `err == nil` does
    // not hold ends once the check returns no error.)
    let leaves_on_no_error = match view.role {
        Role::Guard => clause.differs == clause.negated,
        Role::LoopCondition => clause.differs != clause.negated,
        _ => false,
    };
    if view.has("test") && view.has("error") && clause.none_literal && leaves_on_no_error && !clause.ordering
    {
        return true;
    }
    // `until make check; do ...`: the loop ends when its command succeeds.
    if clause.command && (clause.until || view.has("check")) {
        return true;
    }
    // A zero status is success; `status != 0` is a failure (unless read in
    // its else branch). A loop's own condition is left when it turns false:
    // `while returncode != 0:` leaves on success.
    let equals = (clause.differs == clause.negated) != (view.role == Role::LoopCondition);
    let status = view.any(&["returncode", "exitcode", "code", "status", "rc"]);
    if status && clause.equality && clause.zero && equals {
        return true;
    }
    // Any other number compared with a status is some failure's code
    // (`status -ne 0`, `EXIT_CODE -eq 1`), whatever the status was made of.
    if status && clause.equality && clause.number && !view.any_literal(MARKER_LITERALS) {
        return false;
    }
    // A status that is no longer running (`task.status !== TaskStatus.RUNNING`,
    // `if data.status != StatusEnum.RUNNING: break`): a finishing action
    // moved it on.
    if (view.has("status") || view.has("state"))
        && clause.equality
        && clause.differs != clause.negated
        && clause
            .idents
            .iter()
            .any(|ident| ident.rsplit(['.', ':']).next().is_some_and(|last| last == "RUNNING"))
    {
        return true;
    }
    // An empty work queue (`while next_item:`, `while [ -n "$(tracker next)" ]`).
    if view.role == Role::LoopCondition && view.has("next") {
        return true;
    }
    // A step that gives back the final output once there is one (Rust:
    // `if let Some(content) = agent.step().await? { break }`).
    if view.role == Role::Guard
        && view.has("some")
        && view.any_callee(&["step"])
        && !clause.negated
        && clause.idents.iter().any(|ident| ident == "Some")
    {
        return true;
    }
    // Nothing left unfinished (`unfinished = [s for s in seqs if not
    // s["finished"]]` ... `if not unfinished: break`).
    if view.has("unfinished")
        && (clause.negated || clause.zero || view.has("empty") || view.role == Role::LoopCondition)
        && (!clause.ordering || clause.zero)
    {
        return true;
    }
    // Nothing still running (`if len(active_indices) == 0: break`): every
    // sample, task or worker the loop drives has finished. (A flag, `if
    // not self.active`, is a switch someone else turns: not this.)
    if !clause.negated && view.has("active") && (clause.zero || view.has("empty")) {
        return true;
    }
    // (An agent's inbox of queued inputs is such a list: `if
    // inner.shutdown && inner.inbox.is_empty() { return }`.)
    let work_list =
        view.any(&["queue", "inbox"]) || (view.any(&["task", "job", "item"]) && view.any(&["list", "lists"]));
    if work_list
        && (clause.negated
            || clause.zero
            || clause.none_literal
            || view.has("empty")
            || view.role == Role::LoopCondition)
    {
        return true;
    }
    // No function ran this pass (`if not func_response_parts: break`).
    if view.this_pass
        && view.tests_nothing()
        && view.any(&["function", "func"])
        && view.any(&["response", "responses", "result", "results", "parts", "params", "args", "calls"])
    {
        return true;
    }
    // The status is one of the end statuses (`endTaskStatuses.has(status)`,
    // `state in TERMINAL_STATES`): the finish action set one of them.
    if view.any(&["status", "statuses", "state", "states"])
        && view.any(&["end", "terminal", "final"])
        && (clause.membership || view.any(&["has", "includes", "contains"]))
        && !view.any(&["error", "fail", "failed", "cancel", "abort"])
    {
        return true;
    }
    // Work left on a checklist (`while grep -q '\[ \]' PLAN.md`).
    if clause.unchecked_box {
        return true;
    }
    // The reply this pass has something to say (`if content != "" {
    // break }`): the model answered instead of asking for a tool.
    if clause.empty_string
        && clause.differs
        && view.this_pass
        && view.has("content")
        && view.any(&["response", "reply", "answer", "message", "output", "completion"])
        && !view.any(&["error", "err", "tool", "tools", "call", "calls"])
    {
        return true;
    }
    // No agent to hand the work on to (`if (!handoff?.agentId) break`): the
    // swarm's or the team's work is done.
    if view.has("handoff") && (clause.negated || clause.none_literal || view.tests_nothing()) {
        return true;
    }
    // The reply holds nothing to execute (`if
    // is_empty_execute_response(decoded): break`): no tool asked for.
    if view.this_pass
        && view.has("empty")
        && view.any(&["execute", "execution", "tool", "function", "action", "actions"])
        && view.any(&["response", "responses", "reply", "replies"])
    {
        return true;
    }
    // This pass asked for nothing more (`if not actions: break`,
    // `computerCalls.length === 0`); what a person typed running out is
    // theirs, and an error that came with the action (`action, err =
    // prompt()` ... `if err != nil`) is no answer.
    if view.this_pass
        && view.tests_nothing()
        && !view.from_input
        && !view.has("input")
        && !view.has("error")
        && view.any(&[
            "calls",
            "actions",
            "commands",
            "executes",
            "operations",
            "requests",
            "functions",
            "questions",
            "queries",
            "subtasks",
            "action",
            "command",
            "call",
            "gaps",
            "followups",
        ])
    {
        return true;
    }
    // No environment left running after this pass's step (`env_outputs =
    // es_manager.step(actions)` ... `if len(env_outputs) == 0: break`): a
    // rollout whose every episode has ended.
    if view.this_pass
        && view.tests_nothing()
        && !view.from_input
        && view.any(&["env", "envs", "environment", "environments"])
        && view.any(&["step", "outputs", "obs", "observations", "active", "running"])
        && !view.any(&["error", "errors", "fail", "failed", "config", "var", "vars"])
    {
        return true;
    }
    // The game or the episode is over (`is_game_over, reason =
    // env.is_game_over(state)` ... `if is_game_over:`): the environment
    // says the episode has ended, as a step's `terminated` does.
    if game_over_named(clause) && !clause.negated && !clause.ordering && !view.from_input {
        return true;
    }
    // `self.state.is_round_end()`, `isOver()`.
    if let Some(name) = &clause.call_root {
        let words = crate::words::canonical_words(name);
        if words.first().is_some_and(|w| w == "is" || w == "has")
            && words.iter().any(|w| matches!(w.as_str(), "end" | "over" | "done"))
        {
            return true;
        }
    }
    // A reviewer needs no more changes (`not result.needs_improvement`).
    if view.any(&["needs", "need", "requires"]) && view.any(&["change", "issue"]) && clause.negated {
        return true;
    }
    // A stop condition given to the loop (`if self.stopping_condition(response)`).
    if view.has("stop") && view.any(&["condition", "when", "func"]) {
        return true;
    }
    // The tools say the run must stop (`while (!toolChain.mustStop())`): a
    // completion tool's stop, which the outside event's rule leaves here.
    if view.has("stop") && view.has("tool") && !clause.ordering && !view.has("error") {
        return true;
    }
    // No more work needed (`!plan.more_actions_needed`, or the loop runs
    // `while assessment.more_info_required`).
    if view.has("more")
        && view.any(&["needed", "required", "remaining"])
        && clause.negated != (view.role == Role::LoopCondition)
    {
        return true;
    }
    // The planner did not ask to plan again (`if not is_replan: break`).
    if view.has("replan") && clause.negated && view.role == Role::Guard {
        return true;
    }
    // The reply is not a hand-off to another agent (`if not
    // isinstance(response, AgentTransfer): return response`).
    if view.any_callee(&["isinstance"]) && clause.negated && view.any(&["transfer", "handoff"]) {
        return true;
    }
    // This pass did not ask to go on (`if not step.heartbeat_request`,
    // `if not reply.should_continue`). (A method asked whether to go on,
    // `self.loop.should_continue(state)`, is a policy whose reasons are
    // its own: turns, spend or the work. A person asked whether to go on,
    // `if !user_wants_continue`, is an interrupt; "user" in the words of
    // where the values came from may be a message's role.)
    if view.this_pass
        && clause.negated
        && view.any(&["heartbeat", "continue", "continuation", "more", "followup", "again"])
        && !called_name_says(view, "continue")
        && (view.expanded || !view.has("human"))
    {
        return true;
    }
    // This pass's prediction is the assistant's own reply rather than a
    // call (`if prediction["role"] == "assistant": break` beside `elif
    // prediction["role"] == "api"`): the model answered.
    if view.this_pass
        && clause.equality
        && !clause.negated
        && !clause.differs
        && view.role == Role::Guard
        && !view.from_input
        && view.has("role")
        && view.any_literal(&["assistant"])
        && !view.any(&["tool", "tools", "call", "calls", "function"])
    {
        return true;
    }
    // This pass's reply is addressed to the user and handed back
    // (`if post.send_to == "User": return post`).
    if view.this_pass && view.returns_value && clause.equality && view.any_literal(&["human"]) {
        return true;
    }
    // Every worker idle.
    if view.has("idle") {
        return true;
    }
    // `while filepaths:` where this pass's reply made the list: until the
    // model asks for nothing more.
    if view.role == Role::LoopCondition
        && view.this_pass
        && !clause.negated
        && !clause.ordering
        && !clause.equality
        && !clause.membership
        && clause.callees.is_empty()
    {
        return true;
    }
    // `while not result:`, `while (!state.answer)`: until there is an answer.
    if view.role == Role::LoopCondition
        && view.tests_nothing()
        && view.any(&["result", "answer", "final", "solution", "output"])
    {
        return true;
    }
    // This pass produced a result (`if result is not None: break`).
    let exists = !clause.ordering
        && !clause.membership
        && (clause.equality == (clause.none_literal && clause.differs));
    // (Not its error, `if result.get("error")`; nor what the line a person
    // typed this pass made, `result := handler.Handle(ctx, line)` ... `if
    // result.Handled`.)
    if view.this_pass
        && exists
        && !clause.negated
        && !handles_a_typed_command(view)
        && view.any(&["result", "answer", "final"])
        && !view.any(FAILURE_WORDS)
        && !view.any_literal(FAILURE_WORDS)
    {
        return true;
    }
    // Nothing ready to run (`ready_nodes = self.get_ready_nodes()` ... `if
    // not ready_nodes: break`): the work whose dependencies are met has run
    // out, the plan is drained.
    if view.has("ready")
        && view.tests_nothing()
        && view.any(&["node", "nodes", "task", "subtask", "step", "steps", "job", "item", "items", "queue"])
    {
        return true;
    }
    // Nothing left in the plan (`if not plan.pop_next_subtask(): break`).
    // (Not the next step's name compared with one, `next_action().name ==
    // "human_confirm"` read in its `else`: that asks which step comes.)
    let names_the_step = clause.equality && !clause.literals.is_empty();
    if view.has("next")
        && view.tests_nothing()
        && !names_the_step
        && view.any(&["task", "subtask", "item", "job", "action", "query", "queue", "stream"])
    {
        return true;
    }
    // A phrase the model was told to say when it is done, found in its
    // reply (`"decision made: novel" in text`).
    if view.this_pass && clause.membership && view.literals.len() >= 2 && !clause.negated {
        return true;
    }
    // A judge's finding on this pass's output, true (`feedback =
    // generate(judge_prompt)` ... `if feedback.jailbroken: break`, `if
    // judge_res.harmful`): the judge says the goal is reached.
    if view.this_pass
        && !clause.negated
        && !clause.ordering
        && !clause.equality
        && !clause.membership
        // (The raw names: "feedback" is an issue to the words, and a
        // review's issues, true, are work left.)
        && clause.idents.iter().any(|ident| {
            let ident = ident.to_ascii_lowercase();
            ["judge", "feedback", "verdict", "evaluation", "assessment"].iter().any(|w| ident.contains(w))
        })
        && !view.any(&["error", "fail", "failed", "refusal", "refused", "invalid", "retry", "human"])
        && !view.from_input
    {
        return true;
    }
    // A score that reached its target (`result.get("confidence", 0) > 0.9`
    // names it by the key it looks up).
    let keyed_score = view.any_callee(&["get"]) && view.any_literal(SCORE_WORDS);
    if (view.any(SCORE_WORDS) || keyed_score) && (clause.ordering || (clause.equality && clause.number)) {
        return true;
    }
    // A score equal to the most it can be (`result.score ==
    // result.max_score`): nothing is left to gain.
    if view.has("score") && view.any(&["max", "perfect", "full"]) && clause.equality && !clause.negated {
        return true;
    }
    // A request to end that the loop does not make itself
    // (`while not self.should_terminate.is_set()`, set by a signal handler
    // or a command): something outside asked it to stop (E8), the work is
    // not judged done.
    if requested_termination(view) {
        return false;
    }
    if clause.ordering {
        // Completion signals counted up to a threshold, every task done.
        return view.any(DONE_WORDS) && !view.any(COUNT_WORDS);
    }
    // `if !ok` is Go's "no value came" (a closed channel, an iterator's
    // end), not a failed goal; Rust's `Ok(line) =>` and `Ok(0) =>` are a
    // read's result, not a goal.
    let result_pattern = clause.idents.iter().any(|ident| ident == "Ok" || ident == "Some");
    // (`InputResult::Submitted(value)`: what a person typed was sent, not
    // the work handed in.)
    // (Nor is a line editor's `Ok(Signal::Success(line))`: the person
    // typed a line.)
    let input_submitted = || {
        (view.has("submit")
            && view.has("input")
            && !view.any(&["done", "goal", "pass", "final", "answer", "lgtm"]))
            || (view.has("signal")
                && view.any(&["line", "buffer"])
                && !view.any(&["goal", "final", "answer"]))
    };
    (view.any(DONE_WORDS) && !input_submitted() && !goals_kind(view))
        || (view.has("ok") && !clause.negated && !result_pattern)
        || (view.has("solution") && !clause.negated)
}

/// A collection of tool calls by their short name (`tc_list`, `tcs`).
fn names_the_calls_tc(clause: &Clause) -> bool {
    // (Most negated names hold no `tc` at all: asked before any split.)
    clause.idents.iter().filter(|ident| !ident.contains('.') && contains_ignoring_case(ident, "tc")).any(
        |ident| {
            let words = split_identifier(ident);
            ident == "tcs"
                || (words.iter().any(|w| w == "tc") && words.iter().any(|w| w == "list" || w == "calls"))
        },
    )
}

/// A Rust arm for the variant of a model's reply that is its answer
/// (`llm::ChatOutcome::Text(text)`, `Reply::Final(..)`).
fn answer_variant(view: &ClauseView<'_>) -> bool {
    let variant = &view.clause.arm_variant;
    let names = |words: &[&str]| variant.iter().any(|w| words.contains(&w.as_str()));
    names(&["text", "final", "answer", "done"])
        && !names(&["tool", "call", "calls", "error", "delta", "chunk"])
        && view.any(&["chat", "llm", "model", "reply", "response", "outcome", "generate"])
        && !view.any(&["stream", "chunk", "delta", "event"])
}

/// `if tool_calls:` read plainly, around the way out: the reply asked for
/// tools, and what leaves under that is no answer (the answer is the reply
/// with none: `if not tool_calls`, `len(calls) == 0`, an `else`).
fn asked_for_tools(view: &ClauseView<'_>) -> bool {
    let clause = view.clause;
    view.role == Role::Guard
        && !clause.negated
        && !(clause.equality || clause.ordering || clause.membership || clause.zero || clause.none_literal)
        && !view.any(&["no", "empty", "none", "without", "final", "stop", "done", "end", "answer"])
}

/// `if name in tools_dict:` looks a called tool up in the registry of
/// tools by its name: it says which tool, not whether any was called.
fn looks_a_tool_up(clause: &Clause) -> bool {
    clause.membership
        && clause.literals.is_empty()
        && clause.idents.iter().any(|ident| {
            let words = split_identifier(last_name(ident));
            words.iter().any(|w| matches!(w.as_str(), "tool" | "tools" | "function" | "functions"))
                && words.iter().any(|w| {
                    matches!(
                        w.as_str(),
                        "dict" | "map" | "registry" | "registered" | "available" | "table" | "lookup"
                    )
                })
        })
}

/// The goal's kind, not its state: `self.is_game_goal()`,
/// `goal.description.contains("reflection")` route the work by what it
/// is. (Only where "goal" is the clause's one word of the work done.)
fn goals_kind(view: &ClauseView<'_>) -> bool {
    if !view.has("goal") || DONE_WORDS.iter().any(|w| *w != "goal" && view.has(w)) {
        return false;
    }
    let described = view.any(&["description", "kind", "type", "category"]);
    let named_kind = view.clause.idents.iter().any(|ident| {
        let words = crate::words::canonical_words(ident);
        // `is_game_goal`: a word between `is` and `goal`.
        matches!(words.as_slice(), [is, _, goal] if is == "is" && goal == "goal")
    });
    described || named_kind
}

/// A name of the clause says the game or the episode is over, in that
/// order (`is_game_over`, `gameOver`, `episode_over`): not "over" anywhere
/// beside a game (`moves_over_limit`, `episode_handed_over`).
fn game_over_named(clause: &Clause) -> bool {
    clause.idents.iter().any(|ident| {
        let words: Vec<String> = split_identifier(ident).iter().map(|w| w.to_ascii_lowercase()).collect();
        words.windows(2).any(|pair| matches!(pair[0].as_str(), "game" | "episode") && pair[1] == "over")
    })
}

/// A flag that asks the loop to end (`should_terminate`), read but not set
/// on the loop's passes: whoever sets it asked the loop to stop. (A
/// finishing tool's or action's flag, `self.complete_tool.should_stop`,
/// says the work is done.)
fn requested_termination(view: &ClauseView<'_>) -> bool {
    !view.this_pass
        && !view.assigned_in_loop
        && view.has("should")
        && view.has("done")
        && !view.any(&["tool", "action", "answer", "final", "submit", "step"])
        // (A method of that name, `self.should_terminate()`, may judge the
        // work itself.)
        && !called_name_says(view, "should")
}

/// Whether the clause is a call whose own name holds `word`
/// (`self.loop.should_continue(state)` says "continue").
fn called_name_says(view: &ClauseView<'_>, word: &str) -> bool {
    view.clause.call_root.as_deref().is_some_and(|root| {
        crate::words::canonical_words(root.rsplit(['.', ':']).next().unwrap_or(root))
            .iter()
            .any(|w| w == word)
    })
}

/// A constant in capitals that names a marker (`EXIT_PHRASE in response`).
fn marker_constant(view: &ClauseView<'_>) -> bool {
    view.clause.idents.iter().any(|ident| {
        ident.len() > 2
            && ident.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && {
                let words = crate::words::canonical_words(ident);
                // (`EXIT_CODE`, `STOP_STATUS` hold a status, not a marker.)
                !words.iter().any(|w| matches!(w.as_str(), "code" | "status" | "rc" | "len"))
                    && words.iter().any(|w| {
                        MARKER_NAMES.contains(&w.as_str())
                            || matches!(w.as_str(), "done" | "exit" | "stop" | "end" | "pass" | "goal")
                    })
            }
    })
}

/// A collection of errors or failures (`errors`, `failing_tests`), as
/// opposed to one error value: when it is empty, nothing is left to fix.
fn error_collection(view: &ClauseView<'_>) -> bool {
    view.clause.idents.iter().any(|ident| {
        let lower = ident.to_ascii_lowercase();
        lower.ends_with("errors") || lower.ends_with("failures") || lower.contains("failing")
    })
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let value_has = |word: &str| kwarg.value_words.iter().any(|w| w == word);
    let literal_has = |word: &str| kwarg.value_literals.iter().any(|w| w == word);
    match kwarg.name.as_str() {
        // (CrewAI's task `guardrail=` accepts an output only when it passes.)
        "is_termination_msg" | "final_answer_checks" | "guardrail" => true,
        "stopWhen" | "stop_when" => value_has("tool") && (value_has("call") || value_has("calls")),
        "tool_use_behavior" | "toolUseBehavior" => literal_has("stop") || value_has("stop"),
        _ => false,
    }
}

pub(crate) fn call_matches(_facts: &Facts, call: &CallFact) -> bool {
    match call.callee_last.as_str() {
        "TextMentionTermination"
        | "StopMessageTermination"
        | "FunctionCallTermination"
        | "TextMessageTermination"
        | "SourceMatchTermination"
        | "hasToolCall"
        | "StopAtTools" => true,
        // (On "length" the reply was cut off: that is no answer.)
        "untilFinishReason" => call.arg_literals.iter().any(|w| w == "stop"),
        "add_conditional_edges" => {
            call.arg_words.iter().any(|w| w == "tool") && call.arg_words.iter().any(|w| w == "condition")
        }
        _ => false,
    }
}
