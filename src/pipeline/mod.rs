//! The governed call: the one place where the order of governance steps lives, plus the
//! runtime pieces it needs (identity resolution, access profiles, catalogs, masking).
//!
//! The pure decision (`governance::decide`) says whether SQL may run; this module resolves
//! who is asking, loads what governs them, runs what is allowed through the actors and the
//! executor, masks the result and audits the call.

pub mod catalog;
pub mod mask;
