//! The spans of an export, kept until their rounds are complete, and those
//! rounds stored through the ingest path, all in one transaction.
//!
//! Written once over `loops::db::RoundDb`, as the ingest path is: on SQLite
//! the work runs on the writer of rounds (one connection, one thread), on
//! PostgreSQL in a sqlx transaction of the request. Every statement uses
//! the same SQL on both.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::mapping::{MappedSpan, SpanDetail, SpanRole};
use super::rounds::{plan_rounds, RunClock, TraceEnd, WaitingSpan};
use crate::loops::db::{args, Arg, RoundDb, SqlxDb};
use crate::loops::ingest::{store_round, RoundTeam};
use crate::loops::{LoopsError, RoundEvent, RoundReport};
use crate::store::{Backend, Store, StoreError};

/// The heartbeat window of a loop that does not exist yet (the loops
/// table's default).
pub const DEFAULT_WINDOW_MS: i64 = 600_000;

/// How many spans go into one INSERT: 14 parameters each.
const SPANS_PER_STATEMENT: usize = 60;
/// How many span ids one lookup of spans already stored names.
const SPANS_PER_LOOKUP: usize = 200;

/// What storing an export did.
#[derive(Debug, Default)]
pub struct Stored {
    /// Spans that arrived after their round was stored, and why.
    pub late: u64,
    pub late_problems: Vec<String>,
    /// The rounds stored, for the live streams.
    pub events: Vec<RoundEvent>,
}

/// One transaction's worth of work on the traces' tables.
enum Work {
    /// An export's spans, and the rounds they complete.
    Keep { team_id: i64, spans: Vec<MappedSpan> },
    /// A trace silent for the heartbeat window, given its run from what
    /// there is, and that run's rounds.
    Resolve { team_id: i64, trace_id: String },
    /// A run's rounds that waited for time alone.
    Materialise { run: i64 },
}

impl Store {
    /// Keeps `spans` of team `team_id`, arrived at `now`, and stores every
    /// round they complete that has settled for `settle_ms`, in one
    /// transaction.
    pub async fn ingest_spans(
        &self,
        team_id: i64,
        spans: Vec<MappedSpan>,
        now: i64,
        settle_ms: i64,
    ) -> Result<Stored, StoreError> {
        self.traces_transaction(Work::Keep { team_id, spans }, now, settle_ms).await
    }

    /// Stores the rounds that waited for time alone: those whose completing
    /// span has now settled, and the last rounds of runs and traces silent
    /// for their heartbeat window. Returns the stored rounds' events.
    pub async fn sweep_traces(&self, now: i64, settle_ms: i64) -> Result<Vec<RoundEvent>, StoreError> {
        let unresolved: Vec<(i64, String)> = sqlx::query_as(
            "SELECT DISTINCT team_id, trace_id FROM trace_spans \
             WHERE round IS NULL AND traced_run_id IS NULL AND arrived_at <= $1 LIMIT 200",
        )
        .bind(now - DEFAULT_WINDOW_MS)
        .fetch_all(self.pool())
        .await?;
        let mut events = Vec::new();
        for (team_id, trace_id) in unresolved {
            let stored = self.traces_transaction(Work::Resolve { team_id, trace_id }, now, settle_ms).await?;
            events.extend(stored.events);
        }
        let runs: Vec<(i64,)> =
            sqlx::query_as("SELECT id FROM traced_runs WHERE due_at <= $1 ORDER BY due_at LIMIT 200")
                .bind(now)
                .fetch_all(self.pool())
                .await?;
        for (run,) in runs {
            let stored = self.traces_transaction(Work::Materialise { run }, now, settle_ms).await?;
            events.extend(stored.events);
        }
        Ok(events)
    }

    /// Forgets spans whose rounds were stored (or that were dropped) before
    /// `before`: a retry of theirs could only come from an exporter that
    /// has been retrying for longer.
    pub async fn forget_stored_spans(&self, before: i64) -> Result<u64, StoreError> {
        let result = sqlx::query("DELETE FROM trace_spans WHERE round IS NOT NULL AND arrived_at < $1")
            .bind(before)
            .execute(self.pool())
            .await?;
        Ok(result.rows_affected())
    }

