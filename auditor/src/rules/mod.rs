//! The eight exit rules, one file each, and the shared view of a clause they
//! judge.
//!
//! A clause is one operand of a condition under which a loop can be left (see
//! `facts.rs`). Each rule answers three questions: does this clause express
//! my exit, does this keyword argument configure it, does this call set it up.
//! A clause is claimed by at most one rule, in a fixed order of precedence:
//! the external and human exits first (their words are the most specific:
//! `ctx.Done()` is cancellation, not completion), then no progress, the three
//! bounds with units (time, money, failures), turn caps, and goal met last,
//! because its vocabulary (`done`, `ok`, `final`) is the loosest.

use crate::facts::{
    last_name, AssignFact, CallFact, Clause, Definition, ExitLink, Facts, HashMap, HashSet, KwargFact,
    LoopKind, Role,
};
use crate::words::split_identifier;
use crate::ExitId;

type ClauseRule = fn(&ClauseView<'_>) -> bool;
type KwargRule = fn(&KwargFact) -> bool;
type CallRule = fn(&Facts, &CallFact) -> bool;

pub(crate) mod e1_goal_met;
pub(crate) mod e2_turn_cap;
pub(crate) mod e3_budget_cap;
pub(crate) mod e4_wall_clock;
pub(crate) mod e5_no_progress;
pub(crate) mod e6_human_interrupt;
pub(crate) mod e7_error_threshold;
pub(crate) mod e8_external_event;

/// What the judge knows beyond one clause: every fact, and the counters of
/// the file by name (assignments that change a name by a constant).
pub(crate) struct Provenance<'a> {
    pub facts: &'a Facts,
    counters: HashMap<&'a str, Vec<&'a AssignFact>>,
    /// The walked loops (not frameworks or recursions) by where they start.
    loop_starts: Vec<(usize, std::ops::Range<usize>)>,
    /// The loops that sleep on their passes (a `sleep` whose innermost loop
    /// is theirs): a wait, polling until something is ready or time is up.
    waiting_loops: HashSet<usize>,
    /// The loops that retry one step of another loop (`retries_one_step`).
    retrying_loops: HashSet<usize>,
    /// The loops that read what a person types on their passes (a REPL:
    /// `input()`, `read_line`, a scanner over standard input).
    asking_loops: HashSet<usize>,
    /// The functions of the source that read what a person types (a
    /// `getPrompt()` whose body asks `rl.question(...)`): a value they
    /// return is typed, like one `input()` returns.
    input_functions: HashSet<&'a str>,
    /// The tests of the source that keep only what was not met before, in
    /// a collection that remembers it (`Facts::seen_filters`).
    kept_filters: Vec<&'a crate::facts::SeenFilter>,
    /// The functions of the source that hold such a test (`_search_round`
    /// keeps only the results whose URL it has not seen): what they return
    /// is what is new.
    fresh_functions: HashSet<&'a str>,
}

