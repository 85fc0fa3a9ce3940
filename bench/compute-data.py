#!/usr/bin/env python3
"""bench/compute-data.py: writes topologies/compute.ini, the measured compute figures simpar
compiles in, from the measurement files under bench/fidelity/ (each named below with its source).

    python3 bench/compute-data.py            # rewrites topologies/compute.ini

Kernel classes: the bandwidth a class of kernels reaches, as a fraction of the datasheet's, from
two sizes of one kernel (the slope between them: the launch floor drops out), counted in the
bytes simpar's model moves for that op (models/compute.c), so that the model reproduces the
measured time:
  stream      PyTorch add, 4096 and 16384 x 8192 bf16 (simpar ADD: 6 bytes per element)
  activation  PyTorch GELU, same sizes (4 bytes per element)
  dropout     PyTorch dropout, same sizes (5: the 1-byte mask simpar counts)
  norm        PyTorch layer norm, same sizes (6: x read, y and the normalised x written)
  softmax     PyTorch softmax over 128 x 2048 x 2048 (2 x 2 bytes per score; one size: the
              launch floor, 6.08 us, subtracted)
  optimizer   simpar-exec's Adam, 512 and 4096 x 8192 elements (28 bytes per parameter)
GEMMs (Hopper, bf16): XLA's measured sm_90 table (bench/fidelity/gemm-h100-xla.csv, an H100)
for shapes up to 4096, and the H200 bench (bench/fidelity/h200/bench-gemm.json) for the
transformer's shapes: every row less the bench's timing overhead (its smallest GEMM's time,
256^3 or 512^3, less the 6.08 us launch floor: 90.1 us; the same overhead the run's own
GEMMs do not have), 256^3 to 2048^3 left out (the overhead dominates them), and the rows whose
weight buffers the bench left zero (above 2^27 elements: the T = 1 qkv, fc1, fc2) left out:
Hopper GEMMs run faster on zeros.
GEMMs (V100, fp16 and fp32): Baidu DeepBench's V100 training results
(bench/fidelity/gemm-v100-deepbench.csv, a DGX-1's V100 SXM2, cuBLAS of CUDA 10.1, random
inputs), each row turned from cuBLAS's column-major shape to the row-major one simpar's GEMMs are
(m and n swapped, and the transposes), its time the truncated microsecond's midpoint (+0.5 us),
and the fp16 rows DeepBench ran padded to a multiple of 8 left out.
"""
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FID = os.path.join(ROOT, "bench", "fidelity")
H200_BW = 4.8e12
LAUNCH = 6.08e-6  # topologies/presets.ini launch_s of Hopper presets
FILL_MAX = 2 ** 27  # simpar-exec's bench at b5da60d left larger buffers zero


