#!/usr/bin/python3
"""Decoder-only LMs exported by optimum's own exporter in its legacy layout, with transformers'
generate() as the reference: the files users of optimum < 1.14 (and `--legacy`) have.

RUN THIS WITH THE DEBIAN SYSTEM PYTHON (torch 1.13, transformers 4.36.2, optimum 1.16.2 as for
export_seq2seq_fixtures.py):

    /usr/bin/python3 tests/models/export_optimum_decoder_fixtures.py [OUT_DIR]

Writes OUT_DIR/optimum_decoders/{llama,gpt2}/ (default OUT_DIR: tests/models/fixtures), each
optimum.exporters.onnx.main_export(task="text-generation-with-past", legacy=True, opset 17):

* decoder_model.onnx          -- the first step: no past, returns present.N.key/value
* decoder_with_past_model.onnx -- later steps; its attention_mask is declared
                                 [batch, past_sequence_length + 1]: ONE new token per step
                                 (a longer input through it gives wrong logits, onnxruntime too)
* decoder_model_merged.onnx   -- one If on use_cache_branch over the two (weights shared)
* config.json, generation_config.json

and optimum_decoders/references.json: for several prompts, greedy generate()'s new tokens, plain
and with repetition_penalty 1.3 (export_generation_fixtures.references, same conventions).
Models: transformers' LlamaForCausalLM (GQA 4 heads over 2, RoPE, RMSNorm, SwiGLU) and
GPT2LMHeadModel, 2 layers, vocab 256, untied, init std 0.3, random weights (seed 4321).
"""
import json
import os
import shutil
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_generation_fixtures import NEW_TOKENS, PENALTY, SEED, add_references, tiny_lms  # noqa: E402

FILES = ("decoder_model.onnx", "decoder_with_past_model.onnx", "decoder_model_merged.onnx", "config.json",
         "generation_config.json")


def main():
    import optimum
    import transformers
    from optimum.exporters.onnx import main_export

    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "fixtures"), "optimum_decoders")
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    refs = {"new_tokens": NEW_TOKENS, "repetition_penalty": PENALTY, "transformers": transformers.__version__,
            "torch": torch.__version__, "optimum": optimum.version.__version__, "models": {}}
    generator = torch.Generator().manual_seed(SEED)
    for name, lm in tiny_lms().items():
        lm.eval()
        with tempfile.TemporaryDirectory() as tmp:
            lm.save_pretrained(os.path.join(tmp, "hf"))
            main_export(os.path.join(tmp, "hf"), output=os.path.join(tmp, "onnx"), task="text-generation-with-past",
                        opset=17, legacy=True)
            dest = os.path.join(out, name)
            os.makedirs(dest, exist_ok=True)
            for f in FILES:
                shutil.copyfile(os.path.join(tmp, "onnx", f), os.path.join(dest, f))
        add_references(refs, name, lm, generator)
    with open(os.path.join(out, "references.json"), "w") as f:
        json.dump(refs, f, indent=1)


if __name__ == "__main__":
    main()
