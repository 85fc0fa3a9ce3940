#!/usr/bin/env python3
"""layers.py [ROOT]: every #include "x.h" of the product code resolves to a header of the same
folder or of a layer below it (models, topologies < sim < predict < app; exec on models), cli.h is
included only in app/; a header that says it is "private to X/" lies in X/ and is included only
where its label allows; every source file of the product and of fuzz/ is named in
docs/source-tour.md; and no two modules call each other's functions, directly or around a circle
(a file's functions are the ones it defines without `static`, the name at the start of a line
after its return type; the files of one module, listed in MODULES with the reason, count as one).
Prints what it checked; exits 1 on a violation. ROOT (default: the checkout) lets a test plant
defects in a copy."""
import fnmatch
import os
import re
import sys

LAYERS = {"models": 0, "topologies": 0, "sim": 1, "predict": 2, "app": 3, "exec": 1}
BELOW = {"exec": {"models", "exec"}}  # exec sits on models only
# Files that are one module split for size on purpose: they share a private header and call
# each other's functions through it, so a circle among them is the module's own business.
MODULES = {
    "step builder (step-private.h): the timed blocks and the same step op by op":
    ["models/step.c", "models/step-ops.c", "models/step-overlap.c"],
    "formula backend (step-formula-private.h): the evaluation, its ops, one chain's items":
    ["predict/step-formula.c", "predict/step-formula-ops.c", "predict/step-formula-flow.c"],
    "platform (platform-private.h): the file's check, its graph, the child's network":
    ["sim/platform.c", "sim/platform-graph.c", "sim/platform-net.c"],
}
TOURED = list(LAYERS) + ["fuzz"]  # folders whose sources docs/source-tour.md names one by one


def folder(path):
    top = path.split("/")[0]
    return top if top in LAYERS else None


def private_label(path):
    """The patterns of a header's "(private to A/ and B/x*.c)" label, or None without one."""
    head = open(path, encoding="utf-8").read(600)
    m = re.search(r"private to\s+([^)]*)\)", head.replace("\n *", " "))
    if m is None:
        return None
    return [w for w in re.split(r"[\s,;:]+", m.group(1)) if "/" in w]


def label_allows(patterns, path):
    for pat in patterns:
        if pat.endswith("/") and path.startswith(pat):
            return True
        if fnmatch.fnmatch(path, pat):
            return True
    return False


def toured(files, tour):
    """The source files docs/source-tour.md does not name (as x.c, x.cu or x.[ch])."""
    text = tour.replace("`", "")
    missing = []
    for p in files:
        stem = os.path.basename(p).rsplit(".", 1)[0]
        if not re.search(r"(?<![\w-])" + re.escape(stem) + r"\.(c|cu|\[ch\])(?!\w)", text):
            missing.append(p)
    return missing


def definitions(path):
    """The functions `path` defines without `static`: a name at the start of a line followed by
    its parameters, the line before it its return type."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines[1:], 1):
        m = re.match(r"([a-z_]\w*)\(", line)
        prev = lines[i - 1]
        if m and m.group(1) != "main" and prev.strip() and not prev.startswith(("static", "#")):
            out.append(m.group(1))
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    headers = {}
    files = []
    for top in LAYERS:
        for d, _, names in os.walk(top):
            for n in names:
                if n.endswith((".c", ".h", ".cu")):
                    p = os.path.join(d, n)
                    files.append(p)
                    if n.endswith(".h"):
                        headers.setdefault(n, []).append(p)
    bad = []
    edges = {}
    for p in files:
        src = folder(p)
        for inc in re.findall(r'^#include "([^"]+)"', open(p, encoding="utf-8").read(), re.M):
            name = os.path.basename(inc)
            if name not in headers:
                continue  # generated (simpar-topology-res.h) or not ours
            targets = headers[name]
            same = [t for t in targets if os.path.dirname(t) == os.path.dirname(p)]
            target = same[0] if same else targets[0]
            dst = folder(target)
            allowed = BELOW.get(src)
            if allowed is not None:
                ok = dst in allowed
            else:
                ok = dst != "exec" and LAYERS[dst] <= LAYERS[src]
            if not ok:
                bad.append(f"{p} includes {target}: {dst} is not below {src}")
            if name == "cli.h" and src != "app":
                bad.append(f"{p} includes cli.h outside app/")
            edges.setdefault(p, set()).add(target)
    labels = 0
    for p in files:
        patterns = private_label(p) if p.endswith(".h") else None
        if patterns is None:
            continue
        labels += 1
        own = patterns[0] if patterns and patterns[0].endswith("/") else (
            os.path.dirname(patterns[0]) + "/" if patterns else "")
        if not patterns or not p.startswith(own):
            bad.append(f"{p} says it is private to {' and '.join(patterns) or '?'}, "
                       f"but lies in {os.path.dirname(p)}/")
        for q, targets in sorted(edges.items()):
            if p in targets and not label_allows(patterns, q):
                bad.append(f"{q} includes {p}, private to {' and '.join(patterns)}")
    sources = [p for p in files if p.endswith((".c", ".cu"))]
    fuzz = [os.path.join("fuzz", n) for n in sorted(os.listdir("fuzz")) if n.endswith(".c")]
    for p in toured(sources + fuzz, open("docs/source-tour.md", encoding="utf-8").read()):
        bad.append(f"{p} is not named in docs/source-tour.md")
    module = {}
    for why, members in MODULES.items():
        for m in members:
            module[m] = " + ".join(members)
    defined = {}
    for p in sources:
        for name in definitions(p):
            defined[name] = module.get(p, p)
    calls = {}
    for p in sources:
        u = module.get(p, p)
        text = re.sub(r"/\*.*?\*/", " ", open(p, encoding="utf-8").read(), flags=re.S)
        for name in set(re.findall(r"\b([a-z_]\w*)\(", text)):
            q = defined.get(name)
            if q is not None and q != u:
                calls.setdefault(u, set()).add(q)
    state, circles = {}, []

    def visit(u, stack):
        state[u] = 1
        stack.append(u)
        for v in sorted(calls.get(u, ())):
            if state.get(v) == 1:
                circles.append(stack[stack.index(v):] + [v])
            elif v not in state:
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for u in sorted(calls):
        if u not in state:
            visit(u, [])
    for c in circles:
        bad.append("call circle: " + " -> ".join(c))
    print(f"layers: {sum(len(v) for v in calls.values())} module-to-module calls of "
          f"{len(defined)} functions checked for circles ({len(MODULES)} modules of several files)")
    print(f"layers: {labels} private headers' labels and {len(sources) + len(fuzz)} sources "
          f"in the tour checked")
    print(f"layers: {len(files)} files, {sum(len(t) for t in edges.values())} includes checked")
    for b in bad:
        print("layers: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
