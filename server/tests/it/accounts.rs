//! Sign-in, sessions and their protections over HTTP, on both databases,
//! through the real router; and the operator's account commands.

use crate::support::http::{app, fixedpoint, form_post, get, mailed_token, post_form, send, sign_in, BASE};
use axum::body::Body;
use axum::http::{header, Request, StatusCode};

both_backends! {
    async fn a_mailed_link_signs_in_once_through_the_confirm_button(db: TestDb) {
        let app = app(&db);
        let asked = post_form(&app, "/signin", "email=Ada%40Example.com", None).await;
        assert_eq!(asked.status, StatusCode::SEE_OTHER);
        assert_eq!(asked.headers.get(header::LOCATION).unwrap(), "/signin?sent=1");
        let token = mailed_token(&db, "ada@example.com").await;
        assert!(token.starts_with("fps_") && token.len() == 68, "{token}");

        // Opening the link (what a mail scanner does) signs nobody in.
        let opened = get(&app, &format!("/signin/verify?token={token}"), None).await;
        assert_eq!(opened.status, StatusCode::OK);
        assert!(opened.headers.get(header::SET_COOKIE).is_none());
        assert!(opened.body.contains("data-testid=\"verify-submit\""));
        assert!(opened.body.contains(&format!("value=\"{token}\"")));

        let verified = post_form(&app, "/signin/verify", &format!("token={token}"), None).await;
        assert_eq!(verified.status, StatusCode::SEE_OTHER, "{}", verified.body);
        assert_eq!(verified.headers.get(header::LOCATION).unwrap(), "/account");
        let set_cookie = verified.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
        for flag in ["fp_session=fpc_", "HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=2592000"] {
            assert!(set_cookie.contains(flag), "{flag} in {set_cookie}");
        }
        let cookie = set_cookie.split(';').next().unwrap();
        let account = get(&app, "/account", Some(cookie)).await;
        assert_eq!(account.status, StatusCode::OK);
        assert!(account.body.contains("ada@example.com"), "{}", account.body);
        let home = get(&app, "/", Some(cookie)).await;
        assert!(home.body.contains("href=\"/account\""), "the header offers the account");

        // The link works once.
        let again = post_form(&app, "/signin/verify", &format!("token={token}"), None).await;
        assert_eq!(again.status, StatusCode::BAD_REQUEST);
        assert!(again.body.contains("token: this sign-in link has been used"));
        assert!(again.headers.get(header::SET_COOKIE).is_none());

        // The secrets are stored only as hashes.
        let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM signin_tokens").fetch_all(db.store.pool()).await.unwrap();
        assert!(stored.iter().all(|hash| hash.len() == 64 && !hash.contains("fps_")));
        let sessions: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM sessions").fetch_all(db.store.pool()).await.unwrap();
        assert!(sessions.iter().all(|hash| !cookie.contains(hash.as_str())));
    }
}

