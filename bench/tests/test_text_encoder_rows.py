"""The text encoder's rows: our encode (weights on the device) against transformers' forward,
our load in a row of its own (no GPU, no torch: python3 -m pytest bench/tests)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mossbench.engine import parse_log  # noqa: E402
from mossbench.report import text_encoder_rows  # noqa: E402

RESIDENT = ("done: text encoder 0.930 s (load 0.700 s, encode 0.030 s, resident), dit load 3.100 s, "
            "denoise 1.170 s (4 steps), vae 0.070 s, total 6.200 s; seed 42; 42 of 42 DiT blocks resident")
STREAMED = ("done: text encoder 2.080 s (load 0.000 s, encode 2.080 s, streamed), dit load 3.100 s, "
            "denoise 1.170 s (4 steps), vae 0.070 s, total 6.200 s; seed 42; 2 of 42 DiT blocks resident")
WITH_TOKENS = ("done: text encoder 0.930 s (load 0.870 s, encode 0.030 s, resident, 64 tokens), dit load 3.100 s, "
               "denoise 1.170 s (4 steps), vae 0.070 s, total 6.200 s; seed 42; 42 of 42 DiT blocks resident")
TWO_PROMPTS = ("done: text encoder 0.930 s (load 0.870 s, encode 0.040 s, resident, 64+10 tokens), dit load 3.100 s, "
               "denoise 1.170 s (4 steps), vae 0.070 s, total 6.200 s; seed 42; 42 of 42 DiT blocks resident")
OLD = ("done: text encoder 2.080 s, dit load 3.100 s, denoise 1.170 s (4 steps), vae 0.070 s, total 6.200 s; "
       "seed 42; 42 of 42 DiT blocks resident")


def done_of(line):
    return parse_log([(1.0, line + "\n")])["done"]


def test_done_line_splits_the_text_encoder():
    d = done_of(RESIDENT)
    assert d["text_encoder_s"] == 0.93 and d["dit_load_s"] == 3.1  # the total stays first
    assert d["te_load_s"] == 0.7 and d["te_encode_s"] == 0.03 and d["te_layers"] == "resident"
    d = done_of(STREAMED)
    assert d["te_encode_s"] == 2.08 and d["te_layers"] == "streamed" and d["resident_blocks"] == 2
    d = done_of(OLD)
    assert d["text_encoder_s"] == 2.08 and d["te_encode_s"] is None


def test_rows_compare_encode_with_forward_and_load_with_load():
    torch_te = {"load_s": 4.0, "64": {"median_s": 0.052}, "512": {"median_s": 0.073}}
    ours = {64: {"done": done_of(RESIDENT)}, 512: {"done": done_of(STREAMED)}}
    rows, mem = text_encoder_rows(ours, torch_te, [64, 512], None, 761.0)
    by = {(r["stage"], r["shape"]): r for r in rows}
    assert by[("text encoder", "64 tokens")]["ours_s"] == 0.03
    assert abs(by[("text encoder", "64 tokens")]["ratio"] - 0.03 / 0.052) < 1e-12
    assert by[("text encoder", "512 tokens")]["ours_s"] == 2.08
    assert "streams" in by[("text encoder", "512 tokens")]["note"]
    load = by[("text encoder load", "layers to device")]
    assert load["ours_s"] == 0.7 and load["baseline_s"] == 4.0
    assert [m["shape"] for m in mem] == ["64 tokens", "512 tokens"]
    # A log without the split falls back to the total.
    rows, _ = text_encoder_rows({64: {"done": done_of(OLD)}}, {}, [64], None, None)
    assert rows[0]["ours_s"] == 2.08 and rows[0]["baseline"] is None


def test_done_line_names_the_prompts_encoded():
    d = done_of(WITH_TOKENS)
    assert d["te_encode_s"] == 0.03 and d["te_layers"] == "resident" and d["te_prompt_tokens"] == [64]
    assert d["dit_load_s"] == 3.1
    d = done_of(TWO_PROMPTS)
    assert d["te_prompt_tokens"] == [64, 10] and d["te_encode_s"] == 0.04
    assert done_of(RESIDENT)["te_prompt_tokens"] is None
    rows, _ = text_encoder_rows({64: {"done": done_of(WITH_TOKENS)}}, {"64": {"median_s": 0.052}}, [64], None, None)
    assert "one prompt of 64 tokens" in rows[0]["note"]
    rows, _ = text_encoder_rows({64: {"done": done_of(TWO_PROMPTS)}}, {"64": {"median_s": 0.052}}, [64], None, None)
    assert "not like with like" in rows[0]["note"]
