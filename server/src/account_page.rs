//! The reader's account page (`/account`): its data, drawn from the
//! newsletter (the tier, the private feed, the download, the newsletter by
//! email), billing (the Stripe customer) and the MCP server (whether it is
//! open, the founder's tokens), and its forms: `POST /account` (feeds, MCP
//! tokens, the newsletter by email, a team of one's own) and `POST
//! /account/billing` (Stripe's portal, cancel and resume). It sits above the
//! areas it reads.

use app::pages::account::{AccountView, DownloadView, McpTokenView, McpView};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::Router;
use leptos::prelude::provide_context;
use serde::Deserialize;

use crate::accounts::web::signed_in;
use crate::accounts::Account;
use crate::billing::BillingError;
use crate::newsletter::pages::{feed_base_url, FLAGSHIP};
use crate::newsletter::{NewsletterError, ReaderAccess, SubscriberStatus, Tier};
use crate::web::{render_page, AppState};

pub fn router() -> Router<AppState> {
    Router::new().route("/account", post(account_action)).route("/account/billing", post(billing_action))
}

/// Loads the account page's data into the request's extensions for a GET
/// by a signed-in reader (after `accounts` resolved who is asking).
pub async fn page_data(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let reader = request.extensions().get::<Account>().cloned();
    if let (true, true, Some(account)) =
        (request.uri().path() == "/account", matches!(*request.method(), Method::GET | Method::HEAD), reader)
    {
        let access = request.extensions().get::<ReaderAccess>().cloned().unwrap_or_else(ReaderAccess::free);
        match account_view(&state, &account, &access, None, None).await {
            Ok(view) => {
                request.extensions_mut().insert(view);
            }
            Err(error) => tracing::error!(%error, path = "/account", "could not load the account page"),
        }
    }
    next.run(request).await
}

/// The account page's data.
async fn account_view(
    state: &AppState,
    account: &Account,
    access: &ReaderAccess,
    new_feed_url: Option<String>,
    notice: Option<String>,
) -> Result<AccountView, NewsletterError> {
    let store = &state.store;
    let paying = access.tier > Tier::Free;
    let download = if paying {
        store.download_info(FLAGSHIP).await?.map(|(file_name, size)| DownloadView { file_name, size })
    } else {
        None
    };
    Ok(AccountView {
        tier: access.tier.as_str().to_string(),
        source: access.source.clone(),
        status: access.status.clone(),
        period_end: access.period_end,
        cancel_at_period_end: access.cancel_at_period_end,
        feed_created_at: store.feed_token_created(account.id).await?,
        new_feed_url,
        download,
        notice,
        payments_configured: state.config.stripe.is_some(),
        has_stripe_customer: state.config.stripe.is_some()
            && store
                .stripe_customer(account.id)
                .await
                .map_err(|error| NewsletterError::Invalid(error.to_string()))?
                .is_some(),
        stripe_managed: access.source.as_deref() == Some("stripe"),
        mcp: if access.tier == Tier::Founder { Some(mcp_view(state, account).await?) } else { None },
        newsletter: match store.subscriber_status(&account.email).await? {
            Some(SubscriberStatus::Bounced) => "bounced",
            Some(SubscriberStatus::Confirmed) => "on",
            Some(_) => "off",
            None if paying => "on",
            None => "off",
        }
        .to_string(),
    })
}

/// The MCP section of a founder's account page.
async fn mcp_view(state: &AppState, account: &Account) -> Result<McpView, NewsletterError> {
    let invalid = |error: &dyn std::fmt::Display| NewsletterError::Invalid(error.to_string());
    let count =
        state.store.founder_count(state.config.founder_seats).await.map_err(|error| invalid(&error))?;
    let availability = crate::mcp::availability_of(state.config.mcp, &count);
    let seats =
        app::pages::pricing::FounderSeats { taken: count.taken, total: count.total, open: count.open };
    let switch = crate::billing::web::mcp_switch_name(state.config.mcp);
    let tokens = state.store.mcp_tokens(account.id).await.map_err(|error| invalid(&error))?;
    Ok(McpView {
        open: availability == crate::mcp::McpAvailability::Open,
        status: app::pages::pricing::mcp_status(switch, seats),
        url: format!("{}/mcp", state.config.public_url),
        tokens: tokens
            .into_iter()
            .map(|token| McpTokenView {
                id: token.id,
                name: token.name,
                created_at: token.created_at,
                last_used_at: token.last_used_at,
                revoked_at: token.revoked_at,
            })
            .collect(),
        new_token: None,
    })
}

