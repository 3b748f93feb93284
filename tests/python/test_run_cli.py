"""`octet run` against onnxruntime and torch on the fixture models, and its error handling.

(a) For each fixture, three data sets at different (batch, seq) bindings with random
    inputs (ids within the vocabulary, masks padded at the end) and onnxruntime's outputs
    (no graph optimizations, one thread) go into a temporary test-data folder; `octet run
    --test-data` must run them all on one session and match at rtol 1e-4 / atol 1e-5. The
    committed torch reference data must match the same way. The measured errors are
    printed (OCTET_TEST_TRACE not needed).
(b) --random with --dim and --out writes .npy files numpy loads with the right shapes.
(c) User errors exit 1 with one line on stderr that names the problem.
(d) --json parses and carries stats, timings and comparisons."""
import json
import os
import tempfile
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from harness import Tally, parse_args, run_octet

args = parse_args()
FIXTURES = os.path.join(args.source_dir, "tests/models/fixtures")
t = Tally("run")
TMP = tempfile.TemporaryDirectory(prefix="octet_run_test_")
VOCAB = 1000

# (model, bindings of the three data sets, committed torch data folder)
SEQ_BINDINGS = [(1, 7), (2, 16), (3, 33)]
MODELS = {
    "bert_tiny.onnx": (SEQ_BINDINGS, "bert_tiny_data"),
    "bert_tiny_inferred.onnx": (SEQ_BINDINGS, "bert_tiny_data"),
    "gpt2_tiny.onnx": (SEQ_BINDINGS, "gpt2_tiny_data"),
    "gpt2_tiny_inferred.onnx": (SEQ_BINDINGS, "gpt2_tiny_data"),
    "vit_tiny.onnx": ([(1,), (2,), (3,)], "vit_tiny_data"),
}


