//! A seeded generator of SELECT statements whose names collide across scopes.
//!
//! The generator keeps a rough model of what is visible where (range variables per query
//! level, CTEs per WITH) only to make most statements plausible; it is never trusted about
//! what a name means. PostgreSQL decides validity and meaning. Besides the SQL it records
//! two textual facts the plan oracle may use: the column alias lists written for range
//! variables and CTEs (`AS s(a, b)`, `WITH a(x) AS`), and the construct tags of the case.

use std::collections::BTreeSet;

use super::schema::{Ty, PAD, TABLES};

/// splitmix64: small, fast and reproducible across platforms.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Written column alias lists: the only naming facts the oracle takes from the text.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Every FROM entry by the name it is visible as (alias, else table or CTE name),
    /// with its alias column list when one was written.
    pub ranges: Vec<(String, Option<Vec<String>>)>,
    /// Every CTE with its column list when one was written.
    pub ctes: Vec<(String, Option<Vec<String>>)>,
    /// Derived tables whose select list has a countable width (no `*`): name, width.
    pub range_widths: Vec<(String, usize)>,
    /// CTEs by name with the width of their select list.
    pub cte_widths: Vec<(String, usize)>,
}

impl Facts {
    /// The written column list of the FROM entry visible as `name`, if the name is unique.
    pub fn range_columns(&self, name: &str) -> Option<Option<&[String]>> {
        let mut hits = self.ranges.iter().filter(|(n, _)| n == name);
        match (hits.next(), hits.next()) {
            (Some((_, cols)), None) => Some(cols.as_deref()),
            _ => None,
        }
    }

    /// The select-list width of the derived table visible as `name`, when written once.
    pub fn range_width(&self, name: &str) -> Option<usize> {
        self.range_columns(name)?;
        let mut hits = self.range_widths.iter().filter(|(n, _)| n == name);
        match (hits.next(), hits.next()) {
            (Some((_, w)), None) => Some(*w),
            _ => None,
        }
    }

    /// The select-list width of CTE `name`, when it is defined once.
    pub fn cte_width(&self, name: &str) -> Option<usize> {
        let mut hits = self.cte_widths.iter().filter(|(n, _)| n == name);
        match (hits.next(), hits.next()) {
            (Some((_, w)), None) if self.ctes.iter().filter(|(n, _)| n == name).count() == 1 => {
                Some(*w)
            }
            _ => None,
        }
    }

    /// The written column list of CTE `name`, if it is defined once and has one.
    pub fn cte_columns(&self, name: &str) -> Option<&[String]> {
        let mut hits = self.ctes.iter().filter(|(n, _)| n == name);
        match (hits.next(), hits.next()) {
            (Some((_, Some(cols))), None) => Some(cols),
            _ => None,
        }
    }
}

/// One generated statement.
#[derive(Debug, Clone)]
pub struct Case {
    pub sql: String,
    pub tags: BTreeSet<&'static str>,
    pub facts: Facts,
}

/// Range-variable names: mostly names of columns and tables.
const RANGE_ALIASES: &[&str] = &[
    "c",
    "o",
    "x",
    "s",
    "t",
    "e",
    "email",
    "status",
    "country",
    "name",
    "id",
    "customers",
    "orders",
    "code",
    "note",
    "total",
];
/// Output-column aliases: names of input columns elsewhere.
const OUT_NAMES: &[&str] = &[
    "country",
    "email",
    "status",
    "name",
    "id",
    "x",
    "total",
    "note",
    "code",
    "customers",
    "address",
];
/// CTE names: half of them shadow tables.
const CTE_NAMES: &[&str] = &[
    "a",
    "b",
    "r",
    "orders",
    "customers",
    "email",
    "status",
    "country",
];

#[derive(Debug, Clone)]
struct Col {
    name: String,
    ty: Ty,
    /// False when the generator only guessed the name (an unaliased expression).
    known: bool,
}

impl Col {
    fn new(name: impl Into<String>, ty: Ty) -> Self {
        Col {
            name: name.into(),
            ty,
            known: true,
        }
    }
}

#[derive(Debug, Clone)]
struct RangeItem {
    name: String,
    cols: Vec<Col>,
}

#[derive(Debug, Clone)]
struct CteGuess {
    name: String,
    cols: Vec<Col>,
}

/// An output column as generated: its guessed name and type.
type Outputs = Vec<Col>;

struct Gen<'r> {
    rng: &'r mut Rng,
    /// Query levels, innermost last; each holds the FROM items visible at that level.
    scopes: Vec<Vec<RangeItem>>,
    /// CTEs visible, innermost WITH last.
    ctes: Vec<Vec<CteGuess>>,
    facts: Facts,
    tags: BTreeSet<&'static str>,
    /// Nested constructs (subqueries, joins, CTEs, set operations) still allowed: keeps
    /// statements small enough that most are valid.
    budget: i32,
    /// An alias the next FROM entry must take (a shadow probe).
    forced_alias: Option<String>,
    /// A CTE the next FROM entry should reference (a WITH RECURSIVE forward reference).
    preferred_cte: Option<String>,
    /// CTE names a body must not reach through a table name (under RECURSIVE an
    /// unqualified table name is the CTE): such tables are schema-qualified.
    hidden_ctes: Vec<Vec<String>>,
    /// False when the last query generated has a `*` in its select list (its width is
    /// then only a guess).
    exact_width: bool,
    /// The next FROM entry must be a join (an ON-scope probe after a comma item).
    join_next: bool,
}

/// Generates one statement from `rng`.
pub fn statement(rng: &mut Rng) -> Case {
    let mut g = Gen {
        rng,
        scopes: Vec::new(),
        ctes: Vec::new(),
        facts: Facts::default(),
        tags: BTreeSet::new(),
        budget: 0,
        forced_alias: None,
        preferred_cte: None,
        hidden_ctes: Vec::new(),
        exact_width: true,
        join_next: false,
    };
    g.budget = 2 + g.rng.below(7) as i32;
    let (sql, _) = g.query(0, None, true);
    Case {
        sql,
        tags: g.tags,
        facts: g.facts,
    }
}

