//! One rule for stored text (issue 23): the same table of hostile values
//! goes through every way text gets in (the ingest API, heartbeats, OTLP
//! traces as JSON, a signed Stripe webhook, the sign-in (with the page to
//! return to) and subscribe forms, the team and loop pages' forms, the issue and subscriber imports)
//! on SQLite and on PostgreSQL. Both databases must give the same answer to
//! each, no answer may be a 5xx, and nothing refused is stored.

use axum::body::Body;
use axum::http::{header, Request};
use serde_json::Value;
use server::accounts::TeamRole;
use server::signature;

use crate::support::fake_stripe::{SECRET_KEY, WEBHOOK_SECRET};
use crate::support::http::{app_with, fixedpoint, post_form, send, session_cookie};
use crate::support::TestDb;

/// A hostile value three ways: as a JSON string literal (raw bytes, so that
/// escapes and broken UTF-8 reach the parser as sent), percent-encoded for a
/// form, and as the bytes of a line in a file.
struct Hostile {
    name: &'static str,
    json: Vec<u8>,
    form: String,
    file: Vec<u8>,
}

fn hostile_values() -> Vec<Hostile> {
    let mega = "x".repeat(1 << 20);
    let value = |name, json: &[u8], form: &str, file: &[u8]| Hostile {
        name,
        json: json.to_vec(),
        form: form.to_string(),
        file: file.to_vec(),
    };
    vec![
        value("NUL", br#""a\u0000b""#, "a%00b", b"a\0b"),
        // JSON's escape of a lone surrogate; in UTF-8 (CESU) it is no text.
        value("lone surrogate", br#""a\ud800b""#, "a%ED%A0%80b", b"a\xed\xa0\x80b"),
        value(
            "right-to-left override",
            "\"\u{202e}gnp.exe\"".as_bytes(),
            "%E2%80%AEgnp.exe",
            "\u{202e}gnp.exe".as_bytes(),
        ),
        value("escape sequence", br#""a\u001b[31mb""#, "a%1B%5B31mb", b"a\x1b[31mb"),
        value("invalid UTF-8", b"\"a\xff\xfeb\"", "a%FF%FEb", b"a\xff\xfeb"),
        value("1 MB", format!("\"{mega}\"").as_bytes(), &mega, mega.as_bytes()),
    ]
}

/// `template` with its `@` replaced by the value's JSON literal.
fn fill(template: &str, value: &[u8]) -> Vec<u8> {
    let (before, after) = template.split_once('@').expect("a template holds one @");
    [before.as_bytes(), value, after.as_bytes()].concat()
}

/// The round and heartbeat bodies a hostile value goes into, by field.
const INGEST: [(&str, &str, &str); 10] = [
    (
        "rounds",
        "findings[0].message",
        r#"{"round":1,"state":"s","findings":[{"target":{"id":"t"},"severity":"info","criterion":"c","message":@}]}"#,
    ),
    (
        "rounds",
        "findings[0].target.id",
        r#"{"round":1,"state":"s","findings":[{"target":{"id":@},"severity":"info","criterion":"c"}]}"#,
    ),
    (
        "rounds",
        "findings[0].target.path",
        r#"{"round":1,"state":"s","findings":[{"target":{"path":@,"start_line":1,"end_line":2},"severity":"warning","criterion":"c"}]}"#,
    ),
    (
        "rounds",
        "findings[0].criterion",
        r#"{"round":1,"state":"s","findings":[{"target":{"id":"t"},"severity":"blocking","criterion":@}]}"#,
    ),
    ("rounds", "state", r#"{"round":1,"state":@}"#),
    ("rounds", "run", r#"{"round":1,"state":"s","run":@}"#),
    ("rounds", "error.code", r#"{"round":1,"state":"s","error":{"code":@,"body":"b"}}"#),
    ("rounds", "error.body", r#"{"round":1,"state":"s","error":{"code":"E","body":@}}"#),
    ("rounds", "an unknown field", r#"{"round":1,"state":"s","note":@}"#),
    ("heartbeat", "subject", r#"{"status":"blocked","reason":"awaiting_approval","subject":@}"#),
];

/// OTLP/JSON exports with a hostile value in one attribute, by the name a
/// refusal gives it. `TRACE` is replaced by a trace id of the case's own.
const TRACES: [(&str, &str); 7] = [
    (
        "gen_ai.agent.name",
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"chat m","startTimeUnixNano":"1767225600010000000","endTimeUnixNano":"1767225600050000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.agent.name","value":{"stringValue":@}}]}]}]}]}"#,
    ),
    (
        "service.name",
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":@}}]},"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"chat m","startTimeUnixNano":"1767225600010000000","endTimeUnixNano":"1767225600050000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}]}]}]}]}"#,
    ),
    (
        "gen_ai.conversation.id",
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"chat m","startTimeUnixNano":"1767225600010000000","endTimeUnixNano":"1767225600050000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.conversation.id","value":{"stringValue":@}}]}]}]}]}"#,
    ),
    (
        "gen_ai.tool.name",
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0000000000000003","parentSpanId":"0000000000000001","name":"execute_tool","startTimeUnixNano":"1767225600060000000","endTimeUnixNano":"1767225600070000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":@}}]}]}]}]}"#,
    ),
    (
        "gen_ai.tool.call.arguments",
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0000000000000003","parentSpanId":"0000000000000001","name":"execute_tool","startTimeUnixNano":"1767225600060000000","endTimeUnixNano":"1767225600070000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},{"key":"gen_ai.tool.name","value":{"stringValue":"search"}},{"key":"gen_ai.tool.call.arguments","value":{"stringValue":@}}]}]}]}]}"#,
    ),
    (
        "the status description",
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"chat m","startTimeUnixNano":"1767225600010000000","endTimeUnixNano":"1767225600050000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}],"status":{"code":2,"message":@}}]}]}]}"#,
    ),
    (
        "message",
        r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"TRACE","spanId":"0000000000000002","parentSpanId":"0000000000000001","name":"chat m","startTimeUnixNano":"1767225600010000000","endTimeUnixNano":"1767225600050000000","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}],"events":[{"name":"fixedpoint.finding","timeUnixNano":"1767225600040000000","attributes":[{"key":"target.id","value":{"stringValue":"t"}},{"key":"severity","value":{"stringValue":"info"}},{"key":"criterion","value":{"stringValue":"c"}},{"key":"message","value":{"stringValue":@}}]}]}]}]}]}"#,
    ),
];

