//! The feeds: RSS 2.0, Atom and JSON Feed 1.1. The public ones under
//! `/feed/` carry free parts only, with a link to the rest; a subscriber's
//! private ones under `/feed/{token}/` carry the full text of what their
//! tier reads *now* (a lapsed subscriber's feed falls back to free parts).

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use sha2::{Digest, Sha256};

use super::{IssueRecord, Tier};
use crate::web::AppState;

/// How many issues a feed carries.
const FEED_ITEMS: i64 = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedFormat {
    Rss,
    Atom,
    Json,
}

impl FeedFormat {
    fn of_file(name: &str) -> Option<FeedFormat> {
        match name {
            "rss.xml" => Some(FeedFormat::Rss),
            "atom.xml" => Some(FeedFormat::Atom),
            "feed.json" => Some(FeedFormat::Json),
            _ => None,
        }
    }

    fn file(self) -> &'static str {
        match self {
            FeedFormat::Rss => "rss.xml",
            FeedFormat::Atom => "atom.xml",
            FeedFormat::Json => "feed.json",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            FeedFormat::Rss => "application/rss+xml; charset=utf-8",
            FeedFormat::Atom => "application/atom+xml; charset=utf-8",
            FeedFormat::Json => "application/feed+json; charset=utf-8",
        }
    }
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/feed/{file}", get(public_feed))
        .route("/feed/{token}/", get(private_feed_index))
        .route("/feed/{token}/{file}", get(private_feed))
}

async fn public_feed(
    State(state): State<AppState>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some(format) = FeedFormat::of_file(&file) else {
        return not_found("No such feed: the feeds are rss.xml, atom.xml and feed.json.");
    };
    let base = format!("{}/feed/", state.config.public_url);
    respond(&state, format, Tier::Free, &base, true, &headers).await
}

/// `GET /feed/{token}/`: the private feed base URL itself answers with the
/// three feeds under it, so the address an account page shows leads somewhere.
async fn private_feed_index(State(state): State<AppState>, Path(token): Path<String>) -> Response {
    match state.store.feed_token_account(&token).await {
        Ok(Some(_)) => {
            let base = format!("{}/feed/{token}/", state.config.public_url);
            let text = format!(
                "Your private Fixed Point feeds: add one of them to your feed reader.\n\n\
                 RSS:       {base}rss.xml\nAtom:      {base}atom.xml\nJSON Feed: {base}feed.json\n"
            );
            (
                [
                    (axum::http::header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                    (axum::http::header::CACHE_CONTROL, "private, no-store"),
                ],
                text,
            )
                .into_response()
        }
        Ok(None) => not_found(
            "This private feed address is not valid: it may have been rotated. Your account page shows the current one.",
        ),
        Err(error) => server_error(&error),
    }
}

async fn private_feed(
    State(state): State<AppState>,
    Path((token, file)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let Some(format) = FeedFormat::of_file(&file) else {
        return not_found("No such feed: the feeds are rss.xml, atom.xml and feed.json.");
    };
    let account = match state.store.feed_token_account(&token).await {
        Ok(Some(account)) => account,
        Ok(None) => {
            return not_found(
                "This private feed address is not valid: it may have been rotated. Your account page shows the current one.",
            )
        }
        Err(error) => return server_error(&error),
    };
    let tier = match state.store.reader_access(account).await {
        Ok(access) => access.tier,
        Err(error) => return server_error(&error),
    };
    let base = format!("{}/feed/{token}/", state.config.public_url);
    respond(&state, format, tier, &base, false, &headers).await
}

async fn respond(
    state: &AppState,
    format: FeedFormat,
    tier: Tier,
    base: &str,
    public: bool,
    headers: &HeaderMap,
) -> Response {
    let issues = match state.store.feed_issues(tier, FEED_ITEMS).await {
        Ok(issues) => issues,
        Err(error) => return server_error(&error),
    };
    let site = &state.config.public_url;
    let body = render(format, &issues, site, &format!("{base}{}", format.file()), public);
    let etag = format!("\"{}\"", &hex::encode(Sha256::digest(body.as_bytes()))[..32]);
    let mut response =
        if headers.get(header::IF_NONE_MATCH).and_then(|value| value.to_str().ok()) == Some(&etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            ([(header::CONTENT_TYPE, format.content_type())], body).into_response()
        };
    let response_headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response_headers.insert(header::ETAG, value);
    }
    response_headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if public { "public, max-age=300" } else { "private, max-age=300" }),
    );
    if !public {
        response_headers.insert("x-robots-tag", HeaderValue::from_static("noindex"));
    }
    response
}

