//! The data behind the account pages, loaded before the page renders (the
//! viewer middleware puts it in the request's extensions), and the team
//! page's forms. Every handler checks who is asking: non-members of a team
//! get 404 (a team's existence is not for outsiders), members who are not
//! admins get 403, signed-out visitors 401.

use app::pages::admin::{AdminAccount, AdminMail, AdminView};
use app::pages::diagnosis::{GlanceRound, RunGlance};
use app::pages::loops::{
    ChartBar, DiffView, FindingRow, LoopRow, LoopView, LoopsView, RatchetView, RoundDetail, RoundRow, RunRow,
    TeamLoops,
};
use app::pages::team::{DeliveryView, TeamMemberView, TeamView, TokenView, WebhookView};
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::Router;
use leptos::prelude::provide_context;
use serde::Deserialize;

use super::{Account, AccountsError, Team, TeamRole};
use crate::loops::{RoundWindow, RoundsPage};
use crate::web::{render_page, AppState};

/// How many rounds the loop page shows at once (its table; the chart
/// summarises the whole run).
const PAGE_ROUNDS: u32 = 100;

/// The team page's forms all post to the page's own address, so the answer
/// (a notice, a token shown once) is the page at the address the browser
/// shows; `action` says which form it was.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/teams/{slug}", post(team_action))
        .route("/loops/{loop}", post(loop_control))
        .route("/loops/{loop}/events", axum::routing::get(super::stream::loop_events))
        .route("/loops/{loop}/view.json", axum::routing::get(super::stream::loop_view_json))
        .route("/loops.json", axum::routing::get(super::stream::list_view_json))
        .route("/loops.stream", axum::routing::get(super::stream::list_events))
}

#[derive(Debug, Deserialize)]
struct ActionForm {
    action: Option<String>,
    email: Option<String>,
    name: Option<String>,
    token_id: Option<String>,
    url: Option<String>,
}

