//! E8, external event (EXTERNAL).
//!
//! # What it detects
//! Something outside the loop ends it: a signal handler, a STOP or kill file,
//! a cancellation token or context, an abort signal.
//!
//! # Why it matters
//! An operator can stop the loop without killing the process, and cleanly; it
//! never decides the verdict.
//!
//! # What counts
//! `case <-ctx.Done(): return`, `if ctx.Err() != nil`, `if
//! token.is_cancelled()`, `if (signal.aborted) break`, `if
//! os.path.exists("STOP"): break`, `[ -f STOP ] && break`, `if
//! stop_event.is_set()`, `except asyncio.CancelledError: break`, `if
//! !yield(msg, nil) { return }` (a Go iterator's consumer stopped);
//! `signal.signal(SIGTERM, ...)`, `trap ... TERM`, `signal.Notify(c,
//! syscall.SIGTERM)`, `process.on("SIGTERM")`; `abortSignal:` handed to a
//! framework; AutoGen's `ExternalTermination`; an `AbortController` or a
//! `CancellationToken` created outside the loop.
//!
//! # What does not
//! The words STOP or cancel in strings that are only printed; an
//! `AbortController` made per request inside the loop.
//!
//! # Example
//! ```text
//! for {
//!     select {
//!     case <-ctx.Done():   // E8
//!         return ctx.Err()
//!     default:
//!     }
//! }
//! ```

use super::{is_signal_registration, name_words, ClauseView};
use crate::facts::{AssignFact, CallFact, Facts, KwargFact, Role};

const STOP_NAMES: &[&str] = &["stop", "cancel", "pause", "kill", "halt", "abort"];

