//! PostgreSQL's plan as an oracle: `EXPLAIN (VERBOSE, FORMAT JSON)` parsed into a tree,
//! the printed expressions tokenized into column references, and a tracer that follows an
//! output column down to the base-table columns it is computed from.
//!
//! How PostgreSQL prints (ruleutils, `EXPLAIN VERBOSE`): a Var of a scan node prints as
//! `refname.column` of that node's range-table entry (refnames are unique per plan); a Var
//! of an upper node prints as the child expression it refers to, so refs at joins, sorts
//! and aggregates name the scan below. Exceptions the tracer handles: above an Append (or
//! Merge Append) a reference prints as the *first* branch's expression although it means
//! that position of every branch; a subquery or CTE scan column prints as `alias.name`
//! whose position is not printed; scalar subqueries print as `(SubPlan n)` and `$n`.
//! Whenever the tracer cannot map a reference soundly it returns `Err` and the caller
//! skips the comparison (and counts it); it never guesses.

use std::collections::{BTreeSet, HashMap};

use interlock::sql::ColumnRef;
use serde_json::Value;

use super::gen::Facts;
use super::schema;

/// One plan node.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub node_type: String,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub relationship: String,
    pub subplan_name: Option<String>,
    /// `(schema, relation)` of a base-relation scan.
    pub relation: Option<(String, String)>,
    pub alias: Option<String>,
    pub cte_name: Option<String>,
    pub output: Vec<String>,
    /// Every other expression field, by field name (Filter, Hash Cond, Sort Key, ...).
    pub exprs: Vec<(String, String)>,
}

/// Expression-valued fields of EXPLAIN's JSON output (strings or lists of strings).
const EXPR_FIELDS: &[&str] = &[
    "Filter",
    "Join Filter",
    "Hash Cond",
    "Merge Cond",
    "Index Cond",
    "Recheck Cond",
    "TID Cond",
    "One-Time Filter",
    "Sort Key",
    "Presorted Key",
    "Group Key",
    "Hash Key",
    "Cache Key",
    "Order By",
    "Run Condition",
    "Function Call",
    "Table Function Call",
];

/// Sort and grouping keys: the fields check (c) reads.
pub const KEY_FIELDS: &[&str] = &["Sort Key", "Presorted Key", "Group Key"];

/// Nodes whose target list is their (outer) child's, position for position.
const PASSTHROUGH: &[&str] = &[
    "Sort",
    "Incremental Sort",
    "Limit",
    "Unique",
    "Materialize",
    "Memoize",
    "Hash",
    "Gather",
    "Gather Merge",
    "LockRows",
    "SetOp",
];

/// Nodes whose output position i is position i of every member.
const APPEND_LIKE: &[&str] = &["Append", "Merge Append", "Recursive Union"];

#[derive(Debug, Clone)]
pub struct Plan {
    pub nodes: Vec<Node>,
}

impl Plan {
    /// Parses the JSON of `EXPLAIN (VERBOSE, FORMAT JSON)`.
    pub fn parse(json: &Value) -> Result<Plan, String> {
        let root = json
            .get(0)
            .and_then(|v| v.get("Plan"))
            .ok_or("no Plan in EXPLAIN output")?;
        let mut plan = Plan { nodes: Vec::new() };
        plan.add(root, None);
        Ok(plan)
    }

    fn add(&mut self, v: &Value, parent: Option<usize>) -> usize {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let mut node = Node {
            node_type: s("Node Type").unwrap_or_default(),
            parent,
            relationship: s("Parent Relationship").unwrap_or_default(),
            subplan_name: s("Subplan Name"),
            alias: s("Alias"),
            cte_name: s("CTE Name"),
            ..Node::default()
        };
        if let (Some(rel), Some(sch)) = (s("Relation Name"), s("Schema")) {
            node.relation = Some((sch, rel));
        }
        node.output = strings(v.get("Output"));
        for field in EXPR_FIELDS {
            for e in strings(v.get(*field)) {
                node.exprs.push((field.to_string(), e));
            }
        }
        if let Some(sets) = v.get("Group Sets").and_then(Value::as_array) {
            for set in sets {
                for key in strings(set.get("Group Keys")) {
                    node.exprs.push(("Group Key".to_string(), key));
                }
            }
        }
        let id = self.nodes.len();
        self.nodes.push(node);
        if let Some(children) = v.get("Plans").and_then(Value::as_array) {
            for child in children {
                let c = self.add(child, Some(id));
                self.nodes[id].children.push(c);
            }
        }
        id
    }

    pub fn is_subplan_edge(&self, child: usize) -> bool {
        matches!(
            self.nodes[child].relationship.as_str(),
            "InitPlan" | "SubPlan"
        )
    }