/// The team page's forms and the loop page's STEER, by the name a refusal
/// gives the field a hostile value goes into (`@` the value,
/// percent-encoded).
const FORMS: [(&str, &str, &str); 4] = [
    ("/teams/acme", "name", "action=create_token&name=@"),
    ("/teams/acme", "url", "action=set_webhook&url=https%3A%2F%2Fhooks.example%2F@"),
    ("/teams/acme", "email", "action=invite&email=@%40x.test"),
    ("/loops/steered?team=acme", "steer", "action=steer&note=@"),
];

/// The notice a team or loop page answered a form with.
fn notice(body: &str) -> String {
    let Some(at) = body.find("team-notice\"").or_else(|| body.find("loop-notice\"")) else {
        return format!("no notice: {}", body.chars().take(120).collect::<String>());
    };
    let rest = &body[at..];
    let rest = &rest[rest.find('>').map_or(0, |end| end + 1)..];
    rest[..rest.find("</p>").unwrap_or(rest.len())].chars().take(200).collect()
}

/// What an answer came to, in a form both databases must match exactly.
#[derive(Debug, PartialEq)]
struct Answer {
    case: String,
    status: u16,
    /// JSON answers whole; pages and redirects by where they lead.
    body: String,
}

async fn answers(db: TestDb) -> Vec<Answer> {
    let stripe = vec![
        ("STRIPE_SECRET_KEY", SECRET_KEY.to_string()),
        ("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET.to_string()),
        // Never called: the events below are of a type nobody handles.
        ("STRIPE_API_BASE", "http://127.0.0.1:9".to_string()),
        ("STRIPE_PRICE_PRO_MONTHLY", "price_pro_monthly".to_string()),
        ("STRIPE_PRICE_PRO_YEARLY", "price_pro_yearly".to_string()),
        ("STRIPE_PRICE_FOUNDER_YEARLY", "price_founder_yearly".to_string()),
        ("FIXEDPOINT_SIGNIN_RATE_PER_MINUTE", "1000".to_string()),
    ];
    let app = app_with(&db, &stripe);
    let team = db.store.create_team("acme").await.unwrap();
    let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
    db.store.add_team_member("acme", "admin@x.test", TeamRole::Admin).await.unwrap();
    let admin = session_cookie(&db, "admin@x.test").await;
    let steered = Request::post("/api/v1/loops/steered/rounds")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"round":1,"state":"s"}"#))
        .unwrap();
    assert_eq!(send(&app, steered, "127.0.0.1:1").await.status, 200);
    let mut out = Vec::new();
    let mut record = |case: String, status: u16, body: String| {
        assert!(status < 500, "{case}: {status} {body}");
        out.push(Answer { case, status, body });
    };

    for (index, value) in hostile_values().iter().enumerate() {
        for (number, (endpoint, field, template)) in INGEST.iter().enumerate() {
            let path = format!("/api/v1/loops/h{index}-{number}/{endpoint}");
            let request = Request::post(&path)
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(fill(template, &value.json)))
                .unwrap();
            let reply = send(&app, request, "127.0.0.1:1").await;
            record(
                format!("{endpoint} {field}: {}", value.name),
                reply.status.as_u16(),
                json_or_text(&reply.body),
            );
        }

        // An OTLP/JSON export with the value in one attribute.
        for (number, (field, template)) in TRACES.iter().enumerate() {
            let trace = format!("{:032x}", 0x1000 + index * 100 + number);
            let request = Request::post("/v1/traces")
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(fill(&template.replace("TRACE", &trace), &value.json)))
                .unwrap();
            let reply = send(&app, request, "127.0.0.1:1").await;
            record(
                format!("traces {field}: {}", value.name),
                reply.status.as_u16(),
                json_or_text(&reply.body),
            );
        }

        // The team page's forms and a loop's STEER note, as the team's admin.
        for (path, field, template) in FORMS {
            let reply = post_form(&app, path, &template.replace('@', &value.form), Some(&admin)).await;
            record(
                format!("form {path} {field}: {}", value.name),
                reply.status.as_u16(),
                notice(&reply.body),
            );
        }

        // A signed event whose id is the value.
        let now = server::store::now_millis() / 1000;
        let event =
            fill(r#"{"id":@,"object":"event","type":"fixedpoint.test","data":{"object":{}}}"#, &value.json);
        let request = Request::post("/stripe/webhook")
            .header(header::CONTENT_TYPE, "application/json")
            .header("stripe-signature", signature::sign(&event, WEBHOOK_SECRET, now))
            .body(Body::from(event))
            .unwrap();
        let reply = send(&app, request, "127.0.0.1:1").await;
        record(format!("webhook id: {}", value.name), reply.status.as_u16(), json_or_text(&reply.body));

        // The forms that take an address, the value before and inside it.
        for (path, email) in [
            ("/signin", format!("{}%40x.test", value.form)),
            ("/subscribe", format!("{}%40x.test", value.form)),
            ("/signin", format!("victim%40{}.test", value.form)),
            // The page to return to after signing in is not stored, but it
            // goes into the mailed link: it must be dropped, not mailed.
            ("/signin", format!("next{index}%40x.test&next=%2F{}", value.form)),
        ] {
            let request = Request::post(path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header("sec-fetch-site", "same-origin")
                .body(Body::from(format!("email={email}")))
                .unwrap();
            let reply = send(&app, request, "127.0.0.1:1").await;
            let location = reply.headers.get(header::LOCATION).and_then(|value| value.to_str().ok());
            assert!(!reply.body.is_empty() || location.is_some(), "{path}: an answer has a body");
            record(
                format!("{path} {}: {}", &email[..email.len().min(40)], value.name),
                reply.status.as_u16(),
                location.unwrap_or_default().to_string(),
            );
        }

        // The commands: an issue whose title is the value, a subscriber
        // list whose address holds it. They answer FILE:LINE.
        let dir = tempfile::tempdir().unwrap();
        let issue = [
            b"---\ntitle: ".as_slice(),
            &value.file,
            b"\nslug: hostile\ndate: 2026-11-02\ntier: free\nsummary: s\n---\nBody.\n",
        ]
        .concat();
        std::fs::write(dir.path().join("hostile.md"), issue).unwrap();
        let imported = fixedpoint(&db.url, &["issues", "import", dir.path().to_str().unwrap()]);
        record(
            format!("issues import title: {}", value.name),
            exit_code(&imported),
            command_text(&imported, &dir),
        );
        let csv = [b"email\n".as_slice(), &value.file, b"@x.test\n"].concat();
        std::fs::write(dir.path().join("list.csv"), csv).unwrap();
        let listed = dir.path().join("list.csv");
        let imported =
            fixedpoint(&db.url, &["subscribers", "import", listed.to_str().unwrap(), "--confirmed"]);
        record(
            format!("subscribers import: {}", value.name),
            exit_code(&imported),
            command_text(&imported, &dir),
        );
    }
    let outbox = db.store.outbox(500).await.unwrap();
    let links: Vec<&str> = outbox
        .iter()
        .filter(|mail| mail.recipient.starts_with("next"))
        .map(|mail| mail.body.as_str())
        .collect();
    assert!(links.len() >= 3, "the sign-ins with a hostile return path still mail a link: {}", links.len());
    assert!(links.iter().all(|body| body.contains("/signin/verify?token=")), "{links:?}");
    // A key given twice, in an export and in a Stripe event.
    let request = Request::post("/v1/traces")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a","traceId":"00000000000000000000000000000001","name":"b"}]}]}]}"#))
        .unwrap();
    let reply = send(&app, request, "127.0.0.1:1").await;
    record("traces: a key twice".to_string(), reply.status.as_u16(), json_or_text(&reply.body));
    let event = br#"{"id":"evt_1","object":"event","type":"fixedpoint.test","type":"customer.subscription.deleted","data":{"object":{}}}"#;
    let request = Request::post("/stripe/webhook")
        .header(header::CONTENT_TYPE, "application/json")
        .header(
            "stripe-signature",
            signature::sign(event, WEBHOOK_SECRET, server::store::now_millis() / 1000),
        )
        .body(Body::from(event.to_vec()))
        .unwrap();
    let reply = send(&app, request, "127.0.0.1:1").await;
    record("webhook: a key twice".to_string(), reply.status.as_u16(), json_or_text(&reply.body));

    // Nothing refused was stored: the spans kept are those of the exports
    // answered without a rejection, the tokens those the page announced.
    let kept: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM trace_spans").fetch_one(db.store.pool()).await.unwrap();
    let accepted = out
        .iter()
        .filter(|answer| answer.case.starts_with("traces ") && answer.status == 200 && answer.body == "{}")
        .count();
    out.push(Answer {
        case: "spans kept".to_string(),
        status: 0,
        body: format!("{kept} of {accepted} accepted"),
    });
    assert_eq!(usize::try_from(kept).unwrap(), accepted, "only the accepted exports' spans are stored");
    let tokens = db.store.loop_tokens(team.id).await.unwrap().len();
    let created = out
        .iter()
        .filter(|answer| answer.case.starts_with("form /teams/acme name") && answer.status == 200)
        .count();
    assert_eq!(tokens, 1 + created, "only the tokens the page announced exist");
    out
}

