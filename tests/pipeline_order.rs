//! The declared order of the governed call, run against fakes of every runtime port (no
//! PostgreSQL, no network): for each tool, a call made to stop at each step it declares is
//! answered as that step answers, its audit record names that step (`refused_at` for a
//! refusal, the last of `steps` before `audit` for any call), and no port that belongs to
//! a later step was reached.
//!
//! `tests/governance_steps.rs` proves the same order end to end on real PostgreSQL; this
//! file proves it for every tool and step, including failures that are hard to provoke
//! there (an upstream that fails mid-call, a result wider than its decision, an audit
//! commit that fails).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod sqlfixture;

use interlock::sql::memo::{ShapeMemo, DEFAULT_MEMO_BYTES};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use interlock::call::steps::declared;
use interlock::config::RateLimitSettings;
use interlock::control::approvals::{Enqueued, NewApproval};
use interlock::control::catalog::StoredCatalog;
use interlock::control::identities::{Identity, IdentityKind};
use interlock::control::sources::{Source, SourceKind, TlsMode};
use interlock::control::{ControlError, ControlPool};
use interlock::governance::cost::RelationFacts;
use interlock::governance::{AccessProfile, SqlLimits};
use interlock::limits::{CostBudgetRefusal, RateRefusal};
use interlock::mcp::{ToolArgs, ToolKind};
use interlock::pipeline::identity::{Principal, Resolved, TokenFacts};
use interlock::pipeline::ports::Read;
use interlock::pipeline::profiles::LoadedProfile;
use interlock::pipeline::{CallContext, Outcome, Ports};
use interlock::sources::catalog::RefreshError;
use interlock::sources::postgres::execute::{Caller, ExecError, Rows};
use interlock::sources::registry::{CatalogSnapshot, SourceRuntime};
use interlock::stages::GovernanceStep as S;
use interlock::Settings;
use interlock_actors::audit::{AuditError, AuditRecord};
use interlock_actors::breaker::{BreakerHandle, ForceAction};
use interlock_actors::cache::{CachedResult, Generations};
use interlock_actors::events::{Event, EventBus};
use interlock_actors::ratelimit::{CostRequest, RateLimited, RateRequest};
use interlock_actors::supervise::{Supervision, SupervisionConfig};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// What the fakes get wrong for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Make {
    Nothing,
    UnknownKey,
    NoKey,
    /// An access token that does not verify.
    BadToken,
    /// A valid access token without the tools scope.
    NoToolsScope,
    AuditDown,
    NoRole,
    /// The fixture's roles only: no describe and no discover grant.
    NarrowRole,
    RateSpent,
    CircuitForcedOpen,
    CacheHit,
    UpstreamDown,
    /// The source returns more columns than the decision expects.
    WideRows,
    AuditCommitFails,
}

/// Ports, and the step each first belongs to: a call stopped at step k reaches none whose
/// step comes after k.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Port {
    ResolveKey,
    AuditHealthy,
    Source,
    Sources,
    Profile,
    Catalog,
    CatalogDrifted,
    RateCheck,
    CacheGet,
    CacheInsert,
    Read,
    Enqueue,
    Control,
}

impl Port {
    fn step(self) -> S {
        match self {
            Port::ResolveKey => S::Identity,
            Port::AuditHealthy => S::AuditGate,
            Port::Source => S::Source,
            Port::Profile => S::SourceRole,
            Port::Catalog => S::Policy,
            Port::RateCheck => S::RateLimit,
            Port::CacheGet => S::Cache,
            Port::Sources | Port::Read | Port::Enqueue | Port::Control => S::Execution,
            Port::CatalogDrifted | Port::CacheInsert => S::Redaction,
        }
    }
}

struct Fake {
    make: Make,
    reached: Mutex<Vec<Port>>,
    audited: Mutex<Vec<AuditRecord>>,
    shop: Arc<SourceRuntime>,
    settings: Settings,
    control: ControlPool,
    identity: Arc<Identity>,
}

impl Fake {
    fn reach(&self, port: Port) {
        self.reached.lock().unwrap().push(port);
    }

