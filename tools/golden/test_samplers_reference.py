"""Every sampler x schedule of the engine against an independent Python implementation
(docs/samplers.md), on the host backend:

- the samplers k-diffusion (PyPI `k-diffusion`) has for ODEs, euler, heun, dpm_2 and dpmpp_2m
  (and ddim, which ComfyUI runs as euler), run from k-diffusion itself through the flow-to-sigma
  wrapper `FlowDenoiser` below;
- the ones ComfyUI defines for flow (CONST) models, written here from its formulas
  (comfy/k_diffusion/sampling.py at commit 02159d81, functions cited on each):
  euler_ancestral (sample_euler_ancestral_RF), lcm (sample_lcm with CONST noise_scaling),
  res_multistep (res_multistep, eta 0), dpmpp_2m_sde (midpoint), dpmpp_3m_sde and dpmpp_sde
  (half log-SNR lambda = log((1-s)/s), the first sigma offset to percent_to_sigma(1e-4));
- uni_pc and uni_pc_bh2 from comfy/extra_samplers/uni_pc.py (Comfy-Org/ComfyUI commit 0748e38f:
  sample_unipc, SigmaConvert, predict_eps_sigma, UniPC.sample and multistep_uni_pc_bh_update),
  written in ComfyUI's own variables, not the engine's closed form (sampler_unipc.h);
- the schedules from comfy/samplers.py's formulas on ModelSamplingDiscreteFlow (shift applied as
  time_snr_shift), the MOSS-Image one from moss_ref.py.

The noise: one torch CPU generator seeded with the seed; its first randn is the initial noise,
each later randn one noise the sampler adds (the engine's NoiseStream).

Two denoisers: the toy velocity field of `moss-check samplers` (its twin below), and the tiny
model's reference DiT (moss_ref.py, fp32) with the golden's text states, cfg 3 and its skip layers.
`moss-check samplers --out` gives the engine's results; $MOSS_CHECK or build*/moss-check.
"""
import glob
import json
import math
import os
import subprocess
import sys
import types
import importlib
import importlib.util

import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)  # the tiny DiT's ops are too small for threads: 8x faster on one

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "hip", "tests", "data")
sys.path.insert(0, HERE)


def k_diffusion_sampling():
    """k_diffusion.sampling; when the package's __init__ cannot import (it pulls in its training
    stack: CLIP, kornia, wandb), its sampling module alone, through a bare package object."""
    try:
        from k_diffusion import sampling
        return sampling
    except ImportError:
        pass
    spec = importlib.util.find_spec("k_diffusion")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("k-diffusion is not installed (pip install k-diffusion)")
    for name in [m for m in sys.modules if m == "k_diffusion" or m.startswith("k_diffusion.")]:
        del sys.modules[name]
    pkg = types.ModuleType("k_diffusion")
    pkg.__path__ = list(spec.submodule_search_locations)
    sys.modules["k_diffusion"] = pkg
    try:
        return importlib.import_module("k_diffusion.sampling")
    except ImportError as e:
        pytest.skip(f"k_diffusion.sampling does not import: {e}")


def moss_check():
    found = [os.environ.get("MOSS_CHECK")] + sorted(glob.glob(os.path.join(ROOT, "build*", "moss-check")))
    exe = next((p for p in found if p and os.access(p, os.X_OK)), None)
    if exe is None:
        pytest.skip("no moss-check binary (set MOSS_CHECK or build into build*/)")
    return exe


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("samplers") / "samplers.json")
    r = subprocess.run([moss_check(), "samplers", "--out", out, "--model", os.path.join(DATA, "tiny-moss"),
                        "--golden", os.path.join(DATA, "golden_dit.safetensors")],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out) as f:
        return json.load(f)


# ---- schedules (comfy/samplers.py; ModelSamplingDiscreteFlow in comfy/model_sampling.py) ----

def flow_sigma(shift, t):
    """time_snr_shift"""
    return t if shift == 1.0 else shift * t / (1 + (shift - 1) * t)