    /// Children that feed rows (not InitPlans/SubPlans).
    fn row_children(&self, n: usize) -> Vec<usize> {
        self.nodes[n]
            .children
            .iter()
            .copied()
            .filter(|&c| !self.is_subplan_edge(c))
            .collect()
    }

    fn is_ancestor(&self, a: usize, mut n: usize) -> bool {
        loop {
            if n == a {
                return true;
            }
            match self.nodes[n].parent {
                Some(p) => n = p,
                None => return false,
            }
        }
    }

    /// Scan nodes (those with an alias) by refname; `None` marks a duplicate.
    fn refnames(&self) -> HashMap<String, Option<usize>> {
        let mut map: HashMap<String, Option<usize>> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if let Some(a) = &n.alias {
                map.entry(a.clone())
                    .and_modify(|e| *e = None)
                    .or_insert(Some(i));
            }
        }
        map
    }

    /// Scan nodes of the whole plan.
    fn scans(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].alias.is_some())
            .collect()
    }

    /// True when the target list of node `n` has no resjunk entries: none of the nodes
    /// that order, group or de-duplicate (which carry sort and group values along) is
    /// part of its query level.
    fn junk_free(&self, n: usize) -> bool {
        const JUNK: &[&str] = &[
            "Sort",
            "Incremental Sort",
            "Aggregate",
            "Group",
            "Unique",
            "WindowAgg",
            "Index Scan",
            "Index Only Scan",
            "Merge Append",
            "Gather Merge",
            "SetOp",
            "ProjectSet",
        ];
        let node = &self.nodes[n];
        if JUNK.contains(&node.node_type.as_str()) {
            return false;
        }
        if matches!(
            node.node_type.as_str(),
            "Subquery Scan" | "CTE Scan" | "WorkTable Scan"
        ) {
            return true;
        }
        self.row_children(n).into_iter().all(|c| self.junk_free(c))
    }

    /// The output list as printed for a node, looking through nodes that print none.
    fn printed_output(&self, n: usize) -> Vec<String> {
        let node = &self.nodes[n];
        if !node.output.is_empty() {
            return node.output.clone();
        }
        if APPEND_LIKE.contains(&node.node_type.as_str())
            || PASSTHROUGH.contains(&node.node_type.as_str())
        {
            if let Some(&c) = self.row_children(n).first() {
                return self.printed_output(c);
            }
        }
        Vec::new()
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// A reference found in a printed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    /// `refname.column`
    Column(String, String),
    /// `refname.*`
    WholeRow(String),
    /// An unqualified name that is not a function, type or keyword.
    Bare(String),
    /// `(SubPlan n)`, `hashed` when it is `(hashed SubPlan n)`.
    SubPlan(u32, bool),
    /// `$n`
    Param(u32),
    /// A name with more than two parts.
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String, bool),
    Dot,
    Star,
    LParen,
    Cast,
    Param(u32),
    Number(String),
    Other,
}

fn tokenize(s: &str) -> Vec<Tok> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' {
            // A string literal; '' is an escaped quote.
            i += 1;
            while i < chars.len() {
                if chars[i] == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
            out.push(Tok::Other);
        } else if c == '"' {
            let mut name = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == '"' {
                    if chars.get(i + 1) == Some(&'"') {
                        name.push('"');
                        i += 2;
                        continue;
                    }
                    break;
                }
                name.push(chars[i]);
                i += 1;
            }
            i += 1;
            out.push(Tok::Ident(name, true));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
            {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect(), false));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push(Tok::Number(chars[start..i].iter().collect()));
        } else if c == '$' {
            let start = i + 1;
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let n: String = chars[start..i].iter().collect();
            out.push(n.parse().map_or(Tok::Other, Tok::Param));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            i += 2;
            out.push(Tok::Cast);
        } else {
            i += 1;
            out.push(match c {
                '.' => Tok::Dot,
                '*' => Tok::Star,
                '(' => Tok::LParen,
                _ => Tok::Other,
            });
        }
    }
    out
}

/// Words that continue a multi-word type name after `::`.
const TYPE_WORDS: &[&str] = &["varying", "precision", "with", "without", "time", "zone"];

