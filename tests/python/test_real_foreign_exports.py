"""Real pretrained models that others exported (tests/models/real_models.py) load in octet,
run, and match onnxruntime on realistic inputs: token ids of real sentences, batches of
1 and 2, several sequence lengths, padding in the attention mask.

One check function per model. Each writes its cases as an ONNX test-data folder holding
onnxruntime's outputs and runs them all on one octet session per optimizer level
(`octet run --test-data`: sets may differ in batch and sequence), so a model costs one
load per level however many cases it has. Agreement is measured against the output's
scale: max |octet - onnxruntime| <= BOUND * max |onnxruntime| over every element, padded
positions included.

Adding a model: a function that builds its feeds and calls check_against_onnxruntime,
then a t.check line at the bottom."""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from harness import Tally, parse_args, run_octet

args = parse_args()
sys.path.insert(0, os.path.join(args.source_dir, "tests", "models"))
import real_models  # noqa: E402 - found through the path set just above

t = Tally("real_foreign_exports")
TMP = tempfile.TemporaryDirectory(prefix="octet_real_exports_test_")
BOUND = 1e-4  # relative to the output's largest magnitude
LEVELS = ("2", "0")  # the default pipeline octet run uses, and the graph as exported

# Token ids (BERT uncased WordPiece vocabulary, which every MiniLM here shares), made with
# all-MiniLM-L6-v2's tokenizer.json, without [CLS] (101) and [SEP] (102).
SENTENCES = {
    # "The quick brown fox jumps over the lazy dog."
    "fox": [1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012],
    # "Octet quantizes transformer models to int8 and runs them on the CPU."
    "octet": [13323, 3388, 24110, 3775, 11254, 10938, 2121, 4275, 2000, 20014, 2620, 1998, 3216, 2068, 2006, 1996,
              17368, 1012],
    # "A sentence embedding maps text to a vector so that similar meanings land close
    # together, which makes search, clustering and deduplication simple."
    "embedding": [1037, 6251, 7861, 8270, 4667, 7341, 3793, 2000, 1037, 9207, 2061, 2008, 2714, 15383, 2455, 2485,
                  2362, 1010, 2029, 3084, 3945, 1010, 9324, 2075, 1998, 2139, 8566, 21557, 3722, 1012],
    "hello": [7592, 2088],  # "Hello world"
    # The first 126 tokens of the Zen of Python (`import this`).
    "zen": [
        1996, 16729, 1997, 18750, 1010, 2011, 5199, 12420, 3376, 2003, 2488, 2084, 9200, 1012, 13216, 2003,
        2488, 2084, 24655, 1012, 3722, 2003, 2488, 2084, 3375, 1012, 3375, 2003, 2488, 2084, 8552, 1012, 4257,
        2003, 2488, 2084, 9089, 2098, 1012, 20288, 2003, 2488, 2084, 9742, 1012, 3191, 8010, 9294, 1012, 2569,
        3572, 4995, 1005, 1056, 2569, 2438, 2000, 3338, 1996, 3513, 1012, 2348, 6742, 3012, 10299, 18433, 1012,
        10697, 2323, 2196, 3413, 8601, 1012, 4983, 12045, 25030, 1012, 1999, 1996, 2227, 1997, 27637, 1010,
        10214, 1996, 17232, 2000, 3984, 1012, 2045, 2323, 2022, 2028, 1011, 1011, 1998, 9544, 8231, 2069, 2028,
        1011, 1011, 5793, 2126, 2000, 2079, 2009, 1012, 2348, 2008, 2126, 2089, 2025, 2022, 5793, 2012, 2034,
        4983, 2017, 1005, 2128, 3803, 1012, 2085, 2003, 2488],
}


