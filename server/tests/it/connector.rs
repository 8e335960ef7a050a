//! `fixedpoint push` against a real server started on port 0, on both
//! databases, with loop directories from `tests/fixtures/loops/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::TestDb;
use server::config::Config;
use server::connector::{self, ConnectorError, PushOptions};
use server::site;
use server::store::Store;
use server::web::AppState;
use tokio::net::TcpListener;

/// Starts the whole site on an ephemeral port and returns its base URL.
async fn start_server(db: &TestDb) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = db.url.clone();
    let config = Config::from_lookup(|name| (name == "DATABASE_URL").then(|| url.clone())).unwrap();
    let app = site::router(AppState::new(config, db.store.clone()));
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{addr}")
}

/// Copies the fixture loop `name` to `<temp>/.loop/<name>`.
fn loop_dir(temp: &Path, name: &str) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/loops").join(name);
    let target = temp.join(".loop").join(name);
    std::fs::create_dir_all(&target).unwrap();
    for entry in std::fs::read_dir(source).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), target.join(entry.file_name())).unwrap();
    }
    target
}

struct Setup {
    store: Store,
    team_id: i64,
    options: PushOptions,
    _temp: tempfile::TempDir,
    _db: TestDb,
}

async fn setup(db: TestDb, fixture: &str) -> Setup {
    let team = db.store.create_team("acme").await.unwrap();
    let token = db.store.create_loop_token("acme", "push").await.unwrap().secret;
    let to = start_server(&db).await;
    let temp = tempfile::tempdir().unwrap();
    let dir = loop_dir(temp.path(), fixture);
    Setup {
        store: db.store.clone(),
        team_id: team.id,
        options: PushOptions { dir, to, token },
        _temp: temp,
        _db: db,
    }
}

fn append(path: &Path, text: &str) {
    let mut journal = std::fs::read_to_string(path).unwrap();
    journal.push_str(text);
    std::fs::write(path, journal).unwrap();
}

const FIFTH_ENTRY: &str = "\n## Iteration 5 — 2026-11-29 23:00\n\n- **Unit**: docs/faq-2.md\n\
                           - **Did**: fixed the last anchor; commit 7ab9e01\n\
                           - **Verify**: make linkcheck: exit 0, 0 failed\n- **Flags**: none\n";

both_backends! {
    async fn push_sends_each_entry_once_and_resumes_after_new_ones(db: TestDb) {
        let s = setup(db, "docs-refresh").await;
        let client = connector::http_client().unwrap();
        let first = connector::push_once(&client, &s.options).await.unwrap();
        assert!(first.problems.is_empty(), "{:?}", first.problems);
        assert!(first.rejected.is_empty(), "{:?}", first.rejected);
        let sent: Vec<u32> = first.sent.iter().map(|round| round.round).collect();
        assert_eq!(sent, [1, 2, 3, 4]);
        let classes: Vec<&str> = first.sent.iter().map(|round| round.class.as_str()).collect();
        assert_eq!(classes, ["first", "converging", "stalled", "thrashing"]);
        assert_eq!(first.sent[3].advice, "stop", "two rounds without progress reach the threshold");

        // A second push finds everything stored and only says it is alive.
        let again = connector::push_once(&client, &s.options).await.unwrap();
        assert!(again.sent.is_empty());
        assert_eq!(again.already_stored, 4);
        assert_eq!(again.heartbeat.as_deref(), Some("running"));

        append(&s.options.dir.join("journal.md"), FIFTH_ENTRY);
        let third = connector::push_once(&client, &s.options).await.unwrap();
        assert_eq!(third.sent.len(), 1);
        assert_eq!(third.sent[0].round, 5);
        assert_eq!(third.sent[0].class, "done");

        let history = s.store.loop_history(s.team_id, "docs-refresh", None, 0, 100).await.unwrap();
        assert_eq!(history.rounds.len(), 5, "no duplicates");
        let run = history.run.unwrap();
        assert!(run.id.starts_with("journal-"), "{}", run.id);
        let round_one = &history.rounds[0];
        assert_eq!(round_one.state, "3f9c2ab");
        assert_eq!(round_one.blocking, 2);
        assert_eq!(round_one.spent.tokens, Some(12_000));
        assert_eq!(history.rounds[2].findings.len(), 3, "one failing page and two flags");
    }
}

