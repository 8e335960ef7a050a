//! The server's integration tests, linked as one test binary: one link step
//! and one copy of the dependencies on disk instead of one per file.

#[macro_use]
mod support;

mod accounts;
mod addresses;
mod alerts;
mod audit_api;
mod audit_cli;
mod audit_page;
mod billing;
mod connector;
mod delivery;
mod error_bodies;
mod hostile_text;
mod http_shell;
mod import_graph;
mod ingest;
mod ingest_cli;
mod ingest_live;
mod loop_stream;
mod mcp;
mod near_repeats;
mod newsletter;
mod odd_names;
mod ratchet;
mod store_contract;
mod traces;
