//! Near-repeat memory: a round's `fingerprint` (a 64-bit SimHash, hex), or
//! a `text` the server fingerprints and drops, and the answer's
//! `near_seen_at`. The SimHash is held to PyPI's `simhash` package (the
//! reference, in `end2end/.venv`); the rest runs on SQLite and PostgreSQL.

use std::io::Write as _;
use std::process::{Command, Stdio};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use serde_json::{json, Value};
use server::convergence::Fingerprint;
use server::loops::RoundReport;

use crate::support::http::{app, get, send, sign_in};

/// What the reference package makes of `texts`: `format(Simhash(t).value,
/// "016x")` for each.
fn reference_fingerprints(texts: &[String]) -> Vec<String> {
    const SCRIPT: &str = "import importlib.metadata as m, json, sys\n\
        from simhash import Simhash\n\
        assert m.version('simhash') == '2.1.2', m.version('simhash')\n\
        texts = json.load(sys.stdin)\n\
        print(json.dumps([format(Simhash(t).value, '016x') for t in texts]))\n";
    let python = crate::support::smtp::python();
    let mut child = Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("{python}: {error} (make test installs simhash in end2end/.venv)"));
    child.stdin.take().unwrap().write_all(serde_json::to_string(texts).unwrap().as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "the reference failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn fingerprints_are_the_reference_simhash() {
    let mut texts: Vec<String> = [
        "",
        "a",
        "abc",
        "abcd",
        "The loop stops when the tests pass and the docs build without a warning.",
        "The loop stops when the tests pass and the docs build without a warning!",
        "THE LOOP STOPS when the tests pass, and the docs build without a warning",
        "The loop stops when the tests pass and the docs build without an error.",
        "missing: audit, push, import",
        "snake_case_names and kebab-case-names and 42 numbers 3.14",
        "  \n\t spaces,\n newlines\tand tabs  ",
        "!!! ??? ... --- ***",
        // Letters of other scripts, and case that changes length.
        "Größe und Maße: Straße, Fuß, weiß",
        "ΟΔΥΣΣΕΥΣ ταξίδεψε στην Ιθάκη· ΣΟΦΙΑ",
        "İstanbul ve Diyarbakır, IŞIK ılık",
        "Ça, c'est très élégant: naïve café, œuvre",
        "数据处理流水线停止了，因为测试通过了",
        "データの処理が止まりました。テストは合格です",
        "В цикле нет проверки прогресса: только лимит итераций",
        "हिन्दी में लिखा गया एक वाक्य, मात्राओं के साथ",
        "مرحبا بالعالم، الحلقة توقفت",
        // Marks, symbols and numbers that are not letters.
        "e\u{301}te\u{301} combining accents",
        "x² + y² = z², ½ of Ⅻ, ①②③, ٣٤٥",
        "emoji 🚀🔥 and ⓐⓑⓒ circled letters ™ ©",
        "tab\u{a0}non\u{2009}breaking\u{200b}zero width",
    ]
    .iter()
    .map(|text| text.to_string())
    .collect();
    // Long texts whose shingles repeat more than 50 times (the package
    // weighs those apart) and have more than 200 kinds (its batches). Under
    // numpy 2 the package overflows when one shingle comes more than 255
    // times, so the table stays below that.
    texts.push("the same sentence again and again. ".repeat(120));
    texts.push((0..250).map(|n| format!("word{n} ")).collect());
    let expected = reference_fingerprints(&texts);
    for (text, expected) in texts.iter().zip(&expected) {
        let got = Fingerprint::of_text(text).hex();
        assert_eq!(&got, expected, "SimHash of {:?}", text.chars().take(60).collect::<String>());
    }
}

async fn post(app: &axum::Router, token: &str, body: &Value) -> (StatusCode, Value) {
    let request = Request::post("/api/v1/loops/drafter/rounds")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let reply = send(app, request, "127.0.0.1:2").await;
    (reply.status, serde_json::from_str(&reply.body).unwrap_or(json!({"raw": reply.body})))
}

