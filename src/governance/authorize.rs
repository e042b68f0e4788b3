//! Authorization and masking checks over a resolved statement.
//!
//! Every relation read must be readable as a whole, every referenced column
//! must be readable, every written column writable (and row deletes need a
//! table-level write). Then every use of a masked column must be one its rule
//! tolerates. Refusals name the table or column and what to do instead.

use crate::governance::access::{
    evaluate, AccessDecision, AccessProfile, AccessRequest, Action, Effect, RuleOrigin,
};
use crate::governance::redaction::{rule_for, strictest};
use crate::governance::verdict::{OutputColumn, Refusal, Step};
use crate::sql::lineage::{Analysis, ColumnRef, RelationRef, UseKind};

/// The allow statements used by a decision, deduplicated in first-use order.
#[derive(Debug, Default)]
pub struct DecidingRules(Vec<String>);

impl DecidingRules {
    fn push(&mut self, decision: &AccessDecision) {
        let text = decision.to_string();
        if !self.0.contains(&text) {
            self.0.push(text);
        }
    }

    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

type Authorized = (Vec<RelationRef>, Vec<RelationRef>, Vec<ColumnRef>);

/// Checks every read and write; returns tables read, tables written, columns written.
pub fn authorize(
    profile: &AccessProfile,
    analysis: &Analysis,
    rules: &mut DecidingRules,
) -> Result<Authorized, Refusal> {
    let mut tables_read: Vec<RelationRef> = analysis.relations_read.iter().cloned().collect();
    for rel in &analysis.relations_read {
        let decision = evaluate(
            profile,
            &request(Action::Read, &rel.schema, &rel.name, None),
        );
        check(&decision, rules, || {
            format!("Table {rel} is not readable by your roles on this source; query only tables that describe access lists.")
        })?;
    }
    for column in analysis.uses.keys() {
        let decision = evaluate(
            profile,
            &request(
                Action::Read,
                &column.schema,
                &column.table,
                Some(&column.column),
            ),
        );
        check(&decision, rules, || {
            format!("Column {column} is not readable by your roles on this source; remove it from the query.")
        })?;
        let rel = column.relation();
        if !tables_read.contains(&rel) {
            tables_read.push(rel);
        }
    }
    tables_read.sort();
    let mut tables_written = Vec::new();
    let mut columns_written = Vec::new();
    for (rel, writes) in &analysis.writes {
        if writes.deletes_rows || writes.columns.is_empty() {
            let decision = evaluate(
                profile,
                &request(Action::Write, &rel.schema, &rel.name, None),
            );
            check(&decision, rules, || {
                format!("Rows of {rel} cannot be changed or deleted by your roles on this source; target a table you may write.")
            })?;
        }
        for name in &writes.columns {
            let column = ColumnRef::new(&rel.schema, &rel.name, name);
            let decision = evaluate(
                profile,
                &request(Action::Write, &rel.schema, &rel.name, Some(name)),
            );
            check(&decision, rules, || {
                format!("Column {column} is not writable by your roles on this source; write only the columns you are granted.")
            })?;
            columns_written.push(column);
        }
        tables_written.push(rel.clone());
    }
    Ok((tables_read, tables_written, columns_written))
}

fn request<'a>(
    action: Action,
    schema: &'a str,
    table: &'a str,
    column: Option<&'a str>,
) -> AccessRequest<'a> {
    AccessRequest {
        action,
        schema,
        table,
        column,
    }
}

/// Turns a deny into a refusal (policy denies are the Policy step), records allows.
fn check(
    decision: &AccessDecision,
    rules: &mut DecidingRules,
    reason: impl FnOnce() -> String,
) -> Result<(), Refusal> {
    if decision.effect == Effect::Allow {
        rules.push(decision);
        return Ok(());
    }
    let (step, code, reason) = match &decision.origin {
        RuleOrigin::Policy(name) => {
            let base = reason();
            let reason = base.replacen(
                "by your roles on this source",
                &format!("under policy {name} on this source"),
                1,
            );
            (Step::Policy, "policy_denied", reason)
        }
        RuleOrigin::Role(_) | RuleOrigin::NoMatch(_) => {
            (Step::Authorize, "access_denied", reason())
        }
    };
    Err(Refusal {
        status: 403,
        step,
        code,
        rule: decision.to_string(),
        reason,
    })
}

/// Refuses any use of a masked column its rule does not tolerate.
pub fn check_masks(profile: &AccessProfile, analysis: &Analysis) -> Result<(), Refusal> {
    for (column, kinds) in &analysis.uses {
        let Some(rule) = rule_for(&profile.redactions, column) else {
            continue;
        };
        if let Some(kind) = kinds.iter().find(|k| !rule.permits(**k)) {
            let advice = match kind {
                UseKind::Filter | UseKind::Join => "filter or join on another column instead",
                UseKind::WriteSource => "write a literal value instead of copying it",
                UseKind::WholeRow => "name the columns you need instead of the whole row",
                _ => "select it only as a plain column",
            };
            return Err(Refusal {
                status: 403,
                step: Step::Redaction,
                code: "masked_column_misuse",
                rule: format!("redaction {column}"),
                reason: format!(
                    "Column {column} is masked and cannot be {}; {advice}.",
                    kind.phrase()
                ),
            });
        }
    }
    Ok(())
}

/// Output columns with sources and the strictest mask among masked sources.
pub fn output_columns(profile: &AccessProfile, analysis: &Analysis) -> Vec<OutputColumn> {
    analysis
        .outputs
        .iter()
        .map(|out| OutputColumn {
            name: out.name.clone(),
            sources: out.lineage.sources.iter().cloned().collect(),
            mask: strictest(
                out.lineage
                    .sources
                    .iter()
                    .filter_map(|s| rule_for(&profile.redactions, s)),
            )
            .cloned(),
        })
        .collect()
}
