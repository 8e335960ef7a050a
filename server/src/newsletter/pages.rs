//! The data behind the newsletter's pages (the home page's latest issue, the
//! archive, an issue, the account page's subscription and feed sections),
//! the account page's feed form, and the flagship download.

use app::pages::account::{AccountView, DownloadView};
use app::pages::issues::{ArchiveView, IssueCard, IssueView, LatestIssue};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
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

/// Whether `path` is a page this module loads data for.
pub fn wants(path: &str) -> bool {
    path == "/"
        || path == "/issues"
        || path.starts_with("/issues/")
        || path == "/account"
        || path == "/pricing"
}

/// Loads what the page at `path` shows to this reader into `extensions`.
/// `access` is the reader's entitlement (free when signed out).
pub async fn load(
    state: &AppState,
    path: &str,
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
            });
        }
    } else if path == "/pricing" {
        let view = crate::billing::web::pricing_view(state, account, access, None)
            .await
            .map_err(|error| NewsletterError::Invalid(error.to_string()))?;
        extensions.insert(view);
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
    })
}

/// The private feed base URL for a token.
pub fn feed_base_url(public_url: &str, token: &str) -> String {
    format!("{public_url}/feed/{token}/")
}

#[derive(Debug, serde::Deserialize)]
struct AccountForm {
    action: Option<String>,
}

/// `POST /account`: `action=rotate_feed` (a new private feed URL, shown
/// once; the old one stops working) or `action=revoke_feed`.
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
    let (status, new_url, notice) = match form.and_then(|form| form.action).as_deref() {
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
        Some("revoke_feed") => match state.store.revoke_feed_token(account.id).await {
            Ok(true) => (StatusCode::OK, None, "Your private feed address no longer works.".to_string()),
            Ok(false) => (StatusCode::OK, None, "You had no private feed address.".to_string()),
            Err(error) => return failure(&error),
        },
        _ => (StatusCode::BAD_REQUEST, None, "action: unknown".to_string()),
    };
    let view = match account_view(&state, &account, &access, new_url, Some(notice)).await {
        Ok(view) => view,
        Err(error) => return failure(&error),
    };
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
