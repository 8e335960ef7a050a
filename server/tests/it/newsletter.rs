//! The newsletter over HTTP and the command line, on both databases: import
//! of good and bad files, the paywall on every route and feed for every kind
//! of reader, private feed tokens, the flagship download, grants.

use axum::http::StatusCode;
use server::billing::StripeSubscription;
use server::newsletter::{seed_samples, Tier};

use crate::support::http::{app, fixedpoint, get, post_form, sign_in, BASE};
use crate::support::TestDb;

/// In the paid part of the Pro sample issue only.
const PRO_MARKER: &str = "The digest trick: hash the state, not the transcript.";
/// In the founder-only sample issue only.
const FOUNDER_MARKER: &str = "Founders read this first.";

const GOOD_FREE: &str = "---\ntitle: \"Free one\"\nslug: free-one\ndate: 2026-10-01\ntier: free\nsummary: A free issue.\n---\nEverything here is free.\n";
const GOOD_PAID: &str = "---\ntitle: Paid one\nslug: paid-one\ndate: 2026-10-08\ntier: pro\nsummary: Half paid.\n---\nThe opening.\n\n<!-- paywall -->\n\nPAID-ONE-SECRET lives here.\n";
const BAD_DATE: &str =
    "---\ntitle: Bad\nslug: bad-one\ndate: 2026-13-01\ntier: pro\nsummary: Bad date.\n---\nBADFILE-TEXT\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_stores_good_files_names_bad_ones_and_updates_by_slug() {
    for db in [crate::support::sqlite().await, crate::support::postgres().await] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("01-free.md"), GOOD_FREE).unwrap();
        std::fs::write(dir.path().join("02-paid.md"), GOOD_PAID).unwrap();
        std::fs::write(dir.path().join("03-bad.md"), BAD_DATE).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not an issue").unwrap();
        let dir_arg = dir.path().to_str().unwrap();

        let first = fixedpoint(&db.url, &["issues", "import", dir_arg]);
        assert_eq!(first.status.code(), Some(1), "a refused file makes the exit code say so");
        let (out, err) = (text(&first.stdout), text(&first.stderr));
        assert!(out.contains("01-free.md  free-one (free, new)"), "{out}");
        assert!(out.contains("02-paid.md  paid-one (pro, new)"), "{out}");
        assert!(out.contains("2 of 3 issue files imported"), "{out}");
        assert!(err.contains("03-bad.md:4: date: `2026-13-01` is not a date"), "{err}");
        let slugs: Vec<String> = sqlx::query_scalar("SELECT slug FROM issues ORDER BY slug")
            .fetch_all(db.store.pool())
            .await
            .unwrap();
        assert_eq!(slugs, ["free-one", "paid-one"], "nothing of the bad file is stored");

        // Fix the bad file, change one good file: re-import updates by slug.
        std::fs::write(dir.path().join("03-bad.md"), BAD_DATE.replace("2026-13-01", "2026-10-15")).unwrap();
        std::fs::write(dir.path().join("02-paid.md"), GOOD_PAID.replace("The opening.", "A new opening."))
            .unwrap();
        let second = fixedpoint(&db.url, &["issues", "import", dir_arg]);
        assert!(second.status.success(), "{}", text(&second.stderr));
        let out = text(&second.stdout);
        assert!(out.contains("free-one (free, unchanged)"), "{out}");
        assert!(out.contains("paid-one (pro, updated)"), "{out}");
        assert!(out.contains("bad-one (pro, new)"), "{out}");
        let record = db.store.issue_for("paid-one", Tier::Free).await.unwrap().unwrap();
        assert!(record.free_html.contains("A new opening."));
        assert_eq!(record.paid_html, None, "a free reader's query never carries the paid part");
        assert_eq!(db.store.issue_count().await.unwrap(), 3);

        // Two files with one slug: both refused, each naming the other.
        std::fs::write(dir.path().join("04-dup.md"), GOOD_FREE.replace("Free one", "Copy")).unwrap();
        let third = fixedpoint(&db.url, &["issues", "import", dir_arg]);
        assert_eq!(third.status.code(), Some(1));
        let err = text(&third.stderr);
        assert!(err.contains("01-free.md:3: slug: `free-one` is also the slug of 04-dup.md"), "{err}");
        assert!(err.contains("04-dup.md:3: slug: `free-one` is also the slug of 01-free.md"), "{err}");

        // Bad arguments are clear errors.
        let missing = fixedpoint(&db.url, &["issues", "import", "/no/such/dir"]);
        assert!(!missing.status.success());
        assert!(
            text(&missing.stderr).contains("/no/such/dir: cannot read the directory"),
            "{}",
            text(&missing.stderr)
        );
        let empty = tempfile::tempdir().unwrap();
        let none = fixedpoint(&db.url, &["issues", "import", empty.path().to_str().unwrap()]);
        assert!(text(&none.stderr).contains("no *.md issue files here"));
    }
}

