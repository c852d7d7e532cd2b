#!/usr/bin/env bash
# The 32 GiB synthetic-partition check, as run on the GPU machine (CPU work only):
#   BIN=path/to/cuzk bash scripts/synthetic-32gib-check.sh OUTDIR
# 2 KiB bench pce (native x3, gadgets x1, 16 circuits), then a synthetic 32 GiB C1: native vs
# gadget witness of partition 0, PCE extraction of the 32 GiB circuit, and bench pce on one
# 32 GiB partition (old path vs new path, bit for bit). Logs and JSON under OUTDIR; the big
# files (C1, PCE cache) under WORK (default target/synthetic-32gib), never under OUTDIR.
set -u
BIN=${BIN:-target/release/cuzk}
OUT=${1:?usage: synthetic-32gib-check.sh OUTDIR}
WORK=${WORK:-target/synthetic-32gib}
mkdir -p "$OUT" "$WORK"
export CUZK_PCE_CACHE=${CUZK_PCE_CACHE:-$WORK/pce}
TIME=()
[ -x /usr/bin/time ] && TIME=(/usr/bin/time -v)
step() {
    local name=$1
    shift
    echo "== $(date -u +%T) $name: $*"
    "${TIME[@]}" "$@" >"$OUT/$name.log" 2>&1
    echo "rc=$?" >>"$OUT/$name.log"
    grep -vE "^\s+(Page|Vol|Invol|Swap|File|Socket|Sig|Average|Minor|Major|Percent|Command|Exit)" "$OUT/$name.log" | tail -22
}
{ date -u; nproc; free -g; } >"$OUT/machine.txt"
cat "$OUT/machine.txt"
for i in 1 2 3; do
    step "2kib-native-$i" "$BIN" bench pce --c1 fixtures/2kib/c1.json --json "$OUT/2kib-native-$i.json"
done
step 2kib-gadgets "$BIN" bench pce --c1 fixtures/2kib/c1.json --witness gadgets --json "$OUT/2kib-gadgets.json"
step 2kib-16 "$BIN" bench pce --c1 fixtures/2kib/c1.json --circuits 16 --json "$OUT/2kib-16.json"
step gen32 "$BIN" gen-c1 --synthetic --sector-size 32GiB --out "$WORK/c1"
step witness-modes-32 "$BIN" bench witness-modes --c1 "$WORK/c1/c1.json" --json "$OUT/witness-modes-32.json"
step extract-32 "$BIN" pce extract --c1 "$WORK/c1/c1.json"
step bench-pce-32 "$BIN" bench pce --c1 "$WORK/c1/c1.json" --circuits 1 --json "$OUT/bench-pce-32.json"
echo "== $(date -u +%T) done"
