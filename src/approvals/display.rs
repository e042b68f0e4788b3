//! Showing a statement to an approver exactly, yet unambiguously: every control, format
//! (bidirectional, zero-width) and non-ASCII space character is escaped as `\u{XXXX}`, so a
//! Trojan-Source trick cannot make the approver read something else than what will run.
//! (Agent SQL containing such characters is refused before it is queued; this is defence in
//! depth for anything else shown to approvers.)

pub fn escape_for_display(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let suspicious = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c as u32, 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF | 0x00A0 | 0x2028 | 0x2029)
            || (c.is_whitespace() && !c.is_ascii());
        if suspicious {
            out.push_str(&format!("\\u{{{:04X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape_for_display;

    #[test]
    fn control_and_bidi_characters_are_escaped() {
        let cases = [
            ("SELECT 1", "SELECT 1"),
            ("a\nb\tc", "a\nb\tc"),
            ("x\u{202E}y", "x\\u{202E}y"),
            ("x\u{200B}y", "x\\u{200B}y"),
            ("x\ry", "x\\u{000D}y"),
            ("x\u{0}y", "x\\u{0000}y"),
            ("caf\u{E9}", "caf\u{E9}"),
            ("a\u{A0}b", "a\\u{00A0}b"),
        ];
        for (input, want) in cases {
            assert_eq!(escape_for_display(input), want, "{input:?}");
        }
    }
}
