#!/usr/bin/python3
"""Export the tiny transformer ONNX fixtures used by octet's importer tests.

RUN THIS WITH THE DEBIAN SYSTEM PYTHON, NOT THE pyenv ``python3``:

    /usr/bin/python3 tests/models/export_fixtures.py [OUT_DIR]

``/usr/bin/python3`` (3.11, Debian 12) has ``python3-torch`` 1.13 and
``python3-onnx`` 1.12 from apt; the pyenv ``python3`` on PATH has no torch.
OUT_DIR defaults to ``tests/models/fixtures`` (relative to the repo root,
resolved from this file's location, so the cwd does not matter).

Writes three small, randomly initialised (fixed seed) models:

* ``bert_tiny.onnx`` -- BERT-style encoder, hand-written in torch.
  inputs  input_ids / attention_mask / token_type_ids  int64 [batch, seq]
  outputs last_hidden_state float [batch, seq, 64], logits float [batch, 2]
* ``vit_tiny.onnx``  -- ViT-style encoder (Conv2d patchify + nn.MultiheadAttention).
  input   pixel_values float [batch, 3, 224, 224]
  output  logits float [batch, 10]
* ``gpt2_tiny.onnx`` -- GPT-2-style decoder (no KV cache, tied LM head).
  input   input_ids int64 [batch, seq]
  output  logits float [batch, seq, 1000]

Next to each model, ``<model>_data/test_data_set_0/{input,output}_<i>.pb``
holds torch's own outputs for fixed inputs (serialized onnx.TensorProto, the
onnx backend-test layout) at shapes different from the trace shapes.

All exports use opset 17, ``do_constant_folding=True`` and dynamic axes named
``batch`` / ``seq``.  The graphs are deliberately NOT simplified: the
Shape/Gather/Unsqueeze/Concat/Reshape chains, ConstantOfShape, Where, Trilu,
Erf-GeLU and tanh-GeLU patterns that the torch exporter emits are exactly what
the importer has to cope with.

The script is deterministic (fixed seeds, fixed inputs, single thread) and
idempotent (it simply overwrites the files).
"""

import math
import os
import sys

import torch
import torch.nn as nn

OPSET = 17
SEED = 1234

# ----------------------------------------------------------------------------
# BERT-style encoder (mirrors the structure of HF BertModel + classifier)
# ----------------------------------------------------------------------------

BERT_CFG = dict(vocab=1000, hidden=64, layers=2, heads=4, inter=256,
                max_pos=128, type_vocab=2, num_labels=2, eps=1e-12)


def erf_gelu(x):
    # HF "gelu" (exact): exported as Div -> Erf -> Add -> Mul -> Mul
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab"], c["hidden"])
        self.position_embeddings = nn.Embedding(c["max_pos"], c["hidden"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab"], c["hidden"])
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=c["eps"])
        # HF keeps position ids as a persistent buffer and slices it -> Slice
        self.register_buffer("position_ids",
                             torch.arange(c["max_pos"]).expand((1, -1)))

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        emb = (self.word_embeddings(input_ids)
               + self.token_type_embeddings(token_type_ids)
               + self.position_embeddings(position_ids))
        return self.LayerNorm(emb)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads = c["heads"]
        self.head_size = c["hidden"] // c["heads"]
        self.all_head_size = self.num_heads * self.head_size
        self.query = nn.Linear(c["hidden"], self.all_head_size)
        self.key = nn.Linear(c["hidden"], self.all_head_size)
        self.value = nn.Linear(c["hidden"], self.all_head_size)

    def transpose_for_scores(self, x):
        new_shape = x.size()[:-1] + (self.num_heads, self.head_size)
        x = x.view(new_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden, ext_mask):
        q = self.transpose_for_scores(self.query(hidden))
        k = self.transpose_for_scores(self.key(hidden))
        v = self.transpose_for_scores(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2))
        scores = scores / math.sqrt(self.head_size)
        scores = scores + ext_mask
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v)
        ctx = ctx.permute(0, 2, 1, 3).contiguous()
        new_shape = ctx.size()[:-2] + (self.all_head_size,)
        return ctx.view(new_shape)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertSelfAttention(c)
        self.attn_output = nn.Linear(c["hidden"], c["hidden"])
        self.attn_ln = nn.LayerNorm(c["hidden"], eps=c["eps"])
        self.intermediate = nn.Linear(c["hidden"], c["inter"])
        self.output = nn.Linear(c["inter"], c["hidden"])
        self.output_ln = nn.LayerNorm(c["hidden"], eps=c["eps"])

    def forward(self, hidden, ext_mask):
        a = self.attn_output(self.attention(hidden, ext_mask))
        hidden = self.attn_ln(a + hidden)
        f = self.output(erf_gelu(self.intermediate(hidden)))
        return self.output_ln(f + hidden)


