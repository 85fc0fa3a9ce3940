#!/usr/bin/env bash
# GPU acceptance of simpar-exec on one NVIDIA GPU (H100 or H200), start to finish, in two halves
# that can also run apart (the measuring one needs only simpar-exec, the judging one only simpar
# and the measured files):
#
#   bench/gpu-measure.sh   build simpar-exec; every tensor-parallel mode's correctness check
#                          (2.5-D with --depth 1) and a whole step's; --bench all; timed steps of
#                          the h 8192 stack (LAYERS layers) at micro-batch 1, 2 and 4
#   bench/gpu-judge.sh     the checks' errors; simpar calibrate on the bench; simpar validate of
#                          each timed step, with the preset and with that calibration
#
# Everything lands in OUT (default bench/results/gpu); OUT/judge.txt is the summary. Each step
# has its own timeout (gpu-measure.sh, gpu-judge.sh); the whole is meant to finish in under six
# minutes on one H100 or H200, the build included.
#
# Usage: bench/gpu-validate.sh [BUILD_DIR] [OUT] [LAYERS]    (from the repository root)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build=${1:-build-gpu}
out=${2:-bench/results/gpu}
layers=${3:-4}
bench/gpu-measure.sh --executor cuda --build "$build" --out "$out" --layers "$layers"
measured=$?
simpar=()
[ -x "$build/app/simpar" ] && simpar=(--simpar "$build/app/simpar")
bench/gpu-judge.sh "${simpar[@]}" --out "$out"
judged=$?
exit $((measured + judged))