fn exit_code(output: &std::process::Output) -> u16 {
    output.status.code().and_then(|code| u16::try_from(code).ok()).unwrap_or(999)
}

/// A command's output with its temporary directory (which differs per run)
/// taken out and very long lines cut.
fn command_text(output: &std::process::Output, dir: &tempfile::TempDir) -> String {
    let text =
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    let text = text.replace(dir.path().to_str().unwrap(), "DIR");
    text.lines().map(|line| line.chars().take(200).collect::<String>()).collect::<Vec<_>>().join("\n")
}

fn json_or_text(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(value) => value.to_string(),
        Err(_) => body.chars().take(200).collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_gets_the_same_answer_on_both_databases() {
    let sqlite = answers(crate::support::sqlite().await).await;
    let postgres = answers(crate::support::postgres().await).await;
    assert_eq!(sqlite.len(), postgres.len());
    for (a, b) in sqlite.iter().zip(&postgres) {
        assert_eq!(a, b, "SQLite and PostgreSQL answer differently");
    }
    let of =
        |case: &str| sqlite.iter().find(|answer| answer.case == case).unwrap_or_else(|| panic!("{case}"));

    // A NUL is refused by field wherever it would be stored...
    for (endpoint, field, _) in INGEST.iter().filter(|(_, field, _)| *field != "an unknown field") {
        let answer = of(&format!("{endpoint} {field}: NUL"));
        assert_eq!(answer.status, 400, "{answer:?}");
        let body: Value = serde_json::from_str(&answer.body).unwrap();
        let named = body["field"].as_str().unwrap_or_default();
        assert!(field.starts_with(named) && !named.is_empty(), "{answer:?}");
        assert!(body["error"].as_str().unwrap().contains("NUL"), "{answer:?}");
    }
    // ...and an unknown field is ignored whatever it holds.
    assert_eq!(of("rounds an unknown field: NUL").status, 200);
    let webhook = of("webhook id: NUL");
    assert_eq!(webhook.status, 400, "{webhook:?}");
    assert!(webhook.body.contains("id must not contain NUL"), "{webhook:?}");
    let imported = of("issues import title: NUL");
    assert_eq!(imported.status, 1);
    assert!(imported.body.contains("DIR/hostile.md:2: title: must not contain NUL"), "{imported:?}");
    assert!(of("issues import title: escape sequence")
        .body
        .contains("hostile.md:2: title: must not contain control"));
    assert!(of("issues import title: invalid UTF-8").body.contains("hostile.md:2: the file is not UTF-8"));
    assert!(of("subscribers import: NUL").body.contains("list.csv:2: email:"));

    // Lone surrogates and broken UTF-8 never parse as JSON.
    for value in ["lone surrogate", "invalid UTF-8"] {
        for answer in
            sqlite.iter().filter(|answer| answer.case.ends_with(value) && answer.case.starts_with("rounds"))
        {
            assert_eq!(answer.status, 400, "{answer:?}");
            assert!(answer.body.contains("not valid JSON"), "{answer:?}");
        }
    }
    // A right-to-left override is text in a message, never in an address.
    assert_eq!(of("rounds findings[0].message: right-to-left override").status, 200);
    assert_eq!(of("issues import title: right-to-left override").status, 0);
    let (returns, addresses): (Vec<&Answer>, Vec<&Answer>) = sqlite
        .iter()
        .filter(|answer| answer.case.starts_with('/'))
        .partition(|answer| answer.case.contains("&next="));
    for answer in addresses {
        assert!(matches!(answer.status, 400 | 413), "no hostile address is taken: {answer:?}");
    }
    // A hostile page to return to is dropped: the link is mailed all the same.
    for answer in returns {
        let dropped = answer.status == 303 && answer.body == "/signin?sent=1";
        assert!(dropped || answer.status == 413, "{answer:?}");
    }
    // A megabyte does not fit in a round (1 MiB body cap) nor a form.
    assert_eq!(of("rounds state: 1 MB").status, 413);

    // Traces: what cannot be decoded is refused whole, with 400 (OTLP's
    // Status, JSON); a span whose text breaks the rule is refused alone,
    // named in partial_success (as OTLP answers a span it cannot take).
    for (field, _) in TRACES {
        for value in ["lone surrogate", "invalid UTF-8"] {
            let answer = of(&format!("traces {field}: {value}"));
            assert_eq!(answer.status, 400, "{answer:?}");
            assert!(answer.body.contains("not an OTLP/JSON ExportTraceServiceRequest"), "{answer:?}");
        }
        // A tool's arguments have no length of their own (the body's cap).
        let refused: &[&str] =
            if field == "gen_ai.tool.call.arguments" { &["NUL"] } else { &["NUL", "1 MB"] };
        for value in refused {
            let answer = of(&format!("traces {field}: {value}"));
            assert_eq!(answer.status, 200, "{answer:?}");
            let body: Value = serde_json::from_str(&answer.body).unwrap();
            let rejected = &body["partialSuccess"]["rejectedSpans"];
            assert!(rejected == 1 || rejected == "1", "{answer:?}");
            let message = body["partialSuccess"]["errorMessage"].as_str().unwrap();
            assert!(message.contains(field), "the refusal names {field}: {message}");
        }
    }
    assert!(of("traces gen_ai.tool.name: NUL").body.contains("must not contain NUL"));
    assert!(of("traces gen_ai.tool.call.arguments: NUL").body.contains("must not contain NUL"));
    assert_eq!(of("traces gen_ai.tool.call.arguments: 1 MB").status, 200);
    let twice = of("traces: a key twice");
    assert_eq!(twice.status, 400, "{twice:?}");
    assert!(twice.body.contains(r#"the key \"name\" is given twice"#), "{twice:?}");
    let twice = of("webhook: a key twice");
    assert_eq!(twice.status, 400, "{twice:?}");
    assert!(twice.body.contains(r#"the key \"type\" is given twice"#), "{twice:?}");

    // The team and loop pages' forms: the form is read whole or not at all.
    for (path, field, _) in FORMS {
        for value in ["lone surrogate", "invalid UTF-8"] {
            let answer = of(&format!("form {path} {field}: {value}"));
            assert_eq!(answer.status, 400, "{answer:?}");
            assert_eq!(answer.body, "The form is not UTF-8 text.", "{answer:?}");
        }
        let answer = of(&format!("form {path} {field}: 1 MB"));
        assert_eq!(answer.status, 413, "{answer:?}");
        let answer = of(&format!("form {path} {field}: NUL"));
        assert_eq!(answer.status, 400, "{answer:?}");
        assert!(answer.body.starts_with(field), "the notice names {field}: {answer:?}");
    }
}
