//! Email addresses parsed, not matched (issue 23): one parser behind
//! sign-in, subscribe, team invitations and subscriber imports, and every
//! per-address limit counting the parsed address, on both databases.

use axum::http::StatusCode;
use server::accounts::TeamRole;

use crate::support::http::{app, fixedpoint, post_form, session_cookie};

/// Ways of writing victim@x.test that a mail library would still deliver
/// there, or that look like it: each must be refused, never counted as
/// another address.
const VARIANTS: [&str; 8] = [
    "%227%22%3Cvictim%40x.test%3E",
    "Victim+%3Cvictim%40x.test%3E",
    "victim%40x.test+%28note%29",
    "%22victim%22%40x.test",
    "%E2%80%AEvictim%40x.test",
    "victim%E2%81%A6%40x.test",
    "%E2%80%8Fvictim%40x.test",
    "victim%40%5B127.0.0.1%5D",
];

async fn mails_to(db: &crate::support::TestDb, pattern: &str) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM outbox WHERE recipient LIKE $1")
        .bind(pattern)
        .fetch_one(db.store.pool())
        .await
        .unwrap()
}

both_backends! {
    async fn every_form_refuses_display_names_and_invisible_characters(db: TestDb) {
        let app = app(&db);
        for path in ["/signin", "/subscribe"] {
            for variant in VARIANTS {
                let refused = post_form(&app, path, &format!("email={variant}"), None).await;
                assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{path} {variant}");
                assert!(refused.body.contains("email:"), "{path} {variant}: the page says which field");
            }
        }
        let team = db.store.create_team("acme").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Admin).await.unwrap();
        let ada = session_cookie(&db, "ada@example.com").await;
        for variant in VARIANTS {
            let refused = post_form(&app, "/teams/acme", &format!("action=invite&email={variant}"), Some(&ada)).await;
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "invite {variant}");
        }
        assert_eq!(mails_to(&db, "%victim%").await, 0, "nothing was mailed to the address inside");
        assert!(db.store.team_members(team.id).await.unwrap().iter().all(|member| !member.email.contains("victim")));
    }
}

both_backends! {
    async fn the_per_address_limit_counts_the_parsed_address(db: TestDb) {
        let app = app(&db);
        // The same address in five spellings uses the five links an address
        // gets in a quarter of an hour; the sixth spelling is refused.
        for spelling in ["victim%40x.test", "Victim%40x.test", "VICTIM%40X.TEST", "+victim%40x.test+", "victim%40X.test"] {
            let sent = post_form(&app, "/signin", &format!("email={spelling}"), None).await;
            assert_eq!(sent.status, StatusCode::SEE_OTHER, "{spelling}");
        }
        let sixth = post_form(&app, "/signin", "email=vICTIM%40x.test", None).await;
        assert_eq!(sixth.status, StatusCode::TOO_MANY_REQUESTS);
        for variant in VARIANTS {
            let refused = post_form(&app, "/signin", &format!("email={variant}"), None).await;
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{variant}");
        }
        assert_eq!(mails_to(&db, "victim@x.test").await, 5);

        // Subscribing keys on the same form.
        for spelling in ["reader%40x.test", "Reader%40X.test", "READER%40x.TEST", "reader%40x.Test", "rEader%40x.test"] {
            let sent = post_form(&app, "/subscribe", &format!("email={spelling}"), None).await;
            assert_eq!(sent.status, StatusCode::SEE_OTHER, "{spelling}");
        }
        let sixth = post_form(&app, "/subscribe", "email=reader%40x.test", None).await;
        assert_eq!(sixth.status, StatusCode::TOO_MANY_REQUESTS);
    }
}

both_backends! {
    async fn a_subscriber_import_takes_only_bare_addresses(db: TestDb) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("list.csv");
        std::fs::write(
            &file,
            "email\nAda@Example.com\n\"\"\"7\"\"<victim@x.test>\"\n\u{202e}victim@x.test\nvictim@[127.0.0.1]\n",
        )
        .unwrap();
        let output = fixedpoint(&db.url, &["subscribers", "import", file.to_str().unwrap(), "--confirmed"]);
        assert!(!output.status.success());
        let errors = String::from_utf8_lossy(&output.stderr);
        for line in [3, 4, 5] {
            assert!(errors.contains(&format!("list.csv:{line}: email:")), "line {line}: {errors}");
        }
        let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM subscribers").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(stored, 0, "nothing of a file with a bad row goes in");
    }
}
