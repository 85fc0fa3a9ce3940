#!/bin/sh
# bench/report-v100x64.sh - `simpar --topology topologies/v100x64.xml --report DIR`, the main job's
# report (table, JSON, the trace of all four modes, the breakdown and four timeline pictures):
# wall time and peak RSS of the prediction alone and of --report, the trace's size, and the
# machine's load (/proc/loadavg) before and after each run. With a second build (REF_BUILD, such
# as one of an earlier commit), the same runs of it, and whether its pictures are the same bytes.
#
#   bench/report-v100x64.sh [BUILD_DIR] [REF_BUILD]     (default build, no reference)
#
# Output in bench/results/report-v100x64.txt.
set -eu
build=${1:-build}
ref=${2:-}
[ -x /usr/bin/time ] || { echo "bench: /usr/bin/time (Debian package time) is needed" >&2; exit 1; }
for b in "$build" $ref; do
    [ -x "$b/app/simpar" ] || { echo "bench: $b/app/simpar not found" >&2; exit 1; }
done
mkdir -p bench/results
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=bench/results/report-v100x64.txt
load() { cut -d' ' -f1-3 /proc/loadavg; }
# run LABEL BIN ARGS...: one timed run: wall time, peak RSS, load before and after
run() {
    label=$1 bin=$2
    shift 2
    before=$(load)
    /usr/bin/time -f '%e %M' -o "$dir/time" "$bin" --topology topologies/v100x64.xml "$@" \
        > /dev/null
    read -r wall rss < "$dir/time"
    printf '%-34s %7.2f s wall, peak RSS %5d MiB, load %s -> %s\n' "$label" "$wall" \
        "$((rss / 1024))" "$before" "$(load)" | tee -a "$out"
}
{
    echo "# bench/report-v100x64.sh: simpar --topology topologies/v100x64.xml [--report DIR]"
    echo "# $(uname -m), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'); load: 1, 5, 15 min"
} > "$out"
run "prediction ($build)" "$build/app/simpar"
run "--report ($build)" "$build/app/simpar" --report "$dir/new"
printf '%-34s %d MiB\n' "trace file" "$(($(wc -c < "$dir/new/trace.json") / 1048576))" | tee -a "$out"
if [ -n "$ref" ]; then
    run "--report ($ref)" "$ref/app/simpar" --report "$dir/ref"
    for f in "$dir"/new/*.png; do
        name=$(basename "$f")
        if cmp -s "$f" "$dir/ref/$name"; then same=same; else same=DIFFERENT; fi
        printf '  %-20s %s bytes, %s as %s\n' "$name" "$(wc -c < "$f")" "$same" "$ref" | tee -a "$out"
    done
fi
