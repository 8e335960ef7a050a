//! The store's contract, checked on SQLite and PostgreSQL alike.

use std::collections::HashSet;

use server::store::{Backend, Store};

both_backends! {
    async fn migrations_apply_and_report_a_schema_version(db: TestDb) {
        let version = db.store.schema_version().await.unwrap();
        assert!(version >= 20261130000001, "schema version {version}");
        // Opening again applies nothing new and keeps the data.
        db.store.put_setting("site.title", "Fixed Point").await.unwrap();
        let again = Store::open(&db.url).await.unwrap();
        assert_eq!(again.schema_version().await.unwrap(), version);
        assert_eq!(again.setting("site.title").await.unwrap().unwrap().value, "Fixed Point");
    }
}

both_backends! {
    async fn settings_round_trip(db: TestDb) {
        let store = &db.store;
        assert_eq!(store.setting("missing").await.unwrap(), None);
        let first = store.put_setting("site.title", "Fixed Point").await.unwrap();
        assert_eq!(store.setting("site.title").await.unwrap(), Some(first));
        store.put_setting("site.title", "Fixed Point weekly").await.unwrap();
        store.put_setting("a.first", "1").await.unwrap();
        let all = store.settings().await.unwrap();
        let keys: Vec<_> = all.iter().map(|setting| setting.key.as_str()).collect();
        assert_eq!(keys, ["a.first", "site.title"], "ordered by key");
        assert_eq!(all[1].value, "Fixed Point weekly");
        assert!(store.delete_setting("a.first").await.unwrap());
        assert!(!store.delete_setting("a.first").await.unwrap());
        assert_eq!(store.settings().await.unwrap().len(), 1);
        let refused = store.put_setting("Not A Key", "x").await.unwrap_err();
        assert!(refused.to_string().starts_with("key:"), "{refused}");
        assert_eq!(store.settings().await.unwrap().len(), 1, "nothing stored");
    }
}

both_backends! {
    async fn values_keep_every_byte_of_unicode_and_quotes(db: TestDb) {
        let hostile = "'; DROP TABLE site_settings; -- \u{0}\u{1F600} \"quoted\" \\ back";
        // PostgreSQL text cannot hold NUL, so the value leaves it out;
        // everything else must round-trip byte for byte.
        let without_nul = hostile.replace('\u{0}', "");
        db.store.put_setting("hostile", &without_nul).await.unwrap();
        assert_eq!(db.store.setting("hostile").await.unwrap().unwrap().value, without_nul);
        assert_eq!(db.store.settings().await.unwrap().len(), 1, "the table survived");
    }
}

both_backends! {
    async fn concurrent_writers_all_succeed_and_the_last_value_is_one_of_them(db: TestDb) {
        let mut tasks = Vec::new();
        for writer in 0..24 {
            let store = db.store.clone();
            tasks.push(tokio::spawn(async move {
                store.put_setting("contended", &format!("writer-{writer}")).await.unwrap();
                store.put_setting(&format!("own.{writer}"), "x").await.unwrap();
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let all = db.store.settings().await.unwrap();
        assert_eq!(all.len(), 25, "24 own keys and the contended one");
        let contended = all.iter().find(|setting| setting.key == "contended").unwrap();
        let writers: HashSet<String> = (0..24).map(|writer| format!("writer-{writer}")).collect();
        assert!(writers.contains(&contended.value), "{}", contended.value);
    }
}

both_backends! {
    async fn ping_answers_and_fails_once_closed(db: TestDb) {
        let limit = std::time::Duration::from_secs(2);
        db.store.ping(limit).await.unwrap();
        let expected = if db.url.starts_with("sqlite:") { Backend::Sqlite } else { Backend::Postgres };
        assert_eq!(db.store.backend(), expected);
        db.store.close().await;
        assert!(db.store.ping(limit).await.is_err());
    }
}
