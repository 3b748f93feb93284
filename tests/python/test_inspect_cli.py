"""`octet inspect` on real exporter output and on malformed files.

Every fixture must load with type inference reaching every value (no op left unknown),
give the graph outputs the symbolic shapes the exporter declared, and report MACs that
match a count made independently here from the ONNX graph with onnx's own shape
inference. Every bad file must give one line naming the file, exit code 1, no crash."""
import json
import os

import onnx
from onnx import shape_inference

from harness import Tally, parse_args, run_octet

args = parse_args()
SRC = args.source_dir
FIXTURES = os.path.join(SRC, "tests/models/fixtures")
BAD = os.path.join(SRC, "tests/bad_files/generated")
t = Tally("inspect")

MODELS = {
    "bert_tiny.onnx": {"batch": 1, "seq": 128},
    "bert_tiny_inferred.onnx": {"batch": 1, "seq": 128},
    "gpt2_tiny.onnx": {"batch": 1, "seq": 128},
    "gpt2_tiny_inferred.onnx": {"batch": 1, "seq": 128},
    "vit_tiny.onnx": {"batch": 1},
    "unk_constantofshape.onnx": {"seq": 16},
    "unk_constantofshape_anon.onnx": {},
    "external_data/model.onnx": {"batch": 4},
    "opset21_int4.onnx": {"batch": 1, "seq": 8},
}


def inspect_json(path, dims):
    dim_args = [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]
    code, out, err = run_octet(args.octet, "inspect", path, "--json", *dim_args)
    assert code == 0, f"exit {code}: {err.strip()}"
    return json.loads(out)


def independent_macs(path, dims):
    """MatMul/Gemm/Conv MACs from the shapes onnxruntime actually produces at `dims`:
    every operand and result is exposed as a graph output and observed in one run."""
    import numpy as np
    import onnxruntime as ort
    from onnx import helper

    model = onnx.load(path)
    typed = shape_inference.infer_shapes(model)
    elem = {v.name: v.type.tensor_type.elem_type
            for v in list(typed.graph.value_info) + list(typed.graph.input) + list(typed.graph.output)}
    wanted = []
    for n in model.graph.node:
        if n.op_type in ("MatMul", "Gemm", "Conv"):
            wanted += [x for x in (n.input[0], n.input[1], n.output[0]) if x]
    inits = {i.name: list(i.dims) for i in model.graph.initializer}
    existing = {o.name for o in model.graph.output}
    for name in dict.fromkeys(wanted):
        if name not in inits and name not in existing:
            model.graph.output.append(helper.make_tensor_value_info(name, elem.get(name, onnx.TensorProto.FLOAT), None))
    rng = np.random.default_rng(0)
    feeds = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        shape = [d.dim_value if d.HasField("dim_value") else dims.get(d.dim_param, 1)
                 for d in v.type.tensor_type.shape.dim]
        if v.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            feeds[v.name] = rng.integers(0, 2, size=shape).astype(np.int64)
        else:
            feeds[v.name] = rng.standard_normal(shape).astype(np.float32)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    shapes = dict(inits)
    shapes.update({n: list(a.shape) for n, a in zip(names, sess.run(names, feeds))})
    total = 0
    for n in model.graph.node:
        if n.op_type not in ("MatMul", "Gemm", "Conv"):
            continue
        numel = int(np.prod(shapes[n.output[0]]))
        a, w = shapes[n.input[0]], shapes[n.input[1]]
        if n.op_type == "Conv":
            total += numel * int(np.prod(w[1:]))
        else:
            trans_a = any(at.name == "transA" and at.i for at in n.attribute)
            total += numel * (a[0] if trans_a else a[-1])
    return total


def check_fixture(name, dims):
    path = os.path.join(FIXTURES, name)
    s = inspect_json(path, dims)
    assert not s["support"]["unsupported"], f"ops without inference: {s['support']['unsupported']}"
    assert not s["support"]["not_runnable"], f"ops without a kernel: {s['support']['not_runnable']}"
    declared = {o.name: o for o in onnx.load(path, load_external_data=False).graph.output}
    for o in s["outputs"]:
        assert o["shape"] is not None, f"output {o['name']} has unknown rank"
        want = [d.dim_value if d.HasField("dim_value") else d.dim_param
                for d in declared[o["name"]].type.tensor_type.shape.dim]
        for got, exp in zip(o["shape"], want):
            if isinstance(exp, int) and exp > 0:
                assert got == exp, f"output {o['name']}: {o['shape']} vs declared {want}"
            elif exp in ("batch", "seq"):
                assert got == exp, f"output {o['name']}: {o['shape']} vs declared {want}"
    macs = s["macs"]["total"]["value"]
    if dims.keys() >= symbols_of(s):  # every symbol bound: the count must be exact
        expected = independent_macs(path, dims)
        assert macs == expected, f"MACs {macs} != count from onnxruntime's shapes {expected}"


def symbols_of(summary):
    return {d for v in summary["inputs"] for d in (v["shape"] or []) if isinstance(d, str)}


for name, dims in MODELS.items():
    t.check(f"fixture {name}", check_fixture, name, dims)


def check_text_report():
    code, out, err = run_octet(args.octet, "inspect", os.path.join(FIXTURES, "bert_tiny.onnx"),
                               "--dim", "batch=1", "--dim", "seq=128")
    assert code == 0, err
    for needle in ("input_ids: int64[batch, seq]", "MatMul", "MACs at", "parameters:", "ai.onnx=17"):
        assert needle in out, f"'{needle}' missing from:\n{out}"


t.check("text report", check_text_report)

BAD_FILES = {
    "empty.onnx": "",
    "truncated.onnx": "",
    "not_onnx.onnx": "",
    "not_onnx_png.onnx": "",
    "no_graph.onnx": "",
    "wrong_size.onnx": "",
    "bad_dtype.onnx": "999",
    "missing_external/model.onnx": "",
    "escaping_external/model.onnx": "escapes",
    "escaping_external/model_abs.onnx": "",
    "external_out_of_range/model.onnx": "",
}


def check_bad(name, must_contain):
    path = os.path.join(BAD, name)
    code, out, err = run_octet(args.octet, "inspect", path)
    assert code == 1, f"exit code {code}, stderr: {err.strip()}"
    lines = [l for l in err.strip().splitlines() if l]
    assert len(lines) == 1, f"expected one error line, got: {err!r}"
    assert os.path.basename(name) in lines[0], f"error does not name the file: {lines[0]}"
    assert must_contain in lines[0], f"error lacks '{must_contain}': {lines[0]}"


for name, needle in BAD_FILES.items():
    t.check(f"bad file {name}", check_bad, name, needle)


def check_missing_file():
    code, _, err = run_octet(args.octet, "inspect", os.path.join(BAD, "does_not_exist.onnx"))
    assert code == 1 and "does_not_exist.onnx" in err, err


def check_bad_dim():
    code, _, err = run_octet(args.octet, "inspect", os.path.join(FIXTURES, "bert_tiny.onnx"), "--dim", "seq=abc")
    assert code == 1 and "--dim" in err, err


t.check("missing file", check_missing_file)
t.check("bad --dim", check_bad_dim)
t.finish()
