#!/usr/bin/env python3
"""SmoothQuant and mixed-precision fidelity on the outlier models (issue 6), in one run.

    python3 bench/smoothquant.py [--octet build/release/octet] [--samples 10] [--json FILE]

Builds the regression models (tests/models/make_smoothquant_models.py) and calibration
samples (tests/models/make_calibration.py) in a temporary folder, then quantizes each
model static minmax W8A8 naive, with --smoothquant 0.5 and with --smoothquant auto, with
attention int8 and fp32, plus --max-drop 0.01 without smoothing. Prints a table of
end-output cosine on held-out samples, and the smoothed float model's relative error
against the original; --json writes it all with the machine info.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import machine_info  # noqa: E402

MODELS = ("vit_tiny_outliers", "gpt2_tiny_outliers", "vit_tiny_shared_half")


def quantize(octet, model, calib, out, *extra):
    cmd = [octet, "quantize", model, "-o", out, "--calib", calib, "--json", "-q", "--force", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--octet", default=os.path.join(ROOT, "build/release/octet"))
    p.add_argument("--samples", type=int, default=10)
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="octet_smoothquant_bench_")
    calib, models = os.path.join(tmp.name, "calib"), os.path.join(tmp.name, "models")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/make_calibration.py"), calib, "--samples",
                    str(args.samples), "--seq", "32"], check=True, capture_output=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/models/make_smoothquant_models.py"), models],
                   check=True, capture_output=True)
    rows = []
    for name in MODELS:
        model = os.path.join(models, name + ".onnx")
        cal = os.path.join(calib, name.split("_tiny")[0] + "_tiny")
        out = os.path.join(tmp.name, "q.onnx")
        for attention in ("int8", "fp32"):
            for setting in ("none", "0.5", "auto"):
                extra = ["--attention", attention] + ([] if setting == "none" else ["--smoothquant", setting])
                r = quantize(args.octet, model, cal, out, *extra)
                rows.append({"model": name, "attention": attention, "smoothquant": setting,
                             "cosine": min(f["cosine"] for f in r["fidelity"]),
                             "smoothed_float_rel_error": r.get("smoothing", {}).get("max_relative_error"),
                             "file_ratio": r["sizes"]["file_ratio"], "int8_share": r["coverage"]["int8_share"]})
        r = quantize(args.octet, model, cal, out, "--max-drop", "0.01")
        mp = r["mixed_precision"]
        rows.append({"model": name, "attention": "int8", "smoothquant": "none", "max_drop": 0.01,
                     "cosine": min(f["cosine"] for f in r["fidelity"]), "float_layers": mp["float_layer_count"],
                     "float_layer_names": [l["node"] for l in mp["float_layers"]], "evaluations": mp["evaluations"],
                     "int8_share": r["coverage"]["int8_share"]})
    print(f"{'model':24} {'attention':9} {'smoothquant':11} {'cosine':>8} {'smoothed-vs-float':>18}  note")
    for row in rows:
        note = f"--max-drop 0.01: {row['float_layers']} float layers, {row['evaluations']} evals" if "max_drop" in row else ""
        err = row.get("smoothed_float_rel_error")
        print(f"{row['model']:24} {row['attention']:9} {row['smoothquant']:11} {row['cosine']:8.5f} "
              f"{'' if err is None else f'{err:.2g}':>18}  {note}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(args), "samples": args.samples, "rows": rows}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
