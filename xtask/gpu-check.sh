#!/usr/bin/env bash
# The whole GPU check, run on the GPU machine from the folder `cargo xtask gpu-pack` made
# (the cuzk binary built with CUDA, the bundled 2 KiB fixture, this script):
#   bash gpu-check.sh OUTDIR
# It makes the 2 KiB test parameters and the PCE cache there (no network needed), runs
# `cuzk selftest --backend cuda` (conformance at full scale, GPU proof == CPU proof for the same
# r and s, verify_seal, warm timings), the SupraSeal side-by-side harness on the same C1,
# parameters file and (r, s) (`cuzk-supraseal`), and the MSM/NTT scaling benchmark
# (SKIP_SCALING=1 to leave it out), writing logs and JSON into OUTDIR. Exits non-zero when the
# selftest or the SupraSeal comparison fails.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mkdir -p "${1:-gpu-check-out}" && cd "${1:-gpu-check-out}" && pwd)"
cd "$here"
export RUST_LOG="${RUST_LOG:-info}"
: "${MAX_LOG:=26}"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >> "$out/nvidia-smi.txt"
./cuzk --version | tee "$out/version.txt"
./cuzk params ensure --sector-size 2KiB 2>&1 | tail -5 | tee "$out/params.log"
timeout "${SELFTEST_TIMEOUT:-420}" ./cuzk selftest --backend cuda --c1 fixtures/2kib/c1.json --json "$out/selftest.json" 2>&1 | tee "$out/selftest.log"
rc=${PIPESTATUS[0]}
if [ -x ./cuzk-supraseal ]; then
  timeout "${SUPRASEAL_TIMEOUT:-300}" ./cuzk-supraseal --c1 fixtures/2kib/c1.json --repeats "${SUPRASEAL_REPEATS:-4}" --json "$out/supraseal.json" 2>&1 | tee "$out/supraseal.log"
  src=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] && rc=$src
fi
[ "${SKIP_SCALING:-0}" = 1 ] || timeout "${SCALING_TIMEOUT:-300}" ./cuzk bench backend --backend cuda --min-log 20 --max-log "$MAX_LOG" --json "$out/scaling.json" 2>&1 | tee "$out/scaling.log"
exit $rc
