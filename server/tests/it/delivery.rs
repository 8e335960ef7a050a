//! Delivery by email against a real SMTP server (aiosmtpd), on both
//! databases: subscribing with double opt-in, a send by tier with one ledger
//! row per recipient, one-click unsubscribe, bounces (550) and deferrals
//! (451), and the command line's refusals.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use server::billing::StripeSubscription;
use server::newsletter::deliverer::{self, DelivererConfig};
use server::newsletter::{format, DeliveryCounts, DeliveryError, SubscriberStatus, Tier};
use server::store::Store;

use crate::support::http::{app, fixedpoint, get, post_form, send, sign_in};
use crate::support::smtp::{Received, SmtpSink};
use crate::support::TestDb;

const PUBLIC: &str = "https://fixedpoint.example";
const PAID: &str = "---\ntitle: Paid one\nslug: paid-one\ndate: 2026-10-08\ntier: pro\nsummary: Half paid.\n---\nThe opening, FREE-PART-MARKER.\n\n```python\nwhile not done():\n    step()\n```\n\n<!-- paywall -->\n\nPAID-ONE-SECRET lives here.\n";
const FOUNDERS: &str = "---\ntitle: Founders only\nslug: founders-only\ndate: 2026-10-15\ntier: founder\nsummary: For founders.\n---\nFOUNDER-SECRET notes.\n";
const NEXT: &str =
    "---\ntitle: Next one\nslug: next-one\ndate: 2026-10-22\ntier: free\nsummary: Free.\n---\nNEXT-ISSUE text.\n";

async fn import(store: &Store, text: &str) {
    let issue = format::parse_issue(text.as_bytes()).unwrap();
    store.store_issue(&issue).await.unwrap();
}

/// Runs the deliverer against the sink until dropped.
struct Deliverer(tokio::task::JoinHandle<()>);

impl Drop for Deliverer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn start_deliverer(db: &TestDb, sink: &SmtpSink, retry_ms: i64) -> Deliverer {
    Deliverer(deliverer::spawn(
        db.store.clone(),
        DelivererConfig {
            relay: server::mail::SmtpRelay::parse(&sink.url()).unwrap(),
            from: "Fixed Point <news@fixedpoint.example>".parse().unwrap(),
            public_url: PUBLIC.to_string(),
            rate_per_second: 0,
            connections: 4,
            retry_ms,
            dkim: None,
        },
    ))
}

