"""`octet check` and `octet legalize` end to end (user story 3).

(a) The QuantLinear q_proj exported by torch with the int32 (w - z) tensor meeting the
    float16 scales (quantlinear_gptq_broken): check names the node, op and types, exit 1;
    legalize fixes it and turns the packed GPTQ weights into MatMulNBits (opset 17) or
    blocked uint4 DequantizeLinear (the model converted to opset 21); onnxruntime loads
    and runs each result; octet's and onnxruntime's outputs match the float reference.
(b) RMSNorm written three ways over float16/bfloat16 activations with a float32 weight:
    check flags the `w * h.to(dt)` form; after legalize all three pass check and agree
    with the float32 reference and with each other, in octet and onnxruntime.
(c) bert_tiny_bf16: check --target ort reports bfloat16 nodes onnxruntime's CPU cannot
    run; legalize --target ort makes it load and run there, check --target ort is clean,
    and its logits match the float32 model's.
(d) The committed onnxruntime CPU table still agrees with the installed onnxruntime for
    a sample of rows (re-probed with the generator's own probe).
(e) Exit codes and errors: 0 clean, 1 problems, 2 unreadable input; legalize never
    overwrites its input."""
import importlib.util
import json
import os
import random
import re
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from harness import Tally, parse_args, run_octet

# These checks are about legalization (codes, scales and zero points unpacked right), held to
# the float reference within float16 rounding: octet's MatMulNBits runs with float
# activations here, not its default int8 ones for 4-bit weights (about 0.5% of max |y| on the
# AWQ fixture; that path has its own tests against the reference in cpu_matmul_nbits_test).
os.environ["OCTET_NBITS_ACTIVATIONS"] = "float"

args = parse_args()
FIXTURES = os.path.join(args.source_dir, "tests/models/fixtures")
t = Tally("check_legalize")
TMP = tempfile.TemporaryDirectory(prefix="octet_legalize_test_")


def tmp(name):
    return os.path.join(TMP.name, name)


def fixture(name):
    """fixtures/NAME.onnx, or fixtures/ill_typed/NAME.onnx for the models that break
    ONNX's type rules on purpose."""
    path = os.path.join(FIXTURES, name + ".onnx")
    return path if os.path.exists(path) else os.path.join(FIXTURES, "ill_typed", name + ".onnx")


def data(name, what):
    folder = os.path.join(FIXTURES, name + "_data")
    if not os.path.isdir(folder):
        folder = os.path.join(FIXTURES, "ill_typed", name + "_data")
    return np.load(os.path.join(folder, what + ".npy"))


def check(path, *extra):
    code, out, err = run_octet(args.octet, "check", path, "--json", *extra)
    assert code in (0, 1), f"exit {code}: {err}"
    report = json.loads(out)
    assert (code == 0) == report["clean"] == (not report["problems"]), (code, report)
    return code, report


def legalize(path, out, *extra):
    code, stdout, err = run_octet(args.octet, "legalize", path, "-o", out, "--json", "--force", *extra)
    assert code == 0, f"legalize exit {code}: {err.strip()} {stdout[-2000:]}"
    return json.loads(stdout)


def with_float_outputs(path):
    """The model with every non-float32 output cast to float32 (onnxruntime's Python API
    cannot hand back bfloat16), saved in the test's temporary folder."""
    m = onnx.load(path)
    for o in m.graph.output:
        if o.type.tensor_type.elem_type != TensorProto.FLOAT:
            inner = o.name + "_inner"
            for n in m.graph.node:
                n.output[:] = [inner if x == o.name else x for x in n.output]
                n.input[:] = [inner if x == o.name else x for x in n.input]
            m.graph.node.append(helper.make_node("Cast", [inner], [o.name], to=TensorProto.FLOAT))
            o.type.tensor_type.elem_type = TensorProto.FLOAT
    out = tmp(os.path.basename(path).replace(".onnx", "_f32out.onnx"))
    onnx.save(m, out)
    return out


