#!/usr/bin/env bash
# The judging half of the GPU check (bench/gpu-validate.sh): what bench/gpu-measure.sh measured
# against simpar's predictions, on any machine with simpar (the files can be copied off the
# GPU machine first).
#
#   1. the correctness checks: each file's worst relative error against its tolerance
#   2. simpar calibrate --measured bench.json (--topology the platform): the measured tables
#   3. simpar validate of each timed step (run-b*.json) on the platform, with its preset figures
#      and with the calibration: the step's error and the class table, a plot when gnuplot is
#      there (validate-b*.png), a Chrome trace
#
# The platform follows OUT/device.txt: an H200 topologies/h200x1.xml, an H100 h100x1.xml, the
# host executor topologies/host.xml. Writes OUT/judge.txt (the summary), OUT/calib.json,
# OUT/validate-*.txt. Every step has its own timeout; the exit status is the number of failed
# steps.
#
# Usage: bench/gpu-judge.sh [--simpar SIMPAR] [--build DIR] [--out DIR]   (from the repo root)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

simpar="" build=build out=bench/results/gpu
while [ $# -gt 0 ]; do
  case "$1" in
    --simpar) simpar=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "gpu-judge: unknown argument '$1' (see the usage in $0)" >&2; exit 2 ;;
  esac
done
if [ -z "$simpar" ]; then
  if [ ! -d "$build" ]; then
    meson setup "$build" -Dtests=false --buildtype=release >/dev/null || exit 1
  fi
  ninja -C "$build" app/simpar >/dev/null || exit 1
  simpar=$build/app/simpar
fi
if [ ! -f "$out/device.txt" ] || [ ! -f "$out/bench.json" ]; then
  echo "gpu-judge: $out has no device.txt or bench.json: run bench/gpu-measure.sh first" >&2
  exit 1
fi

device=$(cat "$out/device.txt")
case "$device" in
  *H200*) topo=topologies/h200x1.xml ;;
  *H100*) topo=topologies/h100x1.xml ;;
  host) topo=topologies/host.xml ;;
  *) echo "gpu-judge: no platform for '$device' (h100x1.xml, h200x1.xml, host.xml)" >&2; exit 1 ;;
esac
summary=$out/judge.txt
echo "device: $device; platform $topo; simpar-exec at $(cat "$out/commit.txt" 2>/dev/null)" \
  >"$summary"
failed=0

# step SECONDS NAME OUTPUT COMMAND...: COMMAND under a timeout, its stdout into OUTPUT.
step() {
  local limit=$1 name=$2 file=$3 status
  shift 3
  timeout --kill-after=10 "$limit" "$@" >"$file" 2>"$file.err"
  status=$?
  if [ "$status" -ne 0 ]; then
    echo "gpu-judge: $name: failed (exit status $status): $(head -c 400 "$file.err")" |
      tee -a "$summary" >&2
    failed=$((failed + 1))
  fi
  rm -f "$file.err"
  return "$status"
}

echo "== correctness (worst relative error / tolerance)" >>"$summary"
for f in "$out"/checks/*.json; do
  [ -f "$f" ] || continue
  err=$(grep -o '"max_rel_error" : [^,]*' "$f" | head -1 | sed 's/.*: //')
  tol=$(grep -o '"tolerance" : [^,]*' "$f" | head -1 | sed 's/.*: //')
  printf '  %-24s %-12s / %s\n' "$(basename "$f" .json)" "${err:-?}" "${tol:-?}" >>"$summary"
done

echo "== calibration" >>"$summary"
cal_args=(calibrate --measured "$out/bench.json" -o "$out/calib.json")
[ "$topo" != topologies/host.xml ] && cal_args+=(--topology "$topo")
if step 120 "calibrate" "$out/calibrate.txt" "$simpar" "${cal_args[@]}"; then
  grep -E '^(GEMM|kernels|collectives) ' "$out/calibrate.txt" >>"$summary"
fi

echo "== timed steps: simpar validate (step error; preset, then calibrated)" >>"$summary"
plot=()
command -v gnuplot >/dev/null && plot=(--plot)
for run in "$out"/run-b*.json; do
  [ -f "$run" ] || continue
  b=$(basename "$run" .json)
  b=${b#run-}
  for cal in preset calibrated; do
    args=(validate --measured "$run" --topology "$topo")
    if [ "$cal" = calibrated ]; then
      [ -f "$out/calib.json" ] || continue
      args+=(--calibration "$out/calib.json" --trace "$out/trace-$b.json")
      [ ${#plot[@]} -gt 0 ] && args+=(--plot "$out/validate-$b.png")
    fi
    if step 120 "validate $b ($cal)" "$out/validate-$b-$cal.txt" "$simpar" "${args[@]}"; then
      echo "  $b, $cal: $(grep -m1 -E '^step' "$out/validate-$b-$cal.txt")" >>"$summary"
    fi
  done
done

echo "gpu-judge: $failed failed step(s)" >>"$summary"
cat "$summary"
exit "$failed"
