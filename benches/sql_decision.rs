//! Cost of one decision (parse + classify + resolve + authorize + masks) for
//! a point query, a 5-table join and a ~60-line analytical query over a
//! synthetic catalog of 200 relations.
//!
//! Each statement is decided as agents send it, with new literals on every
//! call (`{n}` in the texts below takes a new number each time; the point
//! query also as `$1`): `<name>` without the decision memo, and
//! `<name>/remembered` through a warm memo, where only the first text of a
//! shape is parsed and resolved.
//!
//! `policy_rules/*`: the same point query decided with 0, 10 and 100 conditional policy
//! rules, and with 10 matching report-only rules (`bench_policy_rules`).
//!
//! `policy_replay/record`: one recorded call replayed as `policy simulate` replays it (decided
//! under the live profile and under a candidate, compared, counted in the report), against
//! `policy_rules/10` (one live decision of the same call) in the same run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use interlock::call::replay_basis::ReplayBasis;
use interlock::control::sources::{PreviewMode, Propagation, Source, SourceKind, TlsMode};
use interlock::governance::condition::{CallFacts, Condition};
use interlock::governance::decision::decide_call;
use interlock::governance::effect::CallEffect;
use interlock::governance::{
    decide_remembering, AccessProfile, AccessStatement, MaskStrategy, Policy, PolicyRule,
    RedactionRule, Rule, RuleMode, SourceRole, SqlLimits,
};
use interlock::policy_lab::judge::{Judge, RecordedCall};
use interlock::policy_lab::report::Report;
use interlock::sql::memo::{ShapeMemo, DEFAULT_MEMO_BYTES};
use interlock::sql::{Catalog, CatalogColumn, CatalogRelation, RelationKind};

fn catalog() -> Catalog {
    let mut relations = Vec::new();
    for i in 0..200 {
        let mut columns = vec![
            CatalogColumn {
                name: "id".into(),
                data_type: "bigint".into(),
            },
            CatalogColumn {
                name: "customer_id".into(),
                data_type: "bigint".into(),
            },
            CatalogColumn {
                name: "created_at".into(),
                data_type: "timestamp".into(),
            },
            CatalogColumn {
                name: "amount".into(),
                data_type: "numeric".into(),
            },
            CatalogColumn {
                name: "status".into(),
                data_type: "text".into(),
            },
        ];
        for c in 0..15 {
            columns.push(CatalogColumn {
                name: format!("attr_{c}"),
                data_type: "text".into(),
            });
        }
        relations.push(CatalogRelation {
            schema: "sales".into(),
            name: format!("t{i}"),
            kind: RelationKind::Table,
            columns,
        });
    }
    let customer_cols = ["id", "name", "email", "region", "segment", "created_at"];
    relations.push(CatalogRelation {
        schema: "sales".into(),
        name: "customers".into(),
        kind: RelationKind::Table,
        columns: customer_cols
            .iter()
            .map(|n| CatalogColumn {
                name: n.to_string(),
                data_type: "text".into(),
            })
            .collect(),
    });
    Catalog::new(relations, vec!["sales".into()])
}

