#!/usr/bin/env python3
"""Real pretrained models, every quantizer, every engine: accuracy, speed and quantization cost
in ONE run (issue 14), on real data split into calibration and held-out evaluation sets.

  python3 bench/compare_real.py                                  # all models
  python3 bench/compare_real.py --models minilm_l6,dinov2 --json bench/results/X.json
  python3 bench/compare_real.py --quick --models minilm_l3       # smoke run (minutes)

Prepares what it needs, idempotently (bench/models/): the torch exports (minilm_l6, dinov2,
smollm2; torch on /usr/bin/python3 is installed when missing), the data (real_data.py).

For each model, variants (each quantizer in its own timed process, bench/real_quantize.py):
  fp32 on onnxruntime (the reference), on octet and on OpenVINO;
  octet static (only --calib), static + --smoothquant auto, static with every activation
  calibrated ("octet static qdq", --per-token none), dynamic;
  onnxruntime quantize_dynamic; its transformers optimizer + quantize_dynamic ("ort-best");
  its static QDQ per channel; OpenVINO + NNCF (model_type TRANSFORMER).
All static recipes calibrate on the same samples (calib/<set> of real_data.py).
Accuracy, against the fp32 model's own output on onnxruntime, on the held-out set (octet's
variants run on octet through `octet run`, onnxruntime's on onnxruntime, NNCF's on OpenVINO):
  sentence models: mask mean pooled embedding cosine (mean, min) and nearest-neighbour agreement
    (for each sentence, is its nearest other sentence the same as under fp32);
  ViT: CLS (token 0) cosine (mean, min); the focus model: its saliency map's cosine per image;
  LM: held-out perplexity (next token over 128-token windows) and top-1 agreement with fp32.
Speed: compare.run_engine (each engine in its own process): batch 1 at seq 128 / 224x224 /
a 128-token prompt, --threads threads; --rounds rounds interleaved over all variants, each
variant's best (lowest p50) round kept, every round's p50 in the JSON.
A recipe or engine that fails is recorded with its message; the run goes on."""
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "models"))
import common  # noqa: E402
import compare  # noqa: E402  (machine info, inputs and the per-engine speed runner)
import exports  # noqa: E402
import real_data  # noqa: E402

