#!/usr/bin/env python3
"""bench/readme-figures.py - the measured figures of README.md and docs/*.md, written from
bench/results/.

A document marks each figure it quotes from a benchmark:

    <!-- bench:NAME -->text<!-- /bench -->

and this script writes `text` from the results file of NAME (with the load it was measured at,
where the file gives one):

    predict-v100x64  the main job's table        bench/results/predict-v100x64.txt
                                                 (bench/predict-v100x64.sh)
    llama16k         the 16K Llama 3 prediction  bench/results/predict-llama3-405b-16k.timing
                                                 (bench/predict-llama3-405b-16k.sh)
    readme-sweep     the capacity-planning sweep bench/results/readme-sweep.txt
                                                 (bench/readme-sweep.sh)
    published        the published steps' errors  bench/results/validate-published-*-formula.txt
                     per set, a table            (bench/validate-published.sh)
    growth           docs/speed.md's growth past bench/results/growth-<GPUs>.txt
                     16,384 GPUs, a table        (bench/growth.sh)
    results/FILE     bench/results/FILE whole, indented as a code block, less its line of wall
                     time and load (e.g. results/validate-published-korthikanti-formula.txt,
                     bench/validate-published.sh); a Markdown FILE (.md) as it is
                     (results/fidelity.md, bench/fidelity/run.sh)

    python3 bench/readme-figures.py            rewrites README.md and docs/*.md
    python3 bench/readme-figures.py --check    exits 1, naming each figure, when a document is
                                               not what the results give (a test: no timing)

Run from the repository root, or give the root as the last argument.
"""
import os
import re
import sys

MARK = re.compile(r"<!-- bench:([a-z0-9./-]+) -->(.*?)<!-- /bench -->", re.S)
# a results file's last line: how long it ran and at what load (not a figure)
TIMING = re.compile(r"^\(.* wall, .*\)$")
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


def growth(root):
    """docs/speed.md's growth table from bench/results/growth-<GPUs>.txt (bench/growth.sh)."""
    files = [f for f in os.listdir(os.path.join(root, "bench", "results"))
             if re.fullmatch(r"growth-[0-9]+\.txt", f)]
    rows = ["| GPUs | step ranks simulated (of the slice's) | SimGrid | analytic | load |",
            "|---|---|---|---|---|"]
    for f in sorted(files, key=lambda f: int(f[len("growth-"):-len(".txt")])):
        gpus = int(f[len("growth-"):-len(".txt")])
        cells, ranks, load = {}, None, ""
        for line in read(root, f).split("\n"):
            m = re.match(r".* x [0-9]+ GPUs, (simgrid|analytic): (.*)$", line)
            if m:
                backend, rest = m.groups()
                ok = re.match(r"([0-9.]+) s wall, peak RSS ([0-9]+) MiB, step [0-9.]+ s \((.*)\)$",
                              rest)
                if ok:
                    cells[backend] = f"{ok.group(1)} s, {int(ok.group(2)):,} MiB"
                    fold = re.search(r"step simulated on ([0-9]+) of its ([0-9]+) ranks",
                                     ok.group(3))
                    slices = re.search(r"1 of ([0-9]+) alike tensor-parallel slices", ok.group(3))
                    if fold:
                        ranks = f"{int(fold.group(1)):,} of {int(fold.group(2)):,}"
                    elif ranks is None and slices:
                        ranks = f"{gpus // int(slices.group(1)):,} (no fold)"
                    continue
                no = re.match(r"refused after ([0-9.]+) s \(exit [0-9]+\): .* would need about "
                              r"([0-9.]+ GiB) of memory, more than the ([0-9.]+ GiB)", rest)
                if not no:
                    raise ValueError(f"{f}: an unknown {backend} line")
                cells[backend] = (f"refused after {float(no.group(1)):.0f} s: the step's ops would "
                                  f"need {no.group(2)}, past simpar's cap of {no.group(3)}")
            m = re.search(r"load average ([0-9.]+)", line)
            if m and line.startswith("("):
                load = f"{float(m.group(1)):.1f}"
        rows.append(f"| {gpus:,} | {ranks or '-'} | {cells.get('simgrid', '-')} | "
                    f"{cells.get('analytic', '-')} | {load} |")
    return "\n" + "\n".join(rows) + "\n"


