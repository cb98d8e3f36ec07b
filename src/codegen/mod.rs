//! Code generation: the lowering of planned IR to the typed PTX model of [`crate::ptx`].
//!
//! `builder.rs` holds the emission state and every instruction-level helper; the lowering
//! files build on it and never on each other: `expr.rs` (expressions and operators) on the
//! builder alone, with its part `expr/math.rs` (the math library's functions); `transfer.rs` (global loads and stores), `indexed.rs` (writes by index),
//! `atomic.rs` (atomics, native or compare-and-swap loops), `exchange.rs` (exchanges through
//! shared memory or shuffles), `reduce.rs`, `scan.rs` and `neighbor.rs` on the builder and
//! `expr.rs`; `emit.rs` walks the kernel (control flow, each op's conversions) and calls them.
//!
//! Architecture invariant: codegen reads a verified kernel and its plan and writes PTX text; it
//! never calls the driver and never changes the plan.

pub mod atomic;
pub mod builder;
pub(crate) mod cluster;
pub mod emit;
pub mod exchange;
pub mod expr;
pub mod indexed;
pub mod lanes;
pub mod neighbor;
pub mod reduce;
pub mod scan;
pub mod transfer;

pub use builder::length_params;
pub use emit::{emit, emit_with_checks, entry_name, grid_dims};

#[cfg(test)]
mod tests {
    /// Each file of codegen, with the files whose functions it may call.
    const FILES: &[(&str, &str, &[&str])] = &[
        ("builder", include_str!("builder.rs"), &[]),
        ("expr", include_str!("expr.rs"), &["builder", "math"]),
        ("math", include_str!("expr/math.rs"), &["builder", "expr"]),
        ("transfer", include_str!("transfer.rs"), LOWERING),
        ("indexed", include_str!("indexed.rs"), LOWERING),
        ("atomic", include_str!("atomic.rs"), LOWERING),
        ("exchange", include_str!("exchange.rs"), LOWERING),
        ("reduce", include_str!("reduce.rs"), LOWERING),
        ("scan", include_str!("scan.rs"), LOWERING),
        ("neighbor", include_str!("neighbor.rs"), LOWERING),
        (
            "emit",
            include_str!("emit.rs"),
            &[
                "builder", "expr", "transfer", "indexed", "atomic", "exchange", "reduce", "scan",
                "neighbor",
            ],
        ),
    ];

    /// What an op's lowering may use: the builder and expression lowering.
    const LOWERING: &[&str] = &["builder", "expr"];

    /// A file's code without its tests.
    fn code(src: &str) -> &str {
        src.split("#[cfg(test)]").next().unwrap_or(src)
    }

    /// The functions and methods a file defines.
    fn defined(src: &str) -> Vec<&str> {
        code(src)
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let l = ["pub(crate) ", "pub(super) ", "pub "]
                    .iter()
                    .find_map(|v| l.strip_prefix(v))
                    .unwrap_or(l);
                let name = l.strip_prefix("fn ")?;
                let end = name.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
                Some(&name[..end])
            })
            .collect()
    }

    /// Whether `src` calls a function or method `name`.
    fn calls(src: &str, name: &str) -> bool {
        let call = format!("{name}(");
        src.match_indices(&call).any(|(i, _)| {
            let before = &src[..i];
            let joined = before.ends_with(|c: char| c.is_alphanumeric() || c == '_');
            !joined && !before.ends_with("fn ")
        })
    }

    #[test]
    fn lowering_files_build_on_the_builder_and_never_on_each_other() {
        for &(file, src, allowed) in FILES {
            let own = defined(src);
            for &(other, other_src, _) in FILES {
                if other == file || allowed.contains(&other) {
                    continue;
                }
                assert!(
                    !code(src).contains(&format!("super::{other}")),
                    "{file}.rs imports from {other}.rs"
                );
                for name in defined(other_src) {
                    assert!(
                        own.contains(&name) || !calls(code(src), name),
                        "{file}.rs calls `{name}` of {other}.rs"
                    );
                }
            }
        }
    }

    #[test]
    fn the_dependency_check_sees_calls_and_imports() {
        assert_eq!(
            defined("    pub(crate) fn exchange(&mut self) {}"),
            ["exchange"]
        );
        assert!(calls("self.exchange(&site, &a, &b);", "exchange"));
        assert!(!calls("self.shuffle_exchange(e);", "exchange"));
        assert!(!calls("fn exchange(&mut self)", "exchange"));
    }
}