impl<'a> Provenance<'a> {
    pub(crate) fn new(facts: &'a Facts) -> Provenance<'a> {
        let mut counters: HashMap<&'a str, Vec<&'a AssignFact>> = HashMap::default();
        // (Outside any loop too: a function that calls itself counts its
        // calls, or, moved only in its `catch`, its failed calls.)
        for assign in facts.assigns.iter().filter(|a| a.step || a.reset) {
            counters.entry(last_name(&assign.target)).or_default().push(assign);
        }
        // Each name's assignments by where they are, so that a loop finds
        // its own by binary search, not by reading every one in the file.
        for assigns in counters.values_mut() {
            assigns.sort_by_key(|a| a.range.start);
        }
        let mut loop_starts: Vec<(usize, std::ops::Range<usize>)> = facts
            .loops
            .iter()
            .filter(|l| {
                !matches!(l.kind, crate::facts::LoopKind::Framework | crate::facts::LoopKind::Recursion)
            })
            .map(|l| (l.range.start, l.range.clone()))
            .collect();
        loop_starts.sort_by_key(|(start, range)| (*start, std::cmp::Reverse(range.end)));
        let waiting_loops = facts
            .calls
            .iter()
            .filter(|call| {
                crate::facts::SLEEP_CALLEES.contains(&call.callee_last.as_str())
                    // (`thread.join(timeout=0.5)`, `event.wait(timeout=1)`:
                    // a wait of its own; `", ".join(parts)` is none.)
                    || (matches!(call.callee_last.as_str(), "join" | "wait")
                        && call.arg_words.iter().any(|w| w == "timeout"))
            })
            .filter_map(|call| call.loops.first().copied())
            .collect();
        let steps = Steps::new(facts);
        let retrying_loops = facts
            .loops
            .iter()
            .enumerate()
            .filter(|(_, l)| retries_one_step(facts, l, &steps))
            .map(|(id, _)| id)
            .collect();
        // (Its name must say so: a function that also asks the person
        // something, `process_event_stream`, answers more than they typed.)
        let input_calls: Vec<&CallFact> =
            facts.calls.iter().filter(|call| INPUT_CALLS.contains(&call.callee_last.as_str())).collect();
        let reads = |name: &str| {
            crate::words::canonical_words(name)
                .iter()
                .any(|w| matches!(w.as_str(), "prompt" | "input" | "read" | "ask" | "question" | "line"))
        };
        let input_functions = if input_calls.is_empty() {
            HashSet::default()
        } else {
            facts
                .functions
                .iter()
                .filter(|function| {
                    input_calls.iter().any(|call| {
                        function.range.start <= call.range.start && call.range.end <= function.range.end
                    })
                })
                .filter_map(|function| function.name.as_deref())
                .filter(|name| reads(name))
                .collect()
        };
        // (A walk over this reply's tool calls that skips those handled
        // before, `if call.id in self.handled: continue`, keeps the calls
        // still to run: no findings.)
        let kept_filters: Vec<&crate::facts::SeenFilter> = if facts.seen_filters.is_empty() {
            Vec::new()
        } else {
            let grown = grown_collections(facts);
            facts
                .seen_filters
                .iter()
                .filter(|filter| !filter.item_words.iter().any(|w| work_or_calls(w)))
                .filter(|filter| remembers(&grown, &filter.container))
                .collect()
        };
        let fresh_functions = kept_filters
            .iter()
            .filter_map(|filter| filter.function)
            .filter_map(|function| facts.functions[function].name.as_deref())
            .collect();
        // The loops that read a line a person types: a call that reads one
        // (`input()`, `read_line`, Bash's `read`, `scanner.Scan()` of a
        // scanner over standard input), or a read that fills a name in the
        // loop (`for await (const raw of rl)`).
        let reads_a_line = |call: &CallFact| {
            reads_person_input(&call.callee_last)
                || input_functions.contains(call.callee_last.as_str())
                || call.callee == "read"
                || matches!(call.callee.as_str(), "Prompt.ask" | "Confirm.ask")
                || call.callee.rsplit_once('.').is_some_and(|(receiver, _)| {
                    let function = facts.function_at(call.range.start);
                    facts
                        .definition(receiver, call.range.start, function)
                        .is_some_and(|d| d.words.iter().any(|w| w == "stdin"))
                })
        };
        let typed_at: Vec<usize> = facts
            .aliases
            .values()
            .flatten()
            .filter(|d| d.idents.is_empty() && d.callees.iter().any(|c| c == "input"))
            .map(|d| d.at)
            .collect();
        let asking_loops = facts
            .calls
            .iter()
            .filter(|call| reads_a_line(call))
            .flat_map(|call| call.loops.iter().copied())
            .chain(
                facts
                    .loops
                    .iter()
                    .enumerate()
                    .filter_map(|(id, l)| typed_at.iter().any(|at| l.range.contains(at)).then_some(id)),
            )
            .collect();
        Provenance {
            facts,
            counters,
            loop_starts,
            waiting_loops,
            retrying_loops,
            asking_loops,
            input_functions,
            kept_filters,
            fresh_functions,
        }
    }

    /// Whether a value holds only what was not met before: made by a test
    /// that keeps the new (`fresh = [q for q in queries if q not in tried]`),
    /// or returned by a function of the source that holds one (`results =
    /// self._search_round(...)`).
    fn holds_only_new(&self, definition: &crate::facts::Definition) -> bool {
        let made = self
            .kept_filters
            .iter()
            .any(|filter| filter.at == definition.at && filter.function == definition.function)
            || definition.callees.iter().any(|callee| self.fresh_functions.contains(callee.as_str()));
        // (Not work left, `pending = [t for t in planner.get_ready_tasks()
        // if t.id not in results]`: empty, the work is done.)
        made && !definition.words.iter().any(|w| work_or_calls(w))
            && !definition
                .arg_idents
                .iter()
                .any(|ident| crate::words::canonical_words(ident).iter().any(|w| work_or_calls(w)))
    }

    /// The assignments of `name` (by its last part) that lie in `range`.
    fn counters_in(&self, name: &str, range: &std::ops::Range<usize>) -> &[&'a AssignFact] {
        let Some(assigns) = self.counters.get(last_name(name)) else { return &[] };
        let from = assigns.partition_point(|a| a.range.start < range.start);
        let to = assigns.partition_point(|a| a.range.start < range.end);
        &assigns[from..to.max(from)]
    }

    /// How a loop counts what `name` holds: `(every pass, failures only,
    /// moved in error branches only)`.
    fn counts(
        &self,
        name: &str,
        idents: &[String],
        loop_range: &std::ops::Range<usize>,
        body_start: usize,
    ) -> (bool, bool, bool) {
        let assigns = self.counters_in(name, loop_range);
        if assigns.is_empty() {
            return (false, false, false);
        }
        let inside: Vec<&&AssignFact> = assigns
            .iter()
            .filter(|a| a.range.end <= loop_range.end)
            .filter(|a| same_receiver(a, idents))
            .collect();
        // A counter moved in a walk inside the loop (`for w in finished:
        // completed += 1`) counts what the walk sees, not the loop's passes.
        // (Loops are kept sorted by where they start: only those that start
        // between this loop and the assignment can hold it.)
        let inner_loops = |a: &AssignFact| {
            let from = self.loop_starts.partition_point(|(start, _)| *start <= loop_range.start);
            let to = self.loop_starts.partition_point(|(start, _)| *start <= a.range.start);
            self.loop_starts[from..to.max(from)].iter().filter(|(_, range)| range.end <= loop_range.end)
        };
        let in_inner_walk = |a: &AssignFact| inner_loops(a).any(|(_, range)| range.contains(&a.range.start));
        let steps: Vec<&&&AssignFact> = inside.iter().filter(|a| a.step && !in_inner_walk(a)).collect();
        // A counter set back to zero in the loop counts consecutive events
        // (failures since the last success), never passes.
        // (The initializer of an inner counted loop, `for i := 0; ...`
        // inside `for i := 0; i < maxIter; i++`, declares a new name; it
        // resets nothing.)
        let initializes_inner_loop =
            |a: &AssignFact| inner_loops(a).any(|(start, _)| a.range.start <= start + 6);
        let reset =
            inside.iter().any(|a| a.reset && a.range.start >= body_start && !initializes_inner_loop(a));
        let passes = !reset && steps.iter().any(|a| !a.error_branch && a.guards.is_empty());
        let in_errors = !steps.is_empty() && steps.iter().all(|a| a.error_branch);
        // A count of tries moved only when the pass got nothing back (`if
        // action is None: retry_count += 1`): the failed attempts.
        let got_nothing = |a: &AssignFact| {
            !a.guards.is_empty()
                && a.guards.iter().all(|&guard| {
                    self.facts
                        .clauses
                        .get(guard)
                        .is_some_and(|c| (c.none_literal || c.empty_string) && !c.differs && !c.negated)
                })
        };
        // Or only when the pass went wrong (`if (isTruncated) { ...
        // recoveryAttempts++ }`, under `if err:`): the tries that failed.
        let went_wrong = |a: &AssignFact| {
            a.guards.iter().any(|&guard| {
                self.facts.clauses.get(guard).is_some_and(|c| {
                    // (A reply cut off: `finish_reason == "length"`.)
                    let cut_off = c.words.iter().any(|w| w == "reason")
                        && c.literals.iter().any(|l| l == "len" || l == "token");
                    let failed = c.words.iter().any(|w| {
                        matches!(w.as_str(), "error" | "truncated" | "invalid" | "malformed" | "unparseable")
                    });
                    // (`if error is None:` says nothing went wrong.)
                    let none_wrong = c.none_literal && !c.differs;
                    !c.negated && !none_wrong && (cut_off || failed)
                })
            })
        };
        let tries = || crate::words::canonical_words(last_name(name)).iter().any(|w| w == "attempt");
        let failed_tries =
            !steps.is_empty() && steps.iter().all(|a| got_nothing(a) || went_wrong(a)) && tries();
        let failures = in_errors || (!steps.is_empty() && reset) || failed_tries;
        (passes, failures, in_errors)
    }

    /// Whether the loop changes `name` by a constant anywhere.
    fn counted(&self, name: &str, loop_range: &std::ops::Range<usize>) -> bool {
        self.counters_in(name, loop_range).iter().any(|a| a.step && a.range.end <= loop_range.end)
    }

    /// The guards under which a loop moves the counter `name`, when every
    /// move of it sits under some (`if EXIT_SIGNAL in out: signals += 1`).
    fn counted_under(&self, name: &str, loop_range: &std::ops::Range<usize>) -> Vec<usize> {
        let inside: Vec<&&AssignFact> =
            self.counters_in(name, loop_range).iter().filter(|a| a.range.end <= loop_range.end).collect();
        let steps: Vec<&&AssignFact> = inside.into_iter().filter(|a| a.step).collect();
        if steps.is_empty() || steps.iter().any(|a| a.guards.is_empty()) {
            return Vec::new();
        }
        steps.iter().flat_map(|a| a.guards.iter().copied()).collect()
    }
}

/// Words of work to do (`pending`, `ready_tasks`, `queue`): a list of
/// those less what has a result is what is left to do, and a loop that
/// ends when it is empty has done it.
pub(crate) fn names_work(word: &str) -> bool {
    matches!(
        word,
        "task"
            | "tasks"
            | "todo"
            | "todos"
            | "pending"
            | "remaining"
            | "ready"
            | "job"
            | "jobs"
            | "queue"
            | "work"
    )
}

/// Words of work to do or of a reply's calls: a value of those less what
/// was met before is what is left to do, not what a search found anew.
fn work_or_calls(word: &str) -> bool {
    names_work(word) || matches!(word, "tool" | "call" | "calls" | "action" | "actions")
}

/// The collections the source adds to (`seen_urls.add(url)`,
/// `state.cites.push(source)`, `tried.update(fresh)`), by their last name.
fn grown_collections(facts: &Facts) -> HashSet<&str> {
    facts
        .calls
        .iter()
        .filter(|call| {
            matches!(call.callee_last.as_str(), "add" | "update" | "append" | "push" | "extend" | "insert")
        })
        .filter_map(|call| {
            let receiver = call.callee.strip_suffix(call.callee_last.as_str())?.strip_suffix('.')?;
            Some(last_name(receiver))
        })
        .collect()
}

/// Whether a collection remembers what the loop met: its name says so
/// (`seen`, `visited`, `tried`, `known`, `processed`), or the source adds to
/// it (`grown`). A fixed list of things to leave out (`disabled_tools`) is
/// no memory.
fn remembers(grown: &HashSet<&str>, container: &str) -> bool {
    let last = last_name(container);
    // (What is left of a task list once the finished are taken out,
    // `[t for t in tasks if t not in completed]`, is work left: a loop that
    // ends when it is empty is done, not stuck.)
    if crate::words::canonical_words(last).iter().any(|w| w == "done") {
        return false;
    }
    grown.contains(last)
        || split_identifier(last)
            .iter()
            .any(|w| matches!(w.as_str(), "seen" | "visited" | "tried" | "known" | "processed" | "explored"))
}

/// Calls that return what a person typed.
const INPUT_CALLS: &[&str] = &[
    "input",
    "readline",
    "question",
    "getline",
    "ReadString",
    "ReadLine",
    "Readline",
    "read_line",
    "prompt_user",
    "ask_user",
    "prompt",
    "prompt_async",
    "PromptUser",
    "promptUser",
    "AskUser",
    "askUser",
    "get_user_input",
    "getUserInput",
    "GetUserInput",
    "read_user_input",
    "readUserInput",
];

/// Whether a called name reads what a person types: one of
/// [`INPUT_CALLS`], or a name that ends in "input" and says it gets, reads,
/// waits for or prompts for it, or whose it is (`promptInput`,
/// `read_user_input`, `on_input`; not `get_input_schema`, `build_input`).
pub(crate) fn reads_person_input(callee: &str) -> bool {
    if INPUT_CALLS.contains(&callee) {
        return true;
    }
    // (The word is looked for in the text before any split into words.)
    let ends_in_input = callee.len() > 5
        && callee.is_char_boundary(callee.len() - 5)
        && callee[callee.len() - 5..].eq_ignore_ascii_case("input");
    if !ends_in_input {
        return false;
    }
    // ("user" is "human" to the words.)
    crate::words::canonical_words(callee).iter().any(|w| {
        matches!(w.as_str(), "get" | "read" | "on" | "human" | "wait" | "ask" | "prompt" | "collect")
    })
}

/// Whether a definition's value is what a person typed: a call that reads
/// it, a reader over standard input, or (`depth` levels down) a name that
/// holds one (`command = request.strip()` after `request = input()`).
fn reads_input(
    provenance: &Provenance<'_>,
    definition: &crate::facts::Definition,
    function: Option<usize>,
    depth: usize,
    top: bool,
) -> bool {
    if definition
        .callees
        .iter()
        .any(|c| reads_person_input(c) || provenance.input_functions.contains(c.as_str()))
        || definition.words.iter().any(|w| w == "stdin")
        || asks_at_the_terminal(definition)
    {
        return true;
    }
    // (The clause's own name's value carries what was typed through any
    // call it was handed to, `result = handle_command(line)`; a value
    // further back only through a call that reworks the text,
    // `strings.TrimSpace(line)`. So `result = run_dockerfile(globals)` is
    // followed to `globals`, but `globals = Globals(lang, ...)` no further:
    // a setting typed at a prompt does not make the build's answer typed.)
    if depth <= 1 {
        return false;
    }
    let handed: &[String] =
        if top || definition.callees.iter().all(|c| reworks_text(c)) { &definition.arg_idents } else { &[] };
    definition.idents.iter().take(8).chain(handed).any(|ident| {
        provenance.facts.definition(ident, definition.at, function).is_some_and(|inner| {
            inner.at < definition.at && reads_input(provenance, inner, function, depth - 1, false)
        })
    })
}

/// Whether a called name reworks a text into another text or a value of
/// it (`strip`, `strings.TrimSpace`, `toLowerCase`, `split`, `int`): what it
/// returns holds what it was handed.
fn reworks_text(callee: &str) -> bool {
    let words = split_identifier(callee);
    words.iter().any(|w| {
        matches!(
            w.as_str(),
            "strip"
                | "lstrip"
                | "rstrip"
                | "trim"
                | "lower"
                | "upper"
                | "casefold"
                | "split"
                | "fields"
                | "replace"
                | "str"
                | "string"
                | "int"
                | "atoi"
                | "parse"
                | "number"
                | "decode"
                | "normalize"
                | "sanitize"
                | "clean"
                | "chomp"
        )
    })
}

/// A question a terminal prompt library puts to the person (rich's
/// `Prompt.ask(...)` and `Confirm.ask(...)`, questionary's `.ask()`); a
/// model's `agent.ask(...)` is not one.
fn asks_at_the_terminal(definition: &crate::facts::Definition) -> bool {
    definition.callees.iter().any(|callee| callee == "ask")
        && definition.idents.iter().any(|ident| {
            matches!(ident.as_str(), "Prompt" | "Confirm" | "IntPrompt" | "FloatPrompt" | "questionary")
        })
}

/// A loop inside another loop of its function, or in a recursive function.
fn is_nested(facts: &Facts, fact: &crate::facts::LoopFact) -> bool {
    if fact.kind == crate::facts::LoopKind::Recursion {
        return false;
    }
    facts.loops.iter().any(|other| {
        other.function == fact.function
            && other.kind != crate::facts::LoopKind::Framework
            && other.range.start <= fact.range.start
            && other.range.end >= fact.range.end
            && other.range != fact.range
    }) || fact.function.is_some_and(|f| {
        // A function that recurses, or one that a loop calls each pass (a
        // step, a request with its own retries).
        facts.functions[f].recursive
            || facts.functions[f].name.as_ref().is_some_and(|name| facts.called_in_loops.contains(name))
    })
}

/// The functions that loops of the file call on their passes (outside
/// themselves, and not in a `try` that swallows what they raise), and who
/// calls each name outside any loop: found once per audit, in one pass over
/// the calls, for `retries_one_step`.
struct Steps<'a> {
    functions: HashSet<usize>,
    /// Callee name -> (where the call starts, the name of the function it
    /// sits in) for calls outside any loop.
    callers: HashMap<&'a str, Vec<(usize, &'a str)>>,
}

