#!/usr/bin/env bash
# bench/same-output.sh OLD_SIMPAR NEW_SIMPAR: the two binaries give the same bytes on the main
# job, every preset's platform, whole steps with pipeline and data parallelism, a sweep, a
# collective and a schedule (a refactoring must leave every prediction as it was). Each binary
# runs on the platforms it writes itself (simpar recognises a file it wrote byte for byte, so a
# change in the files' comments must not count). Prints one line per case and exits 1 on any
# difference.
set -uo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "${1:?usage: bench/same-output.sh OLD_SIMPAR NEW_SIMPAR}")
new=$(realpath "${2:?usage: bench/same-output.sh OLD_SIMPAR NEW_SIMPAR}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/old" "$work/new" # each binary runs in its own folder: same relative paths
for side in old new; do
  for p in v100-ac922:16:v100x64 dgx-a100:8:dgx-a100x64 dgx-h100:8:dgx-h100x64 dgx-2:4:dgx2x64 \
           dgx-a100:16:a100x128; do
    IFS=: read -r preset nodes name <<< "$p"
    "${!side}" topology --preset "$preset" --nodes "$nodes" -o "$work/$side/$name.xml"
  done
done
cases=(
  "--topology v100x64.xml --json"
  "--topology dgx-a100x64.xml --json"
  "--topology dgx-h100x64.xml --json --backend analytic"
  "--topology dgx2x64.xml --json --backend analytic"
  "--topology a100x128.xml --model gpt3-13b --tp-mode 1d --tp 8 --sp --pp 4 --dp 4 --schedule interleaved --micro-batch 1 --global-batch 64 --recompute selective --zero 1 --json"
  "--topology a100x128.xml --model gpt3-1.3b --tp-mode 3d --tp 8 --pp 2 --dp 8 --micro-batch 8 --global-batch 128 --json --backend formula"
  "--topology v100x64.xml --model paper-3d --heads 64 --tp-mode 2.5d --depth 4 --micro-batch 64 --recompute full --json --collectives exact"
  "collective --topology dgx-h100x64.xml --op allreduce --gpus 16 --min-bytes 1K --max-bytes 1G --json"
  "collective --topology v100x64.xml --op alltoall --gpus 64 --min-bytes 64K --max-bytes 64M --json --backend analytic"
  "schedule --tp-mode 3d --tp 8 --model gpt3-1.3b --json"
  "sweep --preset dgx-a100 --gpus 64..256 --tp-mode all --model gpt3-1.3b --quiet -o sweep.csv"
)
status=0
for i in "${!cases[@]}"; do
  args=${cases[$i]}
  for side in old new; do
    # shellcheck disable=SC2086
    (cd "$work/$side" && rm -f sweep.csv && "${!side}" $args > out.txt 2>&1)
  done
  same=yes
  cmp -s "$work/old/out.txt" "$work/new/out.txt" || same=no
  if [ -f "$work/old/sweep.csv" ] && ! cmp -s "$work/old/sweep.csv" "$work/new/sweep.csv"; then
    same=no
  fi
  [ "$same" = yes ] || status=1
  printf '%-4s %s\n' "$same" "simpar $args"
done
exit $status
