#!/usr/bin/env python3
"""The decode step of a decoder with past: octet (in-place runner and portable session) and
onnxruntime, each in its own process, rounds interleaved.

    python3 bench/decode_step.py --octet build/release/octet [--model PATH] [--past 128]
        [--iters 32] [--threads 2] [--rounds 3] [--profile]

The model defaults to SmolLM2-135M's with-past export (bench/models/exports.py smollm2,
~/.cache/octet/exports/smollm2/smollm2_with_past.onnx). Every engine runs the same loop: a
prompt of --past tokens (ids (i*37+11) % 251), then --warmup untimed and --iters timed
greedy single-token steps, each fed the previous step's cache; the median step time is its
result (the past grows from --past to --past + warmup + iters tokens over the loop).
onnxruntime feeds present.N.* back as past_key_values.N.* (what its own generation loops
do without IO binding); octet's `bench-decode --mode in-place` keeps the cache in runner
buffers, `--mode session` feeds presents back like onnxruntime, and "octet unfused" is the
session mode without fuse_grouped_attention (octet before this fusion). Each engine's
greedy tokens are compared with onnxruntime's (a check of the whole decode path). The summary is the median
over rounds of each engine's median, with the load average before and after.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def default_model():
    return os.path.join(os.path.expanduser("~/.cache/octet/exports/smollm2"), "smollm2_with_past.onnx")


def ort_loop(model, past, warmup, iters, threads):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in sess.get_inputs()}
    outs = [o.name for o in sess.get_outputs()]
    cache = {n: np.zeros((1, i.shape[1], 0, i.shape[3]), np.float32) for n, i in inputs.items()
             if n.startswith("past_key_values.")}
    ids = (np.arange(past, dtype=np.int64) * 37 + 11) % 251
    total, times, tokens = 0, [], []
    for step in range(1 + warmup + iters):
        new = len(ids)
        feeds = {"input_ids": ids[None], "attention_mask": np.ones((1, total + new), np.int64), **cache}
        if "position_ids" in inputs:
            feeds["position_ids"] = np.arange(total, total + new, dtype=np.int64)[None]
        t0 = time.perf_counter()
        got = dict(zip(outs, sess.run(None, feeds)))
        if step > warmup:
            times.append((time.perf_counter() - t0) * 1000)
        cache = {n: got["present." + n[len("past_key_values."):]] for n in cache}
        total += new
        ids = np.array([int(got["logits"][0, -1].argmax())], np.int64)
        tokens.append(int(ids[0]))
    return {"median_ms": statistics.median(times), "mean_ms": statistics.fmean(times), "tokens": tokens[:-1]}


def octet_loop(octet, model, mode, past, warmup, iters, threads, profile):
    extra = []
    if mode == "unfused":  # octet before fuse_grouped_attention: the baseline
        mode, extra = "session", ["--disable", "fuse_grouped_attention"]
    cmd = [octet, "bench-decode", model, "--mode", mode, "--past", str(past), "--warmup", str(warmup),
           "--iters", str(iters), "--threads", str(threads)] + extra + (["--profile"] if profile else [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--octet", required=True)
    ap.add_argument("--model", default=default_model())
    ap.add_argument("--past", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--iters", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="print octet's per-op profile of its last round")
    ap.add_argument("--ort-child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ort_child:
        print(json.dumps(ort_loop(a.model, a.past, a.warmup, a.iters, a.threads)))
        return
    load_before = os.getloadavg()
    results = {"onnxruntime": [], "octet in-place": [], "octet session": [], "octet unfused": []}
    last, tokens = {}, {}
    for r in range(a.rounds):
        order = list(results)[r % 4:] + list(results)[:r % 4]
        for engine in order:
            if engine == "onnxruntime":
                out = subprocess.run([sys.executable, __file__, "--ort-child", "--octet", a.octet, "--model", a.model,
                                      "--past", str(a.past), "--warmup", str(a.warmup), "--iters", str(a.iters),
                                      "--threads", str(a.threads)], check=True, capture_output=True, text=True)
                got = json.loads(out.stdout)
            else:
                got = octet_loop(a.octet, a.model, engine.split()[1], a.past, a.warmup, a.iters, a.threads,
                                 a.profile and r == a.rounds - 1)
                last[engine] = got
            results[engine].append(got["median_ms"])
            tokens.setdefault(engine, got["tokens"])
            print(f"round {r}: {engine}: {got['median_ms']:.2f} ms", file=sys.stderr)
    summary = {e: statistics.median(v) for e, v in results.items()}
    ort_ms = summary["onnxruntime"]
    print(json.dumps({"model": a.model, "past": a.past, "threads": a.threads, "rounds": results,
                      "median_ms": summary, "ort_over_octet": {e: ort_ms / v for e, v in summary.items()},
                      "same_greedy_tokens_as_onnxruntime": {e: t == tokens["onnxruntime"] for e, t in tokens.items()},
                      "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
                      "octet_nodes": {e: [v.get("nodes_before"), v.get("nodes_after")] for e, v in last.items()},
                      **({"profile": {e: v.get("profile") for e, v in last.items()}} if a.profile else {})},
                     indent=1))


if __name__ == "__main__":
    main()