    /// Does `work` in one write transaction: on SQLite on the writer of
    /// rounds, on PostgreSQL in a transaction of this task.
    async fn traces_transaction(&self, work: Work, now: i64, settle_ms: i64) -> Result<Stored, StoreError> {
        match (self.backend(), self.sqlite_writer()) {
            (Backend::Sqlite, Some(writer)) => {
                writer
                    .run(move |connection| {
                        crate::loops::writer::in_transaction(connection, |db| {
                            crate::loops::db::run_now(perform(db, &work, now, settle_ms))
                        })
                    })
                    .await?
            }
            (Backend::Sqlite, None) => Err(StoreError::Database(sqlx::Error::Protocol(
                "this SQLite store has no writer of rounds".to_string(),
            ))),
            (Backend::Postgres, _) => {
                let mut tx = self.begin_write().await?;
                let result = {
                    let mut db = SqlxDb { tx: &mut tx };
                    perform(&mut db, &work, now, settle_ms).await
                };
                match result {
                    Ok(stored) => {
                        tx.commit().await?;
                        Ok(stored)
                    }
                    Err(error) => {
                        let _ = tx.rollback().await;
                        Err(error)
                    }
                }
            }
        }
    }
}

async fn perform(db: &mut impl RoundDb, work: &Work, now: i64, settle_ms: i64) -> Result<Stored, StoreError> {
    match work {
        Work::Keep { team_id, spans } => keep_spans(db, *team_id, spans, now, settle_ms).await,
        Work::Resolve { team_id, trace_id } => {
            let mut stored = Stored::default();
            lock_trace(db, *team_id, trace_id).await?;
            if let Some(run) = resolve_trace(db, *team_id, trace_id, now, true).await? {
                materialise(db, run, now, settle_ms, &[], &mut stored.events).await?;
            }
            Ok(stored)
        }
        Work::Materialise { run } => {
            let mut stored = Stored::default();
            materialise(db, *run, now, settle_ms, &[], &mut stored.events).await?;
            Ok(stored)
        }
    }
}

/// The export's spans kept, the traces they complete given their runs, and
/// the rounds of those runs that are ready stored.
async fn keep_spans(
    db: &mut impl RoundDb,
    team_id: i64,
    spans: &[MappedSpan],
    now: i64,
    settle_ms: i64,
) -> Result<Stored, StoreError> {
    let mut stored = Stored::default();
    let trace_ids: BTreeSet<&str> = spans.iter().map(|span| span.trace_id.as_str()).collect();
    // Exports of the same traces take their turns, before any other lock:
    // on PostgreSQL two of them could otherwise each hold what the other
    // waits for (a span row one inserted, a run row the other locked).
    // SQLite has one writer.
    for trace_id in &trace_ids {
        lock_trace(db, team_id, trace_id).await?;
    }
    // The runs of the traces already given one, locked in one order so
    // that concurrent exports of the same runs wait for each other rather
    // than deadlock.
    let mut run_of: HashMap<&str, i64> = HashMap::new();
    for trace_id in &trace_ids {
        if let Some(run) = db
            .optional(
                "SELECT traced_run_id FROM traced_traces WHERE team_id = $1 AND trace_id = $2",
                args![team_id, *trace_id],
                |row| row.req_int(0),
            )
            .await?
        {
            run_of.insert(trace_id, run);
        }
    }
    let known_runs: BTreeSet<i64> = run_of.values().copied().collect();
    let mut sealed: HashMap<i64, (i64, i64, String)> = HashMap::new();
    for run in &known_runs {
        let row = db
            .one(
                "UPDATE traced_runs SET last_span_at = $1 WHERE id = $2 RETURNING sealed_ns, last_round, run_key",
                args![now, *run],
                |row| Ok((row.req_int(0)?, row.req_int(1)?, row.req_text(2)?)),
            )
            .await?;
        sealed.insert(*run, row);
    }

    // Each span once: a span sent again (a retry) is already here.
    let fresh = fresh_spans(db, team_id, spans).await?;
    // A fresh span that starts before its run's seal is too late; agent and
    // root spans only say that their trace ended. Spans of traces without a
    // run wait in the table, where deciding the run reads them.
    let mut rows: Vec<(&MappedSpan, Option<i64>, Option<i64>)> = Vec::with_capacity(fresh.len());
    let mut waiting_rows: Vec<(&MappedSpan, Option<i64>, Option<i64>)> = Vec::new();
    let mut fresh_of_run: BTreeMap<i64, Vec<&MappedSpan>> = BTreeMap::new();
    for span in fresh {
        let marker = matches!(span.role, SpanRole::Agent | SpanRole::Root);
        let Some(run) = run_of.get(span.trace_id.as_str()).copied() else {
            waiting_rows.push((span, None, marker.then_some(0)));
            continue;
        };
        if marker {
            db.execute(
                "UPDATE traced_traces SET ended_at = COALESCE(ended_at, $1), \
                 ended_ns = CASE WHEN ended_ns IS NULL OR ended_ns < $2 THEN $2 ELSE ended_ns END \
                 WHERE team_id = $3 AND trace_id = $4",
                args![now, span.end_ns, team_id, &span.trace_id],
            )
            .await?;
        }
        let (sealed_ns, last_round, run_key) = &sealed[&run];
        if !marker && span.start_ns < *sealed_ns {
            stored.late += 1;
            if stored.late_problems.len() < 3 {
                stored.late_problems.push(format!(
                    "span {} arrived after its round was stored (run {run_key:?} is at round {last_round})",
                    span.span_id
                ));
            }
            rows.push((span, Some(run), Some(0)));
            continue;
        }
        fresh_of_run.entry(run).or_default().push(span);
    }
    insert_spans(db, team_id, &waiting_rows, now).await?;

    // Traces that now know their run, then every touched run's rounds: the
    // fresh spans of runs known before this export are planned with the
    // waiting ones and written once, with the round that took them.
    let mut runs: BTreeSet<i64> = known_runs;
    for trace_id in &trace_ids {
        if run_of.contains_key(trace_id) {
            continue;
        }
        if let Some(run) = resolve_trace(db, team_id, trace_id, now, false).await? {
            runs.insert(run);
        }
    }
    for run in runs {
        let fresh = fresh_of_run.remove(&run).unwrap_or_default();
        let taken = materialise(db, run, now, settle_ms, &fresh, &mut stored.events).await?;
        for span in fresh {
            let round = if matches!(span.role, SpanRole::Agent | SpanRole::Root) {
                Some(0)
            } else {
                taken.get(&(span.trace_id.clone(), span.span_id.clone())).copied()
            };
            rows.push((span, Some(run), round));
        }
    }
    insert_spans(db, team_id, &rows, now).await?;
    Ok(stored)
}

