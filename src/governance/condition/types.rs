//! The static types the condition checker ([`super::check`]) gives expressions. Lists and
//! maps carry the most entries they can hold, which bounds the cost of iterating them.

use std::fmt;

use super::schema::{FactType, Object, MAX_CLAIM_LIST};

#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Timestamp,
    Duration,
    /// Element type and most entries.
    List(Box<Ty>, usize),
    /// Key type, value type and most entries.
    Map(Box<Ty>, Box<Ty>, usize),
    Object(&'static Object),
    /// Known only when the call is evaluated (a claim's value).
    Dyn,
}

impl Ty {
    pub fn of_fact(ty: FactType) -> Ty {
        match ty {
            FactType::Bool => Ty::Bool,
            FactType::Int => Ty::Int,
            FactType::String => Ty::String,
            FactType::Timestamp => Ty::Timestamp,
            FactType::Strings(n) => Ty::List(Box::new(Ty::String), n),
            FactType::Claims => Ty::Map(Box::new(Ty::String), Box::new(Ty::Dyn), MAX_CLAIM_LIST),
            FactType::Object(o) => Ty::Object(o),
        }
    }

    /// The most entries a value of this type iterates over.
    pub fn bound(&self) -> usize {
        match self {
            Ty::List(_, n) | Ty::Map(_, _, n) => *n,
            _ => MAX_CLAIM_LIST,
        }
    }

    pub fn is_dyn(&self) -> bool {
        *self == Ty::Dyn
    }

    /// Whether a value of `self` may be compared with one of `other` (bounds aside).
    pub fn compatible(&self, other: &Ty) -> bool {
        match (self, other) {
            (Ty::Dyn | Ty::Null, _) | (_, Ty::Dyn | Ty::Null) => true,
            (Ty::List(a, _), Ty::List(b, _)) => a.compatible(b),
            (Ty::Map(ka, va, _), Ty::Map(kb, vb, _)) => ka.compatible(kb) && va.compatible(vb),
            (a, b) => a == b,
        }
    }

    /// The type both `self` and `other` are, the larger bound kept; `None` when they differ.
    pub fn unify(&self, other: &Ty) -> Option<Ty> {
        Some(match (self, other) {
            (Ty::Dyn, t) | (t, Ty::Dyn) => t.clone(),
            (Ty::List(a, n), Ty::List(b, m)) => Ty::List(Box::new(a.unify(b)?), (*n).max(*m)),
            (Ty::Map(ka, va, n), Ty::Map(kb, vb, m)) => Ty::Map(
                Box::new(ka.unify(kb)?),
                Box::new(va.unify(vb)?),
                (*n).max(*m),
            ),
            (a, b) if a.compatible(b) && !matches!(a, Ty::Null) => a.clone(),
            (Ty::Null, b) => b.clone(),
            _ => return None,
        })
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Null => f.write_str("null"),
            Ty::Timestamp => f.write_str("timestamp"),
            Ty::Duration => f.write_str("duration"),
            Ty::List(t, _) => write!(f, "list({t})"),
            Ty::Map(k, v, _) => write!(f, "map({k}, {v})"),
            Ty::Object(o) => write!(f, "{}", o.name),
            Ty::Dyn => f.write_str("dyn"),
        }
    }
}
