"""`octet generate` on the encoder-decoder fixtures of tests/models/fixtures/seq2seq (MarianMT and
T5 shapes with random weights, exported by optimum 1.16 as encoder_model.onnx + decoder_model.onnx
+ decoder_with_past_model.onnx; tests/models/export_seq2seq_fixtures.py): greedy tokens equal
onnxruntime's greedy loop over the same three files and the torch greedy loop stored in
reference.npz; beam search (3 beams) equals transformers' generate(num_beams=3) stored there.
Skips (passes, saying so) when the fixtures are not in the tree."""
import json
import os

import numpy as np
import onnxruntime as ort

from harness import Tally, parse_args, run_octet

args = parse_args()
ROOT = os.environ.get("OCTET_SEQ2SEQ_FIXTURES", os.path.join(args.source_dir, "tests/models/fixtures/seq2seq"))
NAMES = ["marian", "t5"]
t = Tally("generate_seq2seq")


def ort_greedy(folder, ids, start, new_tokens):
    """optimum's ORTModelForSeq2SeqLM loop: the encoder once, decoder_model for the first step,
    decoder_with_past_model after it (cross-attention keys/values from the first step)."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    load = lambda f: ort.InferenceSession(os.path.join(folder, f), so, providers=["CPUExecutionProvider"])
    enc, first, with_past = load("encoder_model.onnx"), load("decoder_model.onnx"), load("decoder_with_past_model.onnx")
    mask = np.ones_like(ids)
    (hidden,) = enc.run(None, {"input_ids": ids, "attention_mask": mask})
    cache, tokens, out = {}, [start], []
    for step in range(new_tokens):
        session = first if step == 0 else with_past
        feed = {"input_ids": np.array([tokens], np.int64), "encoder_hidden_states": hidden,
                "encoder_attention_mask": mask}
        feed.update({"past_key_values." + k: v for k, v in cache.items()})
        names = {i.name for i in session.get_inputs()}
        outputs = [o.name for o in session.get_outputs()]
        result = dict(zip(outputs, session.run(None, {k: v for k, v in feed.items() if k in names})))
        token = int(np.argmax(result["logits"][0, -1]))
        cache.update({n[len("present."):]: v for n, v in result.items() if n.startswith("present.")})
        tokens = [token]
        out.append(token)
    return out


def generate(folder, ids, *extra):
    code, out, err = run_octet(args.octet, "generate", folder, "--prompt-ids", ",".join(map(str, ids)), "--json",
                               "--threads", "1", *extra)
    assert code == 0, f"exit {code}: {err.strip()}"
    return json.loads(out)


def check_greedy(name):
    folder = os.path.join(ROOT, name)
    ref = np.load(os.path.join(folder, "reference.npz"))
    config = json.load(open(os.path.join(folder, "config.json")))
    ids = ref["input_ids"]
    torch_greedy = ref["greedy_tokens"][0].tolist()
    assert torch_greedy[0] == config["decoder_start_token_id"]
    n = len(torch_greedy) - 1
    expected = ort_greedy(folder, ids, torch_greedy[0], n)
    got = generate(folder, ids[0].tolist(), "--max-new-tokens", str(n), "--ignore-eos")
    assert got["ids"] == expected, f"octet {got['ids']} vs onnxruntime {expected}"
    assert got["ids"] == torch_greedy[1:], f"octet {got['ids']} vs torch {torch_greedy[1:]}"


def check_beam_search(name):
    folder = os.path.join(ROOT, name)
    ref = np.load(os.path.join(folder, "reference.npz"))
    want = ref["beam_tokens"][0].tolist()[1:]
    got = generate(folder, ref["input_ids"][0].tolist(), "--max-new-tokens", "12", "--num-beams", "3",
                   "--length-penalty", "1.0", "--early-stopping", "false")
    assert got["ids"] == want, f"octet {got['ids']} vs transformers {want}"


if not os.path.isdir(ROOT):
    print(f"generate_seq2seq: SKIPPED, no fixtures at {ROOT}")
else:
    for name in NAMES:
        t.check(f"greedy == onnxruntime == torch ({name})", check_greedy, name)
        t.check(f"beam search == transformers ({name})", check_beam_search, name)
    t.finish()
