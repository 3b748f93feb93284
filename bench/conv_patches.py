#!/usr/bin/env python3
"""Patch Convs (stride == kernel) on octet: oneDNN's convolution against patches + MatMul.

The evidence behind passes/rewrites/conv_patches_to_matmul.cpp's rule. For each case it
writes small ONNX graphs under build/bench_models/conv_patches/ and times them with
`octet bench` (one binary, alternating the two graphs each round, median p50 over rounds):

  tokens / channels-last  Conv + the tail the rewrite absorbs (ViT's flatten +
                          Transpose(0,2,1), or Transpose(0,2,3,1)). "conv": the same graph
                          with the input's H and W symbolic, which keeps the rewrite off
                          while oneDNN's Conv runs on the same sizes; "rewritten": static
                          sizes, so octet's optimizer rewrites it.
  nchw                    Conv + Relu (the rewrite leaves it) against the rewrite written
                          by hand with a Transpose back to NCHW: why NCHW readers keep the Conv.

  python3 bench/conv_patches.py                       # 2 threads, 7 rounds
  python3 bench/conv_patches.py --threads 1 --rounds 9 --json out.json

On a shared machine compare the per-round ratios, not milliseconds (the load is printed).
"""
import argparse
import json
import os
import statistics
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name, input [N, C, H, W], filters, kernel (== stride), tail
CASES = [
    ("vit16_tokens", [1, 3, 224, 224], 64, 16, "tokens"),
    ("vit16_last", [1, 3, 224, 224], 64, 16, "last"),
    ("stem4_last", [1, 3, 224, 224], 96, 4, "last"),
    ("stem2_last", [1, 3, 224, 224], 64, 2, "last"),
    ("conv1x1_last", [1, 64, 56, 56], 128, 1, "last"),
    ("vit16_nchw", [1, 3, 224, 224], 64, 16, "nchw"),
    ("vit14_nchw", [1, 3, 224, 224], 64, 14, "nchw"),
    ("stem8_nchw", [1, 3, 224, 224], 128, 8, "nchw"),
    ("stem4_nchw", [1, 3, 224, 224], 96, 4, "nchw"),
    ("stem2_nchw", [1, 3, 224, 224], 64, 2, "nchw"),
    ("conv1x1_nchw", [1, 64, 56, 56], 128, 1, "nchw"),
]


def save(nodes, inits, x_dims, y_dims, path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, y_dims)
    model = helper.make_model(helper.make_graph(nodes, "patch_conv", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, path)


def weights(c, oc, k):
    rng = np.random.default_rng(0)
    return (rng.standard_normal([oc, c, k, k]).astype(np.float32) * 0.1, rng.standard_normal([oc]).astype(np.float32))


def conv_graph(path, x_shape, oc, k, tail, symbolic_hw):
    n, c, h, w = x_shape
    oh, ow = h // k, w // k
    wt, b = weights(c, oc, k)
    inits = [numpy_helper.from_array(wt, "w"), numpy_helper.from_array(b, "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[k, k])]
    if tail == "tokens":
        inits.append(numpy_helper.from_array(np.array([0, oc, -1], np.int64), "flat"))
        nodes += [helper.make_node("Reshape", ["c", "flat"], ["f"]),
                  helper.make_node("Transpose", ["f"], ["y"], perm=[0, 2, 1])]
        y_dims = [n, oh * ow, oc]
    elif tail == "last":
        nodes.append(helper.make_node("Transpose", ["c"], ["y"], perm=[0, 2, 3, 1]))
        y_dims = [n, oh, ow, oc]
    else:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
        y_dims = [n, oc, oh, ow]
    x_dims = [n, c, "h", "w"] if symbolic_hw else x_shape
    save(nodes, inits, x_dims, None if symbolic_hw else y_dims, path)


def nchw_rewritten_graph(path, x_shape, oc, k):
    """What the rewrite would write for a Conv read as NCHW: patches, MatMul, back to NCHW."""
    n, c, h, w = x_shape
    oh, ow = h // k, w // k
    wt, b = weights(c, oc, k)
    ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    inits = [numpy_helper.from_array(wt.reshape(oc, -1).T.copy(), "w_columns"), numpy_helper.from_array(b, "b"),
             ints("grid", [0, c, oh, k, ow, k]), ints("rows", [0, oh * ow, c * k * k]), ints("out", [0, oh, ow, oc])]
    nodes = [helper.make_node("Reshape", ["x", "grid"], ["g"]),
             helper.make_node("Transpose", ["g"], ["p"], perm=[0, 2, 4, 1, 3, 5]),
             helper.make_node("Reshape", ["p", "rows"], ["r"]), helper.make_node("MatMul", ["r", "w_columns"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["mb"]), helper.make_node("Reshape", ["mb", "out"], ["o"]),
             helper.make_node("Transpose", ["o"], ["c"], perm=[0, 3, 1, 2]), helper.make_node("Relu", ["c"], ["y"])]
    save(nodes, inits, x_shape, [n, oc, oh, ow], path)


def bench(octet, args, threads, iters):
    out = subprocess.run([octet, "bench", *args, "--threads", str(threads), "--iters", str(iters), "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["p50_ms"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--octet", default="build/release/octet")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--iters", type=int, default=500)
    p.add_argument("--json", metavar="FILE")
    a = p.parse_args()
    folder = os.path.join("build", "bench_models", "conv_patches")
    os.makedirs(folder, exist_ok=True)
    rows = []
    print(f"{'case':14} {'conv p50':>9} {'rewritten':>10} {'ratio':>6}  per-round ratios")
    for name, x_shape, oc, k, tail in CASES:
        conv_path = os.path.join(folder, name + "_conv.onnx")
        rewritten_path = os.path.join(folder, name + "_rewritten.onnx")
        if tail == "nchw":
            conv_graph(conv_path, x_shape, oc, k, tail, symbolic_hw=False)
            nchw_rewritten_graph(rewritten_path, x_shape, oc, k)
            runs = {"conv": [conv_path], "rewritten": [rewritten_path]}
        else:
            conv_graph(conv_path, x_shape, oc, k, tail, symbolic_hw=True)
            conv_graph(rewritten_path, x_shape, oc, k, tail, symbolic_hw=False)
            hw = [f"h={x_shape[2]}", f"w={x_shape[3]}"]
            runs = {"conv": [conv_path, "--dynamic", "--dim", hw[0], "--dim", hw[1]],
                    "rewritten": [rewritten_path, "--dynamic"]}
        p50 = {key: [] for key in runs}
        for _ in range(a.rounds):
            for key, args in runs.items():
                p50[key].append(bench(a.octet, args, a.threads, a.iters))
        conv, rewritten = statistics.median(p50["conv"]), statistics.median(p50["rewritten"])
        per_round = [r / c for c, r in zip(p50["conv"], p50["rewritten"])]
        print(f"{name:14} {conv:9.4f} {rewritten:10.4f} {rewritten / conv:6.3f}  "
              + " ".join(f"{r:.2f}" for r in per_round), flush=True)
        rows.append({"case": name, "input": x_shape, "filters": oc, "kernel": k, "tail": tail,
                     "conv_p50_ms": p50["conv"], "rewritten_p50_ms": p50["rewritten"],
                     "median_ratio": rewritten / conv})
    load = os.getloadavg()
    print(f"threads {a.threads}, {a.rounds} rounds of {a.iters} iterations; load average {load[0]:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"threads": a.threads, "rounds": a.rounds, "iters": a.iters, "load_average": load,
                       "cases": rows}, f, indent=1)


if __name__ == "__main__":
    main()
