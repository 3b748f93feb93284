"""`octet optimize` and `octet inspect --optimized`.

(a) Every fixture optimized at level 2 (symbolic, and specialized with --dim) is a model
    onnx.checker accepts (octet-domain ops are custom, so no full_check), and `octet run`
    gives the same outputs on it as on the original for the same random inputs.
(b) A level-1 model has no octet-domain ops, so onnxruntime can run it: it must match
    onnxruntime on the original, a check by a runtime nobody here wrote.
(c) The report (text and --json) says what fused; inspect counts the fused ops and keeps
    every key it had before.
(d) Output never replaces the input model or its data file; an existing file only with
    --force. Bad arguments exit 1 with one line naming the problem."""
import json
import os
import shutil
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

from harness import Tally, parse_args, run_octet

args = parse_args()
FIXTURES = os.path.join(args.source_dir, "tests/models/fixtures")
BERT = os.path.join(FIXTURES, "bert_tiny.onnx")
t = Tally("optimize")
TMP = tempfile.TemporaryDirectory(prefix="octet_optimize_test_")

# Fixture -> (run dims, fused ops level 2 must produce).
MODELS = {
    # GeLUs that follow a MatMulBias become its epilogue, so bert/vit keep no octet.Gelu.
    "bert_tiny.onnx": ({"batch": 2, "seq": 9}, {"octet.Attention", "octet.MatMulBias"}),
    "gpt2_tiny.onnx": ({"batch": 1, "seq": 13}, {"octet.Attention", "octet.Gelu"}),
    "vit_tiny.onnx": ({"batch": 1}, {"octet.Attention", "octet.MatMulBias"}),
}


def tmp(name):
    return os.path.join(TMP.name, name)


def dim_args(dims):
    return [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]


def optimize(model, out, *extra):
    code, stdout, err = run_octet(args.octet, "optimize", model, "-o", out, "--json", *extra)
    assert code == 0, f"exit {code}: {err.strip()}"
    return json.loads(stdout)


def run_outputs(model, dims, name):
    out = tmp(os.path.basename(name) + ".npz")
    code, _, err = run_octet(args.octet, "run", model, "--random", "--seed", "3", *dim_args(dims), "--out", out)
    assert code == 0, f"octet run {os.path.basename(model)}: exit {code}: {err.strip()}"
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def assert_close(got, want, what):
    assert got.keys() == want.keys(), f"{what}: outputs {sorted(got)} vs {sorted(want)}"
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=f"{what}: output {k}")


def check_fixture(name, dims, fused, specialize):
    src = os.path.join(FIXTURES, name)
    out = tmp(f"{name}.{'spec' if specialize else 'sym'}.onnx")
    report = optimize(src, out, *(dim_args(dims) if specialize else []))
    opt = report["optimizer"]
    assert opt["nodes_after"] < opt["nodes_before"], opt
    assert set(report["fused_ops"]) >= fused, report["fused_ops"]
    assert report["specialized"] == (dims if specialize else {}), report["specialized"]
    model = onnx.load(out)
    onnx.checker.check_model(model)  # no full_check: octet.* ops have no onnx schema
    domains = {n.domain for n in model.graph.node}
    assert "octet" in domains and any(o.domain == "octet" for o in model.opset_import), domains
    assert len(model.graph.node) == opt["nodes_after"]
    # A specialized model has fixed input sizes: it takes no --dim.
    got = run_outputs(out, {} if specialize else dims, out)
    assert_close(got, run_outputs(src, dims, out + ".orig"), name)


for name, (dims, fused) in MODELS.items():
    for specialize in (False, True):
        label = "specialized --dim" if specialize else "symbolic"
        t.check(f"{name} level 2 {label}: checker ok, same outputs", check_fixture, name, dims, fused, specialize)


