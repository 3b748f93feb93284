#!/usr/bin/env python3
"""Greedy generation with SmolLM2-135M fp32 (smollm2_with_past.onnx, bench/models/README.md):
octet's `octet generate` against onnxruntime's own greedy loop over the same file.

    python3 bench/generate_smollm2.py --octet build/release/octet [--threads 2] [--prompt-tokens 128]
        [--new-tokens 64] [--rounds 3] [--out results.json]

Checks first that octet's greedy tokens equal onnxruntime's (the loop optimum's ORTModel runs:
the prompt in one step, then one token per step feeding present.* back as past_key_values.*)
on the same prompt. Then, per round and interleaved (octet, onnxruntime, ...), time to first
token (the prompt's step plus the choice) and decode tokens/s (the steps after it), each engine
in its own process with the model loaded before timing; the summary is the median over rounds.
The prompt is the start of the held-out LM text (bench/models/real_data.py), tokenized with
SmolLM2's tokenizer. Reports `uptime`'s load: on a shared machine only same-run ratios mean much.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))
import common  # noqa: E402

ORT_LOOP = r"""
import json, sys, time
import numpy as np, onnxruntime as ort
model, ids_path, new_tokens, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
inputs = {i.name: i for i in s.get_inputs()}; outputs = [o.name for o in s.get_outputs()]
prompt = np.load(ids_path).astype(np.int64).reshape(-1).tolist()
past = {n: np.zeros((1, i.shape[1], 0, i.shape[3]), np.float32) for n, i in inputs.items() if n.startswith("past_key_values.")}
tokens, cached, out = prompt, 0, []
start = time.perf_counter()
for step in range(new_tokens):
    feed = {"input_ids": np.array([tokens], np.int64), "attention_mask": np.ones((1, cached + len(tokens)), np.int64),
            "position_ids": np.arange(cached, cached + len(tokens), dtype=np.int64)[None], **past}
    r = dict(zip(outputs, s.run(None, {k: v for k, v in feed.items() if k in inputs})))
    token = int(np.argmax(r["logits"][0, -1]))
    if step == 0:
        first = time.perf_counter()
    past = {"past_key_values." + n[len("present."):]: v for n, v in r.items() if n.startswith("present.")}
    cached += len(tokens); tokens = [token]; out.append(token)
end = time.perf_counter()
print(json.dumps({"ids": out, "time_to_first_token_ms": (first - start) * 1e3,
                  "decode_tokens_per_second": (new_tokens - 1) / (end - first)}))
"""


def prompt_ids(count):
    tok = common.smollm2_tokenizer()
    data = common.exports_dir("data")
    text = open(__file__).read()  # fallback: any English
    for root, _, files in os.walk(data):
        for f in files:
            if f.endswith(".txt") and "eval" in f:
                text = open(os.path.join(root, f)).read()
                break
    ids = tok.encode(text).ids
    if len(ids) < count:
        raise SystemExit(f"the prompt text has only {len(ids)} tokens")
    return ids[:count]


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])}...: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--octet", required=True)
    ap.add_argument("--model", default=os.path.join(common.exports_dir("smollm2"), "smollm2_with_past.onnx"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not os.path.exists(a.model):
        raise SystemExit(f"{a.model} is not built: python3 bench/models/exports.py")
    tmp = tempfile.TemporaryDirectory(prefix="octet_gen_bench_")
    ids_path = os.path.join(tmp.name, "prompt.npy")
    np.save(ids_path, np.array(prompt_ids(a.prompt_tokens), np.int64))
    octet = [a.octet, "generate", a.model, "--prompt-ids", ids_path, "--max-new-tokens", str(a.new_tokens),
             "--threads", str(a.threads), "--json", "--ignore-eos"]
    ort = [sys.executable, "-c", ORT_LOOP, a.model, ids_path, str(a.new_tokens), str(a.threads)]
    load = [os.getloadavg()]
    results = {"octet": [], "onnxruntime": []}
    for r in range(a.rounds):
        order = [("octet", octet), ("onnxruntime", ort)]
        if r % 2:
            order.reverse()
        for name, cmd in order:
            results[name].append(run_json(cmd))
            print(name, {k: round(v, 2) for k, v in results[name][-1].items() if isinstance(v, float)}, flush=True)
    load.append(os.getloadavg())
    same = all(o["ids"] == results["onnxruntime"][0]["ids"] for o in results["octet"])
    summary = {"model": a.model, "threads": a.threads, "prompt_tokens": a.prompt_tokens, "new_tokens": a.new_tokens,
               "rounds": a.rounds, "greedy_tokens_equal": same, "loadavg_before_after": load}
    for name, runs in results.items():
        summary[name] = {k: statistics.median(x[k] for x in runs)
                         for k in ("time_to_first_token_ms", "decode_tokens_per_second")}
    summary["octet"]["peak_rss_bytes"] = max(x["peak_rss_bytes"] for x in results["octet"])
    summary["decode_speed_ratio_octet_over_ort"] = (summary["octet"]["decode_tokens_per_second"] /
                                                    summary["onnxruntime"]["decode_tokens_per_second"])
    summary["ttft_ratio_octet_over_ort"] = (summary["octet"]["time_to_first_token_ms"] /
                                            summary["onnxruntime"]["time_to_first_token_ms"])
    print(json.dumps(summary, indent=2))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(summary, f, indent=2)
    if not same:
        raise SystemExit("octet's greedy tokens differ from onnxruntime's")


if __name__ == "__main__":
    main()
