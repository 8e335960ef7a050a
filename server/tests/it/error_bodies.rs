//! Every error answer has a body (issue 23): JSON on the APIs, text or the
//! site's page elsewhere; a JSON key given twice is refused naming the key;
//! a form to a loop page that cannot be read is told why.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use server::accounts::TeamRole;

use crate::support::http::{app, get, post_form, send, session_cookie};

both_backends! {
    async fn error_answers_are_never_empty(db: TestDb) {
        let app = app(&db);
        db.store.create_team("acme").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Member).await.unwrap();
        let ada = session_cookie(&db, "ada@example.com").await;
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;

        // Pages: a form posted to a team or loop page that is not yours.
        for (path, cookie, status) in [
            ("/teams/nope", None, StatusCode::UNAUTHORIZED),
            ("/teams/nope", Some(ada.as_str()), StatusCode::NOT_FOUND),
            ("/teams/acme", Some(ada.as_str()), StatusCode::FORBIDDEN),
            ("/loops/nope", Some(ada.as_str()), StatusCode::NOT_FOUND),
            ("/loops/nope", None, StatusCode::UNAUTHORIZED),
        ] {
            let reply = post_form(&app, path, "action=stop", cookie).await;
            assert_eq!(reply.status, status, "{path}");
            assert!(!reply.body.trim().is_empty(), "{path}: {status} has a body");
        }
        // The APIs answer JSON, whatever refused the request.
        for (method, path) in [("GET", "/api/v1/audit"), ("DELETE", "/api/v1/loops/x/rounds"), ("PUT", "/stripe/webhook")] {
            let reply = send(&app, Request::builder().method(method).uri(path).body(Body::empty()).unwrap(), "127.0.0.1:4").await;
            assert!(reply.status.is_client_error(), "{method} {path}: {}", reply.status);
            let body: serde_json::Value = serde_json::from_str(&reply.body).unwrap_or_else(|_| panic!("{method} {path}: {:?}", reply.body));
            assert!(body["error"].is_string(), "{method} {path}: {body}");
        }

        // A key given twice is refused by name (it would be read as the last).
        let twice = Request::post("/api/v1/audit")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"source":"while True:\n    break\n","language":"python","language":"go"}"#))
            .unwrap();
        let reply = send(&app, twice, "127.0.0.1:4").await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
        assert!(reply.body.contains("language") && reply.body.contains("twice"), "{}", reply.body);

        // A loop page's form that cannot be read says so, not "action must be stop or steer".
        let round = Request::post("/api/v1/loops/nightly/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"round":1,"state":"a"}"#))
            .unwrap();
        assert_eq!(send(&app, round, "127.0.0.1:4").await.status, StatusCode::OK);
        let big = post_form(&app, "/loops/nightly?team=acme", &format!("action=steer&note={}", "n".repeat(1 << 20)), Some(&ada)).await;
        assert_eq!(big.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(big.body.contains("larger than 4 KiB"), "the page says why");
        let broken = post_form(&app, "/loops/nightly?team=acme", "action=st%FFop", Some(&ada)).await;
        assert_eq!(broken.status, StatusCode::BAD_REQUEST);
        assert!(broken.body.contains("not UTF-8"), "the page says why");
        let page = get(&app, "/loops/nightly?team=acme", Some(&ada)).await;
        assert_eq!(page.status, StatusCode::OK);
    }
}