impl<'a> Steps<'a> {
    fn new(facts: &'a Facts) -> Steps<'a> {
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::default();
        for (index, function) in facts.functions.iter().enumerate() {
            if let Some(name) = function.name.as_deref() {
                by_name.entry(name).or_default().push(index);
            }
        }
        let mut functions = HashSet::default();
        let mut callers: HashMap<&str, Vec<(usize, &str)>> = HashMap::default();
        for call in &facts.calls {
            let Some(defined) = by_name.get(call.callee_last.as_str()) else { continue };
            if call.loops.is_empty() {
                if let Some(caller) = call.enclosing_function.as_deref() {
                    callers.entry(call.callee_last.as_str()).or_default().push((call.range.start, caller));
                }
            } else if !facts.swallows(call) {
                functions.extend(
                    defined
                        .iter()
                        .copied()
                        .filter(|&f| !facts.functions[f].range.contains(&call.range.start)),
                );
            }
        }
        // (A caller must itself be a step, and not recursive.)
        let step_names: HashSet<&str> = functions
            .iter()
            .filter(|&&f| !facts.functions[f].recursive)
            .filter_map(|&f| facts.functions[f].name.as_deref())
            .collect();
        callers.retain(|_, calls| {
            calls.retain(|(_, caller)| step_names.contains(caller));
            !calls.is_empty()
        });
        Steps { functions, callers }
    }
}

/// Whether a loop retries one step of another loop, so that its passes are
/// tries of that step: a loop inside another loop of its function (the
/// walk keeps its bound only when running out of it leaves the outer loop
/// too), or the loop of a function that loops elsewhere in the file call on
/// their passes, unless every such call is in a `try` that swallows what
/// it raises (the caller goes on). A function that calls itself is not
/// counted: its recursion may be the retry, and its loop the agent's.
fn retries_one_step(facts: &Facts, fact: &crate::facts::LoopFact, steps: &Steps<'_>) -> bool {
    if matches!(fact.kind, LoopKind::Recursion | LoopKind::Framework) {
        return false;
    }
    // (A recursion is the loop around the loops of its function that do not
    // make the recursive call: `for i := 0; i < retries; i++` before the
    // function calls itself for the next turn. A loop that makes the call
    // is the outer one, the recursion its retry.)
    let recurses_within = || {
        let name = fact.function.and_then(|f| facts.functions[f].name.as_deref());
        facts
            .calls
            .iter()
            .any(|call| Some(call.callee_last.as_str()) == name && fact.range.contains(&call.range.start))
    };
    let lexically = facts.loops.iter().any(|other| {
        other.function == fact.function
            && other.kind != LoopKind::Framework
            && (other.kind != LoopKind::Recursion || !recurses_within())
            && other.range.start <= fact.range.start
            && other.range.end >= fact.range.end
            && other.range != fact.range
    });
    if lexically {
        return true;
    }
    let Some(index) = fact.function.filter(|&f| !facts.functions[f].recursive) else { return false };
    // (`asserted_module.aforward(...)` in the loop of `aforward` itself is
    // another object's method, not a caller's loop.)
    if steps.functions.contains(&index) {
        return true;
    }
    // Or a helper of such a step, called outside any loop of its own: the
    // agent loop calls `critique(answer)`, which asks `_one_completion`,
    // whose `for attempt in range(3)` retries that request.
    let Some(name) = facts.functions[index].name.as_deref() else { return false };
    let own = &facts.functions[index].range;
    steps
        .callers
        .get(name)
        .is_some_and(|calls| calls.iter().any(|(at, caller)| !own.contains(at) && *caller != name))
}

/// Whether a counter that is a field (`result.tool_calls += 1`) is the one a
/// clause reads: its receiver is among the clause's names (not
/// `resp.tool_calls`, a field of the same name on another value).
fn same_receiver(assign: &AssignFact, idents: &[String]) -> bool {
    match assign.target.rsplit_once(['.', ':', '>']) {
        Some((receiver, _)) => {
            let receiver = receiver.trim_end_matches(['-', ':']);
            let receiver = receiver.rsplit(['.', ':', '>']).next().unwrap_or(receiver);
            idents.iter().any(|ident| ident == receiver)
        }
        None => true,
    }
}

/// A clause as a rule sees it: its words and, when `expanded`, the words of
/// the values its names hold where it reads them (in
/// `elapsed = time.time() - start` ... `if elapsed > LIMIT`, the clause reads
/// `elapsed` and `time`), and what the loop does with its names.
pub(crate) struct ClauseView<'a> {
    pub clause: &'a Clause,
    pub role: Role,
    /// The clause's words, its callees' and, expanded, its names' values'.
    pub words: HashSet<&'a str>,
    pub literals: HashSet<&'a str>,
    pub callees: HashSet<&'a str>,
    /// A name of the clause is changed by a constant on the loop's passes
    /// (`calls_left -= 1`), outside any error branch.
    pub pass_counter: bool,
    /// A name of the clause is changed by a constant only in error branches
    /// (`failures += 1` in an `except`).
    pub failure_counter: bool,
    /// Of those, one moved only in error branches (not merely set back to
    /// zero on a success).
    pub error_counter: bool,
    /// A name of the clause is assigned inside the loop from a call: this
    /// pass's result (`res := r.run(...)` ... `if res.Stopped`).
    pub this_pass: bool,
    /// A plain (local) name of the clause is assigned inside the loop: the
    /// loop decides it itself (`should_stop = True` after a tool result).
    pub assigned_in_loop: bool,
    /// A name of the clause holds what a person typed (`input()`,
    /// `rl.question()`, a scanner over standard input).
    pub from_input: bool,
    /// The clause's loop reads what a person types on its passes: a value
    /// made from a typed line there is the person's turn, not a task typed
    /// once before the run.
    pub asks_each_pass: bool,
    /// The loop sits in another loop, or in a function that recurses: a
    /// retry loop around one request rather than the agent's own loop.
    pub nested: bool,
    /// The loop sleeps on its passes: it waits for something.
    pub waits: bool,
    /// The loop retries one step of another loop (`retries_one_step`).
    pub retries_one_step: bool,
    /// A name of the clause holds what a call that sets a timeout made
    /// (`execCtx, cancel := context.WithTimeout(ctx, limit)`).
    pub made_with_timeout: bool,
    /// Of those, one made inside the clause's loop: it bounds one pass
    /// (one request's stream), not the run.
    pub timeout_made_in_pass: bool,
    /// A name of the clause holds what a model call made (`reply =
    /// llm.chat(..)`, `msg = self.agent.generate_next_message(..)`).
    pub model_made: bool,
    /// The file ties its cancellations to a person (`Facts::cancel_by_person`).
    pub cancel_by_person: bool,
    /// The exit this clause guards returns a value (`return answer`).
    pub returns_value: bool,
    /// The words include those of where the clause's values come from.
    pub expanded: bool,
    /// A name of the clause is changed by a constant somewhere in the loop,
    /// on every pass or not: it counts something (thoughts explored, tries).
    pub counted: bool,
    /// What the search that made a name of the clause looked for
    /// (`m = re.search(r"Status: success", reply)` ... `if m:`).
    pub searched: HashSet<&'a str>,
    /// The clause is written in the loop's own body (not in a function the
    /// loop calls, whose links carry that function's sense of yes and no).
    pub in_loop_body: bool,
    /// A name of the clause holds only what this pass found that was not
    /// met before (`Provenance::holds_only_new`).
    pub only_new: bool,
    /// The clause holds a field of the object against a word of stopping
    /// (`this.state != "stop"`), and nothing in the loop sets that field:
    /// what stops it is set elsewhere.
    pub stop_state_from_outside: bool,
}

