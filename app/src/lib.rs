//! The Fixed Point web application.
//!
//! Everything the browser sees lives here: the routes, the pages, the
//! components. The crate builds twice: with `ssr` into the server, which
//! renders every page to HTML, and with `hydrate` into the WebAssembly bundle
//! that makes the same pages interactive. Nothing in here talks to a database
//! directly; server-only code reaches this crate through context.

// The router's nested view types (one per route) outgrow the default query
// depth when the browser bundle is built.
#![recursion_limit = "256"]

pub mod auth;
pub mod components;
pub mod pages;
pub mod return_to;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, Link, MetaTags, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    Lazy, ParamSegment, StaticSegment,
};

use crate::components::site_header::SiteHeader;
use crate::components::stale_build::FullLoadOnStaleBuild;
use crate::pages::lazy::{
    AccountRoute, AdminRoute, ArchiveRoute, AuditRoute, IssueRoute, LoopRoute, LoopsRoute, PricingRoute,
    SigninRoute, SubscribeConfirmRoute, SubscribeRoute, TeamRoute, ThanksRoute, UnsubscribeRoute,
    VerifyRoute,
};
use crate::pages::{home::HomePage, not_found::NotFound};

/// The name of the WebAssembly bundle and stylesheet under `/pkg/<build id>`.
pub const OUTPUT_NAME: &str = "fixedpoint";

/// In the browser, the current build's directory on the site
/// (`/pkg/<build id>`), as the shell wrote it on `<html data-pkg>`.
#[cfg(feature = "hydrate")]
pub fn bundle_path() -> String {
    leptos::prelude::document()
        .document_element()
        .and_then(|html| html.get_attribute("data-pkg"))
        .unwrap_or_else(|| "/pkg".to_string())
}

/// The HTML document around the application, rendered on the server.
/// Every file of the bundle lives under the build's directory
/// (`options.site_pkg_dir`, `pkg/<build id>`): the stylesheet, the main
/// module and the route modules Leptos preloads are named here, and the
/// audit page finds its worker from `data-pkg` (see [`bundle_path`]).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let pkg = format!("/{}", options.site_pkg_dir);
    let stylesheet = format!("{pkg}/{OUTPUT_NAME}.css");
    view! {
        <!DOCTYPE html>
        <html lang="en" data-pkg=pkg>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="stylesheet" id="site-css" href=stylesheet/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The application: header, routes, footer.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    auth::provide_viewer();

    view! {
        <Link rel="icon" href="/favicon.ico"/>
        // Feed readers find the public feeds from any page.
        <Link rel="alternate" type_="application/rss+xml" title="Fixed Point (RSS)" href="/feed/rss.xml"/>
        <Link rel="alternate" type_="application/atom+xml" title="Fixed Point (Atom)" href="/feed/atom.xml"/>
        <Link rel="alternate" type_="application/feed+json" title="Fixed Point (JSON Feed)" href="/feed/feed.json"/>
        // Each page that describes itself renders its own `description`
        // (one per page: two are invalid HTML).
        <Title formatter=|text: String| if text.is_empty() { "Fixed Point".to_string() } else { format!("{text} · Fixed Point") }/>
        <Router>
            <FullLoadOnStaleBuild/>
            <SiteHeader/>
            <main id="main">
                <Routes fallback=NotFound>
                    <Route path=StaticSegment("") view=HomePage/>
                    <Route path=StaticSegment("audit") view={Lazy::<AuditRoute>::new()}/>
                    <Route path=StaticSegment("signin") view={Lazy::<SigninRoute>::new()}/>
                    <Route path=(StaticSegment("signin"), StaticSegment("verify")) view={Lazy::<VerifyRoute>::new()}/>
                    <Route path=StaticSegment("account") view={Lazy::<AccountRoute>::new()}/>
                    <Route path=StaticSegment("loops") view={Lazy::<LoopsRoute>::new()}/>
                    <Route path=(StaticSegment("loops"), ParamSegment("loop")) view={Lazy::<LoopRoute>::new()}/>
                    <Route path=StaticSegment("admin") view={Lazy::<AdminRoute>::new()}/>
                    <Route path=(StaticSegment("admin"), StaticSegment("outbox")) view={Lazy::<AdminRoute>::new()}/>
                    <Route path=(StaticSegment("teams"), ParamSegment("slug")) view={Lazy::<TeamRoute>::new()}/>
                    <Route path=StaticSegment("issues") view={Lazy::<ArchiveRoute>::new()}/>
                    <Route path=StaticSegment("pricing") view={Lazy::<PricingRoute>::new()}/>
                    <Route path=(StaticSegment("checkout"), StaticSegment("thanks")) view={Lazy::<ThanksRoute>::new()}/>
                    <Route path=(StaticSegment("issues"), ParamSegment("slug")) view={Lazy::<IssueRoute>::new()}/>
                    <Route path=StaticSegment("subscribe") view={Lazy::<SubscribeRoute>::new()}/>
                    <Route path=(StaticSegment("subscribe"), StaticSegment("confirm")) view={Lazy::<SubscribeConfirmRoute>::new()}/>
                    <Route path=(StaticSegment("unsubscribe"), ParamSegment("token")) view={Lazy::<UnsubscribeRoute>::new()}/>
                </Routes>
            </main>
            <footer class="site-footer">
                <p>"Fixed Point: a newsletter and tools about the loops around models."</p>
            </footer>
        </Router>
    }
}

/// The browser's entry point: attaches the application to the server's HTML.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    // Every page but the home page is a lazy route whose code is a separate
    // module, fetched before that page hydrates; so hydration is async.
    wasm_bindgen_futures::spawn_local(async {
        leptos::mount::hydrate_from_async(leptos::tachys::dom::body(), App).await.forget();
        components::stale_build::hydrated();
        // A flag for the browser tests (and the curious): event handlers
        // are attached once this is set.
        let _ = js_sys::Reflect::set(&js_sys::global(), &"__fixedpointHydrated".into(), &true.into());
    });
}
