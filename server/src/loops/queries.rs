//! Reading loops, runs and rounds back, heartbeats, and the operator's and
//! the team's controls over a loop.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::ingest::{severity_from_column, target_from_columns, OperatorNote};
use super::run_state::{self, BLOCKED, RUNNING};
use super::wire::{Blocked, Heartbeat, RoundError, RoundSource, Spent, ToolCall};
use super::LoopsError;
use crate::convergence::{Advice, Class, FindingKey, Fingerprint, Outcome, Ratchet};
use crate::store::{now_millis, Store};

/// The most rounds one history request returns: a long run is read a page
/// at a time (`after` for the next, `before` for the previous).
pub const MAX_HISTORY_ROUNDS: u32 = 500;

/// Which rounds of a run a history page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundWindow {
    /// The first `limit` rounds numbered above this one (0: from the start).
    After(u32),
    /// The last `limit` rounds numbered below this one.
    Before(u32),
    /// The run's last `limit` rounds.
    Latest,
}

/// Where a page of rounds sits in its run, for the links to its neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundsPage {
    /// The rounds the run holds in all.
    pub total: u32,
    /// The first and last round of this page (absent when it is empty).
    pub first: Option<u32>,
    pub last: Option<u32>,
    /// Whether rounds come before `first` and after `last`.
    pub has_older: bool,
    pub has_newer: bool,
}

/// One point of a run's chart: a round, or a bucket of rounds in a long run
/// (every round up to [`CHART_POINTS`], then buckets that keep each one's
/// worst class, its most findings and whether a state repeated in it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChartPoint {
    pub first_round: u32,
    pub last_round: u32,
    pub blocking: u32,
    pub other: u32,
    pub class: Class,
    /// Rounds of the point that were a fixed point or a cycle.
    pub repeats: u32,
    /// A cycle's period (the first round's, in a bucket).
    #[serde(default)]
    pub period: Option<u32>,
    /// The loop's ratchet after the point's last round, if it sent one.
    #[serde(default)]
    pub ratchet: Option<f64>,
    /// Whether a round of the point was a near repeat (its fingerprint
    /// within a few bits of an earlier round's).
    #[serde(default)]
    pub near: bool,
}

/// How many points a run's chart has at most.
pub const CHART_POINTS: usize = 120;

/// Why a run is blocked, as stored.
pub type BlockedState = Blocked;

/// A run as shown in a history or a loop list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: String,
    pub state: String,
    pub exit: Option<String>,
    pub blocked: Option<BlockedState>,
    pub last_round: u32,
    pub started_at: i64,
    pub last_seen_at: i64,
    pub ended_at: Option<i64>,
}

/// A finding as stored: its key's parts and its message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryFinding {
    #[serde(flatten)]
    pub key: FindingKey,
    pub message: String,
}

/// A stored round with its answer and findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRound {
    pub round: u32,
    pub state: String,
    pub class: Class,
    pub outcome: Outcome,
    pub advice: Advice,
    pub reason: String,
    pub seen_at: Vec<u32>,
    pub period: Option<u32>,
    pub consecutive: u32,
    pub bounded_by: Option<u32>,
    pub blocking: u32,
    pub spent: Spent,
    pub exit: Option<String>,
    pub error: Option<RoundError>,
    pub operator: OperatorNote,
    pub findings: Vec<HistoryFinding>,
    pub created_at: i64,
    /// Where the round came from: `api`, `connector` or `traces`.
    #[serde(default)]
    pub source: RoundSource,
    /// The tool calls of a round from traces, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The loop's ratchet after the round, as it sent it.
    #[serde(default)]
    pub ratchet: Option<Ratchet>,
    /// The round's fingerprint (16 hex digits), if it had one.
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// For a round with a fingerprint: the earlier rounds near it.
    #[serde(default)]
    pub near_seen_at: Option<Vec<u32>>,
}

/// `GET .../rounds`: one run of a loop and a page of its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopHistory {
    #[serde(rename = "loop")]
    pub loop_name: String,
    pub run: Option<RunSummary>,
    pub rounds: Vec<HistoryRound>,
    /// Where the page sits in the run (absent when the loop has no run).
    pub page: Option<RoundsPage>,
}

/// One round that judged a given state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateSighting {
    pub run: String,
    pub round: u32,
    pub class: Class,
    pub outcome: Outcome,
    pub blocking: u32,
    pub findings: u32,
    pub created_at: i64,
}

