//! From source text to a `FileReport`: parse, collect facts, judge every exit
//! link with the rules, and add the warnings a reviewer would want.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::facts::{self, Facts, HashMap, HashSet, LoopFact, LoopKind, Role};
use crate::fixes::{self, Missing};
use crate::report::{Evidence, ExitReport, FileReport, Fix, LoopReport, Warning};
use crate::rules::{self, ClauseView, Provenance};
use crate::words::canonical_words;
use crate::{ExitId, ExitKind, Language, Verdict};

/// At most this many evidence entries per exit: the report must stay readable.
const EVIDENCE_LIMIT: usize = 8;
/// At most this many lines of code per evidence entry.
const EVIDENCE_LINES: usize = 3;

/// Line starts of a source, for converting byte offsets at the edge.
pub(crate) struct Lines<'s> {
    source: &'s str,
    starts: Vec<usize>,
}

impl<'s> Lines<'s> {
    pub(crate) fn new(source: &'s str) -> Lines<'s> {
        let mut starts = vec![0];
        starts.extend(source.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        Lines { source, starts }
    }

    /// The 1-based line of a byte offset.
    pub(crate) fn line_of(&self, byte: usize) -> usize {
        match self.starts.binary_search(&byte) {
            Ok(index) => index + 1,
            Err(index) => index,
        }
    }

    fn line_text(&self, line: usize) -> &'s str {
        let start = self.starts.get(line - 1).copied().unwrap_or(self.source.len());
        let end = self.starts.get(line).map_or(self.source.len(), |next| next.saturating_sub(1));
        self.source.get(start..end.max(start)).unwrap_or("").trim_end_matches('\r')
    }

    /// Evidence for a byte range: its lines (at most a few) and their code.
    pub(crate) fn evidence(&self, range: Range<usize>) -> Evidence {
        let start_line = self.line_of(range.start);
        let end_byte = range.end.max(range.start + 1) - 1;
        let end_line = self.line_of(end_byte.min(self.source.len().saturating_sub(1))).max(start_line);
        let shown_end = end_line.min(start_line + EVIDENCE_LINES - 1);
        let code = (start_line..=shown_end)
            .map(|line| {
                let text = self.line_text(line).trim();
                if text.len() > 160 {
                    format!("{}...", &text[..text.floor_char_boundary(157)])
                } else {
                    text.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        Evidence { start_line, end_line: shown_end, code, start_byte: range.start, end_byte: range.end }
    }
}

/// Audits one source whose language is known.
pub(crate) fn audit_source(source: &str, path: Option<&str>, language: Language) -> FileReport {
    let mut parser = tree_sitter::Parser::new();
    match parse(&mut parser, &parsed_text(source, language), language, None) {
        Ok(tree) => audit_tree(&tree, source, path, language),
        Err(unparsed) => unparsed.report(path, language),
    }
}

/// Why a source could not be parsed at all (rare: tree-sitter recovers from
/// nearly everything), as the warning of the report given instead.
pub(crate) struct Unparsed {
    code: &'static str,
    message: &'static str,
}

impl Unparsed {
    pub(crate) fn report(&self, path: Option<&str>, language: Language) -> FileReport {
        let lines = Lines::new("");
        let warnings = vec![warning(self.code, self.message, None, &lines)];
        finish(path, Some(language), Vec::new(), empty_exits(), warnings)
    }
}

/// The text the parser reads for `source`. A Rust stream macro
/// (`async_stream::stream! { ... }`, `try_stream! { ... }`) holds statements
/// that the grammar keeps as an opaque token tree, so an agent loop written
/// in one (a turn's events yielded as they come) would be no loop at all.
/// The parser reads each such macro's path and `!` as `async` padded with
/// spaces, so that its body parses as the async block it runs as. Every
/// byte keeps its offset: the walk and the report read the source as
/// written.
pub(crate) fn parsed_text(source: &str, language: Language) -> std::borrow::Cow<'_, str> {
    const MACRO: &str = "stream!";
    if language != Language::Rust || !source.contains(MACRO) {
        return std::borrow::Cow::Borrowed(source);
    }
    let bytes = source.as_bytes();
    let mut text = bytes.to_vec();
    let mut changed = false;
    for (at, _) in source.match_indices(MACRO) {
        // The macro's path: `stream`, `try_stream`, `async_stream::stream`.
        let start = bytes[..at]
            .iter()
            .rposition(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b':'))
            .map_or(0, |before| before + 1);
        let name = &source[start..at + MACRO.len() - 1];
        let last = name.rsplit("::").next().unwrap_or(name);
        let end = at + MACRO.len();
        let body_follows = bytes[end..].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        if !matches!(last, "stream" | "try_stream") || !body_follows {
            continue;
        }
        text[start..end].fill(b' ');
        text[start..start + 5].copy_from_slice(b"async");
        changed = true;
    }
    match (changed, String::from_utf8(text)) {
        // (Only ASCII bytes were written over ASCII bytes.)
        (true, Ok(text)) => std::borrow::Cow::Owned(text),
        _ => std::borrow::Cow::Borrowed(source),
    }
}

/// Parses `source` (the text [`parsed_text`] gives), reusing `old` (already
/// edited to match) when given.
pub(crate) fn parse(
    parser: &mut tree_sitter::Parser,
    source: &str,
    language: Language,
    old: Option<&tree_sitter::Tree>,
) -> Result<tree_sitter::Tree, Unparsed> {
    let Some(grammar) = language.grammar() else {
        return Err(Unparsed {
            code: "grammar-unavailable",
            message: "this build of the auditor does not carry the grammar for this language",
        });
    };
    if parser.set_language(&grammar).is_err() {
        return Err(Unparsed {
            code: "grammar-unavailable",
            message: "the grammar for this language could not be loaded",
        });
    }
    parser.parse(source, old).ok_or(Unparsed {
        code: "parse-failed",
        message: "the parser gave up on this file; nothing was audited",
    })
}

/// Audits a parsed source: facts, rules, warnings, the report.
pub(crate) fn audit_tree(
    tree: &tree_sitter::Tree,
    source: &str,
    path: Option<&str>,
    language: Language,
) -> FileReport {
    let mut warnings = Vec::new();
    let lines = Lines::new(source);
    let mut facts = facts::collect(tree, source, language.family());
    add_function_loops(&mut facts);
    link_wrapping_handlers(&mut facts);
    link_flag_setters(&mut facts);
    link_calls(&mut facts);
    let frameworks = detect_frameworks(&mut facts, source, &lines, &mut warnings);
    let mut found: BTreeMap<ExitId, Vec<Range<usize>>> = BTreeMap::new();
    judge_links(&facts, &lines, &mut found, &mut warnings);
    warn_about_unseen_callees(&facts, &lines, &mut warnings);
    judge_kwargs_and_calls(&facts, source, &mut found);
    if frameworks == 0 && facts.loops.is_empty() {
        // Without any loop, nothing is an exit; settings like `max_turns=`
        // handed to an unknown function still are, since they bound a loop
        // that lives elsewhere.
        found.retain(|id, _| matches!(id, ExitId::E2 | ExitId::E3 | ExitId::E4 | ExitId::E1));
    }
    warn_about_loops(&facts, &lines, &mut warnings);
    warn_about_bounds(&facts, &lines, &mut warnings);
    warn_about_handlers(&facts, &lines, &mut warnings);
    for range in &facts.parse_errors {
        warnings.push(warning(
            "parse-error",
            "this part does not parse; the audit reads the rest as well as it can",
            Some(range.clone()),
            &lines,
        ));
    }
    if facts.too_deep {
        warnings.push(warning(
            "nesting-too-deep",
            "this file nests deeper than 1,500 levels of syntax; the audit read it down to that depth and no further",
            None,
            &lines,
        ));
    }
    if facts.loops.is_empty() {
        warnings.push(warning("no-loop-found", "no loop was found in this file", None, &lines));
    }
    let exits: Vec<ExitReport> = ExitId::ALL
        .iter()
        .map(|&id| {
            let mut ranges = found.remove(&id).unwrap_or_default();
            ranges.sort_by_key(|r| (r.start, r.end));
            let mut evidence: Vec<Evidence> = Vec::new();
            for range in ranges {
                let entry = lines.evidence(range);
                if !evidence.iter().any(|e| e.start_line == entry.start_line && e.end_line == entry.end_line)
                {
                    evidence.push(entry);
                }
            }
            evidence.truncate(EVIDENCE_LIMIT);
            ExitReport {
                id,
                label: id.label().to_string(),
                kind: id.kind(),
                found: !evidence.is_empty(),
                evidence,
            }
        })
        .collect();
    let loops: Vec<LoopReport> = facts.loops.iter().map(|l| loop_report(l, &lines)).collect();
    let mut fixes: Vec<Fix> = Vec::new();
    if let Some((candidates, missing)) = warn_about_backstop(&loops, &exits, &mut warnings) {
        fixes.extend(fixes::suggest(tree, source, language, &facts.loops, &candidates, missing, &lines));
    }
    let mut report = finish(path, Some(language), loops, exits, warnings);
    report.fixes = fixes;
    report
}

/// What a verdict leaves unsaid. CONVERGES without a BOUND exit: the loop
/// can tell that it is done, but if that check never fires nothing ends it.
/// DIVERGES: it stops only when a bound runs out and never knows whether it
/// finished. Each is said at the header of the loop that holds the deciding
/// evidence (the outermost), so that a reader, a CI annotation or a fix
/// knows where.
/// Returns the loops a fix may go to (the one it named first, then the
/// other loops that hold the deciding evidence, outermost first) and what
/// they lack, for a suggested fix.
fn warn_about_backstop(
    loops: &[LoopReport],
    exits: &[ExitReport],
    warnings: &mut Vec<Warning>,
) -> Option<(Vec<usize>, Missing)> {
    let found = |kind: ExitKind| exits.iter().filter(move |e| e.found && e.id.kind() == kind);
    let (code, message, deciding, missing) = if found(ExitKind::Detect).next().is_some() {
        if found(ExitKind::Bound).next().is_some() {
            return None;
        }
        (
            "no-backstop",
            "nothing bounds this loop: it stops when its check says it is done, and if that check never fires it runs forever; a turn cap (E2), a budget (E3) or a deadline (E4) is the backstop",
            found(ExitKind::Detect).collect::<Vec<_>>(),
            Missing::Bound,
        )
    } else if found(ExitKind::Bound).next().is_some() {
        (
            "no-completion-check",
            "this loop stops only when a bound runs out: it cannot tell that it has finished; a check that the goal is met (E1) or that a round changed nothing (E5) would let it stop when it is done",
            found(ExitKind::Bound).collect::<Vec<_>>(),
            Missing::Detect,
        )
    } else {
        return None;
    };
    let lines: Vec<usize> = deciding.iter().flat_map(|e| e.evidence.iter().map(|ev| ev.start_line)).collect();
    let holds = |l: &&LoopReport| lines.iter().any(|line| (l.start_line..=l.end_line).contains(line));
    let holds = |(_, l): &(usize, &LoopReport)| holds(l);
    let (index, chosen) = loops
        .iter()
        .enumerate()
        .filter(holds)
        .max_by_key(|(_, l)| (l.end_line - l.start_line, std::cmp::Reverse(l.start_line)))
        .or_else(|| loops.iter().enumerate().next())?;
    warnings.push(Warning {
        code: code.to_string(),
        message: message.to_string(),
        start_line: Some(chosen.start_line),
        end_line: Some(chosen.start_line),
    });
    let mut others: Vec<(usize, &LoopReport)> =
        loops.iter().enumerate().filter(holds).filter(|(other, _)| *other != index).collect();
    others.sort_by_key(|(_, l)| (std::cmp::Reverse(l.end_line - l.start_line), l.start_line));
    let candidates = std::iter::once(index).chain(others.into_iter().map(|(other, _)| other)).collect();
    Some((candidates, missing))
}

pub(crate) fn empty_exits() -> Vec<ExitReport> {
    ExitId::ALL
        .iter()
        .map(|&id| ExitReport {
            id,
            label: id.label().to_string(),
            kind: id.kind(),
            found: false,
            evidence: Vec::new(),
        })
        .collect()
}

pub(crate) fn finish(
    path: Option<&str>,
    language: Option<Language>,
    loops: Vec<LoopReport>,
    exits: Vec<ExitReport>,
    warnings: Vec<Warning>,
) -> FileReport {
    let verdict = Verdict::of(exits.iter().filter(|e: &&ExitReport| e.found).map(|e| e.id));
    FileReport {
        path: path.map(str::to_string),
        language: language.map(|l| l.name().to_string()),
        loops,
        exits,
        verdict,
        warnings,
        fixes: Vec::new(),
    }
}

pub(crate) fn warning(code: &str, message: &str, range: Option<Range<usize>>, lines: &Lines<'_>) -> Warning {
    let (start_line, end_line) = match range {
        Some(range) => {
            let evidence = lines.evidence(range);
            (Some(evidence.start_line), Some(evidence.start_line.max(evidence.end_line)))
        }
        None => (None, None),
    };
    Warning { code: code.to_string(), message: message.to_string(), start_line, end_line }
}

fn loop_report(fact: &LoopFact, lines: &Lines<'_>) -> LoopReport {
    let start_line = lines.line_of(fact.range.start);
    let end_line = lines.line_of(fact.range.end.saturating_sub(1).max(fact.range.start));
    let code = lines.evidence(fact.range.start..fact.range.start + 1).code;
    LoopReport {
        kind: fact.kind.as_str().to_string(),
        start_line,
        end_line,
        code,
        framework: fact.framework.map(str::to_string),
        start_byte: fact.range.start,
        end_byte: fact.range.end,
    }
}

/// Recursive functions become loops whose guarded returns are their exits.
fn add_function_loops(facts: &mut Facts) {
    let mut loop_of_function = BTreeMap::new();
    for (index, function) in facts.functions.iter().enumerate() {
        if function.recursive {
            loop_of_function.insert(index, facts.loops.len());
            facts.loops.push(LoopFact {
                kind: LoopKind::Recursion,
                range: function.range.clone(),
                infinite: false,
                exit_sites: 0,
                framework: None,
                assigned: HashSet::default(),
                function_name: function.name.clone(),
                collection: false,
                function: Some(index),
                body_start: function.range.start,
            });
        }
    }
    // The recursion goes on only under the guards of its own call: they are
    // its condition, which ends it when they no longer hold.
    for (&function, &loop_id) in &loop_of_function {
        let site = facts.functions[function].range.clone();
        for clause in facts.functions[function].recursion_guards.clone() {
            facts.links.push(facts::ExitLink {
                clause,
                role: Role::LoopCondition,
                loop_id,
                site: facts.clauses[clause].range.clone(),
                via: None,
                depth: 0,
            });
        }
        let _ = site;
    }
    // A function under a retry decorator (`@retry(stop=stop_after_attempt(5))`)
    // is the pass of that loop: its guarded returns leave it, its guarded
    // raises try again (`if not check(answer): raise NotYet()`).
    let mut retried = BTreeMap::new();
    for (loop_id, fact) in facts.loops.iter().enumerate() {
        if fact.kind != LoopKind::RetryDecorator {
            continue;
        }
        let decorated = facts.functions.iter().position(|function| {
            function.name.is_some()
                && function.name == fact.function_name
                && fact.range.start <= function.range.start
                && function.range.end <= fact.range.end
        });
        if let Some(function) = decorated {
            retried.insert(function, loop_id);
        }
    }
    for exit in &facts.function_exits {
        let recursion = loop_of_function.get(&exit.function).map(|&id| (id, Role::Guard));
        // Under the retry decorator a raise tries again: the clause above it
        // is the condition to go on, as a loop's own condition is.
        let retry_role = if exit.raises { Role::LoopCondition } else { Role::Guard };
        let retry = retried.get(&exit.function).map(|&id| (id, retry_role));
        for (loop_id, role) in [recursion, retry].into_iter().flatten() {
            facts.loops[loop_id].exit_sites += 1;
            for &clause in &exit.clauses {
                facts.links.push(facts::ExitLink {
                    clause,
                    role,
                    loop_id,
                    site: exit.site.clone(),
                    via: None,
                    depth: 0,
                });
            }
        }
    }
}

struct Framework {
    name: &'static str,
    entry_points: &'static [&'static str],
    /// The keyword that bounds it, and the default it falls back to.
    bound: Option<(&'static [&'static str], &'static str)>,
    /// When not empty, the call starts the framework's loop only with one of
    /// these keywords: the AI SDK runs a single step unless told to loop,
    /// and `chat(...)` is a name of every kind of code, TanStack AI's run
    /// being known by its loop strategy.
    loops_with: &'static [&'static str],
}

