#!/usr/bin/env python3
"""A/B of octet builds that holds up on a loaded machine: per op type, the sum of each
node's fastest run (`octet bench --profile --json`, profile_nodes[].min_ms), best over
rounds; the builds alternate, in reversed order every other round. Also the whole-run p50
(best round), which the load moves far more.

  python3 bench/node_minima_ab.py --bin base=/tmp/octet_main --bin new=build/release/octet \\
      --case mini128:~/.cache/octet/exports/minilm_l6/minilm_l6.onnx:batch=1,sequence=128 \\
      --case dino:~/.cache/octet/exports/dinov2/dinov2.onnx:batch=1 --rounds 3 --threads 1 --iters 40

Prints one line per case and op type: each build's value and the last build / first build ratio.
"""
import argparse
import collections
import json
import os
import subprocess


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", action="append", required=True, help="NAME=PATH of an octet CLI (two or more)")
    p.add_argument("--case", action="append", required=True, help="NAME:MODEL[:dim=v,dim=v]")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--iters", type=int, default=40)
    a = p.parse_args()
    bins = [tuple(b.split("=", 1)) for b in a.bin]
    best = collections.defaultdict(lambda: float("inf"))
    for r in range(a.rounds):
        for case in a.case:
            name, model, *dims = case.split(":")
            for bn, path in (bins if r % 2 == 0 else bins[::-1]):
                cmd = [path, "bench", os.path.expanduser(model), "--threads", str(a.threads), "--warmup", "10",
                       "--iters", str(a.iters), "--profile", "--json"]
                for d in (dims[0].split(",") if dims else []):
                    cmd += ["--dim", d]
                j = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
                per = collections.defaultdict(float)
                for n in j["profile_nodes"]:
                    per[n["op"]] += n["min_ms"]
                per["ALL nodes"] = sum(per.values())
                per["p50 (whole run)"] = j["p50_ms"]
                for op, v in per.items():
                    best[(name, bn, op)] = min(best[(name, bn, op)], v)
    for case in a.case:
        name = case.split(":")[0]
        for op in sorted({k[2] for k in best if k[0] == name}):
            vals = [best[(name, bn, op)] for bn, _ in bins]
            if max(vals) < 0.01:
                continue
            print(f"{name:14s} {op:24s} " + "  ".join(f"{bn} {v:.3f}" for (bn, _), v in zip(bins, vals))
                  + f"  ratio {vals[-1] / vals[0]:.3f}")


if __name__ == "__main__":
    main()
