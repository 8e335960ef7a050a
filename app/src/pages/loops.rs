//! `/loops` and `/loops/{loop}`: a team's connected loops and, for one loop,
//! its current run as a convergence chart, a state timeline and a table of
//! rounds. Members only: the server loads the data for the viewer's own
//! teams; anything else is a 404. Drawn as SVG on the server, so it reads
//! without JavaScript.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};

use super::diagnosis::{diagnose, number, relative_time, sparkline, RunGlance};
use crate::auth::{format_time, set_status, use_page_data, use_viewer};

/// The viewer's teams and their loops.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopsView {
    pub teams: Vec<TeamLoops>,
    /// The server's clock when the list was read: relative times ("5 min
    /// ago") are counted from it, so the server and the browser agree.
    #[serde(default)]
    pub now: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeamLoops {
    pub team: String,
    pub loops: Vec<LoopRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopRow {
    pub name: String,
    /// The current run's state (`running`, `lost`, ...), if it has a run.
    pub state: Option<String>,
    pub last_class: Option<String>,
    pub rounds: u32,
    pub last_seen_at: Option<i64>,
    /// The exit that ended the current run, if it ended.
    #[serde(default)]
    pub exit: Option<String>,
    /// The current run's latest rounds and spend, for its diagnosis.
    #[serde(default)]
    pub glance: RunGlance,
}

/// One loop's current run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopView {
    pub team: String,
    pub name: String,
    pub run: Option<String>,
    pub state: Option<String>,
    pub exit: Option<String>,
    /// A page of the run's rounds: its latest, or those before a round.
    pub rounds: Vec<RoundRow>,
    /// The whole run for the chart, one bar per round or, in a long run,
    /// per bucket of rounds.
    pub chart: Vec<ChartBar>,
    /// The rounds the run holds in all.
    pub total_rounds: u32,
    /// When older rounds exist: the round before which they lie.
    pub older_before: Option<u32>,
    /// Whether newer rounds than this page's exist (a page of older ones).
    pub newer: bool,
    /// Operator controls the loop has not collected yet.
    pub pending_stop: bool,
    pub pending_steer: Option<String>,
    /// The outcome of the last control, or why it was refused.
    pub notice: Option<String>,
    /// Two rounds compared (`?a=&b=`, by default the last two).
    pub diff: Option<DiffView>,
    /// The loop's runs, newest first.
    pub runs: Vec<RunRow>,
    /// Where the loop's rounds come from: `API`, `connector`, `traces`.
    #[serde(default)]
    pub sources: Vec<String>,
    /// The newest round stored when this view was read: the live stream
    /// resumes after it, so no round falls between the page and the stream.
    #[serde(default)]
    pub last_event_id: Option<i64>,
    /// The shown run's latest rounds and spend, for its diagnosis.
    #[serde(default)]
    pub glance: RunGlance,
    /// The round opened by `?round=N`, if any.
    #[serde(default)]
    pub opened: Option<RoundDetail>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub id: String,
    pub state: String,
    /// The exit that ended it, and whether that exit was a bound (it was
    /// stopped) or a detection (it knew it was done).
    pub exit: Option<String>,
    pub ended_by: Option<String>,
    pub rounds: u32,
    pub started_at: i64,
}

/// The findings of round `b` against round `a`, by key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffView {
    pub a: u32,
    pub b: u32,
    pub new: Vec<String>,
    pub resolved: Vec<String>,
    pub persisting: Vec<String>,
    /// Each key's message (the later round's, else the earlier one's).
    #[serde(default)]
    pub messages: std::collections::BTreeMap<String, String>,
}

/// A round opened on the loop page (`?round=N`): every finding with its
/// message, its spend, its raw error, the operator's note it carried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundDetail {
    pub round: u32,
    pub state: String,
    pub class: String,
    pub advice: String,
    pub reason: String,
    pub findings: Vec<FindingRow>,
    pub usd: Option<f64>,
    pub tokens: Option<i64>,
    pub seconds: Option<f64>,
    pub exit: Option<String>,
    pub error: Option<String>,
    pub stop: bool,
    pub steer: Option<String>,
    /// The loop's ratchet after the round, if it sent one.
    #[serde(default)]
    pub ratchet: Option<RatchetView>,
    /// The earlier rounds whose fingerprint is within a few bits of this
    /// one's (a near repeat), and the fingerprint.
    #[serde(default)]
    pub near_seen_at: Vec<u32>,
    #[serde(default)]
    pub fingerprint: Option<String>,
}

/// "round 3", "rounds 3, 5 and 9".
pub fn rounds_text(rounds: &[u32]) -> String {
    let numbers: Vec<String> = rounds.iter().map(u32::to_string).collect();
    match numbers.as_slice() {
        [] => String::new(),
        [one] => format!("round {one}"),
        [init @ .., last] => format!("rounds {} and {last}", init.join(", ")),
    }
}

/// A round's ratchet: the one number the loop must move, as it sent it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatchetView {
    pub value: f64,
    pub best: Option<f64>,
    pub stall_count: Option<u32>,
}

/// "7 (best 7, 1 round without a move)".
pub fn ratchet_text(ratchet: &RatchetView) -> String {
    let mut details = Vec::new();
    if let Some(best) = ratchet.best {
        details.push(format!("best {}", number(best)));
    }
    if let Some(stalls) = ratchet.stall_count {
        details.push(match stalls {
            1 => "1 round without a move".to_string(),
            n => format!("{n} rounds without a move"),
        });
    }
    if details.is_empty() {
        number(ratchet.value)
    } else {
        format!("{} ({})", number(ratchet.value), details.join(", "))
    }
}

/// One finding of an opened round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingRow {
    /// `draft.md:4-9 blocking word-floor`.
    pub key: String,
    pub severity: String,
    pub message: String,
}

/// One bar of the chart: a round, or a bucket of rounds of a long run with
/// its most findings, its worst class and how many of its rounds repeated a
/// state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartBar {
    pub first_round: u32,
    pub last_round: u32,
    pub blocking: u32,
    pub other: u32,
    pub class: String,
    pub repeats: u32,
    /// A cycle's period, for a bar of one round.
    #[serde(default)]
    pub period: Option<u32>,
    /// The loop's ratchet after the bar's last round, if it sent one.
    #[serde(default)]
    pub ratchet: Option<f64>,
    /// Whether a round of the bar was a near repeat of an earlier one.
    #[serde(default)]
    pub near: bool,
}