impl<'a> ClauseView<'a> {
    pub(crate) fn new(
        provenance: &Provenance<'a>,
        clause: &'a Clause,
        role: Role,
        loop_id: Option<usize>,
        expanded: bool,
    ) -> ClauseView<'a> {
        let facts = provenance.facts;
        let mut words: HashSet<&'a str> = clause.words.iter().map(String::as_str).collect();
        let function = facts.function_at(clause.range.start);
        let loop_fact = loop_id.and_then(|id| facts.loops.get(id));
        let mut this_pass = false;
        let mut pass_counter = false;
        let mut failure_counter = false;
        let mut error_counter = false;
        let mut assigned_in_loop = false;
        let mut from_input = false;
        let mut counted = false;
        let mut searched: HashSet<&'a str> = HashSet::default();
        let mut made_with_timeout = false;
        let mut timeout_made_in_pass = false;
        let mut model_made = false;
        let mut only_new = false;
        let reads_a_signal = clause.idents.iter().any(|ident| ident == "signal");
        // Whether what was set up at `at` is set up anew on each pass of a
        // loop around the clause: a stream's loop within one pass of the
        // agent's. (Not a walk over tasks that gives each its own time,
        // `for task in tasks: ctx = WithTimeout(..)`: that bounds the run
        // of each task.)
        let set_in_pass = |at: usize| {
            facts.loops.iter().any(|l| {
                l.kind.is_written()
                    && !l.collection
                    && l.range.contains(&at)
                    && l.range.contains(&clause.range.start)
            })
        };
        // (A case's alternative was typed when the value the case tests was
        // and the loop reads a line each pass: `match input { "/exit" =>
        // break }`; not a model's stop reason for a task typed once.)
        let asks_each_pass = loop_id.is_some_and(|id| provenance.asking_loops.contains(&id));
        for ident in clause.subject_idents.iter().filter(|_| asks_each_pass) {
            if let Some(definition) = facts.definition(ident, clause.range.start, function) {
                from_input |= reads_input(provenance, definition, function, 3, true);
            }
        }
        for ident in &clause.idents {
            // (`controller` of `!controller.signal.aborted`, aborted by a
            // timer; a timer set in a pass times one request.)
            let timers = if reads_a_signal && ident != "signal" { clock_aborts(facts, ident) } else { None };
            if let Some(timers) = timers {
                made_with_timeout = true;
                timeout_made_in_pass |= timers.iter().any(|timer| set_in_pass(timer.start));
            }
            if let Some(definition) = facts.definition(ident, clause.range.start, function) {
                searched.extend(definition.searched.iter().map(String::as_str));
                // (A context made in another function, `ctx` of a helper
                // that bounds one batch of tool calls, is not this one.)
                let with_timeout = definition.function == function
                    && definition.callees.iter().any(|callee| {
                        matches!(
                            callee.as_str(),
                            "WithTimeout" | "WithTimeoutCause" | "timeout" | "with_timeout"
                        )
                    });
                made_with_timeout |= with_timeout;
                // (`signal = runController.signal`, read as `signal.aborted`:
                // the timer that aborts the controller is the signal's.)
                if reads_a_signal && ident == "signal" && definition.function == function {
                    for source in &definition.idents {
                        if let Some(timers) = clock_aborts(facts, source) {
                            made_with_timeout = true;
                            timeout_made_in_pass |= timers.iter().any(|timer| set_in_pass(timer.start));
                        }
                    }
                }
                model_made |= definition.model_made;
                only_new |= !provenance.kept_filters.is_empty() && provenance.holds_only_new(definition);
                timeout_made_in_pass |= with_timeout && set_in_pass(definition.at);
                if expanded {
                    words.extend(definition.words.iter().map(String::as_str));
                    // A name copied from another (`all_calls = text_calls`)
                    // holds what that one held where it was copied.
                    if let [copied] = definition.idents.as_slice() {
                        if definition.callees.is_empty() && copied != ident {
                            if let Some(source) = facts.definition(copied, definition.at, function) {
                                words.extend(source.words.iter().map(String::as_str));
                            }
                        }
                    }
                }
                from_input |= reads_input(provenance, definition, function, 3, true);
                if let Some(loop_fact) = loop_fact {
                    let inside = loop_fact.range.contains(&definition.at);
                    this_pass |= !definition.callees.is_empty() && inside;
                    assigned_in_loop |= inside && !ident.contains('.');
                }
            }
            if let Some(loop_fact) = loop_fact {
                let (passes, failures, in_errors) =
                    provenance.counts(ident, &clause.idents, &loop_fact.range, loop_fact.body_start);
                pass_counter |= passes;
                failure_counter |= failures;
                error_counter |= in_errors;
                counted |= provenance.counted(ident, &loop_fact.range);
            }
        }
        words.extend(clause.callees.iter().map(String::as_str));
        let stop_state_from_outside = clause.equality
            && clause
                .literals
                .iter()
                .any(|l| matches!(l.as_str(), "stop" | "cancel" | "abort" | "halt" | "kill"))
            && loop_fact.is_some_and(|l| {
                // (Fields: no local of the name in the loop's function.)
                let names: Vec<&String> =
                    clause.idents.iter().filter(|i| !matches!(i.as_str(), "self" | "this")).collect();
                let local = |name: &str| {
                    facts.aliases.get(name).is_some_and(|ds| ds.iter().any(|d| d.function == l.function))
                };
                // (Nor set by the loop's own pass: in its body, or in a
                // function it calls, `self.status = "stop"` in `step()`.)
                let set_by_the_pass = |a: &AssignFact| {
                    l.range.contains(&a.range.start)
                        || facts
                            .function_at(a.range.start)
                            .and_then(|f| facts.functions[f].name.as_deref())
                            .is_some_and(|name| facts.called_in_loops.contains(name))
                };
                !names.is_empty()
                    && names.len() <= 2
                    && !names.iter().any(|name| local(name))
                    && !facts.assigns.iter().any(|a| {
                        names.iter().any(|name| last_name(&a.target) == name.as_str()) && set_by_the_pass(a)
                    })
            });
        ClauseView {
            clause,
            role,
            words,
            literals: clause.literals.iter().map(String::as_str).collect(),
            callees: clause.callees.iter().map(String::as_str).collect(),
            pass_counter,
            failure_counter: failure_counter && !pass_counter,
            error_counter: error_counter && !pass_counter,
            this_pass,
            assigned_in_loop,
            from_input,
            asks_each_pass,
            nested: loop_fact.is_some_and(|l| is_nested(facts, l)),
            waits: loop_id.is_some_and(|id| provenance.waiting_loops.contains(&id)),
            retries_one_step: loop_id.is_some_and(|id| provenance.retrying_loops.contains(&id)),
            made_with_timeout,
            timeout_made_in_pass,
            model_made,
            cancel_by_person: facts.cancel_by_person,
            in_loop_body: loop_fact.is_some_and(|l| l.range.contains(&clause.range.start)),
            returns_value: false,
            expanded,
            counted,
            searched,
            only_new,
            stop_state_from_outside,
        }
    }

    pub(crate) fn has(&self, word: &str) -> bool {
        self.words.contains(word)
    }

    pub(crate) fn any(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.words.contains(*word))
    }

    pub(crate) fn any_literal(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.literals.contains(*word))
    }

    pub(crate) fn any_callee(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.callees.contains(*word))
    }

    /// Compares anything at all (`<`, `==`, `in`).
    pub(crate) fn compares(&self) -> bool {
        self.clause.ordering || self.clause.equality || self.clause.membership
    }

    /// Tests for nothing: `not x`, `x is None`, `len(x) == 0`, `x.empty()`.
    pub(crate) fn tests_nothing(&self) -> bool {
        let clause = self.clause;
        clause.negated
            || clause.none_literal
            || (clause.zero && (clause.equality || clause.ordering))
            || self.has("empty")
    }
}

