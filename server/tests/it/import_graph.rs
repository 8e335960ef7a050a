//! Imports between the areas of `server/src` run one way. An area is a
//! top-level module (`loops/`, `accounts.rs`...); an import is any path
//! `crate::AREA` in a line of code (a `use` line or a path written inline;
//! comment lines do not count). The graph of areas may have no cycle, but
//! for the back edges listed in [`KNOWN_BACK_EDGES`], each with why it is
//! still there; each listed edge must still exist, so the list only
//! shrinks. `site` (the router) sits on top and `web` (the request state)
//! under the areas.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Imports that still run against the layering, and why. Removing one of
/// these is progress: take it off the list. Adding one is a failure.
const KNOWN_BACK_EDGES: &[(&str, &str, &str)] = &[(
    "store",
    "loops",
    "the store owns SQLite's writer of rounds, whose batches run `loops::ingest::store_round`",
)];

/// The areas from the bottom up: an area may import only areas before it
/// (but for the known back edges).
const LAYERS: &[&str] = &[
    "config",
    "signature",
    "stored_text",
    "telemetry",
    "convergence",
    "store",
    "mail",
    "stripe_api",
    "live",
    "web",
    "alerts",
    "accounts",
    "newsletter",
    "billing",
    "connector",
    "audit",
    "loops",
    "traces",
    "mcp",
    "account_page",
    "admin",
    "dashboard",
    "site",
    "cli",
];

/// Every `crate::AREA` path of each area's code: area -> the areas it
/// imports, with a place each import is made.
fn import_graph(src: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let areas: BTreeSet<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_string();
            (path.is_dir() || path.extension().is_some_and(|ext| ext == "rs")).then_some(name)
        })
        .filter(|name| name != "lib" && name != "main")
        .collect();
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut files = vec![src.to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|entry| entry.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let relative = path.strip_prefix(src).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_str().unwrap();
        let area = first.trim_end_matches(".rs").to_string();
        if !areas.contains(&area) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (at, _) in line.match_indices("crate::") {
                let rest = &line[at + "crate::".len()..];
                let target: String =
                    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if target != area && areas.contains(&target) {
                    graph
                        .entry(area.clone())
                        .or_default()
                        .entry(target)
                        .or_insert_with(|| format!("{}:{}", relative.display(), number + 1));
                }
            }
        }
        graph.entry(area).or_default();
    }
    graph
}

/// A cycle of `graph`, if it has one, as the areas along it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|seen| seen == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn areas_import_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = import_graph(&src);
    for area in graph.keys() {
        assert!(LAYERS.contains(&area.as_str()), "the area {area} has no place in LAYERS: give it one");
    }
    for (from, to, why) in KNOWN_BACK_EDGES {
        assert!(
            graph.get(*from).is_some_and(|targets| targets.contains_key(*to)),
            "{from} no longer imports {to} ({why}): take it off KNOWN_BACK_EDGES"
        );
    }
    let known = |from: &str, to: &str| KNOWN_BACK_EDGES.iter().any(|(f, t, _)| *f == from && *t == to);
    // Every import goes down the layers, but for the known ones.
    let layer = |area: &str| LAYERS.iter().position(|name| *name == area).unwrap_or(usize::MAX);
    let mut upward = Vec::new();
    for (from, targets) in &graph {
        for (to, place) in targets {
            if layer(to) > layer(from) && !known(from, to) {
                upward.push(format!("{from} -> {to} ({place})"));
            }
        }
    }
    assert!(upward.is_empty(), "imports that run up the layers:\n{}", upward.join("\n"));
    // And so, without the known back edges, no cycle.
    let acyclic: BTreeMap<String, BTreeSet<String>> = graph
        .iter()
        .map(|(from, targets)| {
            (from.clone(), targets.keys().filter(|to| !known(from, to)).cloned().collect())
        })
        .collect();
    assert_eq!(find_cycle(&acyclic), None);
    // The dashboard and the router take part in no cycle at all, known
    // edges included.
    let all: BTreeMap<String, BTreeSet<String>> =
        graph.iter().map(|(from, targets)| (from.clone(), targets.keys().cloned().collect())).collect();
    for top in ["dashboard", "site"] {
        let reached_back =
            reaches(&all, top).into_iter().any(|area| all.get(&area).is_some_and(|t| t.contains(top)));
        assert!(!reached_back, "{top} is part of a cycle");
    }
}

/// Every area `start` reaches through its imports.
fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![start.to_string()];
    while let Some(node) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if seen.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    seen
}

#[test]
fn the_check_finds_a_cycle_it_is_shown() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &[])]
            .iter()
            .map(|(from, to)| (from.to_string(), to.iter().map(|t| t.to_string()).collect()))
            .collect();
    assert_eq!(find_cycle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
}
