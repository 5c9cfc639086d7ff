#!/usr/bin/env python3
"""The include graph of hip/src against the floors of docs/architecture.md (ctest `layers`).

  check_layers.py SRC_DIR ARCHITECTURE_MD
  check_layers.py --self-test      the checker's own cases (a climbing include, a cycle, a clean tree)

Fails (exit 1, one line per finding) when a file includes a file of a floor above its own, when a
folder of SRC_DIR is missing from the floors (or a floor names no folder), or when includes between
files form a cycle. Only quoted includes that name a file of SRC_DIR count.
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCES = (".h", ".hpp", ".cpp", ".hip", ".cu", ".in")


def floors(md_path):
    text = open(md_path, encoding="utf-8").read()
    m = re.search(r"^```layers\n(.*?)^```", text, re.S | re.M)
    if not m:
        raise SystemExit(f"{md_path}: no ```layers block")
    names = [line.strip() for line in m.group(1).splitlines() if line.strip()]
    return {name: i for i, name in enumerate(names)}


def include_graph(src):
    graph = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(SOURCES):
                continue
            rel = os.path.relpath(os.path.join(root, f), src)
            targets = []
            with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if m and os.path.isfile(os.path.join(src, m.group(1))):
                        targets.append((n, m.group(1)))
            graph[rel] = targets
    return graph


def top(path):
    return path.split("/")[0] if "/" in path else ""


def findings(src, md_path):
    order = floors(md_path)
    graph = include_graph(src)
    out = []
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    for d in sorted(folders - set(order)):
        out.append(f"{d}/: a folder of {src} that {md_path} does not place on a floor")
    for d in sorted(set(order) - folders):
        out.append(f"{d}: a floor of {md_path} with no folder in {src}")
    for f, targets in sorted(graph.items()):
        for n, t in targets:
            a, b = top(f), top(t)
            if a in order and b in order and order[b] > order[a]:
                out.append(f"{f}:{n}: includes {t}, a floor above ({b} over {a})")
    # cycles: depth-first search over the file graph
    state, stack = {}, []

    def visit(f):
        state[f] = 1
        stack.append(f)
        for _, t in graph.get(f, []):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                out.append("include cycle: " + " -> ".join(cycle))
            elif t not in state:
                visit(t)
        stack.pop()
        state[f] = 2

    sys.setrecursionlimit(10000)
    for f in sorted(graph):
        if f not in state:
            visit(f)
    return out


def self_test():
    def tree(files, layers):
        d = tempfile.mkdtemp()
        for path, body in files.items():
            os.makedirs(os.path.join(d, "src", os.path.dirname(path)), exist_ok=True)
            open(os.path.join(d, "src", path), "w").write(body)
        md = os.path.join(d, "arch.md")
        open(md, "w").write("x\n```layers\n" + "\n".join(layers) + "\n```\n")
        return findings(os.path.join(d, "src"), md)

    clean = tree({"low/a.h": "", "high/b.h": '#include "low/a.h"\n'}, ["low", "high"])
    assert clean == [], clean
    climb = tree({"low/a.h": '#include "high/b.h"\n', "high/b.h": ""}, ["low", "high"])
    assert len(climb) == 1 and "a floor above" in climb[0], climb
    cycle = tree({"low/a.h": '#include "low/b.h"\n', "low/b.h": '#include "low/a.h"\n'}, ["low"])
    assert any("include cycle" in c for c in cycle), cycle
    unplaced = tree({"low/a.h": "", "extra/c.h": ""}, ["low"])
    assert any("does not place" in c for c in unplaced), unplaced
    print("check_layers self-test: 4 cases passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    out = findings(sys.argv[1], sys.argv[2])
    for line in out:
        print(line)
    if out:
        sys.exit(1)
    print(f"layers: {len(include_graph(sys.argv[1]))} files, no include climbs a floor, no cycle")


if __name__ == "__main__":
    main()