const FRAMEWORKS: &[Framework] = &[
    Framework {
        name: "langgraph",
        entry_points: &["StateGraph", "create_react_agent", "MessageGraph"],
        bound: Some((&["recursion_limit"], "LangGraph stops at its default recursion_limit of 25 steps")),
        loops_with: &[],
    },
    Framework {
        name: "openai-agents",
        entry_points: &["Runner.run", "Runner.run_sync", "Runner.run_streamed"],
        bound: Some((&["max_turns", "maxTurns"], "the OpenAI Agents SDK stops at its default of 10 turns")),
        loops_with: &[],
    },
    Framework {
        name: "crewai",
        entry_points: &["Crew"],
        bound: Some((&["max_iter"], "CrewAI agents stop at their default max_iter of 25 iterations")),
        loops_with: &[],
    },
    Framework {
        name: "smolagents",
        entry_points: &["CodeAgent", "ToolCallingAgent", "MultiStepAgent"],
        bound: Some((&["max_steps"], "smolagents stops at its default of 20 steps")),
        loops_with: &[],
    },
    Framework {
        name: "langchain",
        entry_points: &["AgentExecutor", "initialize_agent"],
        bound: Some((&["max_iterations"], "LangChain's AgentExecutor stops at its default of 15 iterations")),
        loops_with: &[],
    },
    Framework {
        name: "autogen",
        entry_points: &[
            "RoundRobinGroupChat",
            "SelectorGroupChat",
            "Swarm",
            "MagenticOneGroupChat",
            "GroupChat",
            "initiate_chat",
            // AgentChat's `AssistantAgent(...).run(task=...)`: model calls
            // and rounds of tool calls (`max_tool_iterations` of them).
            "AssistantAgent",
        ],
        bound: None,
        loops_with: &[],
    },
    Framework {
        name: "ai-sdk",
        entry_points: &["generateText", "streamText"],
        bound: None,
        loops_with: &["stopWhen", "maxSteps", "stop_when"],
    },
    // charmbracelet/fantasy (Go): `fantasy.NewAgent(model, options...)`,
    // whose `Generate` runs tool calls until the model answers or a stop
    // condition holds.
    Framework { name: "fantasy", entry_points: &["fantasy.NewAgent"], bound: None, loops_with: &[] },
    // TanStack AI's `chat({ adapter, tools, agentLoopStrategy })`: a run of
    // tool calls until the model answers, or the strategy says stop.
    Framework {
        name: "tanstack-ai",
        entry_points: &["chat"],
        bound: None,
        loops_with: &["agentLoopStrategy"],
    },
];

