//! The founders' tools, as an rmcp server handler. Each tool reads the
//! caller that [`super::authorize`] put in the request's extensions, so a
//! tool never runs for a request that did not pass the gate, and answers a
//! mistake (an unknown loop, a source too large) as a tool error the model
//! reads (`isError`), never as a broken session.

use auditor::{audit_with, Language, Report};
use rmcp::handler::server::common::Extension;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, Json, ServerHandler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::McpCaller;
use crate::audit::AUDIT_MAX_BYTES;
use crate::loops::{LoopsError, RoundWindow};
use crate::newsletter::Tier;
use crate::web::AppState;

/// The most rounds `loop_history` returns at once.
pub const MAX_HISTORY: u32 = 100;
/// The rounds `loop_history` returns when `last` is not given.
pub const DEFAULT_HISTORY: u32 = 20;
/// The most issues `search_archive` lists.
pub const MAX_SEARCH_RESULTS: usize = 10;

/// What the model is told when it connects.
const INSTRUCTIONS: &str =
    "Fixed Point's tools for agent loops. `audit_loop` reads a loop's source and says \
which of eight exit conditions it implements and whether it can tell that it has finished. `loop_history` \
and `seen_state` read the convergence history of your team's loops as the Fixed Point dashboard shows it: \
call `seen_state` with the digest of your current state to ask \"have I been here before?\". \
`search_archive` and `read_issue` read the newsletter's archive in full.";

/// The handler rmcp runs for each request. Cheap to make: the state is
/// shared, the router is built once per request from static tables.
#[derive(Clone)]
pub struct FounderTools {
    state: AppState,
    tool_router: ToolRouter<FounderTools>,
}

