#!/usr/bin/env python3
"""Round trip ONNX models through octet's importer and exporter.

For every model under tests/models/fixtures, and for small models built here with
onnx.helper (external data, Constant nodes, an If subgraph reading the outer scope,
an opset-21 int4 blocked DequantizeLinear, opset-25 int2/uint2/float8e8m0 tensors, typed tensor fields, unsorted nodes, sparse
and input-listed initializers, a model-local function), it runs

    octet_roundtrip IN OUT [--external-data]

then checks OUT with onnx.checker and compares onnxruntime's outputs on IN and OUT bit
for bit. octet_roundtrip is found next to the --octet path (same build directory).
Files under tests/bad_files/generated, when present, must be rejected with exit code 1
and one line on stderr.

Usage: python3 test_roundtrip.py --octet BUILD/octet --source-dir SRC
Prints a final line "N passed, M failed"; exits non-zero on any failure.
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG_SEED = 1234


# ----------------------------------------------------------------------------- running

def run_ort(path, feeds):
    opts = ort.SessionOptions()
    # Bit-identical comparison needs the same kernels in the same order on both sides:
    # no graph rewrites, one thread.
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return names, sess.run(None, feeds)


def run_octet(tool, path, out_npz):
    """Runs a model in octet on seeded random inputs (every named dim bound to a small
    size) and returns its outputs. For models onnxruntime has no kernels for."""
    model = onnx.load(path, load_external_data=False)
    dims = {d.dim_param for i in model.graph.input for d in i.type.tensor_type.shape.dim if d.dim_param}
    cli = os.path.join(os.path.dirname(tool), "octet")
    cmd = [cli, "run", path, "--random", "--seed", "7", "--out", out_npz]
    for k in sorted(dims):
        cmd += ["--dim", f"{k}={2 if k == 'batch' else 9}"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"octet run exited {r.returncode}: {r.stderr.strip()}")
    with np.load(out_npz) as z:
        return sorted(z.files), [z[k] for k in sorted(z.files)]


def decoder_inputs(inputs, rng, batch=2, past=5, new=5):
    """A decoder step with a KV cache whose sizes agree with each other: past tokens in the
    cache, new ones in input_ids, a mask over both, positions after the past. A file that
    declares one new token per step (attention_mask [batch, past + 1], optimum's legacy
    with-past file) gets one; a merged decoder takes its with-past branch."""
    mask = next((i for i in inputs if i.name == "attention_mask"), None)
    if mask is not None and mask.type.tensor_type.shape.dim[1].dim_param.replace(" ", "").endswith("+1"):
        new = 1
    feeds = {}
    for inp in inputs:
        tt = inp.type.tensor_type
        np_type = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if inp.name.startswith("past_key_values."):
            d = tt.shape.dim
            feeds[inp.name] = rng.standard_normal((batch, d[1].dim_value, past, d[3].dim_value)).astype(np_type)
        elif inp.name == "attention_mask":
            feeds[inp.name] = np.ones((batch, past + new), np_type)
        elif inp.name == "position_ids":
            feeds[inp.name] = np.tile(np.arange(past, past + new, dtype=np_type), (batch, 1))
        elif inp.name == "use_cache_branch":
            feeds[inp.name] = np.ones([d.dim_value for d in tt.shape.dim], np.bool_)
        elif inp.name == "input_ids":
            feeds[inp.name] = rng.integers(0, 2, (batch, new)).astype(np_type)
        else:
            raise AssertionError(f"decoder input '{inp.name}' has no rule here")
    return feeds


def make_inputs(model_path):
    """Inputs for a model: its test_data_set_0 when there is one, the ones generation feeds
    for an encoder-decoder set (a folder with reference.npz: Whisper's 80 x 128 mel frames
    and the cache lengths fit no small random size), else seeded random."""
    stem = os.path.splitext(model_path)[0]
    reference = os.path.join(os.path.dirname(model_path), "reference.npz")
    if os.path.exists(reference):
        import seq2seq_feeds

        with np.load(reference) as z:
            feeds = seq2seq_feeds.all_feeds(os.path.dirname(model_path), {k: z[k] for k in z.files})
        name = os.path.basename(stem)
        return feeds[name] if name in feeds else feeds[name + ":cache"]
    data_dir = stem + "_data/test_data_set_0"
    model = onnx.load(model_path, load_external_data=False)
    inputs = [i for i in model.graph.input
              if i.name not in {t.name for t in model.graph.initializer}]
    if os.path.isdir(data_dir):
        feeds = {}
        for k, inp in enumerate(inputs):
            t = onnx.TensorProto()
            with open(os.path.join(data_dir, f"input_{k}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            feeds[inp.name] = numpy_helper.to_array(t)
        return feeds
    rng = np.random.default_rng(RNG_SEED)
    if any(i.name.startswith("past_key_values.") for i in inputs):
        return decoder_inputs(inputs, rng)
    feeds = {}
    for inp in inputs:
        tt = inp.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            else:  # symbolic: small but not 1, so broadcasting bugs show
                shape.append(2 if "batch" in d.dim_param else 5)
        np_type = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.issubdtype(np_type, np.floating):
            feeds[inp.name] = rng.standard_normal(shape).astype(np_type)
        elif np_type == np.bool_:
            feeds[inp.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:  # ids and masks: 0/1 are valid for every embedding table
            feeds[inp.name] = rng.integers(0, 2, shape).astype(np_type)
    return feeds


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


class Runner:
    def __init__(self, tool, work):
        self.tool = tool
        self.work = work
        self.passed = 0
        self.failed = 0

    def check(self, name, fn):
        try:
            fn()
            self.passed += 1
            print(f"PASS {name}")
        except Exception as e:  # report and go on: one broken model must not hide others
            self.failed += 1
            print(f"FAIL {name}: {e}")
            if os.environ.get("OCTET_TEST_VERBOSE"):
                traceback.print_exc()

    def roundtrip(self, src, name, external=False, feeds=None, extra_check=None):
        out_dir = os.path.join(self.work, name + ("_ext" if external else ""))
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, "out.onnx")
        cmd = [self.tool, src, out] + (["--external-data"] if external else [])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise AssertionError(f"octet_roundtrip exited {r.returncode}: {r.stderr.strip()}")
        onnx.checker.check_model(out, full_check=True)
        saved = onnx.load(out, load_external_data=False)
        locations = {kv.value for t in saved.graph.initializer for kv in t.external_data
                     if kv.key == "location"}
        big_inline = [t.name for t in saved.graph.initializer if len(t.raw_data) >= 1024]
        if external and (big_inline or not locations <= {"out.onnx.data"}):
            raise AssertionError(f"external data: inline {big_inline}, locations {locations}")
        if not external and locations:
            raise AssertionError(f"unexpected external data {locations}")
        if feeds is None:
            feeds = make_inputs(src)
        try:
            names_a, outs_a = run_ort(src, feeds)
            names_b, outs_b = run_ort(out, feeds)
        except Exception as e:  # noqa: BLE001
            if "NOT_IMPLEMENTED" not in str(e):
                raise
            # onnxruntime has no CPU kernel for some op/type (bfloat16 Add: user story 3);
            # octet runs both files on the same seeded inputs instead.
            names_a, outs_a = run_octet(self.tool, src, os.path.join(out_dir, "a.npz"))
            names_b, outs_b = run_octet(self.tool, out, os.path.join(out_dir, "b.npz"))
        if names_a != names_b:
            raise AssertionError(f"outputs differ: {names_a} vs {names_b}")
        for n, a, b in zip(names_a, outs_a, outs_b):
            if not same_bits(a, b):
                raise AssertionError(f"output '{n}' differs after the round trip")
        if extra_check:
            extra_check(onnx.load(src, load_external_data=False), saved)


# ----------------------------------------------------------------------------- built models

IR_FOR_OPSET = {17: 8, 19: 9, 21: 10, 23: 11, 25: 13}  # the oldest IR each opset allows: runs on older runtimes


def make_model(graph, opset, **kw):
    kw.setdefault("opset_imports", [helper.make_opsetid("", opset)])
    return helper.make_model(graph, ir_version=IR_FOR_OPSET[opset], **kw)


def save(model, path, check=True, **kw):
    if check:  # the checker insists on sorted nodes, which the unsorted case breaks on purpose
        onnx.checker.check_model(model)
    onnx.save_model(model, path, **kw)
    return path


def mlp_model(opset=17):
    rng = np.random.default_rng(RNG_SEED)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
             helper.make_node("Add", ["h", "b1"], ["h2"], name="add1"),
             helper.make_node("Relu", ["h2"], ["h3"], name="relu"),
             helper.make_node("MatMul", ["h3", "w2"], ["y"], name="mm2")]
    g = helper.make_graph(nodes, "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
                          [w1, b1, w2])
    return make_model(g, opset)


def build_external(work):
    d = os.path.join(work, "src_external")
    os.makedirs(d, exist_ok=True)
    return save(mlp_model(), os.path.join(d, "model.onnx"), save_as_external_data=True,
                all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)


def build_constants(work):
    nodes = [
        helper.make_node("Constant", [], ["c_t"], name="c_tensor",
                         value=helper.make_tensor("v", TensorProto.FLOAT, [3], [1.5, -2.0, 3.25])),
        helper.make_node("Constant", [], ["c_f"], name="c_float", value_float=0.5),
        helper.make_node("Constant", [], ["c_shape"], name="c_ints", value_ints=[3, 1]),
        helper.make_node("Add", ["x", "c_t"], ["a"]),
        helper.make_node("Mul", ["a", "c_f"], ["b"]),
        helper.make_node("Reshape", ["b", "c_shape"], ["y"]),
    ]
    g = helper.make_graph(nodes, "constants",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 1])])
    m = make_model(g, 17)
    return save(m, os.path.join(work, "constants.onnx"))


def build_if(work):
    # Both branches read outer-scope values: an initializer and a node output.
    then_g = helper.make_graph(
        [helper.make_node("Add", ["h", "bias"], ["t_out"])], "then_body", [],
        [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [4])])
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["h", "bias"], ["e_out"])], "else_body", [],
        [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [4])])
    bias = numpy_helper.from_array(np.arange(4, dtype=np.float32), "bias")
    nodes = [helper.make_node("Relu", ["x"], ["h"]),
             helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "if_graph",
                          [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                           helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [bias])
    m = make_model(g, 17)
    return save(m, os.path.join(work, "if.onnx"))


def build_int4(work):
    k, n, block = 32, 8, 16
    rng = np.random.default_rng(RNG_SEED)
    q = rng.integers(-8, 8, (k, n))
    w = helper.make_tensor("wq", TensorProto.INT4, [k, n], q.flatten().tolist())
    scale = numpy_helper.from_array((rng.random((k // block, n)) * 0.1 + 0.01).astype(np.float32), "ws")
    zp = helper.make_tensor("wz", TensorProto.INT4, [k // block, n],
                            rng.integers(-2, 2, (k // block, n)).flatten().tolist())
    nodes = [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0, block_size=block),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    g = helper.make_graph(nodes, "int4",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])],
                          [w, scale, zp])
    m = make_model(g, 21)
    return save(m, os.path.join(work, "int4.onnx"))


def build_two_bit(work):
    # IR 13 / opset 25: a blocked int2 weight with int2 zero points (six elements: the
    # last byte half padding), a uint2 vector of five and float8e8m0 values, all written by
    # helper.make_tensor into int32_data (packed four per entry for the 2-bit types).
    k, n, block = 8, 3, 4
    rng = np.random.default_rng(RNG_SEED)
    w = helper.make_tensor("wq", TensorProto.INT2, [k, n], rng.integers(-2, 2, (k, n)).flatten().tolist())
    scale = numpy_helper.from_array((rng.random((k // block, n)) * 0.1 + 0.01).astype(np.float32), "ws")
    zp = helper.make_tensor("wz", TensorProto.INT2, [k // block, n], [-2, -1, 0, 1, 1, -2])
    u = helper.make_tensor("u", TensorProto.UINT2, [5], [0, 1, 2, 3, 1])
    e = helper.make_tensor("e", TensorProto.FLOAT8E8M0, [n], [0.25, 1.0, 64.0])
    nodes = [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0, block_size=block),
             helper.make_node("MatMul", ["x", "w"], ["y"]),
             helper.make_node("Cast", ["e"], ["ef"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["y", "ef"], ["z"]),
             helper.make_node("Cast", ["u"], ["uf"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "two_bit",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", n]),
                           helper.make_tensor_value_info("uf", TensorProto.FLOAT, [5])],
                          [w, scale, zp, u, e])
    return save(make_model(g, 25), os.path.join(work, "two_bit.onnx"))


def build_typed_fields(work):
    # helper.make_tensor writes typed fields (float_data, int32_data, int64_data, ...),
    # not raw_data; octet reads them and writes raw_data.
    inits = [
        helper.make_tensor("f32", TensorProto.FLOAT, [4], [1.0, -2.0, 0.5, 8.0]),
        helper.make_tensor("f16", TensorProto.FLOAT16, [4], [1.0, -2.0, 0.5, 65504.0]),
        helper.make_tensor("bf16", TensorProto.BFLOAT16, [4], [1.0, -2.0, 0.5, 3.0]),
        helper.make_tensor("f64", TensorProto.DOUBLE, [4], [1.0, -2.0, 0.5, 1e-3]),
        helper.make_tensor("i8", TensorProto.INT8, [4], [1, -2, 127, -128]),
        helper.make_tensor("u8", TensorProto.UINT8, [4], [0, 1, 200, 255]),
        helper.make_tensor("i16", TensorProto.INT16, [4], [1, -2, 32767, -32768]),
        helper.make_tensor("u16", TensorProto.UINT16, [4], [1, 2, 65535, 7]),
        helper.make_tensor("i32", TensorProto.INT32, [4], [1, -2, 2**31 - 1, -2**31]),
        helper.make_tensor("i64", TensorProto.INT64, [4], [1, -2, 2**40, -2**40]),
        helper.make_tensor("u32", TensorProto.UINT32, [4], [1, 2, 2**32 - 1, 7]),
        helper.make_tensor("u64", TensorProto.UINT64, [4], [1, 2, 2**40, 7]),
        helper.make_tensor("bl", TensorProto.BOOL, [4], [True, False, True, True]),
    ]
    nodes, outs = [], []
    for t in inits:
        nodes.append(helper.make_node("Cast", [t.name], [t.name + "_f"], to=TensorProto.DOUBLE))
        nodes.append(helper.make_node("Add", ["x", t.name + "_f"], [t.name + "_y"]))
        outs.append(helper.make_tensor_value_info(t.name + "_y", TensorProto.DOUBLE, [4]))
    g = helper.make_graph(nodes, "typed", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [4])],
                          outs, inits)
    m = make_model(g, 19)
    return save(m, os.path.join(work, "typed_fields.onnx"))


def build_unsorted_and_legacy(work):
    # Nodes in reverse order, a weight also listed as a graph input (old exporters), a
    # sparse initializer, metadata, doc strings, and value_info with unknown dims.
    m = mlp_model()
    g = m.graph
    nodes = list(g.node)
    del g.node[:]
    g.node.extend(reversed(nodes))
    g.input.append(helper.make_tensor_value_info("w1", TensorProto.FLOAT, [16, 32]))
    dense = np.zeros((32,), dtype=np.float32)
    dense[[3, 17]] = [0.25, -4.0]
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.array([0.25, -4.0], dtype=np.float32), "b2"),
        numpy_helper.from_array(np.array([3, 17], dtype=np.int64), "b2_idx"), [32])
    g.sparse_initializer.append(sparse)
    g.node.append(helper.make_node("Add", ["h3", "b2"], ["h4"], name="add_sparse"))
    g.node[0].input[0] = "h4"  # reversed: node 0 is mm2, now reading h4
    g.value_info.append(helper.make_tensor_value_info("h", TensorProto.FLOAT, ["unk__1", 32]))
    g.value_info.append(helper.make_tensor_value_info("h2", TensorProto.FLOAT, ["unk__1", None]))
    g.doc_string = "graph doc"
    m.doc_string = "model doc"
    m.producer_name = "octet-test"
    helper.set_model_props(m, {"author": "octet", "purpose": "round trip"})
    return save(m, os.path.join(work, "legacy.onnx"), check=False)


def build_opset23(work):
    # IR 11 / opset 23: a float8 initializer in int32_data and graph-level metadata_props,
    # a field newer than the onnx.proto octet is compiled against.
    w = numpy_helper.from_array(np.arange(3, dtype=np.float16), "w")
    f8 = helper.make_tensor("f8", TensorProto.FLOAT8E4M3FN, [3], [1.0, 2.0, -0.5])
    nodes = [helper.make_node("Add", ["x", "w"], ["y"]),
             helper.make_node("Cast", ["f8"], ["f8h"], to=TensorProto.FLOAT16),
             helper.make_node("Add", ["y", "f8h"], ["z"])]
    g = helper.make_graph(nodes, "g23", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["b", 3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT16, ["b", 3])], [w, f8])
    g.metadata_props.add(key="origin", value="graph metadata")
    return save(make_model(g, 23), os.path.join(work, "opset23.onnx"))


def check_graph_metadata(src, out):
    if list(src.graph.metadata_props) != list(out.graph.metadata_props):
        raise AssertionError("graph metadata_props (a field newer than octet's onnx.proto) were lost")


def check_props(src, out):
    if src.doc_string != out.doc_string or src.producer_name != out.producer_name:
        raise AssertionError("model doc_string/producer_name changed")
    if [(p.key, p.value) for p in src.metadata_props] != [(p.key, p.value) for p in out.metadata_props]:
        raise AssertionError("metadata_props changed")
    if src.graph.doc_string != out.graph.doc_string:
        raise AssertionError("graph doc_string changed")
    if out.graph.sparse_initializer:
        raise AssertionError("sparse initializer should have been written densely")


def build_function(work):
    # A model-local function: lives outside the graph, so it must survive via preserved_proto.
    fn = helper.make_function(
        "custom", "AddTwice", ["a", "b"], ["c"],
        [helper.make_node("Add", ["a", "b"], ["t"]), helper.make_node("Add", ["t", "b"], ["c"])],
        [helper.make_opsetid("", 17)])
    g = helper.make_graph([helper.make_node("AddTwice", ["x", "x"], ["y"], domain="custom")], "fn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = make_model(g, 17, functions=[fn],
                   opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)])
    return save(m, os.path.join(work, "function.onnx"))


def check_function(src, out):
    if [f.SerializeToString() for f in src.functions] != [f.SerializeToString() for f in out.functions]:
        raise AssertionError("model-local functions changed")


def check_subgraphs(src, out):
    def branches(m):
        node = [n for n in m.graph.node if n.op_type == "If"][0]
        return sorted(a.SerializeToString() for a in node.attribute)
    if branches(src) != branches(out):
        raise AssertionError("If branches were not written back verbatim")


# ----------------------------------------------------------------------------- bad files

def check_rejected(tool, path, work):
    r = subprocess.run([tool, path, os.path.join(work, "rejected.onnx")], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 1:
        raise AssertionError(f"expected exit code 1, got {r.returncode}: {r.stderr.strip()}")
    lines = r.stderr.strip().splitlines()
    if len(lines) != 1 or path not in lines[0]:
        raise AssertionError(f"expected one error line naming the file, got: {r.stderr!r}")


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--octet", required=True, help="path of the octet CLI; octet_roundtrip sits beside it")
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()

    tool = os.path.join(os.path.dirname(os.path.abspath(args.octet)), "octet_roundtrip")
    if not os.path.exists(tool):
        print(f"octet_roundtrip not found at {tool}")
        print("0 passed, 1 failed")
        return 1

    fixtures_dir = os.path.join(args.source_dir, "tests", "models", "fixtures")
    # fixtures/ill_typed/ holds models that break ONNX's type rules on purpose (inputs for
    # octet check/legalize); no tool is expected to load them as they are.
    fixtures = sorted(f for f in glob.glob(os.path.join(fixtures_dir, "**", "*.onnx"), recursive=True)
                      if os.sep + "ill_typed" + os.sep not in f)
    print(f"{len(fixtures)} models in {fixtures_dir}")

    with tempfile.TemporaryDirectory(prefix="octet_roundtrip_") as work:
        r = Runner(tool, work)
        for f in fixtures:
            name = os.path.relpath(f, fixtures_dir).replace(os.sep, "_")[:-5]
            r.check(f"fixture {name}", lambda f=f, name=name: r.roundtrip(f, name))
            r.check(f"fixture {name} (external data)",
                    lambda f=f, name=name: r.roundtrip(f, name, external=True))

        built = [
            ("external", build_external, None),
            ("constants", build_constants, None),
            ("if_subgraph", build_if, check_subgraphs),
            ("int4_dequantize", build_int4, None),
            ("two_bit_and_e8m0", build_two_bit, None),
            ("typed_fields", build_typed_fields, None),
            ("unsorted_legacy", build_unsorted_and_legacy, check_props),
            ("local_function", build_function, check_function),
            ("opset23_newer_fields", build_opset23, check_graph_metadata),
        ]
        for name, build, extra in built:
            try:
                src = build(work)
            except Exception as e:
                r.check(f"built {name}", lambda e=e: (_ for _ in ()).throw(e))
                continue
            try:
                run_ort(src, make_inputs(src))
            except Exception as e:  # an onnxruntime without this op: nothing to compare
                print(f"SKIP built {name}: onnxruntime cannot run the original ({str(e).splitlines()[0]})")
                continue
            for external in (False, True):
                label = f"built {name}" + (" (external data)" if external else "")
                r.check(label, lambda src=src, name=name, external=external, extra=extra:
                        r.roundtrip(src, name, external=external, extra_check=extra))

        bad_dir = os.path.join(args.source_dir, "tests", "bad_files", "generated")
        bad = sorted(glob.glob(os.path.join(bad_dir, "**", "*.onnx"), recursive=True))
        print(f"{len(bad)} bad files in {bad_dir}")
        for f in bad:
            r.check(f"rejects {os.path.relpath(f, bad_dir)}", lambda f=f: check_rejected(tool, f, work))

    print(f"{r.passed} passed, {r.failed} failed")
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
