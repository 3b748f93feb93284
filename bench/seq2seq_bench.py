#!/usr/bin/env python3
"""Encoder-decoder speed (issue 17): encoder latency and one decode step, fp32 and int8,
octet vs onnxruntime, on the real-size random-weight exports (bench/models/exports.py
marian / whisper: opus-mt-en-de and whisper-tiny shapes).

    python3 bench/seq2seq_bench.py [--models marian whisper] [--rounds 3] [--threads 2]

For each model, two files are timed: encoder_model.onnx on the set's reference input, and
decoder_with_past_model.onnx on one new token after a cache of --past tokens (the cache is
what onnxruntime's fp32 decoder_model returns on the reference prefix, as generation feeds
it). Variants:
  fp32            the exported file: octet and onnxruntime
  int8 octet      `octet quantize --mode dynamic` (run by octet)
  int8 ort        onnxruntime's quantize_dynamic, per-channel (run by onnxruntime and by octet)
--baseline-octet PATH adds another octet build (say main's, before a change) to every
octet row as "octet-baseline", in the same rounds. Each engine runs in its own process
(bench/compare.py run_engine), and the variants are
interleaved round by round; the best p50 per variant is kept. Results: a JSON into
bench/results/ with `uptime` load before and after, since the machine is shared."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import compare  # noqa: E402
import exports  # noqa: E402
import seq2seq_feeds as sf  # noqa: E402


def load():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def inputs_for(folder, past, tmp):
    with np.load(os.path.join(folder, "reference.npz")) as z:
        ref = {k: z[k] for k in z.files}
    # a longer prefix than the reference's 7 tokens: --past cached tokens + 1 new one
    vocab = ref["logits"].shape[-1]
    rng = np.random.default_rng(3)
    ids = np.concatenate([ref["decoder_input_ids"][:, :1], rng.integers(3, vocab - 3, (1, past))], axis=1)
    ref["decoder_input_ids"] = ids.astype(np.int64)
    feeds = sf.all_feeds(folder, ref, prefix=past + 1)
    out = {}
    for f in ("encoder_model", "decoder_with_past_model"):
        path = os.path.join(tmp, f"{os.path.basename(folder)}_{f}_inputs.npz")
        np.savez(path, **feeds[f])
        out[f] = path
    return out


def octet_vs_ort(path, feeds, octet, tmp):
    """max |octet - ort| / max |ort| over the outputs (octet run in its own process)."""
    inp, out = os.path.join(tmp, "check_in.npz"), os.path.join(tmp, "check_out.npz")
    np.savez(inp, **feeds)
    proc = subprocess.run([octet, "run", path, "--input", inp, "--out", out], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-300:]}
    sess = sf.session(path)
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    worst = 0.0
    with np.load(out) as got:
        for k, v in want.items():
            if v.size:
                worst = max(worst, float(np.abs(got[k].astype(np.float64) - v).max() / np.abs(v).max()))
    return {"max_rel_error": worst}


def check(folder, octet, tmp):
    """Every file of the set (both branches of the merged decoder) in fp32, and the split
    files after onnxruntime's quantize_dynamic: octet against onnxruntime on the same file."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with np.load(os.path.join(folder, "reference.npz")) as z:
        feeds = sf.all_feeds(folder, {k: z[k] for k in z.files})
    out = {}
    for key, f in feeds.items():
        path = os.path.join(folder, key.split(":")[0] + ".onnx")
        out[f"{key} fp32"] = octet_vs_ort(path, f, octet, tmp)
        if ":" not in key:
            q = os.path.join(tmp, "check_q.onnx")
            quantize_dynamic(path, q, weight_type=QuantType.QInt8, per_channel=True,
                             extra_options={"DefaultTensorType": 1})
            out[f"{key} ort quantize_dynamic"] = octet_vs_ort(q, f, octet, tmp)
        print(f"check {os.path.basename(folder)} {key}: {out}", file=sys.stderr, flush=True)
    return out


