//! Suggested changes for what a verdict says is missing.
//!
//! A loop that can tell it is done but has nothing that bounds it gets a
//! turn cap; a loop that only runs out gets a no-progress check on a value
//! it computes each pass. Each suggestion is written in the loop's language
//! and placed where a reader would put it, on the loop that decides the
//! verdict (a loop of the code before a recursion or a framework run that
//! holds it; for a cap, failing those, a loop that only ends from inside):
//!
//! - a `while`/`for`/`loop`/`do` loop: the cap's names just before its
//!   header and its check first thing in the body (a loop written on one
//!   line gets its body on lines of its own); the progress check right after
//!   the statement that computes the watched value: a value the pass assigns
//!   from a call (the body's own statements first, a name that says it is
//!   the work first), else the pass's result set inside a retry loop of the
//!   pass, else the entry of a dict that a step call is handed and the pass
//!   reads after it (`vars["api_output"]`), else the result of a step call
//!   the pass drops (kept for the purpose, unless the file declares the step
//!   to return nothing), else, in a shell loop, the state of the repository
//!   it works on. Clocks, counts, spends, histories, handles, yes-or-no
//!   values, snapshots taken before the pass to compare within it
//!   (`HEAD_BEFORE`) and what a person typed are never watched: the check would
//!   never fire, or fire on the second pass. A walk over a collection gets
//!   neither, except a walk over what a run streams step by step (a cap or
//!   a check) and a walk over a model's plan (a cap of steps);
//! - a recursive function (Python, JavaScript, TypeScript): a turn count
//!   that each call hands on (a parameter it already has, one added with a
//!   default, or, for a function defined inside another, a counter of the
//!   enclosing call), checked first thing in the body;
//! - a framework's run: its own setting for a bound (`max_turns=`,
//!   `recursion_limit`, `max_iter=`, `max_steps=`, `max_iterations=`, the
//!   Claude Agent SDK's `maxTurns`); for a completion check its own way to
//!   say "done" (AutoGen's `TextMentionTermination`, LangGraph's
//!   `tools_condition`, smolagents' `final_answer_checks`) or, for the AI
//!   SDK, a stop condition that ends the run when a step repeats the last
//!   one (given to an agent method on top of it, VoltAgent's, in place of
//!   `maxSteps`, whose cap moves into the `stopWhen` list); for fantasy
//!   (Go), the same condition as a function of the file's own handed to
//!   `WithStopConditions`.
//!
//! Every edit inserts whole lines or rewrites one line, so the suggestion
//! applies to the source as pasted and reads as a small diff.
//!
//! What is suggested is checked against the auditor itself (the eval example
//! and `tests/fixes.rs` apply every suggestion and audit again): a fix that
//! the rules would not read as the exit it promises is a bug here.

use tree_sitter::{Node, Tree};

use crate::engine::Lines;
use crate::facts::{LoopFact, LoopKind};
use crate::report::{Edit, Fix};
use crate::{ExitId, Language};

/// How many turns the suggested cap allows: a round number a reader will
/// change, large enough not to cut a healthy run short.
const TURN_CAP: u32 = 25;

/// What the verdict lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// No BOUND exit: suggest a turn cap (E2).
    Bound,
    /// No DETECT exit: suggest a no-progress check (E5) or the framework's
    /// own completion check (E1).
    Detect,
}

/// A suggestion before it is turned into edits: the exit it adds, its
/// title, and its changes: text put at byte offsets (`(at, text)`), or in
/// place of a short range of one line.
struct Plan {
    exit: ExitId,
    title: String,
    inserts: Vec<(usize, String)>,
    replaces: Vec<(std::ops::Range<usize>, String)>,
}

/// The suggestion for `missing`, made for the first of `candidates` (loops
/// of `loops`, the one the warning names first) whose shape allows one.
pub(crate) fn suggest(
    tree: &Tree,
    source: &str,
    language: Language,
    loops: &[LoopFact],
    candidates: &[usize],
    missing: Missing,
    lines: &Lines<'_>,
) -> Option<Fix> {
    // A loop of the code itself before a recursion or a framework run that
    // holds it: the deciding check is there.
    let mut order: Vec<&LoopFact> = candidates.iter().filter_map(|&i| loops.get(i)).collect();
    order.sort_by_key(|fact| match fact.kind {
        LoopKind::Recursion => 1,
        LoopKind::Framework | LoopKind::RetryDecorator => 2,
        _ => 0,
    });
    // Nothing bounds the file: a loop that only ends from inside
    // (`while True`, `loop {}`) is the one that most needs a cap, even when
    // the check that made the verdict sits elsewhere.
    if missing == Missing::Bound {
        let mut endless: Vec<&LoopFact> = loops
            .iter()
            .enumerate()
            .filter(|(i, fact)| fact.infinite && !candidates.contains(i))
            .map(|(_, fact)| fact)
            .collect();
        endless.sort_by_key(|fact| (std::cmp::Reverse(fact.range.len()), fact.range.start));
        order.extend(endless);
    }
    // Nothing tells the file that it is done: a loop over what a run
    // streams, wherever the warning points, is where a check belongs.
    if missing == Missing::Detect {
        // (Not a loop around the one the warning names, a server's `async
        // for message in websocket` around a bounded agent loop.)
        let holds_a_candidate = |fact: &LoopFact| {
            candidates.iter().filter_map(|&c| loops.get(c)).any(|inner| {
                inner.range != fact.range
                    && fact.range.start <= inner.range.start
                    && inner.range.end <= fact.range.end
            })
        };
        let streams = loops.iter().enumerate().filter(|(i, fact)| {
            !candidates.contains(i)
                && fact.kind.is_written()
                && !holds_a_candidate(fact)
                && loop_node(tree, fact).is_some_and(|n| consumes_a_run(n, source))
        });
        order.extend(streams.map(|(_, fact)| fact));
    }
    // Last, for a completion check, a framework run the file starts,
    // wherever the warning points (a person's loop around a team's run,
    // `while True: task = input()` ... `team.run_stream(task=task)`): the
    // framework's own check. (Not a cap: on a run the warning's loop does
    // not hold, it would bound something else.)
    if missing == Missing::Detect {
        let runs = loops
            .iter()
            .enumerate()
            .filter(|(i, fact)| !candidates.contains(i) && fact.kind == LoopKind::Framework);
        order.extend(runs.map(|(_, fact)| fact));
    }
    let syntactic = |fact: &LoopFact| fact.kind.is_written();
    let walk = |fact: &LoopFact| {
        fact.collection && !loop_node(tree, fact).is_some_and(|n| iterates_a_stream(n, source))
    };
    // A loop inside another of these loops retries one step of it (`for
    // attempt in range(3)` around a request): the progress check belongs
    // to the outer one, or to none.
    let inner: Vec<bool> = order
        .iter()
        .map(|fact| {
            missing == Missing::Detect
                && syntactic(fact)
                && order.iter().any(|outer| {
                    syntactic(outer)
                        && !walk(outer)
                        && outer.range != fact.range
                        && outer.range.start <= fact.range.start
                        && outer.range.end >= fact.range.end
                })
        })
        .collect();
    for (fact, inner) in order.into_iter().zip(inner) {
        if inner {
            continue;
        }
        let plan = match fact.kind {
            LoopKind::While | LoopKind::Until | LoopKind::For | LoopKind::Loop | LoopKind::DoWhile => {
                // A walk over a collection is not the loop that needs either;
                // a walk over what an agent streams, one step at a time, is.
                // (A plan a model made is as long as the model made it: a
                // walk over its steps needs a cap.)
                let node = loop_node(tree, fact);
                let plan_walk = missing == Missing::Bound && node.is_some_and(|n| walks_a_plan(n, source));
                if fact.collection && !plan_walk && !node.is_some_and(|n| consumes_a_run(n, source)) {
                    continue;
                }
                // (Nor, for a completion check, a walk by index over a
                // collection: `for ((i = 0; i < COUNT; i++))`.)
                if missing == Missing::Detect && node.is_some_and(|n| walks_by_index(n, source)) {
                    continue;
                }
                loop_plan(tree, source, language, fact, missing, fact.collection && plan_walk)
            }
            LoopKind::Recursion if missing == Missing::Bound => recursion_plan(tree, source, language, fact),
            LoopKind::Framework => framework_plan(tree, source, language, fact, missing),
            _ => None,
        };
        if let Some(plan) = plan {
            let mut changes: Vec<(std::ops::Range<usize>, String)> =
                plan.inserts.into_iter().map(|(at, text)| (at..at, text)).collect();
            changes.extend(plan.replaces);
            let Some(edits) = edits_of(source, changes) else { continue };
            let diff = unified_diff(source, &edits);
            let line = lines.line_of(fact.range.start);
            return Some(Fix { exit: plan.exit, title: plan.title, line, edits, diff });
        }
    }
    None
}

// ---------------------------------------------------------------------------
// Loops of the code: while, for, loop, do.

/// `plan_walk`: the loop walks the steps of a plan (a cap of steps, not
/// of turns).
fn loop_plan(
    tree: &Tree,
    source: &str,
    language: Language,
    fact: &LoopFact,
    missing: Missing,
    plan_walk: bool,
) -> Option<Plan> {
    let node = loop_node(tree, fact)?;
    let body = node.child_by_field_name("body")?;
    if node.start_position().row == node.end_position().row {
        return if missing == Missing::Bound { one_line_cap(node, body, source, language) } else { None };
    }
    let statements = body_statements(body);
    let first = *statements.first()?;
    let header_line = node.start_position().row;
    // The body must start on a line of its own: the edits are whole lines.
    if first.start_position().row <= header_line || !starts_its_line(source, first.start_byte()) {
        return None;
    }
    let header = line_start(source, node.start_byte());
    let outer = indentation_of_line(source, header);
    let inner = indentation_of_line(source, line_start(source, first.start_byte()));
    let style = Style::of(language);
    let unit = style.unit(inner, outer);
    match missing {
        Missing::Bound => {
            if let Some(plan) = sdk_turn_option(node, source, language) {
                return Some(plan);
            }
            let (counters, caps, title): (&[&str], &[&str], String) = if plan_walk {
                (
                    &["executed_steps", "plan_steps_run"],
                    &["max_plan_steps", "max_executed_steps"],
                    format!("Cap the steps: carry out at most {TURN_CAP} of the plan's steps, however many the model planned"),
                )
            } else {
                (
                    &["turns", "agent_turns", "loop_turns"],
                    &["max_turns", "max_agent_turns", "max_loop_turns"],
                    format!("Cap the turns: stop after {TURN_CAP} even if the loop never decides it is done"),
                )
            };
            let counter = fresh_name(source, &style.names(counters));
            let cap = fresh_name(source, &style.names(caps));
            let plan = Plan {
                exit: ExitId::E2,
                title,
                inserts: vec![
                    (header, style.cap_declarations(&cap, &counter, outer)),
                    (body_top(node, body, first, source), style.cap_check(&cap, &counter, inner, &unit)),
                ],
                replaces: Vec::new(),
            };
            rust_leaves_with_value(plan, node, source, language, "max_turns")
        }
        Missing::Detect => {
            // (What the pass changes: what it assigns and the loop's own variable.)
            let mut changed = fact.assigned.clone();
            if let Some(variable) =
                node.child_by_field_name("left").or_else(|| node.child_by_field_name("pattern"))
            {
                let mut stack = vec![variable];
                while let Some(n) = stack.pop() {
                    if n.kind() == "identifier" {
                        changed.insert(source.get(n.byte_range()).unwrap_or("").to_string());
                    }
                    let mut cursor = n.walk();
                    stack.extend(n.named_children(&mut cursor));
                }
            }
            // (A flag the pass lowers and raises is read as it is: its
            // value compared with the last round's would stop the loop
            // after two rounds that both did something.)
            let plan = idle_round_plan(body, source, language, &unit).or_else(|| {
                watched_value(body, source, language, &changed)
                    .map(|watch| progress_plan(source, &style, header, outer, &unit, watch))
            });
            if let Some(plan) = plan {
                return rust_leaves_with_value(plan, node, source, language, "no_progress");
            }
            if language == Language::Bash {
                return repository_plan(source, &style, body, header, outer, inner, &unit);
            }
            // A loop over what a run streams keeps nothing of its own: the
            // event it is handed is the round's work, and a run that hands
            // over the same event twice in a row is going round in circles.
            let variable = consumes_a_run(node, source)
                .then(|| stream_variable(node, source))
                .flatten()
                .filter(|name| watchable(name))?;
            let previous = fresh_name(source, &style.names(&[&format!("previous_{variable}")]));
            Some(Plan {
                exit: ExitId::E5,
                title: format!(
                    "Stop when the run repeats itself: compare each `{variable}` with the one before"
                ),
                inserts: vec![
                    (header, style.previous_declaration(&previous, outer)),
                    (
                        body_top(node, body, first, source),
                        style.progress_check(&variable, &previous, inner, &unit),
                    ),
                ],
                replaces: Vec::new(),
            })
        }
    }
}

/// Whether a loop consumes what an agent run streams, one event at a time:
/// a walk over a run's stream (`iterates_a_stream`), a `for await` or an
/// `async for` over anything but the chunks of one reply, a Go `range` over
/// a channel named for events (`for ev := range events`), a Rust `while let
/// Some(event) = rx.recv().await`.
fn consumes_a_run(node: Node<'_>, source: &str) -> bool {
    if iterates_a_stream(node, source) {
        return true;
    }
    let Some(variable) = stream_variable(node, source) else { return false };
    // (The pieces of one reply, by the name bound or the stream's:
    // `async for text in stream.text_stream`, `for await (const c of
    // result.textStream)`.)
    let iterable = iterable_of(node).and_then(|n| source.get(n.byte_range())).unwrap_or("");
    if names_pieces_of_a_reply(&variable) || names_pieces_of_a_reply(iterable) {
        return false;
    }
    // (Go's `for i := range items` binds the index of a slice.)
    if matches!(variable.as_str(), "i" | "j" | "k" | "n" | "idx" | "index") {
        return false;
    }
    let mut cursor = node.walk();
    let tokens: Vec<&str> = node.children(&mut cursor).map(|c| c.kind()).collect();
    match node.kind() {
        // JavaScript's `for await (...)`, Python's `async for`.
        // (Over a run's stream: a call, `loop.run(messages)`, or a name
        // for one, `stream`; not a socket's messages, `async for message in
        // websocket`, which a server waits on.)
        "for_in_statement" | "for_statement" if tokens.iter().any(|k| matches!(*k, "await" | "async")) => {
            let over = node.child_by_field_name("right");
            over.is_some_and(|n| {
                matches!(n.kind(), "call" | "call_expression" | "await" | "await_expression")
            }) || crate::words::split_identifier(iterable)
                .last()
                .is_some_and(|w| matches!(w.as_str(), "stream" | "events" | "updates" | "run" | "steps"))
        }
        "for_statement" => iterable_of(node)
            .filter(|right| matches!(right.kind(), "identifier" | "selector_expression"))
            .and_then(|right| source.get(right.byte_range()))
            .is_some_and(|text| {
                let last = text.rsplit('.').next().unwrap_or(text);
                crate::words::split_identifier(last)
                    .last()
                    .is_some_and(|w| matches!(w.as_str(), "event" | "events" | "update" | "updates"))
            }),
        "while_expression" => node
            .child_by_field_name("condition")
            .filter(|c| c.kind() == "let_condition")
            .and_then(|c| c.child_by_field_name("value"))
            .and_then(|value| source.get(value.byte_range()))
            .is_some_and(|text| {
                let text: String = text.split_whitespace().collect();
                text.ends_with(".await") && (text.contains(".recv()") || text.contains(".next()"))
            }),
        _ => false,
    }
}

