//! One iterative walk over the syntax tree that collects the facts the rules
//! judge: loops, the conditions under which each loop can be left (clauses),
//! calls, keyword arguments, exception handlers and assignments.
//!
//! The walk never recurses on the tree: it drives a `TreeCursor` and keeps its
//! own stack of frames, so a pathological 100,000-deep nesting costs memory,
//! not the thread's stack. Every sub-walk (a condition, an argument list) is
//! capped in the number of nodes it visits, which keeps the whole audit linear
//! in the size of the file.
//!
//! Comments, docstrings, string literals and heredocs are never read as code.
//! The only text taken from string literals is their content inside a clause
//! (`if "DONE" in output`), where the literal is a value the loop compares,
//! and the keys of configuration dictionaries (`{"recursion_limit": 50}`).
//! Interpolations inside strings (f-strings, template literals, `$(...)`) are
//! code and are walked.

use std::ops::Range;

use tree_sitter::{Node, Tree};

use crate::language::Family;
use crate::words::{canonical, canonical_words, contains_ignoring_case, split_identifier};

/// The walk's hash tables: foldhash, seeded per process, rather than the
/// standard library's SipHash. Their keys are node ids and identifiers of
/// the audited file; hashing them was a tenth of a 2,000-line audit.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// How deep the walk descends into the syntax tree. Code people write nests
/// a few dozen levels; beyond this (generated code, or a source made to
/// exhaust a server) the walk reads nothing further down and the report
/// warns `nesting-too-deep`. What lies deeper is not audited.
pub(crate) const MAX_NESTING: u32 = 1_500;

/// How many nodes a sub-walk (one condition, one argument list) may visit.
const SUBWALK_LIMIT: usize = 512;
/// How many enclosing conditions an exit site takes as its guards.
const GUARD_LIMIT: usize = 6;
/// The last part of a name (`count` of `self.count`, `state->count`,
/// `$count`).
pub(crate) fn last_name(name: &str) -> &str {
    name.rsplit(['.', ':', '>']).next().unwrap_or(name).trim_start_matches('$')
}

/// The calls that sleep: a loop that makes one on its passes waits for
/// something (a poll), it does not drive an agent.
pub(crate) const SLEEP_CALLEES: &[&str] = &["sleep", "Sleep", "usleep"];

/// The depth of a guard read from an `if ... continue` before the exit
/// (negated): it speaks only for the goal (`if reply.tool_calls: ...;
/// continue` then `return reply`), never for a bound, whose negation says
/// nothing.
pub(crate) const SKIPPED_DEPTH: u8 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoopKind {
    While,
    Until,
    DoWhile,
    For,
    Loop,
    Recursion,
    RetryDecorator,
    Framework,
}

impl LoopKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            LoopKind::While => "while",
            LoopKind::Until => "until",
            LoopKind::DoWhile => "do-while",
            LoopKind::For => "for",
            LoopKind::Loop => "loop",
            LoopKind::Recursion => "recursion",
            LoopKind::RetryDecorator => "retry-decorator",
            LoopKind::Framework => "framework",
        }
    }

    /// A loop written in the code (`while`, `until`, `do`, `for`, `loop`),
    /// not a recursion, a retry decorator or a framework's run, whose
    /// "range" is a whole function or call.
    pub(crate) fn is_written(self) -> bool {
        matches!(self, LoopKind::While | LoopKind::Until | LoopKind::DoWhile | LoopKind::For | LoopKind::Loop)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct LoopFact {
    pub kind: LoopKind,
    pub range: Range<usize>,
    /// The loop runs until something inside it leaves: `while True`, `loop`,
    /// `for {}`, `for (;;)`, `while true; do`.
    pub infinite: bool,
    /// Statements that leave this loop (break, return, raise, exit), guarded or not.
    pub exit_sites: usize,
    pub framework: Option<&'static str>,
    /// Names assigned or mutated inside the loop's body.
    pub assigned: HashSet<String>,
    /// For a retry decorator: the decorated function's name.
    pub function_name: Option<String>,
    /// A `for` over a collection (`for msg in messages`), not over a
    /// bounded range: its `break` ends a walk over items, not an agent.
    pub collection: bool,
    /// The function the loop sits in, if any.
    pub function: Option<usize>,
    /// Where the loop's body starts: what comes before it (a `for`'s
    /// initializer) runs once, not each pass.
    pub body_start: usize,
}

/// The analysis of one condition, split at `and`/`or`: the words of its code,
/// its literals, and which kinds of comparison it makes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Clause {
    pub range: Range<usize>,
    /// Canonical words of identifiers and called names (see `words.rs`).
    pub words: Vec<String>,
    /// Raw identifier texts, for alias expansion and enforcement tracking.
    pub idents: Vec<String>,
    /// Canonical words of string literals compared in the clause.
    pub literals: Vec<String>,
    /// Canonical words of the names called in the clause.
    pub callees: Vec<String>,
    pub negated: bool,
    pub ordering: bool,
    pub equality: bool,
    /// The comparison asks for a difference (`!=`, `-ne`, `is not`).
    pub differs: bool,
    pub membership: bool,
    pub number: bool,
    pub zero: bool,
    pub none_literal: bool,
    /// The clause is a command run for its exit status (Bash `if npm test`).
    pub command: bool,
    /// The clause is the condition of an `until` loop: the loop ends when it
    /// succeeds.
    pub until: bool,
    /// For a comparison of two operands: each side's words and, when the side
    /// is a plain name or field, its text.
    pub sides: Option<[(Vec<String>, Option<String>); 2]>,
    /// The clause is a call, possibly negated or awaited
    /// (`self.should_stop()`, `!await check()`): the called name.
    pub call_root: Option<String>,
    /// The clause stands for a flag that code outside the loop sets
    /// (`self.running = False` in `stop()`): without words of its own it is
    /// an external event.
    pub set_outside: bool,
    /// The clause stands for a flag that a function the loop calls sets
    /// (`self.stop_flag = True` in a step's post-processing): the guards
    /// above the assignment say why, its own words name no stop from
    /// outside.
    pub set_in_pass: bool,
    /// The clause is the collection a `for` walks, and it is a plan (`for
    /// step in plan.steps`): the loop ends when every planned step is done.
    pub walks_plan: bool,
    /// The clause stands for an attempt that got through: a `return` with a
    /// value, under no condition, in a `try` of the loop whose handlers let
    /// the loop try again (`try: return parse(run(code)) except: fix(code)`).
    pub attempt_succeeded: bool,
    /// A range bound whose loop names its variable as a try (`for attempt
    /// in range(3)`).
    pub bounds_tries: bool,
    /// The clause compares the latest entries of one history with each
    /// other (`acts[-1] == acts[-2]`, `len(set(last_three)) == 1`).
    pub repeats_recent: bool,
    /// Another operand of the same condition compares the latest entries of
    /// a history (`len(acts) >= 3 and acts[-1] == acts[-2]`): a length here
    /// only makes sure there are enough of them to compare.
    pub beside_repeat: bool,
    /// For an alternative of a `match`/`switch` case: the names of the
    /// value the case tests (`input` of `match input { "/exit" => break }`),
    /// whose provenance is the alternative's too.
    pub subject_idents: Vec<String>,
    /// The exit under this guard is preceded, in the guard's own body, by a
    /// status or reason set to a word of completion (`result.ExitReason =
    /// "final_answer"`, `status = "completed"`): the loop says why it ends.
    pub marks_done: bool,
    /// The words of the enum variant a Rust match arm compares its subject
    /// with (`Text` in `ChatOutcome::Text(text) =>`).
    pub arm_variant: Vec<String>,
    /// The exit under this guard is preceded, among the last statements of
    /// its own block, by a flag of a detected loop or stall raised
    /// (`loopDetected = true; break`).
    pub marks_stall: bool,
    /// The clause compares with an empty string (`content != ""`).
    pub empty_string: bool,
    /// The clause is an entry of a map looked up by a computed key and read
    /// as a truth value (`visited[agent]`, `!seen[url]`): whether the key
    /// is marked in the map.
    pub keyed_lookup: bool,
    /// The clause looks for an unchecked box of a checklist (`grep -q '\[ \]'
    /// PLAN.md`, `"- [ ]" in plan`): work left on a list.
    pub unchecked_box: bool,
    /// The clause is an allowance spent by a skip just before an exit (`if
    /// retries_left > 0 { retries_left -= 1; continue }` then `break`): the
    /// loop leaves once it no longer holds.
    pub allowance: bool,
    /// A Bash command before `||` in a list that leaves (`check_budget ||
    /// break`): the loop leaves when the command fails, so the function it
    /// calls says so by returning non-zero.
    pub on_failure: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The loop's own condition: the loop ends when it turns false.
    LoopCondition,
    /// A `for` over a bounded range: `range(N)`, `0..N`, `seq 1 N`.
    RangeBound,
    /// A condition under which a statement leaves the loop.
    Guard,
    /// The exception type of a handler that leaves the loop.
    Handler,
}

/// A clause tied to the loop it can end and the statement that ends it.
#[derive(Debug, Clone)]
pub(crate) struct ExitLink {
    pub clause: usize,
    pub role: Role,
    pub loop_id: usize,
    /// The statement that leaves (or the loop header for loop conditions).
    pub site: Range<usize>,
    /// For a check reached through a call (`if self.should_stop():` and the
    /// comparison inside `should_stop`): the call in the loop, reported
    /// beside the check.
    pub via: Option<Range<usize>>,
    /// How far the guard sits from the exit: 0 for the condition right
    /// above it, more for the conditions around that one. The nearest guard
    /// that says anything decides (in `if run_was_quick: if failures >= 5:
    /// break` the failures decide, not the quick run).
    pub depth: u8,
}

#[derive(Debug, Clone)]
pub(crate) struct CallFact {
    pub callee: String,
    pub callee_last: String,
    pub range: Range<usize>,
    pub in_loop: bool,
    /// The loops of the enclosing function that the call sits in, innermost
    /// first: an exception it raises leaves them all.
    pub loops: Vec<usize>,
    /// The call sits in a `try` body inside its innermost loop, so what it
    /// raises is caught before it can leave the loop.
    pub caught: bool,
    /// For a caught call: the range of the `try` that catches it. When one
    /// of its handlers leaves the loop, what the call raises still ends it.
    pub caught_in: Option<Range<usize>>,
    pub enclosing_function: Option<String>,
    /// The nearest enclosing function that has a name: for a call in a
    /// closure (`execFunc = func(ctx) { ... }`), the function that made it.
    pub named_function: Option<String>,
    /// Canonical words and literal words of the arguments (bounded sub-walk).
    pub arg_words: Vec<String>,
    pub arg_literals: Vec<String>,
    /// The retry-decorator loop this call configures, if it sits in one.
    pub decorator_loop: Option<usize>,
    /// A Bash `trap`'s handler when it is a plain name (`trap cleanup INT`):
    /// a function of the script, whose body says whether the trap ends it.
    pub handler: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct KwargFact {
    pub name: String,
    /// The canonical words of `name`, which every rule asks for.
    pub name_words: Vec<String>,
    pub range: Range<usize>,
    pub value_text: String,
    pub value_words: Vec<String>,
    pub value_callees: Vec<String>,
    pub value_literals: Vec<String>,
    pub value_idents: Vec<String>,
    pub decorator_loop: Option<usize>,
    /// The argument is given inside a loop's body: it configures something
    /// the loop does each pass (one request), not the loop.
    pub in_loop: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct HandlerFact {
    pub range: Range<usize>,
    pub type_words: Vec<String>,
    /// The words of each type it catches, one group per type (`except
    /// (KeyboardInterrupt, CancelledError)` is a person's interrupt and a
    /// cancellation from outside), or one group of all its types' words.
    pub type_groups: Vec<Vec<String>>,
    pub in_loop: bool,
    /// The handler's body leaves the loop (break, return, raise, exit).
    pub leaves: bool,
    /// Its `try` wraps a loop: what it catches has already ended that loop.
    pub wraps_loop: bool,
    /// Its `try` ends by returning (`try: report = build(); return report
    /// except CancelledError: return "error"`): the loop is on its way out
    /// whichever way the `try` goes, so leaving from the handler is no way
    /// out of its own.
    pub on_the_way_out: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct AssignFact {
    pub target: String,
    pub range: Range<usize>,
    pub augmented: bool,
    pub in_loop: bool,
    /// Changes the target by a constant (`i += 1`, `left -= 1`, `n++`,
    /// `i=$((i+1))`): a counter of something.
    pub step: bool,
    /// Sits in an error branch of its loop (an exception handler, or under
    /// `if err != nil`, `if failed`): what it counts is failures.
    pub error_branch: bool,
    /// For a counter: the guards between its loop and it. A counter moved on
    /// every pass has none; one moved under `if EXIT_SIGNAL in out` counts
    /// what its guards see.
    pub guards: Vec<usize>,
    /// Sets the target back to zero (`failures = 0` after a success): what
    /// it counts is consecutive.
    pub reset: bool,
}

/// One assignment of a name: where it is, in which function, and the words,
/// names and called names of its value.
#[derive(Debug, Clone, Default)]
pub(crate) struct Definition {
    pub at: usize,
    pub function: Option<usize>,
    pub words: Vec<String>,
    pub idents: Vec<String>,
    pub callees: Vec<String>,
    /// The words of the string literals a search made of the value looks
    /// for (`m = re.search(r"Status: success", reply)`, `found =
    /// out.includes("DONE")`): what a truthy value means was found.
    pub searched: Vec<String>,
    /// Plain names handed to the value's calls (`line` in
    /// `strings.TrimRight(line, "\n")`): where a value made from another
    /// one came from, for provenance only (their words stay out).
    pub arg_idents: Vec<String>,
    /// The value is what a model call made (`reply = llm.chat(..)`, `msg,
    /// state = self.agent.generate_next_message(..)`).
    pub model_made: bool,
    /// Which of several names a destructuring gives the name (`1` for
    /// `done` in `messages, done = run_turn()`); `None` for a single one.
    pub position: Option<usize>,
}

/// Whether a called name says it asks a model (`generate_next_message`,
/// `chat`, `invoke_llm`).
fn asks_a_model(callee: &str) -> bool {
    const WORDS: [&str; 8] =
        ["generate", "chat", "complete", "completion", "invoke", "predict", "llm", "model"];
    // (Asked of every call on a right-hand side: a name that holds none of
    // the words anywhere has none of them as a word, and says so unsplit.)
    WORDS.iter().any(|word| contains_ignoring_case(callee, word))
        && split_identifier(callee).iter().any(|w| WORDS.contains(&w.as_str()))
}

impl Facts {
    /// The calls of function `function` that sit in loops outside it: a
    /// loop elsewhere in the file runs it on its passes, as one step. A
    /// function called only from its own loops (another object's method of
    /// the same name) has none.
    pub(crate) fn step_calls(&self, function: usize) -> impl Iterator<Item = &CallFact> {
        let fact = &self.functions[function];
        let name = fact.name.as_deref().filter(|name| self.called_in_loops.contains(*name));
        self.calls.iter().filter(move |call| {
            name.is_some_and(|name| call.callee_last == name)
                && !call.loops.is_empty()
                && !(fact.range.start <= call.range.start && call.range.end <= fact.range.end)
        })
    }

    /// Whether a call sits in a `try` of its loop none of whose handlers
    /// leaves the loop: what it raises is caught and the loop goes on.
    /// (Go, Rust and Bash have no `try`: their errors are values, which the
    /// caller reads.)
    pub(crate) fn swallows(&self, call: &CallFact) -> bool {
        call.caught_in
            .as_ref()
            .is_some_and(|range| !self.handlers.iter().any(|h| h.leaves && range.contains(&h.range.start)))
    }

    /// The definition of `name` that reaches a use at byte `at` in
    /// `function`: the nearest one before it in the same function, else the
    /// last one in the same function (a value carried round the loop), else
    /// the last one anywhere (a module constant, a field set elsewhere).
    pub(crate) fn definition(&self, name: &str, at: usize, function: Option<usize>) -> Option<&Definition> {
        let definitions = self.aliases.get(name)?;
        let same: Vec<&Definition> = definitions.iter().filter(|d| d.function == function).collect();
        same.iter()
            .filter(|d| d.at < at)
            .max_by_key(|d| d.at)
            .or_else(|| same.last())
            .copied()
            .or_else(|| definitions.last())
    }

    /// Whether a Bash `trap` runs a function of the script that neither
    /// exits nor sets anything (`cleanup() { log ...; tmux kill-session
    /// ...; }` with no `exit`): the signal is handled and the script goes on,
    /// so the trap ends no loop. A handler not in the source may end it.
    pub(crate) fn trap_handler_stays(&self, call: &CallFact) -> bool {
        let Some(name) = call.handler.as_deref() else { return false };
        let mut handlers = self.functions.iter().enumerate().filter(|(_, f)| f.name.as_deref() == Some(name));
        handlers.next().is_some_and(|(index, _)| {
            let exits = self.function_exits.iter().any(|e| e.function == index && e.raises);
            let sets = self.aliases.values().flatten().any(|d| d.function == Some(index));
            !exits && !sets
        }) && handlers.next().is_none()
    }

    /// Whether the exit statement at `site` returns a value (`return x`,
    /// not a bare `return` or a `break`). Only the site's text is asked.
    pub(crate) fn returns_value(&self, site: &Range<usize>) -> bool {
        self.return_sites.contains(&site.start)
    }

    /// The innermost function whose range holds byte `at`. Functions are
    /// recorded in the walk's order (an outer one before those inside it),
    /// so the innermost is the last one that starts before `at` and holds it.
    pub(crate) fn function_at(&self, at: usize) -> Option<usize> {
        let before = self.functions.partition_point(|f| f.range.start <= at);
        (0..before).rev().find(|&index| self.functions[index].range.contains(&at))
    }
}

/// An assignment of a plain value (`True`, `None`, `AgentState.FINISHED`) to
/// a name that may be some loop's flag, with the conditions it sits under.
#[derive(Debug, Clone)]
pub(crate) struct FlagAssign {
    pub target: String,
    pub value: String,
    pub range: Range<usize>,
    pub function: Option<usize>,
    /// The guards above it in its function, and the words of its value,
    /// its target and its function's name as one clause.
    pub guards: Vec<usize>,
    pub words_clause: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct FunctionFact {
    pub name: Option<String>,
    /// A Go method's receiver name (`a` of `func (a *AgentLoop) run()`):
    /// `a.step()` in it calls a method of the same value, as `self.step()`.
    pub receiver: Option<String>,
    pub range: Range<usize>,
    pub recursive: bool,
    /// The guards under which the function calls itself: the recursion goes
    /// on only while they hold.
    pub recursion_guards: Vec<usize>,
}

/// A return or raise outside any loop of its function, with its guards: the
/// base case of a recursion, or a LangGraph router returning `END`.
#[derive(Debug, Clone)]
pub(crate) struct FunctionExit {
    pub function: usize,
    pub clauses: Vec<usize>,
    pub site: Range<usize>,
    pub returns_end: bool,
    /// A raise, throw, process exit or Rust `Err(...)` return: it leaves a
    /// caller's loop too, unless the caller catches it.
    pub raises: bool,
    /// The clauses of a returned condition (`return self.steps >= self.max`).
    pub values: Vec<usize>,
    /// A local name returned as it is, alone or first of a tuple (`return
    /// should_stop, reason`): the function's answer is that flag, set under
    /// the guards of its assignments (`local_flag_sets`).
    pub returned_name: Option<String>,
    /// The plain yes or no it returns (`return false`, `Ok(true)`), if it
    /// returns one.
    pub answer: Option<bool>,
    /// For a yes or no that is one of a tuple (`return messages, True`):
    /// its place in the tuple.
    pub answer_at: Option<usize>,
    /// It returns nothing: a bare `return`, or `None`, `nil`, `null`.
    pub no_value: bool,
    /// What it returns is a message or an answer, not a value it computed:
    /// a string (an f-string or template too), a yes or no, nothing, or a
    /// tuple that holds one yes or no.
    pub plain: bool,
}

/// A local name set to a truthy plain value in a function, outside its
/// loops (`should_stop = True` under `if info.terminated:`), with the
/// guards above it: why the function answers yes when it returns the name.
#[derive(Debug, Clone)]
pub(crate) struct LocalFlagSet {
    pub function: usize,
    pub name: String,
    pub range: Range<usize>,
    pub guards: Vec<usize>,
    /// For a flag turned on inside a loop: the conditions around the
    /// nearest one, nearest first, up to the loop (`stop = True` under `if
    /// level == "critical":` under `if verdict.stuck:`). When the nearest
    /// says nothing, the next one out says why.
    pub outer: Vec<Vec<usize>>,
}

/// A test that keeps only what was not met before (`if url in seen:
/// continue`, `if (!seen.has(id)) fresh.push(item)`, `[q for q in queries
/// if q not in tried]`, `sources.filter((s) => !cited.some(...))`): what
/// passes it is new. A pass whose new items come out empty found nothing
/// new.
#[derive(Debug, Clone)]
pub(crate) struct SeenFilter {
    pub function: Option<usize>,
    /// Where the test's statement starts; for a filter that makes a value,
    /// where that value's assignment starts (a [`Definition`]'s `at`).
    pub at: usize,
    /// The collection looked in (`seen`, `state.urls_seen`).
    pub container: String,
    /// The words of what is looked for (`result.url`: result, url).
    pub item_words: Vec<String>,
}

pub(crate) struct Facts {
    pub loops: Vec<LoopFact>,
    pub clauses: Vec<Clause>,
    pub links: Vec<ExitLink>,
    pub calls: Vec<CallFact>,
    pub kwargs: Vec<KwargFact>,
    pub handlers: Vec<HandlerFact>,
    pub assigns: Vec<AssignFact>,
    pub functions: Vec<FunctionFact>,
    pub function_exits: Vec<FunctionExit>,
    /// The assignments of each name, in source order: where a condition's
    /// values come from.
    pub aliases: HashMap<String, Vec<Definition>>,
    /// Names passed as arguments to calls other than logging.
    pub passed: HashSet<String>,
    /// The code ties cancelling to a person: a name (`UserAbortError`,
    /// `user_interrupt`) or a value it records as the reason
    /// (`abortReason: 'user_interrupt'`, `reason: aborted ? "user" :
    /// "timeout"`). Its cancellations are the person's (E6).
    pub cancel_by_person: bool,
    /// Simple names of functions called inside loop bodies.
    pub called_in_loops: HashSet<String>,
    pub flag_assigns: Vec<FlagAssign>,
    pub local_flag_sets: Vec<LocalFlagSet>,
    /// Local flags turned on inside a loop, with the nearest condition
    /// under which each is (`aborted = True` under `if
    /// status["should_stop"]:`): a later `if aborted: break` says what that
    /// condition says.
    pub loop_flag_sets: Vec<LocalFlagSet>,
    /// Loop-condition clauses that are flags the loop sets itself (`while
    /// not self.stop_flag` with `self.stop_flag = True` in its body): the
    /// assignments' conditions say why it ends, not the flag's name.
    pub decided_flags: HashSet<usize>,
    /// Of those, the flags taken whole from a call (`obs, reward, done, info
    /// = env.step(a)`), with where each such value starts: unless the checks
    /// behind one of those calls say why, the flag's own name is the best
    /// word for why the loop ends.
    pub opaque_flags: HashMap<usize, Vec<usize>>,
    /// Decided flags with at least one assignment that says why (a
    /// comparison, a plain value under guards).
    pub transparent_flags: HashSet<usize>,
    /// Start bytes of `return` statements that return a value.
    pub return_sites: HashSet<usize>,
    /// Start bytes of exit statements that say a budget ran out (`return
    /// ..., ErrBudget`, `raise BudgetExceededError(...)`).
    pub budget_exit_sites: HashSet<usize>,
    /// The flags of each loop's condition: `(loop, name, polarity)`.
    pub loop_flags: Vec<(usize, String, FlagPolarity)>,
    /// For each handler of a `try` that wraps a loop: `(loop, handler clause,
    /// handler range)`. An exception raised in the loop leaves it there.
    pub wrapping_handlers: Vec<(usize, usize, Range<usize>)>,
    /// For each handler of a `try` whose body calls a function of the file
    /// outside any loop: `(called name, handler clause, handler range)`.
    /// What that function's loop raises leaves the loop there too
    /// (`try: stats = self._run() except KeyboardInterrupt:`).
    pub caller_handlers: Vec<(String, usize, Range<usize>)>,
    /// The tests that keep only what was not met before.
    pub seen_filters: Vec<SeenFilter>,
    pub parse_errors: Vec<Range<usize>>,
    /// Whether the walk stopped descending at [`MAX_NESTING`].
    pub too_deep: bool,
}

/// Which values of a loop's flag end the loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FlagPolarity {
    /// `while running`: a falsy value ends it.
    Truthy,
    /// `while not done`: a truthy value ends it.
    Falsy,
    /// `while state == RUNNING`: any other value ends it.
    Equals(String),
    /// `while state != FINISHED`: that value ends it.
    Differs(String),
    /// `while steps_left > 0`: a count that zero ends. The loop's condition
    /// still says what the count is (a turn cap, say); only an assignment
    /// of zero is another way out.
    Positive,
}

impl FlagPolarity {
    /// Whether assigning `value` (its source text) ends the loop.
    pub(crate) fn stops_on(&self, value: &str) -> bool {
        let falsy =
            matches!(value, "False" | "false" | "None" | "nil" | "null" | "undefined" | "0" | "\"\"" | "''");
        match self {
            FlagPolarity::Truthy => falsy,
            FlagPolarity::Falsy => !falsy,
            FlagPolarity::Equals(running) => value != running,
            FlagPolarity::Differs(finished) => value == finished,
            FlagPolarity::Positive => value == "0",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syn {
    Comment,
    Str,
    Interp,
    SkipAll,
    Loop(LoopKind),
    If,
    Case,
    Handler,
    Function,
    Call,
    Break,
    Return,
    Raise,
    Assign,
    AugAssign,
    Kwarg,
    Pair,
    Decorated,
    Other,
}

#[derive(Debug, Clone, Copy)]
enum FrameRole {
    Plain,
    Loop(usize),
    Function(usize),
    /// A branch guarded by the nodes of this frame's node (resolved lazily).
    Guard,
    Handler(usize),
    Str,
    Interp,
    Call {
        is_log: bool,
    },
    Decorator(usize),
}

/// What the walk does after entering a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Its frame is pushed; walk its children.
    Descend,
    /// Its frame is pushed; its children hold nothing to read.
    Skip,
    /// A plain leaf: no frame was pushed.
    Leaf,
}

struct Frame<'t> {
    node: Node<'t>,
    role: FrameRole,
}

/// The plain yes or no a returned value says (`true`, `False`, `Ok(true)`).
fn yes_or_no(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "Ok(true)" => Some(true),
        "false" | "False" | "Ok(false)" => Some(false),
        _ => None,
    }
}

fn syn(family: Family, kind: &str) -> Syn {
    use Syn::*;
    match family {
        Family::Python => match kind {
            "comment" => Comment,
            "string" | "concatenated_string" => Str,
            "interpolation" => Interp,
            "while_statement" => Loop(LoopKind::While),
            "for_statement" => Loop(LoopKind::For),
            "if_statement" | "elif_clause" => If,
            "case_clause" => Case,
            "except_clause" => Handler,
            "function_definition" | "lambda" => Function,
            "call" => Call,
            "break_statement" => Break,
            "return_statement" => Return,
            "raise_statement" => Raise,
            "assignment" | "named_expression" => Assign,
            "augmented_assignment" => AugAssign,
            "keyword_argument" => Kwarg,
            "pair" => Pair,
            "decorated_definition" => Decorated,
            _ => Other,
        },
        Family::Js => match kind {
            "comment" | "html_comment" => Comment,
            "string" | "template_string" | "regex" => Str,
            "template_substitution" => Interp,
            "type_annotation" | "interface_declaration" | "type_alias_declaration" | "type_arguments" => {
                SkipAll
            }
            "while_statement" => Loop(LoopKind::While),
            "do_statement" => Loop(LoopKind::DoWhile),
            "for_statement" | "for_in_statement" => Loop(LoopKind::For),
            "if_statement" => If,
            "switch_case" => Case,
            "catch_clause" => Handler,
            "function_declaration"
            | "function_expression"
            | "arrow_function"
            | "method_definition"
            | "generator_function_declaration"
            | "generator_function"
            | "function" => Function,
            "call_expression" | "new_expression" => Call,
            "break_statement" => Break,
            "return_statement" => Return,
            "throw_statement" => Raise,
            "assignment_expression" | "variable_declarator" => Assign,
            "augmented_assignment_expression" | "update_expression" => AugAssign,
            "pair" => Pair,
            _ => Other,
        },
        Family::Bash => match kind {
            "comment" => Comment,
            "string" => Str,
            "raw_string" | "ansi_c_string" | "translated_string" | "heredoc_body" | "heredoc_content" => {
                SkipAll
            }
            "expansion" | "simple_expansion" | "command_substitution" | "arithmetic_expansion" => Interp,
            "while_statement" => Loop(LoopKind::While),
            "for_statement" | "c_style_for_statement" => Loop(LoopKind::For),
            "if_statement" | "elif_clause" => If,
            "case_item" => Case,
            "function_definition" => Function,
            "command" => Call,
            "variable_assignment" => Assign,
            // `i++` in `for ((i=1; i<=N; i++))` and `((count++))`.
            "postfix_expression" => AugAssign,
            _ => Other,
        },
        Family::Go => match kind {
            "comment" => Comment,
            "interpreted_string_literal" | "raw_string_literal" | "rune_literal" => Str,
            "for_statement" => Loop(LoopKind::For),
            "if_statement" => If,
            "expression_case" | "communication_case" | "type_case" => Case,
            "function_declaration" | "method_declaration" | "func_literal" => Function,
            "call_expression" => Call,
            "break_statement" => Break,
            "return_statement" => Return,
            "assignment_statement" | "short_var_declaration" => Assign,
            "inc_statement" | "dec_statement" => AugAssign,
            "keyed_element" => Pair,
            _ => Other,
        },
        Family::Rust => match kind {
            "line_comment" | "block_comment" | "doc_comment" => Comment,
            "string_literal" | "raw_string_literal" | "char_literal" => Str,
            "loop_expression" => Loop(LoopKind::Loop),
            "while_expression" => Loop(LoopKind::While),
            "for_expression" => Loop(LoopKind::For),
            "if_expression" => If,
            "match_arm" => Case,
            "function_item" | "closure_expression" => Function,
            "call_expression" | "macro_invocation" => Call,
            "break_expression" => Break,
            "return_expression" => Return,
            "let_declaration" | "assignment_expression" => Assign,
            "compound_assignment_expr" => AugAssign,
            "field_initializer" => Pair,
            _ => Other,
        },
    }
}

/// What a node kind tells a clause's sub-walk (see [`Walker::collect`]):
/// decided once per kind id, so the sub-walk never converts a node's kind to
/// a string. Operator marks apply to anonymous nodes, the others to named
/// ones, as the kinds' names say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Ordering,
    Equality,
    Membership,
    Negation,
    TestOperator,
    NegatedNode,
    Number,
    NoneLiteral,
    Subscript,
    /// A Bash string whose text is literal (`'...'`, `$'...'`).
    BashLiteral,
    Plain,
}

fn mark_of(family: Family, kind: &str) -> Mark {
    match kind {
        "<" | "<=" | ">" | ">=" | "-lt" | "-le" | "-gt" | "-ge" => Mark::Ordering,
        "==" | "!=" | "===" | "!==" | "is" | "-eq" | "-ne" | "=" | "is not" | "=~" => Mark::Equality,
        "in" | "not in" => Mark::Membership,
        "not" | "!" => Mark::Negation,
        "test_operator" => Mark::TestOperator,
        "negated_command" | "not_operator" => Mark::NegatedNode,
        "raw_string" | "ansi_c_string" if family == Family::Bash => Mark::BashLiteral,
        "subscript" | "subscript_expression" | "index_expression" => Mark::Subscript,
        "integer" | "float" | "number" | "int_literal" | "float_literal" | "integer_literal" => Mark::Number,
        "none" | "null" | "nil" | "undefined" => Mark::NoneLiteral,
        _ => Mark::Plain,
    }
}

fn is_identifier_kind(kind: &str) -> bool {
    matches!(
        kind,
        "identifier"
            | "property_identifier"
            | "field_identifier"
            | "type_identifier"
            | "shorthand_property_identifier"
            | "shorthand_property_identifier_pattern"
            | "private_property_identifier"
            | "variable_name"
            | "package_identifier"
            | "constant"
            | "self"
            | "word"
            | "primitive_type"
            | "metavariable"
    )
}

/// Whether a callee's words name printing or logging (`print`,
/// `logger.info`, `console.log`, `echo`, `fmt.Sprintf`).
fn names_logging(words: &[String]) -> bool {
    words.iter().any(|w| {
        matches!(
            w.as_str(),
            "print"
                | "println"
                | "printf"
                | "log"
                | "logger"
                | "logging"
                | "info"
                | "debug"
                | "warn"
                | "warning"
                | "console"
                | "echo"
                | "format"
                | "eprintln"
                | "fmt"
                | "sprintf"
                | "tracing"
        )
    })
}

fn last_identifier(text: &str) -> &str {
    text.rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).find(|part| !part.is_empty()).unwrap_or("")
}

/// Whether a condition's text compares the latest entries of a history with
/// each other: `a[-1] == a[-2]`, `a.at(-1) === a.at(-2)`, or all of the last
/// few are one (`len(set(last)) == 1`, `new Set(last).size === 1`,
/// `last.slice(-3).every((x) => x === sig)`).
fn repeats_recent(text: &str) -> bool {
    if text.len() > 240 {
        return false;
    }
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let latest_two = (compact.contains("[-1]") && compact.contains("[-2]"))
        || (compact.contains(".at(-1)") && compact.contains(".at(-2)"));
    let all_one = (compact.contains("len(set(") || compact.contains("len(list(set("))
        && (compact.ends_with("==1") || compact.ends_with("<=1"))
        || (compact.contains("newSet(") && (compact.ends_with(".size===1") || compact.ends_with(".size==1")));
    // The last few all equal one value: `sigs.slice(-4).every((x) => x ===
    // sig)`, `all(s == sig for s in sigs[-4:])`.
    // (Not all of them equal to a literal, `.every((c) => c.status ===
    // "passed")`: each passed, none repeats another.)
    let against_a_value = compact.find("==").is_some_and(|at| {
        let rest = compact[at..].trim_start_matches('=');
        rest.starts_with(['"', '\'', '`'])
            || rest.starts_with(|c: char| c.is_ascii_digit())
            || ["True", "true", "False", "false", "None", "null"].iter().any(|v| rest.starts_with(v))
    });
    let last_few_all_equal = !against_a_value
        && ((compact.contains(".slice(-") && compact.contains(".every(") && compact.contains("=="))
            || (compact.starts_with("all(")
                && compact.contains("==")
                && compact.contains("[-")
                && compact.contains(":]")));
    latest_two || all_one || last_few_all_equal
}

/// `loopDetected = true`, `self.stuck = True`, `STALLED=1`: a flag of a
/// detected loop or stall raised. (Not a setting that switches detection on
/// or off, `loop_detection_enabled = true`, nor a flag of the contrary,
/// `no_stall = true`.) ("Stuck", "repeating" and "doom" read as "stall".)
fn assignment_says_stalled(text: &str) -> bool {
    let Some((target, value)) = text.split_once('=') else { return false };
    let value = value.trim().trim_end_matches(';').trim();
    if !matches!(value, "true" | "True" | "1") || target.ends_with(['!', '<', '>', '=']) {
        return false;
    }
    let target = target.trim().trim_start_matches("let ").trim_start_matches("mut ");
    let words = canonical_words(target);
    let has = |word: &str| words.iter().any(|w| w == word);
    words.len() <= 4
        && (has("stall") || (has("detect") && (has("loop") || has("cycle"))))
        && !["not", "no", "allow", "enabled", "enable", "check", "reset"].iter().any(|w| has(w))
}

/// Whether an assignment's text sets a status, reason or outcome to a word
/// of completion: `result.ExitReason = "final_answer"`, `status := "done"`,
/// `STATE=completed`. A value that names a limit or a failure says another
/// exit.
fn assignment_says_done(text: &str) -> bool {
    let bytes = text.as_bytes();
    let Some(at) = (0..bytes.len()).find(|&i| {
        bytes[i] == b'='
            && bytes.get(i + 1) != Some(&b'=')
            && bytes.get(i + 1) != Some(&b'>')
            && !(i > 0 && matches!(bytes[i - 1], b'=' | b'!' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/'))
    }) else {
        return false;
    };
    let target = canonical_words(text[..at].trim_end_matches(':'));
    let value = text[at + 1..].trim().trim_end_matches(';').trim();
    let quoted = value.starts_with(['"', '\'', '`']);
    let member = !value.contains('(') && (value.contains('.') || value.contains("::"));
    let bare = !value.is_empty() && value.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !(quoted || member || bare) || value.len() > 60 {
        return false;
    }
    // `completed = true`, `done=1`: a flag of completion raised.
    let raised = matches!(value, "true" | "True" | "1" | "\"true\"");
    if raised {
        return target.len() <= 3
            && target.iter().any(|w| {
                matches!(
                    w.as_str(),
                    "done" | "complete" | "completed" | "finished" | "success" | "succeeded" | "solved"
                )
            })
            && !target
                .iter()
                .any(|w| matches!(w.as_str(), "not" | "fail" | "failed" | "error" | "stop" | "max"));
    }
    let names_outcome =
        target.iter().any(|w| matches!(w.as_str(), "status" | "reason" | "outcome" | "state" | "exit"));
    let words = canonical_words(value);
    let done = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "done"
                | "complete"
                | "completed"
                | "final"
                | "finished"
                | "finish"
                | "success"
                | "succeeded"
                | "solved"
        )
    });
    let other = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "max"
                | "limit"
                | "fail"
                | "failed"
                | "failure"
                | "error"
                | "timeout"
                | "time"
                | "cancel"
                | "cancelled"
                | "abort"
                | "aborted"
                | "interrupt"
                | "interrupted"
                | "budget"
                | "stop"
                | "stopped"
                | "not"
                | "in"
        )
    });
    names_outcome && done && !other
}

