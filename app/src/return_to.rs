//! Where a reader goes back to: the page they were on when they set out to
//! sign in or to pay (an issue's paywall, the pricing page), carried through
//! the sign-in link, its confirm page and Stripe Checkout's success URL.
//!
//! The path comes back to us from a query string or a form, so anyone can
//! write one; redirecting to it unchecked would make the site an open
//! redirect (a sign-in link of ours that lands on someone else's site).
//! [`same_site_path`] is the one gate: only a path of this site survives it.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// The longest return path kept: an issue or the pricing page with a query
/// fits many times over.
const MAX_LEN: usize = 512;

/// `raw` if it is a path on this site that is worth returning to, else
/// `None` (the caller then uses its own default).
///
/// Accepted: a relative path starting with a single `/`, printable ASCII
/// only, at most 512 bytes, whose percent-decoded forms (decoded until they
/// stop changing, so double encoding does not hide anything) still are such
/// a path. Refused: anything with a scheme or a host (`https:`, `//host`,
/// `/\host`, which browsers read as `//host`), a backslash anywhere, spaces
/// and control characters as sent (browsers drop tabs and newlines from
/// URLs, so `/<TAB>/host` is `//host` to them), encoded slashes,
/// backslashes or control characters that decode into any of those, and
/// malformed percent escapes. The sign-in
/// pages themselves are refused too: returning to them would go round in a
/// circle.
pub fn same_site_path(raw: &str) -> Option<String> {
    if raw.len() > MAX_LEN || !is_plain_path(raw.as_bytes(), false) {
        return None;
    }
    // Each round peels one layer of encoding, and each layer must still be
    // a plain path; more layers than a page of ours ever writes are refused.
    let mut layer = raw.as_bytes().to_vec();
    let mut rounds = 0;
    loop {
        let next = percent_decode(&layer)?;
        if next == layer {
            break;
        }
        rounds += 1;
        if rounds > 4 || !is_plain_path(&next, true) {
            return None;
        }
        layer = next;
    }
    let path_only = raw.split(['?', '#']).next().unwrap_or_default();
    let circular = ["/signin", "/signout"]
        .iter()
        .any(|page| path_only == *page || path_only.starts_with(&format!("{page}/")));
    (!circular).then(|| raw.to_string())
}

/// A path of this site: one leading `/` not followed by another slash or a
/// backslash, with no backslash, control character or space. As sent it is
/// printable ASCII only; a `decoded` layer may also hold the bytes of
/// percent-encoded UTF-8 (and spaces), which no browser reads as a slash.
fn is_plain_path(bytes: &[u8], decoded: bool) -> bool {
    let allowed = |b: u8| b.is_ascii_graphic() && b != b'\\' || decoded && (b == b' ' || b >= 0x80);
    bytes.first() == Some(&b'/')
        && !matches!(bytes.get(1), Some(b'/' | b'\\'))
        && bytes.iter().all(|&b| allowed(b))
}

/// One round of percent-decoding; `None` for a malformed escape.
fn percent_decode(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = bytes.get(at + 1..at + 3)?;
            let high = (hex[0] as char).to_digit(16)?;
            let low = (hex[1] as char).to_digit(16)?;
            out.push((high * 16 + low) as u8);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    Some(out)
}

/// `value` percent-encoded for a query string: everything but the
/// unreserved characters and `/`, so a path reads back whole from
/// `?next=...` whatever its own query holds.
pub fn query_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 8);
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `page` with `?next=<path>` (or `&next=`) appended when there is a path
/// to return to.
pub fn with_next(page: &str, next: Option<&str>) -> String {
    match next {
        Some(next) => {
            let joiner = if page.contains('?') { '&' } else { '?' };
            format!("{page}{joiner}next={}", query_encode(next))
        }
        None => page.to_string(),
    }
}

/// The page's `?next=`, if it is a path of this site.
pub fn use_next() -> Option<String> {
    let query = use_query_map();
    query.with_untracked(|q| q.get("next")).and_then(|next| same_site_path(&next))
}

/// The hidden field that carries a return path through a form.
pub fn next_field(next: Option<String>) -> impl IntoView {
    next.map(|next| view! { <input type="hidden" name="next" value=next/> })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_this_site_come_back_whole() {
        for path in [
            "/issues/fixed-points-and-cycles",
            "/pricing",
            "/pricing?from=%2Fissues%2Fx",
            "/pricing?from=/issues/x",
            "/issues/x#paywall",
            "/loops/a.b",
            "/audit?x=1&y=2",
            "/issues/caf%C3%A9",
        ] {
            assert_eq!(same_site_path(path).as_deref(), Some(path), "{path}");
        }
    }

    #[test]
    fn anything_that_leaves_the_site_is_refused() {
        for hostile in [
            "",
            "issues/x",
            "//evil.example",
            "//evil.example/issues/x",
            "/\\evil.example",
            "\\\\evil.example",
            "\\/evil.example",
            "/issues\\..\\..\\evil",
            "https://evil.example",
            "https:evil.example",
            "http:/evil.example",
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            " /issues/x",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\r\n/evil.example",
            "/%09/evil.example",
            "/%0a/evil.example",
            "/%2F/evil.example",
            "/%2f%2fevil.example",
            "/%5Cevil.example",
            "/%5cevil.example",
            "/%252F%252Fevil.example",
            "/%25252F/evil.example",
            "/%2525252F/evil.example",
            "/%zz",
            "/%2",
            "/issues/x%00",
            "/\u{ff0f}\u{ff0f}evil.example",
            "/\u{2215}evil.example",
            "/issues/caf\u{e9}",
        ] {
            assert_eq!(same_site_path(hostile), None, "{hostile:?}");
        }
        assert_eq!(same_site_path(&format!("/{}", "a".repeat(MAX_LEN))), None, "too long");
    }

    #[test]
    fn the_sign_in_pages_are_not_returned_to() {
        for circular in ["/signin", "/signin?next=/issues/x", "/signin/verify?token=x", "/signout"] {
            assert_eq!(same_site_path(circular), None, "{circular}");
        }
        assert_eq!(same_site_path("/signing-off").as_deref(), Some("/signing-off"));
    }

    #[test]
    fn a_return_path_survives_a_query_string() {
        let next = "/pricing?from=/issues/x&plan=pro #1";
        let link = with_next("/signin", Some(next));
        assert_eq!(link, "/signin?next=/pricing%3Ffrom%3D/issues/x%26plan%3Dpro%20%231");
        assert_eq!(with_next("/signin?sent=1", Some("/a")), "/signin?sent=1&next=/a");
        assert_eq!(with_next("/signin", None), "/signin");
    }
}