/// Adds a `framework` loop for each framework whose loop the file starts, and
/// warns where the framework's default bound is relied upon.
fn detect_frameworks(
    facts: &mut Facts,
    source: &str,
    lines: &Lines<'_>,
    warnings: &mut Vec<Warning>,
) -> usize {
    let mut count = 0;
    for framework in FRAMEWORKS {
        let entry = facts.calls.iter().find(|call| {
            framework
                .entry_points
                .iter()
                .any(|point| call.callee == *point || (!point.contains('.') && call.callee_last == *point))
        });
        let Some(entry) = entry else { continue };
        let range = entry.range.clone();
        if !framework.loops_with.is_empty()
            && !facts.kwargs.iter().any(|k| framework.loops_with.contains(&k.name.as_str()))
        {
            continue;
        }
        count += 1;
        facts.loops.push(LoopFact {
            kind: LoopKind::Framework,
            range: range.clone(),
            infinite: false,
            exit_sites: 0,
            framework: Some(framework.name),
            assigned: HashSet::default(),
            function_name: None,
            collection: false,
            function: None,
            body_start: range.start,
        });
        let loop_id = facts.loops.len() - 1;
        // LangGraph routers: `return END` under a condition ends the graph.
        if framework.name == "langgraph" {
            for exit in facts.function_exits.iter().filter(|exit| exit.returns_end) {
                for &clause in &exit.clauses {
                    facts.links.push(facts::ExitLink {
                        clause,
                        role: Role::Guard,
                        loop_id,
                        site: exit.site.clone(),
                        via: None,
                        depth: 0,
                    });
                }
            }
        }
        // A stop condition of the file's own handed to the AI SDK's
        // `stopWhen` (`stopWhen: [stepCountIs(10), repeatsPreviousStep]`),
        // or to fantasy's `WithStopConditions(fantasy.StepCountIs(10),
        // repeatsPreviousStep)`: what it says yes to ends the run, like a
        // guard of the loop.
        let handed: Vec<&str> = match framework.name {
            "ai-sdk" => facts
                .kwargs
                .iter()
                .filter(|k| matches!(k.name.as_str(), "stopWhen" | "stop_when"))
                .flat_map(|k| k.value_idents.iter().map(String::as_str))
                .collect(),
            "fantasy" => facts
                .calls
                .iter()
                .filter(|call| call.callee_last == "WithStopConditions")
                .filter_map(|call| source.get(call.range.clone()))
                .flat_map(|text| {
                    let arguments = text.split_once('(').map_or("", |(_, rest)| rest);
                    arguments.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
                })
                .collect(),
            _ => Vec::new(),
        };
        if !handed.is_empty() {
            let conditions: Vec<usize> = handed
                .iter()
                .filter_map(|ident| facts.functions.iter().position(|f| f.name.as_deref() == Some(*ident)))
                .collect();
            let links: Vec<facts::ExitLink> = facts
                .function_exits
                .iter()
                .filter(|exit| conditions.contains(&exit.function))
                .flat_map(|exit| {
                    let guards = if exit.answer == Some(true) { exit.clauses.as_slice() } else { &[] };
                    exit.values.iter().chain(guards).map(|&clause| facts::ExitLink {
                        clause,
                        role: Role::Guard,
                        loop_id,
                        site: exit.site.clone(),
                        via: None,
                        depth: 0,
                    })
                })
                .collect();
            facts.links.extend(links);
        }
        if let Some((keys, default)) = framework.bound {
            let bounded =
                facts.kwargs.iter().any(|k| keys.contains(&k.name.as_str()) && !rules::is_unbounded_value(k));
            if !bounded {
                warnings.push(warning(
                    "framework-default-bound",
                    &format!("no explicit bound is set: {default}"),
                    Some(range),
                    lines,
                ));
            }
        }
    }
    count
}

/// What became of one exit link: the exit its clause expresses, and why it
/// was not kept when it was not.
pub(crate) struct LinkJudgement {
    pub exit: Option<ExitId>,
    pub dropped: Option<&'static str>,
}