def tmp(*parts):
    """A path under the scratch folder; its parent folder exists."""
    path = os.path.join(TMP.name, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def tmpdir(*parts):
    path = os.path.join(TMP.name, *parts)
    os.makedirs(path, exist_ok=True)
    return path


def make_inputs(model, binding, rng):
    """Inputs a real user would feed: ids in the vocabulary, a mask whose rows end in
    padding of different lengths, two token type segments, N(0,1) pixels."""
    feeds = {}
    for v in model.graph.input:
        name = v.name
        if name == "pixel_values":
            feeds[name] = rng.standard_normal((binding[0], 3, 224, 224)).astype(np.float32)
            continue
        batch, seq = binding
        if name == "input_ids":
            feeds[name] = rng.integers(0, VOCAB, size=(batch, seq)).astype(np.int64)
        elif name == "attention_mask":
            mask = np.ones((batch, seq), np.int64)
            for row in range(1, batch):  # row r ends in r*seq/4 padding tokens
                mask[row, seq - row * (seq // 4):] = 0
            feeds[name] = mask
        elif name == "token_type_ids":
            types = np.zeros((batch, seq), np.int64)
            types[:, seq // 2:] = 1
            feeds[name] = types
        else:
            raise AssertionError(f"fixture input {name} has no generator")
    return feeds


def ort_session(path):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def write_data_set(folder, inputs, outputs):
    os.makedirs(folder, exist_ok=True)
    for i, (name, arr) in enumerate(inputs.items()):
        onnx.save_tensor(numpy_helper.from_array(arr, name), os.path.join(folder, f"input_{i}.pb"))
    for i, (name, arr) in enumerate(outputs.items()):
        onnx.save_tensor(numpy_helper.from_array(arr, name), os.path.join(folder, f"output_{i}.pb"))


def run_test_data(model_path, data_dir, *extra):
    code, out, err = run_octet(args.octet, "run", model_path, "--test-data", data_dir, "--rtol", "1e-4",
                               "--atol", "1e-5", "--json", *extra, timeout=600)
    report = json.loads(out) if out.strip() else None
    return code, report, err


BERT = os.path.join(FIXTURES, "bert_tiny.onnx")


def expect_error(argv, *needles):
    code, out, err = run_octet(args.octet, "run", *argv)
    assert code == 1, f"exit {code}, stderr: {err.strip()}"
    lines = [l for l in err.strip().splitlines() if l]
    assert len(lines) == 1, f"expected one error line, got: {err!r}"
    for needle in needles:
        assert needle in lines[0], f"error lacks '{needle}': {lines[0]}"
    return lines[0]


def errors_line(report):
    parts = []
    for run in report["runs"]:
        for o in run["outputs"]:
            r = o["reference"]
            parts.append(f"{run['name']}[{','.join(f'{k}={v}' for k, v in run['bindings'].items())}] "
                         f"{o['name']}: abs {r['max_abs_error']:.2e} rel {r['max_rel_error']:.2e}")
    return "; ".join(parts)


def max_abs(report):
    return max(o["reference"]["max_abs_error"] for run in report["runs"] for o in run["outputs"])


def check_against_ort(name, bindings):
    path = os.path.join(FIXTURES, name)
    model = onnx.load(path)
    sess = ort_session(path)
    out_names = [o.name for o in sess.get_outputs()]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    data = tmpdir("ort_" + name.replace(".onnx", ""))
    for k, binding in enumerate(bindings):
        feeds = make_inputs(model, binding, rng)
        expected = dict(zip(out_names, sess.run(out_names, feeds)))
        write_data_set(os.path.join(data, f"test_data_set_{k}"), feeds, expected)
    code, report, err = run_test_data(path, data)
    assert report is not None, f"no report; exit {code}: {err.strip()}"
    assert report["comparison"]["sets"] == len(bindings), report["comparison"]
    assert report["comparison"]["outputs_compared"] == len(bindings) * len(out_names), report["comparison"]
    seen = [run["bindings"] for run in report["runs"]]
    assert len({json.dumps(b, sort_keys=True) for b in seen}) == len(bindings), f"bindings not distinct: {seen}"
    print(f"  {name} vs onnxruntime: max abs error {max_abs(report):.3g}; {errors_line(report)}")
    assert code == 0 and report["comparison"]["ok"], f"exit {code}: {err.strip()}; {errors_line(report)}"


def check_against_torch(name, data_folder):
    path = os.path.join(FIXTURES, name)
    code, report, err = run_test_data(path, os.path.join(FIXTURES, data_folder))
    assert report is not None, f"no report; exit {code}: {err.strip()}"
    print(f"  {name} vs torch ({data_folder}): max abs error {max_abs(report):.3g}; {errors_line(report)}")
    assert code == 0 and report["comparison"]["ok"], f"exit {code}: {err.strip()}; {errors_line(report)}"


for name, (bindings, torch_data) in MODELS.items():
    t.check(f"{name}: 3 data sets vs onnxruntime", check_against_ort, name, bindings)
    t.check(f"{name}: torch reference data", check_against_torch, name, torch_data)


def check_other_fixture(name, bindings):
    """Fixtures with anonymous dims, external data and int4 weights, on float N(0,1) inputs."""
    path = os.path.join(FIXTURES, name)
    model = onnx.load(path, load_external_data=False)
    sess = ort_session(path)
    out_names = [o.name for o in sess.get_outputs()]
    inputs = [v for v in model.graph.input if v.name not in {i.name for i in model.graph.initializer}]
    rng = np.random.default_rng(1)
    data = tmpdir("other_" + name.replace("/", "_").replace(".onnx", ""))
    for k, binding in enumerate(bindings):
        feeds = {}
        for v in inputs:
            dims = [d.dim_value if d.HasField("dim_value") else binding.get(d.dim_param, binding["?"])
                    for d in v.type.tensor_type.shape.dim]
            feeds[v.name] = rng.standard_normal(dims).astype(np.float32)
        write_data_set(os.path.join(data, f"test_data_set_{k}"), feeds,
                       dict(zip(out_names, sess.run(out_names, feeds))))
    code, report, err = run_test_data(path, data)
    assert report is not None, f"no report; exit {code}: {err.strip()}"
    print(f"  {name} vs onnxruntime: max abs error {max_abs(report):.3g}")
    assert code == 0 and report["comparison"]["ok"], f"exit {code}: {err.strip()}; {errors_line(report)}"


OTHER_FIXTURES = {
    "unk_constantofshape.onnx": [{"seq": 1, "?": 0}, {"seq": 16, "?": 0}],
    "unk_constantofshape_anon.onnx": [{"?": 1}, {"?": 6}],
    "external_data/model.onnx": [{"batch": 1, "?": 0}, {"batch": 5, "?": 0}],
    "opset21_int4.onnx": [{"batch": 1, "seq": 8, "?": 0}, {"batch": 3, "seq": 5, "?": 0}],
}
for name, bindings in OTHER_FIXTURES.items():
    t.check(f"{name}: data sets vs onnxruntime", check_other_fixture, name, bindings)


# ---- (b) --random, --dim, --out ----

def check_random_out(name, dims, expected_shapes):
    out_dir = tmp("random_" + name.replace(".onnx", ""), "out")
    dim_args = [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]
    code, out, err = run_octet(args.octet, "run", os.path.join(FIXTURES, name), "--random", *dim_args,
                               "--seed", "5", "--out", out_dir, "--json")
    assert code == 0, f"exit {code}: {err.strip()}"
    report = json.loads(out)
    for out_name, shape in expected_shapes.items():
        arr = np.load(os.path.join(out_dir, f"{out_name}.npy"))
        assert arr.shape == shape and arr.dtype == np.float32, f"{out_name}: {arr.dtype}{arr.shape}, want {shape}"
        assert np.isfinite(arr).all(), f"{out_name} has non-finite values"
        o = next(o for o in report["runs"][0]["outputs"] if o["name"] == out_name)
        assert o["file"] == os.path.join(out_dir, f"{out_name}.npy"), o
        assert abs(o["stats"]["mean"] - float(arr.astype(np.float64).mean())) < 1e-5, (o["stats"], arr.mean())
    return report


def input_stats(report):
    return {i["name"]: i for i in report["runs"][0]["inputs"]}


def check_random_bert():
    report = check_random_out("bert_tiny.onnx", {"batch": 2, "seq": 16},
                              {"last_hidden_state": (2, 16, 64), "logits": (2, 2)})
    ins = input_stats(report)
    ids = ins["input_ids"]
    assert ids["shape"] == [2, 16] and 0 <= ids["stats"]["min"] and ids["stats"]["max"] < VOCAB, ids
    assert "[0, 1000)" in ids["source"], ids["source"]
    assert ins["attention_mask"]["stats"]["min"] == 1 == ins["attention_mask"]["stats"]["max"], ins["attention_mask"]
    assert ins["token_type_ids"]["stats"]["max"] == 0, ins["token_type_ids"]
    assert report["runs"][0]["bindings"] == {"batch": 2, "seq": 16}, report["runs"][0]["bindings"]


def check_random_gpt2():
    report = check_random_out("gpt2_tiny.onnx", {"batch": 1, "seq": 9}, {"logits": (1, 9, 1000)})
    assert input_stats(report)["input_ids"]["stats"]["max"] < VOCAB


def check_random_vit():
    report = check_random_out("vit_tiny.onnx", {"batch": 2}, {"logits": (2, 10)})
    px = input_stats(report)["pixel_values"]
    assert abs(px["stats"]["mean"]) < 0.05 and px["stats"]["min"] < -3 < 3 < px["stats"]["max"], px


def check_seed():
    base = [os.path.join(FIXTURES, "gpt2_tiny.onnx"), "--random", "--dim", "batch=1", "--dim", "seq=5"]
    outs = []
    for seed, folder in (("1", "s1"), ("1", "s1b"), ("2", "s2")):
        d = tmpdir("seed", folder)
        code, _, err = run_octet(args.octet, "run", *base, "--seed", seed, "--out", d)
        assert code == 0, err
        outs.append(np.load(os.path.join(d, "logits.npy")))
    assert np.array_equal(outs[0], outs[1]), "same seed gave different outputs"
    assert not np.array_equal(outs[0], outs[2]), "different seeds gave the same outputs"


def check_inputs_from_files_match_ort():
    """--input from .npy, .pb and .npz gives onnxruntime's result; --out FILE.npz works."""
    path = os.path.join(FIXTURES, "bert_tiny.onnx")
    feeds = make_inputs(onnx.load(path), (2, 11), np.random.default_rng(3))
    sess = ort_session(path)
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    np.save(tmp("files", "ids.npy"), feeds["input_ids"])
    onnx.save_tensor(numpy_helper.from_array(feeds["attention_mask"]), tmp("files", "mask.pb"))
    np.savez_compressed(tmp("files", "types.npz"), token_type_ids=feeds["token_type_ids"])
    code, out, err = run_octet(args.octet, "run", path, "--input", "input_ids=" + tmp("files", "ids.npy"),
                               "--input", "attention_mask=" + tmp("files", "mask.pb"),
                               "--input", tmp("files", "types.npz"), "--out", tmp("files", "out.npz"))
    assert code == 0, err
    got = np.load(tmp("files", "out.npz"))
    for name, arr in want.items():
        np.testing.assert_allclose(got[name], arr, rtol=1e-4, atol=1e-5)
    for needle in ("input_ids", "ids.npy", "last_hidden_state", "float32[2,11,64]", "ran in", "nan 0"):
        assert needle in out, f"'{needle}' missing from the text report:\n{out}"
    # The whole input set as one archive.
    np.savez(tmp("files", "all.npz"), **feeds)
    code, out, err = run_octet(args.octet, "run", path, "--input", tmp("files", "all.npz"), "--json")
    assert code == 0, err
    logits = next(o for o in json.loads(out)["runs"][0]["outputs"] if o["name"] == "logits")
    assert abs(logits["stats"]["mean"] - float(want["logits"].mean())) < 1e-5


def check_unnamed_dims():
    """Dims the model leaves anonymous are set per input axis."""
    path = os.path.join(FIXTURES, "unk_constantofshape_anon.onnx")
    expect_error([path, "--random"], "input 'x'", "dim 0 has no name", "--dim x:0=N")
    out_dir = tmpdir("anon_out")
    code, _, err = run_octet(args.octet, "run", path, "--random", "--dim", "x:0=2", "--dim", "x:1=5", "--out", out_dir)
    assert code == 0, err
    assert np.load(os.path.join(out_dir, "y.npy")).shape == (2, 5)
    expect_error([path, "--random", "--dim", "x:2=5"], "--dim x:2=5", "no axis 2")
    expect_error([os.path.join(FIXTURES, "unk_constantofshape.onnx"), "--random", "--dim", "x:0=2"],
                 "fixed size of 1")


t.check("--random --dim --out: bert", check_random_bert)
t.check("--random --dim --out: gpt2", check_random_gpt2)
t.check("--random --dim --out: vit", check_random_vit)
t.check("--seed reproduces --random", check_seed)
t.check("--dim INPUT:AXIS=N for unnamed dims", check_unnamed_dims)
t.check("--input .npy/.pb/.npz, --out .npz vs onnxruntime", check_inputs_from_files_match_ort)


# ---- (c) errors: exit 1, one line naming the problem ----

def ids(shape=(1, 7), dtype=np.int64, name="ids.npy"):
    p = tmp("errors", name)
    np.save(p, np.ones(shape, dtype))
    return p


def error_cases():
    good = ids()
    np.save(tmp("errors", "mask8.npy"), np.ones((1, 8), np.int64))
    np.save(tmp("errors", "ids_f.npy"), np.asfortranarray(np.ones((3, 7), np.int64)))
    np.save(tmp("errors", "ids_be.npy"), np.ones((1, 7), ">i8"))
    with open(tmp("errors", "trunc.npy"), "wb") as f:
        f.write(open(good, "rb").read()[:-5])
    with open(tmp("errors", "junk.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\x20\x00{'descr': '<i8', 'shape': (1,7)}")
    return {
        "missing input": ([BERT, "--input", f"input_ids={good}"],
                          ["'attention_mask'", "'token_type_ids'", "not given", "--random"]),
        "wrong dtype .npy": ([BERT, "--input", f"input_ids={ids(dtype=np.float32, name='f.npy')}", "--random"],
                             ["input 'input_ids'", "f.npy", "float32[1,7]", "expects int64"]),
        "wrong rank": ([BERT, "--input", f"input_ids={ids(shape=(7,), name='r.npy')}", "--random"],
                       ["input 'input_ids'", "r.npy", "rank 1"]),
        "conflicting symbols": ([BERT, "--input", f"input_ids={good}", "--input",
                                 f"attention_mask={tmp('errors', 'mask8.npy')}", "--random"],
                                ["attention_mask", "mask8.npy", "'seq' is already 7"]),
        "conflicting --dim": ([BERT, "--input", f"input_ids={good}", "--dim", "seq=9", "--random"],
                              ["input 'input_ids'", "ids.npy", "is 7 but --dim seq=9"]),
        "unbound symbol with --random": ([BERT, "--random", "--dim", "batch=1"],
                                         ["input 'input_ids'", "'seq'", "--dim seq="]),
        "unknown --dim": ([BERT, "--random", "--dim", "sequence=4"], ["--dim sequence=4", "batch, seq"]),
        "corrupt .npy (truncated)": ([BERT, "--input", f"input_ids={tmp('errors', 'trunc.npy')}", "--random"],
                                     ["trunc.npy", "truncated data"]),
        "corrupt .npy (header)": ([BERT, "--input", f"input_ids={tmp('errors', 'junk.npy')}", "--random"],
                                  ["junk.npy", "malformed .npy header"]),
        "fortran order": ([BERT, "--input", f"input_ids={tmp('errors', 'ids_f.npy')}", "--random"],
                          ["ids_f.npy", "fortran_order"]),
        "big-endian": ([BERT, "--input", f"input_ids={tmp('errors', 'ids_be.npy')}", "--random"],
                       ["ids_be.npy", "big-endian"]),
        "missing file": ([BERT, "--input", f"input_ids={tmp('errors', 'nope.npy')}"], ["nope.npy", "no such file"]),
        "missing model": ([tmp("errors", "nope.onnx"), "--random"], ["nope.onnx"]),
        "unknown input name": ([BERT, "--input", f"input_idz={good}"], ["input_idz", "input_ids"]),
        "unnamed file, several inputs": ([BERT, "--input", good], ["NAME=FILE"]),
        "given twice": ([BERT, "--input", f"input_ids={good}", "--input", f"input_ids={good}"], ["twice"]),
        "test-data with --random": ([BERT, "--random", "--test-data", FIXTURES], ["--test-data"]),
        "test-data folder without sets": ([BERT, "--test-data", tmpdir("errors")], ["no test data sets"]),
        "unsupported ops (all listed on one line)": ([unsupported_model(), "--random"],
                                                     ["unsupported.onnx", "my.ops::Bar", "my.ops::Foo"]),
    }


def unsupported_model():
    from onnx import helper
    nodes = [helper.make_node("Foo", ["x"], ["y"], domain="my.ops"), helper.make_node("Bar", ["y"], ["z"], domain="my.ops")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [2])])
    path = tmp("errors", "unsupported.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.ops", 1)]), path)
    return path