/// Whether a node of `kind` is a `continue`.
fn is_continue(kind: &str) -> bool {
    matches!(kind, "continue_statement" | "continue_expression")
}

/// The last statement of a block, not a comment after it (`continue; //
/// go on`); through Go's statement list.
fn last_statement<'n>(block: Node<'n>) -> Option<Node<'n>> {
    fn last<'n>(node: Node<'n>) -> Option<Node<'n>> {
        (0..node.named_child_count())
            .rev()
            .take(4)
            .filter_map(|i| node.named_child(i as u32))
            .find(|child| !matches!(child.kind(), "comment" | "line_comment" | "block_comment"))
    }
    let statement = last(block)?;
    if statement.kind() == "statement_list" {
        last(statement)
    } else {
        Some(statement)
    }
}

/// Whether a literal looks for an unchecked box of a Markdown checklist:
/// `- [ ]`, or a pattern of one (`\[ \]`, `\[\s\]`, `\[[[:space:]]\]`).
fn is_unchecked_box(text: &str) -> bool {
    text.replace('\\', "").contains("[ ]")
        || ["\\[\\s\\]", "\\[\\s*\\]", "\\[[[:space:]]\\]", "\\[[[:space:]]*\\]"]
            .iter()
            .any(|pattern| text.contains(pattern))
}

/// Calls that look for a text in another (`re.search`, `includes`,
/// `strings.Contains`): their literal arguments are what is looked for.
fn is_search_callee(name: &str) -> bool {
    matches!(
        name,
        "search"
            | "match"
            | "fullmatch"
            | "findall"
            | "includes"
            | "contains"
            | "Contains"
            | "test"
            | "find"
            | "indexOf"
            | "MatchString"
            | "FindString"
            | "FindStringSubmatch"
            | "is_match"
            | "startswith"
            | "endswith"
            | "startsWith"
            | "endsWith"
            | "HasPrefix"
            | "HasSuffix"
    )
}

fn strip_quotes(text: &str) -> &str {
    // String prefixes (`r"..."`, `f'...'`, `b"..."`, `r#"..."#`) come off only
    // when a quote follows them; then the quotes themselves.
    let unprefixed = text.trim_start_matches(['r', 'R', 'f', 'F', 'b', 'B', 'u', 'U']);
    let text = if unprefixed.starts_with(['"', '\'', '#']) { unprefixed } else { text };
    text.trim_matches(|c| matches!(c, '"' | '\'' | '`' | '#'))
}

/// The object of a plain field access (`input.command` gives `input`;
/// `self.x`, `this.x` and calls give nothing).
fn field_root(text: &str) -> Option<&str> {
    let (root, rest) = text.split_once('.')?;
    let plain =
        |part: &str| !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    (text.len() <= 64 && plain(root) && rest.split('.').all(plain) && !matches!(root, "self" | "this"))
        .then_some(root)
        .filter(|root| !root.starts_with(|c: char| c.is_ascii_digit()))
}

/// A condition that is one name or field, possibly negated: the name and
/// whether it was negated.
fn simple_flag(text: &str) -> Option<(&str, bool)> {
    let text = text.trim();
    let (text, negated) = match text.strip_prefix("not ").or_else(|| text.strip_prefix('!')) {
        Some(rest) => (rest.trim(), true),
        None => (text, false),
    };
    let text = text.trim_start_matches('(').trim_end_matches(')').trim();
    let simple = !text.is_empty()
        && text.len() < 64
        && text.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == '$')
        && text.chars().next().is_some_and(|c| !c.is_ascii_digit())
        && !matches!(text, "True" | "true" | "False" | "false" | "None" | "nil" | "null");
    simple.then_some((text.trim_start_matches('$'), negated))
}

/// What a bounded sub-walk found in an expression.
#[derive(Default)]
struct Collected {
    clause: Clause,
}

/// A node's named siblings, from [`Walker::siblings_of`].
struct Siblings<'t> {
    children: std::rc::Rc<[Node<'t>]>,
    /// The node's place among them; `None` when it is not one of them.
    at: Option<usize>,
}

impl<'t> Siblings<'t> {
    /// Every sibling before the node, in source order (all of them when the
    /// node is not among them, as a walk that never meets it would give).
    fn before(&self) -> &[Node<'t>] {
        &self.children[..self.at.unwrap_or(self.children.len())]
    }

    /// Up to four siblings after the node.
    fn after(&self) -> &[Node<'t>] {
        match self.at {
            Some(at) => &self.children[at + 1..(at + 5).min(self.children.len())],
            None => &[],
        }
    }
}