both_backends! {
    async fn signing_in_returns_to_the_page_the_reader_was_on_and_nowhere_else(db: TestDb) {
        let app = app(&db);
        // From an issue's paywall: the link in the mail carries the issue,
        // its confirm page keeps it, and the button lands on it.
        let signin = get(&app, "/signin?next=%2Fissues%2Ffixed-points-and-cycles", None).await;
        assert!(signin.body.contains("name=\"next\" value=\"/issues/fixed-points-and-cycles\""), "{}", signin.body);
        let asked = post_form(&app, "/signin", "email=ada%40example.com&next=%2Fissues%2Ffixed-points-and-cycles", None).await;
        assert_eq!(asked.headers.get(header::LOCATION).unwrap(), "/signin?sent=1", "the same answer as ever");
        let outbox = db.store.outbox(5).await.unwrap();
        let mail = &outbox.iter().find(|m| m.recipient == "ada@example.com").unwrap().body;
        let link = mail.split_whitespace().find(|word| word.contains("/signin/verify?")).unwrap();
        let token = mailed_token(&db, "ada@example.com").await;
        assert_eq!(link, format!("{BASE}/signin/verify?next=/issues/fixed-points-and-cycles&token={token}"));
        let confirm = get(&app, link.strip_prefix(BASE).unwrap(), None).await;
        assert!(confirm.body.contains("name=\"next\" value=\"/issues/fixed-points-and-cycles\""), "{}", confirm.body);
        let verified = post_form(&app, "/signin/verify", &format!("token={token}&next=%2Fissues%2Ffixed-points-and-cycles"), None).await;
        assert_eq!(verified.status, StatusCode::SEE_OTHER);
        assert_eq!(verified.headers.get(header::LOCATION).unwrap(), "/issues/fixed-points-and-cycles");

        // From the pricing page, with the issue it was opened from.
        let token = db.store.create_signin_token("ada@example.com").await.unwrap();
        let next = app::return_to::query_encode("/pricing?next=/issues/x");
        let verified = post_form(&app, "/signin/verify", &format!("token={token}&next={next}"), None).await;
        assert_eq!(verified.headers.get(header::LOCATION).unwrap(), "/pricing?next=/issues/x");

        // Anything that would leave the site (or go round in circles) signs
        // in all the same and lands on the account page; the mailed link
        // does not carry it.
        let hostile = [
            "//evil.example", "/\\evil.example", "\\\\evil.example", "https://evil.example", "https:evil.example",
            "javascript:alert(1)", "/\t/evil.example", "/%2F%2Fevil.example", "/%5Cevil.example",
            "/%252F%252Fevil.example", "/%09/evil.example", "/\u{202e}evil.example", "evil.example", "/signin", "",
        ];
        for (n, next) in hostile.iter().enumerate() {
            let encoded = app::return_to::query_encode(next);
            let page = get(&app, &format!("/signin?next={encoded}"), None).await;
            assert!(!page.body.contains("evil.example"), "{next:?}: {}", page.body);
            let token = db.store.create_signin_token(&format!("h{n}@example.com")).await.unwrap();
            let verified = post_form(&app, "/signin/verify", &format!("token={token}&next={encoded}"), None).await;
            assert_eq!(verified.status, StatusCode::SEE_OTHER, "{next:?}");
            assert_eq!(verified.headers.get(header::LOCATION).unwrap(), "/account", "{next:?}");
        }
        post_form(&app, "/signin", "email=bo%40example.com&next=%2F%2Fevil.example", None).await;
        let outbox = db.store.outbox(5).await.unwrap();
        let mail = &outbox.iter().find(|m| m.recipient == "bo@example.com").unwrap().body;
        assert!(!mail.contains("evil") && mail.contains("/signin/verify?token=fps_"), "{mail}");
    }
}

both_backends! {
    async fn expired_altered_and_missing_tokens_are_refused(db: TestDb) {
        let app = app(&db);
        post_form(&app, "/signin", "email=bo%40example.com", None).await;
        let token = mailed_token(&db, "bo@example.com").await;
        let mut altered = token.clone();
        let last = altered.pop().unwrap();
        altered.push(if last == '0' { '1' } else { '0' });
        for bad in [altered.as_str(), "", "fps_short", "fpc_0000", "%00%FF"] {
            let reply = post_form(&app, "/signin/verify", &format!("token={bad}"), None).await;
            assert_eq!(reply.status, StatusCode::BAD_REQUEST, "token {bad:?}");
            assert!(reply.headers.get(header::SET_COOKIE).is_none());
        }
        sqlx::query("UPDATE signin_tokens SET expires_at = 0").execute(db.store.pool()).await.unwrap();
        let expired = post_form(&app, "/signin/verify", &format!("token={token}"), None).await;
        assert_eq!(expired.status, StatusCode::BAD_REQUEST);
        let accounts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM accounts").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(accounts, 0, "no account was created by refused tokens");
    }
}

