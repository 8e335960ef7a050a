//! The data of the loops list and a loop's page, read before the page
//! renders (see [`super::page_data`]) or as JSON for the live page
//! (`/loops.json`, `/loops/{loop}/view.json`). Every reader sees only the
//! loops of their own teams.

use app::pages::diagnosis::{GlanceRound, RunGlance};
use app::pages::loops::{
    ChartBar, DiffView, FindingRow, LoopRow, LoopView, LoopsView, RatchetView, RoundDetail, RoundRow, RunRow,
    TeamLoops,
};

use super::DashboardError;
use crate::accounts::{Account, Team};
use crate::loops::{RoundWindow, RoundsPage};
use crate::web::AppState;

/// How many rounds the loop page shows at once (its table; the chart
/// summarises the whole run).
const PAGE_ROUNDS: u32 = 100;

pub(crate) async fn loops_view(state: &AppState, account: &Account) -> Result<LoopsView, DashboardError> {
    let mut teams = Vec::new();
    for membership in state.store.memberships(account.id).await? {
        let mut loops = Vec::new();
        for summary in state.store.team_loops(membership.team.id).await? {
            let glance = match summary.current_run.as_ref() {
                Some(run) => glance_of(
                    state.store.run_glance(membership.team.id, &summary.name, &run.id, LIST_ROUNDS).await,
                )?,
                None => RunGlance::default(),
            };
            loops.push(LoopRow {
                state: summary.current_run.as_ref().map(|run| run.state.clone()),
                exit: summary.current_run.as_ref().and_then(|run| run.exit.clone()),
                last_class: summary.last_class.map(|class| class.as_str().to_string()),
                rounds: summary.current_run.as_ref().map_or(0, |run| run.last_round),
                last_seen_at: summary.current_run.as_ref().map(|run| run.last_seen_at),
                name: summary.name,
                glance,
            });
        }
        teams.push(TeamLoops { team: membership.team.slug, loops });
    }
    Ok(LoopsView { teams, now: crate::store::now_millis() })
}

/// How many of a run's latest rounds the list reads for each loop (its
/// sparkline and diagnosis); the loop page reads a page of them.
const LIST_ROUNDS: u32 = 30;

/// The store's glance at a run, as the pages' diagnosis reads it.
fn glance_of(
    glance: Result<crate::loops::RunGlance, crate::loops::LoopsError>,
) -> Result<RunGlance, DashboardError> {
    let glance = glance?;
    Ok(RunGlance {
        recent: glance
            .recent
            .into_iter()
            .map(|row| GlanceRound {
                round: row.round,
                state: row.state,
                class: row.class,
                advice: row.advice,
                reason: row.reason,
                period: row.period,
                blocking: row.blocking,
                error: row.error,
                ratchet: row.ratchet,
            })
            .collect(),
        more_before: glance.more_before,
        usd: glance.usd,
        tokens: glance.tokens,
    })
}

/// The team (of the account's) that has the loop `name`: `team` picks
/// which when several do. `None` when it is not theirs.
pub(crate) async fn loop_team(
    state: &AppState,
    account: &Account,
    team: Option<&str>,
    name: &str,
) -> Result<Option<Team>, DashboardError> {
    for membership in state.store.memberships(account.id).await? {
        if team.is_some_and(|team| team != membership.team.slug) {
            continue;
        }
        if state.store.loop_id(membership.team.id, name).await?.is_some() {
            return Ok(Some(membership.team));
        }
    }
    Ok(None)
}

/// What a loop page's address picks: a run other than the current one, two
/// rounds to compare, the page of rounds before a round, a round opened.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoopPicks {
    pub run: Option<String>,
    pub diff: (Option<u32>, Option<u32>),
    pub before: Option<u32>,
    pub round: Option<u32>,
}

/// The loop `name` of one of the account's teams; `None` when it is not
/// theirs.
pub(crate) async fn loop_view(
    state: &AppState,
    account: &Account,
    team: Option<&str>,
    name: &str,
    picks: &LoopPicks,
) -> Result<Option<LoopView>, DashboardError> {
    match loop_team(state, account, team, name).await? {
        Some(team) => loop_view_of(state, &team, name, None, picks).await.map(Some),
        None => Ok(None),
    }
}

