"""`octet bench`: the JSON report's fields and their sanity, inputs from files, the
outputs it measured, and its error handling. Runs few iterations to stay fast; no speed
is asserted (timings on a shared machine are noise), only consistency."""
import json
import os
import tempfile

import numpy as np

from harness import Tally, make_calibration, parse_args, run_octet

args = parse_args()
FIXTURES = os.path.join(args.source_dir, "tests/models/fixtures")
BERT = os.path.join(FIXTURES, "bert_tiny.onnx")
GPT2 = os.path.join(FIXTURES, "gpt2_tiny.onnx")
t = Tally("bench")
TMP = tempfile.TemporaryDirectory(prefix="octet_bench_test_")
FAST = ["--warmup", "1", "--iters", "5"]


def tmp(name):
    return os.path.join(TMP.name, name)


def bench(model, *extra):
    code, out, err = run_octet(args.octet, "bench", model, "--json", *FAST, *extra)
    assert code == 0, f"exit {code}: {err.strip()}"
    return json.loads(out)


def check_fields():
    r = bench(BERT, "--dim", "batch=2", "--dim", "seq=16", "--threads", "1")
    for key in ("p50_ms", "p90_ms", "mean_ms", "min_ms", "peak_rss_mb", "model_mb", "threads", "iters"):
        assert key in r, f"missing {key}: {sorted(r)}"
    assert 0 < r["min_ms"] <= r["p50_ms"] <= r["p90_ms"] <= r["max_ms"], r
    assert r["min_ms"] <= r["mean_ms"] <= r["max_ms"], r
    assert r["iters"] == 5 and r["warmup"] == 1 and len(r["samples_ms"]) == 5, r
    assert r["threads"] == 1
    assert 1 < r["peak_rss_mb"] < 4096 and 0 < r["rss_mb"] <= r["peak_rss_mb"] + 1, r
    assert abs(r["model_mb"] * 2**20 - os.path.getsize(BERT)) < 1, (r["model_mb"], os.path.getsize(BERT))
    assert r["bindings"] == {"batch": 2, "seq": 16} and r["specialized"] == {"batch": 2, "seq": 16}
    assert r["tokens_per_run"] == 32, r.get("tokens_per_run")
    assert abs(r["tokens_per_s"] - 32 * r["throughput_per_s"]) < 1e-6 * r["tokens_per_s"]
    assert abs(r["throughput_per_s"] * r["mean_ms"] - 1000) < 1e-6
    assert r["kernels"] == "optimized" and r["level"] == 2
    assert r["optimized_nodes"] + r["reference_nodes"] == r["nodes"] == r["optimizer"]["nodes_after"], r
    assert sum(r["reference_ops"].values()) == r["reference_nodes"], r["reference_ops"]
    # The two GeLUs end up inside the MatMulBias epilogues; attention fuses per layer, its
    # Q/K/V projections merged into one (4 MatMulBias per layer).
    assert r["fused_ops"] == {"octet.Attention": 2, "octet.MatMulBias": 8}, r["fused_ops"]
    assert r["cpu"]["isa"] in ("generic", "avx2", "avx512"), r["cpu"]
    assert isinstance(r["cpu"]["model"], str)
    for k in ("load", "optimize", "session", "first_run"):
        assert r["timing_ms"][k] >= 0, r["timing_ms"]
    assert [i["name"] for i in r["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"], r["inputs"]
    assert all(i["shape"] == [2, 16] for i in r["inputs"]), r["inputs"]


def check_reference_and_level0():
    r = bench(GPT2, "--dim", "batch=1", "--dim", "seq=8", "--reference", "--level", "0")
    assert r["kernels"] == "reference" and r["optimized_nodes"] == 0, r
    assert r["reference_nodes"] == r["nodes"] == r["optimizer"]["nodes_before"], r
    assert r["fused_ops"] == {} and r["level"] == 0


def check_default_threads_and_dynamic():
    r = bench(BERT, "--dim", "batch=1", "--dim", "seq=4", "--dynamic")
    assert r["threads"] == len(os.sched_getaffinity(0)) == r["cores"], (r["threads"], r["cores"])
    assert r["specialized"] == {} and r["bindings"] == {"batch": 1, "seq": 4}, r


def check_inputs_from_file_and_outputs():
    """bench on inputs from an .npz gives the outputs `octet run` gives on them."""
    rng = np.random.default_rng(1)
    feeds = tmp("feeds.npz")
    np.savez(feeds, input_ids=rng.integers(0, 1000, (1, 12)).astype(np.int64),
             attention_mask=np.ones((1, 12), np.int64), token_type_ids=np.zeros((1, 12), np.int64))
    out = tmp("bench_out.npz")
    r = bench(BERT, "--input", feeds, "--dim", "batch=1", "--dim", "seq=12", "--out", out)
    assert all(i["source"] == f"file {feeds}" for i in r["inputs"]), r["inputs"]
    assert r["outputs_file"] == out and r["tokens_per_run"] == 12
    run_out = tmp("run_out.npz")
    code, _, err = run_octet(args.octet, "run", BERT, "--input", feeds, "--out", run_out)
    assert code == 0, err
    with np.load(out) as got, np.load(run_out) as want:
        assert set(got.files) == set(want.files) == {"last_hidden_state", "logits"}, got.files
        for k in want.files:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)


