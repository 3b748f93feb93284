#!/usr/bin/env python3
"""Build the hand-made ("special") ONNX fixtures for octet's importer tests.

Run with the pyenv/pip ``python3`` (needs a recent pip ``onnx`` + ``numpy``;
NOT the Debian /usr/bin/python3, whose onnx 1.12 predates opset 21/int4):

    python3 tests/models/make_special_models.py [OUT_DIR]

OUT_DIR defaults to ``tests/models/fixtures``.  Everything is built with
``onnx.helper`` from fixed seeds, so the output is byte-for-byte reproducible
for a given onnx version; re-running overwrites (never appends to) the files.

Files written:

* ``unk_constantofshape.onnx`` -- regression for "Failed analyse for node
  ConstantOfShape: Impossible to unify Sym(unk__3) with Val(1)".  x is
  float [1, seq]; Shape(x)->Gather(0)/Gather(1)->Unsqueeze->Concat->
  ConstantOfShape(1.0)->Add(x)->Mul(x).  value_info declares the
  ConstantOfShape output as [unk__3, unk__4] (what onnx's shape inference
  without data propagation writes), although the value of dim 0 is provably
  the literal 1 coming from x.
* ``unk_constantofshape_anon.onnx`` -- same idea, but x's dims are an empty
  dim_param ("") and "DynamicDimension.0", the output's dim 0 has neither
  dim_value nor dim_param, and the literal 1 comes from a Constant fed into
  the Concat.
* ``external_data/model.onnx`` + ``external_data/weights.bin`` -- 2-layer
  MatMul+Add(+Relu) MLP whose four initializers live in one external file
  (location/offset/length entries).
* ``opset21_int4.onnx`` -- opset 21, ir_version 10: an int4 weight with an
  int4 zero point dequantized block-wise (DequantizeLinear axis=0,
  block_size=16), then MatMul + Add.
* ``bert_tiny_inferred.onnx`` / ``gpt2_tiny_inferred.onnx`` -- the exported
  torch fixtures after ``onnx.shape_inference.infer_shapes`` (no data
  propagation), i.e. with value_info full of ``unk__N`` dims, the way many
  models found in the wild look.  Only written if ``bert_tiny.onnx`` /
  ``gpt2_tiny.onnx`` already exist in OUT_DIR (run export_fixtures.py first).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 1234


def _check_and_save(model, path, full_check=True):
    onnx.checker.check_model(model, full_check=full_check)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def _const_i64(name, vals, dims):
    return helper.make_node(
        "Constant", [], [name],
        value=helper.make_tensor(name + "_value", TensorProto.INT64, dims,
                                 vals),
        name=name)


def _vi(name, elem, dims):
    """value_info; a dim of None is emitted with neither value nor param."""
    vi = helper.make_tensor_value_info(name, elem, [0] * len(dims))
    shape = vi.type.tensor_type.shape
    for d, src in zip(shape.dim, dims):
        d.Clear()
        if isinstance(src, int):
            d.dim_value = src
        elif isinstance(src, str):
            d.dim_param = src     # "" is kept as an explicitly empty param
    return vi


# ----------------------------------------------------------------------------
# unk__N / ConstantOfShape regression models
# ----------------------------------------------------------------------------

def make_unk_constantofshape(out_dir):
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"], name="Shape_0"),
        _const_i64("idx0", [0], []),
        _const_i64("idx1", [1], []),
        _const_i64("axes0", [0], [1]),
        helper.make_node("Gather", ["x_shape", "idx0"], ["batch_dim"],
                         axis=0, name="Gather_0"),
        helper.make_node("Gather", ["x_shape", "idx1"], ["seq_dim"],
                         axis=0, name="Gather_1"),
        helper.make_node("Unsqueeze", ["batch_dim", "axes0"], ["batch_1d"],
                         name="Unsqueeze_0"),
        helper.make_node("Unsqueeze", ["seq_dim", "axes0"], ["seq_1d"],
                         name="Unsqueeze_1"),
        helper.make_node("Concat", ["batch_1d", "seq_1d"], ["ones_shape"],
                         axis=0, name="Concat_0"),
        helper.make_node("ConstantOfShape", ["ones_shape"], ["ones"],
                         value=helper.make_tensor("one", TensorProto.FLOAT,
                                                  [1], [1.0]),
                         name="ConstantOfShape_0"),
        helper.make_node("Add", ["x", "ones"], ["x_plus_one"], name="Add_0"),
        helper.make_node("Mul", ["x_plus_one", "x"], ["y"], name="Mul_0"),
    ]
    value_info = [
        _vi("x_shape", TensorProto.INT64, [2]),
        _vi("batch_dim", TensorProto.INT64, []),
        _vi("seq_dim", TensorProto.INT64, []),
        _vi("batch_1d", TensorProto.INT64, [1]),
        _vi("seq_1d", TensorProto.INT64, [1]),
        _vi("ones_shape", TensorProto.INT64, [2]),
        # what infer_shapes(data_prop=False) writes: fresh symbols, although
        # dim 0 is the literal 1 of x and dim 1 equals seq
        _vi("ones", TensorProto.FLOAT, ["unk__3", "unk__4"]),
        _vi("x_plus_one", TensorProto.FLOAT, ["unk__3", "unk__5"]),
    ]
    graph = helper.make_graph(
        nodes, "unk_constantofshape",
        [_vi("x", TensorProto.FLOAT, [1, "seq"])],
        [_vi("y", TensorProto.FLOAT, [1, "seq"])],
        value_info=value_info)
    model = helper.make_model(graph, producer_name="octet-tests",
                              opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    _check_and_save(model, os.path.join(out_dir, "unk_constantofshape.onnx"))


def make_unk_constantofshape_anon(out_dir):
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"], name="Shape_0"),
        _const_i64("idx1", [1], []),
        _const_i64("axes0", [0], [1]),
        _const_i64("one_1d", [1], [1]),
        helper.make_node("Gather", ["x_shape", "idx1"], ["seq_dim"],
                         axis=0, name="Gather_0"),
        helper.make_node("Unsqueeze", ["seq_dim", "axes0"], ["seq_1d"],
                         name="Unsqueeze_0"),
        helper.make_node("Concat", ["one_1d", "seq_1d"], ["ones_shape"],
                         axis=0, name="Concat_0"),
        helper.make_node("ConstantOfShape", ["ones_shape"], ["ones"],
                         value=helper.make_tensor("one", TensorProto.FLOAT,
                                                  [1], [1.0]),
                         name="ConstantOfShape_0"),
        helper.make_node("Add", ["x", "ones"], ["x_plus_one"], name="Add_0"),
        helper.make_node("Mul", ["x_plus_one", "x"], ["y"], name="Mul_0"),
    ]
    value_info = [
        _vi("ones", TensorProto.FLOAT, ["unk__3", "unk__4"]),
        _vi("x_plus_one", TensorProto.FLOAT, ["unk__5", "unk__6"]),
    ]
    graph = helper.make_graph(
        nodes, "unk_constantofshape_anon",
        [_vi("x", TensorProto.FLOAT, ["", "DynamicDimension.0"])],
        [_vi("y", TensorProto.FLOAT, [None, "DynamicDimension.0"])],
        value_info=value_info)
    model = helper.make_model(graph, producer_name="octet-tests",
                              opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    _check_and_save(model,
                    os.path.join(out_dir, "unk_constantofshape_anon.onnx"))


# ----------------------------------------------------------------------------
# external data
# ----------------------------------------------------------------------------

def make_external_data(out_dir):
    rng = np.random.default_rng(SEED)
    w1 = rng.standard_normal((16, 32)).astype(np.float32) * 0.1
    b1 = rng.standard_normal((32,)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((32, 8)).astype(np.float32) * 0.1
    b2 = rng.standard_normal((8,)).astype(np.float32) * 0.1
    inits = [numpy_helper.from_array(a, n)
             for a, n in ((w1, "fc1.weight"), (b1, "fc1.bias"),
                          (w2, "fc2.weight"), (b2, "fc2.bias"))]
    nodes = [
        helper.make_node("MatMul", ["x", "fc1.weight"], ["h0"], name="MatMul_0"),
        helper.make_node("Add", ["h0", "fc1.bias"], ["h1"], name="Add_0"),
        helper.make_node("Relu", ["h1"], ["h2"], name="Relu_0"),
        helper.make_node("MatMul", ["h2", "fc2.weight"], ["h3"], name="MatMul_1"),
        helper.make_node("Add", ["h3", "fc2.bias"], ["y"], name="Add_1"),
    ]
    graph = helper.make_graph(
        nodes, "external_data_mlp",
        [_vi("x", TensorProto.FLOAT, ["batch", 16])],
        [_vi("y", TensorProto.FLOAT, ["batch", 8])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="octet-tests",
                              opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model, full_check=True)

    d = os.path.join(out_dir, "external_data")
    os.makedirs(d, exist_ok=True)
    # onnx appends to an existing weights file: remove it for idempotency
    for fn in ("model.onnx", "weights.bin"):
        p = os.path.join(d, fn)
        if os.path.exists(p):
            os.remove(p)
    path = os.path.join(d, "model.onnx")
    onnx.save_model(model, path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)
    onnx.checker.check_model(path, full_check=True)  # by path: resolves data
    print(f"wrote {path} ({os.path.getsize(path)} bytes) + weights.bin "
          f"({os.path.getsize(os.path.join(d, 'weights.bin'))} bytes)")


# ----------------------------------------------------------------------------
# opset 21 + int4 block-wise DequantizeLinear
# ----------------------------------------------------------------------------

def make_opset21_int4(out_dir):
    k, n, block = 32, 16, 16
    rng = np.random.default_rng(SEED + 1)
    wq = rng.integers(-8, 8, size=(k, n)).astype(np.int8)    # int4 range
    zp = rng.integers(-2, 3, size=(k // block, n)).astype(np.int8)
    scale = (rng.random((k // block, n)) * 0.05 + 0.01).astype(np.float32)
    bias = rng.standard_normal((n,)).astype(np.float32) * 0.1
    inits = [
        # helper.make_tensor packs two int4 values per byte
        helper.make_tensor("w_q", TensorProto.INT4, [k, n],
                           wq.flatten().tolist()),
        helper.make_tensor("w_zero_point", TensorProto.INT4, [k // block, n],
                           zp.flatten().tolist()),
        numpy_helper.from_array(scale, "w_scale"),
        numpy_helper.from_array(bias, "bias"),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero_point"],
                         ["w"], axis=0, block_size=block,
                         name="DequantizeLinear_0"),
        helper.make_node("MatMul", ["x", "w"], ["xw"], name="MatMul_0"),
        helper.make_node("Add", ["xw", "bias"], ["y"], name="Add_0"),
    ]
    graph = helper.make_graph(
        nodes, "opset21_int4",
        [_vi("x", TensorProto.FLOAT, ["batch", "seq", k])],
        [_vi("y", TensorProto.FLOAT, ["batch", "seq", n])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="octet-tests",
                              opset_imports=[helper.make_opsetid("", 21)],
                              ir_version=10)
    _check_and_save(model, os.path.join(out_dir, "opset21_int4.onnx"))


# ----------------------------------------------------------------------------
# exporter output + onnx shape inference (value_info with unk__N)
# ----------------------------------------------------------------------------

def make_inferred(out_dir, name):
    src = os.path.join(out_dir, name + ".onnx")
    if not os.path.exists(src):
        print(f"skip {name}_inferred.onnx: {src} missing "
              f"(run export_fixtures.py first)", file=sys.stderr)
        return
    model = onnx.load(src)
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True,
                                                 data_prop=False)
    inferred.producer_name = model.producer_name + "+onnx.infer_shapes"
    _check_and_save(inferred, os.path.join(out_dir, name + "_inferred.onnx"))


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = argv[1] if len(argv) > 1 else os.path.join(here, "fixtures")
    os.makedirs(out_dir, exist_ok=True)
    make_unk_constantofshape(out_dir)
    make_unk_constantofshape_anon(out_dir)
    make_external_data(out_dir)
    make_opset21_int4(out_dir)
    make_inferred(out_dir, "bert_tiny")
    make_inferred(out_dir, "gpt2_tiny")


if __name__ == "__main__":
    main(sys.argv)
