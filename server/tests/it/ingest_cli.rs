//! The operator's commands for loops: `team create`, `token create` and
//! `push`, run as the real binary against a SQLite file.

use std::process::{Command, Output};

use server::config::Config;
use server::site;
use server::store::Store;
use server::web::AppState;
use tokio::net::TcpListener;

fn fixedpoint(database_url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fixedpoint"))
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run fixedpoint")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teams_tokens_and_push_from_the_command_line() {
    let temp = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", temp.path().join("cli.db").display());

    let created = fixedpoint(&url, &["team", "create", "acme"]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let again = fixedpoint(&url, &["team", "create", "acme"]);
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("already exists"), "{}", text(&again.stderr));
    let bad = fixedpoint(&url, &["team", "create", "Not A Slug"]);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("not valid"), "{}", text(&bad.stderr));

    let token = fixedpoint(&url, &["token", "create", "--team", "acme", "--name", "ci"]);
    assert!(token.status.success(), "{}", text(&token.stderr));
    let stdout = text(&token.stdout);
    let secret = stdout.lines().last().unwrap().to_string();
    assert!(secret.starts_with("fpl_") && secret.len() == 68, "{stdout}");
    let missing = fixedpoint(&url, &["token", "create", "--team", "nobody"]);
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("no team"), "{}", text(&missing.stderr));

    // Push a fixture loop to a server on the same database.
    let store = Store::open(&url).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config_url = url.clone();
    let config = Config::from_lookup(|name| (name == "DATABASE_URL").then(|| config_url.clone())).unwrap();
    let app = site::router(AppState::new(config, store.clone()));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/loops/messy");
    let to = format!("http://{addr}");
    let push = tokio::task::spawn_blocking(move || {
        fixedpoint(
            "sqlite://unused.db",
            &["push", "--dir", fixture.to_str().unwrap(), "--to", &to, "--token", &secret],
        )
    })
    .await
    .unwrap();
    let stdout = text(&push.stdout);
    assert_eq!(push.status.code(), Some(2), "skipped entries give exit 2: {stdout} {}", text(&push.stderr));
    assert!(stdout.contains("round 1: first (continue)"), "{stdout}");
    assert!(stdout.contains("sent 2 rounds"), "{stdout}");
    assert!(text(&push.stderr).contains("journal.md:8"), "{}", text(&push.stderr));
}
