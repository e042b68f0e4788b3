//! FROM items: catalog relations, CTEs, derived tables, allowlisted table
//! functions, and joins with ON, USING and NATURAL.
//!
//! USING and NATURAL join keys are resolved from the catalog (or the derived
//! table's column names), recorded as join uses on both sides, and merged into
//! one visible column, as PostgreSQL does for `*` expansion.

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, JoinConstraint, JoinOperator, ObjectName, TableAlias,
    TableFactor, TableFunctionArgs, TableWithJoins,
};

use super::query::alias_names;
use super::scope::{lookup_cte, rename, Column, FromItem, RangeVar};
use super::{unsupported, Resolver};
use crate::sql::catalog::{is_temp_schema, CatalogRelation};
use crate::sql::error::SqlError;
use crate::sql::functions::{resolve, Entry, Kinds, Output};
use crate::sql::ident::{display_name, fold, fold_object_name};
use crate::sql::lineage::{ColumnRef, Lineage, RelationRef, Scan, UseKind};

impl Resolver<'_> {
    /// Resolves one comma-separated FROM element with its joins.
    pub(super) fn table_with_joins(
        &mut self,
        table: &TableWithJoins,
    ) -> Result<FromItem, SqlError> {
        let mut left = self.table_factor(&table.relation, None)?;
        for join in &table.joins {
            if join.global {
                return unsupported("GLOBAL JOIN");
            }
            let (JoinOperator::Join(constraint)
            | JoinOperator::Inner(constraint)
            | JoinOperator::Left(constraint)
            | JoinOperator::LeftOuter(constraint)
            | JoinOperator::Right(constraint)
            | JoinOperator::RightOuter(constraint)
            | JoinOperator::FullOuter(constraint)
            | JoinOperator::CrossJoin(constraint)) = &join.join_operator
            else {
                return unsupported("This join type");
            };
            let right = self.table_factor(&join.relation, Some(&left))?;
            left = self.join(left, right, constraint)?;
        }
        Ok(left)
    }

    fn join(
        &mut self,
        left: FromItem,
        right: FromItem,
        constraint: &JoinConstraint,
    ) -> Result<FromItem, SqlError> {
        let keys = match constraint {
            JoinConstraint::None => Vec::new(),
            JoinConstraint::On(on) => {
                // The ON condition sees both sides of this join and the outer
                // query levels, but not the other items of the same FROM
                // clause (PostgreSQL replaces the namespace while it
                // transforms ON). The joined item is moved into a temporary
                // level and taken back, never copied.
                let mut joined = left;
                joined.extend(right);
                return self.with_from_hidden(|r| {
                    r.levels.push(super::scope::Level::new(joined));
                    let checked = r.predicate(on, UseKind::Join);
                    let level = r.levels.pop();
                    checked?;
                    Ok(level.map(|l| l.from).unwrap_or_default())
                });
            }
            JoinConstraint::Using(names) => names
                .iter()
                .map(|name| match fold_object_name(name)?.as_slice() {
                    [single] => Ok(single.clone()),
                    _ => unsupported("A qualified USING column"),
                })
                .collect::<Result<Vec<_>, _>>()?,
            JoinConstraint::Natural => {
                let mut keys: Vec<String> = Vec::new();
                for col in &left.columns {
                    if right.columns.iter().any(|c| c.name == col.name) && !keys.contains(&col.name)
                    {
                        keys.push(col.name.clone());
                    }
                }
                keys
            }
            JoinConstraint::UsingAlias(..) => return unsupported("USING ... AS"),
        };
        if keys.is_empty() {
            let mut joined = left;
            joined.extend(right);
            return Ok(joined);
        }
        let mut merged = Vec::new();
        for key in &keys {
            let l = single_column(&left.columns, key)?;
            let r = single_column(&right.columns, key)?;
            self.consume(&l.lineage, UseKind::Join)?;
            self.consume(&r.lineage, UseKind::Join)?;
            let mut lineage = Lineage::clone(&l.lineage);
            lineage.merge(&r.lineage);
            merged.push(Column::new(key.clone(), lineage));
        }
        let rest = |cols: Vec<Column>| cols.into_iter().filter(|c| !keys.contains(&c.name));
        merged.extend(rest(left.columns));
        merged.extend(rest(right.columns));
        let mut range_vars = left.range_vars;
        range_vars.extend(right.range_vars);
        Ok(FromItem {
            range_vars,
            columns: merged,
        })
    }

    /// Resolves one FROM item; `left` is what a LATERAL item may see.
    fn table_factor(
        &mut self,
        factor: &TableFactor,
        left: Option<&FromItem>,
    ) -> Result<FromItem, SqlError> {
        self.analysis.from_items += 1;
        match factor {
            TableFactor::Table {
                name,
                alias,
                args,
                with_hints,
                version,
                with_ordinality,
                partitions,
                json_path,
                sample,
                index_directives,
                inheritance: _,
            } => {
                if let Some(args) = args {
                    return self.table_function(
                        name,
                        args_list(args)?,
                        alias.as_ref(),
                        *with_ordinality,
                        left,
                    );
                }
                if !with_hints.is_empty()
                    || version.is_some()
                    || *with_ordinality
                    || !partitions.is_empty()
                    || json_path.is_some()
                    || sample.is_some()
                    || !index_directives.is_empty()
                {
                    return unsupported("This table modifier");
                }
                self.named_relation(name, alias.as_ref(), factor)
            }
            TableFactor::Derived {
                lateral,
                subquery,
                alias,
                sample,
            } => {
                if sample.is_some() {
                    return unsupported("TABLESAMPLE");
                }
                let mut columns = if *lateral {
                    let visible = left.cloned().unwrap_or_default();
                    self.with_level(visible, |r| r.query(subquery))?
                } else {
                    self.with_from_hidden(|r| r.query(subquery))?
                };
                let name = match alias {
                    Some(alias) => {
                        rename(
                            &mut columns,
                            &alias_names(&alias.columns)?,
                            "The subquery alias",
                        )?;
                        fold(&alias.name)?
                    }
                    None => String::new(),
                };
                Ok(FromItem::single(RangeVar {
                    name,
                    schema: None,
                    columns,
                    relation: None,
                }))
            }
            TableFactor::Function {
                lateral: _,
                name,
                args,
                with_ordinality,
                alias,
            } => self.table_function(name, args, alias.as_ref(), *with_ordinality, left),
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                let item = self.table_with_joins(table_with_joins)?;
                match alias {
                    None => Ok(item),
                    Some(alias) => {
                        let mut columns = item.columns;
                        rename(
                            &mut columns,
                            &alias_names(&alias.columns)?,
                            "The join alias",
                        )?;
                        Ok(FromItem::single(RangeVar {
                            name: fold(&alias.name)?,
                            schema: None,
                            columns,
                            relation: None,
                        }))
                    }
                }
            }
            TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_offset_alias: None,
                with_ordinality,
            } => self.unnest(array_exprs, alias.as_ref(), *with_ordinality, left),
            TableFactor::UNNEST { .. } => unsupported("UNNEST WITH OFFSET"),
            TableFactor::JsonTable { .. } => not_allowed("json_table"),
            TableFactor::XmlTable { .. } => not_allowed("xmltable"),
            TableFactor::TableFunction { .. }
            | TableFactor::OpenJsonTable { .. }
            | TableFactor::Pivot { .. }
            | TableFactor::Unpivot { .. }
            | TableFactor::UnpivotExpr { .. }
            | TableFactor::MatchRecognize { .. }
            | TableFactor::SemanticView { .. } => unsupported("This FROM item"),
        }
    }

    /// A CTE (unqualified names, innermost first) or a catalog relation, read by the FROM
    /// item `factor`.
    fn named_relation(
        &mut self,
        name: &ObjectName,
        alias: Option<&TableAlias>,
        factor: &TableFactor,
    ) -> Result<FromItem, SqlError> {
        let parts = fold_object_name(name)?;
        if let [single] = parts.as_slice() {
            if let Some(cte) = lookup_cte(&self.levels, single) {
                let columns = cte.columns.clone();
                return alias_range_var(single.clone(), None, columns, None, alias);
            }
        }
        let relation = self.catalog_relation(&parts)?;
        let rel = RelationRef {
            schema: relation.schema.clone(),
            name: relation.name.clone(),
        };
        let columns = relation_columns(relation);
        let (schema, table) = (relation.schema.clone(), relation.name.clone());
        self.analysis.relations_read.insert(rel.clone());
        self.analysis.scans.push(Scan {
            position: self.positions.get(&std::ptr::from_ref(factor)).copied(),
            relation: rel.clone(),
        });
        alias_range_var(table, Some(schema), columns, Some(rel), alias)
    }

    /// Looks a folded relation name up in the catalog.
    pub(super) fn catalog_relation(&self, parts: &[String]) -> Result<&CatalogRelation, SqlError> {
        let found = match parts {
            [name] => self.catalog.resolve_unqualified(name),
            [schema, _] if is_temp_schema(schema) => {
                return Err(SqlError::TempSchema {
                    schema: display_name(&[schema]),
                })
            }
            [schema, name] => self.catalog.relation(schema, name),
            _ => None,
        };
        found.ok_or_else(|| SqlError::UnknownRelation {
            name: display_name(&parts.iter().map(String::as_str).collect::<Vec<_>>()),
        })
    }

    /// A set-returning function in FROM. Its arguments see the FROM items to its left (a
    /// function in FROM is implicitly LATERAL); its columns are its OUT parameters, or one
    /// named after the function (or the alias), each derived from every argument.
    fn table_function(
        &mut self,
        name: &ObjectName,
        args: &[FunctionArg],
        alias: Option<&TableAlias>,
        with_ordinality: bool,
        left: Option<&FromItem>,
    ) -> Result<FromItem, SqlError> {
        let parts = fold_object_name(name)?;
        let display = display_name(&parts.iter().map(String::as_str).collect::<Vec<_>>());
        let function = resolve(&parts).map_err(|r| SqlError::function_refused(display, &r))?;
        let exprs = args
            .iter()
            .map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Ok(expr),
                _ => unsupported("A named or wildcard argument"),
            })
            .collect::<Result<Vec<&Expr>, _>>()?;
        self.set_returning(function, &exprs, alias, with_ordinality, left)
    }

    /// `UNNEST(a, …)` in FROM, which the parser reports as its own item.
    pub(super) fn unnest(
        &mut self,
        array_exprs: &[Expr],
        alias: Option<&TableAlias>,
        with_ordinality: bool,
        left: Option<&FromItem>,
    ) -> Result<FromItem, SqlError> {
        let parts = ["unnest".to_string()];
        let function =
            resolve(&parts).map_err(|r| SqlError::function_refused("unnest".to_string(), &r))?;
        let exprs: Vec<&Expr> = array_exprs.iter().collect();
        self.set_returning(function, &exprs, alias, with_ordinality, left)
    }

    fn set_returning(
        &mut self,
        function: &'static Entry,
        exprs: &[&Expr],
        alias: Option<&TableAlias>,
        with_ordinality: bool,
        left: Option<&FromItem>,
    ) -> Result<FromItem, SqlError> {
        if !function.kinds.contains(Kinds::SET_RETURNING) {
            return Err(SqlError::FunctionMisuse {
                name: function.name.to_string(),
                problem: "does not return a set, so it cannot be a FROM item",
                hint: "call it in the select list",
            });
        }
        let names: Vec<String> = match function.output {
            Output::Value if function.name == "unnest" && exprs.len() > 1 => {
                vec![function.name.to_string(); exprs.len()]
            }
            Output::Value => vec![function.name.to_string()],
            Output::Columns(cols) => cols.iter().map(|c| (*c).to_string()).collect(),
            Output::Record => {
                return unsupported("A function returning record (with a column definition list)")
            }
        };
        if !function.deterministic {
            self.analysis.non_deterministic = true;
        }
        self.analysis.functions.insert(function.name.to_string());
        let visible = left.cloned().unwrap_or_default();
        let lineages = self.with_level(visible, |r| {
            exprs
                .iter()
                .map(|e| r.operand(e))
                .collect::<Result<Vec<_>, _>>()
        })?;
        let derived = Lineage::derived(&lineages);
        let scalar = matches!(function.output, Output::Value) && names.len() == 1;
        let mut columns: Vec<Column> = names
            .into_iter()
            .map(|n| Column::new(n, derived.clone()))
            .collect();
        if with_ordinality {
            columns.push(Column::new("ordinality".to_string(), Lineage::constant()));
        }
        let fallback = alias.map_or(Ok(function.name.to_string()), |a| fold(&a.name))?;
        let mut item = alias_range_var(function.name.to_string(), None, columns, None, alias)?;
        if let Some(rv) = item.range_vars.first_mut() {
            if scalar && alias.is_some_and(|a| a.columns.is_empty()) {
                // PostgreSQL names a scalar function's column after the alias.
                if let Some(col) = rv.columns.first_mut() {
                    col.name.clone_from(&fallback);
                }
                item.columns.clone_from(&rv.columns);
            }
        }
        Ok(item)
    }
}

