#!/usr/bin/env python3
"""bench/readme-figures.py - the README's measured figures, written from bench/results/.

The README marks each figure it quotes from a benchmark:

    <!-- bench:NAME -->text<!-- /bench -->

and this script writes `text` from the results file of NAME (with the load it was measured at,
where the file gives one):

    predict-v100x64  the main job's table        bench/results/predict-v100x64.txt
                                                 (bench/predict-v100x64.sh)
    llama16k         the 16K Llama 3 prediction  bench/results/predict-llama3-405b-16k.timing
                                                 (bench/predict-llama3-405b-16k.sh)
    readme-sweep     the capacity-planning sweep bench/results/readme-sweep.txt
                                                 (bench/readme-sweep.sh)

    python3 bench/readme-figures.py            rewrites README.md
    python3 bench/readme-figures.py --check    exits 1, naming each figure, when README.md is
                                               not what the results give (a test: no timing)

Run from the repository root, or give the root as the last argument.
"""
import os
import re
import sys

MARK = re.compile(r"<!-- bench:([a-z0-9-]+) -->(.*?)<!-- /bench -->", re.S)
LOAD = re.compile(r"load ([0-9.]+) ([0-9.]+) ([0-9.]+)")


def read(root, name):
    with open(os.path.join(root, "bench", "results", name), encoding="utf-8") as f:
        return f.read()


def at_load(line):
    """ "at load 1.2" from a results line's "load 1.2 0.9 0.8" (the 1-minute figure)."""
    m = LOAD.search(line)
    return f" at load {m.group(1)}" if m else ""


def predict_v100x64(root):
    """The table of the main job, indented as a code block, between blank lines."""
    lines = read(root, "predict-v100x64.txt").split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("mode "))
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == "")
    return "\n\n" + "\n".join("    " + l for l in lines[start:end]) + "\n\n"


def llama16k(root):
    """ "2.39 s on SimGrid at load 0.52" from the dgx-h100 cp16 SimGrid line."""
    for line in read(root, "predict-llama3-405b-16k.timing").split("\n"):
        m = re.search(r"cp16 on dgx-h100 x16384, simgrid: ([0-9.]+) s wall", line)
        if m:
            return f"{m.group(1)} s on SimGrid{at_load(line)}"
    raise ValueError("no dgx-h100 cp16 simgrid line")


def readme_sweep(root):
    """ "172 s and 4.8 GB of memory at load 1.1" """
    line = read(root, "readme-sweep.txt").strip().split("\n")[-1]
    m = re.search(r"([0-9]+) s wall, peak RSS ([0-9]+) MiB, ([0-9]+) rows", line)
    if not m:
        raise ValueError("no 'N s wall, peak RSS M MiB, R rows' line")
    gb = int(m.group(2)) * 1048576 / 1e9
    return f"{m.group(1)} s and {gb:.1f} GB of memory for its {m.group(3)} rows{at_load(line)}"


FIGURES = {"predict-v100x64": predict_v100x64, "llama16k": llama16k, "readme-sweep": readme_sweep}


def main(argv):
    check = "--check" in argv
    args = [a for a in argv[1:] if a != "--check"]
    root = args[0] if args else "."
    path = os.path.join(root, "README.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    wrong = []

    def write(m):
        name, old = m.group(1), m.group(2)
        if name not in FIGURES:
            raise SystemExit(f"{path}: bench:{name} is no figure this script writes "
                             f"(valid: {', '.join(FIGURES)})")
        new = FIGURES[name](root)
        if new != old:
            pairs = zip(old.strip().split("\n") + [""], new.strip().split("\n") + [""])
            was, now = next((a, b) for a, b in pairs if a != b)
            wrong.append(f"bench:{name}: README has {was.strip()!r}, the results give "
                         f"{now.strip()!r}")
        return f"<!-- bench:{name} -->{new}<!-- /bench -->"

    out = MARK.sub(write, text)
    found = {m.group(1) for m in MARK.finditer(text)}
    missing = [n for n in FIGURES if n not in found]
    if missing:
        raise SystemExit(f"{path}: no mark for {', '.join(missing)} (<!-- bench:NAME -->)")
    if check:
        for w in wrong:
            print(f"{path}: {w}; run python3 bench/readme-figures.py", file=sys.stderr)
        return 1 if wrong else 0
    if out != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
