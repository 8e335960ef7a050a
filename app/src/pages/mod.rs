//! One module per page.

pub mod account;
pub mod admin;
pub mod audit;
pub mod diagnosis;
pub mod error_page;
pub mod home;
pub mod issues;
pub mod lazy;
pub mod loops;
pub mod not_found;
pub mod pricing;
pub mod signin;
pub mod subscribe;
pub mod team;
