//! Stripe's webhook signature scheme: the `Stripe-Signature` header holds
//! `t=<unix seconds>` and one or more `v1=<hex>` where each `v1` is
//! HMAC-SHA256 keyed with the endpoint's signing secret over
//! `"<t>.<raw body>"`. A signature is accepted when one `v1` matches
//! (compared in constant time) and `t` is within the tolerance of now.
//!
//! Billing checks Stripe's webhooks with it, and the alerts' webhooks are
//! signed with it (a receiver checks them as it would Stripe's), so it sits
//! below both.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use thiserror::Error;

/// Stripe's default tolerance: five minutes either way.
pub const TOLERANCE_SECONDS: i64 = 300;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("the Stripe-Signature header is missing")]
    Missing,
    #[error("the Stripe-Signature header is malformed: {0}")]
    Malformed(&'static str),
    #[error("no v1 signature matches the body")]
    Mismatch,
    #[error("the signature's timestamp is {0} seconds away from now (more than the tolerance)")]
    Stale(i64),
}

fn mac(secret: &str, timestamp: i64, payload: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap_or_else(|_| unreachable!());
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac
}

/// Checks `header` against `payload`; answers the signed timestamp.
pub fn verify(header: Option<&str>, payload: &[u8], secret: &str, now: i64) -> Result<i64, SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let Some((key, value)) = part.trim().split_once('=') else {
            return Err(SignatureError::Malformed("expected key=value pairs"));
        };
        match key {
            "t" => {
                timestamp =
                    Some(value.parse::<i64>().map_err(|_| SignatureError::Malformed("t is not a number"))?)
            }
            "v1" => signatures.push(value),
            // v0 (test-mode legacy) and future schemes are ignored.
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed("no t= timestamp"))?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed("no v1= signature"));
    }
    let expected = mac(secret, timestamp, payload).finalize().into_bytes();
    let mut matched = subtle::Choice::from(0u8);
    for signature in signatures {
        if let Ok(bytes) = hex::decode(signature) {
            if bytes.len() == expected.len() {
                matched |= bytes.as_slice().ct_eq(expected.as_slice());
            }
        }
    }
    if !bool::from(matched) {
        return Err(SignatureError::Mismatch);
    }
    let skew = (now - timestamp).abs();
    if skew > TOLERANCE_SECONDS {
        return Err(SignatureError::Stale(skew));
    }
    Ok(timestamp)
}

/// The header Stripe would send for `payload` at `timestamp` (for tools and
/// tests that play Stripe).
pub fn sign(payload: &[u8], secret: &str, timestamp: i64) -> String {
    let signature = hex::encode(mac(secret, timestamp, payload).finalize().into_bytes());
    format!("t={timestamp},v1={signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test";

    #[test]
    fn a_signature_made_with_the_secret_verifies() {
        let header = sign(b"{\"id\":1}", SECRET, 1_000);
        assert_eq!(verify(Some(&header), b"{\"id\":1}", SECRET, 1_100), Ok(1_000));
    }

    #[test]
    fn a_known_vector_matches_stripes_scheme() {
        // HMAC-SHA256("whsec_test", "1000.{}") computed independently
        // (Python: hmac.new(b"whsec_test", b"1000.{}", "sha256").hexdigest()).
        assert_eq!(
            sign(b"{}", SECRET, 1_000),
            "t=1000,v1=291d03e2e8ca99ce6b2dd4a86974b888822bbc53e44c7c5718da223c4c86d444"
        );
    }

    #[test]
    fn tampering_wrong_secrets_and_stale_times_are_refused() {
        let header = sign(b"body", SECRET, 1_000);
        assert_eq!(verify(Some(&header), b"bodx", SECRET, 1_000), Err(SignatureError::Mismatch));
        assert_eq!(verify(Some(&header), b"body", "whsec_other", 1_000), Err(SignatureError::Mismatch));
        assert_eq!(verify(Some(&header), b"body", SECRET, 1_301), Err(SignatureError::Stale(301)));
        assert_eq!(verify(Some(&header), b"body", SECRET, 699), Err(SignatureError::Stale(301)));
        assert_eq!(verify(None, b"body", SECRET, 1_000), Err(SignatureError::Missing));
        assert!(matches!(verify(Some("garbage"), b"body", SECRET, 1_000), Err(SignatureError::Malformed(_))));
        assert!(matches!(verify(Some("t=1000"), b"body", SECRET, 1_000), Err(SignatureError::Malformed(_))));
        assert!(matches!(
            verify(Some("t=x,v1=00"), b"body", SECRET, 1_000),
            Err(SignatureError::Malformed(_))
        ));
    }

    #[test]
    fn any_matching_v1_among_several_is_enough() {
        let good = sign(b"body", SECRET, 1_000);
        let v1 = good.split(",v1=").nth(1).unwrap();
        let header = format!("t=1000,v1={},v1={v1},v0=abc", "0".repeat(64));
        assert_eq!(verify(Some(&header), b"body", SECRET, 1_000), Ok(1_000));
    }
}
