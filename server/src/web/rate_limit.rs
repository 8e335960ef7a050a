//! A per-client token bucket for endpoints that anyone can call (the audit
//! API now, sign-in requests later). In memory and per instance: a limit
//! protects this process's CPU, which is what the buckets measure.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::Extensions;

/// Buckets kept before idle ones are forgotten, so a flood of addresses
/// cannot grow the map without bound.
const MAX_TRACKED: usize = 50_000;

/// Buckets per key: a client address by default, or anything else a limit
/// is counted by (the email address a sign-in link is requested for).
#[derive(Debug)]
pub struct RateLimiter<K = IpAddr> {
    capacity: f64,
    per_second: f64,
    buckets: Mutex<HashMap<K, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl<K: Hash + Eq> RateLimiter<K> {
    /// Allows `per_minute` requests a minute per key, in bursts of up to
    /// `per_minute` (a full bucket).
    pub fn per_minute(per_minute: u32) -> RateLimiter<K> {
        RateLimiter::new(per_minute, Duration::from_secs(60))
    }

    /// Allows `count` requests per `period` per key, in bursts of up to
    /// `count`.
    pub fn new(count: u32, period: Duration) -> RateLimiter<K> {
        let count = f64::from(count.max(1));
        RateLimiter {
            capacity: count,
            per_second: count / period.as_secs_f64().max(0.001),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token for `client`, or says how long until one is free.
    pub fn check(&self, client: K, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if buckets.len() >= MAX_TRACKED && !buckets.contains_key(&client) {
            let capacity = self.capacity;
            let per_second = self.per_second;
            buckets.retain(|_, bucket| refilled(*bucket, now, capacity, per_second) < capacity);
            // When every tracked client is still mid-bucket (a flood from many
            // addresses), start over rather than scan the whole map again on
            // each new address: forgetting loosens the limit for a moment,
            // while scanning would make every request O(clients).
            if buckets.len() >= MAX_TRACKED {
                buckets.clear();
            }
        }
        let bucket = buckets.entry(client).or_insert(Bucket { tokens: self.capacity, at: now });
        let tokens = refilled(*bucket, now, self.capacity, self.per_second);
        if tokens >= 1.0 {
            *bucket = Bucket { tokens: tokens - 1.0, at: now };
            Ok(())
        } else {
            *bucket = Bucket { tokens, at: now };
            let wait = (1.0 - tokens) / self.per_second;
            Err(Duration::from_secs_f64(wait.max(0.001)))
        }
    }
}

fn refilled(bucket: Bucket, now: Instant, capacity: f64, per_second: f64) -> f64 {
    let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
    (bucket.tokens + elapsed * per_second).min(capacity)
}

/// The peer address of a request, as the listener saw it. Requests built in
/// tests without one count as a single unknown client.
pub fn client_ip(extensions: &Extensions) -> IpAddr {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

/// Whole seconds for a `Retry-After` header, never zero.
pub fn retry_after_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_allows_a_burst_then_refuses_with_the_wait() {
        let limiter: RateLimiter = RateLimiter::per_minute(3);
        let client: IpAddr = "10.1.2.3".parse().unwrap();
        let start = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check(client, start).is_ok());
        }
        let wait = limiter.check(client, start).unwrap_err();
        assert_eq!(retry_after_seconds(wait), 20, "one token every 20 s at 3 a minute");
        // Another client has its own bucket.
        assert!(limiter.check("10.9.9.9".parse().unwrap(), start).is_ok());
        // After the wait one more request goes through, and only one.
        let later = start + Duration::from_secs(20);
        assert!(limiter.check(client, later).is_ok());
        assert!(limiter.check(client, later).is_err());
    }

    #[test]
    fn a_flood_of_addresses_never_grows_the_map_past_its_bound() {
        let limiter: RateLimiter = RateLimiter::per_minute(10);
        let now = Instant::now();
        for index in 0..(MAX_TRACKED as u32 + 10) {
            let client = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + index));
            assert!(limiter.check(client, now).is_ok());
        }
        let tracked = limiter.buckets.lock().unwrap().len();
        assert!(tracked <= MAX_TRACKED, "{tracked} buckets");
    }
}
