#!/usr/bin/env bash
# Runs every check coopgraph has, on any machine (no GPU or CUDA needed): formatting, lints,
# docs, all tests (unit, integration, doc), and every example. Installs the pinned ptxas first,
# so every PTX the tests emit is assembled for each supported arch.
# With COOPGRAPH_DEVICE=cuda on a machine with a GPU, the kernel tests run there instead of on
# the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
COOPGRAPH_PTXAS=$(tools/install-ptxas)
export COOPGRAPH_PTXAS
cargo fmt --all -- --check
cargo clippy --all-targets --all-features -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features --quiet
cargo test --all-features
for ex in examples/*.rs; do
  name=$(basename "$ex" .rs)
  echo "--- example $name"
  cargo run --quiet --profile test --all-features --example "$name"
done
