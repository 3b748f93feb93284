#!/usr/bin/env python3
"""Decode speed of SmolLM2-135M against the runtimes built for generation (issue 16): in one run,
onnxruntime-genai and openvino-genai (and octet, once its `generate` CLI exists), fp32, int8 and
int4 weights, the same 128-token prompt, 128 new greedy tokens, the same thread count.

  python3 bench/decode.py                                   # everything, 3 rounds
  python3 bench/decode.py --json bench/results/$(date -u +%F)_decode_<cpu>.json
  python3 bench/decode.py --engines ortgenai --precisions fp32 --rounds 1 --no-ppl   # a smoke run

Prepares what it needs, idempotently: the packages of bench/requirements-decode.txt (pip), the
SmolLM2 KV-cache export and the held-out windows (bench/models), and one model folder per engine
and precision under exports_dir("decode") (bench/decode_prepare.py: genai_config.json +
MatMulNBits for onnxruntime-genai, a stateful IR + nncf.compress_weights for openvino-genai,
`octet quantize --weights` for octet: GPTQ calibrated on windows of the calibration documents by
default, --octet-method rtn for round to nearest). Each folder is rebuilt when the export, the
scripts or the octet binary changed.

Measures, each engine x precision in its own process (bench/decode_engines.py), rounds interleaved,
each number's best round kept (lowest time to first token, highest decode tokens/s; every round is
in the JSON): time to first token, decode tokens/s, peak RSS. Checks every engine's fp32 tokens
against onnxruntime's plain greedy loop on the same ONNX (ortloop; also timed). Perplexity on the
held-out windows for each engine x precision: the same ONNX file on onnxruntime (ort-genai's rows;
whether ort-genai's get_logits gives every prompt position was not tried) and the same IR on openvino.Core
(openvino-genai's rows), octet's through `octet run`. A step that fails or runs past its time limit
is recorded with its message; the run goes on.

Bandwidth: the machine's read bandwidth, measured in the same run (bench_decode_bandwidth's
memory_read, sums of 64 MiB to 2 GiB with 1 and 2 threads, before the rounds and after them), and for
every engine x precision the weight bytes a decode step reads (bench/decode_bytes.py: the model's
constants less the token-embedding table) times its decode tokens/s: the achieved weight bytes/s and
their share of the 2-thread read bandwidth (issue 16's goal: >= 70%), both of the 2 GiB read (the
memory's rate) and of a read of the same size as the step's weights (the smallest measured size that
holds them): where the last-level cache is large (480 MiB reported on the AMX Xeon), part of a step's
weights can stay in it, and only the same-size read says how close the GEMVs come to what the machine
gives that working set."""
import argparse
import collections
import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "models"))

ENGINES = ("ortgenai", "openvino", "octet", "ortloop")
PRECISIONS = ("fp32", "int8", "int4")
LABEL = {"ortgenai": "onnxruntime-genai", "openvino": "openvino-genai", "octet": "octet",
         "ortloop": "onnxruntime (plain greedy loop)"}
PACKAGES = {"onnxruntime-genai": "onnxruntime_genai", "openvino-genai": "openvino_genai",
            "openvino-tokenizers": "openvino_tokenizers", "transformers": "transformers", "openvino": "openvino",
            "nncf": "nncf", "gguf": "gguf", "tokenizers": "tokenizers"}
