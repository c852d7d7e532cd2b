#!/usr/bin/env bash
# Slim rerun: 2 KiB (16 circuits) and the 32 GiB partition's bench pce after the mat-vec change.
set -u
BIN=${BIN:-target/synth-pack/cuzk}; OUT=$1; WORK=target/synthetic-32gib; mkdir -p "$OUT" "$WORK"
export CUZK_PCE_CACHE=$WORK/pce
step() { local n=$1; shift; echo "== $(date -u +%T) $n: $*"; /usr/bin/time -v "$@" > "$OUT/$n.log" 2>&1; echo "rc=$?" >> "$OUT/$n.log"; grep -vE "^\s+(Page|Vol|Invol|Swap|File|Socket|Sig|Average|Minor|Major|Percent|Command|Exit)" "$OUT/$n.log" | grep -v INFO | tail -16; }
step 2kib-1 $BIN bench pce --c1 fixtures/2kib/c1.json
step 2kib-16 $BIN bench pce --c1 fixtures/2kib/c1.json --circuits 16
$BIN gen-c1 --synthetic --sector-size 32GiB --out $WORK/c1
step bench-pce-32 $BIN bench pce --c1 $WORK/c1/c1.json --circuits 1 --json "$OUT/bench-pce-32.json"
echo "== $(date -u +%T) done"
