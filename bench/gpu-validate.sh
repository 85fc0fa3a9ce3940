#!/usr/bin/env bash
# GPU acceptance of simpar-exec on one NVIDIA GPU (H100 or H200), start to finish:
#   1. correctness mode: every tensor-parallel mode at T = 1 (one layer, forward and backward) in
#      fp64, fp32 and bf16, and a whole training step, each checked against the host executor;
#   2. microbenchmarks: GEMM shapes, kernels, collectives (one GPU: none);
#   3. simpar calibrate on the microbenchmarks only;
#   4. timed training steps of a GPT-style stack (h 8192, 64 heads, s 2048, FFN 32768,
#      LAYERS layers, V 51200, bf16) at micro-batch 1, 2 and 4;
#   5. simpar validate of each timed run against topologies/<gpu>x1.xml with that calibration.
# Everything lands in OUT (default bench/results/gpu): RUN/BENCH/CALIB JSON, validate tables and
# plots, and summary.txt with the step-time errors.
#
# Usage: bench/gpu-validate.sh [BUILD_DIR] [OUT] [LAYERS]    (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
out=${2:-bench/results/gpu}
layers=${3:-4}
. .ci/env
if [ ! -d "$build" ]; then
  meson setup "$build" -Dcuda=enabled -Dtests=false --buildtype=release
fi
meson compile -C "$build"
exe=$build/exec/simpar-exec
simpar=$build/app/simpar
mkdir -p "$out"

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*) topo=topologies/h200x1.xml ;;
  *H100*) topo=topologies/h100x1.xml ;;
  *) echo "gpu-validate: no platform for '$gpu' (h100x1.xml, h200x1.xml)" >&2; exit 1 ;;
esac
echo "GPU: $gpu; platform $topo" | tee "$out/summary.txt"

echo "== 1. correctness mode" | tee -a "$out/summary.txt"
for mode in 1d 2d 2.5d 3d; do
  for dt in fp64 fp32 bf16; do
    $exe --executor cuda --run layer --model tiny --tp-mode "$mode" --tp 1 --dtype "$dt" \
      --check --warmup 1 --repeats 3 -o "$out/check-layer-$mode-$dt.json" |
      tee -a "$out/summary.txt"
  done
done
$exe --executor cuda --run step --model tiny --layers 2 --dtype fp64 --check \
  --warmup 1 --repeats 3 -o "$out/check-step-fp64.json" | tee -a "$out/summary.txt"

echo "== 2. microbenchmarks" | tee -a "$out/summary.txt"
$exe --executor cuda --bench all --dtype bf16 --hidden 8192 --heads 64 --seq 2048 --ffn 32768 \
  -o "$out/bench-bf16.json" | tee -a "$out/summary.txt"

echo "== 3. calibration" | tee -a "$out/summary.txt"
$simpar calibrate --measured "$out/bench-bf16.json" --topology "$topo" -o "$out/calib.json" |
  tee -a "$out/summary.txt"

echo "== 4-5. timed steps and validation" | tee -a "$out/summary.txt"
for b in 1 2 4; do
  run=$out/run-h8192-l$layers-b$b.json
  $exe --executor cuda --run step --hidden 8192 --heads 64 --seq 2048 --ffn 32768 \
    --layers "$layers" --vocab 51200 --micro-batch "$b" --global-batch "$b" --dtype bf16 \
    --warmup 3 --repeats 10 -o "$run" | tee -a "$out/summary.txt"
  $simpar validate --measured "$run" --topology "$topo" --calibration "$out/calib.json" \
    --plot "$out/validate-b$b.png" --trace "$out/trace-b$b.json" | tee "$out/validate-b$b.txt" |
    tee -a "$out/summary.txt"
done