/// Judges every link of `facts`: which exit its clause expresses, and
/// whether a nearer guard, a followed callee or a flag the loop decides
/// itself takes the word from it.
fn judge_each_link(facts: &Facts, provenance: &Provenance<'_>, explain: bool) -> Vec<LinkJudgement> {
    // Functions whose checks the walk follows: a condition that calls one
    // is judged by those checks, not by the function's name.
    let followed: HashSet<&str> = facts
        .function_exits
        .iter()
        .filter(|exit| {
            !exit.clauses.is_empty()
                || !exit.values.is_empty()
                || exit.returned_name.as_ref().is_some_and(|name| {
                    facts.local_flag_sets.iter().any(|s| s.function == exit.function && &s.name == name)
                })
        })
        .filter_map(|exit| facts.functions[exit.function].name.as_deref())
        .collect();
    // The clauses whose followed callee said something: checks behind a
    // call judge the call only when they name an exit; a callee whose checks
    // say nothing leaves the word to the call's own name.
    let spoke: HashSet<usize> = facts
        .links
        .iter()
        .filter_map(|link| link.via.as_ref().map(|via| (link, via.start)))
        .filter(|(link, _)| rules::classify_link(provenance, link).is_some())
        .map(|(_, start)| start)
        .collect();
    // (Which functions answer plainly is asked of every clause judged by
    // its callee: found once.)
    let plain = plain_answers(facts);
    let step_walks: HashSet<usize> =
        (0..facts.loops.len()).filter(|&id| walks_within_a_step(facts, id)).collect();
    let computations = computations(facts);
    let mut judgements: Vec<LinkJudgement> = facts
        .links
        .iter()
        .map(|link| {
            let Some(clause) = facts.clauses.get(link.clause) else {
                return LinkJudgement { exit: None, dropped: Some("no clause") };
            };
            let callee_spoke = spoke.contains(&clause.range.start);
            let dropped =
                if link.via.is_none() && callee_spoke && judged_by_callee(facts, &plain, clause, &followed) {
                    Some("judged by its callee")
                } else if link.role == Role::LoopCondition
                    && facts.decided_flags.contains(&link.clause)
                    && (facts.transparent_flags.contains(&link.clause)
                        || facts.opaque_flags.get(&link.clause).is_none_or(|values| {
                            callee_spoke || values.iter().any(|start| spoke.contains(start))
                        }))
                {
                    Some("a flag the loop decides itself")
                } else if link.via.is_none() && step_walks.contains(&link.loop_id) {
                    Some("a walk over items inside one step of another loop")
                } else {
                    None
                };
            // A dropped link is classified only to explain it (the trace).
            let exit =
                if dropped.is_none() || explain { rules::classify_link(provenance, link) } else { None };
            LinkJudgement { exit, dropped }
        })
        .collect();
    // For each exit statement, the nearest guard that names an exit decides;
    // the conditions around it are context. A person's or an outside gate
    // (an approval asked when the turn cap is hit) does not make the cap
    // around it context: the nearest bound or goal check is kept too.
    let mut nearest: HashMap<(usize, usize), (u8, u8)> = HashMap::default();
    for (link, judgement) in facts.links.iter().zip(&judgements) {
        let (Some(exit), None) = (judgement.exit, judgement.dropped) else { continue };
        if link.via.is_none() && matches!(link.role, Role::Guard | Role::Handler) {
            let entry = nearest.entry((link.loop_id, link.site.start)).or_insert((u8::MAX, u8::MAX));
            entry.0 = entry.0.min(link.depth);
            if exit.kind() != crate::ExitKind::External {
                entry.1 = entry.1.min(link.depth);
            }
        }
    }
    // An exit whose own guard is a lone error check (`if loopDetected {
    // stream, err = retry(); if err != nil { return err }; continue }`)
    // leaves because a call failed once: the conditions around it say when
    // the call is made, not why the loop ends. (Unless the failed call is
    // the very thing the condition around names: `if onToolApproval != nil
    // { approved, err := onToolApproval(..); if err != nil { return err } }`
    // waits for the approval.)
    let error_first: HashMap<(usize, usize), usize> = facts
        .links
        .iter()
        .zip(&judgements)
        .filter(|(link, judgement)| {
            judgement.exit.is_none()
                && link.depth == 0
                && link.via.is_none()
                && link.role == Role::Guard
                && lone_error_check(&facts.clauses[link.clause])
        })
        .map(|(link, _)| ((link.loop_id, link.site.start), link.clause))
        .collect();
    let made_by_what_it_names = |outer: usize, inner: usize| {
        let (Some(outer), Some(inner)) = (facts.clauses.get(outer), facts.clauses.get(inner)) else {
            return false;
        };
        let function = facts.function_at(inner.range.start);
        // (The names the condition around asks, `onToolApproval`, among
        // the calls that made the error: not a receiver both share.)
        outer.idents.iter().filter(|ident| !matches!(ident.as_str(), "self" | "this")).any(|ident| {
            inner.idents.iter().filter_map(|name| facts.definition(name, inner.range.start, function)).any(
                |definition| {
                    definition
                        .callees
                        .iter()
                        .any(|callee| callee == ident || facts::last_name(callee) == ident)
                },
            )
        })
    };
    // A cap of attempts that an inner retry loop counts (`for attempt in
    // range(max_retries)` around the model call, `if attempt ==
    // max_retries - 1: raise`) leaves the agent's loop too, but it counts
    // that retry loop's passes, not the agent's turns: the error threshold
    // it is for the retry loop says what it is for both.
    let inner_threshold: Vec<(usize, usize)> = facts
        .links
        .iter()
        .zip(&judgements)
        .filter(|(_, j)| j.exit == Some(ExitId::E7) && j.dropped.is_none())
        .map(|(link, _)| (link.clause, link.loop_id))
        .collect();
    let retried_within = |link: &facts::ExitLink| {
        let outer = &facts.loops[link.loop_id].range;
        inner_threshold.iter().any(|&(clause, inner)| {
            let range = &facts.loops[inner].range;
            clause == link.clause
                && inner != link.loop_id
                && outer.start <= range.start
                && range.end <= outer.end
                && range != outer
        })
    };
    for (link, judgement) in facts.links.iter().zip(judgements.iter_mut()) {
        let (Some(id), None) = (judgement.exit, judgement.dropped) else { continue };
        if id == ExitId::E2 && retried_within(link) {
            judgement.dropped = Some("counts the attempts of a retry loop inside");
            continue;
        }
        if id == ExitId::E2 && link.via.is_none() && computations.contains(&link.loop_id) {
            judgement.dropped = Some("a loop that calls nothing: a computation's bound, not a turn cap");
            continue;
        }
        if link.depth >= facts::SKIPPED_DEPTH && id != ExitId::E1 {
            judgement.dropped = Some("beyond the guards read");
        } else if link.depth > 0
            && link.via.is_none()
            && link.role == Role::Guard
            && error_first
                .get(&(link.loop_id, link.site.start))
                .is_some_and(|&inner| !made_by_what_it_names(link.clause, inner))
        {
            judgement.dropped = Some("only a failed call under it leaves");
        } else if link.via.is_none()
            && matches!(link.role, Role::Guard | Role::Handler)
            && nearest.get(&(link.loop_id, link.site.start)).is_some_and(|(any, core)| {
                link.depth > *any && !(id.kind() != crate::ExitKind::External && link.depth == *core)
            })
        {
            judgement.dropped = Some("a nearer guard decides");
        }
    }
    judgements
}

/// A check that a call failed and nothing more (`err != nil`, `if err:`,
/// `if (error)`): one failure, which names no exit of its own.
fn lone_error_check(clause: &facts::Clause) -> bool {
    !clause.words.is_empty()
        && clause.words.iter().all(|w| w == "error")
        && !clause.negated
        && (clause.none_literal && clause.differs
            || clause.sides.is_none() && !(clause.ordering || clause.equality || clause.membership))
}

/// The bounded loops that call nothing (`while i < cap and prefix[i] ==
/// n[i]: i += 1`), in a source where some loop calls something: they
/// compute a value, and their bound is no turn cap (their other exits,
/// a value received from a channel that says it is final, still count).
fn computations(facts: &Facts) -> HashSet<usize> {
    let candidate = |fact: &LoopFact| fact.kind.is_written() && !fact.infinite;
    if !facts.loops.iter().any(candidate) || !facts.calls.iter().any(|call| call.in_loop) {
        return HashSet::default();
    }
    // (The calls by where they start, to find one inside a loop without a
    // pass over all of them for each loop.)
    let mut calls: Vec<(usize, usize)> = facts.calls.iter().map(|c| (c.range.start, c.range.end)).collect();
    calls.sort_unstable();
    let calls_in = |range: &Range<usize>| {
        let first = calls.partition_point(|(start, _)| *start < range.start);
        calls[first..].iter().take_while(|(start, _)| *start < range.end).any(|(_, end)| *end <= range.end)
    };
    facts
        .loops
        .iter()
        .enumerate()
        .filter(|(_, fact)| candidate(fact) && !calls_in(&fact.range))
        .map(|(id, _)| id)
        .collect()
}

