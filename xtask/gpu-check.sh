#!/usr/bin/env bash
# The whole GPU check, run on the GPU machine from the folder `cargo xtask gpu-pack` made
# (the cuzk binary built with CUDA and with fault injection, which the faults step needs: a
# plain release build refuses CUZK_INJECT_FAULT; the SupraSeal harness; the bundled 2 KiB
# fixture; this script):
#   bash gpu-check.sh OUTDIR
# It makes the 2 KiB test parameters and the PCE cache there (no network needed), then runs
# the steps named in STEPS (default: all of them), writing logs and JSON into OUTDIR:
#   selftest   `cuzk selftest --backend cuda`: conformance at full scale, GPU proof == CPU
#              proof for the same r and s, verify_seal, warm timings
#   supraseal  `cuzk-supraseal`: SupraSeal C2 on the same C1, parameters file and (r, s)
#   pipeline   `cuzk bench pce-pipeline --backend cuda` with j = 1 (one prover) and j = 2, 4,
#              8 (two provers per device), PIPE_N proofs each, then j = 2 with
#              --compare-old; SVG plots included
#   scaling    the MSM/NTT scaling benchmark up to 2^MAX_LOG
#   daemon     `cuzk bench daemon`: the load test (DAEMON_N = 20 concurrent gRPC jobs with
#              resubmissions vs the same in process), the soak (SOAK_N = 50 jobs, 4 in
#              flight, RSS series), and a real `cuzk daemon` on a unix socket driven by
#              `cuzk client` and stopped with SIGTERM (exit 0 expected)
#   witness    `cuzk bench pce` with 1 and 16 circuits, `cuzk bench witness` (namespace
#              profile), and a freshly sealed 8 MiB sector through `cuzk bench pce`
#   doctor     `cuzk doctor`: build, GPUs, driver, parameter files, PCE cache, disk and memory
#              (exit 0 expected: the test parameters only WARN)
#   faults     a CUDA daemon with CUZK_INJECT_FAULT="device-error;corrupt-msm,skip=1" and
#              CUZK_ON_DEVICE_ERROR=retry-cpu: job 1 must complete (retried on the CPU), job 2
#              must fail verification and leave no proof file, job 3 must complete; both
#              proofs verified; metrics; SIGTERM
# Exits non-zero when any step fails. Results: OUTDIR/gpu-check.tar.gz.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
final="$(mkdir -p "${1:-gpu-check-out}" && cd "${1:-gpu-check-out}" && pwd)"
# Everything is written to a scratch folder and packed into OUTDIR/gpu-check.tar.gz at the end
# (the device tool brings back only a few files per run).
out="$(mktemp -d)/gpu-check"
mkdir -p "$out"
cd "$here"
export RUST_LOG="${RUST_LOG:-info}"
: "${MAX_LOG:=26}"
: "${STEPS:=selftest supraseal pipeline scaling}"
: "${PIPE_N:=36}"
rc=0
step() { # name timeout command...
  local name="$1" limit="$2"
  shift 2
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local r=$?
  grep -v "INFO" "$out/$name.log" | tail -40
  echo "step $name: exit $r"
  [ "$r" -eq 0 ] || rc=$r
}
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >> "$out/nvidia-smi.txt"
./cuzk --version | tee "$out/version.txt"
./cuzk params ensure --sector-size 2KiB 2>&1 | tail -5 | tee "$out/params.log"
c1=fixtures/2kib/c1.json
for s in $STEPS; do
  case "$s" in
    selftest) step selftest "${SELFTEST_TIMEOUT:-420}" ./cuzk selftest --backend cuda --c1 "$c1" --json "$out/selftest.json" ;;
    supraseal)
      if [ -x ./cuzk-supraseal ]; then
        step supraseal "${SUPRASEAL_TIMEOUT:-300}" ./cuzk-supraseal --c1 "$c1" --repeats "${SUPRASEAL_REPEATS:-4}" --json "$out/supraseal.json"
      else
        echo "step supraseal: no cuzk-supraseal binary in $here"; rc=2
      fi ;;
    pipeline)
      for j in 1 2 4 8; do
        p=2; [ "$j" -eq 1 ] && p=1
        step "pipeline-j$j" "${PIPE_TIMEOUT:-240}" ./cuzk bench pce-pipeline --c1 "$c1" --backend cuda --num-proofs "$PIPE_N" -j "$j" --provers-per-device "$p" \
          --project-gpus 8 --pipelines-per-gpu 2 --json "$out/pipeline-j$j.json" --plot "$out/pipeline-j$j.svg"
      done
      step pipeline-old "${PIPE_TIMEOUT:-240}" ./cuzk bench pce-pipeline --c1 "$c1" --backend cuda --num-proofs 4 -j 2 --compare-old \
        --json "$out/pipeline-old.json" --plot "$out/pipeline-old.svg" ;;
    daemon)
      step daemon-load "${DAEMON_TIMEOUT:-300}" ./cuzk bench daemon --c1 "$c1" --backend cuda --jobs "${DAEMON_N:-20}" -j 8 --provers-per-device 2 --json "$out/daemon-load.json"
      step daemon-soak "${DAEMON_TIMEOUT:-300}" ./cuzk bench daemon --c1 "$c1" --backend cuda --jobs "${SOAK_N:-50}" --concurrency 4 -j 4 --provers-per-device 2 --skip-in-process --json "$out/daemon-soak.json"
      sock="$(mktemp -u /tmp/cuzk-XXXX.sock)"
      CUZK_BACKEND=cuda ./cuzk daemon --listen "unix://$sock" > "$out/daemon-serve.log" 2>&1 &
      dpid=$!
      for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.2; done
      step daemon-client 120 bash -c "./cuzk client --addr unix://$sock prove --c1 $c1 --out $out/daemon.proof && ./cuzk client --addr unix://$sock prove --c1 $c1 --out $out/daemon2.proof --priority critical && ./cuzk verify --c1 $c1 --proof $out/daemon.proof && ./cuzk client --addr unix://$sock status && ./cuzk client --addr unix://$sock metrics"
      kill -TERM "$dpid"; wait "$dpid"; drc=$?
      echo "daemon exit after SIGTERM: $drc; socket left behind: $([ -e "$sock" ] && echo yes || echo no)" | tee -a "$out/daemon-serve.log"
      [ "$drc" -eq 0 ] || rc=$drc ;;
    witness)
      step witness-pce-1 300 ./cuzk bench pce --c1 "$c1" --circuits 1 --json "$out/witness-pce-1.json"
      step witness-pce-16 300 ./cuzk bench pce --c1 "$c1" --circuits 16 --json "$out/witness-pce-16.json"
      step witness-profile 120 ./cuzk bench witness --c1 "$c1" --top 40 --json "$out/witness-profile.json"
      step witness-8m 400 bash -c "./cuzk gen-c1 --sector-size 8MiB --seed 5 --out $out/s8m && ./cuzk bench pce --c1 $out/s8m/c1.json --json $out/witness-pce-8m.json" ;;
    faults)
      sock="$(mktemp -u /tmp/cuzk-XXXX.sock)"
      CUZK_BACKEND=cuda CUZK_INJECT_FAULT="device-error;corrupt-msm,skip=1" CUZK_ON_DEVICE_ERROR=retry-cpu ./cuzk daemon --listen "unix://$sock" > "$out/faults-serve.log" 2>&1 &
      dpid=$!
      for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.2; done
      step faults-retried 240 ./cuzk client --addr "unix://$sock" prove --c1 "$c1" --out "$out/faults-retried.proof"
      timeout 240 ./cuzk client --addr "unix://$sock" prove --c1 "$c1" --out "$out/faults-corrupt.proof" > "$out/faults-corrupt.log" 2>&1
      cr=$?
      echo "corrupted job: client exit $cr (non-zero expected), proof file written: $([ -e "$out/faults-corrupt.proof" ] && echo yes || echo no)" | tee -a "$out/faults-corrupt.log"
      tail -3 "$out/faults-corrupt.log"
      { [ "$cr" -ne 0 ] && [ ! -e "$out/faults-corrupt.proof" ]; } || rc=3
      step faults-clean 240 ./cuzk client --addr "unix://$sock" prove --c1 "$c1" --out "$out/faults-clean.proof"
      step faults-verify 120 bash -c "./cuzk verify --c1 $c1 --proof $out/faults-retried.proof && ./cuzk verify --c1 $c1 --proof $out/faults-clean.proof"
      ./cuzk client --addr "unix://$sock" metrics > "$out/faults-metrics.txt" 2>&1
      grep -E "retried_on_cpu|proofs_total" "$out/faults-metrics.txt"
      kill -TERM "$dpid"; wait "$dpid"; drc=$?
      echo "faults daemon exit after SIGTERM: $drc" | tee -a "$out/faults-serve.log"
      [ "$drc" -eq 0 ] || rc=$drc ;;
    doctor) step doctor "${DOCTOR_TIMEOUT:-600}" ./cuzk doctor ;;
    scaling) step scaling "${SCALING_TIMEOUT:-300}" ./cuzk bench backend --backend cuda --min-log 20 --max-log "$MAX_LOG" --json "$out/scaling.json" ;;
    *) echo "unknown step $s"; rc=2 ;;
  esac
done
tar -czf "$final/gpu-check.tar.gz" -C "$(dirname "$out")" gpu-check
echo "results: $final/gpu-check.tar.gz"
exit $rc
