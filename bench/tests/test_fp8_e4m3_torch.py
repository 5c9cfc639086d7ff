"""The one fp32 -> OCP FP8 E4M3 conversion of the kernels (hip/src/kernels/fp8_e4m3.h, run through
`moss-check fp8-e4m3`) against PyTorch's torch.float8_e4m3fn, the dtype the fidelity measurement
(bench/sage_attention_fidelity.py, pv="fp8") rounds with.

Torch's conversion is not saturating (beyond the rounding range, 464 and up, it gives NaN); the
kernels' is (docs/matrix_layouts.md section 9). So the comparison is exact, code for code, on every
input of magnitude <= 448 as it stands, and on every input after torch.clamp(x, -448, 448) for the
rest; NaNs must give a NaN code of the input's sign.

Needs torch (skipped without) and a built moss-check: $MOSS_CHECK, else build*/moss-check.
"""
import glob
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "float8_e4m3fn"):
    pytest.skip("this torch has no float8_e4m3fn", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def moss_check():
    found = [os.environ["MOSS_CHECK"]] if os.environ.get("MOSS_CHECK") else []
    found += sorted(glob.glob(os.path.join(ROOT, "build*", "moss-check")))
    exe = next((p for p in found if os.access(p, os.X_OK)), None)
    if exe is None:
        pytest.skip("no moss-check binary (set MOSS_CHECK or build into build*/)")
    return exe


def run(tmp_path, data, decode=False):
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(data)
    cmd = [moss_check(), "fp8-e4m3", "--in", str(src), "--out", str(dst)] + (["--decode"] if decode else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed, 0 failed" in r.stdout
    return dst.read_bytes()


def kernels_codes(tmp_path, x):
    return torch.frombuffer(bytearray(run(tmp_path, x.numpy().tobytes())), dtype=torch.uint8)


def torch_codes(x):
    return x.to(torch.float8_e4m3fn).view(torch.uint8)


def inputs():
    """Every fp32 whose low 16 bits are 0, 0x7fff, 0x8000 or 0xffff (all exponents, both signs:
    the codes, the values on either side of each midpoint, the overflow range, infinities, NaNs,
    fp32 subnormals), every midpoint between neighbouring codes and its two neighbours, and a
    million random normal values at scales from 2^-12 to 2^10."""
    hi = torch.arange(0, 1 << 16, dtype=torch.int64) << 16
    patterns = torch.cat([hi | lo for lo in (0x0000, 0x7FFF, 0x8000, 0xFFFF)])
    bits = torch.where(patterns >= 1 << 31, patterns - (1 << 32), patterns).to(torch.int32)
    x = [bits.view(torch.float32)]
    codes = torch.arange(0, 0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn).to(torch.float32)
    mid = (codes[:-1] + codes[1:]) / 2
    x += [mid, torch.nextafter(mid, torch.zeros_like(mid)), torch.nextafter(mid, torch.full_like(mid, 1e9))]
    g = torch.Generator().manual_seed(49)
    scale = torch.exp2(torch.randint(-12, 11, (1 << 20,), generator=g).to(torch.float32))
    x.append(torch.randn(1 << 20, generator=g) * scale)
    x = torch.cat(x)
    return torch.cat([x, -x])


def test_every_code_decodes_as_torch_does(tmp_path):
    codes = torch.arange(0, 256, dtype=torch.uint8)
    ours = torch.frombuffer(bytearray(run(tmp_path, codes.numpy().tobytes(), decode=True)), dtype=torch.float32)
    theirs = codes.view(torch.float8_e4m3fn).to(torch.float32)
    nan = torch.isnan(theirs)
    assert nan.sum() == 2 and torch.equal(torch.isnan(ours), nan)
    assert torch.equal(ours[~nan].view(torch.int32), theirs[~nan].view(torch.int32))  # -0 included
    assert ours[0x7E] == 448 and ours[0x01] == 2.0 ** -9


def test_conversion_matches_torch_float8_e4m3fn(tmp_path):
    x = inputs()
    ours = kernels_codes(tmp_path, x)
    nan = torch.isnan(x)
    in_range = ~nan & (x.abs() <= 448)
    assert in_range.sum() > 1_000_000 and (~in_range & ~nan).sum() > 100_000 and nan.sum() > 1000
    # Within the range torch's own conversion is the definition.
    assert torch.equal(ours[in_range], torch_codes(x[in_range]))
    # Beyond it, the kernels saturate: torch's conversion of the clamped value, i.e. +-448.
    out = ~in_range & ~nan
    assert torch.equal(ours[out], torch_codes(x[out].clamp(-448, 448)))
    assert set(ours[out].tolist()) == {0x7E, 0xFE}
    # A NaN gives the NaN code of its sign.
    sign = (x[nan].view(torch.int32) < 0).to(torch.uint8) * 0x80
    assert torch.equal(ours[nan], sign | 0x7F)


def test_ties_go_to_even_codes_as_in_torch(tmp_path):
    """The midpoints alone: the class where a rounding that is not to-nearest-even differs."""
    codes = torch.arange(0, 0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn).to(torch.float32)
    mid = (codes[:-1] + codes[1:]) / 2
    ours = kernels_codes(tmp_path, mid)
    assert torch.equal(ours, torch_codes(mid))
    assert torch.all(ours % 2 == 0)


def test_a_file_of_no_whole_fp32_values_is_refused(tmp_path):
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(b"\x00" * 7)
    r = subprocess.run([moss_check(), "fp8-e4m3", "--in", str(src), "--out", str(dst)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert "7 bytes, not a whole number of fp32 values" in r.stderr
    assert not dst.exists()
