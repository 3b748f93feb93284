#!/usr/bin/env python3
"""Where a transformer's int8 P.V error comes from, layer by layer (issue 15).

Runs the float model in onnxruntime with each attention block's scores (the input of its
Softmax) and V (the second input of its P.V MatMul) as extra outputs, then computes
softmax(S) V exactly and under simulated quantization schemes, printing the SQNR (dB) of
the P.V output for each: P per row at 255 levels (octet's row form), V per tensor
(calibrated on the same samples), both, V per column, P at 16-bit levels. Also the share
of each row's probability mass that rounds to zero at 255 levels.

  python3 bench/pv_error_sim.py --model ~/.cache/octet/exports/dinov2/dinov2.onnx \
      --calib ~/.cache/octet/exports/data/calib/vit --samples 8

Attention blocks are found by pattern: Softmax -> MatMul(P, V); the scores are the
Softmax's input. (DINOv2-S: P rows and V per tensor cost about the same, 28-46 dB
together; 16-bit P removes P's share -- bench/results/*issue15_per_token*.)
"""
import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort


def blocks(model):
    consumers = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    out = []
    for n in model.graph.node:
        if n.op_type != "Softmax":
            continue
        for c in consumers.get(n.output[0], []):
            if c.op_type == "MatMul" and c.input[0] == n.output[0]:
                out.append((n.input[0], c.input[1]))
    return out


def sqnr(ref, got):
    return 10 * np.log10((ref ** 2).sum() / max(((ref - got) ** 2).sum(), 1e-30))


def q_tensor(x, lo, hi):
    sc = (hi - lo) / 255
    zp = np.round(-lo / sc)
    return (np.clip(np.round(x / sc) + zp, 0, 255) - zp) * sc


def q_cols(x):  # per last-axis column over the tokens, per head
    lo = np.minimum(x.min(axis=-2, keepdims=True), 0)
    hi = np.maximum(x.max(axis=-2, keepdims=True), 0)
    sc = np.where(hi > lo, (hi - lo) / 255, 1.0)
    zp = np.round(-lo / sc)
    return (np.clip(np.round(x / sc) + zp, 0, 255) - zp) * sc


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--calib", required=True, help="folder of .npz samples keyed by input name")
    p.add_argument("--samples", type=int, default=8)
    a = p.parse_args()
    m = onnx.load(a.model)
    pairs = blocks(m)
    if not pairs:
        raise SystemExit(f"{a.model}: no Softmax -> MatMul(P, V) attention found")
    for s, v in pairs:
        for name in (s, v):
            m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    files = sorted(f for f in os.listdir(a.calib) if f.endswith(".npz"))[: a.samples]
    names = [o.name for o in sess.get_outputs()]
    inputs = {i.name for i in sess.get_inputs()}
    runs = []
    for f in files:
        d = np.load(os.path.join(a.calib, f))
        runs.append(dict(zip(names, sess.run(None, {k: d[k] for k in d.files if k in inputs}))))
    schemes = ["P rows", "V tensor", "P rows + V tensor", "V cols", "P 16-bit + V tensor"]
    print("block  " + "  ".join(f"{k:>20}" for k in schemes) + "  mass zeroed")
    for b, (s_name, v_name) in enumerate(pairs):
        vlo = min(0.0, min(float(r[v_name].min()) for r in runs))
        vhi = max(0.0, max(float(r[v_name].max()) for r in runs))
        res = {k: [] for k in schemes}
        mass = []
        for r in runs:
            S = r[s_name].astype(np.float64)
            V = r[v_name].astype(np.float64)
            E = np.exp(S - S.max(-1, keepdims=True))
            Z = E.sum(-1, keepdims=True)
            ref = (E / Z) @ V
            Eq = np.round(E * 255) / 255
            E16 = np.round(E * 32767) / 32767
            Vt = q_tensor(V, vlo, vhi)
            mass.append(float(((E * (Eq == 0)).sum(-1) / Z[..., 0]).mean()))
            res["P rows"].append(sqnr(ref, (Eq / Z) @ V))
            res["V tensor"].append(sqnr(ref, (E / Z) @ Vt))
            res["P rows + V tensor"].append(sqnr(ref, (Eq / Z) @ Vt))
            res["V cols"].append(sqnr(ref, (E / Z) @ q_cols(V)))
            res["P 16-bit + V tensor"].append(sqnr(ref, (E16 / Z) @ Vt))
        print(f"{b:5d}  " + "  ".join(f"{np.mean(res[k]):20.1f}" for k in schemes) + f"  {np.mean(mass):.3f}")


if __name__ == "__main__":
    main()