/// Waits until no row of `slug` is queued.
async fn settled(store: &Store, slug: &str) -> DeliveryCounts {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let counts = store.delivery_counts(slug).await.unwrap();
        if counts.queued == 0 {
            return counts;
        }
        assert!(tokio::time::Instant::now() < deadline, "{slug} still has queued rows: {counts:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn make_reader(store: &Store, email: &str, tier: Tier) {
    let account = store.ensure_account(email).await.unwrap();
    match tier {
        Tier::Free => {}
        Tier::Pro => {
            store.grant_pro(account.id, Some(30)).await.unwrap();
        }
        Tier::Founder => store
            .upsert_stripe_subscription(&StripeSubscription {
                id: format!("sub_{}", account.id),
                customer_id: format!("cus_{}", account.id),
                account_id: account.id,
                tier: Tier::Founder,
                status: "active".into(),
                price_id: Some("price_founder_yearly".into()),
                current_period_end: Some(server::store::now_millis() + 86_400_000),
                cancel_at_period_end: false,
                created: 0,
            })
            .await
            .unwrap(),
    }
}

fn by_address(received: &[Received]) -> HashMap<String, Vec<Received>> {
    let mut map: HashMap<String, Vec<Received>> = HashMap::new();
    for message in received {
        map.entry(message.to.clone()).or_default().push(message.clone());
    }
    map
}

async fn count(store: &Store, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(store.pool()).await.unwrap()
}

both_backends! {
    async fn each_subscriber_gets_the_issue_once_cut_to_their_tier(db: TestDb) {
        import(&db.store, PAID).await;
        import(&db.store, FOUNDERS).await;
        // 120 free subscribers (confirmed), 50 Pro and 30 Founder readers
        // (subscribed by default, no row of their own yet), and three who get
        // nothing: a Pro reader who opted out, an unconfirmed address, an
        // unsubscribed one.
        for n in 0..120 {
            db.store.confirm_email(&format!("free{n}@example.com"), "import").await.unwrap();
        }
        for n in 0..50 {
            make_reader(&db.store, &format!("pro{n}@example.com"), Tier::Pro).await;
        }
        for n in 0..30 {
            make_reader(&db.store, &format!("founder{n}@example.com"), Tier::Founder).await;
        }
        make_reader(&db.store, "optout@example.com", Tier::Pro).await;
        db.store.unsubscribe_email("optout@example.com").await.unwrap();
        db.store.request_subscription("pending@example.com", "form").await.unwrap();
        db.store.confirm_email("left@example.com", "import").await.unwrap();
        db.store.unsubscribe_email("left@example.com").await.unwrap();

        let dry = db.store.queue_send("paid-one", true).await.unwrap();
        assert_eq!((dry.free, dry.pro, dry.founder), (120, 50, 30));
        assert_eq!(count(&db.store, "SELECT COUNT(*) FROM deliveries").await, 0, "a dry run stores nothing");
        assert_eq!(
            count(&db.store, "SELECT COUNT(*) FROM subscribers WHERE source = 'paid'").await,
            0,
            "a dry run writes no subscriber rows either"
        );
        let queued = db.store.queue_send("paid-one", false).await.unwrap();
        assert_eq!((queued.free, queued.pro, queued.founder), (120, 50, 30));
        assert!(matches!(
            db.store.queue_send("paid-one", false).await,
            Err(DeliveryError::AlreadySent { queued: 200, .. })
        ));

        let sink = SmtpSink::start(&[], &[]).await;
        let _deliverer = start_deliverer(&db, &sink, 100);
        let counts = settled(&db.store, "paid-one").await;
        assert_eq!(counts, DeliveryCounts { queued: 0, sent: 200, failed: 0, bounced: 0 });
        let received = sink.received();
        let messages = by_address(&received);
        assert_eq!(received.len(), 200, "one message per recipient");
        assert_eq!(messages.len(), 200, "every recipient, each once");
        for nobody in ["optout@example.com", "pending@example.com", "left@example.com"] {
            assert!(!messages.contains_key(nobody), "{nobody} got mail");
        }
        for (address, list) in &messages {
            let message = &list[0];
            let text = message.text.as_deref().unwrap();
            let html = message.html.as_deref().unwrap();
            assert_eq!(message.headers["Subject"], "Paid one");
            assert!(text.contains("FREE-PART-MARKER") && html.contains("FREE-PART-MARKER"));
            let paid = text.contains("PAID-ONE-SECRET") || html.contains("PAID-ONE-SECRET");
            if address.starts_with("free") {
                assert!(!paid, "{address}: the paid part is never in a free reader's mail");
                assert!(!message.raw.contains("PAID-ONE-SECRET"), "{address}: not even encoded");
                assert!(text.contains("The rest of this issue is for Pro readers."), "{text}");
                assert!(text.contains(&format!("{PUBLIC}/issues/paid-one")));
            } else {
                assert!(text.contains("PAID-ONE-SECRET") && html.contains("PAID-ONE-SECRET"), "{address}");
            }
            // Code is coloured as on the site, with the styles inline.
            assert!(html.contains("style=\"color: #f0a35e;\">while</span>"), "{html}");
            let unsubscribe = &message.headers["List-Unsubscribe"];
            assert!(unsubscribe.starts_with(&format!("<{PUBLIC}/unsubscribe/fpu_")), "{unsubscribe}");
            assert_eq!(message.headers["List-Unsubscribe-Post"], "List-Unsubscribe=One-Click");
            assert!(message.headers["Message-ID"].ends_with("@fixedpoint.example>"));
            assert!(message.headers.contains_key("Date"));
            assert!(message.headers["Content-Type"].starts_with("multipart/alternative"));
        }
        assert_eq!(
            count(&db.store, "SELECT COUNT(*) FROM unsubscribe_tokens").await,
            200,
            "one unsubscribe token per message, stored as a hash"
        );
        let raw_tokens: i64 =
            count(&db.store, "SELECT COUNT(*) FROM unsubscribe_tokens WHERE token_hash LIKE 'fpu_%'").await;
        assert_eq!(raw_tokens, 0);

        // The founder-only issue goes to founders only.
        let founders = db.store.queue_send("founders-only", false).await.unwrap();
        assert_eq!((founders.free, founders.pro, founders.founder), (0, 0, 30));
        settled(&db.store, "founders-only").await;
        let founder_mail: Vec<Received> =
            sink.received().into_iter().filter(|m| m.headers["Subject"] == "Founders only").collect();
        assert_eq!(founder_mail.len(), 30);
        assert!(founder_mail.iter().all(|m| m.to.starts_with("founder")));

        // One-click unsubscribe (RFC 8058): a POST without cookie or
        // same-origin header, as a mail provider sends it.
        let app = app(&db);
        let free0 = &messages["free0@example.com"][0];
        let url = free0.headers["List-Unsubscribe"].trim_matches(|c| c == '<' || c == '>').to_string();
        let path = url.strip_prefix(PUBLIC).unwrap();
        let page = get(&app, path, None).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains("data-testid=\"unsubscribe-form\""), "the GET shows a button");
        assert_eq!(
            db.store.subscriber_status("free0@example.com").await.unwrap(),
            Some(SubscriberStatus::Confirmed),
            "opening the link changes nothing"
        );
        let one_click = Request::post(path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "cross-site")
            .body(Body::from("List-Unsubscribe=One-Click"))
            .unwrap();
        let done = send(&app, one_click, "203.0.113.9:1").await;
        assert_eq!(done.status, StatusCode::OK, "{}", done.body);
        assert!(done.body.contains("data-testid=\"unsubscribed\""));
        // So does the pro reader's link through the page's button.
        let pro0 = &messages["pro0@example.com"][0];
        let pro_path = pro0.headers["List-Unsubscribe"].trim_matches(|c| c == '<' || c == '>').replace(PUBLIC, "");
        assert_eq!(post_form(&app, &pro_path, "", None).await.status, StatusCode::OK);
        let unknown = post_form(&app, "/unsubscribe/fpu_0000", "", None).await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);

        import(&db.store, NEXT).await;
        let next = db.store.queue_send("next-one", false).await.unwrap();
        assert_eq!((next.free, next.pro, next.founder), (119, 49, 30), "the unsubscribed get no next issue");
        settled(&db.store, "next-one").await;
        let next_to: Vec<String> = sink
            .received()
            .into_iter()
            .filter(|m| m.headers["Subject"] == "Next one")
            .map(|m| m.to)
            .collect();
        assert_eq!(next_to.len(), 198);
        assert!(!next_to.iter().any(|to| to == "free0@example.com" || to == "pro0@example.com"));
    }
}

