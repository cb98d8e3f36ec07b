//! The house rules of ARCHITECTURE.md, checked on the sources: which top-level module may use
//! which (imports go one way, down the stages), and how long a source file may grow.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules each top-level module may name through `crate::`. Anything else is a
/// forbidden edge. Kept in the order of the stages: a module uses only modules above it here.
const ALLOWED: &[(&str, &[&str])] = &[
    ("layout", &[]),
    ("ptx", &[]),
    ("ir", &["layout"]),
    ("planner", &["ir", "layout", "ptx"]),
    ("codegen", &["ir", "planner", "layout", "ptx"]),
    ("sim", &["ptx"]),
    ("cache_key", &["ir", "planner", "layout", "ptx"]),
    (
        "runtime",
        &["ir", "planner", "layout", "ptx", "sim", "cache_key"],
    ),
    ("error", &["ir", "planner", "runtime"]),
    (
        "kernel",
        &[
            "ir",
            "planner",
            "layout",
            "ptx",
            "codegen",
            "cache_key",
            "runtime",
            "error",
        ],
    ),
    ("random", &["ir", "runtime"]),
    ("algorithms", &["ir", "ptx", "runtime", "error", "kernel"]),
    ("multi", &["ir", "runtime", "error", "kernel", "algorithms"]),
];

/// Items the crate root re-exports, which a module may name as `crate::Item`; each counts as
/// an edge to the module that defines it.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("Error", "error"),
    ("Kernel", "kernel"),
    ("KernelBuilder", "ir"),
    ("Load", "ir"),
    ("Store", "ir"),
];

/// Files allowed past the length limit: the simulator's per-type tables, which are long
/// because they are tables.
const LONG_FILES: &[&str] = &["src/sim/alu.rs"];

/// The most lines a source file may have.
const MAX_LINES: usize = 1200;

/// The crate's source directory.
fn src() -> PathBuf {
    crate::common::package_root().join("src")
}

