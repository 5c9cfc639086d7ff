"""Issue 19's benchmark logic without a GPU or torch: the compiled anchors' arguments, the
targets against whole-model torch.compile, merging two processes' results files, and the first
image's timing parts (python3 -m pytest bench/tests)."""
import json
import os
import subprocess
import sys

import pytest

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)

import run_bench  # noqa: E402
from mossbench import first_image as FI  # noqa: E402
from mossbench import merge as MG  # noqa: E402
from mossbench import report as R  # noqa: E402
from mossbench.first_image_torch import MARK, sigmas  # noqa: E402


# ---- arguments ---------------------------------------------------------------------------------
def test_compile_scope_lists_and_single_values():
    assert run_bench.parse_args([]).compile_scope == ["blocks", "model"]
    assert run_bench.parse_args(["--compile-scope", "model"]).compile_scope == ["model"]
    assert run_bench.parse_args(["--compile-scope", "model, blocks"]).compile_scope == ["model", "blocks"]
    a = run_bench.parse_args(["--compile-mode", "default,max-autotune-no-cudagraphs"])
    assert a.compile_mode == ["default", "max-autotune-no-cudagraphs"]
    assert run_bench.parse_args([]).compile_sizes == "512,1024,1456"


@pytest.mark.parametrize("argv", [["--compile-scope", "graph"], ["--compile-scope", ","],
                                  ["--compile-mode", "fastest"], ["--first-impls", "ours,comfy"],
                                  ["--first-cache", "hot"], ["--report-only"]])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        run_bench.parse_args(argv)
    assert e.value.code == 2


def bench(argv):
    return run_bench.Bench(run_bench.parse_args(argv))


def test_compile_phase_selection():
    assert not bench([]).wants_compile()
    assert bench(["--compile"]).wants_compile()
    assert bench(["--only", "compile"]).wants_compile()
    assert not bench(["--only", "compile"]).wants("torch")  # the eager baselines stay out
    assert not bench(["--compile", "--skip", "compile"]).wants_compile()
    assert not bench(["--compile", "--skip", "torch"]).wants_compile()
    assert not bench(["--compile", "--only", "ours"]).wants_compile()


def test_first_image_phase_selection():
    assert not bench([]).wants_first_image()
    assert bench(["--first-image"]).wants_first_image()
    assert bench(["--only", "first_image"]).wants_first_image()
    assert not bench(["--first-image", "--only", "ours"]).wants_first_image()
    assert not bench(["--first-image", "--skip", "first_image"]).wants_first_image()


def test_compile_need_grows_with_the_first_calls_seen():
    b = bench(["--compile-reserve", "100"])
    assert b.compile_need("moss_ref compile (model)", "model") == 100
    assert b.compile_need("moss_ref compile (blocks)", "blocks") == 50
    b.results["torch"]["dit"] = {"moss_ref compile (model)": {"512": {"first_call_s": 200.0}}}
    assert b.compile_need("moss_ref compile (model)", "model") == pytest.approx(240.0)
    assert b.compile_need("moss_ref compile (blocks)", "blocks") == 50


def test_first_image_commands_carry_the_runs_flags(tmp_path):
    b = bench(["--build", "/b", "--cfg", "3", "--skip-layers", "22", "--first-size", "1024", "--first-steps", "50",
               "--torch-device", "cuda", "--moss-ref", "/ref.py", "--wheels", str(tmp_path)])
    b.model, b.prompts = "/m", {64: "a lighthouse"}
    cmd, env = b.first_image_cmd("ours", "/o.png")
    assert cmd == ["/b/moss-infer-hip", "--model", "/m", "--size", "1024x1024", "--steps", "50", "--cfg", "3.0",
                   "--skip-layers", "22", "--prompt", "a lighthouse", "--negative", "", "--seed", "42", "-o", "/o.png"]
    cmd, env = b.first_image_cmd("compiled", "/c.png")
    assert cmd[cmd.index("--impl") + 1] == "compiled" and cmd[cmd.index("--steps") + 1] == "50"
    assert cmd[cmd.index("--moss-ref") + 1] == "/ref.py"
    # the compile is cold: caches of its own, below the run's temporary folder
    assert env["TORCHINDUCTOR_CACHE_DIR"].startswith(b.tmp) and os.listdir(env["TORCHINDUCTOR_CACHE_DIR"]) == []
    _, env2 = b.first_image_cmd("compiled", "/c.png")
    assert env2["TORCHINDUCTOR_CACHE_DIR"] != env["TORCHINDUCTOR_CACHE_DIR"]
    _, env3 = b.first_image_cmd("diffsynth", "/d.png")
    assert env3.get("TORCHINDUCTOR_CACHE_DIR") == os.environ.get("TORCHINDUCTOR_CACHE_DIR")


