"""Models that are valid protobuf but hostile: shapes whose sizes overflow, and what every
command must do with them (issue 19).

Each model is built here with onnx.helper and run through every command that loads
models (inspect, check, run, optimize, quantize, bench). The rules:
- no crash: the process exits with a status, never a signal (SIGSEGV in the reference
  kernels' element copy, SIGFPE inside oneDNN were the old outcomes);
- a size that cannot exist is one line on stderr naming the node, exit 1 (check: 2 when
  it cannot even load, 0/1 otherwise).
Tests are named by what they guard."""
import os
import signal
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from harness import Tally, parse_args, run_octet

args = parse_args()
t = Tally("hostile_models")
TMP = tempfile.TemporaryDirectory(prefix="octet_hostile_")


def save(name, nodes, inputs, outputs, inits=(), opset=17, ir_version=8):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    path = os.path.join(TMP.name, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def no_signal(code, err):
    assert code >= 0, f"killed by {signal.Signals(-code).name}; stderr: {err.strip()[-300:]}"


def expect_clean_error(argv, *must_name):
    """Exit 1 with one 'octet: error:' line naming every string in `must_name`."""
    code, out, err = run_octet(args.octet, *argv, timeout=300)
    no_signal(code, err)
    assert code == 1, f"exit {code} (expected 1); stdout: {out.strip()[-300:]} stderr: {err.strip()[-300:]}"
    assert "octet: error:" in err, f"no error line: {err.strip()[-300:]}"
    assert "internal error" not in err, f"reported as an internal error: {err.strip()}"
    for s in must_name:
        assert s in err, f"error does not name {s!r}: {err.strip()}"
    return err


def expect_no_crash(argv):
    code, out, err = run_octet(args.octet, *argv, timeout=300)
    no_signal(code, err)
    assert "internal error" not in err, f"reported as an internal error: {err.strip()}"
    return code, out, err


def out_path(name):
    return os.path.join(TMP.name, name)


# ---------------------------------------------------------------- sizes (crashes)

# Tile of float32[1] by 2^61: 2^61 elements (below int64's limit) but 2^63 bytes, which
# used to wrap to a small buffer the reference kernel then wrote past (SIGSEGV).
tile = save("tile_bytes_overflow",
            [helper.make_node("Tile", ["x", "reps"], ["y"], name="big_tile")],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [ints("reps", [1 << 61])])
# ConstantOfShape [2^29, 2^29, 8] of float32: 2^61 elements, 2^63 bytes; a constant shape,
# so the optimizer's constant folding meets it first.
cos = save("constant_of_shape_bytes_overflow",
           [helper.make_node("ConstantOfShape", ["shape"], ["c"], name="big_fill",
                             value=numpy_helper.from_array(np.array([1.0], np.float32))),
            helper.make_node("Add", ["c", "x"], ["y"], name="add")],
           [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
           [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
           [ints("shape", [1 << 29, 1 << 29, 8])])
# Expand of int64[1] to [2^59]: 2^62 bytes... times 8 bits per byte overflowed size_t.
expand = save("expand_bytes_overflow",
              [helper.make_node("Expand", ["x", "shape"], ["y"], name="big_expand")],
              [helper.make_tensor_value_info("x", TensorProto.INT64, [1])],
              [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
              [ints("shape", [1 << 59])])
# An input dim fixed at 2^31: Shape -> ConstantOfShape folds to a [2^31, 2^31] constant.
fixed_dim = save("input_dim_2p31_folded",
                 [helper.make_node("Shape", ["x"], ["s"], name="shape_of_x"),
                  helper.make_node("ConstantOfShape", ["s"], ["c"], name="fill_like_x",
                                   value=numpy_helper.from_array(np.array([0.5], np.float32))),
                  helper.make_node("Add", ["c", "x"], ["y"], name="add")],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 31, 1 << 31])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
# Conv over an input dim of 2^62: used to reach oneDNN, which divided by an overflowed
# size at session creation (SIGFPE).
rng = np.random.default_rng(0)
conv = save("conv_input_dim_2p62",
            [helper.make_node("Conv", ["x", "w"], ["y"], name="huge_conv", kernel_shape=[3])],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 1 << 62])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(rng.standard_normal((4, 2, 3)).astype(np.float32), "w")])