/// A source file's path under the package root, with `/` separators (`src/ir/mod.rs`).
fn shown(path: &Path) -> String {
    let rel = path
        .strip_prefix(crate::common::package_root())
        .expect("a path under the package");
    rel.to_string_lossy().replace('\\', "/")
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The source without comments (line comments, doc comments, block comments) and without the
/// contents of string literals, so that prose and messages that mention `crate::x` are not
/// taken for code.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('"' must not open a string); lifetimes are left alone.
            let end = b[i + 1..]
                .iter()
                .position(|&c| c == b'\'')
                .map_or(b.len(), |p| i + 2 + p);
            out.push_str("' '");
            i = end;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Every top-level module a piece of code names through `crate::` paths, with the line of the
/// first mention: `crate::a::..`, `crate::{a::.., b}` (nested groups too) and root items.
fn crate_edges(code: &str) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    let mut note = |name: &str, line: usize| {
        let module = ROOT_ITEMS
            .iter()
            .find(|(item, _)| *item == name)
            .map_or(name, |(_, m)| m);
        found.entry(module.to_string()).or_insert(line);
    };
    let b = code.as_bytes();
    let mut at = 0;
    while let Some(p) = code[at..].find("crate::") {
        let start = at + p;
        at = start + "crate::".len();
        // `crate` must be a whole word (not `mycrate::`).
        if start > 0 && (b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_') {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        if b.get(at) == Some(&b'{') {
            // A group: the first name of each comma-separated item at depth one.
            let mut depth = 0;
            let mut item_start = true;
            let mut j = at;
            while j < b.len() {
                match b[j] {
                    b'{' => {
                        depth += 1;
                        item_start = depth == 1;
                    }
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    b',' if depth == 1 => item_start = true,
                    c if item_start && (c.is_ascii_alphabetic() || c == b'_') => {
                        let end = code[j..]
                            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                            .map_or(code.len(), |e| j + e);
                        note(&code[j..end], line);
                        item_start = false;
                        j = end;
                        continue;
                    }
                    _ => {}
                }
                j += 1;
            }
        } else {
            let end = code[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(code.len(), |e| at + e);
            note(&code[at..end], line);
        }
    }
    found
}

fn top_module(path: &Path) -> String {
    let rel = path.strip_prefix(src()).expect("a path under src");
    let first = rel.components().next().expect("a file under src");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

#[test]
fn imports_go_one_way() {
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(m, deps)| (*m, deps.iter().copied().collect()))
        .collect();
    let mut files = Vec::new();
    sources(&src(), &mut files);
    assert!(
        files.len() > 20,
        "found only {} sources under src",
        files.len()
    );
    let mut bad = Vec::new();
    for f in &files {
        let module = top_module(f);
        if module == "lib" {
            continue;
        }
        let Some(deps) = allowed.get(module.as_str()) else {
            bad.push(format!(
                "{}: the top-level module `{module}` has no rule in tests/all/tidy.rs",
                shown(f)
            ));
            continue;
        };
        let text = std::fs::read_to_string(f).expect("read a source file");
        for (to, line) in crate_edges(&code_of(&text)) {
            if to != module && !deps.contains(to.as_str()) {
                bad.push(format!("{}:{line}: `{module}` uses `{to}`", shown(f)));
            }
        }
    }
    assert!(bad.is_empty(), "forbidden imports:\n{}", bad.join("\n"));
}

/// The rules as ARCHITECTURE.md's table under `## Module rules` states them: each row names
/// modules in its first column and the modules they may use in its second, every name in
/// backticks (other words are prose).
fn documented_rules() -> BTreeMap<String, BTreeSet<String>> {
    let path = crate::common::package_root().join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).expect("read ARCHITECTURE.md");
    let section = text
        .split("\n## Module rules\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Module rules` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let names = |cell: &str| -> BTreeSet<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let mut rules = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        // `| a | b |` splits into ["", a, b, ""].
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 || cells[1] == "module" || cells[1].starts_with("---") {
            continue;
        }
        for module in names(cells[1]) {
            rules.insert(module, names(cells[2]));
        }
    }
    rules
}

#[test]
fn architecture_md_states_these_rules() {
    let tested: BTreeMap<String, BTreeSet<String>> = ALLOWED
        .iter()
        .map(|(m, deps)| (m.to_string(), deps.iter().map(|d| d.to_string()).collect()))
        .collect();
    assert_eq!(
        documented_rules(),
        tested,
        "ARCHITECTURE.md's module rules and ALLOWED in tests/all/tidy.rs differ"
    );
}

#[test]
fn the_rules_have_no_cycle() {
    // Each module's allowed modules come earlier in ALLOWED, so no cycle can pass the rule.
    for (i, (m, deps)) in ALLOWED.iter().enumerate() {
        for d in *deps {
            let j = ALLOWED.iter().position(|(n, _)| n == d);
            assert!(
                j.is_some_and(|j| j < i),
                "`{m}` may use `{d}`, which is not above it"
            );
        }
    }
}

#[test]
fn the_edge_reader_sees_every_form() {
    let code = code_of(
        "use crate::a::b;\n// crate::commented\nlet s = \"crate::quoted\";\n\
         use crate::{c::d, e, f::{g, h}};\nfn x() { crate::Kernel::new(); mycrate::no(); }\n",
    );
    let edges: Vec<String> = crate_edges(&code).into_keys().collect();
    assert_eq!(edges, ["a", "c", "e", "f", "kernel"]);
}

#[test]
fn source_files_stay_short() {
    let mut files = Vec::new();
    let root = crate::common::package_root();
    for dir in ["src", "tests", "examples", "benches"] {
        if root.join(dir).is_dir() {
            sources(&root.join(dir), &mut files);
        }
    }
    let mut long = Vec::new();
    for f in &files {
        let lines = std::fs::read_to_string(f)
            .expect("read a source file")
            .lines()
            .count();
        let name = shown(f);
        if lines > MAX_LINES && !LONG_FILES.contains(&name.as_str()) {
            long.push(format!("{name}: {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them by concern):\n{}",
        long.join("\n")
    );
}