/// The spans of `spans` not stored before.
async fn fresh_spans<'s>(
    db: &mut impl RoundDb,
    team_id: i64,
    spans: &'s [MappedSpan],
) -> Result<Vec<&'s MappedSpan>, StoreError> {
    let mut by_trace: BTreeMap<&str, Vec<&MappedSpan>> = BTreeMap::new();
    for span in spans {
        by_trace.entry(span.trace_id.as_str()).or_default().push(span);
    }
    let mut known: BTreeSet<(String, String)> = BTreeSet::new();
    for (trace_id, spans) in &by_trace {
        for chunk in spans.chunks(SPANS_PER_LOOKUP) {
            let list = (0..chunk.len()).map(|at| format!("${}", at + 3)).collect::<Vec<_>>().join(", ");
            let mut values = args![team_id, *trace_id];
            values.extend(chunk.iter().map(|span| Arg::from(&span.span_id)));
            let found = db
                .rows(
                    &format!(
                        "SELECT span_id FROM trace_spans WHERE team_id = $1 AND trace_id = $2 AND span_id IN ({list})"
                    ),
                    values,
                    |row| row.req_text(0),
                )
                .await?;
            known.extend(found.into_iter().map(|span_id| (trace_id.to_string(), span_id)));
        }
    }
    Ok(spans.iter().filter(|span| !known.contains(&(span.trace_id.clone(), span.span_id.clone()))).collect())
}

