//! What the pipeline understood of a statement, remembered by its
//! [`Shape`], so that the next statement of the same shape with new literals
//! is not parsed, classified and resolved again.
//!
//! # Why a remembered understanding is exactly as safe
//!
//! A literal is *free* when its value cannot change what the gateway decides:
//! it is a number, a plain `'...'` string or the text of a date, time,
//! timestamp or interval literal (`date '2024-01-01'`, `interval '7 days'`)
//! standing directly as an operand of a binary operator, a
//! `LIKE`/`ILIKE`/`SIMILAR TO` pattern, an `IN` list item, a `BETWEEN` bound or
//! an `IS [NOT] DISTINCT FROM` operand. Classification, resolution, lineage, the
//! row-cap form and authorization read the kind of such a literal (and a typed
//! literal's type, which its keyword fixes in the shape), never its value (the
//! values they do read — `ORDER BY 2`, `LIMIT 5`, `EXPLAIN (ANALYZE 0)`,
//! function arguments, casts, typed strings of other types — are never free).
//! Every literal that is not free is remembered with its value, and a statement
//! that differs there is decided afresh.
//!
//! What runs is still a text whose parse is proven: the re-serialized text of
//! the remembered tree (which was proven to parse back to that tree), with each
//! free literal's rendering replaced by the rendering of the new value. A free
//! literal is remembered only where the re-serialized text puts it between a
//! space, `(` or `,` and a space, `)`, `,` or the end, where no token can run
//! into or out of it and the tokenizer reads the neighbours the same whatever
//! stands between them; and a new rendering is used only if it reads back, on
//! its own, as exactly the caller's token. So the new text tokenizes as the
//! remembered one with the caller's literal tokens in place, and the parser,
//! which builds a literal's node from its token alone, makes of it the
//! remembered tree with the new values. Anything that does not line up (a
//! value that does not map to one token, a neighbour outside those sets, a
//! rendering that reads back differently) is not remembered or not reused: the
//! statement is decided in full, as without the memo. `tests/sql_memo.rs`
//! checks every statement of both corpora and generated literal variations of
//! them against the decision without the memo, whose text is proven by the
//! full round trip.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sqlparser::ast::{DataType, Expr, InTarget, Statement, Value, ValueWithSpan, Visit, Visitor};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

use crate::sql::cap::CapForm;
use crate::sql::classify::{ExplainMode, StatementClass};
use crate::sql::lineage::Analysis;
use crate::sql::offsets::Offsets;
use crate::sql::parse::Canonical;
use crate::sql::scan_mask::{named_items, NamedAt};
use crate::sql::shape::{value_of, Shape};

/// Default bound on what one source's memo holds, in bytes (estimated).
pub const DEFAULT_MEMO_BYTES: u64 = 4 * 1024 * 1024;

/// What the pipeline understood of a statement before any caller's grants
/// were looked at: the same for every caller of one catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Understood {
    /// `Read` or `Write`; a forbidden statement is refused, never remembered.
    pub class: StatementClass,
    pub explain: Option<ExplainMode>,
    pub analysis: Analysis,
    pub cap_form: CapForm,
}

/// A bounded memo of understood statements for one catalog; a new catalog
/// starts a new memo.
pub struct ShapeMemo {
    entries: moka::sync::Cache<String, Arc<Entry>>,
    enabled: bool,
    recalled: AtomicU64,
}

struct Entry {
    understood: Arc<Understood>,
    /// Literals that are not free, by their index among the shape's literals,
    /// with the token they must have.
    fixed: Vec<(usize, Token)>,
    /// The re-serialized text around the free literals: one more piece than slots.
    pieces: Vec<String>,
    /// The free literals in the order they appear in the re-serialized text,
    /// by their index among the shape's literals.
    slots: Vec<Slot>,
    /// The FROM items that name a relation, by the piece their name stands in (a name is
    /// never a free literal, so it never straddles one): where masks at the scan cut.
    named: Vec<(usize, NamedAt)>,
}

struct Slot {
    literal: usize,
}

impl ShapeMemo {
    /// A memo holding about `max_bytes` of entries; zero disables it.
    pub fn new(max_bytes: u64) -> Self {
        ShapeMemo {
            entries: moka::sync::Cache::builder()
                .max_capacity(max_bytes)
                .weigher(|key: &String, entry: &Arc<Entry>| {
                    u32::try_from(key.len() + entry.weight()).unwrap_or(u32::MAX)
                })
                .build(),
            enabled: max_bytes > 0,
            recalled: AtomicU64::new(0),
        }
    }

