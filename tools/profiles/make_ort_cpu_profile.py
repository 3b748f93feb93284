#!/usr/bin/env python3
"""Asks onnxruntime itself which (op, type) combinations its CPU provider implements, and
writes the answer as the C++ table src/check/ort_cpu_kernels.inc that `octet check
--target ort` and `octet legalize --target ort` read.

For every ai.onnx op octet registers (the list is passed with --ops, one name a line, or
taken from the schema list) and each probed opset, it builds one-node models, one per
assignment of concrete types to the op's type variables (from onnx.defs.get_schema), and
creates an InferenceSession on CPUExecutionProvider. onnxruntime resolves kernels when the
session is created, so:
  - creation succeeds                     -> the combination is implemented
  - NOT_IMPLEMENTED / "Could not find an implementation" -> it is not
  - any other error (a required attribute this script cannot guess, a shape rule)
                                          -> unknown: left out of the table, and the
                                             checker then says nothing about that combination
Run it with the pip python (onnxruntime, onnx):
    python3 tools/profiles/make_ort_cpu_profile.py > src/check/ort_cpu_kernels.inc
tests/python/test_check_cli.py re-asks onnxruntime for a sample of rows so the committed
table cannot silently drift from the installed onnxruntime.
"""
import argparse
import itertools
import sys

import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

PROBED_OPSETS = (17, 21)
# Types the table speaks about; others (strings, complex, float8, 2-bit) are out of scope.
TYPES = {
    "tensor(float)": TensorProto.FLOAT, "tensor(float16)": TensorProto.FLOAT16,
    "tensor(bfloat16)": TensorProto.BFLOAT16, "tensor(double)": TensorProto.DOUBLE,
    "tensor(int8)": TensorProto.INT8, "tensor(uint8)": TensorProto.UINT8,
    "tensor(int16)": TensorProto.INT16, "tensor(uint16)": TensorProto.UINT16,
    "tensor(int32)": TensorProto.INT32, "tensor(uint32)": TensorProto.UINT32,
    "tensor(int64)": TensorProto.INT64, "tensor(uint64)": TensorProto.UINT64,
    "tensor(bool)": TensorProto.BOOL, "tensor(int4)": TensorProto.INT4, "tensor(uint4)": TensorProto.UINT4,
}
NAMES = {v: onnx.helper.tensor_dtype_to_np_dtype(v).name if v not in (TensorProto.BFLOAT16, TensorProto.INT4, TensorProto.UINT4) else None
         for v in TYPES.values()}
OCTET_NAME = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(bfloat16)": "bfloat16",
              "tensor(double)": "float64"}
# Required attributes the probe must set for the session to build at all.
REQUIRED_ATTRS = {
    "Cast": {"to": TensorProto.FLOAT}, "CastLike": {}, "Concat": {"axis": 0}, "Split": {},
    "ConstantOfShape": {}, "Flatten": {}, "Gather": {}, "EyeLike": {}, "Transpose": {},
    "DepthToSpace": {"blocksize": 2}, "SpaceToDepth": {"blocksize": 2}, "LRN": {"size": 3},
    "Scatter": {}, "OneHot": {}, "TopK": {}, "If": None, "Loop": None, "Scan": None,
}
SKIP = {"If", "Loop", "Scan", "Constant", "SequenceMap", "Optional", "OptionalGetElement", "OptionalHasElement"}
MAX_COMBOS = 400


def octet_name(type_str):
    return OCTET_NAME.get(type_str, type_str[len("tensor("):-1])


def probe(schema, opset, binding):
    """binding: type variable -> type string. Returns True/False/None (unknown)."""
    def tensor_type(type_str):
        return binding.get(type_str, type_str) if type_str in binding else type_str

    inputs, outputs, names = [], [], []
    for i, p in enumerate(schema.inputs):
        t = tensor_type(p.type_str)
        if t not in TYPES:
            return None
        inputs.append(helper.make_tensor_value_info(f"in{i}", TYPES[t], None))
        names.append(f"in{i}")
    for i, p in enumerate(schema.outputs):
        t = tensor_type(p.type_str)
        if t not in TYPES:
            return None
        outputs.append(helper.make_tensor_value_info(f"out{i}", TYPES[t], None))
    attrs = dict(REQUIRED_ATTRS.get(schema.name) or {})
    if schema.name == "Cast" and "T2" in binding:
        attrs["to"] = TYPES[binding["T2"]]
    node = helper.make_node(schema.name, names, [o.name for o in outputs], **attrs)
    graph = helper.make_graph([node], "probe", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    try:
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        opts.log_severity_level = 4
        ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return True
    except Exception as e:  # noqa: BLE001 - classified below
        msg = str(e)
        if "NOT_IMPLEMENTED" in msg or "Could not find an implementation" in msg:
            return False
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", help="file listing the ai.onnx ops to probe (default: every schema)")
    args = ap.parse_args()
    if args.ops:
        ops = [l.strip() for l in open(args.ops) if l.strip()]
    else:
        ops = sorted({s.name for s in onnx.defs.get_all_schemas() if s.domain == ""})
    rows = []
    for opset in PROBED_OPSETS:
        for op in ops:
            if op in SKIP:
                continue
            try:
                schema = onnx.defs.get_schema(op, opset, "")
            except Exception:  # noqa: BLE001 - op newer than this opset
                continue
            vars_ = [(c.type_param_str, [t for t in c.allowed_type_strs if t in TYPES]) for c in schema.type_constraints]
            vars_ = [(v, ts) for v, ts in vars_ if ts]
            combos = list(itertools.product(*[ts for _, ts in vars_]))
            if not combos or len(combos) > MAX_COMBOS:
                continue
            for combo in combos:
                binding = {v: t for (v, _), t in zip(vars_, combo)}
                ok = probe(schema, opset, binding)
                if ok is None:
                    continue
                key = ",".join(f"{v}={octet_name(t)}" for v, t in binding.items())
                rows.append((op, opset, schema.since_version, key, ok))
    print(f"// Generated by tools/profiles/make_ort_cpu_profile.py from onnxruntime {ort.__version__}"
          f" (CPUExecutionProvider), onnx {onnx.__version__}. Do not edit by hand; re-run the script.")
    print("// {op, probed opset, schema since_version, type-variable binding, implemented}")
    for op, opset, since, key, ok in rows:
        print(f'{{"{op}", {opset}, {since}, "{key}", {"true" if ok else "false"}}},')
    print(f"{len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