MODELS = {
    "minilm_l3": dict(kind="sentence", calib="minilm3", output="onnx::Shape_422", inputs=["input_ids", "attention_mask"],
                      dims={"batch_size": 1, "sequence_length": 128},
                      ort_config={"model_type": "bert", "num_heads": 12, "hidden_size": 384}),
    "minilm_l6": dict(kind="sentence", calib="minilm", output="last_hidden_state",
                      inputs=["input_ids", "attention_mask", "token_type_ids"], dims={"batch": 1, "sequence": 128},
                      ort_config={"model_type": "bert", "num_heads": 12, "hidden_size": 384}),
    "minilm_l6_int8": dict(kind="sentence", calib="minilm", output="last_hidden_state",
                           inputs=["input_ids", "attention_mask", "token_type_ids"], dims={"batch": 1, "sequence": 128},
                           ort_config={"model_type": "bert", "num_heads": 12, "hidden_size": 384}),
    "dinov2": dict(kind="vit", calib="vit", output="last_hidden_state", inputs=["pixel_values"], dims={"batch": 1},
                   ort_config={"model_type": "vit", "num_heads": 6, "hidden_size": 384}),
    "dinov2_focus": dict(kind="saliency", calib="focus", output="output_importance", inputs=["input_image"],
                         dims={"batch_size": 1}, ort_config={"model_type": "vit", "num_heads": 6, "hidden_size": 384}),
    "smollm2": dict(kind="lm", calib="smollm2", output="logits", inputs=["input_ids"], dims={"batch": 1, "sequence": 128},
                    ort_config={"model_type": "gpt2", "num_heads": 9, "hidden_size": 576, "ort_static_samples": 8}),
}
# variant -> (quantizer recipe or None for the fp32 file, engine that runs it)
VARIANTS = {
    "fp32 ort": (None, "ort"), "fp32 octet": (None, "octet"), "fp32 openvino": (None, "openvino"),
    "octet static": ("octet-static", "octet"), "octet static+sq": ("octet-static-sq", "octet"),
    "octet static qdq": ("octet-static-qdq", "octet"),
    "octet dynamic": ("octet-dynamic", "octet"), "ort dynamic": ("ort-dynamic", "ort"),
    "ort best": ("ort-best", "ort"), "ort static qdq": ("ort-static-qdq", "ort"), "nncf": ("nncf", "openvino"),
}
REFERENCE = "fp32 ort"
EVAL_CHUNK = {"sentence": 100, "vit": 12, "saliency": 12, "lm": 4}
SPEED = {"sentence": (5, 50), "vit": (3, 20), "saliency": (3, 20), "lm": (2, 8)}  # (warmup, iters)
QUICK_EVAL = {"sentence": 40, "vit": 12, "saliency": 12, "lm": 4}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated (default: all): " + ", ".join(MODELS))
    p.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated (default: all)")
    p.add_argument("--octet", default=os.path.join(ROOT, "build/release/octet"), help="octet CLI (default: %(default)s)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="speed rounds, interleaved (default 3)")
    p.add_argument("--quant-timeout", type=int, default=600, help="seconds per quantizer before it counts as failed")
    p.add_argument("--quick", action="store_true", help="smoke run: small eval sets, 1 round, few iterations")
    p.add_argument("--no-speed", action="store_true", help="accuracy and quantization only")
    p.add_argument("--eval-samples", type=int, default=0,
                   help="use only the first N held-out samples (sentences, crops or windows; default all)")
    p.add_argument("--json", metavar="FILE", help="write the results here (a .md table beside it)")
    p.add_argument("--work", default=None, help="folder for quantized models (default: exports_dir('harness'))")
    p.add_argument("--omp-passive", action="store_true",
                   help="OMP_WAIT_POLICY=passive for every engine (octet's OpenMP threads then sleep instead of "
                        "spinning between kernels: on a machine other jobs keep busy, spinning threads that get "
                        "descheduled stall octet's 2-thread latency many times over; see bench/README.md)")
    p.add_argument("--note", default="")
    a = p.parse_args()
    a.models = [m.strip() for m in a.models.split(",") if m.strip()]
    a.variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    for m in a.models:
        if m not in MODELS:
            p.error(f"unknown model {m}; choose from {', '.join(MODELS)}")
    for v in a.variants:
        if v not in VARIANTS:
            p.error(f"unknown variant {v}; choose from {', '.join(VARIANTS)}")
    if REFERENCE not in a.variants:
        a.variants.insert(0, REFERENCE)
    if a.quick:
        a.rounds = 1
    return a


def last_line(text):
    return (text.strip().splitlines() or ["(no message)"])[-1][:500]


# ---------------------------------------------------------------- evaluation sets

def eval_feeds(spec, data_dir, quick, limit=0):
    """The held-out inputs as a list of feed dicts (chunks) and their number."""
    kind = spec["kind"]
    if kind == "sentence":
        z = dict(np.load(os.path.join(data_dir, "eval", "sentences.npz")))
        n = QUICK_EVAL[kind] if quick else len(z["input_ids"])
        z = {k: v[:n] for k, v in z.items()}
        feeds = {k: z[k] for k in spec["inputs"]}
    elif kind in ("vit", "saliency"):
        z = np.load(os.path.join(data_dir, "eval", "photos.npz"))
        n = QUICK_EVAL[kind] if quick else len(z["pixels"])
        feeds = {spec["inputs"][0]: z["pixels"][:n]}
    else:
        z = np.load(os.path.join(data_dir, "eval", "lm_windows.npz"))
        n = QUICK_EVAL[kind] if quick else len(z["input_ids"])
        feeds = {"input_ids": z["input_ids"][:n]}
    if limit:
        n = min(n, limit)
        feeds = {k: v[:n] for k, v in feeds.items()}
    step = EVAL_CHUNK[kind]
    chunks = [{k: v[i:i + step] for k, v in feeds.items()} for i in range(0, n, step)]
    return chunks, n


def npz_key(files, name):
    if name in files:
        return name
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    if safe in files:
        return safe
    raise KeyError(f"output {name} not in {sorted(files)}")


def run_eval(engine, path, chunks, output, kind, octet, threads, tmp):
    """reduce() of the output named `output` on every chunk, concatenated on axis 0."""
    outs = []
    if engine == "octet":
        for i, feeds in enumerate(chunks):
            inp, out = os.path.join(tmp, f"eval_in_{i}.npz"), os.path.join(tmp, f"eval_out_{i}.npz")
            np.savez(inp, **feeds)
            proc = subprocess.run([octet, "run", path, "--input", inp, "--out", out, "--threads", str(threads)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"octet run exited {proc.returncode}: {last_line(proc.stderr)}")
            with np.load(out) as z:
                outs.append(reduce(kind, z[npz_key(z.files, output)], feeds))
            os.remove(out)
    elif engine == "ort":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        outs = [reduce(kind, sess.run([output], feeds)[0], feeds) for feeds in chunks]
    else:
        import openvino as ov

        compiled = ov.Core().compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                          "INFERENCE_PRECISION_HINT": "f32"})
        port = next(o for o in compiled.outputs if output in o.get_names())
        outs = [reduce(kind, np.array(compiled(feeds)[port]), feeds) for feeds in chunks]
    return {k: np.concatenate([o[k] for o in outs], axis=0) for k in outs[0]}


