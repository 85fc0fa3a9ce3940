#!/usr/bin/env bash
# bench/fidelity/run.sh [BUILD_DIR]: holds simpar's collectives against public nccl-tests figures
# (bench/fidelity/nccl-tests.csv, each row with its source). For every row it writes the preset's
# platform for that many nodes (simpar topology), runs `simpar collective` with the default
# algorithm and protocol choice, and prints predicted against measured busbw and the error;
# then the mean absolute percentage error per preset over the rows of 1 MiB and up, overall and
# over the rows where NCCL ran NVLink SHARP (NVLS). A row measured with NVLS off runs simpar with
# --algo ring (the csv's simpar_algo).
# Writes bench/results/fidelity.txt (the table) and bench/results/fidelity.md (the same, in
# Markdown, for docs/fidelity.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
bin="$build/app/simpar"
[ -x "$bin" ] || { echo "fidelity: $bin not found (meson compile -C $build first)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p bench/results
rows="$work/rows"
: > "$rows"

grep -v '^#' bench/fidelity/nccl-tests.csv | tail -n +2 |
  while IFS=, read -r source preset nodes gpus op bytes measured algo simpar_algo; do
    platform="$work/$preset-$nodes.xml"
    [ -f "$platform" ] || "$bin" topology --preset "$preset" --nodes "$nodes" -o "$platform"
    json=$("$bin" collective --topology "$platform" --op "$op" --gpus "$gpus" --bytes "$bytes" \
      --algo "$simpar_algo" --backend analytic --json)
    busbw=$(printf '%s\n' "$json" | sed -n 's/.*"busbw_GBps" : \([0-9.e+-]*\).*/\1/p')
    ran=$(printf '%s\n' "$json" | sed -n 's/.*"algo" : "\([a-z]*\)".*/\1/p')
    proto=$(printf '%s\n' "$json" | sed -n 's/.*"proto" : "\([a-z0-9]*\)".*/\1/p')
    ran="$ran/$proto"
    echo "$source $preset $nodes $gpus $op $bytes $measured $algo $busbw $ran" >> "$rows"
  done

awk -v date="$(date -u +%Y-%m-%d)" '
function size(b) {
  return b >= 2^30 ? sprintf("%g GiB", b / 2^30) : b >= 2^20 ? sprintf("%g MiB", b / 2^20) \
                                                  : sprintf("%g KiB", b / 2^10)
}
{
  err = ($9 - $7) / $7
  n++
  line[n] = sprintf("%-6s %-9s %5d %4d %-13s %9s %10.2f %10.2f %+8.1f%%  %-5s %s", $1, $2, $3, $4,
                    $5, size($6), $7, $9, 100 * err, $8, $10)
  md[n] = sprintf("| %s | %s | %d | %d | %s | %s | %.2f | %.2f | %+.1f%% | %s | %s |", $1, $2, $3,
                  $4, $5, size($6), $7, $9, 100 * err, $8, $10)
  if ($6 >= 2^20) {
    all[$2] += (err < 0 ? -err : err); alln[$2]++
    if ($8 == "nvls") { nv[$2] += (err < 0 ? -err : err); nvn[$2]++ }
  }
}
END {
  out = "bench/results/fidelity.txt"; mdout = "bench/results/fidelity.md"
  printf "# %s: simpar collective (default algorithm and protocol, --backend analytic) against " \
         "public nccl-tests busbw (bench/fidelity/nccl-tests.csv)\n", date > out
  printf "%-6s %-9s %5s %4s %-13s %9s %10s %10s %9s  %-5s %s\n", "source", "preset", "nodes",
         "GPUs", "op", "size", "measured", "simpar", "error", "NCCL", "simpar algorithm" >> out
  print "| source | preset | nodes | GPUs | op | size | measured busbw (GB/s) | simpar | error | NCCL ran | simpar ran |" > mdout
  print "|---|---|---|---|---|---|---|---|---|---|---|" >> mdout
  for (i = 1; i <= n; i++) { print line[i] >> out; print md[i] >> mdout }
  print "" >> out; print "" >> mdout
  print "| preset | MAPE, 1 MiB and up | rows | MAPE of the NVLS rows | rows |" >> mdout
  print "|---|---|---|---|---|" >> mdout
  for (p in all) {
    r = nvn[p] > 0 ? sprintf("%.1f%%", 100 * nv[p] / nvn[p]) : "-"
    printf "MAPE %-9s 1 MiB and up: %.1f%% over %d rows; NVLS rows: %s over %d rows\n", p,
           100 * all[p] / alln[p], alln[p], r, nvn[p] >> out
    printf "| %s | %.1f%% | %d | %s | %d |\n", p, 100 * all[p] / alln[p], alln[p], r, nvn[p] >> mdout
  }
}' "$rows"
# GEMMs: XLA's measured H100 table as a simpar-bench file, fitted by simpar calibrate (the fit's
# residual is the error of the figures presets.ini ships for H100)
{
  printf '{"format": "simpar-bench", "version": 1, "executor": "cuda", "device": "H100", '
  printf '"dtype": "bf16", "gpus": 1, "kernels": [], "collectives": [], "gemm": ['
  grep -v '^#' bench/fidelity/gemm-h100-xla.csv | tail -n +2 |
    awk -F, '{ sep = NR > 1 ? ", " : ""
               printf "%s{\"m\": %d, \"n\": %d, \"k\": %d, \"time_s\": %.9g}", sep, $1, $2, $3,
                      2 * $1 * $2 * $3 / ($4 * 1e12) }'
  printf ']}\n'
} > "$work/gemm.json"
"$bin" topology --preset h100-sxm --nodes 1 -o "$work/h100.xml"
"$bin" calibrate --measured "$work/gemm.json" --topology "$work/h100.xml" -o "$work/gemm-fit.json" \
  > "$work/gemm-fit.txt"