class BertTiny(nn.Module):
    def __init__(self, c=BERT_CFG):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.layers = nn.ModuleList([BertLayer(c) for _ in range(c["layers"])])
        self.pooler = nn.Linear(c["hidden"], c["hidden"])
        self.classifier = nn.Linear(c["hidden"], c["num_labels"])

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.embeddings(input_ids, token_type_ids)
        # HF get_extended_attention_mask: [b, s] -> [b, 1, 1, s], additive
        dtype = hidden.dtype
        ext = attention_mask[:, None, None, :].to(dtype=dtype)
        ext = (1.0 - ext) * torch.finfo(dtype).min
        for layer in self.layers:
            hidden = layer(hidden, ext)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        logits = self.classifier(pooled)
        return hidden, logits


# ----------------------------------------------------------------------------
# ViT-style encoder (pre-LN, nn.MultiheadAttention, nn.GELU exact)
# ----------------------------------------------------------------------------

VIT_CFG = dict(image=224, patch=16, channels=3, hidden=64, layers=2, heads=4,
               mlp=128, num_labels=10, eps=1e-6)


class ViTBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm1 = nn.LayerNorm(c["hidden"], eps=c["eps"])
        self.attn = nn.MultiheadAttention(c["hidden"], c["heads"],
                                          batch_first=True)
        self.norm2 = nn.LayerNorm(c["hidden"], eps=c["eps"])
        self.mlp = nn.Sequential(nn.Linear(c["hidden"], c["mlp"]),
                                 nn.GELU(),  # approximate='none' -> Erf
                                 nn.Linear(c["mlp"], c["hidden"]))

    def forward(self, x):
        h = self.norm1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + a
        return x + self.mlp(self.norm2(x))


class ViTTiny(nn.Module):
    def __init__(self, c=VIT_CFG):
        super().__init__()
        n_patches = (c["image"] // c["patch"]) ** 2
        self.patch_embed = nn.Conv2d(c["channels"], c["hidden"],
                                     kernel_size=c["patch"], stride=c["patch"])
        self.cls_token = nn.Parameter(torch.randn(1, 1, c["hidden"]) * 0.02)
        self.pos_embed = nn.Parameter(
            torch.randn(1, n_patches + 1, c["hidden"]) * 0.02)
        self.blocks = nn.ModuleList([ViTBlock(c) for _ in range(c["layers"])])
        self.norm = nn.LayerNorm(c["hidden"], eps=c["eps"])
        self.head = nn.Linear(c["hidden"], c["num_labels"])

    def forward(self, pixel_values):
        x = self.patch_embed(pixel_values)          # [b, h, 14, 14]
        x = x.flatten(2).transpose(1, 2)            # [b, 196, h]
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return self.head(x[:, 0])


# ----------------------------------------------------------------------------
# GPT-2-style decoder (HF GPT2 structure: Conv1D = addmm, fused c_attn)
# ----------------------------------------------------------------------------

GPT2_CFG = dict(vocab=1000, n_embd=64, n_layer=2, n_head=4, n_positions=128,
                eps=1e-5)


def tanh_gelu(x):
    # HF "gelu_new": exported as Pow/Mul/Add/Mul/Tanh/Add/Mul/Mul
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
                                       * (x + 0.044715 * torch.pow(x, 3.0))))


class Conv1D(nn.Module):
    """HF GPT-2 Conv1D: y = x @ W + b with W stored [in, out]."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head = c["n_head"]
        self.n_embd = c["n_embd"]
        self.head_dim = self.n_embd // self.n_head
        self.c_attn = Conv1D(3 * self.n_embd, self.n_embd)
        self.c_proj = Conv1D(self.n_embd, self.n_embd)

    def _split_heads(self, x):
        new_shape = x.size()[:-1] + (self.n_head, self.head_dim)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, x):
        x = x.permute(0, 2, 1, 3).contiguous()
        new_shape = x.size()[:-2] + (self.n_head * self.head_dim,)
        return x.view(new_shape)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = self._split_heads(q), self._split_heads(k), self._split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / (v.size(-1) ** 0.5)
        # causal mask built from the runtime sequence length:
        # ones(seq, seq) -> ConstantOfShape, tril -> Trilu, masked_fill -> Where
        seq = q.size(-2)
        causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool,
                                       device=x.device))
        w = w.masked_fill(~causal, torch.finfo(w.dtype).min)
        w = nn.functional.softmax(w, dim=-1)
        return self.c_proj(self._merge_heads(torch.matmul(w, v)))


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = Conv1D(4 * c["n_embd"], c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], 4 * c["n_embd"])

    def forward(self, x):
        return self.c_proj(tanh_gelu(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=c["eps"])
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=c["eps"])
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Tiny(nn.Module):
    def __init__(self, c=GPT2_CFG):
        super().__init__()
        self.wte = nn.Embedding(c["vocab"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c["eps"])
        self.lm_head = nn.Linear(c["n_embd"], c["vocab"], bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, input_ids):
        seq = input_ids.size(-1)
        position_ids = torch.arange(0, seq, dtype=torch.long,
                                    device=input_ids.device).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(position_ids)
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


# ----------------------------------------------------------------------------
# export driver
# ----------------------------------------------------------------------------

def _randomize_norms_and_biases(model, seed):
    """Give LayerNorm gamma/beta and zero-initialised biases random values.

    Freshly initialised modules have gamma == 1, beta == 0 and (GPT-2 Conv1D,
    nn.MultiheadAttention) zero biases; a reference output computed from such
    weights cannot detect an importer that drops a bias or swaps gamma/beta.
    nn.MultiheadAttention is deliberately left alone: its all-zero in_proj /
    out_proj biases keep the exporter's dedup-identical-initializers quirk
    (shared initializer + Identity nodes) visible in vit_tiny.onnx.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
            elif isinstance(m, Conv1D):
                m.bias.copy_(0.02 * torch.randn(m.bias.shape, generator=g))