/// The references in one printed expression.
pub fn refs(expr: &str) -> Vec<Ref> {
    let toks = tokenize(expr);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Param(n) => {
                out.push(Ref::Param(*n));
                i += 1;
            }
            Tok::Cast => {
                // Skip the type name: dotted parts and multi-word continuations.
                i += 1;
                while let Some(Tok::Ident(_, _)) = toks.get(i) {
                    i += 1;
                    if toks.get(i) == Some(&Tok::Dot) {
                        i += 1;
                        continue;
                    }
                    match toks.get(i) {
                        Some(Tok::Ident(w, false)) if TYPE_WORDS.contains(&w.as_str()) => {}
                        _ => break,
                    }
                }
            }
            Tok::Ident(word, quoted) => {
                if !quoted && word == "SubPlan" {
                    if let Some(Tok::Number(n)) = toks.get(i + 1) {
                        let hashed = matches!(
                            i.checked_sub(1).and_then(|j| toks.get(j)),
                            Some(Tok::Ident(w, false)) if w == "hashed"
                        );
                        out.push(
                            n.parse()
                                .map_or(Ref::Other(word.clone()), |n| Ref::SubPlan(n, hashed)),
                        );
                        i += 2;
                        continue;
                    }
                }
                // PostgreSQL prints keywords in upper case and unquoted identifiers in
                // lower case; `hashed` only ever precedes `SubPlan`.
                let keyword = !quoted
                    && (word.chars().any(|c| c.is_ascii_uppercase()) || word == "hashed")
                    && toks.get(i + 1) != Some(&Tok::Dot);
                if keyword {
                    i += 1;
                    continue;
                }
                let mut parts = vec![word.clone()];
                let mut star = false;
                let mut j = i + 1;
                while toks.get(j) == Some(&Tok::Dot) {
                    match toks.get(j + 1) {
                        Some(Tok::Ident(p, _)) => {
                            parts.push(p.clone());
                            j += 2;
                        }
                        Some(Tok::Star) => {
                            star = true;
                            j += 2;
                            break;
                        }
                        _ => break,
                    }
                }
                let is_call = toks.get(j) == Some(&Tok::LParen);
                if !is_call {
                    out.push(match (parts.len(), star) {
                        (1, true) => Ref::WholeRow(parts.remove(0)),
                        (1, false) => Ref::Bare(parts.remove(0)),
                        (2, false) => Ref::Column(parts[0].clone(), parts[1].clone()),
                        _ => Ref::Other(parts.join(".")),
                    });
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    out
}

/// Base columns a traced value derives from, or why it could not be traced soundly.
pub type Traced = Result<BTreeSet<ColumnRef>, String>;

fn table_columns(schema_name: &str, table: &str) -> Option<Vec<&'static str>> {
    schema::table(schema_name, table).map(|t| t.columns.iter().map(|(n, _)| *n).collect())
}

fn is_column_anywhere(name: &str) -> bool {
    schema::TABLES
        .iter()
        .any(|t| t.columns.iter().any(|(n, _)| *n == name))
}

/// Follows plan expressions down to base columns.
pub struct Tracer<'p> {
    plan: &'p Plan,
    facts: &'p Facts,
    refnames: HashMap<String, Option<usize>>,
    /// Subplan roots by name ("SubPlan 1", "CTE a"); `None` marks a duplicate.
    subplans: HashMap<String, Option<usize>>,
    /// `$n` → (InitPlan root, position in its returns list).
    params: HashMap<u32, (usize, usize)>,
    /// Worktable values of a Recursive Union while its fixpoint is computed, and after.
    worktables: HashMap<usize, Vec<BTreeSet<ColumnRef>>>,
    depth: usize,
}

const MAX_TRACE_DEPTH: usize = 200;

impl<'p> Tracer<'p> {
    pub fn new(plan: &'p Plan, facts: &'p Facts) -> Self {
        let mut subplans: HashMap<String, Option<usize>> = HashMap::new();
        let mut params = HashMap::new();
        for (i, n) in plan.nodes.iter().enumerate() {
            let Some(name) = &n.subplan_name else {
                continue;
            };
            // "InitPlan 1 (returns $0,$1)"
            if let Some(rest) = name.split_once("(returns ").map(|(_, r)| r) {
                for (pos, p) in rest.trim_end_matches(')').split(',').enumerate() {
                    if let Ok(k) = p.trim().trim_start_matches('$').parse::<u32>() {
                        params.insert(k, (i, pos));
                    }
                }
            }
            let key = name.split(" (").next().unwrap_or(name).to_string();
            subplans
                .entry(key)
                .and_modify(|e| *e = None)
                .or_insert(Some(i));
        }
        Tracer {
            plan,
            facts,
            refnames: plan.refnames(),
            subplans,
            params,
            worktables: HashMap::new(),
            depth: 0,
        }
    }

    fn node(&self, n: usize) -> &Node {
        &self.plan.nodes[n]
    }

    fn scan_by_refname(&self, name: &str) -> Result<usize, String> {
        match self.refnames.get(name) {
            Some(Some(n)) => Ok(*n),
            Some(None) => Err(format!("refname {name} is not unique")),
            None => Err(format!("no scan named {name}")),
        }
    }