/// Words that count iterations of a loop.
pub(crate) const COUNT_WORDS: &[&str] = &["iter", "turn", "step", "round", "attempt", "depth", "recursion"];

/// The exit a clause expresses, if any: judged on its own words first, and
/// only when they say nothing on the words of where its values come from
/// (`history` in `rounds = len(history)` must not outvote `rounds` itself).
pub(crate) fn classify_link(provenance: &Provenance<'_>, link: &ExitLink) -> Option<ExitId> {
    let id = classify_link_words(provenance, link)?;
    // An arm for the reply's answer (`ChatOutcome::Text(text) =>`) says the
    // work is done only where it is the way out's own guard: an exit
    // nested in it (`if line == "/quit" { break }`) is another's.
    if id == ExitId::E1
        && link.depth > 0
        && provenance.facts.clauses.get(link.clause).is_some_and(|c| !c.arm_variant.is_empty())
    {
        return None;
    }
    // Tokens weighed inside `_check_and_compact()` decide when to shorten
    // the history, and the loop goes on: not a budget.
    if id == ExitId::E3
        && (link.via.as_ref().is_some_and(|via| calls_context_management(provenance.facts, via))
            || in_context_management(provenance.facts, link.clause)
            || compacts_before_leaving(provenance.facts, link))
    {
        return None;
    }
    if id == ExitId::E3 && budget_of_passes(provenance, link) {
        return Some(ExitId::E2);
    }
    Some(id)
}

/// Whether a budget the clause names alone (`if (budget.exhausted)`) is
/// one of passes, by where it comes from (`budget = new
/// IterationBudget(maxIterations)`) with no word of money or tokens: a turn
/// cap.
fn budget_of_passes(provenance: &Provenance<'_>, link: &ExitLink) -> bool {
    let Some(clause) = provenance.facts.clauses.get(link.clause) else { return false };
    let money = |w: &str| matches!(w, "cost" | "token" | "usd" | "credit" | "money");
    if !clause.words.iter().any(|w| w == "budget") || clause.words.iter().any(|w| money(w)) {
        return false;
    }
    let view = ClauseView::new(provenance, clause, link.role, Some(link.loop_id), true);
    view.any(COUNT_WORDS) && !view.words.iter().any(|w| money(w))
}

/// Whether the clause sits in a function named for keeping a context short
/// (`while count_tokens(messages) > limit: messages.pop(1)` in
/// `trim_messages`): that loop drops history, it is no agent's budget.
fn in_context_management(facts: &Facts, clause: usize) -> bool {
    let Some(clause) = facts.clauses.get(clause) else { return false };
    facts.function_at(clause.range.start).and_then(|f| facts.functions[f].name.as_deref()).is_some_and(
        |name| crate::words::canonical_words(name).iter().any(|w| e3_budget_cap::manages_context(w)),
    )
}

/// Whether the context is shortened between the check and the way out
/// (`if apiErr.IsContextOverflow() { if err := DoCompact(..); err != nil {
/// return err } }`): the loop compacts and goes on, and what leaves is the
/// compaction failing.
fn compacts_before_leaving(facts: &Facts, link: &ExitLink) -> bool {
    let Some(clause) = facts.clauses.get(link.clause) else { return false };
    // (When nothing nearer decides, giving up after a compaction that did
    // not help is the budget's way out: `if (summarized) continue; return`.)
    link.role == Role::Guard
        && link.depth > 0
        && calls_context_management(facts, &(clause.range.end..link.site.start))
}

/// Whether a call within `via` names the keeping of a context short.
fn calls_context_management(facts: &Facts, via: &std::ops::Range<usize>) -> bool {
    facts.calls.iter().filter(|call| call.range.start >= via.start && call.range.end <= via.end).any(|call| {
        crate::words::canonical_words(&call.callee_last).iter().any(|w| e3_budget_cap::manages_context(w))
    })
}

/// Whether the clause compares with a bound that is no bound: infinity
/// written out, or a name whose values are (`MAX_STEPS = Infinity`,
/// `max_turns = math.inf`, `limit = sys.maxsize`).
fn capped_at_infinity(provenance: &Provenance<'_>, clause: &Clause) -> bool {
    let endless = |ident: &str| {
        matches!(
            ident,
            "Infinity" | "math.inf" | "sys.maxsize" | "Number.POSITIVE_INFINITY" | "Number.MAX_SAFE_INTEGER"
        )
    };
    // (The value must be the endless constant alone: `opts.maxSteps ??
    // Infinity` is a cap when the caller gives one.)
    let only_endless = |d: &crate::facts::Definition| match d.idents.as_slice() {
        [one] => endless(one),
        [a, b] => (a == "math" && b == "inf") || (a == "inf" && b == "math"),
        _ => false,
    };
    let function = provenance.facts.function_at(clause.range.start);
    clause.idents.iter().any(|ident| {
        endless(ident)
            || provenance.facts.definition(ident, clause.range.start, function).is_some_and(only_endless)
    })
}

