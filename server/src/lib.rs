//! The server side of Fixed Point: configuration, the store over SQLite and
//! PostgreSQL, the axum router around the Leptos application, and the
//! operator's command line. `main.rs` is a thin shell over [`cli::run`].

pub mod account_page;
pub mod accounts;
pub mod admin;
pub mod alerts;
pub mod audit;
pub mod billing;
pub mod cli;
pub mod config;
pub mod connector;
pub mod convergence;
pub mod dashboard;
pub mod live;
pub mod loops;
pub mod mail;
pub mod mcp;
pub mod newsletter;
pub mod signature;
pub mod site;
pub mod store;
pub mod stored_text;
pub mod stripe_api;
pub mod telemetry;
pub mod traces;
pub mod web;