both_backends! {
    async fn the_request_form_answers_the_same_and_names_a_bad_field(db: TestDb) {
        let app = app(&db);
        let known = sign_in(&app, &db, "cy@example.com").await;
        assert!(!known.is_empty());
        let for_known = post_form(&app, "/signin", "email=cy%40example.com", None).await;
        let for_unknown = post_form(&app, "/signin", "email=nobody%40example.com", None).await;
        assert_eq!(for_known.status, for_unknown.status);
        assert_eq!(for_known.headers.get(header::LOCATION), for_unknown.headers.get(header::LOCATION));
        assert_eq!(for_known.body, for_unknown.body);

        let bad = post_form(&app, "/signin", "email=not-an-address", None).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        assert!(bad.body.contains("email: enter an address"), "{}", bad.body);
        assert!(bad.body.contains("value=\"not-an-address\""), "what was typed is kept");
        let hostile = post_form(&app, "/signin", "email=%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E", None).await;
        assert_eq!(hostile.status, StatusCode::BAD_REQUEST);
        assert!(!hostile.body.contains("<script>alert(1)</script>"));
        let huge = post_form(&app, "/signin", &format!("email={}", "a".repeat(10_000)), None).await;
        assert_eq!(huge.status, StatusCode::PAYLOAD_TOO_LARGE);

        // Display names, brackets and invisible characters around someone's
        // address are refused, so no variant walks around the per-address
        // limit and nothing is mailed to the address inside.
        for variant in ["%227%22%3Cvictim%40x.test%3E", "Victim+%3Cvictim%40x.test%3E", "%E2%80%AEvictim%40x.test", "victim%E2%80%8B%40x.test"] {
            let refused = post_form(&app, "/signin", &format!("email={variant}"), None).await;
            assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{variant}");
        }
        let mailed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox WHERE recipient LIKE '%victim%'")
            .fetch_one(db.store.pool())
            .await
            .unwrap();
        assert_eq!(mailed, 0);
    }
}

both_backends! {
    async fn cross_site_posts_are_refused(db: TestDb) {
        let app = app(&db);
        let cross = send(
            &app,
            form_post("/signin").header("sec-fetch-site", "cross-site").body(Body::from("email=x%40example.com")).unwrap(),
            "127.0.0.1:1",
        )
        .await;
        assert_eq!(cross.status, StatusCode::FORBIDDEN);
        let evil = send(
            &app,
            form_post("/signout").header(header::ORIGIN, "http://evil.example").body(Body::empty()).unwrap(),
            "127.0.0.1:1",
        )
        .await;
        assert_eq!(evil.status, StatusCode::FORBIDDEN);
        let same = send(
            &app,
            form_post("/signin").header(header::ORIGIN, BASE).body(Body::from("email=x%40example.com")).unwrap(),
            "127.0.0.1:1",
        )
        .await;
        assert_eq!(same.status, StatusCode::SEE_OTHER);
        let outbox = db.store.outbox(10).await.unwrap();
        assert_eq!(outbox.len(), 1, "only the same-origin request sent mail");
    }
}

both_backends! {
    async fn the_21st_request_in_a_minute_from_one_address_gets_429(db: TestDb) {
        let app = app(&db);
        for index in 0..20 {
            let request = form_post("/signin")
                .body(Body::from(format!("email=user{index}%40example.com")))
                .unwrap();
            assert_eq!(send(&app, request, "10.0.0.7:1").await.status, StatusCode::SEE_OTHER, "request {index}");
        }
        let request = form_post("/signin").body(Body::from("email=late%40example.com")).unwrap();
        let refused = send(&app, request, "10.0.0.7:1").await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(refused.headers.get(header::RETRY_AFTER).is_some());
        // Another address is not affected; one email gets at most five links.
        for _ in 0..5 {
            let request = form_post("/signin").body(Body::from("email=dee%40example.com")).unwrap();
            assert_eq!(send(&app, request, "10.0.0.8:1").await.status, StatusCode::SEE_OTHER);
        }
        let request = form_post("/signin").body(Body::from("email=dee%40example.com")).unwrap();
        assert_eq!(send(&app, request, "10.0.0.9:1").await.status, StatusCode::TOO_MANY_REQUESTS);
    }
}