# ---- targets -----------------------------------------------------------------------------------
def dit_row(size, baseline, ours, theirs, note="cond + uncond"):
    return R.speed_row("DiT step", f"{size}x{size}", ours, baseline, theirs, None, None, note)


def test_issue19_targets_pass_fail_and_blocks_beside():
    rows = [dit_row(512, R.COMPILED_BLOCKS, 0.040, 0.044), dit_row(512, R.COMPILED_MODEL, 0.040, 0.043),
            dit_row(1024, R.COMPILED_MODEL, 0.163, 0.165), dit_row(1024, "diffsynth eager", 0.163, 0.3)]
    t = R.targets_issue19(rows, [512, 1024, 1456])
    assert [x["status"] for x in t] == ["PASS", "FAIL", "not measured"]
    assert t[0]["value"] == pytest.approx(0.040 / 0.043) and t[0]["beside"]["blocks_ratio"] == pytest.approx(0.040 / 0.044)
    assert t[1]["value"] == pytest.approx(0.163 / 0.165) and t[1]["beside"]["blocks_ratio"] is None
    assert "1456x1456" in t[2]["target"]
    assert "0.909" in R.target_line(t[0]) and "(blocks): 0.909" in R.target_line(t[0])


def test_issue19_target_at_exactly_the_limit_passes_and_modes_are_kept_apart():
    rows = [dit_row(512, R.compiled_name("model", "max-autotune-no-cudagraphs"), 0.05, 0.1),
            dit_row(512, R.compiled_name("model", "default"), 0.095, 0.1)]
    assert R.compiled_name("model", "default") == R.COMPILED_MODEL
    t = R.targets_issue19(rows, [512])[0]
    assert t["value"] == pytest.approx(0.95) and t["status"] == "PASS"  # the default mode's row, not the other


def test_issue19_target_says_two_processes():
    rows = [dit_row(512, R.COMPILED_MODEL, 0.04, 0.05, "cond + uncond; separate processes: ours from this run, "
                                                       "baseline from b.json")]
    assert R.targets_issue19(rows, [512])[0]["target"].endswith("(two processes)")


# ---- merging -----------------------------------------------------------------------------------
def results(git="abc", **sections):
    r = {"date": "2026-12-02T10:00:00+00:00", "env": {"gpu": "NVIDIA H200", "driver": "580", "git": git,
                                                      "engine_version": "moss-infer-hip 0.1.0\narch"},
         "args": {"prompt_tokens": 64, "cfg": 3.0, "skip_layers": "22", "dit_sizes": "512,1024"},
         "ours": {}, "torch": {}, "errors": {}, "skipped": []}
    r.update(sections)
    return r