def reduce(kind, out, feeds):
    """What the metrics need from one chunk's output (an LM's logits are 25 MB per window)."""
    if kind == "sentence":
        return {"embedding": mean_pool(out, feeds["attention_mask"])}
    if kind == "vit":
        return {"cls": out[:, 0].astype(np.float64)}
    if kind == "saliency":
        return {"map": out.reshape(len(out), -1).astype(np.float64)}
    nll, top = token_nll(out, feeds["input_ids"])
    return {"nll": nll, "top1": top}


def cosines(a, b):
    a = a.reshape(len(a), -1).astype(np.float64)
    b = b.reshape(len(b), -1).astype(np.float64)
    return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-30)


def mean_pool(h, mask):
    m = mask[..., None].astype(np.float64)
    return (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)


def nearest_neighbours(e):
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    s = e @ e.T
    np.fill_diagonal(s, -np.inf)
    return s.argmax(1)


def token_nll(logits, ids):
    """Negative log-likelihood of tokens 1.. given the logits at 0..; the argmax at every position."""
    lg = logits[:, :-1].astype(np.float64)
    top = lg.max(-1, keepdims=True)
    lse = np.log(np.exp(lg - top).sum(-1)) + top[..., 0]
    nll = lse - np.take_along_axis(lg, ids[:, 1:, None], -1)[..., 0]
    return nll, logits.argmax(-1)


def metrics(kind, got, ref):
    if kind == "sentence":
        c = cosines(got["embedding"], ref["embedding"])
        return {"cosine_mean": float(c.mean()), "cosine_min": float(c.min()),
                "nn_agreement": float((nearest_neighbours(got["embedding"]) ==
                                       nearest_neighbours(ref["embedding"])).mean())}
    if kind == "vit":
        c = cosines(got["cls"], ref["cls"])
        return {"cls_cosine_mean": float(c.mean()), "cls_cosine_min": float(c.min())}
    if kind == "saliency":
        c = cosines(got["map"], ref["map"])
        return {"map_cosine_mean": float(c.mean()), "map_cosine_min": float(c.min())}
    ppl, ppl_ref = float(np.exp(got["nll"].mean())), float(np.exp(ref["nll"].mean()))
    return {"perplexity": ppl, "perplexity_fp32": ppl_ref, "perplexity_change": ppl / ppl_ref - 1,
            "top1_agreement": float((got["top1"] == ref["top1"]).mean())}


# ---------------------------------------------------------------- one model

def quantize(recipe, spec, fp32, out, calib, args):
    cmd = [sys.executable, os.path.join(HERE, "real_quantize.py"), recipe, fp32, out, calib,
           "--config", json.dumps(spec["ort_config"]), "--octet", args.octet]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.quant_timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.quant_timeout} s (--quant-timeout)"}
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {last_line(proc.stderr)}"}
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    report["file_mb"] = sum(os.path.getsize(f) for f in {out, os.path.splitext(out)[0] + ".bin"}
                            if os.path.exists(f)) / 2**20
    return report


