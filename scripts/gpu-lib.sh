# Shared by the gpu-*.sh scripts, sourced once they have set BIN, OUT and WORK: makes the
# output and work directories, points the parameter and PCE caches into WORK, and defines
# `step NAME COMMAND...`, which runs COMMAND with its output (and `/usr/bin/time -v`'s
# figures, where the machine has it) in OUT/NAME.log, appends its exit status and prints the
# log's last STEP_TAIL lines (25) without INFO lines. Wrap COMMAND in `timeout SECONDS` to
# keep a part inside the machine's command limit. PARAMS (default WORK/params) is the
# parameter directory: /dev/shm/params keeps a 47 GB parameter file off a small disk (the map
# of the mapped layout then fits beside it).
PARAMS=${PARAMS:-$WORK/params}
mkdir -p "$OUT" "$PARAMS"
export CUZK_PCE_CACHE=$WORK/pce
export FIL_PROOFS_PARAMETER_CACHE=$(cd "$PARAMS" && pwd)
export RUST_LOG=${RUST_LOG:-info}
TIME=()
[ -x /usr/bin/time ] && TIME=(/usr/bin/time -v)
step() {
    local name=$1
    shift
    echo "== $(date -u +%T) $name: $*"
    "${TIME[@]}" "$@" >"$OUT/$name.log" 2>&1
    echo "rc=$?" >>"$OUT/$name.log"
    grep -vE "^\s+(Page|Vol|Invol|Swap|File|Socket|Sig|Average|Minor|Major|Percent|Command|Exit|System|User)" "$OUT/$name.log" \
        | grep -v "INFO" | tail -"${STEP_TAIL:-25}"
}
