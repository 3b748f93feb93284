#!/usr/bin/python3
"""Tiny decoders with a KV cache for the generation tests, and transformers' own generate()
on them.

RUN THIS WITH THE DEBIAN SYSTEM PYTHON (torch 1.13 + transformers 4.36.2, see
bench/models/torch_env.py), NOT the pyenv ``python3``:

    /usr/bin/python3 tests/models/export_generation_fixtures.py [OUT_DIR]

Writes, randomly initialised with a fixed seed from transformers' own model classes:

* ``llama_gen_with_past.onnx`` -- LlamaForCausalLM: GQA (4 heads over 2 KV heads, head 16),
  RoPE, RMSNorm, SwiGLU, 2 layers, vocab 256.
* ``gpt2_gen_with_past.onnx``  -- GPT2LMHeadModel: 4 heads of 16, 2 layers, vocab 256.

in optimum's naming (input_ids, attention_mask [batch, past + new], position_ids,
past_key_values.N.key/.value in; logits, present.N.key/.value out), and
``generation_references.json``: for several prompts, greedy generate()'s new tokens, plain
and with repetition_penalty 1.3, and the prompt's last logits (the test checks them against
onnxruntime on the file, so a file and references that drift apart fail).

They untie the output projection and initialise with std 0.3 instead of 0.02: with tiny tied
random weights greedy decoding only repeats the last prompt token, which a runner that drops
its cache would still get right. Each stored case records the smallest gap between the best and
second-best logit over its steps, so a too-close call is visible.
"""
import json
import os
import sys

import torch

OPSET = 17
SEED = 4321
PROMPT_LENGTHS = (1, 4, 9, 17)
NEW_TOKENS = 24
PENALTY = 1.3


class WithPast(torch.nn.Module):
    """The LM's forward with the cache as flat inputs and outputs, as optimum exports it."""

    def __init__(self, lm, layers):
        super().__init__()
        self.lm, self.layers = lm, layers

    def forward(self, input_ids, attention_mask, position_ids, *past):
        pairs = tuple((past[2 * i], past[2 * i + 1]) for i in range(self.layers))
        out = self.lm(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                      past_key_values=pairs, use_cache=True)
        return (out.logits, *[t for kv in out.past_key_values for t in kv])


def export(lm, layers, kv_heads, head, path):
    past_len, new = 5, 3
    past = [torch.randn(1, kv_heads, past_len, head) for _ in range(2 * layers)]
    ids = torch.randint(0, lm.config.vocab_size, (1, new))
    mask = torch.ones(1, past_len + new, dtype=torch.long)
    pos = torch.arange(past_len, past_len + new).unsqueeze(0)
    past_names = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    present_names = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"},
            "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    axes.update({n: {0: "batch", 2: "past_sequence"} for n in past_names})
    axes.update({n: {0: "batch", 2: "total_sequence"} for n in present_names})
    with torch.no_grad():
        torch.onnx.export(WithPast(lm, layers), (ids, mask, pos, *past), path, opset_version=OPSET,
                          do_constant_folding=True, input_names=["input_ids", "attention_mask", "position_ids",
                                                                 *past_names],
                          output_names=["logits", *present_names], dynamic_axes=axes)
    print(f"{path}: {os.path.getsize(path)} bytes")


def references(lm, generator):
    import transformers
    # torch.onnx.export leaves the wrapper (and so the LM) in training mode again afterwards:
    # GPT-2's dropout would then make every reference random.
    lm.eval()
    lm.generation_config.eos_token_id = None  # every case runs the full NEW_TOKENS
    lm.generation_config.pad_token_id = 0
    cases = []
    for n in PROMPT_LENGTHS:
        prompt = torch.randint(0, lm.config.vocab_size, (1, n), generator=generator)
        case = {"prompt": prompt[0].tolist()}
        with torch.no_grad():
            case["prompt_last_logits"] = [round(float(x), 7) for x in lm(prompt).logits[0, -1]]
            for key, penalty in (("new", 1.0), ("new_penalized", PENALTY)):
                ids = lm.generate(prompt, max_new_tokens=NEW_TOKENS, do_sample=False, num_beams=1,
                                  repetition_penalty=penalty)
                case[key] = ids[0, n:].tolist()
                full = lm(ids).logits[0, n - 1:-1]
                processor = transformers.RepetitionPenaltyLogitsProcessor(penalty)
                margins = []
                for step in range(full.shape[0]):
                    top2 = processor(ids[:, :n + step], full[step:step + 1].clone())[0].topk(2).values
                    margins.append((top2[0] - top2[1]).item())
                case["min_top2_margin" + key[3:]] = min(margins)
        cases.append(case)
    return cases


def tiny_lms():
    """The two tiny decoders: transformers' LlamaForCausalLM (GQA 4 heads over 2, RoPE, RMSNorm,
    SwiGLU) and GPT2LMHeadModel, 2 layers, vocab 256, untied, init std 0.3 (so greedy decoding
    varies). Built in this order right after torch.manual_seed(SEED), they have the same random
    weights in every script that exports them."""
    import transformers
    return {
        "llama": transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rope_theta=1e4, rms_norm_eps=1e-5,
            tie_word_embeddings=False, initializer_range=0.3)),
        "gpt2": transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=256, n_embd=64, n_layer=2, n_head=4, n_positions=256, tie_word_embeddings=False,
            initializer_range=0.3)),
    }


def add_references(refs, name, lm, generator):
    """refs["models"][name] = references(lm, generator), and the smallest top-2 logit gap printed:
    a tiny gap would make the greedy reference fragile."""
    refs["models"][name] = references(lm, generator)
    margins = [min(c["min_top2_margin"], c["min_top2_margin_penalized"]) for c in refs["models"][name]]
    print(f"{name}: smallest top-2 logit gap {min(margins):.4f}")


def main():
    import transformers

    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "fixtures")
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    lms = tiny_lms()
    models = {"llama_gen_with_past.onnx": (lms["llama"], 2), "gpt2_gen_with_past.onnx": (lms["gpt2"], 4)}
    refs = {"new_tokens": NEW_TOKENS, "repetition_penalty": PENALTY, "transformers": transformers.__version__,
            "torch": torch.__version__, "models": {}}
    generator = torch.Generator().manual_seed(SEED)
    for name, (lm, kv_heads) in models.items():
        lm.eval()
        export(lm, 2, kv_heads, 16, os.path.join(out, name))
        add_references(refs, name, lm, generator)
    with open(os.path.join(out, "generation_references.json"), "w") as f:
        json.dump(refs, f, indent=1)


if __name__ == "__main__":
    main()