def quantized(folder, file, octet, tmp):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src = os.path.join(folder, file + ".onnx")
    name = os.path.basename(folder)
    oct_path = os.path.join(tmp, f"{name}_{file}_octet_dynamic.onnx")
    proc = subprocess.run([octet, "quantize", src, "-o", oct_path, "--mode", "dynamic", "-q", "--force"],
                          capture_output=True, text=True)
    ort_path = os.path.join(tmp, f"{name}_{file}_ort_dynamic.onnx")
    quantize_dynamic(src, ort_path, weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": 1})
    out = {"fp32": src, "int8 ort": ort_path}
    if proc.returncode == 0:
        out["int8 octet"] = oct_path
    else:
        print(f"octet quantize {src} failed: {proc.stderr.strip()[-400:]}", file=sys.stderr)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="*", default=["marian", "whisper"])
    p.add_argument("--octet", default=os.path.join(ROOT, "build", "release", "octet"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--past", type=int, default=16, help="cached decoder tokens before the timed step")
    p.add_argument("--out", default=None)
    p.add_argument("--check", action="store_true", help="also check octet against onnxruntime on every file")
    p.add_argument("--fp32-only", action="store_true", help="time the exported fp32 files only (no int8 variants)")
    p.add_argument("--baseline-octet", default=None,
                   help="a second octet CLI (e.g. main's build) timed in the same interleaved rounds as 'octet-baseline'")
    a = p.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    results = {"started": started.isoformat(), "load_before": load(), "settings": vars(a), "models": {}}
    with tempfile.TemporaryDirectory(prefix="octet_seq2seq_bench_") as tmp:
        for name in a.models:
            folder = exports.ensure(name)
            inputs = inputs_for(folder, a.past, tmp)
            entry = results["models"][name] = {}
            if a.check:
                results.setdefault("checks", {})[name] = check(folder, a.octet, tmp)
            plan = []
            for f in ("encoder_model", "decoder_with_past_model"):
                variants = {"fp32": os.path.join(folder, f + ".onnx")} if a.fp32_only else quantized(folder, f, a.octet, tmp)
                for variant, path in variants.items():
                    engines = ["octet"] if variant == "int8 octet" else ["octet", "ort"]
                    if a.baseline_octet:
                        engines.insert(1, "octet-baseline")
                    plan += [(f, variant, e, path) for e in engines]
            for r in range(a.rounds):
                for f, variant, engine, path in plan:
                    print(f"[{name}] round {r + 1}/{a.rounds}: {f} {variant} on {engine}", file=sys.stderr, flush=True)
                    if engine == "octet-baseline":  # the same runs, another build of the CLI
                        base = argparse.Namespace(**{**vars(a), "octet": a.baseline_octet})
                        rep = compare.run_engine("octet", base, path, {}, inputs[f], os.path.join(tmp, "out.npz"))
                    else:
                        rep = compare.run_engine(engine, a, path, {}, inputs[f], os.path.join(tmp, "out.npz"))
                    e = entry.setdefault(f, {}).setdefault(f"{variant} / {engine}", {"rounds_p50_ms": []})
                    e["rounds_p50_ms"].append(rep.get("p50_ms"))
                    if "p50_ms" not in rep:
                        e["error"] = rep.get("error") or rep.get("skipped")
                    elif "p50_ms" not in e or rep["p50_ms"] < e["p50_ms"]:
                        e.update({k: rep[k] for k in ("p50_ms", "p90_ms", "peak_rss_mb", "reference_ops") if k in rep})
    results["load_after"] = load()
    out = a.out or os.path.join(HERE, "results", f"{started:%Y-%m-%d}_issue17-seq2seq_speed_2core.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    for name, checks in results.get("checks", {}).items():
        for k, v in checks.items():
            print(f"{name:8s} {k:45s} {v}")
    for name, files in results["models"].items():
        for f, variants in files.items():
            for v, e in variants.items():
                print(f"{name:8s} {f:24s} {v:22s} p50 {e.get('p50_ms', float('nan')):9.2f} ms  {e.get('error', '')}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
