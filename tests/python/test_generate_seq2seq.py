"""`octet generate` on the encoder-decoder fixtures of tests/models/fixtures/seq2seq (MarianMT,
T5 and Whisper shapes with random weights, exported by optimum 1.16 as encoder_model.onnx + decoder_model.onnx
+ decoder_with_past_model.onnx; tests/models/export_seq2seq_fixtures.py): greedy tokens equal
onnxruntime's greedy loop over the same three files and the torch greedy loop stored in
reference.npz (Whisper: from log-mel input_features); beam search (3 beams) equals transformers' generate(num_beams=3) stored there, and
a beam search written here after transformers' beam_search / BeamSearchScorer driving
onnxruntime on the same files; the merged decoder (If on use_cache_branch) alone generates what
the split files do.
Skips (passes, saying so) when the fixtures are not in the tree."""
import json
import os
import tempfile

import numpy as np

from harness import Tally, parse_args, run_octet
from ort_seq2seq import id_inputs, ort_beam_search, ort_greedy

args = parse_args()
ROOT = os.environ.get("OCTET_SEQ2SEQ_FIXTURES", os.path.join(args.source_dir, "tests/models/fixtures/seq2seq"))
NAMES = ["marian", "t5"]
t = Tally("generate_seq2seq")
TMP = tempfile.TemporaryDirectory(prefix="octet_generate_seq2seq_")


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
    expected = ort_greedy(folder, id_inputs(ids), torch_greedy[0], n)
    got = generate(folder, ids[0].tolist(), "--max-new-tokens", str(n), "--ignore-eos")
    assert got["ids"] == expected, f"octet {got['ids']} vs onnxruntime {expected}"
    assert got["ids"] == torch_greedy[1:], f"octet {got['ids']} vs torch {torch_greedy[1:]}"
    # --repeat (benchmarks): the same generation again on the loaded models, every run listed
    again = generate(folder, ids[0].tolist(), "--max-new-tokens", str(n), "--ignore-eos", "--repeat", "3")
    assert again["ids"] == expected and len(again["runs"]) == 3, again
    assert all(r["same_ids"] and r["time_to_first_token_ms"] > 0 for r in again["runs"]), again["runs"]


def check_beam_search(name):
    folder = os.path.join(ROOT, name)
    ref = np.load(os.path.join(folder, "reference.npz"))
    config = json.load(open(os.path.join(folder, "config.json")))
    want = ref["beam_tokens"][0].tolist()[1:]
    got = generate(folder, ref["input_ids"][0].tolist(), "--max-new-tokens", "12", "--num-beams", "3",
                   "--length-penalty", "1.0", "--early-stopping", "false")
    assert got["ids"] == want, f"octet {got['ids']} vs transformers {want}"
    by_ort = ort_beam_search(folder, ref["input_ids"], config["decoder_start_token_id"], config["eos_token_id"], 3, 12)
    assert got["ids"] == by_ort, f"octet {got['ids']} vs onnxruntime {by_ort}"


def check_merged_decoder(name):
    """optimum's decoder_model_merged.onnx alone (an If on use_cache_branch) generates what the
    split files do."""
    folder = os.path.join(ROOT, name)
    merged = os.path.join(TMP.name, name + "_merged")
    os.makedirs(merged, exist_ok=True)
    for f in ("encoder_model.onnx", "decoder_model_merged.onnx", "config.json"):
        if not os.path.exists(os.path.join(merged, f)):
            os.symlink(os.path.join(folder, f), os.path.join(merged, f))
    ids = np.load(os.path.join(folder, "reference.npz"))["input_ids"][0].tolist()
    # Greedy tokens of these random models repeat one token, which a decoder that ignored its
    # cache could match too: beam search (reordered caches) and seeded sampling at a high
    # temperature (a different token almost every step) are the real checks.
    want = np.load(os.path.join(folder, "reference.npz"))["beam_tokens"][0].tolist()[1:]
    got = generate(merged, ids, "--max-new-tokens", "12", "--num-beams", "3", "--early-stopping", "false")["ids"]
    assert got == want, f"merged decoder, beam search {got} vs transformers {want}"
    sampling = ("--max-new-tokens", "12", "--ignore-eos", "--do-sample", "--temperature", "3", "--seed", "7")
    split, got = generate(folder, ids, *sampling)["ids"], generate(merged, ids, *sampling)["ids"]
    assert len(set(split)) > 3, f"sampling gave too few distinct tokens to test anything: {split}"
    assert got == split, f"merged decoder, sampling {got} vs split files {split}"


def check_whisper_features():
    """Whisper: log-mel input_features into the encoder (--encoder-input), no token prompt."""
    folder = os.path.join(ROOT, "whisper")
    ref = np.load(os.path.join(folder, "reference.npz"))
    features = os.path.join(TMP.name, "features.npy")
    np.save(features, ref["input_features"])
    torch_greedy = ref["greedy_tokens"][0].tolist()
    n = len(torch_greedy) - 1
    expected = ort_greedy(folder, {"input_features": ref["input_features"]}, torch_greedy[0], n)
    code, out, err = run_octet(args.octet, "generate", folder, "--encoder-input", f"input_features={features}",
                               "--max-new-tokens", str(n), "--ignore-eos", "--json", "--threads", "1")
    assert code == 0, f"exit {code}: {err.strip()}"
    got = json.loads(out)["ids"]
    assert got == expected, f"octet {got} vs onnxruntime {expected}"
    assert got == torch_greedy[1:], f"octet {got} vs torch {torch_greedy[1:]}"


if not os.path.isdir(ROOT):
    print(f"generate_seq2seq: SKIPPED, no fixtures at {ROOT}")
else:
    for name in NAMES:
        t.check(f"greedy == onnxruntime == torch ({name})", check_greedy, name)
        t.check(f"beam search == transformers == onnxruntime ({name})", check_beam_search, name)
        t.check(f"merged decoder == split files ({name})", check_merged_decoder, name)
    t.check("whisper features: greedy == onnxruntime == torch", check_whisper_features)
    t.finish()
