//! The founders' MCP server (PRODUCT.md section 3): `/mcp`, the official
//! Rust SDK's streamable HTTP service mounted in the site's router.
//!
//! Every request passes [`authorize`] before rmcp sees it: a personal MCP
//! token (401 with `WWW-Authenticate: Bearer` when missing or unknown), the
//! token's rate, a founder's subscription read at that moment (a founder
//! whose subscription ends is refused on the next request), and the switch
//! (403 with a message otherwise). The caller then rides in the request's
//! extensions, where each tool reads it.
//!
//! The service is stateless: each POST is answered on its own (JSON, not an
//! event stream), so no session lives in one instance's memory and several
//! instances behind one database serve the same clients. It speaks every
//! protocol revision rmcp knows: the initialize handshake of 2024-11-05 to
//! 2025-11-25 and the session-less 2026-07-28.

mod search;
mod tokens;
mod tools;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

pub use tokens::{McpCaller, McpToken, McpTokenError, NewMcpToken, MAX_LIVE_TOKENS, MCP_TOKEN_PREFIX};
pub use tools::FounderTools;

use crate::config::McpSwitch;
use crate::newsletter::Tier;
use crate::web::rate_limit::retry_after_seconds;
use crate::web::AppState;

/// The largest request body `/mcp` reads: an audit's 1 MiB source, JSON
/// escaped, with room for the envelope.
pub const MCP_MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Whether the server is open, and if not, what the pages say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpAvailability {
    Open,
    /// Waiting for the founder seats: this many are left.
    SeatsLeft(i64),
    /// Switched off by the operator.
    Off,
}

/// Reads the switch: the configuration, then (on `auto`) the seat count.
pub async fn availability(state: &AppState) -> Result<McpAvailability, crate::billing::BillingError> {
    Ok(match state.config.mcp {
        McpSwitch::On => McpAvailability::Open,
        McpSwitch::Off => McpAvailability::Off,
        McpSwitch::Auto => {
            availability_of(McpSwitch::Auto, &state.store.founder_count(state.config.founder_seats).await?)
        }
    })
}

/// The switch's answer for a seat count already read.
pub fn availability_of(switch: McpSwitch, count: &crate::billing::FounderCount) -> McpAvailability {
    match switch {
        McpSwitch::On => McpAvailability::Open,
        McpSwitch::Off => McpAvailability::Off,
        McpSwitch::Auto if count.taken >= count.total => McpAvailability::Open,
        McpSwitch::Auto => McpAvailability::SeatsLeft(count.total - count.taken),
    }
}

/// `/mcp`, behind its gate.
pub fn router(state: &AppState) -> Router<AppState> {
    let tools_state = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(FounderTools::new(tools_state.clone())),
        Arc::new(NeverSessionManager::default()),
        service_config(&state.config.public_url),
    );
    Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(state.clone(), authorize))
}

/// Stateless JSON answers; the Host and Origin checks (DNS rebinding) allow
/// the site's public address as well as loopback, so they hold behind a
/// proxy that keeps the Host header.
fn service_config(public_url: &str) -> StreamableHttpServerConfig {
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    let mut origins = Vec::new();
    if let Ok(url) = url::Url::parse(public_url) {
        if let Some(host) = url.host_str() {
            hosts.push(host.trim_start_matches('[').trim_end_matches(']').to_string());
            let port = url.port_or_known_default();
            origins.push(match port {
                Some(port) => format!("{}://{}:{port}", url.scheme(), host),
                None => format!("{}://{}", url.scheme(), host),
            });
        }
    }
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .with_sse_keep_alive(None);
    config.legacy_session_mode = false;
    config.json_response = true;
    config.max_request_body_bytes = MCP_MAX_BODY_BYTES;
    config
}

/// A refusal of the gate: the HTTP status, and a JSON-RPC error as the body,
/// which MCP clients show as they are (the Python SDK, for one, reads a
/// JSON-RPC error at any status and drops other bodies).
fn refuse(status: StatusCode, message: &str, challenge: Option<&'static str>) -> Response {
    let code = match status {
        StatusCode::UNAUTHORIZED => -32001,
        StatusCode::FORBIDDEN => -32003,
        StatusCode::TOO_MANY_REQUESTS => -32029,
        // JSON-RPC's parse error.
        StatusCode::BAD_REQUEST => -32700,
        _ => -32603,
    };
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } });
    let mut response = (status, Json(body)).into_response();
    if let Some(challenge) = challenge {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    }
    response
}

/// The gate in front of the MCP service; see the module's documentation.
pub async fn authorize(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|token| !token.is_empty())
        .map(str::to_string);
    let Some(secret) = bearer else {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "an MCP token is required: send Authorization: Bearer fpm_... (a founder makes one on /account)",
            Some("Bearer realm=\"fixedpoint-mcp\""),
        );
    };
    let caller = match state.store.authenticate_mcp_token(&secret).await {
        Ok(Some(caller)) => caller,
        Ok(None) => {
            return refuse(
                StatusCode::UNAUTHORIZED,
                "this MCP token is unknown or revoked: make a new one on /account",
                Some("Bearer realm=\"fixedpoint-mcp\", error=\"invalid_token\""),
            )
        }
        Err(error) => return unavailable(&error),
    };
    if let Err(wait) = state.mcp_limiter.check(caller.token_id, Instant::now()) {
        tracing::info!(token = caller.token_id, "mcp request over the token's rate");
        let mut response = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "this token made more than {} requests in a minute; retry later",
                state.config.mcp_rate_per_minute
            ),
            None,
        );
        if let Ok(value) = HeaderValue::from_str(&retry_after_seconds(wait).to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    // The subscription is read now, not when the token was made: a founder
    // whose subscription ended is refused from the next request on.
    let access = match state.store.reader_access(caller.account_id).await {
        Ok(access) => access,
        Err(error) => return unavailable(&error),
    };
    if access.tier != Tier::Founder {
        tracing::info!(
            token = caller.token_id,
            tier = access.tier.as_str(),
            "mcp request from a non-founder"
        );
        return refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "the MCP server is for founders; this token's account reads at the {} tier (see /pricing)",
                access.tier.as_str()
            ),
            None,
        );
    }
    match availability(&state).await {
        Ok(McpAvailability::Open) => {}
        Ok(McpAvailability::SeatsLeft(left)) => {
            return refuse(
                StatusCode::FORBIDDEN,
                &format!(
                    "the founders' MCP server opens when all {} founder seats are taken; {left} {} left",
                    state.config.founder_seats,
                    if left == 1 { "is" } else { "are" }
                ),
                None,
            )
        }
        Ok(McpAvailability::Off) => {
            return refuse(StatusCode::FORBIDDEN, "the founders' MCP server is switched off for now", None)
        }
        Err(error) => return unavailable(&error),
    }
    tracing::info!(token = caller.token_id, method = %request.method(), "mcp request");
    request.extensions_mut().insert(caller);
    // rmcp reads a JSON-RPC message with serde, which keeps the last of a
    // key given twice: such a message is refused here, naming the key.
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MCP_MAX_BODY_BYTES).await else {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("the request is larger than {MCP_MAX_BODY_BYTES} bytes"),
            None,
        );
    };
    match crate::web::json::refuse_keys_twice(&bytes) {
        Err(error) if error.is_data() => return refuse(StatusCode::BAD_REQUEST, &error.to_string(), None),
        _ => {}
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

fn unavailable(error: &dyn std::fmt::Display) -> Response {
    tracing::error!(%error, "the MCP gate could not read the store");
    refuse(StatusCode::SERVICE_UNAVAILABLE, "the server could not check this token; try again", None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_address_is_an_allowed_host_and_origin() {
        let config = service_config("https://fixedpoint.example");
        assert!(config.allowed_hosts.iter().any(|host| host == "fixedpoint.example"));
        assert!(config.allowed_hosts.iter().any(|host| host == "127.0.0.1"));
        assert_eq!(config.allowed_origins, ["https://fixedpoint.example:443"]);
        assert!(!config.legacy_session_mode);
        assert!(config.json_response);
    }
}