/// Writes spans with their run and round (NULL: waiting). Only a waiting
/// span keeps its detail.
async fn insert_spans(
    db: &mut impl RoundDb,
    team_id: i64,
    rows: &[(&MappedSpan, Option<i64>, Option<i64>)],
    now: i64,
) -> Result<(), StoreError> {
    for chunk in rows.chunks(SPANS_PER_STATEMENT) {
        let mut values: Vec<Arg> = Vec::with_capacity(chunk.len() * 14);
        for (span, run, round) in chunk {
            let detail = (round.is_none() && matches!(span.role, SpanRole::Model | SpanRole::Tool))
                .then(|| serde_json::to_string(&span.detail).unwrap_or_else(|_| "{}".to_string()));
            values.extend(args![
                team_id,
                &span.trace_id,
                &span.span_id,
                span.role.as_str(),
                i64::from(span.root),
                span.start_ns,
                span.end_ns,
                span.agent_name.as_ref(),
                span.conversation_id.as_ref(),
                &span.service_name,
                detail,
                now,
                *run,
                *round,
            ]);
        }
        // A concurrent export of the same span (PostgreSQL) may have
        // written it first: it is the same span.
        db.execute(
            &format!(
                "INSERT INTO trace_spans (team_id, trace_id, span_id, kind, root, start_ns, end_ns, agent_name, \
                 conversation_id, service_name, detail, arrived_at, traced_run_id, round) VALUES {} \
                 ON CONFLICT (team_id, trace_id, span_id) DO NOTHING",
                span_rows(chunk.len())
            ),
            values,
        )
        .await?;
    }
    Ok(())
}

/// Waits for, then holds until the transaction ends, the turn of the trace
/// `trace_id` (PostgreSQL; SQLite's single writer needs none).
async fn lock_trace(db: &mut impl RoundDb, team_id: i64, trace_id: &str) -> Result<(), StoreError> {
    if db.backend() == Backend::Postgres {
        db.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            args![format!("fixedpoint-trace:{team_id}:{trace_id}")],
        )
        .await?;
    }
    Ok(())
}

/// `($1, ..., $14), ($15, ...)`: a row of fourteen parameters per span,
/// for `count` spans (built once per count).
fn span_rows(count: usize) -> &'static str {
    static ROWS: std::sync::LazyLock<Vec<String>> =
        std::sync::LazyLock::new(|| (0..=SPANS_PER_STATEMENT).map(span_rows_of).collect());
    &ROWS[count]
}