/// The one name a loop over a stream binds each pass (`event` of `for
/// await (const event of ...)`, `ev` of `for _, ev := range events`,
/// `event` of `while let Some(event) = ...`); none for a destructuring.
fn stream_variable(node: Node<'_>, source: &str) -> Option<String> {
    let binding = node
        .child_by_field_name("left")
        .or_else(|| node.child_by_field_name("pattern"))
        .or_else(|| node.named_child(0).filter(|c| c.kind() == "range_clause")?.child_by_field_name("left"))
        .or_else(|| {
            let condition = node.child_by_field_name("condition").filter(|c| c.kind() == "let_condition")?;
            let pattern = condition.child_by_field_name("pattern")?;
            let constructor = pattern.child_by_field_name("type").and_then(|t| source.get(t.byte_range()));
            (pattern.kind() == "tuple_struct_pattern" && matches!(constructor, Some("Some" | "Ok")))
                .then_some(pattern)
        })?;
    let mut names: Vec<&str> = Vec::new();
    let mut stack = vec![binding];
    // (`Some(event)`: the constructor binds nothing.)
    let constructor = binding.child_by_field_name("type").map(|t| t.id());
    while let Some(n) = stack.pop() {
        if Some(n.id()) == constructor {
            continue;
        }
        if n.kind() == "identifier" {
            names.push(source.get(n.byte_range())?);
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    // (Go's `for _, ev := range events`: the blank index is no binding.)
    names.retain(|name| *name != "_");
    match names.as_slice() {
        [name] => Some(name.to_string()),
        _ => None,
    }
}

/// Whether a `for` loop walks what a run produces step by step (`async
/// for state in agent.astream(...)`, `for await (const m of query(...))`,
/// `for t in itertools.count()`), not a collection it was given nor the
/// chunks of one reply.
fn iterates_a_stream(node: Node<'_>, source: &str) -> bool {
    let iterable = iterable_of(node);
    let Some(call) = iterable.filter(|n| matches!(n.kind(), "call" | "call_expression")) else {
        return false;
    };
    let callee = call.child_by_field_name("function").and_then(|f| source.get(f.byte_range())).unwrap_or("");
    let last = crate::words::split_identifier(callee.rsplit(['.', ':']).next().unwrap_or(callee));
    let variable = node
        .child_by_field_name("left")
        .or_else(|| node.child_by_field_name("pattern"))
        .and_then(|n| source.get(n.byte_range()))
        .unwrap_or("");
    last.iter().any(|w| matches!(w.as_str(), "astream" | "query" | "count" | "iterate" | "run" | "steps"))
        || (last.iter().any(|w| w == "stream") && !names_pieces_of_a_reply(variable))
}

/// What a `for` loop walks: its iterable (`right`, Rust's and Bash's
/// `value`, Go's range clause's `right`).
fn iterable_of(node: Node<'_>) -> Option<Node<'_>> {
    node.child_by_field_name("right").or_else(|| node.child_by_field_name("value")).or_else(|| {
        node.named_child(0)
            .filter(|c| c.kind() == "range_clause")
            .and_then(|c| c.child_by_field_name("right"))
    })
}

/// Whether a name says it holds pieces of one reply (`chunk`, `delta`,
/// `text_stream`), not the steps of a run.
fn names_pieces_of_a_reply(text: &str) -> bool {
    crate::words::split_identifier(text).iter().any(|w| {
        matches!(
            w.as_str(),
            "chunk"
                | "chunks"
                | "token"
                | "tokens"
                | "delta"
                | "deltas"
                | "part"
                | "parts"
                | "piece"
                | "line"
                | "lines"
                | "byte"
                | "bytes"
                | "text"
                | "char"
                | "chars"
        )
    })
}

/// Whether a counted `for` loop walks a collection by index: its condition
/// holds the index against a length or a count (`i < items.length`, `i <
/// PROJECT_COUNT`), not against a maximum of turns.
fn walks_by_index(node: Node<'_>, source: &str) -> bool {
    let condition = match node.kind() {
        "c_style_for_statement" => node.child_by_field_name("condition"),
        "for_statement" => node.child_by_field_name("condition").or_else(|| {
            node.named_child(0)
                .filter(|c| c.kind() == "for_clause")
                .and_then(|c| c.child_by_field_name("condition"))
        }),
        _ => None,
    };
    let Some(condition) = condition else { return false };
    crate::words::counts_to_a_length(source.get(condition.byte_range()).unwrap_or(""))
}

/// Whether a `for` loop walks the steps of a plan (`for step in
/// plan.steps`, `for (const step of executedOrders)`): a list a model made,
/// as long as the model made it.
fn walks_a_plan(node: Node<'_>, source: &str) -> bool {
    let iterable = iterable_of(node);
    let Some(iterable) = iterable else { return false };
    let text = source.get(iterable.byte_range()).unwrap_or("");
    crate::words::split_identifier(text)
        .iter()
        .any(|w| matches!(w.as_str(), "plan" | "plans" | "steps" | "orders" | "subtasks" | "todos"))
}

/// A loop over the messages of the Claude Agent SDK's `query({ prompt,
/// options: { ... } })`: the SDK's own `maxTurns` option, not a count of
/// messages (a turn is several).
fn sdk_turn_option(node: Node<'_>, source: &str, language: Language) -> Option<Plan> {
    if !matches!(language, Language::JavaScript | Language::TypeScript | Language::Tsx) {
        return None;
    }
    let call = node.child_by_field_name("right").filter(|n| n.kind() == "call_expression")?;
    if call.child_by_field_name("function").and_then(|f| source.get(f.byte_range())) != Some("query") {
        return None;
    }
    let argument = call.child_by_field_name("arguments")?.named_child(0).filter(|n| n.kind() == "object")?;
    let options = pair_value(argument, "options", source).filter(|o| o.kind() == "object")?;
    if pair_value(options, "maxTurns", source).is_some() {
        return None;
    }
    let mut cursor = options.walk();
    let items: Vec<Node<'_>> =
        options.named_children(&mut cursor).filter(|n| !n.kind().contains("comment")).collect();
    Some(Plan {
        exit: ExitId::E2,
        title: format!("Cap the turns: give the run the SDK's `maxTurns: {TURN_CAP}`, so it stops even if the agent never decides it is done"),
        inserts: vec![append_item(options, &items, &format!("maxTurns: {TURN_CAP}"), source)?],
        replaces: Vec::new(),
    })
}

/// The value of `key: value` in an object literal.
fn pair_value<'t>(object: Node<'t>, key: &str, source: &str) -> Option<Node<'t>> {
    let mut cursor = object.walk();
    let found = object.named_children(&mut cursor).find(|p| {
        p.kind() == "pair"
            && p.child_by_field_name("key").and_then(|k| source.get(k.byte_range())) == Some(key)
    });
    found.and_then(|p| p.child_by_field_name("value"))
}

/// A loop written on one line (`while True: step()`, `while (busy) poll();`,
/// `for { step() }`, `while true; do step; done`): the line becomes the
/// loop with its body on lines of its own, the cap's check first.
fn one_line_cap(node: Node<'_>, body: Node<'_>, source: &str, language: Language) -> Option<Plan> {
    if !starts_its_line(source, node.start_byte()) {
        return None;
    }
    let rest = source[node.end_byte()..next_line_start(source, node.end_byte())].trim();
    if !(rest.is_empty() || rest == ";" || rest.starts_with('#') || rest.starts_with("//")) {
        return None;
    }
    let line = line_start(source, node.start_byte());
    let outer = indentation_of_line(source, line);
    let style = Style::of(language);
    let unit = style.unit("", outer);
    let inner = format!("{outer}{unit}");
    let before_body = source[node.start_byte()..body.start_byte()].trim_end();
    let body_text = source[body.byte_range()].trim();
    let (head, content, tail) = match language {
        Language::Python => (before_body.to_string(), body_text.to_string(), String::new()),
        Language::Bash => {
            let inside =
                body_text.strip_prefix("do")?.strip_suffix("done")?.trim().trim_end_matches(';').trim();
            (format!("{before_body} do"), inside.to_string(), "done".to_string())
        }
        _ => {
            let content = if matches!(body.kind(), "statement_block" | "block") {
                body_text.strip_prefix('{').and_then(|t| t.strip_suffix('}')).map(str::trim)?
            } else {
                body_text
            };
            (
                format!("{before_body} {{"),
                content.to_string(),
                format!("}}{}", &source[body.end_byte()..node.end_byte()]),
            )
        }
    };
    if content.is_empty() || content.contains('\n') {
        return None;
    }
    let counter = fresh_name(source, &style.names(&["turns", "agent_turns", "loop_turns"]));
    let cap = fresh_name(source, &style.names(&["max_turns", "max_agent_turns", "max_loop_turns"]));
    let check = style.cap_check(&cap, &counter, &inner, &unit);
    let tail = if tail.is_empty() { String::new() } else { format!("\n{outer}{tail}") };
    Some(Plan {
        exit: ExitId::E2,
        title: format!("Cap the turns: stop after {TURN_CAP} even if the loop never decides it is done"),
        inserts: vec![(line, style.cap_declarations(&cap, &counter, outer))],
        replaces: vec![(node.byte_range(), format!("{head}\n{check}{inner}{content}{tail}"))],
    })
}

/// A statement and the name it assigns.
type Named<'t> = (Node<'t>, String);

/// What a progress check watches: a value a statement of the pass assigns,
/// or the result of a step call that a statement makes and drops (the fix
/// then keeps it in `name`).
struct Watch<'t> {
    statement: Node<'t>,
    name: String,
    /// For a dropped result: where the call starts, to assign it there.
    capture_at: Option<usize>,
    /// What is compared when it is not `name` itself: an entry of a dict
    /// that the step fills in (`vars["api_output"]`, watched as
    /// `api_output`).
    expression: Option<String>,
    /// The name is set only inside `statement` (a Python loop that may run
    /// no pass, or fail on each): the fix sets it to `None` first and
    /// compares only a value.
    declare: bool,
    /// The check goes before `statement`, not after it: first thing in
    /// the arm of a `match` that binds the value (`Ok(output) => {`).
    before: bool,
}

impl<'t> Watch<'t> {
    /// `name`, set by `statement`, compared as it is.
    fn of(statement: Node<'t>, name: String) -> Watch<'t> {
        Watch { statement, name, capture_at: None, expression: None, declare: false, before: false }
    }
}

fn progress_plan(
    source: &str,
    style: &Style,
    header: usize,
    outer: &str,
    unit: &str,
    watch: Watch<'_>,
) -> Plan {
    let Watch { statement, name, capture_at, expression, declare, before } = watch;
    let previous = fresh_name(source, &style.names(&[&format!("previous_{name}")]));
    let watched = expression.unwrap_or_else(|| name.clone());
    let at = indentation_of_line(source, line_start(source, statement.start_byte()));
    let after = if before {
        line_start(source, statement.start_byte())
    } else {
        next_line_start(source, statement.end_byte())
    };
    let check = match capture_at {
        Some(_) => style.result_check(&watched, &previous, at, unit),
        None if declare => style.result_check(&watched, &previous, at, unit),
        None => style.progress_check(&watched, &previous, at, unit),
    };
    // (At the end of a source without a final newline the check starts a
    // line of its own.)
    let check = if after == source.len() && !source.ends_with('\n') { format!("\n{check}") } else { check };
    let mut inserts = vec![(header, style.previous_declaration(&previous, outer)), (after, check)];
    if declare {
        inserts.push((line_start(source, statement.start_byte()), format!("{at}{name} = None\n")));
    }
    let title = match capture_at {
        Some(call) => {
            inserts.push((call, style.capture(&name)));
            let callee = source.get(call..statement.end_byte()).unwrap_or("").split('(').next().unwrap_or("");
            format!(
                "Stop when a round changes nothing: keep what `{}` returns and compare it with the last round's",
                callee.trim_start_matches("await ").trim()
            )
        }
        None => format!("Stop when a round changes nothing: compare `{watched}` with the last round's"),
    };
    Plan { exit: ExitId::E5, title, inserts, replaces: Vec::new() }
}

/// A shell loop that keeps nothing in a variable still leaves the
/// repository it works on: a round that moved neither HEAD nor any file
/// changed nothing.
fn repository_plan(
    source: &str,
    style: &Style,
    body: Node<'_>,
    header: usize,
    outer: &str,
    inner: &str,
    unit: &str,
) -> Option<Plan> {
    let done = body.child(body.child_count().checked_sub(1)?).filter(|n| n.kind() == "done")?;
    if !starts_its_line(source, done.start_byte()) {
        return None;
    }
    let state = fresh_name(source, &style.names(&["repo_state"]));
    let previous = fresh_name(source, &style.names(&["previous_repo_state"]));
    let check = format!(
        "{inner}{state}=$(git rev-parse HEAD 2>/dev/null; git status --porcelain 2>/dev/null)\n{inner}if [ \"${state}\" = \"${previous}\" ]; then\n{inner}{unit}break  # the last round changed no file\n{inner}fi\n{inner}{previous}=\"${state}\"\n"
    );
    Some(Plan {
        exit: ExitId::E5,
        title: "Stop when a round changes nothing: compare the repository's state with the last round's"
            .to_string(),
        inserts: vec![
            (header, style.previous_declaration(&previous, outer)),
            (line_start(source, done.start_byte()), check),
        ],
        replaces: Vec::new(),
    })
}

/// Where a check goes first thing in a body: the line after the one that
/// opens it (`{`, `:`, `do`), before any comment that leads the first
/// statement, which stays with its statement.
fn body_top(owner: Node<'_>, body: Node<'_>, first: Node<'_>, source: &str) -> usize {
    let fallback = line_start(source, first.start_byte());
    let opening = if body.kind() == "block" && !source[body.byte_range()].starts_with('{') {
        // Python: the `:` before the block.
        let mut cursor = owner.walk();
        let colon = owner
            .children(&mut cursor)
            .filter(|c| c.kind() == ":" && c.end_byte() <= body.start_byte())
            .last()
            .map(|c| c.end_byte());
        colon
    } else {
        Some(body.start_byte())
    };
    match opening {
        Some(at) if next_line_start(source, at) <= fallback => next_line_start(source, at),
        _ => fallback,
    }
}

/// The tree node of the loop `fact` describes.
fn loop_node<'t>(tree: &'t Tree, fact: &LoopFact) -> Option<Node<'t>> {
    let mut node = tree.root_node().descendant_for_byte_range(fact.range.start, fact.range.end)?;
    loop {
        if node.byte_range() == fact.range || node.child_by_field_name("body").is_some() {
            return node.child_by_field_name("body").is_some().then_some(node);
        }
        node = node.parent()?;
    }
}

