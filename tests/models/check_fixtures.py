#!/usr/bin/env python3
"""Validate the ONNX fixtures in tests/models/fixtures (usable by CI).

Run with the pyenv/pip ``python3`` (pip ``onnx``; ``onnxruntime`` optional):

    python3 tests/models/check_fixtures.py [--run] [--ops] [FIXTURE_DIR]

For every expected fixture it runs ``onnx.checker.check_model(path,
full_check=True)`` (by path, so external data is resolved and strict shape
inference runs) and prints ir_version, opsets, inputs and outputs with their
dims (``?`` = dim with neither value nor name, ``''`` = empty dim_param).

``--ops``  also print the op histogram of each graph.
``--run``  also run each model in onnxruntime (CPU) with random inputs at two
           (batch, seq) bindings, (1, 8) and (2, 16), check the output ranks /
           static dims, and compare against the stored torch reference in
           ``<model>_data/test_data_set_0`` where one exists.

Exit status is 0 only if every expected fixture exists and passes.
"""

import collections
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

# fixture -> short description (the list is the contract: missing = failure)
FIXTURES = {
    "bert_tiny.onnx": "torch export, BERT-style encoder",
    "vit_tiny.onnx": "torch export, ViT-style encoder",
    "gpt2_tiny.onnx": "torch export, GPT-2-style decoder",
    "bert_tiny_inferred.onnx": "bert_tiny + onnx shape inference (unk__N)",
    "gpt2_tiny_inferred.onnx": "gpt2_tiny + onnx shape inference (unk__N)",
    "unk_constantofshape.onnx": "ConstantOfShape unk__3 vs literal 1",
    "unk_constantofshape_anon.onnx": "empty dim_param / DynamicDimension.0",
    "external_data/model.onnx": "MLP with initializers in weights.bin",
    "opset21_int4.onnx": "opset 21, int4 block-wise DequantizeLinear",
    "rmsnorm_cast_mul_fp16.onnx": "torch export, RMSNorm (w * h).to(float16)",
    "rmsnorm_cast_both_fp16.onnx": "torch export, RMSNorm w.to(float16) * h.to(float16)",
    "rmsnorm_cast_mul_bf16.onnx": "torch export, RMSNorm (w * h).to(bfloat16)",
    "patch_convs.onnx": "torch export, Convs with stride == kernel (ConvNeXt-style stem, 1x1, Conv1d)",
}
# The other user story 3 fixtures are validated by tests/python/test_check_legalize_cli.py
# against their torch reference I/O: quantlinear_* take float16 inputs (no random feed
# here) and rmsnorm_cast_both_bf16 computes a bfloat16 Mul onnxruntime's CPU lacks (the
# story's point; octet legalize --target ort fixes it). fixtures/ill_typed/ (quantlinear_gptq_broken, rmsnorm_mul_cast_*) break ONNX's type rules
# on purpose, as the exports of user story 3 do: onnx.checker rejects them, which is the
# point; tests/python/test_check_legalize_cli.py checks that it does.

BINDINGS = [(1, 8), (2, 16)]
RTOL, ATOL = 1e-4, 1e-4


def dim_str(d):
    if d.HasField("dim_value"):
        return str(d.dim_value)
    if d.HasField("dim_param"):
        return d.dim_param if d.dim_param else "''"
    return "?"


def vi_str(vi):
    t = vi.type.tensor_type
    et = onnx.TensorProto.DataType.Name(t.elem_type).lower()
    if not t.HasField("shape"):
        return f"{vi.name}: {et} <no shape>"
    return f"{vi.name}: {et}[{', '.join(dim_str(d) for d in t.shape.dim)}]"


def bind(vi, batch, seq):
    """Concrete shape for a graph input: batch/first-axis symbols -> batch,
    other symbols -> seq, literal values kept."""
    out = []
    for i, d in enumerate(vi.type.tensor_type.shape.dim):
        if d.HasField("dim_value"):
            out.append(d.dim_value)
        elif d.dim_param == "batch" or (i == 0 and d.dim_param != "seq"):
            out.append(batch)
        else:
            out.append(seq)
    return out


def random_feed(model, batch, seq, rng):
    feeds = {}
    for vi in model.graph.input:
        shape = bind(vi, batch, seq)
        et = vi.type.tensor_type.elem_type
        if et == onnx.TensorProto.INT64:
            hi = 1000 if "input_ids" in vi.name else 2
            a = rng.integers(0, hi, size=shape, dtype=np.int64)
            if vi.name == "attention_mask":
                a[:] = 1
                a[-1, max(1, seq - 2):] = 0          # pad the last row
            feeds[vi.name] = a
        elif et == onnx.TensorProto.FLOAT:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        else:
            raise ValueError(f"no random feed for {vi_str(vi)}")
    return feeds


