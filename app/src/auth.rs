//! Who is looking: the wire type the server resolves from the session cookie
//! (its middleware puts a [`Viewer`] in the request's extensions) and the
//! application reads once per page, shared with the browser so both render
//! the same header.

use leptos::prelude::*;
use leptos::server::SharedValue;
use serde::{Deserialize, Serialize};

/// The signed-in person, as the pages need them. Never carries a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Viewer {
    pub email: String,
    pub is_operator: bool,
    pub teams: Vec<ViewerTeam>,
    /// What the viewer reads: `free`, `pro` or `founder`.
    pub tier: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewerTeam {
    pub slug: String,
    /// `admin` or `member`.
    pub role: String,
}

/// What a sign-in form post left to show: the error that names the field,
/// and the address typed, so nothing has to be typed again.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SigninNotice {
    pub email: String,
    pub error: Option<String>,
    /// Where the reader returns once signed in (checked by
    /// [`crate::return_to::same_site_path`]), kept across a refused post.
    #[serde(default)]
    pub next: Option<String>,
}

/// The notice a form post left for this page (empty on a plain GET), shared
/// with the browser so that hydration finds the same page.
pub fn use_signin_notice() -> SigninNotice {
    SharedValue::new(|| use_context::<SigninNotice>().unwrap_or_default()).into_inner()
}

/// The viewer of this page (`None` when signed out), provided by [`App`]
/// as context.
///
/// [`App`]: crate::App
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentViewer(pub Option<Viewer>);

/// Reads the viewer once per page: from the request on the server, from the
/// HTML's shared data when the browser hydrates.
pub fn provide_viewer() {
    let viewer = SharedValue::new(viewer_on_server).into_inner();
    provide_context(CurrentViewer(viewer));
}

/// The page's viewer (signed out when no context was provided).
pub fn use_viewer() -> Option<Viewer> {
    use_context::<CurrentViewer>().and_then(|current| current.0)
}

#[cfg(feature = "ssr")]
fn viewer_on_server() -> Option<Viewer> {
    use_context::<http::request::Parts>().and_then(|parts| parts.extensions.get::<Viewer>().cloned())
}

#[cfg(not(feature = "ssr"))]
fn viewer_on_server() -> Option<Viewer> {
    None
}

/// Data the server loaded for this page before rendering it: from context
/// (a form post's answer) or from the request's extensions (a GET), shared
/// with the browser for hydration. `None` when the server had nothing to
/// give, which the pages read as "not yours to see".
pub fn use_page_data<T>() -> Option<T>
where
    T: Clone + Send + Sync + Serialize + for<'de> Deserialize<'de> + 'static,
{
    SharedValue::new(page_data_on_server::<T>).into_inner()
}

#[cfg(feature = "ssr")]
fn page_data_on_server<T: Clone + Send + Sync + 'static>() -> Option<T> {
    use_context::<T>().or_else(|| {
        use_context::<http::request::Parts>().and_then(|parts| parts.extensions.get::<T>().cloned())
    })
}

#[cfg(not(feature = "ssr"))]
fn page_data_on_server<T>() -> Option<T> {
    None
}

/// Sets the response status while rendering on the server (no-op in the
/// browser).
pub fn set_status(status: u16) {
    #[cfg(feature = "ssr")]
    if let (Some(response), Ok(code)) =
        (use_context::<leptos_axum::ResponseOptions>(), http::StatusCode::from_u16(status))
    {
        response.set_status(code);
    }
    #[cfg(not(feature = "ssr"))]
    let _ = status;
}

/// A Unix-millisecond time as `2026-11-30 14:05 UTC`.
pub fn format_time(millis: i64) -> String {
    let seconds = millis.div_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", of_day / 3600, of_day % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::format_time;

    #[test]
    fn times_read_as_utc_dates() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time(1_796_000_000_000), "2026-11-30 00:53 UTC");
        assert_eq!(format_time(951_782_400_000), "2000-02-29 00:00 UTC");
    }
}
