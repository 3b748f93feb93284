#!/usr/bin/env python3
"""A one-node octet.Attention model (float32 q, k, v [1, S, H*D], no mask) at an encoder's
attention shape, to time the kernel alone with `octet bench FILE --threads 1 --iters 1000`
(its min is the kernel's best case; in a model the surrounding nodes' cache traffic adds).

  python3 bench/attention_node_model.py /tmp/att_dinov2.onnx --seq 257 --heads 6 --head-size 64
  python3 bench/attention_node_model.py /tmp/att_minilm.onnx --seq 128 --heads 12 --head-size 32
"""
import argparse

import onnx
from onnx import TensorProto, helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--head-size", type=int, required=True)
    a = p.parse_args()
    shape = [1, a.seq, a.heads * a.head_size]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], domain="octet", num_heads=a.heads,
                            scale=a.head_size ** -0.5)
    graph = helper.make_graph([node], "attention", ins, [out])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("octet", 1)]),
              a.out)


if __name__ == "__main__":
    main()
