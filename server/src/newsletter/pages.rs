//! The data behind the newsletter's pages (the home page's latest issue, the
//! archive, an issue, the thank-you page after a checkout, unsubscribing)
//! and the flagship download. (The account page, which shows the reader's
//! subscription and feed among other areas' parts, is `crate::account_page`.)

use app::pages::issues::{ArchiveView, IssueCard, IssueView, LatestIssue};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::{IssueEntry, NewsletterError, ReaderAccess, Tier};
use crate::accounts::Account;
use crate::web::AppState;

/// The name the flagship tool's archive is stored under.
pub const FLAGSHIP: &str = "flagship";

pub fn router() -> Router<AppState> {
    Router::new().route("/downloads/flagship", get(download_flagship))
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

/// The private feed base URL for a token.
pub fn feed_base_url(public_url: &str, token: &str) -> String {
    format!("{public_url}/feed/{token}/")
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
