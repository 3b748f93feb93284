#!/usr/bin/env python3
"""octet against OpenVINO at other sizes than the harness's batch 1 (issue 20: "the same
ordering at batch 8 and seq 384", "2-stream throughput"), on the files compare_real.py
wrote: fp32 export, octet's static int8 .onnx, NNCF's .xml.

  python3 bench/speed_dims.py --int8-dir /tmp/harness20 --rounds 3 \
      --case minilm_l6:batch=8,sequence=128 --case minilm_l6:batch=1,sequence=384 \
      --case dinov2:batch=8 --json bench/results/X.json

Each case runs every engine in its own process (compare.run_engine), --rounds rounds
interleaved, keeping each engine's best p50. --streams 2 adds a throughput row: two
processes of the engine at once, one thread each, inferences/s summed (what a server
running two requests side by side gets on the 2 cores). Loads are recorded per round.

A/B of two octet builds: --octet-base OTHER_CLI adds "octet fp32 (base)" and "octet int8
static (base)" rows, run in the same rounds right before their --octet rows, so a change is
measured against its baseline under the same load; --engines keeps only the named rows
(comma-separated labels, e.g. "octet int8 static,octet int8 static (base),openvino int8 (nncf)").
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

EXPORTS = os.path.expanduser("~/.cache/octet/exports")


def files(model, int8_dir):
    fp32 = os.path.join(EXPORTS, model, f"{model}.onnx")
    return {"octet fp32": ("octet", fp32), "openvino fp32": ("openvino", fp32),
            "octet int8 static": ("octet", os.path.join(int8_dir, model, "octet-static.onnx")),
            "openvino int8 (nncf)": ("openvino", os.path.join(int8_dir, model, "nncf.xml"))}


def rebuild_with_base(fp):
    """The rows with an "(base)" octet row before each octet row."""
    out = {}
    for k, v in fp.items():
        if v[0] == "octet":
            out[f"{k} (base)"] = v
        out[k] = v
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--int8-dir", required=True)
    p.add_argument("--case", action="append", required=True, help="MODEL:dim=v,dim=v")
    p.add_argument("--octet", default=os.path.join(os.path.dirname(HERE), "build/release/octet"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--streams", type=int, default=0, help="also measure N single-thread streams at once")
    p.add_argument("--octet-base", help="a second octet CLI, measured as the '(base)' rows")
    p.add_argument("--engines", help="comma-separated row labels to run (default: all)")
    p.add_argument("--json", required=True)
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="speed_dims_")
    out = {"threads": a.threads, "rounds": a.rounds, "octet": a.octet, "octet_base": a.octet_base, "cases": []}
    for case in a.case:
        model, spec = case.split(":", 1)
        dims = {k: int(v) for k, v in (kv.split("=") for kv in spec.split(","))}
        fp = files(model, a.int8_dir)
        if a.octet_base:  # each base row right before its --octet row, same file
            fp = rebuild_with_base(fp)
        if a.engines:
            keep = [e.strip() for e in a.engines.split(",")]
            unknown = [e for e in keep if e not in fp]
            if unknown:
                p.error(f"--engines: unknown rows {unknown}; rows are {list(fp)}")
            fp = {k: v for k, v in fp.items() if k in keep}
        inputs = os.path.join(tmp, f"{model}_in.npz")
        np.savez(inputs, **compare.make_inputs(files(model, a.int8_dir)["octet fp32"][1], dims, 0))
        rows = {k: {"p50_ms": [], "load": []} for k in fp}
        for _ in range(a.rounds):
            for label, (engine, path) in fp.items():
                cli = a.octet_base if label.endswith("(base)") else a.octet
                r = compare.run_engine(engine, argparse.Namespace(**{**vars(a), "octet": cli}), path, dims, inputs,
                                       os.path.join(tmp, "out.npz"))
                rows[label]["p50_ms"].append(r.get("p50_ms"))
                rows[label]["load"].append(round(os.getloadavg()[0], 2))
                if "error" in r or "skipped" in r:
                    rows[label]["problem"] = r.get("error") or r.get("skipped")
        if a.streams:
            one = argparse.Namespace(**{**vars(a), "threads": 1})
            os.environ["OCTET_BENCH_CONCURRENT"] = "1"  # engines.py: no core pinning across processes
            for label, (engine, path) in fp.items():
                one.octet = a.octet_base if label.endswith("(base)") else a.octet
                with ThreadPoolExecutor(a.streams) as pool:
                    reps = list(pool.map(lambda i: compare.run_engine(engine, one, path, dims, inputs,
                                                                      os.path.join(tmp, f"o{i}.npz")),
                                         range(a.streams)))
                rows[label]["streams"] = a.streams
                rows[label]["throughput_per_s"] = sum(r.get("throughput_per_s", 0) for r in reps)
                rows[label]["streams_load"] = round(os.getloadavg()[0], 2)
            del os.environ["OCTET_BENCH_CONCURRENT"]
        for r in rows.values():
            got = [x for x in r["p50_ms"] if x is not None]
            r["best_p50_ms"] = min(got) if got else None
        out["cases"].append({"model": model, "dims": dims, "engines": rows})
        print(case, {k: v["best_p50_ms"] for k, v in rows.items()}, file=sys.stderr, flush=True)
    with open(a.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