pub(crate) fn clause_matches(view: &ClauseView<'_>) -> bool {
    // Every way to an outside event below asks for one of these words (or
    // a literal `cancel`): most clauses have none, and a pass over their
    // few words costs less than the many questions that follow.
    let may_match = view.words.iter().any(|word| {
        matches!(
            *word,
            "yield"
                | "cancel"
                | "stop"
                | "exit"
                | "done"
                | "ctx"
                | "context"
                | "interrupt"
                | "continue"
                | "proceed"
                | "hook"
                | "hooks"
                | "middleware"
                | "plugin"
                | "plugins"
                | "paused"
                | "running"
                | "alive"
                | "active"
                | "exists"
                | "isfile"
                | "stat"
                | "access"
                | "sync"
        )
    }) || view.literals.contains("cancel")
        || view.stop_state_from_outside
        || asks_is_set(view);
    if !may_match {
        return false;
    }
    // A loop detector that asks to abort (`loop_detector.should_abort()`)
    // saw no progress: E5, not a stop from outside.
    if (view.has("detect") && view.any(&["loop", "loops", "cycle", "repeat"]))
        || super::e5_no_progress::loop_check_aborts(view)
        || view.has("stall")
        || super::e5_no_progress::stale_passes(view)
    {
        return false;
    }
    // A stop tied to a person is a human interrupt (E6).
    if super::e6_human_interrupt::persons_stop(view) {
        return false;
    }
    // The object's state read against a word of stopping, set nowhere in
    // the loop's passes (`while (this.state != "stop")`): another method,
    // a handler or a caller stops it.
    if view.stop_state_from_outside && view.any(&["state", "status", "mode"]) {
        return true;
    }
    // A signal only a timer aborts is a deadline (E4), or one request's.
    if view.made_with_timeout && view.has("signal") {
        return false;
    }
    // `if !yield(msg, nil) { return }`: the consumer of a Go iterator
    // (range over a func) stopped asking for more.
    if view.clause.negated && view.any_callee(&["yield"]) && view.role != Role::Handler {
        return true;
    }
    if view.role == Role::Handler {
        // `except CancelledError`, `except SessionExit`, `except StopAgent`;
        // not `except StopIteration`, the end of what a loop walked.
        let iteration_ended = view.has("iter");
        // (`except SystemExit`: the program's own `sys.exit()`, a command
        // of the loop's, on its way out; nothing outside asked.)
        let own_exit = view.has("system") && view.has("exit");
        return view.has("cancel")
            || (view.has("stop") && !iteration_ended)
            || (view.has("exit") && !own_exit);
    }
    // `if (!isAbortError(error)) throw error`: the exit takes every error
    // but the cancellation, which the loop lets pass.
    if view.role == Role::Guard && view.clause.negated && view.has("error") && view.has("cancel") {
        return false;
    }
    // `case <-rctx.io.Done():`, a select's arm (read as a case arm, an
    // equality): Go's context's channel, whatever the context is called.
    // (`if task.Done()` asks a value of the loop's own, read by its words.)
    // (A call, not a pattern: `Decision::Done(outcome) =>` is a value.)
    let done_channel = view.clause.idents.iter().any(|ident| ident == "Done") && view.any_callee(&["done"]);
    if done_channel && view.clause.equality && !view.made_with_timeout && !view.clause.ordering {
        return true;
    }
    // (`context.consecutiveFailures >= context.options.maxFailures` counts
    // failures kept on an object called a context: a threshold, not a
    // cancellation.)
    // (A context made with a timeout ends the loop when its time is up: the
    // wall clock's. A context fetched, `state, err := r.getContext(..)`, is
    // not a cancellation either.)
    // (An error of a call handed something called a context, `Err(e) =>
    // return` after `plan(&task, Some(&current_context))`, is that call's
    // failure: only Go's `ctx` makes an error the cancellation's.)
    if (view.has("ctx") && view.any(&["done", "error"])
        || view.has("context") && view.any(&["done", "cancel", "canceled", "cancelled", "deadline"]))
        && !view.any(&["overflow", "window", "full", "length", "get"])
        && !view.made_with_timeout
        && !view.clause.ordering
        && !context_only_handed_in(view)
    {
        return true;
    }
    // (`loopFireCount >= AGENT_LOOP_ABORT_THRESHOLD` counts events against
    // a threshold that says what it does: what it counts decides.)
    let threshold = view.clause.ordering && view.any(&["threshold", "max", "limit"]);
    if view.has("cancel") && !threshold {
        return true;
    }
    // An interrupt that nothing ties to a person (`self.interrupted`,
    // `checkInterrupt()`): something outside the loop asked it to stop (a
    // person's keyboard is E6, judged before).
    if view.has("interrupt") && !view.clause.ordering && !view.clause.none_literal {
        return true;
    }
    // `e.name === "AbortError"`.
    if view.any_literal(&["cancel"]) && (view.clause.equality || view.clause.membership) {
        return true;
    }
    // An event of threads or tasks the loop waits on, whatever it is called
    // (`debate_over = threading.Event()` ... `if debate_over.is_set():
    // break`, `while not shutdown.is_set()`): another thread or task set it.
    // (One named for the work being done is goal met's.)
    let event_set = asks_is_set(view)
        && view.has("event")
        && match view.role {
            Role::Guard => !view.clause.negated,
            Role::LoopCondition => view.clause.negated,
            _ => false,
        };
    // (Nor one named for a bound or a person: `time_up_event`,
    // `budget_exceeded_event`, `approval_event`.)
    let names_another_exit = view.any(&[
        "done", "final", "answer", "result", "goal", "time", "timeout", "deadline", "up", "budget", "cost",
        "token", "approve", "human", "confirm",
    ]);
    if event_set && !names_another_exit {
        return true;
    }
    // A stop flag or request that this pass's reply did not produce
    // (`self.state.stopped`, `should_stop()`, `stop_event.is_set()`).
    let asked_by_hook = view.any(HOOK_WORDS);
    // A callback asked whether the run may go on (`if not await
    // callback.on_run_continue(...)`, `self._on_run_continue(...)`).
    if view.any(&["continue", "proceed"]) && answered_by_hook(view) {
        return true;
    }
    // A hook that failed or blocked the pass (`if err := hook(ctx, h); err
    // != nil { return err }`, `HookOutcome::Block { reason } => return`):
    // code the caller plugged in asked the run to stop. (A callback that
    // only receives events, `callback(thinkingEvent)`, fails as a writer
    // fails.)
    let hook_said_no = view.role == Role::Guard
        && !view.clause.ordering
        && view.any(&["hook", "hooks", "middleware", "plugin", "plugins"])
        && (view.has("error") || view.any(&["block", "blocked", "veto"]));
    if hook_said_no && !view.any(&["retry", "attempt"]) {
        return true;
    }
    // (A stop condition or stopping function is a termination condition on
    // the output: goal met.)
    // (An error check reads its own words: `err = observe.SpanStop(..)`
    // stops a span, not the loop. A stop step, a completion tool's stop or
    // a final answer's is goal met.)
    let error_check = view.expanded && view.has("error");
    let finished = view.any(&["done", "final", "answer", "submit", "step", "action", "tool"]);
    // (A budget that decides to stop, `BudgetDecision::Stop`, is the
    // budget cap's.)
    // (Nor is a stopping function handed to the loop, `self.stopping_func`:
    // a condition on the output, as goal met reads it.)
    // (`should_exit(session_id)`, asked of something the loop did not
    // decide this pass, is such a request too.)
    let asked_to_exit = view.has("should") && view.has("exit");
    // (So is a pause asked from outside, `if (pauseSignal.isPaused()) break`.)
    // (A stop read off a streamed chunk, `chunk.messageStop`, is the
    // reply's own event: the model stopped writing.)
    // (Nor a stop asked of the reply, `self.agent.is_stop(agent_msg)`: the
    // message's own stop, a completion check.)
    // (A message taken from an inbox, `msg = await inbox.get()`, may be a
    // supervisor's STOP: only one a model made is the reply.)
    let reply_stops =
        view.clause.call_root.is_some() && view.any(&["msg", "message", "reply"]) && view.model_made;
    if (view.has("stop") || asked_to_exit || view.has("paused"))
        && !view.any(&["condition", "func", "budget", "cost", "chunk"])
        && !reply_stops
        && !error_check
        && !finished
        && (asked_by_hook || (!view.this_pass && !view.assigned_in_loop))
        && !view.has("reason")
        && !view.clause.ordering
    {
        return true;
    }
    // A service's running flag that the loop never clears itself
    // (`while self._running`, `if !self.running.load(..) { break }`).
    let reads_running = view.any(&["running", "alive", "active"])
        && view
            .clause
            .idents
            .iter()
            .any(|i| i.contains('.') || i.starts_with("self") || i.starts_with("this"))
        && (view.role == Role::LoopCondition || view.clause.negated)
        && !view.clause.equality;
    if reads_running && !view.this_pass && !view.assigned_in_loop && !view.clause.ordering {
        return true;
    }
    let checks_exists =
        view.any_callee(&["exists", "isfile", "stat", "access", "sync"]) || view.has("exists");
    checks_exists && (view.any(STOP_NAMES) || view.any_literal(STOP_NAMES))
}