    /// Whether the memo remembers anything at all (a bound above zero).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The remembered understanding of `shape` with the text to run, if the
    /// shape is remembered and this statement differs from it only in free
    /// literals, and the new text proves to tokenize as it must.
    pub fn recall(&self, shape: &Shape) -> Option<(Arc<Understood>, String, Vec<NamedAt>)> {
        let entry = self.entries.get(shape.key())?;
        let literals = shape.literals();
        for (index, token) in &entry.fixed {
            if &literals.get(*index)?.token != token {
                return None;
            }
        }
        let mut text = String::with_capacity(entry.pieces.iter().map(String::len).sum::<usize>());
        let mut pieces = entry.pieces.iter();
        text.push_str(pieces.next()?);
        // Where each piece starts in the new text.
        let mut starts = Vec::with_capacity(entry.pieces.len());
        starts.push(0);
        for (slot, piece) in entry.slots.iter().zip(pieces) {
            let token = &literals.get(slot.literal)?.token;
            let rendering = value_of(token)?.to_string();
            // The rendering alone must read back as exactly the caller's token;
            // its neighbours (checked when it was remembered) end any token.
            let read = Tokenizer::new(&PostgreSqlDialect {}, &rendering)
                .tokenize()
                .ok()?;
            if read.as_slice() != std::slice::from_ref(token) {
                return None;
            }
            text.push_str(&rendering);
            starts.push(text.len());
            text.push_str(piece);
        }
        let named = entry
            .named
            .iter()
            .filter_map(|(piece, at)| {
                let start = *starts.get(*piece)?;
                Some(NamedAt {
                    name: start + at.name.start..start + at.name.end,
                    ..at.clone()
                })
            })
            .collect();
        self.recalled.fetch_add(1, Ordering::Relaxed);
        Some((Arc::clone(&entry.understood), text, named))
    }

    /// How many statements were decided from what the memo remembered.
    pub fn recalled(&self) -> u64 {
        self.recalled.load(Ordering::Relaxed)
    }

    /// Remembers what was understood of `statement` (as the caller sent it,
    /// with `shape`) under its shape, if its free literals line up with the
    /// shape's literals and with the tokens of `canonical`.
    pub fn remember(
        &self,
        shape: Shape,
        statement: &Statement,
        sql: &str,
        canonical: Canonical,
        understood: Arc<Understood>,
    ) {
        if let Some(entry) = entry(&shape, statement, sql, canonical, understood) {
            self.entries
                .insert(shape.key().to_string(), Arc::new(entry));
        }
    }

    /// Entries now held (after pending maintenance), for tests and metrics.
    pub fn len(&self) -> u64 {
        self.entries.run_pending_tasks();
        self.entries.entry_count()
    }

    /// Whether the memo holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Entry {
    /// A rough size in bytes: the text, the literal slots and the lineage.
    fn weight(&self) -> usize {
        let analysis = &self.understood.analysis;
        self.pieces.iter().map(String::len).sum::<usize>()
            + (self.fixed.len() + self.slots.len()) * 64
            + (analysis.uses.len() + analysis.outputs.len() + analysis.relations_read.len()) * 128
            + 256
    }
}

