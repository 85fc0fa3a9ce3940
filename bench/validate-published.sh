#!/bin/sh
# bench/validate-published.sh [BUILD_DIR] [SET] - simpar validate --published SET (default
# korthikanti) on the formula backend and on SimGrid: every case of the published table of
# whole training steps against its prediction. Writes bench/results/validate-published-SET-
# formula.txt and -simgrid.txt (docs/fidelity.md quotes them), each with the wall time and the
# machine's load when it ran.
set -eu
build=${1:-build}
set=${2:-korthikanti}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
for backend in formula simgrid; do
    out=bench/results/validate-published-$set-$backend.txt
    start=$(date +%s.%N)
    "$bin" validate --published "$set" --backend "$backend" > "$out"
    end=$(date +%s.%N)
    printf '(%.1f s wall, %s, %d cores, load average %s at the end)\n' \
        "$(echo "$end - $start" | bc -l)" "$(uname -m)" "$(nproc)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$out"
    cat "$out"
done