/// A walk over a collection in a function that other loops run as one step
/// of their passes (`for call in history: if call == this: return
/// warning` in a helper the agent loop calls): leaving it ends the walk and
/// returns to the caller, whose loop goes on.
fn walks_within_a_step(facts: &Facts, loop_id: usize) -> bool {
    let fact = &facts.loops[loop_id];
    if !fact.collection {
        return false;
    }
    let Some(function) = fact.function else { return false };
    if facts.step_calls(function).next().is_some() {
        return true;
    }
    // Or a helper of such a step (the loop calls `execute_tool`, which
    // asks `check_repeats`).
    let Some(name) = facts.functions[function].name.as_deref() else { return false };
    facts.calls.iter().filter(|call| call.callee_last == name).any(|call| {
        facts.functions.iter().enumerate().any(|(caller, fact)| {
            caller != function
                && fact.range.start <= call.range.start
                && call.range.end <= fact.range.end
                && facts.step_calls(caller).next().is_some()
        })
    })
}

fn judge_links(
    facts: &Facts,
    lines: &Lines<'_>,
    found: &mut BTreeMap<ExitId, Vec<Range<usize>>>,
    warnings: &mut Vec<Warning>,
) {
    let mut stale_warned = HashSet::default();
    let provenance = Provenance::new(facts);
    let judgements = judge_each_link(facts, &provenance, false);
    for (link, judgement) in facts.links.iter().zip(&judgements) {
        let Some(clause) = facts.clauses.get(link.clause) else { continue };
        let (Some(id), None) = (judgement.exit, judgement.dropped) else { continue };
        if id == ExitId::E5 && link.role == Role::Guard {
            let view = ClauseView::new(&provenance, clause, link.role, Some(link.loop_id), false);
            if let Some(name) = rules::e5_no_progress::stale_operand(facts, &view, link.loop_id) {
                if stale_warned.insert(clause.range.start) {
                    warnings.push(warning(
                        "stale-progress-check",
                        &format!(
                            "`{name}` is compared here but never updated inside the loop: this no-progress check cannot see progress"
                        ),
                        Some(clause.range.clone()),
                        lines,
                    ));
                }
                continue;
            }
        }
        let range = match link.role {
            Role::LoopCondition | Role::RangeBound => link.site.clone(),
            Role::Handler => clause.range.start..clause.range.start + 1,
            Role::Guard => {
                let clause_line = lines.line_of(clause.range.start);
                let site_line = lines.line_of(link.site.start);
                if site_line >= clause_line && site_line - clause_line <= 2 {
                    clause.range.start.min(link.site.start)..clause.range.end.max(link.site.end)
                } else {
                    clause.range.clone()
                }
            }
        };
        // (A flag turned on under a condition that names two bounds, `if
        // step == max_steps or elapsed > max_time: force_answer = True`, is
        // both.)
        if link.role == Role::Guard && link.via.is_none() && clause.idents.len() == 1 {
            let says = rules::flag_set_in_the_loop_says(&provenance, clause, link);
            if says.first() == Some(&id) {
                for &also in &says[1..] {
                    found.entry(also).or_default().push(range.clone());
                }
            }
        }
        found.entry(id).or_default().push(range);
        if let Some(via) = &link.via {
            found.entry(id).or_default().push(via.clone());
        }
    }
}

fn judge_kwargs_and_calls(facts: &Facts, source: &str, found: &mut BTreeMap<ExitId, Vec<Range<usize>>>) {
    let has_loops = !facts.loops.is_empty();
    for kwarg in &facts.kwargs {
        if !rules::decorator_counts(facts, kwarg.decorator_loop) {
            continue;
        }
        if let Some(id) = rules::classify_kwarg(kwarg) {
            if id == ExitId::E5 && configures_a_detector(facts, kwarg) {
                continue;
            }
            found.entry(id).or_default().push(kwarg.range.clone());
        } else if has_loops && rules::e8_external_event::callers_signal_handed_on(facts, kwarg) {
            // (A file that ties its cancellations to a person hands on the
            // person's: `throw new AppError("USER_CANCELLED")` on abort.)
            let id = if facts.cancel_by_person { ExitId::E6 } else { ExitId::E8 };
            found.entry(id).or_default().push(kwarg.range.clone());
        }
    }
    if !has_loops {
        // An excerpt that only configures a framework's run: a deadline
        // made for that run and handed to it (`ctx, cancel :=
        // context.WithTimeout(ctx, limit)` then `agent.Run(ctx, ...,
        // Config{MaxSteps: n})`) bounds its loop too.
        if !found.is_empty() {
            for deadline in deadlines_handed_to_a_run(facts, source) {
                found.entry(ExitId::E4).or_default().push(deadline);
            }
        }
        return;
    }
    for call in &facts.calls {
        for id in rules::classify_call(facts, call) {
            found.entry(id).or_default().push(call.range.clone());
        }
    }
}

/// The deadlines made into a name (`ctx, cancel :=
/// context.WithTimeout(..)`) that is handed to a later call of the same
/// function carrying a step cap or a budget in its settings: the run the
/// excerpt configures is timed as a whole.
fn deadlines_handed_to_a_run(facts: &Facts, source: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    // (The wall clock's own rule says which calls set a deadline, and which
    // of those only time one step: a probe's, a shutdown's.)
    for timer in facts.calls.iter().filter(|call| rules::e4_wall_clock::call_matches(facts, call)) {
        let Some(assign) = facts
            .assigns
            .iter()
            .find(|a| a.range.start <= timer.range.start && timer.range.end <= a.range.end)
        else {
            continue;
        };
        // (`ctx, cancel := ...`: the context is the first name.)
        let Some(context) = assign.target.split(',').next().map(str::trim).filter(|n| !n.is_empty()) else {
            continue;
        };
        // (The run is called in the same function, after the timer, with
        // a step cap or a budget in its settings; then the context's name
        // is looked for among its arguments.)
        let handed_to_the_run = facts.calls.iter().any(|run| {
            run.range.start >= timer.range.end
                && run.enclosing_function == timer.enclosing_function
                && facts.kwargs.iter().any(|kwarg| {
                    run.range.start <= kwarg.range.start
                        && kwarg.range.end <= run.range.end
                        && matches!(rules::classify_kwarg(kwarg), Some(ExitId::E2 | ExitId::E3))
                })
                && source.get(run.range.clone()).and_then(|text| text.split_once('(')).is_some_and(
                    |(_, arguments)| {
                        arguments
                            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .any(|word| word == context)
                    },
                )
        });
        if handed_to_the_run {
            out.push(timer.range.clone());
        }
    }
    out
}

/// `LoopGuard(max_repeats=5, window=10)`: a setting of a repetition
/// detector the code makes, not of the run. Whether the loop ends when it
/// fires is what the code does with it (`if guard.tripped(): break`,
/// `except LoopDetected: break`), read where that is written.
fn configures_a_detector(facts: &Facts, kwarg: &facts::KwargFact) -> bool {
    facts
        .calls
        .iter()
        .filter(|call| call.range.start <= kwarg.range.start && kwarg.range.end <= call.range.end)
        .min_by_key(|call| call.range.len())
        .is_some_and(|call| {
            crate::words::canonical_words(&call.callee_last)
                .iter()
                .any(|w| matches!(w.as_str(), "guard" | "detect"))
        })
}

fn warn_about_loops(facts: &Facts, lines: &Lines<'_>, warnings: &mut Vec<Warning>) {
    for fact in &facts.loops {
        if fact.infinite && fact.exit_sites == 0 {
            let header = fact.range.start..fact.range.start + 1;
            warnings.push(warning(
                "infinite-loop-without-exit",
                "this loop runs forever: nothing in it breaks, returns, raises or exits, so only a signal or a kill can stop it",
                Some(header),
                lines,
            ));
        }
    }
}

