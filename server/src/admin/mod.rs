//! The operators' admin page (`/admin`, `/admin/outbox`): its data, drawn
//! from every area (accounts and their reader tiers, the outbox, founder
//! seats and the waitlist, the newsletter's issues and sends), and its send
//! button ([`sends`]). It sits above the areas it reads, as the dashboard
//! does.

pub mod sends;

use app::pages::admin::{AdminAccount, AdminMail, AdminView};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;

use crate::accounts::{Account, AccountsError};
use crate::web::AppState;

pub fn router() -> Router<AppState> {
    sends::router()
}

/// Loads the admin page's data into the request's extensions for a GET by
/// an operator (after `accounts` resolved who is asking), so the page
/// renders and hydrates from it.
pub async fn page_data(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let wanted = path == "/admin" || path == "/admin/outbox";
    let operator = request.extensions().get::<Account>().is_some_and(|account| account.is_operator);
    if wanted && operator && matches!(*request.method(), Method::GET | Method::HEAD) {
        match admin_view(&state).await {
            Ok(view) => {
                request.extensions_mut().insert(view);
            }
            Err(error) => tracing::error!(%error, "could not load the admin page"),
        }
    }
    next.run(request).await
}

/// The admin page's data.
pub(crate) async fn admin_view(state: &AppState) -> Result<AdminView, AccountsError> {
    let mut accounts = Vec::new();
    for summary in state.store.account_summaries(500).await? {
        let access = state
            .store
            .reader_access(summary.account.id)
            .await
            .map_err(|error| AccountsError::Dashboard(error.to_string()))?;
        accounts.push(AdminAccount {
            email: summary.account.email,
            is_operator: summary.account.is_operator,
            teams: summary.teams,
            created_at: summary.account.created_at,
            tier: access.tier.as_str().to_string(),
            tier_source: access.source,
        });
    }
    let outbox = state
        .store
        .outbox(100)
        .await?
        .into_iter()
        .map(|mail| AdminMail {
            recipient: mail.recipient,
            subject: mail.subject,
            body: mail.body,
            created_at: mail.created_at,
            sent_at: mail.sent_at,
            error: mail.error,
        })
        .collect();
    let billing = |error: crate::billing::BillingError| AccountsError::Dashboard(error.to_string());
    let seats = state.store.founder_count(state.config.founder_seats).await.map_err(billing)?;
    Ok(AdminView {
        accounts,
        outbox,
        founder_seats_total: state.config.founder_seats,
        founder_seats_taken: seats.taken,
        founder_seats_held: seats.held,
        waitlist: state.store.waitlist_count().await.map_err(billing)?,
        payments_configured: state.config.stripe.is_some(),
        sends: sends::admin_sends(state)
            .await
            .map_err(|error| AccountsError::Dashboard(error.to_string()))?,
        issues: state
            .store
            .archive()
            .await
            .map_err(|error| AccountsError::Dashboard(error.to_string()))?
            .into_iter()
            .map(|entry| (entry.slug, entry.title))
            .collect(),
        mail_configured: state.config.smtp_url.is_some(),
        send_notice: None,
    })
}
