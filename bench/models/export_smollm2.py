#!/usr/bin/env python3
"""SmolLM2-135M-Instruct from its Q4_1 GGUF (real_models `smollm2`) to an fp32 ONNX with logits.

1. Reads the GGUF with the `gguf` package and dequantizes every tensor to float32 (Q4_1 linear
   weights, Q8_0 embeddings; the norms are stored F32).
2. Builds transformers' LlamaForCausalLM from the GGUF metadata (30 layers, hidden 576, 9 query /
   3 key-value heads, RoPE base 1e5, RMSNorm eps, tied embeddings when there is no output.weight).
3. Undoes llama.cpp's converter permutation of attn_q / attn_k rows (it reorders each head's rows
   from the rotate-half RoPE layout transformers uses to the interleaved one llama.cpp uses).
4. Checks that greedy generation answers a plain question sensibly (exit 1 otherwise: a wrong
   permutation or tensor mapping gives gibberish).
5. Exports a prompt-only decoder (no KV cache): input_ids [batch, sequence] -> logits
   [batch, sequence, 49152], opset 17, dynamic batch and sequence.
6. With a third argument, also the decoder with KV cache in optimum's naming: inputs input_ids,
   attention_mask [batch, past + sequence], position_ids, past_key_values.N.key / .value
   [batch, 3, past, 64]; outputs logits, present.N.key / .value [batch, 3, past + sequence, 64].
The model is the dequantized Q4_1 weights: the fp32 reference every int8 result is compared to.

Run by /usr/bin/python3 (torch 1.13, transformers 4.36.2, gguf).

    /usr/bin/python3 bench/models/export_smollm2.py OUT.onnx REFERENCE.npz [WITH_PAST.onnx]"""
import os
import sys

import numpy as np
import torch
from gguf import GGUFReader
from gguf.quants import dequantize
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

LAYER_NAMES = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
               "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
               "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
               "ffn_down": "mlp.down_proj"}
QUESTION = "What is the capital of France?"


def field(reader, key):
    return reader.fields[key].contents()


def unpermute_rope_rows(w, n_head):
    """Inverse of llama.cpp convert_hf_to_gguf's permute(): per head, rows (2, half) -> (half, 2)."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load(path):
    r = GGUFReader(path)
    arch = field(r, "general.architecture")
    if arch != "llama":
        raise SystemExit(f"export_smollm2.py: {path} is a '{arch}' model, not llama")
    heads, kv_heads = field(r, "llama.attention.head_count"), field(r, "llama.attention.head_count_kv")
    tensors = {}
    for t in r.tensors:
        w = dequantize(t.data, t.tensor_type).astype(np.float32)
        tensors[t.name] = w.reshape(tuple(int(d) for d in reversed(t.shape)))
    config = LlamaConfig(
        vocab_size=len(r.fields["tokenizer.ggml.tokens"].data),
        hidden_size=field(r, "llama.embedding_length"), intermediate_size=field(r, "llama.feed_forward_length"),
        num_hidden_layers=field(r, "llama.block_count"), num_attention_heads=heads, num_key_value_heads=kv_heads,
        rms_norm_eps=field(r, "llama.attention.layer_norm_rms_epsilon"), rope_theta=field(r, "llama.rope.freq_base"),
        max_position_embeddings=field(r, "llama.context_length"), tie_word_embeddings="output.weight" not in tensors,
        bos_token_id=field(r, "tokenizer.ggml.bos_token_id"), eos_token_id=field(r, "tokenizer.ggml.eos_token_id"),
        hidden_act="silu")
    state = {"model.embed_tokens.weight": tensors.pop("token_embd.weight"),
             "model.norm.weight": tensors.pop("output_norm.weight")}
    if "output.weight" in tensors:
        state["lm_head.weight"] = tensors.pop("output.weight")
    for name, w in tensors.items():
        blk, layer, kind, _ = name.split(".")
        if blk != "blk" or kind not in LAYER_NAMES:
            raise SystemExit(f"export_smollm2.py: unexpected tensor {name}")
        if kind == "attn_q":
            w = unpermute_rope_rows(w, heads)
        elif kind == "attn_k":
            w = unpermute_rope_rows(w, kv_heads)
        state[f"model.layers.{layer}.{LAYER_NAMES[kind]}.weight"] = w
    model = LlamaForCausalLM(config).eval()
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    missing = [k for k in missing if not (k == "lm_head.weight" and config.tie_word_embeddings)
               and "rotary_emb" not in k]
    if missing or unexpected:
        raise SystemExit(f"export_smollm2.py: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    return model, config


def chat_ids(tokenizer, question):
    """The GGUF's chat template with its default system message (without it the 135M model rambles)."""
    text = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n")
    return tokenizer.encode(text).ids


