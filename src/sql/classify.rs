//! Statement classification: read, write, or a forbidden kind.
//!
//! The match over [`Statement`] names every variant and has no catch-all arm,
//! so a sqlparser upgrade that adds a statement kind fails to compile here
//! instead of silently classifying it. Forbidden kinds are grouped by the
//! reason they are refused. After the top-level match, [`crate::sql::nesting`]
//! sweeps every nested node for DML below the top level, locking clauses and
//! `SELECT ... INTO`.

use serde::Serialize;
use sqlparser::ast::{Expr, SetExpr, Statement, Value};

pub use crate::sql::forbidden::ForbiddenKind;
use crate::sql::nesting;

/// What a statement is allowed to be on this gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StatementClass {
    /// Runs on the read path.
    Read,
    /// Queued for approval; never executed on the read path.
    Write,
    /// Refused, with the reason group.
    Forbidden(ForbiddenKind),
}

/// How an `EXPLAIN` wraps the classified statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExplainMode {
    /// `ANALYZE` executes the inner statement.
    pub analyze: bool,
}

/// The result of classification.
#[derive(Debug, Clone)]
pub struct Classification<'a> {
    pub class: StatementClass,
    /// The statement to resolve: the input itself, or the statement inside EXPLAIN.
    pub target: &'a Statement,
    /// Set when the input is an EXPLAIN; its output is a plan, not rows of data.
    pub explain: Option<ExplainMode>,
}

/// Classifies one parsed statement, including a sweep of every nested node.
pub fn classify(statement: &Statement) -> Classification<'_> {
    let (class, target, explain) = match statement {
        Statement::Explain {
            describe_alias,
            analyze,
            verbose: _,
            query_plan,
            estimate,
            statement: inner,
            format: _,
            options,
        } => {
            let analyze = match explain_analyze(*analyze, options.as_deref()) {
                Some(a) if !*query_plan && !*estimate && is_explain_keyword(describe_alias) => a,
                _ => return forbidden(statement, ForbiddenKind::Unsupported),
            };
            let inner_class = match inner.as_ref() {
                Statement::Explain { .. } => {
                    StatementClass::Forbidden(ForbiddenKind::NestedExplain)
                }
                other => top_level_class(other),
            };
            let class = match inner_class {
                StatementClass::Write if analyze => StatementClass::Write,
                StatementClass::Write | StatementClass::Read => StatementClass::Read,
                forbidden @ StatementClass::Forbidden(_) => forbidden,
            };
            (class, inner.as_ref(), Some(ExplainMode { analyze }))
        }
        other => (top_level_class(other), other, None),
    };
    let class = match class {
        StatementClass::Forbidden(_) => class,
        _ => match nesting::sweep(target) {
            Some(kind) => StatementClass::Forbidden(kind),
            None => class,
        },
    };
    Classification {
        class,
        target,
        explain,
    }
}

fn forbidden(statement: &Statement, kind: ForbiddenKind) -> Classification<'_> {
    Classification {
        class: StatementClass::Forbidden(kind),
        target: statement,
        explain: None,
    }
}

fn is_explain_keyword(alias: &sqlparser::ast::DescribeAlias) -> bool {
    matches!(alias, sqlparser::ast::DescribeAlias::Explain)
}

/// EXPLAIN options PostgreSQL 15 accepts besides ANALYZE (in either spelling).
const EXPLAIN_OPTIONS: &[&str] = &[
    "verbose", "costs", "settings", "buffers", "wal", "timing", "summary", "format",
];

/// Whether EXPLAIN options turn on ANALYZE (PostgreSQL accepts the British
/// `ANALYSE` too); `None` for an unrecognised option or value, which refuses.
fn explain_analyze(flag: bool, options: Option<&[sqlparser::ast::UtilityOption]>) -> Option<bool> {
    let mut analyze = flag;
    for option in options.unwrap_or_default() {
        let name = option.name.value.to_ascii_lowercase();
        if name != "analyze" && name != "analyse" {
            if !EXPLAIN_OPTIONS.contains(&name.as_str()) {
                return None;
            }
            continue;
        }
        analyze = match &option.arg {
            None => true,
            Some(Expr::Value(v)) => match &v.value {
                Value::Boolean(b) => *b,
                Value::Number(n, _) => n != "0",
                Value::SingleQuotedString(s) => truthy(s)?,
                _ => return None,
            },
            Some(Expr::Identifier(ident)) => truthy(&ident.value)?,
            Some(_) => return None,
        };
    }
    Some(analyze)
}