pub(crate) async fn loop_view_of(
    state: &AppState,
    team: &Team,
    name: &str,
    notice: Option<String>,
    picks: &LoopPicks,
) -> Result<LoopView, DashboardError> {
    let (run, pick, before) = (picks.run.as_deref(), picks.diff, picks.before);
    // Read before anything else the page shows: every round stored after
    // this id reaches the page's stream, even one stored while the page is
    // rendered or on its way.
    let last_event_id = state.store.last_round_id(team.id, name).await?;
    let summary = state.store.team_loops(team.id).await?.into_iter().find(|l| l.name == name);
    let (pending_stop, pending_steer) =
        summary.map(|summary| (summary.pending.stop, summary.pending.steer)).unwrap_or((false, None));
    {
        let membership = team;
        // A page of the run's latest rounds (or those before `before`):
        // the page stays the same size however long the run.
        let window = before.map_or(RoundWindow::Latest, RoundWindow::Before);
        let history =
            match state.store.loop_history_window(membership.id, name, run, window, PAGE_ROUNDS).await {
                Ok(history) => history,
                // An unknown run id shows the current run.
                Err(_) if run.is_some() => {
                    state.store.loop_history_window(membership.id, name, None, window, PAGE_ROUNDS).await?
                }
                Err(error) => return Err(error.into()),
            };
        let chart = match history.run.as_ref() {
            Some(run) => state
                .store
                .run_chart(membership.id, name, &run.id)
                .await?
                .into_iter()
                .map(|point| ChartBar {
                    first_round: point.first_round,
                    last_round: point.last_round,
                    blocking: point.blocking,
                    other: point.other,
                    class: point.class.as_str().to_string(),
                    repeats: point.repeats,
                    period: point.period,
                    ratchet: point.ratchet,
                    near: point.near,
                })
                .collect(),
            None => Vec::new(),
        };
        let page = history.page.unwrap_or(RoundsPage {
            total: 0,
            first: None,
            last: None,
            has_older: false,
            has_newer: false,
        });
        let rounds = history
            .rounds
            .iter()
            .map(|round| {
                let count = |severity: crate::convergence::Severity| {
                    round.findings.iter().filter(|f| f.key.severity == severity).count() as u32
                };
                RoundRow {
                    round: round.round,
                    state: round.state.clone(),
                    class: round.class.as_str().to_string(),
                    advice: round.advice.as_str().to_string(),
                    reason: round.reason.clone(),
                    blocking: count(crate::convergence::Severity::Blocking),
                    warnings: count(crate::convergence::Severity::Warning),
                    infos: count(crate::convergence::Severity::Info),
                    usd: round.spent.usd,
                    tokens: round.spent.tokens,
                    exit: round.exit.clone(),
                    error: round.error.as_ref().and_then(|error| serde_json::to_string_pretty(error).ok()),
                    tool_calls: round
                        .tool_calls
                        .iter()
                        .map(|call| app::pages::loops::ToolCallRow {
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                            failed: call.failed,
                        })
                        .collect(),
                    ratchet: round.ratchet.map(ratchet_view),
                    near_seen_at: round.near_seen_at.clone().unwrap_or_default(),
                }
            })
            .collect();
        let diff = round_diff(&history.rounds, pick);
        // A round opened by its link: from this page, or read on its own.
        let opened = match (picks.round, history.run.as_ref()) {
            (Some(number), Some(run)) => match history.rounds.iter().find(|round| round.round == number) {
                Some(round) => Some(round_detail(round)),
                None => state
                    .store
                    .loop_history(membership.id, name, Some(&run.id), number.saturating_sub(1), 1)
                    .await?
                    .rounds
                    .iter()
                    .find(|round| round.round == number)
                    .map(round_detail),
            },
            _ => None,
        };
        let runs = state
            .store
            .loop_runs(membership.id, name, 50)
            .await?
            .into_iter()
            .map(|run| RunRow {
                ended_by: run.exit.as_deref().and_then(exit_kind).map(str::to_string),
                id: run.id,
                state: run.state,
                exit: run.exit,
                rounds: run.last_round,
                started_at: run.started_at,
            })
            .collect();
        let glance = match history.run.as_ref() {
            Some(run) => glance_of(state.store.run_glance(membership.id, name, &run.id, PAGE_ROUNDS).await)?,
            None => RunGlance::default(),
        };
        Ok(LoopView {
            opened,
            glance,
            last_event_id: Some(last_event_id),
            team: membership.slug.clone(),
            name: name.to_string(),
            run: history.run.as_ref().map(|run| run.id.clone()),
            state: history.run.as_ref().map(|run| run.state.clone()),
            exit: history.run.as_ref().and_then(|run| run.exit.clone()),
            rounds,
            chart,
            total_rounds: page.total,
            older_before: page.first.filter(|_| page.has_older),
            newer: page.has_newer,
            pending_stop,
            pending_steer,
            notice,
            diff,
            runs,
            sources: state
                .store
                .loop_sources(membership.id, name)
                .await?
                .into_iter()
                .map(|source| match source {
                    crate::loops::RoundSource::Api => "API".to_string(),
                    crate::loops::RoundSource::Connector => "connector".to_string(),
                    crate::loops::RoundSource::Traces => "traces".to_string(),
                })
                .collect(),
        })
    }
}

