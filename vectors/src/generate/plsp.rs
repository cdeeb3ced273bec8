//! PLSP v0.5 vectors (`docs/specs/plsp-v0.5.md`; choices in `reference/plsp/GRAMMAR.md` and
//! `IMF.md`): `plsp-parse`, `plsp-serialize`, `plsp-state`, `plsp-engine`. Every expectation
//! below is a literal written from those texts, never produced by `loom-plsp`.

use super::schema::{AreaSchema, string};
use super::{Case, FileBuilder};
use serde_json::{Value, json};

/// Parse error codes (GRAMMAR.md "Errors").
pub const PARSE_ERRORS: &[&str] = &[
    "INVALID_UTF8",
    "BLOCK_TOO_LARGE",
    "EXPECTED_BLOCK_START",
    "UNTERMINATED_BLOCK",
    "TRAILING_CONTENT",
    "EXPECTED_STATEMENT",
    "EMPTY_STATEMENT",
    "COMMENT_NOT_ALLOWED",
    "BAD_IDENTIFIER",
    "EXPECTED_COLON",
    "EXPECTED_VALUE",
    "UNTERMINATED_STRING",
    "BAD_NUMBER",
    "EXPECTED_SEPARATOR",
    "BAD_ACTION_NAME",
    "DUPLICATE_VARIABLE",
];

/// State-rule codes (GRAMMAR.md "State rules").
pub const STATE_ERRORS: &[&str] = &[
    "UNDEFINED_REFERENCE",
    "REFERENCE_CYCLE",
    "DROPPED_VARIABLE",
    "BLOCK_TOO_LARGE",
    "TOO_MANY_VARIABLES",
    "STRING_TOO_LONG",
    "TOO_MANY_STATEMENTS",
];

/// Engine codes (IMF.md "Errors").
pub const ENGINE_ERRORS: &[&str] = &[
    "IMF_SYNTAX",
    "UNDEFINED_VARIABLE",
    "TYPE_MISMATCH",
    "FETCH_UNAVAILABLE",
    "PREVIOUS_INVALID",
];

fn all(extra: &[&'static str]) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = PARSE_ERRORS.to_vec();
    for e in extra {
        if !v.contains(e) {
            v.push(e);
        }
    }
    v
}

/// Schema of `plsp-parse`.
pub fn parse_schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["plsp-parse"],
        inputs: vec![("text", string())],
        required: vec!["text"],
        expected: json!({"type": "array"}),
        errors: PARSE_ERRORS.to_vec(),
    }
}

/// Schema of `plsp-serialize`.
pub fn serialize_schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["plsp-serialize"],
        inputs: vec![("text", string())],
        required: vec!["text"],
        expected: string(),
        errors: PARSE_ERRORS.to_vec(),
    }
}

/// Schema of `plsp-state`.
pub fn state_schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["plsp-check-transition"],
        inputs: vec![
            ("previous", string()),
            ("next", string()),
            (
                "limits",
                json!({"type": "object", "additionalProperties": false, "properties": {
                    "max_block_bytes": {"type": "integer"}, "max_variables": {"type": "integer"},
                    "max_string_bytes": {"type": "integer"}, "max_statements": {"type": "integer"}}}),
            ),
        ],
        required: vec!["previous", "next"],
        expected: json!({"type": "object", "additionalProperties": {"type": "string"}}),
        errors: all(STATE_ERRORS),
    }
}

/// Schema of `plsp-engine`.
pub fn engine_schema() -> AreaSchema {
    AreaSchema {
        kinds: vec!["plsp-engine-step"],
        inputs: vec![
            ("previous", string()),
            ("instr", string()),
            (
                "inputs",
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
            ),
        ],
        required: vec!["previous", "instr", "inputs"],
        expected: string(),
        errors: ENGINE_ERRORS.to_vec(),
    }
}

fn s(x: &str) -> Value {
    json!({"str": x})
}
fn n(x: &str) -> Value {
    json!({"num": x})
}
fn r(x: &str) -> Value {
    json!({"ref": x})
}
fn set(id: &str, v: Value) -> Value {
    json!({"set": id, "value": v})
}
fn log(vs: Vec<Value>) -> Value {
    json!({"log": vs})
}
fn act(name: &str, ps: Vec<Value>) -> Value {
    json!({"action": name, "params": ps})
}

fn case(id: &str, comment: &str, flags: &[&str], spec: &[&str]) -> Case {
    let spec: Vec<String> = spec
        .iter()
        .map(|x| {
            if x.starts_with('§') {
                format!("PLSP v0.5 {x}")
            } else {
                (*x).to_owned()
            }
        })
        .collect();
    let spec: Vec<&str> = spec.iter().map(String::as_str).collect();
    Case::new(id, comment, &spec).flags(flags)
}

fn parse_notes(f: FileBuilder) -> FileBuilder {
    f.note(
        "Spec",
        "a block written in the PLSP v0.5 text itself",
        "spec incompatibility",
        "the spec's own examples are rejected or misread",
    )
    .note(
        "Syntax",
        "the statement grammar of §4",
        "lenient or broken parser",
        "malformed blocks are accepted or valid ones rejected",
    )
    .note(
        "Whitespace",
        "whitespace between tokens and around the block (§4.2)",
        "tokenizer bug",
        "blocks from models that add spaces are misread",
    )
    .note(
        "Number",
        "number literals and their canonical form (§4.4)",
        "number mangling",
        "values change or compare wrongly",
    )
    .note(
        "String",
        "string literals without escapes (§4.4)",
        "string handling",
        "strings are cut, altered or run past their end",
    )
    .note(
        "Comment",
        "comments are forbidden (§4.2)",
        "lenient parser",
        "commented-out state is silently dropped or kept",
    )
    .note(
        "Interpretation",
        "a choice the spec leaves open, stated in GRAMMAR.md",
        "interpretation",
        "implementations disagree on the same block",
    )
}

type Row = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static str,
    Value,
);
type ErrRow = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static str,
    &'static str,
);