/// The statements of a loop body, comments left out (through Go's
/// statement list). Empty when the body is a single statement, not a block.
fn body_statements(body: Node<'_>) -> Vec<Node<'_>> {
    if !matches!(body.kind(), "block" | "statement_block" | "do_group" | "compound_statement") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cursor = body.walk();
    for child in body.named_children(&mut cursor) {
        if child.kind() == "statement_list" {
            let mut inner = child.walk();
            out.extend(child.named_children(&mut inner).filter(|c| c.kind() != "comment"));
        } else if !child.kind().contains("comment") && child.kind() != "label" {
            out.push(child);
        }
    }
    out
}

/// The value a progress check watches. The body's own statements come
/// first, in order; then those inside an `if`, `try` or `with` of the body
/// (never a nested loop, function or `switch`, where a `break` would leave
/// something else). A statement that assigns a value from a call to a
/// plain name is watched; failing that, a step call whose result the pass
/// drops (`agent.step()`) is kept and watched.
fn watched_value<'t>(
    body: Node<'t>,
    source: &str,
    language: Language,
    assigned: &crate::facts::HashSet<String>,
) -> Option<Watch<'t>> {
    let candidates = pass_statements(body);
    let fits = |statement: Node<'_>| check_fits_after(source, statement);
    // The body's own statements before those in a branch of it (a check
    // there runs every pass), and in each a name that says it is the
    // pass's work (`reply`, `plan`, `diff`) before any other.
    let own: Vec<Node<'t>> = body_statements(body);
    let assigned: Vec<(Node<'t>, String)> = candidates
        .iter()
        .filter_map(|&statement| {
            assigned_name(statement, source, language, assigned).map(|(name, _)| (statement, name))
        })
        .filter(|(statement, _)| fits(*statement))
        .collect();
    let (top, nested): (Vec<&Named<'t>>, Vec<&Named<'t>>) =
        assigned.iter().partition(|(statement, _)| own.iter().any(|s| s.id() == statement.id()));
    fn pick<'a, 't>(group: &[&'a Named<'t>]) -> Option<&'a Named<'t>> {
        group.iter().find(|(_, name)| says_it_is_the_work(name)).or_else(|| group.first()).copied()
    }
    if let Some((statement, name)) = pick(&top).or_else(|| pick(&nested)) {
        return Some(Watch::of(*statement, name.clone()));
    }
    // The pass's result set inside a retry loop of the pass (`var response
    // string` ... `for attempt := ...; { response = resp; break }`): the
    // check goes after that loop.
    if let Some(watch) = result_of_a_retry(body, source, language) {
        return Some(watch);
    }
    if let Some(watch) = matched_success(body, source, language) {
        return Some(watch);
    }
    // A step that returns nothing but fills in a dict the pass reads after
    // it (`self.retry(question, vars)` ... `vars["api_output"]`): the entry
    // that says it is the work.
    for &statement in &candidates {
        if fits(statement) {
            if let Some(watch) = entry_a_step_fills(body, statement, source, language) {
                return Some(watch);
            }
        }
    }
    for &statement in &candidates {
        if let Some(call) = dropped_step_call(statement, source, language) {
            if returns_nothing(body, statement, source) {
                continue;
            }
            if fits(statement) && starts_its_line(source, statement.start_byte()) {
                let name = fresh_name(source, &Style::of(language).names(&["result", "step_result"]));
                return Some(Watch { capture_at: Some(call), ..Watch::of(statement, name) });
            }
        }
    }
    None
}

/// Rust: a pass that matches its step's result (`match engine.chat(&prompt)
/// { Ok(output) => { ... } Err(err) => { ... } }`): the value the arm that
/// got through binds is the pass's work, watched first thing in that arm
/// (a `break` in an arm leaves the loop, as it does nowhere else a `match`
/// stands for a `switch`).
fn matched_success<'t>(body: Node<'t>, source: &str, language: Language) -> Option<Watch<'t>> {
    if language != Language::Rust {
        return None;
    }
    for statement in body_statements(body) {
        let expression = if statement.kind() == "expression_statement" {
            statement.named_child(0)
        } else {
            Some(statement)
        };
        let Some(expression) = expression.filter(|e| e.kind() == "match_expression") else { continue };
        // (What a call of the pass made, not a field it may never change;
        // not what a channel hands over, the same heartbeat twice.)
        let made = expression.child_by_field_name("value").is_some_and(|value| {
            let mut call = value;
            while matches!(call.kind(), "try_expression" | "await_expression") {
                let Some(inner) = call.named_child(0) else { break };
                call = inner;
            }
            (call.kind() == "call_expression").then_some(call).is_some_and(|c| {
                let callee = callee_text(c, source);
                !matches!(
                    callee.rsplit(['.', ':']).next(),
                    Some("recv" | "try_recv" | "recv_timeout" | "next")
                )
            })
        });
        if !made {
            continue;
        }
        let Some(arms) = expression.child_by_field_name("body") else { continue };
        let mut cursor = arms.walk();
        for arm in arms.named_children(&mut cursor).filter(|a| a.kind() == "match_arm") {
            let Some(pattern) = arm.child_by_field_name("pattern").and_then(|p| source.get(p.byte_range()))
            else {
                continue;
            };
            let Some(name) = pattern
                .strip_prefix("Ok(")
                .or_else(|| pattern.strip_prefix("Some("))
                .and_then(|rest| rest.strip_suffix(')'))
                .map(str::trim)
            else {
                continue;
            };
            let plain = name.chars().all(|c| c.is_alphanumeric() || c == '_');
            let Some(block) = arm.child_by_field_name("value").filter(|v| v.kind() == "block") else {
                continue;
            };
            let Some(first) = body_statements(block).into_iter().next() else { continue };
            if plain && watchable(name) && starts_its_line(source, first.start_byte()) {
                return Some(Watch { before: true, ..Watch::of(first, name.to_string()) });
            }
        }
    }
    None
}

/// A pass that keeps a flag of whether anything worked this round (`anyWork
/// := false` ... `anyWork = true` when an agent did something; `changed =
/// False` ... `changed = True`): a round in which nothing did is the end of
/// the work (goal met: nothing left to do), or one that changed nothing (no
/// progress). The check goes after the last statement of the pass that can
/// raise the flag.
fn idle_round_plan(body: Node<'_>, source: &str, language: Language, unit: &str) -> Option<Plan> {
    let statements = body_statements(body);
    for (index, &statement) in statements.iter().enumerate() {
        let Some(flag) = lowered_flag(source.get(statement.byte_range()).unwrap_or(""), language) else {
            continue;
        };
        let words = crate::words::canonical_words(flag);
        // (A flag that says the opposite, `progressStalled`, `queueEmpty`,
        // `noChange`, raised when the work stopped, is not this one.)
        let opposite = words.iter().any(|w| {
            matches!(
                w.as_str(),
                "stall"
                    | "empty"
                    | "no"
                    | "none"
                    | "idle"
                    | "stop"
                    | "done"
                    | "fail"
                    | "failed"
                    | "error"
                    | "blocked"
                    | "wait"
                    | "waiting"
            )
        });
        if opposite {
            continue;
        }
        let exit = if words.iter().any(|w| matches!(w.as_str(), "queue" | "worked")) {
            ExitId::E1
        } else if words.iter().any(|w| w == "change") {
            ExitId::E5
        } else {
            continue;
        };
        let Some(&raised) = statements[index + 1..].iter().rev().find(|s| raises_flag(**s, flag, source))
        else {
            continue;
        };
        if !check_fits_after(source, raised) || !starts_its_line(source, raised.start_byte()) {
            continue;
        }
        let at = indentation_of_line(source, line_start(source, raised.start_byte()));
        let note =
            if exit == ExitId::E1 { "nothing worked this round" } else { "nothing changed this round" };
        let check = Style::of(language).flag_check(flag, at, unit, note)?;
        let title = if exit == ExitId::E1 {
            format!("Stop when the work is done: end the loop after a round in which nothing worked (`{flag}` stayed false)")
        } else {
            format!("Stop when a round changes nothing: end the loop when `{flag}` stayed false")
        };
        return Some(Plan {
            exit,
            title,
            inserts: vec![(next_line_start(source, raised.end_byte()), check)],
            replaces: Vec::new(),
        });
    }
    None
}

/// Whether `statement` sets `flag` to true itself: an assignment in it,
/// not in a function, closure or goroutine it defines (a callback or a
/// goroutine may raise it after the pass has read it), unless the pass
/// calls that function where it stands (`func() { defer recover(); ...
/// }()`).
fn raises_flag(statement: Node<'_>, flag: &str, source: &str) -> bool {
    let called_here = |function: Node<'_>| {
        let mut outer = function.parent();
        while let Some(parenthesised) = outer.filter(|o| o.kind() == "parenthesized_expression") {
            outer = parenthesised.parent();
        }
        outer.is_some_and(|call| {
            call.kind() == "call_expression"
                && call
                    .child_by_field_name("function")
                    .is_some_and(|f| f.byte_range().contains(&function.start_byte()))
                && !call.parent().is_some_and(|p| matches!(p.kind(), "go_statement" | "defer_statement"))
        })
    };
    let mut stack = vec![statement];
    let mut cursor = statement.walk();
    while let Some(node) = stack.pop() {
        let kind = node.kind();
        let function = is_function(kind)
            || kind.contains("closure")
            || kind.contains("lambda")
            || kind == "func_literal";
        if function && !called_here(node) {
            continue;
        }
        if matches!(kind, "assignment" | "assignment_expression" | "assignment_statement") {
            let text = |field: &str| {
                node.child_by_field_name(field).and_then(|n| source.get(n.byte_range())).map(str::trim)
            };
            if text("left") == Some(flag) && matches!(text("right"), Some("true" | "True")) {
                return true;
            }
        }
        stack.extend(node.named_children(&mut cursor));
    }
    false
}

/// The name a statement sets to false, when that is all it does (`anyWork
/// := false`, `let mut changed = false;`, `progress = False`, `var busy bool`).
fn lowered_flag(text: &str, language: Language) -> Option<&str> {
    let text = text.trim().trim_end_matches(';').trim();
    let text = ["let mut ", "let ", "var "].iter().find_map(|p| text.strip_prefix(p)).unwrap_or(text);
    let (name, value) = match text.split_once(":=").or_else(|| text.split_once('=')) {
        Some((name, value)) => (name.trim(), value.trim()),
        None if language == Language::Go => (text.strip_suffix(" bool")?.trim(), "false"),
        None => return None,
    };
    let name = name.split(':').next().unwrap_or(name).trim();
    let plain = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    (plain && matches!(value, "false" | "False")).then_some(name)
}

/// Rust: a plan's checks leave a `loop` whose value is taken (`let
/// stop_reason = loop { ... break "max_iterations".to_string(); }`, or a
/// loop a function returns) with a value of its other breaks' shape,
/// saying `word`. None when a break carries a value of another shape (a
/// `format!`, a variable): no text can stand for it.
fn rust_leaves_with_value(
    mut plan: Plan,
    node: Node<'_>,
    source: &str,
    language: Language,
    word: &str,
) -> Option<Plan> {
    if language != Language::Rust {
        return Some(plan);
    }
    if let Some(value) = rust_break_value(node, source, word)? {
        for (_, text) in &mut plan.inserts {
            *text = text.replace("break;", &format!("break {value};"));
        }
    }
    Some(plan)
}

/// The value a `break` of the Rust loop `node` takes, shaped after its own
/// breaks' (not those of a loop or closure inside it, nor one that names a
/// label): `Some(None)` when none takes a value, `Some(Some(text))` when
/// one is a plain string literal, alone or turned into a `String`
/// (`"done"`, `"done".to_string()`, `.to_owned()`, `.into()`,
/// `String::from("done")`), None otherwise.
fn rust_break_value(node: Node<'_>, source: &str, word: &str) -> Option<Option<String>> {
    let mut values = Vec::new();
    let mut stack = vec![node];
    let mut cursor = node.walk();
    while let Some(n) = stack.pop() {
        if n.id() != node.id() && (is_loop_or_function(n.kind()) || n.kind().contains("closure")) {
            continue;
        }
        if n.kind() == "break_expression" {
            let children: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
            if children.iter().any(|c| c.kind() == "label") {
                continue;
            }
            if let Some(value) = children.first() {
                values.push(source.get(value.byte_range())?);
            }
        }
        stack.extend(n.named_children(&mut cursor));
    }
    if values.is_empty() {
        return Some(None);
    }
    let plain = |literal: &str| {
        literal.len() >= 2
            && literal.starts_with('"')
            && literal.ends_with('"')
            && !literal[1..literal.len() - 1].contains(['"', '\\'])
    };
    values.iter().find_map(|value| {
        let value = value.trim();
        let (before, literal, after) = if let Some(inner) =
            value.strip_prefix("String::from(").and_then(|rest| rest.strip_suffix(')'))
        {
            ("String::from(", inner.trim(), ")")
        } else {
            let end = value.rfind('"')? + 1;
            let after = &value[end..];
            if !matches!(after, "" | ".to_string()" | ".to_owned()" | ".into()") {
                return None;
            }
            ("", &value[..end], after)
        };
        plain(literal).then(|| Some(format!("{before}\"{word}\"{after}")))
    })
}