impl FounderTools {
    pub fn new(state: AppState) -> FounderTools {
        FounderTools { state, tool_router: FounderTools::tool_router() }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditLoopInput {
    /// The source of the agent loop: a whole file or an excerpt, at most 1 MiB.
    pub source: String,
    /// python, javascript, typescript, tsx, bash, go or rust. Detected from the source when absent.
    #[serde(default)]
    pub language: Option<String>,
    /// The file's name, shown in the report and used as a hint for the language.
    #[serde(default)]
    pub path: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoopHistoryInput {
    /// The team's slug, as in the dashboard's address (`/teams/{team}`).
    pub team: String,
    /// The loop's name, as it reports rounds.
    #[serde(rename = "loop")]
    pub loop_name: String,
    /// A run's id; the loop's current run when absent.
    #[serde(default)]
    pub run: Option<String>,
    /// How many of the run's latest rounds to return (1 to 100, default 20).
    #[serde(default)]
    pub last: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeenStateInput {
    /// The team's slug.
    pub team: String,
    /// The loop's name.
    #[serde(rename = "loop")]
    pub loop_name: String,
    /// The state digest the loop reports with its rounds (`state` in the ingest API).
    pub state: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// Words to look for in the issues' titles, summaries and full text; every word must appear.
    pub query: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadIssueInput {
    /// The issue's slug, as `search_archive` lists it.
    pub slug: String,
}

/// What a round spent, as the loop reported it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SpendOut {
    pub tokens: Option<i64>,
    pub usd: Option<f64>,
    pub seconds: Option<f64>,
}

/// One round as the dashboard judged it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RoundOut {
    pub round: u32,
    /// The state digest the loop reported.
    pub state: String,
    /// first, progress, thrashing, stalled, cycle, fixed_point, done, ... (PRODUCT.md's convergence classes).
    pub class: String,
    /// continue or stop: what the loop should do next.
    pub advice: String,
    /// Why the round got its class, in a sentence.
    pub reason: String,
    /// Blocking findings in the round.
    pub blocking: u32,
    /// All findings in the round.
    pub findings: u32,
    /// Earlier rounds of this run that reached the same state.
    pub seen_at: Vec<u32>,
    pub spent: SpendOut,
    /// When the round was stored, Unix milliseconds.
    pub created_at: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LoopHistoryOut {
    pub team: String,
    #[serde(rename = "loop")]
    pub loop_name: String,
    /// The run read (absent when the loop has no run yet).
    pub run: Option<String>,
    /// running, blocked, finished or lost.
    pub run_state: Option<String>,
    /// The rounds the run holds in all.
    pub total_rounds: u32,
    /// The latest rounds, oldest first.
    pub rounds: Vec<RoundOut>,
}

/// A round that judged the state asked about.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SightingOut {
    pub run: String,
    pub round: u32,
    pub class: String,
    pub outcome: String,
    pub blocking: u32,
    pub findings: u32,
    pub created_at: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SeenStateOut {
    pub state: String,
    /// Whether any round of this loop, in any run, reached this state.
    pub seen: bool,
    /// Those rounds, oldest first (at most 500).
    pub rounds: Vec<SightingOut>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct IssueHit {
    pub slug: String,
    pub title: String,
    /// YYYY-MM-DD.
    pub date: String,
    /// free, pro or founder.
    pub tier: String,
    pub summary: String,
    /// The text around the first place the query's words appear.
    pub excerpt: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOut {
    pub query: String,
    /// The best matches first, at most 10.
    pub issues: Vec<IssueHit>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct IssueOut {
    pub slug: String,
    pub title: String,
    pub date: String,
    pub tier: String,
    pub summary: String,
    /// The whole issue as plain text, paid part included.
    pub text: String,
    /// Its address on the site.
    pub url: String,
}

fn caller(parts: &http::request::Parts) -> Result<&McpCaller, String> {
    // The gate inserts the caller before rmcp sees the request; without it
    // the request did not pass the gate, and no tool may run.
    parts.extensions.get::<McpCaller>().ok_or_else(|| "not authorised".to_string())
}

// Each tool spells out `Result<Json<T>, String>`: rmcp's macro reads the
// output schema from that spelling, and an alias would hide it.
#[tool_router]
impl FounderTools {
    /// Audits an agent loop's source with Fixed Point's auditor.
    #[tool(
        name = "audit_loop",
        description = "Audit the source of an agent loop. Returns the auditor's JSON report: for each file, \
the loops found, all eight exit conditions (E1 goal met, E2 turn cap, E3 budget cap, E4 wall clock, \
E5 no progress, E6 human interrupt, E7 error threshold, E8 external event) with `found` and line-cited \
evidence, warnings, and the verdict: CONVERGES (the loop can tell it has finished), DIVERGES (it only \
stops by running out of something) or UNDEFINED (nothing ends it). Use it before running a loop you \
wrote or were given.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn audit_loop(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<AuditLoopInput>,
    ) -> Result<Json<Report>, String> {
        let who = caller(&parts)?;
        tracing::info!(token = who.token_id, tool = "audit_loop", bytes = input.source.len(), "mcp call");
        if input.source.len() > AUDIT_MAX_BYTES {
            return Err(format!(
                "source is {} bytes; the auditor reads at most {AUDIT_MAX_BYTES} bytes (1 MiB): send the loop and what it calls",
                input.source.len()
            ));
        }
        if input.path.as_deref().is_some_and(|path| path.len() > 256) {
            return Err("path must be at most 256 bytes".to_string());
        }
        let language = match input.language.as_deref().map(str::trim).filter(|name| !name.is_empty()) {
            None => None,
            Some(name) => Some(Language::from_name(name).ok_or_else(|| {
                format!(
                    "unknown language {name:?}; use python, javascript, typescript, tsx, bash, go or rust"
                )
            })?),
        };
        let slot = self.state.audit_slots.acquire().await.map_err(|_| {
            format!(
                "{}; retry in {} seconds",
                crate::web::audit_slots::BUSY_MESSAGE,
                crate::web::audit_slots::RETRY_AFTER_SECONDS
            )
        })?;
        let audited = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            audit_with(&input.source, input.path.as_deref(), language)
                .map(|file| Report::from_files(vec![file]))
        })
        .await
        .map_err(|error| {
            tracing::error!(%error, "an MCP audit task failed");
            "the audit failed; try again".to_string()
        })?;
        audited.map(Json).map_err(|_| {
            "the language could not be detected; pass `language` (python, javascript, typescript, tsx, bash, go or rust)"
                .to_string()
        })
    }

    /// A loop's latest rounds.
    #[tool(
        name = "loop_history",
        description = "Read the latest rounds of one of your team's loops, as the Fixed Point dashboard judged \
them: each round's convergence class (progress, stalled, thrashing, cycle, fixed_point, done, ...), the advice \
(continue or stop) and why, its blocking findings and what it spent. `run` picks a run (default: the current \
one); `last` how many rounds (default 20, at most 100).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn loop_history(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<LoopHistoryInput>,
    ) -> Result<Json<LoopHistoryOut>, String> {
        let who = caller(&parts)?;
        tracing::info!(token = who.token_id, tool = "loop_history", "mcp call");
        let last = input.last.unwrap_or(DEFAULT_HISTORY);
        if !(1..=MAX_HISTORY).contains(&last) {
            return Err(format!("last must be between 1 and {MAX_HISTORY} (got {last})"));
        }
        let team_id = self.team_of(who, &input.team, &input.loop_name).await?;
        let history = self
            .state
            .store
            .loop_history_window(team_id, &input.loop_name, input.run.as_deref(), RoundWindow::Latest, last)
            .await
            .map_err(|error| loop_error(error, &input.team, &input.loop_name))?;
        Ok(Json(LoopHistoryOut {
            team: input.team,
            loop_name: history.loop_name,
            run: history.run.as_ref().map(|run| run.id.clone()),
            run_state: history.run.as_ref().map(|run| run.state.clone()),
            total_rounds: history.page.map_or(0, |page| page.total),
            rounds: history
                .rounds
                .into_iter()
                .map(|round| RoundOut {
                    round: round.round,
                    state: round.state,
                    class: round.class.as_str().to_string(),
                    advice: round.advice.as_str().to_string(),
                    reason: round.reason,
                    blocking: round.blocking,
                    findings: u32::try_from(round.findings.len()).unwrap_or(u32::MAX),
                    seen_at: round.seen_at,
                    spent: SpendOut {
                        tokens: round.spent.tokens,
                        usd: round.spent.usd,
                        seconds: round.spent.seconds,
                    },
                    created_at: round.created_at,
                })
                .collect(),
        }))
    }

    /// "Have I been here before?"
    #[tool(
        name = "seen_state",
        description = "Have I been here before? Give the state digest your loop reports with its rounds; the \
answer lists every round of this loop, in any run, that reached the same state, with the class each got. A \
state seen before in this run means the loop is going round in circles (cycle) or has stopped moving \
(fixed_point): change approach or stop.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn seen_state(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<SeenStateInput>,
    ) -> Result<Json<SeenStateOut>, String> {
        let who = caller(&parts)?;
        tracing::info!(token = who.token_id, tool = "seen_state", "mcp call");
        if input.state.is_empty() || input.state.len() > 256 {
            return Err("state must be 1 to 256 bytes, the digest your loop reports".to_string());
        }
        let team_id = self.team_of(who, &input.team, &input.loop_name).await?;
        let sightings = self
            .state
            .store
            .state_sightings(team_id, &input.loop_name, &input.state)
            .await
            .map_err(|error| loop_error(error, &input.team, &input.loop_name))?;
        Ok(Json(SeenStateOut {
            seen: !sightings.is_empty(),
            state: input.state,
            rounds: sightings
                .into_iter()
                .map(|sighting| SightingOut {
                    run: sighting.run,
                    round: sighting.round,
                    class: sighting.class.as_str().to_string(),
                    outcome: sighting.outcome.as_str().to_string(),
                    blocking: sighting.blocking,
                    findings: sighting.findings,
                    created_at: sighting.created_at,
                })
                .collect(),
        }))
    }

    /// Searches the newsletter's archive.
    #[tool(
        name = "search_archive",
        description = "Search every issue of the Fixed Point newsletter (paid parts included) for words; \
returns the best matches with an excerpt. Read one whole with `read_issue`.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search_archive(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<SearchInput>,
    ) -> Result<Json<SearchOut>, String> {
        let who = caller(&parts)?;
        tracing::info!(token = who.token_id, tool = "search_archive", "mcp call");
        let words = super::search::query_words(&input.query)?;
        let issues =
            self.state.store.feed_issues(Tier::Founder, super::search::MAX_ISSUES_SEARCHED).await.map_err(
                |error| {
                    tracing::error!(%error, "reading the archive for an MCP search failed");
                    "the archive could not be read; try again".to_string()
                },
            )?;
        let issues = super::search::rank(&words, issues, MAX_SEARCH_RESULTS)
            .into_iter()
            .map(|(issue, excerpt)| IssueHit {
                slug: issue.slug,
                title: issue.title,
                date: issue.date,
                tier: issue.tier.as_str().to_string(),
                summary: issue.summary,
                excerpt,
            })
            .collect();
        Ok(Json(SearchOut { query: input.query, issues }))
    }

    /// Reads one issue whole.
    #[tool(
        name = "read_issue",
        description = "Read one issue of the Fixed Point newsletter whole, paid part included, as plain text.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn read_issue(
        &self,
        Extension(parts): Extension<http::request::Parts>,
        Parameters(input): Parameters<ReadIssueInput>,
    ) -> Result<Json<IssueOut>, String> {
        let who = caller(&parts)?;
        tracing::info!(token = who.token_id, tool = "read_issue", "mcp call");
        let record = self.state.store.issue_for(input.slug.trim(), Tier::Founder).await.map_err(|error| {
            tracing::error!(%error, "reading an issue for MCP failed");
            "the issue could not be read; try again".to_string()
        })?;
        let record = record.ok_or_else(|| {
            format!("no issue has the slug {:?}; `search_archive` lists the slugs", input.slug)
        })?;
        let mut text = super::search::html_to_text(&record.free_html);
        if let Some(paid) = &record.paid_html {
            text.push_str("\n\n");
            text.push_str(&super::search::html_to_text(paid));
        }
        Ok(Json(IssueOut {
            url: format!("{}/issues/{}", self.state.config.public_url, record.slug),
            slug: record.slug,
            title: record.title,
            date: record.date,
            tier: record.tier.as_str().to_string(),
            summary: record.summary,
            text,
        }))
    }
}

