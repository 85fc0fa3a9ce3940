#!/usr/bin/env python3
"""layers.py: every #include "x.h" of the product code resolves to a header of the same folder or
of a layer below it (models, topologies < sim < predict < app; exec on models), cli.h is included
only in app/, and no two source files call each other's functions, directly or around a circle
(a file's functions are the simpar_* ones it defines at the start of a line). Prints what it
checked; exits 1 on a violation."""
import os
import re
import sys

LAYERS = {"models": 0, "topologies": 0, "sim": 1, "predict": 2, "app": 3, "exec": 1}
BELOW = {"exec": {"models", "exec"}}  # exec sits on models only


def folder(path):
    top = path.split("/")[0]
    return top if top in LAYERS else None


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    defined = {}
    for p in files:
        if p.endswith(".c"):
            for name in re.findall(r"^(simpar_\w+)\(", open(p, encoding="utf-8").read(), re.M):
                defined[name] = p
    calls = {}
    for p in files:
        if not p.endswith(".c"):
            continue
        text = re.sub(r"/\*.*?\*/", " ", open(p, encoding="utf-8").read(), flags=re.S)
        for name in set(re.findall(r"\b(simpar_\w+)\(", text)):
            q = defined.get(name)
            if q is not None and q != p:
                calls.setdefault(p, set()).add(q)
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
    print(f"layers: {sum(len(v) for v in calls.values())} file-to-file calls checked for circles")
    print(f"layers: {len(files)} files, {sum(len(t) for t in edges.values())} includes checked")
    for b in bad:
        print("layers: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