/// The clause calls an event's `is_set()` (a callee's words: `is`, `set`).
fn asks_is_set(view: &ClauseView<'_>) -> bool {
    view.any_callee(&["is"]) && view.any_callee(&["set"])
}

/// `self.strategy.is_done(parsed, ctx)`: a call of something else that is
/// handed the context, whose own name says "done". Its answer is that
/// call's, not the context's: the context is nobody's receiver in the
/// clause (`ctx.Done()`, `turnCtx.Err()`, `context.Canceled` are).
fn context_only_handed_in(view: &ClauseView<'_>) -> bool {
    let Some(root) = view.clause.call_root.as_deref() else { return false };
    let names_context = |text: &str| {
        let text = text.to_ascii_lowercase();
        text.contains("ctx") || text.contains("context")
    };
    let receiver_is_context = view
        .clause
        .idents
        .iter()
        .any(|ident| ident.rsplit_once(['.', ':']).is_some_and(|(receiver, _)| names_context(receiver)));
    let says_done = crate::words::canonical_words(root).iter().any(|w| w == "done");
    says_done && !names_context(root) && !receiver_is_context
}

/// Words of code the caller plugs into a run to be asked at its steps.
const HOOK_WORDS: &[&str] = &[
    "hook",
    "hooks",
    "callback",
    "callbacks",
    "handler",
    "listener",
    "middleware",
    "plugin",
    "plugins",
    "lifecycle",
    "lifecycles",
];

/// The clause reads what a hook answered (`modified = await
/// this.lifecycles.onStart(...)` ... `if (modified.stop)`, `should_continue
/// = await self._on_run_continue(...)`): a stop or a refusal to go on that
/// code plugged in by the caller gave, however the answer is named.
/// (A setting such as `continue_on_fail` is asked of nobody: the `on` of an
/// event hook's name counts only for a value a call made. What a tool run
/// "with hooks" returns is the tool's; an action compared with a pipeline's
/// `STOP` says which of its steps decided, as the steps' own names do.)
pub(crate) fn answered_by_hook(view: &ClauseView<'_>) -> bool {
    // (Cheapest and rarest first: this is asked of most clauses.)
    !view.clause.ordering
        && !view.clause.equality
        && view.any(&["stop", "continue", "proceed"])
        && (view.any(HOOK_WORDS) || (view.has("on") && (view.this_pass || !view.callees.is_empty())))
        && !view.has("tool")
        && !super::e6_human_interrupt::persons_stop(view)
}

pub(crate) fn kwarg_matches(kwarg: &KwargFact) -> bool {
    let words = name_words(kwarg);
    let has = |word: &str| words.iter().any(|w| w == word);
    if kwarg.value_callees.iter().any(|w| w == "timeout") {
        return false;
    }
    // (A signal handed to one request inside the loop cancels that
    // request.)
    if kwarg.in_loop {
        return false;
    }
    if has("cancel") && (has("token") || has("signal") || has("event")) {
        return true;
    }
    has("signal")
        && kwarg.value_words.iter().any(|w| matches!(w.as_str(), "cancel" | "signal" | "controller"))
}

