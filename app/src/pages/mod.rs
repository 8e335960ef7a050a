//! One module per page.

pub mod account;
pub mod audit;
pub mod home;
pub mod not_found;
pub mod signin;