#[derive(Debug, Deserialize)]
struct AccountForm {
    action: Option<String>,
    /// `make_mcp_token`: the new token's name.
    name: Option<String>,
    /// `revoke_mcp_token`: which token.
    token_id: Option<String>,
    /// `create_team`: the new team's slug.
    slug: Option<String>,
}

/// `POST /account`: `action=rotate_feed` (a new private feed URL, shown
/// once; the old one stops working), `action=revoke_feed`,
/// `action=newsletter_on` / `newsletter_off` (the newsletter by email: a
/// signed-in reader's own address needs no confirmation), and for founders
/// `action=make_mcp_token` (`name`; shown once) or `action=revoke_mcp_token`
/// (`token_id`).
async fn account_action(State(state): State<AppState>, request: Request) -> Response {
    let Some(account) = signed_in(request.extensions()) else {
        return (StatusCode::UNAUTHORIZED, "Sign in first.").into_response();
    };
    let (parts, body) = request.into_parts();
    let form = match axum::body::to_bytes(body, 16 * 1024).await {
        Ok(bytes) => serde_urlencoded::from_bytes::<AccountForm>(&bytes).ok(),
        Err(_) => None,
    };
    let access = match state.store.reader_access(account.id).await {
        Ok(access) => access,
        Err(error) => return failure(&error),
    };
    let form = form.unwrap_or(AccountForm { action: None, name: None, token_id: None, slug: None });
    let mut new_mcp_token = None;
    let (status, new_url, notice) = match form.action.as_deref() {
        Some("make_mcp_token" | "revoke_mcp_token") if access.tier != Tier::Founder => (
            StatusCode::FORBIDDEN,
            None,
            "MCP tokens are for founders: the founders' MCP server comes with the Founder tier.".to_string(),
        ),
        Some("make_mcp_token") => {
            match state.store.create_mcp_token(account.id, form.name.as_deref().unwrap_or_default()).await {
                Ok(made) => {
                    new_mcp_token = Some(made.secret);
                    (StatusCode::OK, None, format!("Your new MCP token {:?} is below.", made.token.name))
                }
                Err(crate::mcp::McpTokenError::Accounts(error)) => {
                    return failure(&NewsletterError::Invalid(error.to_string()))
                }
                Err(refused) => (StatusCode::BAD_REQUEST, None, refused.to_string()),
            }
        }
        Some("revoke_mcp_token") => match form.token_id.as_deref().map(str::parse::<i64>) {
            Some(Ok(token_id)) => match state.store.revoke_mcp_token(account.id, token_id).await {
                Ok(true) => (StatusCode::OK, None, "That MCP token no longer works.".to_string()),
                Ok(false) => (StatusCode::OK, None, "That MCP token was already revoked.".to_string()),
                Err(error) => return failure(&NewsletterError::Invalid(error.to_string())),
            },
            _ => (StatusCode::BAD_REQUEST, None, "token_id: not a token of yours".to_string()),
        },
        Some("rotate_feed") if access.tier == Tier::Free => (
            StatusCode::FORBIDDEN,
            None,
            "Private feeds are for Pro and Founder readers: the public feeds carry every free part."
                .to_string(),
        ),
        Some("rotate_feed") => match state.store.rotate_feed_token(account.id).await {
            Ok(token) => (
                StatusCode::OK,
                Some(feed_base_url(&state.config.public_url, &token)),
                "Your new private feed address is below; any earlier one no longer works.".to_string(),
            ),
            Err(error) => return failure(&error),
        },
        // A team of one's own, with oneself its admin: its page follows,
        // with what it takes to connect a loop.
        Some("create_team") => {
            let slug = form.slug.as_deref().unwrap_or_default().trim().to_ascii_lowercase();
            match state.store.create_team_for(&slug, account.id).await {
                Ok(team) => {
                    return axum::response::Redirect::to(&format!("/teams/{}", team.slug)).into_response()
                }
                Err(crate::accounts::AccountsError::BadSlug { .. }) => (
                    StatusCode::BAD_REQUEST,
                    None,
                    "slug: 2 to 40 lowercase letters, digits and single hyphens, not at either end"
                        .to_string(),
                ),
                Err(crate::accounts::AccountsError::TeamExists { slug }) => (
                    StatusCode::CONFLICT,
                    None,
                    format!("slug: the team {slug} exists already; one of its admins can add you"),
                ),
                Err(refused @ crate::accounts::AccountsError::TooManyTeams { .. }) => {
                    (StatusCode::FORBIDDEN, None, refused.to_string())
                }
                Err(error) => return failure(&NewsletterError::Invalid(error.to_string())),
            }
        }
        Some("newsletter_on") => match state.store.confirm_email(&account.email, "account").await {
            Ok(()) => (StatusCode::OK, None, "Each issue will be mailed to you.".to_string()),
            Err(error) => return failure(&error),
        },
        Some("newsletter_off") => match state.store.unsubscribe_email(&account.email).await {
            Ok(()) => (StatusCode::OK, None, "The issues will no longer be mailed to you.".to_string()),
            Err(error) => return failure(&error),
        },
        Some("revoke_feed") => match state.store.revoke_feed_token(account.id).await {
            Ok(true) => (StatusCode::OK, None, "Your private feed address no longer works.".to_string()),
            Ok(false) => (StatusCode::OK, None, "You had no private feed address.".to_string()),
            Err(error) => return failure(&error),
        },
        _ => (StatusCode::BAD_REQUEST, None, "action: unknown".to_string()),
    };
    let mut view = match account_view(&state, &account, &access, new_url, Some(notice)).await {
        Ok(view) => view,
        Err(error) => return failure(&error),
    };
    if let Some(mcp) = view.mcp.as_mut() {
        mcp.new_token = new_mcp_token;
    }
    let mut parts = parts;
    parts.extensions.insert(view.clone());
    render_page(&state, parts, status, move || provide_context(view.clone())).await
}

