#!/usr/bin/env python3
"""octet against other CPU runtimes on the same models, inputs, threads and iterations.

For each model: random inputs are drawn once and saved to an .npz that every engine
reads (octet through `octet bench --input`), so all engines see identical data. Each
engine runs in its own subprocess (so peak RSS is per engine), creates its session once,
runs --warmup untimed then --iters timed inferences, and saves the outputs of its last
run; those are compared with onnxruntime's (rtol 1e-4, atol 1e-5 x the output's largest
magnitude). Engines:

  octet            `octet bench --json` (optimizer level 2, shapes specialized to the
                   benchmark's dims, as a fixed-shape deployment would)
  octet-reference  the same on octet's scalar reference kernels (not run by default)
  ort              onnxruntime, ORT_ENABLE_ALL, intra_op threads = --threads,
                   inter_op 1, sequential execution
  openvino         OpenVINO CPU plugin, LATENCY hint, --threads inference threads
  tract            tract's Python bindings (tract runs on one thread)

openvino and tract are skipped with a note when not importable.

  python3 bench/compare.py                        # the three fixtures, 2 threads
  python3 bench/compare.py --json bench/results/x.json --iters 200
  python3 bench/compare.py --model my.onnx:batch=1,seq=384 --engines octet,ort

Exit status: 0, or 1 when an engine's outputs differ from onnxruntime's."""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import engines  # noqa: E402  (the per-engine workers, run in subprocesses)

FIXTURES = os.path.join(ROOT, "tests/models/fixtures")
# name -> (file, dims, what the setting means)
DEFAULT_MODELS = {
    "bert_tiny": ("bert_tiny.onnx", {"batch": 1, "seq": 128}, "batch 1, seq 128"),
    "gpt2_tiny": ("gpt2_tiny.onnx", {"batch": 1, "seq": 128}, "batch 1, prompt 128"),
    "vit_tiny": ("vit_tiny.onnx", {"batch": 1}, "batch 1, 224x224"),
}
ALL_ENGINES = ["octet", "octet-reference", "ort", "openvino", "tract"]
DEFAULT_ENGINES = ["octet", "ort", "openvino", "tract"]
RTOL, ATOL = 1e-4, 1e-5


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--octet", default=os.path.join(ROOT, "build/release/octet"), help="octet CLI (default: %(default)s)")
    p.add_argument("--model", action="append", default=[], metavar="PATH[:dim=N,...]",
                   help="a model and its dims, repeatable (default: bert_tiny, gpt2_tiny, vit_tiny fixtures)")
    p.add_argument("--engines", default=",".join(DEFAULT_ENGINES),
                   help=f"comma-separated, from {', '.join(ALL_ENGINES)} (default: %(default)s)")
    p.add_argument("--threads", type=int, default=2, help="threads per engine (default 2)")
    p.add_argument("--warmup", type=int, default=10, help="untimed runs (default 10)")
    p.add_argument("--iters", type=int, default=100, help="timed runs (default 100)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--json", metavar="FILE", help="also write the results and machine info as JSON")
    p.add_argument("--note", default="", help="free text stored in the JSON (branch, what changed, machine state)")
    a = p.parse_args()
    a.engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    unknown = [e for e in a.engines if e not in ALL_ENGINES]
    if unknown:
        p.error(f"unknown engine(s) {', '.join(unknown)}; choose from {', '.join(ALL_ENGINES)}")
    if "ort" not in a.engines:
        p.error("ort is the reference for outputs and ratios; keep it in --engines")
    if a.threads < 1 or a.iters < 1 or a.warmup < 0:
        p.error("--threads and --iters must be at least 1, --warmup at least 0")
    return a


def model_list(specs):
    if not specs:
        return [(name, os.path.join(FIXTURES, f), dims, what) for name, (f, dims, what) in DEFAULT_MODELS.items()]
    out = []
    for spec in specs:
        path, _, dims_text = spec.partition(":")
        dims = {}
        for item in filter(None, dims_text.split(",")):
            k, _, v = item.partition("=")
            if not k or not v.isdigit():
                sys.exit(f"compare.py: --model {spec}: dims are NAME=N, comma-separated")
            dims[k] = int(v)
        if not os.path.isfile(path):
            sys.exit(f"compare.py: --model {spec}: no such file {path}")
        name = os.path.splitext(os.path.basename(path))[0]
        out.append((name, path, dims, ", ".join(f"{k} {v}" for k, v in dims.items())))
    return out