    /// The base columns output position `i` of node `n` derives from.
    pub fn output(&mut self, n: usize, i: usize) -> Traced {
        self.depth += 1;
        let r = if self.depth > MAX_TRACE_DEPTH {
            Err("trace too deep".to_string())
        } else {
            self.output_inner(n, i)
        };
        self.depth -= 1;
        r
    }

    fn output_inner(&mut self, n: usize, i: usize) -> Traced {
        let node = self.node(n).clone();
        let ty = node.node_type.as_str();
        if PASSTHROUGH.contains(&ty) {
            let child = *self
                .plan
                .row_children(n)
                .first()
                .ok_or_else(|| format!("{ty} without input"))?;
            return self.output(child, i);
        }
        if ty == "Recursive Union" {
            let values = self.recursive_union(n)?;
            return values
                .get(i)
                .cloned()
                .ok_or_else(|| format!("Recursive Union has no column {i}"));
        }
        if APPEND_LIKE.contains(&ty) {
            let mut all = BTreeSet::new();
            for c in self.plan.row_children(n) {
                all.extend(self.output(c, i)?);
            }
            return Ok(all);
        }
        let expr = node
            .output
            .get(i)
            .cloned()
            .ok_or_else(|| format!("{ty} prints no output column {i}"))?;
        if let Some(traced) = self.over_append(n, &expr) {
            return traced;
        }
        // A set-operation branch ("*SELECT* n"): its scan names the branch's columns by
        // the set operation's column names, which the plan does not print, and it may
        // project them in another order than the branch outputs them (an outer select
        // list that reorders them). Only a one-column branch maps by position soundly.
        if ty == "Subquery Scan"
            && node
                .alias
                .as_deref()
                .is_some_and(|a| a.starts_with("*SELECT* "))
        {
            return match refs(&expr).as_slice() {
                [Ref::Column(q, _)] if Some(q) == node.alias.as_ref() => {
                    let child = *self
                        .plan
                        .row_children(n)
                        .first()
                        .ok_or("subquery scan without input")?;
                    if self.plan.printed_output(child).len() != 1 {
                        return Err(format!(
                            "{expr}: a set-operation branch's columns are not named in the plan"
                        ));
                    }
                    self.output(child, 0)
                }
                _ => self.expr(n, &expr),
            };
        }
        self.expr(n, &expr)
    }

    /// An expression printed at `n`, a projecting node reading an Append (through nodes
    /// that pass rows on): a reference to the Append's output k prints as its first
    /// branch's expression k (in parentheses unless it is a plain column), which is
    /// invisible when that branch outputs a constant. Whole-expression matches map to
    /// the position; an expression that merely contains a reference-free branch output
    /// cannot be traced. `None`: no Append input, or nothing of it in `expr`.
    fn over_append(&mut self, n: usize, expr: &str) -> Option<Traced> {
        let mut entries: Vec<(usize, usize, String)> = Vec::new();
        for c in self.plan.row_children(n) {
            let mut a = c;
            while PASSTHROUGH.contains(&self.node(a).node_type.as_str()) {
                match self.plan.row_children(a).first() {
                    Some(&next) => a = next,
                    None => break,
                }
            }
            if APPEND_LIKE.contains(&self.node(a).node_type.as_str()) {
                for (k, e) in self.plan.printed_output(a).into_iter().enumerate() {
                    entries.push((a, k, e));
                }
            }
        }
        if entries.is_empty() {
            return None;
        }
        let exact: Vec<(usize, usize)> = entries
            .iter()
            .filter(|(_, _, e)| *e == expr || format!("({e})") == expr)
            .map(|(a, k, _)| (*a, *k))
            .collect();
        match exact.as_slice() {
            [(a, k)] => return Some(self.output(*a, *k)),
            [] => {}
            _ => {
                return Some(Err(format!(
                    "{expr} matches {} Append outputs",
                    exact.len()
                )))
            }
        }
        let squeeze = |t: &str| t.split_whitespace().collect::<String>();
        let hidden = entries
            .iter()
            .any(|(_, _, e)| refs(e).is_empty() && squeeze(expr).contains(&squeeze(e)));
        hidden.then(|| Err(format!("{expr} is computed over a constant Append branch")))
    }

    /// A sort key printed at a node that passes rows on names one of its own outputs:
    /// traced by position. `None` when it names none of them exactly.
    fn key_position(&mut self, n: usize, key: &str) -> Option<Traced> {
        if !PASSTHROUGH.contains(&self.node(n).node_type.as_str()) {
            return None;
        }
        let hits: Vec<usize> = (0..self.node(n).output.len())
            .filter(|&j| self.node(n).output[j] == key)
            .collect();
        match hits.as_slice() {
            [] => None,
            [j] => Some(self.output(n, *j)),
            _ => Some(Err(format!("{key} names {} outputs", hits.len()))),
        }
    }

