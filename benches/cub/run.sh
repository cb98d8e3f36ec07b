#!/usr/bin/env bash
# Build and run the CUB reference benchmarks on the GPU machine.
#
#   bash benches/cub/run.sh OUTDIR [n]
#
# Compiles each program below (copy.cu, reduce_scan.cu, device.cu, ...) into OUTDIR, runs them (n
# elements, default 2^28), writes OUTDIR/cub_copy.csv,
# OUTDIR/cub_reduce_scan.csv, OUTDIR/cub_device.csv and OUTDIR/cub_saxpy.csv, then prints them. Any
# failure (nvcc missing, a compile error, a failed validation or CUDA error in
# a run) stops the script with a non-zero status.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: bash $0 OUTDIR [n]" >&2
  exit 2
fi
outdir=$1
n=${2:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! command -v nvcc >/dev/null 2>&1; then
  echo "error: nvcc not found on PATH" >&2
  exit 1
fi
progs=(copy reduce_scan device saxpy math compact sort merge_sort fused_scan run_length_decode)
mkdir -p "$outdir"
# Remove results of an earlier run first: if this run fails, no stale CSV
# is left behind to be read as if it were fresh.
for prog in "${progs[@]}"; do
  rm -f "$outdir/cub_$prog.csv" "$outdir/cub_$prog.csv.tmp"
done

nvcc_flags=(-O3 -std=c++17 -arch=sm_90 -lineinfo -Xcompiler -Wall)

# The translation units are independent and each takes ~30 s (many template
# instantiations), so build them concurrently; wait on each pid so a failure
# in any one is reported and stops the script.
declare -A pids
for prog in "${progs[@]}"; do
  echo "== nvcc ${nvcc_flags[*]} -o $outdir/cub_$prog $here/$prog.cu" >&2
  nvcc "${nvcc_flags[@]}" -o "$outdir/cub_$prog" "$here/$prog.cu" &
  pids[$prog]=$!
done
for prog in "${progs[@]}"; do
  if ! wait "${pids[$prog]}"; then
    echo "error: compiling $prog.cu failed" >&2
    exit 1
  fi
done

for prog in "${progs[@]}"; do
  echo "== running cub_$prog${n:+ $n}" >&2
  # Write to a temporary file first so a failed run never leaves a partial
  # CSV that coopgraph's benchmark could mistake for a result.
  "$outdir/cub_$prog" ${n:+"$n"} >"$outdir/cub_$prog.csv.tmp"
  mv "$outdir/cub_$prog.csv.tmp" "$outdir/cub_$prog.csv"
done

for prog in "${progs[@]}"; do
  echo "== $outdir/cub_$prog.csv"
  cat "$outdir/cub_$prog.csv"
done
