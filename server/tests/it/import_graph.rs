//! Imports between the areas of `server/src` run one way. An area is a
//! top-level module (`loops/`, `accounts.rs`...); an import is any path
//! `crate::AREA` in a line of code (a `use` line or a path written inline;
//! comment lines do not count). Every import goes down [`LAYERS`], so the
//! graph of areas has no cycle. `site` (the router) sits on top, the pages
//! drawn from several areas (`dashboard`, `admin`, `account_page`) under
//! it, `web` (the request state) under the areas, and what the request
//! state holds (`store`, `live`, `mail`, `stripe_api`) under `web`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The areas from the bottom up: an area may import only areas before it.
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
    // Every import goes down the layers.
    let layer = |area: &str| LAYERS.iter().position(|name| *name == area).unwrap_or(usize::MAX);
    let mut upward = Vec::new();
    for (from, targets) in &graph {
        for (to, place) in targets {
            if layer(to) > layer(from) {
                upward.push(format!("{from} -> {to} ({place})"));
            }
        }
    }
    assert!(upward.is_empty(), "imports that run up the layers:\n{}", upward.join("\n"));
    // And so no cycle: checked on its own, whatever the order of LAYERS.
    let all: BTreeMap<String, BTreeSet<String>> =
        graph.iter().map(|(from, targets)| (from.clone(), targets.keys().cloned().collect())).collect();
    assert_eq!(find_cycle(&all), None);
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