    fn profile_now(&self) -> Option<AccessProfile> {
        let mut profile = sqlfixture::fixture_profile();
        match self.make {
            Make::NoRole => return None,
            Make::NarrowRole => {}
            _ => profile.roles[0].statements.extend(
                ["allow describe app.*", "allow discover audience.*"]
                    .iter()
                    .map(|s| s.parse().unwrap()),
            ),
        }
        Some(profile)
    }
}

impl Ports for Fake {
    fn resolve_bearer(
        &self,
        _credential: &str,
    ) -> impl Future<Output = Result<Resolved, Arc<ControlError>>> + Send {
        self.reach(Port::ResolveKey);
        let found = match self.make {
            Make::UnknownKey => Resolved::UnknownKey,
            Make::BadToken => Resolved::InvalidToken("the token has expired".into()),
            make => Resolved::Caller(Arc::new(Principal {
                identity: self.identity.clone(),
                token: (make == Make::NoToolsScope).then(|| TokenFacts {
                    issuer: "https://issuer.test".into(),
                    subject: "demo-agent".into(),
                    usable_until: None,
                    tools: false,
                    admin: false,
                    groups: Vec::new(),
                    claims: Arc::default(),
                }),
            })),
        };
        async move { Ok(found) }
    }

    fn audit_healthy(&self) -> bool {
        self.reach(Port::AuditHealthy);
        self.make != Make::AuditDown
    }

    fn record_activity(&self, _record: &AuditRecord) {}

    fn append_audit(
        &self,
        record: AuditRecord,
    ) -> impl Future<Output = Result<i64, AuditError>> + Send {
        self.audited.lock().unwrap().push(record);
        let fails = self.make == Make::AuditCommitFails;
        async move {
            if fails {
                Err(AuditError::Unavailable)
            } else {
                Ok(1)
            }
        }
    }

    fn source(&self, id: &str) -> Option<Arc<SourceRuntime>> {
        self.reach(Port::Source);
        (id == "shop").then(|| self.shop.clone())
    }

    fn sources(&self) -> Vec<Arc<SourceRuntime>> {
        self.reach(Port::Sources);
        vec![self.shop.clone()]
    }

    fn catalog(
        &self,
        _rt: &SourceRuntime,
    ) -> impl Future<Output = Result<Arc<CatalogSnapshot>, RefreshError>> + Send {
        self.reach(Port::Catalog);
        let snapshot = Arc::new(CatalogSnapshot {
            catalog: sqlfixture::fixture_catalog(),
            stored: StoredCatalog {
                scanned_at: Utc::now(),
                truncated: false,
                relations: Vec::new(),
            },
            memo: Arc::new(ShapeMemo::new(DEFAULT_MEMO_BYTES)),
        });
        async move { Ok(snapshot) }
    }

    fn catalog_drifted(&self, _source: &str) {
        self.reach(Port::CatalogDrifted);
    }

    fn profile(
        &self,
        _identity: Uuid,
        _source: &str,
    ) -> impl Future<Output = Result<Option<Arc<LoadedProfile>>, Arc<ControlError>>> + Send {
        self.reach(Port::Profile);
        let loaded = self.profile_now().map(|profile| {
            Arc::new(LoadedProfile {
                profile,
                fingerprint: "fake".into(),
            })
        });
        async move { Ok(loaded) }
    }

    fn rate_check(
        &self,
        _request: &RateRequest,
    ) -> impl Future<Output = Result<(), RateRefusal>> + Send {
        self.reach(Port::RateCheck);
        let answer = match self.make {
            Make::RateSpent => Err(RateRefusal::Limited(RateLimited {
                scope: "identity",
                retry_after: Duration::from_secs(1),
            })),
            _ => Ok(()),
        };
        async move { answer }
    }

    fn rate_settings(&self) -> &RateLimitSettings {
        &self.settings.rate_limit
    }

    fn sql_limits(&self) -> SqlLimits {
        self.settings.sql.limits()
    }

