//! The spec's examples, the round-trip property `parse(serialize(b)) == b`, and the fuzz
//! body over arbitrary bytes and near-miss text (`loom_plsp::fuzzing` replays the committed
//! corpus).

use loom_plsp::fuzzing::state_block as fuzz_parse;
use loom_plsp::{Block, Ident, Literal, Number, Stmt, Value, parse};
use proptest::prelude::*;
use std::collections::BTreeSet;

#[test]
fn every_block_in_the_spec_parses() {
    // §2, §4.1, §4.3, §4.5, §4.6, in the spec's own spelling.
    for t in [
        r#"S{$p:"run";$t:75;$l:70;!wait,5000;}S"#,
        r#"S{$i:"user_input";$c:10;$r:$i;}S"#,
        r#"S{$t:75; >"Temp OK",$t;}S"#,
        r#"S{$u:"op";$m:"CPU High"; !page,$u,$m; !wait,1000;}S"#,
        "S{}S",
    ] {
        let b = parse(t).unwrap();
        assert!(
            loom_plsp::validate_block(&b, &Default::default()).is_empty(),
            "{t}"
        );
    }
    // §4.4: "T:$t" is a literal string, not a reference.
    let b = parse(r#"S{$s:"T:$t";}S"#).unwrap();
    assert_eq!(
        b.stmts,
        vec![Stmt::Assign(
            Ident::new("s").unwrap(),
            Value::Lit(Literal::Str("T:$t".into()))
        )]
    );
    // §4.5: the middleware receives 75 through `>`.
    let b = parse(r#"S{$t:75; >"Temp OK",$t;}S"#).unwrap();
    let v = loom_plsp::validate::resolve(&b, &Ident::new("t").unwrap()).unwrap();
    assert_eq!(v, &Literal::Num(Number::from_i64(75)));
}

fn ident() -> impl Strategy<Value = Ident> {
    "[A-Za-z][A-Za-z0-9]{0,3}".prop_map(|s| Ident::new(&s).unwrap())
}

fn literal() -> impl Strategy<Value = Literal> {
    prop_oneof![
        "[^\"]{0,12}".prop_map(Literal::Str),
        "-?[0-9]{1,6}(\\.[0-9]{1,4})?".prop_map(|s| Literal::Num(Number::parse(&s).unwrap())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![literal().prop_map(Value::Lit), ident().prop_map(Value::Ref)]
}

fn stmt() -> impl Strategy<Value = Stmt> {
    prop_oneof![
        3 => (ident(), value()).prop_map(|(i, v)| Stmt::Assign(i, v)),
        1 => prop::collection::vec(value(), 1..4).prop_map(Stmt::Log),
        1 => ("[A-Za-z][A-Za-z0-9_]{0,5}", prop::collection::vec(value(), 0..3)).prop_map(|(n, p)| Stmt::Action(n, p)),
    ]
}

fn block() -> impl Strategy<Value = Block> {
    prop::collection::vec(stmt(), 0..10).prop_map(|stmts| {
        let mut seen = BTreeSet::new();
        let stmts = stmts
            .into_iter()
            .filter(|s| match s {
                Stmt::Assign(i, _) => seen.insert(i.clone()),
                _ => true,
            })
            .collect();
        Block { stmts }
    })
}

proptest! {
    #[test]
    fn parse_of_serialize_is_identity(b in block()) {
        let text = b.to_string();
        prop_assert_eq!(parse(&text).unwrap(), b);
    }

    #[test]
    fn whitespace_between_tokens_changes_nothing(b in block()) {
        let text = b.to_string();
        // Spaces after every `;` and `,` outside strings: same block.
        let mut spaced = String::new();
        let mut in_str = false;
        for c in text.chars() {
            spaced.push(c);
            if c == '"' { in_str = !in_str; }
            if !in_str && (c == ';' || c == ',') { spaced.push_str(" \n"); }
        }
        prop_assert_eq!(parse(&spaced).unwrap().to_string(), text);
    }

    #[test]
    fn fuzz_body_on_arbitrary_bytes(data in prop::collection::vec(any::<u8>(), 0..200)) {
        fuzz_parse(&data);
    }

    #[test]
    fn fuzz_body_on_near_miss_text(parts in prop::collection::vec(prop::sample::select(vec![
        "S{", "}S", "$a", "$b", ":", ";", ",", ">", "!wait", "\"x\"", "\"", "12", "-3.5", "1.", "#", " ", "\n",
        "@set:", "@upd:", "@if:", "@sig:", "@log:", "@fetch:", "?", "{", "}", "(", ")", "&&", "||", "==", "<", "=",
    ]), 0..40)) {
        fuzz_parse(parts.concat().as_bytes());
    }
}
