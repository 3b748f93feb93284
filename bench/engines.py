#!/usr/bin/env python3
"""One engine's measurement, run by compare.py in a subprocess of its own so that the
peak RSS it reports belongs to that engine alone:

  python3 bench/engines.py ENGINE MODEL INPUTS.npz OUT.npz --threads N --warmup W --iters K

Prints one JSON object with the fields `octet bench --json` uses (p50_ms, p90_ms, mean_ms,
min_ms, peak_rss_mb, ...), and writes the outputs of the last timed run to OUT.npz.
Exits with SKIP_EXIT when the engine is not installed."""
import argparse
import json
import os
import resource
import sys
import time

import numpy as np

SKIP_EXIT = 3


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb():
    """VmHWM, as `octet bench` reports it: ru_maxrss would include compare.py's own
    resident set, which Linux carries across fork/exec into the child's high-water mark."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def skip(why):
    print(why, file=sys.stderr)
    sys.exit(SKIP_EXIT)


def make_ort(model, names, threads):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # OMP_WAIT_POLICY=passive (bench/compare_real.py --omp-passive) makes octet's OpenMP threads
    # sleep between kernels; onnxruntime's own pool gets the same treatment, or a busy machine
    # would stall its spinning threads and not octet's.
    passive = os.environ.get("OMP_WAIT_POLICY", "").lower() == "passive"
    if passive:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in sess.get_outputs()]

    def run(feeds):
        return dict(zip(outputs, sess.run(outputs, feeds)))

    settings = {"graph_optimization_level": "ORT_ENABLE_ALL", "intra_op_num_threads": threads,
                "inter_op_num_threads": 1, "execution_mode": "ORT_SEQUENTIAL",
                "intra_op.allow_spinning": "0" if passive else "1 (default)"}
    return run, ort.__version__, settings


def make_openvino(model, names, threads):
    try:
        import openvino as ov
    except ImportError:
        skip("openvino is not installed (pip install openvino)")
    core = ov.Core()
    # f32 precision explicitly: on CPUs with AVX512-BF16/AMX OpenVINO's default inference
    # precision is bf16 (outputs then differ from fp32 by ~1e-2), which is not the fp32
    # comparison this harness makes.
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": 1,
              "INFERENCE_PRECISION_HINT": "f32"}
    if os.environ.get("OCTET_BENCH_CONCURRENT") == "1":
        # Several engine processes at once (speed_dims.py --streams): OpenVINO pins each
        # process's threads from core 0 on, so two single-thread processes shared one core
        # and its 2-stream rate came out at half its 1-process rate.
        config["ENABLE_CPU_PINNING"] = False
    if os.environ.get("OMP_WAIT_POLICY", "").lower() == "passive":
        # The busy-machine setting (see make_ort): threads pinned to cores that other jobs hold
        # wait for them; measured 40 -> 22 ms on all-MiniLM-L6-v2 under load 13 on 2 cores.
        config["ENABLE_CPU_PINNING"] = False
    compiled = core.compile_model(core.read_model(model), "CPU", config)
    request = compiled.create_infer_request()
    outputs = compiled.outputs

    def run(feeds):
        request.infer(feeds)
        return {o.get_any_name(): np.array(request.get_tensor(o).data) for o in outputs}

    return run, ov.__version__, {"device": "CPU", **config}


def make_tract(model, names, threads, feeds):
    try:
        import tract
    except ImportError:
        skip("tract is not installed (pip install tract)")
    onnx = tract.onnx()
    # tract >= 0.21's Python API: load() gives an InferenceModel, into_model() a typed Model
    # whose into_runnable() optimizes; older releases had model_for_path/into_optimized.
    m = onnx.load(model) if hasattr(onnx, "load") else onnx.model_for_path(model)
    # tract wants concrete input facts for symbolic dims: take them from the inputs.
    for i, name in enumerate(names):
        a = feeds[name]
        m.set_input_fact(i, ",".join(map(str, a.shape)) + "," + {"int64": "i64", "int32": "i32",
                                                                   "float32": "f32"}[a.dtype.name])
    runnable = m.into_model().into_runnable() if hasattr(m, "into_model") else m.into_optimized().into_runnable()
    # tract names outputs after their nodes; the graph's own output names, in order, are
    # what the other engines report.
    import onnx as onnx_pkg
    out_names = [o.name for o in onnx_pkg.load(model, load_external_data=False).graph.output]

    def run(feed_dict):
        results = runnable.run([feed_dict[n] for n in names])
        arrays = [r.to_numpy() for r in results]
        keys = out_names or [f"output_{i}" for i in range(len(arrays))]
        return dict(zip(keys, arrays))

    version = tract.version() if hasattr(tract, "version") else getattr(tract, "__version__", "?")
    return run, version, {"threads": "tract runs on one thread"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("engine", choices=["ort", "openvino", "tract"])
    p.add_argument("model")
    p.add_argument("inputs")
    p.add_argument("out")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=100)
    a = p.parse_args()

    # compare.py saved exactly the model's inputs, in graph order; no onnx import here, so
    # the engine's RSS holds only what it needs itself.
    with np.load(a.inputs) as z:
        feeds = {n: z[n] for n in z.files}
    names = list(feeds)
    rss_after_imports = rss_mb()

    start = time.perf_counter()
    if a.engine == "ort":
        run, version, settings = make_ort(a.model, names, a.threads)
    elif a.engine == "openvino":
        run, version, settings = make_openvino(a.model, names, a.threads)
    else:
        run, version, settings = make_tract(a.model, names, a.threads, feeds)
    session_ms = (time.perf_counter() - start) * 1000

    first_run_ms = None
    for i in range(a.warmup):
        t0 = time.perf_counter()
        run(feeds)
        if i == 0:
            first_run_ms = (time.perf_counter() - t0) * 1000
    samples = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        outputs = run(feeds)
        samples.append((time.perf_counter() - t0) * 1000)
    peak = peak_rss_mb()
    np.savez(a.out, **outputs)
    s = np.array(samples)
    report = {
        "engine": a.engine, "version": version, "settings": settings,
        "threads": a.threads, "warmup": a.warmup, "iters": a.iters,
        "p50_ms": float(np.percentile(s, 50)), "p90_ms": float(np.percentile(s, 90)),
        "mean_ms": float(s.mean()), "min_ms": float(s.min()), "max_ms": float(s.max()),
        "samples_ms": samples, "throughput_per_s": 1000.0 / float(s.mean()),
        "peak_rss_mb": peak, "rss_after_imports_mb": rss_after_imports,
        "timing_ms": {"session": session_ms, "first_run": first_run_ms if first_run_ms is not None else samples[0]},
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
