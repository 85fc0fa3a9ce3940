#!/usr/bin/env python3
"""check-layers.py: .ci/layers.py passes on the tree and fails on a copy of it with one planted
defect at a time: a header whose "private to" label names another folder, a private header
included from outside its label, a source file the tour does not name, two files that call
each other's functions, and an include from a layer above. Run from the checkout's root."""
import os
import shutil
import subprocess
import sys
import tempfile

FOLDERS = ["models", "topologies", "sim", "predict", "app", "exec", "fuzz"]


def layers(root):
    r = subprocess.run([sys.executable, ".ci/layers.py", root], capture_output=True, text=True)
    return r.returncode, r.stdout


def append(path, text):
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def replace(path, old, new):
    text = open(path, encoding="utf-8").read()
    assert old in text, (path, old)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new, 1))


TOUR = "docs/source-tour.md"
PLANTS = [
    ("a wrong label", "says it is private to",
     lambda: replace("models/tp-layer.h", "(private to models/)", "(private to sim/)")),
    ("a private header included from outside", "includes predict/predict-cache.h, private to",
     lambda: replace("app/cmd-schedule.c", "#include", '#include "predict-cache.h"\n#include')),
    ("a file missing from the tour", "models/planted.c is not named in docs/source-tour.md",
     lambda: append("models/planted.c", "int\nplanted(void)\n{\n    return 0;\n}\n")),
    ("a circle", "call circle: models/planted-a.c -> models/planted-b.c -> models/planted-a.c",
     lambda: (append("models/planted-a.c", "int planted_b(void);\nint\nplanted_a(void)\n"
                     "{\n    return planted_b();\n}\n"),
              append("models/planted-b.c", "int planted_a(void);\nint\nplanted_b(void)\n"
                     "{\n    return planted_a();\n}\n"),
              append(TOUR, "\n`planted-a.c`, `planted-b.c`\n"))),
    ("an include from a layer above", "includes app/cli.h",
     lambda: replace("models/model.c", "#include", '#include "cli.h"\n#include')),
]


def main():
    status, out = layers(".")
    failed = 0
    if status != 0:
        print("layers.py fails on the tree itself:\n" + out)
        failed += 1
    for name, expect, plant in PLANTS:
        with tempfile.TemporaryDirectory(prefix="simpar-layers-") as tmp:
            for d in FOLDERS:
                shutil.copytree(d, os.path.join(tmp, d),
                                ignore=shutil.ignore_patterns("corpus", "regressions"))
            os.makedirs(os.path.join(tmp, "docs"))
            shutil.copy(TOUR, os.path.join(tmp, TOUR))
            here = os.getcwd()
            os.chdir(tmp)
            try:
                plant()
            finally:
                os.chdir(here)
            status, out = layers(tmp)
            ok = status == 1 and expect in out
            print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {status}")
            if not ok:
                print(f"     wanted exit 1 and \"{expect}\", got:\n{out}")
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
