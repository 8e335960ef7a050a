//! Driving the real router in-process: requests with a peer address,
//! form posts that pass the same-origin check, and signing in through the
//! mailed link.

use std::net::SocketAddr;
use std::process::{Command, Output};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use server::config::Config;
use server::site;
use server::web::AppState;
use tower::ServiceExt;

use super::TestDb;

pub const BASE: &str = "http://127.0.0.1:3000";

pub fn app(db: &TestDb) -> axum::Router {
    app_with(db, &[])
}

/// The site's router on `db` with extra environment (Stripe keys, seats).
pub fn app_with(db: &TestDb, extra: &[(&str, String)]) -> axum::Router {
    site::router(state_with(db, extra))
}

/// The application state the router is built on, for tests that also
/// call server functions directly (the sweeper).
pub fn state_with(db: &TestDb, extra: &[(&str, String)]) -> AppState {
    let config = Config::from_lookup(|name| {
        if let Some((_, value)) = extra.iter().find(|(key, _)| *key == name) {
            return Some(value.clone());
        }
        match name {
            "DATABASE_URL" => Some(db.url.clone()),
            "PUBLIC_URL" => Some(BASE.to_string()),
            "LEPTOS_SITE_ROOT" => Some(env!("CARGO_MANIFEST_DIR").to_string() + "/../public"),
            _ => None,
        }
    })
    .unwrap();
    AppState::new(config, db.store.clone())
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

pub async fn send(app: &axum::Router, mut request: Request<Body>, from: &str) -> Reply {
    request.extensions_mut().insert(ConnectInfo(from.parse::<SocketAddr>().unwrap()));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Reply { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() }
}

pub fn form_post(path: &str) -> axum::http::request::Builder {
    Request::post(path).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
}

pub async fn post_form(app: &axum::Router, path: &str, body: &str, cookie: Option<&str>) -> Reply {
    let mut builder = form_post(path).header("sec-fetch-site", "same-origin");
    if let Some(cookie) = cookie {
        builder = builder.header(header::COOKIE, cookie);
    }
    send(app, builder.body(Body::from(body.to_string())).unwrap(), "127.0.0.1:1").await
}

pub async fn get(app: &axum::Router, path: &str, cookie: Option<&str>) -> Reply {
    let mut builder = Request::get(path);
    if let Some(cookie) = cookie {
        builder = builder.header(header::COOKIE, cookie);
    }
    send(app, builder.body(Body::empty()).unwrap(), "127.0.0.1:1").await
}

/// The token of the latest sign-in link mailed to `email` (the outbox is
/// the delivery without SMTP).
pub async fn mailed_token(db: &TestDb, email: &str) -> String {
    let outbox = db.store.outbox(50).await.unwrap();
    let message = outbox.iter().find(|m| m.recipient == email).expect("a message to the address");
    let at = message.body.find("token=").expect("a link") + "token=".len();
    message.body[at..].split_whitespace().next().unwrap().to_string()
}

/// Requests a link for `email` and signs in with it; returns the cookie.
pub async fn sign_in(app: &axum::Router, db: &TestDb, email: &str) -> String {
    let asked = post_form(app, "/signin", &format!("email={email}"), None).await;
    assert_eq!(asked.status, StatusCode::SEE_OTHER, "{}", asked.body);
    let token = mailed_token(db, email).await;
    let verified = post_form(app, "/signin/verify", &format!("token={token}"), None).await;
    assert_eq!(verified.status, StatusCode::SEE_OTHER, "{}", verified.body);
    let set_cookie = verified.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap().to_string();
    set_cookie.split(';').next().unwrap().to_string()
}

/// Runs the `fixedpoint` binary against `database_url`.
pub fn fixedpoint(database_url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fixedpoint"))
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("PUBLIC_URL", "https://fixedpoint.example")
        .env("RUST_LOG", "warn")
        .output()
        .expect("run fixedpoint")
}

/// Serves the router of `state` on a free local port, on the listener
/// `fixedpoint serve` uses (for callers outside the test: the fake Stripe's
/// webhooks; raw requests hyper refuses); answers its base URL.
pub async fn serve(state: AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind a free port");
    let addr = listener.local_addr().unwrap();
    let stylesheet = state.bundle.stylesheet();
    let service = site::router(state).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move {
        axum::serve(server::web::listener::site_listener(listener, &stylesheet), service)
            .await
            .expect("serve");
    });
    format!("http://{addr}")
}

/// A signed-in session cookie for `email`, made through the store (as the
/// mailed link would), for tests that need hundreds of readers.
pub async fn session_cookie(db: &TestDb, email: &str) -> String {
    let token = db.store.create_signin_token(email).await.unwrap();
    let (_, session) = db.store.redeem_signin_token(&token).await.unwrap().unwrap();
    format!("fp_session={session}")
}

/// A JSON POST from the site's own pages (same origin).
pub async fn post_json(app: &axum::Router, path: &str, body: &str, cookie: Option<&str>) -> Reply {
    let mut builder = Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header("sec-fetch-site", "same-origin");
    if let Some(cookie) = cookie {
        builder = builder.header(header::COOKIE, cookie);
    }
    send(app, builder.body(Body::from(body.to_string())).unwrap(), "127.0.0.1:1").await
}
