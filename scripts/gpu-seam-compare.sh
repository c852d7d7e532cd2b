#!/usr/bin/env bash
# Before/after check of the proof-kind seam refactor on the GPU machine: the same
# measurements with two cuzk CUDA binaries, OLD (the last commit before the refactor, built
# from a `git worktree`) and NEW, side by side on one machine. Two parts, each within the
# machine's 10-minute command limit; part b needs WORK from part a (same warm machine).
#   PART=a OLD=old/cuzk NEW=new/cuzk bash scripts/gpu-seam-compare.sh OUTDIR
#   PART=b ...same...
# a: 2 KiB test parameters; `selftest --backend cuda --repeats R` (warm single C2 proofs, GPU
#    proof == CPU proof, verify_seal) with OLD, NEW, OLD, NEW; a synthetic 32 GiB C1; its
#    PCE extracted into WORK (both binaries share the cache: the circuit identity is unchanged).
# b: `bench partition` on the synthetic 32 GiB partition 0 (random SRS of the exact layout,
#    device mat-vec, overlapped H step, REPS proofs after the first), OLD then NEW then OLD.
set -u
OLD=${OLD:?OLD binary}
NEW=${NEW:?NEW binary}
OUT=${1:?usage: PART=a|b gpu-seam-compare.sh OUTDIR}
WORK=${WORK:-target/gpu-seam}
mkdir -p "$OUT" "$WORK/params" "$WORK/pce"
export CUZK_PCE_CACHE=$(cd "$WORK/pce" && pwd)
export FIL_PROOFS_PARAMETER_CACHE=$(cd "$WORK/params" && pwd)
export RUST_LOG=${RUST_LOG:-warn}
step() {
    local name=$1
    shift
    echo "== $(date -u +%T) $name: $*"
    local t0=$(date +%s%N)
    "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "rc=$rc wall_ms=$((($(date +%s%N) - t0) / 1000000))" | tee -a "$OUT/$name.log"
    tail -4 "$OUT/$name.log" | head -3
}
case ${PART:-a} in
a)
    { date -u; nproc; free -g; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; } >"$OUT/machine.txt" 2>&1
    cat "$OUT/machine.txt"
    step params2k "$NEW" params ensure --sector-size 2KiB
    for k in 1 2; do
        for who in old new; do
            bin=$OLD
            [ "$who" = new ] && bin=$NEW
            step "selftest-$who-$k" "$bin" selftest --backend cuda --repeats "${R:-6}" --json "$OUT/selftest-$who-$k.json"
        done
    done
    step gen32 "$NEW" gen-c1 --synthetic --sector-size 32GiB --out "$WORK/c1"
    step pce32 "$OLD" pce extract --c1 "$WORK/c1/c1.json"
    ;;
b)
    for who in old new old2; do
        bin=$OLD
        [ "$who" = new ] && bin=$NEW
        step "part32-$who" "$bin" bench partition --c1 "$WORK/c1/c1.json" --backend cuda --reps "${REPS:-4}" \
            --matvec device --overlap on --json "$OUT/part32-$who.json"
    done
    ;;
esac
echo "== $(date -u +%T) done"
