#!/usr/bin/env bash
# PoSt on the GPU machine (issue 26's figures) and `cuzk doctor` there (issue 28), in parts
# that each fit the machine's 10-minute command limit:
#   PART=a BIN=target/cuda-bin/cuzk bash scripts/gpu-post.sh OUTDIR
# a: `cuzk doctor`; three real 2 KiB sectors sealed (`gen-post`), their WinningPoSt and both
#    WindowPoSt partitions proved on the CUDA backend and verified (`prove --post`), warm
#    latency of both side by side with filecoin-proofs' prover (`bench post`); a synthetic
#    32 GiB WinningPoSt (`gen-post --synthetic`: valid vanilla proofs from sparse trees), its
#    test parameters made here (PCE extraction + cuzk's generator), warm latency on cuda and
#    on cpu (every proof verified with verify_winning_post).
# b: a synthetic 32 GiB WindowPoSt partition (2349 sectors) through `bench partition --post`
#    on cuda: PCE figures, witness time, GPU time per partition under random parameters of
#    the exact layout (they do not verify; the proofs of one run are compared with each
#    other).
# c: a synthetic 32 GiB PoRep C1 and random parameters of its exact layout written under the
#    official file names (`bench partition --write-params`, CREPS proofs, default 1, the first
#    cold; KERNEL: the G1 MSM kernel, cuzk's driver by default, or sppark), for parts d, f, i, p;
#    with KERNELS (e.g. sppark,cuzk) the partition again on those parameters per kernel; with
#    SIDES (e.g. host, or host,device) again per place the side MSMs take their scalars from.
# d: needs a (or w) and c on the same warm machine: WinningPoSt 32 GiB latency while PoRep
#    sectors of the synthetic C1 prove on the same GPU (`bench post-load`), with the urgent
#    lane and without (LANES, default on,off), with THREADS (4,0) reserved for urgent work
#    when on, REQUESTS (20) loaded requests each, for each of PIECES × GRACES; per request
#    its stages with its device-lock and matrices-lock waits, and over the loaded phase the
#    PoRep calls' longest hold, the longest device stages and the PoRep partitions proved.
# e: SnapDeals (issue 25's figures): a synthetic 32 GiB update request (`gen-update
#    --synthetic`: real structure, random contents), one of its 16 partitions through `bench
#    partition --update` on cuda under random parameters of the exact layout: PCE figures
#    (constraints, non-zeros, extraction), witness time, GPU time per partition.
#    With WRITE=1 the random parameters are also written under the official file name, for u
#    (32 GB: with part c's 47 GB of PoRep parameters that is more than the machine's disk).
# s: needs e with WRITE=1 on the same warm machine: the same update partition through
#    SupraSeal's prover (`cuzk-supraseal --update`, SS: its binary, default beside BIN) under
#    the parameters e wrote and e's (r, s); its proof must equal cuzk's (e's JSON), 3 rounds.
# u: needs e with WRITE=1 on the same warm machine: the whole 32 GiB update proof (16
#    partitions) through `cuzk prove --update --no-verify` on cuda (parameters loaded from the
#    file, then every partition through the engine; synthetic contents, so not verified).
# f: needs c on the same warm machine: the 32 GiB PoRep partition with the GPU's resident SRS
#    capped (`--device-budget`, BUDGETS, default 24GiB,16GiB), what a 24 or 16 GB card costs:
#    sections over the cap travel with each call; REPS proofs each (3: two warm).
# i: needs c on the same warm machine (NI-PoRep's partition circuit and parameter files are
#    V1_1's): a synthetic 32 GiB NI-PoRep C1 (126 partitions of 18 challenges), its last
#    partition through `bench partition` on the parameters c wrote, then (unless PIPE=0) one
#    whole proof through `bench pce-pipeline` (j = 2, no warm-up, the 126 partition proofs
#    aggregated with a test SnarkPack SRS, not verified: synthetic).
# p: needs c on the same warm machine: the buffer pool's effect on a 32 GiB PoRep pipeline
#    (`bench pce-pipeline`, j = 2, 1 warm-up + PIPE_N (2) sectors, under `/usr/bin/time -v`)
#    for each pool size in POOLS (GiB, default 0,13): system time, minor faults, s/sector; with
#    RELEASE=1 the host's matrix entries are released once the device holds them; with MAP=1
#    the parameters are mapped (CUZK_SRS_MAP_DIR=MAPDIR, default WORK/srsmap; the map is
#    written by a first, unmeasured sector, step map32). The 47 GB map does not fit the GPU
#    machine's disk beside the 47 GB parameter file: MAPDIR=/dev/shm/srsmap puts it in RAM
#    (shared memory, counted apart from the process's own memory: RssShmem, not RssAnon).
#    MAPONLY=1 stops after the map is written; a map already in MAPDIR is not written again.
#    DEVBUDGET (e.g. 24GiB) caps the GPU's resident SRS: the sector time a smaller card gets.
#    BUDGET_GIB (60): the host budget of the partitions in flight (with the side MSMs on the
#    device a partition is charged its witness alone, 3.9 GiB at 32 GiB; the pool comes out of it).
#    PIPE_SIDES (default device; e.g. host,device): each pipeline run once per place the side
#    MSMs take their scalars from (`--side-msms`); PROVERS: provers per device.
# v: real 2 KiB inputs of every PoRep variant (V1_1, SyntheticPoRep, NI-PoRep: sealed here by
#    filecoin-proofs, `gen-c1 --porep-variant`) and of SnapDeals (`gen-update`), each proved on
#    BACKEND (cuda) with `prove` — which verifies with verify_seal /
#    verify_empty_sector_update_proof before writing — and the PoRep proofs checked again
#    with `cuzk verify`.
# w: the 32 GiB WinningPoSt alone (no 2 KiB steps): its partition through `bench partition
#    --post` with each MSM mode (split, plain, auto; device call times per proof), then its warm
#    latency through the engine (`bench post`, RUNS runs), with the default urgent pool and
#    with 4 threads.
# n: the native witnesses on the host's cores (no GPU needed): `bench witness-modes` on a
#    synthetic 32 GiB WindowPoSt partition, WinningPoSt, SnapDeals partition and PoRep
#    partition, gadgets and native side by side, every value compared.
# k: the MSM and quotient kernels (issue 24's baseline): `bench msm` and `bench ntt` with
#    sppark on the device from 2^20 to 2^27 (KRUNS, default 5, after one untimed run; the MSM
#    with host and with device-resident scalars, the quotient by its CUDA-event stages), and
#    both against the CPU backend at small sizes (results compared; exit 1 on a difference).
# m: cuzk's own Pippenger driver beside sppark (issue 24, stage 1): `bench msm --impl
#    sppark,cuzk` with device-resident bases, SMALL sizes (20,22,24) at windows SMALL_W
#    (14..20) and LARGE sizes (26,27) at windows LARGE_W (17..23), each window with the chunk
#    counts CHUNKS (1), KRUNS timed runs (3) after one untimed; every result compared with
#    sppark's (exit 1 on a difference); the driver's rows carry its phases and device bytes.
#    Then `bench msm-ceiling`: Fp multiplications/s, XYZZ against batch-affine additions/s for
#    BATCHES (8,16,32,64,128) accumulators per thread, ROUNDS (64) additions each (exit 1 if
#    the two ways' sums differ): the design note's stage 4a gate.
# t: cuzk-gpu's own test binaries with the CUDA feature (`cargo xtask cuda-check` builds them;
#    copy target/debug/deps/cuzk_gpu-* and cuda-* to target/cuda-bin/cuzk-gpu-unit and
#    cuzk-gpu-cuda-tests): the residency, lock-recovery and conformance tests on the device.
# T_PART: the seconds parts b and e give their partition bench (500, 560); MSM: the MSM
# modes part b measures (auto; split gathers every general base on the host, too much for a
# WindowPoSt partition on a 128 GiB host); PIECE: parts b and e run MSMs over resident bases
# in pieces of 2^PIECE points (default: one call each); PIECES: the pieces part d measures in
# turn (0 = one call; e.g. 0,25); GRACES: the urgent graces in ms part d measures for each
# piece (150); BUDGET: part b's cap on the resident SRS (e.g. 48GiB, which
# an 80 GB card needs for a 32 GiB WindowPoSt partition).
# RUNS / CPU_RUNS: part a's 32 GiB WinningPoSt runs on cuda (20) and cpu (3).
# Logs and JSON go to OUTDIR; parameters, PCE caches and requests to WORK.
set -u
BIN=${BIN:-target/cuda-bin/cuzk}
OUT=${1:?usage: PART=a|b gpu-post.sh OUTDIR}
WORK=${WORK:-/tmp/gpu-post}
STEP_TAIL=14
source "$(dirname "$0")/gpu-lib.sh"
# The largest PoRep parameter file in PARAMS: part c's 32 GiB one, not the 2 KiB test
# parameters parts a and v (or a selftest) leave beside it.
porep_params() { ls -S "$PARAMS"/*stacked-proof-of-replication*.params | head -1; }
case ${PART:-a} in
a)
    { date -u; nproc; free -g; nvidia-smi; } >"$OUT/machine.txt" 2>&1
    "$BIN" --version | tee "$OUT/version.txt"
    step params2k timeout 120 "$BIN" params ensure --sector-size 2KiB
    step doctor timeout 120 "$BIN" doctor
    step gen2k timeout 120 "$BIN" gen-post --sector-size 2KiB --sectors 3 --out "$WORK/post2k"
    step params-win2k timeout 120 "$BIN" params ensure --post 0
    step params-win2k-window timeout 120 "$BIN" params ensure --post 10
    for f in winning window-0 window-1; do
        step "prove2k-$f" timeout 120 "$BIN" prove --post "$WORK/post2k/$f.json" --backend cuda --out "$OUT/2k-$f.proof"
    done
    step bench2k-winning timeout 150 "$BIN" bench post --post "$WORK/post2k/winning.json" --backend cuda --runs 5 --json "$OUT/bench2k-winning.json"
    step gen32 timeout 120 "$BIN" gen-post --synthetic --sector-size 32GiB --sectors 1 --out "$WORK/post32"
    step params-win32 timeout 300 "$BIN" params ensure --post 3
    step bench32-winning-cuda timeout 200 "$BIN" bench post --post "$WORK/post32/winning.json" --backend cuda --runs "${RUNS:-20}" --json "$OUT/bench32-winning-cuda.json"
    step bench32-winning-cpu timeout 200 "$BIN" bench post --post "$WORK/post32/winning.json" --backend cpu --runs "${CPU_RUNS:-3}" --json "$OUT/bench32-winning-cpu.json"
    ls -la "$PARAMS" "$WORK/pce"
    ;;
b)
    step gen32-window timeout 200 "$BIN" gen-post --synthetic --sector-size 32GiB --sectors 2349 --out "$WORK/post32w"
    ls -la "$WORK/post32w"
    step part32-window timeout "${T_PART:-500}" "$BIN" bench partition --post "$WORK/post32w/window-0.json" --backend cuda --reps 3 --matvec device --msm "${MSM:-auto}" \
        ${PIECE:+--msm-piece-log2 $PIECE} ${BUDGET:+--device-budget $BUDGET} --json "$OUT/partition32-window.json"
    ;;
c)
    step gen32-c1 timeout 60 "$BIN" gen-c1 --synthetic --sector-size 32GiB --out "$WORK/c1"
    step part32-porep timeout 560 "$BIN" bench partition --c1 "$WORK/c1/c1.json" --backend cuda --reps "${CREPS:-1}" --matvec device --overlap on \
        ${KERNEL:+--msm-kernel $KERNEL} --write-params "$PARAMS" --json "$OUT/partition32-porep.json"
    ls -la "$PARAMS"
    # KERNELS (e.g. sppark,cuzk): the same partition again on the written parameters, CREPS
    # proofs per kernel, one after the other in this call (the kernels side by side).
    for k in $(echo "${KERNELS:-}" | tr , ' '); do
        step "part32-porep-$k" timeout 200 "$BIN" bench partition --c1 "$WORK/c1/c1.json" --backend cuda --reps "${CREPS:-1}" --matvec device \
            --overlap on --msm-kernel "$k" --params "$(porep_params)" \
            --json "$OUT/partition32-porep-$k.json"
    done
    # SIDES (e.g. host): the same partition again with the side MSMs' scalars from there
    # (device, the default and the first step's: selected, split and gathered on the GPU's witness,
    # issue 23; host: selected and split on the host, the reference layout).
    for side in $(echo "${SIDES:-}" | tr , ' '); do
        step "part32-porep-side-$side" timeout 200 "$BIN" bench partition --c1 "$WORK/c1/c1.json" --backend cuda --reps "${CREPS:-1}" --matvec device \
            --overlap on --side-msms "$side" --params "$(porep_params)" \
            --json "$OUT/partition32-porep-side-$side.json"
    done
    ;;
e)
    step gen32-update timeout 200 "$BIN" gen-update --synthetic --sector-size 32GiB --out "$WORK/update32"
    ls -la "$WORK/update32"
    step part32-update timeout "${T_PART:-560}" "$BIN" bench partition --update "$WORK/update32/update.json" --backend cuda --reps 3 --matvec device \
        ${PIECE:+--msm-piece-log2 $PIECE} ${WRITE:+--write-params "$PARAMS"} --json "$OUT/partition32-update.json"
    ;;
s)
    P=$(ls "$PARAMS"/*empty-sector-update*.params | head -1)
    step ss32-update timeout "${T_PART:-560}" "${SS:-$(dirname "$BIN")/cuzk-supraseal}" --update "$WORK/update32/update.json" --partition 0 \
        --params "$P" --repeats 3 --expect "$OUT/partition32-update.json" --json "$OUT/supraseal32-update.json"
    ;;
u)
    step prove32-update timeout "${T_PROVE:-400}" "$BIN" prove --update "$WORK/update32/update.json" --backend cuda --no-verify --out "$OUT/update32.proof"
    ;;
f)
    for b in $(echo "${BUDGETS:-24GiB,16GiB}" | tr , ' '); do
        step "part32-porep-budget-$b" timeout 280 "$BIN" bench partition --c1 "$WORK/c1/c1.json" --backend cuda --reps "${REPS:-3}" --matvec device \
            --params "$(porep_params)" --device-budget "$b" \
            --json "$OUT/partition32-porep-budget-$b.json"
    done
    ;;
i)
    # The NI-PoRep C1's checks need the SnarkPack SRS; the 2 KiB test parameters bring a test one.
    step srs-test timeout 120 "$BIN" params ensure --sector-size 2KiB
    step gen32-ni timeout 180 "$BIN" gen-c1 --synthetic --sector-size 32GiB --porep-variant ni-porep --out "$WORK/ni"
    P=$(ls -S "$PARAMS"/*.params | head -1)
    step part32-ni timeout 300 "$BIN" bench partition --c1 "$WORK/ni/c1.json" --partition 125 --backend cuda --reps 2 --matvec device \
        --params "$P" --json "$OUT/partition32-ni.json"
    if [ "${PIPE:-1}" != 0 ]; then
        step pipe32-ni timeout "${T_PIPE:-540}" "$BIN" bench pce-pipeline --c1 "$WORK/ni/c1.json" --backend cuda -j 2 --num-proofs 1 \
            --warmup 0 --no-verify --json "$OUT/pipe32-ni.json"
    fi
    ;;
p)
    if [ -n "${MAP:-}" ]; then
        # The mapped layout: the first load writes the SRS map (as large as the .params file)
        # under MAPDIR (WORK/srsmap), one unmeasured sector; the measured runs below map it.
        export CUZK_SRS_MAP_DIR=${MAPDIR:-$WORK/srsmap}
        mkdir -p "$CUZK_SRS_MAP_DIR"
        df -h "$PARAMS" "$CUZK_SRS_MAP_DIR"
        # A map already there (an earlier MAPONLY call on this warm machine) is reused.
        [ -n "$(ls -A "$CUZK_SRS_MAP_DIR")" ] || step map32 timeout "${T_MAP:-400}" "$BIN" bench pce-pipeline --c1 "$WORK/c1/c1.json" --backend cuda -j 2 --num-proofs 1 \
            --warmup 0 --no-verify --budget-gib 60 --json "$OUT/map32.json"
        ls -la "$CUZK_SRS_MAP_DIR"
        # MAPONLY=1 stops after writing the map, so the measured runs fit a later call.
        [ -n "${MAPONLY:-}" ] && exit 0
    fi
    for side in $(echo "${PIPE_SIDES:-device}" | tr , ' '); do
    for g in $(echo "${POOLS:-0,13}" | tr , ' '); do
        name="pipe32-pool-$g${RELEASE:+-released}${MAP:+-mapped}${DEVBUDGET:+-dev$DEVBUDGET}${BUDGET_GIB:+-budget$BUDGET_GIB}-side-$side"
        step "$name" timeout "${T_PIPE:-280}" "$BIN" bench pce-pipeline --c1 "$WORK/c1/c1.json" --backend cuda -j 2 --num-proofs "${PIPE_N:-2}" \
            --warmup 1 --no-verify --budget-gib "${BUDGET_GIB:-60}" --buffer-pool-gib "$g" ${RELEASE:+--release-host-matrices} ${DEVBUDGET:+--device-budget $DEVBUDGET} \
            --side-msms "$side" ${PROVERS:+--provers-per-device $PROVERS} --json "$OUT/$name.json"
    done
    done
    ;;
m)
    { date -u; nvidia-smi; } >"$OUT/machine.txt" 2>&1
    step msm-small timeout "${T_SMALL:-240}" "$BIN" bench msm --impl sppark,cuzk --log-n "${SMALL:-20,22,24}" --runs "${KRUNS:-3}" \
        --msm-window "${SMALL_W:-14..20}" --msm-chunks "${CHUNKS:-1}" --json "$OUT/msm-small.json"
    step msm-large timeout "${T_LARGE:-330}" "$BIN" bench msm --impl sppark,cuzk --log-n "${LARGE:-26,27}" --runs "${KRUNS:-3}" \
        --msm-window "${LARGE_W:-17..23}" --msm-chunks "${CHUNKS:-1}" --json "$OUT/msm-large.json"
    step msm-ceiling timeout 120 "$BIN" bench msm-ceiling --log-points 20 --rounds "${ROUNDS:-64}" --batch "${BATCHES:-8,16,32,64,128}" \
        --json "$OUT/msm-ceiling.json"
    ;;
v)
    step params2k timeout 120 "$BIN" params ensure --sector-size 2KiB
    step params2k-update timeout 120 "$BIN" params ensure --update 0
    for variant in v1_1 synthetic-porep ni-porep; do
        step "gen2k-$variant" timeout 120 "$BIN" gen-c1 --sector-size 2KiB --porep-variant "$variant" --out "$WORK/v2k-$variant"
        step "prove2k-$variant" timeout 300 "$BIN" prove --c1 "$WORK/v2k-$variant/c1.json" --backend "${BACKEND:-cuda}" --out "$WORK/v2k-$variant/proof"
        step "verify2k-$variant" timeout 60 "$BIN" verify --c1 "$WORK/v2k-$variant/c1.json" --proof "$WORK/v2k-$variant/proof"
    done
    step gen2k-update timeout 120 "$BIN" gen-update --sector-size 2KiB --out "$WORK/v2k-update"
    step prove2k-update timeout 120 "$BIN" prove --update "$WORK/v2k-update/update.json" --backend "${BACKEND:-cuda}" --out "$WORK/v2k-update/proof"
    ;;
w)
    step gen32 timeout 120 "$BIN" gen-post --synthetic --sector-size 32GiB --sectors 1 --out "$WORK/post32"
    step params-win32 timeout 300 "$BIN" params ensure --post 3
    step part32-winning timeout 200 "$BIN" bench partition --post "$WORK/post32/winning.json" --backend cuda --reps 4 --matvec device \
        --msm split,plain,auto --json "$OUT/partition32-winning.json"
    step bench32-winning-cuda timeout 200 "$BIN" bench post --post "$WORK/post32/winning.json" --backend cuda --runs "${RUNS:-20}" --json "$OUT/bench32-winning-cuda.json"
    step bench32-winning-cuda-urgent4 timeout 200 "$BIN" bench post --post "$WORK/post32/winning.json" --backend cuda --runs "${RUNS:-20}" --urgent-threads 4 \
        --json "$OUT/bench32-winning-cuda-urgent4.json"
    ;;
n)
    step gen32-window timeout 200 "$BIN" gen-post --synthetic --sector-size 32GiB --sectors 2349 --out "$WORK/post32w"
    step wm-window timeout 300 "$BIN" bench witness-modes --post "$WORK/post32w/window-0.json" --json "$OUT/wm-window32.json"
    step wm-winning timeout 60 "$BIN" bench witness-modes --post "$WORK/post32w/winning.json" --json "$OUT/wm-winning32.json"
    step gen32-update timeout 200 "$BIN" gen-update --synthetic --sector-size 32GiB --out "$WORK/update32"
    step wm-update timeout 120 "$BIN" bench witness-modes --update "$WORK/update32/update.json" --json "$OUT/wm-update32.json"
    step gen32-c1 timeout 60 "$BIN" gen-c1 --synthetic --sector-size 32GiB --out "$WORK/c1"
    step wm-porep timeout 120 "$BIN" bench witness-modes --c1 "$WORK/c1/c1.json" --json "$OUT/wm-porep32.json"
    ;;
k)
    step msm timeout 120 "$BIN" bench msm --impl sppark --log-n 20..27 --runs "${KRUNS:-5}" --json "$OUT/msm.json"
    step ntt timeout 120 "$BIN" bench ntt --impl sppark --log-n 20..27 --runs "${KRUNS:-5}" --json "$OUT/ntt.json"
    step msm-check timeout 60 "$BIN" bench msm --impl cpu,sppark --log-n 16..20 --runs 2
    step ntt-check timeout 60 "$BIN" bench ntt --impl cpu,sppark --log-n 12..20 --runs 2
    ;;
t)
    for t in cuzk-gpu-unit cuzk-gpu-cuda-tests; do
        step "test-$t" timeout 200 "$(dirname "$BIN")/$t" --test-threads 1
    done
    ;;
d)
    step post-load timeout 590 "$BIN" bench post-load --post "$WORK/post32/winning.json" --c1 "$WORK/c1/c1.json" --porep-no-verify \
        --backend cuda -j 2 --budget-gib 60 --requests "${REQUESTS:-20}" --urgent-lane "${LANES:-on,off}" --urgent-threads "${THREADS:-4,0}" \
        --msm-piece-log2 "${PIECES:-0}" --urgent-grace-ms "${GRACES:-150}" --json "$OUT/post-load.json"
    ;;
esac
echo "== $(date -u +%T) done"
