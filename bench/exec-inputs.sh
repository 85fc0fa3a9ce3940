#!/usr/bin/env bash
# How long simpar-exec takes to generate the input values of a run on the host: the whole step
# of the 4-layer h 8192 stack of bench/gpu-validate.sh (64 heads, s 2048, FFN 32768, V 51200,
# micro-batch 4, bf16; 3.6e9 parameters, 4.1e9 input values with the activations and ids), new
# (every core, each buffer's own type, as simpar-exec --run does it) against old (the previous
# generator: one double at a time, one thread), every new value compared with the old one
# rounded to its type. Writes bench/results/exec-inputs.txt. About 3 minutes on 2 cores.
#
# Usage: bench/exec-inputs.sh [BUILD_DIR]    (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
ninja -C "$build" bench/bench-exec-inputs >/dev/null
out=bench/results/exec-inputs.txt
args=(--hidden 8192 --heads 64 --seq 2048 --ffn 32768 --layers 4 --vocab 51200
  --micro-batch 4 --global-batch 4 --dtype bf16)
{
  echo "# bench/exec-inputs.sh on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(git rev-parse --short HEAD)"
  echo "# bench-exec-inputs ${args[*]} --old"
  "$build/bench/bench-exec-inputs" "${args[@]}" --old
} | tee "$out"
