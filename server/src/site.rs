//! The whole site as one axum router: every area's routes, the Leptos
//! pages, the bundle, and the middleware around them. It sits above the
//! areas (it imports each, none imports it), as `web` sits below them.

use axum::Router;
use leptos_axum::{generate_route_list, LeptosRoutes};
use tower_http::compression::CompressionLayer;
use tower_http::trace::TraceLayer;

use crate::web::{self, AppState};

/// The whole site as one router.
pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(app::App);
    let leptos_options = state.leptos_options.clone();
    let context_state = state.clone();

    Router::new()
        .merge(web::health::router())
        .merge(crate::loops::router())
        .merge(crate::traces::router())
        .merge(crate::audit::router())
        .merge(crate::accounts::web::router())
        .merge(crate::accounts::pages::router())
        .merge(crate::dashboard::router())
        .merge(crate::newsletter::feeds::router())
        .merge(crate::newsletter::pages::router())
        .merge(crate::newsletter::subscribe::router())
        .merge(crate::admin::router())
        .merge(crate::billing::web::router())
        .merge(crate::account_page::router())
        .merge(crate::mcp::router(&state))
        .leptos_routes_with_context(
            &state,
            routes,
            move || web::provide_page_context(&context_state),
            move || app::shell(leptos_options.clone()),
        )
        // The current build's bundle, immutable; any other /pkg/ address a 404.
        .merge(web::bundle::router(&state.config.site_root, &state.bundle))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(app::shell))
        // The pages' data, read by their areas once the viewer is known
        // (inside it): the newsletter's, the pricing, account and admin
        // pages', the loops pages'.
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::dashboard::page_data))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::admin::page_data))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::account_page::page_data))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::billing::web::page_data))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::newsletter::pages::page_data))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::accounts::web::resolve_viewer))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::accounts::web::same_origin))
        .layer(axum::middleware::from_fn_with_state(
            state.bundle.stylesheet(),
            web::error_bodies::fill_error_bodies,
        ))
        .layer(axum::middleware::from_fn(web::bundle::pages_no_cache))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
