//! Storing one round: the transaction behind `POST .../rounds`.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use sqlx::{Any, Transaction};

use super::db::{args, Arg, RoundDb, SqlxDb};
use super::run_state::{self, DONE, FAILED, RUNNING, STOPPED};
use super::wire::{Finding, RoundReport};
use super::LoopsError;
use crate::convergence::{
    classify_next, Advice, Bound, Class, Classification, FindingKey, Fingerprint, LoopPolicy, Outcome,
    PreviousRound, Ratchet, RunMemory, Severity, Target, NEAR_BITS,
};
use crate::live::RoundEvent;
use crate::store::{now_millis, Backend, Store, StoreError};

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
    /// For a round with a fingerprint: the earlier rounds of the run whose
    /// fingerprint is within [`NEAR_BITS`] bits of its own (at most
    /// [`MAX_NEAR_SEEN`], the latest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_seen_at: Option<Vec<u32>>,
    pub advice: Advice,
    pub reason: String,
    pub operator: OperatorNote,
    pub run: String,
    pub period: Option<u32>,
    pub consecutive: u32,
    pub bound: Option<Bound>,
}

/// The result of [`Store::ingest_round`]: the answer, and the event to
/// publish when the round was newly stored (none for a replay).
#[derive(Debug, Clone)]
pub struct Ingested {
    pub answer: RoundAnswer,
    pub event: Option<RoundEvent>,
}

#[derive(Clone)]
struct RunRow {
    id: i64,
    key: String,
    state: String,
    last_round: i64,
}

/// The loop's upserts: `[by_token][run]`, where `run` is 0 for
/// PostgreSQL, 1 for SQLite and a round that names its run (`$4`), 2 for
/// SQLite and the loop's current run. `$1` is the team's id, or with
/// `by_token` the hash of the round's loop token: then the loop is
/// upserted only for a live token, and no row comes back for any other.
static UPSERT_LOOP: LazyLock<[[String; 3]; 2]> = LazyLock::new(|| {
    [false, true].map(|by_token| {
        [
            upsert_loop_sql(None, by_token),
            upsert_loop_sql(Some("runs.loop_id = loops.id AND runs.run_key = $4"), by_token),
            upsert_loop_sql(Some("runs.id = loops.current_run_id"), by_token),
        ]
    })
});

/// The upsert returns the round's run: on SQLite from subqueries under
/// `run_condition`; on PostgreSQL (`None`) through `round_run` (see its
/// migration), as a JSON array, since RETURNING's own subqueries would
/// read with the snapshot taken before the row lock was granted.
fn upsert_loop_sql(run_condition: Option<&str>, by_token: bool) -> String {
    let run_columns = match run_condition {
        Some(condition) => {
            let column = |name: &str| format!("(SELECT runs.{name} FROM runs WHERE {condition})");
            format!(
                "{}, {}, {}, {}, CAST(NULL AS TEXT)",
                column("id"),
                column("run_key"),
                column("state"),
                column("last_round")
            )
        }
        None => "CAST(NULL AS BIGINT), CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS BIGINT), \
                 round_run(loops.id, $4, loops.current_run_id)"
            .to_string(),
    };
    let (source, token_columns) = if by_token {
        (
            "SELECT team_id, $2, $3 FROM loop_tokens WHERE token_hash = $1 AND revoked_at IS NULL",
            "(SELECT id FROM loop_tokens WHERE token_hash = $1), \
             (SELECT last_used_at FROM loop_tokens WHERE token_hash = $1)",
        )
    } else {
        ("VALUES ($1, $2, $3)", "CAST(NULL AS BIGINT), CAST(NULL AS BIGINT)")
    };
    format!(
        "INSERT INTO loops (team_id, name, created_at) {source} \
         ON CONFLICT (team_id, name) DO UPDATE SET name = excluded.name \
         RETURNING id, stall_threshold, max_rounds, current_run_id, pending_stop, pending_steer, \
         (SELECT COUNT(*) FROM team_webhooks WHERE team_webhooks.team_id = loops.team_id) AS hooks, \
         {run_columns}, team_id, {token_columns}"
    )
}

/// A stored round: 36 arguments, see `store_round`.
const INSERT_ROUND: &str =
    "INSERT INTO rounds (run_id, loop_id, round, state_digest, body_hash, spent_tokens, spent_usd, \
     spent_seconds, exit, error_code, error_body, class, outcome, advice, reason, seen_at, period, \
     consecutive, bound_max_rounds, blocking_count, finding_count, operator_stop, operator_steer, \
     created_at, finding_keys, source, tool_calls, ratchet_value, ratchet_best, ratchet_stall_count, \
     fingerprint, fingerprint_q0, fingerprint_q1, fingerprint_q2, fingerprint_q3, near_seen_at) \
     VALUES ($1, $2, $3, $4, $5, $6, CAST($7 AS DOUBLE PRECISION), CAST($8 AS DOUBLE PRECISION), $9, \
     $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, \
     CAST($28 AS DOUBLE PRECISION), CAST($29 AS DOUBLE PRECISION), $30, $31, $32, $33, $34, $35, $36)";

