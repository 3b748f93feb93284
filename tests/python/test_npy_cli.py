"""octet's .npy/.npz reader and writer against numpy itself.

For every dtype octet reads, arrays (0-d, empty, ordinary) saved by numpy go through an
Identity model with `octet run --input x=FILE --out DIR`; numpy must load back the same
dtype, shape and bits. Also: header versions 2.0 and 3.0, np.savez/np.savez_compressed
archives, bfloat16 through ml_dtypes, and --out FILE.npz read by np.load."""
import os
import tempfile

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper

from harness import Tally, parse_args, run_octet

args = parse_args()
t = Tally("npy")
TMP = tempfile.TemporaryDirectory(prefix="octet_npy_test_")

DTYPES = {
    np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16,
    np.int64: TensorProto.INT64, np.int32: TensorProto.INT32, np.int16: TensorProto.INT16,
    np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.uint16: TensorProto.UINT16,
    np.uint32: TensorProto.UINT32, np.uint64: TensorProto.UINT64, np.bool_: TensorProto.BOOL,
}
SHAPES = [(), (0,), (2, 3), (0, 3, 2), (5,)]


def identity_model(elem_type, rank):
    path = os.path.join(TMP.name, f"identity_{elem_type}_{rank}.onnx")
    if not os.path.exists(path):
        dims = [f"d{i}" for i in range(rank)]
        graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity",
                                  [helper.make_tensor_value_info("x", elem_type, dims)],
                                  [helper.make_tensor_value_info("y", elem_type, dims)])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def sample(dtype, shape, rng):
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    if a.size >= 3:
        a.flat[0], a.flat[1], a.flat[2] = np.inf, -np.inf, np.nan
    return a


def run_identity(elem_type, rank, input_path, out):
    code, _, err = run_octet(args.octet, "run", identity_model(elem_type, rank), "--input", f"x={input_path}",
                             "--out", out)
    assert code == 0, f"exit {code}: {err.strip()}"


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, f"{b.dtype}{b.shape}, expected {a.dtype}{a.shape}"
    assert a.tobytes() == b.tobytes(), "contents differ"


def check_dtype(dtype, elem_type):
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        a = sample(dtype, shape, rng)
        folder = os.path.join(TMP.name, f"{np.dtype(dtype).name}_{len(shape)}_{a.size}")
        os.makedirs(folder, exist_ok=True)
        np.save(os.path.join(folder, "in.npy"), a)
        run_identity(elem_type, len(shape), os.path.join(folder, "in.npy"), os.path.join(folder, "out"))
        b = np.load(os.path.join(folder, "out", "y.npy"))
        same_bits(a, b)
        # octet's header is numpy's, byte for byte.
        assert open(os.path.join(folder, "out", "y.npy"), "rb").read() == open(os.path.join(folder, "in.npy"), "rb").read()


for dtype, elem_type in DTYPES.items():
    t.check(f"round trip {np.dtype(dtype).name}", check_dtype, dtype, elem_type)


def check_header_versions():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for version in ((1, 0), (2, 0), (3, 0)):
        p = os.path.join(TMP.name, f"v{version[0]}.npy")
        with open(p, "wb") as f:
            np.lib.format.write_array(f, a, version=version)
        run_identity(TensorProto.FLOAT, 2, p, os.path.join(TMP.name, f"v{version[0]}_out"))
        same_bits(a, np.load(os.path.join(TMP.name, f"v{version[0]}_out", "y.npy")))


def check_long_header():
    """A rank-8 array with huge dims is fine; numpy switches to version 2.0 only past 64 KiB headers."""
    a = np.zeros((1,) * 8 + (0,), np.int8)
    p = os.path.join(TMP.name, "rank9.npy")
    np.save(p, a)
    run_identity(TensorProto.INT8, 9, p, os.path.join(TMP.name, "rank9_out"))
    same_bits(a, np.load(os.path.join(TMP.name, "rank9_out", "y.npy")))


def check_bfloat16():
    a = np.array([[1.5, -2.0, 3.25], [0.0, np.inf, -0.5]], dtype=ml_dtypes.bfloat16)
    p = os.path.join(TMP.name, "bf16.npy")
    np.save(p, a)  # written as '<V2'
    run_identity(TensorProto.BFLOAT16, 2, p, os.path.join(TMP.name, "bf16_out"))
    b = np.load(os.path.join(TMP.name, "bf16_out", "y.npy")).view(ml_dtypes.bfloat16)
    same_bits(a, b)


def check_npz():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    for saver in (np.savez, np.savez_compressed):
        p = os.path.join(TMP.name, f"{saver.__name__}.npz")
        saver(p, x=x)
        out = os.path.join(TMP.name, f"{saver.__name__}_out.npz")
        code, _, err = run_octet(args.octet, "run", identity_model(TensorProto.FLOAT, 2), "--input", p, "--out", out)
        assert code == 0, err
        with np.load(out) as z:
            assert list(z.keys()) == ["y"], list(z.keys())
            same_bits(x, z["y"])
    # NAME=FILE picks the only array whatever it is called; several arrays need the name.
    p = os.path.join(TMP.name, "other.npz")
    np.savez(p, whatever=x)
    run_identity(TensorProto.FLOAT, 2, p, os.path.join(TMP.name, "other_out"))
    np.savez(os.path.join(TMP.name, "two.npz"), a=x, b=x)
    code, _, err = run_octet(args.octet, "run", identity_model(TensorProto.FLOAT, 2), "--input",
                             "x=" + os.path.join(TMP.name, "two.npz"))
    assert code == 1 and "no array named 'x'" in err and "a, b" in err, err


def check_corrupt_npz():
    p = os.path.join(TMP.name, "bad.npz")
    np.savez(p, x=np.ones((3,), np.float32))
    data = open(p, "rb").read()
    for cut in (10, len(data) // 2, len(data) - 3):
        with open(p, "wb") as f:
            f.write(data[:cut])
        code, _, err = run_octet(args.octet, "run", identity_model(TensorProto.FLOAT, 1), "--input", p)
        assert code == 1 and "bad.npz" in err and len(err.strip().splitlines()) == 1, (cut, err)


t.check("header versions 1.0, 2.0, 3.0", check_header_versions)
t.check("rank-9 empty array", check_long_header)
t.check("bfloat16 via ml_dtypes ('<V2')", check_bfloat16)
t.check("npz: savez, savez_compressed, --out .npz", check_npz)
t.check("npz: truncated archives", check_corrupt_npz)
t.finish()