/// Which bound a name stands for, if it looks like one: `MAX_TURNS`,
/// `token_budget`, `deadline`, `max_failures`. `max_tokens` is a per-call
/// setting and `timeout` a per-request one: neither is a loop bound.
fn bound_kind(name: &str) -> Option<&'static str> {
    let words = canonical_words(name);
    let has = |word: &str| words.iter().any(|w| w == word);
    let counted = words.iter().any(|w| rules::COUNT_WORDS.contains(&w.as_str()));
    if has("max") && has("error") {
        Some("failure limit")
    } else if has("max") && counted && !has("attempt") {
        Some("turn limit")
    } else if has("budget") || (has("max") && has("cost")) || (has("token") && has("budget")) {
        Some("budget")
    } else if has("deadline") || (has("max") && has("time")) {
        Some("time limit")
    } else {
        None
    }
}

/// Counters that a loop keeps up to date and should compare with something.
fn counter_kind(name: &str) -> Option<&'static str> {
    let words = canonical_words(name);
    let has = |word: &str| words.iter().any(|w| w == word);
    if has("max") || has("budget") {
        return None;
    }
    if has("error") {
        Some("failure count")
    } else if has("cost") || (has("token") && !has("max")) {
        Some("spend")
    } else if words.iter().any(|w| matches!(w.as_str(), "turn" | "step" | "iter" | "round")) {
        Some("turn count")
    } else {
        None
    }
}

fn warn_about_bounds(facts: &Facts, lines: &Lines<'_>, warnings: &mut Vec<Warning>) {
    // Every name that takes part in deciding whether a loop goes on.
    let mut enforced: HashSet<&str> = HashSet::default();
    for link in &facts.links {
        if let Some(clause) = facts.clauses.get(link.clause) {
            for ident in &clause.idents {
                enforced.insert(ident.as_str());
                for definition in facts.aliases.get(ident).into_iter().flatten() {
                    enforced.extend(definition.idents.iter().map(String::as_str));
                }
            }
        }
    }
    for kwarg in &facts.kwargs {
        enforced.extend(kwarg.value_idents.iter().map(String::as_str));
    }
    let mut warned = HashSet::default();
    for assign in &facts.assigns {
        let name = assign.target.as_str();
        let short = name.rsplit('.').next().unwrap_or(name);
        if enforced.contains(name) || enforced.contains(short) || facts.passed.contains(short) {
            continue;
        }
        let kind = if assign.in_loop && assign.augmented { counter_kind(short) } else { bound_kind(short) };
        let Some(kind) = kind else { continue };
        if !warned.insert(name.to_string()) {
            continue;
        }
        let message = if assign.augmented {
            format!("`{name}` ({kind}) is tracked but never compared with a limit: it cannot stop the loop")
        } else {
            format!("`{name}` ({kind}) is defined but never enforced: nothing compares anything with it")
        };
        warnings.push(warning("bound-not-enforced", &message, Some(assign.range.clone()), lines));
    }
}

fn warn_about_handlers(facts: &Facts, lines: &Lines<'_>, warnings: &mut Vec<Warning>) {
    for handler in &facts.handlers {
        if handler.in_loop
            && !handler.leaves
            && !handler.wraps_loop
            && handler.type_words.iter().any(|w| w == "interrupt")
        {
            warnings.push(warning(
                "interrupt-swallowed",
                "this handler catches the interrupt and carries on: Ctrl-C cannot stop the loop",
                Some(handler.range.start..handler.range.start + 1),
                lines,
            ));
        }
    }
    for call in &facts.calls {
        let ignores = rules::is_signal_registration(call)
            && call.arg_words.iter().any(|w| w == "interrupt" || w == "sigint")
            && call.arg_words.iter().any(|w| w == "ign");
        if ignores {
            warnings.push(warning(
                "interrupt-swallowed",
                "SIGINT is ignored: Ctrl-C cannot stop the loop",
                Some(call.range.clone()),
                lines,
            ));
        }
    }
}

/// Handlers of a `try` that wraps a loop: what they catch has left the loop
/// (`try: while True: ... except KeyboardInterrupt:`).
fn link_wrapping_handlers(facts: &mut Facts) {
    // A `try` around the call of a function whose loop raises: the loop
    // ends there too. Only the function's outermost loops (an inner loop's
    // exception leaves its outer loop first).
    let outermost: Vec<usize> = if facts.caller_handlers.is_empty() {
        Vec::new()
    } else {
        (0..facts.loops.len())
            .filter(|&id| {
                let lp = &facts.loops[id];
                lp.kind != facts::LoopKind::Framework
                    && lp.function.is_some()
                    && !facts.loops.iter().any(|other| {
                        other.function == lp.function
                            && other.range != lp.range
                            && other.range.start <= lp.range.start
                            && other.range.end >= lp.range.end
                    })
            })
            .collect()
    };
    for (name, clause, range) in facts.caller_handlers.clone() {
        let loops: Vec<usize> = outermost
            .iter()
            .copied()
            .filter(|&id| {
                facts.loops[id]
                    .function
                    .is_some_and(|f| facts.functions[f].name.as_deref() == Some(name.as_str()))
            })
            .take(4)
            .collect();
        for loop_id in loops {
            facts.loops[loop_id].exit_sites += 1;
            facts.links.push(facts::ExitLink {
                clause,
                role: Role::Handler,
                loop_id,
                site: range.clone(),
                via: None,
                depth: 1,
            });
        }
    }
    for (loop_id, clause, range) in facts.wrapping_handlers.clone() {
        facts.loops[loop_id].exit_sites += 1;
        facts.links.push(facts::ExitLink {
            clause,
            role: Role::Handler,
            loop_id,
            site: range,
            via: None,
            depth: 0,
        });
    }
}

/// Whether two assignment targets name the same flag: the same text, or the
/// same field of possibly differently named receivers (`a.running`,
/// `r.running`).
fn same_flag(target: &str, flag: &str) -> bool {
    let last = |text: &str| text.rsplit(['.', ':', '>']).next().unwrap_or(text).to_string();
    target == flag || (target.contains('.') && flag.contains('.') && last(target) == last(flag))
}

/// A loop's flag set to a stopping value somewhere else in the source:
/// by a function the loop calls (its own decision, under that function's
/// guards) or by code the loop never calls (a stop from outside, unless its
/// words say why: `self.state = FINISHED` in a finish handler is goal met).
fn link_flag_setters(facts: &mut Facts) {
    let mut new_links = Vec::new();
    let mut outside_clauses = Vec::new();
    let mut in_pass_clauses = Vec::new();
    for (loop_id, flag, polarity) in &facts.loop_flags {
        let lp = &facts.loops[*loop_id];
        for setter in &facts.flag_assigns {
            if !same_flag(&setter.target, flag) || !polarity.stops_on(&setter.value) {
                continue;
            }
            // In the loop's own function, before or after it, or inside it
            // (linked as the walk went): not a setter from elsewhere.
            if setter.function == lp.function {
                continue;
            }
            // (Called by the loop, or by a function the loop calls, as far
            // as checks are followed (two calls): `run_action_planning()`
            // in the loop, whose `action_planning_postprocess()` sets the
            // flag.)
            let called_in_loop =
                setter.function.and_then(|f| facts.functions[f].name.as_deref()).is_some_and(|name| {
                    let in_loop = |callee: &str| {
                        facts.calls.iter().any(|c| c.loops.contains(loop_id) && c.callee_last == callee)
                    };
                    if in_loop(name) {
                        return true;
                    }
                    let callers: HashSet<&str> = facts
                        .calls
                        .iter()
                        .filter(|c| c.callee_last == name)
                        .filter_map(|c| c.named_function.as_deref())
                        .filter(|caller| *caller != name)
                        .collect();
                    callers.into_iter().any(in_loop)
                });
            // (Its words go silent only where its guards can speak: a
            // setter the loop reaches without a condition, `stop()` called
            // from an error handler, is still a stop.)
            if !called_in_loop {
                outside_clauses.push(setter.words_clause);
            } else if !setter.guards.is_empty() {
                in_pass_clauses.push(setter.words_clause);
            }
            new_links.push((setter.words_clause, *loop_id, setter.range.clone()));
            for &guard in &setter.guards {
                new_links.push((guard, *loop_id, setter.range.clone()));
            }
        }
    }
    for clause in outside_clauses {
        facts.clauses[clause].set_outside = true;
    }
    for clause in in_pass_clauses {
        facts.clauses[clause].set_in_pass = true;
    }
    for (clause, loop_id, site) in new_links {
        facts.loops[loop_id].exit_sites += 1;
        facts.links.push(facts::ExitLink { clause, role: Role::Guard, loop_id, site, via: None, depth: 0 });
    }
}