/// Makes `email` a reader of `tier` (pro by grant, founder by a stored
/// Stripe subscription, as billing stores them) and signs them in.
async fn reader(app: &axum::Router, db: &TestDb, email: &str, tier: Tier) -> String {
    let cookie = sign_in(app, db, email).await;
    let account = db.store.ensure_account(email).await.unwrap();
    match tier {
        Tier::Free => {}
        Tier::Pro => {
            db.store.grant_pro(account.id, Some(30)).await.unwrap();
        }
        Tier::Founder => db
            .store
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
    cookie
}

both_backends! {
    async fn paid_text_reaches_only_readers_entitled_to_it(db: TestDb) {
        assert_eq!(seed_samples(&db.store).await.unwrap(), 3);
        assert_eq!(seed_samples(&db.store).await.unwrap(), 0, "samples load only into an empty archive");
        let app = app(&db);
        let free = reader(&app, &db, "free@example.com", Tier::Free).await;
        let pro = reader(&app, &db, "pro@example.com", Tier::Pro).await;
        let founder = reader(&app, &db, "founder@example.com", Tier::Founder).await;

        let routes = [
            "/",
            "/issues",
            "/issues/the-loop-that-could-not-stop",
            "/issues/fixed-points-and-cycles",
            "/issues/founders-field-notes",
            "/feed/rss.xml",
            "/feed/atom.xml",
            "/feed/feed.json",
            "/pricing",
            "/account",
        ];
        for (who, cookie, sees_pro, sees_founder) in [
            ("anonymous", None, false, false),
            ("free", Some(free.as_str()), false, false),
            ("pro", Some(pro.as_str()), true, false),
            ("founder", Some(founder.as_str()), true, true),
        ] {
            for route in routes {
                let reply = get(&app, route, cookie).await;
                assert!(reply.status.is_success() || reply.status == StatusCode::UNAUTHORIZED, "{who} {route}: {}", reply.status);
                // The public feeds carry free parts only, whoever asks.
                let public_feed = route.starts_with("/feed/");
                let on_issue_page = |slug: &str| route == format!("/issues/{slug}");
                assert_eq!(
                    reply.body.contains(PRO_MARKER),
                    sees_pro && !public_feed && on_issue_page("fixed-points-and-cycles"),
                    "{who} {route}: the pro marker"
                );
                assert_eq!(
                    reply.body.contains(FOUNDER_MARKER),
                    sees_founder && !public_feed && on_issue_page("founders-field-notes"),
                    "{who} {route}: the founder marker"
                );
            }
        }

        // What a locked reader sees instead: the free part and a card naming the tier.
        let locked = get(&app, "/issues/fixed-points-and-cycles", Some(&free)).await;
        assert!(locked.body.contains("data-testid=\"upgrade-card\""));
        assert!(locked.body.contains("The rest of this issue is for Pro readers"), "{}", locked.body);
        assert!(locked.body.contains("Last time"), "the free part is shown");
        let founder_only = get(&app, "/issues/founders-field-notes", Some(&pro)).await;
        assert!(founder_only.body.contains("This issue is for Founder readers"));
        let open = get(&app, "/issues/fixed-points-and-cycles", Some(&pro)).await;
        assert_eq!(open.headers["cache-control"], "private, no-store", "a reader's page is never cached for others");
        assert!(!open.body.contains("data-testid=\"upgrade-card\""));
        assert!(open.body.contains("hl-keyword"), "code is highlighted on the server");
        let feed = get(&app, "/feed/rss.xml", None).await;
        assert!(feed.body.contains("is for Pro readers: read it on Fixed Point"), "{}", feed.body);
        assert!(feed.body.contains(&format!("{BASE}/issues/fixed-points-and-cycles")));

        // A Stripe subscription Stripe has said nothing about for a week past
        // its period's end gives nothing.
        let stale = db.store.ensure_account("stale@example.com").await.unwrap();
        db.store
            .upsert_stripe_subscription(&StripeSubscription {
                id: "sub_stale".into(),
                customer_id: "cus_stale".into(),
                account_id: stale.id,
                tier: Tier::Pro,
                status: "active".into(),
                price_id: Some("price_pro_monthly".into()),
                current_period_end: Some(server::store::now_millis() - 8 * 86_400_000),
                cancel_at_period_end: false,
                created: 0,
            })
            .await
            .unwrap();
        assert_eq!(db.store.reader_access(stale.id).await.unwrap().tier, Tier::Free);

        let missing = get(&app, "/issues/no-such-issue", None).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        let archive = get(&app, "/issues", None).await;
        assert!(archive.body.contains("href=\"/feed/rss.xml\" rel=\"alternate\""), "feed autodiscovery");
        let newest = archive.body.find("founders-field-notes").unwrap();
        let oldest = archive.body.find("the-loop-that-could-not-stop").unwrap();
        assert!(newest < oldest, "newest first");
    }
}

/// The private feed base URL shown on the account page after a rotation.
fn shown_feed_url(body: &str) -> String {
    let at =
        body.find("data-testid=\"feed-url\"").unwrap_or_else(|| panic!("the new feed URL is shown: {body}"));
    let rest = &body[at..];
    let start = rest.find('>').unwrap() + 1;
    rest[start..].split('<').next().unwrap().to_string()
}

both_backends! {
    async fn private_feeds_carry_the_tier_and_rotate_out_old_urls(db: TestDb) {
        seed_samples(&db.store).await.unwrap();
        let app = app(&db);
        let free = reader(&app, &db, "free@example.com", Tier::Free).await;
        let pro = reader(&app, &db, "pro@example.com", Tier::Pro).await;

        let refused = post_form(&app, "/account", "action=rotate_feed", Some(&free)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(refused.body.contains("Private feeds are for Pro and Founder readers"));

        let made = post_form(&app, "/account", "action=rotate_feed", Some(&pro)).await;
        assert_eq!(made.status, StatusCode::OK, "{}", made.body);
        let first = shown_feed_url(&made.body);
        assert!(first.starts_with(&format!("{BASE}/feed/fpf_")), "{first}");
        let path = first.trim_start_matches(BASE).to_string();
        for file in ["rss.xml", "atom.xml", "feed.json"] {
            let feed = get(&app, &format!("{path}{file}"), None).await;
            assert_eq!(feed.status, StatusCode::OK, "{file}");
            assert!(feed.body.contains("The digest trick"), "{file}: the pro reader's feed has the full text");
            assert!(!feed.body.contains(FOUNDER_MARKER), "{file}: but not the founder issue");
        }
        // The three feed URLs are shown whole, and the base URL itself
        // answers with them.
        for file in ["rss.xml", "atom.xml", "feed.json"] {
            assert!(made.body.contains(&format!("{first}{file}</code>")), "{file} shown whole");
        }
        let index = get(&app, &path, None).await;
        assert_eq!(index.status, StatusCode::OK, "the base URL answers");
        assert!(index.body.contains(&format!("RSS:       {first}rss.xml")), "{}", index.body);
        assert!(index.body.contains(&format!("JSON Feed: {first}feed.json")), "{}", index.body);
        assert_eq!(get(&app, "/feed/fpf_guess/", None).await.status, StatusCode::NOT_FOUND);
        let token = path.trim_start_matches("/feed/").trim_end_matches('/');
        let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM feed_tokens").fetch_all(db.store.pool()).await.unwrap();
        assert_eq!(stored.len(), 1);
        assert!(!stored[0].contains(token) && stored[0].len() == 64, "only a hash is stored");

        let rotated = post_form(&app, "/account", "action=rotate_feed", Some(&pro)).await;
        let second = shown_feed_url(&rotated.body);
        assert_ne!(first, second);
        assert_eq!(get(&app, &format!("{path}rss.xml"), None).await.status, StatusCode::NOT_FOUND, "the old URL is dead");
        let second_path = second.trim_start_matches(BASE).to_string();
        assert_eq!(get(&app, &format!("{second_path}rss.xml"), None).await.status, StatusCode::OK);

        let revoked = post_form(&app, "/account", "action=revoke_feed", Some(&pro)).await;
        assert!(revoked.body.contains("no longer works"));
        assert_eq!(get(&app, &format!("{second_path}rss.xml"), None).await.status, StatusCode::NOT_FOUND);
        assert_eq!(get(&app, "/feed/fpf_guess/rss.xml", None).await.status, StatusCode::NOT_FOUND);
        assert_eq!(get(&app, "/feed/nothing.xml", None).await.status, StatusCode::NOT_FOUND);
        let unknown = post_form(&app, "/account", "action=explode", Some(&pro)).await;
        assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
        let signed_out = post_form(&app, "/account", "action=rotate_feed", None).await;
        assert_eq!(signed_out.status, StatusCode::UNAUTHORIZED);
    }
}

both_backends! {
    async fn the_flagship_download_is_for_pro_and_founder_only(db: TestDb) {
        let app = app(&db);
        let free = reader(&app, &db, "free@example.com", Tier::Free).await;
        let pro = reader(&app, &db, "pro@example.com", Tier::Pro).await;
        assert_eq!(get(&app, "/downloads/flagship", Some(&pro)).await.status, StatusCode::NOT_FOUND, "not uploaded yet");
        db.store.put_download("flagship", "fixedpoint-flagship.tar.gz", b"ARCHIVE-BYTES").await.unwrap();
        assert_eq!(get(&app, "/downloads/flagship", None).await.status, StatusCode::UNAUTHORIZED);
        let refused = get(&app, "/downloads/flagship", Some(&free)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(!refused.body.contains("ARCHIVE-BYTES"));
        let got = get(&app, "/downloads/flagship", Some(&pro)).await;
        assert_eq!(got.status, StatusCode::OK);
        assert_eq!(got.body, "ARCHIVE-BYTES");
        assert!(got.headers.get("content-disposition").unwrap().to_str().unwrap().contains("fixedpoint-flagship.tar.gz"));
        let account = get(&app, "/account", Some(&pro)).await;
        assert!(account.body.contains("data-testid=\"flagship-download\""));
        assert!(!get(&app, "/account", Some(&free)).await.body.contains("flagship-download"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grant_feed_url_and_flagship_commands() {
    let temp = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", temp.path().join("cli.db").display());

    let founder = fixedpoint(&url, &["grant", "a@example.com", "--tier", "founder"]);
    assert!(!founder.status.success());
    assert!(text(&founder.stderr).contains("founder seats are sold through checkout, never granted"));
    let zero = fixedpoint(&url, &["grant", "a@example.com", "--tier", "pro", "--days", "0"]);
    assert!(!zero.status.success());
    assert!(text(&zero.stderr).contains("--days 0"));
    let bad_email = fixedpoint(&url, &["grant", "not-an-email", "--tier", "pro"]);
    assert!(!bad_email.status.success());

    let not_paying = fixedpoint(&url, &["feed-url", "b@example.com"]);
    assert!(!not_paying.status.success());
    assert!(text(&not_paying.stderr).contains("no account has the email"), "{}", text(&not_paying.stderr));

    let granted = fixedpoint(&url, &["grant", "A@Example.com", "--tier", "pro", "--days", "30"]);
    assert!(granted.status.success(), "{}", text(&granted.stderr));
    assert!(text(&granted.stdout).contains("granted Pro to a@example.com until"));
    let feed = fixedpoint(&url, &["feed-url", "a@example.com"]);
    assert!(feed.status.success(), "{}", text(&feed.stderr));
    let last = text(&feed.stdout).lines().last().unwrap().to_string();
    assert!(last.starts_with("https://fixedpoint.example/feed/fpf_") && last.ends_with('/'), "{last}");

    let free_reader = fixedpoint(&url, &["grant", "c@example.com", "--tier", "pro", "--days", "1"]);
    assert!(free_reader.status.success());

    let archive = temp.path().join("flagship.tar.gz");
    std::fs::write(&archive, b"tarball").unwrap();
    let uploaded = fixedpoint(&url, &["flagship", "upload", archive.to_str().unwrap()]);
    assert!(uploaded.status.success(), "{}", text(&uploaded.stderr));
    assert!(text(&uploaded.stdout).contains("published flagship.tar.gz (7 bytes"));
    let missing = fixedpoint(&url, &["flagship", "upload", "/no/such/file"]);
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("/no/such/file: cannot read it"));
}
