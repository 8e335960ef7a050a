//! Components shared by several pages.

pub mod email_field;
pub mod site_header;
pub mod stale_build;