def flow_table(shift):
    """ModelSamplingDiscreteFlow.sigmas: sigma((i+1)/1000), ascending, a float32 buffer."""
    return torch.tensor([flow_sigma(shift, (i + 1) / 1000) for i in range(1000)], dtype=torch.float32).double()


def schedule(name, steps, shift):
    if name == "moss":
        import standin_pipeline as S
        return S.R.schedule(steps, shift).double()
    table = flow_table(shift)
    smin, smax = float(table[0]), float(table[-1])
    if name == "simple":  # simple_scheduler
        ss = len(table) / steps
        sig = [float(table[-(1 + int(x * ss))]) for x in range(steps)]
    elif name in ("normal", "sgm_uniform"):  # normal_scheduler(sgm=...): sigma(timestep(sigma)) shifts twice
        start, end = smax * 1000, smin * 1000
        ts = torch.linspace(start, end, steps + 1, dtype=torch.float64)[:-1] if name == "sgm_uniform" \
            else torch.linspace(start, end, steps, dtype=torch.float64)
        sig = [flow_sigma(shift, float(t) / 1000) for t in ts]
    elif name == "karras":  # get_sigmas_karras, rho 7
        ramp = torch.linspace(0, 1, steps, dtype=torch.float64)
        lo, hi = smin ** (1 / 7), smax ** (1 / 7)
        sig = ((hi + ramp * (lo - hi)) ** 7).tolist()
    elif name == "exponential":  # get_sigmas_exponential
        sig = torch.linspace(math.log(smax), math.log(smin), steps, dtype=torch.float64).exp().tolist()
    elif name == "beta":  # beta_scheduler, alpha = beta = 0.6
        stats = pytest.importorskip("scipy.stats")
        import numpy
        ts = numpy.rint(stats.beta.ppf(1 - numpy.linspace(0, 1, steps, endpoint=False), 0.6, 0.6) * 999)
        sig, last = [], -1
        for t in ts:
            if t != last:
                sig.append(float(table[int(t)]))
            last = t
    else:
        raise AssertionError(f"no reference for schedule {name}")
    return torch.tensor(sig + [0.0], dtype=torch.float64)


# ---- samplers ----

class FlowDenoiser:
    """The flow-to-sigma wrapper: k-diffusion's samplers integrate dx/dsigma = (x - D(x, sigma))/sigma.
    A flow model's velocity v = dx/dsigma along x = (1 - sigma)*x0 + sigma*noise, so with
    D(x, sigma) = x - sigma*v(x, sigma) that ODE is the flow's own: the samplers take the flow sigmas
    and latents as they are (no rescaling; what ComfyUI does for CONST models), sigma*1000 is the
    DiT's timestep."""

    def __init__(self, velocity):
        self.velocity = velocity

    def __call__(self, x, sigma, **_):
        s = float(sigma.reshape(-1)[0]) if torch.is_tensor(sigma) else float(sigma)
        return x - s * self.velocity(x, s)


def ancestral_step(sf, st):
    """get_ancestral_step at eta 1"""
    up = min(st, (st ** 2 * (sf ** 2 - st ** 2) / sf ** 2) ** 0.5)
    return (st ** 2 - up ** 2) ** 0.5, up


def lam(s):
    """sigma_to_half_log_snr for CONST"""
    return math.log((1 - s) / s)


def snr_offset(sig, shift):
    """offset_first_sigma_for_snr: a first sigma of 1 becomes percent_to_sigma(1e-4)"""
    sig = list(sig)
    if sig[0] >= 1:
        sig[0] = flow_sigma(shift, 1 - 1e-4)
    return sig


