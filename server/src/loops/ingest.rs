//! Storing one round: the transaction behind `POST .../rounds`.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use sqlx::{Any, Transaction};

use super::recent::KeptHistory;
use super::run_state::{self, DONE, FAILED, RUNNING, STOPPED};
use super::wire::RoundReport;
use super::LoopsError;
use crate::convergence::{
    classify_round, Advice, Bound, Class, FindingKey, LoopPolicy, Outcome, RoundInput, Severity, Target,
};
use crate::store::{now_millis, Backend, Store};

/// The operator's commands as delivered in a response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorNote {
    pub stop: bool,
    pub steer: Option<String>,
}

/// The response to a round: the contract's fields first, then extensions
/// (`run`, `period`, `consecutive`, `bound`) that clients may ignore.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundAnswer {
    pub round: u32,
    pub class: Class,
    pub outcome: Outcome,
    pub seen_at: Vec<u32>,
    pub advice: Advice,
    pub reason: String,
    pub operator: OperatorNote,
    pub run: String,
    pub period: Option<u32>,
    pub consecutive: u32,
    pub bound: Option<Bound>,
}

/// What the live channel carries for each stored round: enough for a
/// dashboard to update its list and chart without asking again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundEvent {
    /// The stored round's row id: increasing, so a live stream can resume
    /// after it (`Last-Event-ID`).
    #[serde(default)]
    pub id: i64,
    pub team_id: i64,
    pub loop_id: i64,
    #[serde(rename = "loop")]
    pub loop_name: String,
    pub run: String,
    pub run_state: String,
    pub round: u32,
    pub state: String,
    pub class: Class,
    pub outcome: Outcome,
    pub advice: Advice,
    pub blocking: u32,
    pub findings: u32,
    pub created_at: i64,
}

/// The result of [`Store::ingest_round`]: the answer, and the event to
/// publish when the round was newly stored (none for a replay).
#[derive(Debug, Clone)]
pub struct Ingested {
    pub answer: RoundAnswer,
    pub event: Option<RoundEvent>,
    /// The run's history with this round, to keep once it commits.
    pub(super) kept: Option<KeptHistory>,
}

struct RunRow {
    id: i64,
    key: String,
    state: String,
    last_round: i64,
}

/// The loop's row after its upsert, the team's webhook count, and the
/// round's run (id, key, state, last round) when it exists.
type LoopUpsertRow = (
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    i64,
    Option<String>,
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<i64>,
);

type RunTuple = (i64, String, String, i64);

impl From<RunTuple> for RunRow {
    fn from((id, key, state, last_round): RunTuple) -> Self {
        RunRow { id, key, state, last_round }
    }
}

/// The upsert without the run (its columns are NULL), for PostgreSQL.
static UPSERT_LOOP: LazyLock<String> = LazyLock::new(|| upsert_loop_sql("FALSE"));
/// The upsert of a round that names its run (`$4`).
static UPSERT_LOOP_WITH_NAMED_RUN: LazyLock<String> =
    LazyLock::new(|| upsert_loop_sql("runs.loop_id = loops.id AND runs.run_key = $4"));
/// The upsert of a round without a run id: it belongs to the current run.
static UPSERT_LOOP_WITH_CURRENT_RUN: LazyLock<String> =
    LazyLock::new(|| upsert_loop_sql("runs.id = loops.current_run_id"));

fn upsert_loop_sql(run_condition: &str) -> String {
    let run_column = |column: &str| format!("(SELECT runs.{column} FROM runs WHERE {run_condition})");
    format!(
        "INSERT INTO loops (team_id, name, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (team_id, name) DO UPDATE SET name = excluded.name \
         RETURNING id, stall_threshold, max_rounds, current_run_id, pending_stop, pending_steer, \
         (SELECT COUNT(*) FROM team_webhooks WHERE team_webhooks.team_id = loops.team_id) AS hooks, \
         {} AS run_id, {} AS run_key, {} AS run_state, {} AS run_last_round",
        run_column("id"),
        run_column("run_key"),
        run_column("state"),
        run_column("last_round"),
    )
}

/// A finding of a round stored before rounds kept their keys as JSON.
type LegacyFindingRow = (i64, Option<String>, Option<i64>, Option<i64>, Option<String>, String, String);

/// How many findings go into one multi-row INSERT. Nine parameters each
/// keeps a statement far below both databases' parameter limits.
const FINDINGS_PER_STATEMENT: usize = 400;

/// Opens the write transaction of one round. On SQLite `BEGIN IMMEDIATE`
/// takes the write lock at once: a deferred transaction that reads first
/// and writes later can fail with "database is locked" when another writer
/// got in between, and waiting does not help it.
pub(super) async fn begin_write(store: &Store) -> Result<Transaction<'static, Any>, sqlx::Error> {
    match store.backend() {
        Backend::Sqlite => store.pool().begin_with("BEGIN IMMEDIATE").await,
        Backend::Postgres => store.pool().begin().await,
    }
}

pub(super) fn severity_from_column(text: &str) -> Severity {
    match text {
        "blocking" => Severity::Blocking,
        "warning" => Severity::Warning,
        _ => Severity::Info,
    }
}

pub(super) fn severity_column(severity: Severity) -> &'static str {
    match severity {
        Severity::Blocking => "blocking",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// A stored target back as the engine's [`Target`]. Stored rows were
/// validated on the way in, so a row without a path is an id target.
pub(super) fn target_from_columns(
    path: Option<String>,
    start_line: Option<i64>,
    end_line: Option<i64>,
    id: Option<String>,
) -> Target {
    match path {
        Some(path) => Target::Code {
            path,
            start_line: line_number(start_line.unwrap_or(1)),
            end_line: end_line.map(line_number),
        },
        None => Target::Other { id: id.unwrap_or_default() },
    }
}

fn line_number(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn count_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl Store {
    /// Validated `report` for the loop `loop_name` of team `team_id`: stores
    /// it with its classification in one transaction, or replays the answer
    /// it got when it was stored before.
    pub async fn ingest_round(
        &self,
        team_id: i64,
        loop_name: &str,
        report: &RoundReport,
    ) -> Result<Ingested, LoopsError> {
        self.ingest_round_at(team_id, loop_name, report, now_millis()).await
    }

    /// [`Store::ingest_round`] at the time `now` (Unix milliseconds), for
    /// tests that need a clock of their own.
    pub async fn ingest_round_at(
        &self,
        team_id: i64,
        loop_name: &str,
        report: &RoundReport,
        now: i64,
    ) -> Result<Ingested, LoopsError> {
        match self.backend() {
            // SQLite has one writer at a time: rounds that arrive together
            // share a transaction (see `super::group_commit`).
            Backend::Sqlite => {
                let round = super::group_commit::PendingRound {
                    team_id,
                    loop_name: loop_name.to_string(),
                    report: report.clone(),
                    now,
                };
                super::group_commit::ingest(self, round).await
            }
            // PostgreSQL locks rows, not the database: rounds of different
            // loops commit side by side, each in its own transaction.
            Backend::Postgres => self.ingest_round_alone(team_id, loop_name, report, now).await,
        }
    }

    /// Stores one round in a transaction of its own.
    pub(super) async fn ingest_round_alone(
        &self,
        team_id: i64,
        loop_name: &str,
        report: &RoundReport,
        now: i64,
    ) -> Result<Ingested, LoopsError> {
        let mut tx = begin_write(self).await?;
        let recent = &self.ingest_state().recent;
        let mut ingested = store_round(self, &mut tx, team_id, loop_name, report, now).await?;
        if ingested.event.is_some() {
            tx.commit().await?;
            if let Some(kept) = ingested.kept.take() {
                recent.keep(kept);
            }
        } else {
            // A replay wrote nothing worth keeping.
            tx.rollback().await?;
        }
        Ok(ingested)
    }
}

/// Stores `report` with its classification inside `tx`, or, for a round
/// stored before with the same body, rebuilds the answer it got then (and
/// no event). On an error the caller must roll `tx` back: the statements
/// before it may have run.
pub(super) async fn store_round(
    store: &Store,
    tx: &mut Transaction<'static, Any>,
    team_id: i64,
    loop_name: &str,
    report: &RoundReport,
    now: i64,
) -> Result<Ingested, LoopsError> {
    let backend = store.backend();
    let recent = &store.ingest_state().recent;
    let body_hash = report.body_hash();

    // Creating the loop on its first round and locking its row are one
    // statement: on PostgreSQL `DO UPDATE` locks the row until commit,
    // which serialises the rounds of one loop; on SQLite the immediate
    // transaction already holds the only write lock.
    // The same statement says whether the team has an alert webhook, so
    // rounds of teams without one never look for alerts. On SQLite it
    // also returns the round's run, saving a round trip to the worker
    // thread; PostgreSQL evaluates RETURNING with the snapshot taken
    // before it waited for the row lock, so there the run is read by
    // the next statement, which sees what the previous holder committed.
    let fold_run = backend == Backend::Sqlite;
    let sql = match (fold_run, report.run.is_some()) {
        (false, _) => UPSERT_LOOP.as_str(),
        (true, true) => UPSERT_LOOP_WITH_NAMED_RUN.as_str(),
        (true, false) => UPSERT_LOOP_WITH_CURRENT_RUN.as_str(),
    };
    let mut upsert = sqlx::query_as::<_, LoopUpsertRow>(sql).bind(team_id).bind(loop_name).bind(now);
    if let (true, Some(key)) = (fold_run, &report.run) {
        upsert = upsert.bind(key);
    }
    let row = upsert.fetch_one(&mut **tx).await?;
    let (loop_id, stall_threshold, max_rounds, current_run_id, pending_stop, pending_steer, hooks) =
        (row.0, row.1, row.2, row.3, row.4, row.5, row.6);
    let existing: Option<RunRow> = if fold_run {
        match (row.7, row.8, row.9, row.10) {
            (Some(id), Some(key), Some(state), Some(last_round)) => {
                Some(RunRow { id, key, state, last_round })
            }
            _ => None,
        }
    } else {
        match (&report.run, current_run_id) {
            (Some(key), _) => sqlx::query_as::<_, RunTuple>(
                "SELECT id, run_key, state, last_round FROM runs WHERE loop_id = $1 AND run_key = $2",
            )
            .bind(loop_id)
            .bind(key)
            .fetch_optional(&mut **tx)
            .await?
            .map(RunRow::from),
            (None, Some(run_id)) => {
                sqlx::query_as::<_, RunTuple>("SELECT id, run_key, state, last_round FROM runs WHERE id = $1")
                    .bind(run_id)
                    .fetch_optional(&mut **tx)
                    .await?
                    .map(RunRow::from)
            }
            (None, None) => None,
        }
    };

    let run = match existing {
        Some(run) => {
            // A round after the run's last cannot be stored yet, which
            // spares the hot path (appending) this lookup.
            let stored_hash: Option<String> = if i64::from(report.round) > run.last_round {
                None
            } else {
                sqlx::query_scalar("SELECT body_hash FROM rounds WHERE run_id = $1 AND round = $2")
                    .bind(run.id)
                    .bind(i64::from(report.round))
                    .fetch_optional(&mut **tx)
                    .await?
            };
            match stored_hash {
                    Some(hash) if hash == body_hash => {
                        let answer = stored_answer(tx, &run, report.round).await?;
                        return Ok(Ingested { answer, event: None, kept: None });
                    }
                    // Without a run id, round 1 again means the loop started
                    // over: a new run, whatever the old one holds.
                    _ if report.run.is_none() && report.round == 1 => None,
                    Some(_) => {
                        return Err(LoopsError::conflict(
                            Some("round"),
                            format!(
                                "round {} of run {:?} was already stored with a different body",
                                report.round, run.key
                            ),
                        ))
                    }
                    None if i64::from(report.round) <= run.last_round => {
                        return Err(LoopsError::conflict(
                            Some("round"),
                            format!(
                                "round {} is not after round {}, the last of run {:?}: rounds are strictly increasing",
                                report.round, run.last_round, run.key
                            ),
                        ))
                    }
                    None if run_state::is_final(&run.state)
                        && !(run.state == STOPPED && report.exit.is_some()) =>
                    {
                        return Err(LoopsError::conflict(
                            Some("run"),
                            format!(
                                "run {:?} has ended ({}); start a new run with round 1 or a new run id",
                                run.key, run.state
                            ),
                        ))
                    }
                    None => Some(run),
                }
        }
        None => None,
    };
    let run = match run {
        Some(run) => run,
        None => start_run(tx, loop_id, report.run.as_deref(), now).await?,
    };

    // A run that has just started has nothing to replay.
    let history: Vec<RoundInput> = if run.last_round == 0 {
        Vec::new()
    } else if let Some(history) = recent.take(run.id, run.last_round) {
        history
    } else {
        load_history(tx, run.id).await?
    };
    let policy = LoopPolicy {
        stall_threshold: u32::try_from(stall_threshold.max(0)).unwrap_or(u32::MAX),
        max_rounds: max_rounds.and_then(|max| u32::try_from(max).ok()),
    };
    let current = report.engine_input();
    let classification = classify_round(&history, &current, &policy);
    let operator = OperatorNote { stop: pending_stop != 0, steer: pending_steer };

    let keys: BTreeSet<&FindingKey> = current.findings.iter().collect();
    let blocking = keys.iter().filter(|key| key.is_blocking()).count();

    let (new_state, ended) = if run.state == STOPPED {
        (STOPPED, true)
    } else if let Some(exit) = report.exit {
        if exit.is_detect() || blocking == 0 {
            (DONE, true)
        } else if exit.is_human_interrupt() {
            (STOPPED, true)
        } else {
            (FAILED, true)
        }
    } else if operator.stop {
        (STOPPED, true)
    } else {
        (RUNNING, false)
    };

    let seen_at = serde_json::to_string(&classification.seen_at).unwrap_or_else(|_| "[]".to_string());
    let finding_keys = serde_json::to_string(&current.findings).unwrap_or_else(|_| "[]".to_string());
    let round_id: i64 = sqlx::query_scalar(
        "INSERT INTO rounds (run_id, loop_id, round, state_digest, body_hash, spent_tokens, spent_usd, \
         spent_seconds, exit, error_code, error_body, class, outcome, advice, reason, seen_at, period, \
         consecutive, bound_max_rounds, blocking_count, finding_count, operator_stop, operator_steer, \
         created_at, finding_keys) \
         VALUES ($1, $2, $3, $4, $5, $6, CAST($7 AS DOUBLE PRECISION), CAST($8 AS DOUBLE PRECISION), $9, \
         $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25) RETURNING id",
    )
    .bind(run.id)
    .bind(loop_id)
    .bind(i64::from(report.round))
    .bind(&report.state)
    .bind(&body_hash)
    .bind(report.spent.tokens)
    // Amounts travel as text and are cast by the database: sqlx 0.8.6's
    // Any driver binds a NULL f64 as a float4 parameter, so on PostgreSQL
    // a round with spend after a round without it failed ("incorrect
    // binary data format"). Rust prints an f64 so that it parses back
    // to the same value.
    .bind(report.spent.usd.map(|usd| usd.to_string()))
    .bind(report.spent.seconds.map(|seconds| seconds.to_string()))
    .bind(report.exit.map(|exit| exit.as_string()))
    .bind(report.error.as_ref().map(|error| error.code.clone()))
    .bind(report.error.as_ref().map(|error| error.body.clone()))
    .bind(classification.class.as_str())
    .bind(classification.outcome.as_str())
    .bind(classification.advice.as_str())
    .bind(&classification.reason)
    .bind(&seen_at)
    .bind(classification.period.map(i64::from))
    .bind(i64::from(classification.consecutive))
    .bind(classification.bound.map(|bound| i64::from(bound.max_rounds)))
    .bind(blocking as i64)
    .bind(keys.len() as i64)
    .bind(i64::from(operator.stop))
    .bind(operator.steer.clone())
    .bind(now)
    .bind(&finding_keys)
    .fetch_one(&mut **tx)
    .await?;

    insert_findings(tx, round_id, report).await?;

    // An alert when the loop enters a bad state (not on every round it
    // stays there), queued with the round it belongs to.
    let alert = crate::alerts::AlertKind::of_round(
        classification.class.as_str(),
        classification.outcome.as_str(),
        classification.advice.as_str(),
    )
    .filter(|_| hooks > 0);
    if let Some(kind) = alert {
        let previous: Option<(String, String, String)> = sqlx::query_as(
            "SELECT class, outcome, advice FROM rounds WHERE run_id = $1 AND round < $2 ORDER BY round DESC LIMIT 1",
        )
        .bind(run.id)
        .bind(i64::from(report.round))
        .fetch_optional(&mut **tx)
        .await?;
        let was = previous.and_then(|(class, outcome, advice)| {
            crate::alerts::AlertKind::of_round(&class, &outcome, &advice)
        });
        if was != Some(kind) {
            let team: String = sqlx::query_scalar("SELECT slug FROM teams WHERE id = $1")
                .bind(team_id)
                .fetch_one(&mut **tx)
                .await?;
            let payload = serde_json::json!({
                "type": format!("loop.{}", kind.as_str()),
                "team": team,
                "loop": loop_name,
                "run": run.key,
                "round": report.round,
                "class": classification.class.as_str(),
                "outcome": classification.outcome.as_str(),
                "advice": classification.advice.as_str(),
                "reason": classification.reason,
                "at": now,
            });
            crate::alerts::enqueue(tx, team_id, loop_name, kind, &payload, now).await?;
        }
    }

    sqlx::query(
        "UPDATE runs SET state = $1, exit = COALESCE($2, exit), last_round = $3, last_seen_at = $4, \
         ended_at = CASE WHEN $5 = 1 THEN COALESCE(ended_at, $4) ELSE NULL END, \
         blocked_reason = NULL, blocked_subject = NULL WHERE id = $6",
    )
    .bind(new_state)
    .bind(report.exit.map(|exit| exit.as_string()))
    .bind(i64::from(report.round))
    .bind(now)
    .bind(i64::from(ended))
    .bind(run.id)
    .execute(&mut **tx)
    .await?;

    // The loop row changes only when the current run moves or operator
    // commands were delivered; skipping the write otherwise keeps the
    // hot path one statement shorter.
    if current_run_id != Some(run.id) || operator.stop || operator.steer.is_some() {
        sqlx::query(
            "UPDATE loops SET current_run_id = $1, pending_stop = 0, pending_steer = NULL WHERE id = $2",
        )
        .bind(run.id)
        .bind(loop_id)
        .execute(&mut **tx)
        .await?;
    }

    let event = RoundEvent {
        id: round_id,
        team_id,
        loop_id,
        loop_name: loop_name.to_string(),
        run: run.key.clone(),
        run_state: new_state.to_string(),
        round: report.round,
        state: report.state.clone(),
        class: classification.class,
        outcome: classification.outcome,
        advice: classification.advice,
        blocking: count_u32(blocking),
        findings: count_u32(keys.len()),
        created_at: now,
    };
    if backend == Backend::Postgres {
        // Sent inside the transaction, the notification reaches other
        // instances only if the round is committed (see `crate::live`).
        let payload = serde_json::to_string(&event).unwrap_or_default();
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(crate::live::NOTIFY_CHANNEL)
            .bind(payload)
            .execute(&mut **tx)
            .await?;
    }

    let answer = RoundAnswer {
        round: classification.round,
        class: classification.class,
        outcome: classification.outcome,
        seen_at: classification.seen_at,
        advice: classification.advice,
        reason: classification.reason,
        operator,
        run: run.key,
        period: classification.period,
        consecutive: classification.consecutive,
        bound: classification.bound,
    };
    let mut rounds = history;
    rounds.push(current);
    let kept = KeptHistory { run_id: run.id, last_round: i64::from(report.round), rounds };
    Ok(Ingested { answer, event: Some(event), kept: Some(kept) })
}

/// The run's stored rounds as the engine sees them. Each round carries its
/// finding keys as JSON, so this reads one row per round; rounds stored
/// before that column existed have their keys read from `findings`.
async fn load_history(
    tx: &mut Transaction<'static, Any>,
    run_id: i64,
) -> Result<Vec<RoundInput>, sqlx::Error> {
    let rows: Vec<(i64, String, Option<String>)> = sqlx::query_as(
        "SELECT round, state_digest, finding_keys FROM rounds WHERE run_id = $1 ORDER BY round",
    )
    .bind(run_id)
    .fetch_all(&mut **tx)
    .await?;
    let mut history = Vec::with_capacity(rows.len());
    let mut legacy = false;
    for (number, state, keys) in rows {
        let findings = match keys.as_deref().map(serde_json::from_str::<Vec<FindingKey>>) {
            Some(Ok(findings)) => findings,
            _ => {
                legacy = true;
                Vec::new()
            }
        };
        history.push(RoundInput { round: line_number(number), state, findings });
    }
    if legacy {
        let rows: Vec<LegacyFindingRow> = sqlx::query_as(
            "SELECT r.round, f.target_path, f.start_line, f.end_line, f.target_id, f.severity, f.criterion \
             FROM rounds r JOIN findings f ON f.round_id = r.id \
             WHERE r.run_id = $1 AND r.finding_keys IS NULL ORDER BY r.round, f.position",
        )
        .bind(run_id)
        .fetch_all(&mut **tx)
        .await?;
        for (number, path, start_line, end_line, id, severity, criterion) in rows {
            let number = line_number(number);
            if let Some(round) = history.iter_mut().find(|round| round.round == number) {
                let target = target_from_columns(path, start_line, end_line, id);
                round.findings.push(FindingKey::new(target, severity_from_column(&severity), criterion));
            }
        }
    }
    Ok(history)
}

/// The answer a stored round was given, rebuilt from its row.
async fn stored_answer(
    tx: &mut Transaction<'static, Any>,
    run: &RunRow,
    round: u32,
) -> Result<RoundAnswer, LoopsError> {
    #[allow(clippy::type_complexity)]
    let row: (
        String,
        String,
        String,
        String,
        String,
        Option<i64>,
        i64,
        Option<i64>,
        i64,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT class, outcome, advice, reason, seen_at, period, consecutive, bound_max_rounds, \
             operator_stop, operator_steer FROM rounds WHERE run_id = $1 AND round = $2",
    )
    .bind(run.id)
    .bind(i64::from(round))
    .fetch_one(&mut **tx)
    .await?;
    let (class, outcome, advice, reason, seen_at, period, consecutive, bound_max_rounds, stop, steer) = row;
    let corrupt = |what: &str| {
        LoopsError::Store(crate::store::StoreError::Database(sqlx::Error::Protocol(format!(
            "stored round {round} of run {} has an unreadable {what}",
            run.id
        ))))
    };
    Ok(RoundAnswer {
        round,
        class: class.parse().map_err(|_| corrupt("class"))?,
        outcome: outcome.parse().map_err(|_| corrupt("outcome"))?,
        seen_at: serde_json::from_str(&seen_at).map_err(|_| corrupt("seen_at"))?,
        advice: advice.parse().map_err(|_| corrupt("advice"))?,
        reason,
        operator: OperatorNote { stop: stop != 0, steer },
        run: run.key.clone(),
        period: period.map(line_number),
        consecutive: line_number(consecutive),
        bound: bound_max_rounds.map(|max_rounds| Bound { max_rounds: line_number(max_rounds), round }),
    })
}

/// Starts a run of the loop, named `key` or, when the loop sent none,
/// `run-N` with the first free N.
async fn start_run(
    tx: &mut Transaction<'static, Any>,
    loop_id: i64,
    key: Option<&str>,
    now: i64,
) -> Result<RunRow, sqlx::Error> {
    let key = match key {
        Some(key) => key.to_string(),
        None => {
            let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM runs WHERE loop_id = $1")
                .bind(loop_id)
                .fetch_one(&mut **tx)
                .await?;
            let mut number = count + 1;
            loop {
                let candidate = format!("run-{number}");
                let taken: Option<i64> =
                    sqlx::query_scalar("SELECT id FROM runs WHERE loop_id = $1 AND run_key = $2")
                        .bind(loop_id)
                        .bind(&candidate)
                        .fetch_optional(&mut **tx)
                        .await?;
                if taken.is_none() {
                    break candidate;
                }
                number += 1;
            }
        }
    };
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO runs (loop_id, run_key, state, started_at, last_seen_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
    )
    .bind(loop_id)
    .bind(&key)
    .bind(RUNNING)
    .bind(now)
    .fetch_one(&mut **tx)
    .await?;
    Ok(RunRow { id, key, state: RUNNING.to_string(), last_round: 0 })
}

async fn insert_findings(
    tx: &mut Transaction<'static, Any>,
    round_id: i64,
    report: &RoundReport,
) -> Result<(), sqlx::Error> {
    for (chunk_index, chunk) in report.findings.chunks(FINDINGS_PER_STATEMENT).enumerate() {
        let mut sql = String::from(
            "INSERT INTO findings (round_id, position, target_path, start_line, end_line, target_id, severity, \
             criterion, message) VALUES ",
        );
        for row in 0..chunk.len() {
            if row > 0 {
                sql.push_str(", ");
            }
            let base = row * 9;
            sql.push('(');
            for column in 1..=9 {
                if column > 1 {
                    sql.push_str(", ");
                }
                sql.push('$');
                sql.push_str(&(base + column).to_string());
            }
            sql.push(')');
        }
        let mut query = sqlx::query(&sql);
        for (offset, finding) in chunk.iter().enumerate() {
            let position = (chunk_index * FINDINGS_PER_STATEMENT + offset) as i64;
            let (path, start_line, end_line, id) = match &finding.key.target {
                Target::Code { path, start_line, end_line } => (
                    Some(path.clone()),
                    Some(i64::from(*start_line)),
                    Some(i64::from(end_line.unwrap_or(*start_line))),
                    None,
                ),
                Target::Other { id } => (None, None, None, Some(id.clone())),
            };
            query = query
                .bind(round_id)
                .bind(position)
                .bind(path)
                .bind(start_line)
                .bind(end_line)
                .bind(id)
                .bind(severity_column(finding.key.severity))
                .bind(finding.key.criterion.clone())
                .bind(finding.message.clone());
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}