/// For a step call that drops its result and hands a name on (Python):
/// the entry of that name the pass reads after the call (`vars["api_output"]`
/// after `self.retry(question, vars)`), when its key says it is the work.
fn entry_a_step_fills<'t>(
    body: Node<'t>,
    statement: Node<'t>,
    source: &str,
    language: Language,
) -> Option<Watch<'t>> {
    if language != Language::Python || !starts_its_line(source, statement.start_byte()) {
        return None;
    }
    let call_at = dropped_step_call(statement, source, language)?;
    let call = ancestors(statement.descendant_for_byte_range(call_at, call_at)?)
        .find(|n| n.kind() == "call" && n.start_byte() >= statement.start_byte())?;
    let arguments = call.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let handed: Vec<&str> = arguments
        .named_children(&mut cursor)
        .filter(|a| a.kind() == "identifier")
        .filter_map(|a| source.get(a.byte_range()))
        .collect();
    // The entries read after the call, in order, outside nested functions.
    let mut entries: Vec<Node<'t>> = Vec::new();
    let mut stack = vec![body];
    while let Some(node) = stack.pop() {
        if node.id() != body.id() && is_function(node.kind()) {
            continue;
        }
        if node.kind() == "subscript" && node.start_byte() >= statement.end_byte() {
            entries.push(node);
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    entries.sort_by_key(|n| n.start_byte());
    entries.into_iter().find_map(|entry| {
        let value = source.get(entry.child_by_field_name("value")?.byte_range())?;
        let key = entry.child_by_field_name("subscript").filter(|k| k.kind() == "string")?;
        let key_text = source.get(key.byte_range())?;
        let name = key_text.trim_matches(['"', '\'']);
        let plain = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        (handed.contains(&value) && plain && watchable(name) && says_it_is_the_work(name)).then(|| Watch {
            statement,
            name: name.to_string(),
            capture_at: None,
            expression: Some(format!("{value}[{key_text}]")),
            declare: false,
            before: false,
        })
    })
}

/// Whether the call a statement makes is to a function of the file declared
/// to return nothing (`def retry(...) -> None:`): keeping its result would
/// keep `None` each round, and a check on it would never fire.
fn returns_nothing(body: Node<'_>, statement: Node<'_>, source: &str) -> bool {
    let Some(call) = statement.named_child(0) else { return false };
    let call = if call.kind() == "await" { call.named_child(0).unwrap_or(call) } else { call };
    let callee = callee_text(call, source);
    let name = callee.rsplit('.').next().unwrap_or(callee);
    let Some(root) = ancestors(body).last() else { return false };
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.kind() == "function_definition"
            && node.child_by_field_name("name").and_then(|n| source.get(n.byte_range())) == Some(name)
        {
            return node.child_by_field_name("return_type").and_then(|t| source.get(t.byte_range()))
                == Some("None");
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    false
}

/// A name the body declares (or sets) before one of its own loops, that
/// the loop sets and that says it is the pass's result (`response`,
/// `reply`): the loop retries the step that makes it. (In Python a name
/// the inner loop sets is the pass's after it without a declaration: a
/// round that walks its workers, `for agent_id in self._workers: result =
/// await agent.execute(context)`, is watched on the last one's result.)
fn result_of_a_retry<'t>(body: Node<'t>, source: &str, language: Language) -> Option<Watch<'t>> {
    let statements = body_statements(body);
    for (index, &statement) in statements.iter().enumerate() {
        let is_loop = statement.child_by_field_name("body").is_some()
            && is_loop_or_function(statement.kind())
            && !statement.kind().contains("function")
            && !statement.kind().contains("def");
        if !is_loop || !check_fits_after(source, statement) {
            continue;
        }
        // Names set inside the loop, outside any function in it.
        let mut set = Vec::new();
        let mut stack = vec![statement];
        while let Some(node) = stack.pop() {
            if node.id() != statement.id() && is_function(node.kind()) {
                continue;
            }
            if matches!(node.kind(), "assignment" | "assignment_expression" | "assignment_statement") {
                if let Some(left) = node.child_by_field_name("left") {
                    let text = source.get(left.byte_range()).unwrap_or("");
                    if !text.is_empty() && text.chars().all(|c| c.is_alphanumeric() || c == '_') {
                        set.push(text.to_string());
                    }
                }
            }
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
        }
        let declared_before = |name: &str| {
            statements[..index].iter().any(|earlier| {
                let text = source.get(earlier.byte_range()).unwrap_or("");
                let words: Vec<&str> = text
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .collect();
                let head = &words[..words.len().min(3)];
                head.contains(&name)
                    && matches!(
                        earlier.kind(),
                        "var_declaration"
                            | "short_var_declaration"
                            | "lexical_declaration"
                            | "variable_declaration"
                            | "let_declaration"
                            | "expression_statement"
                            | "variable_assignment"
                    )
            })
        };
        let python = language == Language::Python;
        if let Some(name) = set
            .into_iter()
            .find(|name| watchable(name) && says_it_is_the_work(name) && (python || declared_before(name)))
        {
            let declare = python && !declared_before(&name);
            return Some(Watch { declare, ..Watch::of(statement, name) });
        }
    }
    None
}

/// The statements of one pass: the body's own first, then, breadth first,
/// those of the `if`s, `try`s and `with`s inside it (not their error
/// handlers: a value computed there is not the pass's).
fn pass_statements(body: Node<'_>) -> Vec<Node<'_>> {
    const CONTAINERS: &[&str] = &[
        "block",
        "statement_block",
        "do_group",
        "statement_list",
        "compound_statement",
        "else_clause",
        "elif_clause",
        "finally_clause",
    ];
    const COMPOUND: &[&str] = &["if_statement", "try_statement", "with_statement", "if_expression"];
    let mut out: Vec<Node<'_>> = Vec::new();
    let mut queue = std::collections::VecDeque::from([body]);
    while let Some(container) = queue.pop_front() {
        let compound = COMPOUND.contains(&container.kind());
        let mut cursor = container.walk();
        for child in container.named_children(&mut cursor) {
            let kind = child.kind();
            if kind.contains("comment") || is_nested_scope(child) {
                continue;
            }
            if CONTAINERS.contains(&kind) {
                queue.push_back(child);
                continue;
            }
            // (Of an `if` or `try`, only its blocks hold statements; in a
            // shell `if` the statements stand in it directly.)
            if compound && container.kind() != "if_statement" {
                continue;
            }
            if compound
                && child.end_byte() <= container.child_by_field_name("condition").map_or(0, |c| c.end_byte())
            {
                continue;
            }
            out.push(child);
            if COMPOUND.contains(&kind) {
                queue.push_back(child);
            } else if kind == "expression_statement" {
                // Rust: `if ... { }` as a statement.
                if let Some(inner) = child.named_child(0).filter(|n| n.kind() == "if_expression") {
                    queue.push_back(inner);
                }
            }
        }
    }
    out
}

/// A loop, function or branch of a `switch` inside the pass: a check there
/// would leave or skip something else.
fn is_nested_scope(node: Node<'_>) -> bool {
    let kind = node.kind();
    (node.child_by_field_name("body").is_some() && is_loop_or_function(kind))
        || kind.contains("switch")
        || kind.contains("select")
        || kind.contains("case")
        || kind.contains("match")
        || kind.contains("lambda")
        || kind.contains("closure")
        || kind.contains("arrow_function")
        || kind.contains("function")
        || kind.contains("class")
}

fn is_loop_or_function(kind: &str) -> bool {
    kind.contains("for")
        || kind.contains("while")
        || kind.contains("loop")
        || kind.contains("function")
        || kind.contains("def")
        || kind == "do_statement"
}

/// Whether a check can go on the lines right after `statement`: nothing but
/// statements of the same block before it on its first line (`local x;
/// x=$(...)`), nothing but a comment after it on its last.
fn check_fits_after(source: &str, statement: Node<'_>) -> bool {
    let start = line_start(source, statement.start_byte());
    let first_code = start + indentation_of_line(source, start).len();
    let siblings_before = first_code == statement.start_byte()
        || statement.parent().is_some_and(|parent| {
            let mut cursor = parent.walk();
            let found = parent.named_children(&mut cursor).any(|s| s.start_byte() == first_code);
            found
        });
    let end = statement.end_byte();
    let rest = &source[end..next_line_start(source, end)];
    let rest = rest.trim_start_matches([';', ' ', '\t']);
    let nothing_after = rest.trim().is_empty() || rest.starts_with('#') || rest.starts_with("//");
    siblings_before && nothing_after
}

/// The name a statement assigns, when it is a plain variable (or the first
/// name of a tuple or a destructuring): the value a progress check can
/// watch. The value must come from a call (the model's reply, the agent's
/// step), not a constant.
fn assigned_name<'t>(
    statement: Node<'t>,
    source: &str,
    language: Language,
    assigned: &crate::facts::HashSet<String>,
) -> Option<(String, Node<'t>)> {
    let text = |node: Node<'_>| source.get(node.byte_range()).unwrap_or("").to_string();
    let has_call =
        |node: Node<'_>| contains_kind(node, &["call", "call_expression", "command_substitution", "await"]);
    // A plain name, or the first usable name of a pattern.
    let first_name = |node: Option<Node<'_>>| -> Option<String> {
        let node = node?;
        if matches!(node.kind(), "identifier" | "variable_name") {
            return Some(text(node));
        }
        if !matches!(
            node.kind(),
            "pattern_list"
                | "tuple_pattern"
                | "list_pattern"
                | "object_pattern"
                | "array_pattern"
                | "expression_list"
                | "tuple"
        ) {
            return None;
        }
        let mut cursor = node.walk();
        let names: Vec<String> = node
            .named_children(&mut cursor)
            .filter(|n| matches!(n.kind(), "identifier" | "shorthand_property_identifier_pattern"))
            .map(text)
            .collect();
        let usable: Vec<String> = names.into_iter().filter(|name| watchable(name)).collect();
        usable.iter().find(|name| says_it_is_the_work(name)).or(usable.first()).cloned()
    };
    let found = match language {
        Language::Python => {
            let assignment = statement.named_child(0).filter(|n| n.kind() == "assignment")?;
            let right = assignment.child_by_field_name("right")?;
            first_name(assignment.child_by_field_name("left")).filter(|_| has_call(right)).map(|n| (n, right))
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx => match statement.kind() {
            "lexical_declaration" | "variable_declaration" => {
                let declarator = statement.named_child(0).filter(|n| n.kind() == "variable_declarator")?;
                let value = declarator.child_by_field_name("value")?;
                first_name(declarator.child_by_field_name("name"))
                    .filter(|_| has_call(value))
                    .map(|n| (n, value))
            }
            "expression_statement" => {
                let assignment = statement.named_child(0).filter(|n| n.kind() == "assignment_expression")?;
                let right = assignment.child_by_field_name("right")?;
                first_name(assignment.child_by_field_name("left"))
                    .filter(|_| has_call(right))
                    .map(|n| (n, right))
            }
            _ => None,
        },
        Language::Go => {
            if !matches!(statement.kind(), "short_var_declaration" | "assignment_statement") {
                return None;
            }
            let right = statement.child_by_field_name("right")?;
            let left = statement.child_by_field_name("left")?;
            let mut cursor = left.walk();
            let name = left
                .named_children(&mut cursor)
                .filter(|n| n.kind() == "identifier")
                .map(text)
                .find(|name| name != "err" && name != "_" && watchable(name));
            name.filter(|_| has_call(right)).map(|n| (n, right))
        }
        Language::Rust => {
            if statement.kind() != "let_declaration" {
                return None;
            }
            let value = statement.child_by_field_name("value")?;
            first_name(statement.child_by_field_name("pattern"))
                .filter(|_| has_call(value))
                .map(|n| (n, value))
        }
        Language::Bash => {
            let assignment = if statement.kind() == "variable_assignment" {
                statement
            } else if statement.kind() == "declaration_command" {
                let mut cursor = statement.walk();
                let found = statement.named_children(&mut cursor).find(|n| n.kind() == "variable_assignment");
                found?
            } else {
                return None;
            };
            let value = assignment.child_by_field_name("value")?;
            first_name(assignment.child_by_field_name("name")).filter(|_| has_call(value)).map(|n| (n, value))
        }
    };
    found.filter(|(name, value)| {
        watchable(name) && moves_with_the_work(name, *value, source, assigned, language)
    })
}

/// Whether a name can be watched for progress. Not what the reader typed,
/// not an earlier value (already the other side of a comparison), not a
/// clock, a count or a spend (they move every pass whatever the work
/// does: the check would never fire), not a handle (a stream, a client, a
/// callback: the same object or a new one each pass, never the work), and
/// not a history (it grows every pass, so it never equals the last one),
/// not a yes or no (`stop`, `is_done`: two passes that both say no made no
/// progress only by chance),
/// not a one-letter name, which says too little.
fn watchable(name: &str) -> bool {
    let words = crate::words::split_identifier(name);
    name.chars().count() > 1
        && !name.starts_with('_')
        && !words.iter().any(|w| {
            matches!(
                w.as_str(),
                "input"
                    | "user"
                    | "prompt"
                    | "line"
                    | "cmd"
                    | "command"
                    | "error"
                    | "err"
                    | "errors"
                    | "prev"
                    | "previous"
                    | "last"
                    | "old"
                    | "before"
                    | "time"
                    | "timestamp"
                    | "date"
                    | "now"
                    | "started"
                    | "start"
                    | "ts"
                    | "stamp"
                    | "elapsed"
                    | "duration"
                    | "clock"
                    | "deadline"
                    | "count"
                    | "counter"
                    | "idx"
                    | "index"
                    | "cost"
                    | "tokens"
                    | "usage"
                    | "spent"
                    | "stream"
                    | "callback"
                    | "handler"
                    | "client"
                    | "session"
                    | "logger"
                    | "tracer"
                    | "span"
                    | "unit"
                    | "dir"
                    | "path"
                    | "file"
                    | "kwargs"
                    | "args"
                    | "options"
                    | "config"
                    | "settings"
                    | "lock"
                    | "thread"
                    | "timer"
                    | "controller"
                    | "signal"
                    | "socket"
                    | "conn"
                    | "connection"
                    | "cursor"
                    | "iterator"
                    | "generator"
                    | "writer"
                    | "reader"
                    | "id"
                    | "uuid"
                    | "ctx"
                    | "tx"
                    | "rx"
                    | "chan"
                    | "channel"
                    | "sender"
                    | "receiver"
                    | "copy"
                    | "history"
                    | "memory"
                    | "transcript"
                    | "trace"
                    | "conversation"
                    | "messages"
                    | "stop"
                    | "done"
                    | "finished"
                    | "ok"
                    | "success"
                    | "is"
                    | "has"
                    | "should"
                    | "can"
            )
        })
}

/// Names that say they hold what the pass produced.
fn says_it_is_the_work(name: &str) -> bool {
    crate::words::split_identifier(name).iter().any(|w| {
        matches!(
            w.as_str(),
            "response"
                | "reply"
                | "result"
                | "output"
                | "answer"
                | "plan"
                | "state"
                | "action"
                | "actions"
                | "code"
                | "diff"
                | "patch"
                | "draft"
                | "feedback"
                | "critique"
                | "observation"
                | "obs"
                | "content"
                | "text"
                | "summary"
                | "decision"
                | "completion"
                | "calls"
                | "status"
                | "verdict"
                | "score"
                | "scores"
                | "solution"
                | "proposal"
                | "changes"
        )
    })
}

