//! What every area's handlers share: the request state ([`AppState`]),
//! rendering a page for a form's answer ([`render_page`]), reading a form,
//! the static bundle, rate limits, error bodies and the listener. It sits
//! below the areas; the router that merges them sits above them, in
//! `crate::site`.

pub mod audit_slots;
pub mod bundle;
pub mod error_bodies;
pub mod health;
pub mod json;
pub mod listener;
pub mod rate_limit;

use std::sync::Arc;

use app::pages::audit::ServerAuditor;
use axum::body::Body;
use axum::extract::{FromRef, Request};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use leptos::prelude::*;

use crate::config::Config;
use crate::live::LiveEvents;
use crate::mail::Mailer;
use crate::store::Store;
use crate::web::rate_limit::RateLimiter;

/// What every handler can reach. Cheap to clone.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    /// The build of the browser bundle the pages name (`/pkg/<id>/`).
    #[from_ref(skip)]
    pub bundle: bundle::Bundle,
    pub store: Store,
    pub config: Arc<Config>,
    /// Stored rounds, published for the dashboard's live streams.
    pub live: LiveEvents,
    /// The per-client limit of the public audit API.
    pub audit_limiter: Arc<RateLimiter>,
    /// Sign-in link requests: per client address, and per email address.
    #[from_ref(skip)]
    pub signin_limiter: Arc<RateLimiter>,
    #[from_ref(skip)]
    pub signin_email_limiter: Arc<RateLimiter<String>>,
    /// Newsletter subscribe requests: per client address, and per email.
    #[from_ref(skip)]
    pub subscribe_limiter: Arc<RateLimiter>,
    #[from_ref(skip)]
    pub subscribe_email_limiter: Arc<RateLimiter<String>>,
    #[from_ref(skip)]
    pub mailer: Mailer,
    /// Stripe's API through the Stripe library (`None` without keys).
    #[from_ref(skip)]
    pub stripe: Option<Arc<crate::stripe_api::StripeApi>>,
    /// The live founder seat count.
    #[from_ref(skip)]
    pub founders: crate::live::FounderFeed,
    /// MCP requests a minute, per token.
    #[from_ref(skip)]
    pub mcp_limiter: Arc<RateLimiter<i64>>,
    /// The audits the server runs at once (API, page form, MCP tool).
    #[from_ref(skip)]
    pub audit_slots: audit_slots::AuditSlots,
}

impl AppState {
    pub fn new(config: Config, store: Store) -> AppState {
        let bundle = bundle::Bundle::read(&config.site_root);
        let leptos_options = leptos_options(&config, &bundle);
        let audit_limiter = Arc::new(RateLimiter::per_minute(config.audit_rate_per_minute));
        let signin_limiter = Arc::new(RateLimiter::per_minute(config.signin_rate_per_minute));
        // Five links per address in a quarter of an hour: enough for typos
        // and slow mail, too few to flood someone's inbox.
        let signin_email_limiter = Arc::new(RateLimiter::new(5, std::time::Duration::from_secs(15 * 60)));
        let mcp_limiter = Arc::new(RateLimiter::per_minute(config.mcp_rate_per_minute));
        // Subscribing is limited as sign-in is: it mails an address too.
        let subscribe_limiter = Arc::new(RateLimiter::per_minute(config.signin_rate_per_minute));
        let subscribe_email_limiter = Arc::new(RateLimiter::new(5, std::time::Duration::from_secs(15 * 60)));
        let mailer = Mailer::new(config.smtp_url.as_deref(), &config.mail_from);
        let audit_slots = audit_slots::AuditSlots::new(
            config.audit_concurrency,
            std::time::Duration::from_millis(u64::from(config.audit_wait_ms)),
        );
        let stripe = config.stripe.as_ref().map(|stripe| Arc::new(crate::stripe_api::StripeApi::new(stripe)));
        AppState {
            leptos_options,
            bundle,
            store,
            config: Arc::new(config),
            live: LiveEvents::new(),
            audit_limiter,
            signin_limiter,
            signin_email_limiter,
            subscribe_limiter,
            subscribe_email_limiter,
            mailer,
            stripe,
            founders: crate::live::FounderFeed::new(),
            mcp_limiter,
            audit_slots,
        }
    }
}

/// Leptos' options, built from our configuration rather than from files or
/// compile-time variables, so the binary runs from any directory. The
/// bundle's directory names its build, so every page links that build's
/// files (`/pkg/<id>/fixedpoint.js`, the route modules it preloads).
pub fn leptos_options(config: &Config, bundle: &bundle::Bundle) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name(app::OUTPUT_NAME)
        .site_root(config.site_root.to_string_lossy().into_owned())
        .site_pkg_dir(bundle.pkg_dir())
        .site_addr(config.addr)
        .build()
}

/// What every rendered page can take from context: the store and the
/// server's auditor (the audit page's first paint and its no-JS form).
pub fn provide_page_context(state: &AppState) {
    provide_context(state.store.clone());
    provide_context(server_auditor());
}

/// The server's auditor as the pages use it: the audit page's first paint
/// and its form posted without JavaScript (`crate::audit`), the same engine
/// as the CLI's.
pub fn server_auditor() -> ServerAuditor {
    ServerAuditor(Arc::new(audit_named))
}

/// Audits `source` in the named language; a name the auditor does not know
/// (`auto`, say) means detection.
pub fn audit_named(source: &str, language: Option<&str>) -> auditor::FileReport {
    auditor::audit(source, None, language.and_then(auditor::Language::from_name))
}

/// Renders the page at the request's address as for a GET, with extra
/// context (a form's error, a posted source) and the given status: how form
/// posts answer without JavaScript.
pub async fn render_page(
    state: &AppState,
    parts: axum::http::request::Parts,
    status: StatusCode,
    extra: impl Fn() + Clone + Send + Sync + 'static,
) -> Response {
    let options = state.leptos_options.clone();
    let context_state = state.clone();
    let handler = leptos_axum::render_app_to_stream_with_context(
        move || {
            provide_context(context_state.clone());
            provide_page_context(&context_state);
            extra();
        },
        move || app::shell(options.clone()),
    );
    let mut request = Request::from_parts(parts, Body::empty());
    *request.method_mut() = Method::GET;
    let mut response = handler(request).await.into_response();
    if status != StatusCode::OK {
        *response.status_mut() = status;
    }
    response
}

/// Reads a page's form (the team page's, the loop page's), or says why it
/// cannot: too large (413), not UTF-8 once decoded (form decoding would
/// turn the bytes into U+FFFD silently), or not a form at all.
pub async fn read_form<T: serde::de::DeserializeOwned>(body: Body) -> Result<T, (StatusCode, String)> {
    const LIMIT: usize = 4 * 1024;
    let bytes = axum::body::to_bytes(body, LIMIT).await.map_err(|_| {
        (StatusCode::PAYLOAD_TOO_LARGE, format!("The form is larger than {} KiB.", LIMIT / 1024))
    })?;
    let utf8 = bytes.split(|byte| *byte == b'&').all(|pair| {
        let spaced: Vec<u8> = pair.iter().map(|byte| if *byte == b'+' { b' ' } else { *byte }).collect();
        percent_encoding::percent_decode(&spaced).decode_utf8().is_ok()
    });
    if !utf8 {
        return Err((StatusCode::BAD_REQUEST, "The form is not UTF-8 text.".to_string()));
    }
    serde_urlencoded::from_bytes(&bytes)
        .map_err(|error| (StatusCode::BAD_REQUEST, format!("The form could not be read: {error}.")))
}