async fn team_action(State(state): State<AppState>, Path(slug): Path<String>, request: Request) -> Response {
    let (account, team) = match team_admin(&state, request.extensions(), &slug).await {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    let (parts, body) = request.into_parts();
    let form = match read::<ActionForm>(body).await {
        Ok(form) => form,
        Err((status, notice)) => {
            let request = Request::from_parts(parts, Body::empty());
            return answer(&state, request, &team, status, notice, None).await;
        }
    };
    let request = Request::from_parts(parts, Body::empty());
    match form.action.as_deref() {
        Some("invite") => {
            invite_member(&state, request, &account, &team, form.email.unwrap_or_default()).await
        }
        Some("remove") => remove_member(&state, request, &team, form.email.unwrap_or_default()).await,
        Some("create_token") => create_token(&state, request, &team, form.name.unwrap_or_default()).await,
        Some("set_webhook") => set_webhook(&state, request, &team, form.url.unwrap_or_default()).await,
        Some("remove_webhook") => match state.store.remove_team_webhook(team.id).await {
            Ok(removed) => {
                let notice = if removed {
                    "Alerts are off: the webhook was removed."
                } else {
                    "There was no webhook."
                };
                answer(&state, request, &team, StatusCode::OK, notice.into(), None).await
            }
            Err(error) => internal(AccountsError::from(error)),
        },
        Some("revoke") => match form.token_id.as_deref().map(str::parse::<i64>) {
            Some(Ok(id)) => revoke_token(&state, request, &team, id).await,
            _ => {
                answer(
                    &state,
                    request,
                    &team,
                    StatusCode::BAD_REQUEST,
                    "token_id: not a token of this team".into(),
                    None,
                )
                .await
            }
        },
        _ => answer(&state, request, &team, StatusCode::BAD_REQUEST, "action: unknown".into(), None).await,
    }
}

/// Loads what the page at `path` (with `query`) shows to `account`, into
/// `extensions`.
pub async fn load(
    state: &AppState,
    path: &str,
    query: Option<&str>,
    account: &Account,
    extensions: &mut axum::http::Extensions,
) -> Result<(), AccountsError> {
    if path == "/loops" {
        extensions.insert(loops_view(state, account).await?);
    } else if let Some(name) = path.strip_prefix("/loops/").filter(|name| !name.contains('/')) {
        // Loop names may hold any printable character but `/`: the page's
        // links percent-encode them.
        let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
        let name = name.as_ref();
        let pairs = query
            .and_then(|query| serde_urlencoded::from_str::<Vec<(String, String)>>(query).ok())
            .unwrap_or_default();
        let param = |name: &str| pairs.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
        let team = param("team");
        let number = |name: &str| param(name).and_then(|value| value.parse().ok());
        let picks = LoopPicks {
            run: param("run"),
            diff: (number("a"), number("b")),
            before: number("before"),
            round: number("round"),
        };
        if let Some(view) = loop_view(state, account, team.as_deref(), name, &picks).await? {
            extensions.insert(view);
        }
    } else if (path == "/admin" || path == "/admin/outbox") && account.is_operator {
        extensions.insert(admin_view(state).await?);
    } else if let Some(slug) = path.strip_prefix("/teams/").filter(|slug| !slug.contains('/')) {
        if let Some((team, role)) = member_team(state, slug, account).await? {
            extensions.insert(team_view(state, &team, role, None, None).await?);
        }
    }
    Ok(())
}

pub(super) fn loops_error(error: crate::loops::LoopsError) -> AccountsError {
    AccountsError::Dashboard(error.to_string())
}

pub(super) async fn loops_view(state: &AppState, account: &Account) -> Result<LoopsView, AccountsError> {
    let mut teams = Vec::new();
    for membership in state.store.memberships(account.id).await? {
        let mut loops = Vec::new();
        for summary in state.store.team_loops(membership.team.id).await.map_err(loops_error)? {
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
) -> Result<RunGlance, AccountsError> {
    let glance = glance.map_err(loops_error)?;
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
pub(super) async fn loop_team(
    state: &AppState,
    account: &Account,
    team: Option<&str>,
    name: &str,
) -> Result<Option<Team>, AccountsError> {
    for membership in state.store.memberships(account.id).await? {
        if team.is_some_and(|team| team != membership.team.slug) {
            continue;
        }
        if state.store.loop_id(membership.team.id, name).await.map_err(loops_error)?.is_some() {
            return Ok(Some(membership.team));
        }
    }
    Ok(None)
}

/// What a loop page's address picks: a run other than the current one, two
/// rounds to compare, the page of rounds before a round, a round opened.
#[derive(Debug, Clone, Default)]
pub(super) struct LoopPicks {
    pub run: Option<String>,
    pub diff: (Option<u32>, Option<u32>),
    pub before: Option<u32>,
    pub round: Option<u32>,
}

/// The loop `name` of one of the account's teams; `None` when it is not
/// theirs.
pub(super) async fn loop_view(
    state: &AppState,
    account: &Account,
    team: Option<&str>,
    name: &str,
    picks: &LoopPicks,
) -> Result<Option<LoopView>, AccountsError> {
    match loop_team(state, account, team, name).await? {
        Some(team) => loop_view_of(state, &team, name, None, picks).await.map(Some),
        None => Ok(None),
    }
}

async fn loop_view_of(
    state: &AppState,
    team: &Team,
    name: &str,
    notice: Option<String>,
    picks: &LoopPicks,
) -> Result<LoopView, AccountsError> {
    let (run, pick, before) = (picks.run.as_deref(), picks.diff, picks.before);
    // Read before anything else the page shows: every round stored after
    // this id reaches the page's stream, even one stored while the page is
    // rendered or on its way.
    let last_event_id = state.store.last_round_id(team.id, name).await.map_err(loops_error)?;
    let summary =
        state.store.team_loops(team.id).await.map_err(loops_error)?.into_iter().find(|l| l.name == name);
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
                Err(_) if run.is_some() => state
                    .store
                    .loop_history_window(membership.id, name, None, window, PAGE_ROUNDS)
                    .await
                    .map_err(loops_error)?,
                Err(error) => return Err(loops_error(error)),
            };
        let chart = match history.run.as_ref() {
            Some(run) => state
                .store
                .run_chart(membership.id, name, &run.id)
                .await
                .map_err(loops_error)?
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
                    .await
                    .map_err(loops_error)?
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
            .await
            .map_err(loops_error)?
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
                .await
                .map_err(loops_error)?
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

#[derive(Debug, Deserialize)]
struct ControlForm {
    action: Option<String>,
    note: Option<String>,
}

/// STOP and STEER from the loop page, for any member of the loop's team.
async fn loop_control(
    State(state): State<AppState>,
    Path(name): Path<String>,
    axum::extract::Query(query): axum::extract::Query<Vec<(String, String)>>,
    request: Request,
) -> Response {
    let Some(account) = super::web::signed_in(request.extensions()) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let team_param = query.into_iter().find(|(key, _)| key == "team").map(|(_, value)| value);
    let team = match loop_team(&state, &account, team_param.as_deref(), &name).await {
        Ok(Some(team)) => team,
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(error) => return internal(error),
    };
    let (parts, body) = request.into_parts();
    let form = match read::<ControlForm>(body).await {
        Ok(form) => Some(form),
        Err((status, notice)) => {
            return match loop_view_of(&state, &team, &name, Some(notice), &LoopPicks::default()).await {
                Ok(view) => render_page(&state, parts, status, move || provide_context(view.clone())).await,
                Err(error) => internal(error),
            };
        }
    };
    let outcome = match form.as_ref().and_then(|form| form.action.as_deref()) {
        Some("stop") => state
            .store
            .request_loop_stop(team.id, &name)
            .await
            .map(|()| "STOP is pending: the loop gets it with the answer to its next round.".to_string()),
        Some("steer") => {
            let note = form.as_ref().and_then(|form| form.note.clone()).unwrap_or_default();
            state.store.set_loop_steer(team.id, &name, Some(note.trim())).await.map(|()| {
                "The note is pending: the loop gets it with the answer to its next round.".to_string()
            })
        }
        _ => Err(crate::loops::LoopsError::invalid(Some("action"), "action must be stop or steer")),
    };
    let (status, notice) = match outcome {
        Ok(notice) => (StatusCode::OK, notice),
        Err(error) if error.status() == StatusCode::BAD_REQUEST => {
            (StatusCode::BAD_REQUEST, error.to_string())
        }
        Err(error) => return internal(loops_error(error)),
    };
    match loop_view_of(&state, &team, &name, Some(notice), &LoopPicks::default()).await {
        Ok(view) => render_page(&state, parts, status, move || provide_context(view.clone())).await,
        Err(error) => internal(error),
    }
}

pub(crate) async fn admin_view(state: &AppState) -> Result<AdminView, AccountsError> {
    let mut accounts = Vec::new();
    for summary in state.store.account_summaries(500).await? {
        let access = state
            .store
            .reader_access(summary.account.id)
            .await
            .map_err(|error| AccountsError::Dashboard(error.to_string()))?;
        accounts.push(AdminAccount {
            email: summary.account.email,
            is_operator: summary.account.is_operator,
            teams: summary.teams,
            created_at: summary.account.created_at,
            tier: access.tier.as_str().to_string(),
            tier_source: access.source,
        });
    }
    let outbox = state
        .store
        .outbox(100)
        .await?
        .into_iter()
        .map(|mail| AdminMail {
            recipient: mail.recipient,
            subject: mail.subject,
            body: mail.body,
            created_at: mail.created_at,
            sent_at: mail.sent_at,
            error: mail.error,
        })
        .collect();
    let billing = |error: crate::billing::BillingError| AccountsError::Dashboard(error.to_string());
    let seats = state.store.founder_count(state.config.founder_seats).await.map_err(billing)?;
    Ok(AdminView {
        accounts,
        outbox,
        founder_seats_total: state.config.founder_seats,
        founder_seats_taken: seats.taken,
        founder_seats_held: seats.held,
        waitlist: state.store.waitlist_count().await.map_err(billing)?,
        payments_configured: state.config.stripe.is_some(),
        sends: crate::newsletter::send_web::admin_sends(state)
            .await
            .map_err(|error| AccountsError::Dashboard(error.to_string()))?,
        issues: state
            .store
            .archive()
            .await
            .map_err(|error| AccountsError::Dashboard(error.to_string()))?
            .into_iter()
            .map(|entry| (entry.slug, entry.title))
            .collect(),
        mail_configured: state.config.smtp_url.is_some(),
        send_notice: None,
    })
}

/// The team `slug` and the account's role in it, if they are a member.
async fn member_team(
    state: &AppState,
    slug: &str,
    account: &Account,
) -> Result<Option<(Team, TeamRole)>, AccountsError> {
    let Some(team) = state.store.team_by_slug(slug).await? else {
        return Ok(None);
    };
    Ok(state.store.team_role(team.id, account.id).await?.map(|role| (team, role)))
}

async fn team_view(
    state: &AppState,
    team: &Team,
    role: TeamRole,
    new_token: Option<String>,
    notice: Option<String>,
) -> Result<TeamView, AccountsError> {
    let members = state
        .store
        .team_members(team.id)
        .await?
        .into_iter()
        .map(|member| TeamMemberView {
            email: member.email,
            role: match member.role {
                TeamRole::Admin => "admin".into(),
                TeamRole::Member => "member".into(),
            },
        })
        .collect();
    let tokens = state
        .store
        .loop_tokens(team.id)
        .await?
        .into_iter()
        .map(|token| TokenView {
            id: token.id,
            name: token.name,
            created_at: token.created_at,
            last_used_at: token.last_used_at,
            revoked_at: token.revoked_at,
        })
        .collect();
    let webhook = state.store.team_webhook(team.id).await?.map(|hook| WebhookView {
        // Some services put a secret in the URL: members see its host.
        url: if role == TeamRole::Admin {
            hook.url
        } else {
            reqwest::Url::parse(&hook.url)
                .ok()
                .and_then(|url| url.host_str().map(|host| format!("{}://{host}/…", url.scheme())))
                .unwrap_or_else(|| "(hidden)".to_string())
        },
        created_at: hook.created_at,
    });
    let deliveries = state
        .store
        .alert_deliveries(team.id, 20)
        .await?
        .into_iter()
        .map(|delivery| DeliveryView {
            loop_name: delivery.loop_name,
            kind: delivery.kind,
            status: delivery.status,
            attempts: delivery.attempts,
            last_status: delivery.last_status,
            last_error: delivery.last_error,
            created_at: delivery.created_at,
            delivered_at: delivery.delivered_at,
        })
        .collect();
    let loops = state.store.team_loop_count(team.id).await.map_err(loops_error)?;
    Ok(TeamView {
        site: state.config.public_url.trim_end_matches('/').to_string(),
        loops,
        slug: team.slug.clone(),
        is_admin: role == TeamRole::Admin,
        members,
        tokens,
        new_token,
        notice,
        webhook,
        new_webhook_secret: None,
        deliveries,
    })
}

/// Who is asking, and may they act on the team? The refusal is the
/// response to give.
async fn team_admin(
    state: &AppState,
    extensions: &axum::http::Extensions,
    slug: &str,
) -> Result<(Account, Team), Response> {
    let account =
        super::web::signed_in(extensions).ok_or_else(|| StatusCode::UNAUTHORIZED.into_response())?;
    match member_team(state, slug, &account).await {
        Ok(Some((team, TeamRole::Admin))) => Ok((account, team)),
        Ok(Some((_, TeamRole::Member))) => {
            Err((StatusCode::FORBIDDEN, "only the team's admins may do this").into_response())
        }
        Ok(None) => Err(StatusCode::NOT_FOUND.into_response()),
        Err(error) => Err(internal(error)),
    }
}

fn internal(error: AccountsError) -> Response {
    tracing::error!(%error, "team page");
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}

/// Reads a team or loop page's form, or says why it cannot: too large
/// (413), not UTF-8 once decoded (form decoding would turn the bytes into
/// U+FFFD silently), or not a form at all.
async fn read<T: serde::de::DeserializeOwned>(body: Body) -> Result<T, (StatusCode, String)> {
    const LIMIT: usize = 4 * 1024;
    let bytes = axum::body::to_bytes(body, LIMIT).await.map_err(|_| {
        (StatusCode::PAYLOAD_TOO_LARGE, format!("The form is larger than {} KiB.", LIMIT / 1024))
    })?;
    let utf8 = bytes.split(|byte| *byte == b'&').all(|pair| {
        let spaced: Vec<u8> = pair.iter().map(|byte| if *byte == b'+' { b' ' } else { *byte }).collect();
        percent_encoding::percent_decode(&spaced).decode_utf8().is_ok()
    });
    if !utf8 {
        return Err((StatusCode::BAD_REQUEST, "The form is not UTF-8 text.".to_string()));
    }
    serde_urlencoded::from_bytes(&bytes)
        .map_err(|error| (StatusCode::BAD_REQUEST, format!("The form could not be read: {error}.")))
}

/// Renders the team page with a notice (and a new token), after an action.
async fn answer(
    state: &AppState,
    request: Request,
    team: &Team,
    status: StatusCode,
    notice: String,
    new_token: Option<String>,
) -> Response {
    answer_with(state, request, team, status, notice, new_token, None).await
}

async fn answer_with(
    state: &AppState,
    request: Request,
    team: &Team,
    status: StatusCode,
    notice: String,
    new_token: Option<String>,
    new_webhook_secret: Option<String>,
) -> Response {
    let (mut parts, _) = request.into_parts();
    parts.uri = format!("/teams/{}", team.slug).parse().unwrap_or(parts.uri);
    match team_view(state, team, TeamRole::Admin, new_token, Some(notice)).await {
        Ok(mut view) => {
            view.new_webhook_secret = new_webhook_secret;
            render_page(state, parts, status, move || provide_context(view.clone())).await
        }
        Err(error) => internal(error),
    }
}

/// `action=set_webhook`: the team's alert webhook, with a new signing
/// secret shown once.
async fn set_webhook(state: &AppState, request: Request, team: &Team, url: String) -> Response {
    if let Err(problem) = crate::alerts::check_url(&url, state.config.allow_private_webhooks) {
        return answer(state, request, team, StatusCode::BAD_REQUEST, problem.to_string(), None).await;
    }
    match state.store.set_team_webhook(team.id, &url).await {
        Ok(secret) => {
            let notice = "Alerts go to this webhook now; its signing secret is shown below once.".to_string();
            answer_with(state, request, team, StatusCode::OK, notice, None, Some(secret)).await
        }
        Err(error) => internal(AccountsError::from(error)),
    }
}

async fn invite_member(
    state: &AppState,
    request: Request,
    account: &Account,
    team: &Team,
    email: String,
) -> Response {
    match state.store.add_team_member(&team.slug, &email, TeamRole::Member).await {
        Ok(added) => {
            let email = super::normalize_email(&email).unwrap_or(email);
            if !added {
                let notice = format!("{email} is already a member.");
                return answer(state, request, team, StatusCode::OK, notice, None).await;
            }
            let body = format!(
                "{} added you to the team {} on Fixed Point.\n\nSign in with this address to see its loops:\n{}/signin\n",
                account.email, team.slug, state.config.public_url
            );
            let subject = "You were added to a team on Fixed Point";
            if let Err(error) = state.mailer.send(&state.store, &email, subject, &body).await {
                tracing::error!(%error, "could not queue an invitation");
            }
            let notice = format!("Added {email}; they were sent a note.");
            answer(state, request, team, StatusCode::OK, notice, None).await
        }
        Err(AccountsError::BadEmail { .. }) => {
            let notice = "email: enter an address such as ada@example.com".to_string();
            answer(state, request, team, StatusCode::BAD_REQUEST, notice, None).await
        }
        Err(error) => internal(error),
    }
}

async fn remove_member(state: &AppState, request: Request, team: &Team, email: String) -> Response {
    match state.store.remove_team_member(team.id, &email).await {
        Ok(true) => Redirect::to(&format!("/teams/{}", team.slug)).into_response(),
        Ok(false) => {
            let notice = format!("email: {email} is not a member.");
            answer(state, request, team, StatusCode::NOT_FOUND, notice, None).await
        }
        Err(AccountsError::LastAdmin) => {
            answer(state, request, team, StatusCode::CONFLICT, AccountsError::LastAdmin.to_string(), None)
                .await
        }
        Err(AccountsError::BadEmail { .. }) => {
            answer(state, request, team, StatusCode::BAD_REQUEST, "email: not a valid address".into(), None)
                .await
        }
        Err(error) => internal(error),
    }
}

async fn create_token(state: &AppState, request: Request, team: &Team, name: String) -> Response {
    let state = state.clone();
    match state.store.create_loop_token(&team.slug, name.trim()).await {
        Ok(created) => {
            let notice = format!("Created the token {:?}.", created.token.name);
            answer(&state, request, team, StatusCode::OK, notice, Some(created.secret)).await
        }
        Err(error @ AccountsError::BadTokenName { .. }) => {
            answer(&state, request, team, StatusCode::BAD_REQUEST, format!("name: {error}"), None).await
        }
        Err(error) => internal(error),
    }
}

async fn revoke_token(state: &AppState, request: Request, team: &Team, id: i64) -> Response {
    match state.store.revoke_loop_token(team.id, id).await {
        Ok(true) => Redirect::to(&format!("/teams/{}", team.slug)).into_response(),
        // Another team's token id, or one already revoked: nothing here.
        Ok(false) => {
            answer(
                state,
                request,
                team,
                StatusCode::NOT_FOUND,
                "token_id: no live token of this team has it".into(),
                None,
            )
            .await
        }
        Err(error) => internal(error),
    }
}