/// A draft of some 500 characters: long enough that a word changed moves
/// its SimHash by a few bits (in a sentence, the changed shingles weigh too
/// much: "three" to "four" moves a 200-character text by 10 bits).
const DRAFT: &str = "Fixed points and cycles: a loop that can only be bounded stops, but a loop that \
                     can detect knows it has finished. This week we look at three agents that compare \
                     each pass with the last and stop when nothing moved. The first keeps a digest of \
                     its draft and quits when two passes agree. The second counts the blocking findings \
                     of its judge and gives up after two rounds without a drop. The third is bounded \
                     only by its budget, and we show how to add the missing check in four lines. ";
const OTHER: &str = "Pricing: Pro readers get the paid sections and the archive; founders get the MCP \
                     server once every seat is taken, and a say in what we build next.";

both_backends! {
    async fn a_draft_changed_by_a_word_has_been_here_before(db: TestDb) {
        use server::accounts::TeamRole;
        let app = app(&db);
        db.store.create_team("acme").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Member).await.unwrap();
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
        let edited = DRAFT.replace("three agents", "four agents");
        let draft = Fingerprint::of_text(DRAFT);
        assert!(draft.distance(Fingerprint::of_text(&edited)) <= 3, "the edit is a near repeat");
        assert!(draft.distance(Fingerprint::of_text(OTHER)) > 3);
        let blocking = json!([{"target": {"id": "word-floor"}, "severity": "blocking", "criterion": "length"}]);
        let steps = [
            (json!({"round": 1, "state": "d1", "findings": blocking, "text": DRAFT}), json!([])),
            (json!({"round": 2, "state": "d2", "findings": blocking, "text": OTHER}), json!([])),
            // Another digest, a word changed: been here before.
            (json!({"round": 3, "state": "d3", "findings": blocking, "text": edited}), json!([1])),
            // The fingerprint itself, in capitals.
            (json!({"round": 4, "state": "d4", "findings": blocking, "fingerprint": draft.hex().to_uppercase()}), json!([1, 3])),
        ];
        let mut answers = Vec::new();
        for (body, near) in &steps {
            let (status, answer) = post(&app, &token, body).await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            assert_eq!(answer["near_seen_at"], *near, "round {}: {answer}", body["round"]);
            answers.push(answer);
        }
        // A round without a fingerprint gets no near_seen_at at all.
        let (_, plain) = post(&app, &token, &json!({"round": 5, "state": "d5", "findings": blocking})).await;
        assert!(plain.get("near_seen_at").is_none(), "{plain}");

        // The same round again is the same answer; another text is another body.
        let (status, replay) = post(&app, &token, &steps[2].0).await;
        assert_eq!((status, &replay), (StatusCode::OK, &answers[2]));
        let mut changed = steps[2].0.clone();
        changed["text"] = json!(OTHER);
        assert_eq!(post(&app, &token, &changed).await.0, StatusCode::CONFLICT);

        // Bad input is refused by field, and nothing of it is stored.
        let cases = [
            (json!({"round": 6, "state": "d6", "fingerprint": "9f3a0c"}), "fingerprint"),
            (json!({"round": 6, "state": "d6", "fingerprint": "9f3a0c00000000fg"}), "fingerprint"),
            (json!({"round": 6, "state": "d6", "fingerprint": 42}), "fingerprint"),
            (json!({"round": 6, "state": "d6", "text": 42}), "text"),
            // Larger than the text cap, smaller than the body cap.
            (json!({"round": 6, "state": "d6", "text": "word ".repeat(20_000)}), "text"),
            (json!({"round": 6, "state": "d6", "text": DRAFT, "fingerprint": Fingerprint::of_text(OTHER).hex()}), "fingerprint"),
        ];
        for (body, field) in cases {
            let (status, error) = post(&app, &token, &body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {error}");
            assert_eq!(error["field"], field, "{error}");
            assert!(error["error"].as_str().unwrap().contains(field), "{error}");
        }
        let request = Request::get("/api/v1/loops/drafter/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        let history = send(&app, request, "127.0.0.1:2").await.body;
        let history: Value = serde_json::from_str(&history).unwrap();
        let rounds = history["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 5, "the refused rounds stored nothing");
        // The rounds API gives the fingerprint, never the text.
        assert_eq!(rounds[2]["fingerprint"], json!(Fingerprint::of_text(&edited).hex()));
        assert_eq!(rounds[2]["near_seen_at"], json!([1]));
        assert_eq!(rounds[4]["near_seen_at"], Value::Null);
        assert!(!history.to_string().contains("three agents"), "the text is not kept");

        // The loop page shows the near repeat, on the round and in its row.
        let ada = sign_in(&app, &db, "ada@example.com").await;
        let page = get(&app, "/loops/drafter?team=acme&round=3", Some(&ada)).await;
        let cell = |round: u32| {
            let at = page.body.find(&format!("data-testid=\"near-{round}\"")).unwrap();
            let text = &page.body[at..];
            text[text.find('>').unwrap() + 1..text.find("</td>").unwrap()].to_string()
        };
        assert_eq!((cell(3).as_str(), cell(4).as_str()), ("round 1", "rounds 1 and 3"));
        assert!(page.body.contains("data-testid=\"round-near\">round 1 (a fingerprint within 3 bits"));
        assert!(page.body.contains("<title>round 3: near repeat of an earlier round</title>"));
    }
}

both_backends! {
    async fn near_repeats_are_found_by_index_and_bounded(db: TestDb) {
        // A loop that sends the same fingerprint for 130 rounds: each answer
        // lists at most the latest 100 earlier ones, found through the
        // quarters' indexes (the candidates read are bounded too).
        let team = db.store.create_team("acme").await.unwrap();
        let fingerprint = Fingerprint(0x0123_4567_89ab_cdef);
        let far = Fingerprint(fingerprint.0 ^ 0xf0f0); // 8 bits away, a quarter shared
        let mut last = None;
        for number in 1..=130_u32 {
            // Every tenth round is far, though it shares three quarters.
            let sent = if number % 10 == 0 { far } else { fingerprint };
            let body = json!({"round": number, "state": format!("s{number}"), "fingerprint": sent.hex()});
            let report = RoundReport::from_json(body.to_string().as_bytes()).unwrap();
            last = Some(db.store.ingest_round(team.id, "steady", &report).await.unwrap().answer);
        }
        let near = last.unwrap().near_seen_at.unwrap();
        // Round 130 is far from the others (and near round 10, 20, ...).
        assert_eq!(near, (1..=12).map(|n| n * 10).collect::<Vec<u32>>());
        let body = json!({"round": 131, "state": "s131", "fingerprint": fingerprint.hex()});
        let report = RoundReport::from_json(body.to_string().as_bytes()).unwrap();
        let near = db.store.ingest_round(team.id, "steady", &report).await.unwrap().answer.near_seen_at.unwrap();
        assert_eq!(near.len(), 100, "at most the latest 100");
        let steady: Vec<u32> = (1..=130).filter(|n| n % 10 != 0).collect();
        let expected = steady[steady.len() - 100..].to_vec();
        assert_eq!(near, expected);
        // One bit off in every quarter is still near (3 of 4 quarters
        // differ, one is shared).
        let shifted = Fingerprint(fingerprint.0 ^ (1 << 60) ^ (1 << 40) ^ (1 << 20));
        let body = json!({"round": 132, "state": "s132", "fingerprint": shifted.hex()});
        let report = RoundReport::from_json(body.to_string().as_bytes()).unwrap();
        let near = db.store.ingest_round(team.id, "steady", &report).await.unwrap().answer.near_seen_at.unwrap();
        assert_eq!(near.last(), Some(&131));
    }
}