    /// The base columns a sort or grouping key printed at node `n` compares.
    pub fn key(&mut self, n: usize, key: &str) -> Traced {
        if let Some(traced) = self.key_position(n, key) {
            return traced;
        }
        if let Some(traced) = self.over_append(n, key) {
            return traced;
        }
        self.expr(n, key)
    }

    /// Fixpoint of a Recursive Union's columns over its worktable.
    fn recursive_union(&mut self, n: usize) -> Result<Vec<BTreeSet<ColumnRef>>, String> {
        if let Some(v) = self.worktables.get(&n) {
            return Ok(v.clone());
        }
        let children = self.plan.row_children(n);
        let [anchor, recursive] = children.as_slice() else {
            return Err("Recursive Union without two inputs".to_string());
        };
        let width = self.plan.printed_output(*anchor).len();
        let mut values = Vec::new();
        for j in 0..width {
            values.push(self.output(*anchor, j)?);
        }
        for _ in 0..10 {
            self.worktables.insert(n, values.clone());
            let mut next = values.clone();
            for (j, v) in next.iter_mut().enumerate() {
                match self.output(*recursive, j) {
                    Ok(more) => v.extend(more),
                    Err(e) => {
                        self.worktables.remove(&n);
                        return Err(e);
                    }
                }
            }
            if next == values {
                return Ok(values);
            }
            values = next;
        }
        self.worktables.remove(&n);
        Err("recursive lineage does not settle".to_string())
    }

    /// The base columns of every reference in `expr`, printed at node `at`.
    pub fn expr(&mut self, at: usize, expr: &str) -> Traced {
        let mut all = BTreeSet::new();
        for r in refs(expr) {
            all.extend(self.reference(at, &r)?);
        }
        Ok(all)
    }

    fn reference(&mut self, at: usize, r: &Ref) -> Traced {
        match r {
            Ref::Column(q, c) => self.qualified(at, q, Some(c)),
            Ref::WholeRow(q) => self.qualified(at, q, None),
            Ref::Bare(name) => {
                if name == "true" || name == "false" {
                    return Ok(BTreeSet::new());
                }
                if !is_column_anywhere(name) {
                    // A function-scan column, or a column name EXPLAIN made unique
                    // (`status_1`): not traceable by name.
                    return match self.only_scan() {
                        Some(s) if self.node(s).node_type == "Function Scan" => self.qualified(
                            at,
                            &self.node(s).alias.clone().unwrap_or_default(),
                            Some(name),
                        ),
                        _ => Err(format!("unknown name {name}")),
                    };
                }
                match self.only_scan() {
                    Some(s) => {
                        let alias = self.node(s).alias.clone().unwrap_or_default();
                        self.qualified(at, &alias, Some(name))
                    }
                    None => Err(format!("unqualified reference {name}")),
                }
            }
            Ref::SubPlan(k, hashed) => {
                let root = self.subplan(&format!("SubPlan {k}"))?;
                if let Some(traced) = self.through_append(at, root, r) {
                    return traced;
                }
                if *hashed
                    || self.node(root).output.is_empty()
                        && self.plan.printed_output(root).is_empty()
                {
                    // A hashed ANY or an EXISTS: a boolean, not a value of the subquery.
                    return Ok(BTreeSet::new());
                }
                self.output(root, 0)
            }
            Ref::Param(k) => {
                let (root, pos) = *self
                    .params
                    .get(k)
                    .ok_or_else(|| format!("parameter ${k} has no InitPlan"))?;
                if let Some(traced) = self.through_append(at, root, r) {
                    return traced;
                }
                if self.plan.printed_output(root).is_empty() {
                    return Ok(BTreeSet::new());
                }
                self.output(root, pos)
            }
            Ref::Other(s) => Err(format!("reference {s}")),
        }
    }

    /// The scan an unqualified name belongs to. PostgreSQL prints a column without its
    /// qualifier when the range table has one entry, but also when the column's relation
    /// has no scan left in the plan (the planner proved it empty): so only a statement
    /// with exactly one FROM entry in its text, scanned once in the plan, qualifies.
    fn only_scan(&self) -> Option<usize> {
        let [(name, _)] = self.facts.ranges.as_slice() else {
            return None;
        };
        match self.plan.scans().as_slice() {
            [s] if self.node(*s).alias.as_ref() == Some(name) => Some(*s),
            _ => None,
        }
    }