class Logits(torch.nn.Module):
    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids):
        return self.lm(input_ids=input_ids, use_cache=False).logits


class WithPast(torch.nn.Module):
    def __init__(self, lm, layers):
        super().__init__()
        self.lm, self.layers = lm, layers

    def forward(self, input_ids, attention_mask, position_ids, *past):
        pairs = tuple((past[2 * i], past[2 * i + 1]) for i in range(self.layers))
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                      past_key_values=pairs, use_cache=True)
        return (out.logits, *[t for kv in out.past_key_values for t in kv])


def export_with_past(model, config, path):
    """Traced with a past of 5 and 3 new tokens; every length is a dynamic axis."""
    layers, kv, hd = config.num_hidden_layers, config.num_key_value_heads, config.hidden_size // config.num_attention_heads
    past_len, new = 5, 3
    past = [torch.randn(1, kv, past_len, hd) for _ in range(2 * layers)]
    ids = torch.randint(0, config.vocab_size, (1, new))
    mask = torch.ones(1, past_len + new, dtype=torch.long)
    pos = torch.arange(past_len, past_len + new).unsqueeze(0)
    past_names = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present_names = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
            "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    axes.update({n: {0: "batch", 2: "past_sequence"} for n in past_names})
    axes.update({n: {0: "batch", 2: "total_sequence"} for n in present_names})
    with torch.no_grad():
        tmp = path + ".tmp"
        torch.onnx.export(WithPast(model, layers), (ids, mask, pos, *past), tmp, opset_version=17,
                          do_constant_folding=True,
                          input_names=["input_ids", "attention_mask", "position_ids", *past_names],
                          output_names=["logits", *present_names], dynamic_axes=axes)
    os.replace(tmp, path)
    print(f"{path}: decoder with KV cache")


def main():
    out, ref = sys.argv[1:3]
    model, config = load(common.real_models.path("smollm2"))
    tokenizer = common.smollm2_tokenizer()
    prompt = torch.tensor([chat_ids(tokenizer, QUESTION)])
    with torch.no_grad():
        gen = model.generate(prompt, max_new_tokens=24, do_sample=False, eos_token_id=config.eos_token_id)
    answer = tokenizer.decode(gen[0, prompt.shape[1]:].tolist())
    print(f"greedy answer to {QUESTION!r}: {answer!r}")
    if "Paris" not in answer:
        raise SystemExit("export_smollm2.py: the rebuilt model does not answer sensibly (tensor mapping or RoPE rows?)")
    wrapper = Logits(model)
    x = prompt
    with torch.no_grad():
        want = wrapper(x).numpy()
        tmp = out + ".tmp"
        torch.onnx.export(wrapper, (x,), tmp, opset_version=17, do_constant_folding=True,
                          input_names=["input_ids"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                        "logits": {0: "batch", 1: "sequence"}})
    os.replace(tmp, out)
    np.savez(ref, input_ids=x.numpy(), logits=want, answer=np.array(answer))
    print(f"{out}: {sum(p.numel() for p in model.parameters())} parameters, torch {torch.__version__}")
    if len(sys.argv) > 3:
        export_with_past(model, config, sys.argv[3])


if __name__ == "__main__":
    main()
