#!/usr/bin/env python3
"""Write calibration samples for the tiny fixtures, one .npz per sample keyed by input
name (the layout `octet quantize --calib DIR` reads).

    python3 tests/models/make_calibration.py OUT_DIR [--samples N] [--seq 128]
    python3 tests/models/make_calibration.py OUT_DIR --models bert_small --vocab 30522

Writes OUT_DIR/{bert_tiny,gpt2_tiny,vit_tiny}/sample_NNN.npz. `bert_small`, `bert_mini` (the int8
benchmark models of bench/make_bert_bench.py) take BERT samples; give them their vocabulary. The fixtures are randomly
initialised models, so there is no "real" data distribution to imitate; the inputs are
what such models see in use: token ids uniform over the vocabulary, attention masks with
a padded tail on some samples, two token-type segments, and images with roughly
normalized pixels (per-channel mean and scale vary per sample, as real photos do).
Deterministic (fixed seed) and idempotent.
"""
import argparse
import os

import numpy as np

VOCAB = 1000  # all three text fixtures (tests/models/export_fixtures.py)


def bert_sample(rng, seq, vocab):
    ids = rng.integers(0, vocab, size=(1, seq), dtype=np.int64)
    mask = np.ones((1, seq), dtype=np.int64)
    if rng.random() < 0.5:
        mask[0, rng.integers(seq // 2, seq):] = 0
    types = np.zeros((1, seq), dtype=np.int64)
    types[0, rng.integers(1, seq):] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def gpt2_sample(rng, seq, vocab):
    return {"input_ids": rng.integers(0, vocab, size=(1, seq), dtype=np.int64)}


def vit_sample(rng, _seq, _vocab):
    mean = rng.normal(0.0, 0.3, size=(1, 3, 1, 1))
    scale = rng.uniform(0.6, 1.2, size=(1, 3, 1, 1))
    x = mean + scale * rng.standard_normal((1, 3, 224, 224))
    return {"pixel_values": x.astype(np.float32)}


MODELS = {"bert_tiny": bert_sample, "gpt2_tiny": gpt2_sample, "vit_tiny": vit_sample}
EXTRA_MODELS = {"bert_small": bert_sample, "bert_mini": bert_sample}  # bench/int8.py; need --vocab 30522


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--models", nargs="*", default=sorted(MODELS), choices=sorted({**MODELS, **EXTRA_MODELS}))
    p.add_argument("--vocab", type=int, default=VOCAB, help="token ids in [0, VOCAB) (default %(default)s)")
    a = p.parse_args()
    samplers = {**MODELS, **EXTRA_MODELS}
    for name in a.models:
        rng = np.random.default_rng(sum(map(ord, name)))  # per model, stable across runs
        d = os.path.join(a.out_dir, name)
        os.makedirs(d, exist_ok=True)
        for i in range(a.samples):
            np.savez(os.path.join(d, f"sample_{i:03d}.npz"), **samplers[name](rng, a.seq, a.vocab))
        print(f"{d}: {a.samples} samples")


if __name__ == "__main__":
    main()