/// Whether a value is what the work produced: not a clock, a random id, an
/// object made fresh each pass (`TaskFetchingUnit()`, `new Map()`) or a
/// history that only grows (`opts = append(opts, ...)`), which never equal
/// the last one, nor a copy or a conversion of something the pass does
/// not change (`self.config.name.clone()`, `len(summaries)`), which always
/// does: the check would never fire, or fire on the second pass.
fn moves_with_the_work(
    name: &str,
    value: Node<'_>,
    source: &str,
    assigned: &crate::facts::HashSet<String>,
    language: Language,
) -> bool {
    const CONVERSIONS: &[&str] = &[
        "clone",
        "to_string",
        "to_owned",
        "into",
        "unwrap",
        "unwrap_or",
        "unwrap_or_default",
        "as_str",
        "as_ref",
        "copy",
        "deepcopy",
        "str",
        "int",
        "float",
        "bool",
        "len",
        "list",
        "dict",
        "tuple",
        "set",
        "sorted",
        "String",
        "Number",
        "Boolean",
        "get",
        "getattr",
        "keys",
        "values",
        "items",
        "strip",
        "trim",
        "lower",
        "upper",
        "format",
        "join",
        "echo",
        "printf",
        "basename",
        "dirname",
        "cat",
        "toString",
        "toFixed",
        "parseFloat",
        "parseInt",
        "Sprintf",
        "Sprint",
        "min",
        "max",
        "abs",
        "round",
    ];
    let mut callees: Vec<(&str, Node<'_>)> = Vec::new();
    // Whether the value reads something the pass changes.
    let mut per_pass = false;
    let mut stack = vec![value];
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "identifier" | "variable_name") {
            let ident = source.get(node.byte_range()).unwrap_or("");
            per_pass |= ident != name && assigned.contains(ident);
        }
        let callee = match node.kind() {
            "call" | "call_expression" => node.child_by_field_name("function"),
            "command" => node.child_by_field_name("name"),
            "new_expression" => return false,
            _ => None,
        };
        if let Some(callee) = callee.and_then(|c| source.get(c.byte_range())) {
            let callee = callee.trim_end_matches(['!', '?']);
            callees.push((callee.rsplit(['.', ':']).next().unwrap_or(callee), node));
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    // (A message formatted for display is not the work.)
    if matches!(language, Language::Python | Language::JavaScript | Language::TypeScript | Language::Tsx)
        && matches!(value.kind(), "string" | "template_string")
    {
        return false;
    }
    // (Nor is a yes or no worked out from it: `res.indexOf(x) !== -1`.)
    let operator =
        value.child_by_field_name("operator").and_then(|o| source.get(o.byte_range())).unwrap_or("");
    if matches!(value.kind(), "comparison_operator" | "boolean_operator" | "not_operator")
        || (value.kind() == "binary_expression"
            && matches!(operator, "==" | "!=" | "===" | "!==" | "<" | ">" | "<=" | ">=" | "&&" | "||"))
        || (value.kind() == "unary_expression" && operator == "!")
    {
        return false;
    }
    // What a person typed is not the loop's progress either.
    let reads_a_person = callees.iter().any(|(callee, _)| {
        crate::words::split_identifier(callee)
            .iter()
            .any(|w| matches!(w.as_str(), "input" | "readline" | "editor" | "getpass" | "stdin"))
    });
    let made_fresh = callees.iter().any(|(callee, _)| {
        matches!(
            *callee,
            "new" | "default" | "channel" | "with_capacity" | "make" | "unbounded_channel" | "spawn"
        )
    });
    let clock = callees.iter().any(|(callee, _)| {
        crate::words::split_identifier(callee).iter().any(|w| {
            matches!(
                w.as_str(),
                "date"
                    | "time"
                    | "now"
                    | "monotonic"
                    | "perf"
                    | "uuid"
                    | "uuid4"
                    | "random"
                    | "randint"
                    | "sleep"
            )
        })
    });
    let grows = callees.iter().any(|(callee, call)| {
        matches!(*callee, "append" | "concat")
            && call.child_by_field_name("arguments").is_some_and(|args| {
                let mut cursor = args.walk();
                let found =
                    args.named_children(&mut cursor).any(|a| source.get(a.byte_range()) == Some(name));
                found
            })
    });
    // (A capital is a class in Python and JavaScript; in Go it is any
    // exported name.)
    let classes = !matches!(language, Language::Go | Language::Rust | Language::Bash);
    let fresh_object = classes && callees.len() == 1 && {
        let (callee, call) = callees[0];
        callee.starts_with(|c: char| c.is_ascii_uppercase())
            && call.child_by_field_name("arguments").is_some_and(|a| a.named_child_count() == 0)
    };
    let converts_only = !per_pass && callees.iter().all(|(callee, _)| CONVERSIONS.contains(callee));
    !clock && !grows && !fresh_object && !converts_only && !reads_a_person && !made_fresh
}

/// A statement that only calls the loop's step and drops what it returns
/// (`agent.step()`, `await runner.run(task)`): where the call starts. Only
/// where keeping a value needs no declared type (Python, JavaScript,
/// TypeScript), and only for a call whose name says it does the pass's work.
fn dropped_step_call(statement: Node<'_>, source: &str, language: Language) -> Option<usize> {
    if !matches!(language, Language::Python | Language::JavaScript | Language::TypeScript | Language::Tsx) {
        return None;
    }
    if statement.kind() != "expression_statement" {
        return None;
    }
    let expression = statement.named_child(0)?;
    let call = if expression.kind() == "await" || expression.kind() == "await_expression" {
        expression.named_child(0)?
    } else {
        expression
    };
    if !matches!(call.kind(), "call" | "call_expression") {
        return None;
    }
    let callee = call.child_by_field_name("function")?;
    let callee = source.get(callee.byte_range())?;
    let last = callee.rsplit(['.', ' ']).next().unwrap_or(callee);
    let words = crate::words::split_identifier(last);
    const STEP_WORDS: &[&str] = &[
        "step",
        "run",
        "act",
        "chat",
        "complete",
        "completion",
        "generate",
        "invoke",
        "ask",
        "query",
        "respond",
        "think",
        "plan",
        "execute",
        "perform",
        "attempt",
        "iterate",
        "turn",
        "solve",
        "improve",
        "refine",
        "retry",
    ];
    let first = words.first()?;
    STEP_WORDS.contains(&first.as_str()).then_some(expression.start_byte())
}

fn contains_kind(node: Node<'_>, kinds: &[&str]) -> bool {
    if kinds.contains(&node.kind()) {
        return true;
    }
    let mut cursor = node.walk();
    let found = node.named_children(&mut cursor).any(|child| contains_kind(child, kinds));
    found
}

// ---------------------------------------------------------------------------
// Recursion: a turn count handed on by each call.

/// Words of a parameter that already counts the recursion's turns.
const COUNT_PARAMETER_WORDS: &[&str] =
    &["depth", "turn", "step", "iter", "round", "attempt", "recursion", "level"];

fn recursion_plan(tree: &Tree, source: &str, language: Language, fact: &LoopFact) -> Option<Plan> {
    if !matches!(language, Language::Python | Language::JavaScript | Language::TypeScript | Language::Tsx) {
        return None;
    }
    let name = fact.function_name.as_deref()?;
    let function = tree.root_node().descendant_for_byte_range(fact.range.start, fact.range.end)?;
    let function = ancestors(function).find(|n| n.byte_range() == fact.range && is_function(n.kind()))?;
    let body = function.child_by_field_name("body")?;
    if !matches!(body.kind(), "block" | "statement_block") {
        return None;
    }
    let mut statements = body_statements(body);
    // (A docstring stays the first thing of a Python function.)
    let docstring = language == Language::Python
        && statements.first().is_some_and(|s| s.named_child(0).is_some_and(|n| n.kind() == "string"));
    if docstring {
        statements.remove(0);
    }
    let first = *statements.first()?;
    if first.start_position().row <= function.start_position().row
        || !starts_its_line(source, first.start_byte())
    {
        return None;
    }
    let inner = indentation_of_line(source, line_start(source, first.start_byte()));
    let at = if docstring {
        line_start(source, first.start_byte())
    } else {
        body_top(function, body, first, source)
    };
    let style = Style::of(language);
    let header_indent = indentation_of_line(source, line_start(source, function.start_byte()));
    let unit = style.unit(inner, header_indent);
    let leave = if returns_a_value(function, source) { Leave::Raise } else { Leave::Return };
    let calls = recursive_calls(function, name, source);
    let title = |counter: &str| {
        format!("Cap the turns: stop after {TURN_CAP} recursive calls (`{counter}`) even if it never decides it is done")
    };

    // A parameter that already counts the calls (`depth + 1` at each).
    if let Some(counter) = counting_parameter(function, &calls, source) {
        let cap = fresh_name(source, &style.names(&[&format!("max_{}", snake(&counter))]));
        return Some(Plan {
            exit: ExitId::E2,
            title: title(&counter),
            inserts: vec![(at, style.recursion_guard(&cap, &counter, inner, &unit, leave))],
            replaces: Vec::new(),
        });
    }
    let counter = fresh_name(source, &style.names(&["turns", "recursion_turns", "call_turns"]));
    let cap = fresh_name(source, &style.names(&["max_turns", "max_recursion_turns", "max_call_turns"]));

    // A function defined inside another: a counter of the enclosing call.
    if let Some(statement) = nested_definition(function, source) {
        let outer_at = line_start(source, statement.start_byte());
        let outer = indentation_of_line(source, outer_at);
        return Some(Plan {
            exit: ExitId::E2,
            title: title(&counter),
            inserts: vec![
                (outer_at, style.cap_declarations(&cap, &counter, outer)),
                (at, style.closure_cap_check(&cap, &counter, inner, &unit, leave)),
            ],
            replaces: Vec::new(),
        });
    }

    // Otherwise a parameter with a default, one more at each recursive call.
    let parameters = function.child_by_field_name("parameters")?;
    let mut inserts = vec![parameter_insert(parameters, &counter, source, language)?];
    for call in &calls {
        inserts.push(argument_insert(*call, parameters, &counter, source, language)?);
    }
    if calls.is_empty() {
        return None;
    }
    inserts.push((at, style.recursion_guard(&cap, &counter, inner, &unit, leave)));
    Some(Plan { exit: ExitId::E2, title: title(&counter), inserts, replaces: Vec::new() })
}

#[derive(Clone, Copy)]
enum Leave {
    Return,
    Raise,
}

fn is_function(kind: &str) -> bool {
    matches!(
        kind,
        "function_definition"
            | "function_declaration"
            | "function_expression"
            | "function"
            | "arrow_function"
            | "method_definition"
            | "generator_function_declaration"
            | "generator_function"
    )
}

fn ancestors(node: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    std::iter::successors(Some(node), |n| n.parent())
}

/// The calls inside `function` of itself (`name(...)`, `self.name(...)`,
/// `this.name(...)`), in source order.
fn recursive_calls<'t>(function: Node<'t>, name: &str, source: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![function];
    while let Some(node) = stack.pop() {
        if matches!(node.kind(), "call" | "call_expression") {
            if let Some(callee) = node.child_by_field_name("function") {
                let text = source.get(callee.byte_range()).unwrap_or("");
                let bare = matches!(
                    text.strip_suffix(name).map(|r| r.trim_end_matches(['.', '?'])),
                    Some("" | "self" | "this" | "cls")
                );
                if bare && node.child_by_field_name("arguments").is_some() {
                    out.push(node);
                }
            }
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out.sort_by_key(|n| n.start_byte());
    out
}

/// Whether `function` gives its caller a value (a `return value` of its
/// own, or a declared type other than nothing): a cap that stops it then
/// raises, since returning nothing would hand the caller a wrong value.
fn returns_a_value(function: Node<'_>, source: &str) -> bool {
    if let Some(declared) = function.child_by_field_name("return_type") {
        let text = source.get(declared.byte_range()).unwrap_or("");
        let text = text.trim_start_matches(':').trim();
        return !matches!(text, "None" | "void" | "Promise<void>" | "undefined" | "Promise<undefined>");
    }
    let mut stack = vec![function];
    while let Some(node) = stack.pop() {
        if node.id() != function.id() && is_function(node.kind()) {
            continue;
        }
        if matches!(node.kind(), "return_statement") && node.named_child_count() > 0 {
            let value = node.named_child(0).map(|v| source.get(v.byte_range()).unwrap_or(""));
            if !matches!(value, Some("None" | "undefined")) {
                return true;
            }
        }
        let mut cursor = node.walk();
        stack.extend(node.named_children(&mut cursor));
    }
    false
}

/// A parameter that already counts the turns: its name says so and every
/// recursive call hands on one more (`depth + 1`).
fn counting_parameter(function: Node<'_>, calls: &[Node<'_>], source: &str) -> Option<String> {
    if calls.is_empty() {
        return None;
    }
    let parameters = function.child_by_field_name("parameters")?;
    let mut cursor = parameters.walk();
    let names: Vec<String> =
        parameters.named_children(&mut cursor).filter_map(|p| parameter_name(p, source)).collect();
    names.into_iter().find(|name| {
        let words = crate::words::canonical_words(name);
        words.iter().any(|w| COUNT_PARAMETER_WORDS.contains(&w.as_str()))
            && calls.iter().all(|call| {
                let text = source.get(call.byte_range()).unwrap_or("");
                text.contains(&format!("{name} + 1")) || text.contains(&format!("{name}+1"))
            })
    })
}

fn parameter_name(parameter: Node<'_>, source: &str) -> Option<String> {
    let text = |n: Node<'_>| source.get(n.byte_range()).unwrap_or("").to_string();
    let node = match parameter.kind() {
        "identifier" => parameter,
        "default_parameter" | "typed_default_parameter" => parameter.child_by_field_name("name")?,
        "typed_parameter" => parameter.named_child(0)?,
        "assignment_pattern" => parameter.child_by_field_name("left")?,
        "required_parameter" | "optional_parameter" => parameter.child_by_field_name("pattern")?,
        _ => return None,
    };
    (node.kind() == "identifier").then(|| text(node))
}

/// For a function defined in another function's body: the statement that
/// defines it (`def inner():`, `function inner() {}`, `const inner = () =>
/// {}`), where a counter of the enclosing call can go just before. Python
/// then declares the counter `nonlocal`. A function declaration that the
/// enclosing body calls before it is defined is left alone (the counter
/// would not exist yet).
fn nested_definition<'t>(function: Node<'t>, source: &str) -> Option<Node<'t>> {
    let statement = match function.kind() {
        "function_definition" | "function_declaration" | "generator_function_declaration" => {
            let parent = function.parent()?;
            if parent.kind() == "decorated_definition" {
                parent
            } else {
                function
            }
        }
        "arrow_function" | "function_expression" | "function" => {
            let declarator = function.parent().filter(|p| p.kind() == "variable_declarator")?;
            declarator
                .parent()
                .filter(|p| matches!(p.kind(), "lexical_declaration" | "variable_declaration"))?
        }
        _ => return None,
    };
    let block = statement.parent().filter(|p| matches!(p.kind(), "block" | "statement_block"))?;
    let enclosing = block.parent().filter(|p| is_function(p.kind()))?;
    if !starts_its_line(source, statement.start_byte()) {
        return None;
    }
    if function.kind() == "function_declaration" {
        let name = function.child_by_field_name("name").and_then(|n| source.get(n.byte_range()))?;
        let early = recursive_calls(enclosing, name, source).into_iter().any(|call| {
            call.start_byte() < statement.start_byte() && enclosing_function(call) == Some(enclosing)
        });
        if early {
            return None;
        }
    }
    Some(statement)
}

