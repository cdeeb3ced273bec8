//! The HTML certificate: a self-contained directory (inline CSS, no scripts, no external
//! assets) with `index.html` — target, date, the verdict, counts by area and outcome, every
//! case — and one page per case under `cases/<id>.html` with the requirement, spec refs,
//! outcome, expected vs. actual and every exchange. Everything from the target is escaped.

use super::RunReport;
use crate::case::Case;
use crate::outcome::{CaseResult, Outcome};
use loom_client::Transcript;
use std::fmt::Write;
use std::path::Path;

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The file name of a case page (IDs are `[a-z0-9._-]`; anything else becomes `_`).
pub fn case_file(id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.html")
}

/// The inline stylesheet shared by every page (also used by the merged matrix).
pub const CSS: &str = r#"
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;background:#f5f6f8}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:24px;margin:0 0 4px}
h1.mono{font-size:20px;word-break:break-all}
h3{font-size:13px;margin:10px 0 4px;color:#5a6475}
h2{font-size:17px;margin:28px 0 10px}
a{color:#1f5fbf;text-decoration:none}a:hover{text-decoration:underline}
.meta{color:#5a6475;margin:0 0 16px}
.meta b{color:#1d2430;font-weight:600}
.banner{border-radius:10px;padding:18px 22px;margin:16px 0 20px;color:#fff;display:flex;align-items:center;gap:18px}
.banner .big{font-size:26px;font-weight:700}
.banner .sub{opacity:.92}
.banner.ok{background:linear-gradient(90deg,#1d7a46,#2a9d5c)}
.banner.bad{background:linear-gradient(90deg,#a12828,#c94040)}
.banner.partial{background:linear-gradient(90deg,#8a6d12,#b08a1c)}
.chips{display:flex;flex-wrap:wrap;gap:8px;margin:0 0 8px}
.chip{background:#fff;border:1px solid #dde1e8;border-radius:999px;padding:3px 12px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e8;border-radius:8px;overflow:hidden}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid #eceff3;vertical-align:top}
th{background:#eef1f5;font-weight:600;font-size:13px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.zero{color:#b5bcc8}
tr:last-child td{border-bottom:0}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.o{display:inline-block;border-radius:4px;padding:1px 7px;font-size:12px;font-weight:600;white-space:nowrap}
.o-pass{background:#dcf3e4;color:#17643a}
.o-fail,.o-error,.o-unexpected-pass{background:#fbdede;color:#9b1c1c}
.o-non-strict,.o-informational{background:#fdf0d2;color:#85590a}
.o-skipped,.o-unsupported,.o-expected-fail{background:#e7eaf0;color:#4a5263}
.o-none{background:#f1f2f4;color:#9aa1ad}
dl.kv{display:grid;grid-template-columns:150px 1fr;gap:6px 14px;background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:14px 16px;margin:0}
dl.kv dt{color:#5a6475}dl.kv dd{margin:0}
.ea{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.ea div{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:10px 14px}
.ea h3{margin:0 0 6px;font-size:13px;color:#5a6475}
.ea .exp{border-left:4px solid #2a9d5c}.ea .act{border-left:4px solid #c94040}
details.x{background:#fff;border:1px solid #dde1e8;border-radius:8px;margin:0 0 10px}
details.x>summary{cursor:pointer;padding:8px 12px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
details.x.decisive{border-color:#c94040;box-shadow:0 0 0 1px #c94040}
details.x .body{padding:0 12px 12px}
pre{background:#f6f8fa;border:1px solid #e3e6eb;border-radius:6px;padding:8px 10px;overflow:auto;max-height:420px;white-space:pre-wrap;word-break:break-all;margin:4px 0 10px}
table.h{font-size:12.5px;margin:4px 0 10px}
table.h td:first-child{width:220px;color:#5a6475}
.tag{font-size:11px;font-weight:700;color:#c94040;margin-left:8px}
.howto{background:#fff;border:1px solid #dde1e8;border-left:4px solid #1f5fbf;border-radius:8px;padding:10px 14px;margin:0 0 16px}
footer{color:#8a93a3;margin-top:32px;font-size:12px}
.matrix td.c{text-align:center}
"#;

/// A complete page around `body`.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body><main>\n{body}\n<footer>loom-conformance {} · LOOM protocol v1.1</footer>\n</main></body>\n</html>\n",
        escape(title),
        env!("CARGO_PKG_VERSION")
    )
}

/// An outcome badge.
pub fn badge(o: Outcome) -> String {
    format!("<span class=\"o o-{0}\">{0}</span>", o.name())
}

/// The banner: its class (`ok`, `bad` or `partial`), headline and the line under it.
fn verdict(r: &RunReport) -> (&'static str, String, String) {
    let v = r.verdict();
    let failing = r
        .results
        .iter()
        .filter(|(_, x)| x.outcome.fails_run())
        .count();
    let counts = if failing == 0 {
        format!("{} cases, none failing", r.results.len())
    } else {
        format!(
            "{failing} of {} cases failing (fail, error or unexpected-pass)",
            r.results.len()
        )
    };
    let class = match &v {
        super::LevelVerdict::Achieved(_) if failing == 0 => "ok",
        super::LevelVerdict::Partial(_) => "partial",
        _ => "bad",
    };
    let detail = v.detail();
    let sub = if detail.is_empty() {
        counts
    } else {
        format!("{counts} · {detail}")
    };
    (class, v.headline(), sub)
}

/// The one-line guide on the certificate's first screen.
pub fn how_to_read(seed: u64) -> String {
    format!(
        "each case checks one spec requirement (stable ID; `loom-conformance explain ID` says which sentence). fail = a MUST broken; non-strict = a SHOULD not followed; error = the harness could not reach the requirement (its message names the step and the fix); skipped/unsupported = does not apply to this node. Open a case for expected vs. actual and every exchange, the deciding one marked. Reproduce with `loom-conformance run --seed {seed}`."
    )
}

fn index(r: &RunReport) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>LOOM conformance certificate</h1>");
    let _ = writeln!(
        b,
        "<p class=\"meta\">Target <b>{}</b> (node <b>{}</b>{}) · started <b>{}</b> · {:.1} s · level requested <b>{}</b>{} · seed {}</p>",
        escape(&r.target),
        escape(&r.node),
        if r.embedded {
            ", embedded reference node"
        } else {
            ""
        },
        escape(&r.started_at),
        r.duration.as_secs_f64(),
        r.level,
        if r.strict { " · strict" } else { "" },
        r.seed
    );
    let (class, big, sub) = verdict(r);
    let mark = match class {
        "ok" => "✔ ",
        "partial" => "◐ ",
        _ => "✘ ",
    };
    let _ = writeln!(
        b,
        "<div class=\"banner {class}\"><div class=\"big\">{mark}{}</div><div class=\"sub\">{}</div></div>",
        escape(&big),
        escape(&sub)
    );
    let _ = writeln!(
        b,
        "<p class=\"howto\"><b>How to read this:</b> {}</p>",
        escape(&how_to_read(r.seed))
    );
    let counts = r.counts();
    b.push_str("<div class=\"chips\">");
    for o in Outcome::ALL {
        if let Some(n) = counts.get(&o) {
            let _ = write!(b, "<span class=\"chip\">{} {n}</span>", badge(o));
        }
    }
    b.push_str("</div>\n<h2>By area</h2>\n<table><tr><th>area</th>");
    for o in Outcome::ALL {
        let _ = write!(b, "<th class=\"n\">{}</th>", o.name());
    }
    b.push_str("<th class=\"n\">total</th></tr>\n");
    for (area, m) in r.by_area() {
        let _ = write!(b, "<tr><td>{}</td>", escape(area));
        for o in Outcome::ALL {
            let n = m.get(&o).copied().unwrap_or(0);
            let cls = if n == 0 { "n zero" } else { "n" };
            let _ = write!(b, "<td class=\"{cls}\">{n}</td>");
        }
        let _ = writeln!(b, "<td class=\"n\">{}</td></tr>", m.values().sum::<usize>());
    }
    b.push_str("</table>\n<h2>Cases</h2>\n<table><tr><th>case</th><th>level</th><th>strength</th><th>spec</th><th>outcome</th><th class=\"n\">ms</th></tr>\n");
    for (c, res) in &r.results {
        let _ = writeln!(
            b,
            "<tr><td class=\"mono\"><a href=\"cases/{}\">{}</a></td><td>L{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:.0}</td></tr>",
            escape(&case_file(c.id)),
            escape(c.id),
            c.level,
            c.strength,
            escape(&c.spec.join(", ")),
            badge(res.outcome),
            res.duration.as_secs_f64() * 1000.0
        );
    }
    b.push_str("</table>\n");
    page(&format!("LOOM conformance — {}", r.target), &b)
}

/// A body as text: pretty JSON when it is JSON, UTF-8 (lossy) otherwise.
fn body_text(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return String::new();
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(bytes)
        && let Ok(s) = serde_json::to_string_pretty(&v)
    {
        return s;
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => format!(
            "({} bytes, not UTF-8) {}",
            bytes.len(),
            String::from_utf8_lossy(bytes)
        ),
    }
}

fn headers_table(h: &[(String, String)]) -> String {
    if h.is_empty() {
        return "<p class=\"meta\">(no headers)</p>".into();
    }
    let mut s = String::from("<table class=\"h\">");
    for (k, v) in h {
        let v = if k.eq_ignore_ascii_case("authorization") {
            "Bearer … (redacted)"
        } else {
            v
        };
        let _ = write!(
            s,
            "<tr><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>",
            escape(k),
            escape(v)
        );
    }
    s.push_str("</table>");
    s
}

fn exchange(i: usize, t: &Transcript, decisive: bool, open: bool) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<details class=\"x{}\"{}><summary>#{} {} {} → {} · {} · {:.1} ms{}</summary><div class=\"body\">",
        if decisive { " decisive" } else { "" },
        if open { " open" } else { "" },
        i + 1,
        escape(&t.method),
        escape(&t.path),
        t.status,
        escape(&t.version),
        t.elapsed.as_secs_f64() * 1000.0,
        if decisive {
            "<span class=\"tag\">DECIDING EXCHANGE</span>"
        } else {
            ""
        }
    );
    let _ = write!(s, "<h3>Request</h3>{}", headers_table(&t.request_headers));
    if !t.request_body.is_empty() {
        let _ = write!(s, "<pre>{}</pre>", escape(&body_text(&t.request_body)));
    }
    let _ = write!(
        s,
        "<h3>Response {}</h3>{}",
        t.status,
        headers_table(&t.response_headers)
    );
    if !t.response_body.is_empty() {
        let _ = write!(s, "<pre>{}</pre>", escape(&body_text(&t.response_body)));
    }
    s.push_str("</div></details>\n");
    s
}

fn case_page(r: &RunReport, c: &Case, res: &CaseResult) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<p class=\"meta\"><a href=\"../index.html\">← certificate for {}</a></p>",
        escape(&r.target)
    );
    let _ = writeln!(
        b,
        "<h1 class=\"mono\">{}</h1><p>{}</p>",
        escape(c.id),
        badge(res.outcome)
    );
    let _ = writeln!(
        b,
        "<dl class=\"kv\"><dt>requirement</dt><dd>{}</dd><dt>strength · level</dt><dd>{} · level {}</dd><dt>spec</dt><dd>{}</dd><dt>covers</dt><dd class=\"mono\">{}</dd><dt>how it is tested</dt><dd>{}</dd>{}<dt>outcome</dt><dd>{}</dd>{}<dt>duration</dt><dd>{:.1} ms, {} exchange(s)</dd></dl>",
        escape(c.requirement),
        c.strength,
        c.level,
        escape(&c.spec.join(", ")),
        escape(&c.covers.join(", ")),
        escape(c.how),
        c.interpretation
            .map(|i| format!("<dt>interpretation</dt><dd>{}</dd>", escape(i)))
            .unwrap_or_default(),
        badge(res.outcome),
        res.message
            .as_ref()
            .map(|m| format!("<dt>message</dt><dd>{}</dd>", escape(m)))
            .unwrap_or_default(),
        res.duration.as_secs_f64() * 1000.0,
        res.transcripts.len()
    );
    if res.expected.is_some() || res.actual.is_some() {
        let _ = writeln!(
            b,
            "<h2>Expected vs. actual</h2><div class=\"ea\"><div class=\"exp\"><h3>expected</h3>{}</div><div class=\"act\"><h3>actual</h3>{}</div></div>",
            escape(res.expected.as_deref().unwrap_or("")),
            escape(res.actual.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(b, "<h2>Exchanges ({})</h2>", res.transcripts.len());
    if res.transcripts.is_empty() {
        b.push_str("<p class=\"meta\">The case made no requests (the JSON report and the message above say why).</p>");
    }
    for (i, t) in res.transcripts.iter().enumerate() {
        let decisive = res.decisive == Some(i);
        // Short transcripts and the deciding exchange are open; the rest fold (no script).
        let open = decisive || res.transcripts.len() <= 2;
        b.push_str(&exchange(i, t, decisive, open));
    }
    page(&format!("{} — LOOM conformance", c.id), &b)
}

/// Writes the certificate into `dir` (created if missing).
pub fn write(r: &RunReport, dir: &Path) -> std::io::Result<()> {
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases)?;
    std::fs::write(dir.join("index.html"), index(r))?;
    for (c, res) in &r.results {
        std::fs::write(cases.join(case_file(c.id)), case_page(r, c, res))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(case_file("core.a/b"), "core.a_b.html");
    }
}
