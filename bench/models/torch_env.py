#!/usr/bin/env python3
"""Makes Debian's /usr/bin/python3 able to run the torch-side export scripts; idempotent.

torch.onnx.export needs torch: Debian's python3-torch (1.13) is what the machines have, and
transformers 4.36.2 is the newest release that still runs on torch 1.13 (installed with pip for
/usr/bin/python3, which needs --break-system-packages on Debian 12). gguf reads SmolLM2's file.
optimum 1.16.2 (the last release for transformers 4.36) exports the encoder-decoder sets
(tests/models/export_seq2seq_fixtures.py); its exporter needs onnx and onnxruntime to fix
dynamic axes and validate. These go in with --no-deps, at versions that run on Debian's numpy
1.24 and python 3.11, so that pip never replaces Debian's torch.
Each piece is installed only when missing or at another version.

    python3 bench/models/torch_env.py      # prints the versions
"""
import json
import os
import subprocess
import sys

TORCH_PYTHON = "/usr/bin/python3"
PIP_PINS = {"transformers": "4.36.2", "gguf": "0.19.0"}
NO_DEPS_PINS = {"optimum": "1.16.2", "onnx": "1.15.0", "onnxruntime": "1.16.3", "protobuf": "3.20.3",
                "coloredlogs": "15.0.1", "humanfriendly": "10.0", "flatbuffers": None}
PROBE = ("import json, importlib.metadata as m\n"
         "out = {}\n"
         "for n in ['torch', 'numpy', 'transformers', 'gguf', 'optimum', 'onnx', 'onnxruntime', 'protobuf',\n"
         "          'coloredlogs', 'humanfriendly', 'flatbuffers']:\n"
         "    try: out[n] = m.version(n)\n"
         "    except m.PackageNotFoundError: out[n] = None\n"
         "print(json.dumps(out))\n")


def installed():
    if not os.access(TORCH_PYTHON, os.X_OK):
        return {}
    p = subprocess.run([TORCH_PYTHON, "-c", PROBE], capture_output=True, text=True)
    return json.loads(p.stdout) if p.returncode == 0 else {}


def ensure(quiet=True):
    have = installed()
    if not have.get("torch"):
        print("torch_env: apt-get install python3-torch (Debian's torch 1.13)", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-q", "python3-torch", "python3-pip"], check=True, env=env,
                       stdout=subprocess.DEVNULL if quiet else None)
    want = [f"{n}=={v}" for n, v in PIP_PINS.items() if have.get(n) != v]
    if want:
        print(f"torch_env: pip install {' '.join(want)} for {TORCH_PYTHON}", file=sys.stderr)
        subprocess.run([TORCH_PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--break-system-packages", *want], check=True)
    bare = [n if v is None else f"{n}=={v}" for n, v in NO_DEPS_PINS.items()
            if not have.get(n) or (v is not None and have.get(n) != v)]
    if bare:
        print(f"torch_env: pip install --no-deps {' '.join(bare)} for {TORCH_PYTHON}", file=sys.stderr)
        subprocess.run([TORCH_PYTHON, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--break-system-packages", "--no-deps", *bare], check=True)
    have = installed()
    missing = [n for n in ("torch", *PIP_PINS, *NO_DEPS_PINS) if not have.get(n)]
    if missing:
        raise RuntimeError(f"torch_env: {TORCH_PYTHON} still lacks {', '.join(missing)}")
    return have


if __name__ == "__main__":
    print(json.dumps(ensure(quiet=False)))