    fn subplan(&self, name: &str) -> Result<usize, String> {
        match self.subplans.get(name) {
            Some(Some(n)) => Ok(*n),
            Some(None) => Err(format!("{name} is not unique")),
            None => Err(format!("no {name}")),
        }
    }

    /// A reference printed at `at` to something inside an Append that does not contain
    /// `at` means a position of that Append, printed as its first branch: maps it back to
    /// that position (the highest such Append). `None` when the reference is direct.
    fn through_append(&mut self, at: usize, target: usize, token: &Ref) -> Option<Traced> {
        let mut through = None;
        let mut p = target;
        while let Some(parent) = self.node(p).parent {
            if APPEND_LIKE.contains(&self.node(parent).node_type.as_str())
                && !self.plan.is_ancestor(parent, at)
            {
                through = Some(parent);
            }
            p = parent;
        }
        let append = through?;
        let same = |r: &Ref| match (r, token) {
            (Ref::SubPlan(a, _), Ref::SubPlan(b, _)) => a == b,
            _ => r == token,
        };
        let printed = self.plan.printed_output(append);
        let positions: Vec<usize> = printed
            .iter()
            .enumerate()
            .filter(|(_, e)| refs(e).iter().any(same))
            .map(|(k, _)| k)
            .collect();
        Some(match positions.as_slice() {
            [k] => self.output(append, *k),
            _ => Err(format!("{token:?} through an Append maps to {positions:?}")),
        })
    }

    /// `q.c` (or `q.*` when `column` is None) printed at node `at`.
    fn qualified(&mut self, at: usize, q: &str, column: Option<&str>) -> Traced {
        let s = self.scan_by_refname(q)?;
        let token = match column {
            Some(c) => Ref::Column(q.to_string(), c.to_string()),
            None => Ref::WholeRow(q.to_string()),
        };
        if let Some(traced) = self.through_append(at, s, &token) {
            return traced;
        }
        let node = self.node(s).clone();
        if let Some((sch, rel)) = &node.relation {
            let cols =
                table_columns(sch, rel).ok_or_else(|| format!("unknown table {sch}.{rel}"))?;
            return match column {
                Some(c) => {
                    let actual = base_column(self.facts, q, &cols, c)?;
                    Ok(BTreeSet::from([ColumnRef::new(sch, rel, actual)]))
                }
                None => Ok(cols.iter().map(|c| ColumnRef::new(sch, rel, c)).collect()),
            };
        }
        let Some(column) = column else {
            return self.whole_row(s, q);
        };
        match node.node_type.as_str() {
            "Subquery Scan" => {
                let child = *self
                    .plan
                    .row_children(s)
                    .first()
                    .ok_or("subquery scan without input")?;
                let pos = self.derived_position(q, column, child)?;
                self.output(child, pos)
            }
            "CTE Scan" => {
                let cte = node.cte_name.clone().ok_or("CTE scan without a name")?;
                let root = self.subplan(&format!("CTE {cte}"))?;
                let pos = self.cte_position(q, &cte, column, root)?;
                self.output(root, pos)
            }
            "WorkTable Scan" => {
                let cte = node
                    .cte_name
                    .clone()
                    .ok_or("worktable scan without a name")?;
                let mut ru = s;
                while self.node(ru).node_type != "Recursive Union" {
                    ru = self
                        .node(ru)
                        .parent
                        .ok_or("worktable scan outside a Recursive Union")?;
                }
                let anchor = *self
                    .plan
                    .row_children(ru)
                    .first()
                    .ok_or("Recursive Union without input")?;
                let pos = self.cte_position(q, &cte, column, anchor)?;
                let values = self.recursive_union(ru)?;
                values
                    .get(pos)
                    .cloned()
                    .ok_or_else(|| format!("worktable has no column {pos}"))
            }
            "Function Scan" => {
                let mut all = BTreeSet::new();
                for (field, e) in node.exprs.iter() {
                    if field == "Function Call" {
                        all.extend(self.expr(s, e)?);
                    }
                }
                Ok(all)
            }
            other => Err(format!("{other} {q}")),
        }
    }

    /// The whole row of a subquery, CTE or worktable scan: every column of its input,
    /// when no resjunk column (a sort or grouping value not selected) can trail them.
    fn whole_row(&mut self, s: usize, q: &str) -> Traced {
        let node = self.node(s).clone();
        let input = match node.node_type.as_str() {
            "Subquery Scan" => *self
                .plan
                .row_children(s)
                .first()
                .ok_or("subquery scan without input")?,
            "CTE Scan" => {
                let cte = node.cte_name.clone().ok_or("CTE scan without a name")?;
                self.subplan(&format!("CTE {cte}"))?
            }
            other => return Err(format!("whole row of {other} {q}")),
        };
        if !self.plan.junk_free(input) {
            return Err(format!(
                "whole row of {q}: its input may carry resjunk columns"
            ));
        }
        let width = self.plan.printed_output(input).len();
        let mut all = BTreeSet::new();
        for i in 0..width {
            all.extend(self.output(input, i)?);
        }
        Ok(all)
    }

