//! The crate's module graph reads from the bottom up (issue 26): every `crate::…`,
//! `super::…` and `self::…` path of `src/` is resolved to the module it names, and
//!
//! - every top-level module belongs to one layer of the list in `src/lib.rs` ("Layers"), and
//!   imports only modules of its own layer or the layers below;
//! - no top-level modules import each other in a circle;
//! - inside any folder, no circle runs through a sub-folder (a circle among the files of one
//!   folder is that folder's own business; one that spans folders ties them together).
//!
//! Test modules (`mod tests`, `tests/` folders, `*_tests.rs`) may look anywhere. Doc
//! comments count: a path named in a comment is a dependency a reader has to follow too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type ModPath = Vec<String>;

/// One source file: its module path and its text (test modules cut off).
struct File {
    module: ModPath,
    text: String,
}

/// The module graph: which module's text names which other module.
struct Graph {
    modules: BTreeSet<ModPath>,
    /// Modules that are folders (`mod.rs`).
    folders: BTreeSet<ModPath>,
    edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

fn read_src(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// `a/b.rs` → `[a, b]`, `a/mod.rs` → `[a]`, `lib.rs` → `[]`; `None` for the binary root
/// and for test-only files.
fn module_of(rel: &str) -> Option<(ModPath, bool)> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if rel == "main.rs" || parts.iter().any(|p| p == "tests" || p.ends_with("_tests")) {
        return None;
    }
    if rel == "lib.rs" {
        return Some((Vec::new(), true));
    }
    let folder = parts.last().is_some_and(|p| p == "mod");
    if folder {
        parts.pop();
    }
    Some((parts, folder))
}

/// The text without its inline test module (everything from `#[cfg(test)] mod tests {`).
fn without_tests(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        let rest = text[start + "#[cfg(test)]".len()..].trim_start();
        if rest.starts_with("mod tests {") {
            return &text[..start];
        }
        from = start + 1;
    }
    text
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path that starts with `crate::`, `super::` or `self::` in `text`, group imports
/// (`super::{a, b::c}`) expanded.
fn paths(text: &str) -> Vec<Vec<String>> {
    let bytes: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == ':');
        if boundary {
            for root in ["crate", "super", "self"] {
                let r: Vec<char> = root.chars().collect();
                let end = i + r.len();
                if bytes.get(i..end) == Some(&r[..])
                    && bytes.get(end..end + 2) == Some(&[':', ':'][..])
                {
                    let mut j = i;
                    tree(&bytes, &mut j, Vec::new(), &mut out);
                    i = j.max(i + 1);
                    break;
                }
            }
        }
        i += 1;
    }
    out
}

/// Reads one use tree at `*j`: `seg::seg::…` then optionally `::{tree, tree}` or `::*`.
fn tree(s: &[char], j: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        while *j < s.len() && s[*j].is_whitespace() {
            *j += 1;
        }
        let start = *j;
        while *j < s.len() && is_ident(s[*j]) {
            *j += 1;
        }
        if *j == start {
            if s.get(*j) == Some(&'{') {
                *j += 1;
                loop {
                    tree(s, j, path.clone(), out);
                    while *j < s.len() && s[*j].is_whitespace() {
                        *j += 1;
                    }
                    match s.get(*j) {
                        Some(',') => *j += 1,
                        Some('}') => {
                            *j += 1;
                            return;
                        }
                        _ => return,
                    }
                    while *j < s.len() && s[*j].is_whitespace() {
                        *j += 1;
                    }
                    if s.get(*j) == Some(&'}') {
                        *j += 1;
                        return;
                    }
                }
            }
            break;
        }
        path.push(s[start..*j].iter().collect());
        if s.get(*j..*j + 2) == Some(&[':', ':'][..]) {
            *j += 2;
        } else {
            break;
        }
    }
    if !path.is_empty() {
        out.push(path);
    }
}

