#!/usr/bin/env python3
"""One engine's greedy decode (or one perplexity pass), run by bench/decode.py in a process of its
own so that the peak RSS it reports belongs to that engine alone:

  python3 bench/decode_engines.py generate ENGINE MODEL PROMPT.npy --new-tokens N --threads T
      ENGINE: ortgenai (onnxruntime-genai on a folder with genai_config.json), openvino
      (openvino-genai LLMPipeline on an IR folder), ortloop (onnxruntime's InferenceSession driven
      by a plain greedy loop over the KV-cache ONNX: the reference the others are checked against),
      octet (the `octet generate` CLI, when the build has it; MODEL is the ONNX file, --octet the CLI)
  python3 bench/decode_engines.py ppl ENGINE MODEL WINDOWS.npz OUT.npz --threads T
      ENGINE: ort (the KV-cache ONNX on onnxruntime, prefill with an empty cache), openvino (the
      stateful IR on openvino.Core, its state reset per batch) or octet (`octet run` on the ONNX,
      empty cache); writes per-token nll and argmax.

Every generate run produces exactly N new tokens (the end-of-sequence token is suppressed), greedy.
Time to first token: from handing over the prompt ids to the first new token; decode tokens/s:
the N - 1 tokens after the first over the time they took. Prints one JSON object."""
import argparse
import json
import os
import resource
import subprocess
import sys
import time


