#!/usr/bin/python3
"""Export encoder-decoder models (MarianMT, Whisper, T5) the way optimum does, with torch references.

RUN THIS WITH THE DEBIAN SYSTEM PYTHON (torch 1.13, transformers 4.36.2, optimum 1.16.2,
onnx 1.15 and onnxruntime 1.16.3 pip-installed for it; optimum's exporter needs the last two
to fix dynamic axes and to validate):

    /usr/bin/python3 tests/models/export_seq2seq_fixtures.py [--size tiny|real] [--out DIR] [NAME ...]

--size tiny (default) writes the CI fixtures to tests/models/fixtures/seq2seq/<name>/;
--size real writes opus-mt-en-de / whisper-tiny / t5-small shapes (bench/models/exports.py
calls it, output under ~/.cache/octet/exports/). Every model is transformers' own class with
RANDOM weights (torch.manual_seed(1234)): no pretrained weights are reachable offline, so the
generated text means nothing; only agreement between engines does.

The export is optimum's own (optimum.exporters.onnx.main_export, task
text2text-generation-with-past / automatic-speech-recognition-with-past, opset 17 as optimum
picks it), which writes encoder_model.onnx, decoder_model.onnx, decoder_with_past_model.onnx
and decoder_model_merged.onnx (one If on use_cache_branch) plus config.json.

reference.npz beside them holds torch's own outputs on fixed inputs:
  encoder inputs       input_ids + attention_mask [1, S] int64 (text) or input_features [1, 80, F]
  encoder_hidden_states  [1, S', d_model] (the encoder's last_hidden_state)
  decoder_input_ids    [1, T] int64: decoder_start followed by fixed tokens (teacher forcing)
  logits               [1, T, vocab] of the full decoder on decoder_input_ids
  greedy_tokens        [1, 1 + N] int64: decoder_start + N greedy tokens from a loop over the
                       model's forward with past_key_values (checked equal to model.generate
                       for Marian and T5; Whisper's generate adds forced/suppressed tokens)
  beam_tokens          [1, <= 1 + N] int64: model.generate(num_beams=3, length_penalty=1.0,
                       early_stopping=False) for Marian and T5 (absent for Whisper)
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 1234
NEW_TOKENS = 12

# name -> (task, {size: config kwargs})
MODELS = {
    "marian": ("text2text-generation-with-past", {
        "tiny": dict(vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                     max_position_embeddings=64, pad_token_id=95, eos_token_id=0, decoder_start_token_id=95),
        # Helsinki-NLP/opus-mt-en-de's config.json, weights random
        "real": dict(vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
                     decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                     max_position_embeddings=512, pad_token_id=58100, eos_token_id=0,
                     decoder_start_token_id=58100),
    }),
    "whisper": ("automatic-speech-recognition-with-past", {
        # 128 mel frames (max_source_positions 64 after the stride-2 conv), 80 mel bins as the real one
        "tiny": dict(vocab_size=96, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, num_mel_bins=80,
                     max_source_positions=64, max_target_positions=64, pad_token_id=94, eos_token_id=94,
                     bos_token_id=94, decoder_start_token_id=95),
        # openai/whisper-tiny's shapes: 3000 frames -> 1500 positions
        "real": dict(vocab_size=51865, d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                     decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80,
                     max_source_positions=1500, max_target_positions=448, pad_token_id=50257,
                     eos_token_id=50257, bos_token_id=50257, decoder_start_token_id=50258),
    }),
    "t5": ("text2text-generation-with-past", {
        "tiny": dict(vocab_size=96, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                     relative_attention_num_buckets=32, relative_attention_max_distance=128,
                     feed_forward_proj="relu", pad_token_id=0, eos_token_id=1, decoder_start_token_id=0),
        # t5-small
        "real": dict(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                     num_heads=8, relative_attention_num_buckets=32, relative_attention_max_distance=128,
                     feed_forward_proj="relu", pad_token_id=0, eos_token_id=1, decoder_start_token_id=0),
    }),
}


def build_model(name, size):
    import transformers as tf

    kw = dict(MODELS[name][1][size])
    torch.manual_seed(SEED)
    if name == "marian":
        # opus-mt's forced_eos_token_id would force EOS at max_length and make greedy runs of
        # different lengths disagree; bad_words_ids=[[pad]] is kept as the real config has it.
        cfg = tf.MarianConfig(activation_function="swish", scale_embedding=True, forced_eos_token_id=None,
                              bad_words_ids=[[kw["pad_token_id"]]], **kw)
        model = tf.MarianMTModel(cfg)
    elif name == "whisper":
        cfg = tf.WhisperConfig(suppress_tokens=None, begin_suppress_tokens=None, forced_decoder_ids=None, **kw)
        model = tf.WhisperForConditionalGeneration(cfg)
    else:
        cfg = tf.T5Config(**kw)
        model = tf.T5ForConditionalGeneration(cfg)
    with torch.no_grad():
        # random LayerNorm affine parameters and biases, so a dropped or swapped one shows
        for n, p in model.named_parameters():
            if ("layer_norm" in n or "layernorm" in n or n.endswith(".bias") or "final_logits_bias" in n):
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if n.endswith("weight") else 0.0))
    return model.eval()


def encoder_inputs(name, model, seed=7):
    g = torch.Generator().manual_seed(seed)
    cfg = model.config
    if name == "whisper":
        frames = cfg.max_source_positions * 2
        return {"input_features": torch.randn(1, cfg.num_mel_bins, frames, generator=g)}
    length = 11
    ids = torch.randint(2, min(cfg.vocab_size, 1000) - 2, (1, length), generator=g)
    ids[0, -1] = cfg.eos_token_id
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def greedy(model, enc_out, enc_mask, start, steps):
    """Greedy decoding over the model's forward with its KV cache (no logits processors)."""
    tokens = torch.tensor([[start]])
    past, nxt = None, tokens
    for _ in range(steps):
        out = model(encoder_outputs=(enc_out,), attention_mask=enc_mask, decoder_input_ids=nxt,
                    past_key_values=past, use_cache=True)
        past = out.past_key_values
        nxt = out.logits[:, -1:].argmax(-1)
        tokens = torch.cat([tokens, nxt], dim=1)
    return tokens