/// How many calls deep the auditor follows a check.
const CALL_DEPTH: usize = 2;

/// Checks behind calls of functions defined in the same source, two calls
/// deep: `if self.should_stop(): break` is judged by the conditions under
/// which `should_stop` returns, and a call in the loop whose function raises
/// (or exits) under a condition leaves the loop there. Each link carries the
/// call in the loop as evidence beside the check.
fn link_calls(facts: &mut Facts) {
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, function) in facts.functions.iter().enumerate() {
        if let Some(name) = function.name.as_deref() {
            by_name.entry(name).or_default().push(index);
        }
    }
    if by_name.is_empty() {
        return;
    }
    let mut new_links: Vec<facts::ExitLink> = Vec::new();
    let plain = plain_answers(facts);
    // Conditions that are calls, or error checks of a call's result.
    for link in &facts.links {
        let clause = &facts.clauses[link.clause];
        let lp = &facts.loops[link.loop_id];
        // The answer of the called function that takes the exit: yes for
        // `if detect_loop(): break`, no for `if not ok(): break` and for a
        // loop condition.
        let wanted = ((link.role == Role::Guard) != clause.negated) != clause.on_failure;
        let mut names: Vec<(&str, Answer)> = clause
            .call_root
            .as_deref()
            .map(|name| (name, Answer { wanted: Some(wanted), strict: false }))
            .into_iter()
            .collect();
        // `err := a.checkBudget(); if err != nil`, `go_on = await
        // self._on_run_continue(...); if not go_on`: the check is in the
        // function that made the value. (Asked whether it is there at all,
        // `exit := handleCommand(line); if exit {`, the value takes the
        // exit on the same answer as the call would.)
        let error_check = clause.words.iter().any(|w| w == "error") && clause.none_literal;
        let function = facts.function_at(clause.range.start);
        for ident in &clause.idents {
            if let Some(definition) = facts.definition(ident, clause.range.start, function) {
                let bare = reads_one_made_value(&plain, clause, definition);
                names.extend(
                    definition
                        .callees
                        .iter()
                        .map(String::as_str)
                        .filter(|name| error_check || bare || decides(name))
                        .map(|name| (name, Answer { wanted: bare.then_some(wanted), strict: bare })),
                );
            }
        }
        for (name, answer) in names {
            let via = clause.range.clone();
            follow_returns(facts, &by_name, name, link.loop_id, &lp.range, &via, answer, 1, &mut new_links);
        }
    }
    // Calls in loops whose functions raise.
    for call in &facts.calls {
        // A caught raise still ends the loop when a handler of the `try`
        // that catches it leaves (`except TerminatingException: return`).
        let handled_by_leaving = call
            .caught_in
            .as_ref()
            .is_some_and(|range| facts.handlers.iter().any(|h| h.leaves && range.contains(&h.range.start)));
        if (call.caught && !handled_by_leaving) || call.loops.is_empty() {
            continue;
        }
        for &loop_id in &call.loops {
            let range = facts.loops[loop_id].range.clone();
            follow_raises(
                facts,
                &by_name,
                &call.callee_last,
                loop_id,
                &range,
                &call.range,
                1,
                &mut new_links,
            );
        }
    }
    for link in new_links {
        facts.loops[link.loop_id].exit_sites += 1;
        facts.links.push(link);
    }
}

/// Whether a clause is a call of a function whose checks the walk follows
/// (`if self.should_stop():`), or reads a value made by one (`go_on =
/// self._on_run_continue(); if not go_on:`): those checks judge it.
fn judged_by_callee(
    facts: &Facts,
    plain: &HashMap<&str, Option<Option<usize>>>,
    clause: &facts::Clause,
    followed: &HashSet<&str>,
) -> bool {
    if followed.is_empty() {
        return false;
    }
    // (`feedback == previous_feedback` asks whether the value moved since
    // the last pass, not what the function that made it decided.)
    if let Some([(left, _), (right, _)]) = &clause.sides {
        let earlier = |side: &Vec<String>| side.iter().any(|w| w == "prev");
        if clause.equality && (earlier(left) ^ earlier(right)) {
            return false;
        }
    }
    if clause.call_root.as_deref().is_some_and(|name| followed.contains(name)) {
        return true;
    }
    let function = facts.function_at(clause.range.start);
    clause.idents.iter().any(|ident| {
        facts.definition(ident, clause.range.start, function).is_some_and(|definition| {
            let bare = reads_one_made_value(plain, clause, definition);
            definition.callees.iter().any(|name| (bare || decides(name)) && followed.contains(name.as_str()))
        })
    })
}

/// Whether the clause only asks whether one value is there (`if
/// timeout_text:`, `if not stuck:`), a value one call made (`timeout_text =
/// _timeout_text(agent, task_start)`) of a function of the source that
/// answers with a message or a yes or no (strings, booleans, nothing; in a
/// tuple, the yes or no at the place the name takes): what that function
/// checks before it answers decides, whatever its name says. (A function
/// that returns what it computed, `acts[:MAX_ACTIONS]`, is asked for that
/// value, not for a decision.)
fn reads_one_made_value(
    plain: &HashMap<&str, Option<Option<usize>>>,
    clause: &facts::Clause,
    definition: &facts::Definition,
) -> bool {
    let [callee] = definition.callees.as_slice() else { return false };
    let asks_whether = clause.idents.len() == 1
        && clause.callees.is_empty()
        && clause.literals.is_empty()
        && !(clause.ordering || clause.equality || clause.membership || clause.number);
    asks_whether
        && match plain.get(callee.as_str()) {
            Some(Some(None)) => true,
            Some(Some(place)) => definition.position == *place,
            _ => false,
        }
}

/// For each name of the source's functions: whether every way out of
/// them is a message or an answer (`FunctionExit::plain`; a raise leaves
/// the caller's loop anyway), and then the place in a tuple their yes or
/// no takes (`Some(None)` when none is in a tuple); `None` when some way
/// out returns what it computed, or the places differ.
fn plain_answers(facts: &Facts) -> HashMap<&str, Option<Option<usize>>> {
    let mut plain: HashMap<&str, Option<Option<usize>>> = HashMap::default();
    for function in &facts.functions {
        if let Some(name) = function.name.as_deref() {
            plain.insert(name, Some(None));
        }
    }
    for exit in facts.function_exits.iter().filter(|exit| !exit.raises) {
        let Some(entry) = facts.functions[exit.function].name.as_deref().and_then(|name| plain.get_mut(name))
        else {
            continue;
        };
        *entry = match (*entry, exit.plain, exit.answer_at) {
            (None, _, _) | (_, false, _) => None,
            (place, true, None) => place,
            (Some(None), true, Some(at)) => Some(Some(at)),
            (Some(Some(place)), true, Some(at)) => (place == at).then_some(Some(at)),
        };
    }
    plain
}

/// A function whose name says it decides whether to go on
/// (`should_continue`, `_on_run_continue`, `check_done`, `is_finished`).
fn decides(name: &str) -> bool {
    canonical_words(name).iter().any(|w| {
        matches!(
            w.as_str(),
            "should"
                | "continue"
                | "check"
                | "done"
                | "stop"
                | "verify"
                | "evaluate"
                | "judge"
                | "is"
                | "can"
        )
    })
}

/// The functions called `name`, other than one that holds the loop itself
/// (a recursion is a loop of its own).
fn callees<'a>(
    facts: &Facts,
    by_name: &'a BTreeMap<&str, Vec<usize>>,
    name: &str,
    loop_range: &Range<usize>,
) -> &'a [usize] {
    match by_name.get(name) {
        Some(found)
            if !found.iter().any(|&f| {
                facts.functions[f].range.start <= loop_range.start
                    && facts.functions[f].range.end >= loop_range.end
            }) =>
        {
            found
        }
        _ => &[],
    }
}