def check_external_data_size():
    model = os.path.join(FIXTURES, "external_data/model.onnx")
    r = bench(model, "--dim", "batch=2")
    total = os.path.getsize(model) + os.path.getsize(os.path.join(FIXTURES, "external_data/weights.bin"))
    assert abs(r["model_mb"] * 2**20 - total) < 1, (r["model_mb"] * 2**20, total)
    assert len(r["model_files"]) == 2 and "tokens_per_s" not in r, r


def check_text():
    code, out, err = run_octet(args.octet, "bench", GPT2, *FAST, "--dim", "batch=1", "--dim", "seq=8", "--threads", "1")
    assert code == 0, err
    for needle in ("latency:", "p50", "p90", "inferences/s", "tokens/s", "peak RSS", "kernels:", "1 thread(s)"):
        assert needle in out, f"'{needle}' missing from:\n{out}"


def check_profile():
    """--profile: per-op-type time of separate profiled runs, every node accounted for."""
    r = bench(BERT, "--dim", "batch=1", "--dim", "seq=16", "--profile")
    rows = r["profile"]
    assert sum(row["nodes"] for row in rows) == r["nodes"], rows
    assert abs(sum(row["share"] for row in rows) - 1) < 1e-6, rows
    assert all(row["ms_per_run"] >= 0 and row["kernel"] in ("optimized", "reference") for row in rows), rows
    assert [row["ms_per_run"] for row in rows] == sorted((row["ms_per_run"] for row in rows), reverse=True)
    ops = {row["op"]: row for row in rows}
    assert ops["octet.Attention"]["nodes"] == 2 and ops["octet.Attention"]["kernel"] == "optimized", ops
    code, out, err = run_octet(args.octet, "bench", BERT, *FAST, "--dim", "batch=1", "--dim", "seq=16", "--profile")
    assert code == 0 and "profile:" in out and "octet.Attention" in out, out + err
    assert "profile" not in bench(BERT, "--dim", "batch=1", "--dim", "seq=16")


def check_threads_give_identical_outputs():
    """A session may run on one thread while other processes hold the cores
    (runtime/thread_governor.h): that is only sound when one thread and two compute the
    same bits. fp32 and static int8 (per-token QMatMul, QAttention) BERT, fixed threads."""
    calib = tmp("calib")
    make_calibration(args.source_dir, calib, "--samples", "4", "--models", "bert_tiny")
    calib = os.path.join(calib, "bert_tiny")
    int8 = tmp("bert_int8.onnx")
    code, _, err = run_octet(args.octet, "quantize", BERT, "-o", int8, "--calib", calib, "-q", timeout=600)
    assert code == 0, err
    for model in (BERT, int8):
        outs = []
        for threads in ("1", "2"):
            out = tmp(f"threads_{threads}.npz")
            r = bench(model, "--dim", "batch=2", "--dim", "seq=24", "--threads", threads, "--fixed-threads",
                      "--out", out)
            assert r["adapt_threads"] is False and r["one_thread_runs"] == 0, r
            with np.load(out) as f:
                outs.append({k: f[k] for k in f.files})
        for k in outs[0]:
            assert np.array_equal(outs[0][k], outs[1][k]), \
                f"{model} {k}: 1 and 2 threads differ by up to {np.abs(outs[0][k] - outs[1][k]).max()}"
    r = bench(BERT, "--dim", "batch=1", "--dim", "seq=8", "--threads", "2")
    assert r["adapt_threads"] is True and 0 <= r["one_thread_runs"] <= r["iters"], r