both_backends! {
    async fn signing_out_ends_the_session_and_account_needs_one(db: TestDb) {
        let app = app(&db);
        let signed_out = get(&app, "/account", None).await;
        assert_eq!(signed_out.status, StatusCode::UNAUTHORIZED);
        assert!(signed_out.body.contains("You are not signed in"));
        let cookie = sign_in(&app, &db, "eve@example.com").await;
        assert_eq!(get(&app, "/account", Some(&cookie)).await.status, StatusCode::OK);
        let out = post_form(&app, "/signout", "", Some(&cookie)).await;
        assert_eq!(out.status, StatusCode::SEE_OTHER);
        assert!(out.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap().contains("Max-Age=0"));
        assert_eq!(get(&app, "/account", Some(&cookie)).await.status, StatusCode::UNAUTHORIZED);
        // A forged or expired cookie is nobody.
        assert_eq!(get(&app, "/account", Some("fp_session=fpc_forged")).await.status, StatusCode::UNAUTHORIZED);
    }
}

both_backends! {
    async fn racing_redeemers_get_one_session(db: TestDb) {
        let secret = db.store.create_signin_token("fay@example.com").await.unwrap();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let store = db.store.clone();
            let secret = secret.clone();
            tasks.push(tokio::spawn(async move { store.redeem_signin_token(&secret).await }));
        }
        let mut winners = 0;
        for task in tasks {
            if let Ok(Some(_)) = task.await.unwrap() {
                winners += 1;
            }
        }
        assert_eq!(winners, 1);
        let sessions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sessions").fetch_one(db.store.pool()).await.unwrap();
        assert_eq!(sessions, 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_commands_for_the_operator() {
    let temp = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", temp.path().join("cli.db").display());
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();

    let link = fixedpoint(&url, &["login-link", "Gil@Example.com"]);
    assert!(link.status.success(), "{}", text(&link.stderr));
    let last = text(&link.stdout).lines().last().unwrap().to_string();
    assert!(last.starts_with("https://fixedpoint.example/signin/verify?token=fps_"), "{last}");
    let bad = fixedpoint(&url, &["login-link", "not an email"]);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("not a valid address"), "{}", text(&bad.stderr));

    let grant = fixedpoint(&url, &["admin", "grant", "gil@example.com"]);
    assert!(grant.status.success(), "{}", text(&grant.stderr));
    assert!(fixedpoint(&url, &["team", "create", "acme"]).status.success());
    let added = fixedpoint(&url, &["team", "add-member", "acme", "hal@example.com", "--admin"]);
    assert!(added.status.success(), "{}", text(&added.stderr));
    let twice = fixedpoint(&url, &["team", "add-member", "acme", "hal@example.com"]);
    assert!(text(&twice.stdout).contains("already a member"));
    let nowhere = fixedpoint(&url, &["team", "add-member", "nope", "hal@example.com"]);
    assert!(!nowhere.status.success());
    assert!(text(&nowhere.stderr).contains("no team has the slug"), "{}", text(&nowhere.stderr));

    // The link printed by the command signs in, and the account shows the
    // operator role and the team.
    let store = server::store::Store::open(&url).await.unwrap();
    let token = last.split("token=").nth(1).unwrap();
    let (account, _) = store.redeem_signin_token(token).await.unwrap().expect("the printed link works");
    assert!(account.is_operator);
    let hal = store.ensure_account("hal@example.com").await.unwrap();
    let teams = store.memberships(hal.id).await.unwrap();
    assert_eq!(teams.len(), 1);
    assert_eq!(teams[0].team.slug, "acme");
    store.close().await;
}

both_backends! {
    async fn team_pages_keep_teams_apart_and_only_admins_act(db: TestDb) {
        let app = app(&db);
        use server::accounts::TeamRole;
        db.store.create_team("acme").await.unwrap();
        db.store.create_team("beta").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Admin).await.unwrap();
        db.store.add_team_member("acme", "cy@example.com", TeamRole::Member).await.unwrap();
        db.store.add_team_member("beta", "bo@example.com", TeamRole::Admin).await.unwrap();
        let beta_token = db.store.create_loop_token("beta", "beta-ci").await.unwrap();
        let ada = sign_in(&app, &db, "ada@example.com").await;
        let bo = sign_in(&app, &db, "bo@example.com").await;
        let cy = sign_in(&app, &db, "cy@example.com").await;

        // Signed out: 401; a non-member: 404, for an existing team and a
        // missing one alike.
        assert_eq!(get(&app, "/teams/acme", None).await.status, StatusCode::UNAUTHORIZED);
        let outsider = get(&app, "/teams/acme", Some(&bo)).await;
        assert_eq!(outsider.status, StatusCode::NOT_FOUND);
        assert!(!outsider.body.contains("ada@example.com"));
        assert_eq!(get(&app, "/teams/nope", Some(&bo)).await.status, StatusCode::NOT_FOUND);
        let page = get(&app, "/teams/acme", Some(&ada)).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains("cy@example.com") && !page.body.contains("beta-ci"));
        let account = get(&app, "/account", Some(&ada)).await;
        assert!(account.body.contains("href=\"/teams/acme\""));

        // Acting: outsiders 404, members 403, admins succeed.
        assert_eq!(post_form(&app, "/teams/acme", "action=create_token&name=x", Some(&bo)).await.status, StatusCode::NOT_FOUND);
        assert_eq!(post_form(&app, "/teams/acme", "action=create_token&name=x", Some(&cy)).await.status, StatusCode::FORBIDDEN);
        assert_eq!(post_form(&app, "/teams/acme", "action=create_token&name=x", None).await.status, StatusCode::UNAUTHORIZED);
        let created = post_form(&app, "/teams/acme", "action=create_token&name=ci", Some(&ada)).await;
        assert_eq!(created.status, StatusCode::OK, "{}", created.body);
        let at = created.body.find("fpl_").expect("the new token is shown once");
        let secret: String = created.body[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        assert!(db.store.authenticate_loop_token(&secret).await.unwrap().is_some());
        let again = get(&app, "/teams/acme", Some(&ada)).await;
        assert!(!again.body.contains(&secret), "shown only once");
        let bad = post_form(&app, "/teams/acme", "action=create_token&name=", Some(&ada)).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        assert!(bad.body.contains("name: "));

        // Revoking: another team's token id is not found from here; our own
        // stops working at once.
        let beta_revoke = format!("action=revoke&token_id={}", beta_token.token.id);
        assert_eq!(post_form(&app, "/teams/acme", &beta_revoke, Some(&ada)).await.status, StatusCode::NOT_FOUND);
        assert!(db.store.authenticate_loop_token(&beta_token.secret).await.unwrap().is_some());
        let identity = db.store.authenticate_loop_token(&secret).await.unwrap().unwrap();
        let revoke = format!("action=revoke&token_id={}", identity.token_id);
        assert_eq!(post_form(&app, "/teams/acme", &revoke, Some(&cy)).await.status, StatusCode::FORBIDDEN);
        assert_eq!(post_form(&app, "/teams/acme", &revoke, Some(&ada)).await.status, StatusCode::SEE_OTHER);
        let odd = post_form(&app, "/teams/acme", "action=dance", Some(&ada)).await;
        assert_eq!(odd.status, StatusCode::BAD_REQUEST);
        assert!(odd.body.contains("action: unknown"));
        assert!(db.store.authenticate_loop_token(&secret).await.unwrap().is_none());

        // Members: invite (mails a note), refuse bad input, keep one admin.
        let invited = post_form(&app, "/teams/acme", "action=invite&email=dan%40example.com", Some(&ada)).await;
        assert_eq!(invited.status, StatusCode::OK);
        assert!(db.store.outbox(10).await.unwrap().iter().any(|m| m.recipient == "dan@example.com"));
        let bad = post_form(&app, "/teams/acme", "action=invite&email=nope", Some(&ada)).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST);
        let last = post_form(&app, "/teams/acme", "action=remove&email=ada%40example.com", Some(&ada)).await;
        assert_eq!(last.status, StatusCode::CONFLICT);
        let removed = post_form(&app, "/teams/acme", "action=remove&email=cy%40example.com", Some(&ada)).await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER);
        assert_eq!(get(&app, "/teams/acme", Some(&cy)).await.status, StatusCode::NOT_FOUND, "a removed member is out");
    }
}

