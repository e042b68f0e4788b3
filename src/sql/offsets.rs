//! Byte offsets of the tokenizer's line/column locations, for cutting a text where its
//! parse tree says a node stands.

use sqlparser::tokenizer::Location;

/// Byte offsets of the tokenizer's line/column locations (columns count
/// characters, from 1).
pub struct Offsets<'a> {
    text: &'a str,
    lines: Vec<usize>,
}

impl<'a> Offsets<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut lines = vec![0];
        lines.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Offsets { text, lines }
    }

    pub fn of(&self, at: Location) -> Option<usize> {
        let line = usize::try_from(at.line.checked_sub(1)?).ok()?;
        let column = usize::try_from(at.column.checked_sub(1)?).ok()?;
        let start = *self.lines.get(line)?;
        let rest = self.text.get(start..)?;
        match rest.char_indices().nth(column) {
            Some((i, _)) => Some(start + i),
            None if rest.chars().count() == column => Some(self.text.len()),
            None => None,
        }
    }
}