/// A run's latest rounds and its spend ([`Store::run_glance`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunGlance {
    pub recent: Vec<GlanceRow>,
    pub more_before: bool,
    pub usd: Option<f64>,
    pub tokens: Option<i64>,
}

/// One round of a [`RunGlance`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlanceRow {
    pub round: u32,
    pub state: String,
    pub class: String,
    pub advice: String,
    pub reason: String,
    pub period: Option<u32>,
    pub blocking: u32,
    pub error: Option<String>,
    /// The ratchet's value after the round, if the loop sent one.
    pub ratchet: Option<f64>,
}

/// A loop in its team's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopSummary {
    pub name: String,
    pub settings: LoopSettings,
    pub current_run: Option<RunSummary>,
    pub last_class: Option<Class>,
    pub pending: OperatorNote,
    pub created_at: i64,
}

/// What a team configures per loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopSettings {
    /// Rounds in a row without progress before `stalled`/`thrashing` stop.
    pub stall_threshold: u32,
    /// The hard ceiling on a run's rounds, if any.
    pub max_rounds: Option<u32>,
    /// How long a run may say nothing before it is `lost`.
    pub heartbeat_window_ms: i64,
}

type RunColumns =
    (String, String, Option<String>, Option<String>, Option<String>, i64, i64, i64, Option<i64>);

const RUN_COLUMNS: &str =
    "run_key, state, exit, blocked_reason, blocked_subject, last_round, started_at, last_seen_at, ended_at";

fn run_summary(
    (id, state, exit, reason, subject, last_round, started_at, last_seen_at, ended_at): RunColumns,
) -> RunSummary {
    let blocked = match (reason, subject) {
        (Some(reason), Some(subject)) => Some(Blocked { reason, subject }),
        _ => None,
    };
    RunSummary {
        id,
        state,
        exit,
        blocked,
        last_round: to_u32(last_round),
        started_at,
        last_seen_at,
        ended_at,
    }
}

