//! `/account`: who you are here, your tier, your teams, and signing out.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::auth::{set_status, use_viewer};

#[component]
pub fn AccountPage() -> impl IntoView {
    let viewer = use_viewer();
    if viewer.is_none() {
        set_status(401);
    }
    view! {
        <Title text="Your account"/>
        <section class="narrow">
            <h1>"Your account"</h1>
            {match viewer {
                None => {
                    view! {
                        <p data-testid="account-signed-out">
                            "You are not signed in. " <a href="/signin">"Sign in"</a> " to see your account."
                        </p>
                    }
                        .into_any()
                }
                Some(viewer) => {
                    view! {
                        <dl class="facts" data-testid="account">
                            <dt>"Email"</dt>
                            <dd data-testid="account-email">{viewer.email.clone()}</dd>
                            <dt>"Tier"</dt>
                            <dd data-testid="account-tier">"Reader (free)"</dd>
                            <dt>"Role"</dt>
                            <dd>
                                {if viewer.is_operator {
                                    view! { "Operator · " <a href="/admin" rel="external">"Admin"</a> }.into_any()
                                } else {
                                    view! { "Reader" }.into_any()
                                }}
                            </dd>
                            <dt>"Teams"</dt>
                            <dd>
                                {if viewer.teams.is_empty() {
                                    view! { <span class="muted">"None yet."</span> }.into_any()
                                } else {
                                    view! {
                                        <ul class="plain-list" data-testid="account-teams">
                                            {viewer
                                                .teams
                                                .iter()
                                                .map(|team| {
                                                    view! {
                                                        <li>
                                                            // Team pages are loaded by the server: a full page load, not a
                                                            // client-side route change.
                                                            <a href=format!("/teams/{}", team.slug) rel="external">
                                                                {team.slug.clone()}
                                                            </a>
                                                            " (" {team.role.clone()} ")"
                                                        </li>
                                                    }
                                                })
                                                .collect_view()}
                                        </ul>
                                    }
                                        .into_any()
                                }}
                            </dd>
                        </dl>
                        <form method="post" action="/signout">
                            <button type="submit" class="button" data-testid="signout">"Sign out"</button>
                        </form>
                    }
                        .into_any()
                }
            }}
        </section>
    }
}
