//! Components shared by several pages.

pub mod site_header;
