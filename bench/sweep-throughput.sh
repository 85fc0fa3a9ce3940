#!/bin/sh
# bench/sweep-throughput.sh - configurations per second per core of `simpar sweep`, one worker
# process (--jobs 1), on the 64-GPU DGX A100 platform with GPT-3 1.3B:
#
#   analytic  every split of 8, 16, 32, 64 GPUs x micro-batch 1..8 x recompute none,selective,
#             global batch 512 (1008 rows, 666 that fit)
#   formula   the same sweep with --backend formula; its step times against the analytic CSV's
#   formula   a sweep long enough to time (over a second): the same x global batch 64..8192 x
#             schedule 1f1b,gpipe (16128 rows, 6864 that fit); the analytic backend runs it too
#             (about two minutes) for the step times to compare
#   simgrid   every split of 8, 16, 32, 64 GPUs at micro-batch 4 (126 rows, 99 that fit)
#
#   bench/sweep-throughput.sh [BUILD_DIR]     (default build)
#
# Wall time is measured here (date), around the whole command: platform loads, forks, journal
# and output included. A formula line ends with the largest |step - analytic step| / analytic
# step over the rows both backends fit. Writes bench/results/sweep-throughput.txt.
set -eu
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common="--topology topologies/dgx-a100x64.xml --gpus 8..64 --model gpt3-1.3b --jobs 1 -q"
small="--global-batch 512 --micro-batch 1..8 --recompute none,selective"
large="--global-batch 64..8192 --micro-batch 1..8 --recompute none,selective --schedule 1f1b,gpipe"
out=bench/results/sweep-throughput.txt
: > "$out"

# sweep NAME ARGS...: one sweep into $work/NAME.csv; its wall time in $wall
sweep() {
    name=$1
    shift
    start=$(date +%s.%N)
    "$bin" sweep $common "$@" -o "$work/$name.csv" > "$work/$name.txt"
    end=$(date +%s.%N)
    wall=$(echo "$end - $start" | bc -l)
}

# line NAME LABEL [MORE]: rows, ok rows, wall and rows per second per core of NAME, then MORE
line() {
    rows=$(grep -vc '^#' "$work/$1.csv")
    rows=$((rows - 1))
    ok=$(grep -c ',ok,' "$work/$1.csv" || true)
    printf 'sweep %-8s %5d configurations (%d ok) in %6.2f s wall: %7.1f configurations/s per core%s\n' \
        "$2" "$rows" "$ok" "$wall" "$(echo "$rows / $wall" | bc -l)" "${3:-}" | tee -a "$out"
}

# error A B: the largest relative step-time difference of B's ok rows from A's, and their count
# (ok rows have an empty reason: their fields hold no quoted commas)
error() {
    awk -F, '/^#/ { next }
        $1 == "index" { for (i = 1; i <= NF; i++) { if ($i == "step_time_s") s = i
                                                   if ($i == "status") st = i }
                        next }
        FNR == NR { if ($st == "ok") a[$1] = $s; next }
        $st == "ok" && ($1 in a) { d = ($s - a[$1]) / a[$1]; d = d < 0 ? -d : d
                                   if (d > m) m = d; n++ }
        END { printf "%.3g over %d rows (9 digits printed)", m, n }' "$1" "$2"
}

sweep analytic $small
line analytic analytic
sweep formula $small --backend formula
line formula formula "; step vs analytic: max relative difference $(error "$work/analytic.csv" "$work/formula.csv")"
sweep formula-large $large --backend formula
formula_wall=$wall
sweep analytic-large $large
analytic_wall=$wall
wall=$formula_wall
line formula-large formula "; step vs analytic: max relative difference $(error "$work/analytic-large.csv" "$work/formula-large.csv") (analytic: $(printf '%.0f' "$analytic_wall") s)"
sweep simgrid --global-batch 512 --micro-batch 4 --backend simgrid
line simgrid simgrid
printf '(%s, %d cores, --jobs 1, load average %s at the end)\n' "$(uname -m)" "$(nproc)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
