#!/usr/bin/env python3
"""What one decode step has to read, for the bandwidth column of bench/decode.py (issue 16: "report
each decode step's achieved bytes/s; goal >= 70% of the machine's bandwidth").

  python3 bench/decode_bytes.py onnx MODEL.onnx        # octet's and onnxruntime-genai's files
  python3 bench/decode_bytes.py openvino FOLDER        # openvino_model.xml/.bin

Weight bytes per token: every constant of the model (ONNX initializers at their stored width, int4
as half a byte; the IR's Constants) except the token-embedding table, of which a step reads one row:
the constants that reach a Gather's data input (through dequantization ops) when that Gather's indices
come from input_ids and nothing else reads them. The KV cache a step also reads (30 layers x 2 x
3 heads x 64 x 4 bytes per past token, 5.6 MiB at 240 tokens) is not counted: the column is about
weights. Prints one JSON object: weight_bytes, embedding_bytes, per_token_bytes."""
import json
import os
import sys

# ONNX element types narrower than a byte (TensorProto.INT4 / UINT4 / FLOAT4E2M1)
_SUB_BYTE_BITS = {21: 4, 22: 4, 23: 4}
# ops a dequantized embedding passes through between its constants and the Gather
_PASS_THROUGH = {"DequantizeLinear", "Cast", "Convert", "Subtract", "Multiply", "Mul", "Sub", "Reshape", "Unsqueeze"}


def onnx_bytes(path):
    import numpy as np
    import onnx
    from onnx import helper

    m = onnx.load(path, load_external_data=False)
    g = m.graph
    size = {}
    for t in g.initializer:
        n = int(np.prod(t.dims)) if t.dims else 1
        bits = _SUB_BYTE_BITS.get(t.data_type) or helper.tensor_dtype_to_np_dtype(t.data_type).itemsize * 8
        size[t.name] = (n * bits + 7) // 8
    producer = {o: n for n in g.node for o in n.output}
    readers = {}
    for n in g.node:
        for x in n.input:
            readers.setdefault(x, []).append(n)

    def from_ids(name, depth=0):
        if name == "input_ids":
            return True
        p = producer.get(name)
        return depth < 4 and p is not None and p.op_type in ("Cast", "Reshape", "Unsqueeze") and from_ids(p.input[0], depth + 1)

    embedding = set()
    for n in g.node:
        if n.op_type != "Gather" or not from_ids(n.input[1]):
            continue
        stack, seen = [n.input[0]], set()
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            if x in size:
                embedding.add(x)
            elif x in producer and producer[x].op_type in _PASS_THROUGH:
                stack.extend(i for i in producer[x].input if i)
        # a table another op also reads (a tied LM head) is read in full every step
        embedding = {x for x in embedding if all(r.op_type in _PASS_THROUGH | {"Gather"} for r in readers.get(x, []))}
    total = sum(size.values())
    emb = sum(size[x] for x in embedding)
    return {"weight_bytes": total, "embedding_bytes": emb, "per_token_bytes": total - emb}


def openvino_bytes(folder):
    import openvino as ov

    model = ov.Core().read_model(os.path.join(folder, "openvino_model.xml"))
    consts = {}
    for op in model.get_ops():
        if op.get_type_name() == "Constant":
            consts[op.get_friendly_name()] = op.get_byte_size()

    def from_ids(node, depth=0):
        if node.get_type_name() == "Parameter":
            return "input_ids" in node.output(0).get_names()
        return depth < 4 and node.get_type_name() in ("Convert", "Reshape", "Unsqueeze") and \
            from_ids(node.input_value(0).get_node(), depth + 1)

    embedding = {}
    for op in model.get_ops():
        if op.get_type_name() != "Gather" or not from_ids(op.input_value(1).get_node()):
            continue
        stack = [op.input_value(0).get_node()]
        while stack:
            node = stack.pop()
            kind = node.get_type_name()
            if kind == "Constant":
                readers = node.output(0).get_target_inputs()
                if all(r.get_node().get_type_name() in _PASS_THROUGH | {"Gather"} for r in readers):
                    embedding[node.get_friendly_name()] = node.get_byte_size()
            elif kind in _PASS_THROUGH:
                stack.extend(v.get_node() for v in node.input_values())
    total = sum(consts.values())
    emb = sum(embedding.values())
    return {"weight_bytes": total, "embedding_bytes": emb, "per_token_bytes": total - emb}


def main():
    kind, path = sys.argv[1:3]
    print(json.dumps(onnx_bytes(path) if kind == "onnx" else openvino_bytes(path)))


if __name__ == "__main__":
    main()