fn to_u32(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

fn unreadable(what: &str) -> LoopsError {
    LoopsError::Store(crate::store::StoreError::Database(sqlx::Error::Protocol(format!(
        "a stored round has an unreadable {what}"
    ))))
}

impl Store {
    /// The id of the loop `name` in team `team_id`, if it exists there.
    pub async fn loop_id(&self, team_id: i64, name: &str) -> Result<Option<i64>, LoopsError> {
        Ok(sqlx::query_scalar("SELECT id FROM loops WHERE team_id = $1 AND name = $2")
            .bind(team_id)
            .bind(name)
            .fetch_optional(self.pool())
            .await?)
    }

    /// The id of the newest stored round of a loop (0 when it has none): a
    /// page rendered from what was stored up to this id resumes its live
    /// stream after it, so a round stored meanwhile is still delivered.
    pub async fn last_round_id(&self, team_id: i64, name: &str) -> Result<i64, LoopsError> {
        let newest: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(r.id) FROM rounds r JOIN loops l ON l.id = r.loop_id WHERE l.team_id = $1 AND l.name = $2",
        )
        .bind(team_id)
        .bind(name)
        .fetch_one(self.pool())
        .await?;
        Ok(newest.unwrap_or(0))
    }

    async fn existing_loop(&self, team_id: i64, name: &str) -> Result<i64, LoopsError> {
        self.loop_id(team_id, name).await?.ok_or_else(|| LoopsError::NoSuchLoop(name.to_string()))
    }

    /// Rounds of one run of a loop: the run `run` or, by default, the
    /// loop's current run; only rounds numbered above `after`, at most
    /// `limit` of them, in round order.
    pub async fn loop_history(
        &self,
        team_id: i64,
        loop_name: &str,
        run: Option<&str>,
        after: u32,
        limit: u32,
    ) -> Result<LoopHistory, LoopsError> {
        self.loop_history_window(team_id, loop_name, run, RoundWindow::After(after), limit).await
    }

    /// A page of a run's rounds, chosen by `window`, at most
    /// [`MAX_HISTORY_ROUNDS`] of them, in round order.
    pub async fn loop_history_window(
        &self,
        team_id: i64,
        loop_name: &str,
        run: Option<&str>,
        window: RoundWindow,
        limit: u32,
    ) -> Result<LoopHistory, LoopsError> {
        let loop_id = self.existing_loop(team_id, loop_name).await?;
        let run_row: Option<(i64, RunColumns)> = match run {
            Some(key) => self.run_row("loop_id = $1 AND run_key = $2", loop_id, Some(key)).await?,
            None => {
                self.run_row("id = (SELECT current_run_id FROM loops WHERE id = $1)", loop_id, None).await?
            }
        };
        let Some((run_id, columns)) = run_row else {
            return match run {
                Some(key) => Err(LoopsError::NoSuchRun(key.to_string())),
                None => Ok(LoopHistory {
                    loop_name: loop_name.to_string(),
                    run: None,
                    rounds: Vec::new(),
                    page: None,
                }),
            };
        };
        let rounds = self.rounds_of_run(run_id, window, limit.clamp(1, MAX_HISTORY_ROUNDS)).await?;
        let page = self.rounds_page(run_id, &rounds).await?;
        Ok(LoopHistory {
            loop_name: loop_name.to_string(),
            run: Some(run_summary(columns)),
            rounds,
            page: Some(page),
        })
    }

    /// How many rounds the run holds and whether any lie around `rounds`.
    async fn rounds_page(&self, run_id: i64, rounds: &[HistoryRound]) -> Result<RoundsPage, LoopsError> {
        let (total, lowest, highest): (i64, Option<i64>, Option<i64>) =
            sqlx::query_as("SELECT COUNT(*), MIN(round), MAX(round) FROM rounds WHERE run_id = $1")
                .bind(run_id)
                .fetch_one(self.pool())
                .await?;
        let first = rounds.first().map(|round| round.round);
        let last = rounds.last().map(|round| round.round);
        Ok(RoundsPage {
            total: to_u32(total),
            first,
            last,
            has_older: first.zip(lowest).is_some_and(|(first, lowest)| i64::from(first) > lowest),
            has_newer: last.zip(highest).is_some_and(|(last, highest)| i64::from(last) < highest),
        })
    }

    /// The chart of a run: one point per round up to [`CHART_POINTS`], else
    /// buckets of consecutive rounds. Reads one small row per round.
    pub async fn run_chart(
        &self,
        team_id: i64,
        loop_name: &str,
        run: &str,
    ) -> Result<Vec<ChartPoint>, LoopsError> {
        let loop_id = self.existing_loop(team_id, loop_name).await?;
        #[allow(clippy::type_complexity)]
        let rows: Vec<(i64, String, i64, i64, Option<i64>, Option<f64>, i64)> = sqlx::query_as(
            "SELECT r.round, r.class, r.blocking_count, r.finding_count, r.period, r.ratchet_value, \
             CAST(CASE WHEN r.near_seen_at IS NULL OR r.near_seen_at = '[]' THEN 0 ELSE 1 END AS BIGINT) FROM rounds r \
             JOIN runs ON runs.id = r.run_id WHERE runs.loop_id = $1 AND runs.run_key = $2 ORDER BY r.round",
        )
        .bind(loop_id)
        .bind(run)
        .fetch_all(self.pool())
        .await?;
        let points: Vec<ChartPoint> = rows
            .into_iter()
            .filter_map(|(round, class, blocking, all, period, ratchet, near)| {
                let class: Class = class.parse().ok()?;
                Some(ChartPoint {
                    first_round: to_u32(round),
                    last_round: to_u32(round),
                    blocking: to_u32(blocking),
                    other: to_u32(all - blocking),
                    repeats: u32::from(matches!(class, Class::FixedPoint | Class::Cycle)),
                    class,
                    period: period.map(to_u32),
                    ratchet,
                    near: near != 0,
                })
            })
            .collect();
        Ok(bucket_chart(points, CHART_POINTS))
    }

    /// The latest `last` rounds of a run (oldest first) and what the whole
    /// run spent: what a diagnosis reads. Two queries, both by the run's
    /// index.
    pub async fn run_glance(
        &self,
        team_id: i64,
        loop_name: &str,
        run: &str,
        last: u32,
    ) -> Result<RunGlance, LoopsError> {
        let loop_id = self.existing_loop(team_id, loop_name).await?;
        let Some(run_id): Option<i64> =
            sqlx::query_scalar("SELECT id FROM runs WHERE loop_id = $1 AND run_key = $2")
                .bind(loop_id)
                .bind(run)
                .fetch_optional(self.pool())
                .await?
        else {
            return Ok(RunGlance::default());
        };
        #[allow(clippy::type_complexity)]
        let rows: Vec<(
            i64,
            String,
            String,
            String,
            String,
            Option<i64>,
            i64,
            Option<String>,
            Option<f64>,
        )> = sqlx::query_as(
            "SELECT round, state_digest, class, advice, reason, period, blocking_count, error_code, \
                 ratchet_value FROM rounds WHERE run_id = $1 ORDER BY round DESC LIMIT $2",
        )
        .bind(run_id)
        .bind(i64::from(last) + 1)
        .fetch_all(self.pool())
        .await?;
        // One more than asked for says whether older rounds exist.
        let more_before = rows.len() > last as usize;
        let mut recent: Vec<GlanceRow> = rows
            .into_iter()
            .take(last as usize)
            .map(|(round, state, class, advice, reason, period, blocking, error, ratchet)| GlanceRow {
                round: to_u32(round),
                state,
                class,
                advice,
                reason,
                period: period.map(to_u32),
                blocking: to_u32(blocking),
                error,
                ratchet,
            })
            .collect();
        recent.reverse();
        // PostgreSQL sums a BIGINT column as NUMERIC: cast it back.
        let (usd, tokens): (Option<f64>, Option<i64>) = sqlx::query_as(
            "SELECT SUM(spent_usd), CAST(SUM(spent_tokens) AS BIGINT) FROM rounds WHERE run_id = $1",
        )
        .bind(run_id)
        .fetch_one(self.pool())
        .await?;
        Ok(RunGlance { recent, more_before, usd, tokens })
    }

    async fn run_row(
        &self,
        condition: &str,
        loop_id: i64,
        key: Option<&str>,
    ) -> Result<Option<(i64, RunColumns)>, LoopsError> {
        let sql = format!("SELECT id, {RUN_COLUMNS} FROM runs WHERE {condition}");
        #[allow(clippy::type_complexity)]
        let row: Option<(
            i64,
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            i64,
            i64,
            i64,
            Option<i64>,
        )> = match key {
            Some(key) => sqlx::query_as(&sql).bind(loop_id).bind(key).fetch_optional(self.pool()).await?,
            None => sqlx::query_as(&sql).bind(loop_id).fetch_optional(self.pool()).await?,
        };
        Ok(row.map(
            |(id, key, state, exit, reason, subject, last_round, started_at, last_seen_at, ended_at)| {
                (id, (key, state, exit, reason, subject, last_round, started_at, last_seen_at, ended_at))
            },
        ))
    }

    async fn rounds_of_run(
        &self,
        run_id: i64,
        window: RoundWindow,
        limit: u32,
    ) -> Result<Vec<HistoryRound>, LoopsError> {
        // The page's range of round numbers first (by the run's index),
        // then its rows and findings by that range.
        let (low, high) = match window {
            RoundWindow::After(after) => (i64::from(after) + 1, i64::MAX),
            RoundWindow::Before(before) => (0, i64::from(before) - 1),
            RoundWindow::Latest => (0, i64::MAX),
        };
        let numbers: Vec<(i64,)> = match window {
            RoundWindow::After(_) => {
                sqlx::query_as(
                    "SELECT round FROM rounds WHERE run_id = $1 AND round >= $2 AND round <= $3 ORDER BY round LIMIT $4",
                )
                .bind(run_id)
                .bind(low)
                .bind(high)
                .bind(i64::from(limit))
                .fetch_all(self.pool())
                .await?
            }
            RoundWindow::Before(_) | RoundWindow::Latest => {
                sqlx::query_as(
                    "SELECT round FROM rounds WHERE run_id = $1 AND round >= $2 AND round <= $3 \
                     ORDER BY round DESC LIMIT $4",
                )
                .bind(run_id)
                .bind(low)
                .bind(high)
                .bind(i64::from(limit))
                .fetch_all(self.pool())
                .await?
            }
        };
        let (Some(from), Some(to)) = (numbers.iter().map(|n| n.0).min(), numbers.iter().map(|n| n.0).max())
        else {
            return Ok(Vec::new());
        };
        #[allow(clippy::type_complexity)]
        let rows: Vec<(
            i64,
            i64,
            String,
            String,
            String,
            String,
            String,
            String,
            Option<i64>,
            i64,
            Option<i64>,
            i64,
            Option<i64>,
            Option<f64>,
        )> = sqlx::query_as(
            "SELECT id, round, state_digest, class, outcome, advice, reason, seen_at, period, consecutive, \
             bound_max_rounds, blocking_count, spent_tokens, spent_usd FROM rounds \
             WHERE run_id = $1 AND round >= $2 AND round <= $3 ORDER BY round",
        )
        .bind(run_id)
        .bind(from)
        .bind(to)
        .fetch_all(self.pool())
        .await?;
        #[allow(clippy::type_complexity)]
        let extras: Vec<(
            i64,
            Option<f64>,
            Option<String>,
            Option<String>,
            Option<String>,
            i64,
            Option<String>,
            i64,
            String,
            Option<String>,
            Option<f64>,
            Option<f64>,
            Option<i64>,
            Option<i64>,
            Option<String>,
        )> = sqlx::query_as(
                "SELECT id, spent_seconds, exit, error_code, error_body, operator_stop, operator_steer, created_at, \
                 source, tool_calls, ratchet_value, ratchet_best, ratchet_stall_count, fingerprint, near_seen_at \
                 FROM rounds \
                 WHERE run_id = $1 AND round >= $2 AND round <= $3 ORDER BY round",
            )
            .bind(run_id)
            .bind(from)
            .bind(to)
            .fetch_all(self.pool())
            .await?;
        let first_round = rows.first().map(|row| row.1).unwrap_or(0);
        let last_round = rows.last().map(|row| row.1).unwrap_or(0);
        #[allow(clippy::type_complexity)]
        let finding_rows: Vec<(i64, Option<String>, Option<i64>, Option<i64>, Option<String>, String, String, String)> =
            sqlx::query_as(
                "SELECT f.round_id, f.target_path, f.start_line, f.end_line, f.target_id, f.severity, f.criterion, \
                 f.message FROM findings f JOIN rounds r ON r.id = f.round_id \
                 WHERE r.run_id = $1 AND r.round >= $2 AND r.round <= $3 ORDER BY f.round_id, f.position",
            )
            .bind(run_id)
            .bind(first_round)
            .bind(last_round)
            .fetch_all(self.pool())
            .await?;
        let mut findings: HashMap<i64, Vec<HistoryFinding>> = HashMap::new();
        for (round_id, path, start_line, end_line, id, severity, criterion, message) in finding_rows {
            let key = FindingKey::new(
                target_from_columns(path, start_line, end_line, id),
                severity_from_column(&severity),
                criterion,
            );
            findings.entry(round_id).or_default().push(HistoryFinding { key, message });
        }
        let mut extras: HashMap<i64, _> = extras.into_iter().map(|row| (row.0, row)).collect();
        let mut rounds = Vec::with_capacity(rows.len());
        for (
            id,
            round,
            state,
            class,
            outcome,
            advice,
            reason,
            seen_at,
            period,
            consecutive,
            bound,
            blocking,
            tokens,
            usd,
        ) in rows
        {
            let (
                _,
                seconds,
                exit,
                error_code,
                error_body,
                stop,
                steer,
                created_at,
                source,
                tool_calls,
                ratchet_value,
                ratchet_best,
                ratchet_stall_count,
                fingerprint,
                near_seen_at,
            ) = extras.remove(&id).ok_or_else(|| unreadable("row"))?;
            rounds.push(HistoryRound {
                round: to_u32(round),
                state,
                class: class.parse().map_err(|_| unreadable("class"))?,
                outcome: outcome.parse().map_err(|_| unreadable("outcome"))?,
                advice: advice.parse().map_err(|_| unreadable("advice"))?,
                reason,
                seen_at: serde_json::from_str(&seen_at).map_err(|_| unreadable("seen_at"))?,
                period: period.map(to_u32),
                consecutive: to_u32(consecutive),
                bounded_by: bound.map(to_u32),
                blocking: to_u32(blocking),
                spent: Spent { tokens, usd, seconds },
                exit,
                error: error_code.map(|code| RoundError { code, body: error_body.unwrap_or_default() }),
                operator: OperatorNote { stop: stop != 0, steer },
                findings: findings.remove(&id).unwrap_or_default(),
                created_at,
                source: match source.as_str() {
                    "connector" => RoundSource::Connector,
                    "traces" => RoundSource::Traces,
                    _ => RoundSource::Api,
                },
                tool_calls: match tool_calls {
                    Some(text) => serde_json::from_str(&text).map_err(|_| unreadable("tool_calls"))?,
                    None => Vec::new(),
                },
                ratchet: ratchet_value.map(|value| Ratchet {
                    value,
                    best: ratchet_best,
                    stall_count: ratchet_stall_count.map(to_u32),
                }),
                fingerprint: fingerprint.map(|stored| Fingerprint::from_stored(stored).hex()),
                near_seen_at: match near_seen_at {
                    Some(text) => Some(serde_json::from_str(&text).map_err(|_| unreadable("near_seen_at"))?),
                    None => None,
                },
            });
        }
        Ok(rounds)
    }

    /// "Have I been here before?": every round of the loop, in any run,
    /// that judged `state`, oldest first (at most [`MAX_HISTORY_ROUNDS`]).
    pub async fn state_sightings(
        &self,
        team_id: i64,
        loop_name: &str,
        state: &str,
    ) -> Result<Vec<StateSighting>, LoopsError> {
        let loop_id = self.existing_loop(team_id, loop_name).await?;
        let rows: Vec<(String, i64, String, String, i64, i64, i64)> = sqlx::query_as(
            "SELECT u.run_key, r.round, r.class, r.outcome, r.blocking_count, r.finding_count, r.created_at \
             FROM rounds r JOIN runs u ON u.id = r.run_id \
             WHERE r.loop_id = $1 AND r.state_digest = $2 ORDER BY r.id LIMIT $3",
        )
        .bind(loop_id)
        .bind(state)
        .bind(i64::from(MAX_HISTORY_ROUNDS))
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|(run, round, class, outcome, blocking, findings, created_at)| {
                Ok(StateSighting {
                    run,
                    round: to_u32(round),
                    class: class.parse().map_err(|_| unreadable("class"))?,
                    outcome: outcome.parse().map_err(|_| unreadable("outcome"))?,
                    blocking: to_u32(blocking),
                    findings: to_u32(findings),
                    created_at,
                })
            })
            .collect()
    }

    /// Records a heartbeat at `now`: the run (named, or the loop's current
    /// one) is alive, running or blocked on the subject it names. A lost
    /// run comes back; a finished run refuses.
    pub async fn heartbeat_at(
        &self,
        team_id: i64,
        loop_name: &str,
        heartbeat: &Heartbeat,
        now: i64,
    ) -> Result<RunSummary, LoopsError> {
        let mut tx = self.begin_write().await?;
        let loop_row: Option<(i64, Option<i64>)> =
            sqlx::query_as("SELECT id, current_run_id FROM loops WHERE team_id = $1 AND name = $2")
                .bind(team_id)
                .bind(loop_name)
                .fetch_optional(&mut *tx)
                .await?;
        let (loop_id, current_run_id) =
            loop_row.ok_or_else(|| LoopsError::NoSuchLoop(loop_name.to_string()))?;
        let run: Option<(i64, String, String)> = match &heartbeat.run {
            Some(key) => {
                sqlx::query_as("SELECT id, run_key, state FROM runs WHERE loop_id = $1 AND run_key = $2")
                    .bind(loop_id)
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await?
            }
            None => {
                sqlx::query_as("SELECT id, run_key, state FROM runs WHERE id = $1")
                    .bind(current_run_id.unwrap_or(-1))
                    .fetch_optional(&mut *tx)
                    .await?
            }
        };
        let Some((run_id, key, state)) = run else {
            return Err(match &heartbeat.run {
                Some(key) => LoopsError::NoSuchRun(key.clone()),
                None => LoopsError::conflict(Some("run"), "the loop has no run yet: report a round first"),
            });
        };
        if run_state::is_final(&state) {
            return Err(LoopsError::conflict(Some("run"), format!("run {key:?} has ended ({state})")));
        }
        let (new_state, reason, subject) = match &heartbeat.blocked {
            Some(blocked) => (BLOCKED, Some(blocked.reason.clone()), Some(blocked.subject.clone())),
            None => (RUNNING, None, None),
        };
        sqlx::query(
            "UPDATE runs SET state = $1, blocked_reason = $2, blocked_subject = $3, last_seen_at = $4, \
             ended_at = NULL WHERE id = $5",
        )
        .bind(new_state)
        .bind(reason)
        .bind(subject)
        .bind(now)
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1");
        let columns: RunColumns = sqlx::query_as(&sql).bind(run_id).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(run_summary(columns))
    }

    /// The runs of a team's loop, newest first, at most `limit`.
    /// Where the rounds of a loop came from, in the order API, connector,
    /// traces (an unknown loop has none).
    pub async fn loop_sources(&self, team_id: i64, loop_name: &str) -> Result<Vec<RoundSource>, LoopsError> {
        let sources: Vec<(String,)> = sqlx::query_as(
            "SELECT DISTINCT r.source FROM rounds r JOIN loops l ON l.id = r.loop_id \
             WHERE l.team_id = $1 AND l.name = $2",
        )
        .bind(team_id)
        .bind(loop_name)
        .fetch_all(self.pool())
        .await?;
        let mut found: Vec<RoundSource> = [RoundSource::Api, RoundSource::Connector, RoundSource::Traces]
            .into_iter()
            .filter(|source| sources.iter().any(|(name,)| name == source.as_str()))
            .collect();
        found.dedup();
        Ok(found)
    }

    pub async fn loop_runs(
        &self,
        team_id: i64,
        loop_name: &str,
        limit: u32,
    ) -> Result<Vec<RunSummary>, LoopsError> {
        let loop_id = self.existing_loop(team_id, loop_name).await?;
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE loop_id = $1 ORDER BY id DESC LIMIT $2");
        let rows: Vec<RunColumns> =
            sqlx::query_as(&sql).bind(loop_id).bind(i64::from(limit)).fetch_all(self.pool()).await?;
        Ok(rows.into_iter().map(run_summary).collect())
    }

    /// How many loops a team has.
    pub async fn team_loop_count(&self, team_id: i64) -> Result<u32, LoopsError> {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM loops WHERE team_id = $1")
            .bind(team_id)
            .fetch_one(self.pool())
            .await?;
        Ok(to_u32(count))
    }

    /// The loops of a team with their current run and last class, by name.
    pub async fn team_loops(&self, team_id: i64) -> Result<Vec<LoopSummary>, LoopsError> {
        #[allow(clippy::type_complexity)]
        let rows: Vec<(String, i64, Option<i64>, i64, i64, Option<String>, i64, Option<i64>)> = sqlx::query_as(
            "SELECT name, stall_threshold, max_rounds, heartbeat_window_ms, pending_stop, pending_steer, created_at, \
             current_run_id FROM loops WHERE team_id = $1 ORDER BY name",
        )
        .bind(team_id)
        .fetch_all(self.pool())
        .await?;
        let mut loops = Vec::with_capacity(rows.len());
        for (
            name,
            stall_threshold,
            max_rounds,
            heartbeat_window_ms,
            stop,
            steer,
            created_at,
            current_run_id,
        ) in rows
        {
            let mut current_run = None;
            let mut last_class = None;
            if let Some(run_id) = current_run_id {
                let sql = format!("SELECT id, {RUN_COLUMNS} FROM runs WHERE id = $1");
                #[allow(clippy::type_complexity)]
                let row: Option<(
                    i64,
                    String,
                    String,
                    Option<String>,
                    Option<String>,
                    Option<String>,
                    i64,
                    i64,
                    i64,
                    Option<i64>,
                )> = sqlx::query_as(&sql).bind(run_id).fetch_optional(self.pool()).await?;
                if let Some((
                    _,
                    key,
                    state,
                    exit,
                    reason,
                    subject,
                    last_round,
                    started_at,
                    last_seen_at,
                    ended_at,
                )) = row
                {
                    current_run = Some(run_summary((
                        key,
                        state,
                        exit,
                        reason,
                        subject,
                        last_round,
                        started_at,
                        last_seen_at,
                        ended_at,
                    )));
                    let class: Option<String> = sqlx::query_scalar(
                        "SELECT class FROM rounds WHERE run_id = $1 ORDER BY round DESC LIMIT 1",
                    )
                    .bind(run_id)
                    .fetch_optional(self.pool())
                    .await?;
                    last_class = class.and_then(|class| class.parse().ok());
                }
            }
            loops.push(LoopSummary {
                name,
                settings: LoopSettings {
                    stall_threshold: to_u32(stall_threshold),
                    max_rounds: max_rounds.map(to_u32),
                    heartbeat_window_ms,
                },
                current_run,
                last_class,
                pending: OperatorNote { stop: stop != 0, steer },
                created_at,
            });
        }
        Ok(loops)
    }

    /// The operator's STOP: delivered once, in the response to the loop's
    /// next round. Answers whether the loop exists in the team.
    pub async fn request_loop_stop(&self, team_id: i64, loop_name: &str) -> Result<(), LoopsError> {
        let result = sqlx::query("UPDATE loops SET pending_stop = 1 WHERE team_id = $1 AND name = $2")
            .bind(team_id)
            .bind(loop_name)
            .execute(self.pool())
            .await?;
        if result.rows_affected() == 0 {
            return Err(LoopsError::NoSuchLoop(loop_name.to_string()));
        }
        Ok(())
    }

    /// The operator's STEER note, delivered once with the next round's
    /// answer; `None` withdraws a note not yet delivered.
    pub async fn set_loop_steer(
        &self,
        team_id: i64,
        loop_name: &str,
        note: Option<&str>,
    ) -> Result<(), LoopsError> {
        if let Some(note) = note {
            if note.trim().is_empty() {
                return Err(LoopsError::invalid(Some("steer"), "steer must be 1 to 4000 characters of text"));
            }
            crate::stored_text::check("steer", note, crate::stored_text::limits::STEER_NOTE)?;
        }
        let result = sqlx::query("UPDATE loops SET pending_steer = $1 WHERE team_id = $2 AND name = $3")
            .bind(note)
            .bind(team_id)
            .bind(loop_name)
            .execute(self.pool())
            .await?;
        if result.rows_affected() == 0 {
            return Err(LoopsError::NoSuchLoop(loop_name.to_string()));
        }
        Ok(())
    }

    /// Changes a loop's stall threshold, ceiling and heartbeat window.
    pub async fn set_loop_settings(
        &self,
        team_id: i64,
        loop_name: &str,
        settings: LoopSettings,
    ) -> Result<(), LoopsError> {
        if settings.stall_threshold == 0 {
            return Err(LoopsError::invalid(Some("stall_threshold"), "stall_threshold must be at least 1"));
        }
        if settings.max_rounds == Some(0) {
            return Err(LoopsError::invalid(Some("max_rounds"), "max_rounds must be at least 1 when set"));
        }
        if settings.heartbeat_window_ms < 1000 {
            return Err(LoopsError::invalid(
                Some("heartbeat_window_ms"),
                "heartbeat_window_ms must be at least 1000",
            ));
        }
        let result = sqlx::query(
            "UPDATE loops SET stall_threshold = $1, max_rounds = $2, heartbeat_window_ms = $3 \
             WHERE team_id = $4 AND name = $5",
        )
        .bind(i64::from(settings.stall_threshold))
        .bind(settings.max_rounds.map(i64::from))
        .bind(settings.heartbeat_window_ms)
        .bind(team_id)
        .bind(loop_name)
        .execute(self.pool())
        .await?;
        if result.rows_affected() == 0 {
            return Err(LoopsError::NoSuchLoop(loop_name.to_string()));
        }
        Ok(())
    }

    /// Records a heartbeat now; see [`Store::heartbeat_at`].
    pub async fn heartbeat(
        &self,
        team_id: i64,
        loop_name: &str,
        heartbeat: &Heartbeat,
    ) -> Result<RunSummary, LoopsError> {
        self.heartbeat_at(team_id, loop_name, heartbeat, now_millis()).await
    }
}

