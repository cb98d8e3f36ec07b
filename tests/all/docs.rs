//! The README's table of environment variables names every `COOPGRAPH_*` variable the crate,
//! its examples, tests and tools read.

use std::path::Path;

/// Every `COOPGRAPH_*` name in the files under `dir` (recursively).
fn names_in(dir: &Path, out: &mut Vec<String>) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    for item in listing.flatten() {
        let path = item.path();
        if path.is_dir() {
            names_in(&path, out);
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut rest = text.as_str();
        while let Some(at) = rest.find("COOPGRAPH_") {
            let tail = &rest[at..];
            let len = tail
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(tail.len());
            let name = tail[..len].trim_end_matches('_');
            // `COOPGRAPH_*` in prose names no variable.
            if name.len() > "COOPGRAPH".len() {
                out.push(name.to_string());
            }
            rest = &tail[len..];
        }
    }
}

#[test]
fn the_readme_table_names_every_environment_variable() {
    let root = crate::common::package_root();
    let mut names = Vec::new();
    for dir in ["src", "examples", "benches", "tests/all", "tools"] {
        names_in(&root.join(dir), &mut names);
    }
    names.sort();
    names.dedup();
    // The crate reads at least the device choice and the disk cache's three.
    for known in [
        "COOPGRAPH_DEVICE",
        "COOPGRAPH_CACHE_DIR",
        "COOPGRAPH_DISK_CACHE",
        "COOPGRAPH_DISK_CACHE_MAX_MB",
    ] {
        assert!(
            names.iter().any(|n| n == known),
            "{known} not found: {names:?}"
        );
    }
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let table: Vec<&str> = readme.lines().filter(|l| l.starts_with("| `")).collect();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !table.iter().any(|row| row.contains(&format!("`{n}`"))))
        .collect();
    assert!(
        missing.is_empty(),
        "the README's environment table lacks {missing:?}"
    );
}