both_backends! {
    async fn malformed_entries_are_named_with_their_line_and_the_rest_is_sent(db: TestDb) {
        let s = setup(db, "messy").await;
        let client = connector::http_client().unwrap();
        let report = connector::push_once(&client, &s.options).await.unwrap();
        let sent: Vec<u32> = report.sent.iter().map(|round| round.round).collect();
        assert_eq!(sent, [1, 5]);
        let named: Vec<String> = report.problems.iter().map(|problem| format!("{}:{}", problem.file, problem.line)).collect();
        assert_eq!(named, ["state.json:5", "journal.md:8", "journal.md:12", "journal.md:15"], "{:?}", report.problems);
        assert_eq!(report.sent[0].class, "first");
        assert_eq!(report.sent[1].class, "done");
    }
}

both_backends! {
    async fn a_stop_file_reports_the_run_blocked_and_done_ends_it(db: TestDb) {
        let s = setup(db, "docs-refresh").await;
        let client = connector::http_client().unwrap();
        let stop = s.options.dir.parent().unwrap().join("STOP");
        std::fs::write(&stop, "").unwrap();
        let report = connector::push_once(&client, &s.options).await.unwrap();
        assert_eq!(report.sent.len(), 4);
        assert_eq!(report.heartbeat.as_deref(), Some("blocked"));
        let run = s.store.loop_history(s.team_id, "docs-refresh", None, 0, 10).await.unwrap().run.unwrap();
        let blocked = run.blocked.unwrap();
        assert_eq!(blocked.reason, "stop_file");
        assert!(blocked.subject.ends_with("STOP"), "{}", blocked.subject);

        std::fs::remove_file(&stop).unwrap();
        append(&s.options.dir.join("journal.md"), FIFTH_ENTRY);
        let state = std::fs::read_to_string(s.options.dir.join("state.json")).unwrap();
        let state = state.replace("\"running\"", "\"done\"").replace("\"iteration\": 4", "\"iteration\": 5");
        std::fs::write(s.options.dir.join("state.json"), state).unwrap();
        let report = connector::push_once(&client, &s.options).await.unwrap();
        assert_eq!(report.sent.len(), 1);
        let run = s.store.loop_history(s.team_id, "docs-refresh", None, 0, 10).await.unwrap().run.unwrap();
        assert_eq!(run.state, "done");
        assert_eq!(run.exit.as_deref(), Some("E1"));
    }
}

both_backends! {
    async fn a_refused_token_stops_the_push(db: TestDb) {
        let s = setup(db, "docs-refresh").await;
        let client = connector::http_client().unwrap();
        let options = PushOptions { token: "fpl_wrong".to_string(), ..s.options.clone() };
        assert!(matches!(connector::push_once(&client, &options).await, Err(ConnectorError::Unauthorized)));
        let options = PushOptions { to: "ftp://example".to_string(), ..s.options.clone() };
        assert!(matches!(connector::push_once(&client, &options).await, Err(ConnectorError::BadUrl { .. })));
        assert!(s.store.team_loops(s.team_id).await.unwrap().is_empty());
    }
}

both_backends! {
    async fn watch_follows_new_entries_until_shut_down(db: TestDb) {
        let s = setup(db, "docs-refresh").await;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let options = s.options.clone();
        let watcher = tokio::spawn(async move {
            connector::watch(&options, Duration::from_millis(100), async { stopped.await.unwrap_or(()) }, |_| {}).await
        });
        let rounds = |store: Store, team_id: i64| async move {
            store.loop_history(team_id, "docs-refresh", None, 0, 100).await.map(|history| history.rounds.len()).unwrap_or(0)
        };
        let mut waited = 0;
        while rounds(s.store.clone(), s.team_id).await < 4 && waited < 100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            waited += 1;
        }
        assert_eq!(rounds(s.store.clone(), s.team_id).await, 4);
        append(&s.options.dir.join("journal.md"), FIFTH_ENTRY);
        while rounds(s.store.clone(), s.team_id).await < 5 && waited < 200 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            waited += 1;
        }
        assert_eq!(rounds(s.store.clone(), s.team_id).await, 5, "the new entry was sent while watching");
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), watcher).await.unwrap().unwrap().unwrap();
    }
}

