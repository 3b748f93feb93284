#!/usr/bin/env python3
"""onnxruntime's outputs for the tiny decoders with past (export_generation_fixtures.py):
a prefill of 7 tokens on an empty cache, then 8 single-token decode steps, each fed the
previous step's present.N.* as past_key_values.N.*. Written as <model>_steps.npz beside
each model: step<i>.<input name> and step<i>.<output name> for i in 0..8; and the first
decode step (past 7, one token) as <model>_data/test_data_set_0/{input,output}_<k>.pb (the
onnx backend-test layout), the consistent inputs tests/python/test_roundtrip.py feeds.

    python3 tests/models/make_decoder_references.py   (the pyenv python: onnxruntime)
"""
import os

import numpy as np
import onnxruntime as ort
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
PROMPT, STEPS = 7, 8


def run(path):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    outs = [o.name for o in sess.get_outputs()]
    past = [n for n in names if n.startswith("past_key_values.")]
    shape = {i.name: i.shape for i in sess.get_inputs()}
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 256, (1, PROMPT)).astype(np.int64)
    cache = {n: np.zeros((1, shape[n][1], 0, shape[n][3]), np.float32) for n in past}
    saved, total, first_decode = {}, 0, None
    for step in range(STEPS + 1):
        new = ids.shape[1]
        feeds = {"input_ids": ids, "attention_mask": np.ones((1, total + new), np.int64),
                 "position_ids": np.arange(total, total + new, dtype=np.int64)[None], **cache}
        got = dict(zip(outs, sess.run(None, feeds)))
        if step == 1:
            first_decode = ([feeds[n] for n in names], [got[n] for n in outs])
        for k, v in {**feeds, **got}.items():
            if not k.startswith("past_key_values."):
                saved[f"step{step}.{k}"] = v
        total += new
        cache = {n: got[n.replace("past_key_values.", "present.")] for n in past}
        ids = got["logits"][:, -1:].argmax(-1).astype(np.int64)
    data = os.path.join(path[:-5] + "_data", "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for kind, arrays in zip(("input", "output"), first_decode):
        for k, a in enumerate(arrays):
            with open(os.path.join(data, f"{kind}_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a).SerializeToString())
    out = path.replace(".onnx", "_steps.npz")
    np.savez_compressed(out, **saved)
    print(f"{out}: {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    for name in ("llama_gen_with_past.onnx", "gpt2_gen_with_past.onnx"):
        run(os.path.join(HERE, "fixtures", name))
