#!/usr/bin/env bash
# bench/fidelity/run.sh [BUILD_DIR]: holds simpar's collectives against public nccl-tests figures
# (bench/fidelity/nccl-tests.csv, each row with its source). For every row it writes the preset's
# platform for that many nodes (simpar topology), runs `simpar collective` with the default
# algorithm and protocol choice, and prints predicted against measured busbw and the error;
# then the mean absolute percentage error per preset over the rows of 1 MiB and up, overall and
# over the rows where NCCL ran NVLink SHARP (NVLS). A row measured with NVLS off runs simpar with
# --algo ring (the csv's simpar_algo); a row with topology_options (an all-to-all row's stand-in
# platform, e.g. --nic-gbps) passes them to simpar topology.
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
  while IFS=, read -r source preset nodes gpus op bytes measured algo simpar_algo options; do
    platform="$work/$preset-$nodes${options// /}.xml"
    count=--nodes
    [ "$preset" = gb200-nvl72 ] && count=--racks
    # shellcheck disable=SC2086 # the row's topology options, word by word
    [ -f "$platform" ] || "$bin" topology --preset "$preset" "$count" "$nodes" -o "$platform" \
      $options
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
# ---- compute: every shipped measurement held against the preset's compute model
# (simpar calibrate --topology prints and records the preset's error on a bench's rows; the
# H200 step against simpar validate, with the preset and with its own bench's calibration)
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split('.'): d=d[k]
print(d)" "$@"; }
pct() { awk -v x="$1" 'BEGIN { printf "%.1f%%", 100 * x }'; }
bench_gemm_csv() { # CSV of m,n,k,tflops (or preset,gpu,m,n,k,tflops with $2 = the preset)
  printf '{"format": "simpar-bench", "version": 1, "executor": "cuda", "device": "table", '
  printf '"dtype": "bf16", "gpus": 0, "inputs": "random", "kernels": [], "collectives": [], '
  printf '"gemm": ['
  grep -v '^#' "$1" | tail -n +2 | awk -F, -v p="${2:-}" '
    p == "" || $1 == p { o = p == "" ? 0 : 2
      printf "%s{\"m\": %d, \"n\": %d, \"k\": %d, \"time_s\": %.9g}", sep, $(o+1), $(o+2),
             $(o+3), 2 * $(o+1) * $(o+2) * $(o+3) / ($(o+4) * 1e12); sep = ", " }'
  printf ']}\n'
}
bench_deepbench() { # DTYPE: DeepBench's V100 rows of that dtype as a bench, as compute-data.py
  # takes them (row-major: m and n swapped, and the transposes; +0.5 us, the midpoint of the
  # truncated microsecond; the padded fp16 rows left out)
  python3 - "$1" <<'PY'
import json, sys
rows = []
for line in open("bench/fidelity/gemm-v100-deepbench.csv"):
    if line.startswith("#") or line.startswith("dtype,"):
        continue
    dtype, m, n, k, a_t, b_t, us, pad = line.strip().split(",")
    if dtype == sys.argv[1] and pad == "0":
        rows.append({"m": int(n), "n": int(m), "k": int(k), "trans_a": b_t == "T",
                     "trans_b": a_t == "T", "time_s": (float(us) + 0.5) * 1e-6})
print(json.dumps({"format": "simpar-bench", "version": 1, "executor": "cuda", "device": "table",
                  "dtype": sys.argv[1], "gpus": 0, "inputs": "random", "kernels": [],
                  "collectives": [], "gemm": rows}))
PY
}
gemm_row() { # BENCH PRESET WHAT: one line of the GEMM table
  "$bin" topology --preset "$2" --nodes 1 -o "$work/$2.xml"
  "$bin" calibrate --measured "$1" --topology "$work/$2.xml" -o "$work/fit.json" > /dev/null
  loo="- | -"
  if [ "$(json "$work/fit.json" fit.gemm.points)" -gt 1 ]; then
    loo="$(pct "$(json "$work/fit.json" fit.gemm_leave_one_out.median_rel_error)") | $(pct \
      "$(json "$work/fit.json" fit.gemm_leave_one_out.max_rel_error)")"
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$3" "$2" \
    "$(json "$work/fit.json" fit.gemm.points)" \
    "$(pct "$(json "$work/fit.json" fit.gemm.preset_median_rel_error)")" \
    "$(pct "$(json "$work/fit.json" fit.gemm.preset_max_rel_error)")" \
    "$(pct "$(json "$work/fit.json" fit.gemm.preset_rms_rel_error)")" "$loo"
}
compute=bench/results/compute-fidelity.md
{
  printf '## Compute\n\nGEMMs: the preset (its shape curve and measured table) against each '
  printf 'measured table, relative error in time. "In sample": the preset ships the table. '
  printf '"Leave one out": each shape predicted from the table less that shape (on the '
  printf 'preset'"'"'s shape curve): how well a table interpolates shapes it lacks.\n\n'
  printf '| table | preset | shapes | median | largest | rms | leave one out: median | largest |\n'
  printf '|---|---|---|---|---|---|---|---|\n'
  bench_gemm_csv bench/fidelity/gemm-h100-xla.csv > "$work/xla.json"
  gemm_row "$work/xla.json" h100-sxm "XLA sm_90 bf16 (in sample)"
  gemm_row "$work/xla.json" h200-sxm "XLA sm_90 bf16 (in sample; an H100's)"
  gemm_row bench/fidelity/h200/bench-gemm.json h200-sxm \
    "simpar-exec on an H200, less its 90 us timer (in sample from 4096^3; the 4 squares measured in under twice the timer left out)"
  for dtype in fp16 fp32; do
    bench_deepbench "$dtype" > "$work/deepbench.json"
    left=""
    [ "$dtype" = fp16 ] && left="; the 30 rows it ran padded to a multiple of 8 left out"
    gemm_row "$work/deepbench.json" v100-ac922 \
      "DeepBench $dtype on a DGX-1's V100 SXM2 (in sample$left)"
    gemm_row "$work/deepbench.json" dgx-2 \
      "DeepBench $dtype on a DGX-1's V100 SXM2 (in sample$left; an SXM2's, on the SXM3)"
  done
  for preset in $(grep -v '^#' bench/fidelity/gemm-mamf.csv | tail -n +2 | cut -d, -f1 | sort -u); do
    bench_gemm_csv bench/fidelity/gemm-mamf.csv "$preset" > "$work/mamf.json"
    gemm_row "$work/mamf.json" "$preset" "MAMF best shapes (out of sample)"
  done
  # PyTorch's own kernels on an H200, in the bytes simpar's model moves for each op
  printf '\nKernels: the preset (h200-sxm; measured fractions of the datasheet bandwidth) '
  printf 'against PyTorch 2.11 on an H200 (bench/fidelity/h200/torch-elementwise.jsonl) and '
  printf 'against simpar-exec'"'"'s own kernels (bench-kernels.json, each row less the bench'"'"'s '
  printf 'timer), and what simpar calibrate makes of the latter: rms relative error in time, and '
  printf 'the error in the rows'"'"' summed time (attention: the unfused attention'"'"'s rows, its '
  printf 'pass over the scores fitted less its GEMMs).\n\n'
  python3 - "$work/torch.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open("bench/fidelity/h200/torch-elementwise.jsonl")]
per_elem = {"add": ("add", 6), "gelu": ("gelu", 4), "dropout": ("dropout", 5),
            "layer_norm": ("ln_apply", 6)}  # simpar's bytes; layer norm fused stats + apply
k = [{"kind": per_elem[r["op"]][0], "bytes": r["rows"] * r["cols"] * per_elem[r["op"]][1],
      "time_s": r["time_s"]} for r in rows if r["op"] in per_elem]
json.dump({"format": "simpar-bench", "version": 1, "executor": "cuda", "device": "H200 torch",
           "dtype": "bf16", "gpus": 0, "gemm": [], "kernels": k, "collectives": []},
          open(sys.argv[1], "w"))
PY
  "$bin" topology --preset h200-sxm --nodes 1 -o "$work/h200.xml"
  "$bin" calibrate --measured "$work/torch.json" --topology "$work/h200.xml" -o "$work/t.json" \
    > /dev/null
  "$bin" calibrate --measured bench/fidelity/h200/bench-kernels.json --topology "$work/h200.xml" \
    -o "$work/k.json" > /dev/null
  printf '| kind | PyTorch rows | preset | simpar-exec rows | preset | calibrated | preset, summed | calibrated, summed |\n'
  printf '|---|---|---|---|---|---|---|---|\n'
  python3 - "$work/t.json" "$work/k.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["fit"]["kernel_kinds"]
k = json.load(open(sys.argv[2]))["fit"]["kernel_kinds"]
name = {"ln-apply": "ln-apply (PyTorch: layer norm)"}
for kind in sorted(set(t) | set(k)):
    a, b = t.get(kind), k.get(kind)
    f = lambda x: "-" if x is None else "%.1f%%" % (100 * x)
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
          name.get(kind, kind), a["points"] if a else "-",
          f(a and a["preset_rms_rel_error"]), b["points"] if b else "-",
          f(b and b["preset_rms_rel_error"]), f(b and b["rms_rel_error"]),
          f(b and b.get("preset_time_rel_error")), f(b and b.get("time_rel_error"))))