fn entry(
    shape: &Shape,
    statement: &Statement,
    sql: &str,
    canonical: Canonical,
    understood: Arc<Understood>,
) -> Option<Entry> {
    let literals = shape.literals();
    let sent = free_values(statement);
    let shown = free_values(&canonical.statement);
    if sent.len() != shown.len() {
        return None;
    }
    let mut free = vec![false; literals.len()];
    let mut slots = Vec::with_capacity(sent.len());
    for ((sent_at, value), (shown_at, shown_value)) in sent.iter().zip(&shown) {
        if value != shown_value {
            return None;
        }
        let literal = literals.binary_search_by(|l| l.start.cmp(sent_at)).ok()?;
        let token = canonical
            .tokens
            .binary_search_by(|t| t.span.start.cmp(shown_at))
            .ok()?;
        let free_slot = free.get_mut(literal)?;
        let canonical_token = &canonical.tokens.get(token)?.token;
        if *free_slot
            || value_of(&literals.get(literal)?.token).as_ref() != Some(value)
            || value_of(canonical_token).as_ref() != Some(value)
        {
            return None;
        }
        *free_slot = true;
        slots.push((token, Slot { literal }));
    }
    slots.sort_by_key(|(token, _)| *token);
    let offsets = Offsets::new(sql);
    let mut pieces = Vec::with_capacity(slots.len() + 1);
    // Each piece's bytes in `sql`.
    let mut bounds = Vec::with_capacity(slots.len() + 1);
    let mut from = 0;
    for (token, _) in &slots {
        let span = canonical.tokens.get(*token)?.span;
        let (start, end) = (offsets.of(span.start)?, offsets.of(span.end)?);
        // A literal between a space, `(` or `,` and a space, `)`, `,` or the end
        // is one token whatever its value: no token can run into or out of it.
        let before = sql.get(..start)?.chars().next_back();
        let after = sql.get(end..)?.chars().next();
        if !matches!(before, Some(' ' | '(' | ','))
            || !matches!(after, None | Some(' ' | ')' | ','))
        {
            return None;
        }
        pieces.push(sql.get(from..start)?.to_string());
        bounds.push(from..start);
        from = end;
    }
    let slots: Vec<Slot> = slots.into_iter().map(|(_, slot)| slot).collect();
    pieces.push(sql.get(from..)?.to_string());
    bounds.push(from..sql.len());
    let named = named_items(&canonical.statement, sql)
        .into_iter()
        .filter_map(|at| {
            let piece = bounds
                .iter()
                .position(|b| b.start <= at.name.start && at.name.end <= b.end)?;
            let base = bounds.get(piece)?.start;
            Some((
                piece,
                NamedAt {
                    name: at.name.start - base..at.name.end - base,
                    ..at
                },
            ))
        })
        .collect();
    // The pieces with this statement's own literals must give back its text.
    let mut again = pieces.first()?.clone();
    for (slot, piece) in slots.iter().zip(pieces.iter().skip(1)) {
        again.push_str(&value_of(&literals.get(slot.literal)?.token)?.to_string());
        again.push_str(piece);
    }
    if again != sql {
        return None;
    }
    let fixed = literals
        .iter()
        .enumerate()
        .filter(|(i, _)| !free.get(*i).copied().unwrap_or(false))
        .map(|(i, l)| (i, l.token.clone()))
        .collect();
    Some(Entry {
        understood,
        fixed,
        pieces,
        slots,
        named,
    })
}

/// The free literals of a tree, in visiting order, with where each starts.
fn free_values(statement: &Statement) -> Vec<(Location, Value)> {
    let mut found = FreeValues(Vec::new());
    let _ = statement.visit(&mut found);
    found.0
}

struct FreeValues(Vec<(Location, Value)>);

impl FreeValues {
    /// A free operand: a number or plain string, or the text of a temporal typed literal.
    fn take(&mut self, expr: &Expr) {
        match expr {
            Expr::Value(v) => self.push(v, true),
            Expr::TypedString(typed) if !typed.uses_odbc_syntax && temporal(&typed.data_type) => {
                self.push(&typed.value, false);
            }
            Expr::Interval(interval) => {
                if let Expr::Value(v) = interval.value.as_ref() {
                    self.push(v, false);
                }
            }
            _ => {}
        }
    }

    /// `v` if it is a plain `'...'` string (or, with `numbers`, a number).
    fn push(&mut self, v: &ValueWithSpan, numbers: bool) {
        if matches!(v.value, Value::SingleQuotedString(_))
            || (numbers && matches!(v.value, Value::Number(..)))
        {
            self.0.push((v.span.start, v.value.clone()));
        }
    }
}

/// Whether a typed literal's type is a date, time, timestamp or interval: what it means
/// is a point or a span of time whatever its text (an unreadable text fails when the
/// statement runs, as without the memo); no decision reads it. Other typed strings (say
/// `regclass '...'`, whose text names a relation) keep their value.
fn temporal(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Date | DataType::Time(..) | DataType::Timestamp(..) | DataType::Interval { .. }
    )
}

impl Visitor for FreeValues {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        match expr {
            Expr::BinaryOp { left, right, .. }
            | Expr::IsDistinctFrom(left, right)
            | Expr::IsNotDistinctFrom(left, right) => {
                self.take(left);
                self.take(right);
            }
            Expr::Like { pattern, .. }
            | Expr::ILike { pattern, .. }
            | Expr::SimilarTo { pattern, .. } => self.take(pattern),
            Expr::In {
                target: InTarget::List(list),
                ..
            } => list.iter().for_each(|e| self.take(e)),
            Expr::Between { low, high, .. } => {
                self.take(low);
                self.take(high);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