def bert_batch(names, seq):
    """input_ids / attention_mask / token_type_ids for these sentences, [CLS] ... [SEP]
    then zero padding up to seq (mask 0 there)."""
    ids = np.zeros((len(names), seq), np.int64)
    mask = np.zeros_like(ids)
    for row, name in enumerate(names):
        tokens = [101, *SENTENCES[name], 102]
        assert len(tokens) <= seq, f"{name} has {len(tokens)} tokens, more than {seq}"
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def write_set(folder, index, inputs, outputs):
    d = os.path.join(folder, f"test_data_set_{index}")
    os.makedirs(d)
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for j, (name, value) in enumerate(tensors):
            with open(os.path.join(d, f"{kind}_{j}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, name).SerializeToString())


def check_against_onnxruntime(name, model, cases):
    """Runs every case (a dict of feeds) in onnxruntime, then in octet at each of LEVELS on
    one session; fails unless every output is within BOUND of onnxruntime's scale.
    Returns octet's outputs at the default level, per case, for model-specific checks."""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    input_names = [i.name for i in sess.get_inputs()]
    output_names = [o.name for o in sess.get_outputs()]
    folder = os.path.join(TMP.name, name)
    expected = []
    for i, feeds in enumerate(cases):
        outs = sess.run(None, feeds)
        expected.append(outs)
        write_set(folder, i, [(n, feeds[n]) for n in input_names], list(zip(output_names, outs)))
    atol = BOUND * min(float(np.abs(o).max()) for outs in expected for o in outs)
    results = {}
    for level in LEVELS:
        out_dir = os.path.join(TMP.name, f"{name}_out_level{level}")
        code, out, err = run_octet(args.octet, "run", model, "--test-data", folder, "--out", out_dir, "--level", level,
                                   "--rtol", "0", "--atol", atol, "--json", timeout=300)
        assert code == 0, f"level {level}: exit {code}: {err.strip()[-1000:]} {out[-2000:]}"
        report = json.loads(out)
        assert report["comparison"]["sets"] == len(cases), report["comparison"]
        worst = []
        for i, outs in enumerate(expected):
            for oname, want in zip(output_names, outs):
                got = np.load(os.path.join(out_dir, f"test_data_set_{i}", f"{oname}.npy"))
                assert got.shape == want.shape, f"case {i} {oname}: shape {got.shape} vs {want.shape}"
                rel = float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())
                worst.append(rel)
                assert rel <= BOUND, f"level {level}, case {i} {oname}: max error {rel:.2e} of the output scale"
        print(f"  {name} level {level}: {len(cases)} cases, max error {max(worst):.2e} of the output scale")
        results[level] = [np.load(os.path.join(out_dir, f"test_data_set_{i}", f"{output_names[0]}.npy"))
                          for i in range(len(cases))]
    return results[LEVELS[0]]


def check_specialized(name, model, dims, case):
    """The graph `octet bench` runs: optimized with every dim fixed, so what depends on
    them folds. Optimizes at `dims` and runs test-data set `case` (written by
    check_against_onnxruntime, of those dims) within the same bound."""
    folder = os.path.join(TMP.name, name, f"test_data_set_{case}")
    scale = float(np.abs(numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "output_0.pb")))).max())
    specialized = os.path.join(TMP.name, f"{name}_specialized.onnx")
    dim_args = [a for d, v in dims.items() for a in ("--dim", f"{d}={v}")]
    code, out, err = run_octet(args.octet, "optimize", model, "-o", specialized, *dim_args, timeout=300)
    assert code == 0, f"optimize: exit {code}: {err.strip()[-1000:]}"
    code, out, err = run_octet(args.octet, "run", specialized, "--test-data", folder, "--rtol", "0", "--atol",
                               BOUND * scale, "--json", timeout=300)
    assert code == 0, f"specialized run: exit {code}: {err.strip()[-1000:]} {out[-2000:]}"
    worst = max(o["reference"]["max_abs_error"] for r in json.loads(out)["runs"] for o in r["outputs"])
    print(f"  {name} specialized to {dims}: max error {worst / scale:.2e} of the output scale")


def check_minilm_l6_int8():
    """all-MiniLM-L6-v2 as exported by torch 2.11's dynamo exporter with int8 weights
    (Cast+Mul dequantization): its attention mask goes through GatherND, its softmax
    through IsNaN/Where."""
    model = real_models.path("minilm_l6_int8")
    cases = [
        bert_batch(["fox"], 12),                  # batch 1, no padding
        bert_batch(["fox", "octet"], 20),         # batch 2, the first row padded
        bert_batch(["embedding", "hello"], 32),   # batch 2, the second row mostly padding
        bert_batch(["zen"], 128),                 # batch 1, a full 128-token window
    ]
    outs = check_against_onnxruntime("minilm_l6_int8", model, cases)
    # Padding must not leak into real tokens: "fox" alone and "fox" padded in a batch of
    # two give the same hidden states on its 12 tokens.
    alone, padded = outs[0][0], outs[1][0, :12]
    diff = float(np.abs(alone - padded).max() / np.abs(alone).max())
    assert diff <= BOUND, f"padding changes real tokens' states by {diff:.2e} of the scale"
    check_specialized("minilm_l6_int8", model, {"batch": 2, "sequence": 32}, 2)


t.check("minilm_l6_int8 (torch dynamo export, int8 weights) matches onnxruntime", check_minilm_l6_int8)
t.finish()
