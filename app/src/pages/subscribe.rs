//! The newsletter by email: the subscribe form (on the home page, the
//! archive, every issue and the Free pricing card), `/subscribe` (its
//! answer), `/subscribe/confirm` (the mailed link's page, whose button
//! confirms: mail scanners open links and must confirm nobody) and
//! `/unsubscribe/{token}` (a page with a button; the button's POST is the
//! same one-click unsubscribe that mail apps send).

use leptos::prelude::*;
use leptos::server::SharedValue;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};

use crate::auth::{set_status, use_page_data, use_viewer};
use crate::components::email_field::EmailField;

/// What a subscribe form post left to show: the error naming the field and
/// the address typed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SubscribeNotice {
    pub email: String,
    pub error: Option<String>,
}

/// The outcome of the confirm button.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConfirmNotice {
    /// The address now on the list.
    pub confirmed: Option<String>,
    pub error: Option<String>,
}

/// The unsubscribe page's data: the address the link is for (`None`: no
/// such link) and whether it is off the list already.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsubscribeView {
    pub email: Option<String>,
    pub done: bool,
}

fn use_notice<T>() -> T
where
    T: Clone + Default + Send + Sync + Serialize + for<'de> Deserialize<'de> + 'static,
{
    SharedValue::new(|| use_context::<T>().unwrap_or_default()).into_inner()
}

/// The subscribe form. `place` names where it stands (for its test id).
#[component]
pub fn SubscribeForm(
    #[prop(into)] place: String,
    #[prop(optional, into)] heading: Option<String>,
) -> impl IntoView {
    let viewer_email = use_viewer().map(|viewer| viewer.email).unwrap_or_default();
    let id = format!("subscribe-email-{place}");
    view! {
        <form method="post" action="/subscribe" class="subscribe-form" data-testid=format!("subscribe-form-{place}")>
            <p class="subscribe-heading">
                <strong>{heading.unwrap_or_else(|| "Get the weekly issue by email.".to_string())}</strong>
                " Free; one click to leave."
            </p>
            <label for=id.clone() class="visually-hidden">"Email address"</label>
            <input
                id=id
                name="email"
                type="email"
                autocomplete="email"
                placeholder="you@example.com"
                required
                value=viewer_email
            />
            <button type="submit" class="button button-primary">"Subscribe"</button>
        </form>
    }
}

#[component]
pub fn SubscribePage() -> impl IntoView {
    let query = use_query_map();
    let sent = query.with_untracked(|q| q.get("sent").is_some());
    let notice = use_notice::<SubscribeNotice>();
    view! {
        <Title text="Subscribe"/>
        <section class="narrow">
            <h1>"The newsletter by email"</h1>
            {if sent {
                view! {
                    <div class="notice-box" role="status" data-testid="subscribe-sent">
                        <p><strong>"Check your mail."</strong></p>
                        <p>
                            "If the address can receive mail, a confirmation link is on its way. Open it and press the button: nothing is sent until you do."
                        </p>
                    </div>
                }
                    .into_any()
            } else {
                view! {
                    <p>"The weekly issue, free, in your inbox. We mail you a link to confirm the address first."</p>
                    <form method="post" action="/subscribe" class="stack-form" data-testid="subscribe-form">
                        <EmailField id="subscribe-email" value=notice.email.clone() error=notice.error.clone()/>
                        <button type="submit" class="button button-primary">"Subscribe"</button>
                    </form>
                }
                    .into_any()
            }}
        </section>
    }
}

#[component]
pub fn SubscribeConfirmPage() -> impl IntoView {
    let query = use_query_map();
    let token = query.with_untracked(|q| q.get("token").unwrap_or_default());
    let notice = use_notice::<ConfirmNotice>();
    if notice.error.is_some() {
        set_status(400);
    }
    view! {
        <Title text="Confirm your subscription"/>
        <section class="narrow">
            <h1>"Confirm your subscription"</h1>
            {match (notice.confirmed, notice.error) {
                (Some(email), _) => {
                    view! {
                        <div class="notice-box" role="status" data-testid="subscribe-confirmed">
                            <p><strong>"You are subscribed."</strong></p>
                            <p>"The next issue goes to " {email} ". Every issue carries a link to unsubscribe."</p>
                            <p><a href="/issues" rel="external">"Read the archive"</a></p>
                        </div>
                    }
                        .into_any()
                }
                (None, Some(error)) => {
                    view! {
                        <p class="field-error" role="alert" data-testid="confirm-error">{error}</p>
                        <p><a href="/subscribe">"Subscribe again"</a></p>
                    }
                        .into_any()
                }
                (None, None) if token.is_empty() => {
                    view! {
                        <p>"This page needs the link from your mail. " <a href="/subscribe">"Subscribe"</a> "."</p>
                    }
                        .into_any()
                }
                (None, None) => {
                    view! {
                        <p>"Press the button to start receiving the newsletter at this address."</p>
                        <form method="post" action="/subscribe/confirm" data-testid="confirm-form">
                            <input type="hidden" name="token" value=token/>
                            <button type="submit" class="button button-primary" data-testid="confirm-submit">
                                "Confirm my subscription"
                            </button>
                        </form>
                    }
                        .into_any()
                }
            }}
        </section>
    }
}

#[component]
pub fn UnsubscribePage() -> impl IntoView {
    let view_data = use_page_data::<UnsubscribeView>();
    let email = view_data.as_ref().and_then(|data| data.email.clone());
    if email.is_none() {
        set_status(404);
    }
    let done = view_data.is_some_and(|data| data.done);
    view! {
        <Title text="Unsubscribe"/>
        <section class="narrow">
            <h1>"Unsubscribe"</h1>
            {match (email, done) {
                (None, _) => {
                    view! {
                        <p data-testid="unsubscribe-unknown">
                            "This unsubscribe link is not complete or not ours. Use the link at the foot of a message, or "
                            <a href="/account" rel="external">"change your choice on your account"</a> "."
                        </p>
                    }
                        .into_any()
                }
                (Some(email), true) => {
                    view! {
                        <div class="notice-box" role="status" data-testid="unsubscribed">
                            <p><strong>"You are unsubscribed."</strong></p>
                            <p>{email} " gets no more issues by email. " <a href="/subscribe">"Subscribe again"</a> " any time."</p>
                        </div>
                    }
                        .into_any()
                }
                (Some(email), false) => {
                    view! {
                        <p>"Stop sending the newsletter to " <strong>{email}</strong> "?"</p>
                        <form method="post" data-testid="unsubscribe-form">
                            <button type="submit" class="button button-primary" data-testid="unsubscribe-submit">
                                "Unsubscribe"
                            </button>
                        </form>
                    }
                        .into_any()
                }
            }}
        </section>
    }
}