t.check("--json fields and sane values", check_fields)
t.check("1 or 2 threads: the same outputs bit for bit (fp32, int8)", check_threads_give_identical_outputs)
t.check("--profile", check_profile)
t.check("--reference --level 0", check_reference_and_level0)
t.check("default threads, --dynamic", check_default_threads_and_dynamic)
t.check("--input .npz and --out match octet run", check_inputs_from_file_and_outputs)
t.check("model_mb counts external data", check_external_data_size)
t.check("text report", check_text)


def expect_error(extra, *needles, model=BERT):
    code, out, err = run_octet(args.octet, "bench", model, *extra)
    assert code == 1, f"{extra}: exit {code}, stderr: {err.strip()}"
    lines = [l for l in err.strip().splitlines() if l]
    assert len(lines) == 1, f"{extra}: expected one error line, got: {err!r}"
    for needle in needles:
        assert needle in lines[0], f"{extra}: error lacks '{needle}': {lines[0]}"


def check_bad_arguments():
    dims = ["--dim", "batch=1", "--dim", "seq=4"]
    expect_error([*dims, "--iters", "0"], "--iters 0")
    expect_error([*dims, "--warmup", "-1"], "--warmup -1")
    expect_error([*dims, "--threads", "-2"], "--threads -2")
    expect_error([*dims, "--level", "9"], "--level 9")
    expect_error([*dims, "--dim", "foo=1"], "foo")
    expect_error([*dims, "--out", tmp("x.npy")], "--out", ".npz")
    expect_error([*dims, "--seq-dim", "tokens"], "--seq-dim tokens", "batch, seq")
    expect_error(["--dim", "batch=1"], "seq", "--dim")  # random inputs need every dim
    expect_error([*dims, "--input", tmp("nope.npy")], "nope.npy")
    expect_error([], "missing.onnx", model=tmp("missing.onnx"))


def check_help():
    code, out, _ = run_octet(args.octet, "bench", "--help")
    assert code == 0
    for needle in ("--dim", "--threads", "--warmup", "--iters", "--level", "--reference", "--input", "--random",
                   "--json", "--dynamic", "--seq-dim", "--out", "--seed", "one per core", "default 10",
                   "default 100", "peak_rss_mb", "VmHWM"):
        assert needle in out, f"--help lacks '{needle}'"


def check_compare_script():
    """bench/compare.py end to end on one small setting: octet and onnxruntime agree."""
    import subprocess
    import sys
    out = tmp("compare.json")
    proc = subprocess.run([sys.executable, os.path.join(args.source_dir, "bench/compare.py"), "--octet", args.octet,
                           "--model", f"{BERT}:batch=1,seq=8", "--engines", "octet,ort", "--iters", "3",
                           "--warmup", "1", "--json", out], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out) as f:
        r = json.load(f)
    assert r["machine"]["cores"] >= 1 and r["machine"]["versions"]["onnxruntime"], r["machine"]
    (entry,) = r["results"]
    assert entry["outputs"]["octet"]["ok"], entry["outputs"]
    for engine in ("octet", "ort"):
        e = entry["engines"][engine]
        assert e["iters"] == 3 and e["threads"] == 2 and 0 < e["p50_ms"] <= e["p90_ms"] and e["peak_rss_mb"] > 0, e
    assert "bert_tiny" in proc.stdout and "vs ort p50" in proc.stdout, proc.stdout


t.check("bad arguments: exit 1, one line", check_bad_arguments)
t.check("bench/compare.py: octet vs onnxruntime", check_compare_script)
t.check("--help", check_help)
t.finish()