fn enclosing_function(node: Node<'_>) -> Option<Node<'_>> {
    ancestors(node).skip(1).find(|n| is_function(n.kind()))
}

/// The new parameter, with its default of zero, after the last one (before
/// Python's `**kwargs`). None where a parameter list cannot take one more
/// that every caller leaves out (a rest parameter).
fn parameter_insert(
    parameters: Node<'_>,
    counter: &str,
    source: &str,
    language: Language,
) -> Option<(usize, String)> {
    let mut cursor = parameters.walk();
    let list: Vec<Node<'_>> =
        parameters.named_children(&mut cursor).filter(|n| !n.kind().contains("comment")).collect();
    let declared =
        if language == Language::Python { format!("{counter}=0") } else { format!("{counter} = 0") };
    if !matches!(parameters.kind(), "parameters" | "formal_parameters") {
        return None;
    }
    let rest = |n: &Node<'_>| {
        n.kind() == "rest_pattern" || (n.named_child(0).is_some_and(|c| c.kind() == "rest_pattern"))
    };
    if list.iter().any(rest) {
        return None;
    }
    if let Some(kwargs) = list.iter().find(|n| n.kind() == "dictionary_splat_pattern") {
        return Some((kwargs.start_byte(), format!("{declared}, ")));
    }
    append_item(parameters, &list, &declared, source)
}

/// One more turn handed on by a recursive call: a keyword argument in
/// Python; in JavaScript the next positional argument, only when the call
/// passes every parameter before it.
fn argument_insert(
    call: Node<'_>,
    parameters: Node<'_>,
    counter: &str,
    source: &str,
    language: Language,
) -> Option<(usize, String)> {
    let arguments = call.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let list: Vec<Node<'_>> =
        arguments.named_children(&mut cursor).filter(|n| !n.kind().contains("comment")).collect();
    let value = if language == Language::Python {
        format!("{counter}={counter} + 1")
    } else {
        let mut cursor = parameters.walk();
        let count = parameters.named_children(&mut cursor).filter(|n| !n.kind().contains("comment")).count();
        if list.len() != count || list.iter().any(|n| n.kind() == "spread_element") {
            return None;
        }
        format!("{counter} + 1")
    };
    append_item(arguments, &list, &value, source)
}

fn snake(name: &str) -> String {
    crate::words::split_identifier(name).join("_")
}

// ---------------------------------------------------------------------------
// Frameworks: their own settings.

fn framework_plan(
    tree: &Tree,
    source: &str,
    language: Language,
    fact: &LoopFact,
    missing: Missing,
) -> Option<Plan> {
    let framework = fact.framework?;
    if framework == "ai-sdk" && missing == Missing::Detect {
        return ai_sdk_progress(tree, source, language, fact);
    }
    if framework == "tanstack-ai" && missing == Missing::Detect {
        return tanstack_completion(tree, source, fact);
    }
    if framework == "fantasy" && missing == Missing::Detect && language == Language::Go {
        return fantasy_progress(tree, source, fact);
    }
    if language != Language::Python {
        return None;
    }
    let calls = calls_of(tree.root_node());
    match missing {
        Missing::Bound => {
            let (callees, keyword, value): (&[&str], &str, String) = match framework {
                "openai-agents" => (
                    &["Runner.run", "Runner.run_sync", "Runner.run_streamed"],
                    "max_turns",
                    TURN_CAP.to_string(),
                ),
                "crewai" => (&["Agent"], "max_iter", TURN_CAP.to_string()),
                "smolagents" => {
                    (&["CodeAgent", "ToolCallingAgent", "MultiStepAgent"], "max_steps", TURN_CAP.to_string())
                }
                "langchain" => {
                    (&["AgentExecutor", "initialize_agent"], "max_iterations", TURN_CAP.to_string())
                }
                "langgraph" => (
                    &["invoke", "ainvoke", "stream", "astream"],
                    "config",
                    format!("{{\"recursion_limit\": {TURN_CAP}}}"),
                ),
                _ => return None,
            };
            // (LangGraph's limit goes to the run of the compiled graph, not
            // to a model's `invoke` inside a node.)
            let graphs = compiled_graphs(&calls, source);
            let targets: Vec<Node<'_>> = calls
                .iter()
                .copied()
                .filter(|call| {
                    let callee = callee_text(*call, source);
                    let named = callees
                        .iter()
                        .any(|c| callee == *c || (!c.contains('.') && callee.rsplit('.').next() == Some(c)));
                    let receiver = callee.rsplit_once('.').map_or("", |(r, _)| r);
                    named && (framework != "langgraph" || graphs.iter().any(|g| g == receiver))
                })
                .collect();
            let mut inserts = Vec::new();
            for call in targets.iter().take(if framework == "langgraph" { 1 } else { usize::MAX }) {
                if has_keyword(*call, keyword, source) {
                    if framework == "langgraph" {
                        return None;
                    }
                    continue;
                }
                if framework == "langgraph" && positional_count(*call) > 1 {
                    return None;
                }
                inserts.push(keyword_insert(*call, &format!("{keyword}={value}"), source)?);
            }
            if inserts.is_empty() {
                return None;
            }
            let what = match framework {
                "langgraph" => format!("`recursion_limit` of {TURN_CAP} steps"),
                _ => format!("`{keyword}={TURN_CAP}`"),
            };
            Some(Plan {
                exit: ExitId::E2,
                title: format!(
                    "Cap the turns: give the run an explicit {what} instead of relying on the default"
                ),
                inserts,
                replaces: Vec::new(),
            })
        }
        Missing::Detect => match framework {
            "autogen" => autogen_completion(&calls, source),
            "langgraph" => langgraph_completion(&calls, source),
            "smolagents" => smolagents_completion(&calls, source),
            "crewai" => crewai_completion(&calls, source),
            "openai-agents" => openai_agents_completion(&calls, source),
            _ => None,
        },
    }
}

/// The AI SDK's loop given a stop condition of its own that ends the run
/// when a step makes the same tool calls as the step before it, beside the
/// conditions it has (`stopWhen: [stepCountIs(5), repeatsPreviousStep]`).
/// An agent framework's method on top of the AI SDK that takes its options
/// and is bounded by `maxSteps` alone (VoltAgent's `agent.generateText(input,
/// { maxSteps: 4 })`) hands `stopWhen` to the AI SDK in place of the step
/// count: the cap moves into it as `stepCountIs(4)`, imported from `ai`.
fn ai_sdk_progress(tree: &Tree, source: &str, language: Language, fact: &LoopFact) -> Option<Plan> {
    let call = tree.root_node().descendant_for_byte_range(fact.range.start, fact.range.end)?;
    let call = ancestors(call).find(|n| n.byte_range() == fact.range)?;
    // The `stopWhen:` (or `maxSteps:`) of the call's options.
    let option = |key: &str| {
        let mut stack = vec![call];
        while let Some(node) = stack.pop() {
            if node.kind() == "pair"
                && node.child_by_field_name("key").and_then(|k| source.get(k.byte_range())) == Some(key)
            {
                return Some(node);
            }
            if node.id() != call.id() && is_function(node.kind()) {
                continue;
            }
            let mut cursor = node.walk();
            stack.extend(node.named_children(&mut cursor));
        }
        None
    };
    let (value, steps) = match option("stopWhen") {
        Some(pair) => (pair.child_by_field_name("value")?, None),
        None => {
            let pair = option("maxSteps")?;
            // A method that takes its input and then its options (the AI
            // SDK's own `generateText`, even as `ai.generateText`, takes one
            // object, and with `maxSteps` is AI SDK 4, which has no
            // `stopWhen`).
            let method =
                call.child_by_field_name("function").is_some_and(|f| f.kind() == "member_expression");
            let options = pair.parent().filter(|o| o.kind() == "object");
            let second = options.is_some_and(|o| {
                o.parent().is_some_and(|a| {
                    a.kind() == "arguments"
                        && a.id() == call.child_by_field_name("arguments").map_or(0, |n| n.id())
                }) && o.prev_named_sibling().is_some()
            });
            let count = pair.child_by_field_name("value")?;
            if !method || !second || pair.start_position().row != pair.end_position().row {
                return None;
            }
            (pair, Some(source.get(count.byte_range())?))
        }
    };
    if value.start_position().row != value.end_position().row {
        return None;
    }
    // The statement that makes the call, where the condition is defined
    // just before.
    let statement = ancestors(call)
        .find(|n| n.parent().is_some_and(|p| matches!(p.kind(), "statement_block" | "program")))?;
    if !starts_its_line(source, statement.start_byte()) {
        return None;
    }
    let at = line_start(source, statement.start_byte());
    let indent = indentation_of_line(source, at);
    let style = Style::of(language);
    let unit = style.unit("", indent);
    let name = fresh_name(source, &style.names(&["repeats_previous_step", "same_step_twice"]));
    let steps_type =
        if language == Language::JavaScript { "" } else { ": { steps: Array<{ toolCalls: unknown[] }> }" };
    let definition = format!(
        "{indent}// Stop when a step makes the same tool calls as the step before it: the run is going round.\n\
         {indent}const {name} = ({{ steps }}{steps_type}) => {{\n\
         {indent}{unit}const [previous, current] = steps.slice(-2).map((step) => JSON.stringify(step.toolCalls));\n\
         {indent}{unit}return steps.length > 1 && current === previous;\n\
         {indent}}};\n"
    );
    if let Some(count) = steps {
        let imported = import_names_insert(source, "ai", "stepCountIs")?;
        return Some(Plan {
            exit: ExitId::E5,
            title: "Stop when a round changes nothing: a stop condition that ends the run when a step repeats the last step's tool calls (the step cap moves into `stopWhen` as `stepCountIs`)".to_string(),
            inserts: vec![imported, (at, definition)],
            replaces: vec![(value.byte_range(), format!("stopWhen: [stepCountIs({count}), {name}]"))],
        });
    }
    let mut inserts = vec![(at, definition)];
    if value.kind() == "array" {
        let mut cursor = value.walk();
        let last = value.named_children(&mut cursor).filter(|n| !n.kind().contains("comment")).last()?;
        inserts.push((last.end_byte(), format!(", {name}")));
    } else {
        inserts.push((value.start_byte(), "[".to_string()));
        inserts.push((value.end_byte(), format!(", {name}]")));
    }
    Some(Plan {
        exit: ExitId::E5,
        title: "Stop when a round changes nothing: a stop condition that ends the run when a step repeats the last step's tool calls".to_string(),
        inserts,
        replaces: Vec::new(),
    })
}

/// A fantasy agent (Go) given a stop condition of the file's own that ends
/// the run when a step makes the same tool calls (names and inputs) as the
/// step before it: added to its `WithStopConditions(...)`, or given as one.
/// The condition is a top-level function, defined before the declaration
/// that makes the agent.
fn fantasy_progress(tree: &Tree, source: &str, fact: &LoopFact) -> Option<Plan> {
    let call = tree.root_node().descendant_for_byte_range(fact.range.start, fact.range.end)?;
    let call = ancestors(call).find(|n| n.byte_range() == fact.range && n.kind() == "call_expression")?;
    let callee = callee_text(call, source);
    let package = callee.rsplit_once('.').map_or(String::new(), |(p, _)| format!("{p}."));
    let name =
        fresh_name(source, &Style::of(Language::Go).names(&["repeats_previous_step", "same_step_twice"]));
    let arguments = call.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let options: Vec<Node<'_>> =
        arguments.named_children(&mut cursor).filter(|n| !n.kind().contains("comment")).collect();
    let stop_conditions = options.iter().copied().find(|option| {
        option.kind() == "call_expression" && callee_text(*option, source).ends_with("WithStopConditions")
    });
    let handed = match stop_conditions {
        Some(option) => {
            let list = option.child_by_field_name("arguments")?;
            let mut cursor = list.walk();
            let conditions: Vec<Node<'_>> =
                list.named_children(&mut cursor).filter(|n| !n.kind().contains("comment")).collect();
            append_item(list, &conditions, &name, source)?
        }
        None => append_item(arguments, &options, &format!("{package}WithStopConditions({name})"), source)?,
    };
    // Before the top-level declaration that makes the agent, above the
    // comments just over it.
    let top = ancestors(call).find(|n| n.parent().is_some_and(|p| p.kind() == "source_file"))?;
    if top.start_position().column != 0 {
        return None;
    }
    let mut at = line_start(source, top.start_byte());
    while at > 0 {
        let previous = line_start(source, at - 1);
        if !source[previous..at].trim_start().starts_with("//") {
            break;
        }
        at = previous;
    }
    let definition = format!(
        "// {name} ends the run when a step makes the same tool calls as the step\n\
         // before it: the run is going round.\n\
         func {name}(steps []{package}StepResult) bool {{\n\
         \tif len(steps) < 2 {{\n\
         \t\treturn false\n\
         \t}}\n\
         \tprevious, current := \"\", \"\"\n\
         \tfor _, call := range steps[len(steps)-2].Content.ToolCalls() {{\n\
         \t\tprevious += call.ToolName + \"(\" + call.Input + \")\\n\"\n\
         \t}}\n\
         \tfor _, call := range steps[len(steps)-1].Content.ToolCalls() {{\n\
         \t\tcurrent += call.ToolName + \"(\" + call.Input + \")\\n\"\n\
         \t}}\n\
         \treturn current == previous\n\
         }}\n\n"
    );
    Some(Plan {
        exit: ExitId::E5,
        title: "Stop when a round changes nothing: a stop condition that ends the run when a step repeats the last step's tool calls (fantasy's `WithStopConditions`)".to_string(),
        inserts: vec![(at, definition), handed],
        replaces: Vec::new(),
    })
}

/// TanStack AI's `chat()` run bounded by its loop strategy alone
/// (`agentLoopStrategy: maxIterations(10)`): the strategy is combined with
/// `untilFinishReason(['stop'])`, which ends the run on the model's own
/// finish reason, the cap kept beside it.
fn tanstack_completion(tree: &Tree, source: &str, fact: &LoopFact) -> Option<Plan> {
    let call = tree.root_node().descendant_for_byte_range(fact.range.start, fact.range.end)?;
    let call = ancestors(call).find(|n| n.byte_range() == fact.range)?;
    let arguments = call.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let options = arguments.named_children(&mut cursor).find(|a| a.kind() == "object")?;
    let mut cursor = options.walk();
    let pair = options.named_children(&mut cursor).find(|p| {
        p.kind() == "pair"
            && p.child_by_field_name("key").and_then(|k| source.get(k.byte_range()))
                == Some("agentLoopStrategy")
    })?;
    let value = pair.child_by_field_name("value")?;
    let names = ["combineStrategies", "untilFinishReason"];
    if value.start_position().row != value.end_position().row || names.iter().any(|n| source.contains(n)) {
        return None;
    }
    let quote = if source.get(value.byte_range())?.contains('"') { '"' } else { '\'' };
    Some(Plan {
        exit: ExitId::E1,
        title: "Stop when the work is done: end the run on the model's own finish reason, beside the iteration cap (TanStack AI's `untilFinishReason`)".to_string(),
        inserts: vec![import_names_insert(source, "@tanstack/ai", &names.join(", "))?],
        replaces: vec![(
            value.byte_range(),
            format!("combineStrategies([{}, untilFinishReason([{quote}stop{quote}])])", source.get(value.byte_range())?),
        )],
    })
}