impl FounderTools {
    /// The id of `team` when the caller belongs to it. A team the caller is
    /// not in answers exactly as a team that does not exist: the tools never
    /// tell whether another team or its loop exists.
    async fn team_of(&self, who: &McpCaller, team: &str, loop_name: &str) -> Result<i64, String> {
        let memberships = self.state.store.memberships(who.account_id).await.map_err(|error| {
            tracing::error!(%error, "reading memberships for MCP failed");
            "your teams could not be read; try again".to_string()
        })?;
        memberships
            .into_iter()
            .find(|membership| membership.team.slug == team)
            .map(|membership| membership.team.id)
            .ok_or_else(|| not_found(team, loop_name))
    }
}

fn not_found(team: &str, loop_name: &str) -> String {
    format!("no loop {loop_name:?} in a team {team:?} of yours: check both names (the dashboard shows them)")
}

fn loop_error(error: LoopsError, team: &str, loop_name: &str) -> String {
    match error {
        LoopsError::NoSuchLoop(_) => not_found(team, loop_name),
        LoopsError::NoSuchRun(run) => format!("loop {loop_name:?} has no run {run:?}"),
        other => {
            tracing::error!(error = %other, "an MCP loop query failed");
            "the loop could not be read; try again".to_string()
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FounderTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fixedpoint", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}
