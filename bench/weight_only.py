#!/usr/bin/env python3
"""Weight-only quantization of SmolLM2-135M (issue 16): perplexity, file size, quantize time and
peak RSS per scheme, next to fp32.

Model: the prompt-only export (bench/models/exports.py, ~/.cache/octet/exports/smollm2/smollm2.onnx).
Data: the 32 held-out 128-token windows of bench/models/real_data.py (eval/lm_windows.npz);
perplexity is exp(mean next-token NLL) over all of them. Every scheme is written with
`octet quantize --weights ...` (timed, peak RSS from /usr/bin/time -v) and evaluated with
`octet run` (the file as octet runs it); files written for --target ort are evaluated on
onnxruntime too. Writes bench/results/<date>_weight_only_smollm2_<host>.json.

  python3 bench/weight_only.py [--octet build/release/octet] [--schemes fp32,int4_g32,...] [--windows 32]
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from compare_real import token_nll  # noqa: E402  (the harness's own NLL, same numbers)

EXPORTS = os.environ.get("OCTET_MODEL_CACHE", os.path.expanduser("~/.cache/octet")) + "/exports"
# name -> quantize arguments (None: the float model itself)
SCHEMES = {
    "fp32": None,
    "int8_g128_ort": ["--weights", "int8", "--target", "ort"],
    "int8_g128_dq": ["--weights", "int8"],
    "int4_g32_ort": ["--weights", "int4", "--target", "ort"],
    "int4_g32_dq": ["--weights", "int4"],
    "int4_g32_asym_ort": ["--weights", "int4", "--asymmetric", "--target", "ort"],
    "int4_g128_ort": ["--weights", "int4", "--block", "128", "--target", "ort"],
    "int4_g32_keep_lm_head_ort": ["--weights", "int4", "--keep-lm-head", "--target", "ort"],
    "int4_g32_awq_ort": ["--weights", "int4", "--method", "awq", "--calib", "{calib}", "--calib-samples", "16",
                         "--target", "ort"],
    "int4_g128_awq_ort": ["--weights", "int4", "--block", "128", "--method", "awq", "--calib", "{calib}",
                          "--calib-samples", "16", "--target", "ort"],
    "int4_g32_gptq_ort": ["--weights", "int4", "--method", "gptq", "--calib", "{calib}", "--calib-samples", "16",
                          "--target", "ort"],
    "int4_g32_awq_gptq_ort": ["--weights", "int4", "--method", "awq-gptq", "--calib", "{calib}",
                              "--calib-samples", "16", "--target", "ort"],
}


def quantize(octet, model, out, extra):
    cmd = ["/usr/bin/time", "-v", octet, "quantize", model, "-o", out, "--force", "-q", "--json", *extra]
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr[-2000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    report = json.loads(proc.stdout)
    return {"command": " ".join(cmd[2:]), "seconds": wall, "peak_rss_mib": rss / 1024,
            "file_mib": report["quantized_file_bytes"] / 2**20,
            "lm_head_error": [l["relative_error"] for l in report["layers"] if l["lm_head"]],
            "mean_weight_error": float(np.mean([l["relative_error"] for l in report["layers"]]))}


def nll_octet(octet, model, windows, threads, tmp, chunk=8):
    out = []
    for i in range(0, len(windows), chunk):
        ids = windows[i:i + chunk]
        inp, res = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        np.savez(inp, input_ids=ids)
        proc = subprocess.run([octet, "run", model, "--input", inp, "--out", res, "--threads", str(threads)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"octet run {model}: {proc.stderr[-2000:]}")
        with np.load(res) as z:
            out.append(token_nll(z["logits"], ids)[0])
    return np.concatenate(out)


def nll_ort(model, windows, threads, chunk=8):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return np.concatenate([token_nll(sess.run(["logits"], {"input_ids": windows[i:i + chunk]})[0],
                                     windows[i:i + chunk])[0] for i in range(0, len(windows), chunk)])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--octet", default=os.path.join(ROOT, "build/release/octet"))
    p.add_argument("--model", default=os.path.join(EXPORTS, "smollm2/smollm2.onnx"))
    p.add_argument("--data", default=os.path.join(EXPORTS, "data"))
    p.add_argument("--schemes", default=",".join(SCHEMES))
    p.add_argument("--windows", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default="")
    args = p.parse_args()
    windows = np.load(os.path.join(args.data, "eval", "lm_windows.npz"))["input_ids"][:args.windows].astype(np.int64)
    results = {"model": args.model, "windows": int(len(windows)), "tokens_scored": int(len(windows) * 127),
               "float_file_mib": os.path.getsize(args.model) / 2**20, "load": os.getloadavg(),
               "command": " ".join(sys.argv), "schemes": {}}
    out = args.out or os.path.join(ROOT, "bench/results",
                                   f"{datetime.date.today()}_weight_only_smollm2_epyc-2core.json")
    with tempfile.TemporaryDirectory(prefix="octet_weight_only_") as tmp:
        for name in args.schemes.split(","):
            entry = {}
            path = args.model
            if SCHEMES[name] is not None:
                path = os.path.join(tmp, name + ".onnx")
                extra = [a.replace("{calib}", os.path.join(args.data, "calib", "smollm2")) for a in SCHEMES[name]]
                entry.update(quantize(args.octet, args.model, path, extra))
            start = time.time()
            entry["perplexity_octet"] = float(np.exp(nll_octet(args.octet, path, windows, args.threads, tmp).mean()))
            entry["eval_seconds_octet"] = time.time() - start
            if name == "fp32" or name.endswith("_ort"):
                entry["perplexity_onnxruntime"] = float(np.exp(nll_ort(path, windows, args.threads).mean()))
            results["schemes"][name] = entry
            print(name, json.dumps(entry), flush=True)
            if path != args.model:
                os.remove(path)
            with open(out, "w") as f:  # after every scheme: a long run that stops keeps what it measured
                json.dump(results, f, indent=2)
    print("wrote", out)


if __name__ == "__main__":
    main()