def test_merge_fills_only_what_is_missing_and_records_where_from():
    cur = results(ours={"dit_512": {"denoise": {"wall_gap_s": 0.04}}},
                  torch={"dit": {"diffsynth eager": {"512": {"median_s": 0.06}}}})
    old = results(torch={"dit": {"diffsynth eager": {"512": {"median_s": 9.0}, "1024": {"median_s": 0.3}},
                                 R.COMPILED_MODEL: {"512": {"median_s": 0.045, "first_call_s": 200.0}}},
                         "compile": {R.COMPILED_MODEL: {"mode": "default"}}},
                  ours={"dit_512": {"denoise": {"wall_gap_s": 7.0}}}, errors={"torch VAE": "boom"},
                  skipped=["x: no time"])
    assert MG.merge_into(cur, old, "b.json") == []
    assert cur["torch"]["dit"]["diffsynth eager"]["512"]["median_s"] == 0.06  # this run wins
    assert cur["ours"]["dit_512"]["denoise"]["wall_gap_s"] == 0.04
    assert cur["torch"]["dit"]["diffsynth eager"]["1024"]["median_s"] == 0.3
    assert cur["torch"]["dit"][R.COMPILED_MODEL]["512"]["first_call_s"] == 200.0
    assert MG.source_of(cur, "torch", "dit", R.COMPILED_MODEL, "512") == "b.json"
    assert MG.source_of(cur, "torch", "dit", "diffsynth eager", "1024") == "b.json"
    assert MG.source_of(cur, "torch", "dit", "diffsynth eager", "512") is None
    assert MG.source_of(cur, "ours", "dit_512") is None
    assert cur["errors"] == {"torch VAE [b.json]": "boom"} and cur["skipped"] == ["x: no time [b.json]"]
    assert cur["merged_from"][0]["label"] == "b.json"


def test_merge_a_measurement_replaces_a_failed_attempt_and_not_the_reverse():
    timed_out = {"rc": None, "wall_s": None, "error": "timed out"}
    measured = {"rc": 0, "wall_s": 256.1}
    cur = results(first_image={"rows": {"cold": {"compiled": dict(timed_out), "ours": {"rc": 0, "wall_s": 27.1}}}})
    later = results(first_image={"rows": {"cold": {"compiled": dict(measured), "ours": dict(timed_out)}}})
    MG.merge_into(cur, later, "c.json")
    rows = cur["first_image"]["rows"]["cold"]
    assert rows["compiled"] == measured and MG.source_of(cur, "first_image", "rows", "cold", "compiled") == "c.json"
    assert rows["ours"]["wall_s"] == 27.1 and MG.source_of(cur, "first_image", "rows", "cold", "ours") is None
    assert cur["superseded"] == ["first_image/rows/cold/compiled: timed out in this run, measured in c.json"]
    # two failures: the first one stays, nothing is called superseded
    cur = results(first_image={"rows": {"cold": {"compiled": dict(timed_out)}}})
    MG.merge_into(cur, results(first_image={"rows": {"cold": {"compiled": {"error": "crashed"}}}}), "c.json")
    assert cur["first_image"]["rows"]["cold"]["compiled"]["error"] == "timed out" and cur["superseded"] == []
    # the failure itself filled in from an earlier file: named by that file
    cur = results()
    MG.merge_into(cur, results(first_image={"rows": {"cold": {"compiled": dict(timed_out)}}}), "b.json")
    MG.merge_into(cur, later, "c.json")
    assert cur["superseded"] == ["first_image/rows/cold/compiled: timed out in b.json, measured in c.json"]


def test_merged_rows_count_flops_with_their_own_files_model(tmp_path):
    def te_facts(layers, params):
        return {"dit_config": None, "text_config": {"num_attention_heads": 16, "head_dim": 256,
                                                    "layer_types": ["full_attention"] * layers},
                "text_layer_params": params}
    done = {"te_encode_s": 0.01, "te_layers": "resident", "te_load_s": 1.0}
    shallow = results(model_facts=te_facts(2, 1000))  # measured no text encoder row
    deep = results(ours={"te_64": {"done": done}}, model_facts=te_facts(32, 100000))
    shallow["args"]["te_tokens"] = deep["args"]["te_tokens"] = "64"
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(shallow))
    pb.write_text(json.dumps(deep))
    b = bench(["--report-only", "--merge-results", f"{pa},{pb}"])
    b.merge()
    rows, _ = b.build_rows()
    te = next(r for r in rows if r["stage"] == "text encoder")
    want = 2 * 64 * 100000 + 32 * 2 * 64 * 64 * 16 * 256
    assert te["tflop"] == pytest.approx(want / 1e12)


def test_merge_lists_setup_mismatches():
    cur, old = results(), results(git="def")
    old["env"]["gpu"] = "NVIDIA H100"
    old["args"]["cfg"] = 4.0
    old["env"]["engine_version"] = "moss-infer-hip 0.1.0\nother arch line"  # first line equal: not a mismatch
    mism = MG.merge_into(cur, old, "b.json")
    assert mism == ["gpu: NVIDIA H200 vs NVIDIA H100", "git: abc vs def", "cfg: 3.0 vs 4.0"]


