"""`octet generate` on decoder-only LMs as optimum's legacy export writes them (tiny Llama and
GPT-2 from tests/models/export_optimum_decoder_fixtures.py: decoder_model.onnx,
decoder_with_past_model.onnx, decoder_model_merged.onnx): greedy tokens, plain and with a
repetition penalty, equal transformers' own generate() on several prompts

- through the merged file (one If on use_cache_branch), in place (its two branches: the
  no-past one takes the prompt, the with-past one every later token) and portable;
- through the folder (the split pair) and through decoder_with_past_model.onnx named alone;
- through Llama's with-past file with no first-step file beside it, which onnxruntime shows
  gives wrong logits when fed a whole prompt: octet runs its prompt one token at a time.
"""
import json
import os
import shutil
import tempfile

import numpy as np
import onnxruntime as ort

from harness import Tally, parse_args, run_octet

args = parse_args()
ROOT = os.path.join(args.source_dir, "tests/models/fixtures/optimum_decoders")
with open(os.path.join(ROOT, "references.json")) as f:
    REFS = json.load(f)
t = Tally("generate_optimum_legacy")
TMP = tempfile.TemporaryDirectory(prefix="octet_optimum_legacy_")


def generate(model, prompt, penalty, cache):
    env_before = os.environ.get("OCTET_KV_CACHE")
    os.environ["OCTET_KV_CACHE"] = cache
    try:
        code, out, err = run_octet(args.octet, "generate", model, "--prompt-ids", ",".join(map(str, prompt)),
                                   "--max-new-tokens", str(REFS["new_tokens"]), "--repetition-penalty",
                                   str(penalty), "--json", "--threads", "1")
    finally:
        if env_before is None:
            del os.environ["OCTET_KV_CACHE"]
        else:
            os.environ["OCTET_KV_CACHE"] = env_before
    assert code == 0, f"{model} ({cache}): exit {code}: {err.strip()}"
    return json.loads(out)["ids"]


def check_equals_transformers(name, model, caches=("in-place", "portable")):
    cases = REFS["models"][name]
    assert len(cases) >= 3
    for case in cases:
        for key, penalty in (("new", 1.0), ("new_penalized", REFS["repetition_penalty"])):
            for cache in caches:
                got = generate(model, case["prompt"], penalty, cache)
                assert got == case[key], (f"{os.path.basename(model)} ({cache}), prompt {case['prompt']}, penalty "
                                          f"{penalty}: octet {got} vs transformers {case[key]}")


def ort_logits(path, ids, past_len=0):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)}
    for i in s.get_inputs():
        if i.name.startswith("past_key_values."):
            feeds[i.name] = np.zeros((1, i.shape[1], past_len, i.shape[3]), np.float32)
    return s.run(["logits"], feeds)[0][0]


def check_files_hold_the_reference_weights():
    for name in ("llama", "gpt2"):
        case = REFS["models"][name][2]
        got = ort_logits(os.path.join(ROOT, name, "decoder_model.onnx"), case["prompt"])[-1]
        np.testing.assert_allclose(got, case["prompt_last_logits"], atol=1e-4, rtol=1e-4)


def check_llama_with_past_file_takes_one_token_per_step():
    # Why octet must not feed it a prompt whole: onnxruntime's logits for a 9-token prompt
    # through the with-past file (empty past) are not the no-past file's.
    prompt = REFS["models"]["llama"][2]["prompt"]
    assert len(prompt) > 1
    whole = ort_logits(os.path.join(ROOT, "llama", "decoder_with_past_model.onnx"), prompt)[-1]
    first = ort_logits(os.path.join(ROOT, "llama", "decoder_model.onnx"), prompt)[-1]
    assert np.abs(whole - first).max() > 1e-2, "the with-past file is no longer one-token-only: the check is moot"
    alone = os.path.join(TMP.name, "llama_with_past.onnx")  # no decoder_model.onnx beside it
    shutil.copyfile(os.path.join(ROOT, "llama", "decoder_with_past_model.onnx"), alone)
    check_equals_transformers("llama", alone)


for n in ("llama", "gpt2"):
    d = os.path.join(ROOT, n)
    t.check(f"{n}: merged decoder == transformers", check_equals_transformers, n,
            os.path.join(d, "decoder_model_merged.onnx"))
    t.check(f"{n}: folder (split pair) == transformers", check_equals_transformers, n, d, ("in-place",))
    t.check(f"{n}: decoder_with_past_model.onnx named alone == transformers", check_equals_transformers, n,
            os.path.join(d, "decoder_with_past_model.onnx"), ("in-place",))
t.check("the fixtures hold the references' weights", check_files_hold_the_reference_weights)
t.check("llama's with-past file alone: prompt one token at a time", check_llama_with_past_file_takes_one_token_per_step)
t.finish()
