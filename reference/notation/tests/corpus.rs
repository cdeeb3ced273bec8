//! The adversarial corpus: values whose strings look like syntax, edge numbers, empty and
//! one-element containers. Each must round-trip; the encoder's text is snapshotted, and the
//! exact expected text of the key cases is written by hand from SPEC.md rule 12.

use loom_notation::{DecodeOptions, ErrorCode, decode, decode_with, encode};
use serde_json::{Value, json};

fn corpus() -> Vec<(&'static str, Value)> {
    let big: Value = serde_json::from_str("123456789012345678901234567890").unwrap();
    vec![
        ("string_42", json!("42")),
        ("string_007", json!("007")),
        ("string_true", json!("true")),
        ("string_null", json!("null")),
        ("string_empty", json!("")),
        ("string_padded", json!(" x ")),
        ("string_comma", json!("a, b")),
        ("string_dash_item", json!("- item")),
        ("string_hash", json!("#tag")),
        ("string_key_value", json!("k: v")),
        ("string_newlines", json!("line 1\nline 2\r\n\ttabbed")),
        ("string_controls", json!("\u{0}\u{1f}\u{7f}\u{85}\u{2028}")),
        ("string_unicode", json!("héllo wörld 😀 日本")),
        ("string_quote_backslash", json!("say \"hi\" \\ bye")),
        ("string_brackets", json!("[x]")),
        ("string_braces", json!("{}")),
        ("string_block_header", json!("|")),
        ("string_colon_end", json!("note:")),
        (
            "numbers",
            json!([0, -1, u64::MAX, i64::MIN, 1.5, -0.0, 1e21, 1e-7, 0.1, big]),
        ),
        ("big_integer", big),
        ("negative_zero", json!(-0.0)),
        ("float_1e21", json!(1e21)),
        ("float_one", json!(1.0)),
        ("empty_array", json!([])),
        ("empty_object", json!({})),
        ("one_element_array", json!(["send"])),
        (
            "one_element_arrays",
            json!({"a": ["x"], "b": [1], "c": [""], "d": ["a, b"], "e": [null]}),
        ),
        ("nested_empty_objects", json!({"a": {}, "b": {"c": {}}})),
        (
            "arrays_of_arrays",
            json!([[1, 2], [], [[]], [["x"]], [[1], [2, 3]]]),
        ),
        ("list_of_empty_objects", json!([{}, {}, {"a": {}}])),
        (
            "mixed_list",
            json!([1, "two", [3], {"four": 4}, null, [{"five": [5]}]]),
        ),
        (
            "tricky_keys",
            json!({"": 1, " k": 2, "k ": 3, "a: b": 4, "#c": 5, "- d": 6, "-": 7, "e\"f": 8, "[g]": 9, "h:": 10, "i\nj": 11, "true": 12, "42": 13}),
        ),
        (
            "object_in_list_with_nested_first",
            json!([{"a": {"b": 1}, "c": [1, {"d": 2}]}]),
        ),
        ("top_level_scalar_list", json!(["a", "b"])),
        ("top_level_string", json!("plain text")),
    ]
}

