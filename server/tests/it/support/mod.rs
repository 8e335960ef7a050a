//! Test support shared by the integration tests: a fresh store on each
//! backend, and a macro that runs one async test body against both.
#![allow(dead_code)]

pub mod fake_stripe;
pub mod http;
pub mod smtp;

use std::sync::atomic::{AtomicU32, Ordering};

use server::store::Store;

/// The PostgreSQL server the tests create their databases on. `.ci/test.sh`
/// exports it (starting a throwaway server where none answers); run by hand,
/// it defaults to the one these machines keep on 127.0.0.1:5432.
pub fn postgres_admin_url() -> String {
    std::env::var("FIXEDPOINT_TEST_PG")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

/// A database on one backend that lives as long as this value. SQLite files
/// sit in a temporary directory; PostgreSQL databases are created fresh and
/// dropped by the next run of `.ci/test.sh` if a test dies before its end.
pub struct TestDb {
    pub url: String,
    pub store: Store,
    _dir: Option<tempfile::TempDir>,
}

pub async fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("test.db").display());
    let store = Store::open(&url).await.expect("open SQLite store");
    TestDb { url, store, _dir: Some(dir) }
}

pub async fn postgres() -> TestDb {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let admin_url = postgres_admin_url();
    let name = format!(
        "fp_test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        server::store::now_millis()
    );
    let admin = Store::connect(&admin_url).await.unwrap_or_else(|error| {
        panic!(
            "PostgreSQL is required for the store tests and does not answer at {admin_url}: {error}. \
             Run the tests through `make test`, which starts one, or set FIXEDPOINT_TEST_PG."
        )
    });
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(admin.pool())
        .await
        .expect("create test database");
    admin.close().await;
    let (base, _) = admin_url.rsplit_once('/').expect("a database URL ends in /NAME");
    let url = format!("{base}/{name}");
    let store = Store::open(&url).await.expect("open PostgreSQL store");
    TestDb { url, store, _dir: None }
}

/// Declares `async fn $name(db: TestDb)` as two tests, `$name::sqlite` and
/// `$name::postgres`, so every store behaviour is checked on both backends.
#[macro_export]
macro_rules! both_backends {
    ($(#[$meta:meta])* async fn $name:ident($db:ident: TestDb) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn body($db: $crate::support::TestDb) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                body($crate::support::sqlite().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                body($crate::support::postgres().await).await;
            }
        }
    };
}