/// A round as its own section of the loop page: every finding with its
/// message, what it spent, its raw error, the operator's note it carried.
fn round_detail(round: &crate::loops::HistoryRound) -> RoundDetail {
    RoundDetail {
        round: round.round,
        state: round.state.clone(),
        class: round.class.as_str().to_string(),
        advice: round.advice.as_str().to_string(),
        reason: round.reason.clone(),
        findings: round
            .findings
            .iter()
            .map(|finding| FindingRow {
                key: describe_key(&finding.key),
                severity: severity_word(finding.key.severity).to_string(),
                message: finding.message.clone(),
            })
            .collect(),
        usd: round.spent.usd,
        tokens: round.spent.tokens,
        seconds: round.spent.seconds,
        exit: round.exit.clone(),
        error: round.error.as_ref().and_then(|error| serde_json::to_string_pretty(error).ok()),
        stop: round.operator.stop,
        steer: round.operator.steer.clone(),
        ratchet: round.ratchet.map(ratchet_view),
        near_seen_at: round.near_seen_at.clone().unwrap_or_default(),
        fingerprint: round.fingerprint.clone(),
    }
}

fn ratchet_view(ratchet: crate::convergence::Ratchet) -> RatchetView {
    RatchetView { value: ratchet.value, best: ratchet.best, stall_count: ratchet.stall_count }
}

fn severity_word(severity: crate::convergence::Severity) -> &'static str {
    match severity {
        crate::convergence::Severity::Blocking => "blocking",
        crate::convergence::Severity::Warning => "warning",
        crate::convergence::Severity::Info => "info",
    }
}

/// Whether an exit id ends a run as a bound or a detection (PRODUCT.md's
/// taxonomy), in the words the page uses.
fn exit_kind(exit: &str) -> Option<&'static str> {
    let id = auditor::ExitId::ALL.into_iter().find(|id| id.as_str() == exit)?;
    Some(match id.kind() {
        auditor::ExitKind::Detect => "detection",
        auditor::ExitKind::Bound => "bound",
        auditor::ExitKind::External => "external",
    })
}

/// Rounds `a` and `b` compared by finding key; by default the last two.
fn round_diff(rounds: &[crate::loops::HistoryRound], pick: (Option<u32>, Option<u32>)) -> Option<DiffView> {
    let find = |n: u32| rounds.iter().find(|round| round.round == n);
    let (a, b) = match pick {
        (Some(a), Some(b)) => (find(a)?, find(b)?),
        _ if rounds.len() >= 2 => (&rounds[rounds.len() - 2], &rounds[rounds.len() - 1]),
        _ => return None,
    };
    let keys = |round: &crate::loops::HistoryRound| -> Vec<crate::convergence::FindingKey> {
        round.findings.iter().map(|finding| finding.key.clone()).collect()
    };
    let diff = crate::convergence::diff_rounds(&keys(a), &keys(b));
    let spell = |keys: Vec<crate::convergence::FindingKey>| keys.iter().map(describe_key).collect();
    // Each key's message: the later round's, or the earlier one's for a
    // finding it resolved.
    let mut messages = std::collections::BTreeMap::new();
    for finding in b.findings.iter().chain(&a.findings) {
        messages.entry(describe_key(&finding.key)).or_insert_with(|| finding.message.clone());
    }
    Some(DiffView {
        a: a.round,
        b: b.round,
        new: spell(diff.new),
        resolved: spell(diff.resolved),
        persisting: spell(diff.persisting),
        messages,
    })
}

/// `draft.md:4-9 blocking word-floor`, or `budget:tokens warning spend`.
fn describe_key(key: &crate::convergence::FindingKey) -> String {
    let target = match &key.target {
        crate::convergence::Target::Code { path, start_line, end_line } => match end_line {
            Some(end) if end != start_line => format!("{path}:{start_line}-{end}"),
            _ => format!("{path}:{start_line}"),
        },
        crate::convergence::Target::Other { id } => id.clone(),
    };
    format!("{target} {} {}", severity_word(key.severity), key.criterion)
}