fn classify_link_words(provenance: &Provenance<'_>, link: &ExitLink) -> Option<ExitId> {
    let clause = provenance.facts.clauses.get(link.clause)?;
    if stream_end(provenance.facts, clause) {
        return None;
    }
    let (role, loop_id) = (link.role, Some(link.loop_id));
    let returns_value = provenance.facts.returns_value(&link.site);
    let mut own = ClauseView::new(provenance, clause, role, loop_id, false);
    own.returns_value = returns_value;
    // (Nor do the words of where its values come from make one of it.)
    if e2_turn_cap::counts_workers(&own) && matches!(role, Role::LoopCondition | Role::RangeBound) {
        return None;
    }
    let by_name = classify(&own);
    // A cap set to no cap at all (`const MAX_AGENT_STEPS = Infinity` ...
    // `while (step < MAX_AGENT_STEPS)`) never ends the loop.
    if by_name == Some(ExitId::E2) && clause.ordering && capped_at_infinity(provenance, clause) {
        return None;
    }
    // A stop flag that the loop's own pass turns on, two calls down, is no
    // stop from outside: its guards decide.
    if clause.set_in_pass && by_name == Some(ExitId::E8) {
        return None;
    }
    // A flag named for stopping (`aborted`, `stop`) says only that the loop
    // stopped; the condition that turned it on says why. So does one named
    // for completion (`done`, or the answer it forces: `force_answer =
    // True` under `if step == max_steps or time.time() - start >
    // max_time`) when every condition that turns it on names a bound: the
    // bound ran out.
    if by_name.is_none_or(|id| id.kind() == crate::ExitKind::External) {
        if let Some(id) = flag_set_in_the_loop(provenance, clause, link) {
            return Some(id);
        }
    } else if by_name == Some(ExitId::E1) {
        if let Some(id) = flag_set_in_the_loop(provenance, clause, link) {
            if id.kind() == crate::ExitKind::Bound {
                return Some(id);
            }
        }
    }
    // A counter named for failures that the loop moves only when a pass
    // made no progress (`if check_progress; then fails=0; else
    // fails=$((fails+1)); fi` ... `[[ $fails -ge 3 ]]`) counts stalls, not
    // errors: what it counts decides.
    if by_name == Some(ExitId::E7) && (clause.ordering || clause.equality) {
        if let Some(id) = counted_as(provenance, clause, link) {
            if id == ExitId::E5 {
                return Some(id);
            }
        }
    }
    // A stop or go-on read by its own name as the work's, but made by a hook
    // the caller plugged in (`modified = await this.lifecycles.onStart(..)`
    // ... `if (modified.stop) return`): the hook asked.
    // (Only a stop or a go-on can be a hook's answer: the expanded view is
    // built for nothing else.)
    if by_name == Some(ExitId::E1)
        && own.any(&["stop", "continue", "proceed"])
        && clause.idents.iter().any(|ident| provenance.facts.aliases.contains_key(ident))
    {
        let expanded = ClauseView::new(provenance, clause, role, loop_id, true);
        if e8_external_event::answered_by_hook(&expanded) {
            return Some(ExitId::E8);
        }
    }
    // A person's go-ahead by its own words whose value a model made
    // (`user_response = user_simulator.generate(history)` ... `if
    // user_response == "done"`): the simulated user is a model, and its
    // "done" says the work is done.
    if by_name == Some(ExitId::E6)
        && clause.equality
        && own.has("human")
        && !clause.literals.is_empty()
        && values_mention(provenance, clause, &["simulator", "simulate", "simulated", "llm", "model"])
    {
        return Some(ExitId::E1);
    }
    // A decision read by its own name as the work's stop, whose value the
    // loop waited for (`decision = await
    // this.#waitForLoopRecoveryDecision(..)` ... `decision === "stop"`): the
    // loop paused for someone's choice, a person's.
    if by_name == Some(ExitId::E1)
        && clause.equality
        && !clause.differs
        && own.has("decision")
        && own.any_literal(&["stop"])
        && waited_for_in_the_function(provenance, clause)
    {
        return Some(ExitId::E6);
    }
    // An approval read by its own name as a person's, whose value a
    // model's review gave (`const isApproved = isApprovedReview(review)`
    // after `review = await runCodexReview()`): the reviewer's verdict.
    // (Not an approval asked of a person through a review, `approved =
    // await confirmReview(plan)`, nor one read as refused.)
    // ("Judge" and "evaluator" read as "critic".)
    if by_name == Some(ExitId::E6)
        && own.has("approve")
        && !clause.negated
        && values_mention(provenance, clause, &["critic", "evaluate"])
    {
        let expanded = ClauseView::new(provenance, clause, role, loop_id, true);
        if !expanded.from_input
            && !expanded.any(&["human", "input", "ask", "hitl", "confirm", "prompt", "manual"])
        {
            return Some(ExitId::E1);
        }
    }
    // A goal or a bound read by its bare names, whose values say what they
    // measure (asked of the values first: an expanded view costs more):
    // work left that is the time left (`remaining = deadline -
    // time.time()` ... `if remaining <= 0`) is the wall clock's; a cap
    // over spend (`let total = input_tokens + output_tokens` ... `if total
    // > max`) is the budget's.
    let rereadings: [(ExitId, &[&str], ExitId, ClauseRule); 2] = [
        (ExitId::E1, &["deadline", "time"], ExitId::E4, e4_wall_clock::clause_matches),
        (ExitId::E2, &["token", "cost"], ExitId::E3, e3_budget_cap::clause_matches),
    ];
    for (read_as, measures, id, rule) in rereadings {
        if by_name == Some(read_as) && clause.ordering && values_mention(provenance, clause, measures) {
            let expanded = ClauseView::new(provenance, clause, role, loop_id, true);
            if expanded.any(measures) && rule(&expanded) {
                return Some(id);
            }
        }
    }
    // A decision whose name says nothing of why (`if d.Stop`, a hook's
    // answer, read as a stop from outside or as the work's own stop),
    // taken by a way out that says the budget ran out (`return ...,
    // ErrBudget`): the budget's. (Not a check of the work that names it:
    // `if done: ...`.)
    let names_the_work = || own.any(&["done", "goal", "final", "answer", "pass", "tool"]);
    if provenance.facts.budget_exit_sites.contains(&link.site.start)
        && by_name.is_none_or(|id| id == ExitId::E8 || (id == ExitId::E1 && !names_the_work()))
    {
        return Some(ExitId::E3);
    }
    if let Some(id) = by_name {
        return Some(id);
    }
    // The words of where its values come from, when it has any.
    if clause.idents.iter().any(|ident| provenance.facts.aliases.contains_key(ident)) {
        let mut expanded = ClauseView::new(provenance, clause, role, loop_id, true);
        expanded.returns_value = returns_value;
        if expanded.words.len() > own.words.len() {
            if let Some(id) = classify(&expanded) {
                return Some(id);
            }
        }
    }
    // A counter of events compared with a threshold counts what its guards
    // see: completion signals (E1), repeats (E5).
    if clause.ordering || clause.equality {
        if let Some(id) = counted_as(provenance, clause, link) {
            return Some(id);
        }
    }
    // A file the loop's own prompt tells the agent to write once the work is
    // done (`create stories/status.md when all tests pass` ... `if [ -f
    // stories/status.md ]; then exit 0`): the agent says it has finished.
    if prompted_marker_file(provenance.facts, clause, link.loop_id) {
        return Some(ExitId::E1);
    }
    // A flag that something outside the loop sets, with no words that say
    // why, is a stop from outside.
    clause.set_outside.then_some(ExitId::E8)
}

/// Whether a name of the clause was given, in the clause's own function
/// and before it, the value of a wait (`decision = await
/// this.#waitForLoopRecoveryDecision(..)`), not of a model's run
/// (`waitForRunResult`, `waitForCompletion`).
fn waited_for_in_the_function(provenance: &Provenance<'_>, clause: &Clause) -> bool {
    let facts = provenance.facts;
    let function = facts.function_at(clause.range.start);
    clause.idents.iter().any(|ident| {
        facts.definition(ident, clause.range.start, function).is_some_and(|d| {
            let has = |w: &str| d.words.iter().any(|x| x == w);
            d.function == function
                && has("wait")
                && !["run", "completion", "result", "model"].iter().any(|w| has(w))
        })
    })
}

/// Whether a value given to a name of the clause holds one of `words`
/// (its definitions' words, without the expanded view's cost).
fn values_mention(provenance: &Provenance<'_>, clause: &Clause, words: &[&str]) -> bool {
    clause.idents.iter().any(|ident| {
        provenance.facts.aliases.get(ident).is_some_and(|definitions| {
            definitions.iter().any(|d| d.words.iter().any(|w| words.contains(&w.as_str())))
        })
    })
}