def test_union_list_keeps_first_seen_order():
    assert MG.union_list(["512,1024", "1024,1456", None, ""]) == "512,1024,1456"


def test_rows_mixing_processes_are_labelled():
    b = bench(["--dit-sizes", "512", "--compile-sizes", "512,1456"])
    b.results["ours"] = {"dit_512": {"denoise": {"wall_gap_s": 0.04}}}
    MG.merge_into(b.results, results(torch={"dit": {R.COMPILED_MODEL: {"512": {"median_s": 0.05},
                                                                        "1456": {"median_s": 0.4}}}}), "b.json")
    rows, _ = b.build_rows()
    r512 = next(r for r in rows if r["shape"] == "512x512" and r["baseline"] == R.COMPILED_MODEL)
    assert "separate processes: ours from this run, baseline from b.json" in r512["note"]
    assert r512["ratio"] == pytest.approx(0.8)
    assert any(r["shape"] == "1456x1456" for r in rows)  # a compiled size beyond --dit-sizes has its row
    t = R.targets_issue19(rows, b.dit_report_sizes())
    assert t[0]["status"] == "PASS" and t[0]["target"].endswith("(two processes)")
    assert t[1]["status"] == "not measured"  # 1456: no ours


def test_report_only_merges_two_files_into_one_report(tmp_path):
    a = results(ours={"dit_512": {"denoise": {"wall_gap_s": 0.04}}}, model_facts={"dit_config": None})
    b = results(torch={"dit": {R.COMPILED_MODEL: {"512": {"median_s": 0.05, "first_call_s": 210.0}}},
                       "compile": {R.COMPILED_MODEL: {"mode": "default", "graphs": {"unique_graphs": 2}}}})
    b["args"]["compile_sizes"] = "512"
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a))
    pb.write_text(json.dumps(b))
    out = tmp_path / "out"
    rc = run_bench.main(["--report-only", "--merge-results", f"{pa},{pb}", "--results-dir", str(out), "--tag", "t"])
    assert rc == 0
    md = next(p for p in out.iterdir() if p.suffix == ".md").read_text()
    assert "PASS: DiT step 512x512 / moss_ref compile (model) <= 0.95 (two processes): 0.800" in md
    assert "moss_ref compile (model) (mode default): first calls 512: 210.0 s; graphs 2;" in md
    assert "nothing was measured by this process" in md
    assert "a.json" in md and "b.json" in md


# ---- first image -------------------------------------------------------------------------------
DONE = ("done: text encoder 1.20 s (load 0.90 s, encode 0.30 s, resident, 64+10 tokens), dit load 3.10 s, "
        "denoise 8.20 s (50 steps), vae 0.08 s, total 13.00 s; seed 42; 42 of 42 DiT blocks resident")


def test_ours_parts_from_the_done_line():
    p = FI.ours_parts("device 0: NVIDIA H200\ntext encoder\ndenoise 1/50 0.2\nvae\n" + DONE + "\n")
    assert p["load_s"] == pytest.approx(4.0) and p["text_encoder_s"] == 0.30
    assert p["denoise_s"] == 8.20 and p["decode_s"] == 0.08 and p["total_s"] == 13.0
    assert FI.ours_parts("error: no model\n") is None


def test_torch_parts_take_the_last_mark_line():
    out = "noise\n" + MARK + json.dumps({"parts": {"load_s": 1.0}}) + "\n" + MARK + json.dumps({"parts": {"load_s": 2.0}})
    assert FI.parse_torch_stdout(out)["parts"]["load_s"] == 2.0
    assert FI.parse_torch_stdout("Traceback ...\n") is None


