#!/usr/bin/env python3
"""Counts the VALU issue slots of the portable direct attention's key loop from a gfx12 code object
(bench/amd_model.md section 6, "The attention on gfx12, from its code": the model's DIRECT_VALU).

  hip/check_device.sh --out DIR hip/src/kernels/attention.hip      (CHECK_DEVICE_ARCHS=gfx1200)
  python3 bench/attention_valu_count.py DIR/attention/attention-hip-amdgcn-amd-amdhsa-gfx1200.out

For each head-dim-128 direct kernel instance (attention_kernel<Tiling<128, 128, 32, 8, 1, 0, 1>, ...>:
K in place (bf16 scores) and the int8 QK^T variant) it disassembles the kernel with llvm-objdump-19
and takes the key loop as the innermost backward-branch range holding every matrix instruction of
the kernel, from its head to its last back branch (the masked tail's out-of-line blocks lie past
it: the unmasked path, as section 6 counts). It prints the matrix instructions and the VALU instructions in that range (one issue slot each, a
v_dual pair one), by opcode. Reads a code object; runs nothing on a GPU.
"""
import argparse
import collections
import re
import subprocess
import sys

KERNELS = {
    "bf16 scores, K in place": "Li128ELi128ELi32ELi8ELi1ELi0ELi1EEELb1ELb0EE",
    "int8 QK^T": "Li128ELi128ELi32ELi8ELi1ELi0ELi1EEELb0ELb1EE",
}
LINE = re.compile(r"\s+(\S+)\s*(.*?)\s*//\s*([0-9A-F]+):.*?(?:<[^>]*\+(0x[0-9a-f]+)>)?$")


def functions(disassembly):
    """name -> [(offset, opcode, branch target offset or None)]"""
    out, name = {}, None
    for line in disassembly.splitlines():
        if line.endswith(">:"):
            name = line[line.index("<") + 1:-2]
            out[name] = []
            continue
        m = LINE.match(line) if name else None
        if m:
            out[name].append((int(m.group(3), 16), m.group(1), m.group(4)))
    for name, ins in out.items():
        base = ins[0][0] if ins else 0
        out[name] = [(a - base, op, int(t, 16) if t else None) for a, op, t in ins]
    return out


def key_loop(ins):
    matrix = [a for a, op, _ in ins if op.startswith("v_wmma")]
    loops = [(t, a) for a, _, t in ins if t is not None and t <= a and t <= min(matrix) and a >= max(matrix)]
    if not matrix or not loops:
        raise SystemExit("no loop holds the kernel's matrix instructions")
    start = max(t for t, _ in loops)  # the innermost loop's head; its last back branch ends it
    return start, max(a for t, a in loops if t == start)


def loop_counts(ins):
    """(loop range, matrix opcodes, VALU opcodes) of the kernel's key loop."""
    lo, hi = key_loop(ins)
    body = [op for a, op, _ in ins if lo <= a <= hi]
    matrix = collections.Counter(op for op in body if op.startswith("v_wmma"))
    valu = collections.Counter(op for op in body if op.startswith("v_") and not op.startswith("v_wmma"))
    return (lo, hi), matrix, valu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("code_object")
    ap.add_argument("--objdump", default="llvm-objdump-19")
    args = ap.parse_args()
    dis = subprocess.run([args.objdump, "-d", "--mcpu=gfx1200", args.code_object], check=True,
                         capture_output=True, text=True).stdout
    funcs = functions(dis)
    for label, key in KERNELS.items():
        names = [n for n in funcs if key in n]
        if not names:
            print(f"{label}: not in the code object", file=sys.stderr)
            continue
        (lo, hi), matrix, valu = loop_counts(funcs[names[0]])
        print(f"{label}: key loop {lo:#x}..{hi:#x}")
        print("  matrix: " + ", ".join(f"{op} {n}" for op, n in sorted(matrix.items())))
        print(f"  VALU issue slots: {sum(valu.values())} ({sum(n for op, n in valu.items() if op.startswith('v_dual'))} v_dual)")
        print("    " + ", ".join(f"{op} {n}" for op, n in valu.most_common()))


if __name__ == "__main__":
    main()
