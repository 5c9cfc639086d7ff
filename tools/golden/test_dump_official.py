"""dump_official.py on the tiny model, with standin_pipeline.py (moss_ref.py, transformers'
Qwen3.5, diffusers' VAE) standing in for the official pipeline module: the dump has the
documented keys and shapes, its token ids, schedule and noise equal the goldens', and what the
hooks captured is what the pipeline computed (the DiT recomputed on the dumped inputs gives the
dumped velocities; the sampler rerun from the dumped noise and states gives the final latent).

  python3 -m pytest tools/golden/test_dump_official.py
Needs torch, transformers, diffusers and moss_ref.py ($MOSS_REF or ../shared/reference/); skipped
without them. Runs on the CPU in fp32.
"""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("diffusers")
from safetensors.torch import load_file  # noqa: E402
from safetensors import safe_open  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "hip", "tests", "data")
sys.path.insert(0, HERE)

try:
    import standin_pipeline as S
except ImportError as e:  # moss_ref.py not found
    pytest.skip(str(e), allow_module_level=True)

PROMPT, NEGATIVE = "a red apple on a wooden table", ""  # golden_text_encoder cases 0 and 1
SEED, HEIGHT, WIDTH, STEPS, CFG, SKIP = 42, 64, 96, 4, 3.0, [2]  # golden_dit e2e settings


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("dump") / "official.safetensors")
    env = dict(os.environ, MOSS_REF=S.find_moss_ref())
    cmd = [sys.executable, os.path.join(HERE, "dump_official.py"), "--model", os.path.join(DATA, "tiny-moss"),
           "--pipeline-module", os.path.join(HERE, "standin_pipeline.py"), "--out", out, "--device", "cpu",
           "--dtype", "float32", "--wheels", "", "--prompt", PROMPT, "--negative", NEGATIVE, "--seed", str(SEED),
           "--height", str(HEIGHT), "--width", str(WIDTH), "--steps", str(STEPS), "--cfg", str(CFG),
           "--skip-layers", ",".join(map(str, SKIP))]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    with safe_open(out, "pt") as f:
        meta = {k: json.loads(v) for k, v in f.metadata().items()}
    return load_file(out), meta


def test_keys_and_shapes(dump):
    t, meta = dump
    h, w = HEIGHT // 16, WIDTH // 16
    expect = {"cond.ids": (19,), "uncond.ids": (12,), "cond.hidden": (19, 256), "uncond.hidden": (12, 256),
              "noise": (128, h, w), "sigmas": (STEPS + 1,), "timesteps": (STEPS,), "step0.latent_in": (128, h, w),
              "step0.v_cond": (128, h, w), "step0.v_uncond": (128, h, w), "step0.latent": (128, h, w),
              f"step{STEPS - 1}.latent": (128, h, w), "final_latent": (128, h, w), "image": (3, HEIGHT, WIDTH),
              "image_u8": (3, HEIGHT, WIDTH)}
    assert sorted(t) == sorted(f"case0.{k}" for k in expect)
    for k, shape in expect.items():
        assert tuple(t[f"case0.{k}"].shape) == shape, k
    assert t["case0.cond.ids"].dtype == torch.int32 and t["case0.image_u8"].dtype == torch.uint8
    case = meta["cases"][0]
    assert case["captured"]["cond_uncond_by"] == "skip_layers argument"
    assert case["captured"]["noise_from"] == "torch.randn"
    assert case["captured"]["steps_run"] == STEPS
    assert meta["meta"]["format"] == "moss-official-dump/1"
    # What the engine's readers (hip/tools/check/official_dump.h) take the call's settings from.
    assert case["reference"] == "fp32"
    settings = case["captured"]["settings"]
    assert settings["prompt"] == PROMPT and settings["negative"] == NEGATIVE and settings["seed"] == SEED
    assert settings["cfg"] == CFG and settings["skip_layers"] == SKIP and settings["steps"] == STEPS
    assert settings["shift"] == 5.0


def test_inputs_equal_the_goldens(dump):
    t, _ = dump
    dit = load_file(os.path.join(DATA, "golden_dit.safetensors"))
    te = load_file(os.path.join(DATA, "golden_text_encoder.safetensors"))
    assert torch.equal(t["case0.cond.ids"], te["case0.ids"])
    assert torch.equal(t["case0.uncond.ids"], te["case1.ids"])
    assert torch.equal(t["case0.sigmas"], dit[f"schedule.steps{STEPS}_shift5"])
    assert torch.equal(t["case0.noise"], dit[f"noise.seed{SEED}_c128_h{HEIGHT // 16}_w{WIDTH // 16}"])
    assert torch.equal(t["case0.timesteps"], t["case0.sigmas"][:-1] * 1000)
    for role, case in (("cond", 0), ("uncond", 1)):  # fp32 text model on the CPU, like the _fp32 golden
        ref = te[f"case{case}.hidden_fp32"]
        assert ((t[f"case0.{role}.hidden"] - ref).norm() / ref.norm()).item() < 1e-5


def test_captures_are_what_the_pipeline_computed(dump):
    t, _ = dump
    m = S.MOSSImageTransformer.from_pretrained(os.path.join(DATA, "tiny-moss", "transformer"), torch.float32).dit
    step0 = float(t["case0.timesteps"][0])
    with torch.no_grad():
        vc = m(t["case0.step0.latent_in"], t["case0.cond.hidden"], step0)
        vu = m(t["case0.step0.latent_in"], t["case0.uncond.hidden"], step0, skip_layers=tuple(SKIP))
        final = S.R.sample(m, t["case0.cond.hidden"], t["case0.uncond.hidden"], t["case0.noise"], STEPS, CFG, 5.0,
                           tuple(SKIP))
    assert torch.equal(t["case0.step0.latent_in"], t["case0.noise"])
    assert torch.equal(vc, t["case0.step0.v_cond"]) and torch.equal(vu, t["case0.step0.v_uncond"])
    assert torch.equal(final, t["case0.final_latent"])
    u8 = ((t["case0.image"] / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8)
    assert torch.equal(u8, t["case0.image_u8"])


def golden_check_binary():
    """$MOSS_CHECK, else a moss-check in a build folder of the repository."""
    import glob
    found = [os.environ.get("MOSS_CHECK")] + sorted(glob.glob(os.path.join(ROOT, "build*", "moss-check")))
    return next((p for p in found if p and os.access(p, os.X_OK)), None)


def test_the_engine_reads_the_dump(dump, tmp_path):
    """The engine's own reader takes this dump and our host pipeline matches it stage by stage
    (the limits of an fp32 reference: moss-check official prints them)."""
    exe = golden_check_binary()
    if exe is None:
        pytest.skip("no moss-check binary (set MOSS_CHECK or build into build*/)")
    out = str(tmp_path / "official.safetensors")
    from safetensors.torch import save_file
    t, meta = dump
    save_file(t, out, metadata={k: json.dumps(v) for k, v in meta.items()})
    r = subprocess.run([exe, "official", "--dump", out, "--model", os.path.join(DATA, "tiny-moss")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout
