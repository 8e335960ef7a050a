//! `POST /v1/traces`: OTLP/HTTP as the OpenTelemetry specification has it.
//! A body is a protobuf or JSON `ExportTraceServiceRequest`, gzip or not;
//! the answer is an `ExportTraceServiceResponse` in the same encoding, and
//! an error is a `google.rpc.Status` in it.

use std::io::Read as _;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message as _;

use super::mapping::map_export;
use crate::config::Config;
use crate::live::LiveEvents;
use crate::loops::LoopsError;
use crate::store::{now_millis, Store};
use crate::web::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/traces", post(post_traces))
}

/// The two encodings of OTLP/HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }

    /// The encoding a `Content-Type` names, parameters aside.
    fn of(headers: &HeaderMap) -> Option<Encoding> {
        let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
        let media = value.split(';').next().unwrap_or_default().trim();
        if media.eq_ignore_ascii_case("application/x-protobuf")
            || media.eq_ignore_ascii_case("application/protobuf")
        {
            Some(Encoding::Protobuf)
        } else if media.eq_ignore_ascii_case("application/json") {
            Some(Encoding::Json)
        } else {
            None
        }
    }
}

/// A refused export, as OTLP/HTTP says to answer one.
#[derive(Debug)]
pub struct TracesError {
    status: StatusCode,
    message: String,
    encoding: Encoding,
}

impl TracesError {
    fn new(status: StatusCode, encoding: Encoding, message: impl Into<String>) -> TracesError {
        TracesError { status, message: message.into(), encoding }
    }
}

/// `google.rpc.Status`, the body OTLP/HTTP gives an error. The
/// OpenTelemetry crates do not carry it; `details` is left out (an empty
/// repeated field is not written anyway).
#[derive(Clone, PartialEq, prost::Message, serde::Serialize)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

impl IntoResponse for TracesError {
    fn into_response(self) -> Response {
        // The gRPC code that goes with each HTTP status.
        let code = match self.status {
            StatusCode::BAD_REQUEST | StatusCode::UNSUPPORTED_MEDIA_TYPE => 3,
            StatusCode::UNAUTHORIZED => 16,
            StatusCode::PAYLOAD_TOO_LARGE => 8,
            _ => 14,
        };
        let status = RpcStatus { code, message: self.message };
        let body = match self.encoding {
            Encoding::Protobuf => status.encode_to_vec(),
            Encoding::Json => serde_json::to_vec(&status).unwrap_or_default(),
        };
        let mut response =
            (self.status, [(header::CONTENT_TYPE, self.encoding.content_type())], body).into_response();
        match self.status {
            StatusCode::UNAUTHORIZED => {
                response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            // An exporter retries a 503 after this many seconds.
            StatusCode::SERVICE_UNAVAILABLE => {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            _ => {}
        }
        response
    }
}

async fn post_traces(
    State(store): State<Store>,
    State(config): State<Arc<Config>>,
    State(live): State<LiveEvents>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, TracesError> {
    // Errors before the encoding is known are answered in JSON.
    let Some(encoding) = Encoding::of(&headers) else {
        let given = headers.get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("none");
        return Err(TracesError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Encoding::Json,
            format!("Content-Type {given:?} is not application/x-protobuf or application/json"),
        ));
    };
    let refuse = |status: StatusCode, message: String| TracesError::new(status, encoding, message);
    let unauthorized = || refuse(StatusCode::UNAUTHORIZED, LoopsError::Unauthorized.to_string());
    let token = crate::loops::bearer_token(&headers).map_err(|_| unauthorized())?;
    let identity = match store.authenticate_loop_token(token).await {
        Ok(Some(identity)) => identity,
        Ok(None) => return Err(unauthorized()),
        Err(error) => {
            tracing::error!(%error, "traces: the token could not be checked");
            return Err(refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "the store is unavailable; retry".to_string(),
            ));
        }
    };
    let limit = config.traces_max_bytes;
    let bytes = crate::loops::read_body(&headers, body, limit).await.map_err(|_| {
        refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("the body exceeds the limit of {limit} bytes"))
    })?;
    let bytes = decompress(&headers, bytes, limit).map_err(|(status, message)| refuse(status, message))?;
    let request = decode(encoding, &bytes).map_err(|message| refuse(StatusCode::BAD_REQUEST, message))?;

    let mapped = map_export(&request);
    let rejected = mapped.rejected;
    let problems = mapped.problems.clone();
    let stored = if mapped.spans.is_empty() {
        Default::default()
    } else {
        store
            .ingest_spans(identity.team_id, mapped.spans, now_millis(), config.traces_settle_ms)
            .await
            .map_err(|error| {
                tracing::error!(%error, "traces: an export was not stored");
                refuse(StatusCode::SERVICE_UNAVAILABLE, "the export was not stored; retry".to_string())
            })?
    };
    for event in stored.events {
        live.publish(event);
    }
    let export = super::mapping::MappedExport { spans: Vec::new(), rejected, problems };
    let message = export.error_message(stored.late, &stored.late_problems);
    let response = ExportTraceServiceResponse {
        partial_success: (rejected + stored.late > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(rejected + stored.late).unwrap_or(i64::MAX),
            error_message: message,
        }),
    };
    let body = match encoding {
        Encoding::Protobuf => response.encode_to_vec(),
        // A field left out, as OTLP/JSON writes an unset message.
        Encoding::Json if response.partial_success.is_none() => b"{}".to_vec(),
        Encoding::Json => serde_json::to_vec(&response).unwrap_or_default(),
    };
    Ok((StatusCode::OK, [(header::CONTENT_TYPE, encoding.content_type())], body).into_response())
}

/// The body without its `Content-Encoding`: gzip is read up to `limit`
/// bytes (a small body that inflates past it is refused with 413, not read
/// to the end), identity is as it is, anything else is 415.
fn decompress(headers: &HeaderMap, bytes: Bytes, limit: usize) -> Result<Bytes, (StatusCode, String)> {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    match encoding.as_str() {
        "" | "identity" => Ok(bytes),
        "gzip" => {
            let mut inflated = Vec::with_capacity(bytes.len().saturating_mul(4).min(limit));
            let mut reader = flate2::read::MultiGzDecoder::new(bytes.as_ref()).take(limit as u64 + 1);
            reader
                .read_to_end(&mut inflated)
                .map_err(|error| (StatusCode::BAD_REQUEST, format!("the body is not valid gzip: {error}")))?;
            if inflated.len() > limit {
                return Err((
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the body inflates past the limit of {limit} bytes"),
                ));
            }
            Ok(Bytes::from(inflated))
        }
        other => Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Content-Encoding {other:?} is not supported: send gzip or none"),
        )),
    }
}

/// The export, decoded with the OpenTelemetry project's own message types.
pub fn decode(encoding: Encoding, bytes: &[u8]) -> Result<ExportTraceServiceRequest, String> {
    match encoding {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(bytes)
            .map_err(|error| format!("the body is not a protobuf ExportTraceServiceRequest: {error}")),
        // The OTLP types keep the last of two keys and ignore unknown ones
        // however often they come: a key given twice is refused first.
        Encoding::Json => crate::web::json::refuse_keys_twice(bytes)
            .and_then(|()| serde_json::from_slice(bytes))
            .map_err(|error| format!("the body is not an OTLP/JSON ExportTraceServiceRequest: {error}")),
    }
}
