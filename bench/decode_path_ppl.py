#!/usr/bin/env python3
"""Perplexity of SmolLM2-135M through octet's decode path (issue 16): the KV-cache export fed a
few tokens per run with the cache carried, so every MatMulNBits sees at most 4 rows of A and
runs its decode GEMV, not the prefill GEMM (bench/decode.py's perplexity is one prefill per
window and never reaches the GEMV). Used to check the int8-activation GEMV's numerics against
the float-activation one on the real model.

  python3 bench/decode_path_ppl.py [--models int4,int8] [--activations float,int8] [--windows 8] [--step 4]

Each model x activation mode runs in a process of its own (OCTET_NBITS_ACTIVATIONS is read once
per process), on the octet Python module of --build (OCTET_BUILD_PYTHON=ON). Models: the folders
bench/decode.py prepares (exports_dir("decode")/octet/<tag>/model.onnx: a precision names the folder of
decode_prepare.OCTET_RECIPES' recipe, int8 -> int8-gptq-b32-sym; a full tag such as int4-rtn-b32-sym
names another; fp32 is the export itself). Data: the held-out 128-token windows (eval/lm_windows.npz). Perplexity is exp(mean NLL
of tokens 1..127 given the ones before). Prints one line per run and, with --json, writes them."""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("OCTET_MODEL_CACHE", os.path.expanduser("~/.cache/octet"))
WINDOWS = os.path.join(CACHE, "exports", "data", "eval", "lm_windows.npz")


def model_path(precision):
    if precision == "fp32":
        return os.path.join(CACHE, "exports", "smollm2", "smollm2_with_past.onnx")
    if "-" not in precision:  # the recipe bench/decode.py uses for this precision
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import decode_prepare

        precision = decode_prepare.octet_tag(precision, decode_prepare.OCTET_RECIPES[precision])
    return os.path.join(CACHE, "exports", "decode", "octet", precision, "model.onnx")


def nll_one(build, model, windows, step, threads):
    """Per-token NLL over `windows` ([W, T] ids), fed `step` tokens per session run."""
    sys.path.insert(0, os.path.join(ROOT, build, "python"))
    import _octet  # noqa: E402  (the build's module, not an installed one)

    sess = _octet.Session(model, threads)
    inputs = _octet.model_inputs(model)
    past = [(name, shape) for name, _, shape in inputs if name.startswith("past_key_values.")]
    outs = [name for name, _, _ in sess.outputs()]
    presents = [n for n in outs if n.startswith("present")]
    nll = []
    for ids in windows:
        cache = {name: np.zeros((1, shape[1], 0, shape[3]), np.float32) for name, shape in past}
        logits = []
        for t0 in range(0, len(ids), step):
            chunk = ids[t0:t0 + step]
            t1 = t0 + len(chunk)
            feed = [("input_ids", chunk[None].astype(np.int64)),
                    ("attention_mask", np.ones((1, t1), np.int64)),
                    ("position_ids", np.arange(t0, t1, dtype=np.int64)[None])]
            feed += list(cache.items())
            got = dict(zip(["logits"] + presents, sess.run(["logits"] + presents, feed)))
            logits.append(got["logits"][0].astype(np.float64))
            for name in cache:  # present.N.key <- past_key_values.N.key
                cache[name] = got[name.replace("past_key_values", "present")]
        lg = np.concatenate(logits)[:-1]
        top = lg.max(-1, keepdims=True)
        lse = np.log(np.exp(lg - top).sum(-1)) + top[:, 0]
        nll.append(lse - lg[np.arange(len(ids) - 1), ids[1:]])
    return np.concatenate(nll)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="int4,int8", help="comma-separated subset of fp32, int4, int8")
    p.add_argument("--activations", default="float,int8", help="OCTET_NBITS_ACTIVATIONS values to compare")
    p.add_argument("--windows", type=int, default=8, help="first N held-out windows")
    p.add_argument("--step", type=int, default=4, help="tokens per run (<= 4 keeps MatMulNBits on its GEMV)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--build", default="build/release")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--child", nargs=2, metavar=("MODEL", "OUT"), help=argparse.SUPPRESS)
    a = p.parse_args()
    windows = np.load(WINDOWS)["input_ids"][:a.windows]
    if a.child:
        np.save(a.child[1], nll_one(a.build, a.child[0], windows, a.step, a.threads))
        return
    results = []
    for precision in a.models.split(","):
        for act in a.activations.split(","):
            out = f"/tmp/decode_path_ppl_{os.getpid()}_{precision}_{act}.npy"
            env = dict(os.environ, OCTET_NBITS_ACTIVATIONS=act)
            start = time.time()
            subprocess.run([sys.executable, __file__, "--child", model_path(precision), out, "--windows",
                            str(a.windows), "--step", str(a.step), "--threads", str(a.threads), "--build", a.build],
                           env=env, check=True, cwd=ROOT)
            nll = np.load(out)
            os.remove(out)
            r = {"model": precision, "activations": act, "windows": a.windows, "step": a.step,
                 "tokens": int(nll.size), "perplexity": float(np.exp(nll.mean())), "seconds": time.time() - start}
            results.append(r)
            print(f"{precision} activations={act}: perplexity {r['perplexity']:.4f} over {r['tokens']} tokens "
                  f"({r['seconds']:.0f} s)", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"load_average": os.getloadavg(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
