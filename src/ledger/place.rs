//! A record's place in the log's chains, as exports, archive segments and proof bundles
//! carry it beside its seq (docs/audit-proofs.md, "Chains"). A record of the founding
//! chain leaves all three out, so lines written before chains per writer read unchanged.

use interlock_actors::audit::record::FOUNDING_CHAIN;
use interlock_actors::audit::ChainedRecord;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// The record's chain; absent: the founding chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Uuid>,
    /// Its place in the chain; absent: its seq (the founding chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_seq: Option<i64>,
    /// A void fills a seq no writer used; it belongs to no chain.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub void: bool,
}

impl Place {
    pub fn of(r: &ChainedRecord) -> Self {
        let founding = r.void || r.chain == FOUNDING_CHAIN;
        Place {
            chain: (!founding).then_some(r.chain),
            chain_seq: (!founding).then_some(r.chain_seq),
            void: r.void,
        }
    }

    /// The chain and the place in it of the record at `seq`.
    pub fn resolve(&self, seq: i64) -> (Uuid, i64) {
        (
            self.chain.unwrap_or(FOUNDING_CHAIN),
            self.chain_seq.unwrap_or(seq),
        )
    }
}
