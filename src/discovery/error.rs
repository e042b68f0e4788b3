//! Errors of discovery requests and index writes.
//!
//! Messages are safe to show to the calling agent: they never carry data from another source
//! or from an asset the caller may not see, and a hidden asset is reported exactly like a
//! missing one. Database failures keep the driver error as `source()` for logs but display
//! only a generic sentence, because a driver message can quote row values.

/// Why a discovery call or an index write failed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The request itself is malformed (bad filter, limit out of range, invalid asset).
    #[error("invalid discovery request: {0}")]
    Invalid(String),
    /// The caller holds no `discover` permission on the source.
    #[error("discover is not allowed on this source")]
    Forbidden,
    /// No source has this id.
    #[error("source not found")]
    SourceNotFound,
    /// The asset does not exist, or the caller may not see it: the two are indistinguishable.
    #[error("asset not found")]
    AssetNotFound,
    /// The asset id names a visible asset in more than one source the caller may discover.
    #[error(
        "asset id is ambiguous: it names assets in more than one source you may discover; \
         use interlock_discover with a source_id instead"
    )]
    Ambiguous,
    /// The control database failed.
    #[error("control database error")]
    Database(#[source] tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for DiscoveryError {
    fn from(e: tokio_postgres::Error) -> Self {
        DiscoveryError::Database(e)
    }
}