/// `if (done) break` after `const { done, value } = await reader.read()`
/// (or `.next()`, or `result.done` of such a call): the iterator protocol
/// saying that a stream or a generator read one item a pass has no more.
/// The loop ends when its input does, as a `for` over that input would: it
/// says nothing of the work, so no exit.
fn stream_end(facts: &Facts, clause: &Clause) -> bool {
    // (`result.done` is read as one name or as its two parts.)
    let base = match clause.idents.as_slice() {
        [ident] => match ident.rsplit_once('.') {
            Some((base, "done")) => base,
            None if ident == "done" => ident.as_str(),
            _ => return false,
        },
        [base, done] if done == "done" => base.as_str(),
        _ => return false,
    };
    let function = facts.function_at(clause.range.start);
    let Some(read) = facts
        .definition(base, clause.range.start, function)
        .filter(|d| matches!(d.callees.as_slice(), [only] if only == "read" || only == "next"))
    else {
        return false;
    };
    // (A generator of an agent's run, `iterator = app.evo.run({goal})`,
    // yields its steps: its end is the run's, which ends when the work is
    // done.)
    // (Not a command's output, `sandbox.runCommand(cmd)`, nor a cursor of
    // `db.execute(sql)`: a plain `run`, or a run of an agent or a task.)
    let runs_an_agent = |d: &Definition| {
        d.callees.iter().any(|callee| {
            let name = last_name(callee);
            let words = split_identifier(name);
            let runs = words.iter().any(|w| matches!(w.as_str(), "run" | "solve" | "execute"));
            let of_work = words.iter().any(|w| matches!(w.as_str(), "agent" | "goal" | "task" | "objective"));
            matches!(name, "run" | "solve") || (runs && of_work)
        })
    };
    !read.idents.iter().any(|source| facts.definition(source, read.at, function).is_some_and(runs_an_agent))
}

/// What a counter of the clause counts, when every move of it sits under
/// guards that all name one exit (`if EXIT_SIGNAL in out: signals += 1`).
fn counted_as(provenance: &Provenance<'_>, clause: &Clause, link: &ExitLink) -> Option<ExitId> {
    let loop_range = provenance.facts.loops.get(link.loop_id).map(|l| l.range.clone())?;
    for ident in &clause.idents {
        let guards = provenance.counted_under(ident, &loop_range);
        let kinds: Vec<Option<ExitId>> = guards
            .iter()
            .filter_map(|g| provenance.facts.clauses.get(*g))
            // (Bash's `if check; then` holds a clause of its own for `;`.)
            .filter(|guard| {
                !(guard.words.is_empty() && guard.literals.is_empty() && guard.callees.is_empty())
            })
            .map(|guard| {
                classify(&ClauseView::new(provenance, guard, Role::Guard, Some(link.loop_id), false))
            })
            .collect();
        if let Some(Some(first)) = kinds.first() {
            if kinds.iter().all(|k| *k == Some(*first)) {
                return Some(*first);
            }
        }
    }
    None
}

/// `if aborted: break` after `aborted = True` under `if
/// status["should_stop"]:` in the same loop (a walk over this reply's tool
/// calls, say): the flag says what the condition that turned it on says.
/// Only a plain local flag read as it is, every one of whose settings in
/// the loop sits under a condition that names an exit (and the same one).
fn flag_set_in_the_loop(provenance: &Provenance<'_>, clause: &Clause, link: &ExitLink) -> Option<ExitId> {
    flag_set_in_the_loop_says(provenance, clause, link).first().copied()
}

/// Every exit the conditions that turn a flag on name, the first first:
/// `force_answer = True` under `if step == max_steps or time.time() -
/// start > max_time` is a turn cap and a deadline. Empty when the flag is
/// no such flag, or when its settings name different exits first; the
/// others of each setting are all kept.
pub(crate) fn flag_set_in_the_loop_says(
    provenance: &Provenance<'_>,
    clause: &Clause,
    link: &ExitLink,
) -> Vec<ExitId> {
    let facts = provenance.facts;
    let [name] = clause.idents.as_slice() else { return Vec::new() };
    if link.role != Role::Guard || clause.negated || !clause.callees.is_empty() || name.contains('.') {
        return Vec::new();
    }
    let Some(range) = facts.loops.get(link.loop_id).map(|l| &l.range) else { return Vec::new() };
    let sets = facts.loop_flag_sets.iter().filter(|set| {
        &set.name == name && range.contains(&set.range.start) && set.range.end <= clause.range.start
    });
    let says = |group: &Vec<usize>| -> Vec<ExitId> {
        let mut ids = Vec::new();
        for guard in group.iter().filter_map(|g| facts.clauses.get(*g)) {
            let own = ClauseView::new(provenance, guard, Role::Guard, Some(link.loop_id), false);
            let id = classify(&own).or_else(|| {
                let expanded = ClauseView::new(provenance, guard, Role::Guard, Some(link.loop_id), true);
                (expanded.words.len() > own.words.len()).then(|| classify(&expanded)).flatten()
            });
            if let Some(id) = id.filter(|id| !ids.contains(id)) {
                ids.push(id);
            }
        }
        ids
    };
    let mut said: Vec<ExitId> = Vec::new();
    for set in sets {
        // The nearest condition that says anything decides, as it does for
        // an exit (`if verdict.stuck: if verdict.level == "critical": stop
        // = True`: the loop stops because it is stuck).
        let Some(ids) = std::iter::once(&set.guards).chain(&set.outer).map(says).find(|ids| !ids.is_empty())
        else {
            return Vec::new();
        };
        if said.first().is_some_and(|first| Some(first) != ids.first()) {
            return Vec::new();
        }
        for id in ids {
            if !said.contains(&id) {
                said.push(id);
            }
        }
    }
    said
}

/// Whether the clause finds that a file exists whose name (two words or
/// more) the loop writes, whole, into the text it hands a command or a call
/// on its passes (the agent's prompt).
fn prompted_marker_file(facts: &Facts, clause: &Clause, loop_id: usize) -> bool {
    let checks_file = clause.callees.iter().any(|c| matches!(c.as_str(), "exists" | "isfile" | "is_file"));
    if !checks_file || clause.negated || clause.literals.len() < 2 {
        return false;
    }
    let Some(range) = facts.loops.get(loop_id).map(|l| l.range.clone()) else { return false };
    facts.calls.iter().any(|call| {
        call.range.start >= range.start
            && call.range.end <= range.end
            && !call.range.contains(&clause.range.start)
            && call.arg_literals.len() > clause.literals.len() + 4
            && clause.literals.iter().all(|word| call.arg_literals.contains(word))
    })
}

/// The exit a clause expresses, if any. Handler clauses (an exception type)
/// speak for the exits whose errors are raised to end a loop: a
/// cancellation, an interrupt, a budget or a deadline running out, a retry
/// limit; `except Timeout:` of one request is not a wall clock.
pub(crate) fn classify(view: &ClauseView<'_>) -> Option<ExitId> {
    if view.role == Role::Handler {
        // `except (KeyboardInterrupt, SystemExit)` is the person's Ctrl-C.
        let handlers: [(ExitId, ClauseRule); 6] = [
            (ExitId::E6, e6_human_interrupt::clause_matches),
            (ExitId::E8, e8_external_event::clause_matches),
            (ExitId::E3, e3_budget_cap::handler_matches),
            (ExitId::E4, e4_wall_clock::handler_matches),
            (ExitId::E5, e5_no_progress::handler_matches),
            (ExitId::E7, e7_error_threshold::handler_matches),
        ];
        return handlers.iter().find(|(_, matches)| matches(view)).map(|(id, _)| *id);
    }
    // A walk over a plan, and an attempt that got through, are made by the
    // walk for goal met alone; a retry around one request that a loop
    // calls each pass is not the agent's goal.
    if view.clause.walks_plan {
        return Some(ExitId::E1);
    }
    // (In a loop that retries one request, getting through is that
    // request's success, not the work done.)
    if view.clause.attempt_succeeded {
        return (!view.nested && !view.retries_one_step).then_some(ExitId::E1);
    }
    if e8_external_event::clause_matches(view) {
        return Some(ExitId::E8);
    }
    if e6_human_interrupt::clause_matches(view) {
        return Some(ExitId::E6);
    }
    // A wait inside a pass (a helper the loop calls, or an inner loop) that
    // sleeps until something is ready or its time is up ends that wait, not
    // the agent's loop: its clock is one step's timeout.
    if view.nested && view.waits && e4_wall_clock::clause_matches(view) {
        return None;
    }
    let ordered: [(ExitId, ClauseRule); 6] = [
        (ExitId::E5, e5_no_progress::clause_matches),
        (ExitId::E4, e4_wall_clock::clause_matches),
        (ExitId::E3, e3_budget_cap::clause_matches),
        (ExitId::E7, e7_error_threshold::clause_matches),
        (ExitId::E2, e2_turn_cap::clause_matches),
        (ExitId::E1, e1_goal_met::clause_matches),
    ];
    let said = if e1_goal_met::passes_without_action(view) {
        Some(ExitId::E1)
    } else {
        ordered.iter().find(|(_, matches)| matches(view)).map(|(id, _)| *id)
    };
    match said {
        // The branch raises a detector's flag before it leaves
        // (`loopDetected = true; break`): no progress, whatever the guard
        // asked of the work or of an action chosen in the settings. (A
        // bound beside the detector in the guard, `turn >= maxTurns ||
        // looping`, stays the bound it names.)
        None | Some(ExitId::E1) if view.clause.marks_stall => Some(ExitId::E5),
        // Nothing else in the condition, and the branch says the work is
        // done before it leaves (`ExitReason = "final_answer"; break`).
        None => view.clause.marks_done.then_some(ExitId::E1),
        said => said,
    }
}

