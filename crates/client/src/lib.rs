//! A client for the daemon (placeholder).
#![forbid(unsafe_code)]
