//! Sign-in over HTTP: `POST /signin` mails a link, `POST /signin/verify`
//! redeems it into a session cookie, `POST /signout` ends the session. Two
//! layers wrap the whole site: [`resolve_viewer`] turns the session cookie
//! into an [`app::auth::Viewer`] for the pages, and [`same_origin`] refuses
//! cross-site form posts.

use std::time::Instant;

use app::auth::{SigninNotice, Viewer, ViewerTeam};
use app::return_to::{same_site_path, with_next};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::Router;
use leptos::prelude::provide_context;
use serde::Deserialize;

use super::{normalize_email, Account, SESSION_TTL_MS};
use crate::web::rate_limit::{client_ip, retry_after_seconds};
use crate::web::{render_page, AppState};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "fp_session";
/// The largest sign-in form read: an address and a token fit many times.
const FORM_MAX_BYTES: usize = 4 * 1024;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/signin", post(request_link))
        .route("/signin/verify", post(verify))
        .route("/signout", post(sign_out))
}

/// The sign-in forms. `next` is the page to return to once signed in; it
/// is kept only if [`same_site_path`] accepts it (anything else signs in
/// as usual and lands on `/account`).
#[derive(Debug, Deserialize)]
struct EmailForm {
    email: Option<String>,
    next: Option<String>,
}

#[derive(Debug, Deserialize)]
struct TokenForm {
    token: Option<String>,
    next: Option<String>,
}

async fn read_form<T: serde::de::DeserializeOwned>(body: Body) -> Result<T, (StatusCode, String)> {
    let bytes = axum::body::to_bytes(body, FORM_MAX_BYTES).await.map_err(|_| {
        (StatusCode::PAYLOAD_TOO_LARGE, "The form is larger than a sign-in form can be.".to_string())
    })?;
    serde_urlencoded::from_bytes(&bytes)
        .map_err(|error| (StatusCode::BAD_REQUEST, format!("The form could not be read: {error}.")))
}

async fn request_link(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let notice = |email: String, error: String| SigninNotice { email, error: Some(error), next: None };
    let refuse = |status: StatusCode, notice: SigninNotice, retry: Option<u64>| {
        let state = state.clone();
        let parts = parts.clone();
        async move {
            let mut response =
                render_page(&state, parts, status, move || provide_context(notice.clone())).await;
            if let Some(seconds) = retry {
                if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                    response.headers_mut().insert(header::RETRY_AFTER, value);
                }
            }
            response
        }
    };
    if let Err(wait) = state.signin_limiter.check(client_ip(&parts.extensions), Instant::now()) {
        let message = "Too many sign-in requests from your address: wait a minute and try again.".to_string();
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            notice(String::new(), message),
            Some(retry_after_seconds(wait)),
        )
        .await;
    }
    let form: EmailForm = match read_form(body).await {
        Ok(form) => form,
        Err((status, message)) => return refuse(status, notice(String::new(), message), None).await,
    };
    let next = form.next.as_deref().and_then(same_site_path);
    let typed = form.email.unwrap_or_default();
    let email = match normalize_email(&typed) {
        Ok(email) => email,
        Err(_) => {
            let message = "email: enter an address such as ada@example.com".to_string();
            let kept = SigninNotice { next, ..notice(typed.chars().take(254).collect(), message) };
            return refuse(StatusCode::BAD_REQUEST, kept, None).await;
        }
    };
    if let Err(wait) = state.signin_email_limiter.check(email.clone(), Instant::now()) {
        let message =
            "Several links were sent to this address just now: use the latest, or wait and try again."
                .to_string();
        let kept = SigninNotice { next, ..notice(email, message) };
        return refuse(StatusCode::TOO_MANY_REQUESTS, kept, Some(retry_after_seconds(wait))).await;
    }
    match state.store.create_signin_token(&email).await {
        Ok(secret) => {
            // The token goes last: whoever copies the link by hand keeps it whole.
            let verify = with_next(&format!("{}/signin/verify", state.config.public_url), next.as_deref());
            let joiner = if verify.contains('?') { '&' } else { '?' };
            let link = format!("{verify}{joiner}token={secret}");
            let body = format!(
                "Someone (hopefully you) asked to sign in to Fixed Point with this address.\n\n\
                 Open this link to sign in; it works once, for 15 minutes:\n{link}\n\n\
                 If it was not you, ignore this message: nothing happens without the link.\n"
            );
            if let Err(error) =
                state.mailer.send(&state.store, &email, "Your Fixed Point sign-in link", &body).await
            {
                tracing::error!(%error, "could not queue a sign-in mail");
            }
        }
        Err(error) => tracing::error!(%error, "could not create a sign-in token"),
    }
    // The same answer whatever happened: nobody learns whether an account
    // exists or whether mail could be sent.
    Redirect::to("/signin?sent=1").into_response()
}

