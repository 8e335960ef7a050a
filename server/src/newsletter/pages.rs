//! The data behind the newsletter's pages (the home page's latest issue, the
//! archive, an issue, the account page's subscription and feed sections),
//! the account page's feed form, and the flagship download.

use app::pages::account::{AccountView, DownloadView, McpTokenView, McpView};
use app::pages::issues::{ArchiveView, IssueCard, IssueView, LatestIssue};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use leptos::prelude::provide_context;

use super::{IssueEntry, NewsletterError, ReaderAccess, Tier};
use crate::accounts::Account;
use crate::web::{render_page, AppState};

/// The name the flagship tool's archive is stored under.
pub const FLAGSHIP: &str = "flagship";

pub fn router() -> Router<AppState> {
    Router::new().route("/account", post(account_action)).route("/downloads/flagship", get(download_flagship))
}

/// Loads the newsletter's pages' data into the request's extensions for a
/// GET (after `accounts` resolved who is asking). They have data for
/// everyone, signed in or not: signed out, the reader is a free one.
pub async fn page_data(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    if matches!(*request.method(), Method::GET | Method::HEAD) && wants(&path) {
        let account = request.extensions().get::<Account>().cloned();
        let access = request.extensions().get::<ReaderAccess>().cloned().unwrap_or_else(ReaderAccess::free);
        let mut extensions = std::mem::take(request.extensions_mut());
        let query = request.uri().query().map(str::to_string);
        let loaded = load(&state, &path, query.as_deref(), account.as_ref(), &access, &mut extensions).await;
        *request.extensions_mut() = extensions;
        if let Err(error) = loaded {
            tracing::error!(%error, %path, "could not load a newsletter page");
        }
    }
    next.run(request).await
}

/// Whether `path` is a page this module loads data for.
fn wants(path: &str) -> bool {
    path == "/"
        || path == "/issues"
        || path.starts_with("/issues/")
        || path == "/account"
        || path == "/pricing"
        || path == "/checkout/thanks"
        || path.starts_with("/unsubscribe/")
}

/// The `next` of a page's query string, if it is a path of this site.
fn next_of(query: Option<&str>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Next {
        next: Option<String>,
    }
    let next = serde_urlencoded::from_str::<Next>(query?).ok()?.next?;
    app::return_to::same_site_path(&next)
}

/// Loads what the page at `path` (with `query`) shows to this reader into
/// `extensions`. `access` is the reader's entitlement (free when signed out).
pub async fn load(
    state: &AppState,
    path: &str,
    query: Option<&str>,
    account: Option<&Account>,
    access: &ReaderAccess,
    extensions: &mut axum::http::Extensions,
) -> Result<(), NewsletterError> {
    let store = &state.store;
    if path == "/" {
        let latest = store.latest_free_issue().await?;
        extensions.insert(LatestIssue(latest.map(|entry| card(entry, access.tier))));
    } else if path == "/issues" {
        let issues = store.archive().await?.into_iter().map(|entry| card(entry, access.tier)).collect();
        extensions.insert(ArchiveView { issues, reader_tier: access.tier.as_str().to_string() });
    } else if let Some(slug) =
        path.strip_prefix("/issues/").filter(|slug| !slug.is_empty() && !slug.contains('/'))
    {
        if let Some(record) = store.issue_for(slug, access.tier).await? {
            let locked_words = if record.complete() { 0 } else { record.paid_words };
            extensions.insert(IssueView {
                slug: record.slug,
                title: record.title,
                date: record.date,
                tier: record.tier.as_str().to_string(),
                summary: record.summary,
                free_html: record.free_html,
                paid_html: record.paid_html,
                locked_words,
                signed_in: account.is_some(),
                reader_tier: access.tier.as_str().to_string(),
                payments_configured: state.config.stripe.is_some(),
            });
        }
    } else if let Some(token) = path.strip_prefix("/unsubscribe/") {
        let target = store.unsubscribe_target(token).await?;
        extensions.insert(app::pages::subscribe::UnsubscribeView {
            done: target.as_ref().is_some_and(|(_, status)| *status != super::SubscriberStatus::Confirmed),
            email: target.map(|(email, _)| email),
        });
    } else if path == "/pricing" {
        let view = crate::billing::web::pricing_view(state, account, access, None)
            .await
            .map_err(|error| NewsletterError::Invalid(error.to_string()))?;
        extensions.insert(view);
    } else if path == "/checkout/thanks" {
        // Only what the database says: the tier comes from Stripe's webhooks.
        let next = next_of(query);
        let slug = next.as_deref().and_then(|next| next.strip_prefix("/issues/"));
        let slug = slug.and_then(|slug| slug.split(['?', '#']).next()).filter(|slug| !slug.contains('/'));
        let next_title = match slug {
            Some(slug) => store.issue_for(slug, access.tier).await?.map(|record| record.title),
            None => None,
        };
        extensions.insert(app::pages::pricing::ThanksView {
            signed_in: account.is_some(),
            tier: access.tier.as_str().to_string(),
            next,
            next_title,
        });
    } else if path == "/account" {
        if let Some(account) = account {
            extensions.insert(account_view(state, account, access, None, None).await?);
        }
    }
    Ok(())
}

