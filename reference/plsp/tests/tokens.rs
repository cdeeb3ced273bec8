//! Bytes and o200k tokens of the spec's example blocks next to equivalent compact JSON
//! (issue closing note). Measured, never asserted beyond sanity: run with `--nocapture`.

use tiktoken_rs::o200k_base;

const PAIRS: &[(&str, &str, &str)] = &[
    (
        "§4.1 state",
        r#"S{$p:"run";$t:75;$l:70;!wait,5000;}S"#,
        r#"{"state":{"p":"run","t":75,"l":70},"actions":[{"action":"wait","params":[5000]}]}"#,
    ),
    (
        "§4.3 assignments",
        r#"S{$i:"user_input";$c:10;$r:$i;}S"#,
        r#"{"state":{"i":"user_input","c":10,"r":{"ref":"i"}}}"#,
    ),
    (
        "§4.5 log",
        r#"S{$t:75;>"Temp OK",$t;}S"#,
        r#"{"state":{"t":75},"log":[["Temp OK",{"ref":"t"}]]}"#,
    ),
    (
        "§4.6 actions",
        r#"S{$u:"op";$m:"CPU High";!page,$u,$m;!wait,1000;}S"#,
        r#"{"state":{"u":"op","m":"CPU High"},"actions":[{"action":"page","params":[{"ref":"u"},{"ref":"m"}]},{"action":"wait","params":[1000]}]}"#,
    ),
];

#[test]
fn plsp_vs_compact_json_sizes() {
    let bpe = o200k_base().unwrap();
    let (mut pb, mut pt, mut jb, mut jt) = (0, 0, 0, 0);
    println!("| example | PLSP bytes | PLSP tokens | JSON bytes | JSON tokens |");
    for (name, plsp, json) in PAIRS {
        // The PLSP text is canonical, and the JSON is valid.
        assert_eq!(loom_plsp::parse(plsp).unwrap().to_string(), *plsp);
        let _: serde_json::Value = serde_json::from_str(json).unwrap();
        let (t1, t2) = (
            bpe.encode_ordinary(plsp).len(),
            bpe.encode_ordinary(json).len(),
        );
        println!("| {name} | {} | {t1} | {} | {t2} |", plsp.len(), json.len());
        pb += plsp.len();
        pt += t1;
        jb += json.len();
        jt += t2;
    }
    println!("| total | {pb} | {pt} | {jb} | {jt} |");
    assert!(pb < jb && pt > 0 && jt > 0);
}
