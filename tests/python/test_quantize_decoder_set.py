"""`octet quantize FOLDER -o OUT` on optimum's legacy decoder-only export (the tiny Llama of
tests/models/export_optimum_decoder_fixtures.py: decoder_model, decoder_with_past_model,
decoder_model_merged): each file calibrated on the steps it runs, the merged file written
from the two, one report. Checked:

- default (calibrated: per-token dynamic for a decoder, GPTQ weights), weight-only int4 RTN
  and weight-only int8 GPTQ for onnxruntime: the quantized merged file computes what the
  quantized split files compute (first step through its no-past branch, a later step through
  its with-past branch), in octet and, for --target ort, in onnxruntime;
- `octet generate` gives the same tokens on the quantized folder and on its merged file;
- RTN weights are stored once in the merged file (both branches round them alike);
- the report's JSON: calibration steps per file, held-out greedy agreement;
- the with-past file alone with samples is refused (they would run as prompts through a file
  that takes one token per step), naming what to do instead.
"""
import json
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

from harness import Tally, parse_args, run_octet

args = parse_args()
SET = os.path.join(args.source_dir, "tests/models/fixtures/optimum_decoders/llama")
t = Tally("quantize_decoder_set")
TMP = tempfile.TemporaryDirectory(prefix="octet_decoder_set_")
CALIB = os.path.join(TMP.name, "calib")
os.makedirs(CALIB)
rng = np.random.default_rng(7)
for i in range(10):
    np.savez(os.path.join(CALIB, f"s{i:02d}.npz"), input_ids=rng.integers(0, 256, (1, 12)).astype(np.int64))


def quantize(name, *extra):
    out = os.path.join(TMP.name, name)
    code, stdout, err = run_octet(args.octet, "quantize", SET, "-o", out, "--json", "-q", *extra, timeout=300)
    assert code == 0, f"exit {code}: {err.strip()}"
    return out, json.loads(stdout)


def run(path, ids, past=None):
    """The model's outputs through `octet run` (the octet target's ops are octet's own)."""
    names = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
    past_len = 0 if past is None else past["present.0.key"].shape[2]
    feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, past_len + len(ids)), np.int64)}
    if "use_cache_branch" in names:
        feeds["use_cache_branch"] = np.array([past is not None])
    for n in names:
        if n.startswith("past_key_values."):
            key = "present." + n[len("past_key_values."):]
            # optimum feeds a dummy past of length 1 to the no-past branch; it reads none of it
            feeds[n] = past[key] if past is not None else np.zeros((1, 2, 1, 16), np.float32)
    feeds = {k: v for k, v in feeds.items() if k in names}
    fin = os.path.join(TMP.name, "feeds.npz")
    fout = os.path.join(TMP.name, "outs.npz")
    np.savez(fin, **feeds)
    code, _, err = run_octet(args.octet, "run", path, "-i", fin, "--out", fout, "--threads", "1")
    assert code == 0, err
    return dict(np.load(fout))


def check_merged_equals_split(out):
    prompt = [5, 17, 200, 33, 9, 77, 1]
    split_first = run(os.path.join(out, "decoder_model.onnx"), prompt)
    merged_first = run(os.path.join(out, "decoder_model_merged.onnx"), prompt)
    np.testing.assert_allclose(merged_first["logits"], split_first["logits"], rtol=0, atol=1e-3 * np.abs(
        split_first["logits"]).max())
    nxt = [int(split_first["logits"][0, -1].argmax())]
    split_later = run(os.path.join(out, "decoder_with_past_model.onnx"), nxt, split_first)
    merged_later = run(os.path.join(out, "decoder_model_merged.onnx"), nxt, split_first)
    np.testing.assert_allclose(merged_later["logits"], split_later["logits"], rtol=0, atol=1e-3 * np.abs(
        split_later["logits"]).max())


def check_generate_folder_equals_merged(out):
    ids = []
    for model in (out, os.path.join(out, "decoder_model_merged.onnx")):
        code, stdout, err = run_octet(args.octet, "generate", model, "--prompt-ids", "5,17,200,33,9",
                                      "--max-new-tokens", "10", "--json", "--threads", "1")
        assert code == 0, err
        ids.append(json.loads(stdout)["ids"])
    assert ids[0] == ids[1], ids


def check_default():
    out, r = quantize("default", "--calib", CALIB)
    assert set(r["files"]) == {"decoder_model", "decoder_with_past_model"}, r.keys()
    # 8 calibration prompts (2 of 10 held out), 16 greedy steps: 1 prompt step + 15 cache steps each
    assert r["prompts"] == 10 and r["calibration_steps"] == {"decoder_model": 8, "decoder_with_past_model": 120}, r
    g = r["greedy_fidelity"]
    assert g["held_out_prompts"] == 2 and g["tokens"] == 32 and 0 <= g["merged_agreeing_tokens"] <= 32, g
    assert "merged_decoder" in r
    check_merged_equals_split(out)
    check_generate_folder_equals_merged(out)


def check_weight_only_rtn_shares_weights():
    out, r = quantize("int4_rtn", "--weights", "int4", "--block", "16")
    m = r["merged_decoder"]
    # every weight is rounded alike in both branches: all of it stored once
    assert m["shared_bytes"] > 100 * m["branch_bytes"], m
    assert "greedy_fidelity" not in r  # no samples, no check
    check_merged_equals_split(out)
    check_generate_folder_equals_merged(out)


def check_weight_only_gptq_for_onnxruntime():
    out, r = quantize("int8_gptq_ort", "--weights", "int8", "--method", "gptq", "--calib", CALIB, "--target", "ort")
    assert r["calibration_steps"]["decoder_with_past_model"] == 120, r
    check_merged_equals_split(out)
    prompt = [5, 17, 200, 33, 9]
    feeds = {"input_ids": np.array([prompt], np.int64), "attention_mask": np.ones((1, 5), np.int64)}
    split = ort.InferenceSession(os.path.join(out, "decoder_model.onnx")).run(["logits"], feeds)[0]
    merged_session = ort.InferenceSession(os.path.join(out, "decoder_model_merged.onnx"))
    for i in merged_session.get_inputs():
        if i.name.startswith("past_key_values."):
            feeds[i.name] = np.zeros((1, 2, 1, 16), np.float32)
    feeds["use_cache_branch"] = np.array([False])
    merged = merged_session.run(["logits"], feeds)[0]
    np.testing.assert_allclose(merged, split, rtol=0, atol=1e-4 * np.abs(split).max())
    check_generate_folder_equals_merged(out)


def check_with_past_alone_refuses_samples():
    code, _, err = run_octet(args.octet, "quantize", os.path.join(SET, "decoder_with_past_model.onnx"), "-o",
                             os.path.join(TMP.name, "x.onnx"), "--calib", CALIB)
    assert code == 1, err
    for needle in ("one new token per step", "decoder_model.onnx + decoder_with_past_model.onnx"):
        assert needle in err, err


t.check("default (calibrated): files, report, merged == split, generate", check_default)
t.check("--weights int4 RTN: weights shared by both branches", check_weight_only_rtn_shares_weights)
t.check("--weights int8 --method gptq --target ort", check_weight_only_gptq_for_onnxruntime)
t.check("the with-past file alone with samples is refused", check_with_past_alone_refuses_samples)
t.finish()