#[test]
fn corpus_round_trips_and_snapshots() {
    for (name, v) in corpus() {
        let text = encode(&v).unwrap();
        let back = decode(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(back, v, "{name}:\n{text}");
        if let Some(f) = v.as_f64().filter(|f| *f == 0.0) {
            assert_eq!(
                back.as_f64().unwrap().to_bits(),
                f.to_bits(),
                "{name}: sign of zero"
            );
        }
        insta::assert_snapshot!(name, text);
    }
}

#[test]
fn exact_encodings_from_the_spec() {
    let cases = [
        (json!("42"), "\"42\"\n"),
        (json!("007"), "\"007\"\n"),
        (json!("true"), "\"true\"\n"),
        (json!(""), "\"\"\n"),
        (json!({"a": ["x"]}), "a: [x]\n"),
        (json!({"a": []}), "a: []\n"),
        (json!({"a": {}}), "a: {}\n"),
        (json!({"a": ["x", "y"]}), "a: x, y\n"),
        (json!({"a": -0.0}), "a: -0.0\n"),
        (json!({"a": 1e21}), "a: 1e21\n"),
        (json!({"a": 1.0}), "a: 1.0\n"),
        (json!({"a": "x\ny"}), "a: \"x\\ny\"\n"),
        (json!([{}]), "- {}\n"),
        (json!([[1, 2]]), "- 1, 2\n"),
        (json!([[[1]]]), "-\n  - [1]\n"),
        (json!([{"a": 1, "b": 2}]), "- a: 1\n  b: 2\n"),
        (json!({"k: v": "#x"}), "\"k: v\": \"#x\"\n"),
    ];
    for (v, text) in cases {
        assert_eq!(encode(&v).unwrap(), text, "{v}");
    }
}

#[test]
fn the_number_text_is_kept_as_serde_json_reads_it() {
    for s in [
        "-0",
        "1e21",
        "123456789012345678901234567890",
        "18446744073709551616",
        "0.1",
        "-9223372036854775809",
    ] {
        let via_json: Value = serde_json::from_str(s).unwrap();
        let via_loom = decode(s).unwrap();
        assert_eq!(via_loom, via_json, "{s}");
        assert_eq!(
            decode(&encode(&via_json).unwrap()).unwrap(),
            via_json,
            "{s}"
        );
    }
}

fn err(text: &str) -> (&'static str, usize, usize) {
    let e = decode(text).unwrap_err();
    assert!(!e.message.is_empty());
    (e.code.as_str(), e.line, e.column)
}

#[test]
fn errors_carry_code_line_and_column() {
    assert_eq!(err("a:\n   b: 1\n"), ("BAD_INDENT", 2, 4));
    assert_eq!(err("a:\n\tb: 1\n"), ("TAB_INDENT", 2, 1));
    assert_eq!(err("a: 1\nb: 2\na: 3\n"), ("DUPLICATE_KEY", 3, 1));
    assert_eq!(err("a: \"abc\n"), ("UNTERMINATED_QUOTE", 1, 4));
    assert_eq!(err("a: \"\\q\"\n"), ("BAD_ESCAPE", 1, 5));
    assert_eq!(err("a: 1\n- b\n"), ("MIXED_BLOCK", 2, 1));
    assert_eq!(err("- a\nb: 1\n"), ("MIXED_BLOCK", 2, 1));
    assert_eq!(err("a:\n"), ("MISSING_VALUE", 1, 3));
    assert_eq!(err("a: [1, 2\n"), ("UNTERMINATED_BRACKET", 1, 4));
    assert_eq!(err("a: 1, , 2\n"), ("EMPTY_ITEM", 1, 7));
    assert_eq!(err("a: \"x\" y\n"), ("TRAILING_CHARACTERS", 1, 7));
    assert_eq!(err("a: {b: 1}\n"), ("RESERVED_SCALAR", 1, 4));
    assert_eq!(err("a: 1e400\n"), ("NUMBER_OUT_OF_RANGE", 1, 4));
    assert_eq!(err("a: x\u{1}\n"), ("INVALID_CHARACTER", 1, 5));
    assert_eq!(err("x\ny\n"), ("TRAILING_CONTENT", 2, 1));
    assert_eq!(err("# nothing\n"), ("EMPTY_DOCUMENT", 1, 1));
    assert_eq!(err("a:\n  text\n"), ("EXPECTED_KEY", 2, 3));
    assert_eq!(err("a:\n  - x\n  y\n"), ("EXPECTED_ITEM", 3, 3));
}

#[test]
fn depth_is_bounded_with_a_clear_error() {
    let mut deep = String::new();
    for i in 0..200 {
        deep.push_str(&" ".repeat(2 * i));
        deep.push_str("k:\n");
    }
    deep.push_str(&" ".repeat(400));
    deep.push_str("k: 1\n");
    let e = decode(&deep).unwrap_err();
    assert_eq!((e.code, e.line), (ErrorCode::DepthLimit, 129));
    let shallow = DecodeOptions {
        max_depth: 10,
        ..DecodeOptions::lenient()
    };
    assert_eq!(decode_with(&deep, &shallow).unwrap_err().line, 11);
    // A caller's huge limit is capped at HARD_MAX_DEPTH, so recursion stays bounded.
    let mut deeper = String::new();
    for i in 0..600 {
        deeper.push_str(&" ".repeat(i));
        deeper.push_str("- \n");
    }
    deeper.push_str(&" ".repeat(600));
    deeper.push_str("- 1\n");
    let huge = DecodeOptions {
        max_depth: usize::MAX,
        ..DecodeOptions::lenient()
    };
    let e = decode_with(&deeper, &huge).unwrap_err();
    assert_eq!(
        (e.code, e.line),
        (ErrorCode::DepthLimit, loom_notation::HARD_MAX_DEPTH + 1)
    );
    // Encoding refuses what the decoder would refuse; building the value needs no recursion.
    let mut v = json!(1);
    for _ in 0..200 {
        v = json!([v]);
    }
    assert!(encode(&v).is_err());
    let mut v = json!(1);
    for _ in 0..(loom_notation::MAX_DEPTH - 1) {
        v = json!({"k": v});
    }
    let v = json!([v]);
    assert_eq!(decode(&encode(&v).unwrap()).unwrap(), v);
}

#[test]
fn lenient_reads_legacy_text() {
    let lenient = |t: &str| decode_with(t, &DecodeOptions::lenient()).unwrap();
    assert_eq!(
        lenient("a:\n    b: 1\n    c: 2\n"),
        json!({"a": {"b": 1, "c": 2}})
    );
    assert_eq!(lenient("a:\n"), json!({"a": {}}));
    assert_eq!(lenient(""), json!({}));
    assert_eq!(
        lenient("a: \"unterminated\n"),
        json!({"a": "\"unterminated"})
    );
    assert_eq!(lenient("a: {b: 1}\n"), json!({"a": "{b: 1}"}));
    assert_eq!(lenient("a: x, , y\n"), json!({"a": ["x", "", "y"]}));
    assert_eq!(lenient("a: 1e400\n"), json!({"a": "1e400"}));
    assert_eq!(
        lenient("a: Hello, world\n"),
        json!({"a": ["Hello", "world"]})
    );
    assert_eq!(
        lenient("a: \"Hello, world\"\n"),
        json!({"a": "Hello, world"})
    );
}
