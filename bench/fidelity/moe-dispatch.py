#!/usr/bin/env python3
"""bench/fidelity/moe-dispatch.py [BUILD_DIR]: holds simpar's DeepEP hops (--moe-dispatcher deepep)
against the public dispatch and combine measurements of bench/fidelity/moe-dispatch.csv.

For every row with a preset, the benchmark's job is one MoE layer of `hidden` with `experts`
routed experts (their FFN width is irrelevant to the hops), top-`topk`, `tokens` tokens per GPU
(--seq tokens, --micro-batch 1), expert parallelism `ep` over `nodes` nodes of the preset (racks
of 36 GPUs for gb200-nvl72, of which the first `ep`), bf16, on the formula backend. From a Chrome trace of rank 0 it reads the forward's dispatch (the rail
all-to-all, the NVLink forwarding copy, the NVLink all-to-all) and combine (the same three in
reverse); the measured time is the benchmark's bytes over its algbw, the bytes as the benchmarks
count them: over nodes, tokens x the expected number of distinct nodes a token's top-k experts,
drawn uniformly without replacement, sit on (nodes x (1 - C(E - E/nodes, k) / C(E, k))) x
hidden x 2; in one NVLink domain, the rows rank 0 receives (ep x tokens x (1 - C(E - E/ep, k) /
C(E, k))) x hidden x 2.
Prints, per row, measured and predicted time and algbw and the error, and writes the table to
bench/results/moe-dispatch.txt. `--only EP` keeps the rows of one expert-parallel size.
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DISPATCH = ("moe.all-to-all-dispatch-rail", "moe.forward", "moe.all-to-all-dispatch-node")
COMBINE = ("moe.all-to-all-combine-node", "moe.forward", "moe.all-to-all-combine-rail")


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def one_domain(r):
    """Whether the row's GPUs share one NVLink domain (a rack of gb200-nvl72, one node else)."""
    return r["preset"] == "gb200-nvl72" or int(r["ep"]) <= 8


def logical_bytes(r):
    """The benchmarks' byte count for rank 0 (tests/test_hybrid_ep.py, tests/legacy/test_internode.py):
    over nodes, tokens x the distinct nodes a token's choices sit on; in one NVLink domain, the
    rows rank 0 receives (every rank's tokens with a choice on it)."""
    t, h, k, e, ep = (int(r[x]) for x in ("tokens", "hidden", "topk", "experts", "ep"))
    if one_domain(r):
        miss = math.comb(e - e // ep, k) / math.comb(e, k)  # no choice on rank 0
        return ep * t * (1 - miss) * h * 2
    n = int(r["nodes"])
    miss = math.comb(e - e // n, k) / math.comb(e, k)  # no choice on a given node
    return t * n * (1 - miss) * h * 2


def predict(simpar, work, r):
    """Forward dispatch and combine seconds of rank 0 on the row's job."""
    plat = os.path.join(work, f"{r['preset']}-{r['nodes']}.xml")
    size = (["--racks", r["nodes"], "--rack-gpus", "36"] if r["preset"] == "gb200-nvl72"
            else ["--nodes", r["nodes"]])
    if not os.path.exists(plat):
        subprocess.run([simpar, "topology", "--preset", r["preset"], *size, "-o", plat],
                       check=True, stdout=subprocess.DEVNULL)
    trace = os.path.join(work, "trace.json")
    h = int(r["hidden"])
    subprocess.run([simpar, "predict", "--topology", plat, "--gpus", r["ep"], "--backend", "formula",
                    "--tp-mode", "1d", "--tp", "1", "--ep", r["ep"], "--layers", "1",
                    "--hidden", str(h), "--heads", str(h // 128), "--ffn", str(4 * h),
                    "--moe-ffn", "2048", "--experts", r["experts"], "--topk", r["topk"],
                    "--vocab", "1024", "--seq", r["tokens"], "--micro-batch", "1",
                    "--global-batch", r["ep"], "--dtype", "bf16", "--attention", "flash",
                    "--moe-dispatcher", "deepep", "--trace", trace, "--trace-ranks", "0"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(trace) as f:
        ops = [e for e in json.load(f)["traceEvents"]
               if e.get("ph") == "X" and e["name"].startswith("fwd.moe.")]
    names = [e["name"][len("fwd."):] for e in ops]

    def span(seq):  # the first run of the three ops in order, microseconds
        for i in range(len(names) - 2):
            if tuple(names[i:i + 3]) == seq:
                return sum(e["dur"] for e in ops[i:i + 3]) * 1e-6
        sys.exit(f"moe-dispatch: no {' '.join(seq)} in the trace of {r}")
    return span(DISPATCH), span(COMBINE)


def compare(simpar, only=None, preset=None):
    """[(row, measured s, predicted s, predicted algbw GB/s)] for the rows with a preset (of
    expert-parallel size `only` and that preset if given), each job predicted once."""
    table = [r for r in rows(os.path.join(HERE, "moe-dispatch.csv"))
             if r["preset"] and (only is None or r["ep"] == only)
             and (preset is None or r["preset"] == preset)]
    cache, out = {}, []
    with tempfile.TemporaryDirectory() as work:
        for r in table:
            key = tuple(r[x] for x in ("preset", "nodes", "ep", "tokens", "hidden", "topk", "experts"))
            if key not in cache:
                cache[key] = predict(simpar, work, r)
            t = cache[key][0 if r["op"] == "dispatch" else 1]
            b = logical_bytes(r)
            measured = b / (float(r["algbw_GBps"]) * 1e9)
            out.append((r, measured, t, b / t / 1e9))
    return out


def main():
    args = sys.argv[1:]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only, args = args[i + 1], args[:i] + args[i + 2:]
    build = args[0] if args else "build"
    simpar = os.path.join(build, "app", "simpar")
    if not os.access(simpar, os.X_OK):
        sys.exit(f"moe-dispatch: {simpar} not found (meson compile -C {build} first)")
    out = compare(simpar, only)
    head = ("source         preset   nodes  EP  hidden SMs measure op        measured us "
            "predicted us  algbw GB/s (measured, predicted)   error")
    lines = [head]
    for r, m, t, bw in out:
        lines.append(f"{r['source']:<14} {r['preset']:<8} {r['nodes']:>5} {r['ep']:>3} "
                     f"{r['hidden']:>7} {r['sms']:>3} {r['measure']:<7} {r['op']:<9} "
                     f"{m * 1e6:11.1f} {t * 1e6:12.1f}  {float(r['algbw_GBps']):8.2f} {bw:8.2f}"
                     f"{'':17}{100 * (t / m - 1):+6.1f}%")
    errs = [abs(t / m - 1) for _, m, t, _ in out]
    if errs:
        lines.append(f"mean absolute error {100 * sum(errs) / len(errs):.1f}% over {len(errs)} rows "
                     "(error = predicted / measured time - 1; positive: simpar is slower)")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if only is None:
        os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "results", "moe-dispatch.txt"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
