#!/usr/bin/env python3
"""check-schemas.py - every JSON output of simpar against its schema in docs/schemas/, and the
sweep CSV read by Python's csv module as it is (no comment handling).

Runs the binaries named by SIMPAR_BIN and SIMPAR_EXEC_BIN from the source root (meson sets
both); exits 77 (meson: SKIP) when the jsonschema module (Debian: python3-jsonschema) is
missing, 1 on the first output that does not validate.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (bash .ci/deps installs it)")
    sys.exit(77)

SIMPAR = os.environ["SIMPAR_BIN"]
EXEC = os.environ["SIMPAR_EXEC_BIN"]


def schema(name):
    with open(os.path.join("docs", "schemas", name + ".json")) as f:
        s = json.load(f)
    jsonschema.Draft7Validator.check_schema(s)
    return s


def run(*args, binary=SIMPAR):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: %s %s -> %d: %s" % (binary, " ".join(args), r.returncode, r.stderr))
    return r.stdout


def check(what, doc, name):
    try:
        jsonschema.validate(doc, schema(name))
    except jsonschema.ValidationError as e:
        sys.exit("FAIL: %s against docs/schemas/%s.json: %s at %s" %
                 (what, name, e.message, "/".join(str(p) for p in e.absolute_path)))
    print("ok   %s (docs/schemas/%s.json)" % (what, name))


def main():
    work = tempfile.mkdtemp(prefix="simpar-schemas-")
    a100 = os.path.join(work, "a100x128.xml")
    run("topology", "--preset", "dgx-a100", "--nodes", "16", "-o", a100)
    b200 = os.path.join(work, "b200x64.xml")
    run("topology", "--preset", "dgx-b200", "--nodes", "8", "-o", b200)

    # predict: every mode (simulated and skipped rows), a modified preset, Megatron's script
    cases = [
        ["--topology", "topologies/v100x64.xml", "--backend", "formula"],
        ["--topology", "topologies/v100x64.xml", "--gpus", "32", "--backend", "formula"],
        ["--topology", "topologies/v100x64.xml", "--model", "gpt3-13b", "--hidden", "6144",
         "--heads", "48", "--tp-mode", "1d", "--tp", "8", "--pp", "2", "--zero", "1",
         "--backend", "formula"],
        ["--megatron-args", "tests/data/megatron-llama3-70b.sh", "--topology", a100,
         "--backend", "formula"],
        # FP8 training: its weight copies among the kinds; config.fp8_output_proj
        ["--topology", b200, "--model", "llama3-70b", "--dtype", "fp8", "--fp8-recipe",
         "mxfp8", "--fp8-output-proj", "--tp-mode", "1d", "--tp", "8", "--sp", "--pp", "4",
         "--dp", "2", "--global-batch", "64", "--micro-batch", "1", "--backend", "formula"],
        # FP8 attention: config.fp8_attention, the step's weight casts
        ["--topology", b200, "--model", "llama3-70b", "--dtype", "fp8", "--attention", "flash",
         "--fp8-dot-product-attention", "--tp-mode", "1d", "--tp", "8", "--sp", "--pp", "4",
         "--dp", "2", "--global-batch", "64", "--micro-batch", "1", "--backend", "formula"],
        # a mixture of experts: its figures in model_dims, its MoE breakdown in the row
        ["--topology", "topologies/dgx-h100x64.xml", "--model", "mixtral-8x7b", "--imbalance",
         "1.5", "--tp-mode", "1d", "--tp", "1", "--pp", "4", "--ep", "8", "--dp", "16",
         "--global-batch", "64", "--backend", "formula"],
        # multi-head latent attention: its figures in model_dims, a latent rank changed
        ["--topology", "topologies/dgx-h100x64.xml", "--model", "deepseek-v3", "--layers", "8",
         "--kv-lora-rank", "256", "--tp-mode", "1d", "--tp", "2", "--sp", "--pp", "2",
         "--ep", "8", "--group-limit", "1", "--dp", "16", "--global-batch", "64",
         "--backend", "formula"],
        # multi-token prediction: its modules (two: the preset's one modified) and the
        # parameters apart in model_dims
        ["--topology", "topologies/dgx-h100x64.xml", "--model", "deepseek-v3", "--layers", "8",
         "--mtp-layers", "2", "--tp-mode", "1d", "--tp", "1", "--pp", "4", "--ep", "8",
         "--group-limit", "1", "--dp", "16", "--global-batch", "64", "--backend", "formula"],
    ]
    for args in cases:
        rows = json.loads(run(*args, "--json"))
        check("predict " + " ".join(args), rows, "prediction")
        for row in rows:
            if row["simulated"] and "config" not in row:
                sys.exit("FAIL: predict %s: a simulated row without its config" % " ".join(args))
            kinds = sum(row["memory"]["by_kind"].values())
            if abs(kinds - row["memory_per_gpu_gib"]) > 1e-9 * max(1, kinds):
                sys.exit("FAIL: memory by kind sums to %r, not %r" % (kinds, row["memory_per_gpu_gib"]))
    modified = json.loads(run(*cases[2], "--json"))[0]
    if modified["model"] != "gpt3-13b (modified: hidden, heads)" or \
            modified["model_dims"]["modified"] != ["hidden", "heads"]:
        sys.exit("FAIL: a modified preset is not said so: %r" % modified["model"])
    mla = json.loads(run(*cases[-2], "--json"))[0]["model_dims"]
    if mla["modified"] != ["layers", "moe", "mla"] or mla["mla"]["kv_lora_rank"] != 256 or \
            mla["mla"]["q_lora_rank"] != 1536:
        sys.exit("FAIL: the MLA figures as used are not in model_dims: %r" % mla)
    mtp = json.loads(run(*cases[-1], "--json"))[0]["model_dims"]
    if mtp["modified"] != ["layers", "moe", "mtp_layers"] or mtp["mtp"]["layers"] != 2 or \
            mtp["mtp"]["mtp_params"] != 2 * 11610067968:  # DeepSeek-V3's module (test-memory)
        sys.exit("FAIL: the multi-token prediction figures are not in model_dims: %r" % mtp)

    # collective and schedule
    check("collective --json",
          json.loads(run("collective", "--topology", "topologies/dgx-h100x64.xml", "--op",
                         "allgather", "--gpus", "16", "--min-bytes", "1M", "--max-bytes", "4M",
                         "--json")), "collective")
    for mode in ["1d", "3d"]:
        check("schedule --tp-mode " + mode,
              json.loads(run("schedule", "--tp-mode", mode, "--tp", "8", "--json")), "schedule")

    # validate: a layer run on the host executor
    measured = os.path.join(work, "run.json")
    run("--executor", "host", "--run", "layer", "--model", "tiny", "--tp-mode", "1d", "--tp",
        "2", "-o", measured, binary=EXEC)
    with open(measured) as f:
        check("simpar-exec --run layer -o", json.load(f), "run")
    bench = os.path.join(work, "bench.json")
    run("--executor", "host", "--bench", "gemm", "--quick", "-o", bench, binary=EXEC)
    with open(bench) as f:
        check("simpar-exec --bench gemm -o", json.load(f), "bench")
    v = json.loads(run("validate", "--measured", measured, "--topology", "topologies/host.xml",
                       "--json"))
    check("validate --json", v, "validation")
    check("validate --json's measured and predicted rows", [v["measured"], v["predicted"]],
          "prediction")

    # the published table
    check("validate --published korthikanti --json",
          json.loads(run("validate", "--published", "korthikanti", "--json")),
          "published-validation")

    # calibration: fitted to simpar's own nccl-tests output
    log = os.path.join(work, "nccl.log")
    with open(log, "w") as f:
        f.write(run("collective", "--topology", "topologies/dgx-h100x64.xml", "--op",
                    "allreduce", "--gpus", "16", "--min-bytes", "64K", "--max-bytes", "16M",
                    "--format", "nccl-tests"))
    calib = os.path.join(work, "calib.json")
    run("calibrate", "--nccl-tests", log, "--topology", "topologies/dgx-h100x64.xml", "-o", calib)
    with open(calib) as f:
        check("calibrate --nccl-tests -o", json.load(f), "calibration")

    # sweep: the summary, and the CSV as the csv module reads it
    out, summary = os.path.join(work, "s.csv"), os.path.join(work, "s.json")
    run("sweep", "--topology", "topologies/v100x64.xml", "--model", "tiny", "--tp-mode", "1d",
        "-o", out, "--summary", summary, "--quiet")
    with open(summary) as f:
        check("sweep --summary", json.load(f), "sweep-summary")
    with open(out, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or reader.fieldnames[0] != "index":
            sys.exit("FAIL: %s does not start with its header row: %r" % (out, reader.fieldnames))
        rows = list(reader)
    ok = [r for r in rows if r["status"] == "ok"]
    if len(rows) != 13 or not ok or any(float(r["step_time_s"]) <= 0 for r in ok) or \
            [r["index"] for r in rows] != [str(i) for i in range(13)]:
        sys.exit("FAIL: csv.DictReader read %d rows of %s, not the 13 configurations" %
                 (len(rows), out))
    print("ok   sweep CSV: csv.DictReader reads %d rows, header first" % len(rows))

    for name in os.listdir(work):
        os.remove(os.path.join(work, name))
    os.rmdir(work)


main()
