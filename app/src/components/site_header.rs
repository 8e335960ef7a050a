use leptos::prelude::*;
use leptos_router::components::A;

use crate::auth::use_viewer;

/// The site-wide header: the name and the five places a visitor goes.
#[component]
pub fn SiteHeader() -> impl IntoView {
    view! {
        <a class="skip-link" href="#main">"Skip to content"</a>
        <header class="site-header">
            <A href="/" attr:class="brand">
                <span class="brand-mark" aria-hidden="true">"f(x)=x"</span>
                <span class="brand-name">"Fixed Point"</span>
            </A>
            <nav aria-label="Main">
                <ul>
                    <li><A href="/audit">"Audit"</A></li>
                    // The dashboard's data is loaded by the server: a full page load.
                    <li><A href="/loops" attr:rel="external">"Loops"</A></li>
                    <li><A href="/issues">"Archive"</A></li>
                    <li><A href="/pricing">"Pricing"</A></li>
                    {match use_viewer() {
                        Some(_) => view! { <li><A href="/account" attr:class="signin">"Account"</A></li> }.into_any(),
                        None => view! { <li><A href="/signin" attr:class="signin">"Sign in"</A></li> }.into_any(),
                    }}
                </ul>
            </nav>
        </header>
    }
}
