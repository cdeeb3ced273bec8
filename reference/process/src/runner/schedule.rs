//! Phase scheduling (guide "Phases", "Dependency rules"): the DAG in waves. A wave is the set
//! of phases whose dependencies are all in earlier waves, i.e. the phases that could run in
//! parallel; each wave is sorted by phase id. The runner runs a wave's phases concurrently and
//! merges their events in id order ([`super::wave`]), so the event order is fixed by the
//! definition alone (README "Scheduling and phase mode").

use crate::package::Process;
use std::collections::{BTreeMap, BTreeSet};

/// The waves of `process`'s phase DAG, each sorted by id; `Err` names a phase that can never
/// become ready (unknown dependency or a cycle — a validated process has neither).
pub fn waves(process: &Process) -> Result<Vec<Vec<String>>, String> {
    let deps: BTreeMap<&str, BTreeSet<&str>> = process
        .phases
        .iter()
        .map(|p| {
            (
                p.id.as_str(),
                p.depends_on.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    // Kahn's algorithm by levels: linear in phases + edges (no rescans, no recursion).
    let mut waiting: BTreeMap<&str, usize> = BTreeMap::new();
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (id, ds) in &deps {
        waiting.insert(id, ds.len());
        for d in ds {
            dependents.entry(d).or_default().push(id);
        }
    }
    let mut wave: BTreeSet<&str> = waiting
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| *id)
        .collect();
    let mut placed = 0;
    let mut out = Vec::new();
    while !wave.is_empty() {
        let mut next = BTreeSet::new();
        for id in &wave {
            for dependent in dependents.get(id).into_iter().flatten() {
                if let Some(n) = waiting.get_mut(dependent) {
                    *n -= 1;
                    if *n == 0 {
                        next.insert(*dependent);
                    }
                }
            }
        }
        placed += wave.len();
        out.push(wave.into_iter().map(str::to_owned).collect());
        wave = next;
    }
    if placed < deps.len() {
        const SHOWN: usize = 16;
        let stuck: Vec<&str> = waiting
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(id, _)| *id)
            .collect();
        let more = stuck.len().saturating_sub(SHOWN);
        return Err(format!(
            "phases {}{} can never start: unknown dependency or cycle (guide \"Phases\", dependency rules)",
            stuck[..stuck.len().min(SHOWN)].join(", "),
            if more > 0 {
                format!(" … (+{more} more)")
            } else {
                String::new()
            }
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::Phase;
    use proptest::prelude::*;

    fn process(edges: &[(&str, &[&str])]) -> Process {
        let phases: Vec<serde_json::Value> = edges
            .iter()
            .map(|(id, d)| serde_json::json!({"id": id, "description": "d", "depends_on": d}))
            .collect();
        serde_json::from_value(serde_json::json!({"name": "p", "phases": phases})).unwrap()
    }

    #[test]
    fn guide_example_dag() {
        let p = process(&[
            ("report", &["synthesize"]),
            ("synthesize", &["research", "analysis"]),
            ("research", &[]),
            ("analysis", &[]),
        ]);
        assert_eq!(
            waves(&p).unwrap(),
            vec![
                vec!["analysis", "research"],
                vec!["synthesize"],
                vec!["report"]
            ]
        );
    }

    #[test]
    fn cycles_and_unknown_dependencies_are_named() {
        let p = process(&[("a", &["b"]), ("b", &["a"]), ("c", &[])]);
        let err = waves(&p).unwrap_err();
        assert!(err.contains("a, b"), "{err}");
        let p = process(&[("a", &["ghost"])]);
        assert!(waves(&p).unwrap_err().contains("a"));
    }

    proptest! {
        /// In any DAG, every phase appears exactly once and after all its dependencies.
        #[test]
        fn no_phase_before_its_dependencies(n in 1usize..12, bits in proptest::collection::vec(any::<bool>(), 66)) {
            let ids: Vec<String> = (0..n).map(|i| format!("p{i:02}")).collect();
            let mut phases = Vec::new();
            let mut k = 0;
            for i in 0..n {
                let mut d = Vec::new();
                for dep in ids.iter().take(i) {
                    if bits[k % bits.len()] {
                        d.push(dep.clone());
                    }
                    k += 1;
                }
                phases.push(Phase { id: ids[i].clone(), description: "d".into(), depends_on: d, ..serde_json::from_value(serde_json::json!({"id": "x", "description": "d", "depends_on": []})).unwrap() });
            }
            let mut p = process(&[]);
            p.phases = phases;
            let w = waves(&p).unwrap();
            let order: Vec<&String> = w.iter().flatten().collect();
            prop_assert_eq!(order.len(), n);
            let pos = |id: &str| order.iter().position(|x| x.as_str() == id).unwrap();
            for ph in &p.phases {
                for d in &ph.depends_on {
                    prop_assert!(pos(d) < pos(&ph.id));
                }
            }
        }
    }
}