fn all_column_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = TABLES
        .iter()
        .flat_map(|t| t.columns.iter().map(|(n, _)| *n))
        .filter(|n| *n != PAD)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn is_column_name(name: &str) -> bool {
    all_column_names().contains(&name)
}

fn is_table_name(name: &str) -> bool {
    TABLES.iter().any(|t| t.name == name)
}

impl Gen<'_> {
    /// Takes `cost` from the budget if there is enough left.
    fn spend(&mut self, cost: i32) -> bool {
        if self.budget >= cost {
            self.budget -= cost;
            true
        } else {
            false
        }
    }

    /// Known column names (of type `ty` when given) of FROM items outside the current
    /// query level.
    fn outer_column_names(&self, ty: Option<Ty>) -> Vec<String> {
        let n = self.scopes.len().saturating_sub(1);
        let mut names: Vec<String> = self.scopes[..n]
            .iter()
            .flatten()
            .flat_map(|i| {
                i.cols
                    .iter()
                    .filter(|c| c.known && ty.is_none_or(|t| t == c.ty))
                    .map(|c| c.name.clone())
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Starts a shadow probe: the next FROM entry is aliased like an outer column, and
    /// the returned bare name is what the caller selects (PostgreSQL: the outer column).
    fn shadow_probe(&mut self, ty: Option<Ty>) -> Option<String> {
        let names = self.outer_column_names(ty);
        if names.is_empty() {
            return None;
        }
        let name = self.rng.pick(&names).clone();
        self.tags.insert("shadow-probe");
        self.forced_alias = Some(name.clone());
        Some(name)
    }

    /// The alias of a FROM entry: forced by a shadow probe, else random (or none).
    fn entry_alias(&mut self, percent: u32) -> Option<String> {
        if let Some(a) = self.forced_alias.take() {
            return Some(a);
        }
        self.rng
            .chance(percent)
            .then(|| self.rng.pick(RANGE_ALIASES).to_string())
    }

    fn pick_ty(&mut self) -> Ty {
        if self.rng.chance(50) {
            Ty::Int
        } else {
            Ty::Text
        }
    }

    /// A query: optional WITH, then a SELECT or a set operation, ORDER BY, LIMIT.
    fn query(&mut self, depth: usize, want: Option<&[Ty]>, top: bool) -> (String, Outputs) {
        let mut sql = String::new();
        let with_chance = if top { 30 } else { 8 };
        let pushed = depth < 3 && self.rng.chance(with_chance) && self.spend(2);
        if pushed {
            sql.push_str(&self.with_clause(depth));
        }
        let (body, outputs) =
            if depth < 3 && self.rng.chance(if top { 18 } else { 8 }) && self.spend(1) {
                self.set_operation(depth, want)
            } else {
                self.select(depth, want, true)
            };
        sql.push_str(&body);
        if pushed {
            self.ctes.pop();
        }
        (sql, outputs)
    }

    fn with_clause(&mut self, depth: usize) -> String {
        let recursive = self.rng.chance(50);
        self.tags.insert("cte");
        if recursive {
            self.tags.insert("cte-recursive");
        }
        let n = 1 + self.rng.below(3);
        // Under RECURSIVE every CTE sees every other; bodies refer either only forward or
        // only backward (PostgreSQL does not implement mutual recursion).
        let forward = recursive && n > 1 && self.rng.chance(60);
        // Decide every CTE's name and shape first, so that bodies can refer forward.
        let mut guesses = Vec::new();
        let mut lists = Vec::new();
        for i in 0..n {
            // A forward reference matters most when the later CTE shadows a table.
            let shadow = forward && i > 0 && self.rng.chance(70);
            let unused: Vec<&str> = CTE_NAMES
                .iter()
                .copied()
                .filter(|c| !guesses.iter().any(|g: &CteGuess| g.name == *c))
                .filter(|c| !shadow || is_table_name(c))
                .collect();
            let name = self.rng.pick(&unused).to_string();
            if is_table_name(&name) {
                self.tags.insert("cte-shadows-table");
            }
            let arity = 1 + self.rng.below(3);
            // A CTE named like a table mostly gets that table's column names: then a
            // reference that binds the wrong one still finds its columns.
            let table_cols: Vec<(&str, Ty)> = TABLES
                .iter()
                .filter(|t| t.schema == "public" && t.name == name)
                .flat_map(|t| t.columns.iter().filter(|(c, _)| *c != PAD).copied())
                .collect();
            let like_table = !table_cols.is_empty() && self.rng.chance(70);
            let cols: Vec<Col> = (0..arity)
                .map(|_| {
                    if like_table {
                        let (c, ty) = *self.rng.pick(&table_cols);
                        Col::new(c.to_string(), ty)
                    } else {
                        let ty = self.pick_ty();
                        Col::new(self.rng.pick(OUT_NAMES).to_string(), ty)
                    }
                })
                .collect();
            let list = self.rng.chance(50);
            lists.push(list);
            guesses.push(CteGuess { name, cols });
        }
        let mut parts = Vec::new();
        for i in 0..n {
            let visible: Vec<CteGuess> = if forward {
                guesses[i + 1..].to_vec()
            } else {
                guesses[..i].to_vec()
            };
            if forward && !visible.is_empty() && self.rng.chance(70) {
                self.preferred_cte = Some(self.rng.pick(&visible).name.clone());
            }
            let hidden: Vec<String> = if recursive {
                guesses
                    .iter()
                    .filter(|g| !visible.iter().any(|v| v.name == g.name))
                    .map(|g| g.name.clone())
                    .collect()
            } else {
                Vec::new()
            };
            self.hidden_ctes.push(hidden);
            self.ctes.push(visible);
            let guess = guesses[i].clone();
            let tys: Vec<Ty> = guess.cols.iter().map(|c| c.ty).collect();
            let names: Vec<String> = guess.cols.iter().map(|c| c.name.clone()).collect();
            let self_ref = recursive && self.rng.chance(50);
            let body = if self_ref {
                self.tags.insert("cte-self-reference");
                self.recursive_body(depth, &guess, &tys)
            } else {
                let (body, _) =
                    self.select_named(depth + 1, &tys, (!lists[i]).then_some(&names), true);
                body
            };
            if recursive {
                // A body that names a later CTE of the list is a forward reference.
                for later in &guesses[i + 1..] {
                    if contains_word(&body, &later.name) {
                        self.tags.insert("cte-forward-reference");
                    }
                }
            }
            self.ctes.pop();
            self.hidden_ctes.pop();
            self.preferred_cte = None;
            self.facts.cte_widths.push((guess.name.clone(), tys.len()));
            let list = if lists[i] {
                self.facts
                    .ctes
                    .push((guess.name.clone(), Some(names.clone())));
                format!("({})", names.join(", "))
            } else {
                self.facts.ctes.push((guess.name.clone(), None));
                String::new()
            };
            parts.push(format!("{}{list} AS ({body})", guess.name));
        }
        if forward && self.rng.chance(70) {
            // Make the statement read the head of the forward chain.
            self.preferred_cte = Some(guesses[0].name.clone());
        }
        self.ctes.push(guesses);
        format!(
            "WITH {}{} ",
            if recursive { "RECURSIVE " } else { "" },
            parts.join(", ")
        )
    }

    /// `anchor UNION [ALL] SELECT ... FROM self WHERE guard`.
    fn recursive_body(&mut self, depth: usize, guess: &CteGuess, tys: &[Ty]) -> String {
        let names: Vec<String> = guess.cols.iter().map(|c| c.name.clone()).collect();
        let (anchor, _) = self.select_named(depth + 1, tys, Some(&names), false);
        let op = if self.rng.chance(70) {
            "UNION ALL"
        } else {
            "UNION"
        };
        let alias = if self.rng.chance(40) {
            let a = self.rng.pick(RANGE_ALIASES).to_string();
            self.facts.ranges.push((a.clone(), None));
            Some(a)
        } else {
            self.facts.ranges.push((guess.name.clone(), None));
            None
        };
        let visible = alias.clone().unwrap_or_else(|| guess.name.clone());
        self.scopes.push(vec![RangeItem {
            name: visible.clone(),
            cols: guess.cols.clone(),
        }]);
        let mut from = match &alias {
            Some(a) => format!("{} AS {a}", guess.name),
            None => guess.name.clone(),
        };
        if self.rng.chance(30) {
            let (item, ranges) = self.table_item();
            from.push_str(", ");
            from.push_str(&item);
            if let Some(scope) = self.scopes.last_mut() {
                scope.extend(ranges);
            }
        }
        let exprs: Vec<String> = tys.iter().map(|ty| self.expr(*ty, depth + 1)).collect();
        let guard = match guess.cols.iter().find(|c| c.ty == Ty::Int) {
            Some(c) => format!("{visible}.{} < 3", c.name),
            None => "false".to_string(),
        };
        self.scopes.pop();
        format!(
            "{anchor} {op} SELECT {} FROM {from} WHERE {guard}",
            exprs.join(", ")
        )
    }

    fn set_operation(&mut self, depth: usize, want: Option<&[Ty]>) -> (String, Outputs) {
        self.tags.insert("set-operation");
        let (left, outputs) = self.select(depth, want, false);
        let exact = self.exact_width;
        let tys: Vec<Ty> = outputs.iter().map(|c| c.ty).collect();
        let (right, _) = self.select(depth, Some(&tys), false);
        self.exact_width = exact;
        let op = *self.rng.pick(&[
            "UNION",
            "UNION ALL",
            "INTERSECT",
            "EXCEPT",
            "INTERSECT ALL",
            "EXCEPT ALL",
        ]);
        let mut sql = format!("{left} {op} {right}");
        if self.rng.chance(40) {
            let key = match self.rng.below(3) {
                0 => {
                    self.tags.insert("order-by-position");
                    let n = (1 + self.rng.below(outputs.len())).to_string();
                    self.folded_number(n)
                }
                1 => {
                    self.tags.insert("order-by-output-name");
                    let name = outputs[self.rng.below(outputs.len())].name.clone();
                    self.folded_name(name)
                }
                _ => {
                    self.tags.insert("order-by-input-name");
                    self.rng.pick(&all_column_names()).to_string()
                }
            };
            sql.push_str(&format!(" ORDER BY {key}"));
        }
        if self.rng.chance(15) {
            sql.push_str(" LIMIT 2");
        }
        (sql, outputs)
    }

    /// A SELECT whose outputs have types `tys`, aliased with `names` when given.
    fn select_named(
        &mut self,
        depth: usize,
        tys: &[Ty],
        names: Option<&Vec<String>>,
        clauses: bool,
    ) -> (String, Outputs) {
        let (sql, mut outputs) = self.select_inner(depth, Some(tys), names, clauses);
        if let Some(names) = names {
            for (c, n) in outputs.iter_mut().zip(names) {
                c.name.clone_from(n);
                c.known = true;
            }
        }
        (sql, outputs)
    }

    fn select(&mut self, depth: usize, want: Option<&[Ty]>, clauses: bool) -> (String, Outputs) {
        self.select_inner(depth, want, None, clauses)
    }

    /// One SELECT in a new query level.
    fn select_inner(
        &mut self,
        depth: usize,
        want: Option<&[Ty]>,
        names: Option<&Vec<String>>,
        clauses: bool,
    ) -> (String, Outputs) {
        self.scopes.push(Vec::new());
        let probe = if depth > 0 && self.rng.chance(15) {
            self.shadow_probe(want.and_then(|w| w.first().copied()))
        } else {
            None
        };
        let mut from_sql = Vec::new();
        let on_scope_probe = probe.is_none() && depth > 0 && self.rng.chance(8);
        let n_from = if probe.is_some() {
            1
        } else if on_scope_probe {
            2
        } else if depth > 0 && self.rng.chance(15) {
            0
        } else if self.rng.chance(75) || !self.spend(1) {
            1
        } else {
            2
        };
        for k in 0..n_from {
            self.join_next = on_scope_probe && k == 1;
            let item = self.range_entry(depth);
            from_sql.push(item);
        }
        self.join_next = false;
        self.forced_alias = None;
        let grouped = clauses && !from_sql.is_empty() && self.rng.chance(12);
        // Grouping keys first, so that the select list can be keys and aggregates.
        let group_keys: Vec<(String, Ty)> = if grouped {
            (0..1 + self.rng.below(2))
                .map(|_| {
                    let ty = self.pick_ty();
                    (self.col_ref(ty, false), ty)
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut key_items: Vec<(usize, usize)> = Vec::new();
        // A grouping probe: the first key item is aliased like an outer column and the
        // GROUP BY names that alias (PostgreSQL: local FROM columns, then local output
        // names, then outer columns).
        let local: Vec<String> = self
            .scopes
            .last()
            .into_iter()
            .flatten()
            .flat_map(|i| i.cols.iter().map(|c| c.name.clone()))
            .collect();
        let group_alias = if grouped && names.is_none() && self.rng.chance(30) {
            let outer: Vec<String> = self
                .outer_column_names(None)
                .into_iter()
                .filter(|n| !local.contains(n))
                .collect();
            (!outer.is_empty()).then(|| self.rng.pick(&outer).clone())
        } else {
            None
        };
        let mut items = Vec::new();
        let mut outputs = Vec::new();
        let count = want.map_or_else(|| 1 + self.rng.below(3), <[Ty]>::len);
        let star_ok = want.is_none() && !from_sql.is_empty() && !grouped;
        let mut exact = true;
        if star_ok && self.rng.chance(10) {
            exact = false;
            self.tags.insert("star");
            items.push("*".to_string());
            for scope_item in self.scopes.last().cloned().unwrap_or_default() {
                outputs.extend(scope_item.cols);
            }
        } else if star_ok && self.rng.chance(8) {
            exact = false;
            self.tags.insert("qualified-star");
            let scope = self.scopes.last().cloned().unwrap_or_default();
            let item = &scope[self.rng.below(scope.len())];
            items.push(format!("{}.*", item.name));
            outputs.extend(item.cols.clone());
        } else {
            for i in 0..count {
                let ty = want.map_or_else(|| self.pick_ty(), |w| w[i]);
                if let (0, Some(name)) = (i, &probe) {
                    let alias = names.and_then(|n| n.first().cloned());
                    match alias {
                        Some(a) => {
                            items.push(format!("{name} AS {a}"));
                            outputs.push(Col::new(a, ty));
                        }
                        None => {
                            items.push(name.clone());
                            outputs.push(Col::new(name.clone(), ty));
                        }
                    }
                    continue;
                }
                let key = group_keys
                    .iter()
                    .position(|(_, kty)| *kty == ty)
                    .filter(|_| self.rng.chance(70));
                let (expr, guess) = match key {
                    Some(k) => {
                        key_items.push((k, i));
                        let e = group_keys[k].0.clone();
                        let guess = guess_name(&e);
                        (e, guess)
                    }
                    None if grouped => {
                        let (e, name) = self.aggregate(ty, depth);
                        (e, Some(name))
                    }
                    None => {
                        let e = self.expr(ty, depth);
                        let guess = guess_name(&e);
                        (e, guess)
                    }
                };
                let first_key = key_items
                    .first()
                    .is_some_and(|(k, item)| *k == 0 && *item == i);
                let alias = match names {
                    _ if first_key && group_alias.is_some() => group_alias.clone(),
                    Some(names) if self.rng.chance(85) => Some(names[i].clone()),
                    Some(_) => None,
                    None if self.rng.chance(45) => Some(self.rng.pick(OUT_NAMES).to_string()),
                    None => None,
                };
                match alias {
                    Some(a) => {
                        items.push(format!("{expr} AS {a}"));
                        outputs.push(Col::new(a, ty));
                    }
                    None => {
                        items.push(expr);
                        outputs.push(Col {
                            known: guess.is_some(),
                            name: guess.unwrap_or_else(|| "x".to_string()),
                            ty,
                        });
                    }
                }
            }
        }
        let distinct = clauses && self.rng.chance(5);
        if distinct {
            self.tags.insert("distinct");
        }
        let mut sql = format!(
            "SELECT {}{}",
            if distinct { "DISTINCT " } else { "" },
            items.join(", ")
        );
        if !from_sql.is_empty() {
            sql.push_str(" FROM ");
            sql.push_str(&from_sql.join(", "));
        }
        if self.rng.chance(40) {
            let p = self.pred(depth);
            sql.push_str(&format!(" WHERE {p}"));
        }
        let inner_names = words_in(&items.join(" "));
        if grouped {
            self.tags.insert("group-by");
            let mut keys = Vec::new();
            for (k, (text, _)) in group_keys.iter().enumerate() {
                // A key shown in the select list may be named by position or output name.
                let item = key_items.iter().find(|(kk, _)| *kk == k).map(|(_, i)| *i);
                if let (0, Some(alias), Some(_)) = (k, &group_alias, item) {
                    self.tags.insert("group-by-outer-name");
                    keys.push(alias.clone());
                    continue;
                }
                let key = match (item, self.rng.below(4)) {
                    (Some(i), 0) => {
                        self.tags.insert("group-by-position");
                        self.folded_number((i + 1).to_string())
                    }
                    (Some(i), 1) => {
                        self.tags.insert("group-by-output-name");
                        self.folded_name(outputs[i].name.clone())
                    }
                    (_, 3) if !inner_names.is_empty() => {
                        self.tags.insert("group-by-inner-name");
                        self.rng.pick(&inner_names).clone()
                    }
                    (_, 2) if !outputs.is_empty() => {
                        // An output name that may also be an input column.
                        self.tags.insert("group-by-output-name");
                        outputs[self.rng.below(outputs.len())].name.clone()
                    }
                    _ => {
                        self.tags.insert("group-by-input");
                        text.clone()
                    }
                };
                keys.push(key);
            }
            sql.push_str(&format!(" GROUP BY {}", keys.join(", ")));
            if self.rng.chance(20) {
                sql.push_str(" HAVING count(*) > 0");
            }
        }
        if clauses && self.rng.chance(30) {
            let mut keys = Vec::new();
            for _ in 0..1 + self.rng.below(2) {
                if !inner_names.is_empty() && self.rng.chance(25) {
                    // A name from inside the select list: an inner alias or column that
                    // may or may not be what PostgreSQL names an output.
                    self.tags.insert("order-by-inner-name");
                    keys.push(self.rng.pick(&inner_names).clone());
                    continue;
                }
                keys.push(self.order_key(&outputs, depth));
            }
            sql.push_str(&format!(" ORDER BY {}", keys.join(", ")));
        }
        if clauses && self.rng.chance(15) {
            sql.push_str(" LIMIT 3");
        }
        self.scopes.pop();
        // Set last, after every nested query of this SELECT.
        self.exact_width = exact;
        (sql, outputs)
    }

    fn order_key(&mut self, outputs: &Outputs, depth: usize) -> String {
        let key = match self.rng.below(6) {
            0 if !outputs.is_empty() => {
                self.tags.insert("order-by-position");
                let n = (1 + self.rng.below(outputs.len())).to_string();
                self.folded_number(n)
            }
            1 | 2 if outputs.iter().any(|c| c.known) => {
                self.tags.insert("order-by-output-name");
                let known: Vec<&Col> = outputs.iter().filter(|c| c.known).collect();
                let name = known[self.rng.below(known.len())].name.clone();
                self.folded_name(name)
            }
            3 => {
                self.tags.insert("order-by-expression");
                let ty = self.pick_ty();
                self.expr(ty, depth + 1)
            }
            _ => {
                self.tags.insert("order-by-input-name");
                let ty = self.pick_ty();
                self.col_ref(ty, false)
            }
        };
        match self.rng.below(10) {
            0..=2 => format!("{key} DESC"),
            3 => format!("{key} NULLS FIRST"),
            4 => format!("{key} DESC NULLS LAST"),
            _ => key,
        }
    }

    /// A position in one of the spellings PostgreSQL's grammar folds back into the number
    /// (`(1)`, `((1))`, `-(-1)`) or reads as an expression instead (`+1`, `(1)::int`), so
    /// the resolver must tell an ordinal from a constant exactly as PostgreSQL does.
    fn folded_number(&mut self, n: String) -> String {
        match self.rng.below(12) {
            0 => {
                self.tags.insert("key-parenthesized");
                format!("({n})")
            }
            1 => {
                self.tags.insert("key-parenthesized");
                format!("(({n}))")
            }
            2 => {
                self.tags.insert("key-double-minus");
                format!("-(-{n})")
            }
            3 => {
                self.tags.insert("key-unary-plus");
                format!("+{n}")
            }
            _ => n,
        }
    }

    /// An output name, sometimes in parentheses (still the bare name to PostgreSQL).
    fn folded_name(&mut self, name: String) -> String {
        if self.rng.chance(20) {
            self.tags.insert("key-parenthesized");
            format!("({name})")
        } else {
            name
        }
    }

    fn aggregate(&mut self, ty: Ty, _depth: usize) -> (String, String) {
        match ty {
            Ty::Int => {
                if self.rng.chance(50) {
                    ("count(*)".to_string(), "count".to_string())
                } else {
                    let c = self.col_ref(Ty::Text, false);
                    (format!("count({c})"), "count".to_string())
                }
            }
            Ty::Text => {
                let c = self.col_ref(Ty::Text, false);
                (format!("max({c})"), "max".to_string())
            }
        }
    }

    /// A base table, possibly schema-qualified and aliased (with a column list).
    fn table_item(&mut self) -> (String, Vec<RangeItem>) {
        let table = if self.rng.chance(8) {
            &TABLES[TABLES.len() - 1]
        } else {
            &TABLES[self.rng.below(TABLES.len() - 1)]
        };
        let mut cols: Vec<Col> = table
            .columns
            .iter()
            .filter(|(n, _)| *n != PAD)
            .map(|(n, ty)| Col::new(n.to_string(), *ty))
            .collect();
        let hidden = self.hidden_ctes.iter().flatten().any(|h| h == table.name);
        let qualified = table.schema != "public" || hidden || self.rng.chance(20);
        if qualified {
            self.tags.insert("schema-qualified");
        }
        let mut sql = if qualified {
            format!("{}.{}", table.schema, table.name)
        } else {
            table.name.to_string()
        };
        let mut name = table.name.to_string();
        let mut list = None;
        if let Some(alias) = self.entry_alias(60) {
            name = alias;
            if is_column_name(&name) {
                self.tags.insert("alias-named-like-column");
            }
            if is_table_name(&name) && name != table.name {
                self.tags.insert("alias-named-like-table");
            }
            sql.push_str(&format!(" AS {name}"));
            if self.rng.chance(10) {
                let n = 1 + self.rng.below(cols.len());
                let names: Vec<String> = (0..n)
                    .map(|_| self.rng.pick(OUT_NAMES).to_string())
                    .collect();
                for (c, new) in cols.iter_mut().zip(&names) {
                    c.name.clone_from(new);
                }
                sql.push_str(&format!("({})", names.join(", ")));
                list = Some(names);
            }
        }
        self.facts.ranges.push((name.clone(), list));
        (sql, vec![RangeItem { name, cols }])
    }

    /// One FROM entry (registered in the current scope once generated).
    fn range_entry(&mut self, depth: usize) -> String {
        let (sql, items) = self.range_entry_inner(depth, true);
        if let Some(scope) = self.scopes.last_mut() {
            scope.extend(items);
        }
        sql
    }

    fn range_entry_inner(&mut self, depth: usize, allow_join: bool) -> (String, Vec<RangeItem>) {
        let visible_ctes: Vec<CteGuess> = self.ctes.iter().flatten().cloned().collect();
        let preferred = self
            .preferred_cte
            .take()
            .and_then(|p| visible_ctes.iter().find(|c| c.name == p).cloned());
        let roll = self.rng.below(100);
        if preferred.is_some() || (roll < 20 && !visible_ctes.is_empty()) {
            self.tags.insert("cte-reference");
            let cte = match preferred {
                Some(p) => p,
                None => self.rng.pick(&visible_ctes).clone(),
            };
            let (sql, name) = match self.entry_alias(40) {
                Some(a) => (format!("{} AS {a}", cte.name), a),
                None => (cte.name.clone(), cte.name.clone()),
            };
            self.facts.ranges.push((name.clone(), None));
            return (
                sql,
                vec![RangeItem {
                    name,
                    cols: cte.cols,
                }],
            );
        }
        if roll < 38 && depth < 3 && self.spend(2) {
            return self.derived(depth);
        }
        if std::mem::take(&mut self.join_next) {
            return self.join(depth, true);
        }
        let after_comma = self.scopes.last().is_some_and(|s| !s.is_empty());
        let join_odds = if after_comma && depth > 0 { 45 } else { 12 };
        if (38..38 + join_odds).contains(&roll) && allow_join && self.spend(1) {
            return self.join(depth, false);
        }
        self.table_item()
    }

    fn derived(&mut self, depth: usize) -> (String, Vec<RangeItem>) {
        self.tags.insert("derived-table");
        let forced = self.forced_alias.take();
        let has_left = self.scopes.last().is_some_and(|s| !s.is_empty());
        let lateral = has_left && self.rng.chance(40);
        let (sub, outputs) = if lateral {
            self.tags.insert("lateral");
            // A LATERAL subquery sees the FROM items to its left: they stay in scope.
            self.query(depth + 1, None, false)
        } else {
            let hidden = self.scopes.last_mut().map(std::mem::take);
            let r = self.query(depth + 1, None, false);
            if let (Some(scope), Some(hidden)) = (self.scopes.last_mut(), hidden) {
                *scope = hidden;
            }
            r
        };
        let exact = self.exact_width;
        self.forced_alias = forced;
        let alias = self
            .entry_alias(100)
            .unwrap_or_else(|| self.rng.pick(RANGE_ALIASES).to_string());
        if is_column_name(&alias) {
            self.tags.insert("alias-named-like-column");
        }
        let mut cols = outputs;
        let mut list_sql = String::new();
        let mut list = None;
        if self.rng.chance(50) && !cols.is_empty() {
            let names: Vec<String> = cols
                .iter()
                .map(|_| self.rng.pick(OUT_NAMES).to_string())
                .collect();
            for (c, n) in cols.iter_mut().zip(&names) {
                c.name.clone_from(n);
                c.known = true;
            }
            list_sql = format!("({})", names.join(", "));
            list = Some(names);
        }
        if exact {
            self.facts.range_widths.push((alias.clone(), cols.len()));
        }
        self.facts.ranges.push((alias.clone(), list));
        (
            format!(
                "{}({sub}) AS {alias}{list_sql}",
                if lateral { "LATERAL " } else { "" }
            ),
            vec![RangeItem { name: alias, cols }],
        )
    }

    /// `left JOIN right ...`; `on_probe` forces an ON clause naming an earlier item's column.
    fn join(&mut self, depth: usize, on_probe: bool) -> (String, Vec<RangeItem>) {
        // Columns of FROM entries before this join (comma-separated): an ON clause cannot
        // see them, so a bare name of theirs is an outer column or an error.
        let mut earlier: Vec<String> = self
            .scopes
            .last()
            .into_iter()
            .flatten()
            .flat_map(|i| i.cols.iter().filter(|c| c.known).map(|c| c.name.clone()))
            .collect();
        // Best when an outer query level has a column of that name (PostgreSQL binds it).
        let outer = self.outer_column_names(None);
        if earlier.iter().any(|n| outer.contains(n)) {
            earlier.retain(|n| outer.contains(n));
        }
        let (left, left_items) = self.range_entry_inner(depth, false);
        if let Some(scope) = self.scopes.last_mut() {
            scope.extend(left_items.clone());
        }
        let (right, right_items) = self.range_entry_inner(depth, false);
        if let Some(scope) = self.scopes.last_mut() {
            scope.extend(right_items.clone());
        }
        let kind = *self
            .rng
            .pick(&["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]);
        let sql = match if on_probe { 3 } else { self.rng.below(4) } {
            0 => {
                self.tags.insert("join-using");
                let common: Vec<String> = left_items
                    .iter()
                    .flat_map(|i| i.cols.iter().map(|c| c.name.clone()))
                    .filter(|n| {
                        right_items
                            .iter()
                            .any(|i| i.cols.iter().any(|c| &c.name == n))
                    })
                    .collect();
                let key = if common.is_empty() {
                    self.rng.pick(&all_column_names()).to_string()
                } else {
                    self.rng.pick(&common).clone()
                };
                format!("{left} {kind} {right} USING ({key})")
            }
            1 => {
                self.tags.insert("join-natural");
                format!("{left} NATURAL {kind} {right}")
            }
            2 => {
                self.tags.insert("join-cross");
                format!("{left} CROSS JOIN {right}")
            }
            _ => {
                self.tags.insert("join-on");
                let own: Vec<&String> = left_items
                    .iter()
                    .chain(&right_items)
                    .flat_map(|i| i.cols.iter().map(|c| &c.name))
                    .collect();
                let invisible: Vec<String> = earlier
                    .iter()
                    .filter(|n| !own.contains(n))
                    .cloned()
                    .collect();
                let p = if !invisible.is_empty() && (on_probe || self.rng.chance(50)) {
                    self.tags.insert("join-on-earlier-name");
                    format!("{} IS NOT NULL", self.rng.pick(&invisible))
                } else {
                    self.pred(depth)
                };
                format!("{left} {kind} {right} ON {p}")
            }
        };
        // The caller registers the items again as one entry list: take them back out.
        if let Some(scope) = self.scopes.last_mut() {
            let n = left_items.len() + right_items.len();
            let keep = scope.len().saturating_sub(n);
            scope.truncate(keep);
        }
        let mut items = left_items;
        items.extend(right_items);
        (sql, items)
    }

    /// A column reference of (roughly) type `ty` from some visible level.
    fn col_ref(&mut self, ty: Ty, outer_ok: bool) -> String {
        let levels: Vec<usize> = (0..self.scopes.len())
            .filter(|&l| !self.scopes[l].is_empty())
            .collect();
        if levels.is_empty() || self.rng.chance(3) {
            // A name from nowhere in particular: an outer column, a whole row, or an error.
            self.tags.insert("free-name");
            return if self.rng.chance(50) {
                self.rng.pick(&all_column_names()).to_string()
            } else {
                self.rng.pick(RANGE_ALIASES).to_string()
            };
        }
        let current = *levels.last().unwrap_or(&0);
        let level = if outer_ok && levels.len() > 1 && self.rng.chance(35) {
            self.tags.insert("outer-reference");
            levels[self.rng.below(levels.len() - 1)]
        } else {
            current
        };
        let scope = self.scopes[level].clone();
        let item = &scope[self.rng.below(scope.len())];
        if self.rng.chance(6) {
            // The bare name of a range variable: a whole row, unless some enclosing
            // scope has a column of that name.
            self.tags.insert("bare-range-name");
            return item.name.clone();
        }
        let known_only = self.rng.chance(97);
        let typed: Vec<&Col> = item
            .cols
            .iter()
            .filter(|c| c.ty == ty && (c.known || !known_only))
            .collect();
        let col = if typed.is_empty() || self.rng.chance(4) {
            match item.cols.get(self.rng.below(item.cols.len().max(1))) {
                Some(c) => c.clone(),
                None => return item.name.clone(),
            }
        } else {
            typed[self.rng.below(typed.len())].clone()
        };
        // Unqualified mostly where the name is unique at its level (else it is ambiguous).
        let unique = scope
            .iter()
            .flat_map(|i| i.cols.iter())
            .filter(|c| c.name == col.name)
            .count()
            == 1;
        if self.rng.chance(if unique { 40 } else { 85 }) {
            self.tags.insert("qualified-reference");
            format!("{}.{}", item.name, col.name)
        } else {
            self.tags.insert("unqualified-reference");
            col.name
        }
    }

    /// A value expression of (roughly) type `ty`.
    fn expr(&mut self, ty: Ty, depth: usize) -> String {
        let roll = self.rng.below(100);
        match roll {
            0..=49 => self.col_ref(ty, true),
            50..=54 => match ty {
                Ty::Int => self.rng.below(10).to_string(),
                Ty::Text => "'k'".to_string(),
            },
            55..=60 => {
                self.tags.insert("cast");
                let other = self.col_ref(if ty == Ty::Int { Ty::Text } else { Ty::Int }, true);
                match ty {
                    Ty::Int => format!("length({other}::text)"),
                    Ty::Text => format!("{other}::text"),
                }
            }
            61..=66 => {
                self.tags.insert("function");
                let inner = self.col_ref(Ty::Text, true);
                match ty {
                    Ty::Int => format!("length({inner})"),
                    Ty::Text => format!("{}({inner})", self.rng.pick(&["lower", "upper"])),
                }
            }
            67..=70 => {
                self.tags.insert("case");
                let p = self.pred(depth + 1);
                let a = self.col_ref(ty, true);
                let b = self.col_ref(ty, true);
                format!("CASE WHEN {p} THEN {a} ELSE {b} END")
            }
            71..=73 => {
                self.tags.insert("coalesce");
                let a = self.col_ref(ty, true);
                let b = self.col_ref(ty, true);
                format!("coalesce({a}, {b})")
            }
            74..=76 if ty == Ty::Int => {
                let a = self.col_ref(Ty::Int, true);
                format!("{a} + 1")
            }
            77..=79 => {
                self.tags.insert("whole-row");
                let r = self.col_ref(ty, true);
                let base = r.split('.').next().unwrap_or(&r).to_string();
                match ty {
                    Ty::Int => format!("length({base}::text)"),
                    Ty::Text => format!("{base}::text"),
                }
            }
            80..=85 => self.named_expr(ty, depth),
            86.. if depth < 3 && self.spend(1) => self.scalar_subquery(ty, depth),
            _ => self.col_ref(ty, true),
        }
    }

    /// Shapes whose output name PostgreSQL derives in its own way (FigureColname).
    fn named_expr(&mut self, ty: Ty, depth: usize) -> String {
        self.tags.insert("figure-colname");
        let a = self.col_ref(ty, true);
        match (ty, self.rng.below(8)) {
            (Ty::Text, 0) => "'k'::text".to_string(),
            (Ty::Int, 0) => "1::integer".to_string(),
            (_, 1) => {
                let b = self.col_ref(ty, true);
                format!("nullif({a}, {b})")
            }
            (_, 2) => {
                let b = self.col_ref(ty, true);
                format!("greatest({a}, {b})")
            }
            (_, 3) => format!("(({a}))"),
            (_, 4) => {
                let p = self.pred(depth + 1);
                format!("CASE WHEN {p} THEN {a} END")
            }
            (Ty::Int, 5) => format!("-{a}"),
            (Ty::Text, 5) => format!("{a}::text::text"),
            (Ty::Int, 6) => format!("{a}::text::integer"),
            (Ty::Text, 6) => format!("CAST({a} AS text)"),
            (Ty::Int, _) => format!("array_length(ARRAY[{a}], 1)"),
            (Ty::Text, _) => format!("(ROW({a}, 1))::text"),
        }
    }

    /// `(SELECT expr [FROM item] [WHERE p] [LIMIT 1])`, often correlated.
    fn scalar_subquery(&mut self, ty: Ty, depth: usize) -> String {
        self.tags.insert("scalar-subquery");
        self.scopes.push(Vec::new());
        let probe = if self.rng.chance(25) {
            self.shadow_probe(Some(ty))
        } else {
            None
        };
        let from = if probe.is_none() && self.rng.chance(30) {
            None
        } else {
            Some(self.range_entry(depth + 1))
        };
        self.forced_alias = None;
        let e = match probe {
            Some(name) => name,
            None => self.expr(ty, depth + 1),
        };
        let alias = if self.rng.chance(40) {
            self.tags.insert("scalar-subquery-alias");
            format!(" AS {}", self.rng.pick(OUT_NAMES))
        } else {
            String::new()
        };
        let mut sql = format!("(SELECT {e}{alias}");
        if let Some(from) = from {
            sql.push_str(&format!(" FROM {from}"));
            if self.rng.chance(40) {
                let p = self.pred(depth + 1);
                sql.push_str(&format!(" WHERE {p}"));
            }
            sql.push_str(" LIMIT 1");
        }
        sql.push(')');
        self.scopes.pop();
        sql
    }

    /// A boolean condition.
    fn pred(&mut self, depth: usize) -> String {
        match self.rng.below(100) {
            0..=39 => {
                let ty = self.pick_ty();
                let a = self.col_ref(ty, true);
                let b = if self.rng.chance(50) {
                    self.col_ref(ty, true)
                } else {
                    match ty {
                        Ty::Int => "1".to_string(),
                        Ty::Text => "'k'".to_string(),
                    }
                };
                format!("{a} = {b}")
            }
            40..=54 => {
                let ty = self.pick_ty();
                let a = self.col_ref(ty, true);
                format!("{a} IS NOT NULL")
            }
            55..=69 if depth < 3 && self.spend(1) => {
                self.tags.insert("exists");
                self.scopes.push(Vec::new());
                let from = self.range_entry(depth + 1);
                let p = self.pred(depth + 1);
                self.scopes.pop();
                format!("EXISTS (SELECT 1 FROM {from} WHERE {p})")
            }
            70..=84 if depth < 3 && self.spend(1) => {
                self.tags.insert("in-subquery");
                let ty = self.pick_ty();
                let a = self.col_ref(ty, true);
                let (sub, _) = self.select(depth + 1, Some(&[ty]), false);
                format!("{a} IN ({sub})")
            }
            85.. if self.spend(1) => {
                let a = self.pred(depth + 1);
                let b = self.pred(depth + 1);
                format!("({a} AND {b})")
            }
            _ => {
                let ty = self.pick_ty();
                let a = self.col_ref(ty, true);
                format!("{a} IS NULL")
            }
        }
    }
}

/// The generator's guess of an unaliased item's name (only used to generate later
/// names): a column reference's column, a function's name; `None` when unsure.
fn guess_name(expr: &str) -> Option<String> {
    let simple = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    let parts: Vec<&str> = expr.split('.').collect();
    if parts.iter().all(|p| simple(p)) {
        return parts.last().map(|p| p.to_string());
    }
    let head = expr.split('(').next().unwrap_or("");
    (simple(head) && expr.ends_with(')') && !expr.contains("::")).then(|| head.to_string())
}

/// Identifiers that occur in `text` (outside string literals), keywords and functions
/// excluded: the names an ORDER BY or GROUP BY might be meant to match.
fn words_in(text: &str) -> Vec<String> {
    const SKIP: &[&str] = &[
        "select",
        "from",
        "where",
        "as",
        "and",
        "or",
        "not",
        "null",
        "is",
        "case",
        "when",
        "then",
        "else",
        "end",
        "limit",
        "exists",
        "in",
        "text",
        "integer",
        "lateral",
        "join",
        "on",
        "using",
        "natural",
        "left",
        "right",
        "full",
        "cross",
        "distinct",
        "union",
        "all",
        "intersect",
        "except",
        "order",
        "by",
        "group",
        "having",
        "desc",
        "false",
        "true",
        "with",
        "recursive",
        "k",
    ];
    let mut words: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            !w.is_empty()
                && !w.chars().next().is_some_and(|c| c.is_ascii_digit())
                && !SKIP.contains(&w.to_ascii_lowercase().as_str())
        })
        .map(str::to_string)
        .collect();
    words.sort();
    words.dedup();
    words
}

fn contains_word(haystack: &str, word: &str) -> bool {
    haystack
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w == word)
}
