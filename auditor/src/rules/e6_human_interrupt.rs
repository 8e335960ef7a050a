//! E6, human interrupt (EXTERNAL).
//!
//! # What it detects
//! A person can stop the loop: an interrupt handler that leaves, an approval or
//! escalation step, a prompt that asks whether to go on.
//!
//! # Why it matters
//! It is the last line of defence and says nothing about convergence, so it
//! never decides the verdict; but a loop without it cannot be stopped
//! politely.
//!
//! # What counts
//! `except KeyboardInterrupt: break` inside the loop, `signal.signal(SIGINT,
//! handler)`, `process.on("SIGINT", ...)`, `trap ... INT`, `signal.Notify(c,
//! os.Interrupt)`, `tokio::signal::ctrl_c()`; a condition that reads an
//! approval or a person's answer (`if input("continue? ") != "y": break`,
//! `if not approved: return`, `if result.tool_rejected: return`, a review
//! asked of a person); LangGraph's `interrupt(...)` and
//! `interrupt_before=`; AutoGen's `HandoffTermination`, a
//! `human_input_mode` other than `"NEVER"`.
//!
//! # What does not
//! A handler that catches the interrupt and carries on (warning
//! `interrupt-swallowed`); `signal.signal(SIGINT, SIG_IGN)`.
//!
//! # Example
//! ```text
//! try:
//!     step()
//! except KeyboardInterrupt:   # E6
//!     break
//! ```

use super::{is_signal_registration, name_words, ClauseView};
use crate::facts::{CallFact, Facts, KwargFact, Role};

const ANSWERS: &[&str] = &["y", "yes", "n", "no", "q", "quit", "stop", "exit", "abort", "approve", "cancel"];

/// What a person does to a loop: stop it, answer it, let it go on.
const PERSON_ACTS: &[&str] = &[
    "cancel",
    "stop",
    "interrupt",
    "approve",
    "confirm",
    "input",
    "ask",
    "quit",
    "exit",
    "reply",
    "answer",
    "abort",
    "feedback",
    "decision",
    "await",
    "awaiting",
];

/// A cancellation in code that ties cancelling to a person
/// (`if (signal.aborted) throw new UserAbortError()`, `abortReason =
/// 'user_interrupt'`): the person stopped it. Not a count of cancellations
/// compared with a limit.
pub(crate) fn cancelled_by_person(view: &ClauseView<'_>) -> bool {
    view.cancel_by_person
        && (view.any(&["cancel", "interrupt"])
            || (view.clause.equality && view.any_literal(&["cancel"]) && view.any_literal(&["human"])))
        && !view.clause.ordering
        && !view.any(&["detect", "stall", "timeout", "deadline"])
}

/// What the outside event's rule leaves to this one (it is judged first):
/// a stop the clause ties to a person by its own words (a person who
/// cancels, the `ctrlc` crate's Ctrl-C, the line editor's), by the code's
/// naming of its cancellations, or by what the person typed (`choice ==
/// 'cancel'`).
pub(crate) fn persons_stop(view: &ClauseView<'_>) -> bool {
    (view.has("human") && view.any(&["cancel", "stop", "interrupt"]))
        || chose_to_cancel(view)
        || view.has("ctrlc")
        || cancelled_by_person(view)
        || ctrl_c_at_the_prompt(view)
        || (view.from_input && view.any_literal(&["cancel", "abort"]))
        || turned_down(view)
        // (`esc.cancelled.is_set()`: the Esc key's watcher cancelled.)
        || (view.has("cancel") && view.any(&["esc", "escape"]))
}

/// The choice made at a review step is to cancel (`if action ==
/// "cancel": return`, `choice === 'cancel'`, `approval_result ==
/// "cancel"`): a menu's answer, a person's.
/// (An error's name compared with one, `e.name === "AbortError"`, is not.)
fn chose_to_cancel(view: &ClauseView<'_>) -> bool {
    view.clause.equality
        && view.any_literal(&["cancel"])
        && !view.any_literal(&["error"])
        && view.any(&[
            "action",
            "choice",
            "answer",
            "decision",
            "selection",
            "selected",
            "option",
            "approve",
            "confirm",
        ])
}

