#!/usr/bin/env bash
# Checks that the crate builds with the toolchain its `rust-version` names (Cargo.toml), so the
# declared minimum is what the code really needs: every target (library, tests, examples,
# benches) with every feature, `cargo check` only, into target/msrv so the default build's
# artifacts stay as they are.
# Needs that toolchain installed (`rustup toolchain install <version> --profile minimal`); the
# script does not download one. Prints the toolchain's version and cargo's output; exits as
# cargo does.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || { echo "msrv: Cargo.toml declares no rust-version" >&2; exit 2; }
if ! rustup run "$version" rustc --version >&2; then
  echo "msrv: the $version toolchain is not installed (rustup toolchain install $version --profile minimal)" >&2
  exit 2
fi
CARGO_TARGET_DIR=target/msrv cargo "+$version" check --all-targets --all-features --quiet
echo "msrv: builds with Rust $version"