def no_crash_or_names(argv, node):
    code, out, err = expect_no_crash(argv)
    if code != 0:
        assert node in err, f"error does not name {node!r}: {err.strip()}"


def calibration(name, x):
    d = tempfile.mkdtemp(dir=TMP.name, prefix=f"calib_{name}_")
    for i in range(2):
        np.savez(os.path.join(d, f"sample_{i}.npz"), x=x)
    return d


CALIBRATABLE = {"tile_bytes_overflow": calibration("tile", np.ones(1, np.float32)),
                "constant_of_shape_bytes_overflow": calibration("cos", np.ones(1, np.float32)),
                "expand_bytes_overflow": calibration("expand", np.ones(1, np.int64))}

SIZE_CASES = [(tile, "big_tile"), (cos, "big_fill"), (expand, "big_expand"), (fixed_dim, "fill_like_x"),
              (conv, "huge_conv")]

for path, node in SIZE_CASES:
    name = os.path.basename(path)[:-5]
    for cmd in (["run", path, "--random"], ["run", path, "--random", "--reference"],
                ["bench", path, "--iters", "1", "--warmup", "0"]):
        t.check(f"{name}: {cmd[0]}{' --reference' if '--reference' in cmd else ''} refuses with the node named",
                expect_clean_error, cmd, node)
    # Dynamic quantization need not run the model; when it fails, it names the node.
    t.check(f"{name}: quantize --mode dynamic does not crash, names the node if it fails", no_crash_or_names,
            ["quantize", path, "-o", out_path(name + "_q.onnx"), "--mode", "dynamic", "--force"], node)
    if name in CALIBRATABLE:  # static quantization runs the model on calibration samples
        t.check(f"{name}: quantize --calib refuses with the node named", expect_clean_error,
                ["quantize", path, "-o", out_path(name + "_qs.onnx"), "--calib", CALIBRATABLE[name], "--force"], node)
    # Loading alone needs no memory: inspect, check and optimize may succeed, but never crash.
    for cmd in (["inspect", path], ["check", path], ["optimize", path, "-o", out_path(name + "_opt.onnx"), "--force"]):
        t.check(f"{name}: {cmd[0]} does not crash", expect_no_crash, cmd)


# ---------------------------------------------------------------- files octet must not touch

def small_matmul(name="mlp"):
    w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    return save(name,
                [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                 helper.make_node("Add", ["h", "b"], ["y"], name="bias")],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w, b])


MLP = small_matmul()


def special_targets():
    """(label, path, check-unchanged) for each kind of path no command may replace."""
    import stat
    d = tempfile.mkdtemp(dir=TMP.name, prefix="targets_")
    out = []
    fifo = os.path.join(d, "pipe.onnx")
    os.mkfifo(fifo)
    out.append(("a FIFO", fifo, lambda: stat.S_ISFIFO(os.lstat(fifo).st_mode)))
    target = os.path.join(d, "real.onnx")
    with open(target, "w") as f:
        f.write("keep")
    link = os.path.join(d, "link.onnx")
    os.symlink(target, link)
    out.append(("a symbolic link", link, lambda: os.path.islink(link) and open(target).read() == "keep"))
    dangling = os.path.join(d, "dangling.onnx")
    os.symlink(os.path.join(d, "nowhere.onnx"), dangling)
    out.append(("a symbolic link", dangling,
                lambda: os.path.islink(dangling) and not os.path.exists(os.path.join(d, "nowhere.onnx"))))
    folder = os.path.join(d, "folder.onnx")
    os.mkdir(folder)
    out.append(("a folder", folder, lambda: os.path.isdir(folder) and not os.listdir(folder)))
    if os.geteuid() == 0:
        # A private twin of /dev/null: if the refusal were broken, only this node is lost.
        null = os.path.join(d, "null")
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        out.append(("a character device", null, lambda: stat.S_ISCHR(os.lstat(null).st_mode)))
    return d, out


