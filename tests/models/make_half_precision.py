#!/usr/bin/env python3
"""Writes float16 and bfloat16 variants of the exported fixtures (pip onnx, no torch).

    python3 tests/models/make_half_precision.py [FIXTURE_DIR]

For each of bert_tiny, vit_tiny, gpt2_tiny it writes, where the result is valid ONNX, <name>_fp16.onnx and
<name>_bf16.onnx: every float32 initializer, Constant, ConstantOfShape value, graph
input/output and Cast(to=float) becomes the half type, as a model exported with
`.half()` / `.bfloat16()` would be. Constants beyond the half type's range (the
exporter's finfo(float32).min attention-mask fill) are clamped to its largest finite
value, as exporters do when they build the mask in that dtype; an infinite fill would
turn `0 * fill` into NaN.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FP16_MAX = 65504.0
BF16_MAX = 3.3895313892515355e38


def to_bfloat16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, round to nearest even."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(a)
    out = rounded.astype(np.uint16)
    out[nan] = 0x7FC0
    return out


def convert_tensor(t: TensorProto, target: int) -> TensorProto:
    if t.data_type != TensorProto.FLOAT:
        return t
    a = numpy_helper.to_array(t)
    limit = FP16_MAX if target == TensorProto.FLOAT16 else BF16_MAX
    a = np.clip(a, -limit, limit)
    if target == TensorProto.FLOAT16:
        out = numpy_helper.from_array(a.astype(np.float16), t.name)
    else:
        out = TensorProto()
        out.name = t.name
        out.data_type = TensorProto.BFLOAT16
        out.dims.extend(a.shape)
        out.raw_data = to_bfloat16_bits(a).tobytes()
    return out


def convert_graph(graph: onnx.GraphProto, target: int) -> None:
    for i, t in enumerate(graph.initializer):
        graph.initializer[i].CopyFrom(convert_tensor(t, target))
    for v in list(graph.input) + list(graph.output) + list(graph.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = target
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                attr.t.CopyFrom(convert_tensor(attr.t, target))
            elif node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = target


def main() -> int:
    fixtures = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures")
    for name in ("bert_tiny", "vit_tiny", "gpt2_tiny"):
        for suffix, target in (("fp16", TensorProto.FLOAT16), ("bf16", TensorProto.BFLOAT16)):
            model = onnx.load(os.path.join(fixtures, f"{name}.onnx"))
            convert_graph(model.graph, target)
            model.producer_name += f" (converted to {suffix} by make_half_precision.py)"
            try:
                onnx.checker.check_model(model, full_check=True)
            except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
                # e.g. Conv has no bfloat16 before opset 22: such a model is not valid
                # ONNX, and making it valid is `octet legalize`'s job, not a fixture's.
                print(f"skipped {name}_{suffix}: {str(e).splitlines()[0]}")
                continue
            path = os.path.join(fixtures, f"{name}_{suffix}.onnx")
            onnx.save(model, path)
            print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