def references(name, model):
    cfg = model.config
    feeds = encoder_inputs(name, model)
    with torch.no_grad():
        enc = model.get_encoder()(**feeds).last_hidden_state
        mask = feeds.get("attention_mask")
        g = torch.Generator().manual_seed(11)
        dec_ids = torch.cat([torch.tensor([[cfg.decoder_start_token_id]]),
                             torch.randint(2, min(cfg.vocab_size, 1000) - 2, (1, 6), generator=g)], dim=1)
        logits = model(encoder_outputs=(enc,), attention_mask=mask, decoder_input_ids=dec_ids).logits
        tokens = greedy(model, enc, mask, cfg.decoder_start_token_id, NEW_TOKENS)
        ref = {k: v.numpy() for k, v in feeds.items()}
        ref.update(encoder_hidden_states=enc.numpy(), decoder_input_ids=dec_ids.numpy(), logits=logits.numpy(),
                   greedy_tokens=tokens.numpy())
        if name != "whisper":
            common = dict(max_new_tokens=NEW_TOKENS, do_sample=False, min_length=0, no_repeat_ngram_size=0,
                          repetition_penalty=1.0, bad_words_ids=None, forced_eos_token_id=None,
                          forced_bos_token_id=None, eos_token_id=cfg.eos_token_id)
            hf = model.generate(**feeds, num_beams=1, **common)
            n = min(hf.shape[1], tokens.shape[1])
            if not torch.equal(hf[:, :n], tokens[:, :n]):
                raise RuntimeError(f"{name}: own greedy loop {tokens.tolist()} != model.generate {hf.tolist()}")
            ref["beam_tokens"] = model.generate(**feeds, num_beams=3, length_penalty=1.0, early_stopping=False,
                                                **common).numpy()
    return ref


def export(name, size, out_dir):
    from optimum.exporters.onnx import main_export

    model = build_model(name, size)
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"octet_{name}_") as tmp:
        src = os.path.join(tmp, "hf")
        model.save_pretrained(src)
        onnx_dir = os.path.join(tmp, "onnx")
        torch.set_num_threads(1)
        shapes = {"nb_max_frames": model.config.max_source_positions * 2} if name == "whisper" else {}
        main_export(src, onnx_dir, task=MODELS[name][0], opset=17, device="cpu", do_validation=True, **shapes)
        for f in sorted(os.listdir(onnx_dir)):
            if f.endswith(".onnx") or f.endswith(".onnx_data") or f == "config.json":
                shutil.copy(os.path.join(onnx_dir, f), os.path.join(out_dir, f))
    np.savez(os.path.join(out_dir, "reference.npz"), **references(name, model))
    import optimum.version
    import transformers

    info = {"name": name, "size": size, "random_init_seed": SEED, "task": MODELS[name][0],
            "optimum": optimum.version.__version__, "transformers": transformers.__version__,
            "torch": torch.__version__, "parameters": int(sum(p.numel() for p in model.parameters())),
            "files": sorted(f for f in os.listdir(out_dir) if f.endswith(".onnx"))}
    with open(os.path.join(out_dir, "export_info.json"), "w") as f:
        json.dump(info, f, indent=1)
    return info


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", default=list(MODELS))
    p.add_argument("--size", choices=("tiny", "real"), default="tiny")
    p.add_argument("--out", help="parent folder (default tests/models/fixtures/seq2seq for tiny)")
    a = p.parse_args()
    out = a.out or (os.path.join(HERE, "fixtures", "seq2seq") if a.size == "tiny" else None)
    if out is None:
        p.error("--size real needs --out")
    for name in a.names:
        info = export(name, a.size, os.path.join(out, name))
        print(json.dumps(info))


if __name__ == "__main__":
    sys.exit(main())
