"""`octet quantize --weights int4|int8` end to end on a tiny decoder-like model (issue 16).

The model: RMS-style norm (ReduceMean with an `axes` attribute, opset 17) -> MatMul
[48, 40] (K not a multiple of the block) -> Relu -> MatMul [40, 70] writing the output
(the LM head). For each variant the weights written to the file are dequantized here with
numpy, following the ONNX / com.microsoft MatMulNBits specs, and put back into the float
model: that model, run by onnxruntime, is the reference. onnxruntime and octet must both
match it on the quantized file (MatMulNBits for --target ort, opset-21 blocked
DequantizeLinear for --target octet), and the dequantized weights must be close to the
original ones."""
import json
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from harness import Tally, parse_args, run_octet

args = parse_args()
t = Tally("weight_only")
TMP = tempfile.TemporaryDirectory(prefix="octet_weight_only_test_")
rng = np.random.default_rng(7)
W1 = rng.uniform(-1, 1, (48, 40)).astype(np.float32)
W2 = (rng.standard_normal((40, 70)) * 0.3).astype(np.float32)
X = rng.standard_normal((2, 3, 48)).astype(np.float32)


def tmp(name):
    return os.path.join(TMP.name, name)


def float_model(w1, w2):
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1),
        helper.make_node("Add", ["ms", "eps"], ["mse"]),
        helper.make_node("Sqrt", ["mse"], ["rms"]),
        helper.make_node("Div", ["x", "rms"], ["h"]),
        helper.make_node("MatMul", ["h", "w1"], ["up"], name="up_proj"),
        helper.make_node("Relu", ["up"], ["act"]),
        helper.make_node("MatMul", ["act", "w2"], ["logits"], name="lm_head"),
    ]
    g = helper.make_graph(
        nodes, "tiny_decoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 48])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", 70])],
        [numpy_helper.from_array(np.array(1e-5, np.float32), "eps"), numpy_helper.from_array(w1, "w1"),
         numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 10  # what onnxruntime 1.31 reads
    return m


FLOAT = tmp("float.onnx")
onnx.save(float_model(W1, W2), FLOAT)


def unpack(raw, bits, count):
    """LSB-first `bits`-bit values from a uint8 array."""
    raw = np.asarray(raw, np.uint8).reshape(-1)
    if bits == 8:
        return raw[:count].astype(np.int32)
    v = np.stack([raw & 15, raw >> 4], axis=-1).reshape(-1)
    return v[:count].astype(np.int32)


def dequant_nbits(node, inits):
    """com.microsoft.MatMulNBits' B as a float [K, N] MatMul weight."""
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    K, N, bits, block = a["K"], a["N"], a["bits"], a["block_size"]
    kb = -(-K // block)
    b = inits[node.input[1]].reshape(N, kb, block * bits // 8)
    s = inits[node.input[2]].reshape(N, kb)
    if len(node.input) > 3 and node.input[3]:
        zrow = -(-kb * bits // 8)
        z = np.stack([unpack(inits[node.input[3]].reshape(N, zrow)[n], bits, kb) for n in range(N)])
    else:
        z = np.full((N, kb), 1 << (bits - 1))
    w = np.zeros((N, K), np.float32)
    for n in range(N):
        q = unpack(b[n], bits, kb * block).reshape(kb, block)
        w[n] = ((q - z[n][:, None]) * s[n][:, None]).reshape(-1)[:K]
    return w.T


def signed(v, bits):
    return np.where(v >= 1 << (bits - 1), v - (1 << bits), v)


def dequant_dq(node, inits, tensors):
    """DequantizeLinear(axis 0, block_size) of 4- or 8-bit weights, as the ONNX spec says."""
    a = {x.name: helper.get_attribute_value(x) for x in node.attribute}
    assert a["axis"] == 0
    block = a["block_size"]
    qt = tensors[node.input[0]]
    bits = 4 if qt.data_type in (TensorProto.INT4, TensorProto.UINT4) else 8
    is_signed = qt.data_type in (TensorProto.INT4, TensorProto.INT8)
    K, N = qt.dims
    q = numpy_helper.to_array(qt).astype(np.int32).reshape(K, N)
    s = inits[node.input[1]]
    z = numpy_helper.to_array(tensors[node.input[2]]).astype(np.int32) if len(node.input) > 2 and node.input[2] else 0
    rows = np.arange(K) // block
    return ((q - (z[rows] if np.ndim(z) else z)) * s[rows]).astype(np.float32), bits, is_signed


def quantize(name, *extra):
    out = tmp(name + ".onnx")
    code, so, err = run_octet(args.octet, "quantize", FLOAT, "-o", out, "--json", "-q", *extra)
    assert code == 0, f"exit {code}: {err}"
    return out, json.loads(so)


def weights_in(path):
    """The float [K, N] weights each MatMul of the quantized file stands for, by MatMul name stem."""
    m = onnx.load(path)
    tensors = {x.name: x for x in m.graph.initializer}
    inits = {n: numpy_helper.to_array(x) for n, x in tensors.items()
             if x.data_type not in (TensorProto.INT4, TensorProto.UINT4)}
    out = {}
    for node in m.graph.node:
        if node.op_type == "MatMulNBits":
            assert node.domain == "com.microsoft"
            out["w1" if node.input[0] == "h" else "w2"] = dequant_nbits(node, inits)
        elif node.op_type == "DequantizeLinear":
            w, _, _ = dequant_dq(node, inits, tensors)
            out["w1" if node.output[0] in [n.input[1] for n in m.graph.node if n.input[0] == "h"] else "w2"] = w
    return m, out


def octet_run(path):
    xin, out_dir = tmp("x.npy"), tmp("out_" + os.path.basename(path))
    np.save(xin, X)
    code, _, err = run_octet(args.octet, "run", path, "--input", f"x={xin}", "--out", out_dir)
    assert code == 0, f"octet run exit {code}: {err}"
    return np.load(os.path.join(out_dir, sorted(os.listdir(out_dir))[0]))


def ort_run(path, literal=False):
    """literal: graph optimizations off. onnxruntime's own DQ + MatMul -> MatMulNBits fusion
    defaults to accuracy_level 4 (activations quantized to int8), about 0.5% off the
    DequantizeLinear semantics; unfused it computes exactly what the file says."""
    so = ort.SessionOptions()
    if literal:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]


def close(got, want, tol, what):
    err = np.max(np.abs(got - want)) / max(1e-6, np.max(np.abs(want)))
    assert err <= tol, f"{what}: error {err:.3g} > {tol}"


def variant(name, extra, op, max_weight_error, lm_head_quantized=True):
    path, report = quantize(name, *extra)
    m, w = weights_in(path)
    ops = [n.op_type for n in m.graph.node]
    assert op in ops, ops
    assert ("w2" in w) == lm_head_quantized, sorted(w)
    for key, orig in (("w1", W1), ("w2", W2)):
        if key in w:
            rel = np.linalg.norm(w[key] - orig) / np.linalg.norm(orig)
            assert rel <= max_weight_error, f"{key}: relative weight error {rel:.3g}"
    ref_path = tmp(name + "_reference.onnx")
    onnx.save(float_model(w.get("w1", W1), w.get("w2", W2)), ref_path)
    want = ort_run(ref_path)
    close(ort_run(path, literal=op == "DequantizeLinear"), want, 1e-4, "onnxruntime")
    close(ort_run(path), want, 2e-2, "onnxruntime, optimized")
    close(octet_run(path), want, 1e-4, "octet")
    assert report["mode"] == "weight-only" and report["quantized_file_bytes"] < report["float_file_bytes"], report
    if op == "DequantizeLinear":
        assert m.opset_import[0].version == 21 or any(o.domain == "" and o.version == 21 for o in m.opset_import)


t.check("int4 symmetric g32 as MatMulNBits (ort)", variant, "int4_ort", ["--weights", "int4", "--target", "ort"],
        "MatMulNBits", 0.12)
t.check("int4 asymmetric g16 as MatMulNBits (ort)", variant, "int4_ort_asym",
        ["--weights", "int4", "--target", "ort", "--asymmetric", "--block", "16"], "MatMulNBits", 0.12)
t.check("int8 g128 as MatMulNBits, LM head kept", variant, "int8_ort_keep",
        ["--weights", "int8", "--target", "ort", "--keep-lm-head"], "MatMulNBits", 0.01, False)
t.check("int4 symmetric as blocked DequantizeLinear (opset 17 raised to 21)", variant, "int4_dq",
        ["--weights", "int4"], "DequantizeLinear", 0.12)
t.check("int4 asymmetric g32 as blocked DequantizeLinear", variant, "int4_dq_asym",
        ["--weights", "int4", "--asymmetric"], "DequantizeLinear", 0.12)
t.check("int8 as blocked DequantizeLinear", variant, "int8_dq", ["--weights", "int8", "--block", "32"],
        "DequantizeLinear", 0.01)


def awq():
    """AWQ on calibration samples: the scales are folded into the graph, so the reference is
    the float model (loosely) and onnxruntime and octet must agree with each other."""
    calib = tmp("calib")
    os.makedirs(calib)
    for i in range(6):
        x = rng.standard_normal((1, 5, 48)).astype(np.float32)
        x[..., 3] *= 20  # an outlier channel: the one AWQ should protect
        np.savez(os.path.join(calib, f"sample_{i}.npz"), x=x)
    path, report = quantize("int4_awq", "--weights", "int4", "--target", "ort", "--method", "awq", "--calib", calib)
    assert report["method"] == "awq" and report["calibration_samples"] == 6, report
    assert len(report["awq"]) == 2, report["awq"]  # the two MatMuls read different activations
    for a in report["awq"]:
        assert a["error_awq"] <= a["error_rtn"], a
    got_ort, got_octet = ort_run(path), octet_run(path)
    close(got_octet, got_ort, 1e-4, "octet vs onnxruntime")
    close(got_ort, ort_run(FLOAT), 0.15, "AWQ int4 vs float")
    code, _, err = run_octet(args.octet, "quantize", FLOAT, "-o", tmp("awq_bad.onnx"), "--weights", "int4",
                             "--method", "awq")
    assert code == 1 and "--calib" in err, err


t.check("int4 AWQ (ort): scales searched, folded, both runtimes agree", awq)


def gptq():
    """GPTQ rounds against the inputs' Gram matrices: on the samples it saw, the int4 model's
    output error is below nearest rounding's (what GPTQ minimizes), alone and after AWQ; the
    format is unchanged, so onnxruntime and octet agree."""
    calib = tmp("calib_gptq")
    os.makedirs(calib)
    xs = []
    for i in range(6):
        x = rng.standard_normal((1, 16, 48)).astype(np.float32)
        x[..., 7] = 3 * x[..., 5] + 0.1 * x[..., 7]  # correlated channels: what GPTQ exploits
        x[..., 3] *= 20
        xs.append(x)
        np.savez(os.path.join(calib, f"sample_{i}.npz"), x=x)
    ref = ort.InferenceSession(FLOAT, providers=["CPUExecutionProvider"])

    def error_on_samples(path):
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        num = sum(float(np.sum((s.run(None, {"x": x})[0] - ref.run(None, {"x": x})[0]) ** 2)) for x in xs)
        return num / sum(float(np.sum(ref.run(None, {"x": x})[0] ** 2)) for x in xs)

    rtn, _ = quantize("int4_rtn_for_gptq", "--weights", "int4", "--target", "ort")
    for method in ("gptq", "awq-gptq"):
        path, report = quantize("int4_" + method, "--weights", "int4", "--target", "ort", "--method", method,
                                "--calib", calib)
        assert report["method"] == method and report["gptq_layers"] == 2, report
        close(octet_run(path), ort_run(path), 1e-4, f"{method}: octet vs onnxruntime")
        e, e_rtn = error_on_samples(path), error_on_samples(rtn)
        assert e < e_rtn, f"{method}: output error {e:.4g} on the samples, nearest rounding {e_rtn:.4g}"
    code, _, err = run_octet(args.octet, "quantize", FLOAT, "-o", tmp("gptq_bad.onnx"), "--weights", "int4",
                             "--method", "gptq")
    assert code == 1 and "--calib" in err, err


t.check("int4 GPTQ and AWQ + GPTQ (ort): lower output error than nearest on the samples", gptq)


def bad_options():
    for extra, words in ((["--weights", "int3"], "int4 or int8"), (["--weights", "int4", "--block", "24"], "power of 2"),
                         (["--weights", "int4", "--mode", "static"], "does not take"),
                         (["--block", "32"], "go with --weights")):
        code, _, err = run_octet(args.octet, "quantize", FLOAT, "-o", tmp("bad.onnx"), "--force", *extra)
        assert code == 1 and words in err, (extra, code, err)


t.check("bad options are clear errors", bad_options)
t.finish()