fn span_rows_of(count: usize) -> String {
    (0..count)
        .map(|row| {
            format!(
                "({})",
                (1..=14).map(|column| format!("${}", row * 14 + column)).collect::<Vec<_>>().join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a span of a trace says about the trace's loop and run.
struct TraceHint {
    role: SpanRole,
    root: bool,
    agent_name: Option<String>,
    conversation_id: Option<String>,
    service_name: Option<String>,
    end_ns: i64,
    arrived_at: i64,
}

/// Gives the trace `trace_id` its run, if its spans can say which: a span
/// that names its agent, or the trace's root span. With `silent` (the trace
/// has said nothing for the heartbeat window) the run is decided from what
/// there is. Returns the run when the trace has one now.
async fn resolve_trace(
    db: &mut impl RoundDb,
    team_id: i64,
    trace_id: &str,
    now: i64,
    silent: bool,
) -> Result<Option<i64>, StoreError> {
    if let Some(run) = db
        .optional(
            "SELECT traced_run_id FROM traced_traces WHERE team_id = $1 AND trace_id = $2",
            args![team_id, trace_id],
            |row| row.req_int(0),
        )
        .await?
    {
        // Decided by an export that committed after this one began: its
        // spans join that run too.
        db.execute(
            "UPDATE trace_spans SET traced_run_id = $1 WHERE team_id = $2 AND trace_id = $3 AND traced_run_id IS NULL",
            args![run, team_id, trace_id],
        )
        .await?;
        return Ok(Some(run));
    }
    let hints = db
        .rows(
            "SELECT kind, root, agent_name, conversation_id, service_name, end_ns, arrived_at FROM trace_spans \
             WHERE team_id = $1 AND trace_id = $2",
            args![team_id, trace_id],
            |row| {
                Ok(TraceHint {
                    role: SpanRole::from_column(&row.req_text(0)?),
                    root: row.req_int(1)? != 0,
                    agent_name: row.text(2)?,
                    conversation_id: row.text(3)?,
                    service_name: row.text(4)?,
                    end_ns: row.req_int(5)?,
                    arrived_at: row.req_int(6)?,
                })
            },
        )
        .await?;
    let decided = hints.iter().any(|hint| hint.root || hint.agent_name.is_some());
    if !decided && !silent {
        return Ok(None);
    }
    // The agent's span speaks first, then any span, then the service of a
    // model call, then any service.
    let first = |role: Option<SpanRole>, pick: fn(&TraceHint) -> Option<&String>| {
        hints.iter().filter(|hint| role.is_none_or(|role| hint.role == role)).find_map(pick).cloned()
    };
    let loop_name = first(Some(SpanRole::Agent), |hint| hint.agent_name.as_ref())
        .or_else(|| first(None, |hint| hint.agent_name.as_ref()))
        .or_else(|| first(Some(SpanRole::Model), |hint| hint.service_name.as_ref()))
        .or_else(|| first(None, |hint| hint.service_name.as_ref()))
        .unwrap_or_else(|| "unknown_service".to_string());
    let run_key = first(Some(SpanRole::Agent), |hint| hint.conversation_id.as_ref())
        .or_else(|| first(None, |hint| hint.conversation_id.as_ref()))
        .unwrap_or_else(|| trace_id.to_string());
    // The run heard last from the trace when its latest span arrived (the
    // sweeper decides long after that).
    let last_span_at = hints.iter().map(|hint| hint.arrived_at).max().unwrap_or(now);
    let run = db
        .one(
            "INSERT INTO traced_runs (team_id, loop_name, run_key, last_span_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (team_id, loop_name, run_key) DO UPDATE SET last_span_at = \
             CASE WHEN excluded.last_span_at > traced_runs.last_span_at THEN excluded.last_span_at \
             ELSE traced_runs.last_span_at END \
             RETURNING id",
            args![team_id, &loop_name, &run_key, last_span_at],
            |row| row.req_int(0),
        )
        .await?;
    let markers = || hints.iter().filter(|hint| matches!(hint.role, SpanRole::Agent | SpanRole::Root));
    let ended_ns = markers().map(|hint| hint.end_ns).max();
    let ended_at = markers().map(|hint| hint.arrived_at).min();
    // Two exports of a new trace (PostgreSQL) may both decide; the first
    // to commit wins, and the other takes its run.
    db.execute(
        "INSERT INTO traced_traces (team_id, trace_id, traced_run_id, ended_ns, ended_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (team_id, trace_id) DO NOTHING",
        args![team_id, trace_id, run, ended_ns, ended_at],
    )
    .await?;
    let run = db
        .one(
            "SELECT traced_run_id FROM traced_traces WHERE team_id = $1 AND trace_id = $2",
            args![team_id, trace_id],
            |row| row.req_int(0),
        )
        .await?;
    db.execute(
        "UPDATE trace_spans SET traced_run_id = $1 WHERE team_id = $2 AND trace_id = $3 AND traced_run_id IS NULL",
        args![run, team_id, trace_id],
    )
    .await?;
    Ok(Some(run))
}

/// The run that rounds are stored for, and what arrived with this export.
struct RunTarget<'a> {
    team_id: i64,
    loop_name: &'a str,
    run_key: &'a str,
    now: i64,
    unwritten: &'a BTreeSet<(String, String)>,
}

/// A planned round whose report is valid.
struct ReadyRound {
    report: RoundReport,
    spans: Vec<(String, String)>,
}

/// What storing a run's rounds did.
#[derive(Default)]
struct StoredRounds {
    last_round: i64,
    events: Vec<RoundEvent>,
    /// Fresh spans and the round that took them.
    taken: Vec<((String, String), i64)>,
    /// Spans of refused rounds.
    dropped: Vec<(String, String)>,
}

/// Stores `rounds` after round `last_round` of the run. Without `each`, the
/// first refusal answers `None` (the caller rolls back and tries again with
/// `each`); with `each`, every round has its own savepoint and a refused one
/// drops its spans.
async fn store_rounds(
    db: &mut impl RoundDb,
    target: &RunTarget<'_>,
    rounds: &[ReadyRound],
    mut last_round: i64,
    each: bool,
) -> Result<Option<StoredRounds>, StoreError> {
    let mut stored = StoredRounds::default();
    for ReadyRound { report, spans } in rounds {
        let mut report = report.clone();
        report.round = u32::try_from(last_round + 1).unwrap_or(u32::MAX);
        if each {
            db.execute("SAVEPOINT traced_round", Vec::new()).await?;
        }
        match store_round(db, &RoundTeam::Known(target.team_id), target.loop_name, &report, target.now).await
        {
            Ok(ingested) => {
                if each {
                    db.execute("RELEASE SAVEPOINT traced_round", Vec::new()).await?;
                }
                stored.events.extend(ingested.event);
                last_round += 1;
                // The round's spans already written are marked with it, one
                // statement per trace (a round's spans share one, mostly).
                let (now_taken, written): (Vec<_>, Vec<_>) =
                    spans.iter().cloned().partition(|key| target.unwritten.contains(key));
                let mut by_trace: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                for (trace_id, span_id) in &written {
                    by_trace.entry(trace_id.as_str()).or_default().push(span_id.as_str());
                }
                for (trace_id, span_ids) in by_trace {
                    for chunk in span_ids.chunks(SPANS_PER_LOOKUP) {
                        let list =
                            (0..chunk.len()).map(|at| format!("${}", at + 4)).collect::<Vec<_>>().join(", ");
                        let mut values = args![last_round, target.team_id, trace_id];
                        values.extend(chunk.iter().map(|span_id| Arg::from(*span_id)));
                        db.execute(
                            &format!(
                                "UPDATE trace_spans SET round = $1, detail = NULL \
                                 WHERE team_id = $2 AND trace_id = $3 AND span_id IN ({list})"
                            ),
                            values,
                        )
                        .await?;
                    }
                }
                stored.taken.extend(now_taken.into_iter().map(|key| (key, last_round)));
            }
            Err(LoopsError::Store(error)) => return Err(error),
            Err(_) if !each => return Ok(None),
            Err(refusal) => {
                db.execute("ROLLBACK TO SAVEPOINT traced_round", Vec::new()).await?;
                db.execute("RELEASE SAVEPOINT traced_round", Vec::new()).await?;
                tracing::warn!(
                    loop_name = target.loop_name,
                    run_key = target.run_key,
                    %refusal,
                    "traces: a round was refused; its spans were dropped"
                );
                stored.dropped.extend(spans.iter().cloned());
            }
        }
    }
    stored.last_round = last_round;
    Ok(Some(stored))
}

/// Stores the ready rounds of the traced run `run`, each in a savepoint: a
/// round the ingest path refuses (its run was stopped, say) drops its spans
/// and takes no other round with it. `fresh` are spans of the run that
/// arrived now and are not written yet; the answer says which round took
/// each of them (0: dropped), and the caller writes them so.
async fn materialise(
    db: &mut impl RoundDb,
    run: i64,
    now: i64,
    settle_ms: i64,
    fresh: &[&MappedSpan],
    events: &mut Vec<RoundEvent>,
) -> Result<HashMap<(String, String), i64>, StoreError> {
    let (team_id, loop_name, run_key, mut last_round, sealed_ns, last_span_at) = db
        .one(
            // An update that changes nothing locks the run's row
            // (PostgreSQL) so two exports of the run plan it one after the
            // other; SQLite has one writer anyway.
            "UPDATE traced_runs SET last_round = last_round WHERE id = $1 \
             RETURNING team_id, loop_name, run_key, last_round, sealed_ns, last_span_at",
            args![run],
            |row| {
                Ok((
                    row.req_int(0)?,
                    row.req_text(1)?,
                    row.req_text(2)?,
                    row.req_int(3)?,
                    row.req_int(4)?,
                    row.req_int(5)?,
                ))
            },
        )
        .await?;
    let mut waiting = db
        .rows(
            "SELECT trace_id, span_id, kind, start_ns, end_ns, arrived_at, detail FROM trace_spans \
             WHERE traced_run_id = $1 AND round IS NULL ORDER BY start_ns, span_id",
            args![run],
            |row| {
                let detail: SpanDetail =
                    row.text(6)?.and_then(|text| serde_json::from_str(&text).ok()).unwrap_or_default();
                Ok(WaitingSpan {
                    trace_id: row.req_text(0)?,
                    span_id: row.req_text(1)?,
                    role: SpanRole::from_column(&row.req_text(2)?),
                    start_ns: row.req_int(3)?,
                    end_ns: row.req_int(4)?,
                    arrived_at: row.req_int(5)?,
                    detail,
                })
            },
        )
        .await?;
    let unwritten: BTreeSet<(String, String)> =
        fresh.iter().map(|span| (span.trace_id.clone(), span.span_id.clone())).collect();
    waiting.extend(fresh.iter().filter(|span| matches!(span.role, SpanRole::Model | SpanRole::Tool)).map(
        |span| WaitingSpan {
            trace_id: span.trace_id.clone(),
            span_id: span.span_id.clone(),
            role: span.role,
            start_ns: span.start_ns,
            end_ns: span.end_ns,
            arrived_at: now,
            detail: span.detail.clone(),
        },
    ));
    let mut taken: HashMap<(String, String), i64> = HashMap::new();
    if waiting.is_empty() {
        // Nothing waits: nothing is due.
        db.execute("UPDATE traced_runs SET due_at = NULL WHERE id = $1 AND due_at IS NOT NULL", args![run])
            .await?;
        return Ok(taken);
    }
    let window_ms = db
        .optional(
            "SELECT heartbeat_window_ms FROM loops WHERE team_id = $1 AND name = $2",
            args![team_id, &loop_name],
            |row| row.req_int(0),
        )
        .await?
        .unwrap_or(DEFAULT_WINDOW_MS);
    let mut ends: HashMap<String, TraceEnd> = HashMap::new();
    let traces: BTreeSet<&str> = waiting.iter().map(|span| span.trace_id.as_str()).collect();
    for trace_id in traces {
        let end = db
            .optional(
                "SELECT ended_ns, ended_at FROM traced_traces WHERE team_id = $1 AND trace_id = $2",
                args![team_id, trace_id],
                |row| Ok(row.int(0)?.zip(row.int(1)?)),
            )
            .await?
            .flatten();
        if let Some((end_ns, arrived_at)) = end {
            ends.insert(trace_id.to_string(), TraceEnd { end_ns, arrived_at });
        }
    }
    // Agent and root spans of this export end their traces too.
    for span in fresh.iter().filter(|span| matches!(span.role, SpanRole::Agent | SpanRole::Root)) {
        let end =
            ends.entry(span.trace_id.clone()).or_insert(TraceEnd { end_ns: span.end_ns, arrived_at: now });
        end.end_ns = end.end_ns.max(span.end_ns);
    }
    let clock = RunClock { run_key: run_key.clone(), sealed_ns, last_span_at, now, settle_ms, window_ms };
    let plan = plan_rounds(&waiting, &ends, &clock);
    let due_at = plan.due_at;
    let sealed_ns = plan.rounds.iter().map(|planned| planned.sealed_ns).fold(sealed_ns, i64::max);
    let mut dropped = plan.dropped.clone();
    let mut rounds = Vec::with_capacity(plan.rounds.len());
    for planned in plan.rounds {
        match planned.report {
            Ok(report) => rounds.push(ReadyRound { report, spans: planned.spans }),
            Err(problem) => {
                tracing::warn!(loop_name, run_key, %problem, "traces: spans that make no valid round were dropped");
                dropped.extend(planned.spans);
            }
        }
    }
    let target = RunTarget { team_id, loop_name: &loop_name, run_key: &run_key, now, unwritten: &unwritten };
    // The rounds go in under one savepoint; only when the ingest path
    // refuses one are they stored again one savepoint each, so that the
    // refused round takes no other with it (a savepoint is a round trip on
    // PostgreSQL).
    db.execute("SAVEPOINT traced_rounds", Vec::new()).await?;
    let stored = match store_rounds(db, &target, &rounds, last_round, false).await? {
        Some(stored) => {
            db.execute("RELEASE SAVEPOINT traced_rounds", Vec::new()).await?;
            stored
        }
        None => {
            db.execute("ROLLBACK TO SAVEPOINT traced_rounds", Vec::new()).await?;
            db.execute("RELEASE SAVEPOINT traced_rounds", Vec::new()).await?;
            match store_rounds(db, &target, &rounds, last_round, true).await? {
                Some(stored) => stored,
                None => unreachable!("with a savepoint per round no refusal escapes"),
            }
        }
    };
    last_round = stored.last_round;
    events.extend(stored.events);
    taken.extend(stored.taken);
    dropped.extend(stored.dropped);
    for key in &dropped {
        if unwritten.contains(key) {
            taken.insert(key.clone(), 0);
            continue;
        }
        let (trace_id, span_id) = key;
        db.execute(
            "UPDATE trace_spans SET round = 0, detail = NULL WHERE team_id = $1 AND trace_id = $2 AND span_id = $3",
            args![team_id, trace_id, span_id],
        )
        .await?;
    }
    if !dropped.is_empty() {
        tracing::info!(
            loop_name,
            run_key,
            dropped = dropped.len(),
            "traces: spans that joined no round were dropped"
        );
    }
    db.execute(
        "UPDATE traced_runs SET last_round = $1, sealed_ns = $2, dropped_spans = dropped_spans + $3, due_at = $4 \
         WHERE id = $5",
        args![last_round, sealed_ns, dropped.len() as i64, due_at, run],
    )
    .await?;
    Ok(taken)
}