/// A call a person turned down at its approval step (`if tool_rejected:
/// return`, `allRejected`, `has_recent_interrupt_or_decline`), not a
/// verdict of a model, a check or a filter.
fn turned_down(view: &ClauseView<'_>) -> bool {
    view.has("reject")
        && !view.any(&[
            "trip",
            "breaker",
            "critic",
            "evaluate",
            "judge",
            "issue",
            "test",
            "guard",
            "guardrail",
            "filter",
            "model",
            "llm",
            "schema",
            "validator",
            "policy",
        ])
}

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    if cancelled_by_person(view) || (chose_to_cancel(view) && view.role != Role::Handler) {
        return true;
    }
    // A person's answer that lets the loop end (`user_feedback =
    // response['user_input']` ... `if user_feedback == 'continue': return`):
    // the person tested the work and said to move on.
    if view.role == Role::Guard
        && view.clause.equality
        && !view.clause.differs
        && view.has("human")
        && view.any(&["response", "input", "answer"])
        && view.any_literal(&["continue", "done", "approve", "yes", "y", "ok"])
        && !view.any(&["simulator", "simulate", "simulated", "model", "llm", "agent", "generate"])
    {
        return true;
    }
    if view.role == Role::Handler {
        // `except KeyboardInterrupt`, `except EOFError` (Ctrl-D at a prompt).
        return view.has("interrupt") || view.has("sigint") || view.has("eof");
    }
    // An interrupt that nothing ties to a person (`self.interrupted`,
    // `checkInterrupt()`, set by a `cancel()` method) is a stop from outside
    // (E8); the keyboard's, a person's, Ctrl-C's or Esc's is theirs.
    // (`ctrlc` is also the Rust crate that catches Ctrl-C.)
    let persons_interrupt = (view.has("interrupt")
        && view.any(&["keyboard", "human", "ctrl", "esc", "escape", "key", "sigint"]))
        || view.has("sigint")
        || view.has("ctrlc")
        || (view.has("esc") && view.any(&["key", "pressed", "press", "cancel"]));
    // An escalation is a person's only when the clause says to whom: a
    // run escalated by its own stuck tracker or a hard limit is not.
    let escalated_to_a_person = view.has("escalate") && view.any(&["human", "operator", "person", "manual"]);
    // A confirmation asked of someone; not a permission level compared with
    // a mode (`permLevel === 'autopilot'`), and not a name whose value only
    // mentions one (`to_defer` of calls that require confirmation) unless
    // that value was asked of the user (`should_retry = ask_confirm(...)`).
    let compared_with_a_mode = view.clause.equality && !view.clause.literals.is_empty();
    // (`hitl`: human in the loop.)
    let asked = || !view.expanded || view.any(&["ask", "human", "hitl"]);
    let confirmation = view.has("confirm") && asked() && !compared_with_a_mode;
    if persons_interrupt || escalated_to_a_person || confirmation {
        return true;
    }
    // An approval that a model reviewer gives is a goal check (E1), one
    // that a person gives is theirs.
    // (Critiques are "issue" to the words: `isApproved(critiques)`; an
    // approval strategy, a majority of evaluators, is a setting of models.)
    // (As for a confirmation, a name whose value only mentions approval,
    // `outcome` after `outcome = dispatch_approved_tool(call)`, is not
    // asked of anyone.)
    // (Whether a call needs approval, `if tc.NeedsApproval`, is asked of
    // the call, not of the person: their answer comes after. A pass whose
    // result says approval is required, `approval_required=$(... | jq ..)`,
    // stops there to hand the run to the person.)
    if view.has("approve")
        && !view.any(&["critic", "evaluate", "evaluator", "judge", "issue", "majority", "strategy"])
        && (view.this_pass || !view.any(&["need", "needs", "require", "requires", "required"]))
        && asked()
    {
        return true;
    }
    // A call a person turned down, or a review asked of a person
    // (`human_review_requested`), in the clause's own words.
    if (turned_down(view) || (view.has("human") && view.has("critic")))
        && !view.expanded
        && !view.clause.ordering
    {
        return true;
    }
    // "user" is also the role of a message: only the clause's own words
    // make it a person's act, not the words of where its values came from.
    if view.has("human") && (view.any(PERSON_ACTS) || view.any_literal(ANSWERS)) && !view.expanded {
        return true;
    }
    // `for scanner.Scan()`, `while read -r line`: the loop lasts as long as
    // the person types.
    if view.role == Role::LoopCondition && (view.from_input || view.any_callee(&["input", "scan"])) {
        return view.from_input || view.any_callee(&["input"]);
    }
    // The outcome names a question left for the person (`Ok(ToolOutput::
    // ClarificationNeeded(question)) => return`, `except
    // ClarificationRequested`): the run waits on their answer.
    // (When the loop leaves on it being asked, `while !needsClarification`
    // too; `clarification is None` asks that none was.)
    let none_asked = view.clause.none_literal && !view.clause.differs;
    let leaves_when_asked = ((view.role == Role::Guard) != view.clause.negated) && !none_asked;
    if !view.expanded
        && leaves_when_asked
        && view.any(&["clarification", "clarify"])
        && view.any(&["needed", "need", "needs", "request", "requested", "required", "awaiting", "ask"])
    {
        return true;
    }
    // The model's action asks the person a question and the loop hands
    // the run back to wait for the answer (`action_name ==
    // "ask_user_question"`).
    // So does a step that asks a person's approval (`case
    // "request_approval_from_manager": return thread`, a graph's next
    // action `"human_confirm"`), and a turn that
    // ended on a tool call turned down (`stop_reason == "tool_rejected"`).
    if view.clause.equality
        && !view.clause.differs
        && ((view.any_literal(&["ask"]) && view.any_literal(&["human"]))
            // (A task left waiting on the person's clarification, `status
            // == "awaiting_clarification"`.)
            || (view.any_literal(&["clarification", "clarify"])
                && view.any_literal(&["awaiting", "waiting", "wait", "needs", "need", "needed", "request", "ask"]))
            || (view.any_literal(&["approve"]) && view.any_literal(&["request", "ask", "human"]))
            || (view.any_literal(&["confirm"]) && view.any_literal(&["human"]) && !view.clause.negated)
            || (view.any_literal(&["reject"])
                && view.any_literal(&["tool", "call"])
                && !view.any_literal(&[
                    "policy",
                    "guard",
                    "guardrail",
                    "filter",
                    "model",
                    "schema",
                    "validator",
                ])))
    {
        return true;
    }
    // A result that says the person declined a call (`"User declined to
    // execute tool" in result.error`): their refusal, in the words of the
    // code that asked them. (Not `"Access denied for user"`, a database's
    // refusal.)
    if (view.clause.equality || view.clause.membership)
        && !view.clause.differs
        && !view.clause.negated
        && view.any_literal(&["reject"])
        && view.any_literal(&["human"])
        && view.any_literal(&["tool", "execute", "action", "call", "command", "run"])
    {
        return true;
    }
    // `if line.strip() in ("exit", "quit")`: nobody but a person types quit.
    if (view.clause.equality || view.clause.membership) && view.any_literal(&["quit", "bye", "goodbye"]) {
        return true;
    }
    // What a person typed: a value read from them, or one the clause names
    // as the user's input (`user_input`); not any name with the word
    // (`refix_input_json`, a tool's `action_input`).
    let typed = view.from_input || (view.has("input") && view.has("human") && !view.expanded);
    // (What a pass's call made of a task typed once before the run, `result
    // = agent.step(task)`, is the agent's answer, not the person's: only a
    // loop that reads a line on its passes hands typed values to its calls.)
    let typed_each_pass = view.asks_each_pass || !view.this_pass;
    // `None => break` on the next line of standard input: the person closed
    // it (Ctrl-D), which is as much their act as typing quit.
    // So is an empty line (`if answer == "" { return }`).
    let empty_line = view.clause.empty_string && view.clause.equality && !view.clause.differs;
    let input_closed = view.from_input
        && typed_each_pass
        && (view.tests_nothing() || view.any_callee(&["next"]) || empty_line);
    // `Err(ReadlineError::Eof) => break`: the person closed the prompt
    // (Ctrl-D). `ChatCommand::Quit => break`: a command only a person types.
    // So is a quit flag of what the line a person typed this pass made
    // (`result := handler.Handle(ctx, line)` ... `if result.Quit {
    // return }`).
    let quit_command = view.has("quit") && (view.any(&["command", "cmd"]) || (typed && view.asks_each_pass));
    // `ReadLineResult::Eof => break`: a line editor's end of input, by its
    // own words.
    // (An error compared with the end of a stream, `err == io.EOF`, is
    // read as the person's only when what was read is theirs: `typed`.)
    let line_closed =
        view.has("eof") && view.has("line") && view.any(&["read", "editor"]) && !view.has("error");
    view.any_callee(&["input"])
        || line_closed
        || (typed && typed_each_pass && (view.any_literal(ANSWERS) || view.clause.negated || view.has("eof")))
        || input_closed
        || quit_command
        || ctrl_c_at_the_prompt(view)
}