/// `name` (one name, or several joined by ", ") added to a JavaScript
/// import from `module`: inside its braces when it is written on one line
/// (`import { generateText } from "ai";`), or on lines of their own before
/// the closing brace when its names stand one to a line; else a new import
/// line before the first import, in that import's quotes and with a
/// semicolon only if it has one (or at the top).
fn import_names_insert(source: &str, module: &str, name: &str) -> Option<(usize, String)> {
    let mut offset = 0;
    // The first import's offset, quote, semicolon and whether it is written
    // over lines (its quote and semicolon then come from its closing line).
    let mut first_import: Option<(usize, char, &str, bool)> = None;
    // The names of an import whose braces are still open.
    let mut open_import: Option<Vec<&str>> = None;
    let from_module = |text: &str| {
        [format!("from \"{module}\""), format!("from '{module}'")]
            .iter()
            .any(|f| text.trim_end_matches(';').ends_with(f.as_str()))
    };
    for line in source.split_inclusive('\n') {
        let text = line.trim_end();
        if let Some(names) = open_import.as_mut() {
            if let Some(close) = text.find('}') {
                // A first import written over lines gives its quotes and
                // semicolon on its closing line.
                if let Some(first) = first_import.as_mut().filter(|f| f.3) {
                    *first = (
                        first.0,
                        if text.contains('\'') { '\'' } else { '"' },
                        if text.ends_with(';') { ";" } else { "" },
                        false,
                    );
                }
                let listed = names.iter().any(|n| n.trim().trim_end_matches(',') == name);
                let closing_alone = text[..close].trim().is_empty();
                if from_module(text) && closing_alone {
                    if listed {
                        return Some((offset, String::new()));
                    }
                    // (A last name without its comma would need one first.)
                    if names.last().is_some_and(|n| !n.trim_end().ends_with(',')) {
                        return None;
                    }
                    let indent = names
                        .last()
                        .map(|n| &n[..n.len() - n.trim_start().len()])
                        .filter(|i| !i.is_empty())
                        .unwrap_or("  ");
                    let added: String = name.split(", ").map(|n| format!("{indent}{n},\n")).collect();
                    return Some((offset, added));
                }
                open_import = None;
            } else {
                names.push(line.trim_end_matches('\n'));
            }
            offset += line.len();
            continue;
        }
        if text.starts_with("import ") {
            let semicolon = if text.ends_with(';') { ";" } else { "" };
            first_import.get_or_insert((
                offset,
                if text.contains('\'') { '\'' } else { '"' },
                semicolon,
                text.ends_with('{'),
            ));
            if !text.starts_with("import type") {
                if text.ends_with('{') {
                    open_import = Some(Vec::new());
                } else if from_module(text) {
                    if let (Some(open), Some(close)) = (text.find('{'), text.find('}')) {
                        let names = &text[open + 1..close];
                        if names.split(',').any(|n| n.trim() == name) {
                            return Some((offset, String::new()));
                        }
                        let end = offset + open + 1 + names.trim_end().len();
                        let comma = if names.trim().is_empty() { " " } else { ", " };
                        return Some((end, format!("{comma}{name}")));
                    }
                }
            }
        }
        offset += line.len();
    }
    let (at, quote, semicolon, _) = first_import.unwrap_or((0, '"', ";", false));
    Some((at, format!("import {{ {name} }} from {quote}{module}{quote}{semicolon}\n")))
}

/// AutoGen's team ends when an agent says TERMINATE: added to the team's
/// termination condition (or given as one), with its import.
fn autogen_completion(calls: &[Node<'_>], source: &str) -> Option<Plan> {
    const TEAMS: &[&str] = &["RoundRobinGroupChat", "SelectorGroupChat", "Swarm", "MagenticOneGroupChat"];
    let team = calls
        .iter()
        .copied()
        .find(|c| TEAMS.iter().any(|t| callee_text(*c, source).rsplit('.').next() == Some(t)))?;
    let mention = "TextMentionTermination(\"TERMINATE\")";
    let mut inserts = Vec::new();
    match keyword_value(team, "termination_condition", source) {
        Some(value) => inserts.push((value.end_byte(), format!(" | {mention}"))),
        None => inserts.push(keyword_insert(team, &format!("termination_condition={mention}"), source)?),
    }
    inserts.push(import_insert(source, "autogen_agentchat.conditions", "TextMentionTermination")?);
    Some(Plan {
        exit: ExitId::E1,
        title: "Stop when the work is done: end the run when an agent says TERMINATE (ask for it in the agents' system messages)".to_string(),
        inserts,
        replaces: Vec::new(),
    })
}

/// A smolagents agent ends when the model calls `final_answer`, whatever it
/// answers: `final_answer_checks` makes it finish only on an answer that
/// passes a check of the file's own (an empty answer is not the work done),
/// defined before the code that makes the agent. (The library calls each
/// check with the answer and the agent's memory, newer versions also with
/// `agent=`.)
fn smolagents_completion(calls: &[Node<'_>], source: &str) -> Option<Plan> {
    let inserts = check_handed_to(
        calls,
        source,
        &["CodeAgent", "ToolCallingAgent", "MultiStepAgent"],
        "final_answer_checks",
        &["final_answer_is_complete", "answer_is_complete"],
        |name| {
            format!("def {name}(final_answer, memory, agent=None):\n    \"\"\"Accept the final answer only when the work is done: an empty answer is not (add the task's own test here).\"\"\"\n    return final_answer is not None and str(final_answer).strip() != \"\"\n")
        },
        |name| format!("[{name}]"),
    )?;
    Some(Plan {
        exit: ExitId::E1,
        title: "Stop when the work is done: accept the final answer only when it passes a check (smolagents' `final_answer_checks`)".to_string(),
        inserts,
        replaces: Vec::new(),
    })
}

/// A check of the file's own handed to every call of one of `classes` as
/// `keyword` (its value `value(name)`), the function (`definition(name)`,
/// under the first name of `names` the file does not use) defined above the
/// code that makes the first of them. None when no call makes one of them,
/// or one already has the keyword.
fn check_handed_to(
    calls: &[Node<'_>],
    source: &str,
    classes: &[&str],
    keyword: &str,
    names: &[&str],
    definition: impl Fn(&str) -> String,
    value: impl Fn(&str) -> String,
) -> Option<Vec<(usize, String)>> {
    let made: Vec<Node<'_>> = calls
        .iter()
        .copied()
        .filter(|c| callee_text(*c, source).rsplit('.').next().is_some_and(|last| classes.contains(&last)))
        .collect();
    if made.is_empty() || made.iter().any(|c| has_keyword(*c, keyword, source)) {
        return None;
    }
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let name = fresh_name(source, &names);
    let mut inserts = vec![definition_before(made[0], &definition(&name), source)?];
    for call in made {
        inserts.push(keyword_insert(call, &format!("{keyword}={}", value(&name)), source)?);
    }
    Some(inserts)
}

/// A top-level function definition (`definition`, ending in one newline)
/// put before the top-level statement that holds `call`, above the comments
/// and decorators just over it, with two blank lines around it.
fn definition_before(call: Node<'_>, definition: &str, source: &str) -> Option<(usize, String)> {
    let top = ancestors(call).find(|n| n.parent().is_some_and(|p| p.kind() == "module"))?;
    let mut at = line_start(source, top.start_byte());
    if !starts_its_line(source, top.start_byte()) || top.start_position().column != 0 {
        return None;
    }
    while at > 0 {
        let previous = line_start(source, at - 1);
        let line = source[previous..at].trim_start();
        if !line.starts_with('#') && !line.starts_with('@') {
            break;
        }
        at = previous;
    }
    let before = if at == 0 || source[..at].ends_with("\n\n") { "" } else { "\n\n" };
    Some((at, format!("{before}{definition}\n\n")))
}

/// A CrewAI task is done when its agent gives a final answer, whatever it
/// says: a `guardrail` accepts the output only when it passes a check of
/// the file's own, and sends it back to the agent otherwise (an empty
/// output is not the work done).
fn crewai_completion(calls: &[Node<'_>], source: &str) -> Option<Plan> {
    let inserts = check_handed_to(
        calls,
        source,
        &["Task"],
        "guardrail",
        &["output_is_complete", "task_output_is_complete"],
        |name| {
            format!("def {name}(output):\n    \"\"\"Accept the task's output only when the work is done: an empty one is not (add the task's own test here).\"\"\"\n    text = str(getattr(output, \"raw\", output)).strip()\n    return (True, output) if text else (False, \"The output is empty: finish the task.\")\n")
        },
        str::to_string,
    )?;
    Some(Plan {
        exit: ExitId::E1,
        title: "Stop when the work is done: accept a task's output only when it passes a check (CrewAI's `guardrail`)".to_string(),
        inserts,
        replaces: Vec::new(),
    })
}

/// An OpenAI Agents run ends when the model answers without a tool call,
/// whatever it answers: `tool_use_behavior` with a function of the file's
/// own ends it as soon as a tool reports the work done, with that tool's
/// output as the final one.
fn openai_agents_completion(calls: &[Node<'_>], source: &str) -> Option<Plan> {
    let mut inserts = check_handed_to(
        calls,
        source,
        &["Agent"],
        "tool_use_behavior",
        &["stop_when_done", "stop_when_work_done"],
        |name| {
            format!("def {name}(context, tool_results):\n    \"\"\"End the run when a tool reports the work done (put the task's own test here).\"\"\"\n    for result in tool_results:\n        if str(result.output).strip().upper().startswith(\"DONE\"):\n            return ToolsToFinalOutputResult(is_final_output=True, final_output=result.output)\n    return ToolsToFinalOutputResult(is_final_output=False, final_output=None)\n")
        },
        str::to_string,
    )?;
    inserts.insert(0, import_insert(source, "agents", "ToolsToFinalOutputResult")?);
    Some(Plan {
        exit: ExitId::E1,
        title: "Stop when the work is done: end the run when a tool reports it (the Agents SDK's `tool_use_behavior`)".to_string(),
        inserts,
        replaces: Vec::new(),
    })
}

/// A LangGraph agent whose model node always goes on to the tools: route
/// with `tools_condition`, which goes to the tools only when the model asks
/// for one and ends the run otherwise.
fn langgraph_completion(calls: &[Node<'_>], source: &str) -> Option<Plan> {
    let edge = calls.iter().copied().find(|call| {
        callee_text(*call, source).ends_with(".add_edge")
            && call.child_by_field_name("arguments").is_some_and(|args| {
                let mut cursor = args.walk();
                let list: Vec<Node<'_>> = args.named_children(&mut cursor).collect();
                list.len() == 2 && source.get(list[1].byte_range()) == Some("\"tools\"")
            })
    })?;
    let callee = edge.child_by_field_name("function")?;
    let second = edge.child_by_field_name("arguments")?.named_child(1)?;
    let name_end = callee.end_byte();
    let name_start = name_end - "add_edge".len();
    if edge.start_position().row != edge.end_position().row {
        return None;
    }
    Some(Plan {
        exit: ExitId::E1,
        title: "Stop when the work is done: go to the tools only when the model asks for one, else end the run (`tools_condition`)".to_string(),
        inserts: vec![import_insert(source, "langgraph.prebuilt", "tools_condition")?],
        replaces: vec![
            (name_start..name_end, "add_conditional_edges".to_string()),
            (second.byte_range(), "tools_condition".to_string()),
        ],
    })
}

/// The names a LangGraph graph is compiled into (`app = graph.compile()`,
/// `agent = create_react_agent(...)`, or `app = build()` where `build`
/// returns one of those).
fn compiled_graphs(calls: &[Node<'_>], source: &str) -> Vec<String> {
    let compiles = |call: Node<'_>| {
        let callee = callee_text(call, source);
        callee.ends_with(".compile") || callee == "create_react_agent"
    };
    let builders: Vec<&str> = calls
        .iter()
        .filter(|call| compiles(**call) && call.parent().is_some_and(|p| p.kind() == "return_statement"))
        .filter_map(|call| {
            let function = ancestors(*call).find(|n| n.kind() == "function_definition")?;
            source.get(function.child_by_field_name("name")?.byte_range())
        })
        .collect();
    calls
        .iter()
        .filter(|call| compiles(**call) || builders.contains(&callee_text(**call, source)))
        .filter_map(|call| {
            let assignment = call.parent().filter(|p| p.kind() == "assignment")?;
            let left = assignment.child_by_field_name("left").filter(|l| l.kind() == "identifier")?;
            source.get(left.byte_range()).map(str::to_string)
        })
        .collect()
}

/// Every call of a Python tree, in source order.
fn calls_of<'t>(root: Node<'t>) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.kind() == "call" {
            out.push(node);
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

fn callee_text<'s>(call: Node<'_>, source: &'s str) -> &'s str {
    call.child_by_field_name("function").and_then(|f| source.get(f.byte_range())).unwrap_or("")
}

fn keyword_value<'t>(call: Node<'t>, keyword: &str, source: &str) -> Option<Node<'t>> {
    let arguments = call.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let found = arguments.named_children(&mut cursor).find(|a| {
        a.kind() == "keyword_argument"
            && a.child_by_field_name("name").and_then(|n| source.get(n.byte_range())) == Some(keyword)
    });
    found.and_then(|a| a.child_by_field_name("value"))
}

fn has_keyword(call: Node<'_>, keyword: &str, source: &str) -> bool {
    keyword_value(call, keyword, source).is_some()
}

fn positional_count(call: Node<'_>) -> usize {
    let Some(arguments) = call.child_by_field_name("arguments") else { return 0 };
    let mut cursor = arguments.walk();
    let count = arguments
        .named_children(&mut cursor)
        .filter(|a| !matches!(a.kind(), "keyword_argument" | "comment" | "dictionary_splat"))
        .count();
    count
}

/// A keyword argument added to a call.
fn keyword_insert(call: Node<'_>, argument: &str, source: &str) -> Option<(usize, String)> {
    let arguments = call.child_by_field_name("arguments")?;
    let mut cursor = arguments.walk();
    let list: Vec<Node<'_>> =
        arguments.named_children(&mut cursor).filter(|n| n.kind() != "comment").collect();
    append_item(arguments, &list, argument, source)
}

/// An item added at the end of a parenthesized list (arguments,
/// parameters): after its last item on the same line, or, when the items
/// stand one to a line with a trailing comma, on a line of its own.
fn append_item(list: Node<'_>, items: &[Node<'_>], item: &str, source: &str) -> Option<(usize, String)> {
    let Some(last) = items.last() else {
        let open = source.get(list.byte_range())?.find(['(', '{'])?;
        return Some((list.start_byte() + open + 1, item.to_string()));
    };
    let own_line =
        starts_its_line(source, last.start_byte()) && last.start_position().row > list.start_position().row;
    if own_line {
        let line_end = next_line_start(source, last.end_byte());
        // (A comment may follow the comma: `max_steps=50,  # more room`.)
        let rest = source[last.end_byte()..line_end].trim();
        let after_comma = rest.strip_prefix(',').map(str::trim_start);
        if after_comma.is_some_and(|r| r.is_empty() || r.starts_with('#') || r.starts_with("//")) {
            let indent = indentation_of_line(source, line_start(source, last.start_byte()));
            return Some((line_end, format!("{indent}{item},\n")));
        }
    }
    Some((last.end_byte(), format!(", {item}")))
}

/// The name added to an existing `from MODULE import ...` line, or a new
/// import line before the first line of code.
fn import_insert(source: &str, module: &str, name: &str) -> Option<(usize, String)> {
    let prefix = format!("from {module} import ");
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        if let Some(names) = line.strip_prefix(&prefix) {
            let names = names.trim_end();
            if names.split(',').any(|n| n.trim() == name) {
                return Some((offset, String::new()));
            }
            if !names.contains('(') && !names.ends_with('\\') {
                return Some((offset + prefix.len() + names.len(), format!(", {name}")));
            }
        }
        offset += line.len();
    }
    // Before the first import, or at the top.
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        if line.starts_with("import ") || line.starts_with("from ") {
            return Some((offset, format!("from {module} import {name}\n")));
        }
        offset += line.len();
    }
    Some((0, format!("from {module} import {name}\n")))
}

// ---------------------------------------------------------------------------
// How each language writes the suggestions.

struct Style {
    language: Language,
}

impl Style {
    fn of(language: Language) -> Style {
        Style { language }
    }

    fn camel(&self) -> bool {
        matches!(self.language, Language::JavaScript | Language::TypeScript | Language::Tsx | Language::Go)
    }

    fn script(&self) -> bool {
        matches!(self.language, Language::JavaScript | Language::TypeScript | Language::Tsx)
    }

    /// Names in the language's case.
    fn names(&self, snake: &[&str]) -> Vec<String> {
        snake
            .iter()
            .map(|name| {
                if !self.camel() {
                    return name.to_string();
                }
                let mut out = String::new();
                let mut upper = false;
                for c in name.chars() {
                    if c == '_' {
                        upper = true;
                    } else if upper {
                        out.extend(c.to_uppercase());
                        upper = false;
                    } else {
                        out.push(c);
                    }
                }
                out
            })
            .collect()
    }

    /// One level of indentation, as the source writes it.
    fn unit(&self, inner: &str, outer: &str) -> String {
        let step = inner.strip_prefix(outer).unwrap_or("");
        if !step.is_empty() {
            step.to_string()
        } else if self.language == Language::Go || inner.starts_with('\t') || outer.starts_with('\t') {
            "\t".to_string()
        } else if self.script() {
            "  ".to_string()
        } else {
            "    ".to_string()
        }
    }

    fn cap_declarations(&self, cap: &str, counter: &str, at: &str) -> String {
        match self.language {
            Language::Python => format!("{at}{cap} = {TURN_CAP}\n{at}{counter} = 0\n"),
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                format!("{at}const {cap} = {TURN_CAP};\n{at}let {counter} = 0;\n")
            }
            Language::Go => format!("{at}const {cap} = {TURN_CAP}\n{at}{counter} := 0\n"),
            Language::Rust => format!("{at}let {cap} = {TURN_CAP};\n{at}let mut {counter} = 0;\n"),
            Language::Bash => format!("{at}{cap}={TURN_CAP}\n{at}{counter}=0\n"),
        }
    }

    fn cap_check(&self, cap: &str, counter: &str, at: &str, unit: &str) -> String {
        match self.language {
            Language::Python => {
                format!("{at}{counter} += 1\n{at}if {counter} > {cap}:\n{at}{unit}break\n")
            }
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                format!("{at}if (++{counter} > {cap}) break;\n")
            }
            Language::Go => format!("{at}{counter}++\n{at}if {counter} > {cap} {{\n{at}{unit}break\n{at}}}\n"),
            Language::Rust => {
                format!("{at}{counter} += 1;\n{at}if {counter} > {cap} {{\n{at}{unit}break;\n{at}}}\n")
            }
            Language::Bash => format!(
                "{at}{counter}=$(({counter} + 1))\n{at}if [ \"${counter}\" -gt \"${cap}\" ]; then\n{at}{unit}break\n{at}fi\n"
            ),
        }
    }

    /// How a recursion that hit its cap leaves (Python and JavaScript).
    fn leave(&self, cap: &str, leave: Leave) -> String {
        match (self.language, leave) {
            (Language::Python, Leave::Return) => "return".to_string(),
            (Language::Python, Leave::Raise) => {
                format!("raise RuntimeError(f\"stopped after {{{cap}}} turns without finishing\")")
            }
            (_, Leave::Return) => "return;".to_string(),
            (_, Leave::Raise) => {
                format!("throw new Error(`stopped after ${{{cap}}} turns without finishing`);")
            }
        }
    }

    /// The check first thing in a recursive function whose `counter`
    /// parameter counts the calls.
    fn recursion_guard(&self, cap: &str, counter: &str, at: &str, unit: &str, leave: Leave) -> String {
        let leave = self.leave(cap, leave);
        if self.language == Language::Python {
            format!("{at}{cap} = {TURN_CAP}\n{at}if {counter} >= {cap}:\n{at}{unit}{leave}\n")
        } else {
            format!("{at}const {cap} = {TURN_CAP};\n{at}if ({counter} >= {cap}) {leave}\n")
        }
    }

    /// The check first thing in a recursive function defined inside
    /// another, whose call counts the turns in a counter of the enclosing
    /// function.
    fn closure_cap_check(&self, cap: &str, counter: &str, at: &str, unit: &str, leave: Leave) -> String {
        let leave = self.leave(cap, leave);
        if self.language == Language::Python {
            format!(
                "{at}nonlocal {counter}\n{at}{counter} += 1\n{at}if {counter} > {cap}:\n{at}{unit}{leave}\n"
            )
        } else {
            format!("{at}if (++{counter} > {cap}) {leave}\n")
        }
    }

    fn previous_declaration(&self, previous: &str, at: &str) -> String {
        match self.language {
            Language::Python => format!("{at}{previous} = None\n"),
            Language::JavaScript => format!("{at}let {previous};\n"),
            Language::TypeScript | Language::Tsx => format!("{at}let {previous}: string | undefined;\n"),
            Language::Go => format!("{at}{previous} := \"\"\n"),
            Language::Rust => format!("{at}let mut {previous} = None;\n"),
            Language::Bash => format!("{at}{previous}=\"\"\n"),
        }
    }

    fn progress_check(&self, watched: &str, previous: &str, at: &str, unit: &str) -> String {
        match self.language {
            Language::Python => format!(
                "{at}if {watched} == {previous}:\n{at}{unit}break  # nothing changed since the last round\n{at}{previous} = {watched}\n"
            ),
            Language::JavaScript | Language::TypeScript | Language::Tsx => format!(
                "{at}if (JSON.stringify({watched}) === {previous}) break; // nothing changed since the last round\n{at}{previous} = JSON.stringify({watched});\n"
            ),
            Language::Go => format!(
                "{at}if fmt.Sprint({watched}) == {previous} {{\n{at}{unit}break // nothing changed since the last round\n{at}}}\n{at}{previous} = fmt.Sprint({watched})\n"
            ),
            Language::Rust => format!(
                "{at}if {previous}.as_ref() == Some(&{watched}) {{\n{at}{unit}break; // nothing changed since the last round\n{at}}}\n{at}{previous} = Some({watched}.clone());\n"
            ),
            Language::Bash => format!(
                "{at}if [ \"${watched}\" = \"${previous}\" ]; then\n{at}{unit}break  # nothing changed since the last round\n{at}fi\n{at}{previous}=\"${watched}\"\n"
            ),
        }
    }

    /// The check after the statement that may raise a round's `flag`: the
    /// loop ends when it stayed false. (None in the shell, which keeps no
    /// such flags.)
    fn flag_check(&self, flag: &str, at: &str, unit: &str, note: &str) -> Option<String> {
        Some(match self.language {
            Language::Python => format!("{at}if not {flag}:\n{at}{unit}break  # {note}\n"),
            Language::JavaScript | Language::TypeScript | Language::Tsx => {
                format!("{at}if (!{flag}) break; // {note}\n")
            }
            Language::Go => format!("{at}if !{flag} {{\n{at}{unit}break // {note}\n{at}}}\n"),
            Language::Rust => format!("{at}if !{flag} {{\n{at}{unit}break; // {note}\n{at}}}\n"),
            Language::Bash => return None,
        })
    }

    /// The progress check on a step's result that the fix keeps: a step
    /// that returns nothing never stops the loop.
    fn result_check(&self, watched: &str, previous: &str, at: &str, unit: &str) -> String {
        if self.language == Language::Python {
            format!(
                "{at}if {watched} is not None and {watched} == {previous}:\n{at}{unit}break  # the step gave the same as last round\n{at}{previous} = {watched}\n"
            )
        } else {
            format!(
                "{at}if ({watched} !== undefined && JSON.stringify({watched}) === {previous}) break; // the step gave the same as last round\n{at}{previous} = JSON.stringify({watched});\n"
            )
        }
    }

    /// What goes before a step call to keep its result.
    fn capture(&self, name: &str) -> String {
        if self.language == Language::Python {
            format!("{name} = ")
        } else {
            format!("const {name} = ")
        }
    }
}

