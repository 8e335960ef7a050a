use leptos::prelude::*;
use leptos_meta::Title;

/// The page for every path no route matches. On the server it also sets the
/// response status to 404, so crawlers and scripts see a real miss.
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
            response.set_status(http::StatusCode::NOT_FOUND);
        }
    }

    view! {
        <Title text="Not found"/>
        <section class="not-found" data-testid="not-found">
            <h1>"404: no fixed point here"</h1>
            <p>"This page does not exist. The loop ends here, on purpose."</p>
            <p><a href="/">"Back to the home page"</a></p>
        </section>
    }
}
