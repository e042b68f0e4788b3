//! A day of a busy fleet's activity, written straight into the control database as two
//! replicas' minutes would leave it: for the tests and measurements of the activity API and
//! the console's Activity page at that size.

use tokio_postgres::Client;

/// Calls each seeded source serves per minute (40 ok, 2 refused, 1 queued).
pub const CALLS_PER_MINUTE: u64 = 43;

/// The source that fails in [`seed_day`] with `failing`, and for how many minutes (the
/// newest), two unavailable calls a minute.
pub const FAILING_SOURCE: &str = "source-3";
pub const FAILING_MINUTES: i32 = 180;

/// 24 h of minutes for `sources` sources `source-1…` (1,440 × `sources` rows, alternating
/// between two replicas). With `failing`, [`FAILING_SOURCE`] also has two unavailable calls
/// in each of its newest [`FAILING_MINUTES`] minutes, and every source's breaker flaps
/// (open, half open, closed) every four hours, with [`FAILING_SOURCE`] open since its
/// failures began.
pub async fn seed_day(db: &Client, sources: i32, failing: bool) {
    db.execute(
        "INSERT INTO activity_minutes (minute, source_id, replica, data)
         SELECT date_trunc('minute', now()) - make_interval(mins => m), 'source-' || s,
                ('00000000-0000-0000-0000-00000000000' || (m % 2))::uuid,
                jsonb_build_object('ok', 40, 'refused', 2, 'queued', 1, 'cancelled', 0,
                  'unavailable', CASE WHEN $2 AND 'source-' || s = $3 AND m <= $4 THEN 2 ELSE 0 END,
                  'refused_by_code', jsonb_build_object('access_denied', 1, 'rate_limited', 1),
                  'latency', jsonb_build_array(0,5,20,10,3,1,1,0,1,0,0,0,0,0,0,0,2),
                  'cache_hits', 10, 'cache_misses', 30, 'cost', '{}'::jsonb, 'cost_units_admitted', 0,
                  'identities', jsonb_build_object('agent-' || (s % 7), jsonb_build_object('calls', 43, 'refused', 2, 'queued', 1)))
           FROM generate_series(1, 1440) AS m, generate_series(1, $1) AS s",
        &[&sources, &failing, &FAILING_SOURCE, &FAILING_MINUTES],
    )
    .await
    .expect("seed activity minutes");
    if !failing {
        return;
    }
    db.execute(
        "INSERT INTO circuit_transitions (source_id, replica, at, from_state, to_state, reason)
         SELECT 'source-' || s, '00000000-0000-0000-0000-000000000001'::uuid,
                now() - make_interval(hours => k * 4, mins => s + step), t.from_state, t.to_state, t.reason
           FROM generate_series(1, $1) AS s, generate_series(1, 5) AS k,
                (VALUES (2, 'closed', 'open', 'failure rate 60 % over the last 20 calls'),
                        (1, 'open', 'half_open', 'cool-down over: probing'),
                        (0, 'half_open', 'closed', 'probe succeeded')) AS t(step, from_state, to_state, reason)
         UNION ALL
         SELECT $2, '00000000-0000-0000-0000-000000000001'::uuid, now() - make_interval(mins => $3),
                'closed', 'open', 'failure rate 100 % over the last 20 calls'",
        &[&sources, &FAILING_SOURCE, &FAILING_MINUTES],
    )
    .await
    .expect("seed circuit transitions");
}