def euler_ancestral_rf(model, x, sig, noise, shift):  # sample_euler_ancestral_RF, eta 1
    for i in range(len(sig) - 1):
        d = model(x, sig[i])
        if sig[i + 1] == 0:
            x = d
            continue
        down = sig[i + 1] * (1 + (sig[i + 1] / sig[i] - 1))
        a_next, a_down = 1 - sig[i + 1], 1 - down
        renoise = (sig[i + 1] ** 2 - down ** 2 * a_next ** 2 / a_down ** 2) ** 0.5
        ratio = down / sig[i]
        x = ratio * x + (1 - ratio) * d
        x = (a_next / a_down) * x + noise() * renoise
    return x


def lcm(model, x, sig, noise, shift):  # sample_lcm; CONST.noise_scaling = sigma*noise + (1-sigma)*latent
    for i in range(len(sig) - 1):
        x = model(x, sig[i])
        if sig[i + 1] > 0:
            x = sig[i + 1] * noise() + (1 - sig[i + 1]) * x
    return x


def res_multistep(model, x, sig, noise, shift):  # res_multistep, eta 0, cfg_pp off
    old_d, old_down = None, None
    for i in range(len(sig) - 1):
        d = model(x, sig[i])
        down = sig[i + 1]  # get_ancestral_step with eta 0
        if down == 0 or old_d is None:
            x = x + (x - d) / sig[i] * (down - sig[i])
        else:
            t, t_old, t_next, t_prev = (-math.log(v) for v in (sig[i], old_down, down, sig[i - 1]))
            h = t_next - t
            c2 = (t_prev - t_old) / h
            phi1 = math.expm1(-h) / -h
            phi2 = (phi1 - 1) / -h
            b1, b2 = phi1 - phi2 / c2, phi2 / c2
            x = math.exp(-h) * x + h * (b1 * d + b2 * old_d)
        old_d, old_down = d, down
    return x


def dpmpp_multistep_sde(order):  # sample_dpmpp_2m_sde (midpoint) / sample_dpmpp_3m_sde, eta 1
    def run(model, x, sig, noise, shift):
        sig = snr_offset(sig, shift)
        d1 = d2 = h1 = h2 = None
        h = None
        for i in range(len(sig) - 1):
            d = model(x, sig[i])
            if sig[i + 1] == 0:
                x = d
            else:
                h = lam(sig[i + 1]) - lam(sig[i])
                h_eta = 2 * h
                alpha_t = sig[i + 1] * math.exp(lam(sig[i + 1]))
                x = sig[i + 1] / sig[i] * math.exp(-h) * x + alpha_t * -math.expm1(-h_eta) * d
                phi_2 = math.expm1(-h_eta) / h_eta + 1
                if order == 2 and d1 is not None:
                    r = h1 / h
                    x = x + 0.5 * alpha_t * -math.expm1(-h_eta) * (1 / r) * (d - d1)
                elif order == 3 and h2 is not None:
                    r0, r1 = h1 / h, h2 / h
                    d1_0, d1_1 = (d - d1) / r0, (d1 - d2) / r1
                    dd1 = d1_0 + (d1_0 - d1_1) * r0 / (r0 + r1)
                    dd2 = (d1_0 - d1_1) / (r0 + r1)
                    phi_3 = phi_2 / h_eta - 0.5
                    x = x + alpha_t * phi_2 * dd1 - alpha_t * phi_3 * dd2
                elif order == 3 and h1 is not None:
                    x = x + alpha_t * phi_2 * (d - d1) / (h1 / h)
                x = x + noise() * sig[i + 1] * (-math.expm1(-2 * h)) ** 0.5
            d1, d2 = d, d1
            h1, h2 = h, h1
        return x
    return run