/// A FROM form that names a function outside the catalogue (or of a refused family).
fn not_allowed<T>(name: &str) -> Result<T, SqlError> {
    let refused = match resolve(&[name.to_string()]) {
        Err(refused) => refused,
        Ok(_) => crate::sql::functions::Refused {
            family: crate::sql::functions::Family::NotInCatalogue,
            alternative: None,
        },
    };
    Err(SqlError::function_refused(name.to_string(), &refused))
}

fn args_list(args: &TableFunctionArgs) -> Result<&[FunctionArg], SqlError> {
    if args.settings.is_some() {
        return unsupported("Table function settings");
    }
    Ok(&args.args)
}

fn relation_columns(relation: &CatalogRelation) -> Vec<Column> {
    relation
        .columns
        .iter()
        .map(|c| {
            Column::new(
                c.name.clone(),
                Lineage::column(ColumnRef::new(&relation.schema, &relation.name, &c.name)),
            )
        })
        .collect()
}

/// Builds the range variable for a relation or CTE, applying an alias.
fn alias_range_var(
    name: String,
    schema: Option<String>,
    mut columns: Vec<Column>,
    relation: Option<RelationRef>,
    alias: Option<&TableAlias>,
) -> Result<FromItem, SqlError> {
    let (name, schema) = match alias {
        Some(alias) => {
            rename(
                &mut columns,
                &alias_names(&alias.columns)?,
                "The table alias",
            )?;
            (fold(&alias.name)?, None)
        }
        None => (name, schema),
    };
    Ok(FromItem::single(RangeVar {
        name,
        schema,
        columns,
        relation,
    }))
}

fn single_column<'a>(columns: &'a [Column], name: &str) -> Result<&'a Column, SqlError> {
    let mut hits = columns.iter().filter(|c| c.name == name);
    match (hits.next(), hits.next()) {
        (Some(col), None) => Ok(col),
        (Some(_), Some(_)) => Err(SqlError::AmbiguousColumn {
            name: display_name(&[name]),
        }),
        (None, _) => Err(SqlError::UnknownColumn {
            name: display_name(&[name]),
        }),
    }
}