def run_model(name, args, data_dir, work, save=lambda entry: None):
    """One model's quantizers, accuracy and speed; save(entry) after each stage keeps the partial
    results in the JSON (an LM's run is long)."""
    spec = MODELS[name]
    entry = {"model": name, "kind": spec["kind"], "variants": {}}
    try:
        entry["info"] = exports.describe(name)
        fp32 = exports.ensure(name)
    except Exception as e:  # an export that cannot be built: the whole model is a failure
        entry["error"] = f"export: {e}"
        return entry
    calib = os.path.join(data_dir, "calib", spec["calib"])
    entry["calib"] = {"folder": calib, "samples": len([f for f in os.listdir(calib) if f.endswith(".npz")])}
    mdir = os.path.join(work, name)
    os.makedirs(mdir, exist_ok=True)
    files = {}
    for v in args.variants:
        recipe, engine = VARIANTS[v]
        if engine == "openvino" and not has_openvino():
            entry["variants"][v] = {"error": "openvino is not installed (pip install openvino nncf)"}
            continue
        if recipe is None:
            files[v] = fp32
            entry["variants"][v] = {"engine": engine}
            continue
        out = os.path.join(mdir, recipe + (".xml" if recipe == "nncf" else ".onnx"))
        print(f"[{name}] quantize {v} ...", file=sys.stderr, flush=True)
        q = quantize(recipe, spec, fp32, out, calib, args)
        entry["variants"][v] = {"engine": engine, "quantize": q}
        if "error" not in q:
            files[v] = out
        print(f"[{name}]   {q}", file=sys.stderr, flush=True)

    save(entry)
    # Accuracy on the held-out set.
    chunks, n = eval_feeds(spec, data_dir, args.quick, args.eval_samples)
    entry["eval_samples"] = n
    with tempfile.TemporaryDirectory(prefix="octet_real_") as tmp:
        ref = None
        for v in [REFERENCE] + [v for v in files if v != REFERENCE]:
            if v not in files:
                continue
            e = entry["variants"][v]
            print(f"[{name}] evaluate {v} on {n} held-out samples ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                got = run_eval(e["engine"], files[v], chunks, spec["output"], spec["kind"], args.octet, args.threads,
                               tmp)
                if ref is None:
                    ref = got
                e["accuracy"] = metrics(spec["kind"], got, ref)
                if spec["kind"] == "lm" and v == REFERENCE:
                    entry["perplexity_fp32"] = e["accuracy"]["perplexity_fp32"]
            except Exception as ex:
                e["accuracy"] = {"error": str(ex)[-500:]}
                if v == REFERENCE:
                    entry["error"] = f"the fp32 reference failed on onnxruntime: {ex}"
                    return entry
            e["eval_seconds"] = time.perf_counter() - t0
            print(f"[{name}]   {e['accuracy']}", file=sys.stderr, flush=True)

        save(entry)
        if not args.no_speed:
            speed(name, spec, files, entry, args, tmp)
    return entry