both_backends! {
    async fn a_refusal_bounces_the_address_and_a_deferral_is_retried(db: TestDb) {
        import(&db.store, NEXT).await;
        import(&db.store, PAID).await;
        for email in ["gone@example.com", "slow@example.com", "fine@example.com"] {
            db.store.confirm_email(email, "import").await.unwrap();
        }
        let sink = SmtpSink::start(&["gone@example.com"], &[("slow@example.com", 2)]).await;
        let _deliverer = start_deliverer(&db, &sink, 150);
        db.store.queue_send("next-one", false).await.unwrap();
        let counts = settled(&db.store, "next-one").await;
        assert_eq!(counts, DeliveryCounts { queued: 0, sent: 2, failed: 0, bounced: 1 });
        let rows: Vec<(String, String, i64, Option<String>)> = sqlx::query_as(
            "SELECT email, state, attempts, last_reply FROM deliveries ORDER BY email",
        )
        .fetch_all(db.store.pool())
        .await
        .unwrap();
        let row = |email: &str| rows.iter().find(|row| row.0 == email).unwrap().clone();
        let gone = row("gone@example.com");
        assert_eq!((gone.1.as_str(), gone.2), ("bounced", 1));
        assert!(gone.3.as_deref().unwrap().contains("550"), "{gone:?}");
        let slow = row("slow@example.com");
        assert_eq!((slow.1.as_str(), slow.2), ("sent", 3), "two 451s, then taken: {slow:?}");
        assert!(slow.3.as_deref().unwrap().starts_with("250"), "{slow:?}");
        assert_eq!(row("fine@example.com").2, 1);
        assert_eq!(
            db.store.subscriber_status("gone@example.com").await.unwrap(),
            Some(SubscriberStatus::Bounced)
        );
        let received = by_address(&sink.received());
        assert_eq!(received["slow@example.com"].len(), 1, "a deferred message arrives once");
        assert!(!received.contains_key("gone@example.com"));

        // A bounced address gets no more mail, and subscribing again does
        // not bring it back.
        let outcome = db.store.request_subscription("gone@example.com", "form").await.unwrap();
        assert_eq!(outcome, server::newsletter::SubscribeOutcome::Bounced);
        let next = db.store.queue_send("paid-one", false).await.unwrap();
        assert_eq!(next.total(), 2);
    }
}

