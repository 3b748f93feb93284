#!/usr/bin/env python3
"""Exports the fixtures of user story 3 (type errors in quantized / mixed-precision
models) with torch.onnx.export, and derives the failing variants the story names.

    /usr/bin/python3 tests/models/export_type_mix_fixtures.py [FIXTURE_DIR]

quantlinear_gptq.onnx
    A GPTQ-style QuantLinear q_proj (in 64 -> out 48, group size 32, 4 bits): int32
    qweight packs eight 4-bit weights per int32 along the input axis, int32 qzeros packs
    eight (zero - 1) values along the output axis (GPTQ's v1 format), float16 scales,
    int32 g_idx, float16 bias. forward() unpacks in torch (floor division by powers of two
    and remainder 16: what `(q >> s) & 15` computes, in ops torch 1.13 exports for int32),
    subtracts the zeros, multiplies by the scales and runs x @ W + bias in float16.
    torch's type promotion makes the exporter insert Cast(int32 -> float16) where the
    unpacked integers meet the float16 scales.
quantlinear_gptq_actorder.onnx
    The same with act-order (desc_act): g_idx scatters each group's rows.
quantlinear_awq.onnx
    An AWQ-style q_proj (in 128 -> out 32, group 64): qweight [K, N/8] and qzeros
    [G, N/8] packed along the output axis in AWQ's column order 0 2 4 6 1 3 5 7, zeros
    stored as they are, contiguous groups (no g_idx), float16 scales and bias.
ill_typed/quantlinear_gptq_broken.onnx (reference I/O: quantlinear_gptq_data/)
    The same graph with that Cast removed, as exporters that skip type promotion write
    it (torch 1.13 always inserts it, so the variant is made by editing the export): the
    int32 tensor (w - z) meets the float16 scales in Mul, which onnxruntime rejects.
rmsnorm_{cast_mul,cast_both}_{fp16,bf16}.onnx, ill_typed/rmsnorm_mul_cast_{fp16,bf16}.onnx
    RMSNorm with a float32 weight over float16/bfloat16 activations (float32 model I/O,
    cast to the half type on entry and back on exit), computed in float32 and written
    three ways: `w * h.to(dt)`, `(w * h).to(dt)`, `w.to(dt) * h.to(dt)`.
    torch 1.13 promotes the first (float32 * half -> float32) with a Cast it inserts;
    the failing variant the story names (a float32 weight meeting a half tensor in Mul)
    is made by removing that Cast (mul_cast only).
The reference I/O for each is saved as <name>_data/ (input_0.npy, output_0.npy computed by
torch in float32 from the same weights) for the tests.
"""
import os
import sys

import numpy as np
import onnx
import torch
from torch import nn

K, N, GROUP = 64, 48, 32
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # nibble j of an AWQ word holds column AWQ_ORDER[j] of its eight
AWQ_SHIFTS = [0, 16, 4, 20, 8, 24, 12, 28]  # column i of the eight sits at bit 4 * AWQ_ORDER.index(i)