def refuses_to_replace(argv, path, kind, unchanged, folder):
    before = sorted(os.listdir(folder))
    code, out, err = run_octet(args.octet, *argv, timeout=60)
    no_signal(code, err)
    assert code == 1, f"exit {code}; stderr: {err.strip()[-300:]}"
    assert f"{path}: is {kind}" in err, f"error does not say what {path} is: {err.strip()}"
    assert unchanged(), f"{path} was changed"
    assert sorted(os.listdir(folder)) == before, f"left behind: {set(os.listdir(folder)) - set(before)}"


folder, targets = special_targets()
for kind, path, unchanged in targets:
    label = os.path.basename(path)
    commands = {
        "optimize": ["optimize", MLP, "-o", path, "--force"],
        "quantize": ["quantize", MLP, "-o", path, "--mode", "dynamic", "--force"],
        "quantize --report": ["quantize", MLP, "-o", out_path("q_ok.onnx"), "--mode", "dynamic", "--force",
                              "--report", path],
        "legalize": ["legalize", MLP, "-o", path, "--force"],
        "run --out": ["run", MLP, "--random", "--out", path + ".npz"] if kind == "a symbolic link" else None,
        "bench --out": ["bench", MLP, "--iters", "1", "--out", path + ".npz"] if kind == "a symbolic link" else None,
    }
    for cmd, argv in commands.items():
        if argv is None:
            continue
        target = argv[argv.index("--out") + 1] if "--out" in argv else path
        if target != path:  # run/bench --out name .npz files: a link under that name
            if os.path.lexists(target):
                os.remove(target)
            os.symlink(path, target)
            t.check(f"{cmd} refuses to replace a symbolic link ({label}.npz)", refuses_to_replace, argv, target,
                    kind, lambda target=target: os.path.islink(target), folder)
            os.remove(target)
            continue
        t.check(f"{cmd} --force refuses to replace {kind} ({label})", refuses_to_replace, argv, path, kind,
                unchanged, folder)

# run --out FILE.npz and its data file next to an -o: the external data file is guarded too.
ext_folder = tempfile.mkdtemp(dir=TMP.name, prefix="ext_")
os.mkfifo(os.path.join(ext_folder, "m.onnx.data"))
t.check("optimize --external-data refuses a FIFO as the data file", refuses_to_replace,
        ["optimize", MLP, "-o", os.path.join(ext_folder, "m.onnx"), "--external-data", "--force"],
        os.path.join(ext_folder, "m.onnx.data"), "a FIFO",
        lambda: __import__("stat").S_ISFIFO(os.lstat(os.path.join(ext_folder, "m.onnx.data")).st_mode), ext_folder)


def replaces_regular_file():
    p = out_path("regular.onnx")
    with open(p, "w") as f:
        f.write("old")
    code, _, err = run_octet(args.octet, "optimize", MLP, "-o", p, "--force")
    assert code == 0, err
    onnx.load(p)


t.check("optimize --force still replaces a regular file", replaces_regular_file)

# ---------------------------------------------------------------- silently accepted

def relu_model(name, node, opset=17, ir_version=8, outputs=("y",)):
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    return save(name, [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])], outs,
                opset=opset, ir_version=ir_version)


def duplicated_attribute():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="leaky_twice", alpha=0.1)
    node.attribute.extend([helper.make_attribute("alpha", 0.3)])
    return relu_model("duplicated_attribute", node)


SILENT = {
    # name: (model, what every command must say, words check must use)
    "unknown_op": (relu_model("unknown_op", helper.make_node("Erff", ["x"], ["y"], name="typo_erf")),
                   ["typo_erf", "Erff"]),
    "opset_99": (relu_model("opset_99", helper.make_node("Relu", ["x"], ["y"], name="relu"), opset=99),
                 ["opset 99"]),
    "ir_version_99": (relu_model("ir_version_99", helper.make_node("Relu", ["x"], ["y"], name="relu"),
                                 ir_version=99), ["ir_version 99"]),
    "unknown_attribute": (relu_model("unknown_attribute", helper.make_node("Relu", ["x"], ["y"], name="relu_attr",
                                                                         alhpa=0.5)),
                          ["relu_attr", "alhpa"]),
    "duplicated_attribute": (duplicated_attribute(), ["leaky_twice", "'alpha' is given 2 times"]),
    "extra_output": (relu_model("extra_output", helper.make_node("Relu", ["x"], ["y", "y_extra"], name="relu_two"),
                                outputs=("y",)),
                     ["relu_two", "y_extra"]),
}
NODE_PROBLEMS = {"unknown_op", "unknown_attribute", "duplicated_attribute", "extra_output"}