def _write_reference(model, args, path, input_names, output_names):
    """Store torch's own outputs for ``args`` in the ONNX backend-test layout.

    ``<model>_data/test_data_set_0/input_<i>.pb`` / ``output_<i>.pb`` are
    serialized onnx.TensorProto (the format ``onnx_test_runner`` and
    ``onnx.backend.test`` use), so a C++ importer can read them with the same
    protobuf code it uses for initializers.  The reference shapes differ from
    the shapes used for tracing on purpose (dynamic axes must really work).
    """
    from onnx import numpy_helper  # python3-onnx 1.12 from apt

    with torch.no_grad():
        outs = model(*args)
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    d = os.path.join(os.path.splitext(path)[0] + "_data", "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    for kind, names, tensors in (("input", input_names, args),
                                 ("output", output_names, outs)):
        for i, (name, t) in enumerate(zip(names, tensors)):
            tp = numpy_helper.from_array(t.detach().cpu().numpy(), name)
            with open(os.path.join(d, f"{kind}_{i}.pb"), "wb") as f:
                f.write(tp.SerializeToString())


def _export(model, args, path, input_names, output_names, dynamic_axes,
            ref_args):
    model.eval()
    # NB: grad mode is left enabled on purpose.  Under torch.no_grad() an
    # eval-mode nn.MultiheadAttention takes the fused "fast path"
    # (aten::_native_multi_head_attention), which has no ONNX symbolic.
    torch.onnx.export(model, args, path,
                      export_params=True,
                      opset_version=OPSET,
                      do_constant_folding=True,
                      input_names=input_names,
                      output_names=output_names,
                      dynamic_axes=dynamic_axes)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")
    _write_reference(model, ref_args, path, input_names, output_names)


def _bert_inputs(g, batch, seq):
    ids = torch.randint(0, BERT_CFG["vocab"], (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[-1, seq - 2:] = 0                      # right padding on last row
    types = torch.zeros(batch, seq, dtype=torch.long)
    types[:, seq // 2:] = 1                     # sentence A / sentence B
    return ids, mask, types


def export_bert(out_dir):
    torch.manual_seed(SEED)
    model = BertTiny()
    _randomize_norms_and_biases(model, SEED + 10)
    g = torch.Generator().manual_seed(SEED + 1)
    trace_args = _bert_inputs(g, 2, 8)
    ref_args = _bert_inputs(g, 2, 16)
    bs = {0: "batch", 1: "seq"}
    _export(model, trace_args, os.path.join(out_dir, "bert_tiny.onnx"),
            ["input_ids", "attention_mask", "token_type_ids"],
            ["last_hidden_state", "logits"],
            {"input_ids": bs, "attention_mask": bs, "token_type_ids": bs,
             "last_hidden_state": bs, "logits": {0: "batch"}},
            ref_args)


def export_vit(out_dir):
    torch.manual_seed(SEED)
    model = ViTTiny()
    _randomize_norms_and_biases(model, SEED + 20)
    g = torch.Generator().manual_seed(SEED + 2)
    size = (3, VIT_CFG["image"], VIT_CFG["image"])
    trace_args = (torch.randn(2, *size, generator=g),)
    ref_args = (torch.randn(1, *size, generator=g),)
    _export(model, trace_args, os.path.join(out_dir, "vit_tiny.onnx"),
            ["pixel_values"], ["logits"],
            {"pixel_values": {0: "batch"}, "logits": {0: "batch"}},
            ref_args)


def export_gpt2(out_dir):
    torch.manual_seed(SEED)
    model = GPT2Tiny()
    _randomize_norms_and_biases(model, SEED + 30)
    g = torch.Generator().manual_seed(SEED + 3)
    trace_args = (torch.randint(0, GPT2_CFG["vocab"], (2, 8), generator=g),)
    ref_args = (torch.randint(0, GPT2_CFG["vocab"], (2, 16), generator=g),)
    bs = {0: "batch", 1: "seq"}
    _export(model, trace_args, os.path.join(out_dir, "gpt2_tiny.onnx"),
            ["input_ids"], ["logits"], {"input_ids": bs, "logits": bs},
            ref_args)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = argv[1] if len(argv) > 1 else os.path.join(here, "fixtures")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    export_bert(out_dir)
    export_vit(out_dir)
    export_gpt2(out_dir)


if __name__ == "__main__":
    main(sys.argv)