both_backends! {
    async fn the_admin_page_is_for_operators_only(db: TestDb) {
        let app = app(&db);
        assert_eq!(get(&app, "/admin", None).await.status, StatusCode::UNAUTHORIZED);
        let reader = sign_in(&app, &db, "reader@example.com").await;
        let refused = get(&app, "/admin/outbox", Some(&reader)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(!refused.body.contains("Your Fixed Point sign-in link"), "no outbox for readers");
        db.store.grant_operator("op@example.com").await.unwrap();
        let operator = sign_in(&app, &db, "op@example.com").await;
        let page = get(&app, "/admin/outbox", Some(&operator)).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains("reader@example.com"));
        assert!(page.body.contains("Your Fixed Point sign-in link"), "the outbox is shown");
        assert!(page.body.contains("Founder seats: 0 taken of 100"));
    }
}

both_backends! {
    async fn the_dashboard_shows_a_teams_loops_to_its_members_only(db: TestDb) {
        let app = app(&db);
        use server::accounts::TeamRole;
        db.store.create_team("acme").await.unwrap();
        db.store.create_team("beta").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Member).await.unwrap();
        db.store.add_team_member("beta", "bo@example.com", TeamRole::Member).await.unwrap();
        let token = db.store.create_loop_token("acme", "ci").await.unwrap().secret;
        let rounds = [
            r#"{"round":1,"state":"aaaa1111","findings":[{"target":{"id":"a"},"severity":"blocking","criterion":"c","message":"m"},{"target":{"id":"b"},"severity":"warning","criterion":"c","message":"m"}]}"#,
            r#"{"round":2,"state":"bbbb2222","findings":[{"target":{"id":"a"},"severity":"blocking","criterion":"c","message":"m"}],"spent":{"usd":0.25}}"#,
            r#"{"round":3,"state":"bbbb2222","findings":[{"target":{"id":"a"},"severity":"blocking","criterion":"c","message":"m"}]}"#,
        ];
        for body in rounds {
            let request = Request::post("/api/v1/loops/drafter/rounds")
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body))
                .unwrap();
            let reply = send(&app, request, "127.0.0.1:2").await;
            assert_eq!(reply.status, StatusCode::OK, "{body}: {}", reply.body);
        }
        let ada = sign_in(&app, &db, "ada@example.com").await;
        let bo = sign_in(&app, &db, "bo@example.com").await;

        assert_eq!(get(&app, "/loops", None).await.status, StatusCode::UNAUTHORIZED);
        let list = get(&app, "/loops", Some(&ada)).await;
        assert_eq!(list.status, StatusCode::OK);
        assert!(list.body.contains("data-testid=\"loop-drafter\""), "{}", list.body);
        // The list says what the run is doing: the same state judged again
        // with a blocking finding is a wedge, and since when.
        assert!(list.body.contains("data-diagnosis=\"wedged\""), "{}", list.body);
        assert!(list.body.contains("Wedged on state bbbb2222 since round 2, 1 blocking finding"), "{}", list.body);
        assert!(list.body.contains("$0.25"), "the run's spend: {}", list.body);
        let other = get(&app, "/loops", Some(&bo)).await;
        assert!(!other.body.contains("drafter"), "another team's loop is not listed");

        let page = get(&app, "/loops/drafter", Some(&ada)).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains("<svg"), "the chart is drawn on the server");
        assert!(page.body.contains("aaaa1111 → bbbb2222 ×2"), "repeats collapse");
        assert!(page.body.contains("Spent so far: $0.25"), "{}", page.body);
        assert!(page.body.contains("data-testid=\"diagnosis-headline\">Wedged on state bbbb2222"), "{}", page.body);
        assert_eq!(get(&app, "/loops/drafter", Some(&bo)).await.status, StatusCode::NOT_FOUND);
        assert_eq!(get(&app, "/loops/drafter?team=beta", Some(&ada)).await.status, StatusCode::NOT_FOUND);
        assert_eq!(get(&app, "/loops/nothing", Some(&ada)).await.status, StatusCode::NOT_FOUND);
        assert_eq!(get(&app, "/loops/drafter", None).await.status, StatusCode::UNAUTHORIZED);

        // A loop name with characters that mean something in a URL, and a dot
        // (a path with a dot is still a page).
        let odd = Request::post("/api/v1/loops/odd.name%20v2%3F%23%25/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"round":1,"state":"e1","findings":[]}"#))
            .unwrap();
        assert_eq!(send(&app, odd, "127.0.0.1:2").await.status, StatusCode::OK);
        let list = get(&app, "/loops", Some(&ada)).await;
        assert!(list.body.contains("href=\"/loops/odd.name%20v2%3F%23%25?team=acme\""), "{}", list.body);
        let odd_page = get(&app, "/loops/odd.name%20v2%3F%23%25?team=acme", Some(&ada)).await;
        assert_eq!(odd_page.status, StatusCode::OK);
        assert!(odd_page.body.contains("odd.name v2?#%"), "a dot in the name is not a file");

        // Two rounds compared by finding key: the last two by default.
        assert!(page.body.contains("Persisting (1)") && page.body.contains("a blocking c"), "{}", page.body);
        let picked = get(&app, "/loops/drafter?a=1&b=2", Some(&ada)).await;
        let resolved = picked.body.find("data-testid=\"diff-resolved\"").unwrap();
        assert!(picked.body[resolved..].contains("b warning c"), "round 2 resolved the warning");
        assert!(picked.body.contains("New (0)"));
        let missing = get(&app, "/loops/drafter?a=1&b=99", Some(&ada)).await;
        assert_eq!(missing.status, StatusCode::OK);
        assert!(!missing.body.contains("Between two rounds"), "no diff for a round that does not exist");

        // STOP and STEER: members only, pending until the next round takes them.
        assert_eq!(post_form(&app, "/loops/drafter", "action=stop", Some(&bo)).await.status, StatusCode::NOT_FOUND);
        assert_eq!(post_form(&app, "/loops/drafter", "action=stop", None).await.status, StatusCode::UNAUTHORIZED);
        let odd = post_form(&app, "/loops/drafter", "action=explode", Some(&ada)).await;
        assert_eq!(odd.status, StatusCode::BAD_REQUEST);
        let empty = post_form(&app, "/loops/drafter", "action=steer&note=%20", Some(&ada)).await;
        assert_eq!(empty.status, StatusCode::BAD_REQUEST);
        assert!(empty.body.contains("steer must be"), "{}", empty.body);
        let stop = post_form(&app, "/loops/drafter?team=acme", "action=stop", Some(&ada)).await;
        assert_eq!(stop.status, StatusCode::OK, "{}", stop.body);
        let steer = post_form(&app, "/loops/drafter", "action=steer&note=focus+on+tests", Some(&ada)).await;
        assert!(steer.body.contains("Pending until the loop&#x27;s next round: STOP and STEER")
            || steer.body.contains("Pending until the loop's next round: STOP and STEER"), "{}", steer.body);
        let request = Request::post("/api/v1/loops/drafter/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"round":4,"state":"cccc3333","findings":[]}"#))
            .unwrap();
        let answer = send(&app, request, "127.0.0.1:2").await;
        assert!(answer.body.contains("\"stop\":true") && answer.body.contains("focus on tests"), "{}", answer.body);
        let ended = Request::post("/api/v1/loops/drafter/rounds")
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"round":5,"state":"dddd4444","findings":[],"exit":"E1"}"#))
            .unwrap();
        assert_eq!(send(&app, ended, "127.0.0.1:2").await.status, StatusCode::OK);
        let after = get(&app, "/loops/drafter", Some(&ada)).await;
        let runs = after.body.find("data-testid=\"runs\"").unwrap();
        assert!(after.body[runs..].contains("E1 (detection)"), "the run's exit and its kind");
        assert!(!after.body.contains("data-testid=\"pending\""), "delivered once, then no longer pending");
    }
}

