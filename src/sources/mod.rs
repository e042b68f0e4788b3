//! Connectors to registered sources.

pub mod postgres;
pub mod registry;
pub mod stats;
