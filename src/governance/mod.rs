//! Governance: who may do what on which source, decided without I/O.

/// Checks the syntax of a resource pattern: `*`, `schema.*`, `schema.table` or
/// `schema.table.column`, with double-quoted parts allowed.
pub fn validate_resource_pattern(pattern: &str) -> Result<(), String> {
    let p = pattern.trim();
    if p == "*" {
        return Ok(());
    }
    let parts =
        split_quoted(p).ok_or_else(|| format!("resource {pattern:?} has an unterminated quote"))?;
    let ok_shape = match parts.as_slice() {
        [s, t] => !s.is_empty() && !t.is_empty() && s != "*",
        [s, t, c] => !s.is_empty() && !t.is_empty() && !c.is_empty() && t != "*" && c != "*",
        _ => false,
    };
    if ok_shape {
        Ok(())
    } else {
        Err(format!(
            "resource {pattern:?} must be *, schema.*, schema.table or schema.table.column"
        ))
    }
}

fn split_quoted(p: &str) -> Option<Vec<String>> {
    let mut parts = vec![String::new()];
    let mut quoted = false;
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', false) => quoted = true,
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                parts.last_mut()?.push('"');
            }
            ('"', true) => quoted = false,
            ('.', false) => parts.push(String::new()),
            (c, _) => parts.last_mut()?.push(c),
        }
    }
    (!quoted).then_some(parts)
}
