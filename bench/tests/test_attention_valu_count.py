"""bench/attention_valu_count.py: the key loop is the innermost loop holding every matrix instruction,
up to its last back branch, and its VALU slots are counted by opcode."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import attention_valu_count as c  # noqa: E402

NAME = "_ZN4moss12_GLOBAL__N_116attention_kernelINS0_6TilingILi128ELi128ELi32ELi8ELi1ELi0ELi1EEELb0ELb1EEEvNS_15AttentionParamsE"


def line(offset, text, target=None):
    tail = f" <{NAME}+{target:#x}>" if target is not None else ""
    return f"\t{text:<58}// {0x1000 + offset:012X}: BF850001{tail}"


# A kernel: a Q staging loop (no matrix instruction), the key loop (scores, softmax, P·V, two back
# branches), its masked slots out of line jumping back into it, and the epilogue.
DISASSEMBLY = "\n".join([
    f"0000000000001000 <{NAME}>:",
    line(0x00, "v_mov_b32_e32 v1, 0"),
    line(0x04, "v_mul_f32_e32 v2, v1, v1"),
    line(0x08, "s_cbranch_scc0 0", 0x00),              # the staging loop
    line(0x0c, "v_wmma_i32_16x16x16_iu8 v[0:7], v[8:9], v[10:11], v[0:7]"),  # the key loop's head
    line(0x10, "v_cvt_f32_i32_e32 v1, v1"),
    line(0x14, "s_cbranch_execnz 0", 0x30),            # to a masked slot, out of line
    line(0x18, "v_fma_f32 v1, v2, v3, v4"),
    line(0x1c, "v_dual_mul_f32 v1, v2, v3 :: v_dual_mul_f32 v4, v5, v6"),
    line(0x20, "v_wmma_f32_16x16x16_bf16 v[0:7], v[8:11], v[12:15], v[0:7]"),
    line(0x24, "s_cbranch_execz 0", 0x0c),
    line(0x28, "v_add_f32_e32 v1, v2, v3"),
    line(0x2c, "s_branch 0", 0x0c),                    # the key loop's last back branch
    line(0x30, "v_cndmask_b32_e64 v1, v2, v3, s[0:1]"),  # the masked slot
    line(0x34, "s_cbranch_execz 0", 0x18),
    line(0x38, "s_endpgm"),
])


def test_the_key_loop_runs_from_its_head_to_its_last_back_branch():
    ins = c.functions(DISASSEMBLY)[NAME]
    assert c.key_loop(ins) == (0x0c, 0x2c)


def test_slots_leave_out_matrix_and_out_of_line_instructions():
    _, matrix, valu = c.loop_counts(c.functions(DISASSEMBLY)[NAME])
    assert matrix == {"v_wmma_i32_16x16x16_iu8": 1, "v_wmma_f32_16x16x16_bf16": 1}
    assert valu == {"v_cvt_f32_i32_e32": 1, "v_fma_f32": 1, "v_dual_mul_f32": 1, "v_add_f32_e32": 1}