def speed(name, spec, files, entry, args, tmp):
    warmup, iters = SPEED[spec["kind"]]
    if args.quick:
        warmup, iters = 1, max(3, iters // 5)
    run_args = argparse.Namespace(warmup=warmup, iters=iters, threads=args.threads, octet=args.octet)
    inputs = os.path.join(tmp, "speed_inputs.npz")
    np.savez(inputs, **compare.make_inputs(files[REFERENCE], spec["dims"], 0))
    entry["speed_setting"] = {"dims": spec["dims"], "warmup": warmup, "iters": iters, "threads": args.threads,
                              "rounds": args.rounds}
    for r in range(args.rounds):
        for v, path in files.items():
            e = entry["variants"][v]
            print(f"[{name}] speed round {r + 1}/{args.rounds}: {v}", file=sys.stderr, flush=True)
            rep = compare.run_engine(e["engine"], run_args, path, spec["dims"], inputs,
                                     os.path.join(tmp, "speed_out.npz"))
            rounds = e.setdefault("speed_rounds_p50_ms", [])
            if "p50_ms" not in rep:
                e["speed"] = {"error": rep.get("error") or rep.get("skipped")}
                rounds.append(None)
                continue
            rounds.append(rep["p50_ms"])
            best = e.get("speed")
            if not best or "p50_ms" not in best or rep["p50_ms"] < best["p50_ms"]:
                rep.pop("samples_ms", None)
                e["speed"] = rep


def has_openvino():
    try:
        import openvino  # noqa: F401
        return True
    except ImportError:
        return False


# ---------------------------------------------------------------- report

ACC_COLUMNS = {
    "sentence": [("cosine_mean", "cos mean", "{:.4f}"), ("cosine_min", "cos min", "{:.4f}"),
                 ("nn_agreement", "NN agree", "{:.3f}")],
    "vit": [("cls_cosine_mean", "CLS cos mean", "{:.4f}"), ("cls_cosine_min", "CLS cos min", "{:.4f}")],
    "saliency": [("map_cosine_mean", "map cos mean", "{:.4f}"), ("map_cosine_min", "map cos min", "{:.4f}")],
    "lm": [("perplexity", "perplexity", "{:.2f}"), ("perplexity_change", "vs fp32", "{:+.1%}"),
           ("top1_agreement", "top-1 agree", "{:.3f}")],
}


def table(results):
    lines = []
    for r in results:
        info = r.get("info", {})
        lines.append(f"\n### {r['model']} ({info.get('source_package', '?')}, "
                     f"{info.get('parameters', 0) / 1e6:.1f}M params, {info.get('file_mb', 0):.1f} MiB"
                     f"{', foreign export' if info.get('foreign') else ''}; {r.get('eval_samples', '?')} held-out samples, "
                     f"{r.get('calib', {}).get('samples', '?')} calibration samples)\n")
        if "error" in r and not r["variants"]:
            lines.append(f"FAILED: {r['error']}\n")
            continue
        cols = ACC_COLUMNS[r["kind"]]
        head = ["variant", "engine", *[c[1] for c in cols], "p50 ms", "peak RSS MB", "quant s", "quant RSS MB", "file MB",
                "notes"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for v, e in r["variants"].items():
            acc = e.get("accuracy", {})
            q = e.get("quantize", {})
            sp = e.get("speed", {})
            notes = []
            for what, d in (("quantize", q), ("accuracy", acc), ("speed", sp)):
                if "error" in d:
                    notes.append(f"{what} failed: {d['error']}")
            if "error" in e:
                notes.append(e["error"])
            row = [v, e.get("engine", "")]
            row += [fmt.format(acc[k]) if k in acc else "-" for k, _, fmt in cols]
            row += [f"{sp['p50_ms']:.2f}" if "p50_ms" in sp else "-",
                    f"{sp['peak_rss_mb']:.0f}" if "peak_rss_mb" in sp else "-",
                    f"{q['seconds']:.1f}" if "seconds" in q else "-",
                    f"{q['peak_rss_mb']:.0f}" if "peak_rss_mb" in q else "-",
                    f"{q['file_mb']:.1f}" if "file_mb" in q else "-",
                    "; ".join(n.replace("|", "/") for n in notes)]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def write_report(args, info, started, data_dir, results, final):
    info["load_average_end"] = list(os.getloadavg())
    report = {"note": args.note, "complete": final, "machine": info, "total_seconds": time.time() - started,
              "settings": {"threads": args.threads, "rounds": args.rounds, "quick": args.quick,
                           "quant_timeout_s": args.quant_timeout, "variants": args.variants},
              "data": real_data.describe(data_dir), "results": results}
    md = (f"# Real models, {info['date']}\n\n{info['cpu']}, {info['cores']} cores, {args.threads} threads, "
          f"OMP_WAIT_POLICY {info['OMP_WAIT_POLICY']}; load average {info['load_average_start'][0]:.1f} at start, "
          f"{info['load_average_end'][0]:.1f} at end; commit {info['commit'][:10]}; "
          f"{', '.join(f'{k} {v}' for k, v in info['versions'].items())}\n\n{args.note}\n" + table(results) + "\n")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
        with open(os.path.splitext(args.json)[0] + ".md", "w") as f:
            f.write(md)
        if final:
            print(f"wrote {args.json} and its .md", file=sys.stderr)
    return md


def main():
    args = parse_args()
    common.require_bench_packages("compare_real.py")
    if args.omp_passive:
        os.environ["OMP_WAIT_POLICY"] = "passive"  # inherited by every engine and quantizer process
    started = time.time()
    info = compare.machine_info(args)
    for mod in ("nncf",):
        try:
            info["versions"][mod] = __import__(mod).__version__
        except ImportError:
            pass
    info["load_average_start"] = info.pop("load_average")
    info["threads"] = args.threads
    info["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY", "(unset)")
    print(f"{info['cpu']}, {info['cores']} cores, load {info['load_average_start']}; {args.threads} threads; "
          f"octet {info['versions'].get('octet') or 'MISSING at ' + args.octet}", file=sys.stderr)
    data_dir = real_data.ensure()
    work = args.work or common.exports_dir("harness")
    results = []
    for name in args.models:
        t0 = time.time()
        try:
            entry = run_model(name, args, data_dir, work,
                              save=lambda e: write_report(args, info, started, data_dir, results + [e], final=False))
        except Exception as e:  # keep the other models' results
            entry = {"model": name, "kind": MODELS[name]["kind"], "variants": {}, "error": f"harness: {e!r}"}
        entry["seconds"] = time.time() - t0
        results.append(entry)
        print(table([entry]), file=sys.stderr, flush=True)
        write_report(args, info, started, data_dir, results, final=False)  # a later crash keeps these
    md = write_report(args, info, started, data_dir, results, final=True)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
