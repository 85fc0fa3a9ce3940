#!/bin/sh
# bench/predict-v100x64.sh - wall time of the main job (`simpar --topology topologies/v100x64.xml`,
# all four tensor-parallel modes on SimGrid, exact collectives), median of N runs, plus peak RSS.
#
#   bench/predict-v100x64.sh [BUILD_DIR] [RUNS]     (default build, 5)
#
# Prints one line per run and a summary line (with the machine's load, /proc/loadavg, before
# the runs); the prediction goes to
# bench/results/predict-v100x64.txt and the summary line to bench/results/predict-v100x64.timing.
set -eu
build=${1:-build}
runs=${2:-5}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
times=""
load=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$runs"); do
    start=$(date +%s.%N)
    "$bin" --topology topologies/v100x64.xml > bench/results/predict-v100x64.txt
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc -l)
    printf 'run %d: %.3f s\n' "$i" "$t"
    times="$times $t"
done
median=$(printf '%s\n' $times | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
rss=""
if [ -x /usr/bin/time ]; then
    rss=$(/usr/bin/time -f '%M' "$bin" --topology topologies/v100x64.xml 2>&1 >/dev/null | tail -n 1)
    rss=", peak RSS $((rss / 1024)) MiB"
fi
printf 'predict v100x64: median %.3f s wall over %d runs%s, load %s (%s, %d cores)\n' \
    "$median" "$runs" "$rss" "$load" "$(uname -m)" "$(nproc)" | tee bench/results/predict-v100x64.timing
