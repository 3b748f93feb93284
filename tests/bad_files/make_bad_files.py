#!/usr/bin/env python3
"""Generate malformed / hostile ONNX inputs for octet's error-handling tests.

Run with the pyenv/pip ``python3`` (needs pip ``onnx`` + ``numpy``):

    python3 tests/bad_files/make_bad_files.py [OUT_DIR]

OUT_DIR defaults to ``tests/bad_files/generated``.  Every case is built from
fixed data, so the bytes are reproducible for a given onnx version, and
re-running first removes the files this script owns (nothing else).  See
``tests/bad_files/README.md`` for the list of cases and the error octet is
expected to report for each.

With ``--verify`` the script also loads every case with onnx / onnxruntime
and prints what those tools say (informative only; never fails).
"""

import os
import struct
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 4321

# Every path (relative to OUT_DIR) this script writes; removed before writing.
OWNED = [
    "truncated.onnx",
    "not_onnx.onnx",
    "not_onnx_png.onnx",
    "empty.onnx",
    "no_graph.onnx",
    "missing_external/model.onnx",
    "escaping_external/model.onnx",
    "escaping_external/model_abs.onnx",
    "outside.bin",
    "external_out_of_range/model.onnx",
    "external_out_of_range/weights.bin",
    "wrong_size.onnx",
    "bad_dtype.onnx",
]


def _mlp(name="bad_files_mlp", inline=True):
    """A valid 2-layer float MLP: x[batch,16] -> y[batch,8] (4 initializers)."""
    rng = np.random.default_rng(SEED)
    arrays = {
        "fc1.weight": rng.standard_normal((16, 32)).astype(np.float32),
        "fc1.bias": rng.standard_normal((32,)).astype(np.float32),
        "fc2.weight": rng.standard_normal((32, 8)).astype(np.float32),
        "fc2.bias": rng.standard_normal((8,)).astype(np.float32),
    }
    inits = [numpy_helper.from_array(a, n) for n, a in arrays.items()]
    nodes = [
        helper.make_node("MatMul", ["x", "fc1.weight"], ["h0"], name="MatMul_0"),
        helper.make_node("Add", ["h0", "fc1.bias"], ["h1"], name="Add_0"),
        helper.make_node("Relu", ["h1"], ["h2"], name="Relu_0"),
        helper.make_node("MatMul", ["h2", "fc2.weight"], ["h3"], name="MatMul_1"),
        helper.make_node("Add", ["h3", "fc2.bias"], ["y"], name="Add_1"),
    ]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="octet-tests",
                              opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model, arrays