NOT_AVAILABLE = "not available on this branch"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of " + ", ".join(ENGINES))
    p.add_argument("--precisions", default=",".join(PRECISIONS))
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds; each number's best is kept (default 3)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--prompt-window", type=int, default=0, help="which held-out window is the prompt (default 0)")
    p.add_argument("--timeout", type=int, default=600, help="seconds for one engine run before it counts as failed")
    p.add_argument("--prepare-timeout", type=int, default=1800, help="seconds for one model preparation")
    p.add_argument("--no-ppl", action="store_true", help="skip the perplexity pass")
    p.add_argument("--ppl-windows", type=int, default=0, help="use only the first N held-out windows (default all)")
    p.add_argument("--octet", default=os.path.join(ROOT, "build/release/octet"))
    p.add_argument("--octet-method", choices=["gptq", "rtn"],
                   help="octet's int8/int4 rounding (default decode_prepare.OCTET_RECIPES: GPTQ on calib/smollm2)")
    p.add_argument("--octet-block", type=int, help="octet's weight block (default OCTET_RECIPES')")
    p.add_argument("--octet-asymmetric", action="store_true", default=None,
                   help="octet: a zero point per block (default OCTET_RECIPES')")
    p.add_argument("--bandwidth-tool", default=os.path.join(ROOT, "build/release/bench_decode_bandwidth"),
                   help="Google Benchmark binary with memory_read (bench/cpp/decode_bandwidth.cpp)")
    p.add_argument("--omp-passive", action="store_true",
                   help="OMP_WAIT_POLICY=passive for every engine (non-spinning thread pools; see bench/README.md)")
    p.add_argument("--ov-attention-backend", default="PA", choices=["SDPA", "PA"],
                   help="openvino-genai LLMPipeline's ATTENTION_BACKEND (default PA, LLMPipeline's own CPU default: "
                        "its paged-attention pipeline, ~2x the decode rate here; SDPA: the stateful model as is)")
    p.add_argument("--json", metavar="FILE", help="write the results here (a .md table beside it)")
    p.add_argument("--note", default="")
    a = p.parse_args()
    a.engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    a.precisions = [x.strip() for x in a.precisions.split(",") if x.strip()]
    for e in a.engines:
        if e not in ENGINES:
            p.error(f"unknown engine {e}; choose from {', '.join(ENGINES)}")
    for x in a.precisions:
        if x not in PRECISIONS:
            p.error(f"unknown precision {x}; choose from {', '.join(PRECISIONS)}")
    return a


def last_line(text):
    return (text.strip().splitlines() or ["(no message)"])[-1][:600]


# ---------------------------------------------------------------- setup

def ensure_packages():
    """pip install the pinned requirements when a package is missing or at another version."""
    wanted = {}
    for req in ("requirements-real.txt", "requirements-decode.txt"):
        with open(os.path.join(HERE, req)) as f:
            for line in f:
                line = line.split("#")[0].strip()
                if "==" in line:
                    name, version = line.split("==")
                    wanted[name.strip()] = version.strip()
    stale = []
    for name, version in wanted.items():
        try:
            if importlib.metadata.version(name) != version:
                stale.append(name)
        except importlib.metadata.PackageNotFoundError:
            stale.append(name)
    if stale:
        print(f"decode: installing {', '.join(stale)}", file=sys.stderr)
        for req in ("requirements-real.txt", "requirements-decode.txt"):
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-r", os.path.join(HERE, req)], check=True)
    return {name: importlib.metadata.version(name) for name in [*wanted, "onnxruntime", "onnx", "numpy"]
            if _installed(name)}


def _installed(name):
    try:
        importlib.metadata.version(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def cpu_info():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpu": model, "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version()}


def stamp_ok(folder, sources):
    """The folder's prepare.json exists and was made from these sources (common.up_to_date)."""
    import common

    return common.up_to_date(os.path.join(folder, "prepare.json"), *sources)


def prepare(engine, precision, src, a, log):
    """The model (folder or file) this engine x precision runs, building it when stale; None and a
    message when it cannot be built."""
    import common

    folder = common.exports_dir("decode", engine, precision)
    sources = [src, os.path.join(HERE, "decode_prepare.py"), os.path.join(HERE, "models", "common.py")]
    if engine == "octet":
        # "--max-new-tokens": CLI11 answers `octet UNKNOWN --help` with the main help and exit 0
        if not octet_has(a.octet, "generate", "--max-new-tokens"):
            return None, NOT_AVAILABLE + f" ({a.octet} has no `generate` subcommand)"
        if precision == "fp32":
            return src, None
        if not octet_has(a.octet, "quantize", "--weights"):
            return None, NOT_AVAILABLE + " (`octet quantize` has no --weights)"
        import decode_prepare

        r = decode_prepare.octet_recipe(precision, a.octet_method, a.octet_block, a.octet_asymmetric)
        tag = decode_prepare.octet_tag(precision, r)
        folder = common.exports_dir("decode", engine, tag)
        sources = [src, a.octet, os.path.join(HERE, "decode_prepare.py")]
        if not stamp_ok(folder, sources):
            print(f"decode: preparing octet {tag} in {folder}", file=sys.stderr)
            cmd = [sys.executable, os.path.join(HERE, "decode_prepare.py"), "octet", precision, src, folder,
                   "--octet", a.octet, "--method", r["method"], "--block", str(r["block"])]
            if r["asymmetric"]:
                cmd.append("--asymmetric")
            ok, out = run_step(cmd, a.prepare_timeout)
            if not ok:
                return None, out
            write_stamp(folder, json.loads(out.strip().splitlines()[-1]), sources)
        log[f"{engine} {precision}"] = read_stamp(folder)
        return os.path.join(folder, "model.onnx"), None
    if engine == "ortloop":
        return src, None  # fp32 only (see main): the reference the fp32 rows are checked against
    if not stamp_ok(folder, sources):
        print(f"decode: preparing {engine} {precision} in {folder}", file=sys.stderr)
        cmd = [sys.executable, os.path.join(HERE, "decode_prepare.py"), engine, precision, src, folder]
        ok, out = run_step(cmd, a.prepare_timeout)
        if not ok:
            return None, out
        write_stamp(folder, json.loads(out.strip().splitlines()[-1]), sources)
    log[f"{engine} {precision}"] = read_stamp(folder)
    return folder, None


