#!/usr/bin/env bash
# The differential fuzzer's long run, in sequences side by side: each sequence of seeds
# (COOPGRAPH_FUZZ_BASE) runs in its own process, so a machine with many cores runs 100,000
# cases in about a minute. The simulator is deterministic: any machine gives the same verdicts.
#
# Usage, from the repository root, with a release build of the `all` test binary:
#   tools/fuzz-long.sh BINARY [BASE ...]
# BINARY: the test binary (for instance .gpu/bin/test-all from ../shared/tools/gpu-pack, or
# target/release/deps/all-* after `cargo test --release --test all --no-run`); BASEs default
# to 0xC00B6A4B 1 2 3. Environment: CASES (per sequence, default 25000), EVERY (ptxas
# assembles every N-th case, default 40), CAP (seconds per sequence, default 550),
# COOPGRAPH_PTXAS (default: ptxas on the PATH), OUT (logs, default /tmp).
# Prints each sequence's summary line; a failing sequence's log holds the reduced programs.
set -u
bin=${1:?usage: tools/fuzz-long.sh BINARY [BASE ...]}
shift
bases=("$@")
[ ${#bases[@]} -eq 0 ] && bases=(0xC00B6A4B 1 2 3)
out=${OUT:-/tmp}
unset COOPGRAPH_DEVICE
export COOPGRAPH_PTXAS=${COOPGRAPH_PTXAS:-$(command -v ptxas || echo ptxas)}
t0=$(date +%s)
for base in "${bases[@]}"; do
  COOPGRAPH_FUZZ_BASE=$base COOPGRAPH_FUZZ_CASES=${CASES:-25000} COOPGRAPH_FUZZ_PTXAS=every:${EVERY:-40} \
    timeout "${CAP:-550}" "$bin" fuzz_differential --nocapture > "$out/fuzz-$base.log" 2>&1 &
done
wait
echo "--- ${#bases[@]} sequences in $(( $(date +%s) - t0 )) s"
status=0
for base in "${bases[@]}"; do
  line=$(grep -a -m1 -E "^fuzz: [0-9]+ cases" "$out/fuzz-$base.log" || echo "no summary (timed out?)")
  echo "base $base: $line"
  # The watchdog's lines: a case that ran past its limit (a hang, or a slow case).
  grep -a -E "^fuzz: the case of seed" "$out/fuzz-$base.log" | sed 's/^/  /'
  grep -q "test result: ok" "$out/fuzz-$base.log" || status=1
done
exit $status