def dpmpp_sde(model, x, sig, noise, shift):  # sample_dpmpp_sde, eta 1, r 1/2 (noise from the stream)
    sig = snr_offset(sig, shift)
    r = 0.5
    for i in range(len(sig) - 1):
        d = model(x, sig[i])
        if sig[i + 1] == 0:
            x = d
            continue
        ls, lt = lam(sig[i]), lam(sig[i + 1])
        h = lt - ls
        ls1 = ls + r * h
        s1 = 1 / (1 + math.exp(ls1))
        a_s, a_s1, a_t = sig[i] * math.exp(ls), s1 * math.exp(ls1), sig[i + 1] * math.exp(lt)
        sd, su = ancestral_step(math.exp(-ls), math.exp(-ls1))
        h_ = -math.log(sd) - ls
        x2 = (a_s1 / a_s) * math.exp(-h_) * x - a_s1 * math.expm1(-h_) * d
        x2 = x2 + a_s1 * noise() * su
        dd = model(x2, s1)
        sd, su = ancestral_step(math.exp(-ls), math.exp(-lt))
        h_ = -math.log(sd) - ls
        x = (a_t / a_s) * math.exp(-h_) * x - a_t * math.expm1(-h_) * ((1 - 1 / (2 * r)) * d + 1 / (2 * r) * dd)
        x = x + a_t * noise() * su
    return x


# ---- uni_pc (comfy/extra_samplers/uni_pc.py, Comfy-Org/ComfyUI commit 0748e38f) ----
# Transcribed from ComfyUI's own variables, not the engine's: the latent y in SigmaConvert's
# variance-preserving form, alpha/std/lambda through its log and exp formulas (in float64 here),
# the model wrapped as predict_eps_sigma does, the rhos from torch.linalg.solve.

def sigma_convert(t):
    """SigmaConvert: (alpha, std, lambda) of a sigma taken as a variance-exploding one."""
    log_mean = 0.5 * math.log(1 / (t * t + 1))  # marginal_log_mean_coeff
    alpha = math.exp(log_mean)  # marginal_alpha
    std = math.sqrt(1.0 - math.exp(2.0 * log_mean))  # marginal_std
    lam_t = log_mean - 0.5 * math.log(1.0 - math.exp(2.0 * log_mean))  # marginal_lambda
    return alpha, std, lam_t


def unipc_bh_update(data, y, model_prev, t_prev, t, order, variant, use_corrector):
    """UniPC.multistep_uni_pc_bh_update with predict_x0=True; returns (x_t, model_t)."""
    _, std_p0, lam_p0 = sigma_convert(t_prev[-1])
    alpha_t, std_t, lam_t = sigma_convert(t)
    m0 = model_prev[-1]
    h = lam_t - lam_p0
    rks, D1s = [], []
    for i in range(1, order):
        rk = (sigma_convert(t_prev[-(i + 1)])[2] - lam_p0) / h
        rks.append(rk)
        D1s.append((model_prev[-(i + 1)] - m0) / rk)
    rks.append(1.0)
    rks = torch.tensor(rks, dtype=torch.float64)
    hh = -h
    h_phi_1 = math.expm1(hh)
    B_h = hh if variant == "bh1" else math.expm1(hh)
    h_phi_k = math.expm1(hh) / hh - 1
    factorial_i = 1
    R, b = [], []
    for i in range(1, order + 1):
        R.append(torch.pow(rks, i - 1))
        b.append(h_phi_k * factorial_i / B_h)
        factorial_i *= i + 1
        h_phi_k = h_phi_k / hh - 1 / factorial_i
    R = torch.stack(R)
    b = torch.tensor(b, dtype=torch.float64)
    rhos_p = None
    if D1s:
        rhos_p = torch.tensor([0.5], dtype=torch.float64) if order == 2 else torch.linalg.solve(R[:-1, :-1], b[:-1])
    x_t_ = std_t / std_p0 * y - alpha_t * h_phi_1 * m0
    pred_res = sum(r * d for r, d in zip(rhos_p.tolist(), D1s)) if D1s else 0
    x_t = x_t_ - alpha_t * B_h * pred_res
    model_t = None
    if use_corrector:
        rhos_c = torch.tensor([0.5], dtype=torch.float64) if order == 1 else torch.linalg.solve(R, b)
        model_t = data(x_t, t)
        corr_res = sum(r * d for r, d in zip(rhos_c[:-1].tolist(), D1s)) if D1s else 0
        x_t = x_t_ - alpha_t * B_h * (corr_res + float(rhos_c[-1]) * (model_t - m0))
    return x_t, model_t