pub(crate) fn call_matches(facts: &Facts, call: &CallFact) -> bool {
    if call.callee_last == "ExternalTermination" {
        return true;
    }
    if matches!(
        call.callee_last.as_str(),
        "AbortController" | "CancellationToken" | "CancellationTokenSource"
    ) {
        let holder = holder(facts, call);
        return !call.in_loop
            && !holder
                .is_some_and(|h| named_for_a_clock(h) || super::clock_aborts(facts, &h.target).is_some())
            && !facts.cancel_by_person
            && !(call.callee_last == "AbortController"
                && (never_aborted(facts, holder) || aborted_by_a_person(facts)));
    }
    if call.callee.contains("CancellationToken") && call.callee_last == "new" {
        return !call.in_loop;
    }
    if !is_signal_registration(call) || facts.trap_handler_stays(call) {
        return false;
    }
    // `process.on('SIGINT', async () => { await shutdown(); ... })`: the
    // person's Ctrl-C (E6), whatever its handler's body says.
    // (One event per listener: the literals are its name and its body's.)
    let literal = |word: &str| call.arg_literals.iter().any(|w| w == word);
    let other_signal = ["sigterm", "sighup", "sigusr1", "sigquit", "cancel"].iter().any(|w| literal(w));
    if call.callee.starts_with("process.") && literal("sigint") && !other_signal {
        return false;
    }
    let mentions = |word: &str| call.arg_words.iter().chain(&call.arg_literals).any(|w| w == word);
    mentions("cancel")
        || (call.callee_last == "signal" && mentions("done"))
        || (call.callee_last == "trap" && ["term", "hup", "usr1", "quit"].iter().any(|w| mentions(w)))
}

/// The assignment that keeps what `call` makes (`const controller = new
/// AbortController()`), if any.
fn holder<'f>(facts: &'f Facts, call: &CallFact) -> Option<&'f AssignFact> {
    facts
        .assigns
        .iter()
        .find(|assign| assign.range.start <= call.range.start && call.range.end <= assign.range.end)
}

/// `const controller = new AbortController()` kept in a local name and only
/// handed to calls, with no `abort()` anywhere in the source: whatever
/// aborts it is inside the library it was handed to, not a stop the code
/// offers. (Kept in a field or handed on at once, it reaches code outside
/// the paste, which may abort it.)
fn never_aborted(facts: &Facts, holder: Option<&AssignFact>) -> bool {
    let local =
        holder.is_some_and(|assign| !assign.target.contains('.') && !assign.target.starts_with("this"));
    local && !facts.calls.iter().any(|other| other.callee_last == "abort")
}

/// `const timeoutController = new AbortController()`: the name says a
/// clock aborts it (the wall clock's rules read the clock), not something
/// outside the loop.
fn named_for_a_clock(holder: &AssignFact) -> bool {
    crate::words::canonical_words(crate::facts::last_name(&holder.target))
        .iter()
        .any(|w| matches!(w.as_str(), "timeout" | "deadline"))
}

/// Every `abort()` of the source sits in a listener for a person's keys or
/// for the prompt closing (`rl.on("SIGINT", () => controller.abort())`,
/// `const onClose = () => ac.abort(); rl.on("close", onClose)`): the
/// controller is how Ctrl-C reaches the request, a human interrupt (E6).
fn aborted_by_a_person(facts: &Facts) -> bool {
    let listeners: Vec<&CallFact> = facts.calls.iter().filter(|c| super::person_listener(c)).collect();
    let mut aborts = facts.calls.iter().filter(|c| c.callee_last == "abort").peekable();
    aborts.peek().is_some()
        && aborts.all(|abort| {
            listeners.iter().any(|listener| {
                let inside =
                    listener.range.start <= abort.range.start && abort.range.end <= listener.range.end;
                let named = abort.enclosing_function.as_deref().is_some_and(|name| {
                    let words = crate::words::canonical_words(name);
                    !words.is_empty() && words.iter().all(|w| listener.arg_words.contains(w))
                });
                inside || named
            })
        })
}

/// An abort signal the caller handed in, passed on to a request of each
/// pass (`signal: options.signal`, `abortSignal: this.signal`): when the
/// caller aborts, the awaited request rejects and the run ends. A signal
/// made in the paste (`AbortSignal.timeout(30_000)`, a local controller's)
/// is not the caller's: the rules for those decide.
pub(crate) fn callers_signal_handed_on(facts: &Facts, kwarg: &KwargFact) -> bool {
    if !kwarg.in_loop || !matches!(kwarg.name.as_str(), "signal" | "abortSignal" | "abort_signal") {
        return false;
    }
    let value = kwarg.value_text.trim();
    if !kwarg.value_callees.is_empty() || !value.ends_with("signal") && !value.ends_with("Signal") {
        return false;
    }
    let root = value.split(['.', '?', '!']).next().unwrap_or(value);
    // (A controller's signal, `controller.signal`, is the controller's
    // holder's to abort: the AbortController rules decide.)
    if root.to_ascii_lowercase().contains("controller") || root == "ac" {
        return false;
    }
    root == "this" || facts.definition(root, kwarg.range.start, None).is_none()
}
