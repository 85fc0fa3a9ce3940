#!/bin/sh
# bench/growth.sh [BUILD_DIR] [GPUS...] - how a whole-step prediction grows with the cluster:
# Llama 3 405B as its paper trained it at 128K (TP 8 + SP, CP 16, PP 16 interleaved v = 2,
# FSDP, micro-batch 1, 16 micro-batches per replica) on the clos-h100 preset (pods of 3,072
# GPUs, the aggregation tier 7:1) at each GPU count (default 2048 4096 8192 16384; a multiple
# of 2048), with the SimGrid backend (the default) and the analytic one: wall time, peak RSS,
# the ranks simulated (what the slice and the fold of alike ranks left) and the step. Also the
# platform's generation time and size. One line per run into
# bench/results/growth-<GPUs>.txt, with the machine's load when it ran. BACKENDS (default
# "simgrid analytic") names the backends to run, e.g. BACKENDS=analytic where SimGrid would not
# finish.
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
sizes=${*:-2048 4096 8192 16384}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "bench: $bin not found (meson compile -C $build first)" >&2; exit 1; }
mkdir -p bench/results
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for gpus in $sizes; do
    [ $((gpus % 2048)) -eq 0 ] || { echo "bench: $gpus is not a multiple of 2048" >&2; exit 2; }
    out=bench/results/growth-$gpus.txt
    : > "$out"
    nodes=$((gpus / 8)) dp=$((gpus / 2048))
    start=$(date +%s.%N)
    "$bin" topology --preset clos-h100 --nodes "$nodes" -o "$dir/p.xml"
    end=$(date +%s.%N)
    printf 'topology --preset clos-h100 --nodes %d: %.2f s wall, %d MiB\n' "$nodes" \
        "$(echo "$end - $start" | bc -l)" "$(($(wc -c < "$dir/p.xml") / 1048576))" | tee -a "$out"
    for backend in ${BACKENDS:-simgrid analytic}; do
        start=$(date +%s.%N)
        status=0
        /usr/bin/time -f '%M' -o "$dir/rss" "$bin" predict --topology "$dir/p.xml" \
            --model llama3-405b --dtype bf16 --attention flash --zero 3 --schedule interleaved \
            --virtual-stages 2 --micro-batch 1 --tp-mode 1d --tp 8 --sp --cp 16 --pp 16 \
            --dp "$dp" --seq 131072 --global-batch $((16 * dp)) --backend "$backend" \
            > "$dir/pred.txt" 2> "$dir/err.txt" || status=$?
        end=$(date +%s.%N)
        if [ "$status" -ne 0 ]; then # a refusal (e.g. the step's memory cap): its reason
            printf 'llama3-405b cp16 x %d GPUs, %s: refused after %.2f s (exit %d): %s\n' \
                "$gpus" "$backend" "$(echo "$end - $start" | bc -l)" "$status" \
                "$(grep -v '^Command exited' "$dir/err.txt" | head -n 1)" | tee -a "$out"
            continue
        fi
        step=$(awk -v g="$gpus" '$1 == "1d" { for (i = 2; i < NF; i++) if ($i == g) { print $(i + 1)
                                                                            exit } }' \
            "$dir/pred.txt")
        sim=$(grep -o 'step simulated on [^;]*' "$dir/pred.txt" | paste -sd, - | sed 's/,/, /g')
        printf 'llama3-405b cp16 x %d GPUs, %s: %.2f s wall, peak RSS %d MiB, step %s s (%s)\n' \
            "$gpus" "$backend" "$(echo "$end - $start" | bc -l)" \
            "$(($(tail -n 1 "$dir/rss") / 1024))" "$step" "${sim:-every rank}" | tee -a "$out"
    done
    printf '(%s, %d cores, load average %s at the end)\n' "$(uname -m)" "$(nproc)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
done
