"""Quantized models made by onnxruntime's own quantizer run in octet on its int8 kernels
(issue 5: "also runs quantized models made by other tools").

(a) quantize_dynamic (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul): every
    MatMulInteger and DynamicQuantizeLinear runs an optimized kernel; outputs match
    onnxruntime's on the same file.
(b) quantize_static, QDQ format, per-channel weights: every weight matmul (MatMul + bias
    Add, and Gemm whose bias onnxruntime stores as DequantizeLinear of int32) becomes an
    octet.QMatMul; outputs match onnxruntime's.
(c) quantize_static, QOperator format: onnxruntime writes com.microsoft contrib ops
    (QLinearAdd, QGemm, ...); octet refuses the file with one line naming them, exit 1."""
import glob
import json
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

from harness import Tally, make_calibration, parse_args, run_octet

args = parse_args()
t = Tally("foreign_quantized")
TMP = tempfile.TemporaryDirectory(prefix="octet_foreign_quant_test_")
SRC = os.path.join(args.source_dir, "tests/models/fixtures/bert_tiny.onnx")
CALIB = os.path.join(TMP.name, "calib")
make_calibration(args.source_dir, CALIB, "--samples", "10", "--seq", "32")
SAMPLES = sorted(glob.glob(os.path.join(CALIB, "bert_tiny", "*.npz")))
WEIGHT_MATMULS = 14  # bert_tiny: Q, K, V, output, FFN in/out per layer (2 layers) + pooler and classifier Gemm


def tmp(name):
    return os.path.join(TMP.name, name)


class Reader(CalibrationDataReader):
    def __init__(self, files):
        self.files = iter(files)

    def get_next(self):
        f = next(self.files, None)
        if f is None:
            return None
        with np.load(f) as z:
            return {k: z[k] for k in z.files}


def feeds():
    with np.load(SAMPLES[-1]) as z:
        return {k: z[k] for k in z.files}


def check_matches_ort(path):
    ref_sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = dict(zip([o.name for o in ref_sess.get_outputs()], ref_sess.run(None, feeds())))
    code, _, err = run_octet(args.octet, "run", path, "--input", SAMPLES[-1], "--out", tmp("out.npz"))
    assert code == 0, err
    with np.load(tmp("out.npz")) as got:
        for k, v in want.items():
            a, b = v.ravel().astype(np.float64), got[k].ravel().astype(np.float64)
            cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
            assert cos > 0.9999, f"{k}: octet vs onnxruntime cosine {cos:.6f}"


def bench_report(path):
    code, out, err = run_octet(args.octet, "bench", path, "--input", SAMPLES[-1], "--warmup", "1", "--iters", "2",
                               "--json")
    assert code == 0, err
    return json.loads(out)


def check_dynamic():
    path = tmp("ort_dynamic.onnx")
    quantize_dynamic(SRC, path, weight_type=QuantType.QInt8)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    assert ops.count("MatMulInteger") == WEIGHT_MATMULS, ops.count("MatMulInteger")
    check_matches_ort(path)
    slow = bench_report(path)["reference_ops"]
    assert not any("MatMulInteger" in k or "DynamicQuantizeLinear" in k for k in slow), slow


def check_static_qdq():
    path = tmp("ort_qdq.onnx")
    quantize_static(SRC, path, Reader(SAMPLES[:8]), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    check_matches_ort(path)
    r = bench_report(path)
    assert r["fused_ops"].get("octet.QMatMul") == WEIGHT_MATMULS, r["fused_ops"]


def check_static_qdq_vit():
    # A ViT: the patch embedding is a QDQ Conv (per-channel int8 weights, the bias as
    # DequantizeLinear of int32); octet cuts the patches from the quantized pixels into one
    # more octet.QMatMul, and no Conv or float MatMulBias is left.
    src = os.path.join(args.source_dir, "tests/models/fixtures/vit_tiny.onnx")
    rng = np.random.default_rng(0)
    images = [{"pixel_values": rng.standard_normal((1, 3, 224, 224), dtype=np.float32)} for _ in range(5)]

    class Images(CalibrationDataReader):
        def __init__(self):
            self.it = iter(images[:4])

        def get_next(self):
            return next(self.it, None)

    path = tmp("ort_qdq_vit.onnx")
    quantize_static(src, path, Images(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True)
    assert [n.op_type for n in onnx.load(path).graph.node].count("Conv") == 1
    np.savez(tmp("image.npz"), **images[4])
    # Against the QDQ graph as ONNX defines it (unoptimized, reference kernels): the same
    # numbers. onnxruntime fuses the QDQ nodes into its own QLinear kernels, which round
    # differently (0.996 here, each engine 0.98-0.99 from the float model): close only.
    outs = {}
    for name, extra in (("fast", []), ("oracle", ["--level", "0", "--reference"])):
        code, _, err = run_octet(args.octet, "run", path, "--input", tmp("image.npz"), "--out", tmp(name + ".npz"), *extra)
        assert code == 0, err
        with np.load(tmp(name + ".npz")) as z:
            outs[name] = {k: z[k] for k in z.files}
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for o, v in zip(ref.get_outputs(), ref.run(None, images[4])):
        for want, floor in ((outs["oracle"][o.name], 0.9999), (v, 0.99)):
            a, b = want.ravel().astype(np.float64), outs["fast"][o.name].ravel().astype(np.float64)
            cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
            assert cos > floor, f"{o.name}: cosine {cos:.6f} (floor {floor})"
    code, out, err = run_octet(args.octet, "bench", path, "--input", tmp("image.npz"), "--warmup", "1", "--iters", "2",
                               "--json")
    assert code == 0, err
    r = json.loads(out)
    linear = [n for n in onnx.load(src).graph.node if n.op_type in ("MatMul", "Gemm")
              and any(i.name == n.input[1] for i in onnx.load(src).graph.initializer)]
    assert r["fused_ops"].get("octet.QMatMul") == len(linear) + 1, (r["fused_ops"], len(linear))
    assert "octet.MatMulBias" not in r["fused_ops"] and not any("Conv" in k for k in r["kernels"]), r


def check_qoperator_refused():
    path = tmp("ort_qop.onnx")
    quantize_static(SRC, path, Reader(SAMPLES[:8]), quant_format=QuantFormat.QOperator,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    code, _, err = run_octet(args.octet, "run", path, "--input", SAMPLES[-1])
    assert code == 1 and "com.microsoft::QLinearAdd" in err and len(err.strip().splitlines()) == 1, err


t.check("onnxruntime quantize_dynamic model: int8 kernels, outputs match onnxruntime", check_dynamic)
t.check("onnxruntime quantize_static QDQ model: every weight matmul is octet.QMatMul, outputs match", check_static_qdq)
t.check("onnxruntime quantize_static QDQ ViT: the patch Conv is one more octet.QMatMul, outputs match",
        check_static_qdq_vit)
t.check("onnxruntime QOperator model with com.microsoft ops: one clear line, exit 1", check_qoperator_refused)
t.finish()