def says(argv, words, allowed_codes=(0, 1)):
    code, out, err = run_octet(args.octet, *argv, timeout=120)
    no_signal(code, err)
    assert code in allowed_codes, f"exit {code}: {err.strip()[-300:]}"
    text = out + err
    for w in words:
        assert w in text, f"output does not mention {w!r}:\n{text[-600:]}"


for name, (path, words) in SILENT.items():
    commands = {
        "inspect": ["inspect", path],
        "run": ["run", path, "--random"],
        "optimize": ["optimize", path, "-o", out_path(name + "_o.onnx"), "--force"],
        "quantize": ["quantize", path, "-o", out_path(name + "_q.onnx"), "--mode", "dynamic", "--force"],
        "bench": ["bench", path, "--iters", "1"],
        "legalize": ["legalize", path, "-o", out_path(name + "_l.onnx"), "--force"],
        "check": ["check", path],
    }
    for cmd, argv in commands.items():
        t.check(f"{name}: {cmd} says so, naming the node", says, argv, words)
    if name in NODE_PROBLEMS:
        t.check(f"{name}: check counts it as a problem (exit 1)", says, ["check", path], words + ["1 problem"], (1,))


def check_clean_model_has_no_problem():
    code, out, err = run_octet(args.octet, "check", MLP)
    assert code == 0 and "0 problems" in out, out + err
    code, out, err = run_octet(args.octet, "run", MLP, "--random")
    assert code == 0 and "warning" not in out + err, out + err


t.check("a clean model gets no structure problem and no warning", check_clean_model_has_no_problem)

# ---------------------------------------------------------------- messages

def _field(number, payload):
    """One length-delimited protobuf field: tag, varint length, bytes."""
    out, n = bytearray([number << 3 | 2]), len(payload)
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out) + payload


