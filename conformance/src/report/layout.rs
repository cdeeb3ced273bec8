//! Fitting terminal text into the terminal's width (issue 18, item 4): word wrapping, rows
//! whose last column wraps under itself, and IDs shortened in the middle where a line has no
//! room for them. JSON output never goes through here.
//!
//! Widths count characters (`§`, `→` and `—` are one column each; the catalogue has no wide
//! characters).

/// The width to render for: `$COLUMNS` when set to a number, else the width of the terminal
/// on stdout or stderr, else 100 (what clap assumes for `--help`). Never below 40.
pub fn width() -> usize {
    let w = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(|| {
            terminal_size::terminal_size_of(std::io::stdout())
                .or_else(|| terminal_size::terminal_size_of(std::io::stderr()))
                .map(|(terminal_size::Width(w), _)| usize::from(w))
        })
        .unwrap_or(100);
    w.max(40)
}

/// The number of columns `s` takes.
pub fn cols(s: &str) -> usize {
    s.chars().count()
}

/// `s` shortened to `max` columns by replacing its middle with `…` (both ends stay readable:
/// `core.envelope…tampered-body`).
pub fn shorten_middle(s: &str, max: usize) -> String {
    let n = cols(s);
    if n <= max {
        return s.to_owned();
    }
    if max <= 1 {
        return "…".chars().take(max).collect();
    }
    let keep = max - 1;
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let chars: Vec<char> = s.chars().collect();
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[n - tail..]);
    out
}

/// `s` cut to `max` columns, ending in `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if cols(s) <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Word-wraps `text` into lines of at most `width` columns; a word longer than `width` is
/// split. Existing line breaks are kept.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for word in para.split(' ').filter(|w| !w.is_empty()) {
            let mut word = word.to_owned();
            loop {
                let need = if line.is_empty() {
                    cols(&word)
                } else {
                    cols(&line) + 1 + cols(&word)
                };
                if need <= width {
                    if !line.is_empty() {
                        line.push(' ');
                    }
                    line.push_str(&word);
                    break;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                    continue;
                }
                // A word wider than a whole line: split it.
                let head: String = word.chars().take(width).collect();
                let rest: String = word.chars().skip(width).collect();
                lines.push(head);
                word = rest;
                if word.is_empty() {
                    break;
                }
            }
        }
        lines.push(line);
    }
    lines
}

/// `text` wrapped to `width` with every line after the first indented by `indent` spaces
/// (and the first by `first` spaces).
pub fn indented(text: &str, width: usize, first: usize, indent: usize) -> String {
    let avail = width.saturating_sub(indent).max(20);
    let mut out = String::new();
    for (i, line) in wrap(text, avail.min(width.saturating_sub(first).max(20)))
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
        } else {
            out.push_str(&" ".repeat(first));
        }
        out.push_str(&line);
    }
    out
}

/// One row: `lead` (the fixed columns, already padded) followed by `last`, which wraps in the
/// columns left after `lead`; when fewer than `min_last` are left, `last` goes on the lines
/// below, indented by four spaces.
pub fn row(lead: &str, last: &str, width: usize, min_last: usize) -> String {
    let start = cols(lead);
    if start + cols(last) <= width {
        return format!("{lead}{last}").trim_end().to_owned();
    }
    if width.saturating_sub(start) >= min_last {
        let lines = wrap(last, width - start);
        let pad = " ".repeat(start);
        let mut out = String::from(lead);
        for (i, l) in lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
                out.push_str(&pad);
            }
            out.push_str(l);
        }
        return out;
    }
    format!("{}\n{}", lead.trim_end(), indented(last, width, 4, 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_shortens_within_the_width() {
        let text = "A node MUST reject an envelope whose signed content was altered after signing (SIGNATURE_INVALID).";
        for w in [20, 33, 80] {
            for l in wrap(text, w) {
                assert!(cols(&l) <= w, "{l:?} wider than {w}");
            }
        }
        assert_eq!(wrap(text, 200), vec![text.to_owned()]);
        let s = shorten_middle("core.envelope.sig.tampered-body", 20);
        assert_eq!(cols(&s), 20);
        assert!(s.starts_with("core.envel") && s.ends_with("ered-body") && s.contains('…'));
        assert_eq!(shorten_middle("short", 20), "short");
        assert_eq!(truncate("abcdef", 4), "abc…");
        let r = row(&format!("{:<30}", "id"), text, 80, 20);
        assert!(r.lines().all(|l| cols(l) <= 80), "{r}");
        assert!(r.lines().count() > 1);
        let r = row(&format!("{:<70}", "id"), text, 80, 20);
        assert!(r.lines().all(|l| cols(l) <= 80), "{r}");
        assert!(r.lines().nth(1).unwrap().starts_with("    A node"));
        let long = "x".repeat(90);
        assert!(wrap(&long, 80).iter().all(|l| cols(l) <= 80));
    }
}