    /// Position of `column` in the derived table visible as `alias` (input node
    /// `input`): from its written column list when that list names every column, else
    /// only for a one-column input.
    fn derived_position(&self, alias: &str, column: &str, input: usize) -> Result<usize, String> {
        let printed = self.plan.printed_output(input).len();
        if let Some(Some(list)) = self.facts.range_columns(alias) {
            let width = self.facts.range_width(alias);
            if let Some(pos) = self.listed_position(list, column, width, input) {
                return Ok(pos);
            }
        }
        if printed == 1 {
            return Ok(0);
        }
        Err(format!("position of {alias}.{column} unknown"))
    }

    /// A name's position in a written column list, when the list provably names every
    /// column (a later, unlisted column could carry the same name otherwise): the
    /// select-list width is known and equal, or the input has exactly that many
    /// columns and no resjunk ones.
    fn listed_position(
        &self,
        list: &[String],
        column: &str,
        width: Option<usize>,
        input: usize,
    ) -> Option<usize> {
        let complete = width == Some(list.len())
            || (self.plan.junk_free(input) && self.plan.printed_output(input).len() == list.len());
        if complete {
            unique_position(list, column)
        } else {
            None
        }
    }

    /// Position of `column` in a CTE reference: the reference's alias list, else the CTE's.
    fn cte_position(
        &self,
        refname: &str,
        cte: &str,
        column: &str,
        input: usize,
    ) -> Result<usize, String> {
        let printed = self.plan.printed_output(input).len();
        let width = self.facts.cte_width(cte);
        let unaliased = refname == cte
            || (refname
                .strip_prefix(cte)
                .and_then(|r| r.strip_prefix('_'))
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
                && self
                    .facts
                    .ranges
                    .iter()
                    .filter(|(n, _)| n == cte)
                    .all(|(_, l)| l.is_none()));
        if !unaliased {
            match self.facts.range_columns(refname) {
                Some(Some(list)) => {
                    if let Some(pos) = self.listed_position(list, column, width, input) {
                        return Ok(pos);
                    }
                    if printed == 1 {
                        return Ok(0);
                    }
                    return Err(format!("position of {refname}.{column} unknown"));
                }
                Some(None) => {}
                None if printed == 1 => return Ok(0),
                None => return Err(format!("range {refname} not unique in the text")),
            }
        } else if self
            .facts
            .ranges
            .iter()
            .any(|(n, l)| n == cte && l.is_some())
        {
            if printed == 1 {
                return Ok(0);
            }
            return Err(format!("reference {refname} may carry a column list"));
        }
        if let Some(list) = self.facts.cte_columns(cte) {
            if let Some(pos) = self.listed_position(list, column, width, input) {
                return Ok(pos);
            }
        }
        if printed == 1 {
            return Ok(0);
        }
        Err(format!(
            "position of {refname}.{column} in CTE {cte} unknown"
        ))
    }

    /// Base columns PostgreSQL reads anywhere in the plan (check (a), plan side).
    /// Physical target lists (a scan emitting every column to avoid a projection) are
    /// left out: they are not reads of the query.
    pub fn reads(&self) -> BTreeSet<ColumnRef> {
        // A physical target list: every column of the scanned table, in order, as plain
        // references (under whatever names an alias column list gave them).
        let physical: Vec<Vec<String>> = self
            .plan
            .nodes
            .iter()
            .filter(|n| {
                let Some(cols) = n
                    .relation
                    .as_ref()
                    .and_then(|(sch, rel)| table_columns(sch, rel))
                else {
                    return false;
                };
                n.output.len() == cols.len()
                    && n.output.iter().all(|e| match refs(e).as_slice() {
                        [Ref::Column(q, _)] => Some(q) == n.alias.as_ref(),
                        [Ref::Bare(_)] => true,
                        _ => false,
                    })
            })
            .map(|n| n.output.clone())
            .collect();
        let single = self.only_scan();
        let mut out = BTreeSet::new();
        for (id, node) in self.plan.nodes.iter().enumerate() {
            let mut texts: Vec<&String> = node.exprs.iter().map(|(_, e)| e).collect();
            if id == 0 || !physical.contains(&node.output) {
                texts.extend(node.output.iter());
            }
            for text in texts {
                for r in refs(text) {
                    let (scan, column) = match &r {
                        Ref::Column(q, c) => (self.refnames.get(q).copied().flatten(), Some(c)),
                        Ref::WholeRow(q) => (self.refnames.get(q).copied().flatten(), None),
                        Ref::Bare(c) => (single, Some(c)),
                        _ => continue,
                    };
                    let Some((sch, rel)) = scan.and_then(|s| self.node(s).relation.clone()) else {
                        continue;
                    };
                    let Some(cols) = table_columns(&sch, &rel) else {
                        continue;
                    };
                    let refname = scan
                        .and_then(|s| self.node(s).alias.clone())
                        .unwrap_or_default();
                    match column {
                        Some(c) => {
                            if let Ok(actual) = base_column(self.facts, &refname, &cols, c) {
                                out.insert(ColumnRef::new(&sch, &rel, actual));
                            }
                        }
                        None => out.extend(cols.iter().map(|c| ColumnRef::new(&sch, &rel, c))),
                    }
                }
            }
        }
        out
    }

