#!/usr/bin/env bash
# Issue 8's full-size run on the GPU machine (nvidia-h200: 16 cores, 128 GiB, one H200), in
# two parts that each fit the machine's 10-minute command limit. Part b needs the files part a
# left under WORK, so it must run on the same (still warm) machine right after part a.
#   PART=a BIN=path/to/cuzk SS=path/to/cuzk-supraseal bash scripts/gpu-32gib.sh OUTDIR
#   PART=b ...same...
# a: 2 KiB device checks (`bench partition` on cuda and on cpu with the same random SRS and
#    (r, s): device mat-vec == CPU mat-vec, proofs equal across mat-vec places and across
#    backends); a synthetic 32 GiB C1; `bench partition` on its partition 0 with the CUDA
#    backend: PCE extraction, random SRS of the exact layout (written under the official
#    file names into WORK/params), device mat-vec checked, 3 proofs with a, b, c from the
#    host and 3 with the device mat-vec, all equal; each under both H-step schedules
#    (OVERLAP, default on,off: the H step beside the other MSMs, or before them).
#    MATVEC (default host,device) picks the mat-vec places measured.
#    WRITE_PARAMS=0 skips writing the parameters (only SupraSeal, part b, needs them).
# b: SupraSeal's prover on the same partition, SRS file and (r, s), its proof compared with
#    cuzk's; then the pipeline on the whole synthetic sector (10 partitions), j = PIPE_J (2),
#    PIPE_P (2) provers, mat-vec PIPE_MATVEC (auto), --no-verify (a synthetic C1 never
#    verifies), with its RSS trace.
# ab: a, then b's pipeline (no SupraSeal), in one command.
# Logs and JSON go to OUTDIR; the big files (C1, PCE cache, 44 GiB of parameters) to WORK.
set -u
BIN=${BIN:-.gpu/cuzk}
SS=${SS:-.gpu/cuzk-supraseal}
OUT=${1:?usage: PART=a|b gpu-32gib.sh OUTDIR}
WORK=${WORK:-target/gpu-32gib}
source "$(dirname "$0")/gpu-lib.sh"
proof_of() { grep -o '"proof_hex": "[0-9a-f]*"' "$1" | head -1; }
part_b_pipeline() {
    step pipe32 "$BIN" bench pce-pipeline --c1 "$WORK/c1/c1.json" --backend cuda --no-verify --num-proofs ${PIPE_N:-1} -j ${PIPE_J:-2} \
        --provers-per-device ${PIPE_P:-2} --matvec ${PIPE_MATVEC:-auto} --warmup 0 --budget-gib ${BUDGET:-60} --json "$OUT/pipe32.json" --plot "$OUT/pipe32.svg"
}
case ${PART:-a} in
a | ab)
    { date -u; nproc; free -g; df -h .; nvidia-smi; } >"$OUT/machine.txt" 2>&1
    head -5 "$OUT/machine.txt"
    step p2k-cuda "$BIN" bench partition --c1 fixtures/2kib/c1.json --backend cuda --reps 2 --json "$OUT/p2k-cuda.json"
    step p2k-cpu "$BIN" bench partition --c1 fixtures/2kib/c1.json --backend cpu --reps 1 --matvec host --json "$OUT/p2k-cpu.json"
    if [ -n "$(proof_of "$OUT/p2k-cuda.json")" ] && [ "$(proof_of "$OUT/p2k-cuda.json")" = "$(proof_of "$OUT/p2k-cpu.json")" ]; then
        echo "2 KiB: cuda proof == cpu proof: EQUAL" | tee "$OUT/p2k-compare.txt"
    else
        echo "2 KiB: cuda proof != cpu proof: DIFFERENT" | tee "$OUT/p2k-compare.txt"
    fi
    step gen32 "$BIN" gen-c1 --synthetic --sector-size 32GiB --out "$WORK/c1"
    WP=()
    [ "${WRITE_PARAMS:-1}" = 1 ] && WP=(--write-params "$WORK/params")
    step part32 "$BIN" bench partition --c1 "$WORK/c1/c1.json" --backend cuda --reps 3 "${WP[@]}" --matvec "${MATVEC:-host,device}" --overlap "${OVERLAP:-on,off}" --json "$OUT/partition-32.json"
    cp "$OUT/partition-32.json" "$WORK/" 2>/dev/null
    ls -la "$WORK/params" "$WORK/pce"; df -h .
    [ "${PART:-a}" = ab ] && part_b_pipeline
    ;;
b)
    params=$(ls "$WORK"/params/*.params | head -1)
    step ss32 "$SS" --c1 "$WORK/c1/c1.json" --partition 0 --params "$params" --repeats 3 --expect "$WORK/partition-32.json" --json "$OUT/supraseal-32.json"
    part_b_pipeline
    ;;
esac
echo "== $(date -u +%T) done"
