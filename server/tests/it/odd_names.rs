//! Names that work everywhere (issue 23): a table of odd but allowed loop
//! names walks through ingest, the dashboard's list, the loop page (by the
//! link the list gives), the live stream and `view.json`, on both
//! databases; the names a browser or a path cannot carry are refused with a
//! 400 naming the rule.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::Value;
use server::accounts::TeamRole;
use tower::ServiceExt;

use crate::support::http::{app, get, send, session_cookie};

const ODD: [&str; 12] = [
    "with spaces",
    "Schleife für Tests",
    "名前のループ",
    "a#b",
    "100%",
    "what?",
    "a+b=c",
    "semi;colon",
    "...",
    "~home",
    "quote\"and'apostrophe",
    "<em>loud & clear",
];

/// Percent-encodes every byte but the unreserved ones, as a client would.
fn encode(name: &str) -> String {
    name.bytes()
        .map(|byte| {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
                (byte as char).to_string()
            } else {
                format!("%{byte:02X}")
            }
        })
        .collect()
}

/// Whether `html` shows `name` as text (escaped as a text node or as an
/// attribute value).
fn shows(html: &str, name: &str) -> bool {
    let text = name.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    html.contains(&text) || html.contains(&text.replace('"', "&quot;"))
}

async fn post(app: &axum::Router, token: &str, path_name: &str, body: &str) -> (StatusCode, Value) {
    let request = Request::post(format!("/api/v1/loops/{path_name}/rounds"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let reply = send(app, request, "127.0.0.1:3").await;
    (reply.status, serde_json::from_str(&reply.body).unwrap_or(Value::Null))
}

both_backends! {
    async fn odd_loop_names_open_from_every_page_that_links_to_them(db: TestDb) {
        let app = app(&db);
        db.store.create_team("acme").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Member).await.unwrap();
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
        let ada = session_cookie(&db, "ada@example.com").await;

        for name in ODD {
            let (status, answer) = post(&app, &token, &encode(name), r#"{"round":1,"state":"s1","findings":[]}"#).await;
            assert_eq!(status, StatusCode::OK, "{name}: {answer}");
        }
        let list = get(&app, "/loops", Some(&ada)).await;
        assert_eq!(list.status, StatusCode::OK);
        for name in ODD {
            // The list links to the loop by its encoded name, and the link opens it.
            let href = format!("/loops/{}", encode(name));
            assert!(list.body.contains(&format!("href=\"{href}")), "{name}: no link {href}");
            let at = list.body.find(&format!("href=\"{href}")).unwrap() + "href=\"".len();
            let link: String = list.body[at..].chars().take_while(|c| *c != '"').collect();
            let link = link.replace("&amp;", "&");
            let page = get(&app, &link, Some(&ada)).await;
            assert_eq!(page.status, StatusCode::OK, "{name}: {link}");
            assert!(shows(&page.body, name), "{name}: the page names its loop");

            let query = link.split_once('?').map_or(String::new(), |(_, query)| format!("?{query}"));
            let view = get(&app, &format!("{href}/view.json{query}"), Some(&ada)).await;
            assert_eq!(view.status, StatusCode::OK, "{name}: view.json {}", view.body);
            assert!(view.body.contains("s1"), "{name}: {}", view.body);

            let stream = Request::get(format!("{href}/events{query}")).header(header::COOKIE, &ada).body(Body::empty()).unwrap();
            let response = app.clone().oneshot(stream).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{name}: the stream");
            assert!(response.headers()[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/event-stream"));

            let (status, history) = {
                let request = Request::get(format!("/api/v1/loops/{}/rounds", encode(name)))
                    .header(header::AUTHORIZATION, format!("Bearer {token}"))
                    .body(Body::empty())
                    .unwrap();
                let reply = send(&app, request, "127.0.0.1:3").await;
                (reply.status, serde_json::from_str::<Value>(&reply.body).unwrap_or(Value::Null))
            };
            assert_eq!(status, StatusCode::OK, "{name}: {history}");
        }

        // What a path or a browser cannot carry is refused with its rule.
        let long = "é".repeat(101);
        // (Dots percent-encoded: a client would resolve `/loops/./` itself.)
        for (path_name, rule) in [
            ("%2E".to_string(), ". or .."),
            ("%2E%2E".to_string(), ". or .."),
            (encode("a/b"), "/"),
            (encode("tab\there"), "control"),
            (encode("new\nline"), "control"),
            (encode("\u{7f}del"), "control"),
            (encode(&long), "200 bytes"),
            (encode(" padded"), "surrounding spaces"),
        ] {
            let name = &path_name;
            let (status, error) = post(&app, &token, name, r#"{"round":1,"state":"s"}"#).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{name:?}: {error}");
            assert_eq!(error["field"], "loop", "{name:?}: {error}");
            assert!(error["error"].as_str().unwrap_or_default().contains(rule), "{name:?}: {error}");
        }
        assert_eq!(db.store.team_loops(db.store.team_by_slug("acme").await.unwrap().unwrap().id).await.unwrap().len(), ODD.len());
    }
}
