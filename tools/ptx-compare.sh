#!/usr/bin/env bash
# Proves a change leaves every emitted PTX byte-for-byte identical: runs the whole test suite
# (unit, integration with its goldens, doc tests), every example and every benchmark once in
# test mode, at two revisions, with COOPGRAPH_DUMP_PTX set, and compares the sets of modules
# written (each saved as <entry>.<target>.<hash>.ptx, for every arch the tests emit).
#
# Usage, from anywhere in the checkout:
#   tools/ptx-compare.sh BASE          # BASE (a commit, branch or tag) against the working tree
#   tools/ptx-compare.sh BASE HEAD     # two revisions
# Prints `identical: N modules` and exits 0, or lists the modules only one side wrote (with
# `diff -u` of the first pair that share an entry and target) and exits 1.
# Builds go to target/ptx-compare so that repeated runs are incremental. No GPU is needed;
# ptxas is not run (the texts are compared, not assembled).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
[ $# -ge 1 ] || { sed -n 2,13p "$0"; exit 2; }
base=$1
head=${2:-}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" > /dev/null 2>&1 || true;
      git worktree remove --force "$work/head" > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="$root/target/ptx-compare"
unset COOPGRAPH_PTXAS COOPGRAPH_DEVICE
# Property tests draw their cases from this seed at both revisions, so both emit the same kernels.
export PROPTEST_RNG_SEED=${PROPTEST_RNG_SEED:-20261201}

dump() { # dump <checkout> <dir>
  local src=$1 out=$2
  mkdir -p "$out"
  (
    cd "$src"
    export COOPGRAPH_DUMP_PTX=$out
    cargo test --all-features --quiet > "$out.log" 2>&1 ||
      { echo "ptx-compare: tests failed in $src (log: $out.log)" >&2; exit 1; }
    for ex in examples/*.rs; do
      cargo run --quiet --profile test --all-features --example "$(basename "$ex" .rs)" \
        >> "$out.log" 2>&1 || { echo "ptx-compare: example $ex failed in $src" >&2; exit 1; }
    done
    cargo bench --all-features --quiet -- --test >> "$out.log" 2>&1 ||
      { echo "ptx-compare: benchmarks failed in $src" >&2; exit 1; }
  )
}

git worktree add --detach --quiet "$work/base" "$base"
dump "$work/base" "$work/ptx-base"
if [ -n "$head" ]; then
  git worktree add --detach --quiet "$work/head" "$head"
  dump "$work/head" "$work/ptx-head"
else
  dump "$root" "$work/ptx-head"
fi

# Doc tests are compiled in a temporary directory whose name is random, and the PTX's source
# comments name it: list each module as `<entry>.<target> <hash of its text with that name
# made fixed>`.
listing() { # listing <dir>
  (
    cd "$1"
    for f in *.ptx; do
      h=$(sed 's#/tmp/rustdoctest[^/]*/#/tmp/rustdoctest/#g' "$f" | sha256sum | cut -c1-16)
      echo "${f%.*.ptx} $h $f"
    done
  ) | sort -u -k1,2 | sort
}
listing "$work/ptx-base" > "$work/base.files"
listing "$work/ptx-head" > "$work/head.files"
cut -d' ' -f1,2 "$work/base.files" | sort > "$work/base.list"
cut -d' ' -f1,2 "$work/head.files" | sort > "$work/head.list"
n=$(wc -l < "$work/base.list")
if [ "$n" -eq 0 ]; then
  echo "ptx-compare: no module was written (is COOPGRAPH_DUMP_PTX supported at $base?)" >&2
  exit 2
fi
if cmp -s "$work/base.list" "$work/head.list"; then
  echo "identical: $n modules"
  exit 0
fi
echo "different: only in ${base} (<) or only in ${head:-the working tree} (>):"
diff "$work/base.list" "$work/head.list" | grep '^[<>]' | head -50 || true
first=$(comm -23 "$work/base.list" "$work/head.list" | head -1 || true)
if [ -n "$first" ]; then
  stem=${first%% *}
  a=$(grep -F "$first " "$work/base.files" | head -1 | cut -d' ' -f3)
  b=$(grep "^$stem " "$work/head.files" | head -1 | cut -d' ' -f3 || true)
  if [ -n "$b" ]; then
    diff -u "$work/ptx-base/$a" "$work/ptx-head/$b" | head -80 || true
  fi
fi
exit 1