fn profile() -> AccessProfile {
    let statement = |s: &str| {
        s.parse::<AccessStatement>()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    AccessProfile {
        roles: vec![SourceRole {
            name: "analyst".into(),
            statements: vec![
                statement("allow read sales.*"),
                statement("allow write sales.t1"),
            ],
        }],
        policies: vec![Policy {
            name: "pii".into(),
            rules: vec![
                PolicyRule::Deny {
                    action: interlock::governance::Action::Read,
                    resource: "sales.customers.name"
                        .parse()
                        .unwrap_or_else(|e| panic!("{e}")),
                },
                PolicyRule::MaxRows(10_000),
            ]
            .into_iter()
            .map(Into::into)
            .collect(),
        }],
        redactions: vec![RedactionRule {
            schema: "sales".into(),
            table: "customers".into(),
            column: "email".into(),
            strategy: MaskStrategy::Hash,
            allow_filter: false,
        }],
    }
}

const POINT: &str = "SELECT id, status, amount FROM sales.t1 WHERE id = $1";

const POINT_LITERAL: &str = "SELECT id, status, amount FROM sales.t1 WHERE id = {n} AND {n} = {n}";

const JOIN5: &str = "SELECT a.id, b.amount, c.status, d.created_at, e.email \
    FROM sales.t1 a JOIN sales.t2 b ON b.customer_id = a.customer_id \
    JOIN sales.t3 c ON c.id = b.id LEFT JOIN sales.t4 d ON d.customer_id = c.customer_id \
    JOIN sales.customers e ON e.id::bigint = a.customer_id WHERE a.status = 'open-{n}' AND b.amount > {n} \
    ORDER BY a.id LIMIT 100";

const ANALYTICAL: &str = r#"
WITH recent AS (
    SELECT o.id, o.customer_id, o.created_at, o.amount, o.status
    FROM sales.t10 o
    WHERE o.created_at >= now() - INTERVAL '90 days'
      AND o.status IN ('paid', 'shipped', 'delivered')
),
returns AS (
    SELECT r.customer_id, count(*) AS returned, sum(r.amount) AS returned_amount
    FROM sales.t11 r
    WHERE r.status = 'returned' AND r.amount > {n}
    GROUP BY r.customer_id
),
per_customer AS (
    SELECT rc.customer_id,
           count(*) AS orders,
           sum(rc.amount) AS revenue,
           avg(rc.amount) AS avg_order,
           min(rc.created_at) AS first_order,
           max(rc.created_at) AS last_order
    FROM recent rc
    GROUP BY rc.customer_id
    HAVING count(*) >= 2
),
ranked AS (
    SELECT pc.customer_id,
           pc.orders,
           pc.revenue,
           pc.avg_order,
           pc.first_order,
           pc.last_order,
           rank() OVER (ORDER BY pc.revenue DESC) AS revenue_rank,
           row_number() OVER (PARTITION BY date_trunc('month', pc.last_order) ORDER BY pc.orders DESC) AS month_rank,
           lag(pc.revenue) OVER (ORDER BY pc.revenue DESC) AS prev_revenue
    FROM per_customer pc
)
SELECT c.id,
       c.email,
       c.region,
       c.segment,
       rk.orders,
       round(rk.revenue, 2) AS revenue,
       round(rk.avg_order, 2) AS avg_order,
       coalesce(rt.returned, 0) AS returned,
       coalesce(rt.returned_amount, 0) AS returned_amount,
       CASE WHEN rk.revenue_rank <= 10 THEN 'top'
            WHEN rk.revenue_rank <= 100 THEN 'high'
            ELSE 'other' END AS tier,
       rk.month_rank,
       rk.revenue - coalesce(rk.prev_revenue, rk.revenue) AS gap,
       EXTRACT(DAY FROM rk.last_order - rk.first_order) AS active_days
FROM ranked rk
JOIN sales.customers c ON c.id::bigint = rk.customer_id
LEFT JOIN returns rt ON rt.customer_id = rk.customer_id
WHERE rk.orders > {n}
  AND c.segment <> 'internal-{n}'
  AND EXISTS (SELECT 1 FROM sales.t12 s WHERE s.customer_id = rk.customer_id AND s.status = 'active')
ORDER BY rk.revenue_rank, c.id
LIMIT 500
"#;

/// Texts of `template` with `{n}` replaced by a new number in each.
fn texts(template: &str) -> Vec<String> {
    (0..1024)
        .map(|i| template.replace("{n}", &(1000 + i * 7).to_string()))
        .collect()
}

fn bench(c: &mut Criterion) {
    let catalog = catalog();
    let profile = profile();
    let limits = SqlLimits::default();
    for (name, template, params) in [
        ("point_query", POINT, 1),
        ("point_query_literals", POINT_LITERAL, 0),
        ("join_5_tables", JOIN5, 0),
        ("analytical_60_lines", ANALYTICAL, 0),
    ] {
        let texts = texts(template);
        let memo = ShapeMemo::new(DEFAULT_MEMO_BYTES);
        for sql in &texts[..2] {
            let decision =
                decide_remembering(sql, params, &catalog, Some(&memo), &profile, &limits);
            assert!(
                decision.allowed().is_some(),
                "{name} refused: {:?}",
                decision.refusal()
            );
        }
        assert_eq!(memo.recalled(), 1, "{name}: the second text is recalled");
        for (label, memo) in [
            (name.to_string(), None),
            (format!("{name}/remembered"), Some(&memo)),
        ] {
            let mut next = texts.iter().cycle();
            c.bench_function(&label, |b| {
                b.iter(|| {
                    let sql = next.next().map_or("", String::as_str);
                    decide_remembering(
                        black_box(sql),
                        params,
                        black_box(&catalog),
                        memo,
                        black_box(&profile),
                        &limits,
                    )
                });
            });
        }
    }
}

/// A profile with `n` conditional rules (enforced, or report-only), conditions of the
/// kinds operators write: time windows, groups, claims and lineage facts. None holds for the
/// benchmark's call except the report-only ones, so the enforced answer is unchanged.
fn with_rules(n: usize, mode: RuleMode) -> AccessProfile {
    let conditions = [
        "statement.class == 'write' && 'sales.t1' in statement.tables_written && (request.hour < 0 || request.hour > 23)",
        "!('analyst' in caller.roles)",
        "caller.groups.exists(g, g.startsWith('contractor-'))",
        "has(caller.claims.department) && caller.claims.department == 'hr'",
        "statement.columns_read.exists(c, c.startsWith('sales.customers.ssn'))",
        "statement.explain && statement.analyze",
        "'pg_sleep' in statement.functions",
        "request.adapter == 'stdio' && caller.kind != 'operator'",
        "statement.row_cap > 1000000",
        "request.weekday == 9",
    ];
    let mut p = profile();
    p.policies.push(Policy {
        name: "conditional".into(),
        rules: (0..n)
            .map(|i| Rule {
                name: format!("r{i}"),
                effect: PolicyRule::DenyCall,
                when: Some(std::sync::Arc::new(
                    Condition::compile(match mode {
                        RuleMode::Enforce => conditions[i % conditions.len()],
                        RuleMode::Report => "'sales.t1' in statement.tables_read",
                    })
                    .unwrap_or_else(|e| panic!("{e}")),
                )),
                mode,
                message: None,
            })
            .collect(),
    });
    p
}

/// The policy step as the gateway runs it (`decide_call` through a warm memo, a new
/// literal per call) with 0, 10 and 100 conditional rules, and 10 report-only rules that
/// match (each tried once more), against the same statement without any: report the
/// ratios against `policy_rules/0`, measured in the same run.
fn bench_policy_rules(c: &mut Criterion) {
    let catalog = catalog();
    let limits = SqlLimits::default();
    let texts = texts(POINT_LITERAL);
    let mut facts = CallFacts::anonymous("sales");
    facts.identity = "bench-agent".into();
    facts.groups = vec!["analysts".into(), "oncall".into()];
    facts.claims.insert("department".into(), "sales".into());
    for (label, profile) in [
        ("policy_rules/0", with_rules(0, RuleMode::Enforce)),
        ("policy_rules/10", with_rules(10, RuleMode::Enforce)),
        ("policy_rules/100", with_rules(100, RuleMode::Enforce)),
        (
            "policy_rules/10_report_matching",
            with_rules(10, RuleMode::Report),
        ),
    ] {
        let memo = ShapeMemo::new(DEFAULT_MEMO_BYTES);
        let first = decide_call(
            &texts[0],
            0,
            &catalog,
            Some(&memo),
            &profile,
            &limits,
            Some(&facts),
        );
        assert!(first.allowed().is_some(), "{label}: {:?}", first.refusal());
        let mut next = texts.iter().cycle();
        c.bench_function(label, |b| {
            b.iter(|| {
                let sql = next.next().map_or("", String::as_str);
                decide_call(
                    black_box(sql),
                    0,
                    black_box(&catalog),
                    Some(&memo),
                    black_box(&profile),
                    &limits,
                    Some(&facts),
                )
            });
        });
    }
}

fn source() -> Source {
    Source {
        id: "sales".into(),
        kind: SourceKind::Postgres,
        description: String::new(),
        enabled: true,
        host: Some("127.0.0.1".into()),
        port: Some(5432),
        dbname: Some("sales".into()),
        read_login: None,
        write_login: None,
        tls_mode: TlsMode::Disable,
        tls_ca_file: None,
        search_path: vec!["sales".into()],
        statement_timeout_ms: 1000,
        max_rows: 1000,
        max_bytes: 1 << 20,
        pool_size: 1,
        cache_ttl_ms: 0,
        approval_ttl_secs: 3600,
        approvals_required: 1,
        approval_preview: PreviewMode::Explain,
        identity_propagation: Propagation::None,
        identity_roles: Default::default(),
        mask_key: vec![7; 32],
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
    }
}

/// Replay throughput: records per second is the inverse of `policy_replay/record`.
fn bench_replay(c: &mut Criterion) {
    let catalog = catalog();
    let limits = SqlLimits::default();
    let source = source();
    let live = with_rules(10, RuleMode::Enforce);
    let mut candidate = live.clone();
    candidate.policies.push(Policy {
        name: "candidate".into(),
        rules: vec![Rule {
            name: "cap".into(),
            effect: PolicyRule::MaxRows(10),
            when: Some(std::sync::Arc::new(
                Condition::compile("request.hour >= 0").unwrap_or_else(|e| panic!("{e}")),
            )),
            mode: RuleMode::Enforce,
            message: None,
        }],
    });
    let memo = ShapeMemo::new(DEFAULT_MEMO_BYTES);
    let judge = Judge {
        source: &source,
        catalog: &catalog,
        memo: Some(&memo),
        limits: &limits,
    };
    let mut facts = CallFacts::anonymous("sales");
    facts.identity = "bench-agent".into();
    let calls: Vec<(RecordedCall, CallEffect)> = texts(POINT_LITERAL)
        .into_iter()
        .enumerate()
        .map(|(i, statement)| {
            let mut call = RecordedCall {
                seq: i as i64,
                at: facts.time,
                identity: "bench-agent".into(),
                source: "sales".into(),
                statement,
                basis: ReplayBasis {
                    facts: facts.clone(),
                    params: 0,
                    effect: None,
                    plan: None,
                },
            };
            let recorded = judge.decide(Some(&live), &call).effect;
            call.basis.effect = Some(recorded.clone());
            (call, recorded)
        })
        .collect();
    let mut report = Report::default();
    let mut next = calls.iter().cycle();
    c.bench_function("policy_replay/record", |b| {
        b.iter(|| {
            let Some((call, recorded)) = next.next() else {
                return;
            };
            let now = judge.decide(Some(black_box(&live)), call);
            let would = judge.decide(Some(black_box(&candidate)), call);
            report.add(call, recorded, &now, &would, 5);
        });
    });
    assert!(report.changed > 0 && report.drift == 0, "{report:?}");
}

criterion_group!(benches, bench, bench_policy_rules, bench_replay);
criterion_main!(benches);
