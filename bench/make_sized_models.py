#!/usr/bin/python3
"""Export realistically sized ViT and GPT-2 style models for the fp32 comparison.

RUN THIS WITH THE DEBIAN SYSTEM PYTHON (it has torch), as tests/models/export_fixtures.py:

    /usr/bin/python3 bench/make_sized_models.py OUT_DIR [--only vit_small,gpt2_mini]

The fixtures in tests/models/fixtures are tiny (hidden 64) so the test suite stays fast;
at that size per-op overhead weighs as much as arithmetic. These use the same model code
(ViTTiny and GPT2Tiny of tests/models/export_fixtures.py: nn.MultiheadAttention with its
packed projection and exact-GeLU MLP for ViT; HF GPT-2 structure with Conv1D, fused
c_attn, tanh GeLU and a tied LM head for GPT-2) at real sizes:

  vit_small  ViT-S/16: image 224, patch 16, hidden 384, 12 layers, 6 heads, MLP 1536,
             1000 classes (~22M parameters, ~88 MB float32)
  gpt2_mini  hidden 512, 6 layers, 8 heads, vocab 32000, 1024 positions (~45M parameters
             with the tied embedding, ~180 MB float32); at a 128-token prompt the LM head
             (128 x 512 x 32000) is as much work as the six blocks

BERT at a real size is bench/make_bert_bench.py's. Weights are random (fixed seed, the
fixtures' LayerNorm/bias randomization), so outputs mean nothing, but shapes, ops and
value ranges are the real models'. Deterministic; written, never committed.

Compare them with
    python3 bench/compare.py --model OUT_DIR/vit_small.onnx:batch=1 \\
        --model OUT_DIR/gpt2_mini.onnx:batch=1,seq=128 --iters 50
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "models"))

import torch  # noqa: E402

import export_fixtures as fx  # noqa: E402  (ViTTiny, GPT2Tiny: the fixture model code)

VIT_SMALL = dict(image=224, patch=16, channels=3, hidden=384, layers=12, heads=6, mlp=1536, num_labels=1000,
                 eps=1e-6)
GPT2_MINI = dict(vocab=32000, n_embd=512, n_layer=6, n_head=8, n_positions=1024, eps=1e-5)


def export(model, args, path, input_names, output_names, dynamic_axes):
    model.eval()
    # Grad mode stays on, as in export_fixtures._export: under no_grad an eval-mode
    # nn.MultiheadAttention takes a fused fast path that has no ONNX symbolic.
    torch.onnx.export(model, args, path, export_params=True, opset_version=fx.OPSET, do_constant_folding=True,
                      input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes)
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB)")


def vit_small(out_dir):
    torch.manual_seed(fx.SEED)
    model = fx.ViTTiny(VIT_SMALL)
    fx._randomize_norms_and_biases(model, fx.SEED + 20)
    g = torch.Generator().manual_seed(fx.SEED + 2)
    x = torch.randn(2, 3, VIT_SMALL["image"], VIT_SMALL["image"], generator=g)
    export(model, (x,), os.path.join(out_dir, "vit_small.onnx"), ["pixel_values"], ["logits"],
           {"pixel_values": {0: "batch"}, "logits": {0: "batch"}})


def gpt2_mini(out_dir):
    torch.manual_seed(fx.SEED)
    model = fx.GPT2Tiny(GPT2_MINI)
    fx._randomize_norms_and_biases(model, fx.SEED + 30)
    g = torch.Generator().manual_seed(fx.SEED + 3)
    ids = torch.randint(0, GPT2_MINI["vocab"], (2, 8), generator=g)
    bs = {0: "batch", 1: "seq"}
    export(model, (ids,), os.path.join(out_dir, "gpt2_mini.onnx"), ["input_ids"], ["logits"],
           {"input_ids": bs, "logits": bs})


MODELS = {"vit_small": vit_small, "gpt2_mini": gpt2_mini}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--only", default=",".join(MODELS), help="comma-separated, from: " + ", ".join(MODELS))
    a = p.parse_args()
    names = [n for n in a.only.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    torch.set_num_threads(1)
    os.makedirs(a.out_dir, exist_ok=True)
    for n in names:
        MODELS[n](a.out_dir)


if __name__ == "__main__":
    main()