both_backends! {
    async fn push_reads_what_is_stored_across_pages_of_a_long_run(db: TestDb) {
        // More rounds than one page of the history API: a second push must
        // page through them all and send nothing again.
        let s = setup(db, "docs-refresh").await;
        let mut entries = String::new();
        for iteration in 5..=560 {
            entries.push_str(&format!(
                "\n## Iteration {iteration} — 2026-11-29 23:00\n\n- **Unit**: docs/page-{iteration}.md\n\
                 - **Did**: rewrote a section; commit {iteration:07x}\n- **Verify**: make linkcheck: exit 1, 1 failed\n\
                 - **Flags**: none\n"
            ));
        }
        append(&s.options.dir.join("journal.md"), &entries);
        let client = connector::http_client().unwrap();
        let first = connector::push_once(&client, &s.options).await.unwrap();
        assert!(first.rejected.is_empty(), "{:?}", first.rejected);
        assert_eq!(first.sent.len(), 560);
        let again = connector::push_once(&client, &s.options).await.unwrap();
        assert!(again.sent.is_empty(), "{} rounds sent twice", again.sent.len());
        assert_eq!(again.already_stored, 560);
    }
}

both_backends! {
    async fn a_check_that_passes_is_progress_while_others_still_fail(db: TestDb) {
        let s = setup(db, "docs-refresh").await;
        // The journal of a loop whose gate lists what is missing: one check
        // fixed per iteration.
        let journal = "# Journal: docs-refresh\n\n\
            ## Iteration 1 — 2026-12-01 10:00\n\n- **Did**: wired the gate; commit 1a2b3c4\n\
            - **Verify**: make gate: exit 2 (missing: audit, push, import)\n- **Ratchet**: 5 -> 6\n\n\
            ## Iteration 2 — 2026-12-01 10:30\n\n- **Did**: added the audit step; commit 5d6e7f8\n\
            - **Verify**: make gate: exit 2 (missing: push, import)\n- **Ratchet**: 6 -> 7\n\n\
            ## Iteration 3 — 2026-12-01 11:00\n\n- **Did**: retried the push; commit 9a8b7c6\n\
            - **Verify**: make gate: exit 2 (missing: push, import)\n- **Ratchet**: 7 -> 7\n\n\
            ## Iteration 4 — 2026-12-01 11:30\n\n- **Did**: pushed half of the rounds; commit 0f1e2d3\n\
            - **Verify**: make gate: exit 2 (missing: push, import)\n- **Ratchet**: 7 -> 8\n";
        std::fs::write(s.options.dir.join("journal.md"), journal).unwrap();
        // `state.json` describes iteration 4: its ratchet goes with that round.
        let state = r#"{"status": "running", "iteration": 4,
                        "ratchet": {"value": 8, "best": 8, "stall_count": 0, "stall_threshold": 3}}"#;
        std::fs::write(s.options.dir.join("state.json"), state).unwrap();
        let client = connector::http_client().unwrap();
        let pushed = connector::push_once(&client, &s.options).await.unwrap();
        assert!(pushed.problems.is_empty(), "{:?}", pushed.problems);
        let classes: Vec<&str> = pushed.sent.iter().map(|round| round.class.as_str()).collect();
        assert_eq!(
            classes,
            ["first", "converging", "stalled", "ratcheting"],
            "the fixed check is progress; the next round is not; the one after moved the ratchet"
        );
        let history = s.store.loop_history(s.team_id, "docs-refresh", None, 0, 10).await.unwrap();
        let mut messages: Vec<&str> = history.rounds[1].findings.iter().map(|finding| finding.message.as_str()).collect();
        messages.sort_unstable();
        assert_eq!(messages, ["import missing", "push missing"]);
        // The journal's `Ratchet:` lines give the earlier rounds their value;
        // the round `state.json` describes gets its whole ratchet.
        use server::convergence::Ratchet;
        let ratchets: Vec<Option<Ratchet>> = history.rounds.iter().map(|round| round.ratchet).collect();
        let value = |value: f64| Some(Ratchet { value, best: None, stall_count: None });
        assert_eq!(
            ratchets,
            [value(6.0), value(7.0), value(7.0), Some(Ratchet { value: 8.0, best: Some(8.0), stall_count: Some(0) })]
        );
    }
}
