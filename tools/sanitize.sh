#!/usr/bin/env bash
# Runs NVIDIA compute-sanitizer's memcheck, racecheck, synccheck and initcheck over every example
# and a sample of the integration tests (on the GPU: COOPGRAPH_DEVICE=cuda), from the staging
# layout that gpu-pack writes: test binaries in .gpu/bin (the integration tests are
# .gpu/bin/test-all), examples in .gpu/examples.
#
# Usage, on the GPU machine from the project root:
#   bash tools/sanitize.sh                    # every tool, every example, the default test sample
#   bash tools/sanitize.sh kernels:: bounds:: # the tests matching these filters instead
# Environment:
#   SANITIZE_TOOLS      tools to run (default "memcheck racecheck synccheck initcheck")
#   SANITIZE_EXAMPLES   examples to run (default: every file in .gpu/examples)
#   COMPUTE_SANITIZER   the sanitizer binary (default: compute-sanitizer on the PATH, else
#                       /usr/local/cuda/bin/compute-sanitizer)
#   OUT                 where the logs go ($OUT/sanitize/<tool>-<binary>.log; default /tmp)
# The benchmarks run on COOPGRAPH_BENCH_N elements (default here 65536), so that every kernel
# runs under every tool in minutes rather than hours.
#
# Prints one line per tool and binary (as each finishes on stderr, all together at the end on
# stdout): `ok` when the binary exited 0 and the sanitizer reported
# nothing, else `FAIL` with the exit status and the sanitizer's summary. Exits 1 if any line is
# a FAIL, 2 if there is nothing to run.
set -u
cd "$(dirname "$0")/.."

sanitizer=${COMPUTE_SANITIZER:-}
if [ -z "$sanitizer" ]; then
  if command -v compute-sanitizer > /dev/null; then
    sanitizer=compute-sanitizer
  elif [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
    sanitizer=/usr/local/cuda/bin/compute-sanitizer
  else
    echo "sanitize: no compute-sanitizer (set COMPUTE_SANITIZER)" >&2
    exit 2
  fi
fi
tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
logs=${OUT:-/tmp}/sanitize
mkdir -p "$logs"

# Integration tests that, between them, run every load/store algorithm and group, accesses
# at and past the ends of buffers, per-group and block valid counts, the exchanges (planned,
# time-sliced, through shuffles), dynamic shared memory, block collectives and the launch
# checks on the GPU.
default_tests=(
  kernels::copy_i32 kernels::copy_f64 kernels::copy_u8 kernels::pipeline kernels::tiles_loop
  bounds:: valid::block_counts_are_shared_out valid::warp_counts_are_each_groups_own_i32
  smem::explicit_exchanges smem::time_sliced_exchange smem::exchanges_through_shuffles
  smem::dynamic_shared_memory_past_48k smem::temp_storage_sharing_and_sync
  reduce::reduce_i32 reduce::valid_items_over_several_items
  scan::scan_i32 scan::prefix_callback_carries_a_running_total scan::warp_scans_with_valid_items
  neighbor::neighbours_in_position_order neighbor::scatter_by_rank
  runtime::
)
# Tests that make a driver call fail on purpose (bad PTX, a missing entry) or check the JIT's
# log, which the sanitizers' instrumented loads leave empty: a sanitizer counts the first as
# errors, and the second fails.
skip=(
  runtime::failed_loads_are_not_cached runtime::jit_failure_keeps_the_log
  runtime::missing_entry_is_an_error runtime::cudarc_interop
)
if [ $# -gt 0 ]; then tests=("$@"); else tests=("${default_tests[@]}"); fi

runs=()   # "name|command..." entries, run under each tool
if [ -x .gpu/bin/test-all ]; then
  runs+=("test-all|.gpu/bin/test-all --test-threads=1 ${tests[*]} ${skip[*]/#/--skip }")
else
  echo "sanitize: no .gpu/bin/test-all (run gpu-pack first); tests skipped" >&2
fi
if [ -n "${SANITIZE_EXAMPLES:-}" ]; then
  for e in $SANITIZE_EXAMPLES; do runs+=("$e|.gpu/examples/$e"); done
else
  for e in .gpu/examples/*; do
    [ -x "$e" ] && runs+=("$(basename "$e")|$e")
  done
fi
if [ ${#runs[@]} -eq 0 ]; then
  echo "sanitize: nothing to run in .gpu/ (run gpu-pack first)" >&2
  exit 2
fi

export COOPGRAPH_DEVICE=cuda
export COOPGRAPH_BENCH_N=${COOPGRAPH_BENCH_N:-65536}
failed=0
summary=()
for tool in $tools; do
  for run in "${runs[@]}"; do
    name=${run%%|*}
    cmd=${run#*|}
    log="$logs/$tool-$name.log"
    # shellcheck disable=SC2086
    "$sanitizer" --tool "$tool" --error-exitcode 86 --print-limit 20 $cmd > "$log" 2>&1
    rc=$?
    # memcheck, synccheck and initcheck end with "ERROR SUMMARY: N error(s)"; racecheck with
    # "RACECHECK SUMMARY: N hazard(s) displayed (E errors, W warnings)".
    report=$(grep -E '(ERROR|RACECHECK) SUMMARY' "$log" | tail -n 1 | sed 's/^=* *//')
    reported=$(printf '%s\n' "$report" |
      grep -oE '[0-9]+ (errors?|hazards?|warnings?)' | grep -vE '^0 ' | head -n 1)
    if grep -q 'terminated before first instrumented API call' "$log" && [ $rc -ne 86 ]; then
      line="skip  $tool $name: makes no CUDA call"
    elif [ $rc -eq 0 ] && [ -z "$reported" ] && [ -n "$report" ]; then
      line="ok    $tool $name: $report"
    else
      failed=1
      line="FAIL  $tool $name: exit $rc; ${report:-no sanitizer summary} (log: $log)"
    fi
    echo "$line" >&2
    summary+=("$line")
  done
done
printf '%s\n' "${summary[@]}"
exit $failed