    fn policy_now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now()
    }

    fn policy_zone(&self) -> &str {
        &self.settings.policy.time_zone
    }

    fn cache_get(&self, _key: &[u8; 32]) -> impl Future<Output = Option<Arc<CachedResult>>> + Send {
        self.reach(Port::CacheGet);
        let hit = (self.make == Make::CacheHit).then(|| {
            Arc::new(CachedResult {
                source: "shop".into(),
                tables: vec![("app".into(), "t1".into())],
                rows: Arc::new(vec![json!({"id": 1, "val": "cached"})]),
                truncated: None,
                row_count: 1,
                ttl: Duration::from_secs(60),
            })
        });
        async move { hit }
    }

    fn cache_generations(&self, _source: &str, _tables: &[(String, String)]) -> Generations {
        Generations::default()
    }

    fn cache_insert(
        &self,
        _key: [u8; 32],
        _value: CachedResult,
        _seen: &Generations,
    ) -> impl Future<Output = ()> + Send {
        self.reach(Port::CacheInsert);
        async {}
    }

    fn charge_cost(
        &self,
        _request: &CostRequest,
    ) -> impl Future<Output = Result<(), CostBudgetRefusal>> + Send {
        std::future::ready(Ok(()))
    }

    fn relation_facts(
        &self,
        _rt: &SourceRuntime,
        _relations: &[(String, String)],
        _caller: Option<&Caller>,
    ) -> impl Future<Output = Result<Vec<RelationFacts>, ExecError>> + Send {
        std::future::ready(Ok(Vec::new()))
    }

    fn read(
        &self,
        _rt: &SourceRuntime,
        _read: Read<'_>,
        _cancel: &CancellationToken,
    ) -> impl Future<Output = Result<Rows, ExecError>> + Send {
        self.reach(Port::Read);
        let mut columns = vec!["id".to_string(), "val".to_string()];
        let mut row = vec![json!(1), json!("one")];
        if self.make == Make::WideRows {
            columns.push("extra".into());
            row.push(json!("surprise"));
        }
        let result = match self.make {
            Make::UpstreamDown => Err(ExecError::Upstream("connection refused".into())),
            _ => Ok(Rows {
                columns,
                rows: vec![row],
                truncated: None,
                affected: None,
                changed: None,
            }),
        };
        async move { result }
    }

    fn enqueue(
        &self,
        _new: &NewApproval,
    ) -> impl Future<Output = Result<Enqueued, ControlError>> + Send {
        self.reach(Port::Enqueue);
        let now = chrono::Utc::now();
        async move {
            Ok(Enqueued {
                id: Uuid::new_v4(),
                created_at: now,
                expires_at: now,
            })
        }
    }

    fn task_retention_ms(&self) -> u64 {
        0
    }

    fn preview(&self, _approval: Uuid) {
        self.reach(Port::Enqueue);
    }

    fn publish(&self, _event: Event) {}

    fn control(&self) -> &ControlPool {
        self.reach(Port::Control);
        &self.control
    }
}

/// A control pool that never connects (nothing listens on port 1 of loopback).
fn unreachable_control() -> ControlPool {
    let mut config = tokio_postgres::Config::new();
    config
        .host("127.0.0.1")
        .port(1)
        .user("nobody")
        .dbname("none");
    let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
    deadpool_postgres::Pool::builder(manager)
        .max_size(1)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_millis(200)))
        .create_timeout(Some(Duration::from_millis(200)))
        .build()
        .unwrap()
}