def check_outputs(model, outs, batch, seq):
    errs = []
    for vi, o in zip(model.graph.output, outs):
        dims = vi.type.tensor_type.shape.dim
        if len(dims) != o.ndim:
            errs.append(f"{vi.name}: rank {o.ndim} != declared {len(dims)}")
        for d, n in zip(dims, o.shape):
            if d.HasField("dim_value") and d.dim_value != n:
                errs.append(f"{vi.name}: got {o.shape}, declared "
                            f"{[dim_str(x) for x in dims]}")
            if d.dim_param == "batch" and n != batch:
                errs.append(f"{vi.name}: batch dim {n} != {batch}")
            if d.dim_param == "seq" and n != seq:
                errs.append(f"{vi.name}: seq dim {n} != {seq}")
        if o.dtype.kind == "f" and not np.isfinite(o).all():
            errs.append(f"{vi.name}: non-finite values")
    return errs


def run_model(path, model, ort, rng):
    errs = []
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for batch, seq in BINDINGS:
        outs = sess.run(None, random_feed(model, batch, seq, rng))
        errs += check_outputs(model, outs, batch, seq)
        print(f"    ort (batch={batch}, seq={seq}): "
              f"{[tuple(o.shape) for o in outs]}")
    # *_inferred.onnx share the reference data of the model they came from
    stem = os.path.splitext(path)[0]
    if stem.endswith("_inferred"):
        stem = stem[: -len("_inferred")]
    for ds in sorted(glob.glob(stem + "_data/test_data_set_*")):
        ins = [numpy_helper.to_array(onnx.load_tensor(p)) for p in
               sorted(glob.glob(os.path.join(ds, "input_*.pb")))]
        refs = [numpy_helper.to_array(onnx.load_tensor(p)) for p in
                sorted(glob.glob(os.path.join(ds, "output_*.pb")))]
        names = [i.name for i in sess.get_inputs()]
        outs = sess.run(None, dict(zip(names, ins)))
        worst = 0.0
        for o, r in zip(outs, refs):
            if o.shape != r.shape:
                errs.append(f"{ds}: shape {o.shape} != reference {r.shape}")
                continue
            worst = max(worst, float(np.max(np.abs(o - r))))
            if not np.allclose(o, r, rtol=RTOL, atol=ATOL):
                errs.append(f"{ds}: max |ort - torch| = {worst:.3g}")
        print(f"    reference {os.path.relpath(ds, os.path.dirname(path))}: "
              f"inputs {[tuple(i.shape) for i in ins]}, "
              f"max |ort - torch| = {worst:.3g}")
    return errs


def main(argv):
    flags = {a for a in argv[1:] if a.startswith("--")}
    args = [a for a in argv[1:] if not a.startswith("--")]
    here = os.path.dirname(os.path.abspath(__file__))
    fdir = args[0] if args else os.path.join(here, "fixtures")
    ort = None
    if "--run" in flags:
        import onnxruntime as ort  # noqa: F811  (required with --run)
    rng = np.random.default_rng(0)
    failures = []
    for rel, desc in FIXTURES.items():
        path = os.path.join(fdir, rel)
        print(f"{rel}  ({desc})")
        if not os.path.exists(path):
            failures.append(f"{rel}: missing")
            print("    MISSING")
            continue
        try:
            onnx.checker.check_model(path, full_check=True)
            model = onnx.load(path, load_external_data=False)
            opsets = ", ".join(f"{o.domain or 'ai.onnx'}:{o.version}"
                               for o in model.opset_import)
            print(f"    {os.path.getsize(path)} bytes, ir_version "
                  f"{model.ir_version}, opset {opsets}, "
                  f"{len(model.graph.node)} nodes, "
                  f"{len(model.graph.initializer)} initializers, "
                  f"{len(model.graph.value_info)} value_info")
            for vi in model.graph.input:
                print(f"    in  {vi_str(vi)}")
            for vi in model.graph.output:
                print(f"    out {vi_str(vi)}")
            if "--ops" in flags:
                hist = collections.Counter(n.op_type for n in model.graph.node)
                print("    ops " + ", ".join(f"{k} {v}" for k, v in
                                              sorted(hist.items())))
            if ort is not None:
                errs = run_model(path, model, ort, rng)
                failures += [f"{rel}: {e}" for e in errs]
        except Exception as e:  # noqa: BLE001
            failures.append(f"{rel}: {type(e).__name__}: {e}")
            print(f"    FAIL {type(e).__name__}: {e}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"\nall {len(FIXTURES)} fixtures OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