def published(root):
    """The README's table of the published whole steps: per set (validate --published, formula
    backend), its source, its cases, the range of their errors and the mean absolute error."""
    files = sorted(f for f in os.listdir(os.path.join(root, "bench", "results"))
                   if re.fullmatch(r"validate-published-[a-z0-9-]+-formula\.txt", f))
    rows = ["| set | source | cases | error range | mean absolute |", "|---|---|---|---|---|"]
    for name in (f[len("validate-published-"):-len("-formula.txt")] for f in files):
        lines = read(root, f"validate-published-{name}-formula.txt").split("\n")
        source = next(l for l in lines if l.startswith("source: "))[len("source: "):]
        errors = [float(m.group(1)) for l in lines
                  for m in [re.search(r"\s([+-][0-9.]+)%\s", l)] if m and not l.startswith("(")]
        mean = next(re.search(r"mean absolute error ([0-9.]+)%", l).group(1) for l in lines
                    if l.startswith("mean absolute error"))
        rows.append(f"| `{name}` | {source} | {len(errors)} | {min(errors):+.1f}% to "
                    f"{max(errors):+.1f}% | {mean}% |")
    return "\n" + "\n".join(rows) + "\n"


DOCS_ONLY = {"growth"}  # figures of docs/*.md, not the README's
FIGURES = {"predict-v100x64": predict_v100x64, "llama16k": llama16k, "readme-sweep": readme_sweep,
           "growth": growth, "published": published}


def results_block(root, name):
    """bench/results/FILE as an indented code block between blank lines, less its timing line;
    a Markdown file (.md) as it is."""
    if name.endswith(".md"):
        return "\n" + read(root, name)
    lines = read(root, name).rstrip("\n").split("\n")
    body = [l for l in lines if not TIMING.match(l)]
    return "\n\n" + "\n".join("    " + l if l else "" for l in body) + "\n\n"


def figure(root, name):
    if name.startswith("results/") and "/" not in name[len("results/"):] and name != "results/":
        return results_block(root, name[len("results/"):])
    if name not in FIGURES:
        raise KeyError(name)
    return FIGURES[name](root)


def document(root, rel, check):
    """Writes (or checks) the figures of one document; its wrong figures, described."""
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    wrong = []

    def write(m):
        name, old = m.group(1), m.group(2)
        try:
            new = figure(root, name)
        except KeyError:
            raise SystemExit(f"{path}: bench:{name} is no figure this script writes "
                             f"(valid: {', '.join(FIGURES)}, results/FILE)")
        except FileNotFoundError:
            raise SystemExit(f"{path}: bench:{name}: no such file under bench/results/")
        if new != old:
            pairs = zip(old.strip().split("\n") + [""], new.strip().split("\n") + [""])
            was, now = next(((a, b) for a, b in pairs if a != b), ("(blank lines)", "(others)"))
            wrong.append(f"{path}: bench:{name}: the document has {was.strip()!r}, the results "
                         f"give {now.strip()!r}")
        return f"<!-- bench:{name} -->{new}<!-- /bench -->"

    out = MARK.sub(write, text)
    if not check and out != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(out)
    return text, wrong


def main(argv):
    check = "--check" in argv
    args = [a for a in argv[1:] if a != "--check"]
    root = args[0] if args else "."
    docs = sorted(os.path.join("docs", d) for d in os.listdir(os.path.join(root, "docs"))
                  if d.endswith(".md"))
    wrong = []
    for rel in ["README.md"] + docs:
        text, w = document(root, rel, check)
        wrong += w
        if rel == "README.md":
            found = {m.group(1) for m in MARK.finditer(text)}
            missing = [n for n in FIGURES if n not in found and n not in DOCS_ONLY]
            if missing:
                raise SystemExit(f"{os.path.join(root, rel)}: no mark for "
                                 f"{', '.join(missing)} (<!-- bench:NAME -->)")
    if check:
        for w in wrong:
            print(f"{w}; run python3 bench/readme-figures.py", file=sys.stderr)
        return 1 if wrong else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