/// How many earlier rounds sharing each quarter of a fingerprint are read
/// as near candidates (the latest of them), and how many near rounds an
/// answer lists at most (the latest): a round's near lookup reads at most
/// four index ranges of this size, whatever the length of its run.
pub const NEAR_CANDIDATES: i64 = 100;
pub const MAX_NEAR_SEEN: usize = 100;

/// The near candidates of a fingerprint: for each of its quarters
/// (`$2`..`$5`), the latest [`NEAR_CANDIDATES`] (`$7`) earlier rounds
/// (below `$6`) of the run (`$1`) that share it, by the quarter's index.
static NEAR_CANDIDATES_SQL: LazyLock<String> = LazyLock::new(|| {
    (0..4)
        .map(|quarter| {
            format!(
                "SELECT round, fingerprint FROM (SELECT round, fingerprint FROM rounds \
                 WHERE run_id = $1 AND fingerprint_q{quarter} = ${} AND round < $6 \
                 ORDER BY round DESC LIMIT $7) AS q{quarter}",
                quarter + 2
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ")
});

/// [`INSERT_ROUND`] giving back the round's id (built once, not per round).
static INSERT_ROUND_RETURNING_ID: LazyLock<String> = LazyLock::new(|| format!("{INSERT_ROUND} RETURNING id"));

/// A round's run after it: state, exit, last round, time, whether it
/// ended, run id.
const UPDATE_RUN: &str =
    "UPDATE runs SET state = $1, exit = COALESCE($2, exit), last_round = $3, last_seen_at = $4, \
     ended_at = CASE WHEN $5 = 1 THEN COALESCE(ended_at, $4) ELSE NULL END, \
     blocked_reason = NULL, blocked_subject = NULL WHERE id = $6";

/// How many findings go into one multi-row INSERT. Nine parameters each
/// keeps a statement far below both databases' parameter limits.
const FINDINGS_PER_STATEMENT: usize = 400;

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

    /// [`Store::ingest_round`] for the holder of the loop token `secret`:
    /// 401 unless the token is live. The token is checked by the round's
    /// first statement, in its transaction: no round trip of its own on
    /// the hottest path.
    pub async fn ingest_round_with_token(
        &self,
        secret: &str,
        loop_name: &str,
        report: &RoundReport,
    ) -> Result<Ingested, LoopsError> {
        if !secret.starts_with(crate::accounts::LOOP_TOKEN_PREFIX) {
            return Err(LoopsError::Unauthorized);
        }
        let team = RoundTeam::TokenHash(crate::accounts::hash_loop_token(secret));
        self.ingest_round_of(team, loop_name, report, now_millis()).await
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
        self.ingest_round_of(RoundTeam::Known(team_id), loop_name, report, now).await
    }

    async fn ingest_round_of(
        &self,
        team: RoundTeam,
        loop_name: &str,
        report: &RoundReport,
        now: i64,
    ) -> Result<Ingested, LoopsError> {
        match (self.backend(), self.sqlite_writer()) {
            // SQLite has one writer at a time: the writer's thread stores
            // every round, and rounds that arrive together share a
            // transaction (see `super::writer`).
            (Backend::Sqlite, Some(writer)) => {
                let round = super::writer::PendingRound {
                    team,
                    loop_name: loop_name.to_string(),
                    report: report.clone(),
                    now,
                };
                super::writer::ingest(writer, round).await
            }
            (Backend::Sqlite, None) => Err(LoopsError::Store(StoreError::Database(sqlx::Error::Protocol(
                "this SQLite store has no writer of rounds".to_string(),
            )))),
            // PostgreSQL locks rows, not the database: rounds of different
            // loops commit side by side, each in its own transaction.
            (Backend::Postgres, _) => {
                let tx = self.begin_write().await?;
                self.store_alone(tx, &team, loop_name, report, now).await
            }
        }
    }

    /// Stores one round in `tx`, just begun, and commits it.
    async fn store_alone(
        &self,
        mut tx: Transaction<'static, Any>,
        team: &RoundTeam,
        loop_name: &str,
        report: &RoundReport,
        now: i64,
    ) -> Result<Ingested, LoopsError> {
        let mut db = SqlxDb { tx: &mut tx };
        let ingested = store_round(&mut db, team, loop_name, report, now).await?;
        if ingested.event.is_some() {
            tx.commit().await?;
        } else {
            // A replay wrote nothing worth keeping.
            tx.rollback().await?;
        }
        Ok(ingested)
    }
}

/// Whose round it is: a team already known, or the hash of the loop token
/// the round came with, checked in the round's own transaction.
pub(crate) enum RoundTeam {
    Known(i64),
    TokenHash(String),
}

/// Stores `report` with its classification inside the transaction `db`,
/// or, for a round stored before with the same body, rebuilds the answer
/// it got then (and no event). On an error the caller must roll back: the
/// statements before it may have run.
///
/// The steps, each a function below: [`upsert_loop`] (the loop's row,
/// locked, with its settings, the operator's pending commands and the
/// round's run; the token checked), [`round_run`] (the run the round goes
/// to, or the replay of a round stored before), [`classify`] (the engine's
/// answer from the run's memory, STOP included), [`near_rounds`] (a
/// fingerprint's near repeats), [`queue_alert`] (when the loop enters a bad
/// state), [`write_round`] (the round, its findings, the run's new state
/// and, on PostgreSQL, the live announcement) and [`move_current_run`].
pub(crate) async fn store_round(
    db: &mut impl RoundDb,
    team: &RoundTeam,
    loop_name: &str,
    report: &RoundReport,
    now: i64,
) -> Result<Ingested, LoopsError> {
    let body_hash = report.body_hash();
    let upserted = upsert_loop(db, team, loop_name, report, now).await?;
    let run = match round_run(db, &upserted, report, &body_hash, now).await? {
        RoundRun::Replay(answer) => return Ok(Ingested { answer, event: None }),
        RoundRun::Store(run) => run,
    };
    let operator = OperatorNote { stop: upserted.pending_stop != 0, steer: upserted.pending_steer.clone() };
    let classification = classify(db, &upserted, &run, report, &operator).await?;
    let (new_state, ended) = run_after(&run, report, &operator);
    let near_seen_at = match report.fingerprint {
        Some(_) if run.last_round == 0 => Some(Vec::new()),
        Some(fingerprint) => Some(near_rounds(db, &run, report.round, fingerprint).await?),
        None => None,
    };
    if upserted.hooks > 0 {
        queue_alert(db, upserted.team_id, loop_name, &run, report.round, &classification, now).await?;
    }
    let written = WrittenRound {
        loop_id: upserted.id,
        team_id: upserted.team_id,
        loop_name,
        run: &run,
        report,
        body_hash: &body_hash,
        classification: &classification,
        operator: &operator,
        near_seen_at: near_seen_at.as_deref(),
        new_state,
        ended,
        now,
    };
    let event = write_round(db, &written).await?;
    move_current_run(db, &upserted, &run, &operator).await?;
    let answer = RoundAnswer {
        round: classification.round,
        class: classification.class,
        outcome: classification.outcome,
        seen_at: classification.seen_at,
        near_seen_at,
        advice: classification.advice,
        reason: classification.reason,
        operator,
        run: run.key,
        period: classification.period,
        consecutive: classification.consecutive,
        bound: classification.bound,
    };
    Ok(Ingested { answer, event: Some(event) })
}

/// Creates the loop on its first round and locks its row, in one
/// statement: on PostgreSQL `DO UPDATE` locks the row until commit, which
/// serialises the rounds of one loop; on SQLite the writer's transaction
/// already holds the only write lock. The same statement says whether the
/// team has an alert webhook (rounds of teams without one never look for
/// alerts) and returns the round's run (see `upsert_loop_sql` for how, on
/// PostgreSQL, it sees the latest). The loop token, when the round came
/// with one, is checked by the same statement: only a live token's team
/// gets its loop upserted, and a token's last use is touched at most once
/// per [`crate::accounts::LAST_USED_RESOLUTION_MS`].
async fn upsert_loop(
    db: &mut impl RoundDb,
    team: &RoundTeam,
    loop_name: &str,
    report: &RoundReport,
    now: i64,
) -> Result<UpsertedLoop, LoopsError> {
    let backend = db.backend();
    let run_kind = match (backend, report.run.is_some()) {
        (Backend::Postgres, _) => 0,
        (Backend::Sqlite, true) => 1,
        (Backend::Sqlite, false) => 2,
    };
    let (by_token, first) = match team {
        RoundTeam::Known(team_id) => (0, Arg::from(*team_id)),
        RoundTeam::TokenHash(hash) => (1, Arg::from(hash)),
    };
    let mut upsert_args = vec![first, Arg::from(loop_name), Arg::from(now)];
    if backend == Backend::Postgres || report.run.is_some() {
        upsert_args.push(Arg::from(report.run.as_ref()));
    }
    let upserted = db
        .optional(&UPSERT_LOOP[by_token][run_kind], upsert_args, |row| {
            let run = match (row.int(7)?, row.text(8)?, row.text(9)?, row.int(10)?, row.text(11)?) {
                (Some(id), Some(key), Some(state), Some(last_round), _) => {
                    Some(RunRow { id, key, state, last_round })
                }
                (_, _, _, _, Some(json)) => {
                    let (id, key, state, last_round) = serde_json::from_str(&json).map_err(|error| {
                        StoreError::Database(sqlx::Error::Protocol(format!(
                            "round_run gave {json:?}: {error}"
                        )))
                    })?;
                    Some(RunRow { id, key, state, last_round })
                }
                _ => None,
            };
            Ok(UpsertedLoop {
                id: row.req_int(0)?,
                stall_threshold: row.req_int(1)?,
                max_rounds: row.int(2)?,
                current_run_id: row.int(3)?,
                pending_stop: row.req_int(4)?,
                pending_steer: row.text(5)?,
                hooks: row.req_int(6)?,
                run,
                team_id: row.req_int(12)?,
                token: row.int(13)?.map(|id| (id, row.int(14).ok().flatten())),
            })
        })
        .await?;
    // No row: the token is unknown or revoked.
    let Some(upserted) = upserted else { return Err(LoopsError::Unauthorized) };
    if let Some((token_id, last_used_at)) = upserted.token {
        if last_used_at.is_none_or(|last| now - last >= crate::accounts::LAST_USED_RESOLUTION_MS) {
            db.execute(crate::accounts::TOKEN_TOUCH, args![now, token_id]).await?;
        }
    }
    Ok(upserted)
}

/// Where a round goes: a run to store it in, or the answer it got when it
/// was stored before with the same body.
enum RoundRun {
    Store(RunRow),
    Replay(RoundAnswer),
}

/// The run `report` goes to: the one the upsert returned, unless the round
/// is a replay (the same body again), a conflict (another body, a round
/// not after the run's last, an ended run: refused with 409), or round 1
/// without a run id (the loop started over); else a new run.
async fn round_run(
    db: &mut impl RoundDb,
    upserted: &UpsertedLoop,
    report: &RoundReport,
    body_hash: &str,
    now: i64,
) -> Result<RoundRun, LoopsError> {
    if let Some(run) = upserted.run.as_ref() {
        // A round after the run's last cannot be stored yet, which spares
        // the hot path (appending) this lookup.
        let stored_hash: Option<String> = if i64::from(report.round) > run.last_round {
            None
        } else {
            db.optional(
                "SELECT body_hash FROM rounds WHERE run_id = $1 AND round = $2",
                args![run.id, i64::from(report.round)],
                |row| row.req_text(0),
            )
            .await?
        };
        match stored_hash {
            Some(hash) if hash == body_hash => {
                return Ok(RoundRun::Replay(stored_answer(db, run, report.round).await?));
            }
            // Without a run id, round 1 again means the loop started over:
            // a new run, whatever the old one holds.
            _ if report.run.is_none() && report.round == 1 => {}
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
            None if run_state::is_final(&run.state) && !(run.state == STOPPED && report.exit.is_some()) => {
                return Err(LoopsError::conflict(
                    Some("run"),
                    format!(
                        "run {:?} has ended ({}); start a new run with round 1 or a new run id",
                        run.key, run.state
                    ),
                ))
            }
            None => return Ok(RoundRun::Store(run.clone())),
        }
    }
    Ok(RoundRun::Store(start_run(db, upserted.id, report.run.as_deref(), now).await?))
}

/// The engine's answer for `report`, from what the store remembers of its
/// run: its previous round and the earlier rounds of this round's state,
/// read by index, so a round costs the same however long the run (a run
/// that has just started has nothing to read). The operator's STOP
/// travels on this answer: its advice says so too, for the loop that
/// reads only `advice` (PRODUCT.md section 2).
async fn classify(
    db: &mut impl RoundDb,
    upserted: &UpsertedLoop,
    run: &RunRow,
    report: &RoundReport,
    operator: &OperatorNote,
) -> Result<Classification, LoopsError> {
    let memory =
        if run.last_round == 0 { RunMemory::default() } else { load_memory(db, run, report).await? };
    let policy = LoopPolicy {
        stall_threshold: u32::try_from(upserted.stall_threshold.max(0)).unwrap_or(u32::MAX),
        max_rounds: upserted.max_rounds.and_then(|max| u32::try_from(max).ok()),
    };
    let mut classification = classify_next(&memory, &report.engine_input(), &policy);
    if operator.stop && classification.advice != Advice::Stop {
        classification.advice = Advice::Stop;
        classification.reason = format!("the operator pressed STOP; {}", classification.reason);
    }
    Ok(classification)
}

/// The run's state after `report`, and whether the round ended it: an
/// exit ends it (done for a detection or nothing blocking, stopped for a
/// person, failed otherwise), so does the operator's STOP delivered now.
fn run_after(run: &RunRow, report: &RoundReport, operator: &OperatorNote) -> (&'static str, bool) {
    if run.state == STOPPED {
        (STOPPED, true)
    } else if let Some(exit) = report.exit {
        if exit.is_detect() || report.blocking_count() == 0 {
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
    }
}

/// Queues an alert when the loop enters a bad state with this round (not
/// on every round it stays there), in the round's transaction.
async fn queue_alert(
    db: &mut impl RoundDb,
    team_id: i64,
    loop_name: &str,
    run: &RunRow,
    round: u32,
    classification: &Classification,
    now: i64,
) -> Result<(), StoreError> {
    let Some(kind) = crate::alerts::AlertKind::of_round(
        classification.class.as_str(),
        classification.outcome.as_str(),
        classification.advice.as_str(),
    ) else {
        return Ok(());
    };
    let previous = db
        .optional(
            "SELECT class, outcome, advice FROM rounds WHERE run_id = $1 AND round < $2 ORDER BY round DESC LIMIT 1",
            args![run.id, i64::from(round)],
            |row| Ok((row.req_text(0)?, row.req_text(1)?, row.req_text(2)?)),
        )
        .await?;
    let was = previous
        .and_then(|(class, outcome, advice)| crate::alerts::AlertKind::of_round(&class, &outcome, &advice));
    if was == Some(kind) {
        return Ok(());
    }
    let team = db.one("SELECT slug FROM teams WHERE id = $1", args![team_id], |row| row.req_text(0)).await?;
    let payload = serde_json::json!({
        "type": format!("loop.{}", kind.as_str()),
        "team": team,
        "loop": loop_name,
        "run": run.key,
        "round": round,
        "class": classification.class.as_str(),
        "outcome": classification.outcome.as_str(),
        "advice": classification.advice.as_str(),
        "reason": classification.reason,
        "at": now,
    });
    db.execute(crate::alerts::ENQUEUE, args![team_id, loop_name, kind.as_str(), payload.to_string(), now])
        .await?;
    Ok(())
}

/// Everything [`write_round`] stores.
struct WrittenRound<'a> {
    loop_id: i64,
    team_id: i64,
    loop_name: &'a str,
    run: &'a RunRow,
    report: &'a RoundReport,
    body_hash: &'a str,
    classification: &'a Classification,
    operator: &'a OperatorNote,
    near_seen_at: Option<&'a [u32]>,
    new_state: &'static str,
    ended: bool,
    now: i64,
}

/// Writes the round, its findings and its run's new state, and gives back
/// the event to publish (with the round's id). On PostgreSQL these and the
/// live announcement are one statement (see [`write_round_postgres`]).
async fn write_round(db: &mut impl RoundDb, round: &WrittenRound<'_>) -> Result<RoundEvent, StoreError> {
    let (report, classification, operator) = (round.report, round.classification, round.operator);
    let current = report.engine_input();
    let keys: BTreeSet<&FindingKey> = current.findings.iter().collect();
    let blocking = keys.iter().filter(|key| key.is_blocking()).count();
    let seen_at = serde_json::to_string(&classification.seen_at).unwrap_or_else(|_| "[]".to_string());
    let finding_keys = serde_json::to_string(&current.findings).unwrap_or_else(|_| "[]".to_string());
    let quarters = report.fingerprint.map(Fingerprint::quarters);
    let round_args = args![
        round.run.id,
        round.loop_id,
        i64::from(report.round),
        &report.state,
        round.body_hash,
        report.spent.tokens,
        // Amounts travel as text and are cast by the database:
        // sqlx 0.8.6's Any driver binds a NULL f64 as a float4
        // parameter, so on PostgreSQL a round with spend after a
        // round without it failed ("incorrect binary data
        // format"). Rust prints an f64 so that it parses back to
        // the same value.
        report.spent.usd.map(|usd| usd.to_string()),
        report.spent.seconds.map(|seconds| seconds.to_string()),
        report.exit.map(|exit| exit.as_string()),
        report.error.as_ref().map(|error| error.code.clone()),
        report.error.as_ref().map(|error| error.body.clone()),
        classification.class.as_str(),
        classification.outcome.as_str(),
        classification.advice.as_str(),
        &classification.reason,
        &seen_at,
        classification.period.map(i64::from),
        i64::from(classification.consecutive),
        classification.bound.map(|bound| i64::from(bound.max_rounds)),
        blocking as i64,
        keys.len() as i64,
        i64::from(operator.stop),
        operator.steer.clone(),
        round.now,
        &finding_keys,
        report.source.as_str(),
        (!report.tool_calls.is_empty())
            .then(|| serde_json::to_string(&report.tool_calls).unwrap_or_else(|_| "[]".to_string())),
        // Amounts as text, as above.
        report.ratchet.map(|ratchet| ratchet.value.to_string()),
        report.ratchet.and_then(|ratchet| ratchet.best).map(|best| best.to_string()),
        report.ratchet.and_then(|ratchet| ratchet.stall_count).map(i64::from),
        report.fingerprint.map(Fingerprint::stored),
        quarters.map(|quarters| quarters[0]),
        quarters.map(|quarters| quarters[1]),
        quarters.map(|quarters| quarters[2]),
        quarters.map(|quarters| quarters[3]),
        round.near_seen_at.map(|near| serde_json::to_string(near).unwrap_or_else(|_| "[]".to_string())),
    ];
    let update_run = args![
        round.new_state,
        report.exit.map(|exit| exit.as_string()),
        i64::from(report.round),
        round.now,
        i64::from(round.ended),
        round.run.id
    ];
    let mut event = RoundEvent {
        id: 0,
        team_id: round.team_id,
        loop_id: round.loop_id,
        loop_name: round.loop_name.to_string(),
        run: round.run.key.clone(),
        run_state: round.new_state.to_string(),
        round: report.round,
        state: report.state.clone(),
        class: classification.class,
        outcome: classification.outcome,
        advice: classification.advice,
        blocking: count_u32(blocking),
        findings: count_u32(keys.len()),
        created_at: round.now,
    };
    event.id = match db.backend() {
        Backend::Sqlite => {
            let round_id = db.one(&INSERT_ROUND_RETURNING_ID, round_args, |row| row.req_int(0)).await?;
            insert_findings(db, round_id, &report.findings, 0).await?;
            db.execute(UPDATE_RUN, update_run).await?;
            round_id
        }
        Backend::Postgres => write_round_postgres(db, round_args, report, update_run, &event).await?,
    };
    Ok(event)
}

/// The loop row changes only when the current run moves or operator
/// commands were delivered; skipping the write otherwise keeps the hot path
/// one statement shorter.
async fn move_current_run(
    db: &mut impl RoundDb,
    upserted: &UpsertedLoop,
    run: &RunRow,
    operator: &OperatorNote,
) -> Result<(), StoreError> {
    if upserted.current_run_id != Some(run.id) || operator.stop || operator.steer.is_some() {
        db.execute(
            "UPDATE loops SET current_run_id = $1, pending_stop = 0, pending_steer = NULL WHERE id = $2",
            args![run.id, upserted.id],
        )
        .await?;
    }
    Ok(())
}

/// The loop's row after its upsert, with the round's run when the upsert
/// returned it (SQLite).
struct UpsertedLoop {
    id: i64,
    stall_threshold: i64,
    max_rounds: Option<i64>,
    current_run_id: Option<i64>,
    pending_stop: i64,
    pending_steer: Option<String>,
    hooks: i64,
    run: Option<RunRow>,
    team_id: i64,
    /// The round's loop token (id, last use), when it came with one.
    token: Option<(i64, Option<i64>)>,
}

/// What classifying `report` needs of its run: the round before it (its
/// state, finding keys and streak) and the earlier rounds that judged the
/// same state. Two lookups by index (`UNIQUE (run_id, round)` and
/// `rounds_by_run_state`), whatever the length of the run. Rounds stored
/// before `finding_keys` existed have their keys read from `findings`.
async fn load_memory(
    db: &mut impl RoundDb,
    run: &RunRow,
    report: &RoundReport,
) -> Result<RunMemory, StoreError> {
    let round = i64::from(report.round);
    let previous = db
        .optional(
            "SELECT id, round, state_digest, finding_keys, consecutive, ratchet_value, ratchet_best, \
             ratchet_stall_count FROM rounds WHERE run_id = $1 AND round < $2 ORDER BY round DESC LIMIT 1",
            args![run.id, round],
            |row| {
                let ratchet = match row.real(5)? {
                    Some(value) => Some(Ratchet {
                        value,
                        best: row.real(6)?,
                        stall_count: row.int(7)?.and_then(|count| u32::try_from(count).ok()),
                    }),
                    None => None,
                };
                Ok((
                    row.req_int(0)?,
                    row.req_int(1)?,
                    row.req_text(2)?,
                    row.text(3)?,
                    row.req_int(4)?,
                    ratchet,
                ))
            },
        )
        .await?;
    let previous = match previous {
        Some((id, number, state, keys, consecutive, ratchet)) => {
            let findings = match keys.as_deref().map(serde_json::from_str::<Vec<FindingKey>>) {
                Some(Ok(findings)) => findings,
                _ => legacy_finding_keys(db, id).await?,
            };
            Some(PreviousRound {
                round: line_number(number),
                state,
                findings,
                consecutive: u32::try_from(consecutive.max(0)).unwrap_or(u32::MAX),
                ratchet,
            })
        }
        None => None,
    };
    let seen_at = db
        .rows(
            "SELECT round FROM rounds WHERE run_id = $1 AND state_digest = $2 AND round < $3 ORDER BY round",
            args![run.id, &report.state, round],
            |row| Ok(line_number(row.req_int(0)?)),
        )
        .await?;
    Ok(RunMemory { previous, seen_at })
}

/// The earlier rounds of the run whose fingerprint is within
/// [`NEAR_BITS`] bits of `fingerprint`, ascending, at most
/// [`MAX_NEAR_SEEN`] (the latest). Two fingerprints that near share one of
/// their four 16-bit quarters, so the candidates are read by the quarters'
/// indexes ([`NEAR_CANDIDATES`] each) and then measured here.
async fn near_rounds(
    db: &mut impl RoundDb,
    run: &RunRow,
    round: u32,
    fingerprint: Fingerprint,
) -> Result<Vec<u32>, StoreError> {
    let [q0, q1, q2, q3] = fingerprint.quarters();
    let candidates = db
        .rows(&NEAR_CANDIDATES_SQL, args![run.id, q0, q1, q2, q3, i64::from(round), NEAR_CANDIDATES], |row| {
            Ok((line_number(row.req_int(0)?), Fingerprint::from_stored(row.req_int(1)?)))
        })
        .await?;
    let mut near: Vec<u32> = candidates
        .into_iter()
        .filter(|(_, candidate)| candidate.distance(fingerprint) <= NEAR_BITS)
        .map(|(round, _)| round)
        .collect();
    near.sort_unstable();
    near.dedup();
    let keep_from = near.len().saturating_sub(MAX_NEAR_SEEN);
    Ok(near.split_off(keep_from))
}

/// The finding keys of a round stored before its `finding_keys` column.
async fn legacy_finding_keys(db: &mut impl RoundDb, round_id: i64) -> Result<Vec<FindingKey>, StoreError> {
    let rows = db
        .rows(
            "SELECT target_path, start_line, end_line, target_id, severity, criterion \
             FROM findings WHERE round_id = $1 ORDER BY position",
            args![round_id],
            |row| {
                Ok((row.text(0)?, row.int(1)?, row.int(2)?, row.text(3)?, row.req_text(4)?, row.req_text(5)?))
            },
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|(path, start_line, end_line, id, severity, criterion)| {
            let target = target_from_columns(path, start_line, end_line, id);
            FindingKey::new(target, severity_from_column(&severity), criterion)
        })
        .collect())
}

/// The answer a stored round was given, rebuilt from its row.
async fn stored_answer(db: &mut impl RoundDb, run: &RunRow, round: u32) -> Result<RoundAnswer, LoopsError> {
    let corrupt = |what: &str| {
        LoopsError::Store(StoreError::Database(sqlx::Error::Protocol(format!(
            "stored round {round} of run {} has an unreadable {what}",
            run.id
        ))))
    };
    let (class, outcome, advice, reason, seen_at, period, consecutive, bound_max_rounds, stop, steer, near) =
        db.one(
            "SELECT class, outcome, advice, reason, seen_at, period, consecutive, bound_max_rounds, \
             operator_stop, operator_steer, near_seen_at FROM rounds WHERE run_id = $1 AND round = $2",
            args![run.id, i64::from(round)],
            |row| {
                Ok((
                    row.req_text(0)?,
                    row.req_text(1)?,
                    row.req_text(2)?,
                    row.req_text(3)?,
                    row.req_text(4)?,
                    row.int(5)?,
                    row.req_int(6)?,
                    row.int(7)?,
                    row.req_int(8)?,
                    row.text(9)?,
                    row.text(10)?,
                ))
            },
        )
        .await?;
    Ok(RoundAnswer {
        round,
        class: class.parse().map_err(|_| corrupt("class"))?,
        outcome: outcome.parse().map_err(|_| corrupt("outcome"))?,
        seen_at: serde_json::from_str(&seen_at).map_err(|_| corrupt("seen_at"))?,
        near_seen_at: near
            .map(|near| serde_json::from_str(&near).map_err(|_| corrupt("near_seen_at")))
            .transpose()?,
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
    db: &mut impl RoundDb,
    loop_id: i64,
    key: Option<&str>,
    now: i64,
) -> Result<RunRow, StoreError> {
    let key = match key {
        Some(key) => key.to_string(),
        None => {
            let count = db
                .one("SELECT COUNT(*) FROM runs WHERE loop_id = $1", args![loop_id], |row| row.req_int(0))
                .await?;
            let mut number = count + 1;
            loop {
                let candidate = format!("run-{number}");
                let taken = db
                    .optional(
                        "SELECT id FROM runs WHERE loop_id = $1 AND run_key = $2",
                        args![loop_id, &candidate],
                        |row| row.req_int(0),
                    )
                    .await?;
                if taken.is_none() {
                    break candidate;
                }
                number += 1;
            }
        }
    };
    let id = db
        .one(
            "INSERT INTO runs (loop_id, run_key, state, started_at, last_seen_at) VALUES ($1, $2, $3, $4, $4) RETURNING id",
            args![loop_id, &key, RUNNING, now],
            |row| row.req_int(0),
        )
        .await?;
    Ok(RunRow { id, key, state: RUNNING.to_string(), last_round: 0 })
}

/// The findings of a round, from `skip` on, in statements of at most
/// [`FINDINGS_PER_STATEMENT`] rows.
async fn insert_findings(
    db: &mut impl RoundDb,
    round_id: i64,
    findings: &[Finding],
    skip: usize,
) -> Result<(), StoreError> {
    for (chunk_index, chunk) in findings[skip..].chunks(FINDINGS_PER_STATEMENT).enumerate() {
        // `$1` is the round, repeated on every row.
        let (rows, mut values) = finding_rows(chunk, skip + chunk_index * FINDINGS_PER_STATEMENT, 2, true);
        values.insert(0, Arg::from(round_id));
        db.execute(&format!("INSERT INTO findings ({FINDING_COLUMNS}) VALUES {rows}"), values).await?;
    }
    Ok(())
}

/// The columns of `findings` in the order [`finding_rows`] gives them.
const FINDING_COLUMNS: &str =
    "round_id, position, target_path, start_line, end_line, target_id, severity, criterion, message";

/// `(...), (...)` rows of `findings` (the first at `position`) with their
/// arguments, numbered from `$first`. With `with_round`, each row starts
/// with `$1` for the round's id.
fn finding_rows(findings: &[Finding], position: usize, first: usize, with_round: bool) -> (String, Vec<Arg>) {
    use std::fmt::Write as _;
    let mut rows = String::with_capacity(findings.len() * 48);
    let mut values = Vec::with_capacity(findings.len() * 8);
    for (offset, finding) in findings.iter().enumerate() {
        rows.push_str(if offset == 0 { "(" } else { ", (" });
        if with_round {
            rows.push_str("$1, ");
        }
        let base = first + offset * 8;
        for column in 0..8 {
            let separator = if column == 0 { "" } else { ", " };
            let _ = write!(rows, "{separator}${}", base + column);
        }
        rows.push(')');
        let (path, start_line, end_line, id) = match &finding.key.target {
            Target::Code { path, start_line, end_line } => (
                Some(path.clone()),
                Some(i64::from(*start_line)),
                Some(i64::from(end_line.unwrap_or(*start_line))),
                None,
            ),
            Target::Other { id } => (None, None, None, Some(id.clone())),
        };
        values.extend(args![
            (position + offset) as i64,
            path,
            start_line,
            end_line,
            id,
            severity_column(finding.key.severity),
            &finding.key.criterion,
            &finding.message,
        ]);
    }
    (rows, values)
}

/// `sql` with every `$N` renumbered `$(N + by)`, to place it after the
/// `by` arguments of another statement.
fn shift_params(sql: &str, by: usize) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        match rest[..digits].parse::<usize>() {
            Ok(number) => out.push_str(&(number + by).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// On PostgreSQL the round, its findings (up to a statement's worth), its
/// run's new state and the live announcement are one statement: one round
/// trip instead of four. The announcement carries the new round's id,
/// which only the statement knows. Returns the round's id.
async fn write_round_postgres(
    db: &mut impl RoundDb,
    round_args: Vec<Arg>,
    report: &RoundReport,
    update_run: Vec<Arg>,
    event: &RoundEvent,
) -> Result<i64, StoreError> {
    let mut values = round_args;
    let mut sql = format!("WITH r AS ({INSERT_ROUND} RETURNING id)");
    let first = report.findings.len().min(FINDINGS_PER_STATEMENT);
    if first > 0 {
        let (rows, finding_values) = finding_rows(&report.findings[..first], 0, values.len() + 1, false);
        values.extend(finding_values);
        sql.push_str(&format!(
            ", f AS (INSERT INTO findings ({FINDING_COLUMNS}) SELECT r.id, v.* FROM r CROSS JOIN (VALUES {rows}) \
             AS v(position, target_path, start_line, end_line, target_id, severity, criterion, message))"
        ));
    }
    sql.push_str(&format!(", u AS ({} RETURNING id)", shift_params(UPDATE_RUN, values.len())));
    values.extend(update_run);
    // Sent inside the transaction, the notification reaches other
    // instances only if the round is committed (see `crate::live`).
    let payload = serde_json::to_string(event).unwrap_or_default();
    sql.push_str(&format!(
        " SELECT r.id, CAST(pg_notify(${}, CAST(jsonb_set(CAST(${} AS jsonb), '{{id}}', to_jsonb(r.id)) AS text)) AS text) \
         FROM r CROSS JOIN u",
        values.len() + 1,
        values.len() + 2
    ));
    values.extend(args![crate::live::NOTIFY_CHANNEL, payload]);
    let round_id = db.one(&sql, values, |row| row.req_int(0)).await?;
    insert_findings(db, round_id, &report.findings, first).await?;
    Ok(round_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_shift_past_another_statements() {
        assert_eq!(shift_params("a = $1, b = $4, c = $4, d = $10", 25), "a = $26, b = $29, c = $29, d = $35");
        // A `$` without a number is left alone.
        assert_eq!(shift_params("x = '$' || $2", 3), "x = '$' || $5");
        assert_eq!(shift_params("no parameters", 7), "no parameters");
    }

    #[test]
    fn finding_rows_number_their_arguments_from_where_they_start() {
        let report = RoundReport::from_json(
            br#"{"round": 1, "state": "s", "findings": [
                {"target": {"path": "a.rs", "start_line": 3}, "severity": "blocking", "criterion": "c", "message": "m"},
                {"target": {"id": "check"}, "severity": "info", "criterion": "d"}]}"#,
        )
        .expect("a valid round");
        let (rows, values) = finding_rows(&report.findings, 5, 2, true);
        assert_eq!(
            rows,
            "($1, $2, $3, $4, $5, $6, $7, $8, $9), ($1, $10, $11, $12, $13, $14, $15, $16, $17)"
        );
        assert_eq!(values.len(), 16);
        assert!(matches!(values[0], Arg::Int(5)), "positions start where the chunk does");
        assert!(matches!(values[8], Arg::Int(6)));
        assert!(matches!(values[3], Arg::Int(3)), "a single line ends where it starts");
        assert!(matches!(values[9], Arg::NullText), "an id target has no path");
        let (rows, _) = finding_rows(&report.findings[..1], 0, 26, false);
        assert_eq!(rows, "($26, $27, $28, $29, $30, $31, $32, $33)");
    }
}
