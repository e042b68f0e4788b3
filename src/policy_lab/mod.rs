//! Trying access policy before it bites: recorded calls decided again under a candidate
//! access file ([`replay::simulate`], `interlock policy simulate`), and one call explained
//! rule by rule ([`explain::explain`], `interlock policy explain`). Both decide with the
//! gateway's own steps ([`judge`], with the cost step from a read's recorded estimate:
//! [`cost`]) over an access state read from the control database and never write it.

pub mod cost;
pub mod explain;
pub mod judge;
pub mod replay;
pub mod report;
