#!/usr/bin/env python3
"""octet (and onnxruntime) on a shared CPU: p50 latency quiet and beside one neighbour.

    python3 bench/shared_cpu.py --octet build/release/octet [--rounds 5] [--iters 200]
        [--out bench/results/DATE_shared-cpu_CPU.json] [--octet-env NAME=K=V,K=V ...]

The model is a real one, paraphrase-MiniLM-L3-v2 (tests/models/real_models.py
`minilm_l3`), at batch 1, seq 128, 2 threads. Neighbours, each started fresh for its
measurement and stopped after it:
  busy      a Python busy loop: one core taken
  bench     a second `octet bench` of the same model at 2 threads, looping
  quantize  `octet quantize --smoothquant auto` of the same model, looping (calibration
            runs octet's own runtime on all cores; the issue-19 neighbour)
Each measurement is one engine process timing `iters` runs after `warmup` (its p50).
Rounds interleave every (condition, engine) pair in a rotated order, so slow drift of
the machine (other agents) lands on all of them alike; the summary is the median over
rounds of each p50, and the ratio to the same engine's quiet median.

--octet-env adds octet variants run with extra environment variables (e.g.
`spin0=GOMP_SPINCOUNT=0`), measured like the others: how the OpenMP wait settings were
chosen. The key ARGS adds command-line options to the variant's `octet bench` (and its
octet bench neighbour): `before=GOMP_SPINCOUNT=1000,ARGS=--fixed-threads` is session 17's
default, before sessions dropped to one thread beside a neighbour. The goal (issue 19):
octet's p50 beside any neighbour at most 2.5x its quiet p50.
"""
import argparse
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import real_models  # noqa: E402

SEQ = 128
THREADS = 2


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def make_inputs(path, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 30000, size=(1, SEQ), dtype=np.int64)
    ids[0, 0], ids[0, -1] = 101, 102
    np.savez(path, input_ids=ids, attention_mask=np.ones((1, SEQ), np.int64))


def make_calibration(folder, n=4):
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        make_inputs(os.path.join(folder, f"sample_{i}.npz"), seed=100 + i)


class Neighbour:
    """A background load started fresh for one measurement (a new process group)."""

    def __init__(self, kind, octet, model, work, variant):
        self.kind = kind
        env_extra, extra_args = split_variant(variant)
        if kind == "busy":
            cmd = [sys.executable, "-c", "while True: pass"]
        elif kind == "bench":
            cmd = [octet, "bench", model, "--dim", "batch_size=1", "--dim", f"sequence_length={SEQ}", "--threads", str(THREADS),
                   "--warmup", "0", "--iters", "1000000", *extra_args]
        elif kind == "quantize":
            out = os.path.join(work, "neighbour_q.onnx")
            calib = os.path.join(work, "calib")
            loop = (f"while true; do '{octet}' quantize '{model}' -o '{out}' --calib '{calib}' --smoothquant auto "
                    f"--force --quiet >/dev/null 2>&1 || sleep 1; done")
            cmd = ["bash", "-c", loop]
        else:
            raise ValueError(kind)
        # An octet neighbour runs with the variant's settings too: a default is what both
        # the measured process and its octet neighbours get.
        env = dict(os.environ)
        env.update(env_extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True, env=env)
        time.sleep(1.5)  # let it reach its steady state (the quantizer loads, then calibrates)

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def split_variant(variant):
    """An --octet-env variant's environment, and its ARGS (octet bench options) apart."""
    env = dict(variant)
    return env, env.pop("ARGS", "").split()


def measure(engine, octet, model, inputs, work, iters, warmup, variant):
    env_extra, extra_args = split_variant(variant)
    env = dict(os.environ)
    env.update(env_extra)
    if engine == "ort":
        cmd = [sys.executable, os.path.join(HERE, "engines.py"), "ort", model, inputs, os.path.join(work, "ort_out.npz"),
               "--threads", str(THREADS), "--warmup", str(warmup), "--iters", str(iters)]
    else:
        cmd = [octet, "bench", model, "--dim", "batch_size=1", "--dim", f"sequence_length={SEQ}", "--threads", str(THREADS),
               "--input", inputs, "--warmup", str(warmup), "--iters", str(iters), "--json", *extra_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{engine}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)["p50_ms"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--octet", default=os.path.join(ROOT, "build/release/octet"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--neighbours", default="busy,bench,quantize")
    p.add_argument("--no-ort", action="store_true")
    p.add_argument("--octet-env", action="append", default=[],
                   help="NAME=K=V[,K=V...]: an octet variant run with these environment variables")
    p.add_argument("--out", help="write the JSON here")
    p.add_argument("--label", default="", help="free text stored with the results (the branch, the setting)")
    a = p.parse_args()

    model = real_models.path("minilm_l3")
    work = tempfile.mkdtemp(prefix="octet_shared_cpu_")
    inputs = os.path.join(work, "inputs.npz")
    make_inputs(inputs)
    make_calibration(os.path.join(work, "calib"))

    engines = {"octet": {}}
    for item in a.octet_env:
        name, _, kvs = item.partition("=")
        engines["octet:" + name] = dict(kv.split("=", 1) for kv in kvs.split(","))
    if not a.no_ort:
        engines["ort"] = {}
    conditions = ["quiet"] + [n for n in a.neighbours.split(",") if n]
    samples = {e: {c: [] for c in conditions} for e in engines}
    load_before = os.getloadavg()
    started = time.time()
    for r in range(a.rounds):
        order = conditions[r % len(conditions):] + conditions[:r % len(conditions)]
        for cond in order:
            names = list(engines)
            if r % 2:
                names.reverse()
            for e in names:
                n = Neighbour(cond, a.octet, model, work, engines[e]) if cond != "quiet" else None
                try:
                    ms = measure("ort" if e == "ort" else "octet", a.octet, model, inputs, work, a.iters, a.warmup,
                                 engines[e])
                finally:
                    if n:
                        n.stop()
                samples[e][cond].append(ms)
                print(f"round {r + 1}/{a.rounds} {cond:9s} {e:14s} p50 {ms:8.2f} ms", flush=True)

    summary = {}
    for e, by_cond in samples.items():
        quiet = statistics.median(by_cond["quiet"])
        summary[e] = {c: {"median_p50_ms": round(statistics.median(v), 3), "ratio_to_quiet":
                          round(statistics.median(v) / quiet, 2), "p50s_ms": [round(x, 3) for x in v]}
                      for c, v in by_cond.items()}
    goal = {}
    for e in engines:
        if e == "ort":
            continue
        worst = max(summary[e][c]["ratio_to_quiet"] for c in conditions if c != "quiet")
        goal[e] = {"worst_ratio": worst, "within_2.5x": worst <= 2.5}
        if "ort" in summary:
            goal[e]["not_slower_than_ort_beside"] = {
                c: summary[e][c]["median_p50_ms"] <= summary["ort"][c]["median_p50_ms"] for c in conditions}
    result = {
        "what": "p50 latency quiet vs beside one neighbour (bench/shared_cpu.py)",
        "label": a.label,
        "date_utc": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"),
        "cpu": cpu_name(), "cores": os.cpu_count(), "model": "minilm_l3 (paraphrase-MiniLM-L3-v2)",
        "batch": 1, "seq": SEQ, "threads": THREADS, "iters": a.iters, "warmup": a.warmup, "rounds": a.rounds,
        "engines": {e: {"env": env} for e, env in engines.items()},
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        "minutes": round((time.time() - started) / 60, 1),
        "note": "a 2-core machine shared with other agents: loadavg shows how much else was running",
        "summary": summary, "goal": goal,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
