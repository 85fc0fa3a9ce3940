#!/usr/bin/env python3
"""bench/fidelity/deepbench-v100.py XLSX: writes bench/fidelity/gemm-v100-deepbench.csv, the dense
GEMM rows of Baidu DeepBench's V100 training results, from the workbook

    git -C DeepBench show da81ba7:results/train/DeepBench_NV_V100.xlsx > V100.xlsx
    python3 bench/fidelity/deepbench-v100.py V100.xlsx

An .xlsx is a zip of XML: the sheets' cells, strings indexed into xl/sharedStrings.xml. The
"Dense Matrix Multiplication" block of each results sheet (columns M, N, K, A Transpose,
B Transpose, Time (msec)) is read; every row is written as DeepBench gave it (cuBLAS's
column-major M, N, K and transposes), with whether DeepBench padded it (see the csv's header).
"""
import os
import re
import sys
import xml.etree.ElementTree as ET
import zipfile

NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
SHEETS = [("fp16", "Results - FP16 ip, Mixed math"), ("fp32", "Results FP32")]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gemm-v100-deepbench.csv")


def cells(z, strings, path):
    rows = []
    for row in ET.fromstring(z.read(path)).iter(NS + "row"):
        out = {}
        for c in row.findall(NS + "c"):
            v = c.find(NS + "v")
            if v is None:
                continue
            col = re.match(r"[A-Z]+", c.get("r")).group(0)
            out[col] = strings[int(v.text)] if c.get("t") == "s" else v.text
        rows.append(out)
    return rows


def sheet_paths(z):
    """Sheet name -> its part in the zip, through the workbook's relationships."""
    rels = {r.get("Id"): r.get("Target") for r in
            ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))}
    rid = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
    return {s.get("name"): "xl/" + rels[s.get(rid)].lstrip("/").replace("xl/", "")
            for s in ET.fromstring(z.read("xl/workbook.xml")).iter(NS + "sheet")}


def padded(m, n, k, ta, tb):
    """DeepBench's gemm_bench.cu (PAD_KERNELS 1) rounds a half-precision GEMM's sizes up to a
    multiple of 8 for the tensor cores: M and K when B is not transposed, M and N when only B
    is, all three when both are."""
    if not tb:
        dims = (m, k)
    elif not ta:
        dims = (m, n)
    else:
        dims = (m, n, k)
    return any(d % 8 for d in dims)


def main():
    z = zipfile.ZipFile(sys.argv[1])
    strings = ["".join(t.text or "" for t in si.iter(NS + "t"))
               for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall(NS + "si")]
    paths = sheet_paths(z)
    out = []
    for dtype, name in SHEETS:
        inside = False
        for r in cells(z, strings, paths[name]):
            if r.get("A") == "Dense Matrix Multiplication":
                inside = True
                continue
            if r.get("A") not in (None, ""):
                inside = False
            if not inside or not all(r.get(c, "").isdigit() for c in "CDE"):
                continue
            m, n, k = int(r["C"]), int(r["D"]), int(r["E"])
            ta, tb = r["F"] == "T", r["G"] == "T"
            us = float(r["I"]) * 1e3
            pad = dtype == "fp16" and padded(m, n, k, ta, tb)
            out.append("%s,%d,%d,%d,%s,%s,%.0f,%d" % (dtype, m, n, k, r["F"], r["G"], us, pad))
    with open(OUT) as f:
        head = [line for line in f if line.startswith("#")]
    with open(OUT, "w") as f:
        f.write("".join(head))
        f.write("dtype,m,n,k,a_t,b_t,time_us,padded\n")
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