def write_stamp(folder, info, sources):
    import common

    with open(os.path.join(folder, "prepare.json"), "w") as f:
        json.dump(info, f, indent=1)
    common.record_sources(os.path.join(folder, "prepare.json"), *sources)


def read_stamp(folder):
    with open(os.path.join(folder, "prepare.json")) as f:
        return json.load(f)


def run_step(cmd, timeout, env=None):
    """(ok, stdout) or (False, the error's last line)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout} s: {' '.join(os.path.basename(c) for c in cmd[:4])}"
    if p.returncode != 0:
        return False, f"exit {p.returncode}: {last_line(p.stderr or p.stdout)}"
    return True, p.stdout


_octet_help = {}


def octet_has(octet, sub, flag=None):
    key = (octet, sub)
    if key not in _octet_help:
        try:
            p = subprocess.run([octet, sub, "--help"], capture_output=True, text=True, timeout=60)
            _octet_help[key] = p.stdout if p.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            _octet_help[key] = None
    h = _octet_help[key]
    return h is not None and (flag is None or flag in h)


def read_bandwidth(tool):
    """memory_read's GB/s (wall clock) by thread count and buffer size, or {"error": ...}:
    threads_T_mib_S_gb_s per size, and threads_T_gb_s the largest size's (the memory's rate)."""
    if not os.path.exists(tool):
        return {"error": f"{tool} not built (needs libbenchmark-dev)"}
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        ok, out = run_step([tool, "--benchmark_filter=^memory_read", "--benchmark_min_time=1",
                            f"--benchmark_out={f.name}", "--benchmark_out_format=json"], 300)
        if not ok:
            return {"error": out}
        with open(f.name) as j:
            rows = json.load(j)["benchmarks"]
    # names: memory_read/threads:T/MiB:S/real_time; "unshared": bytes over CPU time / threads, the
    # rate had the threads run all the time (decode_bandwidth.cpp), which other work on a shared host
    # lowers less
    out, largest = {}, {}
    for r in rows:
        if r.get("run_type", "iteration") != "iteration":
            continue
        args = dict(part.split(":", 1) for part in r["name"].split("/")[1:] if ":" in part)
        t, mib = args["threads"], int(args["MiB"])
        out[f"threads_{t}_mib_{mib}_gb_s"] = r["bytes_per_second"] / 1e9
        if mib >= largest.get(t, (0, None))[0]:
            largest[t] = (mib, r)
    for t, (mib, r) in largest.items():
        out[f"threads_{t}_gb_s"] = r["bytes_per_second"] / 1e9
        if "bytes_per_second_unshared" in r:
            out[f"threads_{t}_unshared_gb_s"] = r["bytes_per_second_unshared"] / 1e9
    return out


def same_size_read(measurements, step_bytes):
    """(MiB, GB/s): the 2-thread read of the smallest measured size that holds step_bytes (the
    largest size when none does), the higher of the measurements; None when none was taken."""
    by_size = collections.defaultdict(list)
    for m in measurements:
        for k, v in m.items():
            parts = k.split("_")
            if k.startswith("threads_2_mib_") and isinstance(v, float):
                by_size[int(parts[3])].append(v)
    if not by_size:
        return None
    sizes = sorted(by_size)
    mib = next((s for s in sizes if s * 2**20 >= step_bytes), sizes[-1])
    return mib, max(by_size[mib])


def step_bytes(engine, model):
    """bench/decode_bytes.py's weight bytes for this engine's model, or {"error": ...}."""
    kind, path = ("openvino", model) if engine == "openvino" else (
        "onnx", os.path.join(model, "model.onnx") if os.path.isdir(model) else model)
    ok, out = run_step([sys.executable, os.path.join(HERE, "decode_bytes.py"), kind, path], 600)
    return json.loads(out.strip().splitlines()[-1]) if ok else {"error": out}


# ---------------------------------------------------------------- runs

def generate(engine, model, prompt_path, a, env, eos):
    cmd = [sys.executable, os.path.join(HERE, "decode_engines.py"), "generate", engine, model, prompt_path,
           "--new-tokens", str(a.new_tokens), "--threads", str(a.threads), "--eos", str(eos), "--octet", a.octet]
    t0 = time.perf_counter()
    ok, out = run_step(cmd, a.timeout, env)
    if not ok:
        return {"error": out}
    res = json.loads(out.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t0
    return res


def perplexity(engine, precision, model, windows, a, env, tmp):
    """Per-token nll and argmax on the held-out windows, or an error."""
    ppl_engine, path = {"octet": ("octet", model), "ortgenai": ("ort", os.path.join(model, "model.onnx") if os.path.isdir(model) else model),
                        "ortloop": ("ort", model), "openvino": ("openvino", model)}[engine]
    out = os.path.join(tmp, f"ppl_{engine}_{precision}.npz")
    cmd = [sys.executable, os.path.join(HERE, "decode_engines.py"), "ppl", ppl_engine, path, windows, out,
           "--threads", str(a.threads), "--limit", str(a.ppl_windows), "--octet", a.octet]
    ok, text = run_step(cmd, a.timeout, env)
    if not ok:
        return {"error": text}
    res = json.loads(text.strip().splitlines()[-1])
    res["via"] = {"ort": "onnxruntime InferenceSession on the same ONNX file",
                  "openvino": "openvino.Core on the same stateful IR",
                  "octet": "`octet run` on the same ONNX file"}[ppl_engine]
    res["npz"] = out
    return res


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def best(rounds, key, pick):
    vals = [r[key] for r in rounds if r.get(key) is not None]
    return pick(vals) if vals else None


# ---------------------------------------------------------------- report

def table(results):
    rows = ["| engine | weights | TTFT ms | decode tok/s | peak RSS MB | perplexity | top-1 vs fp32 ort | "
            "weight MiB / step | weight GB/s | % of read bw (2 GiB wall / unshared / same size) | fp32 tokens = ort loop | "
            "note |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for key, r in results["variants"].items():
        ppl = r.get("perplexity", {})
        bw = r.get("bandwidth", {})
        f = lambda v, fmt: (fmt % v) if isinstance(v, (int, float)) else "-"  # noqa: E731
        note = r.get("error") or ppl.get("error") or bw.get("error") or ""
        mb = bw.get("per_token_bytes") / 2**20 if isinstance(bw.get("per_token_bytes"), int) else None
        rows.append(f"| {LABEL[r['engine']]} | {r['precision']} | {f(r.get('ttft_ms'), '%.1f')} | "
                    f"{f(r.get('decode_tok_s'), '%.1f')} | {f(r.get('peak_rss_mb'), '%.0f')} | "
                    f"{f(ppl.get('perplexity'), '%.3f')} | {f(ppl.get('top1_agreement'), '%.4f')} | "
                    f"{f(mb, '%.1f')} | {f(bw.get('achieved_gb_s'), '%.2f')} | {f(bw.get('percent_of_read'), '%.0f%%')} / {f(bw.get('percent_of_unshared'), '%.0f%%')} / "
                    f"{f(bw.get('percent_of_same_size_read'), '%.0f%%')} | "
                    f"{r.get('matches_ortloop', '-')} | {note[:160]} |")
    return "\n".join(rows)


def save(results, path):
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    md = os.path.splitext(path)[0] + ".md"
    m = results["machine"]
    limit = results["settings"].get("ppl_windows") or 0
    windows = f"the first {limit} of the 32" if limit else "the 32"
    with open(md, "w") as f:
        f.write(f"# Decode: SmolLM2-135M, {results['settings']['prompt_tokens']}-token prompt, "
                f"{results['settings']['new_tokens']} new tokens, greedy, {results['settings']['threads']} threads\n\n")
        f.write(f"{m['cpu']} ({m['cores']} cores); load average {results['load_average_start']} at start, "
                f"{results.get('load_average_end')} at end. Best of {results['settings']['rounds']} interleaved "
                f"rounds per number. Generated by `bench/decode.py` {results['commit']} on {results['date']}.\n\n")
        f.write("TTFT: from handing over the prompt ids to the first new token, in the first generate call after "
                "the model is loaded (the same for every engine; octet's CLI makes one call per process). Decode "
                "tok/s: the tokens after the first over their time. Peak RSS: the engine process's high-water "
                f"mark. Perplexity: {windows} held-out 128-token windows, through the same file on "
                "onnxruntime (onnxruntime-genai rows), openvino.Core (openvino-genai rows) or `octet run`; "
                "top-1: agreement of the argmax with the fp32 onnxruntime model at every position.\n\n")
        bw = results.get("read_bandwidth", {})
        f.write("Weight MiB / step: the model's constants less the token-embedding table (one row of it is read per "
                "token), bench/decode_bytes.py; weight GB/s: that times decode tok/s; % of read bw: of the machine's "
                "2-thread read bandwidth measured in this run, the higher of before and after the rounds "
                "(bench_decode_bandwidth memory_read, a 2 GiB sum; wall clock, and 'unshared': over CPU time, what "
                "the rate would be had no other work taken the cores), and of a read of the step's own size (the "
                "smallest of 64 MiB to 2 GiB that holds its weights: a large last-level cache keeps part of "
                "them): "
                + ", ".join(f"{k}: " + ", ".join(f"{n.replace('_gb_s', '')} {v:.1f} GB/s" for n, v in x.items()
                                                  if isinstance(v, float)) + (x.get("error") or "")
                            for k, x in bw.items()) + ".\n\n")
        f.write(table(results) + "\n\nVersions: " + ", ".join(f"{k} {v}" for k, v in results["versions"].items())
                + "\n\nRecipes:\n\n")
        for k, v in results["prepared"].items():
            f.write(f"- {k}: {v.get('recipe', v)}\n")
        if results.get("note"):
            f.write(f"\n{results['note']}\n")


def main():
    a = parse_args()
    versions = ensure_packages()
    import numpy as np

    import common
    import exports
    import real_data

    env = dict(os.environ)
    if a.omp_passive:
        env["OMP_WAIT_POLICY"] = "passive"
    env["DECODE_OV_ATTENTION_BACKEND"] = a.ov_attention_backend
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "commit": commit, "note": a.note, "machine": cpu_info(), "versions": versions,
               "load_average_start": [round(x, 2) for x in os.getloadavg()],
               "settings": {"threads": a.threads, "new_tokens": a.new_tokens, "rounds": a.rounds,
                            "omp_passive": a.omp_passive, "timeout_s": a.timeout,
                            "ov_attention_backend": a.ov_attention_backend, "ppl_windows": a.ppl_windows},
               "prepared": {}, "variants": {}}
    exports.ensure("smollm2")
    src = exports.with_past_path()
    data = real_data.ensure()
    windows = os.path.join(data, "eval", "lm_windows.npz")
    prompt = np.load(windows)["input_ids"][a.prompt_window]
    tmp = tempfile.mkdtemp(prefix="octet_decode_")
    prompt_path = os.path.join(tmp, "prompt.npy")
    np.save(prompt_path, prompt[None].astype(np.int64))
    import decode_prepare

    special = decode_prepare.special_tokens()
    eos = special["eos"][0]
    results["settings"].update(prompt_tokens=int(prompt.size), prompt_window=a.prompt_window,
                               prompt_ids=[int(t) for t in prompt], eos_token_id=eos,
                               model=src, model_mb=os.path.getsize(src) / 2**20)
    if "octet" in a.engines:
        results["versions"]["octet"] = (subprocess.run([a.octet, "--version"], capture_output=True, text=True)
                                        .stdout.strip() if os.path.exists(a.octet) else f"{a.octet} not built")

    results["read_bandwidth"] = {"before": read_bandwidth(a.bandwidth_tool)}
    print(f"decode: read bandwidth {results['read_bandwidth']['before']}", file=sys.stderr)
    models = {}
    for engine in a.engines:
        for precision in a.precisions:
            if engine == "ortloop" and precision != "fp32":
                continue
            key = f"{engine} {precision}"
            entry = {"engine": engine, "precision": precision, "rounds": []}
            results["variants"][key] = entry
            model, err = prepare(engine, precision, src, a, results["prepared"])
            if err:
                entry["error"] = err
                print(f"decode: {key}: {err}", file=sys.stderr)
            else:
                models[key] = entry["model"] = model
            save(results, a.json)

    for r in range(a.rounds):
        for key, model in models.items():
            entry = results["variants"][key]
            res = generate(entry["engine"], model, prompt_path, a, env, eos)
            entry["rounds"].append(res)
            print(f"decode: round {r + 1} {key}: " + (res["error"] if "error" in res else
                  f"ttft {res.get('ttft_ms') or 0:.1f} ms, {res.get('decode_tok_s') or 0:.1f} tok/s, "
                  f"{res.get('new_tokens', len(res.get('ids') or []))} tokens, rss {res.get('peak_rss_mb') or 0:.0f} MB"),
                  file=sys.stderr)
        save(results, a.json)

    results["read_bandwidth"]["after"] = read_bandwidth(a.bandwidth_tool)
    read_gb_s = [x.get("threads_2_gb_s") for x in results["read_bandwidth"].values() if x.get("threads_2_gb_s")]
    unshared_gb_s = [x["threads_2_unshared_gb_s"] for x in results["read_bandwidth"].values()
                     if x.get("threads_2_unshared_gb_s")]
    reference = next((x["ids"] for x in results["variants"].get("ortloop fp32", {}).get("rounds", [])
                      if x.get("ids")), None)
    for key, entry in results["variants"].items():
        ok = [x for x in entry["rounds"] if "error" not in x]
        if entry["rounds"] and not ok:
            entry["error"] = entry["rounds"][0]["error"]
        if not ok:
            continue
        entry["ttft_ms"] = best(ok, "ttft_ms", min)
        entry["decode_tok_s"] = best(ok, "decode_tok_s", max)
        entry["peak_rss_mb"] = best(ok, "peak_rss_mb", max)
        entry["version"] = ok[0].get("version")
        entry["ids"] = ok[0].get("ids")
        entry["new_tokens"] = len(entry["ids"] or [])
        if entry["new_tokens"] != a.new_tokens:
            entry["error"] = f"produced {entry['new_tokens']} tokens, not {a.new_tokens}"
        if len({tuple(x.get("ids") or ()) for x in ok}) > 1:
            entry["rounds_disagree"] = True
        if reference is not None and entry["ids"] is not None and entry["precision"] == "fp32":
            d = first_difference(entry["ids"], reference)
            entry["matches_ortloop"] = "yes" if d is None else f"no (first difference at token {d})"
        bw = entry["bandwidth"] = step_bytes(entry["engine"], entry["model"])
        if "per_token_bytes" in bw and entry["decode_tok_s"]:
            bw["achieved_gb_s"] = bw["per_token_bytes"] * entry["decode_tok_s"] / 1e9
            if read_gb_s:  # the higher of the two measurements: the machine's, less what other work took
                bw["read_gb_s"] = max(read_gb_s)
                bw["percent_of_read"] = 100 * bw["achieved_gb_s"] / bw["read_gb_s"]
            if unshared_gb_s:
                bw["read_unshared_gb_s"] = max(unshared_gb_s)
                bw["percent_of_unshared"] = 100 * bw["achieved_gb_s"] / bw["read_unshared_gb_s"]
            same = same_size_read(results["read_bandwidth"].values(), bw["per_token_bytes"])
            if same:
                bw["same_size_read_mib"], bw["same_size_read_gb_s"] = same
                bw["percent_of_same_size_read"] = 100 * bw["achieved_gb_s"] / same[1]

    if not a.no_ppl:
        ref = None
        for key in sorted(models, key=lambda k: (k != "ortloop fp32", k != "ortgenai fp32")):
            entry = results["variants"][key]
            if entry["engine"] == "ortloop" and "ortgenai fp32" in models:
                continue  # the same file as ortgenai's fp32 row
            res = perplexity(entry["engine"], entry["precision"], models[key], windows, a, env, tmp)
            if "npz" in res:
                with np.load(res.pop("npz")) as z:
                    nll, top = z["nll"], z["top1"]
                if ref is None and entry["precision"] == "fp32" and entry["engine"] in ("ortloop", "ortgenai"):
                    ref = top
                if ref is not None:
                    res["top1_agreement"] = float((top == ref).mean())
            entry["perplexity"] = res
            print(f"decode: perplexity {key}: {res.get('perplexity', res.get('error'))}", file=sys.stderr)
            save(results, a.json)

    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    save(results, a.json)
    print(table(results))


if __name__ == "__main__":
    main()
