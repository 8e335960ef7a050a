//! Every error answer has a body (issue 23): JSON on the APIs, the site's
//! error page elsewhere, also for the requests hyper refuses before the
//! router sees them; a JSON key given twice is refused naming the key; a
//! form to a loop page that cannot be read is told why.

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use server::accounts::TeamRole;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::http::{app, get, post_form, send, serve, session_cookie, state_with};

/// Whether `body` is the site's error page for `status`: styled, with the
/// status, a sentence and the way home.
fn is_error_page(body: &str, status: StatusCode) -> bool {
    body.starts_with("<!DOCTYPE html>")
        && body.contains("href=\"/pkg/fixedpoint.css\"")
        && body.contains(&format!("<h1>{}: ", status.as_u16()))
        && body.contains("data-testid=\"error-page\"")
        && body.contains("<a href=\"/\">Back to the home page</a>")
}

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
            assert!(is_error_page(&reply.body, status), "{path}: {status} is the error page: {}", reply.body);
            assert!(reply.headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/html"), "{path}");
        }
        // What the handler said stays the page's sentence.
        let refused = post_form(&app, "/teams/acme", "action=stop", Some(&ada)).await;
        assert!(refused.body.contains("<p>Only the team"), "{}", refused.body);
        // A file missing under /pkg, a page path that is not UTF-8 once decoded.
        for path in ["/pkg/missing.js", "/feed/%FF"] {
            let reply = get(&app, path, None).await;
            assert!(reply.status.is_client_error(), "{path}: {}", reply.status);
            assert!(is_error_page(&reply.body, reply.status), "{path}: {}", reply.body);
        }
        // The APIs answer JSON, whatever refused the request (a bare status,
        // or an extractor's line of text: a path segment that is not UTF-8).
        for (method, path) in [
            ("GET", "/api/v1/audit"),
            ("DELETE", "/api/v1/loops/x/rounds"),
            ("PUT", "/stripe/webhook"),
            ("GET", "/api/v1/loops/%FF/rounds"),
            ("GET", "/loops/%FF/view.json"),
        ] {
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

/// Sends `request` as raw bytes to the server at `base` and reads until the
/// server closes the connection.
async fn raw(base: &str, request: &[u8]) -> String {
    let mut stream = tokio::net::TcpStream::connect(base.trim_start_matches("http://")).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8(answer).expect("the answer is UTF-8")
}

/// The status, the head and the body of one raw answer, its length checked.
fn split(answer: &str) -> (u16, String, String) {
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("a whole answer: {answer:?}"));
    let status = head[9..12].parse().unwrap();
    let head = head.to_ascii_lowercase();
    let length = head.lines().find_map(|line| line.strip_prefix("content-length: ")).expect("a length");
    assert_eq!(length.parse::<usize>().unwrap(), body.len(), "{head}");
    (status, head, body.to_string())
}

#[tokio::test]
async fn requests_hyper_refuses_get_a_body_too() {
    let db = crate::support::sqlite().await;
    let base = serve(state_with(&db, &[])).await;
    let long = "a".repeat(70_000);

    // An address past hyper's 65,534 bytes: a page, then an API.
    let (status, head, body) =
        split(&raw(&base, format!("GET /issues/{long} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await);
    assert_eq!(status, 414, "{head}");
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(is_error_page(&body, StatusCode::URI_TOO_LONG), "{body}");
    assert!(body.contains("longer than this server reads"), "{body}");
    let (status, head, body) = split(
        &raw(&base, format!("GET /api/v1/loops/{long}/rounds HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await,
    );
    assert_eq!(status, 414, "{head}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{body}"));
    assert!(json["error"].as_str().unwrap().contains("address is longer"), "{json}");

    // Bytes that are not ASCII in the address (invalid UTF-8 among them).
    let (status, _, body) = split(&raw(&base, b"GET /issues/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n").await);
    assert_eq!(status, 400);
    assert!(is_error_page(&body, StatusCode::BAD_REQUEST), "{body}");
    assert!(body.contains("percent-encode"), "{body}");
    let (status, _, body) = split(
        &raw(&base, b"POST /api/v1/loops/\xff/rounds HTTP/1.1\r\nHost: x\r\ncontent-length: 2\r\n\r\n{}")
            .await,
    );
    assert_eq!(status, 400);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{body}"));
    assert!(json["error"].as_str().unwrap().contains("ASCII"), "{json}");
    // A header name hyper cannot read.
    let (status, _, body) = split(&raw(&base, b"GET / HTTP/1.1\r\nHost: x\r\nbad header: 1\r\n\r\n").await);
    assert_eq!(status, 400);
    assert!(is_error_page(&body, StatusCode::BAD_REQUEST), "{body}");

    // A HEAD answer keeps to its head: the next answer on the connection
    // follows right after it (a body there would be read as the next answer).
    let answer = raw(
        &base,
        b"HEAD /pkg/missing.js HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    let (head, rest) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: text/html"), "{head}");
    assert!(rest.starts_with("HTTP/1.1 200 OK"), "{rest:?}");
    // And a page that is fine is untouched by any of this.
    let answer = raw(&base, b"GET /issues HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{}", &answer[..answer.len().min(200)]);
    assert!(answer.contains("</html>") && !answer.contains("data-testid=\"error-page\""));
}
