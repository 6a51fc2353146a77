//! The HTTP client for real API servers: list, get, watch and writes over reqwest and rustls.

mod auth;
mod config;

pub use config::{Auth, Config, ExecConfig, Identity};
