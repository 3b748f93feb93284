#!/usr/bin/python3
"""Export a realistically sized BERT-style encoder for the int8 benchmark (bench/int8.py).

RUN THIS WITH THE DEBIAN SYSTEM PYTHON (it has torch), as tests/models/export_fixtures.py:

    /usr/bin/python3 bench/make_bert_bench.py OUT.onnx [--config small|mini]

The fixtures in tests/models/fixtures are deliberately tiny (hidden 64, GEMMs 128x64x64):
at that size graph overhead, not arithmetic, sets the latency and the int8 speed and size
goals of issue 5 mean nothing. This writes the same model code (BertTiny from
export_fixtures.py: HF BertModel structure, erf GeLU, additive padding mask, pooler +
classifier) with the shape of a real small BERT:

  small  hidden 512, 4 layers, 8 heads, FFN 2048, vocab 30522, 512 positions (BERT-small,
         ~29M parameters, ~115 MB float32: GEMMs 128x512x512 and 128x512x2048 at seq 128)
  mini   hidden 256, 4 layers, 4 heads, FFN 1024, vocab 30522 (BERT-mini, ~11M parameters)

Weights are randomly initialised (fixed seed; LayerNorm gamma/beta randomized as the
fixtures do), so the outputs mean nothing, but every tensor has the shape and value
ranges (Linear kaiming-uniform init, LayerNorm-bounded activations) of the real model.
Deterministic: the same file every time. The file is written, not committed (tens of MB).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "models"))

import torch  # noqa: E402

import export_fixtures as fx  # noqa: E402  (BertTiny, the fixture model code)

CONFIGS = {
    "small": dict(vocab=30522, hidden=512, layers=4, heads=8, inter=2048,
                  max_pos=512, type_vocab=2, num_labels=2, eps=1e-12),
    "mini": dict(vocab=30522, hidden=256, layers=4, heads=4, inter=1024,
                 max_pos=512, type_vocab=2, num_labels=2, eps=1e-12),
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--config", choices=sorted(CONFIGS), default="small")
    a = p.parse_args()
    cfg = CONFIGS[a.config]
    torch.set_num_threads(1)
    torch.manual_seed(fx.SEED)
    model = fx.BertTiny(cfg)
    fx._randomize_norms_and_biases(model, fx.SEED + 10)
    model.eval()
    g = torch.Generator().manual_seed(fx.SEED + 1)
    batch, seq = 2, 8
    ids = torch.randint(0, cfg["vocab"], (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.long)
    types = torch.zeros(batch, seq, dtype=torch.long)
    bs = {0: "batch", 1: "seq"}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    torch.onnx.export(model, (ids, mask, types), a.out, export_params=True, opset_version=fx.OPSET,
                      do_constant_folding=True,
                      input_names=["input_ids", "attention_mask", "token_type_ids"],
                      output_names=["last_hidden_state", "logits"],
                      dynamic_axes={"input_ids": bs, "attention_mask": bs, "token_type_ids": bs,
                                    "last_hidden_state": bs, "logits": {0: "batch"}})
    print(f"wrote {a.out} ({os.path.getsize(a.out)} bytes, config {a.config})")


if __name__ == "__main__":
    main()
