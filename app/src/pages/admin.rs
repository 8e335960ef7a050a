//! `/admin` (and `/admin/outbox`): the operator's overview of accounts,
//! teams, seats and the mail the site sent. Operators only.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::auth::{format_time, set_status, use_page_data, use_viewer};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
