//! `/admin` (and `/admin/outbox`): the operator's overview of accounts,
//! teams, seats and the mail the site sent. Operators only.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::auth::{format_time, set_status, use_page_data, use_viewer};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdminView {
    pub accounts: Vec<AdminAccount>,
    pub outbox: Vec<AdminMail>,
    pub founder_seats_total: u32,
    /// Paid founder seats.
    pub founder_seats_taken: i64,
    /// Seats held by checkouts in progress.
    pub founder_seats_held: i64,
    pub waitlist: i64,
    pub payments_configured: bool,
    /// The newsletter's sends, newest first.
    #[serde(default)]
    pub sends: Vec<AdminSend>,
    /// Issues that can be sent: (slug, title), newest first.
    #[serde(default)]
    pub issues: Vec<(String, String)>,
    /// Whether the server has a relay (`SMTP_URL`) to send through.
    #[serde(default)]
    pub mail_configured: bool,
    /// The outcome of the last send button.
    #[serde(default)]
    pub send_notice: Option<String>,
}

/// One send's ledger counts, as `/admin` and `/admin/sends.json` show them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdminSend {
    pub slug: String,
    pub title: String,
    pub queued: i64,
    pub sent: i64,
    pub failed: i64,
    pub bounced: i64,
    /// Messages a second over the last minute.
    pub rate_per_second: f64,
    pub queued_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminAccount {
    pub email: String,
    pub is_operator: bool,
    pub teams: Vec<String>,
    pub created_at: i64,
    /// `free`, `pro` or `founder`, with where it comes from (`grant`, `stripe`).
    pub tier: String,
    pub tier_source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminMail {
    pub recipient: String,
    pub subject: String,
    pub body: String,
    pub created_at: i64,
    pub sent_at: Option<i64>,
    pub error: Option<String>,
}

#[component]
pub fn AdminPage() -> impl IntoView {
    let viewer = use_viewer();
    let data = use_page_data::<AdminView>();
    let refused = |status: u16, text: &'static str| {
        set_status(status);
        view! {
            <Title text="Admin"/>
            <section class="narrow">
                <h1>"Admin"</h1>
                <p data-testid="admin-refused">{text}</p>
            </section>
        }
        .into_any()
    };
    match (viewer, data) {
        (None, _) => refused(401, "Sign in as an operator to see this page."),
        (Some(viewer), _) if !viewer.is_operator => refused(403, "This page is for the site's operators."),
        (Some(_), None) => refused(503, "The overview could not be loaded; see the server log."),
        (Some(_), Some(data)) => view! { <AdminOverview data/> }.into_any(),
    }
}

#[component]
fn AdminOverview(data: AdminView) -> impl IntoView {
    let accounts = data
        .accounts
        .iter()
        .map(|account| {
            view! {
                <tr>
                    <td>{account.email.clone()}</td>
                    <td>
                        {crate::pages::issues::tier_label(&account.tier)}
                        {account.tier_source.as_deref().map(|source| format!(" ({source})"))}
                    </td>
                    <td>{if account.is_operator { "operator" } else { "" }}</td>
                    <td>{account.teams.join(", ")}</td>
                    <td>{format_time(account.created_at)}</td>
                </tr>
            }
        })
        .collect_view();
    let outbox = data
        .outbox
        .iter()
        .map(|mail| {
            let state = match (&mail.sent_at, &mail.error) {
                (Some(at), _) => format!("sent {}", format_time(*at)),
                (None, Some(error)) => format!("failed: {error}"),
                (None, None) => "kept in the outbox".to_string(),
            };
            view! {
                <li class="mail">
                    <p>
                        <strong>{mail.subject.clone()}</strong>
                        " to " {mail.recipient.clone()} " · " {format_time(mail.created_at)} " · " {state}
                    </p>
                    <pre>{mail.body.clone()}</pre>
                </li>
            }
        })
        .collect_view();
    view! {
        <Title text="Admin"/>
        <section class="wide-table">
            <h1>"Admin"</h1>
            <p data-testid="seats">
                {format!(
                    "Founder seats: {} taken of {}, {} held by checkouts in progress; {} on the waitlist.{}",
                    data.founder_seats_taken,
                    data.founder_seats_total,
                    data.founder_seats_held,
                    data.waitlist,
                    if data.payments_configured { "" } else { " Payments are not configured (no STRIPE_SECRET_KEY)." },
                )}
            </p>
            <Sends data=data.clone()/>
            <h2>"Subscribers and accounts"</h2>
            <table class="data-table" data-testid="admin-accounts">
                <thead>
                    <tr>
                        <th scope="col">"Email"</th>
                        <th scope="col">"Tier"</th>
                        <th scope="col">"Role"</th>
                        <th scope="col">"Teams"</th>
                        <th scope="col">"Since"</th>
                    </tr>
                </thead>
                <tbody>{accounts}</tbody>
            </table>
            <h2 id="outbox">"Outbox"</h2>
            <p class="muted">"Every message the site sent, newest first. Links in delivered mail are not kept."</p>
            <ul class="outbox" data-testid="outbox">{outbox}</ul>
        </section>
    }
}