def ort_run(path, feeds, exact_int4_matmul=True):
    opts = ort.SessionOptions()
    if exact_int4_matmul:
        # onnxruntime fuses DequantizeLinear(int4, blocked) + MatMul into MatMulNBits with
        # accuracy level 4 by default: activations quantized to int8 (~0.5% error).
        # Level 0 keeps float activations, so the comparison measures the model.
        opts.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "0")
    sess = ort.InferenceSession(with_float_outputs(path), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def npy_float(a):
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:  # bfloat16 as octet writes it
        return (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def octet_run(path, name, x):
    xin = tmp(name + "_in.npy")
    np.save(xin, x)
    out_dir = tmp(name + "_out")
    code, _, err = run_octet(args.octet, "run", path, "--input", f"{name}={xin}", "--out", out_dir)
    assert code == 0, f"octet run exit {code}: {err}"
    files = sorted(os.listdir(out_dir))
    return npy_float(np.load(os.path.join(out_dir, files[0])))


def assert_close(got, want, tol, what):
    err = np.max(np.abs(got.astype(np.float32) - want)) / max(1e-6, np.max(np.abs(want)))
    assert err <= tol, f"{what}: max error {err:.3g} (relative to max |ref|) > {tol}"


# (a) QuantLinear ----------------------------------------------------------------------

def check_quantlinear_reported():
    code, r = check(fixture("quantlinear_gptq_broken"))
    assert code == 1
    p = [p for p in r["problems"] if p["node"] == "/Mul"]
    assert p, r["problems"]
    types = {i["dtype"] for i in p[0]["inputs"]}
    assert types == {"int32", "float16"}, p[0]
    assert p[0]["op"] == "Mul" and "T" in p[0]["rule"] and "legalize" in p[0]["fix"], p[0]
    code, out, _ = run_octet(args.octet, "check", fixture("quantlinear_gptq_broken"))
    line = [l for l in out.splitlines() if "'/Mul'" in l][0]
    assert "int32" in line and "float16" in line and "fix:" in line, line
    # onnxruntime refuses the same model: the problem is real.
    try:
        ort.InferenceSession(fixture("quantlinear_gptq_broken"), providers=["CPUExecutionProvider"])
        raise AssertionError("onnxruntime loaded the broken model")
    except Exception as e:  # noqa: BLE001
        assert "onnxruntime loaded" not in str(e), e


def check_quantlinear_legalized(name, target):
    out = tmp(f"{name}_{target}.onnx")
    rep = legalize(fixture(name), out, "--target", target)
    steps = {s["name"]: s for s in rep["legalize"]["rewrites"]}
    if name.endswith("broken"):
        assert steps["resolve_type_mixes"]["count"] >= 1, steps
    assert steps["unpack_packed_weights"]["count"] == 1, steps
    assert rep["check_after"]["clean"], rep["check_after"]
    m = onnx.load(out)
    ops = [n.op_type for n in m.graph.node]
    assert "MatMulNBits" in ops, ops
    assert not any(i.data_type == TensorProto.INT32 and len(i.dims) == 2 for i in m.graph.initializer), \
        "packed int32 initializers left"
    assert ("Gather" in ops) == name.endswith("actorder"), ops  # act-order: activation columns reordered
    assert check(out, "--target", target)[0] == 0
    ref_name = name.replace("_broken", "")
    x = data(ref_name, "input_0")
    ref = data(ref_name, "output_0")
    assert_close(ort_run(out, {"x": x}), ref, 2e-3, "onnxruntime")
    assert_close(octet_run(out, "x", x), ref, 2e-3, "octet")


def check_quantlinear_opset21(name, block):
    from onnx import version_converter
    m = version_converter.convert_version(onnx.load(fixture(name)), 21)
    src = tmp(f"{name}21.onnx")
    onnx.save(m, src)
    out = tmp(f"{name}21_legal.onnx")
    rep = legalize(src, out, "--target", "octet")
    assert rep["check_after"]["clean"], rep
    m = onnx.load(out)
    dq = [n for n in m.graph.node if n.op_type == "DequantizeLinear"]
    assert len(dq) == 1 and any(a.name == "block_size" and a.i == block for a in dq[0].attribute), dq
    w = next(i for i in m.graph.initializer if i.name == dq[0].input[0])
    assert w.data_type == TensorProto.UINT4, w.data_type
    x = data(name, "input_0")
    ref = data(name, "output_0")
    assert_close(ort_run(out, {"x": x}), ref, 2e-3, "onnxruntime")
    assert_close(ort_run(out, {"x": x}, exact_int4_matmul=False), ref, 2e-2, "onnxruntime, int8 activations")
    assert_close(octet_run(out, "x", x), ref, 2e-3, "octet")


t.check("check names the QuantLinear node where int32 meets float16", check_quantlinear_reported)
for ql_name in ("quantlinear_gptq_broken", "quantlinear_gptq_actorder", "quantlinear_awq"):
    for ql_target in ("octet", "ort"):
        t.check(f"{ql_name}: legalize --target {ql_target} -> MatMulNBits, runs in octet and onnxruntime, "
                "matches float", check_quantlinear_legalized, ql_name, ql_target)
for ql_name, ql_block in (("quantlinear_gptq", 32), ("quantlinear_gptq_actorder", 32), ("quantlinear_awq", 64)):
    t.check(f"{ql_name} at opset 21: blocked uint4 DequantizeLinear, matches float",
            check_quantlinear_opset21, ql_name, ql_block)


# (b) RMSNorm ----------------------------------------------------------------------------

def check_rmsnorm(dt):
    results = {}
    for way in ("mul_cast", "cast_mul", "cast_both"):
        name = f"rmsnorm_{way}_{dt}"
        code, r = check(fixture(name))
        if way == "mul_cast":
            assert code == 1 and any(p["op"] == "Mul" and "float32" in p["rule"] for p in r["problems"]), r
        x, ref = data(name, "input_0"), data(name, "output_0")
        for target in ("octet", "ort"):
            out = tmp(f"{name}_{target}.onnx")
            rep = legalize(fixture(name), out, "--target", target)
            assert rep["check_after"]["clean"], rep
            assert check(out, "--target", target)[0] == 0
            y_octet = octet_run(out, "x", x)
            tol = 1e-2 if dt == "bf16" else 2e-3
            assert_close(y_octet, ref, tol, f"{name} octet")
            if target == "ort" or dt == "fp16":  # onnxruntime CPU has no bfloat16 Mul: --target ort is for it
                assert_close(ort_run(out, {"x": x}), ref, tol, f"{name} onnxruntime ({target})")
            results[(way, target)] = y_octet
    base = results[("cast_both", "octet")]
    for k, v in results.items():  # the three ways agree within one half-precision rounding
        assert_close(v, base, 1e-2 if dt == "bf16" else 2e-3, f"{k} vs cast_both")


t.check("RMSNorm three ways, float16 activations: legalized, agree", check_rmsnorm, "fp16")
t.check("RMSNorm three ways, bfloat16 activations: legalized, agree", check_rmsnorm, "bf16")


# (c) bf16 BERT ---------------------------------------------------------------------------

def token_feeds(model, batch=2, seq=8):
    rng = np.random.default_rng(7)
    m = onnx.load(fixture(model))
    feeds = {}
    for i in m.graph.input:
        shape = (batch, seq)
        feeds[i.name] = (rng.integers(0, 1000, shape) if "input_ids" in i.name else
                         np.ones(shape) if "mask" in i.name else np.zeros(shape)).astype(np.int64)
    return feeds


def check_bf16_model(model):
    code, r = check(fixture(model + "_bf16"), "--target", "ort")
    assert code == 1 and all(p["source"] == "ort" for p in r["problems"]), r["problems"][:3]
    assert any("bfloat16" in p["rule"] for p in r["problems"])
    out = tmp(model + "_bf16_ort.onnx")
    rep = legalize(fixture(model + "_bf16"), out, "--target", "ort")
    assert rep["check_after"]["clean"], rep["check_after"]
    assert check(out, "--target", "ort")[0] == 0
    feeds = token_feeds(model)
    want = ort.InferenceSession(fixture(model), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = ort_run(out, feeds)
    assert_close(got, want, 3e-2, f"bf16 legalized vs float32 {model} in onnxruntime")


t.check("bert_tiny_bf16: legalize --target ort runs in onnxruntime, matches float32", check_bf16_model, "bert_tiny")
t.check("gpt2_tiny_bf16: legalize --target ort runs in onnxruntime, matches float32", check_bf16_model, "gpt2_tiny")


def check_compute_fp32():
    """--compute-dtype fp32 on the float16 BERT: no float16 arithmetic left, logits
    closer to the float32 model's than the float16 model's own."""
    out = tmp("bert_fp16_fp32.onnx")
    rep = legalize(fixture("bert_tiny_fp16"), out, "--compute-dtype", "fp32")
    assert rep["check_after"]["clean"], rep["check_after"]
    m = onnx.shape_inference.infer_shapes(onnx.load(out))
    types = {v.name: v.type.tensor_type.elem_type for v in list(m.graph.value_info) + list(m.graph.input)}
    types.update({i.name: i.data_type for i in m.graph.initializer})
    half_inputs = [n.name for n in m.graph.node if n.op_type != "Cast"
                   and any(types.get(i) == TensorProto.FLOAT16 for i in n.input)]
    assert not half_inputs, half_inputs[:5]
    feeds = token_feeds("bert_tiny")
    want = ort.InferenceSession(fixture("bert_tiny"), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    got = ort_run(out, feeds)
    half = ort_run(fixture("bert_tiny_fp16"), feeds)
    assert_close(got, want, 5e-3, "fp32-computed fp16 BERT")
    err = lambda a: np.max(np.abs(a.astype(np.float32) - want))
    assert err(got) <= err(half), (err(got), err(half))


t.check("bert_tiny_fp16 --compute-dtype fp32: no float16 arithmetic, closer to float32", check_compute_fp32)


# (d) the onnxruntime table ---------------------------------------------------------------

def check_ort_table_current():
    spec = importlib.util.spec_from_file_location(
        "profile", os.path.join(args.source_dir, "tools/profiles/make_ort_cpu_profile.py"))
    prof = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prof)
    row = re.compile(r'^\{"(\w+)", (\d+), \d+, "([^"]*)", (true|false)\},$')
    rows = []
    with open(os.path.join(args.source_dir, "src/check/ort_cpu_kernels.inc")) as f:
        for line in f:
            if m := row.match(line.strip()):
                rows.append((m[1], int(m[2]), m[3], m[4] == "true"))
    assert len(rows) > 1000, len(rows)
    rows_sample = random.Random(5).sample(rows, 60) + [r for r in rows if r[0] in ("Add", "MatMul") and r[1] == 17]
    back = {v: k for k, v in prof.OCTET_NAME.items()}
    for op, opset, key, ok in rows_sample:
        binding = {}
        for item in key.split(","):
            var, name = item.split("=")
            binding[var] = back.get(name, f"tensor({name})")
        schema = onnx.defs.get_schema(op, opset, "")
        assert prof.probe(schema, opset, binding) == ok, f"{op} opset {opset} {key}: table says {ok}"


t.check("the committed onnxruntime CPU table matches the installed onnxruntime", check_ort_table_current)


# (e) exit codes and errors -----------------------------------------------------------------

def check_exit_codes():
    code, r = check(fixture("bert_tiny"))
    assert code == 0 and r["clean"], r["problems"][:3]
    bad = tmp("garbage.onnx")
    with open(bad, "wb") as f:
        f.write(b"not a model")
    code, _, err = run_octet(args.octet, "check", bad)
    assert code == 2 and "garbage.onnx" in err, (code, err)
    code, _, err = run_octet(args.octet, "check", fixture("bert_tiny"), "--target", "nosuch")
    assert code == 2 and "nosuch" in err, (code, err)
    code, _, err = run_octet(args.octet, "legalize", fixture("bert_tiny"), "-o", fixture("bert_tiny"), "--force")
    assert code == 1 and "input model" in err, err
    code, out, _ = run_octet(args.octet, "check", "--help")
    assert code == 0 and "EXIT STATUS" in out


t.check("exit codes: 0 clean, 1 problems, 2 unreadable; legalize never overwrites its input", check_exit_codes)
t.finish()