impl ChartBar {
    /// "round 3", or "rounds 3–7" for a bucket.
    fn rounds(&self) -> String {
        if self.first_round == self.last_round {
            format!("round {}", self.first_round)
        } else {
            format!("rounds {}–{}", self.first_round, self.last_round)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRow {
    pub round: u32,
    pub state: String,
    pub class: String,
    pub advice: String,
    pub reason: String,
    pub blocking: u32,
    pub warnings: u32,
    pub infos: u32,
    pub usd: Option<f64>,
    /// Tokens spent, shown when the round reported no money (traces).
    #[serde(default)]
    pub tokens: Option<i64>,
    pub exit: Option<String>,
    pub error: Option<String>,
    /// The tool calls of a round from traces.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallRow>,
    /// The loop's ratchet after the round, if it sent one.
    #[serde(default)]
    pub ratchet: Option<RatchetView>,
    /// The earlier rounds whose fingerprint is near this one's.
    #[serde(default)]
    pub near_seen_at: Vec<u32>,
}

/// One tool call of a traced round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRow {
    pub name: String,
    pub arguments: Option<String>,
    pub failed: bool,
}

/// A tool call in a line: its name and its arguments, cut to a glance.
pub fn tool_call_text(call: &ToolCallRow) -> String {
    const SHOWN: usize = 60;
    match call.arguments.as_deref() {
        None => call.name.clone(),
        Some(arguments) if arguments.chars().count() <= SHOWN => format!("{}({arguments})", call.name),
        Some(arguments) => format!("{}({}…)", call.name, arguments.chars().take(SHOWN).collect::<String>()),
    }
}

/// What a round spent, in the table's words: money when it reported
/// money, else tokens.
fn spend_text(round: &RoundRow) -> String {
    match (round.usd, round.tokens) {
        (Some(usd), _) => format!("${usd:.2}"),
        (None, Some(tokens)) => format!("{tokens} tokens"),
        (None, None) => String::new(),
    }
}

fn refused(viewer_signed_in: bool, what: &'static str) -> AnyView {
    if viewer_signed_in {
        set_status(404);
        view! {
            <Title text="Not found"/>
            <section class="not-found" data-testid="not-found">
                <h1>{what}</h1>
                <p>"There is nothing here that belongs to one of your teams."</p>
            </section>
        }
        .into_any()
    } else {
        set_status(401);
        view! {
            <Title text="Loops"/>
            <section class="narrow">
                <h1>"Loops"</h1>
                <p>"Sign in to see your team's loops. " <a href="/signin">"Sign in"</a></p>
            </section>
        }
        .into_any()
    }
}

/// The diagnosis words the list can be filtered by, in the order of the
/// filter bar.
const DIAGNOSES: [&str; 12] = [
    "lost",
    "wedged",
    "cycling",
    "blocked",
    "stalled",
    "thrashing",
    "regressing",
    "failed",
    "converging",
    "started",
    "acting",
    "done",
];

/// What the colours of the list and the loop page mean.
#[component]
fn Legend() -> impl IntoView {
    view! {
        <ul class="legend" data-testid="legend" aria-label="What the colours mean">
            <li><span class="swatch tone-bad"></span>"needs a person: wedged, cycling, lost, failed"</li>
            <li><span class="swatch tone-warn"></span>"not moving: stalled, thrashing, regressing, blocked"</li>
            <li><span class="swatch tone-good"></span>"getting there or done: converging, done"</li>
            <li><span class="swatch tone-quiet"></span>"nothing to judge yet, or stopped"</li>
        </ul>
    }
}

#[component]
pub fn LoopsPage() -> impl IntoView {
    let signed_in = use_viewer().is_some();
    let Some(data) = use_page_data::<LoopsView>() else {
        return refused(signed_in, "No loops");
    };
    let query = use_query_map();
    let filter = query.with_untracked(|q| q.get("state")).unwrap_or_default();
    let wanted = query.with_untracked(|q| q.get("diagnosis")).unwrap_or_default();
    let current = RwSignal::new(data);
    let live = RwSignal::new(false);
    follow_list(current, live);
    view! {
        <Title text="Loops"/>
        {move || loops_list_body(current.get(), &filter, &wanted, live)}
    }
    .into_any()
}

/// The list below its title: drawn again whenever the data changes.
fn loops_list_body(data: LoopsView, filter: &str, wanted: &str, live: RwSignal<bool>) -> AnyView {
    let (filter, wanted) = (filter.to_string(), wanted.to_string());
    let link = |state: &str, diagnosis: &str| {
        let pairs: Vec<String> = [("state", state), ("diagnosis", diagnosis)]
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        if pairs.is_empty() {
            "/loops".to_string()
        } else {
            format!("/loops?{}", pairs.join("&"))
        }
    };
    let filters = ["", "running", "blocked", "lost", "done", "failed", "stopped"]
        .into_iter()
        .map(|state| {
            let label = if state.is_empty() { "any state" } else { state };
            let current = (state == filter).then_some("page");
            view! { <a href=link(state, &wanted) rel="external" class="filter" aria-current=current>{label}</a> }
        })
        .collect_view();
    let now = data.now;
    // Each loop with its diagnosis; those that need a person first.
    let mut loops: Vec<(String, LoopRow, super::diagnosis::Diagnosis)> = data
        .teams
        .iter()
        .flat_map(|team| {
            team.loops.iter().map(|row| {
                let diagnosis = diagnose(row.state.as_deref(), row.exit.as_deref(), &row.glance);
                (team.team.clone(), row.clone(), diagnosis)
            })
        })
        .collect();
    loops.sort_by(|a, b| a.2.attention.cmp(&b.2.attention).then_with(|| a.1.name.cmp(&b.1.name)));
    let present: Vec<&str> =
        DIAGNOSES.into_iter().filter(|word| loops.iter().any(|l| l.2.word == *word)).collect();
    let diagnosis_filters = std::iter::once("")
        .chain(present)
        .map(|word| {
            let label = if word.is_empty() { "any diagnosis" } else { word };
            let current = (word == wanted).then_some("page");
            view! { <a href=link(&filter, word) rel="external" class="filter" aria-current=current>{label}</a> }
        })
        .collect_view();
    let several_teams = data.teams.len() > 1;
    let total = loops.len();
    let rows = loops
        .into_iter()
        .filter(|(_, row, diagnosis)| {
            (filter.is_empty() || row.state.as_deref() == Some(filter.as_str()))
                && (wanted.is_empty() || diagnosis.word == wanted)
        })
        .map(|(team, row, diagnosis)| {
            let href = format!("/loops/{}?team={}", path_segment(&row.name), path_segment(&team));
            let spark = sparkline(&row.glance.recent);
            view! {
                <tr class=format!("loop-row {}", diagnosis.tone.css()) data-testid=format!("loop-{}", row.name) data-diagnosis=diagnosis.word>
                    <td data-label="Loop">
                        <a href=href rel="external">{row.name.clone()}</a>
                        {several_teams.then(|| view! { <span class="muted">{format!(" · {team}")}</span> })}
                    </td>
                    <td data-label="Diagnosis">
                        <span class=format!("badge {}", diagnosis.tone.css())>{diagnosis.word}</span>
                        " "
                        <span class="headline">{diagnosis.headline.clone()}</span>
                    </td>
                    <td data-label="State">{row.state.clone().unwrap_or_else(|| "no run".into())}</td>
                    <td data-label="Blocking, last rounds" class="spark" inner_html=spark></td>
                    <td data-label="Spend">{diagnosis.spend.clone().unwrap_or_else(|| "none reported".into())}</td>
                    <td data-label="Rounds">{row.rounds}</td>
                    <td data-label="Last round">
                        {row.last_seen_at.map(|at| view! { <time title=format_time(at)>{relative_time(at, now)}</time> })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    let teams = data
        .teams
        .iter()
        .map(|team| view! { <a href=format!("/teams/{}", team.team) rel="external">{team.team.clone()}</a> " " })
        .collect_view();
    view! {
        <section class="dashboard">
            <h1>"Loops"</h1>
            <p class="muted">"Teams: " {teams} {format!("· {total} loops, those that need a person first.")}</p>
            <p class="live-status muted" data-testid="live-status" aria-live="polite">
                {move || if live.get() { "Live: the list follows new rounds." } else { "" }}
            </p>
            <Legend/>
            <nav class="filters" aria-label="Filter by diagnosis">{diagnosis_filters}</nav>
            <nav class="filters" aria-label="Filter by run state">{filters}</nav>
            <div class="table-box" tabindex="0" role="region" aria-label="Loops">
                <table class="data-table loops-table" data-testid="loop-list">
                    <thead>
                        <tr>
                            <th scope="col">"Loop"</th>
                            <th scope="col">"Diagnosis"</th>
                            <th scope="col">"State"</th>
                            <th scope="col">"Blocking, last rounds"</th>
                            <th scope="col">"Spend"</th>
                            <th scope="col">"Rounds"</th>
                            <th scope="col">"Last round"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}

#[component]
pub fn LoopPage() -> impl IntoView {
    let signed_in = use_viewer().is_some();
    let Some(data) = use_page_data::<LoopView>() else {
        return refused(signed_in, "No such loop");
    };
    let title = format!("Loop {}", data.name);
    let current = RwSignal::new(data);
    let live = RwSignal::new(false);
    follow_loop(current, live);
    view! {
        <Title text=title/>
        {move || loop_body(current.get(), live)}
    }
    .into_any()
}

/// The loop page below its title: drawn again whenever the data changes.
fn loop_body(data: LoopView, live: RwSignal<bool>) -> AnyView {
    let shown_run = data.run.clone();
    let chart = convergence_chart(&data.chart, Some(&round_link(&data).replace('&', "&amp;")));
    let timeline = state_timeline(&data.rounds);
    // Traced loops show each round's tool calls.
    let traced = data.rounds.iter().any(|round| !round.tool_calls.is_empty());
    // Loops that keep a ratchet show it per round.
    let ratcheted = data.rounds.iter().any(|round| round.ratchet.is_some());
    // And near repeats, when a round had one.
    let nears = data.rounds.iter().any(|round| !round.near_seen_at.is_empty());
    let round_href = round_link(&data);
    let rows = data
        .rounds
        .iter()
        .map(|round| {
            let opened = data.opened.as_ref().is_some_and(|opened| opened.round == round.round);
            view! {
                <tr class:selected=opened>
                    <td data-label="Round">
                        <a href=format!("{round_href}{}#round-detail", round.round) rel="external" aria-label=format!("Open round {}", round.round)>
                            {round.round}
                        </a>
                    </td>
                    <td data-label="State"><code>{short(&round.state)}</code></td>
                    <td data-label="Class">{round.class.clone()}</td>
                    <td data-label="Advice">{round.advice.clone()}</td>
                    <td data-label="Reason">{round.reason.clone()}</td>
                    <td data-label="Blocking">{round.blocking}</td>
                    {ratcheted.then(|| view! {
                        <td data-label="Ratchet" class:blank=round.ratchet.is_none()>{round.ratchet.as_ref().map(|ratchet| number(ratchet.value)).unwrap_or_default()}</td>
                    })}
                    {nears.then(|| view! {
                        <td data-label="Near repeat of" data-testid=format!("near-{}", round.round) class:blank=round.near_seen_at.is_empty()>{rounds_text(&round.near_seen_at)}</td>
                    })}
                    {traced.then(|| {
                        let calls = round
                            .tool_calls
                            .iter()
                            .map(|call| {
                                let full = match &call.arguments {
                                    Some(arguments) => format!("{}({arguments})", call.name),
                                    None => call.name.clone(),
                                };
                                view! {
                                    <li class=if call.failed { "tool-call failed" } else { "tool-call" } title=full>
                                        <code>{tool_call_text(call)}</code>
                                        {call.failed.then_some(" (failed)")}
                                    </li>
                                }
                            })
                            .collect_view();
                        view! { <td data-label="Tool calls"><ul class="tool-calls" data-testid="tool-calls">{calls}</ul></td> }
                    })}
                    <td data-label="Spend" class:blank=spend_text(round).is_empty()>{spend_text(round)}</td>
                    <td data-label="Exit" class:blank=round.exit.is_none()>{round.exit.clone().unwrap_or_default()}</td>
                    <td class:blank=round.error.is_none()>
                        {round.error.clone().map(|error| {
                            view! {
                                <details>
                                    <summary>"error"</summary>
                                    <pre>{error}</pre>
                                </details>
                            }
                        })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    // The two tables are views of their own (`into_any`): nested in the
    // section, their types passed the compiler's depth limit in the
    // WebAssembly build.
    let runs_table = view! {
        <table class="data-table" data-testid="runs">
            <thead>
                <tr>
                    <th scope="col">"Run"</th>
                    <th scope="col">"State"</th>
                    <th scope="col">"Ended by"</th>
                    <th scope="col">"Rounds"</th>
                    <th scope="col">"Started"</th>
                </tr>
            </thead>
            <tbody>
                {data
                    .runs
                    .iter()
                    .map(|run| {
                        view! {
                            <tr class=if Some(&run.id) == shown_run.as_ref() { "selected" } else { "" }>
                                <td>
                                    <a
                                        href=format!(
                                            "/loops/{}?team={}&run={}",
                                            path_segment(&data.name),
                                            path_segment(&data.team),
                                            path_segment(&run.id),
                                        )
                                        rel="external"
                                        aria-current=if Some(&run.id) == shown_run.as_ref() { Some("true") } else { None }
                                    >
                                        <code>{run.id.clone()}</code>
                                    </a>
                                </td>
                                <td>{run.state.clone()}</td>
                                <td>
                                    {match (&run.exit, &run.ended_by) {
                                        (Some(exit), Some(how)) => format!("{exit} ({how})"),
                                        (Some(exit), None) => exit.clone(),
                                        _ => String::new(),
                                    }}
                                </td>
                                <td>{run.rounds}</td>
                                <td>{format_time(run.started_at)}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
    .into_any();
    let rounds_table = view! {
        <table class=if traced { "data-table rounds-table traced-rounds" } else { "data-table rounds-table" } data-testid="rounds">
            <thead>
                <tr>
                    <th scope="col">"Round"</th>
                    <th scope="col">"State"</th>
                    <th scope="col">"Class"</th>
                    <th scope="col">"Advice"</th>
                    <th scope="col">"Reason"</th>
                    <th scope="col">"Blocking"</th>
                    {ratcheted.then(|| view! { <th scope="col">"Ratchet"</th> })}
                    {nears.then(|| view! { <th scope="col">"Near repeat of"</th> })}
                    {traced.then(|| view! { <th scope="col">"Tool calls"</th> })}
                    <th scope="col">"Spend"</th>
                    <th scope="col">"Exit"</th>
                    <th scope="col"><span class="visually-hidden">"Error"</span></th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any();
    view! {
        <section class="dashboard">
            <h1>"Loop " <code>{data.name.clone()}</code></h1>
            <p class="muted">
                {format!(
                    "Team {} · run {} · {}{}",
                    data.team,
                    data.run.clone().unwrap_or_else(|| "none yet".into()),
                    data.state.clone().unwrap_or_else(|| "no run".into()),
                    data.exit.clone().map(|exit| format!(", ended by {exit}")).unwrap_or_default()
                )}
            </p>
            {(!data.sources.is_empty()).then(|| view! {
                <p class="muted" data-testid="round-sources">
                    {format!("Rounds from: {}", data.sources.join(", "))}
                </p>
            })}
            <p class="live-status muted" data-testid="live-status" aria-live="polite">
                {move || if live.get() { "Live: new rounds appear as they arrive." } else { "" }}
            </p>
            {data.notice.clone().map(|notice| view! { <p class="notice-box" role="status" data-testid="loop-notice">{notice}</p> })}
            <DiagnosisPanel data=data.clone()/>
            {data.opened.clone().map(|round| view! { <RoundDetailSection round base=round_link(&data)/> })}
            <OperatorControls data=data.clone()/>
            <h2>"Convergence"</h2>
            <div class="chart" data-testid="chart" tabindex="0" role="region" aria-label="Convergence chart" inner_html=chart></div>
            {data.diff.clone().map(|diff| view! { <DiffSection diff rounds=data.rounds.iter().map(|r| r.round).collect() name=data.name.clone() team=data.team.clone()/> })}
            <h2>"States"</h2>
            <p class="timeline" data-testid="timeline">{timeline}</p>
            <h2>"Runs"</h2>
            <div class="table-box" tabindex="0" role="region" aria-label="Runs">{runs_table}</div>
            <h2>"Rounds"</h2>
            <RoundPager data=data.clone()/>
            <div class="table-box" tabindex="0" role="region" aria-label="Rounds">{rounds_table}</div>
        </section>
    }
    .into_any()
}

/// Which rounds the table shows, and links to the pages around it.
#[component]
fn RoundPager(data: LoopView) -> impl IntoView {
    let (first, last) = (data.rounds.first().map(|r| r.round), data.rounds.last().map(|r| r.round));
    let base = format!(
        "/loops/{}?team={}{}",
        path_segment(&data.name),
        path_segment(&data.team),
        data.run.as_deref().map(|run| format!("&run={}", path_segment(run))).unwrap_or_default()
    );
    let older = data.older_before.map(|before| format!("{base}&before={before}"));
    let latest = data.newer.then(|| base.clone());
    view! {
        <p class="muted" data-testid="round-page">
            {match (first, last) {
                (Some(first), Some(last)) => format!("Rounds {first}–{last} of {}. ", data.total_rounds),
                _ => "No rounds yet. ".to_string(),
            }}
            {older.map(|href| view! { <a href=href rel="external" data-testid="older-rounds">"Older rounds"</a> " " })}
            {latest.map(|href| view! { <a href=href rel="external" data-testid="latest-rounds">"Latest rounds"</a> })}
        </p>
    }
}

/// The difference between two rounds, with a plain GET form to pick them.
#[component]
fn DiffSection(diff: DiffView, rounds: Vec<u32>, name: String, team: String) -> impl IntoView {
    let options = move |selected: u32| {
        rounds
            .iter()
            .map(|&round| view! { <option value=round.to_string() selected=round == selected>{round}</option> })
            .collect_view()
    };
    let messages = diff.messages.clone();
    let list = move |title: &'static str, testid: &'static str, keys: Vec<String>| {
        let count = keys.len();
        let items = keys
            .into_iter()
            .map(|key| {
                let message = messages.get(&key).cloned();
                view! {
                    <li>
                        <code>{key}</code>
                        {message.map(|message| view! { <p class="finding-message">{message}</p> })}
                    </li>
                }
            })
            .collect_view();
        view! {
            <div class="diff-column" data-testid=testid>
                <h3>{format!("{title} ({count})")}</h3>
                <ul class="plain-list">{items}</ul>
            </div>
        }
    };
    view! {
        <h2>"Between two rounds"</h2>
        <form method="get" action=format!("/loops/{}", path_segment(&name)) class="diff-form">
            <input type="hidden" name="team" value=team/>
            <label for="diff-a">"Round"</label>
            <select id="diff-a" name="a">{options(diff.a)}</select>
            <label for="diff-b">"against round"</label>
            <select id="diff-b" name="b">{options(diff.b)}</select>
            <button type="submit" class="button button-small">"Compare"</button>
        </form>
        <div class="diff">
            {list("New", "diff-new", diff.new)}
            {list("Resolved", "diff-resolved", diff.resolved)}
            {list("Persisting", "diff-persisting", diff.persisting)}
        </div>
    }
}

/// The address of a round of the shown run, but its number:
/// `/loops/NAME?team=T&run=R&round=`.
fn round_link(data: &LoopView) -> String {
    format!(
        "/loops/{}?team={}{}&round=",
        path_segment(&data.name),
        path_segment(&data.team),
        data.run.as_deref().map(|run| format!("&run={}", path_segment(run))).unwrap_or_default()
    )
}

/// An opened round: its class and reason, every finding with its message,
/// its spend, its raw error and the operator's note it carried.
#[component]
fn RoundDetailSection(round: RoundDetail, base: String) -> impl IntoView {
    let spend = super::diagnosis::spend_words(round.usd, round.tokens);
    let seconds = round.seconds.map(|s| format!("{s:.1} s"));
    let spent = match (spend, seconds) {
        (Some(spend), Some(seconds)) => format!("{spend} · {seconds}"),
        (Some(spend), None) => spend,
        (None, Some(seconds)) => seconds,
        (None, None) => "nothing reported".into(),
    };
    let findings = round
        .findings
        .iter()
        .map(|finding| {
            view! {
                <li class=format!("finding finding-{}", finding.severity)>
                    <span class="finding-severity">{finding.severity.clone()}</span>
                    " "
                    <code>{finding.key.clone()}</code>
                    <p class="finding-message">{finding.message.clone()}</p>
                </li>
            }
        })
        .collect_view();
    let (previous, next) = (round.round.checked_sub(1).filter(|n| *n > 0), round.round + 1);
    view! {
        <section class="round-detail" id="round-detail" data-testid="round-detail" aria-labelledby="round-detail-heading">
            <h2 id="round-detail-heading">{format!("Round {}: {}", round.round, round.class)}</h2>
            <p>{format!("Advice {}: {}", round.advice, round.reason)}</p>
            <dl class="facts">
                <dt>"State"</dt><dd><code>{round.state.clone()}</code></dd>
                <dt>"Spent"</dt><dd>{spent}</dd>
                {round.ratchet.as_ref().map(|ratchet| view! { <dt>"Ratchet"</dt><dd data-testid="round-ratchet">{ratchet_text(ratchet)}</dd> })}
                {round.fingerprint.clone().map(|fingerprint| view! { <dt>"Fingerprint"</dt><dd><code>{fingerprint}</code></dd> })}
                {(!round.near_seen_at.is_empty()).then(|| view! {
                    <dt>"Near repeat of"</dt>
                    <dd data-testid="round-near">{format!("{} (a fingerprint within 3 bits: been here before)", rounds_text(&round.near_seen_at))}</dd>
                })}
                {round.exit.clone().map(|exit| view! { <dt>"Exit"</dt><dd>{exit}</dd> })}
                {(round.stop || round.steer.is_some()).then(|| view! {
                    <dt>"Operator"</dt>
                    <dd data-testid="round-operator">
                        {round.stop.then_some("STOP. ")}
                        {round.steer.clone().map(|note| format!("STEER: {note}"))}
                    </dd>
                })}
            </dl>
            <h3>{format!("Findings ({})", round.findings.len())}</h3>
            <ul class="plain-list findings" data-testid="round-findings">{findings}</ul>
            {round.error.clone().map(|error| view! {
                <h3>"Error, as the loop sent it"</h3>
                <pre class="config" data-testid="round-error">{error}</pre>
            })}
            <p class="round-nav">
                {previous.map(|n| view! { <a href=format!("{base}{n}#round-detail") rel="external">{format!("← Round {n}")}</a> " " })}
                <a href=format!("{base}{next}#round-detail") rel="external">{format!("Round {next} →")}</a>
            </p>
        </section>
    }
}

/// The run's diagnosis, first on the page: in words and colour, the
/// advice, what ended the run and what it spent.
#[component]
fn DiagnosisPanel(data: LoopView) -> impl IntoView {
    let diagnosis = diagnose(data.state.as_deref(), data.exit.as_deref(), &data.glance);
    let tone = diagnosis.tone;
    view! {
        <section class=format!("diagnosis {}", tone.css()) data-testid="diagnosis" data-diagnosis=diagnosis.word aria-labelledby="diagnosis-heading">
            <p class=format!("badge {}", tone.css())>{diagnosis.word}</p>
            <h2 id="diagnosis-heading" data-testid="diagnosis-headline">{diagnosis.headline}</h2>
            <ul class="plain-list diagnosis-facts">
                {diagnosis.advice.map(|advice| view! { <li data-testid="diagnosis-advice">{advice}</li> })}
                {diagnosis.ended.map(|ended| view! { <li data-testid="diagnosis-ended">{ended}</li> })}
                <li data-testid="diagnosis-spend">
                    {format!(
                        "Spent so far: {}",
                        diagnosis.spend.unwrap_or_else(|| "nothing reported".into())
                    )}
                </li>
            </ul>
        </section>
    }
}

/// STOP and STEER: stored for the loop and delivered once, in the answer
/// to its next round; shown as pending until then. STOP asks to be
/// confirmed, and only a run that is still going offers it.
#[component]
fn OperatorControls(data: LoopView) -> impl IntoView {
    let stoppable = matches!(data.state.as_deref(), Some("running") | Some("blocked"));
    let action = format!("/loops/{}?team={}", path_segment(&data.name), data.team);
    let pending = match (data.pending_stop, data.pending_steer.clone()) {
        (false, None) => None,
        (stop, steer) => Some(format!(
            "Pending until the loop's next round: {}{}{}",
            if stop { "STOP" } else { "" },
            if stop && steer.is_some() { " and " } else { "" },
            steer.map(|note| format!("STEER \"{note}\"")).unwrap_or_default()
        )),
    };
    view! {
        <section class="controls" aria-labelledby="controls-heading">
            <h2 id="controls-heading">"Operator"</h2>
            {pending.map(|text| view! { <p class="pending" data-testid="pending">{text}</p> })}
            <div class="control-forms">
                {stoppable.then(|| view! {
                    <details class="stop-confirm">
                        <summary class="button button-danger" data-testid="stop">"STOP the loop…"</summary>
                        <p>"The loop is told to stop in the answer to its next round. It cannot be taken back."</p>
                        <form method="post" action=action.clone()>
                            <input type="hidden" name="action" value="stop"/>
                            <button type="submit" class="button button-danger" data-testid="stop-confirm">"Yes, stop it"</button>
                        </form>
                    </details>
                })}
                <form method="post" action=action class="steer-form">
                    <input type="hidden" name="action" value="steer"/>
                    <label for="steer-note">"STEER: a short note for the loop's next round"</label>
                    <textarea id="steer-note" name="note" rows="2" maxlength="4000" required></textarea>
                    <button type="submit" class="button" data-testid="steer">"Send note"</button>
                </form>
            </div>
        </section>
    }
}

/// A loop name as one path segment: everything but unreserved characters
/// percent-encoded (names may hold `?`, `#`, `%` or spaces).
pub fn path_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn short(state: &str) -> String {
    state.chars().take(8).collect()
}

/// Repeated states collapse: `b740d1b7 ×5 → 9c2e0a11`, and a stretch that
/// repeats a few states in turn folds into one group: `(a1 → b2) ×10`.
pub fn state_timeline(rounds: &[RoundRow]) -> String {
    let states: Vec<String> = rounds.iter().map(|round| short(&round.state)).collect();
    fold_states(&states)
}

/// The folding of [`state_timeline`] over plain strings.
pub fn fold_states(states: &[String]) -> String {
    let mut parts = Vec::new();
    let mut index = 0;
    while index < states.len() {
        // The period (1 to 4 states) whose repetitions from here cover
        // the most rounds; a period of one is a plain repeat.
        let mut best = (1, 1);
        for period in 1..=4 {
            if index + period > states.len() {
                break;
            }
            let block = &states[index..index + period];
            let mut times = 1;
            while index + (times + 1) * period <= states.len()
                && &states[index + times * period..index + (times + 1) * period] == block
            {
                times += 1;
            }
            if times >= 2 && period * times > best.0 * best.1 {
                best = (period, times);
            }
        }
        let (period, times) = best;
        let block = &states[index..index + period];
        parts.push(match (period, times) {
            (_, 1) => block[0].clone(),
            (1, _) => format!("{} ×{times}", block[0]),
            _ => format!("({}) ×{times}", block.join(" → ")),
        });
        index += period * times;
    }
    parts.join(" → ")
}

/// The convergence chart as SVG: findings per bar (a round, or a bucket of
/// rounds of a long run) stacked as blocking and other, the blocking count
/// as a line, a mark per class and dashes where the class changed. Built
/// as text so the server draws it; every value in it is a
/// number or a fixed word.
///
/// With `link`, each bar links to its round: `link` is the address but
/// the round's number, already escaped for an attribute.
///
/// Blocking findings are a dark red and the others a mid blue: at least 3:1
/// against each other and against the card. Above the bars a row of marks
/// tells the classes apart: a filled dot for a fixed point, a bracket over a
/// cycle with its period, a square for a stall, a diamond for thrashing, a
/// triangle for a regression, an arrow where the ratchet moved while the
/// blocking findings stood. The y-axis has ticks at round numbers. A loop
/// that sends its ratchet gets a lane of its own under the bars: the
/// ratchet's value per round, between its lowest and highest.
pub fn convergence_chart(bars: &[ChartBar], link: Option<&str>) -> String {
    const BLOCKING: &str = "#5a0e0e";
    const OTHER: &str = "#4a7fd0";
    const INK: &str = "#1d232b";
    const RATCHET: &str = "#0b6b3a";
    let (width, height, left, right, bottom, top) =
        (640.0_f64, 270.0_f64, 44.0_f64, 10.0_f64, 30.0_f64, 66.0_f64);
    let plot_h = height - bottom - top;
    let plot_w = width - left - right;
    let highest = bars.iter().map(|bar| bar.blocking + bar.other).max().unwrap_or(0);
    let tick = nice_step(highest);
    let most = highest.div_ceil(tick).max(1) * tick;
    let step = plot_w / bars.len().max(1) as f64;
    let bar_w = (step * 0.7).max(1.0);
    let y = |value: f64| top + plot_h - value / f64::from(most) * plot_h;
    let mark_y = top - 12.0;
    // The ratchet's lane, under the round labels, when the loop sent one.
    let ratchets: Vec<(usize, f64)> =
        bars.iter().enumerate().filter_map(|(index, bar)| bar.ratchet.map(|value| (index, value))).collect();
    let (lane_top, lane_h) = (height + 12.0, 44.0);
    let total_h = if ratchets.is_empty() { height } else { lane_top + lane_h + 10.0 };
    let mut svg = format!(
        r#"<svg viewBox="0 0 {width} {total_h}" role="{role}" aria-label="Findings per round, stacked by severity, with the blocking count as a line and a mark per class{lane}" xmlns="http://www.w3.org/2000/svg">"#,
        lane = if ratchets.is_empty() { "" } else { ", and the loop's ratchet per round under them" },
        // (An image's children are presentational: a chart whose bars are
        // links is a group.)
        role = if link.is_some() { "group" } else { "img" },
    );
    // The y-axis: a gridline and a label per tick.
    let mut value = 0;
    while value <= most {
        let at = y(f64::from(value));
        svg.push_str(&format!(
            r##"<line x1="{left}" y1="{at:.1}" x2="{:.1}" y2="{at:.1}" stroke="#dedad2"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{value}</text>"##,
            left + plot_w,
            left - 6.0,
            at + 4.0
        ));
        value += tick;
    }
    svg.push_str(&format!(
        r##"<line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="#4a5361"/><line x1="{left}" y1="{top}" x2="{left}" y2="{b}" stroke="#4a5361"/>"##,
        b = top + plot_h,
        r = left + plot_w,
    ));
    let centre = |index: usize| left + step * index as f64 + step / 2.0;
    // Labels under at most a dozen bars.
    let label_every = bars.len().div_ceil(12).max(1);
    let mut line = Vec::new();
    // Drawn over the line, after it.
    let mut near_rings = String::new();
    let mut previous_class: Option<&str> = None;
    for (index, bar) in bars.iter().enumerate() {
        let x = left + step * index as f64 + (step - bar_w) / 2.0;
        let cx = centre(index);
        let rounds = bar.rounds();
        if let Some(link) = link {
            svg.push_str(&format!(r##"<a href="{link}{}#round-detail">"##, bar.first_round));
        }
        svg.push_str(&format!(
            r#"<title>{rounds}: {} blocking, {} other, {}</title>"#,
            bar.blocking,
            bar.other,
            bar.class.replace('_', " ")
        ));
        // A transparent column makes the whole round easy to pick.
        svg.push_str(&format!(
            r#"<rect x="{:.1}" y="{top}" width="{step:.1}" height="{plot_h:.1}" fill="transparent"/>"#,
            left + step * index as f64
        ));
        let mut base = 0.0;
        for (count, colour) in [(bar.blocking, BLOCKING), (bar.other, OTHER)] {
            if count > 0 {
                let y0 = y(base);
                let y1 = y(base + f64::from(count));
                svg.push_str(&format!(
                    r#"<rect x="{x:.1}" y="{y1:.1}" width="{bar_w:.1}" height="{:.1}" fill="{colour}"/>"#,
                    y0 - y1
                ));
                base += f64::from(count);
            }
        }
        if link.is_some() {
            svg.push_str("</a>");
        }
        line.push(format!("{cx:.1},{:.1}", y(f64::from(bar.blocking))));
        if bar.near {
            near_rings.push_str(&format!(
                r#"<circle cx="{cx:.1}" cy="{:.1}" r="5" fill="none" stroke="{INK}" stroke-width="1.5"><title>{rounds}: near repeat of an earlier round</title></circle>"#,
                y(f64::from(bar.blocking))
            ));
        }
        // The class's mark (a cycle's bracket is drawn once per stretch).
        let r = (step * 0.3).clamp(2.5, 5.0);
        match bar.class.as_str() {
            "fixed_point" => svg.push_str(&format!(
                r#"<circle cx="{cx:.1}" cy="{mark_y:.1}" r="{r:.1}" fill="{INK}"><title>{rounds}: fixed point, the same state again</title></circle>"#
            )),
            "stalled" => svg.push_str(&format!(
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="{INK}" stroke-width="1.5"><title>{rounds}: stalled</title></rect>"#,
                cx - r,
                mark_y - r,
                2.0 * r,
                2.0 * r
            )),
            "thrashing" => svg.push_str(&format!(
                r#"<path d="M{cx:.1},{:.1} L{:.1},{mark_y:.1} L{cx:.1},{:.1} L{:.1},{mark_y:.1} Z" fill="{INK}"><title>{rounds}: thrashing</title></path>"#,
                mark_y - r - 1.0,
                cx + r + 1.0,
                mark_y + r + 1.0,
                cx - r - 1.0
            )),
            "regressing" => svg.push_str(&format!(
                r#"<path d="M{cx:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="none" stroke="{INK}" stroke-width="1.5"><title>{rounds}: regressing</title></path>"#,
                mark_y - r,
                cx + r,
                mark_y + r,
                cx - r,
                mark_y + r
            )),
            "ratcheting" => svg.push_str(&format!(
                r#"<path d="M{cx:.1},{:.1} V{:.1} M{:.1},{mark_y:.1} L{cx:.1},{:.1} L{:.1},{mark_y:.1}" fill="none" stroke="{INK}" stroke-width="1.5"><title>{rounds}: ratcheting, the ratchet moved</title></path>"#,
                mark_y + r + 1.0,
                mark_y - r - 1.0,
                cx - r,
                mark_y - r - 1.0,
                cx + r
            )),
            "cycle" if previous_class != Some("cycle") => {
                // From the round the cycle came back to, over every cycle
                // round that follows.
                let period = bar.period.unwrap_or(1) as usize;
                let from = index.saturating_sub(period);
                let to = bars[index..].iter().take_while(|b| b.class == "cycle").count() + index - 1;
                let (x0, x1) = (centre(from) - step * 0.35, centre(to) + step * 0.35);
                let label = match bar.period {
                    Some(period) => format!("cycle, period {period}"),
                    None => "cycle".to_string(),
                };
                svg.push_str(&format!(
                    r#"<path d="M{x0:.1},{:.1} V{:.1} H{x1:.1} V{:.1}" fill="none" stroke="{INK}" stroke-width="2"><title>{rounds}: {label}</title></path><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{label}</text>"#,
                    mark_y + 5.0,
                    mark_y - 3.0,
                    mark_y + 5.0,
                    ((x0 + x1) / 2.0).clamp(left + 40.0, left + plot_w - 40.0),
                    mark_y - 6.0
                ));
            }
            _ => {}
        }
        if previous_class.is_some_and(|class| class != bar.class) {
            let edge = left + step * index as f64;
            svg.push_str(&format!(
                r##"<line x1="{edge:.1}" y1="{top}" x2="{edge:.1}" y2="{}" stroke="#6b4a00" stroke-dasharray="3 3"><title>class changed</title></line>"##,
                top + plot_h
            ));
        }
        previous_class = Some(&bar.class);
        if index % label_every == 0 {
            svg.push_str(&format!(
                r#"<text x="{cx:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
                height - bottom + 15.0,
                bar.first_round
            ));
        }
    }
    if !line.is_empty() {
        svg.push_str(&format!(
            r#"<polyline points="{}" fill="none" stroke="{INK}" stroke-width="2"/>"#,
            line.join(" ")
        ));
    }
    svg.push_str(&near_rings);
    if let (Some(low), Some(high)) = (
        ratchets.iter().map(|(_, value)| *value).reduce(f64::min),
        ratchets.iter().map(|(_, value)| *value).reduce(f64::max),
    ) {
        let lane_y = |value: f64| {
            if high > low {
                lane_top + lane_h - (value - low) / (high - low) * lane_h
            } else {
                lane_top + lane_h / 2.0
            }
        };
        svg.push_str(&format!(
            r##"<text x="{left}" y="{:.1}" font-size="11">ratchet: the one number the loop must move</text><line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#dedad2"/><line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#dedad2"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            lane_top - 3.0,
            lane_top,
            left + plot_w,
            lane_top,
            lane_top + lane_h,
            left + plot_w,
            lane_top + lane_h,
            left - 6.0,
            lane_y(high) + 4.0,
            number(high),
        ));
        if high > low {
            svg.push_str(&format!(
                r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"#,
                left - 6.0,
                lane_y(low) + 4.0,
                number(low)
            ));
        }
        // A line through rounds that follow each other; a round without a
        // ratchet breaks it.
        let mut path = String::new();
        let mut previous: Option<usize> = None;
        for &(index, value) in &ratchets {
            let verb = if previous.is_some_and(|p| p + 1 == index) { 'L' } else { 'M' };
            path.push_str(&format!("{verb}{:.1},{:.1} ", centre(index), lane_y(value)));
            previous = Some(index);
        }
        svg.push_str(&format!(
            r#"<path d="{}" fill="none" stroke="{RATCHET}" stroke-width="2"/>"#,
            path.trim_end()
        ));
        for &(index, value) in &ratchets {
            svg.push_str(&format!(
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{RATCHET}"><title>{}: ratchet {}</title></circle>"#,
                centre(index),
                lane_y(value),
                bars[index].rounds(),
                number(value)
            ));
        }
    }
    svg.push_str(&format!(
        r##"<g font-size="11"><rect x="{left}" y="3" width="10" height="10" fill="{BLOCKING}"/><text x="{:.0}" y="12">blocking</text><rect x="{:.0}" y="3" width="10" height="10" fill="{OTHER}"/><text x="{:.0}" y="12">warning or info</text><text x="{:.0}" y="12">line: blocking · dashes: class changed</text><circle cx="{:.0}" cy="8" r="5" fill="none" stroke="{INK}" stroke-width="1.5"/><text x="{:.0}" y="12">near repeat</text><circle cx="{:.0}" cy="24" r="4" fill="{INK}"/><text x="{:.0}" y="28">fixed point</text><rect x="{:.0}" y="20" width="8" height="8" fill="none" stroke="{INK}" stroke-width="1.5"/><text x="{:.0}" y="28">stalled</text><path d="M{:.0},19 L{:.0},24 L{:.0},29 L{:.0},24 Z" fill="{INK}"/><text x="{:.0}" y="28">thrashing</text><path d="M{:.0},20 L{:.0},28 L{:.0},28 Z" fill="none" stroke="{INK}" stroke-width="1.5"/><text x="{:.0}" y="28">regressing</text><path d="M{:.0},29 V21 H{:.0} V29" fill="none" stroke="{INK}" stroke-width="2"/><text x="{:.0}" y="28">cycle</text><path d="M{:.0},29 V19 M{:.0},24 L{:.0},19 L{:.0},24" fill="none" stroke="{INK}" stroke-width="1.5"/><text x="{:.0}" y="28">ratchet moved</text></g></svg>"##,
        left + 14.0,
        left + 80.0,
        left + 94.0,
        left + 200.0,
        left + 445.0,
        left + 453.0,
        left + 4.0,
        left + 12.0,
        left + 90.0,
        left + 102.0,
        left + 160.0,
        left + 155.0,
        left + 160.0,
        left + 165.0,
        left + 172.0,
        left + 250.0,
        left + 246.0,
        left + 254.0,
        left + 262.0,
        left + 340.0,
        left + 356.0,
        left + 362.0,
        left + 402.0,
        left + 397.0,
        left + 402.0,
        left + 407.0,
        left + 412.0,
    ));
    svg
}

/// A round step for the y-axis (1, 2 or 5 times a power of ten) that gives
/// at most five ticks up to `highest`.
fn nice_step(highest: u32) -> u32 {
    let mut power = 1_u32;
    loop {
        for factor in [1, 2, 5] {
            let step = factor * power;
            if highest.div_ceil(step) <= 5 {
                return step;
            }
        }
        power = power.saturating_mul(10);
    }
}

/// Follows the rounds of every loop of the reader's teams while the list
/// is open (browser only): the list's data is read again when the stream
/// opens (a round stored while the page loaded is not missed) and after
/// each round.
fn follow_list(current: RwSignal<LoopsView>, live: RwSignal<bool>) {
    #[cfg(feature = "hydrate")]
    {
        Effect::new(move |_| live_stream::start_list(current, live));
        on_cleanup(live_stream::stop);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (current, live);
}

/// Follows the loop's live stream while the page is open (browser only):
/// each new round reloads the page's data, so the chart, the timeline and
/// the tables follow.
fn follow_loop(current: RwSignal<LoopView>, live: RwSignal<bool>) {
    #[cfg(feature = "hydrate")]
    {
        let (name, team) = current.with_untracked(|data| (data.name.clone(), data.team.clone()));
        Effect::new(move |_| {
            live_stream::start(&name, &team, current, live);
        });
        on_cleanup(live_stream::stop);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (current, live);
}

#[cfg(feature = "hydrate")]
mod live_stream {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use leptos::prelude::*;
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;
    use web_sys::EventSource;

    use super::{path_segment, LoopView};

    thread_local! {
        static SOURCE: RefCell<Option<EventSource>> = const { RefCell::new(None) };
    }

    pub fn start(name: &str, team: &str, current: RwSignal<LoopView>, live: RwSignal<bool>) {
        stop();
        let base = format!("/loops/{}", path_segment(name));
        let team = path_segment(team);
        // From the round the page was rendered with: what was stored since
        // comes first (the server's backlog), then the live rounds.
        let resume = current
            .with_untracked(|view| view.last_event_id)
            .map(|id| format!("&last_event_id={id}"))
            .unwrap_or_default();
        let Ok(source) = EventSource::new(&format!("{base}/events?team={team}{resume}")) else { return };
        // One reload at a time; rounds that arrive meanwhile ask for one more.
        let busy = Rc::new(Cell::new(false));
        let again = Rc::new(Cell::new(false));
        let view_url = Rc::new(move || {
            let search = web_sys::window().and_then(|w| w.location().search().ok()).unwrap_or_default();
            let picks: String = search
                .trim_start_matches('?')
                .split('&')
                .filter(|pair| {
                    ["a=", "b=", "run=", "before=", "round="].iter().any(|name| pair.starts_with(name))
                })
                .map(|pair| format!("&{pair}"))
                .collect();
            format!("{base}/view.json?team={team}{picks}")
        });
        let reload: Rc<dyn Fn()> = Rc::new({
            let (busy, again) = (busy.clone(), again.clone());
            move || reload(view_url.clone(), busy.clone(), again.clone(), current)
        });
        let on_round = Closure::<dyn Fn(web_sys::MessageEvent)>::new({
            let reload = reload.clone();
            move |_event: web_sys::MessageEvent| reload()
        });
        let _ = source.add_event_listener_with_callback("round", on_round.as_ref().unchecked_ref());
        let _ = source.add_event_listener_with_callback("reload", on_round.as_ref().unchecked_ref());
        on_round.forget();
        let on_open = Closure::<dyn Fn(web_sys::Event)>::new(move |_| live.set(true));
        source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        on_open.forget();
        // The browser reconnects by itself (sending Last-Event-ID); the
        // page says it is not live meanwhile.
        let on_error = Closure::<dyn Fn(web_sys::Event)>::new(move |_| live.set(false));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        SOURCE.with(|slot| *slot.borrow_mut() = Some(source));
    }

    /// The list's stream: every round of the reader's teams reloads the
    /// list's data; so does the stream's opening.
    pub fn start_list(current: RwSignal<super::LoopsView>, live: RwSignal<bool>) {
        stop();
        let Ok(source) = EventSource::new("/loops.stream") else { return };
        let busy = Rc::new(Cell::new(false));
        let again = Rc::new(Cell::new(false));
        let url: Rc<dyn Fn() -> String> = Rc::new(|| "/loops.json".to_string());
        let reload_list: Rc<dyn Fn()> =
            Rc::new(move || reload(url.clone(), busy.clone(), again.clone(), current));
        let on_round = Closure::<dyn Fn(web_sys::MessageEvent)>::new({
            let reload_list = reload_list.clone();
            move |_event: web_sys::MessageEvent| reload_list()
        });
        let _ = source.add_event_listener_with_callback("round", on_round.as_ref().unchecked_ref());
        let _ = source.add_event_listener_with_callback("reload", on_round.as_ref().unchecked_ref());
        on_round.forget();
        let on_open = Closure::<dyn Fn(web_sys::Event)>::new(move |_| {
            live.set(true);
            reload_list();
        });
        source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        on_open.forget();
        let on_error = Closure::<dyn Fn(web_sys::Event)>::new(move |_| live.set(false));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        SOURCE.with(|slot| *slot.borrow_mut() = Some(source));
    }

    fn reload<T>(
        url: Rc<dyn Fn() -> String>,
        busy: Rc<Cell<bool>>,
        again: Rc<Cell<bool>>,
        current: RwSignal<T>,
    ) where
        T: serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        if busy.replace(true) {
            again.set(true);
            return;
        }
        wasm_bindgen_futures::spawn_local(async move {
            loop {
                again.set(false);
                if let Some(view) = fetch_view(&url()).await {
                    current.set(view);
                }
                if !again.get() {
                    break;
                }
            }
            busy.set(false);
        });
    }

    async fn fetch_view<T: serde::de::DeserializeOwned>(url: &str) -> Option<T> {
        let window = web_sys::window()?;
        let response: web_sys::Response =
            JsFuture::from(window.fetch_with_str(url)).await.ok()?.dyn_into().ok()?;
        if !response.ok() {
            return None;
        }
        let text = JsFuture::from(response.text().ok()?).await.ok()?.as_string()?;
        serde_json::from_str(&text).ok()
    }

    pub fn stop() {
        SOURCE.with(|slot| {
            if let Some(source) = slot.borrow_mut().take() {
                source.close();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(n: u32, state: &str, class: &str, blocking: u32) -> RoundRow {
        RoundRow {
            round: n,
            state: state.into(),
            class: class.into(),
            advice: "continue".into(),
            reason: String::new(),
            blocking,
            warnings: 1,
            infos: 0,
            usd: None,
            tokens: None,
            exit: None,
            error: None,
            tool_calls: Vec::new(),
            ratchet: None,
            near_seen_at: Vec::new(),
        }
    }

    #[test]
    fn tool_calls_are_cut_to_a_glance() {
        let call = |arguments: Option<&str>| ToolCallRow {
            name: "search".into(),
            arguments: arguments.map(str::to_string),
            failed: false,
        };
        assert_eq!(tool_call_text(&call(None)), "search");
        assert_eq!(tool_call_text(&call(Some(r#"{"q":"x"}"#))), r#"search({"q":"x"})"#);
        let long = "a".repeat(100);
        assert_eq!(tool_call_text(&call(Some(&long))), format!("search({}…)", "a".repeat(60)));
        let mut round = round(1, "s", "acting", 0);
        round.tokens = Some(42);
        assert_eq!(spend_text(&round), "42 tokens");
        round.usd = Some(0.5);
        assert_eq!(spend_text(&round), "$0.50");
    }

    #[test]
    fn loop_names_become_one_path_segment() {
        assert_eq!(path_segment("drafter-2"), "drafter-2");
        assert_eq!(path_segment("a b?c#d%é"), "a%20b%3Fc%23d%25%C3%A9");
    }

    #[test]
    fn repeated_states_collapse_in_the_timeline() {
        let rounds = [
            round(1, "aaaaaaaa11", "first", 3),
            round(2, "bbbbbbbb22", "converging", 2),
            round(3, "bbbbbbbb22", "fixed_point", 2),
            round(4, "bbbbbbbb22", "fixed_point", 2),
        ];
        assert_eq!(state_timeline(&rounds), "aaaaaaaa → bbbbbbbb ×3");
        let bars: Vec<ChartBar> = rounds
            .iter()
            .map(|round| ChartBar {
                first_round: round.round,
                last_round: round.round,
                blocking: round.blocking,
                other: round.warnings + round.infos,
                class: round.class.clone(),
                repeats: u32::from(round.class == "fixed_point"),
                period: None,
                ratchet: None,
                near: false,
            })
            .collect();
        let svg = convergence_chart(&bars, None);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("fixed point, the same state again</title>").count(), 2);
        assert_eq!(svg.matches("<title>class changed</title>").count(), 2);
        assert!(!svg.contains("<a "), "no links without an address");
        let empty = convergence_chart(&[], None);
        assert_eq!(empty.matches("<rect").count(), 3, "an empty run draws the legend only");
        // Bars link to their round.
        let linked = convergence_chart(&bars, Some("/loops/x?team=t&amp;round="));
        assert_eq!(linked.matches(r##"<a href="/loops/x?team=t&amp;round=3#round-detail">"##).count(), 1);
    }

    fn bar(round: u32, class: &str, period: Option<u32>) -> ChartBar {
        ChartBar {
            first_round: round,
            last_round: round,
            blocking: 2,
            other: 1,
            class: class.into(),
            repeats: 0,
            period,
            ratchet: None,
            near: false,
        }
    }

    #[test]
    fn the_chart_marks_each_class_its_own_way() {
        let classes = ["first", "stalled", "thrashing", "regressing", "cycle", "cycle", "cycle"];
        let bars: Vec<ChartBar> = classes
            .iter()
            .enumerate()
            .map(|(i, class)| bar(i as u32 + 1, class, (*class == "cycle").then_some(2)))
            .collect();
        let svg = convergence_chart(&bars, None);
        assert_eq!(svg.matches("<title>round 2: stalled</title>").count(), 1);
        assert_eq!(svg.matches("<title>round 3: thrashing</title>").count(), 1);
        assert_eq!(svg.matches("<title>round 4: regressing</title>").count(), 1);
        // One bracket over the stretch of cycle rounds, with its period.
        assert_eq!(svg.matches(">cycle, period 2</text>").count(), 1);
        // Every text is at least 11 units high (the chart is never drawn
        // narrower than its 640-unit box).
        assert!(!svg.contains(r#"font-size="10""#));
        assert!(svg.contains(r#"font-size="11""#));
    }

    #[test]
    fn the_ratchet_has_a_lane_of_its_own() {
        let without = convergence_chart(&[bar(1, "first", None), bar(2, "stalled", None)], None);
        assert!(without.starts_with(r#"<svg viewBox="0 0 640 270""#));
        assert!(!without.contains("ratchet:"));
        let mut bars: Vec<ChartBar> = ["first", "converging", "ratcheting", "stalled"]
            .iter()
            .zip(1..)
            .map(|(c, n)| bar(n, c, None))
            .collect();
        for (bar, value) in bars.iter_mut().zip([5.0, 6.0, 7.0, 7.0]) {
            bar.ratchet = Some(value);
        }
        bars[3].ratchet = None;
        let svg = convergence_chart(&bars, None);
        assert!(svg.starts_with(r#"<svg viewBox="0 0 640 336""#), "taller by the lane");
        assert_eq!(svg.matches(": ratchet ").count(), 3, "a dot per round that sent one");
        assert!(svg.contains("<title>round 3: ratchet 7</title>"));
        // Its axis runs from the lowest to the highest value.
        assert!(svg.contains(">5</text>") && svg.contains(">7</text>"));
        assert_eq!(svg.matches("<title>round 3: ratcheting, the ratchet moved</title>").count(), 1);
        assert!(svg.contains(">ratchet moved</text>"), "the legend names the mark");
        assert!(!svg.contains(r#"font-size="10""#));
        let row = RatchetView { value: 7.0, best: Some(7.0), stall_count: Some(1) };
        assert_eq!(ratchet_text(&row), "7 (best 7, 1 round without a move)");
        assert_eq!(ratchet_text(&RatchetView { value: 87.5, best: None, stall_count: None }), "87.5");
    }

    #[test]
    fn near_repeats_are_ringed() {
        let mut bars = vec![bar(1, "first", None), bar(2, "converging", None), bar(3, "converging", None)];
        bars[2].near = true;
        let svg = convergence_chart(&bars, None);
        assert_eq!(svg.matches("<title>round 3: near repeat of an earlier round</title>").count(), 1);
        assert!(svg.contains(">near repeat</text>"), "the legend names the ring");
        assert_eq!(rounds_text(&[3]), "round 3");
        assert_eq!(rounds_text(&[2, 5, 9]), "rounds 2, 5 and 9");
        assert_eq!(rounds_text(&[]), "");
    }

    #[test]
    fn the_y_axis_has_round_ticks() {
        assert_eq!(nice_step(0), 1);
        assert_eq!(nice_step(4), 1);
        assert_eq!(nice_step(7), 2);
        assert_eq!(nice_step(29), 10);
        assert_eq!(nice_step(120), 50);
        let svg = convergence_chart(&[bar(1, "first", None)], None);
        for label in [">0</text>", ">1</text>", ">2</text>", ">3</text>"] {
            assert!(svg.contains(label), "{label} in {svg}");
        }
    }

    fn fold(states: &str) -> String {
        let states: Vec<String> = states.split_whitespace().map(str::to_string).collect();
        fold_states(&states)
    }

    #[test]
    fn timelines_fold_repeats_and_periods() {
        assert_eq!(fold("a a a a a b"), "a ×5 → b");
        assert_eq!(fold("a b a b a b a b"), "(a → b) ×4");
        assert_eq!(fold("x a b c a b c y"), "x → (a → b → c) ×2 → y");
        assert_eq!(fold("a b c d"), "a → b → c → d");
        assert_eq!(fold(""), "");
        // A plain repeat beats a period that covers less.
        assert_eq!(fold("a a a a b a"), "a ×4 → b → a");
    }
}
