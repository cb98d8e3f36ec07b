#!/usr/bin/env bash
# Proves a change leaves every emitted PTX byte-for-byte identical: runs the whole test suite
# (unit, integration with its goldens, doc tests), every example and every benchmark once in
# test mode, at two revisions, with COOPGRAPH_DUMP_PTX set, and compares the entry functions of
# the modules written (each module is saved as <first entry>.<target>.<hash>.ptx, for every
# arch the tests emit; each entry is compared on its own, with its module's PTX version).
#
# Usage, from anywhere in the checkout:
#   tools/ptx-compare.sh BASE          # BASE (a commit, branch or tag) against the working tree
#   tools/ptx-compare.sh BASE HEAD     # two revisions
# Prints `identical: N entries` and exits 0 when every entry BASE writes is written unchanged
# at HEAD; entries only HEAD writes (kernels of tests HEAD adds) are listed after it as new.
# Otherwise lists the entries only one side wrote (with `diff -u` of the first pair that share
# a name and target) and exits 1. With PTX_COMPARE_KEEP=<dir>, the dumps, logs and entries
# are left in <dir> (otherwise they are deleted).
# Each side builds in its own directory, target/ptx-compare/{base,head}, so that repeated runs
# are incremental: the two checkouts hold the same package at different paths, which cargo
# names alike, so in one directory it would take the artifacts one side built as fresh for the
# other (their sources are older) and compare a revision with itself. No GPU is needed; ptxas
# is not run (the texts are compared, not assembled).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
[ $# -ge 1 ] || { sed -n 2,16p "$0"; exit 2; }
base=$1
head=${2:-}
if [ -n "${PTX_COMPARE_KEEP:-}" ]; then
  mkdir -p "$PTX_COMPARE_KEEP"
  work=$(cd "$PTX_COMPARE_KEEP" && pwd)
  keep=1
  for side in base head; do
    git worktree remove --force "$work/$side" > /dev/null 2>&1 || true
    rm -rf "${work:?}/$side" "$work/ptx-$side" "$work/ptx-$side.log" "$work/entries-$side"
  done
else
  work=$(mktemp -d)
  keep=
fi
trap 'git worktree remove --force "$work/base" > /dev/null 2>&1 || true;
      git worktree remove --force "$work/head" > /dev/null 2>&1 || true;
      [ -n "$keep" ] || rm -rf "$work"' EXIT
unset COOPGRAPH_PTXAS COOPGRAPH_DEVICE
# Property tests draw their cases from this seed at both revisions, so both emit the same kernels.
export PROPTEST_RNG_SEED=${PROPTEST_RNG_SEED:-20261201}

dump() { # dump <checkout> <dir> <side>
  local src=$1 out=$2
  mkdir -p "$out"
  (
    cd "$src"
    export CARGO_TARGET_DIR="$root/target/ptx-compare/$3"
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
dump "$work/base" "$work/ptx-base" base
if [ -n "$head" ]; then
  git worktree add --detach --quiet "$work/head" "$head"
  dump "$work/head" "$work/ptx-head" head
else
  dump "$root" "$work/ptx-head" head
fi

# Compare entry by entry: a module that batches several kernels for one ptxas run gathers those
# of whichever tests run at the same time, so its membership differs between runs while each
# kernel's text does not. Each entry (its module-scope declarations, then `.visible .entry`
# through its closing brace) is listed as `<entry>.<target> <hash> <file>`, hashed with its
# module's `.version` line, and saved under `<dir>` as that file. The comments on each op and
# on each shared array's declaration name the builder call's `file:line:column`: a test that
# moves within its file (or doc tests, compiled as one bundle whose lines shift with every doc
# example) moves its kernel's comments, so the line and column are left out before hashing
# (the file stays). Doc tests are compiled in a temporary directory whose name is random: that
# name is made fixed too.
listing() { # listing <dump dir> <entries dir>
  python3 - "$1" "$2" <<'PY' | sort -u -k1,2 | sort
import hashlib, os, re, sys
src, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
entry = re.compile(r"((?:^\.extern [^\n]*\n)*)^\.visible \.entry (\S+?)\(.*?^\}$", re.M | re.S)
for name in sorted(os.listdir(src)):
    if not name.endswith(".ptx"):
        continue
    with open(os.path.join(src, name), encoding="utf-8", errors="replace") as f:
        text = re.sub(r"/tmp/rustdoctest[^/]*/", "/tmp/rustdoctest/", f.read())
        text = re.sub(r"^(.*// .* at \S+?):\d+:\d+$", r"\1", text, flags=re.M)
    version = re.search(r"^\.version .*$", text, re.M)
    target = re.search(r"^\.target (\S+)", text, re.M)
    head = version.group(0) if version else ""
    target = target.group(1) if target else "unknown"
    for m in entry.finditer(text):
        body = m.group(0)
        h = hashlib.sha256((head + "\n" + body).encode()).hexdigest()[:16]
        key = f"{m.group(2)}.{target}"
        file = f"{key}.{h}.ptx"
        path = os.path.join(out, file)
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as g:
                g.write(head + "\n" + body + "\n")
        print(key, h, file)
PY
}
listing "$work/ptx-base" "$work/entries-base" > "$work/base.files"
listing "$work/ptx-head" "$work/entries-head" > "$work/head.files"
cut -d' ' -f1,2 "$work/base.files" | sort > "$work/base.list"
cut -d' ' -f1,2 "$work/head.files" | sort > "$work/head.list"
n=$(wc -l < "$work/base.list")
if [ "$n" -eq 0 ]; then
  echo "ptx-compare: no entry was written (is COOPGRAPH_DUMP_PTX supported at $base?)" >&2
  exit 2
fi
comm -13 "$work/base.list" "$work/head.list" > "$work/new.list"
if [ -z "$(comm -23 "$work/base.list" "$work/head.list")" ]; then
  echo "identical: $n entries"
  if [ -s "$work/new.list" ]; then
    echo "new at ${head:-the working tree}: $(wc -l < "$work/new.list") entries (only its tests write them):"
    head -50 "$work/new.list"
  fi
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
    diff -u "$work/entries-base/$a" "$work/entries-head/$b" | head -80 || true
  fi
fi
exit 1
