//! `/signin` and `/signin/verify`: sign-in by emailed link. The request form
//! always answers the same way, whether or not an account exists. The link
//! opens a confirmation page whose button posts the token, because mail
//! scanners open links and must not sign anyone in.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::auth::{use_signin_notice, use_viewer};
use crate::components::email_field::EmailField;

#[component]
pub fn SigninPage() -> impl IntoView {
    let query = use_query_map();
    let sent = move || query.with(|q| q.get("sent").is_some());
    let notice = use_signin_notice();
    let viewer = use_viewer();
    view! {
        <Title text="Sign in"/>
        <section class="narrow">
            <h1>"Sign in"</h1>
            {viewer
                .map(|viewer| {
                    view! {
                        <p class="notice-box" data-testid="already-signed-in">
                            "You are signed in as " <strong>{viewer.email}</strong> ". "
                            <a href="/account">"Your account"</a>
                        </p>
                    }
                })}
            <Show
                when=sent
                fallback=move || {
                    let notice = notice.clone();
                    view! {
                        <p>"No password: we mail you a link that signs you in. It works once, for 15 minutes."</p>
                        <form method="post" action="/signin" class="stack-form" data-testid="signin-form">
                            <EmailField id="signin-email" value=notice.email.clone() error=notice.error.clone()/>
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
    view! {
        <Title text="Confirm sign-in"/>
        <section class="narrow">
            <h1>"Confirm sign-in"</h1>
            {notice
                .error
                .map(|error| view! { <p class="field-error" role="alert" data-testid="verify-error">{error}</p> })}
            {if token.is_empty() {
                view! {
                    <p>"This page needs the link from your mail. " <a href="/signin">"Ask for a new link"</a> "."</p>
                }
                    .into_any()
            } else {
                view! {
                    <p>"Press the button to finish signing in on this device."</p>
                    <form method="post" action="/signin/verify" data-testid="verify-form">
                        <input type="hidden" name="token" value=token/>
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
