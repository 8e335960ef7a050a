use leptos::prelude::*;
use leptos_router::components::A;

use crate::auth::use_viewer;

/// The site-wide header: the name and the five places a visitor goes.
#[component]
pub fn SiteHeader() -> impl IntoView {
    view! {
        <a class="skip-link" href="#main">"Skip to content"</a>
        <header class="site-header">
            // Pages whose data the server loads are reached by a full page
            // load (`rel="external"`), not a client-side route change.
            <A href="/" attr:class="brand" attr:rel="external">
                <span class="brand-mark" aria-hidden="true">"f(x)=x"</span>
                <span class="brand-name">"Fixed Point"</span>
            </A>
            <nav aria-label="Main">
                <ul>
                    <li><A href="/audit">"Audit"</A></li>
                    <li><A href="/loops" attr:rel="external">"Loops"</A></li>
                    <li><A href="/issues" attr:rel="external">"Archive"</A></li>
                    <li><A href="/pricing" attr:rel="external">"Pricing"</A></li>
                    {match use_viewer() {
                        Some(_) => view! { <li><A href="/account" attr:class="signin" attr:rel="external">"Account"</A></li> }.into_any(),
                        None => view! { <li><A href="/signin" attr:class="signin">"Sign in"</A></li> }.into_any(),
                    }}
                </ul>
            </nav>
        </header>
    }
}