fn parse_valid() -> Vec<Row> {
    vec![
        (
            "spec.state-block",
            "§4.1 example",
            &["Spec"],
            &["§4.1"],
            r#"S{$p:"run";$t:75;$l:70;!wait,5000;}S"#,
            json!([
                set("p", s("run")),
                set("t", n("75")),
                set("l", n("70")),
                act("wait", vec![n("5000")])
            ]),
        ),
        (
            "spec.assignments",
            "§4.3 example: string, number, reference",
            &["Spec"],
            &["§4.3"],
            r#"S{$i:"user_input";$c:10;$r:$i;}S"#,
            json!([
                set("i", s("user_input")),
                set("c", n("10")),
                set("r", r("i"))
            ]),
        ),
        (
            "spec.log",
            "§4.5 example with a space before `>`",
            &["Spec", "Whitespace"],
            &["§4.5"],
            r#"S{$t:75; >"Temp OK",$t;}S"#,
            json!([set("t", n("75")), log(vec![s("Temp OK"), r("t")])]),
        ),
        (
            "spec.page",
            "§4.6 example: page with references, then wait",
            &["Spec"],
            &["§4.6"],
            r#"S{$u:"op";$m:"CPU High"; !page,$u,$m; !wait,1000;}S"#,
            json!([
                set("u", s("op")),
                set("m", s("CPU High")),
                act("page", vec![r("u"), r("m")]),
                act("wait", vec![n("1000")])
            ]),
        ),
        (
            "spec.literal-dollar",
            "§4.4: `\"T:$t\"` is literal text, not a reference",
            &["Spec", "String"],
            &["§4.4"],
            r#"S{$s:"T:$t";}S"#,
            json!([set("s", s("T:$t"))]),
        ),
        (
            "spec.empty",
            "§2: `S{}S` on the first cycle",
            &["Spec"],
            &["§2"],
            "S{}S",
            json!([]),
        ),
        (
            "empty.space",
            "an empty block with whitespace inside",
            &["Whitespace"],
            &["§4.2"],
            "S{ }S",
            json!([]),
        ),
        (
            "around.whitespace",
            "whitespace before and after the block",
            &["Whitespace", "Interpretation"],
            &["§4.2", "GRAMMAR.md choice 12"],
            "  \nS{$a:1;}S\n",
            json!([set("a", n("1"))]),
        ),
        (
            "last.no-semicolon",
            "`;` after the last statement is optional",
            &["Interpretation"],
            &["§4.2", "GRAMMAR.md choice 1"],
            "S{$a:1}S",
            json!([set("a", n("1"))]),
        ),
        (
            "last.no-semicolon-action",
            "an action as the last statement without `;`",
            &["Interpretation"],
            &["§4.6", "GRAMMAR.md choice 1"],
            "S{!stop}S",
            json!([act("stop", vec![])]),
        ),
        (
            "action.no-params",
            "an action without parameters",
            &["Syntax", "Interpretation"],
            &["§4.6", "GRAMMAR.md choice 10"],
            "S{!stop;}S",
            json!([act("stop", vec![])]),
        ),
        (
            "ws.between-tokens",
            "whitespace between every pair of tokens",
            &["Whitespace"],
            &["§4.2", "GRAMMAR.md choice 2"],
            r#"S{ $a : 1 ; > "x" , $a ; ! wait , 5 ; }S"#,
            json!([
                set("a", n("1")),
                log(vec![s("x"), r("a")]),
                act("wait", vec![n("5")])
            ]),
        ),
        (
            "ws.newlines-tabs",
            "tabs, LF and CRLF between statements",
            &["Whitespace"],
            &["§4.2"],
            "S{\n\t$a:1;\r\n\t$b:2;\n}S",
            json!([set("a", n("1")), set("b", n("2"))]),
        ),
        (
            "ident.extended",
            "§4.3 extension: letters and digits after the first letter",
            &["Syntax"],
            &["§4.3"],
            "S{$a1:1;$x9:2;$Temp:3;}S",
            json!([set("a1", n("1")), set("x9", n("2")), set("Temp", n("3"))]),
        ),
        (
            "ident.case",
            "`$a` and `$A` are different variables",
            &["Syntax", "Interpretation"],
            &["§4.3", "GRAMMAR.md choice 4"],
            "S{$a:1;$A:2;}S",
            json!([set("a", n("1")), set("A", n("2"))]),
        ),
        (
            "number.decimal",
            "§4.4 `3.14`",
            &["Number", "Spec"],
            &["§4.4"],
            "S{$p:3.14;}S",
            json!([set("p", n("3.14"))]),
        ),
        (
            "number.negative",
            "a leading `-` is accepted",
            &["Number", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 7"],
            "S{$t:-5;}S",
            json!([set("t", n("-5"))]),
        ),
        (
            "number.leading-zeros",
            "`007` is the number 7",
            &["Number", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 7"],
            "S{$a:007;}S",
            json!([set("a", n("7"))]),
        ),
        (
            "number.trailing-zeros",
            "`1.50` is 1.5",
            &["Number", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 7"],
            "S{$a:1.50;}S",
            json!([set("a", n("1.5"))]),
        ),
        (
            "number.zero-fraction",
            "`2.000` is 2",
            &["Number", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 7"],
            "S{$a:2.000;}S",
            json!([set("a", n("2"))]),
        ),
        (
            "number.negative-zero",
            "`-0.0` is 0",
            &["Number", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 7"],
            "S{$a:-0.0;}S",
            json!([set("a", n("0"))]),
        ),
        (
            "number.big",
            "numbers are exact, whatever their size",
            &["Number"],
            &["§4.4", "GRAMMAR.md choice 7"],
            "S{$n:123456789012345678901234567890;}S",
            json!([set("n", n("123456789012345678901234567890"))]),
        ),
        (
            "string.empty",
            "the empty string",
            &["String"],
            &["§4.4"],
            r#"S{$a:"";}S"#,
            json!([set("a", s(""))]),
        ),
        (
            "string.syntax-inside",
            "`;`, `}S` inside a string are literal",
            &["String", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 6"],
            r#"S{$a:";}S";}S"#,
            json!([set("a", s(";}S"))]),
        ),
        (
            "string.hash",
            "`#` inside a string is not a comment",
            &["String", "Comment"],
            &["§4.2", "§4.4"],
            r##"S{$a:"#1";}S"##,
            json!([set("a", s("#1"))]),
        ),
        (
            "string.newline",
            "a raw newline inside a string is kept",
            &["String", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 6"],
            "S{$a:\"a\nb\";}S",
            json!([set("a", s("a\nb"))]),
        ),
        (
            "string.unicode",
            "non-ASCII text",
            &["String"],
            &["§4.4"],
            "S{$a:\"温度 ✓\";}S",
            json!([set("a", s("温度 ✓"))]),
        ),
        (
            "string.spaces",
            "spaces inside strings are kept",
            &["String", "Whitespace"],
            &["§4.2", "§4.4"],
            r#"S{$a:"  x  ";}S"#,
            json!([set("a", s("  x  "))]),
        ),
        (
            "ref.forward",
            "a reference to a later assignment is syntactically fine",
            &["Syntax", "Interpretation"],
            &["§4.3", "GRAMMAR.md choice 9"],
            "S{$r:$i;$i:1;}S",
            json!([set("r", r("i")), set("i", n("1"))]),
        ),
        (
            "ref.undefined-parses",
            "an undefined reference is a state rule, not a syntax error",
            &["Syntax", "Interpretation"],
            &["§4.3", "GRAMMAR.md choice 9"],
            "S{$a:$zz;}S",
            json!([set("a", r("zz"))]),
        ),
        (
            "log.several",
            "`>` with three values",
            &["Syntax"],
            &["§4.5"],
            "S{>1,2,3;}S",
            json!([log(vec![n("1"), n("2"), n("3")])]),
        ),
        (
            "action.underscore",
            "action names may hold `_`",
            &["Syntax", "Interpretation"],
            &["§4.6", "GRAMMAR.md choice 5"],
            r#"S{!send_mail,"x";}S"#,
            json!([act("send_mail", vec![s("x")])]),
        ),
        (
            "order.interleaved",
            "statement order is kept, commands may precede assignments",
            &["Syntax", "Interpretation"],
            &["§4.2", "GRAMMAR.md choice 11"],
            r#"S{!wait,1;$a:1;>"x";$b:2;}S"#,
            json!([
                act("wait", vec![n("1")]),
                set("a", n("1")),
                log(vec![s("x")]),
                set("b", n("2"))
            ]),
        ),
        (
            "action.ref-param",
            "a reference as an action parameter",
            &["Syntax"],
            &["§4.6"],
            r#"S{$u:"op";!page,$u;}S"#,
            json!([set("u", s("op")), act("page", vec![r("u")])]),
        ),
    ]
}

fn parse_invalid() -> Vec<ErrRow> {
    vec![
        (
            "empty.input",
            "no block at all (offset 0)",
            &["Syntax"],
            &["§4.1"],
            "",
            "EXPECTED_BLOCK_START",
        ),
        (
            "empty.whitespace",
            "only whitespace (offset 3)",
            &["Syntax"],
            &["§4.1"],
            "   ",
            "EXPECTED_BLOCK_START",
        ),
        (
            "block.no-delimiters",
            "statements without `S{`…`}S` (offset 0)",
            &["Syntax"],
            &["§4.1"],
            "$a:1;",
            "EXPECTED_BLOCK_START",
        ),
        (
            "block.lowercase-s",
            "`s{` is not `S{` (offset 0)",
            &["Syntax"],
            &["§4.1"],
            "s{$a:1;}S",
            "EXPECTED_BLOCK_START",
        ),
        (
            "block.space-in-opener",
            "`S {` splits the `S{` token (offset 0)",
            &["Whitespace", "Interpretation"],
            &["§4.1", "GRAMMAR.md choice 2"],
            "S {$a:1;}S",
            "EXPECTED_BLOCK_START",
        ),
        (
            "block.json",
            "JSON is not a state block (offset 0)",
            &["Syntax"],
            &["§4.1"],
            "{\"a\":1}",
            "EXPECTED_BLOCK_START",
        ),
        (
            "block.prose-before",
            "chatty text before the block (offset 0); only lenient extraction allows it",
            &["Syntax", "Interpretation"],
            &["§2", "GRAMMAR.md choice 12"],
            "Sure: S{$a:1;}S",
            "EXPECTED_BLOCK_START",
        ),
        (
            "block.unterminated",
            "input ends before `}S` (offset 7)",
            &["Syntax"],
            &["§4.1"],
            "S{$a:1;",
            "UNTERMINATED_BLOCK",
        ),
        (
            "block.missing-final-s",
            "`}` without `S` (offset 7)",
            &["Syntax"],
            &["§4.1"],
            "S{$a:1;}",
            "UNTERMINATED_BLOCK",
        ),
        (
            "block.space-in-closer",
            "`} S` splits the `}S` token (offset 7)",
            &["Whitespace", "Interpretation"],
            &["§4.1", "GRAMMAR.md choice 2"],
            "S{$a:1;} S",
            "UNTERMINATED_BLOCK",
        ),
        (
            "block.trailing",
            "text after `}S` (offset 10)",
            &["Syntax"],
            &["§2", "GRAMMAR.md choice 12"],
            "S{$a:1;}S x",
            "TRAILING_CONTENT",
        ),
        (
            "block.two",
            "two blocks in one output (offset 4)",
            &["Syntax"],
            &["§2"],
            "S{}SS{}S",
            "TRAILING_CONTENT",
        ),
        (
            "stmt.empty-block",
            "`;` alone (offset 2)",
            &["Syntax", "Interpretation"],
            &["§4.2", "GRAMMAR.md choice 1"],
            "S{;}S",
            "EMPTY_STATEMENT",
        ),
        (
            "stmt.double-semicolon",
            "`;;` (offset 7)",
            &["Syntax", "Interpretation"],
            &["§4.2", "GRAMMAR.md choice 1"],
            "S{$a:1;;}S",
            "EMPTY_STATEMENT",
        ),
        (
            "comment.line",
            "a `#` comment (offset 2)",
            &["Comment"],
            &["§4.2"],
            "S{#note\n$a:1;}S",
            "COMMENT_NOT_ALLOWED",
        ),
        (
            "comment.after-statement",
            "a `#` comment after a value (offset 7)",
            &["Comment"],
            &["§4.2"],
            "S{$a:1 #x\n}S",
            "COMMENT_NOT_ALLOWED",
        ),
        (
            "stmt.bare-word",
            "a statement without `$`, `>` or `!` (offset 2)",
            &["Syntax"],
            &["§4.2"],
            "S{a:1;}S",
            "EXPECTED_STATEMENT",
        ),
        (
            "stmt.nested-block",
            "blocks do not nest (offset 2)",
            &["Syntax"],
            &["§4.1"],
            "S{S{}S}S",
            "EXPECTED_STATEMENT",
        ),
        (
            "ident.digit-first",
            "`$1` (offset 3)",
            &["Syntax"],
            &["§4.3"],
            "S{$1:1;}S",
            "BAD_IDENTIFIER",
        ),
        (
            "ident.empty",
            "`$` alone (offset 3)",
            &["Syntax"],
            &["§4.3"],
            "S{$:1;}S",
            "BAD_IDENTIFIER",
        ),
        (
            "ident.space-after-dollar",
            "`$ a` (offset 3)",
            &["Whitespace"],
            &["§4.3", "GRAMMAR.md choice 2"],
            "S{$ a:1;}S",
            "BAD_IDENTIFIER",
        ),
        (
            "ident.ref-empty",
            "a reference `$` with no name (offset 6)",
            &["Syntax"],
            &["§4.3"],
            "S{$a:$;}S",
            "BAD_IDENTIFIER",
        ),
        (
            "ident.underscore",
            "`_` is not part of a variable name, so `:` is missing (offset 4)",
            &["Syntax", "Interpretation"],
            &["§4.3", "GRAMMAR.md choice 4"],
            "S{$a_b:1;}S",
            "EXPECTED_COLON",
        ),
        (
            "assign.equals",
            "`=` instead of `:` (offset 4)",
            &["Syntax"],
            &["§4.3"],
            "S{$a=1;}S",
            "EXPECTED_COLON",
        ),
        (
            "value.missing",
            "`$a:;` (offset 5)",
            &["Syntax"],
            &["§4.3"],
            "S{$a:;}S",
            "EXPECTED_VALUE",
        ),
        (
            "value.bare-word",
            "an unquoted word (offset 5)",
            &["String"],
            &["§4.4"],
            "S{$a:run;}S",
            "EXPECTED_VALUE",
        ),
        (
            "value.single-quotes",
            "single quotes (offset 5)",
            &["String"],
            &["§4.4"],
            "S{$a:'x';}S",
            "EXPECTED_VALUE",
        ),
        (
            "value.true",
            "no booleans (offset 5)",
            &["Syntax"],
            &["§4.4"],
            "S{$a:true;}S",
            "EXPECTED_VALUE",
        ),
        (
            "value.object",
            "no nested structures (offset 5)",
            &["Syntax"],
            &["§4.4"],
            "S{$a:{\"x\":1};}S",
            "EXPECTED_VALUE",
        ),
        (
            "string.unterminated",
            "no closing quote (offset 5, the opening quote)",
            &["String"],
            &["§4.4"],
            "S{$a:\"x;}S",
            "UNTERMINATED_STRING",
        ),
        (
            "string.no-escapes",
            "`\\\"` does not escape: the string ends at the second quote, then `y` follows (offset 9)",
            &["String"],
            &["§4.4"],
            "S{$a:\"x\\\"y\";}S",
            "EXPECTED_SEPARATOR",
        ),
        (
            "number.trailing-dot",
            "`1.` (offset 5)",
            &["Number"],
            &["§4.4"],
            "S{$a:1.;}S",
            "BAD_NUMBER",
        ),
        (
            "number.leading-dot",
            "`.5` cannot start a value (offset 5)",
            &["Number"],
            &["§4.4"],
            "S{$a:.5;}S",
            "EXPECTED_VALUE",
        ),
        (
            "number.plus",
            "`+1` (offset 5)",
            &["Number", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 7"],
            "S{$a:+1;}S",
            "EXPECTED_VALUE",
        ),
        (
            "number.exponent",
            "`1e3` (offset 5)",
            &["Number"],
            &["§4.4"],
            "S{$a:1e3;}S",
            "BAD_NUMBER",
        ),
        (
            "number.two-dots",
            "`1.2.3` (offset 5)",
            &["Number"],
            &["§4.4"],
            "S{$a:1.2.3;}S",
            "BAD_NUMBER",
        ),
        (
            "number.minus-alone",
            "`-` (offset 5)",
            &["Number"],
            &["§4.4"],
            "S{$a:-;}S",
            "BAD_NUMBER",
        ),
        (
            "number.space-inside",
            "`1 .5`: a number is one token (offset 7)",
            &["Number", "Whitespace"],
            &["§4.4", "GRAMMAR.md choice 2"],
            "S{$a:1 .5;}S",
            "EXPECTED_SEPARATOR",
        ),
        (
            "sep.missing",
            "two statements without `;` (offset 7)",
            &["Syntax"],
            &["§4.2"],
            "S{$a:1 $b:2;}S",
            "EXPECTED_SEPARATOR",
        ),
        (
            "sep.comma",
            "`,` does not separate assignments (offset 6)",
            &["Syntax"],
            &["§4.2"],
            "S{$a:1,$b:2;}S",
            "EXPECTED_SEPARATOR",
        ),
        (
            "log.empty",
            "`>` with no value (offset 3)",
            &["Syntax", "Interpretation"],
            &["§4.5", "GRAMMAR.md choice 10"],
            "S{>;}S",
            "EXPECTED_VALUE",
        ),
        (
            "log.trailing-comma",
            "`>1,` (offset 5)",
            &["Syntax"],
            &["§4.5"],
            "S{>1,;}S",
            "EXPECTED_VALUE",
        ),
        (
            "action.no-name",
            "`!` alone (offset 3)",
            &["Syntax"],
            &["§4.6"],
            "S{!;}S",
            "BAD_ACTION_NAME",
        ),
        (
            "action.digit-first",
            "`!1x` (offset 3)",
            &["Syntax", "Interpretation"],
            &["§4.6", "GRAMMAR.md choice 5"],
            "S{!1x;}S",
            "BAD_ACTION_NAME",
        ),
        (
            "action.trailing-comma",
            "`!wait,` with no parameter (offset 8)",
            &["Syntax"],
            &["§4.6"],
            "S{!wait,;}S",
            "EXPECTED_VALUE",
        ),
        (
            "dup.variable",
            "a variable assigned twice (offset 7)",
            &["Syntax", "Interpretation"],
            &["§5", "GRAMMAR.md choice 8"],
            "S{$a:1;$a:2;}S",
            "DUPLICATE_VARIABLE",
        ),
        (
            "dup.same-value",
            "even with the same value (offset 8)",
            &["Syntax", "Interpretation"],
            &["§5", "GRAMMAR.md choice 8"],
            "S{$t:1; $t:1;}S",
            "DUPLICATE_VARIABLE",
        ),
    ]
}

/// `plsp-parse.json`.
pub fn parse_file() -> FileBuilder {
    let valid = parse_valid().into_iter().map(|(id, c, f, sp, t, e)| {
        case(&format!("valid.{id}"), c, f, sp)
            .input("text", t)
            .valid_with(e)
    });
    let invalid = parse_invalid().into_iter().map(|(id, c, f, sp, t, e)| {
        case(&format!("invalid.{id}"), c, f, sp)
            .input("text", t)
            .invalid(e)
    });
    parse_notes(FileBuilder::new(
        "plsp-parse",
        "PLSP v0.5 state blocks (specs/plsp-v0.5.md §4; choices in reference/plsp/GRAMMAR.md): text -> statement list, or a parse error code.",
    ))
    .group("plsp-parse", Value::Null)
    .tests(valid)
    .tests(invalid)
}

/// `plsp-serialize.json`.
pub fn serialize_file() -> FileBuilder {
    let rows: Vec<ErrRow> = vec![
        (
            "spec.log",
            "§4.5 example: the space before `>` goes",
            &["Spec", "Whitespace"],
            &["§4.5"],
            r#"S{$t:75; >"Temp OK",$t;}S"#,
            r#"S{$t:75;>"Temp OK",$t;}S"#,
        ),
        (
            "spec.page",
            "§4.6 example",
            &["Spec", "Whitespace"],
            &["§4.6"],
            r#"S{$u:"op";$m:"CPU High"; !page,$u,$m; !wait,1000;}S"#,
            r#"S{$u:"op";$m:"CPU High";!page,$u,$m;!wait,1000;}S"#,
        ),
        (
            "spec.canonical",
            "§4.1 example is already canonical",
            &["Spec"],
            &["§4.1"],
            r#"S{$p:"run";$t:75;$l:70;!wait,5000;}S"#,
            r#"S{$p:"run";$t:75;$l:70;!wait,5000;}S"#,
        ),
        (
            "empty",
            "an empty block",
            &["Whitespace"],
            &["§4.1"],
            "S{ \n }S",
            "S{}S",
        ),
        (
            "final-semicolon",
            "the last `;` is always written",
            &["Interpretation"],
            &["GRAMMAR.md choice 1"],
            "S{$a:1}S",
            "S{$a:1;}S",
        ),
        (
            "whitespace",
            "whitespace between tokens goes",
            &["Whitespace"],
            &["§4.2"],
            r#"S{ $a : 1 ; > "x" , $a ; ! wait , 5 }S"#,
            r#"S{$a:1;>"x",$a;!wait,5;}S"#,
        ),
        (
            "numbers",
            "canonical numbers",
            &["Number", "Interpretation"],
            &["§4.4", "GRAMMAR.md choice 7"],
            "S{$a:007;$b:1.50;$c:2.000;$d:-0;$e:-0.250;}S",
            "S{$a:7;$b:1.5;$c:2;$d:0;$e:-0.25;}S",
        ),
        (
            "number.zero",
            "`000` is `0`",
            &["Number"],
            &["GRAMMAR.md choice 7"],
            "S{$a:000;}S",
            "S{$a:0;}S",
        ),
        (
            "number.fraction",
            "`0.50` is `0.5`",
            &["Number"],
            &["GRAMMAR.md choice 7"],
            "S{$a:0.50;}S",
            "S{$a:0.5;}S",
        ),
        (
            "number.inner-zeros",
            "`10.0100` is `10.01`",
            &["Number"],
            &["GRAMMAR.md choice 7"],
            "S{$n:10.0100;}S",
            "S{$n:10.01;}S",
        ),
        (
            "number.negative",
            "`-007.50` is `-7.5`",
            &["Number"],
            &["GRAMMAR.md choice 7"],
            "S{$n:-007.50;}S",
            "S{$n:-7.5;}S",
        ),
        (
            "number.integer-zeros-kept",
            "zeros of an integer are not trailing fraction zeros",
            &["Number"],
            &["GRAMMAR.md choice 7"],
            "S{$n:100;}S",
            "S{$n:100;}S",
        ),
        (
            "number.thousand",
            "`1000.000` is `1000`",
            &["Number"],
            &["GRAMMAR.md choice 7"],
            "S{$n:1000.000;}S",
            "S{$n:1000;}S",
        ),
        (
            "string.spaces",
            "spaces and `;` inside strings are kept",
            &["String"],
            &["§4.4"],
            r#"S{$a:" x ; y ";}S"#,
            r#"S{$a:" x ; y ";}S"#,
        ),
        (
            "string.newline",
            "a newline inside a string is kept",
            &["String"],
            &["§4.4"],
            "S{$a:\"l1\nl2\";}S",
            "S{$a:\"l1\nl2\";}S",
        ),
        (
            "string.unicode",
            "non-ASCII is kept",
            &["String"],
            &["§4.4"],
            "S{$a:\"温度\";}S",
            "S{$a:\"温度\";}S",
        ),
        (
            "order",
            "order is kept",
            &["Interpretation"],
            &["GRAMMAR.md choice 11"],
            r#"S{!wait,1;$b:2;>"x";$a:1;}S"#,
            r#"S{!wait,1;$b:2;>"x";$a:1;}S"#,
        ),
        (
            "around",
            "whitespace around the block goes",
            &["Whitespace"],
            &["GRAMMAR.md choice 12"],
            "\n\tS{$a:1;}S  \n",
            "S{$a:1;}S",
        ),
        (
            "ident.long",
            "extended identifiers",
            &["Whitespace"],
            &["§4.3"],
            "S{ $Temp1 : 20 ; }S",
            "S{$Temp1:20;}S",
        ),
        (
            "action.bare",
            "an action without parameters",
            &["Whitespace"],
            &["§4.6"],
            "S{ ! stop }S",
            "S{!stop;}S",
        ),
        (
            "crlf",
            "CRLF line ends go",
            &["Whitespace"],
            &["§4.2"],
            "S{\r\n$a:1;\r\n$b:\"x\";\r\n}S",
            "S{$a:1;$b:\"x\";}S",
        ),
        (
            "refs",
            "references are written as references",
            &["Whitespace"],
            &["§4.3"],
            "S{$r : $i ; $i : \"v\" ;}S",
            "S{$r:$i;$i:\"v\";}S",
        ),
    ];
    parse_notes(FileBuilder::new(
        "plsp-serialize",
        "PLSP v0.5 canonical minimal serialization (reference/plsp/GRAMMAR.md \"Canonical form\"): text -> exact canonical text.",
    ))
    .group("plsp-serialize", Value::Null)
    .tests(rows.into_iter().map(|(id, c, f, sp, t, e)| case(id, c, f, sp).input("text", t).valid_with(e)))
}

fn q(x: &str) -> String {
    format!("\"{x}\"")
}

/// `plsp-state.json`.
pub fn state_file() -> FileBuilder {
    let letters: Vec<String> = ('a'..='z')
        .chain('A'..='Z')
        .map(|c| format!("${c}:1;"))
        .collect();
    let fifty_two = format!("S{{{}}}S", letters.concat());
    let fifty_three = format!("S{{{}$a1:1;}}S", letters.concat());
    let long = format!("S{{$a:\"{}\";}}S", "x".repeat(257));
    let at_limit = format!("S{{$a:\"{}\";}}S", "x".repeat(256));
    type St = (
        &'static str,
        &'static str,
        &'static [&'static str],
        &'static [&'static str],
        String,
        String,
        Option<Value>,
        Result<Value, &'static str>,
    );
    let o = |p: &str| p.to_owned();
    let rows: Vec<St> = vec![
        (
            "spec.carry-forward",
            "§5: every variable carried, last value in `$l`",
            &["Spec", "StateComplete"],
            &["§5"],
            o(r#"S{$p:"run";$t:75;$l:70;}S"#),
            o(r#"S{$p:"run";$t:80;$l:75;!wait,5000;}S"#),
            None,
            Ok(json!({"p": q("run"), "t": "80", "l": "75"})),
        ),
        (
            "spec.first-cycle",
            "§2: the first previous block is `S{}S`",
            &["Spec"],
            &["§2", "§5"],
            o("S{}S"),
            o(r#"S{$p:"run";}S"#),
            None,
            Ok(json!({"p": q("run")})),
        ),
        (
            "spec.page",
            "§4.6 example resolves",
            &["Spec", "Reference"],
            &["§4.6"],
            o("S{}S"),
            o(r#"S{$u:"op";$m:"CPU High"; !page,$u,$m; !wait,1000;}S"#),
            None,
            Ok(json!({"u": q("op"), "m": q("CPU High")})),
        ),
        (
            "dropped.one",
            "`$l` is missing",
            &["StateComplete"],
            &["§5"],
            o(r#"S{$p:"run";$t:75;$l:70;}S"#),
            o(r#"S{$p:"run";$t:80;}S"#),
            None,
            Err("DROPPED_VARIABLE"),
        ),
        (
            "dropped.all",
            "an empty next block after a non-empty one",
            &["StateComplete"],
            &["§5"],
            o("S{$a:1;}S"),
            o("S{}S"),
            None,
            Err("DROPPED_VARIABLE"),
        ),
        (
            "dropped.case",
            "`$A` does not carry `$a`",
            &["StateComplete", "Interpretation"],
            &["§5", "GRAMMAR.md choice 4"],
            o("S{$a:1;}S"),
            o("S{$A:1;}S"),
            None,
            Err("DROPPED_VARIABLE"),
        ),
        (
            "reordered",
            "order may change",
            &["StateComplete"],
            &["§5"],
            o("S{$a:1;$b:2;}S"),
            o("S{$b:3;$a:4;}S"),
            None,
            Ok(json!({"a": "4", "b": "3"})),
        ),
        (
            "added",
            "new variables are fine",
            &["StateComplete"],
            &["§5"],
            o("S{$a:1;}S"),
            o("S{$a:1;$b:2;}S"),
            None,
            Ok(json!({"a": "1", "b": "2"})),
        ),
        (
            "commands-not-state",
            "the previous block's `>` and `!` need not be repeated",
            &["StateComplete", "Interpretation"],
            &["§5", "GRAMMAR.md \"State rules\""],
            o(r#"S{$a:1;>"x";!wait,1;}S"#),
            o("S{$a:1;}S"),
            None,
            Ok(json!({"a": "1"})),
        ),
        (
            "ref.spec",
            "§4.3 example: `$r` has the value of `$i`",
            &["Spec", "Reference"],
            &["§4.3"],
            o("S{}S"),
            o(r#"S{$i:"user_input";$c:10;$r:$i;}S"#),
            None,
            Ok(json!({"i": q("user_input"), "c": "10", "r": q("user_input")})),
        ),
        (
            "ref.forward",
            "a reference to a later assignment",
            &["Reference", "Interpretation"],
            &["§4.3", "GRAMMAR.md choice 9"],
            o("S{}S"),
            o("S{$r:$i;$i:1;}S"),
            None,
            Ok(json!({"r": "1", "i": "1"})),
        ),
        (
            "ref.chain",
            "chains are followed",
            &["Reference", "Interpretation"],
            &["§4.3", "GRAMMAR.md choice 9"],
            o("S{}S"),
            o(r#"S{$a:$b;$b:$c;$c:"z";}S"#),
            None,
            Ok(json!({"a": q("z"), "b": q("z"), "c": q("z")})),
        ),
        (
            "ref.undefined",
            "`$zz` is not in the block",
            &["Reference"],
            &["§4.3", "§5"],
            o("S{}S"),
            o("S{$a:$zz;}S"),
            None,
            Err("UNDEFINED_REFERENCE"),
        ),
        (
            "ref.undefined-log",
            "a `>` value names a missing variable",
            &["Reference"],
            &["§4.5", "§5"],
            o("S{}S"),
            o(r#"S{$t:75;>"T",$x;}S"#),
            None,
            Err("UNDEFINED_REFERENCE"),
        ),
        (
            "ref.undefined-action",
            "an action parameter names a missing variable",
            &["Reference"],
            &["§4.6", "§5"],
            o("S{}S"),
            o("S{!page,$u;}S"),
            None,
            Err("UNDEFINED_REFERENCE"),
        ),
        (
            "ref.previous-only",
            "`$b` exists only in the previous block: history is lost (§5), the reference is reported first, before the drop",
            &["Reference", "StateComplete"],
            &["§5"],
            o("S{$a:1;$b:2;}S"),
            o("S{$a:$b;}S"),
            None,
            Err("UNDEFINED_REFERENCE"),
        ),
        (
            "ref.self",
            "`$a:$a` never reaches a literal",
            &["Reference"],
            &["§4.3", "GRAMMAR.md choice 9"],
            o("S{}S"),
            o("S{$a:$a;}S"),
            None,
            Err("REFERENCE_CYCLE"),
        ),
        (
            "ref.cycle",
            "`$a` and `$b` refer to each other",
            &["Reference"],
            &["§4.3", "GRAMMAR.md choice 9"],
            o("S{}S"),
            o("S{$a:$b;$b:$a;}S"),
            None,
            Err("REFERENCE_CYCLE"),
        ),
        (
            "limit.string",
            "a 4-byte string over a 3-byte limit",
            &["Limit"],
            &["§5", "GRAMMAR.md \"State rules\""],
            o("S{}S"),
            o(r#"S{$a:"abcd";}S"#),
            Some(json!({"max_string_bytes": 3})),
            Err("STRING_TOO_LONG"),
        ),
        (
            "limit.string-at",
            "exactly at the string limit",
            &["Limit"],
            &["GRAMMAR.md \"State rules\""],
            o("S{}S"),
            o(r#"S{$a:"abcd";}S"#),
            Some(json!({"max_string_bytes": 4})),
            Ok(json!({"a": q("abcd")})),
        ),
        (
            "limit.variables",
            "three variables over a limit of two",
            &["Limit"],
            &["GRAMMAR.md \"State rules\""],
            o("S{}S"),
            o("S{$a:1;$b:2;$c:3;}S"),
            Some(json!({"max_variables": 2})),
            Err("TOO_MANY_VARIABLES"),
        ),
        (
            "limit.variables-at",
            "exactly at the variable limit",
            &["Limit"],
            &["GRAMMAR.md \"State rules\""],
            o("S{}S"),
            o("S{$a:1;$b:2;$c:3;}S"),
            Some(json!({"max_variables": 3})),
            Ok(json!({"a": "1", "b": "2", "c": "3"})),
        ),
        (
            "limit.bytes-at",
            "`S{$a:12;}S` is exactly 10 canonical bytes",
            &["Limit"],
            &["GRAMMAR.md \"State rules\""],
            o("S{}S"),
            o("S{$a:12;}S"),
            Some(json!({"max_block_bytes": 10})),
            Ok(json!({"a": "12"})),
        ),
        (
            "limit.bytes-over",
            "`S{$a:123;}S` is 11 canonical bytes",
            &["Limit"],
            &["GRAMMAR.md \"State rules\""],
            o("S{}S"),
            o("S{ $a : 123 ; }S"),
            Some(json!({"max_block_bytes": 10})),
            Err("BLOCK_TOO_LARGE"),
        ),
        (
            "limit.bytes-canonical",
            "whitespace does not count: the size is the canonical size",
            &["Limit", "Interpretation"],
            &["GRAMMAR.md \"State rules\""],
            o("S{}S"),
            o("S{  $a : 12  ;  }S"),
            Some(json!({"max_block_bytes": 10})),
            Ok(json!({"a": "12"})),
        ),
        (
            "limit.statements",
            "three statements over a limit of two",
            &["Limit"],
            &["GRAMMAR.md \"State rules\""],
            o("S{}S"),
            o("S{$a:1;>1;!x;}S"),
            Some(json!({"max_statements": 2})),
            Err("TOO_MANY_STATEMENTS"),
        ),
        (
            "limit.default-53-vars",
            "53 variables exceed the default of 52 (one per letter)",
            &["Limit", "Interpretation"],
            &["§4.3", "GRAMMAR.md \"State rules\""],
            o("S{}S"),
            fifty_three,
            None,
            Err("TOO_MANY_VARIABLES"),
        ),
        (
            "limit.default-string",
            "257 bytes exceed the default string limit of 256",
            &["Limit", "Interpretation"],
            &["GRAMMAR.md \"State rules\""],
            o("S{}S"),
            long,
            None,
            Err("STRING_TOO_LONG"),
        ),
        (
            "next.unparseable",
            "the next block does not parse (offset 6)",
            &["StateComplete"],
            &["§4.1"],
            o("S{}S"),
            o("S{$a:1"),
            None,
            Err("UNTERMINATED_BLOCK"),
        ),
    ];
    let mut cases: Vec<Case> = rows
        .into_iter()
        .map(|(id, c, f, sp, prev, next, limits, exp)| {
            let mut k = case(id, c, f, sp)
                .input("previous", prev)
                .input("next", next);
            if let Some(l) = limits {
                k = k.input("limits", l);
            }
            match exp {
                Ok(v) => k.valid_with(v),
                Err(code) => k.invalid(code),
            }
        })
        .collect();
    cases.push(
        case(
            "limit.default-52-vars",
            "52 single-letter variables are within the default limit",
            &["Limit"],
            &["§4.3"],
        )
        .input("previous", "S{}S")
        .input("next", fifty_two)
        .valid(),
    );
    cases.push(
        case(
            "limit.default-string-at",
            "256 bytes are within the default string limit",
            &["Limit"],
            &["GRAMMAR.md \"State rules\""],
        )
        .input("previous", "S{}S")
        .input("next", at_limit)
        .valid(),
    );
    FileBuilder::new(
        "plsp-state",
        "PLSP v0.5 state rules (§5; reference/plsp/GRAMMAR.md \"State rules\"): previous and next block -> the next block's resolved variables, or the first broken rule.",
    )
    .note("Spec", "a block from the PLSP v0.5 text", "spec incompatibility", "the spec's own examples are rejected")
    .note("StateComplete", "every variable of the previous block must be in the next (§5)", "lost state", "the loop forgets state when a model drops a variable")
    .note("Reference", "`$id` references resolve inside the block", "dangling reference", "actions and logs run with missing or looping values")
    .note("Limit", "configured size limits", "unbounded input", "a model can grow the state without bound")
    .note("Interpretation", "a choice the spec leaves open, stated in GRAMMAR.md", "interpretation", "implementations disagree on the same blocks")
    .group("plsp-check-transition", Value::Null)
    .tests(cases)
}

/// `plsp-engine.json`.
pub fn engine_file() -> FileBuilder {
    type En = (
        &'static str,
        &'static str,
        &'static [&'static str],
        &'static str,
        &'static str,
        Value,
        Result<&'static str, &'static str>,
    );
    let none = || json!({});
    let monitor = r#"INSTR: @upd:$l=$t;@fetch:temp,$t;@if:$t>90?{@set:$p="alert";@sig:!page,$u,"Temp high"}:@log:"Temp OK",$t;@sig:!wait,5000"#;
    let rows: Vec<En> = vec![
        (
            "set.new",
            "@set creates a variable",
            &["Directive"],
            "S{}S",
            r#"@set:$p="run""#,
            none(),
            Ok(r#"S{$p:"run";}S"#),
        ),
        (
            "set.prefix",
            "the `INSTR:` prefix and a final `;`",
            &["Directive"],
            "S{}S",
            r#"INSTR: @set:$p="run";"#,
            none(),
            Ok(r#"S{$p:"run";}S"#),
        ),
        (
            "set.overwrite",
            "@set overwrites in place",
            &["Directive"],
            r#"S{$p:"run";$t:75;}S"#,
            r#"@set:$p="stop""#,
            none(),
            Ok(r#"S{$p:"stop";$t:75;}S"#),
        ),
        (
            "set.number-canonical",
            "numbers are written canonically",
            &["Directive"],
            "S{}S",
            "@set:$a=007.50",
            none(),
            Ok("S{$a:7.5;}S"),
        ),
        (
            "set.copies-value",
            "`@set:$l=$t` copies 75; a later change of `$t` does not move `$l` (§5 carry-forward)",
            &["Directive", "Interpretation"],
            "S{$t:75;}S",
            "@set:$l=$t;@set:$t=80",
            none(),
            Ok("S{$t:80;$l:75;}S"),
        ),
        (
            "set.resolves-chain",
            "a reference chain of the previous block is followed; the previous references stay",
            &["Directive", "Interpretation"],
            "S{$a:$b;$b:5;}S",
            "@set:$c=$a",
            none(),
            Ok("S{$a:$b;$b:5;$c:5;}S"),
        ),
        (
            "upd.existing",
            "@upd of an existing variable",
            &["Directive"],
            "S{$t:75;}S",
            "@upd:$t=76",
            none(),
            Ok("S{$t:76;}S"),
        ),
        (
            "upd.missing",
            "@upd needs the variable to exist",
            &["Directive", "Error"],
            "S{}S",
            "@upd:$t=1",
            none(),
            Err("UNDEFINED_VARIABLE"),
        ),
        (
            "set.undefined-source",
            "@set from an undefined variable",
            &["Directive", "Error"],
            "S{}S",
            "@set:$a=$zz",
            none(),
            Err("UNDEFINED_VARIABLE"),
        ),
        (
            "fetch.number",
            "§6: the tool result arrives as an assignment",
            &["Directive", "Spec"],
            "S{}S",
            "@fetch:temp,$t",
            json!({"temp": "75"}),
            Ok("S{$t:75;}S"),
        ),
        (
            "fetch.string",
            "a string input",
            &["Directive"],
            "S{}S",
            "@fetch:mode,$m",
            json!({"mode": "\"auto\""}),
            Ok(r#"S{$m:"auto";}S"#),
        ),
        (
            "fetch.overwrite",
            "@fetch into an existing variable keeps its position",
            &["Directive"],
            r#"S{$t:70;$p:"run";}S"#,
            "@fetch:temp,$t",
            json!({"temp": "71"}),
            Ok(r#"S{$t:71;$p:"run";}S"#),
        ),
        (
            "fetch.missing",
            "no input named `temp` this cycle",
            &["Directive", "Error"],
            "S{}S",
            "@fetch:temp,$t",
            none(),
            Err("FETCH_UNAVAILABLE"),
        ),
        (
            "fetch.quoted-source",
            "a quoted source",
            &["Directive"],
            "S{}S",
            r#"@fetch:"http://h/x",$x"#,
            json!({"http://h/x": "1"}),
            Ok("S{$x:1;}S"),
        ),
        (
            "fetch.url-source",
            "a bare URL source",
            &["Directive"],
            "S{}S",
            "@fetch:http://h/x,$x",
            json!({"http://h/x": "1"}),
            Ok("S{$x:1;}S"),
        ),
        (
            "sig.wait",
            "@sig emits an action",
            &["Directive"],
            "S{}S",
            "@sig:!wait,5000",
            none(),
            Ok("S{!wait,5000;}S"),
        ),
        (
            "sig.keeps-refs",
            "§4.6 example: references in actions are kept as written",
            &["Directive", "Spec", "Interpretation"],
            r#"S{$u:"op";$m:"CPU High";}S"#,
            "@sig:!page,$u,$m;@sig:!wait,1000",
            none(),
            Ok(r#"S{$u:"op";$m:"CPU High";!page,$u,$m;!wait,1000;}S"#),
        ),
        (
            "sig.undefined",
            "an action naming an undefined variable",
            &["Directive", "Error"],
            "S{}S",
            "@sig:!page,$u",
            none(),
            Err("UNDEFINED_VARIABLE"),
        ),
        (
            "log.spec",
            "§4.5 example",
            &["Directive", "Spec"],
            "S{$t:75;}S",
            r#"@log:"Temp OK",$t"#,
            none(),
            Ok(r#"S{$t:75;>"Temp OK",$t;}S"#),
        ),
        (
            "order.commands-last",
            "variables first, then commands in directive order",
            &["Directive", "Interpretation"],
            "S{}S",
            "@sig:!wait,1;@set:$a=1;@log:$a",
            none(),
            Ok("S{$a:1;!wait,1;>$a;}S"),
        ),
        (
            "order.previous-commands-dropped",
            "the previous cycle's commands are not repeated",
            &["Directive", "Interpretation"],
            r#"S{$a:1;!wait,5;>"x";}S"#,
            "@set:$b=2",
            none(),
            Ok("S{$a:1;$b:2;}S"),
        ),
        (
            "order.new-variables",
            "new variables follow the previous ones in creation order",
            &["Directive", "Interpretation"],
            "S{$z:1;}S",
            "@set:$b=1;@set:$a=1;@set:$z=2",
            none(),
            Ok("S{$z:2;$b:1;$a:1;}S"),
        ),
        (
            "if.true",
            "the then branch",
            &["Condition"],
            "S{$t:95;}S",
            r#"@if:$t>90?@set:$p="alert":@set:$p="ok""#,
            none(),
            Ok(r#"S{$t:95;$p:"alert";}S"#),
        ),
        (
            "if.false",
            "the else branch",
            &["Condition"],
            "S{$t:85;}S",
            r#"@if:$t>90?@set:$p="alert":@set:$p="ok""#,
            none(),
            Ok(r#"S{$t:85;$p:"ok";}S"#),
        ),
        (
            "if.no-else",
            "no else branch, condition false: nothing happens",
            &["Condition"],
            "S{$t:85;}S",
            r#"@if:$t>90?@set:$p="alert""#,
            none(),
            Ok("S{$t:85;}S"),
        ),
        (
            "if.group",
            "a `{…}` group",
            &["Condition"],
            r#"S{$t:95;$u:"op";}S"#,
            r#"@if:$t>=95?{@set:$p="alert";@sig:!page,$u,"hot"}:{@set:$p="ok"}"#,
            none(),
            Ok(r#"S{$t:95;$u:"op";$p:"alert";!page,$u,"hot";}S"#),
        ),
        (
            "if.empty-group",
            "an empty group",
            &["Condition"],
            "S{}S",
            "@if:1==1?{}:@set:$a=1",
            none(),
            Ok("S{}S"),
        ),
        (
            "if.dangling-else",
            "`:` belongs to the nearest @if",
            &["Condition", "Interpretation"],
            "S{$a:1;$b:0;}S",
            r#"@if:$a==1?@if:$b==1?@set:$r="x":@set:$r="y""#,
            none(),
            Ok(r#"S{$a:1;$b:0;$r:"y";}S"#),
        ),
        (
            "if.sequential",
            "a condition sees earlier directives of the same instruction",
            &["Condition", "Interpretation"],
            "S{}S",
            "@set:$a=1;@if:$a==1?@set:$b=2",
            none(),
            Ok("S{$a:1;$b:2;}S"),
        ),
        (
            "cmp.numeric",
            "9 < 10 numerically (not as text)",
            &["Ordering"],
            "S{$t:9;}S",
            r#"@if:$t<10?@set:$r="lt""#,
            none(),
            Ok(r#"S{$t:9;$r:"lt";}S"#),
        ),
        (
            "cmp.decimal-equal",
            "1.5 == 1.50",
            &["Ordering"],
            "S{$a:1.5;}S",
            "@if:$a==1.50?@set:$r=1",
            none(),
            Ok("S{$a:1.5;$r:1;}S"),
        ),
        (
            "cmp.negative",
            "-2 < -1.5",
            &["Ordering"],
            "S{$a:-2;}S",
            "@if:$a<-1.5?@set:$r=1",
            none(),
            Ok("S{$a:-2;$r:1;}S"),
        ),
        (
            "cmp.string-bytes",
            "\"B\" < \"a\" by UTF-8 bytes",
            &["Ordering", "Interpretation"],
            r#"S{$a:"B";}S"#,
            r#"@if:$a<"a"?@set:$r=1"#,
            none(),
            Ok(r#"S{$a:"B";$r:1;}S"#),
        ),
        (
            "cmp.string-equal",
            "string equality",
            &["Ordering"],
            r#"S{$p:"run";}S"#,
            r#"@if:$p=="run"?@set:$r=1:@set:$r=0"#,
            none(),
            Ok(r#"S{$p:"run";$r:1;}S"#),
        ),
        (
            "cmp.cross-type-eq",
            "1 and \"1\" are not equal",
            &["Ordering", "Interpretation"],
            "S{$a:1;}S",
            r#"@if:$a=="1"?@set:$r=1:@set:$r=0"#,
            none(),
            Ok("S{$a:1;$r:0;}S"),
        ),
        (
            "cmp.cross-type-ne",
            "1 != \"1\"",
            &["Ordering", "Interpretation"],
            "S{$a:1;}S",
            r#"@if:$a!="1"?@set:$r=1:@set:$r=0"#,
            none(),
            Ok("S{$a:1;$r:1;}S"),
        ),
        (
            "cmp.cross-type-order",
            "a number cannot be ordered against a string",
            &["Ordering", "Error"],
            "S{$a:1;}S",
            r#"@if:$a<"2"?@set:$r=1"#,
            none(),
            Err("TYPE_MISMATCH"),
        ),
        (
            "bool.precedence",
            "`&&` binds tighter than `||`: true || (false && false)",
            &["Condition"],
            "S{$a:1;$b:0;$c:0;}S",
            "@if:$a==1||$b==1&&$c==1?@set:$r=1:@set:$r=0",
            none(),
            Ok("S{$a:1;$b:0;$c:0;$r:1;}S"),
        ),
        (
            "bool.parentheses",
            "(true || false) && false",
            &["Condition"],
            "S{$a:1;$b:0;$c:0;}S",
            "@if:($a==1||$b==1)&&$c==1?@set:$r=1:@set:$r=0",
            none(),
            Ok("S{$a:1;$b:0;$c:0;$r:0;}S"),
        ),
        (
            "bool.short-or",
            "`||` stops at the first true operand",
            &["Condition", "Interpretation"],
            "S{$a:1;}S",
            "@if:$a==1||$zz==1?@set:$r=1",
            none(),
            Ok("S{$a:1;$r:1;}S"),
        ),
        (
            "bool.short-and",
            "`&&` stops at the first false operand",
            &["Condition", "Interpretation"],
            "S{$a:1;}S",
            "@if:$a==2&&$zz==1?@set:$r=1:@set:$r=0",
            none(),
            Ok("S{$a:1;$r:0;}S"),
        ),
        (
            "bool.evaluated-undefined",
            "an undefined variable that is evaluated fails",
            &["Condition", "Error"],
            "S{$a:1;}S",
            "@if:$a==2||$zz==1?@set:$r=1",
            none(),
            Err("UNDEFINED_VARIABLE"),
        ),
        (
            "syntax.no-value",
            "@set without `=value`",
            &["Error"],
            "S{}S",
            "@set:$a",
            none(),
            Err("IMF_SYNTAX"),
        ),
        (
            "syntax.unknown-directive",
            "`@del` is not a directive",
            &["Error"],
            "S{$a:1;}S",
            "@del:$a",
            none(),
            Err("IMF_SYNTAX"),
        ),
        (
            "syntax.missing-semicolon",
            "two directives need `;` between them",
            &["Error"],
            "S{}S",
            "@set:$a=1 @set:$b=2",
            none(),
            Err("IMF_SYNTAX"),
        ),
        (
            "syntax.missing-question",
            "@if needs `?`",
            &["Error"],
            "S{$a:1;}S",
            "@if:$a==1 @set:$b=1",
            none(),
            Err("IMF_SYNTAX"),
        ),
        (
            "syntax.bare-condition",
            "a condition is a comparison",
            &["Error", "Interpretation"],
            "S{$a:1;}S",
            "@if:$a?@set:$b=1",
            none(),
            Err("IMF_SYNTAX"),
        ),
        (
            "syntax.no-negation",
            "there is no `!` negation in conditions",
            &["Error", "Interpretation"],
            "S{$a:1;}S",
            "@if:!($a==1)?@set:$b=1",
            none(),
            Err("IMF_SYNTAX"),
        ),
        (
            "syntax.no-arithmetic",
            "there is no arithmetic",
            &["Error", "Interpretation"],
            "S{$b:1;}S",
            "@set:$a=$b+1",
            none(),
            Err("IMF_SYNTAX"),
        ),
        (
            "syntax.keyword-space",
            "`@set :` splits the keyword token",
            &["Error", "Interpretation"],
            "S{}S",
            "@set :$a=1",
            none(),
            Err("IMF_SYNTAX"),
        ),
        (
            "previous.cycle",
            "the previous block's references loop",
            &["Error"],
            "S{$a:$b;$b:$a;}S",
            "@set:$c=$a",
            none(),
            Err("PREVIOUS_INVALID"),
        ),
        (
            "empty.instr",
            "no directives: the state is carried, commands dropped",
            &["Directive"],
            "S{$a:1;!x;}S",
            "",
            none(),
            Ok("S{$a:1;}S"),
        ),
        (
            "empty.prefix-only",
            "only `INSTR:`",
            &["Directive"],
            "S{$a:1;}S",
            "INSTR:",
            none(),
            Ok("S{$a:1;}S"),
        ),
        (
            "whitespace",
            "whitespace between tokens",
            &["Directive"],
            "S{}S",
            "INSTR: @set: $a = 1 ; @log: $a , 2 ;",
            none(),
            Ok("S{$a:1;>$a,2;}S"),
        ),
        (
            "monitor.first",
            "IMF.md temperature monitor, cycle 1",
            &["Spec", "Directive"],
            "S{}S",
            r#"INSTR: @set:$p="run";@set:$u="op";@fetch:temp,$t;@set:$l=$t;@sig:!wait,5000"#,
            json!({"temp": "75"}),
            Ok(r#"S{$p:"run";$u:"op";$t:75;$l:75;!wait,5000;}S"#),
        ),
        (
            "monitor.ok",
            "IMF.md temperature monitor: 82 is fine, `>` logs it",
            &["Spec", "Condition"],
            r#"S{$p:"run";$u:"op";$t:75;$l:75;!wait,5000;}S"#,
            monitor,
            json!({"temp": "82"}),
            Ok(r#"S{$p:"run";$u:"op";$t:82;$l:75;>"Temp OK",$t;!wait,5000;}S"#),
        ),
        (
            "monitor.alert",
            "IMF.md temperature monitor: 95 pages the operator",
            &["Spec", "Condition"],
            r#"S{$p:"run";$u:"op";$t:82;$l:75;}S"#,
            monitor,
            json!({"temp": "95"}),
            Ok(r#"S{$p:"alert";$u:"op";$t:95;$l:82;!page,$u,"Temp high";!wait,5000;}S"#),
        ),
    ];
    FileBuilder::new(
        "plsp-engine",
        "PLSP v0.5 reference engine (reference/plsp/IMF.md, spec §2, §3, §6): previous block + INSTR + inputs -> exact canonical next block, or an error code.",
    )
    .note("Spec", "an example from the spec or IMF.md", "spec incompatibility", "the documented loop does not run as written")
    .note("Directive", "the effect of one directive", "wrong state transition", "the next state differs from the instruction")
    .note("Condition", "`@if` branches, `&&`, `||`, parentheses", "wrong branch", "actions fire when they should not, or not when they should")
    .note("Ordering", "number and string comparisons", "type confusion", "thresholds trip at the wrong values")
    .note("Error", "instructions the engine must refuse", "lenient interpreter", "a broken instruction silently produces a wrong state")
    .note("Interpretation", "a choice the spec leaves open, stated in IMF.md", "interpretation", "middlewares disagree on the same instruction")
    .group("plsp-engine-step", Value::Null)
    .tests(rows.into_iter().map(|(id, c, f, prev, instr, inputs, exp)| {
        let k = case(id, c, f, &["§3", "IMF.md"]).input("previous", prev).input("instr", instr).input("inputs", inputs);
        match exp {
            Ok(t) => k.valid_with(t),
            Err(code) => k.invalid(code),
        }
    }))
}
