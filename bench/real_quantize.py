#!/usr/bin/env python3
"""One quantizer recipe in a process of its own, timed, for bench/compare_real.py:

  python3 bench/real_quantize.py RECIPE FP32.onnx OUT CALIB_DIR --config JSON [--octet PATH]

Prints one JSON object: {"seconds": wall time of the quantization, "peak_rss_mb": ...}. Peak RSS is
this process's VmHWM for the Python recipes (interpreter and library included; the imports are
done before the clock starts), and for octet the CLI child's ru_maxrss (RUSAGE_CHILDREN; this process
imports nothing heavy, so the floor it hands down through fork is ~10 MB).

Recipes (CALIB_DIR holds the .npz samples `octet quantize --calib` reads; the same ones for all):
  octet-static     octet quantize --calib CALIB_DIR                         (defaults otherwise)
  octet-static-sq  octet quantize --calib CALIB_DIR --smoothquant auto
  octet-static-qdq octet quantize --calib CALIB_DIR --per-token none      (every activation calibrated:
                   the static form other engines read, the default before per-token linear inputs)
  octet-dynamic    octet quantize --mode dynamic
  ort-dynamic      onnxruntime.quantization.quantize_dynamic, defaults
  ort-best         onnxruntime.transformers optimizer (config: model_type, num_heads, hidden_size;
                   opt_level 0),
                   then quantize_dynamic(extra_options={"DefaultTensorType": FLOAT}): QAttention and
                   DynamicQuantizeMatMul, onnxruntime's CPU recipe for transformers
  ort-static-qdq   quantize_static, QDQ, per_channel=True, uint8 activations / int8 weights, MinMax
                   (config ort_static_samples: calibrate on the first N samples only)
  nncf             OpenVINO read_model + nncf.quantize(model_type=TRANSFORMER, subset_size = all
                   samples), saved as OUT (.xml + .bin, weights not compressed to fp16)
Exit status: 0, or the recipe's failure (its message is the last line on stderr)."""
import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import time


def vm_hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def calib_samples(folder):
    import numpy as np

    files = sorted(glob.glob(os.path.join(folder, "*.npz")))
    if not files:
        raise SystemExit(f"real_quantize.py: no .npz samples in {folder}")
    out = []
    for f in files:
        with np.load(f) as z:
            out.append({k: z[k] for k in z.files})
    return out


def run_octet(octet, args):
    """Wall seconds and the child's peak RSS (RUSAGE_CHILDREN: this process has no other child)."""
    import resource

    t0 = time.perf_counter()
    proc = subprocess.run([octet, "quantize", *args, "--force", "--quiet"], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"octet quantize exited {proc.returncode}: "
                         f"{(proc.stderr.strip().splitlines() or ['(no message)'])[-1]}")
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("recipe")
    p.add_argument("fp32")
    p.add_argument("out")
    p.add_argument("calib")
    p.add_argument("--config", default="{}")
    p.add_argument("--octet")
    a = p.parse_args()
    cfg = json.loads(a.config)

    if a.recipe.startswith("octet"):
        extra = {"octet-static": ["--calib", a.calib], "octet-static-sq": ["--calib", a.calib, "--smoothquant", "auto"],
                 "octet-static-qdq": ["--calib", a.calib, "--per-token", "none"],
                 "octet-dynamic": ["--mode", "dynamic"]}[a.recipe]
        # OCTET_QUANT_ARGS="--attention fp32 ..." appends flags to every octet recipe: ablations in one harness.
        extra += shlex.split(os.environ.get("OCTET_QUANT_ARGS", ""))
        seconds, peak = run_octet(a.octet, [a.fp32, "-o", a.out, *extra])
        print(json.dumps({"seconds": seconds, "peak_rss_mb": peak, "command": f"octet quantize {' '.join(extra)}"}))
        return

    import numpy as np  # noqa: F401  (imports before the clock: they are not the quantizer's work)
    import onnx
    if a.recipe.startswith("ort"):
        from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                              quantize_static)
    if a.recipe == "nncf":
        import nncf
        import openvino as ov
    samples = calib_samples(a.calib) if a.recipe in ("ort-static-qdq", "nncf") else None
    if a.recipe == "ort-static-qdq" and cfg.get("ort_static_samples"):
        # onnxruntime's MinMax calibrator keeps every intermediate tensor of every sample in
        # memory (its max_intermediate_outputs option drops data in 1.31), ~300 MB per
        # SmolLM2 window: the LM calibrates on the first few windows only.
        samples = samples[:cfg["ort_static_samples"]]

    t0 = time.perf_counter()
    if a.recipe == "ort-dynamic":
        quantize_dynamic(a.fp32, a.out)
        what = "quantize_dynamic(defaults)"
    elif a.recipe == "ort-best":
        from onnxruntime.transformers import optimizer
        # opt_level 0: the Python fusions (Attention, SkipLayerNormalization, BiasGelu, ...) only;
        # levels 1 and 2 first run onnxruntime's own graph optimizer, which imports torch in
        # onnxruntime 1.31, and the session applies those optimizations at load anyway.
        opt = optimizer.optimize_model(a.fp32, model_type=cfg.get("model_type", "bert"), opt_level=0,
                                       num_heads=cfg.get("num_heads", 0), hidden_size=cfg.get("hidden_size", 0))
        fused = a.out + ".optimized.onnx"
        opt.save_model_to_file(fused)
        quantize_dynamic(fused, a.out, extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        os.remove(fused)
        what = f"optimizer.optimize_model({cfg}, opt_level=0) + quantize_dynamic(DefaultTensorType=FLOAT)"
    elif a.recipe == "ort-static-qdq":
        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = iter(samples)

            def get_next(self):
                return next(self.it, None)

        quantize_static(a.fp32, a.out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        what = f"quantize_static(QDQ, per_channel, QUInt8/QInt8, MinMax, {len(samples)} samples)"
    elif a.recipe == "nncf":
        model = ov.Core().read_model(a.fp32)
        q = nncf.quantize(model, nncf.Dataset(samples), model_type=nncf.ModelType.TRANSFORMER,
                          subset_size=len(samples))
        ov.save_model(q, a.out, compress_to_fp16=False)
        what = f"nncf.quantize(model_type=TRANSFORMER, subset_size={len(samples)}) nncf {nncf.__version__}"
    else:
        raise SystemExit(f"real_quantize.py: unknown recipe {a.recipe}")
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "peak_rss_mb": vm_hwm_mb(), "command": what}))


if __name__ == "__main__":
    main()