/// PostgreSQL's boolean option spellings; anything else is refused.
fn truthy(word: &str) -> Option<bool> {
    match word.to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" | "t" | "y" => Some(true),
        "false" | "off" | "no" | "0" | "f" | "n" => Some(false),
        _ => None,
    }
}

/// Whether a query is a write: DML as its body or in a top-level WITH.
fn query_class(query: &sqlparser::ast::Query) -> StatementClass {
    let dml_body = is_dml_body(&query.body);
    let dml_cte = query
        .with
        .as_ref()
        .is_some_and(|w| w.cte_tables.iter().any(|cte| is_dml_body(&cte.query.body)));
    if dml_body || dml_cte {
        StatementClass::Write
    } else {
        StatementClass::Read
    }
}

fn is_dml_body(body: &SetExpr) -> bool {
    matches!(
        body,
        SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_)
    )
}

/// The exhaustive top-level match. No `_` arm: every variant is named.
fn top_level_class(statement: &Statement) -> StatementClass {
    use ForbiddenKind as K;
    use StatementClass::Forbidden as F;
    match statement {
        Statement::Query(query) => query_class(query),
        Statement::Insert { .. }
        | Statement::Update { .. }
        | Statement::Delete { .. }
        | Statement::Merge { .. } => StatementClass::Write,
        Statement::Explain { .. } => F(K::NestedExplain),
        Statement::CreateTable(create) => {
            if create.query.is_some() || create.temporary {
                F(K::TableCreation)
            } else {
                F(K::Ddl)
            }
        }
        Statement::Copy { .. }
        | Statement::CopyIntoSnowflake { .. }
        | Statement::Unload { .. }
        | Statement::LoadData { .. }
        | Statement::Directory { .. }
        | Statement::ExportData { .. }
        | Statement::List { .. }
        | Statement::Put { .. }
        | Statement::Remove { .. } => F(K::Copy),
        Statement::Call { .. }
        | Statement::Case { .. }
        | Statement::If { .. }
        | Statement::While { .. }
        | Statement::Raise { .. }
        | Statement::RaisError { .. }
        | Statement::Throw { .. }
        | Statement::Print { .. }
        | Statement::WaitFor { .. }
        | Statement::Return { .. }
        | Statement::Assert { .. } => F(K::Procedural),
        Statement::Prepare { .. } | Statement::Execute { .. } | Statement::Deallocate { .. } => {
            F(K::PreparedStatement)
        }
        Statement::Declare { .. }
        | Statement::Fetch { .. }
        | Statement::Close { .. }
        | Statement::Open { .. } => F(K::Cursor),
        Statement::StartTransaction { .. }
        | Statement::Commit { .. }
        | Statement::Rollback { .. }
        | Statement::Savepoint { .. }
        | Statement::ReleaseSavepoint { .. } => F(K::TransactionControl),
        Statement::Set { .. }
        | Statement::Reset { .. }
        | Statement::Discard { .. }
        | Statement::Use { .. }
        | Statement::AlterSession { .. }
        | Statement::Pragma { .. }
        | Statement::Flush { .. }
        | Statement::Kill { .. }
        | Statement::ExplainTable { .. }
        | Statement::ShowFunctions { .. }
        | Statement::ShowVariable { .. }
        | Statement::ShowStatus { .. }
        | Statement::ShowVariables { .. }
        | Statement::ShowCreate { .. }
        | Statement::ShowColumns { .. }
        | Statement::ShowCatalogs { .. }
        | Statement::ShowDatabases { .. }
        | Statement::ShowProcessList { .. }
        | Statement::ShowSchemas { .. }
        | Statement::ShowCharset { .. }
        | Statement::ShowObjects { .. }
        | Statement::ShowTables { .. }
        | Statement::ShowViews { .. }
        | Statement::ShowCollation { .. } => F(K::SessionState),
        Statement::LISTEN { .. } | Statement::UNLISTEN { .. } | Statement::NOTIFY { .. } => {
            F(K::Notification)
        }
        Statement::Lock { .. } | Statement::LockTables { .. } | Statement::UnlockTables => {
            F(K::LockTable)
        }
        Statement::Analyze { .. }
        | Statement::Vacuum { .. }
        | Statement::RefreshMaterializedView { .. }
        | Statement::OptimizeTable { .. }
        | Statement::Msck { .. }
        | Statement::Cache { .. }
        | Statement::UNCache { .. } => F(K::Maintenance),
        Statement::Truncate { .. } => F(K::Truncate),
        Statement::Comment { .. } => F(K::Comment),
        Statement::Grant { .. }
        | Statement::GrantRole { .. }
        | Statement::Deny { .. }
        | Statement::Revoke { .. }
        | Statement::RevokeRole { .. }
        | Statement::AlterDefaultPrivileges { .. }
        | Statement::CreateRole { .. }
        | Statement::AlterRole { .. }
        | Statement::CreateUser { .. }
        | Statement::AlterUser { .. }
        | Statement::CreatePolicy { .. }
        | Statement::AlterPolicy { .. }
        | Statement::DropPolicy { .. } => F(K::Dcl),
        Statement::Install { .. }
        | Statement::Load { .. }
        | Statement::CreateExtension { .. }
        | Statement::DropExtension { .. }
        | Statement::CreateServer { .. }
        | Statement::CreateForeignDataWrapper { .. }
        | Statement::CreateUserMapping { .. }
        | Statement::CreateForeignTable { .. }
        | Statement::CreateSecret { .. }
        | Statement::DropSecret { .. }
        | Statement::CreateConnector { .. }
        | Statement::AlterConnector { .. }
        | Statement::DropConnector { .. }
        | Statement::CreateStage { .. }
        | Statement::CreateFileFormat { .. }
        | Statement::CreateWarehouse { .. }
        | Statement::AttachDatabase { .. }
        | Statement::AttachDuckDBDatabase { .. }
        | Statement::DetachDuckDBDatabase { .. } => F(K::ServerControl),
        Statement::CreateView { .. }
        | Statement::CreateVirtualTable { .. }
        | Statement::CreateIndex { .. }
        | Statement::CreateRule { .. }
        | Statement::CreateOperator { .. }
        | Statement::CreateOperatorFamily { .. }
        | Statement::CreateOperatorClass { .. }
        | Statement::CreateTextSearch { .. }
        | Statement::CreateAggregate { .. }
        | Statement::CreateCollation { .. }
        | Statement::CreateSchema { .. }
        | Statement::CreateDatabase { .. }
        | Statement::CreateFunction { .. }
        | Statement::CreateTrigger { .. }
        | Statement::CreateProcedure { .. }
        | Statement::CreateMacro { .. }
        | Statement::CreateSequence { .. }
        | Statement::CreateDomain { .. }
        | Statement::CreateType { .. }
        | Statement::AlterTable { .. }
        | Statement::AlterSchema { .. }
        | Statement::AlterIndex { .. }
        | Statement::AlterView { .. }
        | Statement::AlterFunction { .. }
        | Statement::AlterType { .. }
        | Statement::AlterCollation { .. }
        | Statement::AlterOperator { .. }
        | Statement::AlterOperatorFamily { .. }
        | Statement::AlterOperatorClass { .. }
        | Statement::AlterTextSearch { .. }
        | Statement::AlterTrigger { .. }
        | Statement::Drop { .. }
        | Statement::DropFunction { .. }
        | Statement::DropDomain { .. }
        | Statement::DropProcedure { .. }
        | Statement::DropRule { .. }
        | Statement::DropTrigger { .. }
        | Statement::DropOperator { .. }
        | Statement::DropOperatorFamily { .. }
        | Statement::DropOperatorClass { .. }
        | Statement::RenameTable { .. } => F(K::Ddl),
    }
}
