//! Trying access policy before it bites: recorded calls decided again under a candidate
//! access file ([`replay::simulate`], `interlock policy simulate`), and one call explained
//! rule by rule ([`explain::explain`], `interlock policy explain`). Both decide with the
//! gateway's own steps ([`judge`]) over an access state read from the control database and
//! never write it.

pub mod explain;
pub mod judge;
pub mod replay;
pub mod report;
