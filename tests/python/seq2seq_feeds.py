"""Inputs for each file of an optimum encoder-decoder set (encoder_model, decoder_model,
decoder_with_past_model), made by running onnxruntime on the fp32 files: the decoder sees the
encoder's real output and the cache its own first step returned, as generation feeds them.
Shared by tests/python/test_seq2seq.py and bench/seq2seq_bench.py."""
import os

import numpy as np
import onnxruntime as ort

FILES = ("encoder_model", "decoder_model", "decoder_with_past_model")
MERGED = ("decoder_model_merged:no_cache", "decoder_model_merged:cache")


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def input_names(path):
    return [i.name for i in session(path).get_inputs()]


def encoder_feeds(folder, reference):
    names = input_names(os.path.join(folder, "encoder_model.onnx"))
    return {n: reference[n] for n in names}


def decoder_feeds(folder, enc_feeds, enc_out, tokens, file):
    """Feeds for `file` given the encoder output and the decoder tokens so far: the whole
    sequence for decoder_model; for decoder_with_past_model, the last token with the cache
    decoder_model returns for the tokens before it."""
    def common(path, ids):
        feeds = {"input_ids": ids}
        names = input_names(path)
        if "encoder_hidden_states" in names:
            feeds["encoder_hidden_states"] = enc_out
        if "encoder_attention_mask" in names:
            feeds["encoder_attention_mask"] = enc_feeds["attention_mask"]
        return feeds, names

    first = os.path.join(folder, "decoder_model.onnx")
    if file == "decoder_model":
        return common(first, tokens)[0]
    feeds, _ = common(first, tokens[:, :-1])
    sess = session(first)
    present = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    path = os.path.join(folder, "decoder_with_past_model.onnx")
    feeds, names = common(path, tokens[:, -1:])
    for n in names:
        if n.startswith("past_key_values."):
            feeds[n] = present[n.replace("past_key_values.", "present.")]
    return feeds


def merged_feeds(folder, split, use_cache):
    """decoder_model_merged's feeds for one branch: those of decoder_model (use_cache_branch
    false, with one-token dummy caches as optimum feeds them) or of decoder_with_past_model
    (true); encoder_hidden_states is always an input of the merged file."""
    path = os.path.join(folder, "decoder_model_merged.onnx")
    src = split["decoder_with_past_model" if use_cache else "decoder_model"]
    enc_out = split["decoder_model"]["encoder_hidden_states"]
    feeds = {"use_cache_branch": np.array([use_cache])}
    for i in session(path).get_inputs():
        if i.name in src:
            feeds[i.name] = src[i.name]
        elif i.name == "encoder_hidden_states":
            feeds[i.name] = enc_out
        elif i.name.startswith("past_key_values."):
            heads, head_dim = i.shape[1], i.shape[3]
            feeds[i.name] = np.zeros((enc_out.shape[0], heads, 1, head_dim), np.float32)
    return feeds


def all_feeds(folder, reference, prefix=4):
    """{file: feeds} for the three files: the reference's encoder inputs, and its first
    `prefix` decoder tokens (decoder_model) or the cache of `prefix - 1` and one new token;
    and for each branch of the merged file ("decoder_model_merged:cache" / ":no_cache")."""
    enc = encoder_feeds(folder, reference)
    enc_out = session(os.path.join(folder, "encoder_model.onnx")).run(None, enc)[0]
    tokens = reference["decoder_input_ids"][:, :prefix]
    out = {"encoder_model": enc,
           "decoder_model": decoder_feeds(folder, enc, enc_out, tokens, "decoder_model"),
           "decoder_with_past_model": decoder_feeds(folder, enc, enc_out, tokens, "decoder_with_past_model")}
    for key in MERGED:
        out[key] = merged_feeds(folder, out, key.endswith(":cache"))
    return out