def check_level1_matches_ort():
    out = tmp("bert_l1.onnx")
    report = optimize(BERT, out, "--level", "1")
    assert report["fused_ops"] == {} and report["level"] == 1, report
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(0)
    feeds = {"input_ids": rng.integers(0, 1000, (2, 11)).astype(np.int64),
             "attention_mask": np.ones((2, 11), np.int64), "token_type_ids": np.zeros((2, 11), np.int64)}
    feeds["attention_mask"][1, 7:] = 0
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(BERT, options, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(out, options, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def check_external_data():
    out = tmp("ext/bert_ext.onnx")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    optimize(BERT, out, "--external-data")
    assert os.path.getsize(out + ".data") > 500_000, "weights not in the data file"
    assert os.path.getsize(out) < 100_000, "weights still inline"
    onnx.checker.check_model(out)  # by path: external data stays where it is
    dims = {"batch": 1, "seq": 5}
    assert_close(run_outputs(out, dims, "ext_run"), run_outputs(BERT, dims, "ext_orig"), "external data")


def check_text_report():
    out = tmp("bert_text.onnx")
    code, stdout, err = run_octet(args.octet, "optimize", BERT, "-o", out)
    assert code == 0, err
    for needle in ("nodes 207 ->", "fuse_gelu_erf", "octet.Gelu(none) 2", "fuse_matmul_bias", "fuse_attention",
                   "octet.MatMulBias+gelu 2", "octet.Attention 2"):
        assert needle in stdout, f"'{needle}' missing from:\n{stdout}"


def check_inspect():
    code, out, err = run_octet(args.octet, "inspect", BERT, "--json")
    assert code == 0, err
    plain = json.loads(out)
    old_keys = {"file", "ir_version", "producer", "opset_imports", "inputs", "outputs", "node_count",
                "op_histogram", "parameters", "macs", "support", "warnings"}
    assert set(plain) >= old_keys, sorted(plain)
    assert plain["octet_ops"] == {} and "optimizer" not in plain
    code, out, err = run_octet(args.octet, "inspect", BERT, "--optimized", "--json", "--dim", "batch=1", "--dim", "seq=32")
    assert code == 0, err
    opt = json.loads(out)
    assert set(opt) >= old_keys | {"optimizer", "octet_ops"}, sorted(opt)
    # 4 MatMulBias per layer: Q/K/V merged into one packed projection, attention out, FFN x2.
    assert opt["octet_ops"] == {"octet.Attention": 2, "octet.MatMulBias": 8}, opt["octet_ops"]
    assert opt["optimizer"]["nodes_before"] == plain["node_count"] == 207
    assert opt["node_count"] == opt["optimizer"]["nodes_after"]
    assert opt["optimizer"]["specialized"] == {"batch": 1, "seq": 32}
    # The fused model does the same work: MACs agree.
    code, out, _ = run_octet(args.octet, "inspect", BERT, "--json", "--dim", "batch=1", "--dim", "seq=32")
    assert json.loads(out)["macs"]["total"]["value"] == opt["macs"]["total"]["value"]
    # A file written by optimize shows its fused ops without --optimized.
    written = tmp("bert_inspect.onnx")
    optimize(BERT, written)
    code, out, err = run_octet(args.octet, "inspect", written)
    assert code == 0 and "fused ops (octet domain" in out and "octet.MatMulBias" in out, out + err
    code, out, err = run_octet(args.octet, "inspect", BERT, "--optimized")
    assert code == 0 and "optimizer (level 2): nodes 207 ->" in out, out + err


t.check("level 1 (no octet ops) matches onnxruntime", check_level1_matches_ort)
t.check("--external-data", check_external_data)
t.check("text report", check_text_report)
t.check("inspect: fused ops, --optimized, keys kept", check_inspect)


def expect_error(argv, *needles):
    code, out, err = run_octet(args.octet, *argv)
    assert code == 1, f"exit {code}, stderr: {err.strip()}"
    lines = [l for l in err.strip().splitlines() if l]
    assert len(lines) == 1, f"expected one error line, got: {err!r}"
    for needle in needles:
        assert needle in lines[0], f"error lacks '{needle}': {lines[0]}"


def check_never_overwrites_input():
    model = tmp("own/model.onnx")
    os.makedirs(os.path.dirname(model), exist_ok=True)
    shutil.copy(BERT, model)
    before = open(model, "rb").read()
    expect_error(["optimize", model, "-o", model], "input model")
    expect_error(["optimize", model, "-o", model, "--force"], "input model")
    expect_error(["optimize", model, "-o", os.path.join(os.path.dirname(model), ".", "model.onnx"), "--force"],
                 "input model")
    assert open(model, "rb").read() == before, "the input model changed"
    # Nor the input's external data file (the fixture keeps its weights in weights.bin).
    ext = tmp("own_ext")
    shutil.copytree(os.path.join(FIXTURES, "external_data"), ext)
    weights = os.path.join(ext, "weights.bin")
    data = open(weights, "rb").read()
    expect_error(["optimize", os.path.join(ext, "model.onnx"), "-o", weights, "--force"], "data file")
    assert open(weights, "rb").read() == data, "the input's data file changed"


def check_existing_output_needs_force():
    out = tmp("exists.onnx")
    with open(out, "w") as f:
        f.write("keep me")
    expect_error(["optimize", BERT, "-o", out], "exists.onnx", "--force")
    assert open(out).read() == "keep me"
    optimize(BERT, out, "--force")
    onnx.checker.check_model(onnx.load(out))


def check_bad_arguments():
    out = tmp("never.onnx")
    expect_error(["optimize", BERT, "-o", out, "--level", "3"], "--level 3")
    expect_error(["optimize", BERT, "-o", out, "--dim", "foo=3"], "foo", "named dims: batch, seq")
    expect_error(["optimize", BERT, "-o", out, "--dim", "seq=x"], "--dim")
    expect_error(["optimize", BERT], "-o OUT")
    expect_error(["optimize", tmp("missing.onnx"), "-o", out], "missing.onnx")
    expect_error(["optimize", os.path.join(args.source_dir, "tests/bad_files/generated/empty.onnx"), "-o", out],
                 "empty.onnx")
    expect_error(["inspect", BERT, "--optimized", "--level", "7"], "--level 7")
    assert not os.path.exists(out), "wrote a file despite the error"
    code, stdout, _ = run_octet(args.octet, "optimize", "--help")
    assert code == 0
    for needle in ("--level", "--dim", "--json", "--external-data", "--force", "octet.Gelu", "LEVELS"):
        assert needle in stdout, f"--help lacks '{needle}'"


t.check("never overwrites the input model or its data", check_never_overwrites_input)
t.check("existing output needs --force", check_existing_output_needs_force)
t.check("bad arguments: exit 1, one line", check_bad_arguments)
t.finish()
