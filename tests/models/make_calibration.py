#!/usr/bin/env python3
"""Write calibration samples for the tiny fixtures, one .npz per sample keyed by input
name (the layout `octet quantize --calib DIR` reads).

    python3 tests/models/make_calibration.py OUT_DIR [--samples N] [--seq 128]

Writes OUT_DIR/{bert_tiny,gpt2_tiny,vit_tiny}/sample_NNN.npz. The fixtures are randomly
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


def bert_sample(rng, seq):
    ids = rng.integers(0, VOCAB, size=(1, seq), dtype=np.int64)
    mask = np.ones((1, seq), dtype=np.int64)
    if rng.random() < 0.5:
        mask[0, rng.integers(seq // 2, seq):] = 0
    types = np.zeros((1, seq), dtype=np.int64)
    types[0, rng.integers(1, seq):] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def gpt2_sample(rng, seq):
    return {"input_ids": rng.integers(0, VOCAB, size=(1, seq), dtype=np.int64)}


def vit_sample(rng, _seq):
    mean = rng.normal(0.0, 0.3, size=(1, 3, 1, 1))
    scale = rng.uniform(0.6, 1.2, size=(1, 3, 1, 1))
    x = mean + scale * rng.standard_normal((1, 3, 224, 224))
    return {"pixel_values": x.astype(np.float32)}


MODELS = {"bert_tiny": bert_sample, "gpt2_tiny": gpt2_sample, "vit_tiny": vit_sample}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--models", nargs="*", default=sorted(MODELS))
    a = p.parse_args()
    for name in a.models:
        rng = np.random.default_rng(sum(map(ord, name)))  # per model, stable across runs
        d = os.path.join(a.out_dir, name)
        os.makedirs(d, exist_ok=True)
        for i in range(a.samples):
            np.savez(os.path.join(d, f"sample_{i:03d}.npz"), **MODELS[name](rng, a.seq))
        print(f"{d}: {a.samples} samples")


if __name__ == "__main__":
    main()