both_backends! {
    async fn subscribing_takes_a_confirmed_button_press(db: TestDb) {
        let app = app(&db);
        let asked = post_form(&app, "/subscribe", "email=Ada%40Example.com", None).await;
        assert_eq!(asked.status, StatusCode::SEE_OTHER);
        assert_eq!(asked.headers[header::LOCATION], "/subscribe?sent=1");
        let outbox = db.store.outbox(10).await.unwrap();
        let mail = outbox.iter().find(|m| m.recipient == "ada@example.com").expect("a confirmation mail");
        let at = mail.body.find("token=").unwrap() + "token=".len();
        let token = mail.body[at..].split_whitespace().next().unwrap().to_string();
        assert_eq!(db.store.subscriber_status("ada@example.com").await.unwrap(), Some(SubscriberStatus::Pending));

        // Known or not, the same answer.
        let again = post_form(&app, "/subscribe", "email=ada%40example.com", None).await;
        assert_eq!((again.status, &again.headers[header::LOCATION]), (StatusCode::SEE_OTHER, &asked.headers[header::LOCATION]));
        let bad = post_form(&app, "/subscribe", "email=not-an-address", None).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        assert!(bad.body.contains("email: enter an address"), "{}", bad.body);
        let sent_page = get(&app, "/subscribe?sent=1", None).await;
        assert!(sent_page.body.contains("data-testid=\"subscribe-sent\""));

        // The link's page only shows a button; the button confirms; the
        // token works once. The second request made a newer token.
        let outbox = db.store.outbox(10).await.unwrap();
        let latest = outbox.iter().find(|m| m.recipient == "ada@example.com").unwrap();
        let at = latest.body.find("token=").unwrap() + "token=".len();
        let latest_token = latest.body[at..].split_whitespace().next().unwrap().to_string();
        assert_ne!(token, latest_token);
        let page = get(&app, &format!("/subscribe/confirm?token={latest_token}"), None).await;
        assert!(page.body.contains("data-testid=\"confirm-form\""), "{}", page.body);
        assert_eq!(db.store.subscriber_status("ada@example.com").await.unwrap(), Some(SubscriberStatus::Pending));
        let stale = post_form(&app, "/subscribe/confirm", &format!("token={token}"), None).await;
        assert_eq!(stale.status, StatusCode::BAD_REQUEST, "an older link was replaced");
        let confirmed = post_form(&app, "/subscribe/confirm", &format!("token={latest_token}"), None).await;
        assert_eq!(confirmed.status, StatusCode::OK, "{}", confirmed.body);
        assert!(confirmed.body.contains("data-testid=\"subscribe-confirmed\""));
        assert_eq!(db.store.subscriber_status("ada@example.com").await.unwrap(), Some(SubscriberStatus::Confirmed));
        let reused = post_form(&app, "/subscribe/confirm", &format!("token={latest_token}"), None).await;
        assert_eq!(reused.status, StatusCode::BAD_REQUEST);
        assert!(reused.body.contains("token: this confirmation link has been used"));

        // Rate limited like sign-in: five mails per address in 15 minutes.
        for _ in 0..3 {
            post_form(&app, "/subscribe", "email=ada%40example.com", None).await;
        }
        let limited = post_form(&app, "/subscribe", "email=ada%40example.com", None).await;
        assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(limited.headers.contains_key(header::RETRY_AFTER));
        // A form from another site is refused.
        let cross = Request::post("/subscribe")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "cross-site")
            .body(Body::from("email=eve%40example.com"))
            .unwrap();
        assert_eq!(send(&app, cross, "127.0.0.1:1").await.status, StatusCode::FORBIDDEN);

        // The subscribe form is on the home page, the archive and each issue.
        import(&db.store, PAID).await;
        for path in ["/", "/issues", "/issues/paid-one", "/pricing"] {
            let page = get(&app, path, None).await;
            assert!(page.body.contains("action=\"/subscribe\""), "{path} has no subscribe form");
        }

        // A signed-in reader sees and changes their choice on /account; a
        // paying one is subscribed until they opt out.
        let cookie = sign_in(&app, &db, "pro@example.com").await;
        make_reader(&db.store, "pro@example.com", Tier::Pro).await;
        let account = get(&app, "/account", Some(&cookie)).await;
        assert!(account.body.contains("Each issue is mailed to you."), "{}", account.body);
        let off = post_form(&app, "/account", "action=newsletter_off", Some(&cookie)).await;
        assert_eq!(off.status, StatusCode::OK);
        assert!(off.body.contains("The issues are not mailed to you."));
        assert_eq!(db.store.subscriber_status("pro@example.com").await.unwrap(), Some(SubscriberStatus::Unsubscribed));
        let on = post_form(&app, "/account", "action=newsletter_on", Some(&cookie)).await;
        assert!(on.body.contains("Each issue is mailed to you."));
        assert_eq!(db.store.subscriber_status("pro@example.com").await.unwrap(), Some(SubscriberStatus::Confirmed));
    }
}