fn build(files: &[(String, String)]) -> Graph {
    let mut parsed = Vec::new();
    let mut modules = BTreeSet::new();
    let mut folders = BTreeSet::new();
    for (rel, text) in files {
        if let Some((module, folder)) = module_of(rel) {
            modules.insert(module.clone());
            if folder {
                folders.insert(module.clone());
            }
            parsed.push(File {
                module,
                text: without_tests(text).to_string(),
            });
        }
    }
    // Items the crate root re-exports (`pub use state::AppState;`) name their module.
    let mut root_items: BTreeMap<String, ModPath> = BTreeMap::new();
    if let Some(lib) = parsed.iter().find(|f| f.module.is_empty()) {
        for line in lib.text.lines().filter(|l| l.starts_with("pub use ")) {
            for path in paths(&format!("crate::{}", &line["pub use ".len()..])) {
                if let (Some(item), Some(module)) = (path.last(), path.get(1)) {
                    root_items.insert(item.clone(), vec![module.clone()]);
                }
            }
        }
    }
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for file in &parsed {
        if file.module.is_empty() {
            continue; // the crate root declares every module
        }
        for path in paths(&file.text) {
            let mut base: ModPath = match path[0].as_str() {
                "crate" => Vec::new(),
                "self" => file.module.clone(),
                _ => file.module[..file.module.len() - 1].to_vec(),
            };
            let mut rest = &path[1..];
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            let mut full = base.clone();
            full.extend(rest.iter().cloned());
            let target = (0..=full.len())
                .rev()
                .map(|n| full[..n].to_vec())
                .find(|m| modules.contains(m))
                .unwrap_or_default();
            let target = match (target.is_empty(), full.first()) {
                (true, Some(item)) => match root_items.get(item) {
                    Some(m) => m.clone(),
                    None => continue, // an item of the crate root itself (`VERSION`)
                },
                _ => target,
            };
            if target != file.module && !target.is_empty() {
                edges.entry(file.module.clone()).or_default().insert(target);
            }
        }
    }
    Graph {
        modules,
        folders,
        edges,
    }
}

/// The numbered layers of the crate documentation: for each, the modules it names.
fn declared_layers(lib: &str) -> Vec<(String, Vec<String>)> {
    let mut layers: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_list = false;
    // Parentheses of an item may span its lines.
    let mut depth = 0i32;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            break;
        };
        let doc = doc.trim_start();
        if doc.starts_with("# Layers") {
            in_list = true;
            continue;
        }
        if !in_list {
            continue;
        }
        let numbered = doc
            .split_once(". ")
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        let text = match numbered {
            Some((n, text)) => {
                layers.push((format!("layer {n}"), Vec::new()));
                depth = 0;
                text
            }
            None if line.starts_with("//!    ") && !layers.is_empty() => doc,
            None => continue,
        };
        // A module is a backticked name outside parentheses (descriptions in parentheses
        // may name other things).
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                '`' if depth == 0 => {
                    let rest = &text[i + 1..];
                    if let Some(end) = rest.find('`') {
                        layers.last_mut().unwrap().1.push(rest[..end].to_string());
                        for _ in 0..=end {
                            chars.next();
                        }
                    }
                }
                _ => {}
            }
        }
    }
    layers
}