/// The newsletter's sends: a button that queues an issue, and each send's
/// counts, which follow the ledger live once the page has hydrated (polling
/// `/admin/sends.json`); without JavaScript a reload shows them.
#[component]
fn Sends(data: AdminView) -> impl IntoView {
    let sends = RwSignal::new(data.sends.clone());
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| live_sends::start(sends));
    let options = data
        .issues
        .iter()
        .map(|(slug, title)| view! { <option value=slug.clone()>{format!("{title} ({slug})")}</option> })
        .collect_view();
    view! {
        <h2 id="sends">"Newsletter sends"</h2>
        {(!data.mail_configured).then(|| view! {
            <p class="muted">"No SMTP_URL: queued messages wait until the server has a relay."</p>
        })}
        {data.send_notice.clone().map(|notice| view! { <p class="notice" role="status" data-testid="send-notice">{notice}</p> })}
        <form method="post" action="/admin/send" class="inline-form" data-testid="send-form">
            <label for="send-slug">"Issue"</label>
            " "
            <select id="send-slug" name="slug">{options}</select>
            " "
            <label><input type="checkbox" name="dry_run" value="1"/>" only count"</label>
            " "
            <button type="submit" class="button" data-testid="send-submit">"Send to subscribers"</button>
        </form>
        <table class="data-table" data-testid="admin-sends">
            <thead>
                <tr>
                    <th scope="col">"Issue"</th>
                    <th scope="col">"Queued"</th>
                    <th scope="col">"Sent"</th>
                    <th scope="col">"Failed"</th>
                    <th scope="col">"Bounced"</th>
                    <th scope="col">"Rate"</th>
                    <th scope="col">"Since"</th>
                </tr>
            </thead>
            <tbody>
                {move || {
                    sends
                        .get()
                        .into_iter()
                        .map(|send| {
                            view! {
                                <tr data-testid=format!("send-{}", send.slug)>
                                    <td>{send.title.clone()}</td>
                                    <td data-testid="send-queued">{send.queued}</td>
                                    <td data-testid="send-sent">{send.sent}</td>
                                    <td data-testid="send-failed">{send.failed}</td>
                                    <td data-testid="send-bounced">{send.bounced}</td>
                                    <td>{format!("{:.1}/s", send.rate_per_second)}</td>
                                    <td>{format_time(send.queued_at)}</td>
                                </tr>
                            }
                        })
                        .collect_view()
                }}
            </tbody>
        </table>
    }
}

#[cfg(feature = "hydrate")]
mod live_sends {
    use leptos::prelude::*;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    use super::AdminSend;

    /// Every two seconds, the counts from `/admin/sends.json`.
    pub fn start(sends: RwSignal<Vec<AdminSend>>) {
        let handle = set_interval_with_handle(
            move || {
                wasm_bindgen_futures::spawn_local(async move {
                    if let Some(fresh) = fetch().await {
                        sends.set(fresh);
                    }
                });
            },
            std::time::Duration::from_secs(2),
        );
        if let Ok(handle) = handle {
            on_cleanup(move || handle.clear());
        }
    }

    async fn fetch() -> Option<Vec<AdminSend>> {
        let window = web_sys::window()?;
        let response: web_sys::Response =
            JsFuture::from(window.fetch_with_str("/admin/sends.json")).await.ok()?.dyn_into().ok()?;
        if !response.ok() {
            return None;
        }
        let text = JsFuture::from(response.text().ok()?).await.ok()?.as_string()?;
        serde_json::from_str(&text).ok()
    }
}