def pack_along_rows(q):  # q [K, N] in 0..15 -> int32 [K/8, N]
    q = q.astype(np.uint32).reshape(q.shape[0] // 8, 8, q.shape[1])
    packed = np.zeros((q.shape[0], q.shape[2]), dtype=np.uint32)
    for j in range(8):
        packed |= q[:, j, :] << np.uint32(4 * j)
    return packed.view(np.int32)


def pack_along_cols(q, order=range(8)):  # q [R, C] in 0..15 -> int32 [R, C/8]
    q = q.astype(np.uint32).reshape(q.shape[0], q.shape[1] // 8, 8)
    packed = np.zeros(q.shape[:2], dtype=np.uint32)
    for j, col in enumerate(order):
        packed |= q[:, :, col] << np.uint32(4 * j)
    return packed.view(np.int32)


def floor_shift_mod16(x, shifts):
    """(x >> s) & 15 for int32 x, written with ops torch 1.13 exports for integers."""
    return torch.remainder(torch.div(x, torch.pow(2, shifts), rounding_mode="floor"), 16)


class QuantLinear(nn.Module):
    """GPTQ: qweight packed along K, qzeros along N storing zero - 1, g_idx. With
    act_order the rows of a group are scattered (GPTQ's desc_act=True): g_idx is the
    group of each row in a random permutation."""

    def __init__(self, rng, act_order=False):
        super().__init__()
        g = K // GROUP
        self.q = rng.integers(0, 16, size=(K, N))
        self.z = rng.integers(1, 16, size=(g, N))  # GPTQ v1 stores z - 1
        self.s = (rng.random((g, N)) * 0.02 + 0.005).astype(np.float16)
        self.register_buffer("qweight", torch.from_numpy(pack_along_rows(self.q)))
        self.register_buffer("qzeros", torch.from_numpy(pack_along_cols(self.z - 1)))
        self.register_buffer("scales", torch.from_numpy(self.s))
        g_idx = np.arange(K) // GROUP
        if act_order:
            g_idx = g_idx[rng.permutation(K)]
        self.g_idx_np = g_idx
        self.register_buffer("g_idx", torch.from_numpy(g_idx.astype(np.int32)))
        self.register_buffer("bias", torch.from_numpy((rng.standard_normal(N) * 0.1).astype(np.float16)))
        self.register_buffer("shifts", torch.arange(0, 32, 4, dtype=torch.int32))

    def forward(self, x):
        w = floor_shift_mod16(self.qweight.unsqueeze(1), self.shifts.view(1, 8, 1)).reshape(K, N)
        z = floor_shift_mod16(self.qzeros.unsqueeze(2), self.shifts.view(1, 1, 8)).reshape(-1, N) + 1
        g = self.g_idx.long()
        w_deq = self.scales[g] * (w - z[g])
        # torch 1.13 has no float16 matmul on CPU to trace with: the product runs in
        # float32 (the exporter writes the Casts), the bias is added in float16.
        return torch.matmul(x.float(), w_deq.float()).to(x.dtype) + self.bias

    def reference(self, x):
        g = self.g_idx_np
        w = (self.q - self.z[g]).astype(np.float32) * self.s[g].astype(np.float32)
        return x.astype(np.float32) @ w + self.bias.numpy().astype(np.float32)


class AwqLinear(nn.Module):
    """AWQ: qweight [K, N/8] and qzeros [G, N/8] packed along N in AWQ's column order,
    zeros stored as they are, no g_idx (contiguous groups)."""

    def __init__(self, rng, k=128, n=32, group=64):
        super().__init__()
        self.k, self.n, self.group = k, n, group
        g = k // group
        self.q = rng.integers(0, 16, size=(k, n))
        self.z = rng.integers(0, 16, size=(g, n))
        self.s = (rng.random((g, n)) * 0.02 + 0.005).astype(np.float16)
        self.register_buffer("qweight", torch.from_numpy(pack_along_cols(self.q, AWQ_ORDER)))
        self.register_buffer("qzeros", torch.from_numpy(pack_along_cols(self.z, AWQ_ORDER)))
        self.register_buffer("scales", torch.from_numpy(self.s))
        self.register_buffer("bias", torch.from_numpy((rng.standard_normal(n) * 0.1).astype(np.float16)))
        self.register_buffer("shifts", torch.tensor(AWQ_SHIFTS, dtype=torch.int32))

    def forward(self, x):
        w = floor_shift_mod16(self.qweight.unsqueeze(2), self.shifts.view(1, 1, 8)).reshape(self.k, self.n)
        z = floor_shift_mod16(self.qzeros.unsqueeze(2), self.shifts.view(1, 1, 8)).reshape(-1, self.n)
        w_deq = (w.view(-1, self.group, self.n) - z.unsqueeze(1)) * self.scales.unsqueeze(1)
        return torch.matmul(x.float(), w_deq.reshape(self.k, self.n).float()).to(x.dtype) + self.bias

    def reference(self, x):
        g = np.arange(self.k) // self.group
        w = (self.q - self.z[g]).astype(np.float32) * self.s[g].astype(np.float32)
        return x.astype(np.float32) @ w + self.bias.numpy().astype(np.float32)


class RMSNorm(nn.Module):
    def __init__(self, way, dt, weight):
        super().__init__()
        self.way, self.dt = way, dt
        self.weight = nn.Parameter(torch.from_numpy(weight))

    def forward(self, x):
        # The model's activations are half (x.to(dt)); the norm computes in float32 and
        # the caller reads float32, so every variant has float32 I/O that numpy and
        # onnxruntime's Python API can feed and read.
        h = x.to(self.dt).to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        if self.way == "mul_cast":
            y = self.weight * h.to(self.dt)
        elif self.way == "cast_mul":
            y = (self.weight * h).to(self.dt)
        else:
            y = self.weight.to(self.dt) * h.to(self.dt)
        return y.float()

    def reference(self, x):
        h = x.astype(np.float32)
        h = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6)
        return self.weight.detach().numpy() * h


def export(module, x, path, names=("x",), out="y"):
    torch.onnx.export(module, (x,), path, opset_version=17, do_constant_folding=False,
                      input_names=list(names), output_names=[out],
                      dynamic_axes={names[0]: {0: "batch", 1: "seq"}, out: {0: "batch", 1: "seq"}})


def remove_cast(model, pick):
    """Drops the first Cast node `pick` selects, wiring its readers to its input, and
    forgets value_info that still states the cast's type."""
    g = model.graph
    for node in list(g.node):
        if node.op_type == "Cast" and pick(node):
            src, dst = node.input[0], node.output[0]
            g.node.remove(node)
            for other in g.node:
                for i, name in enumerate(other.input):
                    if name == dst:
                        other.input[i] = src
            for vi in list(g.value_info):
                if vi.name == dst:
                    g.value_info.remove(vi)
            return node
    raise RuntimeError("no Cast to remove")


def producer_of(model, name):
    return next((n for n in model.graph.node if name in n.output), None)


def save_data(out_dir, name, x, y):
    d = os.path.join(out_dir, name + "_data")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "input_0.npy"), x)
    np.save(os.path.join(d, "output_0.npy"), y.astype(np.float32))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures")
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    rng = np.random.default_rng(1234)
    # Models that are not valid ONNX on purpose live apart, so tests that load every
    # fixture (test_roundtrip.py) do not mistake them for regressions.
    ill_dir = os.path.join(out_dir, "ill_typed")
    os.makedirs(ill_dir, exist_ok=True)

    ql = QuantLinear(rng).eval()
    x = rng.standard_normal((1, 5, K)).astype(np.float16)
    path = os.path.join(out_dir, "quantlinear_gptq.onnx")
    export(ql, torch.from_numpy(x), path)
    save_data(out_dir, "quantlinear_gptq", x, ql.reference(x))
    m = onnx.load(path)
    # The Cast torch inserted for (w - z) (int32) meeting the float16 scales.
    removed = remove_cast(m, lambda n: producer_of(m, n.input[0]) is not None
                          and producer_of(m, n.input[0]).op_type == "Sub")
    onnx.save(m, os.path.join(ill_dir, "quantlinear_gptq_broken.onnx"))
    print("quantlinear_gptq_broken: removed", removed.name)

    ql = QuantLinear(rng, act_order=True).eval()
    x = rng.standard_normal((2, 3, K)).astype(np.float16)
    export(ql, torch.from_numpy(x), os.path.join(out_dir, "quantlinear_gptq_actorder.onnx"))
    save_data(out_dir, "quantlinear_gptq_actorder", x, ql.reference(x))

    awq = AwqLinear(rng).eval()
    x = rng.standard_normal((1, 4, awq.k)).astype(np.float16)
    export(awq, torch.from_numpy(x), os.path.join(out_dir, "quantlinear_awq.onnx"))
    save_data(out_dir, "quantlinear_awq", x, awq.reference(x))

    for dt_name, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        xr = rng.standard_normal((1, 4, 32)).astype(np.float32)
        x_t = torch.from_numpy(xr)
        x_in = x_t.to(dt).float().numpy()  # the exact half values, as float32
        weight = (1 + 0.1 * rng.standard_normal(32)).astype(np.float32)  # one for the three ways
        for way in ("mul_cast", "cast_mul", "cast_both"):
            mod = RMSNorm(way, dt, weight).eval()
            name = f"rmsnorm_{way}_{dt_name}"
            p = os.path.join(ill_dir if way == "mul_cast" else out_dir, name + ".onnx")
            export(mod, x_t, p)
            if way == "mul_cast":
                m = onnx.load(p)
                mul = next(n for n in m.graph.node if n.op_type == "Mul" and "weight" in n.input)
                removed = remove_cast(m, lambda n: n.output[0] in mul.input)
                onnx.save(m, p)
                print(name, ": removed", removed.name)
            save_data(ill_dir if way == "mul_cast" else out_dir, name, xr, mod.reference(x_in))


if __name__ == "__main__":
    main()