both_backends! {
    async fn a_long_runs_page_shows_its_latest_rounds_and_links_older_ones(db: TestDb) {
        let app = app(&db);
        use server::accounts::TeamRole;
        let team = db.store.create_team("acme").await.unwrap();
        db.store.add_team_member("acme", "ada@example.com", TeamRole::Member).await.unwrap();
        let reports = (1..=130u32).map(|number| {
            // Twenty rounds sit on one state in the middle of the run.
            let state = if (50..70).contains(&number) { "stuck".to_string() } else { format!("s{number}") };
            server::loops::RoundReport::from_json(
                format!(r#"{{"round":{number},"state":"{state}","findings":[]}}"#).as_bytes(),
            )
            .unwrap()
        });
        for report in reports {
            db.store.ingest_round(team.id, "long", &report).await.unwrap();
        }
        let ada = sign_in(&app, &db, "ada@example.com").await;

        let page = get(&app, "/loops/long", Some(&ada)).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains("Rounds 31–130 of 130."), "{}", page.body);
        let table = page.body.find("data-testid=\"rounds\"").unwrap();
        assert!(page.body[table..].contains("aria-label=\"Open round 31\""), "each round has its link");
        assert!(!page.body[table..].contains("aria-label=\"Open round 30\""), "round 30 is on the older page");
        assert!(page.body.contains("href=\"/loops/long?team=acme&amp;run=run-1&amp;before=31\""), "{}", page.body);
        // The chart summarises the whole run, not just the page.
        let chart = page.body.find("data-testid=\"chart\"").unwrap();
        assert!(page.body[chart..].contains("<title>rounds 1–2:"), "{}", &page.body[chart..chart + 2000]);
        assert!(page.body[chart..].contains("fixed point, the same state again"), "the stuck rounds are marked");
        // Repeats fold in the timeline.
        assert!(page.body.contains("stuck ×20"), "{}", page.body);

        let older = get(&app, "/loops/long?team=acme&run=run-1&before=31", Some(&ada)).await;
        assert_eq!(older.status, StatusCode::OK);
        assert!(older.body.contains("Rounds 1–30 of 130."), "{}", older.body);
        assert!(!older.body.contains("data-testid=\"older-rounds\""), "nothing before round 1");
        assert!(older.body.contains("data-testid=\"latest-rounds\""));
        // A nonsense page number is the latest page.
        let odd = get(&app, "/loops/long?before=abc", Some(&ada)).await;
        assert!(odd.body.contains("Rounds 31–130 of 130."));
    }
}

