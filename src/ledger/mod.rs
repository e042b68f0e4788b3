//! The audit log as a transparency log: a Merkle tree over the chain's records, signed
//! checkpoints, and the proofs an outsider checks with the public key alone. Pure code:
//! no I/O (the control database's repository of stored hashes and checkpoints builds on it).
//!
//! - Leaf `n` of the tree is the record with `seq = n + 1`; its leaf data is that record's
//!   chain hash (which commits to the record and to every record before it in its chain;
//!   the tree orders the chains' records among each other, see [`place`]). Hashing is
//!   RFC 6962's, as c2sp.org/tlog-checkpoint logs use it, and the tree's stored hashes
//!   follow the layout of Go's `sumdb/tlog` (`tlog_tiles`).
//! - A checkpoint is a c2sp.org/tlog-checkpoint body (origin, tree size, root hash) in a
//!   c2sp.org/signed-note signed with the gateway's Ed25519 key (`signed_note`).
//! - [`proof`] is the self-contained bundle `interlock audit prove` prints and
//!   `interlock audit verify-proof` checks offline (format in docs/audit-proofs.md).

pub mod note;
pub mod offline;
pub mod place;
pub mod proof;
pub mod segment;
pub mod timestamp;
pub mod tree;

pub use note::{CheckpointError, CheckpointKey, KeyError, SignedCheckpoint};
pub use tree::Hash;