/// Strongly connected components with more than one member (Tarjan).
fn circles(
    nodes: &BTreeSet<ModPath>,
    edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
) -> Vec<Vec<ModPath>> {
    struct T<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on: BTreeSet<ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn visit(t: &mut T, v: &ModPath) {
        let n = t.index.len();
        t.index.insert(v.clone(), n);
        t.low.insert(v.clone(), n);
        t.stack.push(v.clone());
        t.on.insert(v.clone());
        for w in t.edges.get(v).cloned().unwrap_or_default() {
            if !t.index.contains_key(&w) {
                visit(t, &w);
                let lw = t.low[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(&w) {
                let iw = t.index[&w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(&w);
                comp.push(w.clone());
                if &w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in nodes {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// The edges between the children of `parent`: each module lifted to the child of `parent`
/// it lies in.
fn lifted(g: &Graph, parent: &ModPath) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let lift = |m: &ModPath| -> Option<ModPath> {
        (m.len() > parent.len() && m.starts_with(parent)).then(|| m[..=parent.len()].to_vec())
    };
    let mut out: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (from, tos) in &g.edges {
        let Some(a) = lift(from) else { continue };
        for to in tos {
            if let Some(b) = lift(to).filter(|b| *b != a) {
                out.entry(a.clone()).or_default().insert(b);
            }
        }
    }
    out
}

/// Every violation of the layer rules in `files` (paths relative to `src/`).
fn violations(files: &[(String, String)]) -> (Vec<String>, Vec<String>) {
    let g = build(files);
    let lib = files
        .iter()
        .find(|(p, _)| p == "lib.rs")
        .map(|(_, t)| t.as_str())
        .unwrap_or("");
    let layers = declared_layers(lib);
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let top: BTreeSet<String> = g
        .modules
        .iter()
        .filter(|m| m.len() == 1)
        .map(|m| m[0].clone())
        .collect();
    let mut layer_of: BTreeMap<String, usize> = BTreeMap::new();
    for (i, (label, mods)) in layers.iter().enumerate() {
        for m in mods {
            if !top.contains(m) {
                problems.push(format!(
                    "{label} of src/lib.rs names `{m}`, which is not a module of the crate"
                ));
            } else if layer_of.insert(m.clone(), i).is_some() {
                problems.push(format!(
                    "`{m}` is named in more than one layer of src/lib.rs"
                ));
            }
        }
    }
    for m in &top {
        if !layer_of.contains_key(m) {
            problems.push(format!(
                "module `{m}` is in no layer: add it to the list in src/lib.rs (\"Layers\")"
            ));
        }
    }
    // Uphill imports between top-level modules.
    let root = lifted(&g, &Vec::new());
    for (from, tos) in &root {
        for to in tos {
            if let (Some(a), Some(b)) = (layer_of.get(&from[0]), layer_of.get(&to[0])) {
                if b > a {
                    let files: Vec<String> = g
                        .edges
                        .iter()
                        .filter(|(f, ts)| f[0] == from[0] && ts.iter().any(|t| t[0] == to[0]))
                        .map(|(f, _)| name(f))
                        .collect();
                    problems.push(format!(
                        "`{}` (layer {}) imports `{}` (layer {}), a higher layer: {}",
                        from[0],
                        a + 1,
                        to[0],
                        b + 1,
                        files.join(", ")
                    ));
                }
            }
        }
    }
    // Circles: none at the top, none through a folder anywhere.
    let mut parents: Vec<ModPath> = g.folders.iter().cloned().collect();
    parents.sort();
    for parent in &parents {
        let edges = lifted(&g, parent);
        let children: BTreeSet<ModPath> = g
            .modules
            .iter()
            .filter(|m| m.len() == parent.len() + 1 && m.starts_with(parent))
            .cloned()
            .collect();
        for circle in circles(&children, &edges) {
            let ties: Vec<String> = circle
                .iter()
                .flat_map(|a| {
                    edges
                        .get(a)
                        .into_iter()
                        .flatten()
                        .filter(|b| circle.contains(b))
                        .map(move |b| format!("{} -> {}", name(a), name(b)))
                })
                .collect();
            let names: Vec<String> = circle.iter().map(name).collect();
            let spans_folders = parent.is_empty() || circle.iter().any(|m| g.folders.contains(m));
            let line = format!(
                "in {}: {} import each other in a circle ({})",
                name(parent),
                names.join(", "),
                ties.join("; ")
            );
            if spans_folders {
                problems.push(line);
            } else {
                notes.push(line);
            }
        }
    }
    (problems, notes)
}

#[test]
fn every_import_runs_downhill_and_no_circle_spans_a_folder() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = read_src(&src);
    let (problems, notes) = violations(&files);
    for note in &notes {
        eprintln!("note (one folder's files): {note}");
    }
    assert!(
        problems.is_empty(),
        "the module graph has {} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The check reads the real graph: it found the layers and some edges in every layer.
    let g = build(&files);
    let lib = files.iter().find(|(p, _)| p == "lib.rs").unwrap();
    let layers = declared_layers(&lib.1);
    assert!(layers.len() >= 5, "layers read from src/lib.rs: {layers:?}");
    assert!(
        g.edges.len() > 100,
        "only {} modules import others",
        g.edges.len()
    );
}

/// The check itself fails on what it is for: an uphill import, a circle between modules, a
/// circle through a folder, a module in no layer.
#[test]
fn the_check_refuses_uphill_imports_and_circles() {
    let lib = "//! # Layers\n//!\n//! 1. cores: `low`\n//! 2. upper: `high`, `other` (one `thing`)\n\npub mod high;\npub mod low;\npub mod other;\n";
    let base = |low: &str, high: &str| {
        vec![
            ("lib.rs".to_string(), lib.to_string()),
            ("low/mod.rs".to_string(), low.to_string()),
            ("low/a.rs".to_string(), "use super::b::X;".to_string()),
            ("low/b.rs".to_string(), "pub struct X;".to_string()),
            ("high.rs".to_string(), high.to_string()),
            ("other.rs".to_string(), "use crate::high::Y;".to_string()),
        ]
    };
    let (ok, _) = violations(&base(
        "pub mod a;\npub mod b;",
        "use crate::low::{a::Z, b};",
    ));
    assert!(ok.is_empty(), "{ok:?}");

    let (uphill, _) = violations(&base("use crate::high::Y;\npub mod a;", ""));
    assert!(
        uphill
            .iter()
            .any(|p| p.contains("`low` (layer 1) imports `high` (layer 2)")),
        "{uphill:?}"
    );

    let (circle, _) = violations(&base("pub mod a;", "use crate::other::Q;"));
    assert!(
        circle
            .iter()
            .any(|p| p.contains("in crate: high, other import each other in a circle")),
        "{circle:?}"
    );

    let mut through_folder = base("pub mod a;", "");
    through_folder.push(("low/c/mod.rs".into(), "use super::a::W;".into()));
    through_folder[2].1 = "use super::c::V;".into();
    let (folder, notes) = violations(&through_folder);
    assert!(
        folder
            .iter()
            .any(|p| p.contains("in low: low::a, low::c import each other")),
        "{folder:?}"
    );
    assert!(notes.is_empty(), "{notes:?}");

    let mut files_circle = base("pub mod a;", "");
    files_circle[3].1 = "use super::a::Y; /// see [`self::X`]".into();
    let (fine, notes) = violations(&files_circle);
    assert!(
        fine.is_empty(),
        "a circle of one folder's files is allowed: {fine:?}"
    );
    assert_eq!(notes.len(), 1, "{notes:?}");

    let mut unlisted = base("", "");
    unlisted.push(("stray.rs".into(), String::new()));
    let (stray, _) = violations(&unlisted);
    assert!(
        stray
            .iter()
            .any(|p| p.contains("module `stray` is in no layer")),
        "{stray:?}"
    );

    // Root re-exports name their module; test modules are not looked at.
    let mut reexport = base(
        "use crate::Y;\npub mod a;\n#[cfg(test)]\nmod tests {\n use crate::other::Q;\n}",
        "",
    );
    reexport[0].1.push_str("pub use high::Y;\n");
    let (re, _) = violations(&reexport);
    assert_eq!(re.len(), 1, "{re:?}");
    assert!(re[0].contains("`low` (layer 1) imports `high`"), "{re:?}");
}