def test_result_counts_wall_only_with_exit_0_and_a_png(tmp_path):
    png = tmp_path / "x.png"
    run = {"wall_s": 12.5, "rc": 0, "stdout": "", "stderr": DONE + "\n"}
    r = FI.result_of("ours", run, str(png))
    assert r["wall_s"] is None and r["error"] == "no PNG written"
    png.write_bytes(b"\x89PNG")
    assert FI.result_of("ours", run, str(png))["wall_s"] == 12.5
    r = FI.result_of("compiled", dict(run, rc=None, stdout=MARK + json.dumps({"parts": {"load_s": 3.0},
                                                                                "compile": {"unique_graphs": 2}})),
                     str(png))
    assert r["wall_s"] is None and r["error"] == "timed out" and r["parts"] == {"load_s": 3.0}
    assert r["compile"] == {"unique_graphs": 2}
    assert FI.result_of("diffsynth", dict(run, rc=1), str(png))["error"] == "exit 1"


def test_run_timed_measures_and_kills(tmp_path):
    r = FI.run_timed([sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"], dict(os.environ), 30)
    assert r["rc"] == 3 and r["stdout"].strip() == "hi" and r["wall_s"] > 0
    r = FI.run_timed([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), 0.5)
    assert r["rc"] is None and "killed after" in r["stderr"] and r["wall_s"] < 10


def test_ratios_per_cache_and_part():
    rows = {"warm": {"ours": {"wall_s": 10.0, "parts": {"load_s": 2.0, "text_encoder_s": 0.5, "denoise_s": 7.0,
                                                         "decode_s": 0.1}},
                     "diffsynth": {"wall_s": 40.0, "parts": {"load_s": 20.0, "text_encoder_s": 1.0, "denoise_s": 14.0,
                                                              "decode_s": 0.0}},
                     "compiled": {"wall_s": None, "error": "timed out"}},
            "cold": {"ours": {"wall_s": None}, "diffsynth": {"wall_s": 50.0}}}
    q = FI.ratios(rows)
    assert q["warm"]["diffsynth"] == {"wall": 0.25, "load": 0.1, "text_encoder": 0.5, "denoise": 0.5, "decode": None}
    assert q["warm"]["compiled"]["wall"] is None and q["cold"]["diffsynth"]["wall"] is None
    table = R.first_image_table({"rows": rows})
    assert any("| warm | DiffSynth path" in line and "| 40.00 |" in line and "| 0.250 |" in line for line in table)


def test_page_cache_warm_read_and_drop(tmp_path):
    (tmp_path / "transformer").mkdir()
    (tmp_path / "transformer" / "w.safetensors").write_bytes(b"x" * 1000)
    (tmp_path / "config.json").write_bytes(b"{}")
    assert FI.warm_page_cache(str(tmp_path))["bytes"] == 1002
    why = FI.drop_page_cache(str(tmp_path / "no-such-dir" / "drop_caches"))
    assert why.startswith("cold: not possible here")


def test_schedule_runs_from_one_to_zero_shifted():
    s = sigmas(4, 5.0)
    assert s[0] == 1.0 and s[-1] == 0.0 and len(s) == 5
    assert s[2] == pytest.approx(5 * 0.5 / (1 + 4 * 0.5))
    assert all(a > b for a, b in zip(s, s[1:]))


def test_torch_script_usage_without_torch():
    """The first-image script parses its flags before importing torch: a bad flag is a usage error."""
    p = subprocess.run([sys.executable, os.path.join(BENCH, "mossbench", "first_image_torch.py"), "--impl", "comfy",
                        "--model", "m", "--out", "o", "--prompt", "p"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "invalid choice" in p.stderr


def test_kernel_profile_counts_each_op_per_step():
    torch = pytest.importorskip("torch")
    from mossbench import baselines as B
    a = torch.randn(256, 256)
    b = torch.randn(256, 256)

    def step():
        (a @ b).relu_()
        return (a @ b) @ b

    p = B.kernel_profile(step, "cpu", steps=3, top=50)
    by_name = {k["kernel"]: k for k in p["kernels"]}
    assert p["steps"] == 3
    assert by_name["aten::mm"]["calls_per_step"] == 3  # three products a step, over three steps
    assert by_name["aten::relu_"]["calls_per_step"] == 1
    times = [k["ms_per_step"] for k in p["kernels"]]
    assert times == sorted(times, reverse=True) and all(t > 0 for t in times)
    assert abs(p["total_ms_per_step"] - sum(times)) < 1e-9 or len(p["kernels"]) == 50