def torch_rows():
    rows = {}
    with open(os.path.join(FID, "h200", "torch-elementwise.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            key = r["op"]
            rows.setdefault(key, []).append(r)
    return rows


def slope_eff(points):
    """points: [(bytes, seconds)] of two sizes -> fraction of the H200's datasheet bandwidth."""
    (b0, t0), (b1, t1) = sorted(points)
    return (b1 - b0) / (t1 - t0) / H200_BW


def kernel_effs():
    t = torch_rows()

    def two(op, per_elem):
        return slope_eff([(r["rows"] * r["cols"] * per_elem, r["time_s"]) for r in t[op]])

    sm = t["softmax"][0]
    scores = sm["shape"][0] * sm["shape"][1] * sm["shape"][2]
    bench = json.load(open(os.path.join(FID, "h200", "bench-kernels.json")))
    adam = [(k["bytes"], k["time_s"]) for k in bench["kernels"]
            if k["kind"] == "adam" and k["rows"] in (512, 4096)]
    return {
        "stream": two("add", 6),
        "activation": two("gelu", 4),
        "dropout": two("dropout", 5),
        "norm": two("layer_norm", 6),
        "softmax": 2 * 2 * scores / (sm["time_s"] - LAUNCH) / H200_BW,
        "optimizer": slope_eff(adam),
    }


def xla_rows():
    out = []
    with open(os.path.join(FID, "gemm-h100-xla.csv")) as f:
        for line in f:
            if line.startswith("#") or line.startswith("m,"):
                continue
            m, n, k, tflops = line.strip().split(",")
            m, n, k = int(m), int(n), int(k)
            out.append((m, n, k, 1, "NN", 2.0 * m * n * k / (float(tflops) * 1e12)))
    return out


def h200_rows():
    d = json.load(open(os.path.join(FID, "h200", "bench-gemm.json")))
    rows = d["gemm"]
    overhead = min(r["time_s"] for r in rows) - LAUNCH
    out = []
    for r in rows:
        m, n, k = r["m"], r["n"], r["k"]
        if m * n * k <= 2048 ** 3 or max(m * k, k * n, m * n) > FILL_MAX:
            continue
        ops = ("T" if r["trans_a"] else "N") + ("T" if r["trans_b"] else "N")
        out.append((m, n, k, 1, ops, r["time_s"] - overhead))
    return out, overhead


def b200_rows():
    """XLA's sm_100 rows: (bf16 rows, fp8 rows), each (m, n, k, 1, "NN", seconds)."""
    bf16, fp8 = [], []
    with open(os.path.join(FID, "gemm-b200-xla.csv")) as f:
        for line in f:
            if line.startswith("#") or line.startswith("m,"):
                continue
            m, n, k, tb, t8 = line.strip().split(",")
            m, n, k = int(m), int(n), int(k)
            flops = 2.0 * m * n * k
            bf16.append((m, n, k, 1, "NN", flops / (float(tb) * 1e12)))
            fp8.append((m, n, k, 1, "NN", flops / (float(t8) * 1e12)))
    return bf16, fp8


def deepbench_rows():
    """DeepBench's V100 rows: {dtype: [(m, n, k, 1, ops, seconds)]}, row-major (simpar's m is
    cuBLAS's n, simpar's op(a) cuBLAS's op(B)), without the padded rows."""
    out = {"fp16": [], "fp32": []}
    with open(os.path.join(FID, "gemm-v100-deepbench.csv")) as f:
        for line in f:
            if line.startswith("#") or line.startswith("dtype,"):
                continue
            dtype, m, n, k, a_t, b_t, us, pad = line.strip().split(",")
            if pad == "1":
                continue
            out[dtype].append((int(n), int(m), int(k), 1, b_t + a_t, (float(us) + 0.5) * 1e-6))
    return out


def mamf_fp8():
    """The FP8 MAMF rows: {gpu_model: flop/s at the best shape}."""
    out = {}
    with open(os.path.join(FID, "gemm-mamf-fp8.csv")) as f:
        for line in f:
            if line.startswith("#") or line.startswith("gpu_model,"):
                continue
            model, _, m, n, k, tflops = line.strip().split(",")
            out[model] = float(tflops) * 1e12
    return out


def gemm_list(rows):
    return ";".join("%d %d %d %d %s %.6g" % r for r in rows)


def main():
    effs = kernel_effs()
    h200, overhead = h200_rows()
    xla = xla_rows()
    b200_bf16, b200_fp8 = b200_rows()
    v100 = deepbench_rows()
    fp8_max = mamf_fp8()
    keff = "\n".join("kernel_eff_%s = %.4f" % (k, v) for k, v in effs.items())
    head = """# compute.ini - the measured compute figures of each GPU model, compiled into simpar
# (topologies/meson.build) and read by models/compute-data.c. Written by bench/compute-data.py
# from the files under bench/fidelity/ (regenerate, do not edit); one group per gpu_model of
# topologies/presets.ini. kernel_eff_<class>: the fraction of the datasheet bandwidth that a class
# of kernels reaches; gemm_<dtype>: measured GEMMs, "m n k batch op(a)op(b) seconds".
#
# Sources: PyTorch 2.11 eager kernels and simpar-exec's Adam, measured on an H200 with
# simpar-exec at b5da60d (bench/fidelity/h200/torch-elementwise.jsonl, bench-kernels.json);
# XLA's measured sm_90 GEMM table (openxla/xla matmul_interpolator_data.h, an H100;
# bench/fidelity/gemm-h100-xla.csv); the H200 GEMM bench (bench/fidelity/h200/bench-gemm.json)
# less its timing overhead of %.1f us per GEMM, without the rows run on zero-filled buffers;
# XLA's measured sm_100 (Blackwell) bf16 and FP8 table (openxla/xla
# xla/backends/gpu/cost_model/matmul_interpolator_data.h; bench/fidelity/gemm-b200-xla.csv);
# Baidu DeepBench's V100 fp16 (tensor core) and fp32 GEMMs, measured on a DGX-1's V100 SXM2 with
# CUDA 10.1 (baidu-research/DeepBench da81ba7 results/train/DeepBench_NV_V100.xlsx;
# bench/fidelity/gemm-v100-deepbench.csv), row-major, less the rows it ran padded; the FP8
# maximum achievable matmul FLOPS of an H100, an H200, a B200 and a GB200 (stas00/ml-engineering
# compute/accelerator/README.md, snapshot 2026-08-22; bench/fidelity/gemm-mamf-fp8.csv):
# gemm_fp8_max_flops, the most an FP8 GEMM of that GPU runs at any shape (the curve's ceiling).
# GPUs other than the H200 take the H200's kernel fractions: extrapolated, and said so.
# gemm_fp8: FP8 GEMMs (E4M3 inputs, bf16 out) of an FP8 recipe's linears. mxfp8: the GPU has
# block-scaled (1 x 32, E8M0 scales) FP8 tensor cores, which the mxfp8 recipe needs: Blackwell's
# fifth-generation tensor cores (NVIDIA Blackwell architecture technical brief: MXFP8, MXFP6,
# MXFP4 microscaling formats; Transformer Engine's MXFP8BlockScaling recipe requires compute
# capability 10.0 and later). fp8_any_layout: the GPU's FP8 GEMMs take every operand layout, so a
# per-tensor FP8 tensor is one copy without its transpose (Transformer Engine's
# nvte_is_non_tn_fp8_gemm_supported, transformer_engine/common/transformer_engine.cpp at
# d0067d0d: compute capability 10.0 to 11.x and 13.0 on, Blackwell; Hopper takes only TN). sms:
# the GPU's streaming multiprocessors, from NVIDIA's architecture
# whitepapers: H100 SXM5 132 (NVIDIA H100 Tensor Core GPU Architecture, v1.01, "the H100 SXM5
# has 132 SMs"), the H200 the same GH100 configuration (its datasheet's compute peaks are the
# H100 SXM's), A100 108 (NVIDIA A100 Tensor Core GPU Architecture, "108 SMs"), V100 80 (NVIDIA
# Tesla V100 GPU Architecture, "80 SMs"); Blackwell's are not given (a GEMM beside
# communication kernels is timed there as if it had every SM).
""" % (overhead * 1e6)
    groups = [
        ("H200-SXM-141GB",
         "kernels measured on an H200 (PyTorch 2.11; simpar-exec's Adam); GEMMs measured on an "
         "H200 (simpar-exec) and, below 4096, on an H100 (XLA's table); FP8: the curve "
         "under the measured best (MAMF)",
         xla + h200),
        ("H100-SXM5-80GB",
         "kernels: the H200's measured fractions of its bandwidth (extrapolated); GEMMs measured "
         "on an H100 (XLA's table) and, for the large shapes, on an H200 (same SMs and clocks); FP8: "
         "the curve under the measured best (MAMF)",
         xla + h200),
        ("A100-SXM4-80GB",
         "kernels: the H200's measured fractions of its bandwidth (extrapolated); GEMMs: the "
         "shape curve (no measured table)", []),
    ]
    volta = [
        ("V100-SXM2-16GB",
         "kernels: the H200's measured fractions of its bandwidth (extrapolated); GEMMs measured "
         "on a V100 SXM2 (DeepBench, a DGX-1, CUDA 10.1; fp16 tensor core and fp32)"),
        ("V100-SXM3-32GB",
         "kernels: the H200's measured fractions of its bandwidth (extrapolated); GEMMs measured "
         "on a V100 SXM2 (DeepBench, a DGX-1, CUDA 10.1; fp16 tensor core and fp32), applied to "
         "the SXM3 unscaled (extrapolated: the preset's peaks are the SXM2's)"),
    ]
    blackwell = [
        ("B200-SXM-180GB",
         "kernels: the H200's measured fractions of its bandwidth (extrapolated); GEMMs: XLA's "
         "measured sm_100 table, bf16 and FP8 (Blackwell; bench/fidelity/gemm-b200-xla.csv); FP8: "
         "under the measured best (MAMF)"),
        ("GB200-B200-186GB",
         "kernels: the H200's measured fractions of its bandwidth (extrapolated); GEMMs: XLA's "
         "measured sm_100 table, bf16 and FP8 (Blackwell, not stated whether a B200 or a GB200: "
         "the GB200's 1200 W clocks may run faster; bench/fidelity/gemm-b200-xla.csv); FP8: under "
         "the GB200's measured best (MAMF)"),
        ("GB300-B300-279GB",
         "kernels: the H200's measured fractions of its bandwidth (extrapolated); GEMMs: XLA's "
         "measured sm_100 table, bf16 and FP8 (a B200-class table for a Blackwell Ultra GPU: "
         "extrapolated; bench/fidelity/gemm-b200-xla.csv); FP8: under the GB200's measured best "
         "(MAMF; no GB300 measurement published, the GB200 has the same 5 PFLOP/s FP8 peak)"),
    ]
    # a GPU without a published FP8 MAMF takes the one of the GPU named here (its summary says so)
    fp8_max_of = {"GB300-B300-279GB": "GB200-B200-186GB"}
    sms = {"H200-SXM-141GB": 132, "H100-SXM5-80GB": 132, "A100-SXM4-80GB": 108,
           "V100-SXM2-16GB": 80, "V100-SXM3-32GB": 80}
    out = [head]
    for name, summary, rows in groups:
        out.append("[%s]\nsummary = %s\n%s\nsms = %d\n" % (name, summary, keff, sms[name]))
        if rows:
            out.append("gemm_bf16 = %s\ngemm_fp16 = %s\n" % (gemm_list(rows), gemm_list(rows)))
        if name in fp8_max:
            out.append("gemm_fp8_max_flops = %.5g\n" % fp8_max[name])
        out.append("\n")
    for name, summary in volta:
        out.append("[%s]\nsummary = %s\n%s\nsms = %d\n" % (name, summary, keff, sms[name]))
        out.append("gemm_fp16 = %s\ngemm_fp32 = %s\n\n"
                   % (gemm_list(v100["fp16"]), gemm_list(v100["fp32"])))
    for name, summary in blackwell:
        out.append("[%s]\nsummary = %s\n%s\nmxfp8 = true\nfp8_any_layout = true\n"
                   % (name, summary, keff))
        out.append("gemm_bf16 = %s\ngemm_fp16 = %s\ngemm_fp8 = %s\n"
                   % (gemm_list(b200_bf16), gemm_list(b200_bf16), gemm_list(b200_fp8)))
        measured = fp8_max_of.get(name, name)
        if measured in fp8_max:
            out.append("gemm_fp8_max_flops = %.5g\n" % fp8_max[measured])
        out.append("\n")
    with open(os.path.join(ROOT, "topologies", "compute.ini"), "w") as f:
        f.write("".join(out).rstrip("\n") + "\n")


if __name__ == "__main__":
    main()