/// `Err(ReadlineError::Interrupted) => break` (a line reader is "input"
/// to the words): the line editor's Ctrl-C, a person's key.
fn ctrl_c_at_the_prompt(view: &ClauseView<'_>) -> bool {
    // (The rarest word first: this runs for most clauses.)
    (view.has("interrupt") && view.has("input") && view.has("error"))
        // `if was_plain_ctrl_c and ...`: a flag of the key itself.
        || (view.has("ctrl") && view.has("c"))
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = name_words(kwarg);
    match kwarg.name.as_str() {
        "human_input_mode" => !kwarg.value_literals.iter().any(|w| w == "never"),
        _ => words.iter().any(|w| w == "interrupt") && (words.iter().any(|w| w == "prev" || w == "after")),
    }
}

pub(crate) fn call_matches(facts: &Facts, call: &CallFact) -> bool {
    if matches!(call.callee_last.as_str(), "HandoffTermination" | "ctrl_c" | "interrupt") {
        return true;
    }
    // A readline interface's Ctrl-C (`rl.on("SIGINT", ...)`: Node hands the
    // key to the interface, not to the process), and a key that aborts the
    // request underway (`stdin.on("keypress", ... controller.abort())`).
    if super::is_key_event_registration(call) && super::person_listener(call) {
        let aborts_inside = || {
            facts.calls.iter().any(|c| {
                c.callee_last == "abort" && call.range.start <= c.range.start && c.range.end <= call.range.end
            })
        };
        if call.arg_literals.iter().any(|w| w == "sigint") || aborts_inside() {
            return true;
        }
    }
    // (`trap cleanup INT` where cleanup neither exits nor sets a flag.)
    if !is_signal_registration(call) || facts.trap_handler_stays(call) {
        return false;
    }
    let mentions = |word: &str| call.arg_words.iter().chain(&call.arg_literals).any(|w| w == word);
    // `signal.signal(SIGINT, SIG_IGN)` makes Ctrl-C do nothing at all.
    let ignored = mentions("ign");
    (mentions("interrupt") || mentions("sigint") || (call.callee_last == "trap" && mentions("int")))
        && !ignored
}
