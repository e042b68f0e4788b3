//! Connectors to registered sources.

pub mod catalog;
pub mod postgres;
pub mod registry;
pub mod stats;
