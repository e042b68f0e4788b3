//! Connectors to registered sources.

pub mod postgres;