/// The first candidate that the source does not use as a word.
fn fresh_name(source: &str, candidates: &[String]) -> String {
    let used = |name: &str| {
        source.match_indices(name).any(|(at, _)| {
            let before = source[..at].chars().next_back();
            let after = source[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
    };
    for candidate in candidates {
        if !used(candidate) {
            return candidate.clone();
        }
    }
    let base = candidates.first().cloned().unwrap_or_else(|| "turns".into());
    (2..).map(|n| format!("{base}{n}")).find(|name| !used(name)).unwrap_or(base)
}

// ---------------------------------------------------------------------------
// Edits and the diff.

/// Changes as edits of whole lines: text that is whole lines put at the
/// start of a line is inserted there; a line that changes inside is
/// replaced by the line as changed. None when a change spans lines or two
/// overlap.
fn edits_of(source: &str, mut changes: Vec<(std::ops::Range<usize>, String)>) -> Option<Vec<Edit>> {
    changes.retain(|(range, text)| !(text.is_empty() && range.is_empty()));
    for (range, _) in &changes {
        let fits = range.start <= range.end
            && range.end <= source.len()
            && source.is_char_boundary(range.start)
            && source.is_char_boundary(range.end);
        if !fits || source[range.clone()].contains('\n') {
            return None;
        }
    }
    changes.sort_by_key(|(range, _)| (range.start, range.end));
    if changes.windows(2).any(|pair| pair[0].0.end > pair[1].0.start) {
        return None;
    }
    let whole = |range: &std::ops::Range<usize>, text: &str| {
        range.is_empty() && range.start == line_start(source, range.start) && text.ends_with('\n')
    };
    let mut edits: Vec<Edit> = Vec::new();
    let mut index = 0;
    while index < changes.len() {
        let start = line_start(source, changes[index].0.start);
        // All the changes of this line.
        let mut last = index;
        while last + 1 < changes.len() && line_start(source, changes[last + 1].0.start) == start {
            last += 1;
        }
        let group = &changes[index..=last];
        if group.iter().all(|(range, text)| whole(range, text)) {
            let text: String = group.iter().map(|(_, t)| t.as_str()).collect();
            edits.push(insertion(source, start, text));
        } else {
            let end = next_line_start(source, start);
            let mut line = String::new();
            let mut from = start;
            for (range, text) in group {
                line.push_str(&source[from..range.start]);
                line.push_str(text);
                from = range.end;
            }
            line.push_str(&source[from..end]);
            if end == source.len() && !line.ends_with('\n') {
                line.push('\n');
            }
            edits.push(Edit {
                start_byte: start,
                end_byte: end,
                line: source[..start].bytes().filter(|b| *b == b'\n').count() + 1,
                text: line,
            });
        }
        index = last + 1;
    }
    Some(edits)
}

fn insertion(source: &str, at: usize, text: String) -> Edit {
    let line = source[..at].bytes().filter(|b| *b == b'\n').count() + 1;
    Edit { start_byte: at, end_byte: at, line, text }
}

fn line_start(source: &str, byte: usize) -> usize {
    source[..byte].rfind('\n').map_or(0, |i| i + 1)
}

fn next_line_start(source: &str, byte: usize) -> usize {
    source[byte..].find('\n').map_or(source.len(), |i| byte + i + 1)
}

fn starts_its_line(source: &str, byte: usize) -> bool {
    source[line_start(source, byte)..byte].chars().all(char::is_whitespace)
}

fn indentation_of_line(source: &str, start: usize) -> &str {
    let rest = &source[start..];
    let end = rest.find(|c: char| c != ' ' && c != '\t').unwrap_or(rest.len());
    &rest[..end]
}

/// The edits as a unified diff (`--- a` / `+++ b`, three lines of context),
/// the form readers copy into a patch or read in a review.
fn unified_diff(source: &str, edits: &[Edit]) -> String {
    const CONTEXT: usize = 3;
    let old: Vec<&str> = source.split_inclusive('\n').collect();
    // Each edit replaces `removed` old lines from old line `line` (1-based)
    // with its text's lines (an insertion removes none).
    let mut changes: Vec<(usize, usize, Vec<String>)> = edits
        .iter()
        .map(|edit| {
            let removed = source[edit.start_byte..edit.end_byte].split_inclusive('\n').count();
            (edit.line - 1, removed, edit.text.split_inclusive('\n').map(str::to_string).collect())
        })
        .collect();
    changes.sort_by_key(|(at, _, _)| *at);
    let mut out = String::from("--- a\n+++ b\n");
    let mut index = 0;
    let mut shift: isize = 0;
    while index < changes.len() {
        // Group the changes whose contexts touch into one hunk.
        let first_at = changes[index].0;
        let mut last = index;
        while last + 1 < changes.len()
            && changes[last + 1].0 <= changes[last].0 + changes[last].1 + 2 * CONTEXT
        {
            last += 1;
        }
        let start = first_at.saturating_sub(CONTEXT);
        let end = (changes[last].0 + changes[last].1 + CONTEXT).min(old.len());
        let added: usize = changes[index..=last].iter().map(|(_, _, lines)| lines.len()).sum();
        let removed: usize = changes[index..=last].iter().map(|(_, removed, _)| *removed).sum();
        let old_count = end - start;
        let new_count = old_count + added - removed;
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            if old_count == 0 { start } else { start + 1 },
            old_count,
            if new_count == 0 {
                (start as isize + shift) as usize
            } else {
                (start as isize + 1 + shift) as usize
            },
            new_count
        ));
        let mut next = index;
        let mut line_index = start;
        while line_index < end {
            if next <= last && changes[next].0 == line_index {
                let (_, removed, lines) = &changes[next];
                for gone in old.iter().skip(line_index).take(*removed) {
                    push_line(&mut out, '-', gone);
                }
                for added_line in lines {
                    push_line(&mut out, '+', added_line);
                }
                line_index += removed;
                next += 1;
                continue;
            }
            push_line(&mut out, ' ', old[line_index]);
            line_index += 1;
        }
        while next <= last {
            for added_line in &changes[next].2 {
                push_line(&mut out, '+', added_line);
            }
            next += 1;
        }
        shift += added as isize - removed as isize;
        index = last + 1;
    }
    out
}

fn push_line(out: &mut String, mark: char, line: &str) {
    out.push(mark);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}
