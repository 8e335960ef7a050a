//! `/signin` and `/signin/verify`: sign-in by emailed link. The request form
//! always answers the same way, whether or not an account exists. The link
//! opens a confirmation page whose button posts the token, because mail
//! scanners open links and must not sign anyone in. Both carry `next`, the
//! page the reader was on (an issue's paywall, the pricing page), so that
//! signing in brings them back to it.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::auth::{use_signin_notice, use_viewer};
use crate::components::email_field::EmailField;
use crate::return_to::{next_field, use_next, with_next};

#[component]
pub fn SigninPage() -> impl IntoView {
    let query = use_query_map();
    let sent = move || query.with(|q| q.get("sent").is_some());
    let notice = use_signin_notice();
    let next = notice.next.clone().or_else(use_next);
    let viewer = use_viewer();
    let back = next.clone();
    view! {
        <Title text="Sign in"/>
        <section class="narrow">
            <h1>"Sign in"</h1>
            {viewer
                .map(|viewer| {
                    let onward = match back {
                        Some(back) => view! { <a href=back rel="external">"Go back to where you were"</a> }.into_any(),
                        None => view! { <a href="/account">"Your account"</a> }.into_any(),
                    };
                    view! {
                        <p class="notice-box" data-testid="already-signed-in">
                            "You are signed in as " <strong>{viewer.email}</strong> ". " {onward}
                        </p>
                    }
                })}
            <Show
                when=sent
                fallback=move || {
                    let notice = notice.clone();
                    let next = next.clone();
                    view! {
                        <p>
                            "No password: we mail you a link that signs you in. It works once, for 15 minutes."
                            {next.is_some().then_some(" It brings you back to the page you were on.")}
                        </p>
                        <form method="post" action="/signin" class="stack-form" data-testid="signin-form">
                            <EmailField id="signin-email" value=notice.email.clone() error=notice.error.clone()/>
                            {next_field(next)}
                            <button type="submit" class="button button-primary">"Mail me a sign-in link"</button>
                        </form>
                    }
                }
            >
                <div class="notice-box" role="status" data-testid="signin-sent">
                    <p><strong>"Check your mail."</strong></p>
                    <p>
                        "If the address can receive mail, a sign-in link is on its way. It works once, for 15 minutes."
                    </p>
                </div>
            </Show>
        </section>
    }
}

#[component]
pub fn VerifyPage() -> impl IntoView {
    let query = use_query_map();
    let token = query.with_untracked(|q| q.get("token").unwrap_or_default());
    let notice = use_signin_notice();
    let next = notice.next.clone().or_else(use_next);
    let ask_again = with_next("/signin", next.as_deref());
    view! {
        <Title text="Confirm sign-in"/>
        <section class="narrow">
            <h1>"Confirm sign-in"</h1>
            {notice
                .error
                .map(|error| view! { <p class="field-error" role="alert" data-testid="verify-error">{error}</p> })}
            {if token.is_empty() {
                view! {
                    <p>"This page needs the link from your mail. " <a href=ask_again>"Ask for a new link"</a> "."</p>
                }
                    .into_any()
            } else {
                view! {
                    <p>"Press the button to finish signing in on this device."</p>
                    <form method="post" action="/signin/verify" data-testid="verify-form">
                        <input type="hidden" name="token" value=token/>
                        {next_field(next)}
                        <button type="submit" class="button button-primary" data-testid="verify-submit">
                            "Sign me in"
                        </button>
                    </form>
                }
                    .into_any()
            }}
        </section>
    }
}
