//! One module per page.

pub mod audit;
pub mod home;
pub mod not_found;