fn failure(error: &NewsletterError) -> Response {
    tracing::error!(%error, "an account action failed");
    (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong; nothing was changed. Try again.")
        .into_response()
}

#[derive(Debug, Deserialize)]
struct BillingForm {
    action: Option<String>,
}

/// `POST /account/billing`: `action=portal` (303 to Stripe's Customer
/// Portal), `cancel` or `resume` (cancel at period end, or undo it).
async fn billing_action(State(state): State<AppState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Some(account) = signed_in(&parts.extensions) else {
        return Redirect::to("/signin").into_response();
    };
    let action = axum::body::to_bytes(body, 4096)
        .await
        .ok()
        .and_then(|bytes| serde_urlencoded::from_bytes::<BillingForm>(&bytes).ok())
        .and_then(|form| form.action);
    let (Some(api), Some(config)) = (state.stripe.as_ref(), state.config.stripe.as_ref()) else {
        return account_answer(
            &state,
            parts,
            &account,
            StatusCode::SERVICE_UNAVAILABLE,
            "Payments are not configured on this site.",
        )
        .await;
    };
    let result: Result<Option<String>, BillingError> = async {
        match action.as_deref() {
            Some("portal") => {
                let Some(customer) = state.store.stripe_customer(account.id).await? else {
                    return Err(BillingError::Invalid("You have no subscription to manage yet.".into()));
                };
                let url = api
                    .portal_session(
                        &customer,
                        &format!("{}/account", state.config.public_url),
                        config.portal_configuration.as_deref(),
                    )
                    .await?;
                Ok(Some(url))
            }
            Some(action @ ("cancel" | "resume")) => {
                let Some(subscription) = state.store.live_stripe_subscription(account.id).await? else {
                    return Err(BillingError::Invalid("You have no subscription to change.".into()));
                };
                api.set_cancel_at_period_end(&subscription, action == "cancel").await?;
                crate::billing::webhook::sync_subscription(&state, api, &subscription).await?;
                Ok(None)
            }
            _ => Err(BillingError::Invalid("action: unknown".into())),
        }
    }
    .await;
    match result {
        Ok(Some(url)) => Redirect::to(&url).into_response(),
        Ok(None) => {
            let notice = if action.as_deref() == Some("cancel") {
                "Your subscription will end at the end of the period; you keep access until then."
            } else {
                "Your subscription will renew."
            };
            account_answer(&state, parts, &account, StatusCode::OK, notice).await
        }
        Err(BillingError::Invalid(message)) => {
            account_answer(&state, parts, &account, StatusCode::BAD_REQUEST, &message).await
        }
        Err(error) => {
            tracing::error!(%error, "billing action failed");
            account_answer(
                &state,
                parts,
                &account,
                StatusCode::BAD_GATEWAY,
                "Stripe could not be reached; nothing was changed. Try again.",
            )
            .await
        }
    }
}

async fn account_answer(
    state: &AppState,
    mut parts: axum::http::request::Parts,
    account: &Account,
    status: StatusCode,
    notice: &str,
) -> Response {
    let access = state.store.reader_access(account.id).await.unwrap_or_else(|_| ReaderAccess::free());
    match account_view(state, account, &access, None, Some(notice.to_string())).await {
        Ok(view) => {
            parts.uri = axum::http::Uri::from_static("/account");
            parts.extensions.insert(view.clone());
            render_page(state, parts, status, move || provide_context(view.clone())).await
        }
        Err(error) => {
            tracing::error!(%error, "could not render the account page");
            (StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong.").into_response()
        }
    }
}