async fn verify(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let previous = cookie(&parts.headers, SESSION_COOKIE);
    let form: Option<TokenForm> = read_form(body).await.ok();
    let next = form.as_ref().and_then(|form| form.next.as_deref()).and_then(same_site_path);
    let token = form.and_then(|form| form.token).unwrap_or_default();
    match state.store.redeem_signin_token(token.trim()).await {
        Ok(Some((account, session))) => {
            tracing::info!(account_id = account.id, "signed in");
            // Rotation: a session the browser held before signing in ends
            // here, so a planted cookie never becomes a signed-in session.
            if let Some(previous) = previous {
                if let Err(error) = state.store.end_session(&previous).await {
                    tracing::warn!(%error, "could not end the previous session");
                }
            }
            let mut response = Redirect::to(next.as_deref().unwrap_or("/account")).into_response();
            if let Ok(value) = HeaderValue::from_str(&session_cookie(&state, &session, SESSION_TTL_MS / 1000))
            {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        Ok(None) => {
            let notice = SigninNotice {
                email: String::new(),
                error: Some(
                    "token: this sign-in link has been used, has expired or is not complete. Ask for a new one."
                        .to_string(),
                ),
                next,
            };
            render_page(&state, parts, StatusCode::BAD_REQUEST, move || provide_context(notice.clone())).await
        }
        Err(error) => {
            tracing::error!(%error, "could not redeem a sign-in token");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

async fn sign_out(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(secret) = cookie(&headers, SESSION_COOKIE) {
        if let Err(error) = state.store.end_session(&secret).await {
            tracing::error!(%error, "could not end a session");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    }
    let mut response = Redirect::to("/").into_response();
    if let Ok(value) = HeaderValue::from_str(&session_cookie(&state, "", 0)) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The session cookie: never readable by scripts, sent on same-site
/// navigation only, `Secure` whenever the site is served over HTTPS.
fn session_cookie(state: &AppState, value: &str, max_age_seconds: i64) -> String {
    let secure = if state.config.public_url.starts_with("https://") { "; Secure" } else { "" };
    format!("{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_seconds}{secure}")
}

/// The value of cookie `name`, if the request carries it.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
}

/// Resolves the session cookie once per request: the signed-in [`Account`]
/// goes into the request's extensions for handlers, the [`Viewer`] for
/// pages, with the reader's entitlement, and for a GET the data of the team
/// page ([`super::pages::load`]; the other pages' data is their areas', read
/// after this by `dashboard::page_data`, `admin::page_data` and
/// `newsletter::pages::page_data`). Only the bundle and the JSON APIs (token
/// authenticated) skip the lookup; a path with a dot is not a file (loop
/// names may hold dots).
pub async fn resolve_viewer(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    // The APIs authenticate with tokens or signatures, except checkout,
    // which is the signed-in reader's.
    let wants_viewer =
        !(path.starts_with("/pkg/") || (path.starts_with("/api/") && path != "/api/v1/checkout"));
    let loads_page = matches!(*request.method(), Method::GET | Method::HEAD);
    if let Some(secret) = cookie(request.headers(), SESSION_COOKIE).filter(|_| wants_viewer) {
        let mut extensions = std::mem::take(request.extensions_mut());
        let resolved = resolve(&state, &secret, loads_page.then_some(path.as_str()), &mut extensions).await;
        *request.extensions_mut() = extensions;
        if let Err(error) = resolved {
            tracing::error!(%error, "could not resolve a session");
        }
    }
    let personal = request.extensions().get::<Account>().is_some();
    let mut response = next.run(request).await;
    // A page drawn for a signed-in reader (their tier's issue text, their
    // account) must never be kept by a shared cache.
    if personal && !response.headers().contains_key(header::CACHE_CONTROL) {
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    }
    response
}

/// The signed-in account of a request, as [`resolve_viewer`] found it.
pub fn signed_in(extensions: &axum::http::Extensions) -> Option<Account> {
    extensions.get::<Account>().cloned()
}

async fn resolve(
    state: &AppState,
    secret: &str,
    page: Option<&str>,
    extensions: &mut axum::http::Extensions,
) -> Result<(), super::AccountsError> {
    let Some(account) = state.store.session_account(secret).await? else {
        return Ok(());
    };
    if let Some(path) = page {
        super::pages::load(state, path, &account, extensions).await?;
    }
    let teams = state
        .store
        .memberships(account.id)
        .await?
        .into_iter()
        .map(|membership| ViewerTeam {
            slug: membership.team.slug,
            role: match membership.role {
                super::TeamRole::Admin => "admin".to_string(),
                super::TeamRole::Member => "member".to_string(),
            },
        })
        .collect();
    let access = state.store.reader_access(account.id).await.map_err(|error| {
        super::AccountsError::Dashboard(format!("reading the reader's subscription: {error}"))
    })?;
    extensions.insert(Viewer {
        email: account.email.clone(),
        is_operator: account.is_operator,
        teams,
        tier: access.tier.as_str().to_string(),
    });
    extensions.insert(access);
    extensions.insert(account);
    Ok(())
}

/// Refuses state-changing requests that a browser says come from another
/// site (`Sec-Fetch-Site`, else `Origin`). Requests without either header
/// are not from a browser form (scripts, the CLI) and pass. The token and
/// signature authenticated APIs are exempt: they carry no cookie to abuse.
pub async fn same_origin(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let method = request.method();
    if method == Method::GET || method == Method::HEAD || method == Method::OPTIONS {
        return next.run(request).await;
    }
    let path = request.uri().path();
    // `/mcp` carries a bearer token, not a cookie, and rmcp checks its
    // Origin against the site's own address.
    // `/unsubscribe/{token}` carries its token in the path and no cookie:
    // mail providers post there for the one-click button (RFC 8058).
    if path.starts_with("/api/v1/loops/")
        || path.starts_with("/unsubscribe/")
        || path == "/api/v1/audit"
        || path.starts_with("/stripe/")
        || path == "/mcp"
    {
        return next.run(request).await;
    }
    let headers = request.headers();
    let fetch_site = headers.get("sec-fetch-site").and_then(|value| value.to_str().ok());
    let allowed = match fetch_site {
        Some(site) => site == "same-origin" || site == "none",
        None => match headers.get(header::ORIGIN).and_then(|value| value.to_str().ok()) {
            Some(origin) => origin == state.config.public_url || origin_matches_host(origin, headers),
            None => true,
        },
    };
    if allowed {
        next.run(request).await
    } else {
        tracing::warn!(path, "refused a cross-site request");
        (StatusCode::FORBIDDEN, "cross-site requests are refused").into_response()
    }
}

fn origin_matches_host(origin: &str, headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|value| value.to_str().ok()) else {
        return false;
    };
    origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) == Some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_exact_name() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; fp_session_x=2; fp_session=fpc_3"));
        assert_eq!(cookie(&headers, SESSION_COOKIE).as_deref(), Some("fpc_3"));
        assert_eq!(cookie(&headers, "missing"), None);
    }
}