/// The words of a keyword argument's name.
pub(crate) fn name_words(kwarg: &KwargFact) -> &[String] {
    &kwarg.name_words
}

/// A keyword value that switches a bound off rather than setting one.
pub(crate) fn is_unbounded_value(kwarg: &KwargFact) -> bool {
    let value = kwarg.value_text.trim();
    matches!(
        value,
        "None"
            | "null"
            | "undefined"
            | "nil"
            | "0"
            | "-1"
            | "Infinity"
            | "math.inf"
            | "sys.maxsize"
            | "float('inf')"
            | "float(\"inf\")"
            | "Number.POSITIVE_INFINITY"
            | "Number.MAX_SAFE_INTEGER"
    )
}

/// The exit a keyword argument (or configuration key) sets up, if any.
pub(crate) fn classify_kwarg(kwarg: &KwargFact) -> Option<ExitId> {
    if is_unbounded_value(kwarg) {
        return None;
    }
    let rules: [(ExitId, KwargRule); 8] = [
        (ExitId::E8, e8_external_event::kwarg_matches),
        (ExitId::E6, e6_human_interrupt::kwarg_matches),
        (ExitId::E4, e4_wall_clock::kwarg_matches),
        (ExitId::E3, e3_budget_cap::kwarg_matches),
        (ExitId::E5, e5_no_progress::kwarg_matches),
        (ExitId::E7, e7_error_threshold::kwarg_matches),
        (ExitId::E2, e2_turn_cap::kwarg_matches),
        (ExitId::E1, e1_goal_met::kwarg_matches),
    ];
    rules.iter().find(|(_, matches)| matches(kwarg)).map(|(id, _)| *id)
}

/// The exits a call sets up on its own (termination conditions, signal
/// handlers, wrapping timeouts).
pub(crate) fn classify_call(facts: &Facts, call: &CallFact) -> Vec<ExitId> {
    let rules: [(ExitId, CallRule); 8] = [
        (ExitId::E1, e1_goal_met::call_matches),
        (ExitId::E2, e2_turn_cap::call_matches),
        (ExitId::E3, e3_budget_cap::call_matches),
        (ExitId::E4, e4_wall_clock::call_matches),
        (ExitId::E5, e5_no_progress::call_matches),
        (ExitId::E6, e6_human_interrupt::call_matches),
        (ExitId::E7, e7_error_threshold::call_matches),
        (ExitId::E8, e8_external_event::call_matches),
    ];
    rules.iter().filter(|(_, matches)| matches(facts, call)).map(|(id, _)| *id).collect()
}

/// Whether a retry decorator's settings count: a decorator on a function that
/// the loop calls once per turn bounds one request, not the loop.
pub(crate) fn decorator_counts(facts: &Facts, loop_id: Option<usize>) -> bool {
    !decorates_a_step(facts, loop_id)
}

/// Whether a retry decorator sits on a function that the file's loops call
/// on their passes, directly or through a helper they call (`@retry(stop=
/// stop_after_attempt(5))` on `_make_model_call`): it retries one request of
/// each pass, and running out of tries raises out of the pass.
pub(crate) fn decorates_a_step(facts: &Facts, loop_id: Option<usize>) -> bool {
    let Some(name) = loop_id.and_then(|id| facts.loops[id].function_name.as_deref()) else { return false };
    facts.called_in_loops.contains(name)
        || facts
            .calls
            .iter()
            .filter(|call| call.callee_last == name && call.loops.is_empty())
            .filter_map(|call| call.enclosing_function.as_deref())
            .any(|caller| caller != name && facts.called_in_loops.contains(caller))
}

/// A listener registered on an emitter (`rl.on("close", ...)`,
/// `process.stdin.once("keypress", ...)`, `addEventListener`).
pub(crate) fn is_key_event_registration(call: &CallFact) -> bool {
    matches!(call.callee_last.as_str(), "on" | "once" | "addListener" | "addEventListener")
        && call.callee != "process.on"
        && call.callee != "process.once"
}

/// The timers that abort the controller `holder` (`controller`,
/// `this.abortController`), when a timer, and only a timer, aborts it:
/// `setTimeout(() => controller.abort(), timeoutMs)`, its signal a
/// deadline, not a stop from outside. (Not a timer whose callback does more
/// than abort, `setInterval(() => { if (existsSync(STOP)) ... })` polling
/// for a stop; not one set from a listener, a SIGINT handler deferring its
/// abort.)
pub(crate) fn clock_aborts(facts: &Facts, holder: &str) -> Option<Vec<std::ops::Range<usize>>> {
    if holder.is_empty() {
        return None;
    }
    let mut timers = Vec::new();
    for abort in facts.calls.iter().filter(|call| {
        call.callee_last == "abort"
            && call.callee.strip_suffix(".abort").is_some_and(|receiver| {
                receiver == holder || receiver.rsplit_once('.').is_some_and(|(_, last)| last == holder)
            })
    }) {
        let timer = facts.calls.iter().find(|timer| {
            timer.callee_last == "setTimeout"
                && timer.range.start < abort.range.start
                && abort.range.end <= timer.range.end
                // (The callback is the abort, beside the delay, and at most a
                // flag that says why: `timedOut = true`.)
                && timer.range.len() <= abort.range.len() + 112
        })?;
        let in_a_listener = facts.calls.iter().any(|listener| {
            matches!(listener.callee_last.as_str(), "on" | "once" | "addEventListener" | "addListener")
                && listener.range.start < timer.range.start
                && timer.range.end <= listener.range.end
        });
        if in_a_listener {
            return None;
        }
        timers.push(timer.range.clone());
    }
    (!timers.is_empty()).then_some(timers)
}

/// A listener for a person's keys or for the prompt closing: Ctrl-C
/// (`rl.on("SIGINT")`, `process.on("SIGINT")`), a key (`keypress`,
/// `escape`), or the close of a readline prompt (Ctrl-D).
pub(crate) fn person_listener(call: &CallFact) -> bool {
    if !(is_key_event_registration(call) || is_signal_registration(call)) {
        return false;
    }
    let says = |word: &str| call.arg_literals.iter().any(|w| w == word);
    // (A socket closing is the other side going away, not a person: only a
    // prompt's close counts.)
    let prompt = {
        let receiver = call.callee.rsplit_once('.').map_or("", |(r, _)| r);
        let words = crate::words::canonical_words(receiver);
        receiver == "rl"
            || words
                .iter()
                .any(|w| matches!(w.as_str(), "readline" | "stdin" | "prompt" | "terminal" | "tty"))
    };
    says("sigint") || says("keypress") || says("escape") || (says("close") && prompt)
}

/// Signal registration calls: `signal.signal`, `process.on`, `signal.Notify`,
/// `trap`, `loop.add_signal_handler`.
pub(crate) fn is_signal_registration(call: &CallFact) -> bool {
    matches!(call.callee_last.as_str(), "signal" | "add_signal_handler" | "Notify" | "NotifyContext" | "trap")
        && call.callee != "signal.alarm"
        || matches!(call.callee.as_str(), "process.on" | "process.once" | "process.addListener")
}