both_backends! {
    async fn a_reader_makes_a_team_on_the_web_and_sees_how_to_connect_a_loop(db: TestDb) {
        let app = app(&db);
        db.store.create_team("taken").await.unwrap();
        let ada = sign_in(&app, &db, "ada@example.com").await;
        // Signed-out: nothing is made.
        let refused = post_form(&app, "/account", "action=create_team&slug=night", None).await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
        assert!(db.store.team_by_slug("night").await.unwrap().is_none());
        // A bad or taken slug is refused with the field named.
        for (slug, status, says) in [
            ("-bad-", StatusCode::BAD_REQUEST, "slug: 2 to 40 lowercase letters"),
            ("a", StatusCode::BAD_REQUEST, "slug: 2 to 40 lowercase letters"),
            ("taken", StatusCode::CONFLICT, "slug: the team taken exists already"),
        ] {
            let reply = post_form(&app, "/account", &format!("action=create_team&slug={slug}"), Some(&ada)).await;
            assert_eq!(reply.status, status, "{slug}: {}", reply.body);
            assert!(reply.body.contains(says), "{slug}: {}", reply.body);
        }
        assert!(db.store.team_members(db.store.team_by_slug("taken").await.unwrap().unwrap().id).await.unwrap().is_empty());
        // The team is made with its maker as admin, and its page follows.
        let made = post_form(&app, "/account", "action=create_team&slug=Night-Shift", Some(&ada)).await;
        assert_eq!(made.status, StatusCode::SEE_OTHER, "{}", made.body);
        assert_eq!(made.headers[header::LOCATION], "/teams/night-shift");
        let page = get(&app, "/teams/night-shift", Some(&ada)).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.body.contains("data-testid=\"connect-loop\""), "an empty team shows how to connect a loop");
        assert!(page.body.contains("$FIXEDPOINT_TOKEN"), "{}", page.body);
        assert!(page.body.contains(&format!("{BASE}/api/v1/loops/my-loop/rounds")), "{}", page.body);
        let members = db.store.team_members(db.store.team_by_slug("night-shift").await.unwrap().unwrap().id).await.unwrap();
        assert_eq!(members.len(), 1);
        assert_eq!(members[0].role, server::accounts::TeamRole::Admin);
        // The same slug twice is one team.
        let again = post_form(&app, "/account", "action=create_team&slug=night-shift", Some(&ada)).await;
        assert_eq!(again.status, StatusCode::CONFLICT);
    }
}