both_backends! {
    async fn concurrent_subscribe_requests_all_store(db: TestDb) {
        // Each request reads the address's status, then inserts or updates
        // it; with other writers committing between the two, every request
        // must still be stored (on SQLite a deferred transaction here fails
        // with "database is locked", which the form hides from the reader).
        let mut tasks = Vec::new();
        for reader in 0..16 {
            let store = db.store.clone();
            tasks.push(tokio::spawn(async move {
                store.request_subscription(&format!("reader-{reader}@example.com"), "form").await?;
                store.request_subscription("shared@example.com", "form").await?;
                store.put_setting(&format!("busy.{reader}"), "x").await.unwrap();
                store.request_subscription(&format!("reader-{reader}@example.com"), "form").await
            }));
        }
        for task in tasks {
            let outcome = task.await.unwrap().expect("every subscribe request is stored");
            assert!(matches!(outcome, server::newsletter::SubscribeOutcome::Confirm { .. }), "{outcome:?}");
        }
        assert_eq!(count(&db.store, "SELECT COUNT(*) FROM subscribers").await, 17);
        assert_eq!(
            count(&db.store, "SELECT COUNT(*) FROM subscribers WHERE status = 'pending' AND confirm_hash IS NOT NULL").await,
            17
        );
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_refuse_bad_input_and_store_nothing_half() {
    for db in [crate::support::sqlite().await, crate::support::postgres().await] {
        import(&db.store, PAID).await;
        let bad = fixedpoint(&db.url, &["issues", "send", "Bad Slug!"]);
        assert!(!bad.status.success());
        assert!(text(&bad.stderr).contains("slug \"Bad Slug!\" is not valid"), "{}", text(&bad.stderr));
        let unknown = fixedpoint(&db.url, &["issues", "send", "no-such-issue"]);
        assert!(!unknown.status.success());
        assert!(text(&unknown.stderr).contains("no issue has the slug \"no-such-issue\""));
        let nobody = fixedpoint(&db.url, &["issues", "send", "paid-one"]);
        assert!(!nobody.status.success());
        assert!(text(&nobody.stderr).contains("paid-one has no recipients"), "{}", text(&nobody.stderr));
        let delivery_unknown = fixedpoint(&db.url, &["issues", "delivery", "no-such-issue"]);
        assert!(!delivery_unknown.status.success());

        db.store.confirm_email("one@example.com", "import").await.unwrap();
        make_reader(&db.store, "two@example.com", Tier::Pro).await;
        let dry = fixedpoint(&db.url, &["issues", "send", "paid-one", "--dry-run"]);
        assert!(dry.status.success(), "{}", text(&dry.stderr));
        let out = text(&dry.stdout);
        assert!(
            out.contains("would queue paid-one") && out.contains("free: 1") && out.contains("pro: 1"),
            "{out}"
        );
        assert_eq!(count(&db.store, "SELECT COUNT(*) FROM deliveries").await, 0);
        let sent = fixedpoint(&db.url, &["issues", "send", "paid-one"]);
        assert!(sent.status.success(), "{}", text(&sent.stderr));
        assert!(text(&sent.stdout).contains("queued paid-one (\"Paid one\", pro) for 2 recipients"));
        let twice = fixedpoint(&db.url, &["issues", "send", "paid-one"]);
        assert!(!twice.status.success());
        assert!(text(&twice.stderr).contains("already queued for all 2"), "{}", text(&twice.stderr));
        assert_eq!(count(&db.store, "SELECT COUNT(*) FROM deliveries").await, 2);
        let delivery = fixedpoint(&db.url, &["issues", "delivery", "paid-one"]);
        assert_eq!(text(&delivery.stdout), "queued: 2\nsent: 0\nfailed: 0\nbounced: 0\n");
    }
}

/// Verifies a received message's DKIM signature with dkimpy (an independent
/// implementation), the public key served as DNS would.
fn dkim_verifies(raw: &str, public_key_base64: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("message.eml");
    std::fs::write(&file, raw.as_bytes()).unwrap();
    let script = concat!(
        "import dkim, sys\n",
        "raw = open(sys.argv[1], 'rb').read()\n",
        "record = ('v=DKIM1; k=rsa; p=' + sys.argv[2]).encode()\n",
        "dns = lambda name, timeout=5: record if name.rstrip(b'.') == b'fp2026._domainkey.fixedpoint.example' else None\n",
        "print('pass' if dkim.verify(raw, dnsfunc=dns) else 'fail')\n",
    );
    let output = std::process::Command::new(crate::support::smtp::python())
        .args(["-c", script])
        .arg(&file)
        .arg(public_key_base64)
        .output()
        .expect("dkimpy runs (`make test` installs it in end2end/.venv)");
    let verdict = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    verdict.trim() == "pass"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_are_dkim_signed_and_the_signature_verifies() {
    let db = crate::support::sqlite().await;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("dkim.pem");
    let made = std::process::Command::new("openssl")
        .args(["genrsa", "-traditional", "-out"])
        .arg(&key)
        .arg("2048")
        .output()
        .expect("openssl makes the test's key");
    assert!(made.status.success(), "{}", text(&made.stderr));
    // The DNS record's `p=`: the public key's DER, in base64.
    let public = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("openssl rsa -pubout -outform DER -in '{}' | openssl base64 -A", key.display()))
        .output()
        .unwrap();
    let public_key = text(&public.stdout).trim().to_string();
    assert!(public_key.len() > 300, "{public_key}");
    let config = server::config::Config::from_lookup(|name| match name {
        "FIXEDPOINT_DKIM_KEY" => Some(key.display().to_string()),
        "FIXEDPOINT_DKIM_SELECTOR" => Some("fp2026".into()),
        "FIXEDPOINT_MAIL_FROM" => Some("Fixed Point <news@fixedpoint.example>".into()),
        _ => None,
    })
    .unwrap();
    let dkim = config.dkim.as_ref().unwrap();
    assert_eq!(dkim.domain, "fixedpoint.example", "the sender's domain by default");

    import(&db.store, PAID).await;
    db.store.confirm_email("reader@example.com", "import").await.unwrap();
    db.store.queue_send("paid-one", false).await.unwrap();
    let sink = SmtpSink::start(&[], &[]).await;
    let _deliverer = Deliverer(deliverer::spawn(
        db.store.clone(),
        DelivererConfig {
            relay: server::mail::SmtpRelay::parse(&sink.url()).unwrap(),
            from: "Fixed Point <news@fixedpoint.example>".parse().unwrap(),
            public_url: PUBLIC.to_string(),
            rate_per_second: 0,
            connections: 1,
            retry_ms: 100,
            dkim: Some(std::sync::Arc::new(dkim.signing().unwrap())),
        },
    ));
    settled(&db.store, "paid-one").await;
    let message = sink.received().pop().unwrap();
    let signature = &message.headers["DKIM-Signature"];
    assert!(signature.contains("d=fixedpoint.example") && signature.contains("s=fp2026"), "{signature}");
    assert!(signature.contains("list-unsubscribe-post"), "the one-click headers are signed: {signature}");
    assert!(dkim_verifies(&message.raw, &public_key), "dkimpy verifies the signature");
    // The check can fail: a changed body does not verify.
    let tampered = message.raw.replacen("FREE-PART-MARKER", "FREE-PART-MARKEX", 1);
    assert_ne!(tampered, message.raw);
    assert!(!dkim_verifies(&tampered, &public_key), "a changed message fails");

    // A bad key is a clear error at start.
    let bad = server::config::Config::from_lookup(|name| match name {
        "FIXEDPOINT_DKIM_KEY" => Some("/no/such/key.pem".into()),
        "FIXEDPOINT_DKIM_SELECTOR" => Some("fp2026".into()),
        _ => None,
    })
    .unwrap_err();
    assert!(bad.to_string().contains("FIXEDPOINT_DKIM_KEY: cannot read the key file"), "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriber_lists_move_in_and_out_as_csv() {
    for db in [crate::support::sqlite().await, crate::support::postgres().await] {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).display().to_string();
        // Mailchimp's export, with a bad row: nothing of it goes in.
        std::fs::write(
            path("mailchimp.csv"),
            "Email Address,First Name,Last Name\r\nada@example.com,Ada,L\r\nnope,No,Body\r\n\"Bob@Example.com\",Bob,\"B, Jr.\"\r\n",
        )
        .unwrap();
        let bad = fixedpoint(&db.url, &["subscribers", "import", &path("mailchimp.csv")]);
        assert!(!bad.status.success());
        let err = text(&bad.stderr);
        assert!(err.contains("mailchimp.csv:3: email: `nope` is not a valid address"), "{err}");
        assert!(err.contains("nothing was imported"), "{err}");
        assert_eq!(count(&db.store, "SELECT COUNT(*) FROM subscribers").await, 0);
        let no_column = fixedpoint(&db.url, &["subscribers", "import", &path("missing.csv")]);
        assert!(text(&no_column.stderr).contains("missing.csv: cannot read the file"));

        std::fs::write(
            path("mailchimp.csv"),
            "Email Address,First Name\r\nada@example.com,Ada\r\nBob@Example.com,Bob\r\nleft@example.com,L\r\n",
        )
        .unwrap();
        db.store.confirm_email("left@example.com", "form").await.unwrap();
        db.store.unsubscribe_email("left@example.com").await.unwrap();
        let good = fixedpoint(&db.url, &["subscribers", "import", &path("mailchimp.csv"), "--confirmed"]);
        assert!(good.status.success(), "{}", text(&good.stderr));
        let out = text(&good.stdout);
        assert!(out.contains("added: 2") && out.contains("left unsubscribed: 1"), "{out}");
        assert_eq!(
            db.store.subscriber_status("bob@example.com").await.unwrap(),
            Some(SubscriberStatus::Confirmed)
        );
        assert_eq!(
            db.store.subscriber_status("left@example.com").await.unwrap(),
            Some(SubscriberStatus::Unsubscribed),
            "an import never puts back someone who left"
        );

        // Substack's export without --confirmed: confirmation mails.
        std::fs::write(
            path("substack.csv"),
            "email,active_subscription\nada@example.com,false\ncy@example.com,false\n",
        )
        .unwrap();
        let unconfirmed = fixedpoint(&db.url, &["subscribers", "import", &path("substack.csv")]);
        assert!(unconfirmed.status.success(), "{}", text(&unconfirmed.stderr));
        let out = text(&unconfirmed.stdout);
        assert!(
            out.contains("already subscribed: 1") && out.contains("confirmation links mailed: 1"),
            "{out}"
        );
        assert_eq!(
            db.store.subscriber_status("cy@example.com").await.unwrap(),
            Some(SubscriberStatus::Pending)
        );
        let outbox = db.store.outbox(10).await.unwrap();
        assert!(outbox
            .iter()
            .any(|m| m.recipient == "cy@example.com" && m.body.contains("/subscribe/confirm?token=fpc_")));

        make_reader(&db.store, "payer@example.com", Tier::Pro).await;
        let export = fixedpoint(&db.url, &["subscribers", "export"]);
        assert!(export.status.success(), "{}", text(&export.stderr));
        let csv = text(&export.stdout);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "email,status,source,created_at,confirmed_at");
        assert!(lines.iter().any(|line| line.starts_with("ada@example.com,confirmed,import,")), "{csv}");
        assert!(lines.iter().any(|line| line.starts_with("cy@example.com,pending,import,")), "{csv}");
        assert!(lines.iter().any(|line| line.starts_with("payer@example.com,confirmed,paid,")), "{csv}");
        assert_eq!(lines.len(), 6, "{csv}");
        // What export writes, import reads.
        std::fs::write(path("export.csv"), &csv).unwrap();
        let back = fixedpoint(&db.url, &["subscribers", "import", &path("export.csv"), "--confirmed"]);
        assert!(back.status.success(), "{}", text(&back.stderr));
    }
}

both_backends! {
    async fn the_operator_sends_from_admin_and_follows_the_counts(db: TestDb) {
        import(&db.store, PAID).await;
        db.store.confirm_email("reader@example.com", "import").await.unwrap();
        let app = app(&db);
        let reader = sign_in(&app, &db, "someone@example.com").await;
        assert_eq!(post_form(&app, "/admin/send", "slug=paid-one", None).await.status, StatusCode::UNAUTHORIZED);
        assert_eq!(post_form(&app, "/admin/send", "slug=paid-one", Some(&reader)).await.status, StatusCode::FORBIDDEN);
        assert_eq!(get(&app, "/admin/sends.json", Some(&reader)).await.status, StatusCode::FORBIDDEN);
        assert_eq!(count(&db.store, "SELECT COUNT(*) FROM deliveries").await, 0);

        db.store.grant_operator("op@example.com").await.unwrap();
        let operator = sign_in(&app, &db, "op@example.com").await;
        let page = get(&app, "/admin", Some(&operator)).await;
        assert!(page.body.contains("data-testid=\"send-form\"") && page.body.contains("value=\"paid-one\""));
        let dry = post_form(&app, "/admin/send", "slug=paid-one&dry_run=1", Some(&operator)).await;
        assert_eq!(dry.status, StatusCode::OK);
        assert!(dry.body.contains("Would queue Paid one for 1 recipients"), "{}", dry.body);
        assert_eq!(count(&db.store, "SELECT COUNT(*) FROM deliveries").await, 0);
        let sent = post_form(&app, "/admin/send", "slug=paid-one", Some(&operator)).await;
        assert!(sent.body.contains("Queued Paid one for 1 recipients"), "{}", sent.body);
        assert!(sent.body.contains("data-testid=\"send-paid-one\""));
        let twice = post_form(&app, "/admin/send", "slug=paid-one", Some(&operator)).await;
        assert_eq!(twice.status, StatusCode::BAD_REQUEST);
        assert!(twice.body.contains("already queued"), "{}", twice.body);
        let json = get(&app, "/admin/sends.json", Some(&operator)).await;
        let sends: serde_json::Value = serde_json::from_str(&json.body).unwrap();
        assert_eq!(sends[0]["slug"], "paid-one");
        assert_eq!((sends[0]["queued"].as_i64(), sends[0]["sent"].as_i64()), (Some(1), Some(0)));

        let sink = SmtpSink::start(&[], &[]).await;
        let _deliverer = start_deliverer(&db, &sink, 100);
        settled(&db.store, "paid-one").await;
        let json = get(&app, "/admin/sends.json", Some(&operator)).await;
        let sends: serde_json::Value = serde_json::from_str(&json.body).unwrap();
        assert_eq!((sends[0]["queued"].as_i64(), sends[0]["sent"].as_i64()), (Some(0), Some(1)));
        assert!(sends[0]["rate_per_second"].as_f64().unwrap() > 0.0);
    }
}

both_backends! {
    async fn two_instances_share_a_send_and_its_rate(db: TestDb) {
        import(&db.store, NEXT).await;
        for n in 0..120 {
            db.store.confirm_email(&format!("r{n}@example.com"), "import").await.unwrap();
        }
        db.store.queue_send("next-one", false).await.unwrap();
        let sink = SmtpSink::start(&[], &[]).await;
        // Two deliverers, each with a pool of its own on the same database,
        // as two servers would be; 60 messages a second for the site.
        let second_store = Store::open(&db.url).await.unwrap();
        let config = |rate| DelivererConfig {
            relay: server::mail::SmtpRelay::parse(&sink.url()).unwrap(),
            from: "Fixed Point <news@fixedpoint.example>".parse().unwrap(),
            public_url: PUBLIC.to_string(),
            rate_per_second: rate,
            connections: 2,
            retry_ms: 100,
            dkim: None,
        };
        let started = std::time::Instant::now();
        let _one = Deliverer(deliverer::spawn(db.store.clone(), config(60)));
        let _two = Deliverer(deliverer::spawn(second_store, config(60)));
        let counts = settled(&db.store, "next-one").await;
        let elapsed = started.elapsed();
        assert_eq!(counts.sent, 120);
        let received = by_address(&sink.received());
        assert_eq!(received.len(), 120);
        assert!(received.values().all(|list| list.len() == 1), "no row is sent by both instances");
        // 120 messages at 60 a second for the site take about two seconds;
        // two instances each keeping 60 a second of their own would take one.
        assert!(elapsed >= Duration::from_millis(1800), "the rate is the site's: {elapsed:?}");
    }
}
