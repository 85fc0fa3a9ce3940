#!/usr/bin/env bash
# bench/paper-3d.sh [BUILD_DIR]: the 3-D paper's comparison (Bian et al., arXiv 2105.14450: 3-D
# 2.32x faster than 1-D and 1.57x faster than 2-D on 64 V100s) the way it measured: average step
# time = (forward + backward time) / batch size, each mode at the largest batch that fits in the
# GPU's memory, on 64 GPUs of topologies/v100x64.xml (16 AC922 nodes, two EDR ports each).
#
# The paper's model sizes are not public. The runs use the shapes of its authors' benchmark
# (xuqifan897/Optimus bcmk_ParallelTransformer: h = 2048, s = 512, 24 layers, fp32, activations
# recomputed) with 64 heads instead of 32, so that 1-D can split them 64 ways, and again with
# default-4k (h = 4096, 64 heads), and once without recomputation. For each mode the batch is the largest multiple of what the mode
# splits it by that fits (simpar's memory model), then the step is simulated on SimGrid.
# Writes bench/results/paper-3d.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "paper-3d: $bin not found (meson compile -C $build first)" >&2; exit 1; }
platform=topologies/v100x64.xml
out=bench/results/paper-3d.txt
mkdir -p bench/results

field() { sed -n "s/.*\"$1\" : \([0-9.e+-]*\).*/\1/p" | head -n 1; }

# fits MODEL_ARGS... : 0 when the job fits (simpar predicts a job over capacity too, and says so)
fits() {
  out=$("$bin" --topology "$platform" --backend analytic --json "$@" 2> /dev/null) || return 1
  grep -q '"over_capacity_gib" : 0.0,' <<< "$out"
}

# largest STEP-multiple batch that fits, by doubling then bisection
largest() {
  local step=$1; shift
  local lo=0 hi=$step
  while fits "$@" --micro-batch "$hi" && [ "$hi" -lt 1048576 ]; do lo=$hi; hi=$((hi * 2)); done
  while [ $((hi - lo)) -gt "$step" ]; do
    local mid=$(( (lo + hi) / 2 / step * step ))
    if fits "$@" --micro-batch "$mid"; then lo=$mid; else hi=$mid; fi
  done
  echo "$lo"
}

{
  printf '# %s: bench/paper-3d.sh, %s, SimGrid backend (fused collectives)\n' \
    "$(date -u +%Y-%m-%d)" "$platform"
  for run in "paper-3d --heads 64|full" "paper-3d --heads 64|none" "default-4k --dtype fp32|full"; do
    model=${run%|*} recompute=${run#*|}
    printf '\nmodel %s, recompute %s\n' "$model" "$recompute"
    printf '%-6s %-10s %7s %10s %10s %12s %9s\n' mode split batch "fwd s" "bwd s" "(f+b)/b s" "mem GiB"
    declare -A avg=() same=()
    common=1048576
    for spec in "1d:1:" "2d:8:" "2.5d:16:--depth 4" "3d:16:"; do
      IFS=: read -r mode step extra <<< "$spec"
      # shellcheck disable=SC2086
      args=(--model $model --tp-mode "$mode" $extra --recompute "$recompute")
      b=$(largest "$step" "${args[@]}")
      if [ "$b" -eq 0 ]; then printf '%-6s does not fit at its smallest batch\n' "$mode"; continue; fi
      common=$(( b < common ? b : common ))
      json=$("$bin" --topology "$platform" --json "${args[@]}" --micro-batch "$b")
      f=$(printf '%s\n' "$json" | field forward_s)
      bw=$(printf '%s\n' "$json" | field backward_s)
      mem=$(printf '%s\n' "$json" | field memory_per_gpu_gib)
      grid=$(printf '%s\n' "$json" | sed -n 's/.*"grid" : "\([^"]*\)".*/\1/p' | head -n 1)
      avg[$mode]=$(awk -v f="$f" -v b="$bw" -v n="$b" 'BEGIN { printf "%.6g", (f + b) / n }')
      printf '%-6s %-10s %7d %10.4f %10.4f %12.6f %9.2f\n' "$mode" "$grid" "$b" "$f" "$bw" \
        "${avg[$mode]}" "$mem"
    done
    awk -v a="${avg[1d]}" -v b="${avg[2d]}" -v c="${avg[3d]}" 'BEGIN {
      printf "3-D against 1-D: %.2fx (paper 2.32x); 3-D against 2-D: %.2fx (paper 1.57x)\n", a / c, b / c }'
    common=$(( common / 16 * 16 )) # one batch that every mode splits and fits
    for spec in "1d:" "2d:" "3d:"; do
      IFS=: read -r mode extra <<< "$spec"
      # shellcheck disable=SC2086
      json=$("$bin" --topology "$platform" --json --model $model --tp-mode "$mode" \
        --recompute "$recompute" --micro-batch "$common")
      f=$(printf '%s\n' "$json" | field forward_s)
      bw=$(printf '%s\n' "$json" | field backward_s)
      same[$mode]=$(awk -v f="$f" -v b="$bw" -v n="$common" 'BEGIN { printf "%.6g", (f + b) / n }')
    done
    awk -v n="$common" -v a="${same[1d]}" -v b="${same[2d]}" -v c="${same[3d]}" 'BEGIN {
      printf "all at batch %d: (f+b)/b 1-D %.6f, 2-D %.6f, 3-D %.6f s; 3-D against 1-D %.2fx, against 2-D %.2fx\n",
             n, a, b, c, a / c, b / c }'
    unset avg same
  done
} > "$out"
cat "$out"