def nested_if(depth):
    """If inside If inside ... `depth` levels (graph -> node -> attribute: 3 protobuf
    levels each), written as wire format by hand: Python's protobuf refuses to build
    messages this deep, which is the point."""
    leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["y0"], name="leaf")], "leaf", [],
                             [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [1])])
    graph = leaf.SerializeToString()
    else_attr = helper.make_attribute("else_branch", leaf).SerializeToString()
    for level in range(depth):
        then_attr = onnx.AttributeProto(name="then_branch", type=onnx.AttributeProto.GRAPH).SerializeToString()
        then_attr += _field(6, graph)  # AttributeProto.g
        node = helper.make_node("If", ["c"], [f"y{level + 1}"], name=f"if_{level}").SerializeToString()
        node += _field(5, then_attr) + _field(5, else_attr)  # NodeProto.attribute
        outer = helper.make_graph([], f"g{level}", [],
                                  [helper.make_tensor_value_info(f"y{level + 1}", TensorProto.FLOAT, [1])])
        graph = outer.SerializeToString() + _field(1, node)  # GraphProto.node
    top = helper.make_graph([], "top", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                            [helper.make_tensor_value_info(f"y{depth}", TensorProto.FLOAT, [1])])
    # The top graph's node is the last level's If.
    top_bytes = top.SerializeToString() + _field(1, node)
    model = helper.make_model(helper.make_graph([], "x", [], []), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.ClearField("graph")
    path = out_path(f"nested_if_{depth}.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString() + _field(7, top_bytes))  # ModelProto.graph
    return path


def shallow_nesting_loads():
    code, out, err = run_octet(args.octet, "inspect", nested_if(3))
    assert code == 0, err


DEEP = nested_if(60)  # 180+ levels, past protobuf's 100


def deep_nesting_named():
    for cmd in (["inspect", DEEP], ["run", DEEP, "--random"]):
        err = expect_clean_error(cmd, DEEP, "nested deeper than protobuf's limit of 100")
        assert "truncated" not in err, err


t.check("nesting past protobuf's depth limit is reported as such", deep_nesting_named)
t.check("the same nesting a few levels deep loads (the hand-written file is valid)", shallow_nesting_loads)
t.check("a truncated file is still reported as truncated", expect_clean_error,
        ["inspect", os.path.join(args.source_dir, "tests/bad_files/generated/truncated.onnx")], "truncated")


def string_expand_no_max_size():
    # A string tensor expanded to 2^61 elements: once std::length_error's "max_size()" text.
    path = save("string_expand_huge",
                [helper.make_node("Expand", ["s", "shape"], ["y"], name="expand_strings")],
                [helper.make_tensor_value_info("s", TensorProto.STRING, [1]),
                 helper.make_tensor_value_info("shape", TensorProto.INT64, [1])],
                [helper.make_tensor_value_info("y", TensorProto.STRING, None)])
    shape = out_path("huge_shape.npy")
    np.save(shape, np.array([1 << 61], np.int64))
    strings = out_path("one_string.npy")
    np.save(strings, np.array(["a"], dtype=object), allow_pickle=True)
    for extra in ([], ["--reference"]):
        code, out, err = run_octet(args.octet, "run", path, "--input", f"shape={shape}", "--input", f"s={strings}",
                                   *extra)
        no_signal(code, err)
        assert "max_size" not in err and "bad_alloc" not in err and "internal error" not in err, err


t.check("no C++ exception text (max_size, bad_alloc) leaks", string_expand_no_max_size)


def out_of_memory_names_file_and_node():
    # 2^44 float32 = 64 TiB: addressable, so the allocation itself is what fails.
    if open("/proc/sys/vm/overcommit_memory").read().strip() == "1":
        print("SKIP: vm.overcommit_memory=1 would let a 64 TiB allocation succeed")
        return
    path = save("tile_64tib",
                [helper.make_node("Tile", ["x", "reps"], ["y"], name="tile_64tib")],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                [ints("reps", [1 << 44])])
    for extra in ([], ["--reference"]):
        err = expect_clean_error(["run", path, "--random", *extra], path, "tile_64tib", "out of memory")
        assert "bad_alloc" not in err, err


t.check("out of memory names the model file and the node", out_of_memory_names_file_and_node)


def nan_in_calibration_named():
    d = tempfile.mkdtemp(dir=TMP.name, prefix="calib_")
    for i in range(3):
        x = rng.standard_normal((1, 8)).astype(np.float32)
        if i == 1:
            x[0, 3] = np.nan
            x[0, 5] = np.inf
        np.savez(os.path.join(d, f"sample_{i}.npz"), x=x)
    err = expect_clean_error(["quantize", MLP, "-o", out_path("nan_q.onnx"), "--calib", d, "--force"],
                             "sample_1.npz", "'x'", "NaN")
    assert "never held a finite value" not in err, err


t.check("NaN/Inf in calibration inputs names the input file and tensor", nan_in_calibration_named)

# ---------------------------------------------------------------- shared CPU

def openmp_spin_seen_by(extra_env):
    """GOMP_SPINCOUNT in the environment the running octet process started with."""
    import subprocess
    import time
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    env.update(extra_env)
    proc = subprocess.Popen([args.octet, "bench", MLP, "--iters", "100000000", "--warmup", "0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        with open(f"/proc/{proc.pid}/environ", "rb") as f:
            environ = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    finally:
        proc.kill()
        proc.wait()
    return environ.get(b"GOMP_SPINCOUNT")


def cli_sets_its_openmp_spin():
    # 10000 (~0.1 ms): long enough to bridge the gaps between kernels on a quiet machine;
    # beside a neighbour sessions drop to one thread instead (runtime/thread_governor.h).
    assert openmp_spin_seen_by({}) == b"10000", "the CLI did not start with GOMP_SPINCOUNT=10000"
    assert openmp_spin_seen_by({"GOMP_SPINCOUNT": "50"}) == b"50", "the user's GOMP_SPINCOUNT was overridden"
    assert openmp_spin_seen_by({"OMP_WAIT_POLICY": "active"}) is None, "set despite the user's OMP_WAIT_POLICY"


t.check("the CLI sets OpenMP's spin-wait unless the user chose one", cli_sets_its_openmp_spin)

t.finish()