fn not_found(message: &'static str) -> Response {
    (StatusCode::NOT_FOUND, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message).into_response()
}

fn server_error(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "a feed failed");
    (StatusCode::INTERNAL_SERVER_ERROR, "The feed could not be built; try again shortly.").into_response()
}

/// The HTML an item carries: everything the reader may read, and where the
/// reader is not entitled to the rest, a link to it naming the tier.
fn item_html(issue: &IssueRecord, link: &str) -> String {
    let mut html = issue.free_html.clone();
    match &issue.paid_html {
        Some(paid) => html.push_str(paid),
        None if issue.paid_words > 0 => {
            if html.trim().is_empty() {
                html.push_str(&format!("<p>{}</p>", xml_escape(&issue.summary)));
            }
            html.push_str(&format!(
                "<p><a href=\"{}\">The rest of this issue ({} words) is for {} readers: read it on Fixed Point.</a></p>",
                xml_escape(link),
                issue.paid_words,
                issue.tier.label()
            ));
        }
        None => {}
    }
    html
}

/// Renders a feed of `issues` (already cut to what the reader may read).
pub fn render(
    format: FeedFormat,
    issues: &[IssueRecord],
    site: &str,
    self_url: &str,
    public: bool,
) -> String {
    let title = if public { "Fixed Point" } else { "Fixed Point (private feed)" };
    let description = "The newsletter about agent loops that know when they have finished.";
    let link = |issue: &IssueRecord| format!("{site}/issues/{}", issue.slug);
    match format {
        FeedFormat::Rss => {
            let mut out = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
            out.push_str("<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel>");
            out.push_str(&format!(
                "<title>{}</title><link>{}/issues</link><description>{}</description><language>en</language>\
                 <atom:link href=\"{}\" rel=\"self\" type=\"application/rss+xml\"/>",
                xml_escape(title),
                xml_escape(site),
                xml_escape(description),
                xml_escape(self_url)
            ));
            if let Some(latest) = issues.first() {
                out.push_str(&format!("<lastBuildDate>{}</lastBuildDate>", rfc822(&latest.date)));
            }
            for issue in issues {
                let url = link(issue);
                out.push_str(&format!(
                    "<item><title>{}</title><link>{}</link><guid isPermaLink=\"true\">{}</guid>\
                     <pubDate>{}</pubDate><category>{}</category><description>{}</description></item>",
                    xml_escape(&issue.title),
                    xml_escape(&url),
                    xml_escape(&url),
                    rfc822(&issue.date),
                    issue.tier.as_str(),
                    xml_escape(&item_html(issue, &url)),
                ));
            }
            out.push_str("</channel></rss>\n");
            out
        }
        FeedFormat::Atom => {
            let updated = issues
                .first()
                .map_or_else(|| "1970-01-01T00:00:00Z".to_string(), |issue| rfc3339(&issue.date));
            let mut out = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
            out.push_str(&format!(
                "<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>{}</title><subtitle>{}</subtitle>\
                 <id>{}/issues</id><updated>{updated}</updated>\
                 <link rel=\"alternate\" type=\"text/html\" href=\"{}/issues\"/>\
                 <link rel=\"self\" type=\"application/atom+xml\" href=\"{}\"/>\
                 <author><name>Fixed Point</name></author>",
                xml_escape(title),
                xml_escape(description),
                xml_escape(site),
                xml_escape(site),
                xml_escape(self_url)
            ));
            for issue in issues {
                let url = link(issue);
                out.push_str(&format!(
                    "<entry><title>{}</title><id>{}</id><link rel=\"alternate\" type=\"text/html\" href=\"{}\"/>\
                     <published>{}</published><updated>{}</updated><category term=\"{}\"/>\
                     <summary>{}</summary><content type=\"html\">{}</content></entry>",
                    xml_escape(&issue.title),
                    xml_escape(&url),
                    xml_escape(&url),
                    rfc3339(&issue.date),
                    rfc3339(&issue.date),
                    issue.tier.as_str(),
                    xml_escape(&issue.summary),
                    xml_escape(&item_html(issue, &url)),
                ));
            }
            out.push_str("</feed>\n");
            out
        }
        FeedFormat::Json => {
            let items: Vec<serde_json::Value> = issues
                .iter()
                .map(|issue| {
                    let url = link(issue);
                    serde_json::json!({
                        "id": url,
                        "url": url,
                        "title": issue.title,
                        "summary": issue.summary,
                        "content_html": item_html(issue, &url),
                        "date_published": rfc3339(&issue.date),
                        "tags": [issue.tier.as_str()],
                    })
                })
                .collect();
            let feed = serde_json::json!({
                "version": "https://jsonfeed.org/version/1.1",
                "title": title,
                "description": description,
                "home_page_url": format!("{site}/issues"),
                "feed_url": self_url,
                "language": "en",
                "authors": [{"name": "Fixed Point"}],
                "items": items,
            });
            let mut text = serde_json::to_string_pretty(&feed).unwrap_or_default();
            text.push('\n');
            text
        }
    }
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 forbids are dropped.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            '\u{fffe}' | '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

fn rfc3339(date: &str) -> String {
    format!("{date}T00:00:00Z")
}

/// `2026-11-02` as `Mon, 02 Nov 2026 00:00:00 +0000`.
fn rfc822(date: &str) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let part = |range: std::ops::Range<usize>| date.get(range).and_then(|text| text.parse::<i64>().ok());
    let (Some(year), Some(month), Some(day)) = (part(0..4), part(5..7), part(8..10)) else {
        return "Thu, 01 Jan 1970 00:00:00 +0000".to_string();
    };
    // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = DAYS[(days + 3).rem_euclid(7) as usize];
    let month_name = MONTHS.get((month - 1) as usize).copied().unwrap_or("Jan");
    format!("{weekday}, {day:02} {month_name} {year:04} 00:00:00 +0000")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(tier: Tier, free: &str, paid: Option<&str>, paid_words: i64) -> IssueRecord {
        IssueRecord {
            slug: "s".into(),
            title: "A <title> & more".into(),
            date: "2026-11-02".into(),
            tier,
            summary: "Summary.".into(),
            free_html: free.into(),
            paid_html: paid.map(String::from),
            paid_words,
            updated_at: 0,
        }
    }

    #[test]
    fn dates_read_as_rfc822_with_the_right_weekday() {
        assert_eq!(rfc822("2026-11-02"), "Mon, 02 Nov 2026 00:00:00 +0000");
        assert_eq!(rfc822("2000-02-29"), "Tue, 29 Feb 2000 00:00:00 +0000");
        assert_eq!(rfc822("1970-01-01"), "Thu, 01 Jan 1970 00:00:00 +0000");
    }

    #[test]
    fn a_locked_issue_carries_its_free_part_and_a_link_naming_the_tier() {
        let locked = issue(Tier::Pro, "<p>free</p>", None, 120);
        let html = item_html(&locked, "https://x/issues/s");
        assert!(html.contains("<p>free</p>") && html.contains("120 words") && html.contains("Pro readers"));
        let open = issue(Tier::Pro, "<p>free</p>", Some("<p>paid</p>"), 120);
        assert_eq!(item_html(&open, "u"), "<p>free</p><p>paid</p>");
    }

    #[test]
    fn every_format_escapes_and_parses() {
        let issues = [issue(Tier::Free, "<p>a & b</p>", None, 0)];
        for format in [FeedFormat::Rss, FeedFormat::Atom] {
            let xml = render(format, &issues, "https://x", "https://x/feed/f", true);
            assert!(xml.contains("A &lt;title&gt; &amp; more"), "{xml}");
            assert!(xml.contains("&lt;p&gt;a &amp; b&lt;/p&gt;"), "{xml}");
            assert!(!xml.contains("<title>A <title>"));
        }
        let json: serde_json::Value = serde_json::from_str(&render(
            FeedFormat::Json,
            &issues,
            "https://x",
            "https://x/feed/feed.json",
            true,
        ))
        .unwrap();
        assert_eq!(json["version"], "https://jsonfeed.org/version/1.1");
        assert_eq!(json["items"][0]["content_html"], "<p>a & b</p>");
    }
}