gemm_rms=$(sed -n 's/^GEMM *\([0-9]*\) *\([0-9.]*%\).*/\2 over \1 shapes/p' "$work/gemm-fit.txt")
gemm_line="GEMM (XLA sm_90 bf16 table, bench/fidelity/gemm-h100-xla.csv): simpar calibrate fits gemm_eff_max, gemm_half_dim and launch_s with RMS relative error $gemm_rms"
printf '\n%s\n' "$gemm_line" >> bench/results/fidelity.txt
printf '\n%s\n' "$gemm_line" >> bench/results/fidelity.md

# GEMMs out of sample: each preset's own figures against the MAMF best shapes
grep -v '^#' bench/fidelity/gemm-mamf.csv | tail -n +2 | cut -d, -f1 | sort -u |
  while read -r preset; do
    {
      printf '{"format": "simpar-bench", "version": 1, "executor": "cuda", "device": "%s", ' "$preset"
      printf '"dtype": "bf16", "gpus": 1, "kernels": [], "collectives": [], "gemm": ['
      grep -v '^#' bench/fidelity/gemm-mamf.csv | tail -n +2 | awk -F, -v p="$preset" '
        $1 == p { printf "%s{\"m\": %d, \"n\": %d, \"k\": %d, \"time_s\": %.9g}", sep, $3, $4,
                         $5, 2 * $3 * $4 * $5 / ($6 * 1e12); sep = ", " }'
      printf ']}\n'
    } > "$work/mamf-$preset.json"
    "$bin" topology --preset "$preset" --nodes 1 -o "$work/mamf-$preset.xml"
    "$bin" calibrate --measured "$work/mamf-$preset.json" --topology "$work/mamf-$preset.xml" \
      -o "$work/mamf-$preset-fit.json" > "$work/mamf-$preset.txt"
    own=$(sed -n 's/^GEMM with --topology [^ ]*.s own figures (\(.*\)): rms \(.*\), largest \(.*\)$/\1; rms \2, largest \3/p' \
      "$work/mamf-$preset.txt")
    line="GEMM, $preset preset against MAMF best shapes (bench/fidelity/gemm-mamf.csv, out of sample): $own"
    printf '%s\n' "$line" >> bench/results/fidelity.txt
    printf '\n%s\n' "$line" >> bench/results/fidelity.md
  done

# docs/fidelity.md's table is the results file, between its markers
awk -v table=bench/results/fidelity.md '
  /^<!-- bench\/fidelity\/run.sh writes/ { print; while ((getline line < table) > 0) print line; skip = 1; next }
  /^<!-- end of table -->/ { skip = 0 }
  !skip' docs/fidelity.md > "$work/fidelity.md"
cp "$work/fidelity.md" docs/fidelity.md
cat bench/results/fidelity.txt