fn shop_source() -> Source {
    Source {
        id: "shop".into(),
        kind: SourceKind::Postgres,
        description: "fake shop".into(),
        enabled: true,
        host: Some("127.0.0.1".into()),
        port: Some(1),
        dbname: Some("shop".into()),
        read_login: None,
        write_login: None,
        tls_mode: TlsMode::Disable,
        tls_ca_file: None,
        search_path: vec!["app".into()],
        statement_timeout_ms: 1000,
        max_rows: 100,
        max_bytes: 1 << 20,
        pool_size: 1,
        cache_ttl_ms: 60_000,
        approval_ttl_secs: 3600,
        approvals_required: 1,
        approval_preview: interlock::control::sources::PreviewMode::Explain,
        identity_propagation: interlock::control::sources::Propagation::None,
        identity_roles: Default::default(),
        mask_key: vec![7; 32],
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

async fn fake(make: Make, supervision: &Supervision) -> Fake {
    let breaker = BreakerHandle::start(
        "shop",
        interlock_actors::breaker::BreakerConfig::default(),
        EventBus::default(),
        supervision,
    )
    .unwrap();
    if make == Make::CircuitForcedOpen {
        breaker
            .force(ForceAction::Open, "pipeline order test".into())
            .await
            .unwrap();
    }
    Fake {
        make,
        reached: Mutex::new(Vec::new()),
        audited: Mutex::new(Vec::new()),
        shop: Arc::new(SourceRuntime::new(shop_source(), None, None, breaker)),
        settings: Settings::load_with_env(None, Vec::<(String, String)>::new()).unwrap(),
        control: unreachable_control(),
        identity: Arc::new(Identity {
            id: Uuid::new_v4(),
            name: "fake-agent".into(),
            kind: IdentityKind::Agent,
            rate: None,
            cost: None,
            created_at: Utc::now(),
        }),
    }
}

/// How the caller is answered.
#[derive(Debug, Clone, PartialEq)]
enum Answer {
    Refused(u16),
    NotFound,
    Unavailable(&'static str),
    Failed,
    Queued,
    Answered,
}

fn answer(outcome: &Outcome) -> Answer {
    match outcome {
        Outcome::Refused { status, .. } => Answer::Refused(*status),
        Outcome::NotFound { .. } => Answer::NotFound,
        Outcome::Unavailable { reason } => Answer::Unavailable(match reason.as_str() {
            "audit unavailable" => "audit unavailable",
            "circuit open" => "circuit open",
            "control database unavailable" => "control database unavailable",
            other => panic!("unexpected unavailable reason {other:?}"),
        }),
        Outcome::Failed | Outcome::Cancelled => Answer::Failed,
        Outcome::Queued { .. } => Answer::Queued,
        Outcome::Rows { .. } | Outcome::Json(_) => Answer::Answered,
    }
}

struct Case {
    tool: ToolKind,
    args: Value,
    make: Make,
    stops_at: S,
    answer: Answer,
}

fn case(tool: ToolKind, args: Value, make: Make, stops_at: S, answer: Answer) -> Case {
    Case {
        tool,
        args,
        make,
        stops_at,
        answer,
    }
}

const READ: &str = "SELECT id, val FROM app.t1";

fn cases() -> Vec<Case> {
    use Answer::*;
    use Make::*;
    use ToolKind as T;
    let q = |sql: &str| json!({"source_id": "shop", "sql": sql});
    let mut all = vec![
        case(T::Query, q(READ), NoKey, S::Identity, Refused(401)),
        case(T::Query, q(READ), UnknownKey, S::Identity, Refused(401)),
        case(T::Query, q(READ), BadToken, S::Identity, Refused(401)),
        case(T::Query, q(READ), NoToolsScope, S::Identity, Refused(403)),
        case(
            T::Query,
            q(READ),
            AuditDown,
            S::AuditGate,
            Unavailable("audit unavailable"),
        ),
        case(
            T::Query,
            json!({"source_id": "nope", "sql": READ}),
            Nothing,
            S::Source,
            NotFound,
        ),
        case(T::Query, q(READ), NoRole, S::SourceRole, Refused(403)),
        case(
            T::Query,
            q("SELECT ssn FROM app.users"),
            Nothing,
            S::Policy,
            Refused(403),
        ),
        case(T::Query, q(READ), RateSpent, S::RateLimit, Refused(429)),
        case(
            T::Query,
            q("UPDATE app.t1 SET val = 'x' WHERE id = 1"),
            Nothing,
            S::Execution,
            Queued,
        ),
        case(
            T::Query,
            q(READ),
            CircuitForcedOpen,
            S::Breaker,
            Unavailable("circuit open"),
        ),
        case(T::Query, q(READ), CacheHit, S::Cache, Answered),
        case(T::Query, q(READ), UpstreamDown, S::Execution, Failed),
        case(T::Query, q(READ), WideRows, S::Redaction, Failed),
        case(T::Query, q(READ), Nothing, S::Redaction, Answered),
        case(
            T::DescribeSource,
            json!({"source_id": "nope"}),
            Nothing,
            S::Source,
            NotFound,
        ),
        case(
            T::DescribeSource,
            json!({"source_id": "shop"}),
            NoRole,
            S::SourceRole,
            Refused(403),
        ),
        case(
            T::DescribeSource,
            json!({"source_id": "shop"}),
            NarrowRole,
            S::Policy,
            Refused(403),
        ),
        case(
            T::DescribeSource,
            json!({"source_id": "shop"}),
            RateSpent,
            S::RateLimit,
            Refused(429),
        ),
        case(
            T::DescribeSource,
            json!({"source_id": "shop"}),
            Nothing,
            S::Execution,
            Answered,
        ),
        case(
            T::Discover,
            json!({"source_id": "shop", "time_range": "yesterday"}),
            Nothing,
            S::Arguments,
            Refused(400),
        ),
        case(
            T::Discover,
            json!({"source_id": "nope"}),
            Nothing,
            S::Source,
            NotFound,
        ),
        case(
            T::Discover,
            json!({"source_id": "shop"}),
            NarrowRole,
            S::SourceRole,
            Refused(403),
        ),
        case(
            T::Discover,
            json!({"source_id": "shop"}),
            RateSpent,
            S::RateLimit,
            Refused(429),
        ),
        case(
            T::Discover,
            json!({"source_id": "shop"}),
            Nothing,
            S::Execution,
            Unavailable("control database unavailable"),
        ),
        case(
            T::RelatedDocuments,
            json!({"relation_types": []}),
            Nothing,
            S::Arguments,
            Refused(400),
        ),
        case(
            T::RelatedDocuments,
            json!({"asset_id": "a"}),
            RateSpent,
            S::RateLimit,
            Refused(429),
        ),
        case(
            T::RelatedDocuments,
            json!({"asset_id": "a"}),
            Nothing,
            S::Execution,
            Unavailable("control database unavailable"),
        ),
        case(
            T::ListSources,
            json!({}),
            RateSpent,
            S::RateLimit,
            Refused(429),
        ),
        case(T::ListSources, json!({}), Nothing, S::Execution, Answered),
        case(
            T::DescribeAccess,
            json!({}),
            RateSpent,
            S::RateLimit,
            Refused(429),
        ),
        case(
            T::DescribeAccess,
            json!({}),
            Nothing,
            S::Execution,
            Answered,
        ),
        case(
            T::ApprovalStatus,
            json!({"approval_id": Uuid::new_v4().to_string()}),
            RateSpent,
            S::RateLimit,
            Refused(429),
        ),
        case(
            T::ApprovalStatus,
            json!({"approval_id": Uuid::new_v4().to_string()}),
            Nothing,
            S::Execution,
            Unavailable("control database unavailable"),
        ),
    ];
    // Every tool: refused without a key, behind a down audit writer, and unanswered when its
    // record cannot be committed.
    let base: Vec<(ToolKind, Value)> = vec![
        (T::Query, q(READ)),
        (T::ListSources, json!({})),
        (T::DescribeAccess, json!({})),
        (T::DescribeSource, json!({"source_id": "shop"})),
        (T::Discover, json!({"source_id": "shop"})),
        (T::RelatedDocuments, json!({"asset_id": "a"})),
        (
            T::ApprovalStatus,
            json!({"approval_id": Uuid::new_v4().to_string()}),
        ),
    ];
    for (tool, args) in base {
        let unauthenticated = if tool == T::DescribeAccess { 403 } else { 401 };
        all.push(case(
            tool,
            args.clone(),
            UnknownKey,
            S::Identity,
            Refused(unauthenticated),
        ));
        all.push(case(
            tool,
            args.clone(),
            AuditDown,
            S::AuditGate,
            Unavailable("audit unavailable"),
        ));
        all.push(case(
            tool,
            args,
            AuditCommitFails,
            S::Audit,
            Unavailable("audit unavailable"),
        ));
    }
    all
}

#[actix_rt::test]
async fn every_tool_stops_at_the_step_that_answers_and_runs_nothing_after_it() {
    let supervision = Supervision::new(SupervisionConfig::default(), EventBus::default());
    let cases = cases();
    for tool in ToolKind::ALL {
        assert!(cases.iter().any(|c| c.tool == tool), "{tool:?} has cases");
    }
    for (i, c) in cases.iter().enumerate() {
        let label = format!("case {i}: {:?} {} with {:?}", c.tool, c.args, c.make);
        let fake = fake(c.make, &supervision).await;
        let ctx = CallContext {
            request_id: format!("order-{i}"),
            adapter: "mcp",
            dialect: None,
            bearer: (c.make != Make::NoKey).then(|| "a key".to_string()),
            cancel: CancellationToken::new(),
            trace: Default::default(),
            task: None,
        };
        let args = ToolArgs::parse(c.tool, c.args.clone()).unwrap();
        let outcome = interlock::pipeline::call(&fake, &ctx, &args).await;
        assert_eq!(answer(&outcome), c.answer, "{label}: {outcome:?}");

        let records = fake.audited.lock().unwrap().clone();
        assert_eq!(records.len(), 1, "{label}: one audit record per call");
        let decision = &records[0].decision;
        let steps: Vec<&str> = decision["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("{label}: no steps in {decision}"))
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let declared_names: Vec<&str> = declared(c.tool).iter().map(|s| s.name()).collect();
        assert!(
            steps.iter().all(|s| declared_names.contains(s)),
            "{label}: {steps:?} within {declared_names:?}"
        );
        let (last, before) = steps.split_last().unwrap();
        assert_eq!(*last, "audit", "{label}: every call ends with its audit");
        if c.stops_at == S::Audit {
            // The same call with an audit that commits: it ran the same steps and was
            // answered otherwise, so the failed commit alone is what withheld its answer.
            let healthy = self::fake(Make::Nothing, &supervision).await;
            let answered = interlock::pipeline::call(&healthy, &ctx, &args).await;
            assert_ne!(
                answer(&answered),
                c.answer,
                "{label}: the twin with a healthy audit is answered otherwise: {answered:?}"
            );
            let twin = healthy.audited.lock().unwrap().clone();
            assert_eq!(twin.len(), 1, "{label}: the twin's record");
            let twin_steps: Vec<&str> = twin[0].decision["steps"]
                .as_array()
                .unwrap_or_else(|| panic!("{label}: no steps in the twin"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(
                steps, twin_steps,
                "{label}: every step ran, then the commit failed"
            );
            assert!(
                before.last() != Some(&"audit_gate"),
                "{label}: it got past the gate: {steps:?}"
            );
        } else {
            assert_eq!(
                before.last().copied(),
                Some(c.stops_at.name()),
                "{label}: {steps:?}"
            );
        }
        if matches!(c.answer, Answer::Refused(_) | Answer::NotFound)
            || (matches!(c.answer, Answer::Unavailable(_)) && c.stops_at < S::Execution)
        {
            assert_eq!(
                decision["refused_at"],
                c.stops_at.name(),
                "{label}: {decision}"
            );
        }
        let reached = fake.reached.lock().unwrap().clone();
        for port in &reached {
            assert!(
                port.step() <= c.stops_at,
                "{label}: reached {port:?} ({}) after stopping at {}",
                port.step().name(),
                c.stops_at.name()
            );
        }
        // The step that answered was reached through its port (where it has one).
        let own: Option<Port> = match (c.stops_at, c.make) {
            (S::Identity, Make::UnknownKey | Make::BadToken | Make::NoToolsScope) => {
                Some(Port::ResolveKey)
            }
            (S::AuditGate, _) => Some(Port::AuditHealthy),
            (S::RateLimit, _) => Some(Port::RateCheck),
            (S::Cache, _) => Some(Port::CacheGet),
            (S::Redaction, Make::WideRows) => Some(Port::CatalogDrifted),
            _ => None,
        };
        if let Some(own) = own {
            assert!(reached.contains(&own), "{label}: {reached:?} lacks {own:?}");
        }
    }
}