def check_error(argv, needles):
    expect_error(argv, *needles)


for case, (argv, needles) in error_cases().items():
    t.check(f"error: {case}", check_error, argv, needles)


def check_refuses_to_overwrite_inputs():
    folder = tmpdir("overwrite")
    logits_input = os.path.join(folder, "logits.npy")  # named like the output 'logits'
    np.save(logits_input, np.ones((1, 7), np.int64))
    before = open(logits_input, "rb").read()
    expect_error([BERT, "--input", f"input_ids={logits_input}", "--random", "--out", folder],
                 "would overwrite", "logits.npy")
    assert open(logits_input, "rb").read() == before, "the input file was changed"
    assert not os.path.exists(os.path.join(folder, "last_hidden_state.npy")), "wrote outputs before refusing"


def check_mismatch_exits_1():
    folder = tmpdir("mismatch", "test_data_set_0")
    path = os.path.join(FIXTURES, "gpt2_tiny.onnx")
    feeds = make_inputs(onnx.load(path), (1, 5), np.random.default_rng(0))
    (logits,) = ort_session(path).run(None, feeds)
    logits[0, 3, 7] += 0.5
    write_data_set(folder, feeds, {"logits": logits})
    code, report, err = run_test_data(path, os.path.dirname(folder))
    assert code == 1, f"exit {code}"
    assert "1 of 1 compared outputs differ" in err and len(err.strip().splitlines()) == 1, err
    ref = report["runs"][0]["outputs"][0]["reference"]
    assert not ref["ok"] and ref["mismatched"] == 1 and ref["worst"]["index"] == [0, 3, 7], ref
    assert abs(ref["max_abs_error"] - 0.5) < 1e-3, ref
    code, out, err = run_octet(args.octet, "run", path, "--test-data", os.path.dirname(folder))
    assert code == 1 and "MISMATCH" in out and "[0,3,7]" in out, out


t.check("--out never overwrites an input file", check_refuses_to_overwrite_inputs)
t.check("--test-data mismatch: exit 1, worst element reported", check_mismatch_exits_1)


# ---- (d) --json ----

def check_json_and_help():
    code, out, err = run_octet(args.octet, "run", BERT, "--random", "--dim", "batch=1", "--dim", "seq=4", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert set(r) >= {"model", "nodes", "timing_ms", "runs", "warnings"}, list(r)
    run = r["runs"][0]
    assert run["time_ms"] > 0 and {o["name"] for o in run["outputs"]} == {"last_hidden_state", "logits"}
    for o in run["outputs"]:
        assert set(o["stats"]) == {"count", "min", "max", "mean", "nan", "inf"}, o["stats"]
    code, out, _ = run_octet(args.octet, "run", "--help")
    assert code == 0
    for needle in ("--test-data", "--random", "Gather", "mask", "token_type", "numpy.allclose", "--dim"):
        assert needle in out, f"--help lacks '{needle}'"


t.check("--json report and --help", check_json_and_help)
t.finish()
