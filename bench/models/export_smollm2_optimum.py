#!/usr/bin/python3
"""SmolLM2-135M-Instruct (the same dequantized GGUF weights as export_smollm2.py) exported by
optimum's own exporter in its legacy decoder-only layout, the files users of optimum < 1.14 or
`--legacy` have:

    decoder_model.onnx            first step, no past (the prompt)
    decoder_with_past_model.onnx  later steps; declares attention_mask [batch, past + 1]: one
                                  new token per step
    decoder_model_merged.onnx     one If on use_cache_branch over the two, weights shared

optimum.exporters.onnx.main_export(task="text-generation-with-past", legacy=True, opset 17),
from a transformers folder save_pretrained() writes of the rebuilt model. Also writes
reference.json: transformers' greedy generate() (24 new tokens) on the chat prompt and on
three held-out-style prompts, for `octet generate` to be checked against.

Run by /usr/bin/python3 (torch 1.13, transformers 4.36.2, gguf, optimum 1.16.2):

    /usr/bin/python3 bench/models/export_smollm2_optimum.py OUT_DIR"""
import json
import os
import shutil
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from export_smollm2 import QUESTION, chat_ids, load  # noqa: E402

FILES = ("decoder_model.onnx", "decoder_with_past_model.onnx", "decoder_model_merged.onnx", "config.json",
         "generation_config.json")
PROMPTS = ("The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,")
NEW_TOKENS = 24


def main():
    from optimum.exporters.onnx import main_export

    out = sys.argv[1]
    model, config = load(common.real_models.path("smollm2"))
    tokenizer = common.smollm2_tokenizer()
    torch.set_num_threads(2)
    refs = []
    for ids in [chat_ids(tokenizer, QUESTION)] + [tokenizer.encode(p).ids for p in PROMPTS]:
        with torch.no_grad():
            gen = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False,
                                 eos_token_id=None, pad_token_id=0)
        refs.append({"prompt": ids, "new": gen[0, len(ids):].tolist()})
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        model.save_pretrained(os.path.join(tmp, "hf"))
        main_export(os.path.join(tmp, "hf"), output=os.path.join(tmp, "onnx"), task="text-generation-with-past",
                    opset=17, legacy=True)
        for f in FILES:
            os.replace(os.path.join(tmp, "onnx", f), os.path.join(out, f))
        for f in os.listdir(os.path.join(tmp, "onnx")):  # external data, if optimum wrote any
            if f not in FILES and not f.endswith(".json"):
                shutil.move(os.path.join(tmp, "onnx", f), os.path.join(out, f))
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump({"new_tokens": NEW_TOKENS, "cases": refs}, f, indent=1)
    print(f"{out}: optimum legacy export + reference.json")


if __name__ == "__main__":
    main()