/// Folds a run's per-round points into at most `width` points: consecutive
/// rounds share a bucket, which keeps the most findings of any of its
/// rounds, its worst class and how many of its rounds repeated a state, so
/// a wedged stretch or a cycle stays visible in a run of 10,000 rounds.
pub fn bucket_chart(points: Vec<ChartPoint>, width: usize) -> Vec<ChartPoint> {
    if points.len() <= width || width == 0 {
        return points;
    }
    let size = points.len().div_ceil(width);
    points
        .chunks(size)
        .map(|chunk| {
            let mut bucket = chunk[0].clone();
            for point in &chunk[1..] {
                bucket.last_round = point.last_round;
                bucket.ratchet = point.ratchet.or(bucket.ratchet);
                bucket.near |= point.near;
                bucket.blocking = bucket.blocking.max(point.blocking);
                bucket.other = bucket.other.max(point.other);
                bucket.repeats += point.repeats;
                if severity_of(point.class) > severity_of(bucket.class) {
                    bucket.class = point.class;
                }
            }
            bucket
        })
        .collect()
}

/// How much a class asks for attention, for a bucket's worst one.
fn severity_of(class: Class) -> u8 {
    match class {
        Class::FixedPoint | Class::Cycle => 7,
        Class::Thrashing => 6,
        Class::Stalled => 5,
        Class::Regressing => 4,
        Class::Acting => 3,
        Class::First => 2,
        Class::Ratcheting | Class::Converging => 1,
        Class::Done => 0,
    }
}
