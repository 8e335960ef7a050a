//! One module per page.

pub mod account;
pub mod admin;
pub mod audit;
pub mod home;
pub mod loops;
pub mod not_found;
pub mod signin;
pub mod team;
