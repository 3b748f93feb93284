#!/usr/bin/env python3
"""Derives the SmoothQuant regression models from the exported fixtures (pip onnx, numpy).

    python3 tests/models/make_smoothquant_models.py OUT_DIR [FIXTURE_DIR]

Writes into OUT_DIR:
  vit_tiny_shared_half.onnx  vit_tiny with every GeLU's 0.5 read from ONE shared scalar
                             initializer, `gelu_half`: the pattern on which another toolkit's
                             SmoothQuant tried to fold a per-channel (3072) scale into the
                             scalar ("Expected 1, but it is 3072") and, had it been forced,
                             would have scaled the shared constant once per GeLU.
  gpt2_tiny_outliers.onnx    gpt2_tiny with a few channels of every LayerNorm's gamma and
                             beta scaled by 20-50x, so the LayerNorm outputs that feed the
                             attention and MLP projections carry the per-channel outliers
                             LLMs have (the case SmoothQuant exists for).
  vit_tiny_outliers.onnx     the same treatment of vit_tiny.
Deterministic; the fixtures are read, never modified.
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

OUTLIER_CHANNELS = {5: 20.0, 17: 35.0, 40: 50.0}


def constant_values(graph):
    """Constant node output name -> numpy value."""
    out = {}
    for n in graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            out[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    return out


def share_gelu_half(model):
    g = model.graph
    consts = constant_values(g)
    erf_inputs = set()
    producers = {o: n for n in g.node for o in n.output}
    # GeLU as torch writes it: Mul(Mul(x, Add(Erf(Div(x, sqrt2)), 1)), 0.5).
    half_users = []
    for n in g.node:
        if n.op_type != "Mul":
            continue
        for slot, name in enumerate(n.input):
            v = consts.get(name)
            other = producers.get(n.input[1 - slot])
            if v is not None and v.size == 1 and v.dtype == np.float32 and float(v) == 0.5 and other is not None \
                    and other.op_type == "Mul":
                half_users.append((n, slot, name))
    if len(half_users) < 2:
        raise SystemExit("vit_tiny: expected a GeLU 0.5 per block, found %d" % len(half_users))
    g.initializer.append(numpy_helper.from_array(np.array(0.5, dtype=np.float32), "gelu_half"))
    dropped = set()
    for n, slot, name in half_users:
        n.input[slot] = "gelu_half"
        dropped.add(name)
    still_read = {i for n in g.node for i in n.input}
    keep = [n for n in g.node if not (n.op_type == "Constant" and n.output[0] in dropped and n.output[0] not in still_read)]
    del g.node[:]
    g.node.extend(keep)
    return len(half_users)


def add_outliers(model):
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    touched = 0
    for n in g.node:
        if n.op_type != "LayerNormalization":
            continue
        for name in n.input[1:3]:
            t = inits.get(name)
            if t is None:
                continue
            a = numpy_helper.to_array(t).copy()
            for ch, factor in OUTLIER_CHANNELS.items():
                a[ch % a.shape[-1]] *= factor
            t.CopyFrom(numpy_helper.from_array(a, name))
        touched += 1
    if not touched:
        raise SystemExit("no LayerNormalization with initializer gamma found")
    return touched


def main():
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__)
    out = sys.argv[1]
    fixtures = sys.argv[2] if len(sys.argv) == 3 else os.path.join(os.path.dirname(__file__), "fixtures")
    os.makedirs(out, exist_ok=True)
    m = onnx.load(os.path.join(fixtures, "vit_tiny.onnx"))
    n = share_gelu_half(m)
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "vit_tiny_shared_half.onnx"))
    print("vit_tiny_shared_half.onnx: %d GeLUs read one 0.5" % n)
    for name in ("gpt2_tiny", "vit_tiny"):
        m = onnx.load(os.path.join(fixtures, name + ".onnx"))
        n = add_outliers(m)
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(out, name + "_outliers.onnx"))
        print("%s_outliers.onnx: outlier channels in %d LayerNorms" % (name, n))


if __name__ == "__main__":
    main()