/// Which of a called function's answers takes the exit (`None`: any), and
/// whether only a plain yes or no counts when the function gives one.
#[derive(Clone, Copy)]
struct Answer {
    wanted: Option<bool>,
    strict: bool,
}

#[allow(clippy::too_many_arguments)] // A walk's state, passed down one level.
fn follow_returns(
    facts: &Facts,
    by_name: &BTreeMap<&str, Vec<usize>>,
    name: &str,
    loop_id: usize,
    loop_range: &Range<usize>,
    via: &Range<usize>,
    answer: Answer,
    depth: usize,
    out: &mut Vec<facts::ExitLink>,
) {
    let Answer { wanted, strict } = answer;
    for &function in callees(facts, by_name, name, loop_range) {
        let exits = || facts.function_exits.iter().filter(|e| e.function == function);
        // (A value asked whether it is there, from a function that answers
        // yes or no somewhere (`return true, ""`), is that answer: its ways
        // out that return nothing, a bare `return` of a listing command,
        // give the named result's zero value, no.)
        let answers_plainly = strict && exits().any(|e| e.answer.is_some());
        // (`if len(seen) < 2: return False` in `detect_repeat()` that the
        // loop asks `if detect_repeat(): break`: that answer goes on.)
        let answers = |e: &&facts::FunctionExit| {
            let answer = if answers_plainly && e.no_value { Some(false) } else { e.answer };
            answer.is_none() || wanted.is_none() || answer == wanted
        };
        for exit in exits().filter(answers) {
            // `return should_stop, reason`: the function answers yes under
            // the guards that turned its flag on.
            if let Some(name) = &exit.returned_name {
                for set in facts.local_flag_sets.iter().filter(|s| s.function == function && &s.name == name)
                {
                    for &clause in &set.guards {
                        out.push(facts::ExitLink {
                            clause,
                            role: Role::Guard,
                            loop_id,
                            site: set.range.clone(),
                            via: Some(via.clone()),
                            depth: 0,
                        });
                    }
                }
            }
            for &clause in exit.clauses.iter().chain(&exit.values) {
                out.push(facts::ExitLink {
                    clause,
                    role: Role::Guard,
                    loop_id,
                    site: exit.site.clone(),
                    via: Some(via.clone()),
                    depth: 0,
                });
                let inner = facts.clauses[clause].call_root.as_deref();
                if let Some(inner) = inner.filter(|_| depth < CALL_DEPTH) {
                    let any = Answer { wanted: None, strict: false };
                    follow_returns(facts, by_name, inner, loop_id, loop_range, via, any, depth + 1, out);
                }
            }
        }
    }
}

#[allow(clippy::too_many_arguments)] // A walk's state, passed down one level.
fn follow_raises(
    facts: &Facts,
    by_name: &BTreeMap<&str, Vec<usize>>,
    name: &str,
    loop_id: usize,
    loop_range: &Range<usize>,
    via: &Range<usize>,
    depth: usize,
    out: &mut Vec<facts::ExitLink>,
) {
    for &function in callees(facts, by_name, name, loop_range) {
        for exit in facts.function_exits.iter().filter(|e| e.function == function && e.raises) {
            for &clause in exit.clauses.iter().chain(&exit.values) {
                out.push(facts::ExitLink {
                    clause,
                    role: Role::Guard,
                    loop_id,
                    site: exit.site.clone(),
                    via: Some(via.clone()),
                    depth: 0,
                });
            }
        }
        if depth >= CALL_DEPTH {
            continue;
        }
        let Some(function_name) = facts.functions[function].name.as_deref() else { continue };
        for call in &facts.calls {
            if call.enclosing_function.as_deref() == Some(function_name) && call.loops.is_empty() {
                follow_raises(facts, by_name, &call.callee_last, loop_id, loop_range, via, depth + 1, out);
            }
        }
    }
}

/// Calls in a loop to something the source does not define, whose name
/// promises an exit (`self._check_budget()`): the auditor cannot read the
/// check, so it says so rather than claim the exit.
fn warn_about_unseen_callees(facts: &Facts, lines: &Lines<'_>, warnings: &mut Vec<Warning>) {
    let defined: HashSet<&str> = facts.functions.iter().filter_map(|f| f.name.as_deref()).collect();
    let mut warned: HashSet<&str> = HashSet::default();
    for call in facts.calls.iter().filter(|c| c.in_loop && !c.caught) {
        let name = call.callee_last.as_str();
        if name.is_empty() || defined.contains(name) || warned.contains(name) {
            continue;
        }
        let words = canonical_words(name);
        let has = |word: &str| words.iter().any(|w| w == word);
        let checks = ["check", "enforce", "ensure", "assert", "guard", "verify", "raise", "test"]
            .iter()
            .any(|verb| words.first().is_some_and(|w| w == verb) || has(verb));
        let promises = has("budget")
            || has("cost")
            || has("deadline")
            || has("timeout")
            || (has("time") && has("max"))
            || (has("max") && words.iter().any(|w| rules::COUNT_WORDS.contains(&w.as_str())))
            || has("cancel")
            || has("stop")
            || has("stall");
        if !(checks && promises) {
            continue;
        }
        warned.insert(name);
        warnings.push(warning(
            "check-not-in-source",
            &format!(
                "`{name}` is called in the loop but is not in this source; it may end the loop (paste `{name}` to check it)"
            ),
            Some(call.range.clone()),
            lines,
        ));
    }
}

/// Every exit link of a source with the clause, its role and what the rules
/// made of it, one line each: how a developer sees why an exit was or was
/// not found (`cargo run -p auditor --example report -- --links FILE`).
pub(crate) fn trace_links(source: &str, language: Language) -> Vec<String> {
    let mut parser = tree_sitter::Parser::new();
    let Ok(tree) = parse(&mut parser, &parsed_text(source, language), language, None) else {
        return Vec::new();
    };
    let lines = Lines::new(source);
    let mut facts = facts::collect(&tree, source, language.family());
    add_function_loops(&mut facts);
    link_wrapping_handlers(&mut facts);
    link_flag_setters(&mut facts);
    link_calls(&mut facts);
    let provenance = Provenance::new(&facts);
    let judgements = judge_each_link(&facts, &provenance, true);
    facts
        .links
        .iter()
        .zip(&judgements)
        .filter_map(|(link, judgement)| {
            let clause = facts.clauses.get(link.clause)?;
            let view = ClauseView::new(&provenance, clause, link.role, Some(link.loop_id), true);
            let text: String = source.get(clause.range.clone()).unwrap_or("").chars().take(60).collect();
            let mut words: Vec<&str> = view.words.iter().copied().collect();
            words.sort_unstable();
            Some(format!(
                "L{} {:?} loop {} `{}` -> {:?}{} words {:?} literals {:?}{}{}{}{}{}{}",
                lines.line_of(clause.range.start),
                link.role,
                link.loop_id,
                text.replace('\n', " "),
                judgement.exit,
                judgement.dropped.map(|why| format!(" DROPPED ({why})")).unwrap_or_default(),
                words,
                view.literals,
                if clause.negated { " negated" } else { "" },
                if view.pass_counter { " pass-counter" } else { "" },
                if view.failure_counter { " failure-counter" } else { "" },
                if view.this_pass { " this-pass" } else { "" },
                if view.from_input { " typed" } else { "" },
                if link.via.is_some() { " via-call" } else { "" },
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_macros_are_parsed_as_async_blocks_in_place() {
        let source = "let s = async_stream::stream! { loop {} };\nlet t = try_stream!{ x };\nlet u = upstream! { y };\nlet v = stream!(z);\n// stream! {\n";
        let parsed = parsed_text(source, Language::Rust);
        assert_eq!(parsed.len(), source.len(), "every byte keeps its offset");
        assert_eq!(
            parsed,
            "let s = async                 { loop {} };\nlet t = async      { x };\nlet u = upstream! { y };\nlet v = stream!(z);\n// async   {\n"
        );
        // Other languages and sources without the macro are read as written.
        assert!(matches!(parsed_text("stream! { }", Language::Python), std::borrow::Cow::Borrowed(_)));
        assert!(matches!(parsed_text("fn f() {}", Language::Rust), std::borrow::Cow::Borrowed(_)));
    }
}