def make_inputs(path, dims, seed):
    """Inputs like `octet run --random`'s: masks of ones, token types of zeros, ids within
    the vocabulary of the Gather that reads them, N(0,1) floats."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    g = model.graph
    inits = {i.name for i in g.initializer}
    shapes = {i.name: list(i.dims) for i in g.initializer}
    readers = {}
    for n in g.node:
        for k, x in enumerate(n.input):
            readers.setdefault(x, []).append((n, k))

    def vocab(name, depth=0):
        sizes = []
        for n, k in readers.get(name, []):
            if n.op_type == "Gather" and k == 1 and n.input[0] in shapes:
                sizes.append(shapes[n.input[0]][0])
            elif n.op_type in ("Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity") and depth < 8:
                sizes += [v for v in [vocab(n.output[0], depth + 1)] if v]
        return min(sizes) if sizes else 0

    rng = np.random.default_rng(seed)
    feeds = {}
    for v in g.input:
        if v.name in inits:
            continue
        tt = v.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value"):
                shape.append(d.dim_value)
            elif d.dim_param in dims:
                shape.append(dims[d.dim_param])
            else:
                sys.exit(f"compare.py: {path}: input {v.name} dim '{d.dim_param}' is not bound; give it in --model")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        lname = v.name.lower()
        if "mask" in lname:
            feeds[v.name] = np.ones(shape, dtype)
        elif np.issubdtype(dtype, np.integer) and ("token_type" in lname or "segment" in lname):
            feeds[v.name] = np.zeros(shape, dtype)
        elif np.issubdtype(dtype, np.integer):
            n = vocab(v.name)
            feeds[v.name] = rng.integers(0, n, shape).astype(dtype) if n else np.ones(shape, dtype)
        else:
            feeds[v.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def run_engine(engine, args, path, dims, inputs_npz, out_npz, octet_extra=()):
    """One engine in its own process; returns its JSON report, or {"skipped": why}.
    octet_extra: more `octet bench` options (bench/int8.py passes --profile)."""
    common = ["--warmup", str(args.warmup), "--iters", str(args.iters), "--threads", str(args.threads)]
    if engine.startswith("octet"):
        if not os.access(args.octet, os.X_OK):
            return {"skipped": f"no octet CLI at {args.octet} (build it: scripts/build.sh release)"}
        cmd = [args.octet, "bench", path, "--json", "--input", inputs_npz, "--out", out_npz, *common]
        cmd += [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]
        if engine == "octet-reference":
            cmd.append("--reference")
        cmd += list(octet_extra)
    else:
        cmd = [sys.executable, os.path.join(HERE, "engines.py"), engine, path, inputs_npz, out_npz, *common]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        err = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        if proc.returncode == engines.SKIP_EXIT:
            return {"skipped": err}
        return {"error": f"exit {proc.returncode}: {err}"}
    report = json.loads(proc.stdout)
    # The table and the JSON keep the same fields for every engine.
    keep = ("p50_ms", "p90_ms", "mean_ms", "min_ms", "max_ms", "peak_rss_mb", "threads", "iters", "warmup",
            "throughput_per_s", "tokens_per_s", "timing_ms", "version", "rss_after_imports_mb", "settings",
            "optimized_nodes", "reference_nodes", "reference_ops", "nodes", "cpu", "model_mb", "samples_ms",
            "profile")
    return {k: report[k] for k in keep if k in report}


def compare_outputs(got_npz, want_npz):
    """Max relative error and whether every output is within tolerance."""
    with np.load(got_npz) as got, np.load(want_npz) as want:
        if set(got.files) != set(want.files):
            return {"ok": False, "problem": f"outputs {sorted(got.files)} vs {sorted(want.files)}"}
        worst = 0.0
        ok = True
        for k in want.files:
            g, w = got[k].astype(np.float64), want[k].astype(np.float64)
            if g.shape != w.shape:
                return {"ok": False, "problem": f"{k}: shape {g.shape} vs {w.shape}"}
            # The absolute floor scales with the output's magnitude: a fixed 1e-5 is below
            # float32's rounding of logits in the hundreds (onnxruntime's own optimization
            # levels differ by 6e-5 on gpt2_mini's), where near-zero entries then fail a
            # relative test on rounding noise alone.
            atol = ATOL * max(1.0, float(np.max(np.abs(w)))) if w.size else ATOL
            ok &= bool(np.allclose(g, w, rtol=RTOL, atol=atol))
            worst = max(worst, float(np.max(np.abs(g - w) / np.maximum(np.abs(w), atol / RTOL))) if w.size else 0.0)
        return {"ok": ok, "max_rel_error": worst}


def machine_info(args):
    def run(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("onnx", "onnxruntime", "openvino", "tract"):
        try:
            versions[mod] = getattr(__import__(mod), "__version__", "?")
        except ImportError:
            pass
    versions["octet"] = run([args.octet, "--version"])
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cores_total": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "os": platform.platform(),
        "commit": run(["git", "rev-parse", "HEAD"]),
        "dirty": bool(run(["git", "status", "--porcelain", "--untracked-files=no"])),
        "versions": versions,
    }


def print_table(results):
    head = f"{'model':<11} {'engine':<16} {'p50 ms':>9} {'p90 ms':>9} {'mean ms':>9} {'peak RSS MB':>12} {'vs ort p50':>10}  outputs"
    print(head)
    print("-" * len(head))
    for r in results:
        ort_p50 = r["engines"].get("ort", {}).get("p50_ms")
        for engine, e in r["engines"].items():
            if "p50_ms" not in e:
                print(f"{r['model']:<11} {engine:<16} {e.get('skipped') and 'skipped: ' + e['skipped'] or e.get('error')}")
                continue
            ratio = f"{e['p50_ms'] / ort_p50:.2f}x" if ort_p50 else "-"
            check = r["outputs"].get(engine)
            status = "reference" if engine == "ort" else (
                "-" if check is None else
                f"ok (max rel {check['max_rel_error']:.1e})" if check["ok"] else
                "MISMATCH " + (check.get("problem") or f"(max rel {check['max_rel_error']:.1e})"))
            print(f"{r['model']:<11} {engine:<16} {e['p50_ms']:9.3f} {e['p90_ms']:9.3f} {e['mean_ms']:9.3f} "
                  f"{e['peak_rss_mb']:12.1f} {ratio:>10}  {status}")


def main():
    args = parse_args()
    info = machine_info(args)
    print(f"{info['cpu'] or 'unknown CPU'}, {info['cores']} cores; {args.threads} threads, "
          f"{args.warmup} warmup, {args.iters} iters; commit {info['commit'][:10]}{' (dirty)' if info['dirty'] else ''}")
    results, mismatch = [], False
    with tempfile.TemporaryDirectory(prefix="octet_compare_") as tmp:
        for name, path, dims, what in model_list(args.model):
            inputs_npz = os.path.join(tmp, f"{name}_inputs.npz")
            np.savez(inputs_npz, **make_inputs(path, dims, args.seed))
            entry = {"model": name, "file": os.path.relpath(path, ROOT), "dims": dims, "setting": what,
                     "engines": {}, "outputs": {}}
            outs = {}
            for engine in ["ort"] + [e for e in args.engines if e != "ort"]:
                outs[engine] = os.path.join(tmp, f"{name}_{engine}_out.npz")
                entry["engines"][engine] = run_engine(engine, args, path, dims, inputs_npz, outs[engine])
                print(f"  {name} {engine}: " + (f"p50 {entry['engines'][engine]['p50_ms']:.3f} ms"
                                                if "p50_ms" in entry["engines"][engine] else
                                                str(entry["engines"][engine])), file=sys.stderr)
            if "p50_ms" in entry["engines"]["ort"]:
                for engine, e in entry["engines"].items():
                    if engine != "ort" and "p50_ms" in e:
                        entry["outputs"][engine] = compare_outputs(outs[engine], outs["ort"])
                        mismatch |= not entry["outputs"][engine]["ok"]
                if "p50_ms" in entry["engines"].get("octet", {}):
                    entry["octet_vs_ort_p50"] = entry["engines"]["octet"]["p50_ms"] / entry["engines"]["ort"]["p50_ms"]
            results.append(entry)
    print()
    print_table(results)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"note": args.note, "machine": info, "settings": {"threads": args.threads, "warmup": args.warmup,
                                                     "iters": args.iters, "seed": args.seed, "rtol": RTOL,
                                                     "atol": ATOL, "engines": args.engines},
                       "results": results}, f, indent=2)
            f.write("\n")
        print(f"\nwrote {args.json}")
    if mismatch:
        print("\ncompare.py: outputs differ from onnxruntime beyond rtol 1e-4 (see the table)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