struct Walker<'s, 't> {
    family: Family,
    source: &'s str,
    facts: Facts,
    frames: Vec<Frame<'t>>,
    loop_frames: Vec<usize>,
    function_frames: Vec<usize>,
    /// Frame indexes of guards (if bodies, case arms, handlers, `&&` lists).
    guard_frames: Vec<usize>,
    /// Clauses of a guard node, by node id and by whether the exit sits in
    /// its `else` branch (the condition read negated).
    clause_memo: HashMap<(usize, bool), Vec<usize>>,
    /// `clauses_of` reads a name that holds a boolean of parts part by part
    /// (`boolean_alias_parts`): set only while the guard of an exit is read.
    alias_parts: bool,
    /// The names of a case's subject, by the start of each alternative of
    /// the case (`Clause::subject_idents`).
    case_subjects: std::cell::RefCell<HashMap<usize, Vec<String>>>,
    /// The named children of the parents whose siblings were asked for, by
    /// the parent's node id: an exit asks of its block once per rule, and a
    /// block of many statements would otherwise be walked from its first
    /// child each time.
    children_memo: std::cell::RefCell<HashMap<usize, std::rc::Rc<[Node<'t>]>>>,
    /// For each callee text met: whether its words name logging, and
    /// whether they are of interest to the argument sub-walk.
    callee_kinds: HashMap<&'s str, (bool, bool)>,
    /// The canonical words of each text a clause has split, by text: the
    /// same names come back in clause after clause.
    words_memo: std::cell::RefCell<HashMap<&'s str, Vec<String>>>,
    /// Node ids of `try` statements whose body holds a loop: their handlers
    /// end that loop rather than swallow what it raised.
    wrapping_tries: HashSet<usize>,
    /// The handler clauses made for a `try` around calls, by the `try`'s
    /// node id (made once, shared by every call in its body).
    calling_tries: HashMap<usize, Vec<(usize, Range<usize>)>>,
    /// The loop-condition clause of each loop flag, by `(loop, flag index)`.
    flag_clauses: HashMap<(usize, usize), usize>,
    /// Loop flags set to their stopping value unconditionally in the loop's
    /// body, by `(loop, flag index)`.
    flag_resets: HashSet<(usize, usize)>,
    /// What each node kind of the grammar is, whether it names something
    /// and what it tells a clause, by kind id: matching strings for every
    /// node of a large file costs more than the rest of the walk.
    kinds: Vec<(Syn, bool, Mark)>,
    /// Each node kind's name, by kind id, as first read: `Node::kind`
    /// measures and checks the grammar's C string on every call.
    kind_names: Vec<std::cell::OnceCell<&'t str>>,
    /// How many frames are retry decorators: while none is, no call or
    /// argument needs to look for one above it.
    decorator_frames: usize,
    /// Field ids of the grammar by name (see [`FIELD_NAMES`]).
    fields: Vec<(&'static str, Option<u16>)>,
    /// Whether the tree has a syntax error anywhere: when it has none, no
    /// node needs asking whether it is one.
    has_errors: bool,
    /// `true` for each string frame, `false` for each interpolation frame.
    string_nesting: Vec<bool>,
    /// For each call frame: whether it is a logging call.
    call_nesting: Vec<bool>,
    /// Names of the functions entered so far, and of those defined at the
    /// top of the file or in its classes ([`Walker::declare_functions`]).
    function_names: HashSet<String>,
    /// Calls from a named function to a bare name or a method of its own
    /// object (`finish()`, `this.chatApi()`), with the guards above them when
    /// the callee was already known by name: the edges in which mutual
    /// recursion is looked for once the walk is done.
    call_edges: Vec<CallEdge>,
}

/// A call from a named function to another function of the file, by name.
struct CallEdge {
    caller: usize,
    callee: String,
    guards: Vec<usize>,
}

/// The role, identifier-ness and clause mark of every node kind of a
/// grammar, by kind id.
fn kind_table(tree: &Tree, family: Family) -> Vec<(Syn, bool, Mark)> {
    let language = tree.language();
    (0..language.node_kind_count())
        .map(|id| {
            kind_entry(
                family,
                u16::try_from(id).ok().and_then(|id| language.node_kind_for_id(id)).unwrap_or(""),
            )
        })
        .collect()
}

fn kind_names(tree: &Tree) -> Vec<std::cell::OnceCell<&str>> {
    (0..tree.language().node_kind_count()).map(|_| std::cell::OnceCell::new()).collect()
}

fn kind_entry(family: Family, kind: &str) -> (Syn, bool, Mark) {
    (syn(family, kind), is_identifier_kind(kind), mark_of(family, kind))
}

/// Builds the facts of one parsed file.
pub(crate) fn collect(tree: &Tree, source: &str, family: Family) -> Facts {
    let facts = Facts {
        loops: Vec::new(),
        clauses: Vec::new(),
        links: Vec::new(),
        calls: Vec::new(),
        kwargs: Vec::new(),
        handlers: Vec::new(),
        assigns: Vec::new(),
        functions: Vec::new(),
        function_exits: Vec::new(),
        aliases: HashMap::default(),
        passed: HashSet::default(),
        called_in_loops: HashSet::default(),
        cancel_by_person: false,
        flag_assigns: Vec::new(),
        local_flag_sets: Vec::new(),
        loop_flag_sets: Vec::new(),
        decided_flags: HashSet::default(),
        opaque_flags: HashMap::default(),
        transparent_flags: HashSet::default(),
        return_sites: HashSet::default(),
        budget_exit_sites: HashSet::default(),
        loop_flags: Vec::new(),
        wrapping_handlers: Vec::new(),
        caller_handlers: Vec::new(),
        seen_filters: Vec::new(),
        parse_errors: Vec::new(),
        too_deep: false,
    };
    let mut walker = Walker {
        family,
        source,
        facts,
        frames: Vec::new(),
        loop_frames: Vec::new(),
        function_frames: Vec::new(),
        guard_frames: Vec::new(),
        clause_memo: HashMap::default(),
        alias_parts: false,
        case_subjects: std::cell::RefCell::default(),
        children_memo: std::cell::RefCell::default(),
        callee_kinds: HashMap::default(),
        words_memo: std::cell::RefCell::default(),
        wrapping_tries: HashSet::default(),
        calling_tries: HashMap::default(),
        flag_clauses: HashMap::default(),
        flag_resets: HashSet::default(),
        string_nesting: Vec::new(),
        kinds: kind_table(tree, family),
        kind_names: kind_names(tree),
        decorator_frames: 0,
        fields: field_table(tree),
        has_errors: tree.root_node().has_error(),
        call_nesting: Vec::new(),
        function_names: HashSet::default(),
        call_edges: Vec::new(),
    };
    walker.walk(tree);
    mark_mutual_recursion(&mut walker.facts, &walker.call_edges);
    let facts = &mut walker.facts;
    if !facts.cancel_by_person {
        facts.cancel_by_person = ties_cancelling_to_a_person(facts);
    }
    walker.facts
}

/// Functions that call each other round (`finish` calls `chatApi`, whose
/// stream callback calls `finish`) recurse as one loop: each is marked
/// recursive, with the guards of its calls into the cycle. Cycles are the
/// strongly connected components of the call graph by name (Tarjan's
/// algorithm, iterative: a generated file can nest calls deeper than a
/// stack should).
fn mark_mutual_recursion(facts: &mut Facts, edges: &[CallEdge]) {
    if edges.is_empty() {
        return;
    }
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::default();
    for (id, function) in facts.functions.iter().enumerate() {
        if let Some(name) = function.name.as_deref() {
            by_name.entry(name).or_default().push(id);
        }
    }
    let count = facts.functions.len();
    let mut adjacency: Vec<Vec<usize>> = vec![Vec::new(); count];
    for edge in edges {
        if let Some(targets) = by_name.get(edge.callee.as_str()) {
            for &target in targets {
                if target != edge.caller && !adjacency[edge.caller].contains(&target) {
                    adjacency[edge.caller].push(target);
                }
            }
        }
    }
    let component = strongly_connected(&adjacency);
    let mut size = vec![0usize; count];
    for &c in &component {
        size[c] += 1;
    }
    let cyclic: Vec<&CallEdge> = edges
        .iter()
        .filter(|edge| {
            let caller = edge.caller;
            size[component[caller]] >= 2
                && by_name.get(edge.callee.as_str()).is_some_and(|targets| {
                    targets.iter().any(|&t| t != caller && component[t] == component[caller])
                })
        })
        .collect();
    drop(by_name);
    for edge in cyclic {
        let function = &mut facts.functions[edge.caller];
        function.recursive = true;
        let room = 16usize.saturating_sub(function.recursion_guards.len());
        function.recursion_guards.extend(edge.guards.iter().take(room).copied());
    }
}

/// The strongly connected component of each node, numbered from 0.
fn strongly_connected(adjacency: &[Vec<usize>]) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let count = adjacency.len();
    let mut index = vec![UNSEEN; count];
    let mut low = vec![0usize; count];
    let mut on_stack = vec![false; count];
    let mut component = vec![UNSEEN; count];
    let mut stack = Vec::new();
    let mut next_index = 0;
    let mut next_component = 0;
    // (node, how many of its edges have been followed)
    let mut work: Vec<(usize, usize)> = Vec::new();
    for root in 0..count {
        if index[root] != UNSEEN {
            continue;
        }
        work.push((root, 0));
        while let Some(&mut (node, ref mut followed)) = work.last_mut() {
            if *followed == 0 && index[node] == UNSEEN {
                index[node] = next_index;
                low[node] = next_index;
                next_index += 1;
                stack.push(node);
                on_stack[node] = true;
            }
            if let Some(&next) = adjacency[node].get(*followed) {
                *followed += 1;
                if index[next] == UNSEEN {
                    work.push((next, 0));
                } else if on_stack[next] {
                    low[node] = low[node].min(index[next]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component[member] = next_component;
                    if member == node {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

/// Every field name the walk asks nodes for. Tree-sitter finds a field by
/// name with a linear scan of the grammar's field names (a `strncmp` each);
/// the walk asks for fields of most nodes, so it looks the ids up once.
const FIELD_NAMES: [&str; 24] = [
    "alternative",
    "argument",
    "arguments",
    "body",
    "communication",
    "consequence",
    "condition",
    "constructor",
    "definition",
    "field",
    "function",
    "guard",
    "index",
    "key",
    "left",
    "macro",
    "name",
    "operator",
    "pattern",
    "receiver",
    "right",
    "subject",
    "subscript",
    "value",
];

fn field_table(tree: &Tree) -> Vec<(&'static str, Option<u16>)> {
    let language = tree.language();
    FIELD_NAMES.iter().map(|name| (*name, language.field_id_for_name(name).map(u16::from))).collect()
}

impl<'s, 't> Walker<'s, 't> {
    /// `node`'s child in the field `name`, by the field's id.
    fn field<'n>(&self, node: Node<'n>, name: &'static str) -> Option<Node<'n>> {
        match self.fields.iter().find(|(known, _)| *known == name) {
            Some((_, Some(id))) => node.child_by_field_id(*id),
            // The grammar has no field of that name.
            Some((_, None)) => None,
            None => node.child_by_field_name(name),
        }
    }

    /// The callee node of a call of any family.
    fn callee_of<'n>(&self, node: Node<'n>) -> Option<Node<'n>> {
        self.field(node, "function")
            .or_else(|| self.field(node, "constructor"))
            .or_else(|| self.field(node, "macro"))
            .or_else(|| self.field(node, "name"))
    }

    fn text(&self, node: Node<'t>) -> &'s str {
        self.source.get(node.byte_range()).unwrap_or("")
    }

    /// What `node`'s kind is and whether it names something, from the
    /// grammar's table (by kind id, no string comparison).
    fn kind_of(&self, node: Node<'t>) -> (Syn, bool) {
        let (syntax, identifier, _) = self.kind_entry(node);
        (syntax, identifier)
    }

    /// `text`'s canonical words ([`canonical_words`]) added to `out`.
    fn extend_words(&self, out: &mut Vec<String>, text: &'s str) {
        let mut memo = self.words_memo.borrow_mut();
        out.extend(memo.entry(text).or_insert_with(|| canonical_words(text)).iter().cloned());
    }

    /// The attribute name a Python `getattr` or `hasattr` call is handed
    /// (its second argument), when `call` is one.
    fn attribute_named(&self, call: Node<'t>) -> Option<Node<'t>> {
        let function = self.field(call, "function")?;
        if !matches!(self.text(function), "getattr" | "hasattr") {
            return None;
        }
        self.field(call, "arguments")?.named_child(1)
    }

    /// `node.kind()`, from the table of names.
    fn kind_name(&self, node: Node<'t>) -> &'t str {
        match self.kind_names.get(usize::from(node.kind_id())) {
            Some(name) => name.get_or_init(|| node.kind()),
            None => node.kind(),
        }
    }

    /// Everything the table knows of `node`'s kind.
    fn kind_entry(&self, node: Node<'t>) -> (Syn, bool, Mark) {
        self.kinds
            .get(usize::from(node.kind_id()))
            .copied()
            .unwrap_or_else(|| kind_entry(self.family, node.kind()))
    }

    fn syn_of(&self, node: Node<'t>) -> Syn {
        self.kind_of(node).0
    }

    /// The names of the functions defined at the top of the file and in its
    /// classes, modules and blocks of methods (not inside other functions),
    /// known before the walk: a call of a function defined further down
    /// keeps its guards for the search for mutual recursion
    /// (`processResponse` calls `handleToolUse`, defined after it, which
    /// calls `processResponse` back).
    fn declare_functions(&mut self, root: Node<'t>) {
        let mut stack = vec![(root, 0u8)];
        let mut cursor = root.walk();
        let mut visited = 0usize;
        while let Some((node, depth)) = stack.pop() {
            visited += 1;
            if visited > 4096 {
                break;
            }
            for child in node.named_children(&mut cursor) {
                if self.syn_of(child) == Syn::Function {
                    let name = self.field(child, "name").or_else(|| {
                        // `const run = async () => {...}`: the declarator names it.
                        (self.kind_name(node) == "variable_declarator")
                            .then(|| self.field(node, "name"))
                            .flatten()
                    });
                    if let Some(name) = name.map(|n| self.text(n)) {
                        if !self.function_names.contains(name) {
                            self.function_names.insert(name.to_string());
                        }
                    }
                } else if depth < 4 && child.named_child_count() > 0 {
                    stack.push((child, depth + 1));
                }
            }
        }
    }

    fn walk(&mut self, tree: &'t Tree) {
        self.declare_functions(tree.root_node());
        let mut cursor = tree.walk();
        // The cursor's depth, kept here: `TreeCursor::depth` counts its
        // stack on every call, a few percent of a whole audit.
        let mut depth: u32 = 0;
        loop {
            let node = cursor.node();
            let step = self.enter(node);
            if step == Step::Descend {
                if depth >= MAX_NESTING {
                    // Deeper than any code a person writes: read no further
                    // down (the report warns `nesting-too-deep`).
                    self.facts.too_deep |= node.child_count() > 0;
                } else if cursor.goto_first_child() {
                    depth += 1;
                    continue;
                }
            }
            if step != Step::Leaf {
                self.leave();
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
                depth -= 1;
                self.leave();
            }
        }
    }

    fn innermost_function_frame(&self) -> usize {
        self.function_frames.last().copied().unwrap_or(0)
    }

    /// The id of the function the walk is in, if any.
    fn innermost_function(&self) -> Option<usize> {
        let frame = *self.function_frames.last()?;
        match self.frames[frame].role {
            FrameRole::Function(id) => Some(id),
            _ => None,
        }
    }

    fn loops_of_current_function(&self) -> impl DoubleEndedIterator<Item = &usize> {
        let floor = self.innermost_function_frame();
        self.loop_frames.iter().filter(move |frame| **frame >= floor)
    }

    /// A `break` without a label inside a `switch` (JavaScript, Go) or a
    /// Go `select` leaves that statement, not the loop around it.
    fn breaks_a_switch(&self, node: Node<'t>) -> bool {
        if !matches!(self.family, Family::Js | Family::Go)
            || self.kind_name(node) != "break_statement"
            || (0..node.named_child_count()).any(|index| {
                node.named_child(index as u32)
                    .is_some_and(|child| matches!(child.kind(), "statement_identifier" | "label_name"))
            })
        {
            return false;
        }
        let Some((frame, _)) = self.innermost_loop() else { return false };
        let loop_node = self.frames[frame].node;
        let mut ancestor = node.parent();
        while let Some(current) = ancestor {
            if current.id() == loop_node.id() {
                return false;
            }
            let kind = self.kind_name(current);
            if is_switch(kind) || kind == "select_statement" {
                return true;
            }
            ancestor = current.parent();
        }
        false
    }

    fn innermost_loop(&self) -> Option<(usize, usize)> {
        let frame = *self.loops_of_current_function().last()?;
        match self.frames[frame].role {
            FrameRole::Loop(id) => Some((frame, id)),
            _ => None,
        }
    }

    /// Reads one node; pushes its frame unless it is a plain leaf (most
    /// nodes are: names, punctuation, keywords), which nothing looks up.
    fn enter(&mut self, node: Node<'t>) -> Step {
        if self.has_errors && (node.is_error() || node.is_missing()) && self.facts.parse_errors.len() < 8 {
            self.facts.parse_errors.push(node.byte_range());
        }
        let (syntax, identifier) = self.kind_of(node);
        if self.string_nesting.last() == Some(&true) && syntax != Syn::Interp {
            // Inside a string only interpolations are code: keep descending
            // while something below may hold one, read nothing else.
            self.frames.push(Frame { node, role: FrameRole::Str });
            self.string_nesting.push(true);
            return if node.named_child_count() > 0 && syntax != Syn::SkipAll {
                Step::Descend
            } else {
                Step::Skip
            };
        }
        let mut role = FrameRole::Plain;
        let mut descend = true;
        match syntax {
            Syn::Comment | Syn::SkipAll => descend = false,
            Syn::Str => role = FrameRole::Str,
            Syn::Interp => role = FrameRole::Interp,
            Syn::Loop(kind) => role = FrameRole::Loop(self.enter_loop(node, kind)),
            Syn::If | Syn::Case => {
                if syntax == Syn::If && self.family != Family::Bash {
                    self.note_seen_skip(node);
                }
                role = FrameRole::Guard
            }
            Syn::Handler => role = self.enter_handler(node),
            Syn::Function => role = FrameRole::Function(self.enter_function(node)),
            Syn::Call => role = self.enter_call(node),
            Syn::Break => self.exit_site(node, false),
            Syn::Return | Syn::Raise => self.exit_site(node, true),
            Syn::Assign | Syn::AugAssign => self.enter_assign(node, syntax == Syn::AugAssign),
            Syn::Kwarg | Syn::Pair => self.enter_kwarg(node, syntax == Syn::Pair),
            Syn::Decorated => role = self.enter_decorated(node),
            Syn::Other => {
                if identifier && node.child_count() == 0 {
                    self.note_identifier(node);
                }
            }
        }
        if syntax == Syn::Assign && self.is_let_else(node) {
            role = FrameRole::Guard;
        }
        if matches!(role, FrameRole::Plain) && node.child_count() == 0 {
            return Step::Leaf;
        }
        let index = self.frames.len();
        match role {
            FrameRole::Loop(_) => self.loop_frames.push(index),
            FrameRole::Function(_) => self.function_frames.push(index),
            FrameRole::Guard | FrameRole::Handler(_) => self.guard_frames.push(index),
            FrameRole::Str => self.string_nesting.push(true),
            FrameRole::Interp => self.string_nesting.push(false),
            FrameRole::Call { is_log } => self.call_nesting.push(is_log),
            FrameRole::Decorator(_) => self.decorator_frames += 1,
            _ => {}
        }
        self.frames.push(Frame { node, role });
        if descend {
            Step::Descend
        } else {
            Step::Skip
        }
    }

    fn leave(&mut self) {
        let Some(frame) = self.frames.pop() else { return };
        let index = self.frames.len();
        match frame.role {
            FrameRole::Loop(_) if self.loop_frames.last() == Some(&index) => {
                self.loop_frames.pop();
            }
            FrameRole::Function(_) if self.function_frames.last() == Some(&index) => {
                self.function_frames.pop();
            }
            FrameRole::Guard | FrameRole::Handler(_) if self.guard_frames.last() == Some(&index) => {
                self.guard_frames.pop();
            }
            FrameRole::Str | FrameRole::Interp => {
                self.string_nesting.pop();
            }
            FrameRole::Call { .. } => {
                self.call_nesting.pop();
            }
            FrameRole::Decorator(_) => self.decorator_frames -= 1,
            _ => {}
        }
    }

    fn note_identifier(&mut self, node: Node<'t>) {
        // Only names handed to a (non-logging) call are remembered, and each
        // once: this runs for every identifier of the file.
        if self.call_nesting.last() != Some(&false) {
            return;
        }
        let text = self.text(node);
        if text.len() <= 64 && self.facts.passed.len() < 20_000 && !self.facts.passed.contains(text) {
            self.facts.passed.insert(text.to_string());
        }
    }

    fn enter_loop(&mut self, node: Node<'t>, mut kind: LoopKind) -> usize {
        let id = self.facts.loops.len();
        let family = self.family;
        let mut infinite = false;
        let mut condition: Vec<Node<'t>> = Vec::new();
        let mut range_bound: Option<Node<'t>> = None;
        let mut collection_walk = false;
        match (family, self.kind_name(node)) {
            (Family::Rust, "while_expression")
                if self.field(node, "condition").is_some_and(|c| {
                    self.kind_name(c) == "let_condition" && {
                        let text = self.text(c);
                        text.contains(".next()") || text.contains(".recv()")
                    }
                }) =>
            {
                // `while let Some(chunk) = stream.next().await`: a walk over a
                // stream's items, like a `for`.
                collection_walk = true;
            }
            (Family::Python, "while_statement")
            | (Family::Js, "while_statement")
            | (Family::Js, "do_statement")
            | (Family::Rust, "while_expression") => {
                if let Some(c) = self.field(node, "condition") {
                    condition.push(c);
                }
            }
            (Family::Js, "for_statement") => match self.field(node, "condition") {
                Some(c) if self.kind_name(c) != ";" && self.kind_name(c) != "empty_statement" => {
                    // A walk by index over a work list (`i < len(g.Files)`).
                    collection_walk = crate::words::counts_to_a_length(self.text(c));
                    condition.push(c)
                }
                _ => infinite = true,
            },
            (Family::Python, "for_statement") | (Family::Js, "for_in_statement") => {
                if let Some(right) = self.field(node, "right") {
                    range_bound = Some(right);
                    if self.family == Family::Js {
                        self.note_lines_typed(node, right);
                    }
                }
            }
            (Family::Rust, "for_expression") => range_bound = self.field(node, "value"),
            (Family::Rust, "loop_expression") => infinite = true,
            (Family::Go, "for_statement") => {
                let mut found = false;
                for index in 0..node.named_child_count() {
                    let Some(child) = node.named_child(index as u32) else { continue };
                    match self.kind_name(child) {
                        "for_clause" => {
                            found = true;
                            match self.field(child, "condition") {
                                Some(c) => {
                                    collection_walk = crate::words::counts_to_a_length(self.text(c));
                                    condition.push(c)
                                }
                                None => infinite = true,
                            }
                        }
                        "range_clause" => {
                            found = true;
                            range_bound = self.field(child, "right");
                        }
                        "block" | "comment" => {}
                        _ => {
                            found = true;
                            condition.push(child);
                        }
                    }
                }
                if !found {
                    infinite = true;
                }
            }
            (Family::Bash, "while_statement") => {
                if node.child(0).is_some_and(|c| self.kind_name(c) == "until") {
                    kind = LoopKind::Until;
                }
                let mut cursor = node.walk();
                condition
                    .extend(node.children_by_field_name("condition", &mut cursor).filter(|c| c.is_named()));
            }
            (Family::Bash, "for_statement") => {
                let mut cursor = node.walk();
                let values: Vec<_> = node.children_by_field_name("value", &mut cursor).collect();
                range_bound = values.first().copied();
            }
            (Family::Bash, "c_style_for_statement") => match self.field(node, "condition") {
                Some(c) => condition.push(c),
                None => infinite = true,
            },
            _ => {}
        }
        if condition.len() == 1 && self.is_literal_true(condition[0]) {
            infinite = true;
            condition.clear();
        }
        let range = node.byte_range();
        let bounded = range_bound.is_some_and(|bound| self.is_bounded_range(bound));
        let function = self.innermost_function();
        // A Python `for` sets its target on every pass (`async for message
        // in stream`): a check that compares it with the last one sees it
        // move.
        let mut assigned = HashSet::default();
        if self.family == Family::Python && self.kind_name(node) == "for_statement" {
            if let Some(left) = self.field(node, "left") {
                assigned.extend(self.collect_idents(left).into_iter().take(4));
            }
        }
        self.facts.loops.push(LoopFact {
            kind,
            range: range.clone(),
            infinite,
            exit_sites: 0,
            framework: None,
            assigned,
            function_name: None,
            collection: collection_walk || (range_bound.is_some() && !bounded),
            function,
            body_start: self
                .field(node, "body")
                .or_else(|| node.named_child(node.named_child_count().saturating_sub(1) as u32))
                .map_or(node.start_byte(), |body| body.start_byte()),
        });
        self.note_wrapping_handlers(id);
        let header = node.start_byte()..self.header_end(node);
        // A bounded loop inside the agent's loop (a retry of one request)
        // ends only itself: its bound is an exit of the outer loop only when
        // running out of it leaves that loop too.
        if self.inside_driving_loop(node) && !self.exhaustion_leaves(node) {
            condition.clear();
        }
        if !condition.is_empty() {
            let roots = self.boolean_roots(&condition);
            let clauses = self.clauses_of(&roots);
            // `while index < plan.tasks.len()`: a walk by index over the
            // plan's tasks (which a failed review may lengthen) ends when the
            // work is done, as `for task in plan.tasks` does.
            if self.innermost_loop().is_none() {
                for &clause in &clauses {
                    let clause = &mut self.facts.clauses[clause];
                    let has = |word: &str| clause.words.iter().any(|w| w == word);
                    // (Not a cap on a length, `depth < max_subtask_chain_length`.)
                    // (Nor a count of attempts or passes against a number or
                    // the plan's size: `plan_retry_count < 3`, `iteration <
                    // 3 * len(plan.steps)`.)
                    if clause.ordering
                        && has("len")
                        && (has("plan")
                            || has("plans")
                            || has("planned")
                            || has("subtask")
                            || has("subtasks"))
                        && !["max", "attempt", "iter", "turn", "round"].iter().any(|w| has(w))
                    {
                        clause.walks_plan = true;
                    }
                }
            }
            if kind == LoopKind::Until {
                for &clause in &clauses {
                    self.facts.clauses[clause].until = true;
                }
            }
            for &clause in &clauses {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::LoopCondition,
                    loop_id: id,
                    site: header.clone(),
                    via: None,
                    depth: 0,
                });
            }
            for (index, part) in roots.into_iter().enumerate() {
                if let Some((flag, polarity)) = self.flag_of(part) {
                    self.facts.loop_flags.push((id, flag, polarity));
                    if let Some(&clause) = clauses.get(index) {
                        self.flag_clauses.insert((id, self.facts.loop_flags.len() - 1), clause);
                    }
                }
            }
        }
        // `for step in plan.steps`: a walk over the plan a model made ends
        // when the work is done.
        if let Some(walked) = range_bound.filter(|_| !bounded && self.innermost_loop().is_none()) {
            let text = self.text(walked);
            let words = if text.len() <= 120 { canonical_words(text) } else { Vec::new() };
            if words.iter().any(|w| matches!(w.as_str(), "plan" | "planned" | "subtask" | "subtasks")) {
                let clause = self.facts.clauses.len();
                self.facts.clauses.push(Clause {
                    range: walked.byte_range(),
                    words,
                    walks_plan: true,
                    ..Clause::default()
                });
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::LoopCondition,
                    loop_id: id,
                    site: header.clone(),
                    via: None,
                    depth: 0,
                });
            }
        }
        if let Some(bound) =
            range_bound.filter(|_| !self.inside_driving_loop(node) || self.exhaustion_leaves(node))
        {
            if bounded {
                let clauses = self.clauses_of(&[bound]);
                // `for attempt in range(3)`: the bound counts tries, which
                // the header's range alone does not say.
                let variable = match family {
                    Family::Python | Family::Js => self.field(node, "left"),
                    Family::Rust => self.field(node, "pattern"),
                    _ => None,
                };
                let tries = variable.is_some_and(|v| {
                    let text = self.text(v);
                    text.len() <= 40 && canonical_words(text).iter().any(|w| w == "attempt")
                });
                for clause in clauses {
                    self.facts.clauses[clause].bounds_tries = tries;
                    self.facts.links.push(ExitLink {
                        clause,
                        role: Role::RangeBound,
                        loop_id: id,
                        site: header.clone(),
                        via: None,
                        depth: 0,
                    });
                }
            }
        }
        id
    }

    /// Whether the walk is inside a loop of the current function that is not
    /// a walk over a collection: the loop of an agent, around the new one.
    /// (A loop whose body, before the new loop `node`, reads what a person
    /// types in a statement of its own, under no condition, is a REPL
    /// around the agent's loop, not the agent's: `while True: line =
    /// input()` ... `while turns < MAX_TURNS:`. A loop of tries stays a
    /// retry of one step even there.)
    fn inside_driving_loop(&self, node: Node<'t>) -> bool {
        let retries = || self.header_words(node).iter().any(|w| w == "attempt");
        // The new loop's own frame is not pushed yet.
        self.loops_of_current_function().any(|frame| match self.frames[*frame].role {
            FrameRole::Loop(id) => {
                let outer = &self.facts.loops[id];
                let outer_node = self.frames[*frame].node;
                // (A loop over whole runs drives the loop inside it only
                // when that one waits for something.)
                let drives = || !self.repeats_whole_runs(outer_node) || self.waits(node);
                !outer.collection
                    && outer.kind != LoopKind::Framework
                    && ((!self.reads_a_person_first(outer_node, node.start_byte()) && drives()) || retries())
            }
            _ => false,
        })
    }

    /// Whether a loop's header counts whole runs of the work (`for i in
    /// range(num_runs)`, `for episode in range(n_episodes)`, `for game in
    /// games`, `for (let sprint = 1; sprint <= totalSprints; sprint++)`):
    /// each pass is one episode, and a loop inside it that steps
    /// the episode (`while not done:`) is the agent's, not a retry of one
    /// of its steps.
    /// (Not a cap of the steps of one, `for step in
    /// range(max_steps_per_episode)`: a count of passes or the word "per"
    /// says each pass is a step.)
    fn repeats_whole_runs(&self, outer: Node<'t>) -> bool {
        let words = self.header_words(outer);
        !words.iter().any(|word| word == "per" || crate::rules::COUNT_WORDS.contains(&word.as_str()))
            && words.iter().any(|word| {
                matches!(
                    word.as_str(),
                    "runs"
                        | "episode"
                        | "episodes"
                        | "game"
                        | "games"
                        | "trial"
                        | "trials"
                        | "experiment"
                        | "experiments"
                        | "sprint"
                        | "sprints"
                        | "milestone"
                        | "milestones"
                )
            })
    }

    /// The words of a loop's header line (none for a header longer than
    /// 200 bytes, which says too much to be read by its words).
    fn header_words(&self, node: Node<'t>) -> Vec<String> {
        let header = self.text(node).get(..self.header_end(node).saturating_sub(node.start_byte()));
        header.filter(|h| h.len() <= 200).map(canonical_words).unwrap_or_default()
    }

    /// Whether a loop sleeps on its passes (a call of [`SLEEP_CALLEES`] in
    /// it), as a poll of a job or a health check does: a wait inside a run,
    /// not the run's agent loop. (Asked as the walk enters the loop, before
    /// its calls are recorded: the same calls the rules' waiting loops are
    /// made of, found in its tree.)
    fn waits(&self, node: Node<'t>) -> bool {
        let mut stack = vec![node];
        // One cursor for the walk: each use resets it to the node at hand.
        let mut cursor = node.walk();
        let mut visited = 0;
        while let Some(n) = stack.pop() {
            visited += 1;
            if visited > 512 {
                return false;
            }
            if self.syn_of(n) == Syn::Call
                && self
                    .callee_of(n)
                    .is_some_and(|callee| SLEEP_CALLEES.contains(&last_name(self.text(callee))))
            {
                return true;
            }
            stack.extend(n.named_children(&mut cursor));
        }
        false
    }

    /// Whether one of the statements of `outer`'s body before `at` reads
    /// what a person types (`input()`, `rl.question()`, `h.on_input()`)
    /// as a statement of its own: an assignment or a call, not under an
    /// `if` (an approval asked inside an agent's pass is no REPL).
    /// (`facts.calls` is in the order the walk met them, by their start.)
    fn reads_a_person_first(&self, outer: Node<'t>, at: usize) -> bool {
        let Some(body) = self.field(outer, "body") else { return false };
        let mut statements = self.children_named(body);
        // (Go's block holds its statements in a list of their own.)
        if let [list] = statements.as_slice() {
            if self.kind_name(*list) == "statement_list" {
                statements = self.children_named(*list);
            }
        }
        statements.iter().take_while(|s| s.end_byte() <= at).take(12).any(|statement| {
            let plain = matches!(
                self.kind_name(*statement),
                "expression_statement"
                    | "assignment"
                    | "lexical_declaration"
                    | "variable_declaration"
                    | "short_var_declaration"
                    | "let_declaration"
                    | "assignment_statement"
            );
            let range = statement.byte_range();
            let from = self.facts.calls.partition_point(|call| call.range.start < range.start);
            plain
                && self.facts.calls[from..]
                    .iter()
                    .take_while(|call| call.range.start < range.end)
                    .any(|call| crate::rules::reads_person_input(&call.callee_last))
        })
    }

    /// Whether running a loop to its end leaves the code around it: a
    /// Python `for ... else: raise`, or an exit (or a guarded exit) as the
    /// next statement.
    fn exhaustion_leaves(&self, node: Node<'t>) -> bool {
        let leaves = |statement: Node<'t>| {
            let text = self.text(statement).trim_start();
            let head = text.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or("");
            matches!(head, "return" | "raise" | "throw" | "break" | "panic" | "bail" | "exit")
                || text.starts_with("sys.exit")
                || text.starts_with("process.exit")
                || text.starts_with("os.Exit")
                || text.starts_with("log.Fatal")
        };
        if let Some(alternative) = self.field(node, "alternative") {
            if (0..alternative.named_child_count())
                .filter_map(|i| alternative.named_child(i as u32))
                .any(|child| leaves(child) || self.children_named(child).iter().any(|c| leaves(*c)))
            {
                return true;
            }
        }
        // The loop's frame is not pushed yet: its parent is the top frame.
        let Some(parent) = self.ancestor(0) else { return false };
        let mut next = self.siblings_of(parent, node).after().first().copied();
        // Go and Rust put the loop in an expression statement.
        if next.is_none() && self.kind_name(parent) == "expression_statement" {
            next = self
                .ancestor(1)
                .and_then(|grandparent| self.siblings_of(grandparent, parent).after().first().copied());
        }
        let Some(next) = next.filter(|n| !matches!(self.syn_of(*n), Syn::Comment)) else { return false };
        if leaves(next) {
            return true;
        }
        // `if err != nil { return err }` right after the retries.
        self.syn_of(next) == Syn::If && {
            let body = self.field(next, "consequence").or_else(|| {
                (0..next.named_child_count()).filter_map(|i| next.named_child(i as u32)).find(|c| {
                    matches!(self.kind_name(*c), "block" | "statement_block" | "compound_statement")
                })
            });
            body.is_some_and(|body| {
                // (Go puts a block's statements in a list of their own.)
                let body = match body.named_child(0) {
                    Some(list) if self.kind_name(list) == "statement_list" => list,
                    _ => body,
                };
                leaves(body)
                    || (0..body.named_child_count()).filter_map(|i| body.named_child(i as u32)).any(leaves)
            })
        }
    }

    /// The named children of `parent` before and after `child` (at most four
    /// after it, and none past the first 4,096). Asked of the parent, since
    /// tree-sitter finds a node's parent and siblings by walking down from
    /// the root (quadratic on a deep nesting); each parent's children are
    /// listed once.
    fn siblings_of(&self, parent: Node<'t>, child: Node<'t>) -> Siblings<'t> {
        let listed = self.children_memo.borrow().get(&parent.id()).cloned();
        let children = listed.unwrap_or_else(|| {
            let mut cursor = parent.walk();
            let children: std::rc::Rc<[Node<'t>]> = parent.named_children(&mut cursor).take(4096).collect();
            self.children_memo.borrow_mut().insert(parent.id(), children.clone());
            children
        });
        // Siblings are in source order; zero-width ones can share a start.
        let first = children.partition_point(|sibling| sibling.start_byte() < child.start_byte());
        let at = children[first..]
            .iter()
            .take_while(|sibling| sibling.start_byte() == child.start_byte())
            .position(|sibling| sibling.id() == child.id())
            .map(|offset| first + offset);
        Siblings { children, at }
    }

    /// The node of the frame below the top one by `up` frames (0: the top):
    /// the parents of the node being entered, without tree-sitter's walk.
    fn ancestor(&self, up: usize) -> Option<Node<'t>> {
        self.frames.len().checked_sub(1 + up).map(|index| self.frames[index].node)
    }

    /// The end of a loop's first line, for its header evidence.
    fn header_end(&self, node: Node<'t>) -> usize {
        let start = node.start_byte();
        let rest = self.source.get(start..node.end_byte()).unwrap_or("");
        start + rest.find('\n').unwrap_or(rest.len())
    }

    fn is_literal_true(&self, node: Node<'t>) -> bool {
        let text = self.text(node).trim();
        let inner = text.trim_start_matches('(').trim_end_matches(')').trim();
        matches!(inner, "True" | "true" | "1" | ":" | "!false" | "not False" | "[ 1 ]" | "[[ 1 ]]")
            || (self.family == Family::Bash && matches!(inner.trim_end_matches(';').trim(), "true" | ":"))
    }

    /// A part of a loop condition that is a flag: one name (`while running`,
    /// `while not done`, `while (!this.finished)`) or one name compared with a
    /// constant (`while state == RUNNING`, `state != FINISHED`). Assignments
    /// to it that end the loop are exits.
    fn flag_of(&self, node: Node<'t>) -> Option<(String, FlagPolarity)> {
        let text = self.text(node).trim();
        let text = text.trim_start_matches('(').trim_end_matches(')').trim();
        if let Some((name, negated)) = simple_flag(text) {
            let polarity = if negated { FlagPolarity::Falsy } else { FlagPolarity::Truthy };
            return Some((name.to_string(), polarity));
        }
        let sides = self.children_named(node);
        let operator = self.field(node, "operator").map(|o| self.kind_name(o)).or_else(|| {
            // Python's comparison operators are anonymous children.
            let mut cursor = node.walk();
            let kinds: Vec<&str> =
                node.children(&mut cursor).filter(|c| !c.is_named()).map(|c| self.kind_name(c)).collect();
            kinds.first().copied()
        })?;
        let [left, right] = sides.as_slice() else { return None };
        let (name, constant, name_left) =
            match (simple_flag(self.text(*left)), simple_flag(self.text(*right))) {
                (Some((name, false)), _) => (name, self.text(*right).trim(), true),
                (_, Some((name, false))) => (name, self.text(*left).trim(), false),
                _ => return None,
            };
        if constant.len() > 64 {
            return None;
        }
        let polarity = match operator {
            "==" | "===" | "is" => FlagPolarity::Equals(constant.to_string()),
            "!=" | "!==" | "is not" => FlagPolarity::Differs(constant.to_string()),
            // `while (this.stepsLeft > 0)`: setting the count to zero ends
            // the loop (`stepsLeft = 0` on the final answer).
            ">" if name_left && constant == "0" => FlagPolarity::Positive,
            "<" if !name_left && constant == "0" => FlagPolarity::Positive,
            _ => return None,
        };
        Some((name.to_string(), polarity))
    }

    /// The operands of a condition split at and/or, without analysing them.
    fn boolean_roots(&self, nodes: &[Node<'t>]) -> Vec<Node<'t>> {
        let mut roots = Vec::new();
        let mut stack: Vec<Node<'t>> = nodes.iter().rev().copied().collect();
        while let Some(node) = stack.pop() {
            if roots.len() >= 16 {
                break;
            }
            match self.boolean_parts(node) {
                Some(parts) => stack.extend(parts.into_iter().rev()),
                None => roots.push(node),
            }
        }
        roots
    }

    /// For each `try` around a new loop (in the same function), the types
    /// its handlers catch: an exception raised in the loop ends it there.
    fn note_wrapping_handlers(&mut self, loop_id: usize) {
        for try_node in self.enclosing_tries() {
            self.wrapping_tries.insert(try_node.id());
            for (clause, range) in self.except_clauses(try_node) {
                self.facts.wrapping_handlers.push((loop_id, clause, range));
            }
        }
    }

    /// The `try` statements of the current function whose body the walk is
    /// in, outermost first.
    fn enclosing_tries(&self) -> Vec<Node<'t>> {
        let floor = self.innermost_function_frame();
        (floor..self.frames.len())
            .filter(|&index| {
                let node = self.frames[index].node;
                self.kind_name(node) == "try_statement"
                    && self.frames.get(index + 1).is_some_and(|child| {
                        self.field(node, "body").is_some_and(|body| body.id() == child.node.id())
                    })
            })
            .map(|index| self.frames[index].node)
            .collect()
    }

    /// A clause for each group of types each Python handler of `try_node`
    /// catches, with the handler's range.
    fn except_clauses(&mut self, try_node: Node<'t>) -> Vec<(usize, Range<usize>)> {
        let mut cursor = try_node.walk();
        let handlers: Vec<Node<'t>> =
            try_node.named_children(&mut cursor).filter(|c| self.kind_name(*c) == "except_clause").collect();
        let mut made = Vec::new();
        for handler in handlers {
            for words in self.handler_word_groups(handler) {
                made.push((self.facts.clauses.len(), handler.byte_range()));
                self.facts.clauses.push(Clause { range: handler.byte_range(), words, ..Clause::default() });
            }
        }
        made
    }

    /// A call outside any loop of its function, in the body of a Python
    /// `try` of that function: the handlers of the innermost such `try`,
    /// noted for the called name (linked by the engine to the loops of the
    /// function of that name).
    fn note_calling_handlers(&mut self, callee_last: &str) {
        if self.family != Family::Python || self.facts.caller_handlers.len() >= 64 {
            return;
        }
        let Some(try_node) = self.enclosing_tries().pop() else { return };
        if !self.calling_tries.contains_key(&try_node.id()) {
            let made = self.except_clauses(try_node);
            self.calling_tries.insert(try_node.id(), made);
        }
        for (clause, range) in self.calling_tries[&try_node.id()].clone() {
            self.facts.caller_handlers.push((callee_last.to_string(), clause, range));
        }
    }

    /// `range(N)`, `range(1, MAX_TURNS)`, `0..N`, `$(seq 1 $MAX)`, `{1..10}`,
    /// `range maxTurns` (Go 1.22), `itertools.count()` is not bounded, and
    /// neither is `range(len(items))`: it walks a collection, it does not cap
    /// turns.
    fn is_bounded_range(&self, node: Node<'t>) -> bool {
        let text = self.text(node).trim();
        if text.contains("len(")
            || text.contains(".len()")
            || text.contains(".length")
            || text.contains("count(")
        {
            return false;
        }
        match self.family {
            // `range(n)`, `tqdm(range(1, n + 1), desc=...)`, `trange(n)`, or a
            // name the function set to one (`pbar = tqdm(range(n))` ...
            // `for i in pbar:`).
            Family::Python => {
                python_range(text)
                    || (self.kind_name(node) == "identifier"
                        && self
                            .local_definition(node, text)
                            .is_some_and(|value| python_range(self.text(value))))
            }
            // `0..n`, `(1..=max).rev()`, `(0..n).step_by(2)`; not a slice of
            // a collection walked (`&history[start..]`, `x[a..b].iter()`).
            Family::Rust => {
                let mut walked = node;
                loop {
                    let inner = match self.kind_name(walked) {
                        "reference_expression" | "parenthesized_expression" => {
                            walked.named_child(walked.named_child_count().saturating_sub(1) as u32)
                        }
                        // A method called on it: what it is called on.
                        "call_expression" => self
                            .field(walked, "function")
                            .filter(|function| self.kind_name(*function) == "field_expression")
                            .and_then(|function| self.field(function, "value")),
                        _ => None,
                    };
                    match inner {
                        Some(inner) => walked = inner,
                        None => break,
                    }
                }
                let inner = text.trim_start_matches('(').trim_end_matches(')');
                self.kind_name(walked) == "range_expression" && inner.contains("..") && !inner.ends_with("..")
            }
            // `range 10`, `range maxTurns`; a slice of steps (`range
            // l.config.Steps`) is a walk over a collection.
            Family::Go => {
                let raw = split_identifier(text);
                let plural = raw.last().is_some_and(|w| w.len() > 3 && w.ends_with('s'));
                let words: Vec<&str> = raw.iter().map(|w| canonical(w)).collect();
                text.chars().all(|c| c.is_ascii_digit())
                    || words.iter().any(|w| matches!(*w, "max" | "num" | "total"))
                    || (!plural
                        && words.iter().any(|w| matches!(*w, "turn" | "step" | "iter" | "round" | "attempt")))
            }
            Family::Bash => text.contains("seq ") || (text.starts_with('{') && text.contains("..")),
            Family::Js => false,
        }
    }

    /// `for await (const line of rl)` over a readline interface on standard
    /// input (`rl = readline.createInterface({ input: process.stdin })`):
    /// each value is a line a person typed.
    fn note_lines_typed(&mut self, node: Node<'t>, right: Node<'t>) {
        let text = self.text(right);
        let made = if self.kind_name(right) == "identifier" {
            self.local_definition(right, text).map(|value| self.text(value))
        } else {
            Some(text)
        };
        if !made.is_some_and(|made| made.contains("createInterface") && made.contains("stdin")) {
            return;
        }
        if let Some(left) = self.field(node, "left") {
            for name in self.collect_idents(left).into_iter().take(2) {
                self.note_read_into(name, node.start_byte(), true);
            }
        }
    }

    /// The canonical words of the exception types a Python handler catches.
    fn handler_type_words(&self, node: Node<'t>) -> Vec<String> {
        let type_node = match self.family {
            Family::Python => self.field(node, "value").or_else(|| {
                (0..node.named_child_count())
                    .filter_map(|i| node.named_child(i as u32))
                    .find(|c| self.kind_name(*c) != "block" && self.kind_name(*c) != "comment")
            }),
            _ => None,
        };
        type_node.map(|t| canonical_words(self.text(t))).unwrap_or_default()
    }

    /// A name that a read at `at` fills with a line of input: what a person
    /// typed when `typed` (the `input` callee that `reads_input` looks for).
    fn note_read_into(&mut self, name: String, at: usize, typed: bool) {
        self.note_assigned(&name);
        let function = self.innermost_function();
        self.facts.aliases.entry(name).or_default().push(Definition {
            at,
            function,
            words: vec!["input".to_string()],
            idents: Vec::new(),
            callees: if typed { vec!["input".to_string()] } else { Vec::new() },
            searched: Vec::new(),
            arg_idents: Vec::new(),
            model_made: false,
            position: None,
        });
    }

    /// The words of each type a handler catches: one group per type when it
    /// names more than one, else one group of all its types' words (none
    /// when it names no type).
    fn handler_word_groups(&self, node: Node<'t>) -> Vec<Vec<String>> {
        let groups = self.handler_type_groups(node);
        if groups.len() > 1 {
            return groups;
        }
        let words = self.handler_type_words(node);
        if words.is_empty() {
            Vec::new()
        } else {
            vec![words]
        }
    }

    /// The canonical words of each exception type a Python handler
    /// catches, when it names more than one.
    fn handler_type_groups(&self, node: Node<'t>) -> Vec<Vec<String>> {
        if self.family != Family::Python {
            return Vec::new();
        }
        let Some(mut types) = self.field(node, "value").or_else(|| {
            (0..node.named_child_count())
                .filter_map(|i| node.named_child(i as u32))
                .find(|c| self.kind_name(*c) != "block" && self.kind_name(*c) != "comment")
        }) else {
            return Vec::new();
        };
        if self.kind_name(types) == "as_pattern" {
            types = types.named_child(0).unwrap_or(types);
        }
        if self.kind_name(types) == "parenthesized_expression" {
            types = types.named_child(0).unwrap_or(types);
        }
        if !matches!(self.kind_name(types), "tuple" | "expression_list") {
            return Vec::new();
        }
        (0..types.named_child_count())
            .filter_map(|i| types.named_child(i as u32))
            .take(8)
            .map(|t| canonical_words(self.text(t)))
            .filter(|words| !words.is_empty())
            .collect()
    }

    fn enter_handler(&mut self, node: Node<'t>) -> FrameRole {
        let type_words = self.handler_type_words(node);
        let type_groups = self.handler_word_groups(node);
        let id = self.facts.handlers.len();
        let wraps_loop = self.ancestor(0).is_some_and(|parent| self.wrapping_tries.contains(&parent.id()));
        let on_the_way_out = self.ancestor(0).is_some_and(|parent| {
            self.kind_name(parent) == "try_statement"
                && self.field(parent, "body").is_some_and(|body| {
                    let count = body.named_child_count();
                    count > 0
                        && body
                            .named_child(count as u32 - 1)
                            .is_some_and(|last| self.kind_name(last) == "return_statement")
                })
        });
        self.facts.handlers.push(HandlerFact {
            range: node.byte_range(),
            type_words,
            type_groups,
            in_loop: self.innermost_loop().is_some(),
            leaves: false,
            wraps_loop,
            on_the_way_out,
        });
        FrameRole::Handler(id)
    }

    fn enter_function(&mut self, node: Node<'t>) -> usize {
        let name = self.field(node, "name").map(|n| self.text(n).to_string()).or_else(|| {
            // `const run = async () => {...}`: the declarator names it.
            let parent = self.frames.last()?;
            (self.kind_name(parent.node) == "variable_declarator")
                .then(|| self.field(parent.node, "name").map(|n| self.text(n).to_string()))
                .flatten()
        });
        let id = self.facts.functions.len();
        if let Some(name) = &name {
            if !self.function_names.contains(name) {
                self.function_names.insert(name.clone());
            }
        }
        let receiver = (self.family == Family::Go)
            .then(|| self.field(node, "receiver"))
            .flatten()
            .and_then(|list| list.named_child(0))
            .and_then(|parameter| self.field(parameter, "name"))
            .map(|name| self.text(name).to_string());
        self.facts.functions.push(FunctionFact {
            name,
            receiver,
            range: node.byte_range(),
            recursive: false,
            recursion_guards: Vec::new(),
        });
        id
    }

    fn enter_decorated(&mut self, node: Node<'t>) -> FrameRole {
        let mut decorator_loop = None;
        let definition = self.field(node, "definition");
        for index in 0..node.named_child_count() {
            let Some(child) = node.named_child(index as u32) else { continue };
            if self.kind_name(child) != "decorator" {
                continue;
            }
            let words = canonical_words(self.text(child));
            let is_retry = words.iter().any(|w| w == "attempt" || w == "backoff")
                || self.text(child).contains("on_exception");
            if is_retry && decorator_loop.is_none() {
                let id = self.facts.loops.len();
                let name = definition.and_then(|d| self.field(d, "name")).map(|n| self.text(n).to_string());
                self.facts.loops.push(LoopFact {
                    kind: LoopKind::RetryDecorator,
                    range: child.start_byte()..node.end_byte(),
                    infinite: false,
                    exit_sites: 0,
                    framework: None,
                    assigned: HashSet::default(),
                    function_name: name,
                    collection: false,
                    function: self.innermost_function(),
                    body_start: child.start_byte(),
                });
                decorator_loop = Some(id);
            }
        }
        match decorator_loop {
            Some(id) => FrameRole::Decorator(id),
            None => FrameRole::Plain,
        }
    }

    fn current_decorator_loop(&self) -> Option<usize> {
        // Only calls inside the decorator expressions configure the retry
        // loop, not calls in the decorated function's body.
        if self.decorator_frames == 0 {
            return None;
        }
        let mut saw_decorator_node = false;
        for frame in self.frames.iter().rev().take(16) {
            if self.kind_name(frame.node) == "decorator" {
                saw_decorator_node = true;
            }
            if let FrameRole::Decorator(id) = frame.role {
                return saw_decorator_node.then_some(id);
            }
        }
        None
    }

    fn enclosing_function_name(&self) -> Option<String> {
        let frame = *self.function_frames.last()?;
        match self.frames[frame].role {
            FrameRole::Function(id) => self.facts.functions[id].name.clone(),
            _ => None,
        }
    }

    fn named_function_name(&self) -> Option<String> {
        self.function_frames.iter().rev().find_map(|&frame| match self.frames[frame].role {
            FrameRole::Function(id) => self.facts.functions[id].name.clone(),
            _ => None,
        })
    }

    /// `name` is the receiver of the Go method the walk is in.
    fn is_go_receiver(&self, name: &str) -> bool {
        self.family == Family::Go
            && !name.is_empty()
            && self.function_frames.last().is_some_and(|&frame| match self.frames[frame].role {
                FrameRole::Function(id) => self.facts.functions[id].receiver.as_deref() == Some(name),
                _ => false,
            })
    }

    fn enter_call(&mut self, node: Node<'t>) -> FrameRole {
        let callee_node = self.callee_of(node);
        let callee = callee_node.map(|c| self.text(c)).unwrap_or("");
        let callee = if callee.len() > 120 { &callee[..callee.floor_char_boundary(120)] } else { callee };
        let callee_last = last_identifier(callee).to_string();
        let in_loop = self.innermost_loop().is_some();
        // An error made with a code that says the user cancelled (`new
        // AlexusError("USER_CANCELLED", "...")`): the code is a name, not
        // a sentence for a reader.
        if (callee_last.ends_with("Error") || callee_last.ends_with("Exception"))
            && !self.facts.cancel_by_person
        {
            let text = self.text(node);
            let has = crate::words::contains_ignoring_case;
            self.facts.cancel_by_person = text.len() <= 300
                && quoted_codes(text).any(|code| {
                    has(code, "user") && (has(code, "cancel") || has(code, "interrupt") || has(code, "abort"))
                });
        }
        // (`self._chat_model.complete()` in `def complete` calls another
        // object's method: a receiver of more than one name is not the
        // function's own, and that function is neither recursive nor a
        // step some loop calls.)
        let own_receiver = callee.strip_suffix(callee_last.as_str()).is_none_or(|receiver| {
            let receiver = receiver.trim_end_matches(['.', ':', '>', '-']);
            !receiver.contains(['.', '>', ':']) || receiver.starts_with("super()")
        });
        let bare = own_receiver && {
            let receiver = callee.strip_suffix(callee_last.as_str()).unwrap_or("");
            let receiver = receiver.trim_end_matches(['.', ':']);
            matches!(receiver, "" | "self" | "this" | "cls" | "Self") || self.is_go_receiver(receiver)
        };
        // (`agent.run(task)` in `def run`: another object's function of the
        // same name, no step of a loop.)
        let calls_namesake = !bare && self.enclosing_function_name().is_some_and(|name| name == callee_last);
        if in_loop && !calls_namesake && !self.facts.called_in_loops.contains(&callee_last) {
            self.facts.called_in_loops.insert(callee_last.clone());
        }
        // A call of the function it sits in makes that function recursive;
        // so does one from a callback inside it (`deepResearch` called in
        // the arrow handed to `map`) when the call names no other object.
        // Calls to other functions of the file are kept for the search for
        // mutual recursion.
        if !callee_last.is_empty() && own_receiver {
            let mut named = 0;
            for position in (0..self.function_frames.len()).rev() {
                let frame = self.function_frames[position];
                let FrameRole::Function(id) = self.frames[frame].role else { continue };
                let Some(name) = self.facts.functions[id].name.as_deref() else { continue };
                if name == callee_last {
                    if bare {
                        self.note_recursive_steps(node, id);
                        self.facts.functions[id].recursive = true;
                        // `if depth > 1: self.research(depth - 1)`: the
                        // recursion goes on only under these guards.
                        if self.facts.functions[id].recursion_guards.len() < 16 {
                            let guards = self.guard_clauses_above(frame);
                            self.facts.functions[id].recursion_guards.extend(guards);
                        }
                    }
                    break;
                }
                if !bare || named >= 3 {
                    break;
                }
                let guards = if self.function_names.contains(&callee_last) {
                    self.guard_clauses_above(frame)
                } else {
                    Vec::new()
                };
                if self.call_edges.len() < 50_000 {
                    self.call_edges.push(CallEdge { caller: id, callee: callee_last.clone(), guards });
                }
                named += 1;
            }
        }
        // (What a callee's words say is asked once per name: a script calls
        // `echo` and `grep` many times.)
        let (is_log, interesting) = match self.callee_kinds.get(callee) {
            Some(&kinds) => kinds,
            None => {
                let callee_words = canonical_words(callee);
                let kinds = (names_logging(&callee_words), self.is_interesting_callee(&callee_words));
                if self.callee_kinds.len() < 4096 {
                    self.callee_kinds.insert(callee, kinds);
                }
                kinds
            }
        };
        let (arg_words, arg_literals) = if self.family == Family::Bash
                || interesting
                // (`thread.join(timeout=0.5)`; not every `", ".join(parts)`.)
                || (callee_last == "join" && crate::words::contains_ignoring_case(self.text(node), "timeout"))
        {
            let args: Vec<Node<'t>> = match self.family {
                Family::Bash => {
                    let mut cursor = node.walk();
                    let args = node.children_by_field_name("argument", &mut cursor);
                    // `trap 'shutdown' SIGINT`: the handler's name is not
                    // a signal; only what follows it says which.
                    args.skip(usize::from(callee == "trap")).collect()
                }
                Family::Rust if self.kind_name(node) == "macro_invocation" => {
                    (0..node.named_child_count()).filter_map(|i| node.named_child(i as u32)).collect()
                }
                _ => self.field(node, "arguments").into_iter().collect(),
            };
            let collected = self.collect(&args);
            (collected.clause.words, collected.clause.literals)
        } else {
            (Vec::new(), Vec::new())
        };
        // Bash exits are commands: `break`, `exit 1`, `return`.
        if self.family == Family::Bash && matches!(callee, "break" | "exit" | "return") {
            self.exit_site(node, callee != "break");
        }
        let exits_process = matches!(
            callee,
            "sys.exit"
                | "exit"
                | "quit"
                | "os._exit"
                | "process.exit"
                | "os.Exit"
                | "log.Fatal"
                | "log.Fatalf"
                | "log.Fatalln"
                | "panic"
                | "std::process::exit"
                | "process::exit"
                | "bail"
                | "unreachable"
        );
        if exits_process && self.family != Family::Bash {
            self.exit_site(node, true);
        }
        // Mutating a collection counts as updating it, for the no-progress
        // rule's "is the compared value ever updated?" question.
        if matches!(
            callee_last.as_str(),
            "add"
                | "append"
                | "push"
                | "insert"
                | "update"
                | "extend"
                | "set"
                | "put"
                | "store"
                | "push_back"
        ) {
            if let Some(receiver) = callee.rsplit_once('.').map(|(r, _)| r.to_string()) {
                self.note_assigned(&receiver);
            }
        }
        if self.family == Family::Bash && callee == "read" {
            // `read -r answer` assigns a line of standard input; with a prompt
            // or line editing (`read -p "Choose: " answer`, `read -e`) or
            // from the terminal, a line a person typed.
            // So is a plain `read -r input` right after the prompt is
            // printed (`echo -n "You: "`).
            let text = self.text(node);
            let asks = text.contains("/dev/tty")
                || text.split_whitespace().skip(1).any(|arg| {
                    arg.starts_with('-')
                        && !arg.starts_with("--")
                        && arg.chars().any(|c| matches!(c, 'p' | 'e' | 'E'))
                })
                || self.after_a_prompt(node);
            for word in self.collect_idents(node) {
                self.note_read_into(word, node.start_byte(), asks);
            }
        }
        // `io::stdin().read_line(&mut answer)`, `fmt.Scanln(&answer)`: the
        // name handed in holds what a person typed.
        // (So does a reader handed to a REPL, `reader.read_line(&mut input)`
        // in `run_repl<R: BufRead>`.)
        let in_a_repl = || {
            self.enclosing_function_name().is_some_and(|name| {
                canonical_words(&name).iter().any(|w| matches!(w.as_str(), "repl" | "interactive"))
            })
        };
        let reads_typed = (callee_last == "read_line"
            && (callee.contains("stdin")
                || (last_name(callee.trim_end_matches(".read_line")) == "reader" && in_a_repl())))
            || (self.family == Family::Go && matches!(callee, "fmt.Scanln" | "fmt.Scan" | "fmt.Scanf"));
        if reads_typed {
            let text = self.text(node);
            let names: Vec<String> = text
                .split(['(', ',', ')'])
                .filter_map(|arg| {
                    let arg = arg.trim();
                    arg.strip_prefix("&mut ").or_else(|| arg.strip_prefix('&')).map(str::trim)
                })
                .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
                .map(str::to_string)
                .take(4)
                .collect();
            for name in names {
                self.note_read_into(name, node.start_byte(), true);
            }
        }
        // `tokio::select!` arms are a token tree, not parsed expressions: a
        // `break` or `return` in it leaves the loop under the arms' futures.
        if self.family == Family::Rust && callee_last == "select" {
            let text = self.text(node);
            if text.contains("break") || text.contains("return") {
                if let Some((_, id)) = self.innermost_loop() {
                    self.facts.loops[id].exit_sites += 1;
                    for clause in self.clauses_of(&[node]) {
                        self.facts.links.push(ExitLink {
                            clause,
                            role: Role::Guard,
                            loop_id: id,
                            site: node.byte_range(),
                            via: None,
                            depth: 0,
                        });
                    }
                }
            }
        }
        let loops: Vec<usize> = self
            .loops_of_current_function()
            .rev()
            .take(4)
            .filter_map(|frame| match self.frames[*frame].role {
                FrameRole::Loop(id) => Some(id),
                _ => None,
            })
            .collect();
        let caught = in_loop && !self.raises_reach_loop(node);
        let caught_in = if caught { self.catching_try() } else { None };
        let handler = if self.family == Family::Bash && callee == "trap" {
            let mut cursor = node.walk();
            let first = node.children_by_field_name("argument", &mut cursor).next();
            first
                .map(|arg| self.text(arg).trim_matches(|c| c == '\'' || c == '"'))
                .filter(|name| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
                .map(str::to_string)
        } else {
            None
        };
        if !in_loop && loops.is_empty() {
            self.note_calling_handlers(&callee_last);
        }
        self.facts.calls.push(CallFact {
            callee: callee.to_string(),
            callee_last,
            range: node.byte_range(),
            in_loop,
            loops,
            caught,
            caught_in,
            enclosing_function: self.enclosing_function_name(),
            named_function: self.named_function_name(),
            arg_words,
            arg_literals,
            decorator_loop: self.current_decorator_loop(),
            handler,
        });
        FrameRole::Call { is_log }
    }

    /// Whether an error raised by the call at `node` reaches its innermost
    /// loop: not when a `try` inside the loop wraps it, not in Go (errors are
    /// values), and in Rust only through `?`.
    fn raises_reach_loop(&self, node: Node<'t>) -> bool {
        match self.family {
            Family::Go | Family::Bash => return false,
            Family::Rust => {
                // The call's frame is not pushed yet: its parents are the
                // top frames.
                for up in 0..3 {
                    match self.ancestor(up) {
                        Some(parent) if self.kind_name(parent) == "try_expression" => return true,
                        Some(parent)
                            if matches!(self.kind_name(parent), "await_expression" | "call_expression") => {}
                        _ => return false,
                    }
                }
                let _ = node;
                return false;
            }
            Family::Python | Family::Js => {}
        }
        let Some((loop_frame, _)) = self.innermost_loop() else { return false };
        !(loop_frame..self.frames.len()).any(|index| {
            let frame_node = self.frames[index].node;
            self.kind_name(frame_node) == "try_statement"
                && self.frames.get(index + 1).is_some_and(|child| {
                    self.field(frame_node, "body").is_some_and(|body| body.id() == child.node.id())
                })
        })
    }

    /// The nearest `try` inside the innermost loop whose body the walk is in.
    /// Whether the walk is in the `else` of a `try` of the innermost loop
    /// (`try: m = parse(reply) except E: retry... else: return m`): what
    /// runs when nothing was caught.
    fn in_try_else(&self) -> bool {
        let Some((loop_frame, _)) = self.innermost_loop() else { return false };
        (loop_frame..self.frames.len()).rev().any(|index| {
            self.kind_name(self.frames[index].node) == "try_statement"
                && self.frames.get(index + 1).is_some_and(|child| self.kind_name(child.node) == "else_clause")
        })
    }

    /// Whether a statement only sets a name to a constant (`testPassed =
    /// true;`, `self.done = True`, `ok := false`) and the name says nothing
    /// of a failure or a stop (`aborted = true`, `gave_up = True` before
    /// the exit are the failure's way out, not the work's).
    fn sets_a_constant(&self, statement: Node<'t>) -> bool {
        // (The assignment is the statement itself in Go, the expression of
        // an expression statement elsewhere.)
        let assignment = if self.kind_name(statement) == "expression_statement" {
            statement.named_child(0)
        } else {
            Some(statement)
        };
        let Some((Some(target), Some(value))) = assignment.map(|a| self.assignment_sides(a)) else {
            return false;
        };
        let (target, value) = (self.text(target).trim(), self.text(value).trim());
        let says_failure = || {
            canonical_words(target).iter().any(|word| {
                matches!(
                    word.as_str(),
                    "error"
                        | "cancel"
                        | "stop"
                        | "timeout"
                        | "deadline"
                        | "reject"
                        | "rejected"
                        | "give"
                        | "gave"
                        | "quit"
                )
            })
        };
        !target.is_empty()
            && target.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            && (matches!(value, "true" | "false" | "True" | "False" | "None" | "nil" | "null")
                || (!value.is_empty() && value.chars().all(|c| c.is_ascii_digit())))
            && !says_failure()
    }

    /// Whether a statement calls something (a few levels down at most).
    fn calls_something(&self, statement: Node<'t>) -> bool {
        let mut stack = vec![(statement, 0)];
        let mut visited = 0;
        while let Some((node, depth)) = stack.pop() {
            visited += 1;
            if visited > 64 {
                return false;
            }
            if self.syn_of(node) == Syn::Call {
                return true;
            }
            if depth < 6 {
                let mut cursor = node.walk();
                stack.extend(node.named_children(&mut cursor).map(|c| (c, depth + 1)));
            }
        }
        false
    }

    fn catching_try(&self) -> Option<Range<usize>> {
        let (loop_frame, _) = self.innermost_loop()?;
        (loop_frame..self.frames.len()).rev().find_map(|index| {
            let frame_node = self.frames[index].node;
            (self.kind_name(frame_node) == "try_statement"
                && self.frames.get(index + 1).is_some_and(|child| {
                    self.field(frame_node, "body").is_some_and(|body| body.id() == child.node.id())
                }))
            .then(|| frame_node.byte_range())
        })
    }

    fn is_interesting_callee(&self, words: &[String]) -> bool {
        words.iter().any(|w| {
            matches!(
                w.as_str(),
                "signal"
                    | "notify"
                    | "on"
                    | "once"
                    | "trap"
                    | "timeout"
                    | "wait"
                    | "add"
                    | "ctrl"
                    | "termination"
                    | "handler"
                    | "cancel"
                    | "interrupt"
                    | "sigint"
                    | "exists"
                    | "after"
                    // (`untilFinishReason(['stop'])`: "finish" reads "done".)
                    | "reason"
            )
        })
    }

    fn collect_idents(&self, node: Node<'t>) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        let mut visited = 0;
        while let Some(n) = stack.pop() {
            visited += 1;
            if visited > SUBWALK_LIMIT {
                break;
            }
            if self.kind_of(n).1 && n.child_count() == 0 {
                out.push(self.text(n).to_string());
            }
            let mut cursor = n.walk();
            for child in n.named_children(&mut cursor) {
                if !matches!(self.syn_of(child), Syn::Str | Syn::Comment | Syn::SkipAll) {
                    stack.push(child);
                }
            }
        }
        out
    }

    fn note_assigned(&mut self, target: &str) {
        // (Asked of every assignment: the loops are kept on the stack and a
        // name is copied only when a loop does not have it yet.)
        let mut loops = [0usize; 8];
        let mut count = 0;
        for frame in self.loops_of_current_function().rev().take(8) {
            if let FrameRole::Loop(id) = self.frames[*frame].role {
                loops[count] = id;
                count += 1;
            }
        }
        let last = last_identifier(target);
        for &id in &loops[..count] {
            let assigned = &mut self.facts.loops[id].assigned;
            if assigned.len() < 256 {
                for name in [target, last] {
                    if !assigned.contains(name) {
                        assigned.insert(name.to_string());
                    }
                }
            }
        }
    }

    /// Whether a value is a call, awaited or not (`f(x)`, `await g()`).
    fn is_call_value(&self, value: Node<'t>) -> bool {
        let inner = match self.kind_name(value) {
            "await" | "await_expression" => value.named_child(0).unwrap_or(value),
            _ => value,
        };
        matches!(self.syn_of(inner), Syn::Call)
    }

    /// The target and the value of an assignment or declaration (`x = v`,
    /// `const x = v`, `let x = v`, `x := v`, `x++`, which has no value).
    fn assignment_sides(&self, node: Node<'t>) -> (Option<Node<'t>>, Option<Node<'t>>) {
        match (self.family, self.kind_name(node)) {
            (_, "variable_declarator") => (self.field(node, "name"), self.field(node, "value")),
            (_, "named_expression") => (self.field(node, "name"), self.field(node, "value")),
            (Family::Rust, "let_declaration") => (self.field(node, "pattern"), self.field(node, "value")),
            (Family::Bash, "postfix_expression") => (node.named_child(0), None),
            (Family::Bash, _) => (self.field(node, "name"), self.field(node, "value")),
            (_, "update_expression") => (self.field(node, "argument"), None),
            (_, "inc_statement") | (_, "dec_statement") => (node.named_child(0), None),
            _ => (self.field(node, "left"), self.field(node, "right")),
        }
    }

    /// The collection a membership test looks in, and whether the test asks
    /// that the item is not there: `url in seen` (`seen`, no), `q not in
    /// tried`, `!seen.has(id)`, `!state.cites.some(..)`, `!seen[key]` (Go),
    /// `!seen.contains(&key)` (Rust). Only a plain name or field is a
    /// collection here.
    fn membership_test(&self, node: Node<'t>) -> Option<(&'s str, bool, &'s str)> {
        let mut node = node;
        let mut negated = false;
        for _ in 0..4 {
            match self.kind_name(node) {
                "parenthesized_expression" => node = node.named_child(0)?,
                "not_operator" => {
                    node = self.field(node, "argument")?;
                    negated = !negated;
                }
                "unary_expression" if self.text(node).starts_with('!') => {
                    node = self.field(node, "argument").or_else(|| node.named_child(0))?;
                    negated = !negated;
                }
                _ => break,
            }
        }
        let (container, item) = match self.kind_name(node) {
            "comparison_operator" if node.named_child_count() == 2 => {
                let operator =
                    (0..node.child_count()).filter_map(|i| node.child(i)).find(|c| !c.is_named())?;
                match operator.kind() {
                    "in" => {}
                    "not in" => negated = !negated,
                    _ => return None,
                }
                (node.named_child(1)?, self.text(node.named_child(0)?))
            }
            "call_expression"
                if {
                    let text = self.text(node);
                    text.len() <= 200
                        && [".has(", ".includes(", ".some(", ".contains"].iter().any(|m| text.contains(m))
                } =>
            {
                let (object, method) = self.method_of(node)?;
                if !matches!(method, "has" | "includes" | "some" | "contains" | "contains_key") {
                    return None;
                }
                let argument = self.field(node, "arguments").and_then(|a| a.named_child(0));
                (object, argument.map_or("", |a| self.text(a)))
            }
            "index_expression" if self.family == Family::Go => (
                node.child_by_field_name("operand")?,
                node.child_by_field_name("index").map_or("", |i| self.text(i)),
            ),
            _ => return None,
        };
        let text = self.text(container);
        (text.len() <= 64
            && !text.is_empty()
            && text.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.'))
        .then_some((text, negated, item))
    }

    /// The receiver and the method's name of a method call (`seen.has(x)`:
    /// `seen`, `has`), in JavaScript and Rust.
    fn method_of(&self, call: Node<'t>) -> Option<(Node<'t>, &'s str)> {
        let function = self.field(call, "function")?;
        match self.kind_name(function) {
            "member_expression" => Some((
                function.child_by_field_name("object")?,
                self.text(function.child_by_field_name("property")?),
            )),
            "field_expression" => {
                Some((self.field(function, "value")?, self.text(self.field(function, "field")?)))
            }
            _ => None,
        }
    }

    /// Records a test that keeps only what was not met before, at `at`, of
    /// `item` in `container`.
    fn note_seen_filter(&mut self, at: usize, container: &str, item: &str) {
        let function = self.innermost_function();
        let item_words = if item.len() <= 64 { canonical_words(item) } else { Vec::new() };
        self.facts.seen_filters.push(SeenFilter {
            function,
            at,
            container: container.to_string(),
            item_words,
        });
    }

    /// `if url in seen: continue`, `if (!seen.has(id)) { fresh.push(item) }`:
    /// a walk that keeps only what it has not met before.
    #[inline(never)]
    fn note_seen_skip(&mut self, node: Node<'t>) {
        if self.family == Family::Bash || self.facts.seen_filters.len() >= 64 {
            return;
        }
        let (Some(condition), Some(consequence)) =
            (self.field(node, "condition"), self.field(node, "consequence"))
        else {
            return;
        };
        let Some((container, negated, item)) = self.membership_test(condition) else { return };
        let body = self.text(consequence);
        let keeps = |negated: bool| {
            if negated {
                body.len() <= 400
                    && [".append(", ".push(", ".add(", "append(", ".insert(", ".extend("]
                        .iter()
                        .any(|call| body.contains(call))
            } else {
                body.trim_matches(|c: char| c.is_whitespace() || matches!(c, '{' | '}' | ';' | ':'))
                    == "continue"
            }
        };
        if keeps(negated) {
            self.note_seen_filter(node.start_byte(), container, item);
        }
    }

    /// A value made by keeping only what was not met before: `[q for q in
    /// queries if q not in tried]`, `sources.filter((s) =>
    /// !cited.some(..))`, `iter().filter(|k| !seen.contains(k))`.
    #[inline(never)]
    fn note_seen_filter_value(&mut self, node: Node<'t>, value: Node<'t>) {
        if self.family == Family::Bash || self.facts.seen_filters.len() >= 64 {
            return;
        }
        let mut value = value;
        if matches!(self.kind_name(value), "await_expression" | "await") {
            let Some(inner) = value.named_child(0) else { return };
            value = inner;
        }
        let test = match self.kind_name(value) {
            "list_comprehension"
            | "set_comprehension"
            | "generator_expression"
            | "dictionary_comprehension" => (0..value.named_child_count())
                .filter_map(|i| value.named_child(i as u32))
                .find(|c| self.kind_name(*c) == "if_clause")
                .and_then(|c| c.named_child(0)),
            // (The text is asked first, and only of a value of a few
            // lines: most calls filter nothing.)
            "call_expression"
                if {
                    let text = self.text(value);
                    text.len() <= 2000 && text.contains(".filter(")
                } =>
            {
                // The `filter` of a chain (`.into_iter().filter(..).collect()`).
                let mut call = value;
                let mut found = None;
                for _ in 0..4 {
                    let Some((receiver, method)) = self.method_of(call) else { break };
                    if method == "filter" {
                        found = Some(call);
                        break;
                    }
                    if self.kind_name(receiver) != "call_expression" {
                        break;
                    }
                    call = receiver;
                }
                found
                    .and_then(|call| self.field(call, "arguments"))
                    .and_then(|arguments| arguments.named_child(0))
                    .filter(|f| matches!(self.kind_name(*f), "arrow_function" | "closure_expression"))
                    .and_then(|f| self.field(f, "body"))
            }
            _ => None,
        };
        if let Some((container, true, item)) = test.and_then(|test| self.membership_test(test)) {
            self.note_seen_filter(node.start_byte(), container, item);
        }
    }

    fn enter_assign(&mut self, node: Node<'t>, augmented: bool) {
        let (target, value) = self.assignment_sides(node);
        let Some(target) = target else { return };
        let mut targets = vec![self.text(target).trim().to_string()];
        if matches!(
            self.kind_name(target),
            "pattern_list" | "tuple_pattern" | "expression_list" | "array_pattern"
        ) {
            // `a, b := f()`, `resp.Data, err = g()`: each operand is a target,
            // a field as a whole (not its receiver's name).
            targets = self.children_named(target).iter().map(|t| self.text(*t).trim().to_string()).collect();
        } else if self.kind_name(target) == "object_pattern" {
            targets = self.collect_idents(target);
        }
        let in_loop = self.innermost_loop().is_some();
        let step = augmented && value.is_none_or(|v| self.is_number(v))
            || value.is_some_and(|v| targets.len() == 1 && self.steps_itself(&targets[0], v));
        // What a counter counts: it sits in an error branch of its loop, or
        // not. Asked only of counters, since it builds the guards' clauses.
        let reset = !augmented && value.is_some_and(|v| matches!(self.text(v).trim(), "0" | "0.0"));
        // (Outside any loop, in a function that may call itself: a count
        // moved in its exception handler, `catch (e) { attempts++; return
        // retry() }`, counts the calls that failed.)
        let error_branch = step
            && if in_loop {
                self.in_error_branch(node, &targets[0])
            } else {
                self.in_a_handler_of_the_function()
            };
        let guards = match self.innermost_loop() {
            Some((loop_frame, _)) if step => self.guard_clauses_above(loop_frame),
            _ => Vec::new(),
        };
        let function = self.innermost_function();
        for name in &targets {
            if name.len() > 80 {
                continue;
            }
            self.note_assigned(name);
            self.facts.assigns.push(AssignFact {
                target: name.clone(),
                range: node.byte_range(),
                augmented,
                in_loop,
                step,
                error_branch,
                guards: guards.clone(),
                reset,
            });
        }
        let Some(value) = value else { return };
        self.note_seen_filter_value(node, value);
        // The words of the right-hand side without its argument lists: for
        // `elapsed = time.time() - start` they are `time`, `start`; for
        // `resp = client.create(max_tokens=100)` they do not include tokens.
        let (words, idents, callees, searched, arg_idents) = self.rhs_words(value);
        let model_made = callees.iter().any(|callee| asks_a_model(callee));
        let several = targets.len() > 1;
        let mut definition = Definition {
            at: node.start_byte(),
            function,
            words,
            idents,
            callees,
            searched,
            arg_idents,
            model_made,
            position: None,
        };
        // Each target but the last gets a copy, and the last takes the
        // value's own lists (one target, the common case, copies nothing).
        let last = targets.len().saturating_sub(1);
        for (position, name) in targets.iter().enumerate() {
            let definitions = self.facts.aliases.entry(name.clone()).or_default();
            if definitions.len() < 32 {
                let mut this =
                    if position == last { std::mem::take(&mut definition) } else { definition.clone() };
                this.position = several.then_some(position);
                definitions.push(this);
            }
        }
        let value_text = self.text(value).trim();
        let plain_value = value_text.len() <= 64
            && (simple_flag(value_text).is_some_and(|(_, negated)| !negated)
                || matches!(value_text, "True" | "False" | "true" | "false" | "None" | "nil" | "null")
                || (matches!(self.syn_of(value), Syn::Str) && !value_text.contains(['{', '$'])));
        // An assignment to a loop's flag (`done = True`, `running = False`)
        // is a way out of that loop, under its guards and its own value.
        let flagged: Vec<(usize, usize, usize, bool, bool)> = self
            .loops_of_current_function()
            .rev()
            .take(4)
            .filter_map(|frame| match self.frames[*frame].role {
                FrameRole::Loop(id) => Some((*frame, id)),
                _ => None,
            })
            .filter_map(|(frame, id)| {
                self.facts
                    .loop_flags
                    .iter()
                    .enumerate()
                    .find(|(_, (loop_id, flag, polarity))| {
                        *loop_id == id
                            && targets.iter().any(|t| t == flag)
                            && (!plain_value || polarity.stops_on(value_text))
                    })
                    .map(|(index, (_, _, polarity))| {
                        (
                            frame,
                            id,
                            index,
                            *polarity == FlagPolarity::Truthy,
                            *polarity == FlagPolarity::Positive,
                        )
                    })
            })
            .collect();
        // `should_continue = False` at the top of each pass, then `= True`
        // only `if results:`: the loop ends when that guard does not hold.
        if plain_value {
            self.link_continue_assignments(&targets, value_text, node);
        }
        // A flag taken whole from a call (`obs, reward, done, info =
        // env.step(a)`, `done = await self.step()`) says no more than its
        // name: the call decides, and its name is the best word for why.
        let opaque_value = !plain_value && (targets.len() > 1 || self.is_call_value(value));
        for (frame, id, flag_index, runs_while_truthy, count) in flagged {
            self.facts.loops[id].exit_sites += 1;
            if let Some(&clause) = self.flag_clauses.get(&(id, flag_index)).filter(|_| !count) {
                self.facts.decided_flags.insert(clause);
                if opaque_value {
                    self.facts.opaque_flags.entry(clause).or_default().push(value.start_byte());
                } else {
                    self.facts.transparent_flags.insert(clause);
                }
            }
            let site = node.byte_range();
            let mut clauses = self.clauses_of(&[value]);
            if runs_while_truthy {
                // `while failed: ... failed = code != 0`: the loop ends when
                // the value is false.
                for &clause in &clauses {
                    let flipped = !self.facts.clauses[clause].negated;
                    self.facts.clauses[clause].negated = flipped;
                }
            }
            clauses.extend(self.guard_clauses_above(frame));
            for clause in clauses {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::Guard,
                    loop_id: id,
                    site: site.clone(),
                    via: None,
                    depth: 0,
                });
            }
            // `except KeyboardInterrupt: automode = False`.
            for clause in self.handler_clauses_above(frame) {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::Handler,
                    loop_id: id,
                    site: site.clone(),
                    via: None,
                    depth: 0,
                });
            }
        }
        // Plain values may set some loop's flag from elsewhere (`stop()`
        // setting `self.running = False`): the engine matches them with the
        // loops' flags once every loop is known.
        // Only a field or a module's name can be set by other code than the
        // function that holds the loop; a local of some function cannot.
        let settable_elsewhere = targets.len() == 1 && (targets[0].contains('.') || function.is_none());
        // A local flag turned on outside any loop of its function: the
        // function may return it as its answer.
        let truthy = matches!(value_text, "True" | "true");
        if plain_value
            && truthy
            && targets.len() == 1
            && !settable_elsewhere
            && self.innermost_loop().is_none()
            && self.facts.local_flag_sets.len() < 256
        {
            if let Some(function) = function {
                let guards = self.guard_clauses_above(self.innermost_function_frame());
                if !guards.is_empty() {
                    self.facts.local_flag_sets.push(LocalFlagSet {
                        function,
                        name: targets[0].clone(),
                        range: node.byte_range(),
                        guards,
                        outer: Vec::new(),
                    });
                }
            }
        }
        if plain_value
            && truthy
            && targets.len() == 1
            && !settable_elsewhere
            && self.facts.loop_flag_sets.len() < 256
        {
            if let (Some(function), Some((loop_frame, _))) = (function, self.innermost_loop()) {
                let mut groups = self.guard_groups_above(loop_frame).into_iter();
                if let Some((Role::Guard, guards)) = groups.next() {
                    let outer = groups
                        .take_while(|(role, _)| *role == Role::Guard)
                        .map(|(_, clauses)| clauses)
                        .collect();
                    self.facts.loop_flag_sets.push(LocalFlagSet {
                        function,
                        name: targets[0].clone(),
                        range: node.byte_range(),
                        guards,
                        outer,
                    });
                }
            }
        }
        // A field declared with its default in a class body (`max_turns:
        // int | None = NOT_GIVEN`) sets nothing while a loop runs.
        let declared_default = function.is_none() && self.field(node, "type").is_some();
        if plain_value && settable_elsewhere && !declared_default && self.facts.flag_assigns.len() < 256 {
            let floor = self.innermost_function_frame();
            let guards = self.guard_clauses_above(floor);
            let mut words = canonical_words(&targets[0]);
            words.extend(canonical_words(value_text));
            if let Some(name) = function.and_then(|f| self.facts.functions[f].name.as_deref()) {
                words.extend(canonical_words(name));
            }
            words.sort();
            words.dedup();
            let words_clause = self.facts.clauses.len();
            self.facts.clauses.push(Clause { range: node.byte_range(), words, ..Clause::default() });
            self.facts.flag_assigns.push(FlagAssign {
                target: targets[0].clone(),
                value: value_text.to_string(),
                range: node.byte_range(),
                function,
                guards,
                words_clause,
            });
        }
    }

    /// For a loop flag reset to its stopping value on every pass: records
    /// the reset, and links each later assignment of a going-on value to
    /// the loop under its guards read negated.
    fn link_continue_assignments(&mut self, targets: &[String], value_text: &str, node: Node<'t>) {
        let loops: Vec<(usize, usize)> = self
            .loops_of_current_function()
            .rev()
            .take(4)
            .filter_map(|frame| match self.frames[*frame].role {
                FrameRole::Loop(id) => Some((*frame, id)),
                _ => None,
            })
            .collect();
        for (frame, id) in loops {
            let flags: Vec<(usize, bool)> = self
                .facts
                .loop_flags
                .iter()
                .enumerate()
                .filter(|(_, (loop_id, flag, _))| *loop_id == id && targets.iter().any(|t| t == flag))
                .map(|(index, (_, _, polarity))| (index, polarity.stops_on(value_text)))
                .collect();
            for (flag_index, stops) in flags {
                let guards = self.guard_clauses_above(frame);
                if stops && guards.is_empty() {
                    self.flag_resets.insert((id, flag_index));
                } else if !stops && self.flag_resets.contains(&(id, flag_index)) {
                    self.facts.loops[id].exit_sites += 1;
                    for clause in guards {
                        let mut negated = self.facts.clauses[clause].clone();
                        negated.negated = !negated.negated;
                        let index = self.facts.clauses.len();
                        self.facts.clauses.push(negated);
                        self.facts.links.push(ExitLink {
                            clause: index,
                            role: Role::Guard,
                            loop_id: id,
                            site: node.byte_range(),
                            via: None,
                            depth: 0,
                        });
                    }
                }
            }
        }
    }

    fn is_number(&self, node: Node<'t>) -> bool {
        self.kind_entry(node).2 == Mark::Number
            || (self.family == Family::Bash && self.text(node).trim().chars().all(|c| c.is_ascii_digit()))
    }

    /// A recursive call of `function` that hands a name on moved by a
    /// constant (`step(next, remaining - 1)`,
    /// `self.research(q, depth=depth + 1)`) after the function asked a
    /// model: each call is a turn, and that name counts them as `remaining
    /// -= 1` would in a loop. (A recursive helper that asks no model,
    /// `_truncate(v, level + 1)`, takes no turns.)
    fn note_recursive_steps(&mut self, call: Node<'t>, function: usize) {
        let start = self.facts.functions[function].range.start;
        let from = self.facts.calls.partition_point(|c| c.range.start < start);
        let asked = self.facts.calls[from..]
            .iter()
            .take_while(|c| c.range.start < call.start_byte())
            .any(|c| asks_a_model(&c.callee_last));
        if !asked {
            return;
        }
        let Some(arguments) = self.field(call, "arguments") else { return };
        let mut counted = Vec::new();
        for argument in self.children_named(arguments).into_iter().take(8) {
            // (A keyword argument's value: `depth=depth + 1`.)
            let value = self.field(argument, "value").unwrap_or(argument);
            let text = self.text(value).trim();
            let Some(name) = text.split(['+', '-']).next().map(str::trim) else { continue };
            let plain = !name.is_empty()
                && name.len() <= 40
                && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.');
            // (A name that says it counts turns or what is left of them:
            // `parse(tokens, i + 1)` walks a list, it takes no turns.)
            let counts_turns = || {
                canonical_words(name).iter().any(|w| {
                    matches!(
                        w.as_str(),
                        "turn" | "step" | "iter" | "round" | "depth" | "queue" | "left" | "level"
                    )
                })
            };
            if plain && counts_turns() && self.steps_itself(name, value) {
                counted.push((name.to_string(), value.byte_range()));
            }
        }
        for (target, range) in counted {
            self.facts.assigns.push(AssignFact {
                target,
                range,
                augmented: true,
                in_loop: true,
                step: true,
                error_branch: false,
                guards: Vec::new(),
                reset: false,
            });
        }
    }

    /// `i = i + 1`, `left = left - 1`, `i=$((i+1))`, `n=$((n + 1))`.
    fn steps_itself(&self, target: &str, value: Node<'t>) -> bool {
        let text = self.text(value).trim_start();
        let target = target.trim_start_matches('$');
        // Only a value that opens with the name, or with a shell's `$`, can
        // be the name moved by a number (asked of every assignment: most
        // values are calls, and the trimming below is not free).
        if !text.starts_with(target) && !text.starts_with('$') {
            return false;
        }
        let text = text.trim_end();
        let text = text
            .trim_start_matches("$((")
            .trim_start_matches("$[")
            .trim_end_matches("))")
            .trim_end_matches(']');
        let text = text.trim();
        let Some(rest) = text.strip_prefix(target).or_else(|| text.strip_prefix(&format!("${target}")))
        else {
            return false;
        };
        let rest = rest.trim_start();
        let Some(amount) = rest.strip_prefix('+').or_else(|| rest.strip_prefix('-')) else { return false };
        let amount = amount.trim();
        !amount.is_empty() && amount.len() <= 6 && amount.chars().all(|c| c.is_ascii_digit())
    }

    /// Whether the walk is in an exception handler of the function it is in.
    fn in_a_handler_of_the_function(&self) -> bool {
        let floor = self.innermost_function_frame();
        floor > 0 && self.in_a_handler_above(floor)
    }

    /// Whether the walk is in an exception handler nearer than frame `floor`.
    fn in_a_handler_above(&self, floor: usize) -> bool {
        self.guard_frames
            .iter()
            .rev()
            .take_while(|frame| **frame > floor)
            .take(GUARD_LIMIT)
            .any(|frame| matches!(self.frames[*frame].role, FrameRole::Handler(_)))
    }

    /// Whether the walk is in an error branch of its innermost loop: an
    /// exception handler, or under a condition that reads a failure
    /// (`if err != nil`, `if failed`, `if not ok`).
    fn in_error_branch(&mut self, node: Node<'t>, target: &str) -> bool {
        let Some((loop_frame, _)) = self.innermost_loop() else { return false };
        let guards: Vec<usize> = self
            .guard_frames
            .iter()
            .rev()
            .take_while(|frame| **frame > loop_frame)
            .take(GUARD_LIMIT)
            .copied()
            .collect();
        for frame in guards {
            if let FrameRole::Handler(_) = self.frames[frame].role {
                return true;
            }
            for clause in self.guard_clauses(frame) {
                let clause = &self.facts.clauses[clause];
                let has = |word: &str| clause.words.iter().any(|w| w == word);
                // (`status == 'success'` says it with a literal.)
                let literal = |word: &str| {
                    clause.equality && !clause.differs && clause.literals.iter().any(|w| w == word)
                };
                let success = has("done") || has("ok") || has("pass") || literal("done") || literal("pass");
                let bad =
                    ["error", "bad", "invalid", "rejected", "wrong", "empty", "no"].iter().any(|w| has(w))
                        || literal("error");
                // A command's exit status other than zero (`return_code !=
                // 0`, `exit_code -ne 0`): the run failed.
                // (Or the other branch of `rc -eq 0`, `failed == 0`.)
                let failed_status =
                    (has("code") || has("status") || has("returncode") || has("rc") || has("error"))
                        && clause.zero
                        && (clause.differs || clause.equality)
                        && (clause.differs != clause.negated);
                // (`[[ ! -s "$out" ]]`: the pass left an empty output.)
                let empty_output = self.family == Family::Bash && {
                    let text = self.source.get(clause.range.clone()).unwrap_or("");
                    let inner = text.trim_start_matches(['[', ' ']);
                    inner.starts_with("! -s ") || inner.starts_with("-z \"$(cat")
                };
                if (bad && !clause.negated) || (success && clause.negated) || failed_status || empty_output {
                    return true;
                }
            }
        }
        self.after_a_try_that_leaves_on_success(loop_frame, node, target)
    }

    /// A retry loop (`while True: try: ...; return reply except ...:`): a
    /// statement after a `try` whose body ends by leaving the loop runs only
    /// when the try failed.
    fn after_a_try_that_leaves_on_success(&self, loop_frame: usize, node: Node<'t>, target: &str) -> bool {
        // The loop's body and, in it, the statement the walk is in (the
        // node being entered has no frame yet).
        let frame_node = |index: usize| self.frames.get(index).map(|f| f.node).or(Some(node));
        let (Some(body), Some(mut current)) =
            (self.frames.get(loop_frame + 1).map(|f| f.node), frame_node(loop_frame + 2))
        else {
            return false;
        };
        let mut body = body;
        // Go's blocks hold a statement list.
        if self.kind_name(current) == "statement_list" && current.id() != node.id() {
            let Some(inner) = frame_node(loop_frame + 3) else { return false };
            (body, current) = (current, inner);
        }
        // A loop that retries inside another one: after `if err == nil {
        // break }` comes the failure path, and what it counts across the
        // outer loop's passes is failures (in a loop of its own, every pass
        // but the last one comes this way: a count of passes; and so it is
        // when the outer loop sets it back to zero for each of its passes).
        let outermost =
            self.loops_of_current_function().next().map(|frame| self.frames[*frame].node.start_byte());
        // (Assignments are recorded in the walk's order: those since the
        // outer loop began are the last ones. Both are asked only of an `if`
        // that leaves on success.)
        let reset_by_outer = || {
            outermost.is_some_and(|start| {
                self.facts
                    .assigns
                    .iter()
                    .rev()
                    .take_while(|a| a.range.start >= start)
                    .any(|a| a.target == target && !a.augmented && !a.step)
            })
        };
        let nested = || {
            self.loops_of_current_function()
                .filter(|frame| match self.frames[**frame].role {
                    FrameRole::Loop(id) => !self.facts.loops[id].collection,
                    _ => false,
                })
                .count()
                > 1
        };
        let leaves =
            |statement: Node<'t>| matches!(self.kind_name(statement), "return_statement" | "break_statement");
        self.siblings_of(body, current).before().iter().copied().any(|statement| {
            let last_leaves = |block: Node<'t>| last_statement(block).is_some_and(leaves);
            // `try: ...; return m` or `try: m = parse() except E: ...
            // else: return m`: what follows runs only after a failure.
            (self.kind_name(statement) == "try_statement"
                && (self.field(statement, "body").is_some_and(last_leaves) || {
                    let mut cursor = statement.walk();
                    let found = statement
                        .named_children(&mut cursor)
                        .filter(|child| self.kind_name(*child) == "else_clause")
                        .filter_map(|clause| self.field(clause, "body"))
                        .any(last_leaves);
                    found
                }))
                || (self.leaves_on_success(statement) && nested() && !reset_by_outer())
        })
    }

    /// `if err == nil { ...; break }`, `if result.ok: return result`: an
    /// `if` with no else that leaves the loop when the attempt worked, so
    /// what follows it runs only when it failed.
    fn leaves_on_success(&self, statement: Node<'t>) -> bool {
        if self.syn_of(statement) != Syn::If
            || self.field(statement, "alternative").is_some()
            || self
                .children_named(statement)
                .iter()
                .any(|c| matches!(self.kind_name(*c), "else_clause" | "elif_clause"))
        {
            return false;
        }
        let Some(condition) = self.field(statement, "condition") else { return false };
        let text = self.text(condition).trim().trim_start_matches('(').trim_end_matches(')').trim();
        if text.len() > 80 {
            return false;
        }
        let no_error =
            matches!(text, "err == nil" | "err is None" | "error == null" | "err === null" | "!err");
        let words = canonical_words(text);
        let succeeded = !text.starts_with('!')
            && !text.starts_with("not ")
            && words.iter().any(|w| matches!(w.as_str(), "ok" | "done" | "pass"))
            && !words.iter().any(|w| matches!(w.as_str(), "error" | "not" | "no"));
        (no_error || succeeded) && self.leaves_in_body(statement)
    }

    /// Whether an `if` statement's body ends by leaving the loop (break,
    /// return).
    fn leaves_in_body(&self, statement: Node<'t>) -> bool {
        self.last_in_if_body(statement).is_some_and(|last| {
            matches!(
                self.kind_name(last),
                "return_statement" | "break_statement" | "return_expression" | "break_expression"
            )
        })
    }

    /// The last statement of an `if`'s body (`if x { ...; break }`,
    /// `if x: ...; continue`).
    fn last_in_if_body(&self, statement: Node<'t>) -> Option<Node<'t>> {
        // A Bash `if` holds its body's statements itself, after `then`.
        if self.family == Family::Bash {
            let mut cursor = statement.walk();
            let then = statement.children(&mut cursor).find(|c| c.kind() == "then")?.end_byte();
            let mut cursor = statement.walk();
            let children: Vec<Node<'t>> = statement.named_children(&mut cursor).collect();
            return children.into_iter().rev().find(|c| {
                c.start_byte() >= then && !matches!(c.kind(), "comment" | "elif_clause" | "else_clause")
            });
        }
        let body = self.field(statement, "consequence").or_else(|| {
            self.children_named(statement)
                .into_iter()
                .find(|c| matches!(self.kind_name(*c), "block" | "statement_block"))
        })?;
        if matches!(self.kind_name(body), "block" | "statement_block" | "compound_statement") {
            last_statement(body)
        } else {
            Some(body)
        }
    }

    /// The words, names and called names of an assigned value, without its
    /// argument lists.
    #[allow(clippy::type_complexity)] // Five lists of one walk, named where they are taken apart.
    fn rhs_words(&self, node: Node<'t>) -> (Vec<String>, Vec<String>, Vec<String>, Vec<String>, Vec<String>) {
        let mut words = Vec::new();
        let mut idents = Vec::new();
        let mut callees = Vec::new();
        let mut searched = Vec::new();
        let mut arg_idents = Vec::new();
        // Each entry: a node and whether it names a called function.
        let mut stack = vec![(node, false)];
        // One cursor for the walk: each use resets it to the node at hand.
        let mut cursor = node.walk();
        let mut visited = 0;
        while let Some((n, in_callee)) = stack.pop() {
            visited += 1;
            if visited > 128 {
                break;
            }
            let kind = self.kind_name(n);
            let (syntax, identifier) = self.kind_of(n);
            if matches!(kind, "argument_list" | "arguments") {
                // `bufio.NewScanner(os.Stdin)`: what is read is a person's input.
                let text = self.text(n);
                if text.len() < 200 && (text.contains("stdin") || text.contains("Stdin")) {
                    words.push("stdin".to_string());
                }
                for argument in n.named_children(&mut cursor).take(4) {
                    if arg_idents.len() >= 4 {
                        continue;
                    }
                    if self.kind_of(argument).1 && argument.child_count() == 0 {
                        arg_idents.push(self.text(argument).to_string());
                    } else if let Some(root) = field_root(self.text(argument)) {
                        // `handle(input.command)`: a field of a value hands
                        // on where the value came from.
                        arg_idents.push(root.to_string());
                    } else if let Some(root) = self.text(argument).strip_suffix("()").and_then(field_root) {
                        // So does what a method of it returns with nothing
                        // handed in (`strings.TrimSpace(scanner.Text())`).
                        arg_idents.push(root.to_string());
                    }
                }
                if callees.last().is_some_and(|name: &String| is_search_callee(name)) {
                    for argument in n.named_children(&mut cursor).take(4) {
                        if self.syn_of(argument) == Syn::Str && self.text(argument).len() <= 200 {
                            searched.extend(canonical_words(strip_quotes(self.text(argument))));
                        }
                    }
                }
                continue;
            }
            if matches!(kind, "lambda" | "arrow_function" | "closure_expression")
                || matches!(syntax, Syn::Str | Syn::Comment | Syn::SkipAll)
            {
                continue;
            }
            if identifier && n.child_count() == 0 {
                let text = self.text(n);
                idents.push(text.to_string());
                // `BufReader::new(tokio::io::stdin())` inside a macro's
                // tokens, where no argument list says so.
                if matches!(text, "stdin" | "Stdin") && !words.iter().any(|w| w == "stdin") {
                    words.push("stdin".to_string());
                }
                // `client.chat.completions.create(...)` returns a model's
                // reply: "completion" there is the API's name, not a goal.
                let api_name = in_callee && contains_ignoring_case(text, "completion");
                if !api_name {
                    self.extend_words(&mut words, text);
                }
            }
            let callee = if syntax == Syn::Call { self.callee_of(n) } else { None };
            if let Some(callee) = callee {
                let name = last_identifier(self.text(callee));
                if !name.is_empty() && callees.len() < 8 {
                    callees.push(name.to_string());
                }
            }
            for child in n.named_children(&mut cursor) {
                let names_callee = in_callee || callee.is_some_and(|c| c.id() == child.id());
                stack.push((child, names_callee));
            }
        }
        (words, idents, callees, searched, arg_idents)
    }

    fn enter_kwarg(&mut self, node: Node<'t>, is_pair: bool) {
        let (key, value) = match (self.family, self.kind_name(node)) {
            (Family::Go, "keyed_element") => (node.named_child(0), node.named_child(1)),
            (Family::Rust, _) => (self.field(node, "field"), self.field(node, "value")),
            (_, "keyword_argument") => (self.field(node, "name"), self.field(node, "value")),
            _ => (self.field(node, "key"), self.field(node, "value")),
        };
        let (Some(key), Some(value)) = (key, value) else { return };
        // The values of a text template (`prompt.format(MAX_DRIVING_HOURS=
        // hours)`, `Template(...).substitute(...)`) fill in words, they set
        // nothing.
        if self.kind_name(node) == "keyword_argument" && self.fills_a_template() {
            return;
        }
        let key_text = self.text(key).trim();
        // A Python dictionary's keys are strings: `{"recursion_limit": 50}`
        // configures LangGraph as much as a keyword argument does.
        let name = if is_pair { strip_quotes(key_text) } else { key_text };
        if name.is_empty() || name.len() > 64 || name.contains(char::is_whitespace) {
            return;
        }
        let collected = self.collect(&[value]);
        let value_text = self.text(value);
        let value_text = if value_text.len() > 120 {
            &value_text[..value_text.floor_char_boundary(120)]
        } else {
            value_text
        };
        self.facts.kwargs.push(KwargFact {
            name: name.to_string(),
            name_words: canonical_words(name),
            range: node.byte_range(),
            value_text: value_text.to_string(),
            value_words: collected.clause.words,
            value_callees: collected.clause.callees,
            value_literals: collected.clause.literals,
            value_idents: collected.clause.idents,
            decorator_loop: self.current_decorator_loop(),
            in_loop: self.innermost_loop().is_some(),
        });
    }

    /// Whether the keyword argument being entered is given to a call that
    /// fills in a text template: `str.format`, `format_map`,
    /// `Template.substitute`.
    fn fills_a_template(&self) -> bool {
        // (The walk's frames hold the ancestors: the argument list, then
        // the call. `Node::parent` would search down from the root.)
        let Some(call) = self.frames.len().checked_sub(2).map(|i| self.frames[i].node) else { return false };
        if self.kind_name(call) != "call" {
            return false;
        }
        let Some(function) = self.field(call, "function") else { return false };
        let callee = self.text(function);
        let last = callee.rsplit('.').next().unwrap_or(callee);
        matches!(last, "format" | "format_map" | "substitute" | "safe_substitute") && callee.contains('.')
    }

    /// Guards (conditions, case arms, handlers) between a loop frame and the
    /// top of the stack, nearest first, at most `GUARD_LIMIT`.
    fn guard_clauses_above(&mut self, floor: usize) -> Vec<usize> {
        let guards: Vec<usize> = self
            .guard_frames
            .iter()
            .rev()
            .take_while(|frame| **frame > floor)
            .take(GUARD_LIMIT)
            .copied()
            .collect();
        let mut out = Vec::new();
        for frame in guards {
            out.extend(self.guard_clauses(frame));
        }
        out
    }

    fn guard_clauses(&mut self, frame: usize) -> Vec<usize> {
        let node = self.frames[frame].node;
        let negated = self.in_alternative(frame);
        // (A let-else guards only its `else`: its pattern and value run
        // whatever they hold.)
        if !negated && self.is_let_else(node) {
            return Vec::new();
        }
        if let Some(clauses) = self.clause_memo.get(&(node.id(), negated)) {
            return clauses.clone();
        }
        let nodes = self.guard_nodes(frame);
        // (Only an `if` that leaves when it holds is read part by part
        // through a name: an `else`, a loop's own condition or a skip would
        // need the parts' operator turned as well.)
        self.alias_parts = !negated && !matches!(self.syn_of(node), Syn::Case);
        let mut clauses = self.clauses_of(&nodes);
        self.alias_parts = false;
        if negated {
            // The `else` of `if tool_calls:` runs when there are none.
            for &clause in &clauses {
                let flipped = !self.facts.clauses[clause].negated;
                self.facts.clauses[clause].negated = flipped;
            }
        }
        if matches!(self.syn_of(node), Syn::Case) {
            // A case arm is an equality test of the subject with its pattern.
            for &clause in &clauses {
                self.facts.clauses[clause].equality = true;
            }
            // A Rust arm's enum variant (`ChatOutcome::Text(text) =>`): what
            // the subject is compared with, kept on the pattern's clauses
            // (not on the subject's, before the arm).
            if let Some(variant) = self.arm_variant(node) {
                let words = canonical_words(variant);
                let arm_start = node.start_byte();
                for &clause in &clauses {
                    if self.facts.clauses[clause].range.start >= arm_start {
                        self.facts.clauses[clause].arm_variant.clone_from(&words);
                    }
                }
            }
            // A Bash arm's patterns are bare words (`q|Q)`): what the
            // subject is compared with, as a quoted string would be.
            if self.family == Family::Bash && self.kind_name(node) == "case_item" {
                let mut cursor = node.walk();
                let patterns: Vec<String> = node
                    .children_by_field_name("value", &mut cursor)
                    .filter(|v| self.kind_name(*v) == "word")
                    .take(8)
                    .flat_map(|v| canonical_words(self.text(v)))
                    .collect();
                for &clause in &clauses {
                    self.facts.clauses[clause].literals.extend(patterns.iter().cloned());
                }
            }
        }
        if let FrameRole::Handler(_) = self.frames[frame].role {
            clauses.clear();
        }
        self.clause_memo.insert((node.id(), negated), clauses.clone());
        clauses
    }

    /// Whether the walk, below an `if` frame, is in its `else` (or `elif`)
    /// branch rather than in its consequence or condition.
    fn in_alternative(&self, frame: usize) -> bool {
        let node = self.frames[frame].node;
        if self.syn_of(node) != Syn::If && !self.is_let_else(node) {
            return false;
        }
        let Some(child) = self.frames.get(frame + 1).map(|f| f.node) else { return false };
        matches!(self.kind_name(child), "else_clause" | "elif_clause")
            || self.field(node, "alternative").is_some_and(|alternative| alternative.id() == child.id())
    }

    fn guard_nodes(&self, frame: usize) -> Vec<Node<'t>> {
        let node = self.frames[frame].node;
        let mut nodes = Vec::new();
        match self.syn_of(node) {
            Syn::If => {
                let mut cursor = node.walk();
                nodes.extend(node.children_by_field_name("condition", &mut cursor));
                // Bash's `elif` names no condition: it is what stands
                // between `elif` and `then`.
                if nodes.is_empty() && self.kind_name(node) == "elif_clause" && self.family == Family::Bash {
                    let mut cursor = node.walk();
                    nodes.extend(
                        node.children(&mut cursor)
                            .skip(1)
                            .take_while(|child| self.kind_name(*child) != "then")
                            .filter(|child| child.is_named() && self.kind_name(*child) != "comment"),
                    );
                }
            }
            Syn::Case => {
                // The subject sits on the switch two or three frames up.
                for up in self.frames[..frame].iter().rev().take(4) {
                    let subject = self
                        .field(up.node, "subject")
                        .or_else(|| self.field(up.node, "value"))
                        .filter(|_| {
                            let kind = self.kind_name(up.node);
                            is_switch(kind)
                                || matches!(kind, "match_statement" | "match_expression" | "case_statement")
                        });
                    if let Some(subject) = subject {
                        nodes.push(subject);
                        break;
                    }
                }
                let pattern = self
                    .field(node, "pattern")
                    .or_else(|| self.field(node, "value"))
                    .or_else(|| self.field(node, "communication"))
                    .or_else(|| node.named_child(0).filter(|c| self.kind_name(*c) == "case_pattern"));
                // `StopReason::MaxTokens | StopReason::EndTurn =>`: each
                // alternative is a test of its own, so that the words of one
                // do not join the other's (`max` and `turn` are no turn cap).
                if let Some(pattern) = pattern {
                    let from = nodes.len();
                    alternatives_of(pattern, &mut nodes);
                    // (Each learns the names of what the case tests.)
                    if from > 0 {
                        let names = self.plain_names(nodes[0]);
                        if !names.is_empty() {
                            for alternative in &nodes[from..] {
                                self.case_subjects
                                    .borrow_mut()
                                    .insert(alternative.start_byte(), names.clone());
                            }
                        }
                    }
                }
                if let Some(guard) = self.field(node, "guard") {
                    nodes.push(guard);
                }
                // `case "done_for_now": case "request_approval": return
                // thread`: the empty cases just above fall through to this
                // one's body, each a test of its own.
                if self.kind_name(node) == "switch_case" {
                    let mut previous = node.prev_named_sibling();
                    for _ in 0..8 {
                        let Some(case) = previous else { break };
                        previous = case.prev_named_sibling();
                        if self.syn_of(case) == Syn::Comment {
                            continue;
                        }
                        if self.kind_name(case) != "switch_case" || self.field(case, "body").is_some() {
                            break;
                        }
                        nodes.extend(self.field(case, "value"));
                    }
                }
            }
            // `let Some(request) = request else { return; }`: the value did
            // not match (its `else` is the frame's alternative).
            Syn::Assign if self.is_let_else(node) => nodes.extend(self.field(node, "value")),
            _ => {}
        }
        nodes
    }

    /// The plain names of a value, at most four: the root of a field or
    /// method chain (`input` of `input.as_str()`, `reply` of
    /// `reply.action.as_str()`, never `action`) and the names handed to its
    /// calls (`line` of `strings.TrimSpace(line)`).
    fn plain_names(&self, node: Node<'t>) -> Vec<String> {
        let mut names = Vec::new();
        let mut stack = vec![node];
        let mut visited = 0;
        while let Some(n) = stack.pop() {
            visited += 1;
            if visited > 32 || names.len() >= 4 {
                break;
            }
            let kind = self.kind_name(n);
            if self.kind_of(n).1 && n.child_count() == 0 {
                names.push(self.text(n).to_string());
                continue;
            }
            match kind {
                // A field or a method: only what it is read from.
                "attribute" | "member_expression" | "field_expression" | "selector_expression" => {
                    stack.extend(n.named_child(0));
                }
                // A call: the object of a method call and the arguments.
                "call" | "call_expression" => {
                    let function = self.field(n, "function");
                    if let Some(function) = function.filter(|f| f.named_child_count() > 0) {
                        stack.extend(function.named_child(0));
                    }
                    stack.extend(self.field(n, "arguments"));
                }
                _ => {
                    let mut cursor = n.walk();
                    let children: Vec<Node<'t>> = n.named_children(&mut cursor).collect();
                    stack.extend(children.into_iter().rev());
                }
            }
        }
        names
    }

    /// A Rust `let PATTERN = VALUE else { ... };`: a guard whose `else`
    /// runs when the value does not match the pattern.
    fn is_let_else(&self, node: Node<'t>) -> bool {
        self.family == Family::Rust
            && self.kind_name(node) == "let_declaration"
            && self.field(node, "alternative").is_some()
    }

    /// A statement that leaves a loop: `break` leaves the innermost loop;
    /// `return`, `raise` and process exits leave every loop of the function.
    fn exit_site(&mut self, node: Node<'t>, leaves_function: bool) {
        if !leaves_function && self.breaks_a_switch(node) {
            return;
        }
        // The nearest enclosing handler learns that it leaves.
        let handler = self.guard_frames.last().and_then(|frame| match self.frames[*frame].role {
            FrameRole::Handler(id) => Some(id),
            _ => None,
        });
        if let Some(id) = handler {
            self.facts.handlers[id].leaves |= !self.facts.handlers[id].on_the_way_out;
        }
        let loops: Vec<usize> = self.loops_of_current_function().copied().collect();
        let site = node.byte_range();
        if matches!(self.kind_name(node), "return_statement" | "return_expression")
            && node.named_child_count() > 0
        {
            self.facts.return_sites.insert(site.start);
        }
        // What leaves names why: a name in it says the budget ran out
        // (`ErrBudget`, `BudgetExceededError`, `BUDGET_EXHAUSTED`), not a
        // string (`"load budget: %w"`) nor two names apart. (Its text is
        // read only when it holds the word at all.)
        let text = self.text(node);
        if text.len() <= 400
            && crate::words::contains_ignoring_case(text, "budget")
            && names_budget_spent(text)
        {
            self.facts.budget_exit_sites.insert(site.start);
        }
        if loops.is_empty() {
            if leaves_function {
                if let Some(&frame) = self.function_frames.last() {
                    if let FrameRole::Function(function) = self.frames[frame].role {
                        self.function_exit(node, frame, function);
                    }
                }
            }
            return;
        }
        // A yes or no returned from a walk over items (`for call in
        // tool_calls: ... if errors >= MAX: return false`) leaves the
        // function too: a loop that calls it learns that answer as from a
        // return outside loops.
        let plain_answer = || {
            let value = text.trim().trim_end_matches(';').trim_start_matches("return").trim();
            matches!(value, "true" | "false" | "True" | "False")
        };
        if leaves_function
            && plain_answer()
            && loops.iter().all(|frame| match self.frames[*frame].role {
                FrameRole::Loop(id) => self.facts.loops[id].collection,
                _ => false,
            })
        {
            if let Some(&frame) = self.function_frames.last() {
                if let FrameRole::Function(function) = self.frames[frame].role {
                    self.function_exit(node, frame, function);
                }
            }
        }
        let Some((inner_frame, inner_id)) = self.innermost_loop() else { return };
        // A `break` out of a walk over a collection nested in another loop
        // ends the walk (over the tool calls of one reply, say), not the
        // loop around it.
        if !leaves_function && loops.len() > 1 && self.facts.loops[inner_id].collection {
            self.facts.loops[inner_id].exit_sites += 1;
            return;
        }
        let floor = if leaves_function { loops[0] } else { inner_frame };
        // The guards between the loop and the exit, nearest first: each an
        // `if`'s condition or a handler's exception types.
        let mut groups = self.guard_groups_above(floor);
        if let Some((Role::Guard, clauses)) = groups.first() {
            // The last statements before the exit say why it leaves: the
            // work done, or a detector's flag raised.
            let siblings = self.statements_before_exit(node);
            let before = siblings.as_ref().map_or(&[][..], |s| {
                let before = s.before();
                &before[before.len().saturating_sub(6)..]
            });
            let says = |limit: usize, test: fn(&str) -> bool| {
                before.iter().any(|statement| {
                    let text = self.text(*statement);
                    text.len() <= limit && test(text)
                })
            };
            let done = self.exit_says_done(node) || says(160, assignment_says_done);
            let stalled = says(80, assignment_says_stalled);
            for &clause in clauses {
                self.facts.clauses[clause].marks_done |= done;
                self.facts.clauses[clause].marks_stall |= stalled;
            }
        }
        // `if reply.tool_calls: ...; continue` before the exit: it runs only
        // when that condition does not hold.
        // Only an exit with no condition of its own is read through the
        // `if ... continue` before it (the nearest guard decides anyway).
        // An exit in a Rust arm for a call's success (`Ok(response) => {`)
        // is read through the skips inside that arm too (nearer than it).
        let success_arm = self.guard_frames.last().copied().filter(|&frame| {
            frame > floor
                && self.arm_variant(self.frames[frame].node).is_some_and(|v| v == "Ok" || v == "Some")
        });
        let skipped = match success_arm {
            _ if groups.is_empty() => self.skipping_guards(node, floor),
            Some(arm) => self.skipping_guards(node, arm - 1),
            None => Vec::new(),
        };
        // `if "**ERROR**" in answer: continue` then `self.set_output(answer);
        // break`: when every skip before an exit with no guard of its own
        // is a failed reply, the exit is the attempt that got through.
        // (The skip must be taken on the failure, so the exit runs when
        // there was none; and an exit in a handler is the failure's own.)
        if groups.is_empty() && !skipped.is_empty() && !self.in_a_handler_above(floor) {
            let failed = |clause: &Clause| {
                clause.negated
                    && (clause.literals.iter().any(|l| l == "error")
                        || clause.words.iter().any(|w| matches!(w.as_str(), "error" | "failed" | "fail")))
            };
            if skipped.iter().all(|&c| failed(&self.facts.clauses[c])) {
                for &clause in &skipped {
                    self.facts.clauses[clause].attempt_succeeded = true;
                }
            }
        }
        // `if retries_left > 0 { retries_left -= 1; continue }` right before
        // the exit: an allowance spent on each skip, and the exit is where
        // the loop goes once it is used up.
        // (In a walk over the items of a pass, a `break` out of the walk
        // goes on to the next pass of the loop around: `if replans < max {
        // replans++; break }` before a `return` spends an allowance too.)
        let walk_breaks_on = leaves_function && loops.len() > 1 && self.facts.loops[inner_id].collection;
        let allowances = self.spent_allowances(node, floor, walk_breaks_on);
        let targets: Vec<usize> = if leaves_function {
            loops
                .iter()
                .filter_map(|frame| match self.frames[*frame].role {
                    FrameRole::Loop(id) => Some(id),
                    _ => None,
                })
                .collect()
        } else {
            vec![inner_id]
        };
        for &id in &targets {
            self.facts.loops[id].exit_sites += 1;
        }
        self.note_guard_flag(floor, groups.len(), &targets);
        // A Bash exit in an `a && b && break` list is guarded by the commands
        // before it: the nearest guard of all.
        if let Some(clauses) = self.bash_list_guard(node) {
            groups.insert(0, (Role::Guard, clauses));
        }
        // `try: return parse(execute(code)) except Error: code = fix(code)`:
        // the return under no condition is the attempt that got through.
        let returns_value = matches!(self.kind_name(node), "return_statement" | "return_expression")
            && node.named_child_count() > 0;
        // (Or a bare exit right after the work in the try's own body: `try:
        // self.set_output(json.loads(answer)); return`.)
        let after_the_work = || {
            let Some(block) = node.parent() else { return false };
            let Some(statement) = block.parent().filter(|t| self.kind_name(*t) == "try_statement") else {
                return false;
            };
            // (A try that catches: not one with a `finally` alone.)
            let catches = self
                .children_named(statement)
                .iter()
                .any(|c| matches!(self.kind_name(*c), "except_clause" | "catch_clause"));
            // (Past comments, and past flags set to a constant on the way out:
            // `await runCommand("npm", ["run", "build"]); testPassed = true;
            // break;`.)
            let mut before = node.prev_named_sibling();
            while let Some(skipped) =
                before.filter(|b| self.syn_of(*b) == Syn::Comment || self.sets_a_constant(*b))
            {
                before = skipped.prev_named_sibling();
            }
            catches
                && self.field(statement, "body").is_some_and(|b| b.id() == block.id())
                && before.is_some_and(|before| self.calls_something(before))
        };
        if groups.is_empty()
            && skipped.is_empty()
            && (self.catching_try().is_some() || self.in_try_else())
            && (returns_value || after_the_work())
        {
            let clause = self.facts.clauses.len();
            self.facts.clauses.push(Clause {
                range: site.clone(),
                words: vec!["pass".to_string()],
                attempt_succeeded: true,
                ..Clause::default()
            });
            groups.push((Role::Guard, vec![clause]));
        }
        for &id in &targets {
            for (depth, (role, clauses)) in groups.iter().enumerate() {
                for &clause in clauses {
                    self.facts.links.push(ExitLink {
                        clause,
                        role: *role,
                        loop_id: id,
                        site: site.clone(),
                        via: None,
                        depth: u8::try_from(depth).unwrap_or(SKIPPED_DEPTH - 1).min(SKIPPED_DEPTH - 1),
                    });
                }
            }
            for &clause in &skipped {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::Guard,
                    loop_id: id,
                    site: site.clone(),
                    via: None,
                    depth: SKIPPED_DEPTH,
                });
            }
            // The loop goes on while the allowance holds: it reads as the
            // loop's own condition, at the check itself.
            for &clause in &allowances {
                self.facts.links.push(ExitLink {
                    clause,
                    role: Role::LoopCondition,
                    loop_id: id,
                    site: self.facts.clauses[clause].range.clone(),
                    via: None,
                    depth: 0,
                });
            }
        }
    }

    /// An exit whose only guard is a flag of its own function (`if
    /// budget_exceeded: break` first thing in the pass): the flag is a way
    /// out of the loop as a loop's condition would be, so turning it on
    /// further down the pass (`budget_exceeded = True` under
    /// `consecutive_errors >= 3`, in a walk nested three deep) leaves the
    /// loop under the guards there.
    fn note_guard_flag(&mut self, floor: usize, groups: usize, targets: &[usize]) {
        if groups != 1 || self.family == Family::Bash {
            return;
        }
        let Some(&frame) = self.guard_frames.last().filter(|&&frame| frame > floor) else { return };
        let node = self.frames[frame].node;
        if !matches!(self.syn_of(node), Syn::If) {
            return;
        }
        let Some(condition) = self.field(node, "condition") else { return };
        let text = self.text(condition).trim();
        let text = text.trim_start_matches('(').trim_end_matches(')').trim();
        // (A field may be set by any method; only a local of the function
        // is turned on where the walk will see it.)
        let Some((name, negated)) = simple_flag(text).filter(|(name, _)| !name.contains('.')) else { return };
        if self.in_alternative(frame) {
            return;
        }
        // `if done: break` ends on a truthy value, as `while not done` does.
        let polarity = if negated { FlagPolarity::Truthy } else { FlagPolarity::Falsy };
        for &id in targets {
            let known = self.facts.loop_flags.iter().any(|(loop_id, flag, _)| *loop_id == id && flag == name);
            if !known && self.facts.loop_flags.len() < 256 {
                self.facts.loop_flags.push((id, name.to_string(), polarity.clone()));
            }
        }
    }

    /// Whether the exit says the work is done itself: `return { status:
    /// 'success', messages }`.
    fn exit_says_done(&self, exit: Node<'t>) -> bool {
        if !matches!(self.kind_name(exit), "return_statement" | "return_expression") {
            return false;
        }
        let text = self.text(exit);
        text.len() <= 300
            && text.split([',', '{', '(', '\n']).any(|part| assignment_says_done(&part.replacen(':', "=", 1)))
    }

    /// The statements around `exit` in its own block (an exit written as an
    /// expression statement, `break;`, counts as that statement): those
    /// before it say why it leaves.
    fn statements_before_exit(&self, exit: Node<'t>) -> Option<Siblings<'t>> {
        // The walk's frames hold the exit's parents (`Node::parent` walks
        // down from the root: too dear in a deep tree).
        let mut up =
            self.frames.iter().rev().map(|frame| frame.node).skip_while(|node| node.id() == exit.id());
        let (mut block, mut current) = (up.next(), exit);
        if let Some(statement) = block.filter(|b| self.kind_name(*b) == "expression_statement") {
            current = statement;
            block = up.next();
        }
        Some(self.siblings_of(block?, current))
    }

    /// Whether a Bash `read` comes right after a prompt printed for it
    /// (`echo -ne "You: "` or `printf '> '` as the statement before).
    fn after_a_prompt(&self, read: Node<'t>) -> bool {
        // The walk's frames hold the command's ancestors (its own frame is
        // not pushed yet): up through `read ... || break` to the statement,
        // then the statement before it in its block, read with a cursor.
        let mut statement = read;
        let mut level = self.frames.len();
        while level > 0 {
            let parent = self.frames[level - 1].node;
            if !matches!(self.kind_name(parent), "list" | "pipeline" | "negated_command") {
                break;
            }
            statement = parent;
            level -= 1;
        }
        let Some(block) = level.checked_sub(1).map(|i| self.frames[i].node) else { return false };
        let mut cursor = block.walk();
        let before =
            block.named_children(&mut cursor).take_while(|c| c.end_byte() <= statement.start_byte()).last();
        let Some(before) = before else { return false };
        if self.kind_name(before) != "command" {
            return false;
        }
        let text = self.text(before);
        let name = text.split_whitespace().next().unwrap_or("");
        matches!(name, "echo" | "printf") && text.len() <= 200 && !text.contains('\n')
    }

    /// The guards between `floor` and the top of the stack, nearest first,
    /// at most `GUARD_LIMIT`, one group each: an `if`'s or a case arm's
    /// clauses, or a handler's exception types.
    fn guard_groups_above(&mut self, floor: usize) -> Vec<(Role, Vec<usize>)> {
        let guards: Vec<usize> = self
            .guard_frames
            .iter()
            .rev()
            .take_while(|frame| **frame > floor)
            .take(GUARD_LIMIT)
            .copied()
            .collect();
        let mut groups = Vec::new();
        for frame in guards {
            match self.frames[frame].role {
                FrameRole::Handler(id) => {
                    if self.facts.handlers[id].on_the_way_out {
                        continue;
                    }
                    let clauses = self.handler_clauses(id);
                    if clauses.is_empty() {
                        continue;
                    }
                    groups.push((Role::Handler, clauses));
                }
                _ => {
                    let clauses = self.guard_clauses(frame);
                    if !clauses.is_empty() {
                        groups.push((Role::Guard, clauses));
                    }
                }
            }
        }
        groups
    }

    /// The conditions of `if` statements before `node` (at its own level
    /// and at the levels around it, up to `floor`) whose body ends with
    /// `continue`: `node` runs only when they do not hold, so they guard it
    /// negated. At most a few, nearest first.
    fn skipping_guards(&mut self, node: Node<'t>, floor: usize) -> Vec<usize> {
        // Each condition, and whether it guards the exit negated (it skips
        // when it holds).
        let mut conditions: Vec<(Node<'t>, bool)> = Vec::new();
        // The exit's frame is not pushed yet: the top frame is its parent.
        let mut current = node;
        let mut level = self.frames.len();
        while level > floor + 1 && self.frames.len() - level < 8 && conditions.len() < 3 {
            let parent = self.frames[level - 1].node;
            let siblings = self.siblings_of(parent, current);
            // (Comments are no statements: `// all checks passed` between
            // the skip and the exit does not hide it.)
            let before = siblings.before();
            for &statement in before.iter().rev().filter(|s| self.syn_of(**s) != Syn::Comment).take(12) {
                if conditions.len() >= 3 {
                    break;
                }
                let statement = self.inside_expression_statement(statement);
                if !self.if_without_else(statement) {
                    continue;
                }
                // (The body's last statement is found once: most `if`s end
                // with neither a `continue` nor another `if`.)
                let Some(last) = self.last_jump_in_if_body(statement) else { continue };
                let condition =
                    |node: Node<'t>, skips: bool| self.field(node, "condition").map(|c| (c, skips));
                if self.continues(last) {
                    conditions.extend(condition(statement, true));
                } else if self.syn_of(last) != Syn::If {
                    continue;
                } else if self.if_without_else(last) && self.ends_with_continue(last) {
                    // `if let Some(calls) = tool_calls { if !calls.is_empty()
                    // { ...; continue } }`: both conditions hold to skip.
                    conditions.extend(condition(statement, true));
                    conditions.extend(condition(last, true));
                } else if self.else_continues(last) {
                    // `if let Some(calls) = .. { if calls.is_empty() { } else
                    // { ...; continue } }`: the inner one holds on the way out.
                    conditions.extend(condition(statement, true));
                    conditions.extend(condition(last, false));
                }
            }
            current = parent;
            level -= 1;
        }
        conditions.truncate(3);
        let mut out = Vec::new();
        for (condition, skips) in conditions {
            for clause in self.clauses_of(&[condition]) {
                if skips {
                    let flipped = !self.facts.clauses[clause].negated;
                    self.facts.clauses[clause].negated = flipped;
                }
                out.push(clause);
            }
        }
        out
    }

    /// The conditions of the `if` statements just before `node` in its own
    /// block (or the block of its statement) whose body moves a name of the
    /// condition by a constant and ends with `continue`: `if nudges <
    /// MAX_NUDGES { nudges += 1; ...; continue }` then `return Err(..)`. Each
    /// skip spends the allowance, and `node` runs once it is spent. Marked
    /// `allowance`, not negated: the loop goes on while they hold.
    fn spent_allowances(&mut self, node: Node<'t>, floor: usize, walk_breaks_on: bool) -> Vec<usize> {
        let mut found: Vec<(Node<'t>, Node<'t>, usize)> = Vec::new();
        let mut current = node;
        let mut level = self.frames.len();
        while level > floor + 1 && self.frames.len() - level < 2 && found.is_empty() {
            let parent = self.frames[level - 1].node;
            let siblings = self.siblings_of(parent, current);
            let before = siblings.before();
            for &statement in before.iter().rev().filter(|s| self.syn_of(**s) != Syn::Comment).take(6) {
                let statement = self.inside_expression_statement(statement);
                if !self.if_without_else(statement)
                    || !(self.ends_with_continue(statement)
                        || walk_breaks_on && self.ends_with_break(statement))
                {
                    continue;
                }
                if let Some(condition) = self.field(statement, "condition") {
                    // (Where the block of the `if` starts: a spend may also
                    // come just before it, `retries += 1` then `if retries
                    // <= 3: ...; continue`.)
                    let block_start =
                        before.first().map_or(statement.start_byte(), |first| first.start_byte());
                    found.push((statement, condition, block_start));
                }
                break;
            }
            // A Rust `break;` is an expression statement in the block.
            if self.kind_name(parent) != "expression_statement" {
                break;
            }
            current = parent;
            level -= 1;
        }
        let mut out = Vec::new();
        for (statement, condition, block_start) in found {
            let body = statement.byte_range();
            let clauses = self.clauses_of(&[condition]);
            let spends = |clause: &Clause, assigns: &[AssignFact]| {
                clause.ordering
                    && assigns.iter().any(|a| {
                        a.step
                            && a.range.start >= block_start
                            && a.range.end <= body.end
                            // (The same field of the same value: `provResp.ToolCalls`
                            // is not `result.ToolCalls`.)
                            && clause.idents.iter().any(|ident| {
                                ident == &a.target
                                    || (last_name(ident) == last_name(&a.target)
                                        && !ident.contains('.')
                                        && !a.target.contains('.'))
                            })
                    })
            };
            for clause in clauses {
                if spends(&self.facts.clauses[clause], &self.facts.assigns) {
                    self.facts.clauses[clause].allowance = true;
                    out.push(clause);
                }
            }
        }
        out
    }

    /// The expression a Rust (or Go, JavaScript) expression statement holds
    /// (a Rust `if` is an expression in a statement of its block); any other
    /// statement itself.
    fn inside_expression_statement(&self, statement: Node<'t>) -> Node<'t> {
        match statement.named_child(0) {
            Some(inner) if self.kind_name(statement) == "expression_statement" => inner,
            _ => statement,
        }
    }

    /// The enum variant a Rust match arm's pattern names (`Text` in
    /// `ChatOutcome::Text(text) =>`, `Ok` in `Ok(response) =>`), if any.
    fn arm_variant(&self, arm: Node<'t>) -> Option<&'s str> {
        if self.kind_name(arm) != "match_arm" {
            return None;
        }
        let mut pattern = self.field(arm, "pattern")?;
        if self.kind_name(pattern) == "match_pattern" {
            pattern = pattern.named_child(0)?;
        }
        let path = match self.kind_name(pattern) {
            "tuple_struct_pattern" | "struct_pattern" => self.field(pattern, "type")?,
            "scoped_identifier" => pattern,
            // (A bare name binds the value unless it is a variant's.)
            "identifier" if self.text(pattern).starts_with(char::is_uppercase) => pattern,
            _ => return None,
        };
        let text = self.text(path);
        Some(text.rsplit("::").next().unwrap_or(text))
    }

    /// Whether `node` is a `continue` (in Bash, the command of that name).
    fn continues(&self, node: Node<'t>) -> bool {
        is_continue(self.kind_name(node))
            || (self.family == Family::Bash
                && self.kind_name(node) == "command"
                && self.text(node).trim() == "continue")
    }

    /// Whether `statement` is an `if` with no `else` or `elif`.
    fn if_without_else(&self, statement: Node<'t>) -> bool {
        self.syn_of(statement) == Syn::If
            && self.field(statement, "alternative").is_none()
            && !self
                .children_named(statement)
                .iter()
                .any(|c| matches!(self.kind_name(*c), "else_clause" | "elif_clause"))
    }

    /// Whether an `if` whose own body leaves nothing ends its `else` with
    /// `continue`: `if calls.is_empty() { } else { ...; continue }` goes on
    /// past it only when its condition holds.
    fn else_continues(&self, inner: Node<'t>) -> bool {
        if self.ends_with_jump(inner) {
            return false;
        }
        let Some(alternative) = self.field(inner, "alternative") else { return false };
        let block = match self.kind_name(alternative) {
            "else_clause" => alternative.named_child(0),
            _ => Some(alternative),
        };
        block
            .and_then(last_statement)
            .is_some_and(|last| self.continues(self.inside_expression_statement(last)))
    }

    /// Whether an `if`'s body ends with `continue`, `break` or `return`.
    fn ends_with_jump(&self, statement: Node<'t>) -> bool {
        self.last_jump_in_if_body(statement).is_some_and(|last| {
            let kind = self.kind_name(last);
            self.continues(last)
                || matches!(
                    kind,
                    "break_statement" | "break_expression" | "return_statement" | "return_expression"
                )
        })
    }

    /// Whether an `if` statement's body ends with `continue`.
    fn ends_with_continue(&self, statement: Node<'t>) -> bool {
        self.last_jump_in_if_body(statement).is_some_and(|last| self.continues(last))
    }

    /// Whether the body of an `if` ends with a plain `break` (no label, no
    /// value).
    fn ends_with_break(&self, statement: Node<'t>) -> bool {
        self.last_jump_in_if_body(statement).is_some_and(|last| {
            matches!(self.kind_name(last), "break_statement" | "break_expression")
                && last.named_child_count() == 0
        })
    }

    /// The last statement of an `if`'s body, out of the expression
    /// statement that holds it (a Rust `continue;` or `break;`).
    fn last_jump_in_if_body(&self, statement: Node<'t>) -> Option<Node<'t>> {
        self.last_in_if_body(statement).map(|last| self.inside_expression_statement(last))
    }

    fn handler_clauses_above(&mut self, floor: usize) -> Vec<usize> {
        let handlers: Vec<usize> = self
            .guard_frames
            .iter()
            .rev()
            .take_while(|frame| **frame > floor)
            .take(GUARD_LIMIT)
            .filter(|frame| matches!(self.frames[**frame].role, FrameRole::Handler(_)))
            .copied()
            .collect();
        let mut out = Vec::new();
        for frame in handlers {
            let FrameRole::Handler(id) = self.frames[frame].role else { continue };
            out.extend(self.handler_clauses(id));
        }
        out
    }

    /// A handler's clauses, one per group of `type_groups`: each a type that
    /// ends the loop when caught here.
    fn handler_clauses(&mut self, id: usize) -> Vec<usize> {
        let handler = &self.facts.handlers[id];
        let range = handler.range.clone();
        handler
            .type_groups
            .clone()
            .into_iter()
            .map(|words| {
                self.facts.clauses.push(Clause { range: range.clone(), words, ..Clause::default() });
                self.facts.clauses.len() - 1
            })
            .collect()
    }

    /// The commands before a Bash exit in an `a && b && break` list (or in a
    /// group of commands there: `[[ $n -ge 3 ]] && { echo stop; return 4;
    /// }`), as clauses: they guard it. `a || break` leaves when `a` fails,
    /// which its clauses record (`on_failure`).
    fn bash_list_guard(&mut self, node: Node<'t>) -> Option<Vec<usize>> {
        if self.family != Family::Bash {
            return None;
        }
        let mut member = node;
        let mut parent = self.frames.last().map(|f| f.node);
        if let Some(group) = parent.filter(|p| self.kind_name(*p) == "compound_statement") {
            member = group;
            parent = self.ancestor(1);
        }
        let parent = parent.filter(|p| self.kind_name(*p) == "list")?;
        // One pass over the list: the commands before the member, and the
        // operator right before it.
        let mut preceding: Vec<Node<'t>> = Vec::new();
        let mut operator = None;
        let mut cursor = parent.walk();
        for child in parent.children(&mut cursor) {
            if child.id() == member.id() {
                break;
            }
            if child.is_named() {
                preceding.push(child);
            }
            operator = Some(child);
        }
        let clauses = self.clauses_of(&preceding);
        let on_failure = operator.is_some_and(|operator| self.kind_name(operator) == "||");
        for &clause in &clauses {
            self.facts.clauses[clause].on_failure = on_failure;
        }
        Some(clauses)
    }

    /// Records a return or raise of a function outside its loops: what a
    /// caller's loop learns when it calls the function.
    fn function_exit(&mut self, node: Node<'t>, frame: usize, function: usize) {
        let returns_end = self.returns_end(node);
        let mut clauses = self.guard_clauses_above(frame);
        // (`[[ $i -gt $max ]] && return 1` in a Bash function.)
        clauses.extend(self.bash_list_guard(node).unwrap_or_default());
        let text = self.text(node);
        let value = match self.kind_name(node) {
            "return_statement" | "return_expression" => node.named_child(0),
            _ => None,
        };
        // (Go returns a list of one: `return current == previous`.)
        let value = value.map(|v| match self.kind_name(v) {
            "expression_list" if v.named_child_count() == 1 => v.named_child(0).unwrap_or(v),
            _ => v,
        });
        let value_text = value.map(|v| self.text(v).trim()).unwrap_or("");
        let is_return = matches!(self.kind_name(node), "return_statement" | "return_expression")
            || (self.family == Family::Bash && text.starts_with("return"));
        let raises = !is_return || value_text.starts_with("Err(") || value_text.starts_with("Promise.reject");
        // A returned condition speaks for itself; a returned value does not.
        let values = match value {
            Some(value) if self.is_condition(value) => self.clauses_of(&[value]),
            _ => Vec::new(),
        };
        let first = value.map(|v| match self.kind_name(v) {
            "tuple" | "expression_list" | "pattern_list" => v.named_child(0).unwrap_or(v),
            _ => v,
        });
        let returned_name =
            first.filter(|v| matches!(self.kind_name(*v), "identifier")).map(|v| self.text(v).to_string());
        let answer = if self.family == Family::Bash {
            // A Bash function answers by its status: `return` or `return 0`
            // is yes, `return 1` no (a `$var` status says nothing).
            match text.trim_end_matches(';').trim().strip_prefix("return").map(str::trim) {
                Some("" | "0") => Some(true),
                Some(status) if !status.is_empty() && status.chars().all(|c| c.is_ascii_digit()) => {
                    Some(false)
                }
                _ => None,
            }
        } else {
            yes_or_no(value_text.trim_end_matches(';'))
        };
        // (The one yes or no of a tuple answers for its place: `return
        // true, ""`, `return cancel_message, True`.)
        let tuple = value.filter(|v| matches!(self.kind_name(*v), "tuple" | "expression_list"));
        let items = tuple.map(|t| self.children_named(t)).unwrap_or_default();
        let said: Vec<(usize, bool)> = items
            .iter()
            .enumerate()
            .filter_map(|(at, item)| yes_or_no(self.text(*item).trim()).map(|answer| (at, answer)))
            .collect();
        let (answer, answer_at) = match (answer, said.as_slice()) {
            (None, [(at, answer)]) => (Some(*answer), Some(*at)),
            (answer, _) => (answer, None),
        };
        let nothing = |text: &str| matches!(text, "" | "None" | "nil" | "null" | "undefined");
        let no_value = nothing(value_text.trim_end_matches(';'));
        let literal = |node: Node<'t>| {
            let text = self.text(node).trim();
            nothing(text) || yes_or_no(text).is_some() || matches!(self.syn_of(node), Syn::Str)
        };
        let plain = match value {
            None => true,
            // (Of a tuple, only the yes or no is asked for.)
            Some(_) if !items.is_empty() => answer_at.is_some(),
            Some(value) => literal(value),
        };
        self.facts.function_exits.push(FunctionExit {
            function,
            clauses,
            site: node.byte_range(),
            returns_end,
            raises,
            values,
            returned_name,
            answer,
            answer_at,
            no_value,
            plain,
        });
    }

    /// An expression that reads as a yes-or-no question: a comparison, a
    /// negation, a boolean operator, or a call or name whose words ask
    /// (`is_done()`, `self.finished`).
    fn is_condition(&self, node: Node<'t>) -> bool {
        match self.kind_name(node) {
            "comparison_operator" | "not_operator" | "boolean_operator" | "unary_expression" => true,
            "binary_expression" => self.field(node, "operator").is_some_and(|o| {
                matches!(
                    self.kind_name(o),
                    "==" | "!=" | "===" | "!==" | "<" | "<=" | ">" | ">=" | "&&" | "||" | "and" | "or"
                )
            }),
            "parenthesized_expression" => node.named_child(0).is_some_and(|inner| self.is_condition(inner)),
            "call"
            | "call_expression"
            | "attribute"
            | "member_expression"
            | "field_expression"
            | "selector_expression"
            | "identifier" => {
                let text = self.text(node);
                text.len() <= 120 && {
                    let words = canonical_words(text);
                    words.first().is_some_and(|w| matches!(w.as_str(), "is" | "has" | "should" | "can"))
                        || words.iter().any(|w| {
                            matches!(w.as_str(), "done" | "stop" | "cancel" | "deadline" | "max" | "stall")
                        })
                }
            }
            _ => false,
        }
    }

    fn returns_end(&self, node: Node<'t>) -> bool {
        let text = self.text(node);
        let value = text.trim_start_matches("return").trim().trim_end_matches(';').trim();
        matches!(value, "END" | "\"__end__\"" | "'__end__'" | "graph.END")
    }

    /// Splits conditions at `and`/`or`/`&&`/`||` (and Bash lists) and analyses
    /// each operand as one clause. Returns the indexes of the new clauses.
    fn clauses_of(&mut self, nodes: &[Node<'t>]) -> Vec<usize> {
        let roots = self.boolean_roots(nodes);
        let mut out = Vec::new();
        for root in roots {
            // `if (!willContinue) return` with `const willContinue =
            // toolCalls.length > 0 && !stop && !signal.aborted` a few lines up:
            // each part is a way out of its own, judged on its own words at
            // the place the loop checks them.
            match self.alias_parts.then(|| self.boolean_alias_parts(root)).flatten() {
                Some((parts, flip)) => {
                    for part in parts {
                        let index = self.push_clause(part, root.byte_range());
                        if flip {
                            let clause = &mut self.facts.clauses[index];
                            clause.negated = !clause.negated;
                        }
                        out.push(index);
                    }
                }
                None => out.push(self.push_clause(root, root.byte_range())),
            }
        }
        if out.iter().any(|i| self.facts.clauses[*i].repeats_recent) {
            for i in &out {
                let clause = &mut self.facts.clauses[*i];
                clause.beside_repeat = !clause.repeats_recent;
            }
        }
        out
    }

    /// The clause of one boolean part of a condition, placed at `range`
    /// (the part itself, or the condition that reads it through a name).
    fn push_clause(&mut self, part: Node<'t>, range: Range<usize>) -> usize {
        let mut collected = self.collect(&[part]);
        if let Some(names) = self.case_subjects.borrow().get(&part.start_byte()) {
            collected.clause.subject_idents = names.clone();
        }
        collected.clause.range = range;
        collected.clause.sides = self.sides_of(part);
        collected.clause.call_root = self.root_call(part);
        collected.clause.command =
            self.family == Family::Bash && matches!(self.kind_name(part), "command" | "pipeline");
        if self.family == Family::Bash {
            let text = self.text(part);
            // `kill -0 "$PID"` sends no signal: it asks whether the process
            // is still alive (the agent command it started, a server it
            // waits on).
            if text.trim_start_matches(['!', ' ']).starts_with("kill -0") {
                for words in [&mut collected.clause.words, &mut collected.clause.callees] {
                    words.retain(|w| w != "cancel");
                    words.push("alive".to_string());
                }
            }
            // `git diff --quiet "$TARGET...$BRANCH"` compares a branch with
            // the one it forked from (is there anything to review or
            // merge?), not this pass's work with the last one's.
            if text.contains("git diff") && text.split_whitespace().any(|arg| arg.contains("...")) {
                collected.clause.words.retain(|w| w != "change");
            }
        }
        collected.clause.repeats_recent = repeats_recent(self.text(part));
        collected.clause.keyed_lookup = self.keyed_lookup(part);
        // GNU timeout's status, 124 (`[ $rc -eq 124 ]`, `(( status == 124
        // ))`): the command it ran was stopped when its time was up.
        if self.family == Family::Bash && collected.clause.equality && collected.clause.number {
            let text = self.text(part);
            let status =
                text.contains("$?")
                    || collected.clause.words.iter().any(|w| {
                        matches!(w.as_str(), "exit" | "code" | "status" | "rc" | "pipestatus" | "ret")
                    });
            if status && text.split(|c: char| !c.is_ascii_digit()).any(|number| number == "124") {
                collected.clause.words.extend(["timeout".to_string(), "timed".to_string()]);
            }
        }
        let index = self.facts.clauses.len();
        self.facts.clauses.push(collected.clause);
        index
    }

    /// Whether a clause is one entry of a map looked up by a computed key,
    /// possibly negated or parenthesised (`visited[next]`, `!seen[url]`);
    /// not a field named by a string (`state["done"]`) nor a position
    /// (`history[-1]`).
    fn keyed_lookup(&self, node: Node<'t>) -> bool {
        let mut node = node;
        for _ in 0..4 {
            match self.kind_name(node) {
                "not_operator" | "unary_expression" | "parenthesized_expression" => {
                    let Some(inner) = node.named_child(0) else { return false };
                    node = inner;
                }
                _ => break,
            }
        }
        if !matches!(self.kind_name(node), "subscript" | "subscript_expression" | "index_expression") {
            return false;
        }
        let count = node.named_child_count();
        let last = u32::try_from(count.saturating_sub(1)).unwrap_or(0);
        let Some(index) = (count >= 2).then(|| node.named_child(last)).flatten() else { return false };
        matches!(
            self.kind_name(index),
            "identifier"
                | "attribute"
                | "member_expression"
                | "selector_expression"
                | "field_expression"
                | "call"
                | "call_expression"
        )
    }

    /// The called name when a clause is one call, possibly negated, awaited
    /// or parenthesised: `self.should_stop()`, `!await this.check()`.
    fn root_call(&self, node: Node<'t>) -> Option<String> {
        let mut node = node;
        for _ in 0..6 {
            match self.kind_name(node) {
                "not_operator"
                | "unary_expression"
                | "await"
                | "await_expression"
                | "parenthesized_expression"
                | "try_expression" => node = node.named_child(0)?,
                // `not (reason := self.is_finished())`.
                "named_expression" => node = self.field(node, "value")?,
                _ => break,
            }
        }
        if self.family == Family::Bash {
            // A command run by its name (`check_budget`, `! is_done "$log"`):
            // a function of the script, if the script defines one.
            if self.kind_name(node) == "negated_command" {
                node = node.named_child(0)?;
            }
            if self.kind_name(node) != "command" {
                return None;
            }
            let name = self.text(self.field(node, "name")?);
            let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            return (plain && !name.is_empty()).then(|| name.to_string());
        }
        if self.syn_of(node) != Syn::Call {
            return None;
        }
        let name = last_identifier(self.text(self.callee_of(node)?));
        (!name.is_empty()).then(|| name.to_string())
    }

    fn boolean_parts(&self, node: Node<'t>) -> Option<Vec<Node<'t>>> {
        // Children are collected only once the kind says they may be parts:
        // most clauses are not boolean at all.
        let named = || {
            let mut cursor = node.walk();
            node.named_children(&mut cursor)
                .filter(|c| !matches!(self.syn_of(*c), Syn::Comment))
                .collect::<Vec<Node<'t>>>()
        };
        match self.kind_name(node) {
            "parenthesized_expression" => Some(named()).filter(|named| named.len() == 1),
            "boolean_operator" | "list" | "let_chain" | "condition_clause" => Some(named()),
            "binary_expression" => {
                let operator = self.field(node, "operator").map(|o| self.kind_name(o)).unwrap_or("");
                matches!(operator, "&&" | "||" | "and" | "or").then(named)
            }
            "test_command" => {
                let named = named();
                let [inner] = named.as_slice() else { return None };
                if self.kind_name(*inner) != "binary_expression" {
                    return None;
                }
                let operator = self.field(*inner, "operator").map(|o| self.kind_name(o)).unwrap_or("");
                matches!(operator, "&&" | "||").then(|| self.children_named(*inner))
            }
            _ => None,
        }
    }

    /// A condition that is one name (or its negation) holding a boolean
    /// made a few statements before in the same function from parts that
    /// each end the loop alone: `done = not calls or turn >= cap` ... `if
    /// done:`, or `ok = a && b` ... `if !ok`. Returns the parts and whether
    /// each is read negated (the condition negates a conjunction). Mixed
    /// or other shapes give `None`: the name is read as it is.
    fn boolean_alias_parts(&self, root: Node<'t>) -> Option<(Vec<Node<'t>>, bool)> {
        let mut node = root;
        let mut flip = false;
        for _ in 0..3 {
            match self.kind_name(node) {
                "parenthesized_expression" => node = self.children_named(node).into_iter().next()?,
                "not_operator" => {
                    flip = !flip;
                    node = self.field(node, "argument")?;
                }
                "unary_expression" if self.text(node).starts_with('!') => {
                    flip = !flip;
                    node = self.field(node, "argument").or_else(|| node.named_child(0))?;
                }
                _ => break,
            }
        }
        if self.kind_name(node) != "identifier" {
            return None;
        }
        let name = self.text(node);
        let value = self.local_definition(root, name)?;
        let operator = self.boolean_operator(value)?;
        // `!(a && b)` and `a || b` leave when either part says so; `!(a ||
        // b)` and `a && b` need both, and are read as they are.
        let either = if flip { matches!(operator, "&&" | "and") } else { matches!(operator, "||" | "or") };
        if !either {
            return None;
        }
        let parts = self.boolean_roots(&[value]);
        (2..=6).contains(&parts.len()).then_some((parts, flip))
    }

    /// The operator of a boolean expression (`&&`, `||`, `and`, `or`).
    fn boolean_operator(&self, node: Node<'t>) -> Option<&'static str> {
        let node = match self.kind_name(node) {
            "parenthesized_expression" => self.children_named(node).into_iter().next()?,
            _ => node,
        };
        match self.kind_name(node) {
            "boolean_operator" | "binary_expression" => {
                let operator = self.field(node, "operator")?;
                match self.text(operator) {
                    "&&" => Some("&&"),
                    "||" => Some("||"),
                    "and" => Some("and"),
                    "or" => Some("or"),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The value last given to `name` before `at` by a plain assignment or
    /// declaration of its own (`x = ...`, `const x = ...`, `x := ...`, `let x
    /// = ...`), looking back through the statements of the enclosing blocks
    /// up to the function (at most a few dozen statements).
    fn local_definition(&self, at: Node<'t>, name: &str) -> Option<Node<'t>> {
        // The walk's frames hold the condition's ancestors (the guard being
        // read is among them): each block's statements before the one on the
        // way are read with a cursor, nearest first. (`Node::parent` and
        // `prev_named_sibling` would each search down from the root.)
        let start = at.start_byte();
        let mut seen = 0;
        for index in (0..self.frames.len()).rev() {
            let block = self.frames[index].node;
            if block.start_byte() > start || block.end_byte() < at.end_byte() {
                continue;
            }
            if self.syn_of(block) == Syn::Function {
                return None;
            }
            let mut cursor = block.walk();
            let before: Vec<Node<'t>> =
                block.named_children(&mut cursor).take_while(|child| child.end_byte() <= start).collect();
            for statement in before.into_iter().rev() {
                seen += 1;
                if seen > 40 {
                    return None;
                }
                if let Some(value) = self.value_assigned(statement, name) {
                    return Some(value);
                }
            }
        }
        None
    }

    /// The value a statement gives to `name` alone (`x = v`, `const x = v`,
    /// `x := v`, `let x = v`); a statement that assigns several names at
    /// once gives none.
    fn value_assigned(&self, statement: Node<'t>, name: &str) -> Option<Node<'t>> {
        let assignments = match self.kind_name(statement) {
            "expression_statement" => vec![statement.named_child(0)?],
            "lexical_declaration" | "variable_declaration" => self.children_named(statement),
            "short_var_declaration" | "assignment_statement" | "let_declaration" => vec![statement],
            _ => return None,
        };
        assignments.into_iter().find_map(|assignment| {
            if !matches!(
                self.kind_name(assignment),
                "assignment"
                    | "assignment_expression"
                    | "variable_declarator"
                    | "short_var_declaration"
                    | "assignment_statement"
                    | "let_declaration"
            ) {
                return None;
            }
            let (target, value) = self.assignment_sides(assignment);
            if target.is_none_or(|t| self.text(t) != name) {
                return None;
            }
            // (Go's `x := v` holds its sides in lists.)
            let value = value?;
            match self.kind_name(value) {
                "expression_list" => match self.children_named(value).as_slice() {
                    [only] => Some(*only),
                    _ => None,
                },
                _ => Some(value),
            }
        })
    }

    fn children_named(&self, node: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.named_children(&mut cursor).collect()
    }

    fn sides_of(&self, node: Node<'t>) -> Option<[(Vec<String>, Option<String>); 2]> {
        // Bash's `[ "$a" = "$b" ]` holds its comparison.
        if self.kind_name(node) == "test_command" {
            let named = self.children_named(node);
            return match named.as_slice() {
                [inner] => self.sides_of(*inner),
                _ => None,
            };
        }
        let is_comparison =
            match self.kind_name(node) {
                "comparison_operator" => true,
                "binary_expression" => {
                    // (Bash's `-ge` is a named `test_operator`: its text says which.)
                    let operator = self
                        .field(node, "operator")
                        .map(|o| {
                            if self.kind_name(o) == "test_operator" {
                                self.text(o)
                            } else {
                                self.kind_name(o)
                            }
                        })
                        .unwrap_or("");
                    // (An ordering's sides are read only where a rule asks for them,
                    // tokens weighed against tokens, a measure after a round
                    // against the one before: reading every `i < n` of a long
                    // file costs a few percent of an audit.)
                    matches!(operator, "==" | "!=" | "===" | "!==" | "=" | "-eq" | "-ne")
                        || (matches!(operator, "<" | ">" | "<=" | ">=" | "-lt" | "-le" | "-gt" | "-ge")
                            && self.text(node).as_bytes().windows(5).any(|w| {
                                w.eq_ignore_ascii_case(b"token") || w.eq_ignore_ascii_case(b"after")
                            }))
                }
                _ => false,
            };
        if !is_comparison {
            return None;
        }
        let mut named = self.children_named(node);
        named.retain(|n| self.kind_name(*n) != "test_operator");
        if named.len() != 2 {
            return None;
        }
        let side = |n: Node<'t>| {
            let words = self.collect(&[n]).clause.words;
            let plain = matches!(
                self.kind_name(n),
                "identifier"
                    | "attribute"
                    | "member_expression"
                    | "selector_expression"
                    | "field_expression"
                    | "simple_expansion"
                    | "expansion"
                    | "variable_name"
            );
            let text =
                self.text(n).trim_start_matches('$').trim_matches(|c| c == '{' || c == '}').to_string();
            (words, plain.then_some(text))
        };
        Some([side(named[0]), side(named[1])])
    }

    /// A bounded walk over expressions that gathers a clause's facts.
    fn collect(&self, nodes: &[Node<'t>]) -> Collected {
        let mut clause = Clause::default();
        if let Some(first) = nodes.first() {
            clause.range = first.start_byte()..nodes.last().map_or(first.end_byte(), |n| n.end_byte());
        }
        // Each entry: the node and whether it sits inside a string literal.
        let mut stack: Vec<(Node<'t>, bool)> = nodes.iter().rev().map(|n| (*n, false)).collect();
        let mut visited = 0;
        // One cursor for the whole sub-walk: a new one per node is an
        // allocation per node.
        let mut cursor = nodes.first().map(|node| node.walk());
        let mut attribute_names: Vec<usize> = Vec::new();
        while let Some((node, in_string)) = stack.pop() {
            visited += 1;
            if visited > SUBWALK_LIMIT {
                break;
            }
            let (syntax, identifier, mark) = self.kind_entry(node);
            if syntax == Syn::Comment {
                continue;
            }
            let bash_literal = mark == Mark::BashLiteral;
            if syntax == Syn::SkipAll && !bash_literal {
                continue;
            }
            // (`getattr(reply, "is_done", False)`: the string names an
            // attribute. Marked from the call, met before its arguments:
            // asking a string for its parent walks down from the root.)
            if self.family == Family::Python && !in_string && self.kind_name(node) == "call" {
                attribute_names.extend(self.attribute_named(node).map(|name| name.id()));
            }
            let mut in_string = in_string;
            if matches!(syntax, Syn::Str) || bash_literal {
                if !in_string {
                    let text = strip_quotes(self.text(node));
                    if text.is_empty() && node.named_child_count() == 0 {
                        clause.empty_string = true;
                    }
                    if text.len() <= 60 && is_unchecked_box(text) {
                        clause.unchecked_box = true;
                    }
                    // Markers split into words too: `TASK_COMPLETE` reads `task
                    // done`, `<promise>DONE</promise>` reads `promise done`.
                    // A Bash string's expansions are code, not its text:
                    // `"$EXIT_CODE"` holds no literal word.
                    if self.family == Family::Bash && self.kind_name(node) == "string" {
                        let mut cursor = node.walk();
                        for part in node.named_children(&mut cursor) {
                            let part_text = self.text(part);
                            if self.kind_name(part) == "string_content" && part_text.len() <= 200 {
                                self.extend_words(&mut clause.literals, part_text);
                            }
                        }
                    } else if text.len() <= 200 {
                        self.extend_words(&mut clause.literals, text);
                        if attribute_names.contains(&node.id()) {
                            self.extend_words(&mut clause.words, text);
                        }
                    }
                }
                in_string = true;
            }
            if matches!(syntax, Syn::Interp) {
                in_string = false;
            }
            if !node.is_named() {
                if !in_string {
                    match mark {
                        Mark::Ordering => clause.ordering = true,
                        Mark::Equality => {
                            clause.equality = true;
                            if matches!(self.text(node), "!=" | "!==" | "-ne" | "is not") {
                                clause.differs = true;
                            }
                        }
                        Mark::Membership => clause.membership = true,
                        // (The `!` of a Rust macro, `matches!(prompt, "exit"
                        // | "quit")`, negates nothing; `matches!` asks
                        // whether a value is among the patterns.)
                        Mark::Negation => {
                            // (A Rust macro's `!` follows its name with no
                            // space: `matches!(..)`; a negation's never
                            // follows a name. Read from the source, as
                            // asking the tree for a token's parent walks
                            // down from the root.)
                            let before = &self.source.as_bytes()[..node.start_byte()];
                            let macro_bang = self.family == Family::Rust
                                && before.last().is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
                            if !macro_bang {
                                clause.negated = true;
                            } else if before.ends_with(b"matches") {
                                clause.membership = true;
                            }
                        }
                        _ => {}
                    }
                }
                continue;
            }
            if !in_string {
                if mark == Mark::TestOperator {
                    match self.text(node) {
                        "-lt" | "-le" | "-gt" | "-ge" => clause.ordering = true,
                        "-eq" => clause.equality = true,
                        "-ne" => {
                            clause.equality = true;
                            clause.differs = true;
                        }
                        "-z" => clause.zero = true,
                        "-f" | "-e" | "-d" | "-s" => clause.callees.push("exists".to_string()),
                        _ => {}
                    }
                } else if mark == Mark::NegatedNode {
                    clause.negated = true;
                } else if mark == Mark::Number {
                    clause.number = true;
                    let text = self.text(node);
                    if text == "0" || text == "0.0" {
                        clause.zero = true;
                    }
                } else if mark == Mark::NoneLiteral {
                    clause.none_literal = true;
                } else if identifier && node.child_count() == 0 {
                    let text = self.text(node);
                    if self.family == Family::Bash
                        && text.chars().all(|c| c.is_ascii_digit())
                        && !text.is_empty()
                    {
                        clause.number = true;
                        if text == "0" {
                            clause.zero = true;
                        }
                    } else if matches!(text, "None" | "nil" | "null" | "undefined") {
                        clause.none_literal = true;
                    } else if self.family == Family::Bash
                        && text.starts_with('-')
                        && !matches!(text, "--quiet" | "-q" | "--exit-code")
                    {
                        // A command's flags (`--approve-mcps`,
                        // `--dangerously-skip-permissions`) configure the
                        // command; they say nothing of why the loop ends
                        // (`git diff --quiet` asks whether anything changed).
                    } else if text.len() <= 64 {
                        clause.idents.push(text.to_string());
                        self.extend_words(&mut clause.words, text);
                    }
                } else if mark == Mark::Subscript {
                    // `state["score"]` names a field as surely as `state.score`.
                    let index = self.field(node, "subscript").or_else(|| self.field(node, "index"));
                    if let Some(index) = index.filter(|i| matches!(self.syn_of(*i), Syn::Str)) {
                        let key = strip_quotes(self.text(index));
                        if key.len() <= 64 && !key.contains(char::is_whitespace) {
                            clause.idents.push(key.to_string());
                            self.extend_words(&mut clause.words, key);
                        }
                    }
                } else if matches!(syntax, Syn::Call) {
                    if let Some(callee) = self.callee_of(node) {
                        let text = self.text(callee);
                        if text.len() <= 120 {
                            self.extend_words(&mut clause.callees, text);
                        }
                    }
                }
            }
            // Children in order onto the stack, then reversed in place, so
            // they pop in source order (a cursor steps; `child(i)` rescans).
            let first = stack.len();
            if let Some(cursor) = cursor.as_mut() {
                stack.extend(node.children(cursor).map(|child| (child, in_string)));
            }
            stack[first..].reverse();
        }
        clause.words.sort();
        clause.words.dedup();
        clause.literals.sort();
        clause.literals.dedup();
        clause.callees.sort();
        clause.callees.dedup();
        Collected { clause }
    }
}

/// The alternatives of an or-pattern (Rust's `A | B`, Python's `case A | B:`),
/// flattened, or the pattern itself when it has none.
fn alternatives_of<'t>(pattern: Node<'t>, out: &mut Vec<Node<'t>>) {
    let inner =
        if matches!(pattern.kind(), "match_pattern" | "case_pattern") && pattern.named_child_count() == 1 {
            pattern.named_child(0).unwrap_or(pattern)
        } else {
            pattern
        };
    if !matches!(inner.kind(), "or_pattern" | "union_pattern") {
        out.push(pattern);
        return;
    }
    let mut cursor = inner.walk();
    let children: Vec<Node<'t>> =
        inner.named_children(&mut cursor).filter(|c| c.kind() != "comment").collect();
    // Literals (`"/quit" | "/exit" | "/q"`) are one set of words that the
    // subject is tested against, read together as a membership test.
    if children.iter().all(|child| child.kind().contains("literal") || child.kind() == "string") {
        out.push(pattern);
        return;
    }
    for child in children {
        alternatives_of(child, out);
    }
}

/// A Python iterable that counts: `range(...)`, `trange(...)`, or a progress
/// bar or enumeration wrapped around one (`tqdm(range(1, n + 1))`,
/// `enumerate(range(n))`).
fn python_range(text: &str) -> bool {
    let mut inner = text.trim();
    for wrapper in ["tqdm(", "enumerate(", "reversed(", "list("] {
        if let Some(rest) = inner.strip_prefix(wrapper) {
            inner = rest.trim_start();
        }
    }
    inner.starts_with("range(") || inner.starts_with("trange(") || inner.starts_with("tqdm.trange(")
}

/// Whether the code ties cancelling to a person, read once from what the
/// walk kept: an error it makes, tests for or catches (`new
/// UserAbortError()`, `error instanceof APIUserAbortError`, `except
/// UserCancelled:`), a flag it sets (`user_interrupt = True`), or a value it
/// records (`abortReason: 'user_interrupt'`, `reason: aborted ? "user" :
/// "timeout"`). Only a
/// value that is a code counts, not a message for someone to read
/// (`"Interrupted by user"`).
fn ties_cancelling_to_a_person(facts: &Facts) -> bool {
    let cancels =
        |word: &str| word.contains("cancel") || word.contains("interrupt") || word.contains("abort");
    let has = crate::words::contains_ignoring_case;
    let names_it = |name: &str| {
        has(name, "user") && (has(name, "cancel") || has(name, "interrupt") || has(name, "abort"))
    };
    let person_cancels = |words: &[String]| {
        words.iter().any(|w| w == "human") && words.iter().any(|w| w == "cancel" || w == "interrupt")
    };
    // A cancellation that gives a person as its reason (`abort("user-abort")`,
    // `new CancellationError('user')`).
    // (Not an event or message for a reader: `InterruptedEvent(message=
    // "Interrupted by user")` ties nothing.)
    let reason_a_person = |call: &CallFact| {
        let callee = call.callee_last.as_str();
        (callee.eq_ignore_ascii_case("abort")
            || callee.eq_ignore_ascii_case("cancel")
            || (callee.ends_with("Error") && cancels(&callee.to_ascii_lowercase())))
            && call.arg_literals.iter().any(|w| w == "user" || w == "human")
    };
    // A text compared in code that says the user cancelled (`result ==
    // "Operation cancelled by user."`): code, unlike a message it returns.
    // (Not an error's message: `error.message === '... aborted by user'` is
    // how a library words its own abort.)
    let compares_a_persons_cancel = |clause: &Clause| {
        clause.equality
            && clause.literals.iter().any(|w| w == "user" || w == "human")
            && clause.literals.iter().any(|w| cancels(w))
            && !clause.words.iter().any(|w| w == "error" || w == "err" || w == "exception")
    };
    facts.calls.iter().any(|call| names_it(&call.callee_last) || reason_a_person(call))
        || facts.clauses.iter().any(|clause| {
            clause.idents.iter().any(|ident| names_it(ident)) || compares_a_persons_cancel(clause)
        })
        // A name handed on that says the user cancelled
        // (`complete(.., CompletionReason::UserCancelled)`).
        // (Not an error type: `APIUserAbortError` is the client library's
        // abort, whoever asked for it.)
        || facts.passed.iter().any(|name| names_it(name) && !has(name, "error"))
        || facts.assigns.iter().any(|assign| names_it(&assign.target))
        || facts.handlers.iter().any(|handler| person_cancels(&handler.type_words))
        || facts.kwargs.iter().any(|kwarg| {
            let reason = kwarg.name_words.iter().any(|w| w == "reason" || w == "cause");
            quoted_codes(&kwarg.value_text).any(|code| {
                (reason && (code.eq_ignore_ascii_case("user") || code.eq_ignore_ascii_case("human")))
                    || names_it(code)
            })
        })
}

/// The quoted strings of a value's text that hold no space: codes such as
/// `'user_interrupt'` or `"user"`, not sentences.
fn quoted_codes(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || loop {
        let start = rest.find(['\'', '"', '`'])?;
        let quote = rest[start..].chars().next()?;
        let after = &rest[start + 1..];
        let end = after.find(quote)?;
        let inside = &after[..end];
        rest = &after[end + 1..];
        if !inside.is_empty() && inside.len() <= 40 && !inside.contains(char::is_whitespace) {
            return Some(inside);
        }
    })
}

/// A C-style `switch` (JavaScript's, Go's two kinds), whose cases a plain
/// `break` leaves.
fn is_switch(kind: &str) -> bool {
    matches!(kind, "switch_statement" | "expression_switch_statement" | "type_switch_statement")
}

/// Whether a name outside the string literals of `text` says a budget ran
/// out: `budget` and a word of running out in one name (`ErrBudget`,
/// `BudgetExceededError`), and no clock (`WallClockBudgetExceeded` is the
/// wall clock's).
fn names_budget_spent(text: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut name = String::new();
    let mut spent = false;
    let mut check = |name: &mut String| {
        if crate::words::contains_ignoring_case(name, "budget") {
            let words = canonical_words(name);
            let ran_out = words.iter().any(|w| {
                matches!(w.as_str(), "error" | "exceeded" | "exceed" | "exhausted" | "reached" | "over")
            });
            let clock = words.iter().any(|w| matches!(w.as_str(), "time" | "timeout" | "deadline"));
            spent |= ran_out && !clock;
        }
        name.clear();
    };
    for ch in text.chars() {
        match quote {
            Some(open) if ch == open => quote = None,
            Some(_) => {}
            None if matches!(ch, '"' | '\'' | '`') => {
                check(&mut name);
                quote = Some(ch);
            }
            None if ch.is_alphanumeric() || ch == '_' => name.push(ch),
            None => check(&mut name),
        }
    }
    check(&mut name);
    spent
}