fn card(entry: IssueEntry, reader: Tier) -> IssueCard {
    IssueCard {
        readable: !entry.has_paid_part || reader.reads(entry.tier),
        slug: entry.slug,
        title: entry.title,
        date: entry.date,
        tier: entry.tier.as_str().to_string(),
        summary: entry.summary,
        has_paid_part: entry.has_paid_part,
    }
}

/// The account page's data.
pub async fn account_view(
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
            Some(super::SubscriberStatus::Bounced) => "bounced",
            Some(super::SubscriberStatus::Confirmed) => "on",
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

/// The private feed base URL for a token.
pub fn feed_base_url(public_url: &str, token: &str) -> String {
    format!("{public_url}/feed/{token}/")
}

#[derive(Debug, serde::Deserialize)]
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
    let Some(account) = crate::accounts::web::signed_in(request.extensions()) else {
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

/// `GET /downloads/flagship`: the flagship tool's source for Pro and
/// Founder readers; 401 signed out, 403 for other readers, 404 before the
/// operator has uploaded it.
async fn download_flagship(State(state): State<AppState>, request: Request) -> Response {
    let text = |status: StatusCode, message: &'static str| {
        (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message).into_response()
    };
    let Some(account) = crate::accounts::web::signed_in(request.extensions()) else {
        return text(
            StatusCode::UNAUTHORIZED,
            "Sign in to download the flagship tool's source (Pro and Founder).",
        );
    };
    match state.store.reader_access(account.id).await {
        Ok(access) if access.tier >= Tier::Pro => {}
        Ok(_) => {
            return text(StatusCode::FORBIDDEN, "The flagship tool's source is for Pro and Founder readers.")
        }
        Err(error) => return failure(&error),
    }
    match state.store.download(FLAGSHIP).await {
        Ok(Some(download)) => {
            let disposition = format!(
                "attachment; filename=\"{}\"",
                download.file_name.replace(|c: char| !c.is_ascii_graphic() || c == '"' || c == '\\', "_")
            );
            // An archive is compressed already: `identity` keeps the
            // compression layer from spending a core on it again.
            let mut response = (
                [
                    (header::CONTENT_TYPE, "application/octet-stream"),
                    (header::CACHE_CONTROL, "private, no-store"),
                    (header::CONTENT_ENCODING, "identity"),
                ],
                download.content,
            )
                .into_response();
            if let Ok(value) = HeaderValue::from_str(&disposition) {
                response.headers_mut().insert(header::CONTENT_DISPOSITION, value);
            }
            if let Ok(value) = HeaderValue::from_str(&download.sha256) {
                response.headers_mut().insert("x-content-sha256", value);
            }
            response
        }
        Ok(None) => text(StatusCode::NOT_FOUND, "The flagship tool's source has not been published yet."),
        Err(error) => failure(&error),
    }
}