def _single_init_model(name, init):
    """y = x + init, with x/y float [16]; ``init`` is used as given."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", init.name], ["y"], name="Add_0")], name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])],
        initializer=[init])
    return helper.make_model(graph, producer_name="octet-tests",
                             opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


def _set_external(tensor, location, offset, length):
    """Point ``tensor`` at external data without onnx validating the path."""
    tensor.ClearField("raw_data")
    tensor.ClearField("float_data")
    del tensor.external_data[:]
    tensor.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)),
                 ("length", str(length))):
        e = tensor.external_data.add()
        e.key, e.value = k, v


def _write(out_dir, rel, data):
    path = os.path.join(out_dir, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, onnx.ModelProto):
        # SerializeToString, not onnx.save: onnx.save would try to resolve /
        # validate external data locations, which is exactly what we break.
        data = data.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    print(f"wrote {path} ({len(data)} bytes)")


def _png_1x1():
    """A real, minimal 1x1 RGB PNG (deterministic bytes)."""
    def chunk(kind, payload):
        return (struct.pack(">I", len(payload)) + kind + payload
                + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00", 9)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat)
            + chunk(b"IEND", b""))


def make_all(out_dir):
    for rel in OWNED:
        p = os.path.join(out_dir, rel)
        if os.path.lexists(p):
            os.remove(p)

    # 1. truncated: a valid model with inline weights, cut in half
    model, _ = _mlp()
    blob = model.SerializeToString()
    _write(out_dir, "truncated.onnx", blob[: len(blob) // 2])

    # 2. not ONNX at all: a text file, and a real PNG renamed to .onnx
    _write(out_dir, "not_onnx.onnx",
           b"This is not an ONNX model.\nIt is a plain text file.\n")
    _write(out_dir, "not_onnx_png.onnx", _png_1x1())

    # 3. empty file (0 bytes) -- parses as an empty ModelProto in protobuf!
    _write(out_dir, "empty.onnx", b"")

    # 4. protobuf-valid but not a usable model: ir_version 8, opset, no graph
    ng = onnx.ModelProto()
    ng.ir_version = 8
    ng.producer_name = "octet-tests"
    ng.opset_import.add().version = 17
    _write(out_dir, "no_graph.onnx", ng)

    # 5. external data file missing
    model, arrays = _mlp("missing_external")
    off = 0
    for t in model.graph.initializer:
        n = arrays[t.name].nbytes
        _set_external(t, "weights.bin", off, n)
        off += n
    _write(out_dir, "missing_external/model.onnx", model)   # no weights.bin

    # 6. external data escaping the model directory
    w = np.arange(16, dtype=np.float32)
    # the file really exists (OUT_DIR/outside.bin), so a loader that does not
    # check the path would *succeed*; the test must see a rejection instead
    _write(out_dir, "outside.bin", w.tobytes())
    t = numpy_helper.from_array(w, "bias")
    _set_external(t, "../outside.bin", 0, w.nbytes)
    _write(out_dir, "escaping_external/model.onnx",
           _single_init_model("escaping_external_relative", t))
    t = numpy_helper.from_array(w, "bias")
    _set_external(t, "/etc/passwd", 0, w.nbytes)
    _write(out_dir, "escaping_external/model_abs.onnx",
           _single_init_model("escaping_external_absolute", t))

    # 7. external data: offset+length past the end of an existing file
    t = numpy_helper.from_array(w, "bias")
    _set_external(t, "weights.bin", 32, w.nbytes)          # file has 64 bytes
    _write(out_dir, "external_out_of_range/weights.bin", w.tobytes())
    _write(out_dir, "external_out_of_range/model.onnx",
           _single_init_model("external_out_of_range", t))

    # 8. raw_data shorter than dims require: dims [16] float = 64 bytes, 40 given
    t = numpy_helper.from_array(w, "bias")
    t.raw_data = w.tobytes()[:40]                          # edit after building
    _write(out_dir, "wrong_size.onnx", _single_init_model("wrong_size", t))

    # 9. unknown element type
    t = numpy_helper.from_array(w, "bias")
    t.data_type = 999
    _write(out_dir, "bad_dtype.onnx", _single_init_model("bad_dtype", t))


def verify(out_dir):
    """Print what onnx and onnxruntime make of each case (informative)."""
    try:
        import onnxruntime as ort
    except ImportError:  # pragma: no cover
        ort = None
    for rel in OWNED:
        if not rel.endswith(".onnx"):
            continue
        path = os.path.join(out_dir, rel)
        res = []
        try:
            onnx.checker.check_model(path, full_check=True)
            res.append("onnx.checker: OK")
        except Exception as e:  # noqa: BLE001
            res.append(f"onnx.checker: {type(e).__name__}: "
                       f"{str(e).splitlines()[0][:110] if str(e) else ''}")
        if ort is not None:
            try:
                ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                res.append("onnxruntime: loaded OK")
            except Exception as e:  # noqa: BLE001
                res.append(f"onnxruntime: {str(e).splitlines()[0][:140]}")
        print(rel)
        for r in res:
            print("   ", r)


def main(argv):
    args = [a for a in argv[1:] if a != "--verify"]
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = args[0] if args else os.path.join(here, "generated")
    os.makedirs(out_dir, exist_ok=True)
    make_all(out_dir)
    if "--verify" in argv:
        verify(out_dir)


if __name__ == "__main__":
    main(sys.argv)