def uni_pc(variant):  # sample_unipc(variant) -> UniPC.sample(method="multistep", lower_order_final=True)
    def run(model, x, sig, noise, shift):
        sigmas = list(sig)
        timesteps = sigmas  # sample_unipc: timesteps = sigmas[:], a view: the 0.001 lands in sigmas too
        if timesteps[-1] == 0:
            timesteps[-1] = 0.001

        def data(y, t):  # UniPC.data_prediction_fn over model_wrapper(predict_eps_sigma), model_type "noise"
            alpha, std, _ = sigma_convert(t)
            xin = y * (t ** 2 + 1.0) ** 0.5
            eps = (xin - model(xin, t)) / t
            return (y - std * eps) / alpha

        y = x / math.sqrt(1.0 + timesteps[0] ** 2.0)
        steps = len(timesteps) - 1
        order = min(3, len(timesteps) - 2)
        if order == 0:
            raise AssertionError("one step: ComfyUI's loop leaves the noise; not a reference case")
        for step_index in range(steps):
            if step_index == 0:
                model_prev, t_prev = [data(y, timesteps[0])], [timesteps[0]]
            elif step_index < order:
                y, model_x = unipc_bh_update(data, y, model_prev, t_prev, timesteps[step_index], step_index, variant, True)
                model_prev.append(model_x)
                t_prev.append(timesteps[step_index])
            else:
                extra_final_step = 1 if step_index == steps - 1 else 0
                for step in range(step_index, step_index + 1 + extra_final_step):
                    step_order = min(order, steps + 1 - step)
                    use_corrector = step != steps
                    y, model_x = unipc_bh_update(data, y, model_prev, t_prev, timesteps[step], step_order, variant,
                                                 use_corrector)
                    for i in range(order - 1):
                        t_prev[i], model_prev[i] = t_prev[i + 1], model_prev[i + 1]
                    t_prev[-1] = timesteps[step]
                    if step < steps:
                        model_prev[-1] = model_x
        y = y / sigma_convert(timesteps[-1])[0]  # x /= ns.marginal_alpha(timesteps[-1])
        return y / (1.0 - sigmas[-1])  # KSAMPLER: CONST.inverse_noise_scaling(sigmas[-1]), now 0.001
    return run


OWN = {"euler_ancestral": euler_ancestral_rf, "lcm": lcm, "res_multistep": res_multistep,
       "dpmpp_2m_sde": dpmpp_multistep_sde(2), "dpmpp_3m_sde": dpmpp_multistep_sde(3), "dpmpp_sde": dpmpp_sde,
       "uni_pc": uni_pc("bh1"), "uni_pc_bh2": uni_pc("bh2")}
K_NAMES = {"euler": "sample_euler", "ddim": "sample_euler", "heun": "sample_heun", "dpm_2": "sample_dpm_2",
           "dpmpp_2m": "sample_dpmpp_2m"}


def reference(sampler, velocity, seed, shape, sigmas, shift):
    g = torch.Generator("cpu").manual_seed(seed & 0xFFFFFFFF)
    x = torch.randn(shape, generator=g, dtype=torch.float32).double().reshape(1, -1)

    def noise():
        return torch.randn(shape, generator=g, dtype=torch.float32).double().reshape(1, -1)

    model = FlowDenoiser(velocity)
    if sampler in K_NAMES:
        K = k_diffusion_sampling()
        return getattr(K, K_NAMES[sampler])(model, x, sigmas, disable=True).reshape(-1)
    return OWN[sampler](lambda v, s: model(v, s), x, sigmas.tolist(), noise, shift).reshape(-1)


def toy_velocity(x, s):
    """moss-check samplers' toy field: tanh(0.5*x + c*s) - 0.3*s*x + c, c = 0.1*((i mod 7) - 3)"""
    c = 0.1 * (torch.arange(x.shape[-1], dtype=torch.float64) % 7 - 3)
    return torch.tanh(0.5 * x + c * s) - 0.3 * s * x + c


