//! The Loop Exit Auditor's two server-side faces: `fixedpoint audit` on the
//! command line and `POST /api/v1/audit` over HTTP. Both call the `auditor`
//! crate, exactly as the browser does; this module only reads input, maps
//! errors and writes output.

mod api;
mod command;
mod page;

pub use api::AUDIT_MAX_BYTES;

use axum::routing::post;
use axum::Router;

use crate::web::AppState;

/// `POST /api/v1/audit` and the audit page's form (`POST /audit`).
pub fn router() -> Router<AppState> {
    api::router().route("/audit", post(page::audit_form))
}
pub use command::{run_audit_command, AuditArgs, OutputFormat};
