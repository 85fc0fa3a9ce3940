#!/usr/bin/env bash
# The measuring half of the GPU check (bench/gpu-validate.sh): everything that needs the GPU,
# and nothing but simpar-exec (no SimGrid, no gnuplot). bench/gpu-judge.sh reads what it wrote,
# on this machine or any other.
#
#   0. simpar-exec: built with CUDA unless --exec names one (meson: -Dcuda=enabled
#      -Dsimgrid=auto -Dtests=false, only the simpar-exec target)
#   1. correctness: every tensor-parallel mode at T = 1 (2.5-D with --depth 1), one layer, fp64,
#      fp32 and bf16, and a whole step (2 layers) in fp64 and bf16, each --check'ed against the
#      host executor                                                   -> OUT/checks/*.json
#   2. microbenchmarks: --bench all on the stack's shapes (one GPU: no collectives)
#                                                                      -> OUT/bench.json
#   3. timed training steps of the stack at micro-batch 1, 2 and 4    -> OUT/run-b{1,2,4}.json
#
# The stack (cuda): h 8192, 64 heads, s 2048, FFN 32768, LAYERS layers (default 4), V 51200,
# bf16. --executor host runs the same steps on the CPU with the tiny model (CI: the script runs
# end to end). Every step has its own timeout; a step that fails or runs out of time is logged
# in OUT/measure.log and the others still run; the exit status is the number of failed steps.
# OUT/device.txt names the device, which bench/gpu-judge.sh uses to pick the platform.
#
# Usage: bench/gpu-measure.sh [--executor cuda|host] [--exec SIMPAR_EXEC] [--build DIR]
#                             [--out DIR] [--layers N]          (from the repository root)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

executor=cuda exe="" build=build-gpu out=bench/results/gpu layers=4
while [ $# -gt 0 ]; do
  case "$1" in
    --executor) executor=$2; shift 2 ;;
    --exec) exe=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    *) echo "gpu-measure: unknown argument '$1' (see the usage in $0)" >&2; exit 2 ;;
  esac
done
case "$executor" in
  cuda | host) ;;
  *) echo "gpu-measure: --executor $executor: valid are cuda and host" >&2; exit 2 ;;
esac

mkdir -p "$out/checks"
log=$out/measure.log
: >"$log"
failed=0
start=$SECONDS

# step SECONDS NAME COMMAND...: runs COMMAND under a timeout, its output into the log.
step() {
  local limit=$1 name=$2 t0=$SECONDS status
  shift 2
  echo "== $name" >>"$log"
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "gpu-measure: $name: timed out after ${limit} s" | tee -a "$log" >&2
    failed=$((failed + 1))
  elif [ "$status" -ne 0 ]; then
    echo "gpu-measure: $name: failed (exit status $status; see $log)" | tee -a "$log" >&2
    failed=$((failed + 1))
  else
    echo "gpu-measure: $name: $((SECONDS - t0)) s" | tee -a "$log" >&2
  fi
}

if [ -z "$exe" ]; then
  # shellcheck source=.ci/env
  [ -f .ci/env ] && . .ci/env
  cuda_opt=enabled
  [ "$executor" = host ] && cuda_opt=auto
  if [ ! -d "$build" ]; then
    step 300 "meson setup $build" meson setup "$build" -Dcuda=$cuda_opt -Dmpi=disabled \
      -Dsimgrid=auto -Dtests=false --buildtype=release
  fi
  step 600 "build simpar-exec" ninja -C "$build" exec/simpar-exec
  exe=$build/exec/simpar-exec
fi
if [ ! -x "$exe" ]; then
  echo "gpu-measure: no simpar-exec at $exe" >&2
  exit 1
fi

if [ "$executor" = cuda ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
    head -1 >"$out/device.txt"
  stack=(--hidden 8192 --heads 64 --seq 2048 --ffn 32768 --layers "$layers" --vocab 51200
    --dtype bf16)
  bench=(--bench all --hidden 8192 --heads 64 --seq 2048 --ffn 32768 --vocab 51200
    --micro-batch 2 --dtype bf16)
  limits=(120 240 240)
else
  echo "host" >"$out/device.txt"
  stack=(--model tiny --layers 2)
  bench=(--bench all --quick)
  limits=(120 120 120)
fi
"$exe" --version >"$out/simpar-exec-version.txt" 2>&1
git rev-parse --short HEAD >"$out/commit.txt" 2>/dev/null || echo unknown >"$out/commit.txt"

# 1. correctness
for mode in 1d 2d 2.5d 3d; do
  depth=()
  [ "$mode" = 2.5d ] && depth=(--depth 1)
  for dt in fp64 fp32 bf16; do
    step "${limits[0]}" "check layer $mode $dt" "$exe" --executor "$executor" --run layer \
      --model tiny --tp-mode "$mode" --tp 1 "${depth[@]}" --dtype "$dt" --check --warmup 1 \
      --repeats 3 -o "$out/checks/layer-$mode-$dt.json"
  done
done
for dt in fp64 bf16; do
  step "${limits[0]}" "check step $dt" "$exe" --executor "$executor" --run step --model tiny \
    --layers 2 --vocab 1024 --dtype "$dt" --check --warmup 1 --repeats 3 \
    -o "$out/checks/step-$dt.json"
done

# 2. microbenchmarks
step "${limits[1]}" "bench all" "$exe" --executor "$executor" "${bench[@]}" -o "$out/bench.json"

# 3. timed steps
for b in 1 2 4; do
  step "${limits[2]}" "step at micro-batch $b" "$exe" --executor "$executor" --run step \
    "${stack[@]}" --micro-batch "$b" --global-batch "$b" --warmup 2 --repeats 5 \
    -o "$out/run-b$b.json"
done

echo "gpu-measure: $failed failed step(s), $((SECONDS - start)) s in all; files in $out" |
  tee -a "$log" >&2
exit "$failed"
