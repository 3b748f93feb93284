#!/usr/bin/python3
"""Export tiny decoders with a KV cache in optimum's naming, for the cached-attention tests.

RUN THIS WITH THE DEBIAN SYSTEM PYTHON (torch 1.13 + transformers 4.36.2, see
bench/models/torch_env.py), NOT the pyenv ``python3``:

    /usr/bin/python3 tests/models/export_decoder_fixtures.py [OUT_DIR]

Writes, randomly initialised with a fixed seed from transformers' own model classes (so
the graphs are exactly what torch.onnx.export makes of them, as for SmolLM2):

* ``llama_tiny_with_past.onnx`` -- LlamaForCausalLM: GQA (4 heads over 2 KV heads, head
  16), RoPE (base 1e5), RMSNorm, SwiGLU, 2 layers, vocab 256.
* ``gpt2_tiny_with_past.onnx``  -- GPT2LMHeadModel: MHA (4 heads, head 16), fused c_attn
  Split, no RoPE, 2 layers, vocab 256.

Inputs input_ids [batch, sequence], attention_mask [batch, past_sequence + sequence],
position_ids [batch, sequence] (Llama only; GPT-2 takes it too), past_key_values.N.key /
.value [batch, kv_heads, past_sequence, head]; outputs logits and present.N.key / .value.
tests/models/make_decoder_references.py then runs onnxruntime on them for the reference
outputs.
"""
import os
import sys

import torch

OPSET = 17
SEED = 1234


class WithPast(torch.nn.Module):
    def __init__(self, lm, layers, positions=True):
        super().__init__()
        self.lm, self.layers, self.positions = lm, layers, positions

    def forward(self, input_ids, attention_mask, position_ids, *past):
        pairs = tuple((past[2 * i], past[2 * i + 1]) for i in range(self.layers))
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                      past_key_values=pairs, use_cache=True)
        return (out.logits, *[t for kv in out.past_key_values for t in kv])


def export(model, layers, kv_heads, head, vocab, path):
    past_len, new = 5, 3
    past = [torch.randn(1, kv_heads, past_len, head) for _ in range(2 * layers)]
    ids = torch.randint(0, vocab, (1, new))
    mask = torch.ones(1, past_len + new, dtype=torch.long)
    pos = torch.arange(past_len, past_len + new).unsqueeze(0)
    past_names = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present_names = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
            "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    axes.update({n: {0: "batch", 2: "past_sequence"} for n in past_names})
    axes.update({n: {0: "batch", 2: "total_sequence"} for n in present_names})
    with torch.no_grad():
        torch.onnx.export(WithPast(model.eval(), layers), (ids, mask, pos, *past), path, opset_version=OPSET,
                          do_constant_folding=True,
                          input_names=["input_ids", "attention_mask", "position_ids", *past_names],
                          output_names=["logits", *present_names], dynamic_axes=axes)
    print(f"{path}: {os.path.getsize(path)} bytes")


def main():
    import transformers

    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "fixtures")
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    llama = transformers.LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                                     rope_theta=1e5, rms_norm_eps=1e-5, tie_word_embeddings=True)
    export(transformers.LlamaForCausalLM(llama), 2, 2, 16, 256, os.path.join(out, "llama_tiny_with_past.onnx"))
    gpt2 = transformers.GPT2Config(vocab_size=256, n_embd=64, n_layer=2, n_head=4, n_positions=256)
    export(transformers.GPT2LMHeadModel(gpt2), 2, 4, 16, 256, os.path.join(out, "gpt2_tiny_with_past.onnx"))


if __name__ == "__main__":
    main()
