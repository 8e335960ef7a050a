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
