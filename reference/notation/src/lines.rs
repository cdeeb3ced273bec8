//! Splitting text into lines and classifying them (SPEC.md rules 1–4).

/// One physical line of the input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    /// The line without its terminator (`\n` or `\r\n`).
    pub raw: &'a str,
}

impl<'a> Line<'a> {
    /// Number of leading spaces (rule 3: indentation is spaces only).
    pub fn indent(&self) -> usize {
        self.raw.bytes().take_while(|&b| b == b' ').count()
    }

    /// Only spaces and tabs (rule 4: blank lines are ignored outside block scalars).
    pub fn is_blank(&self) -> bool {
        self.raw.bytes().all(|b| b == b' ' || b == b'\t')
    }

    /// First non-space, non-tab character is `#` (rule 4: full-line comments).
    pub fn is_comment(&self) -> bool {
        self.raw.trim_start_matches([' ', '\t']).starts_with('#')
    }

    /// The 1-based column, in characters, of byte offset `byte`.
    pub fn column(&self, byte: usize) -> usize {
        let byte = byte.min(self.raw.len());
        let mut b = byte;
        while !self.raw.is_char_boundary(b) {
            b -= 1;
        }
        self.raw[..b].chars().count() + 1
    }
}

/// Splits `text` into lines (rule 1): a leading U+FEFF is dropped, lines end at `\n`, a `\r`
/// before `\n` belongs to the terminator, and a final terminator does not open an empty line.
pub(crate) fn split(text: &str) -> Vec<Line<'_>> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut lines: Vec<Line<'_>> = text
        .split('\n')
        .map(|raw| Line {
            raw: raw.strip_suffix('\r').unwrap_or(raw),
        })
        .collect();
    if text.ends_with('\n') || text.is_empty() {
        lines.pop();
    }
    lines
}

/// The first raw control character that strict mode rejects (rule 2): any C0 character other
/// than tab, as (line index, byte offset). `\r` is only allowed right before `\n`.
pub(crate) fn first_control(lines: &[Line<'_>]) -> Option<(usize, usize, char)> {
    lines.iter().enumerate().find_map(|(i, l)| {
        l.raw
            .char_indices()
            .find(|&(_, c)| c < ' ' && c != '\t')
            .map(|(b, c)| (i, b, c))
    })
}