PY
  # the step simpar-exec timed on an H200, predicted with the preset and calibrated
  printf '\nThe step simpar-exec timed on an H200 (h 8192, one layer, micro-batch 2, 67.4 ms; '
  printf 'bench/fidelity/h200/run-step-h8192-l1-b2.json): busy time per class, error of the '
  printf 'prediction; calibrated from bench-all.json with simpar calibrate --topology '
  printf 'topologies/h200x1.xml. The run'"'"'s dropouts ran at p = 0.\n\n'
  "$bin" calibrate --measured bench/fidelity/h200/bench-all.json --topology topologies/h200x1.xml \
    -o "$work/all.json" > /dev/null
  run=bench/fidelity/h200/run-step-h8192-l1-b2.json
  "$bin" validate --measured "$run" --topology topologies/h200x1.xml --json > "$work/v0.json"
  "$bin" validate --measured "$run" --topology topologies/h200x1.xml --json \
    --calibration "$work/all.json" > "$work/v1.json"
  python3 - "$work/v0.json" "$work/v1.json" <<'PY'
import json, sys
v0, v1 = (json.load(open(p)) for p in sys.argv[1:3])
c1 = {c["class"]: c for c in v1["classes"]}
print("| class | measured ms | preset | calibrated |\n|---|---|---|---|")
for c in v0["classes"]:
    if c["measured_s"] >= 0.01 * v0["measured"]["step_time_s"]:
        print("| %s | %.2f | %+.1f%% | %+.1f%% |" % (c["class"], 1e3 * c["measured_s"],
              100 * c["error"], 100 * c1[c["class"]]["error"]))
print("| step | %.2f | %+.1f%% | %+.1f%% |" % (1e3 * v0["measured"]["step_time_s"],
      100 * v0["step_error"], 100 * v1["step_error"]))
PY
} > "$compute"
printf '\n' >> bench/results/fidelity.md
cat "$compute" >> bench/results/fidelity.md
cat "$compute" >> bench/results/fidelity.txt

# docs/fidelity.md's tables are the results files, between their marks (bench/readme-figures.py)
python3 bench/readme-figures.py
cat bench/results/fidelity.txt
