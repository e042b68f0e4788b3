//! Allowed ways to do what a refused name does: PostgreSQL functions refused by family, and
//! the names agents bring from other SQL dialects. Each entry is reviewed: the suggestion
//! must itself be callable (a unit test checks every function named here).

/// `(refused name, what to write instead)`, sorted by name.
const ALTERNATIVES: &[(&str, &str)] = &[
    ("charindex", "strpos(text, substring)"),
    ("convert_tz", "ts AT TIME ZONE 'zone'"),
    (
        "current_database",
        "read the source name from describe access",
    ),
    ("date_add", "date + interval '1 day'"),
    ("date_format", "to_char(ts, 'YYYY-MM-DD')"),
    ("date_sub", "date - interval '1 day'"),
    ("dateadd", "date + interval '1 day'"),
    ("datediff", "date2 - date1 (days) or age(ts2, ts1)"),
    (
        "datepart",
        "date_part('field', ts) or extract(field FROM ts)",
    ),
    ("day", "extract(day FROM ts)"),
    ("format_type", "describe access lists column types"),
    ("from_unixtime", "to_timestamp(seconds)"),
    ("getdate", "now()"),
    ("group_concat", "string_agg(value, ',')"),
    (
        "has_table_privilege",
        "describe access lists what you may read",
    ),
    ("hour", "extract(hour FROM ts)"),
    ("ifnull", "coalesce(a, b)"),
    ("iif", "CASE WHEN cond THEN a ELSE b END"),
    ("instr", "strpos(text, substring)"),
    ("isnull", "coalesce(a, b), or a IS NULL"),
    (
        "json_extract",
        "json -> 'key' or jsonb_extract_path(j, 'key')",
    ),
    (
        "json_value",
        "jsonb ->> 'key' or jsonb_path_query_first(j, '$.key')",
    ),
    ("lcase", "lower(text)"),
    ("len", "length(text)"),
    ("listagg", "string_agg(value, ',' ORDER BY …)"),
    ("median", "percentile_cont(0.5) WITHIN GROUP (ORDER BY x)"),
    ("minute", "extract(minute FROM ts)"),
    ("month", "extract(month FROM ts) or date_trunc('month', ts)"),
    ("nvl", "coalesce(a, b)"),
    ("nvl2", "CASE WHEN a IS NOT NULL THEN b ELSE c END"),
    (
        "obj_description",
        "describe access shows what the gateway lets you see",
    ),
    (
        "pg_relation_size",
        "the cost step's estimate in the answer's meta",
    ),
    (
        "pg_total_relation_size",
        "the cost step's estimate in the answer's meta",
    ),
    ("pg_typeof", "describe access lists column types"),
    ("quarter", "extract(quarter FROM ts)"),
    (
        "sha1",
        "ask an operator for a hash mask on the column (a keyed pseudonym)",
    ),
    ("stdev", "stddev(x)"),
    ("stdevp", "stddev_pop(x)"),
    ("strftime", "to_char(ts, 'YYYY-MM-DD')"),
    ("sysdate", "now()"),
    (
        "table_to_xml",
        "SELECT json_agg(to_jsonb(t)) FROM (SELECT … ) t",
    ),
    (
        "to_regclass",
        "describe access lists the tables you may read",
    ),
    ("ucase", "upper(text)"),
    ("unix_timestamp", "extract(epoch FROM ts)"),
    ("uuid", "gen_random_uuid()"),
    ("var", "variance(x)"),
    ("varp", "var_pop(x)"),
    ("week", "extract(week FROM ts)"),
    ("year", "extract(year FROM ts) or date_trunc('year', ts)"),
];

/// What to write instead of `name`, if something does the same job.
pub(super) fn for_name(name: &str) -> Option<&'static str> {
    ALTERNATIVES
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .and_then(|i| ALTERNATIVES.get(i))
        .map(|(_, alt)| *alt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_every_suggested_call_is_allowed() {
        assert!(ALTERNATIVES.windows(2).all(|w| w[0].0 < w[1].0));
        let mut checked = 0;
        for (name, alt) in ALTERNATIVES {
            assert!(
                super::super::lookup(name).is_none(),
                "{name} is allowed; no alternative needed"
            );
            // Every `word(` in the suggestion names an allowed function.
            let calls = called(alt);
            for f in &calls {
                assert!(
                    super::super::lookup(f).is_some(),
                    "{name}: {f} is not allowed"
                );
            }
            checked += calls.len();
        }
        assert!(checked > 30, "only {checked} suggested calls were read");
    }

    /// The names written as calls in `text`: lower-case identifiers right before `(`.
    fn called(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            if c.is_ascii_lowercase() || c == '_' || (start.is_some() && c.is_ascii_digit()) {
                start.get_or_insert(i);
                continue;
            }
            if let (Some(s), '(') = (start, c) {
                out.push(&text[s..i]);
            }
            start = None;
        }
        out
    }

    #[test]
    fn calls_are_read_from_suggestions() {
        assert_eq!(called("coalesce(a, b) or x::text"), ["coalesce"]);
        assert_eq!(
            called("json_agg(to_jsonb(t)) FROM (SELECT"),
            ["json_agg", "to_jsonb"]
        );
        assert_eq!(called("md5(x)"), ["md5"]);
    }
}
