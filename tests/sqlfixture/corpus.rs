//! The SQL-safety case corpus (`cases.tsv`, format in policy.md §11).

use std::path::PathBuf;

/// The directory of the corpus this project keeps (a superset of the shared one).
pub const FIXTURE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sql-safety");

/// The shared corpus every suite should use.
pub const SHARED_CASES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/testdata/sql-safety/cases.tsv"
);

pub struct Case {
    pub id: String,
    pub sql: String,
    pub verdict: String,
}

/// Decodes the escapes of policy.md §11 in one left-to-right pass.
pub fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('0') => out.push('\0'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                if hex.len() != 4 {
                    return Err(format!("bad \\u escape {hex:?}"));
                }
                let cp =
                    u32::from_str_radix(&hex, 16).map_err(|_| format!("bad \\u escape {hex:?}"))?;
                out.push(char::from_u32(cp).ok_or_else(|| format!("bad code point {hex}"))?);
            }
            other => return Err(format!("bad escape \\{other:?}")),
        }
    }
    Ok(out)
}

/// The corpus named by `INTERLOCK_SQL_CASES`, else this project's.
pub fn load_cases() -> Vec<Case> {
    let path = std::env::var_os("INTERLOCK_SQL_CASES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(FIXTURE_DIR).join("cases.tsv"));
    load(&path)
}

/// The cases of one corpus file.
pub fn load(path: &std::path::Path) -> Vec<Case> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("id\tcategory\tsql\tverdict\tnote"),
        "header"
    );
    lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "case line has 5 fields: {l}");
            Case {
                id: f[0].to_string(),
                sql: unescape(f[2]).unwrap_or_else(|e| panic!("case {}: {e}", f[0])),
                verdict: f[3].to_string(),
            }
        })
        .collect()
}