def peak_rss_mb():
    """VmHWM of this process (ru_maxrss would include the parent's resident set: Linux carries
    the high-water mark across fork/exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timing(t_start, token_times):
    """ttft and decode rate from the wall time at which each new token was known."""
    ttft = (token_times[0] - t_start) * 1000
    n = len(token_times) - 1
    decode_s = token_times[-1] - token_times[0]
    return {"ttft_ms": ttft, "decode_tok_s": n / decode_s if n > 0 and decode_s > 0 else None,
            "decode_ms_per_token": decode_s * 1000 / n if n > 0 else None,
            "total_ms": (token_times[-1] - t_start) * 1000}


def passive():
    return os.environ.get("OMP_WAIT_POLICY", "").lower() == "passive"


# ---------------------------------------------------------------- generate

def gen_ortgenai(folder, prompt, new, threads):
    import numpy as np
    import onnxruntime_genai as og

    # The thread count lives in genai_config.json's session_options; set it for this run.
    path = os.path.join(folder, "genai_config.json")
    with open(path) as f:
        config = json.load(f)
    so = config["model"]["decoder"]["session_options"]
    so["intra_op_num_threads"], so["inter_op_num_threads"] = threads, 1
    # genai passes string-valued session_options it does not know on as session config entries
    if passive():
        so["session.intra_op.allow_spinning"] = "0"
    else:
        so.pop("session.intra_op.allow_spinning", None)
    with open(path, "w") as f:
        json.dump(config, f, indent=1)
    t0 = time.perf_counter()
    model = og.Model(folder)
    load_ms = (time.perf_counter() - t0) * 1000
    total = len(prompt) + new
    params = og.GeneratorParams(model)
    # min_length == max_length: the eos logit is pushed to -inf until all `new` tokens are out
    params.set_search_options(do_sample=False, max_length=total, min_length=total, batch_size=1)
    gen = og.Generator(model, params)
    ids, times = [], []
    t_start = time.perf_counter()
    gen.append_tokens(np.array([prompt], dtype=np.int32))
    while not gen.is_done():
        gen.generate_next_token()
        ids.append(int(gen.get_next_tokens()[0]))
        times.append(time.perf_counter())
    settings = {"session_options": so, "search": {"do_sample": False, "max_length": total, "min_length": total}}
    return ids, t_start, times, og.__version__, settings, load_ms


def gen_openvino(folder, prompt, new, threads):
    import numpy as np
    import openvino as ov
    import openvino_genai as ovg

    props = {"INFERENCE_NUM_THREADS": threads, "INFERENCE_PRECISION_HINT": "f32",
             "ATTENTION_BACKEND": os.environ.get("DECODE_OV_ATTENTION_BACKEND", "PA")}
    if passive():
        props["ENABLE_CPU_PINNING"] = False
    t0 = time.perf_counter()
    pipe = ovg.LLMPipeline(folder, "CPU", **props)
    load_ms = (time.perf_counter() - t0) * 1000
    cfg = pipe.get_generation_config()
    cfg.do_sample = False
    cfg.max_new_tokens = new
    cfg.min_new_tokens = new
    cfg.ignore_eos = True
    ids, times = [], []

    class Clock(ovg.StreamerBase):
        def write(self, token):
            now = time.perf_counter()
            for t in (token if isinstance(token, list) else [token]):
                ids.append(int(t))
                times.append(now)
            return ovg.StreamingStatus.RUNNING

        def end(self):
            pass

    inputs = ov.Tensor(np.array([prompt], dtype=np.int64))
    t_start = time.perf_counter()
    result = pipe.generate(inputs, cfg, Clock())
    t_end = time.perf_counter()
    out = [int(t) for t in np.array(result.tokens[0]).reshape(-1)]
    if out != ids:  # the streamer saw what generate returned, token for token
        raise RuntimeError(f"streamer tokens ({len(ids)}) differ from the result's ({len(out)})")
    pm = result.perf_metrics
    own = {"ttft_ms": pm.get_ttft().mean, "tpot_ms": pm.get_tpot().mean,
           "throughput_tok_s": pm.get_throughput().mean, "generate_ms": (t_end - t_start) * 1000}
    settings = {"properties": {k: str(v) for k, v in props.items()},
                "generation_config": {"do_sample": False, "max_new_tokens": new, "min_new_tokens": new,
                                      "ignore_eos": True}, "perf_metrics": own}
    return ids, t_start, times, ovg.__version__, settings, load_ms


def gen_ortloop(model, prompt, new, threads, eos):
    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    if passive():
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    t0 = time.perf_counter()
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1000
    past = [i.name for i in sess.get_inputs() if i.name.startswith("past_key_values.")]
    outs = [o.name for o in sess.get_outputs()]
    presents = [n.replace("past_key_values.", "present.") for n in past]
    ids, times = [], []
    t_start = time.perf_counter()
    feeds = {"input_ids": np.array([prompt], np.int64), "attention_mask": np.ones((1, len(prompt)), np.int64),
             "position_ids": np.arange(len(prompt), dtype=np.int64)[None]}
    feeds.update({n: np.zeros((1, 3, 0, 64), np.float32) for n in past})
    for step in range(new):
        res = dict(zip(outs, sess.run(None, feeds)))
        logits = res["logits"][0, -1].astype(np.float64)
        logits[eos] = -np.inf  # as ort-genai's min_length: no end of sequence before `new` tokens
        tok = int(logits.argmax())
        ids.append(tok)
        times.append(time.perf_counter())
        length = len(prompt) + step + 1
        feeds = {"input_ids": np.array([[tok]], np.int64), "attention_mask": np.ones((1, length), np.int64),
                 "position_ids": np.array([[length - 1]], np.int64)}
        feeds.update({p: res[q] for p, q in zip(past, presents)})
    settings = {"intra_op_num_threads": threads, "inter_op_num_threads": 1,
                "loop": "numpy argmax over the last logits, cache fed back as returned"}
    return ids, t_start, times, ort.__version__, settings, load_ms


def octet_has(octet, sub, flag=None):
    """Whether this octet CLI has the subcommand (and the flag in its help)."""
    try:
        p = subprocess.run([octet, sub, "--help"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and (flag is None or flag in p.stdout)


def find_key(obj, *candidates):
    for c in candidates:
        if isinstance(obj, dict) and c in obj:
            return obj[c]
    return None


def gen_octet(octet, model, prompt_path, new, threads):
    """`octet generate MODEL --prompt-ids ids.npy --max-new-tokens N --json`; the flags for a fixed
    length and threads are passed when its --help lists them. Peak RSS: octet's own report, else
    getrusage(RUSAGE_CHILDREN).ru_maxrss (this process imports nothing large, so what Linux carries over
    from it across exec is a few MB)."""
    cmd = [octet, "generate", model, "--prompt-ids", prompt_path, "--max-new-tokens", str(new), "--json"]
    help_text = subprocess.run([octet, "generate", "--help"], capture_output=True, text=True).stdout
    for flag, value in (("--min-new-tokens", str(new)), ("--ignore-eos", None), ("--threads", str(threads))):
        if flag in help_text:
            cmd += [flag] if value is None else [flag, value]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    # every child of this process so far is an octet process (this one's --help included)
    children_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    wall_ms = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[1:])} exited {proc.returncode}: {(err.strip().splitlines() or [''])[-1]}")
    report = json.loads(out[out.index("{"):])
    ids = find_key(report, "ids", "tokens", "new_ids", "generated_ids", "output_ids")
    ttft = find_key(report, "ttft_ms", "time_to_first_token_ms", "first_token_ms")
    rate = find_key(report, "decode_tok_s", "decode_tokens_per_s", "decode_tokens_per_second", "tokens_per_s")
    rss = find_key(report, "peak_rss_mb")
    if rss is None and find_key(report, "peak_rss_bytes") is not None:
        rss = find_key(report, "peak_rss_bytes") / 2**20
    prompt = [int(t) for t in __import__("numpy").load(prompt_path).reshape(-1)]
    if ids is not None and len(ids) == len(prompt) + new and list(ids[:len(prompt)]) == prompt:
        ids = ids[len(prompt):]  # the prompt echoed in front of the new tokens
    return {"ids": [int(i) for i in ids] if ids is not None else None, "ttft_ms": ttft, "decode_tok_s": rate,
            "peak_rss_mb": rss if rss is not None else children_rss,
            "peak_rss_from": "octet's report" if rss is not None else "ru_maxrss of the octet child (RUSAGE_CHILDREN)",
            "command": " ".join(cmd), "wall_ms": wall_ms, "octet_report": report}


def run_generate(a):
    import numpy as np

    prompt = [int(t) for t in np.load(a.prompt).reshape(-1)]
    if a.engine == "octet":
        res = gen_octet(a.octet, a.model, a.prompt, a.new_tokens, a.threads)
        res.update(engine="octet", version=subprocess.run([a.octet, "--version"], capture_output=True,
                                                            text=True).stdout.strip() or "?")
        return res
    if a.engine == "ortgenai":
        ids, t_start, times, version, settings, load_ms = gen_ortgenai(a.model, prompt, a.new_tokens, a.threads)
    elif a.engine == "openvino":
        ids, t_start, times, version, settings, load_ms = gen_openvino(a.model, prompt, a.new_tokens, a.threads)
    else:
        ids, t_start, times, version, settings, load_ms = gen_ortloop(a.model, prompt, a.new_tokens, a.threads,
                                                                      a.eos)
    res = {"engine": a.engine, "version": version, "settings": settings, "load_ms": load_ms, "ids": ids,
           "new_tokens": len(ids), "peak_rss_mb": peak_rss_mb(), "peak_rss_from": "VmHWM of the engine's process"}
    res.update(timing(t_start, times))
    return res


# ---------------------------------------------------------------- perplexity

def run_ppl(a):
    import numpy as np

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from compare_real import token_nll  # the harness's own LM metric, so both report the same perplexity

    windows = np.load(a.windows)["input_ids"]
    if a.limit:
        windows = windows[:a.limit]
    batch, (n, length) = 4, windows.shape
    pos = np.broadcast_to(np.arange(length, dtype=np.int64), (batch, length))
    nll, top = [], []
    if a.engine == "ort":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        past = [i.name for i in sess.get_inputs() if i.name.startswith("past_key_values.")]
        for i in range(0, n, batch):
            ids = windows[i:i + batch]
            b = len(ids)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": pos[:b].copy()}
            feeds.update({p: np.zeros((b, 3, 0, 64), np.float32) for p in past})
            lg = sess.run(["logits"], feeds)[0]
            x, t = token_nll(lg, ids)
            nll.append(x), top.append(t)
        version = f"onnxruntime {ort.__version__}"
    elif a.engine == "octet":
        # `octet run` on the same KV-cache ONNX the octet rows generate with: prefill with an empty cache
        import tempfile

        import onnx

        tmp = tempfile.mkdtemp(prefix="octet_ppl_")
        # The model's own inputs: a with-past file (empty cache) or a no-past one such as
        # optimum's legacy decoder_model.onnx (no position_ids, no cache).
        names = {v.name for v in onnx.load(a.model, load_external_data=False).graph.input}
        past = sorted(x for x in names if x.startswith("past_key_values."))
        for i in range(0, n, batch):
            ids = windows[i:i + batch]
            b = len(ids)
            feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": pos[:b].copy()}
            feeds = {k: v for k, v in feeds.items() if k in names}
            feeds.update({p: np.zeros((b, 3, 0, 64), np.float32) for p in past})
            inp, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
            np.savez(inp, **feeds)
            proc = subprocess.run([a.octet, "run", a.model, "--input", inp, "--out", out, "--threads",
                                   str(a.threads)], capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"octet run exited {proc.returncode}: "
                                   f"{(proc.stderr.strip().splitlines() or [''])[-1]}")
            with np.load(out) as z:
                lg = z["logits"]
            x, t = token_nll(lg, ids)
            nll.append(x), top.append(t)
        version = subprocess.run([a.octet, "--version"], capture_output=True, text=True).stdout.strip()
    else:
        import openvino as ov

        compiled = ov.Core().compile_model(os.path.join(a.model, "openvino_model.xml"), "CPU",
                                           {"INFERENCE_NUM_THREADS": a.threads, "INFERENCE_PRECISION_HINT": "f32"})
        req = compiled.create_infer_request()
        for i in range(0, n, batch):
            ids = windows[i:i + batch]
            b = len(ids)
            req.reset_state()
            req.infer({"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": pos[:b].copy(),
                       "beam_idx": np.arange(b, dtype=np.int32)})
            lg = np.array(req.get_tensor("logits").data)
            x, t = token_nll(lg, ids)
            nll.append(x), top.append(t)
        version = f"openvino {ov.__version__}"
    nll, top = np.concatenate(nll), np.concatenate(top)
    np.savez(a.out, nll=nll, top1=top)
    return {"engine": a.engine, "version": version, "windows": int(n), "tokens": int(nll.size),
            "perplexity": float(np.exp(nll.mean())), "peak_rss_mb": peak_rss_mb()}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    g = sub.add_parser("generate")
    g.add_argument("engine", choices=["ortgenai", "openvino", "ortloop", "octet"])
    g.add_argument("model")
    g.add_argument("prompt")
    g.add_argument("--new-tokens", type=int, default=128)
    g.add_argument("--threads", type=int, default=2)
    g.add_argument("--eos", type=int, default=2, help="ortloop: the token id it suppresses")
    g.add_argument("--octet", default="build/release/octet")
    q = sub.add_parser("ppl")
    q.add_argument("engine", choices=["ort", "openvino", "octet"])
    q.add_argument("model")
    q.add_argument("windows")
    q.add_argument("out")
    q.add_argument("--threads", type=int, default=2)
    q.add_argument("--limit", type=int, default=0)
    q.add_argument("--octet", default="build/release/octet")
    a = p.parse_args()
    print(json.dumps(run_generate(a) if a.what == "generate" else run_ppl(a)))


if __name__ == "__main__":
    main()