    /// Every sort or grouping key of the plan, with the node it is printed at.
    pub fn keys(&self) -> Vec<(usize, String, String)> {
        let mut out = Vec::new();
        for (id, node) in self.plan.nodes.iter().enumerate() {
            for (field, e) in &node.exprs {
                if KEY_FIELDS.contains(&field.as_str()) {
                    out.push((id, field.clone(), e.clone()));
                }
            }
        }
        out
    }
}

/// The table column that `refname.column` names, through a written alias column list.
fn base_column<'c>(
    facts: &Facts,
    refname: &str,
    cols: &[&'c str],
    column: &str,
) -> Result<&'c str, String> {
    let list = match facts.range_columns(refname) {
        Some(list) => list,
        None => {
            // Not written once under this name (repeated, or renamed by EXPLAIN): safe
            // only when no entry of that name carries a column list.
            let base = strip_suffix(refname);
            if facts
                .ranges
                .iter()
                .any(|(n, l)| (n == refname || n == base) && l.is_some())
            {
                return Err(format!("{refname} may carry a column list"));
            }
            None
        }
    };
    // A printed name is a listed name (renaming its position) or the own name of a
    // column after the list; it maps only when exactly one column carries it.
    let list = list.unwrap_or(&[]);
    let listed = list
        .iter()
        .enumerate()
        .filter(|(_, n)| *n == column)
        .map(|(k, _)| k);
    let unlisted = cols
        .iter()
        .enumerate()
        .skip(list.len())
        .filter(|(_, c)| **c == column)
        .map(|(k, _)| k);
    let candidates: Vec<usize> = listed.chain(unlisted).collect();
    match candidates.as_slice() {
        [k] => cols
            .get(*k)
            .copied()
            .ok_or_else(|| format!("{refname}: column list longer than the table")),
        [] => Err(format!("{refname} has no column {column}")),
        _ => Err(format!(
            "{refname}.{column} names {} columns",
            candidates.len()
        )),
    }
}

/// `customers_1` → `customers` (EXPLAIN's refname de-duplication).
fn strip_suffix(refname: &str) -> &str {
    match refname.rsplit_once('_') {
        Some((base, digits))
            if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) =>
        {
            base
        }
        _ => refname,
    }
}

fn unique_position(list: &[String], column: &str) -> Option<usize> {
    let mut hits = list.iter().enumerate().filter(|(_, n)| *n == column);
    match (hits.next(), hits.next()) {
        (Some((pos, _)), None) => Some(pos),
        _ => None,
    }
}

/// A compact rendering of the plan's references for failure reports.
pub fn describe(plan: &Plan) -> String {
    let mut out = String::new();
    for (id, n) in plan.nodes.iter().enumerate() {
        let mut depth = 0;
        let mut p = n.parent;
        while let Some(q) = p {
            depth += 1;
            p = plan.nodes[q].parent;
        }
        let mut line = format!("{}#{id} {}", "  ".repeat(depth), n.node_type);
        if let Some(name) = &n.subplan_name {
            line.push_str(&format!(" [{name}]"));
        }
        if let Some((s, r)) = &n.relation {
            line.push_str(&format!(" on {s}.{r}"));
        }
        if let Some(c) = &n.cte_name {
            line.push_str(&format!(" cte {c}"));
        }
        if let Some(a) = &n.alias {
            line.push_str(&format!(" as {a}"));
        }
        if !n.output.is_empty() {
            line.push_str(&format!(" out=[{}]", n.output.join(", ")));
        }
        for (f, e) in &n.exprs {
            line.push_str(&format!(" {f}: {e}"));
        }
        out.push_str("    ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}
