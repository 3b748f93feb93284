#!/usr/bin/env python3
"""all-MiniLM-L6-v2 (real_models `minilm_l6`, safetensors) to ONNX with torch.onnx.export.

Run by Debian's /usr/bin/python3 (torch 1.13, transformers 4.36.2: see torch_env.py); the
harness calls it through exports.py, which also checks the file against torch's own output
with onnxruntime. Opset 17, dynamic batch and sequence, inputs input_ids / attention_mask /
token_type_ids (int64), output last_hidden_state [batch, seq, 384]; mean pooling over the mask
is left to the caller, as sentence-transformers does it outside the transformer.

    /usr/bin/python3 bench/models/export_minilm_l6.py OUT.onnx REFERENCE.npz
REFERENCE.npz gets a few tokenized sentences and torch's last_hidden_state for them."""
import os
import sys

import numpy as np
import torch
from transformers import BertModel, BertTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

CHECK_SENTENCES = ["A man is playing a guitar on the street.",
                   "The quick brown fox jumps over the lazy dog, twice.",
                   "Quantization maps float weights to eight-bit integers."]


class LastHiddenState(torch.nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state


def main():
    out, ref = sys.argv[1], sys.argv[2]
    folder = os.path.dirname(common.real_models.path("minilm_l6"))
    bert = BertModel.from_pretrained(folder, add_pooling_layer=False).eval()
    tok = BertTokenizerFast.from_pretrained(folder)
    enc = tok(CHECK_SENTENCES, padding=True, return_tensors="pt")
    model = LastHiddenState(bert)
    args = (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    with torch.no_grad():
        want = model(*args).numpy()
        dyn = {0: "batch", 1: "sequence"}
        tmp = out + ".tmp"
        torch.onnx.export(model, args, tmp, opset_version=17, do_constant_folding=True,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state"],
                          dynamic_axes={"input_ids": dyn, "attention_mask": dyn, "token_type_ids": dyn,
                                        "last_hidden_state": dyn})
    os.replace(tmp, out)
    np.savez(ref, **{k: v.numpy() for k, v in enc.items()}, last_hidden_state=want)
    print(f"{out}: {sum(p.numel() for p in bert.parameters())} parameters, torch {torch.__version__}")


if __name__ == "__main__":
    main()
