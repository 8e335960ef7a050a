//! The Loop Exit Auditor's two server-side faces: `fixedpoint audit` on the
//! command line and `POST /api/v1/audit` over HTTP. Both call the `auditor`
//! crate, exactly as the browser does; this module only reads input, maps
//! errors and writes output.

mod api;
mod command;

pub use api::{router, AUDIT_MAX_BYTES};
pub use command::{run_audit_command, AuditArgs, OutputFormat};
