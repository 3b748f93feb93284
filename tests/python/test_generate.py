"""`octet generate` on the tiny decoder fixtures (a Llama with GQA and a GPT-2, exported with a
KV cache in optimum's naming by torch 1.13 + transformers 4.36.2): greedy tokens equal
onnxruntime's greedy loop on the same file and transformers' own generate() (stored by
tests/models/export_generation_fixtures.py) token for token on several prompts, plain and with
a repetition penalty; stop ids,
seeded sampling, --out, --json fields and the errors. Token ids only: no Python package
needed by the CLI on this path."""
import json
import os
import tempfile

import numpy as np
import onnxruntime as ort

from harness import Tally, parse_args, run_octet
from ort_generate import greedy_with_past

args = parse_args()
FIXTURES = os.path.join(args.source_dir, "tests/models/fixtures")
MODELS = ["llama_gen_with_past.onnx", "gpt2_gen_with_past.onnx"]
with open(os.path.join(FIXTURES, "generation_references.json")) as f:
    REFS = json.load(f)
t = Tally("generate")
TMP = tempfile.TemporaryDirectory(prefix="octet_generate_test_")


def ort_session(model):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(os.path.join(FIXTURES, model), so, providers=["CPUExecutionProvider"])


def generate(model, ids, *extra):
    code, out, err = run_octet(args.octet, "generate", os.path.join(FIXTURES, model), "--prompt-ids",
                               ",".join(map(str, ids)), "--json", "--threads", "1", *extra)
    assert code == 0, f"exit {code}: {err.strip()}"
    return json.loads(out)


def check_greedy_equals_onnxruntime_and_transformers(model):
    session = ort_session(model)
    cases = REFS["models"][model]
    assert len(cases) >= 3
    n, penalty = REFS["new_tokens"], REFS["repetition_penalty"]
    for case in cases:
        for key, p in (("new", 1.0), ("new_penalized", penalty)):
            expected_ort, logits = greedy_with_past(session, case["prompt"], n, p)
            # The file holds the weights the references were made with.
            np.testing.assert_allclose(logits, case["prompt_last_logits"], atol=1e-4, rtol=1e-4)
            got = generate(model, case["prompt"], "--max-new-tokens", str(n), "--repetition-penalty", str(p))
            what = f"prompt {case['prompt']}, penalty {p}: octet {got['ids']} vs"
            assert got["ids"] == expected_ort, f"{what} onnxruntime {expected_ort}"
            assert got["ids"] == case[key], f"{what} transformers {case[key]}"
            assert got["new_tokens"] == n and got["prompt_tokens"] == len(case["prompt"]), got
            assert got["stop_reason"] == "max_new_tokens"


def check_json_fields_and_stop_ids():
    case = REFS["models"][MODELS[0]][2]
    r = generate(MODELS[0], case["prompt"], "--max-new-tokens", "8")
    for key in ("ids", "text", "prompt_tokens", "new_tokens", "time_to_first_token_ms", "decode_tokens_per_second",
                "total_ms", "peak_rss_bytes", "stop_reason"):
        assert key in r, f"missing {key}: {sorted(r)}"
    assert r["text"] is None and r["peak_rss_bytes"] > 1 << 20
    assert 0 < r["time_to_first_token_ms"] <= r["total_ms"] and r["decode_tokens_per_second"] > 0, r
    # Stop at the 5th greedy token: it is kept, nothing after it.
    stop = case["new"][4]
    first = case["new"].index(stop)
    r = generate(MODELS[0], case["prompt"], "--max-new-tokens", "20", "--stop-ids", f"{stop},9999")
    assert r["ids"] == case["new"][:first + 1] and r["stop_reason"] == "stop_token", r


def check_sampling_is_seeded():
    prompt = REFS["models"][MODELS[1]][1]["prompt"]
    sample = ["--max-new-tokens", "16", "--do-sample", "--temperature", "1.5", "--top-k", "50", "--top-p", "0.95"]
    a = generate(MODELS[1], prompt, *sample, "--seed", "7")["ids"]
    b = generate(MODELS[1], prompt, *sample, "--seed", "7")["ids"]
    c = generate(MODELS[1], prompt, *sample, "--seed", "8")["ids"]
    assert a == b and a != c, (a, b, c)
    assert a != REFS["models"][MODELS[1]][1]["new"][:16], "sampling at temperature 1.5 gave the greedy tokens"


def check_out_file_and_stream():
    case = REFS["models"][MODELS[1]][0]
    out = os.path.join(TMP.name, "ids.npy")
    np.save(os.path.join(TMP.name, "prompt.npy"), np.array([case["prompt"]], np.int32))
    code, stdout, err = run_octet(args.octet, "generate", os.path.join(FIXTURES, MODELS[1]), "--prompt-ids",
                                  os.path.join(TMP.name, "prompt.npy"), "--max-new-tokens", "6", "--out", out)
    assert code == 0, err
    assert stdout.split() == [str(i) for i in case["new"][:6]], stdout
    assert np.load(out).tolist() == case["new"][:6]
    assert "time to first token" in err and "tokens/s" in err, err


def check_errors():
    def fails(needles, *argv):
        code, _, err = run_octet(args.octet, "generate", *argv)
        assert code == 1, f"exit {code}: {err}"
        for n in needles:
            assert n in err, f"'{n}' not in: {err}"
    llama = os.path.join(FIXTURES, MODELS[0])
    fails(["past_key_values"], os.path.join(FIXTURES, "gpt2_tiny.onnx"), "--prompt-ids", "1,2")
    fails(["--prompt-ids", "'x'"], llama, "--prompt-ids", "1,x")
    fails(["one of --prompt"], llama)
    fails(["top_p"], llama, "--prompt-ids", "1", "--do-sample", "--top-p", "0")
    fails(["Gather", "out of range"], llama, "--prompt-ids", "1,300")
    fails(["--tokenizer"], llama, "--prompt", "hello")
    code, out, _ = run_octet(args.octet, "generate", "--help")
    assert code == 0
    for needle in ("--prompt-ids", "--tokenizer", "--top-p", "--json", "past_key_values", "--num-beams"):
        assert needle in out, f"--help lacks '{needle}'"


for m in MODELS:
    t.check(f"greedy == onnxruntime == transformers ({m})", check_greedy_equals_onnxruntime_and_transformers, m)
t.check("--json fields, --stop-ids", check_json_fields_and_stop_ids)
t.check("seeded sampling", check_sampling_is_seeded)
t.check("streamed ids, --out, .npy prompt", check_out_file_and_stream)
t.check("errors and --help", check_errors)
t.finish()
