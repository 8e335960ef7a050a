//! The HTTP surface: the axum router that serves the Leptos pages, the
//! static bundle and the JSON endpoints. Each area adds its own `router()`
//! here; [`router`] merges them.

mod health;
pub mod rate_limit;

use std::sync::Arc;

use axum::extract::FromRef;
use axum::Router;
use leptos::prelude::*;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;

use crate::config::Config;
use crate::live::LiveEvents;
use crate::store::Store;
use crate::web::rate_limit::RateLimiter;

/// What every handler can reach. Cheap to clone.
#[derive(Clone, FromRef)]
pub struct AppState {
    pub leptos_options: LeptosOptions,
    pub store: Store,
    pub config: Arc<Config>,
    /// Stored rounds, published for the dashboard's live streams.
    pub live: LiveEvents,
    /// The per-client limit of the public audit API.
    pub audit_limiter: Arc<RateLimiter>,
}

impl AppState {
    pub fn new(config: Config, store: Store) -> AppState {
        let leptos_options = leptos_options(&config);
        let audit_limiter = Arc::new(RateLimiter::per_minute(config.audit_rate_per_minute));
        AppState { leptos_options, store, config: Arc::new(config), live: LiveEvents::new(), audit_limiter }
    }
}

/// Leptos' options, built from our configuration rather than from files or
/// compile-time variables, so the binary runs from any directory.
pub fn leptos_options(config: &Config) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name(app::OUTPUT_NAME)
        .site_root(config.site_root.to_string_lossy().into_owned())
        .site_pkg_dir("pkg")
        .site_addr(config.addr)
        .build()
}

/// What every rendered page can take from context: the store and the
/// server's auditor (the audit page's first paint and its no-JS form).
pub fn provide_page_context(state: &AppState) {
    provide_context(state.store.clone());
    provide_context(crate::audit::server_auditor());
}

/// The whole site as one router.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(app::App);
    let leptos_options = state.leptos_options.clone();
    let context_state = state.clone();

    Router::new()
        .merge(health::router())
        .merge(crate::loops::router())
        .merge(crate::audit::router())
        .leptos_routes_with_context(
            &state,
            routes,
            move || provide_page_context(&context_state),
            move || app::shell(leptos_options.clone()),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(app::shell))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
