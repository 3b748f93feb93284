#!/usr/bin/env python3
"""Full greedy generation of encoder-decoders (issue 17): time to first token (the encoder
and the first decode step) and decode tokens/s over --new-tokens tokens, fp32 and int8,
octet vs onnxruntime vs OpenVINO, on the real-size random-weight exports
(bench/models/exports.py marian / whisper / t5: opus-mt-en-de, whisper-tiny, t5-small shapes).

    python3 bench/seq2seq_generation.py [--models marian whisper t5] [--new-tokens 32] [--rounds 2]

Variants (each a folder of encoder_model / decoder_model / decoder_with_past_model.onnx):
  fp32          the export itself
  octet static  `octet quantize FOLDER --calib` (the decoders calibrated on greedy decode
                steps; the linear layers' inputs per token, octet's own QMatMul: octet only)
  octet static qdq  the same with --per-token none: everything calibrated, standard QDQ,
                so onnxruntime and OpenVINO read it too
  octet dynamic `octet quantize FOLDER --mode dynamic` (octet's own int8 ops: octet only)
  ort dynamic   onnxruntime's quantize_dynamic of each file, per-channel, DefaultTensorType=1
Engines: octet (`octet generate --repeat`, its own loop and cache), onnxruntime and OpenVINO
(the same plain greedy loop in Python over the split files: the encoder once, decoder_model
for the first step, decoder_with_past_model after it, the cross-attention cache kept from
the first step). Every engine runs in its own process with --threads threads, one warm-up
generation and --runs timed ones (best kept); engines and variants are interleaved round by
round, best of rounds. Token agreement is against onnxruntime's fp32 tokens (random
weights: the tokens mean nothing, only agreement does). OpenVINO runs at f32 inference
precision (its default on this AVX512-BF16 CPU would be bf16). Calibration inputs are
random (seeded) token ids / log-mel features: the weights are random too."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "models"))

FILES = ("encoder_model", "decoder_model", "decoder_with_past_model")


def load():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# ---- the Python greedy loop (worker processes) ----

class Runner:
    """One file on onnxruntime or OpenVINO: run(feeds) -> {output name: array}."""

    def __init__(self, engine, path, threads):
        self.engine = engine
        if engine == "ort":
            import onnxruntime as ort
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            self.inputs = [i.name for i in self.sess.get_inputs()]
            self.outputs = [o.name for o in self.sess.get_outputs()]
        else:
            import openvino as ov
            model = ov.Core().read_model(path)
            self.compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                                    "INFERENCE_PRECISION_HINT": "f32"})
            self.request = self.compiled.create_infer_request()
            self.inputs = [n for i in self.compiled.inputs for n in i.get_names()]
            # an output port has several tensor names; the ONNX output name is one of them
            self.ports = {n: o for o in self.compiled.outputs for n in o.get_names()}
            self.outputs = list(self.ports)

    def run(self, feeds):
        feeds = {k: v for k, v in feeds.items() if k in self.inputs}
        if self.engine == "ort":
            return dict(zip(self.outputs, self.sess.run(None, feeds)))
        res = self.request.infer(feeds)
        return {name: np.array(res[port]) for name, port in self.ports.items()}


def python_generate(runners, encoder_feeds, start, new_tokens):
    """Greedy tokens, time to first token (ms) and decode tokens/s."""
    t0 = time.perf_counter()
    hidden = runners["encoder_model"].run(encoder_feeds)["last_hidden_state"]
    common = {"encoder_hidden_states": hidden}
    if "attention_mask" in encoder_feeds:
        common["encoder_attention_mask"] = encoder_feeds["attention_mask"]
    cache, tokens, first_ms = {}, [], 0.0
    token = start
    for step in range(new_tokens):
        runner = runners["decoder_with_past_model" if cache else "decoder_model"]
        out = runner.run({"input_ids": np.array([[token]], np.int64), **common, **cache})
        first = not cache  # the first step's cross-attention keys/values are kept for all
        for name, value in out.items():
            if name.startswith("present.") and (first or ".decoder." in name):
                cache["past_key_values." + name[len("present."):]] = value
        token = int(out["logits"][0, -1].argmax())
        tokens.append(token)
        if step == 0:
            first_ms = (time.perf_counter() - t0) * 1e3
    total_ms = (time.perf_counter() - t0) * 1e3
    return tokens, first_ms, (new_tokens - 1) / max((total_ms - first_ms) / 1e3, 1e-9)


def worker(a):
    folder = a.worker_folder
    with np.load(a.inputs) as z:
        feeds = {k: z[k] for k in z.files}
    start = json.load(open(os.path.join(folder, "config.json")))["decoder_start_token_id"]
    runners = {f: Runner(a.worker, os.path.join(folder, f + ".onnx"), a.threads) for f in FILES}
    python_generate(runners, feeds, start, a.new_tokens)  # warm-up
    runs = [python_generate(runners, feeds, start, a.new_tokens) for _ in range(a.runs)]
    print(json.dumps({"ids": runs[-1][0], "time_to_first_token_ms": min(r[1] for r in runs),
                      "decode_tokens_per_second": max(r[2] for r in runs)}))


# ---- the driver ----

def run_engine(a, engine, folder, inputs_npz, features_npy):
    if engine.startswith("octet"):
        cmd = [dict(a.octets)[engine], "generate", folder, "--json", "--threads", str(a.threads), "--max-new-tokens",
               str(a.new_tokens), "--ignore-eos", "--repeat", str(a.runs + 1)]
        if features_npy:
            cmd += ["--encoder-input", f"input_features={features_npy}"]
        else:
            with np.load(inputs_npz) as z:
                cmd += ["--prompt-ids", ",".join(map(str, z["input_ids"][0].tolist()))]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine, "--worker-folder", folder, "--inputs",
               inputs_npz, "--threads", str(a.threads), "--new-tokens", str(a.new_tokens), "--runs", str(a.runs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["(no message)"])[-1][-300:]}
    r = json.loads(proc.stdout)
    if engine.startswith("octet"):  # best of the timed runs (the first of --repeat is the warm-up)
        timed = r["runs"][1:]
        r["time_to_first_token_ms"] = min(x["time_to_first_token_ms"] for x in timed)
        r["decode_tokens_per_second"] = max(x["decode_tokens_per_second"] for x in timed)
    return {k: r[k] for k in ("ids", "time_to_first_token_ms", "decode_tokens_per_second")}


def calibration(folder, work, samples=4):
    out = os.path.join(work, "calib_" + os.path.basename(folder))
    if os.path.isdir(out):
        return out
    os.makedirs(out)
    config = json.load(open(os.path.join(folder, "config.json")))
    with np.load(os.path.join(folder, "reference.npz")) as z:
        ref = {k: z[k] for k in z.files}
    rng = np.random.default_rng(11)
    for i in range(samples):
        if "input_features" in ref:
            feeds = {"input_features": rng.standard_normal(ref["input_features"].shape).astype(np.float32)}
        else:
            n = int(rng.integers(8, 20))
            feeds = {"input_ids": rng.integers(5, config["vocab_size"] - 5, (1, n)).astype(np.int64),
                     "attention_mask": np.ones((1, n), np.int64)}
        np.savez(os.path.join(out, f"sample_{i:03d}.npz"), **feeds)
    return out


def variants(a, folder, work):
    """{variant: folder}, each made once into --work."""
    name = os.path.basename(folder)
    out = {"fp32": folder}
    for variant, mode, flags in (("octet static", "static", []), ("octet static qdq", "static", ["--per-token", "none"]),
                                 ("octet dynamic", "dynamic", [])):
        dst = os.path.join(work, f"{name}_{variant.replace(' ', '_')}")
        if not os.path.exists(os.path.join(dst, "decoder_with_past_model.onnx")):
            extra = ["--calib", calibration(folder, work)] if mode == "static" else []
            t0 = time.time()
            proc = subprocess.run([a.octet, "quantize", folder, "-o", dst, "--mode", mode, "-q", "--force", *extra,
                                   *flags], capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"octet quantize {name} {variant} failed: {proc.stderr.strip()[-300:]}", file=sys.stderr)
                continue
            print(f"octet quantize {name} ({variant}): {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        out[variant] = dst
    dst = os.path.join(work, f"{name}_ort_dynamic")
    if not os.path.exists(os.path.join(dst, "decoder_with_past_model.onnx")):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        os.makedirs(dst, exist_ok=True)
        for f in FILES:
            quantize_dynamic(os.path.join(folder, f + ".onnx"), os.path.join(dst, f + ".onnx"),
                             weight_type=QuantType.QInt8, per_channel=True, extra_options={"DefaultTensorType": 1})
        subprocess.run(["cp", os.path.join(folder, "config.json"), dst], check=True)
    out["ort dynamic"] = dst
    return out


def sizes(folder):
    return {f: round(os.path.getsize(os.path.join(folder, f + ".onnx")) / 1e6, 1)
            for f in (*FILES, "decoder_model_merged") if os.path.exists(os.path.join(folder, f + ".onnx"))}


ENGINES = {"fp32": ("octet", "ort", "openvino"), "octet static": ("octet",),
           "octet static qdq": ("octet", "ort", "openvino"), "octet dynamic": ("octet",),
           "ort dynamic": ("octet", "ort", "openvino")}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="*", default=["marian", "whisper", "t5"])
    p.add_argument("--octet", nargs="+", default=[os.path.join(ROOT, "build", "release", "octet")],
                   help="the CLI, or several as LABEL=PATH to compare builds in one interleaved run (engine "
                        "'octet LABEL'; the first one quantizes)")
    p.add_argument("--variants", nargs="*", default=None, help="only these variants (default: all)")
    p.add_argument("--engines", nargs="*", default=None, help="only these engines: octet, ort, openvino (default: all)")
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--runs", type=int, default=2, help="timed generations per process (after one warm-up)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--work", default="/tmp/octet_seq2seq_generation", help="quantized sets are kept here")
    p.add_argument("--out", default=None)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-folder", help=argparse.SUPPRESS)
    p.add_argument("--inputs", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a)
    if len(a.octet) == 1 and "=" not in a.octet[0]:
        a.octets = [("octet", a.octet[0])]
    else:
        a.octets = [(("octet " + x.split("=", 1)[0]), x.split("=", 1)[1]) if "=" in x else ("octet " + x, x)
                    for x in a.octet]
    a.octet = a.octets[0][1]
    import common
    import exports

    os.makedirs(a.work, exist_ok=True)
    results = {"started": datetime.datetime.now(datetime.timezone.utc).isoformat(), "settings": vars(a),
               "models": {}}
    for name in a.models:
        # An export already in the cache is used as it is (a checkout whose export script
        # looks newer would otherwise re-export the shared cache).
        folder = os.path.join(common.exports_dir(), name)
        if not os.path.exists(os.path.join(folder, "export_info.json")):
            folder = exports.ensure(name)
        with np.load(os.path.join(folder, "reference.npz")) as z:
            ref = {k: z[k] for k in z.files}
        enc = {"input_features": ref["input_features"]} if "input_features" in ref else \
            {"input_ids": ref["input_ids"], "attention_mask": ref["attention_mask"]}
        inputs_npz = os.path.join(a.work, f"{name}_inputs.npz")
        np.savez(inputs_npz, **enc)
        features = None
        if "input_features" in enc:
            features = os.path.join(a.work, f"{name}_features.npy")
            np.save(features, enc["input_features"])
        sets = variants(a, folder, a.work)
        entry = results["models"][name] = {"sizes_mb": {v: sizes(f) for v, f in sets.items()}, "runs": {},
                                           "load_before": load()}
        for r in range(a.rounds):
            for variant, f in sets.items():
                if a.variants and variant not in a.variants:
                    continue
                engines = [x for e in ENGINES[variant] if not a.engines or e in a.engines
                           for x in ([o[0] for o in a.octets] if e == "octet" else [e])]
                for engine in engines:
                    got = run_engine(a, engine, f, inputs_npz, features)
                    print(f"round {r} {name} {variant} {engine}: "
                          f"{ {k: v for k, v in got.items() if k != 'ids'} }", file=sys.stderr, flush=True)
                    entry["runs"].setdefault(f"{variant} | {engine}", []).append(got)
        entry["load_after"] = load()
        want = next((x["ids"] for x in entry["runs"].get("fp32 | ort", []) if "ids" in x), None)
        table = {}
        for key, runs in entry["runs"].items():
            ok = [x for x in runs if "error" not in x]
            if not ok:
                table[key] = {"error": runs[-1]["error"]}
                continue
            row = {"time_to_first_token_ms": round(min(x["time_to_first_token_ms"] for x in ok), 1),
                   "decode_tokens_per_second": round(max(x["decode_tokens_per_second"] for x in ok), 1)}
            if want:
                row["tokens_agreeing_with_ort_fp32"] = sum(a_ == b for a_, b in zip(ok[-1]["ids"], want))
            table[key] = row
        entry["table"] = table
        print(json.dumps({name: table}, indent=1), file=sys.stderr, flush=True)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M")
    path = a.out or os.path.join(HERE, "results", f"seq2seq_generation_{stamp}.json")
    with open(path, "w") as fh:
        json.dump(results, fh, indent=1)
    print(path)


if __name__ == "__main__":
    main()