def test_schedules_match_comfyui(engine):
    toy = engine["toy"]
    seen = set()
    for case in toy["cases"]:
        if case["scheduler"] in seen:
            continue
        seen.add(case["scheduler"])
        want = schedule(case["scheduler"], toy["steps"], toy["shift"])
        got = torch.tensor(case["sigmas"], dtype=torch.float64)
        assert got.shape == want.shape, case["scheduler"]
        if case["scheduler"] == "moss":  # the official schedule: bit for bit
            assert torch.equal(got.float(), want.float())
        else:  # float32 sigmas of float64 (or float32-torch) formulas: within a float32 rounding or two
            assert (got - want).abs().max().item() <= 2.5e-7, (case["scheduler"], got, want)
    assert len(seen) == 7


# The toy: the engine stores the latent in float32 after every step (2^-24 relative) and its
# noise is within an ulp of torch's; over 6 steps of a field whose step map has a Lipschitz
# constant near 1 these stay below 1e-6. 2e-5 absolute on values of order 1 leaves room for the
# SDE samplers' larger noise coefficients while any wrong coefficient (a sign, a missing term,
# another step's sigma) moves the result by 1e-2 or more.
TOY_LIMIT = 2e-5


def test_every_sampler_and_schedule_on_the_toy(engine):
    toy = engine["toy"]
    worst = {}
    for case in toy["cases"]:
        sig = torch.tensor(case["sigmas"], dtype=torch.float64)
        want = reference(case["sampler"], toy_velocity, toy["seed"], toy["shape"], sig, toy["shift"])
        got = torch.tensor(case["x"], dtype=torch.float64)
        err = (got - want).abs().max().item()
        worst[(case["sampler"], case["scheduler"])] = err
        assert err <= TOY_LIMIT, (case["sampler"], case["scheduler"], err)
    assert len(worst) == 13 * 7
    print("toy worst max|diff|:", max(worst.values()))


# The tiny DiT: the engine's host DiT is within 1e-5 relative L2 of the fp32 reference per call
# (moss-check dit's limit); a sampler chains at most 8 such calls (4 steps, two calls a step for
# heun, dpm_2 and dpmpp_sde), each error carried on by a step map of norm near 1, so 1e-4
# relative L2 of the final latent bounds them with room for the float32 latents.
DIT_LIMIT = 1e-4


def test_every_sampler_and_schedule_on_the_tiny_dit(engine):
    import standin_pipeline as S
    dit_info = engine["dit"]
    m = S.MOSSImageTransformer.from_pretrained(os.path.join(DATA, "tiny-moss", "transformer"), torch.float32).dit
    from safetensors.torch import load_file
    g = load_file(os.path.join(DATA, "golden_dit.safetensors"))
    cond, uncond = g["forward.cond_text"].float(), g["forward.uncond_text"].float()
    shape, cfg, skip = dit_info["shape"], dit_info["cfg"], tuple(dit_info["skip_layers"])

    def velocity(x, s):
        lat = x.reshape(shape).float()
        t = float(torch.tensor(s, dtype=torch.float32) * 1000)
        with torch.inference_mode():
            vc = m(lat, cond, t)
            vu = m(lat, uncond, t, skip_layers=skip)
        return (vu + cfg * (vc - vu)).double().reshape(1, -1)

    worst = 0.0
    for case in dit_info["cases"]:
        sig = torch.tensor(case["sigmas"], dtype=torch.float64)
        want = reference(case["sampler"], velocity, dit_info["seed"], shape, sig, dit_info["shift"])
        got = torch.tensor(case["x"], dtype=torch.float64)
        rel = ((got - want).norm() / want.norm()).item()
        worst = max(worst, rel)
        assert rel <= DIT_LIMIT, (case["sampler"], case["scheduler"], rel)
    assert len(dit_info["cases"]) == 13 * 7
    print("tiny DiT worst relative L2:", worst)
