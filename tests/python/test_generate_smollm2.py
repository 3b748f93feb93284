"""`octet generate` on SmolLM2-135M-Instruct fp32 with its KV cache (smollm2_with_past.onnx,
bench/models/README.md), when that export is cached (bench/models/exports.py builds it); skips,
saying so, otherwise.

(a) The GGUF chat prompt the export was checked with: octet's 24 greedy tokens, decoded with the
    tokenizer.json beside the export (bench/models/smollm2_tokenizer.py writes it), equal the
    answer transformers' own generate() gave (stored in torch_reference.npz), and equal
    onnxruntime's greedy loop over the same file.
(b) A second, plain-text prompt: 12 greedy tokens equal onnxruntime's.
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort

from harness import Tally, parse_args, run_octet
from ort_generate import greedy_with_past

args = parse_args()
sys.path.insert(0, os.path.join(args.source_dir, "tests", "models"))
import real_models  # noqa: E402

FOLDER = os.path.join(real_models.cache_dir(), "exports", "smollm2")
MODEL = os.path.join(FOLDER, "smollm2_with_past.onnx")
t = Tally("generate_smollm2")


def tokenizer():
    from tokenizers import Tokenizer
    path = os.path.join(FOLDER, "tokenizer.json")
    if not os.path.exists(path):
        sys.path.insert(0, os.path.join(args.source_dir, "bench", "models"))
        import smollm2_tokenizer
        smollm2_tokenizer.ensure()
    return Tokenizer.from_file(path)


def ort_greedy(prompt, new_tokens):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    return greedy_with_past(ort.InferenceSession(MODEL, so, providers=["CPUExecutionProvider"]), prompt,
                            new_tokens)[0]


def octet_greedy(prompt, new_tokens):
    code, out, err = run_octet(args.octet, "generate", MODEL, "--prompt-ids", ",".join(map(str, prompt)),
                               "--max-new-tokens", str(new_tokens), "--threads", "2", "--json", "--ignore-eos",
                               timeout=600)
    assert code == 0, f"exit {code}: {err.strip()}"
    return json.loads(out)["ids"]


def check_chat_answer():
    ref = np.load(os.path.join(FOLDER, "torch_reference.npz"))
    prompt = ref["input_ids"][0].tolist()
    got = octet_greedy(prompt, 24)
    text = tokenizer().decode(got)
    assert text == str(ref["answer"]), f"octet {text!r} vs transformers {str(ref['answer'])!r}"
    want = ort_greedy(prompt, 24)
    assert got == want, f"octet {got} vs onnxruntime {want}"


def check_plain_prompt():
    prompt = tokenizer().encode("The quick brown fox jumps over the lazy dog. Then the fox").ids
    got, want = octet_greedy(prompt, 12), ort_greedy(prompt, 12)
    assert got == want, f"octet {got} vs onnxruntime {want}"


if not os.path.exists(MODEL) or not os.path.exists(os.path.join(FOLDER, "torch_reference.npz")):
    print(f"generate_smollm2: SKIPPED, {MODEL} is not built (python3 bench/models/exports.py)")
else:
    t.check("chat answer == transformers == onnxruntime", check_chat_answer)
    t.check("plain prompt == onnxruntime", check_plain_prompt)
    t.finish()
