#!/usr/bin/env python3
"""Builds (once) and checks the real-model ONNX exports; lists every model the harness uses.

    python3 bench/models/exports.py [NAME ...]     # build what is missing, print a table
    python3 bench/models/exports.py --path NAME    # print one model's ONNX path

Exports (files under exports_dir(), see common.py; rebuilt only when the script that writes
them is newer than the file):
  minilm_l6  export_minilm_l6.py  all-MiniLM-L6-v2 -> last_hidden_state
  dinov2     export_dinov2.py     the focus model's DINOv2 ViT-S/14 backbone -> last_hidden_state
  smollm2    export_smollm2.py    SmolLM2-135M-Instruct (dequantized GGUF) -> logits, no KV cache;
                                  also smollm2_with_past.onnx beside it (KV cache, optimum's names),
                                  checked: prefill + 4 cached steps = the prompt-only logits
Encoder-decoder sets (issue 17), one folder each in optimum's layout (encoder_model.onnx,
decoder_model.onnx, decoder_with_past_model.onnx, decoder_model_merged.onnx, reference.npz),
written by optimum 1.16.2's own exporter through tests/models/export_seq2seq_fixtures.py
--size real, RANDOM weights (no pretrained ones offline), validated by optimum against torch:
  marian   opus-mt-en-de shapes (d_model 512, 6+6 layers, vocab 58101)
  whisper  whisper-tiny shapes (d_model 384, 4+4 layers, 80 mel bins x 3000 frames)
  t5       t5-small shapes (d_model 512, 6+6 layers, relative position bias)
`--path NAME` prints the folder for these.
The torch side runs on /usr/bin/python3 (torch_env.py installs it when missing). Each export
writes a reference .npz of torch's own output; it is checked here with onnxruntime
(max |onnx - torch| <= 1e-4 x max |torch|), and the DINOv2 encoder also against the original
focus ONNX's backbone output on a real photo. Foreign models (minilm_l3, minilm_l6_int8,
dinov2_focus) are used exactly as their packages ship them."""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

import common
import real_data
import torch_env

HERE = common.HERE
EXPORTS = {"minilm_l6": "export_minilm_l6.py", "dinov2": "export_dinov2.py", "smollm2": "export_smollm2.py"}
FOREIGN = ("minilm_l3", "minilm_l6_int8", "dinov2_focus")
SEQ2SEQ = ("marian", "whisper", "t5")
SEQ2SEQ_SCRIPT = os.path.join(common.ROOT, "tests", "models", "export_seq2seq_fixtures.py")
REL_TOL = 1e-4


def export_path(name):
    return os.path.join(common.exports_dir(name), f"{name}.onnx")


def _check_against(onnx_path, feeds, want, what):
    import onnxruntime as ort

    got = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    err = float(np.abs(got - want).max() / np.abs(want).max())
    if err > REL_TOL:
        raise RuntimeError(f"{onnx_path}: differs from {what} by {err:.2e} of the output's scale")
    return err


def _focus_backbone_output(pixels):
    """The focus ONNX's own final-LayerNorm output (its backbone's last_hidden_state)."""
    import onnx
    import onnxruntime as ort

    m = onnx.load(common.real_models.path("dinov2_focus"))
    name = next(n.output[0] for n in m.graph.node if n.op_type == "Add" and "backbone.layernorm.bias" in n.input)
    m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        [name], {"input_image": pixels})[0]


def with_past_path():
    """SmolLM2's decoder with KV cache (optimum's names), written beside the prompt-only one."""
    return os.path.join(common.exports_dir("smollm2"), "smollm2_with_past.onnx")


def _check_with_past(path, ids, want, new=4):
    """Prefill with an empty cache, then `new` tokens on the returned cache: both must give the
    prompt-only logits."""
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    past = [i.name for i in sess.get_inputs() if i.name.startswith("past_key_values.")]
    total, split = ids.shape[1], ids.shape[1] - new
    feeds = {"input_ids": ids[:, :split], "attention_mask": np.ones((1, split), np.int64),
             "position_ids": np.arange(split)[None]}
    feeds.update({n: np.zeros((1, 3, 0, 64), np.float32) for n in past})
    first = sess.run(None, feeds)
    feeds = {"input_ids": ids[:, split:], "attention_mask": np.ones((1, total), np.int64),
             "position_ids": np.arange(split, total)[None], **dict(zip(past, first[1:]))}
    second = sess.run(None, feeds)
    got = np.concatenate([first[0], second[0]], axis=1)
    err = float(np.abs(got - want).max() / np.abs(want).max())
    if err > REL_TOL:
        raise RuntimeError(f"{path}: prefill + cached decoding differ from the prompt-only logits by {err:.2e}")
    return err


def ensure_seq2seq(name):
    """The folder of an encoder-decoder set, exporting it first when missing or stale."""
    folder = os.path.join(common.exports_dir(), name)
    info = os.path.join(folder, "export_info.json")
    if common.up_to_date(info, SEQ2SEQ_SCRIPT):
        return folder
    torch_env.ensure()
    args = [common.TORCH_PYTHON, SEQ2SEQ_SCRIPT, "--size", "real", "--out", common.exports_dir(), name]
    print(f"exports: {name}: {' '.join(args[1:])}", file=sys.stderr)
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{SEQ2SEQ_SCRIPT} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    common.record_sources(info, SEQ2SEQ_SCRIPT)
    return folder


def ensure(name):
    """The export's path, building and checking it first when missing or stale."""
    if name in FOREIGN:
        return common.real_models.path(name)
    if name in SEQ2SEQ:
        return ensure_seq2seq(name)
    script = os.path.join(HERE, EXPORTS[name])
    out = export_path(name)
    info_path = out + ".json"
    if common.up_to_date(info_path, script, os.path.join(HERE, "common.py")) and os.path.exists(out):
        return out
    versions = torch_env.ensure()
    ref = os.path.join(common.exports_dir(name), "torch_reference.npz")
    args = [common.TORCH_PYTHON, script, out, ref]
    if name == "dinov2":
        data = real_data.ensure()
        args.append(os.path.join(data, "calib", "vit", "sample_000.npz"))
    if name == "smollm2":
        args.append(with_past_path())
    print(f"exports: {name}: {' '.join(args[1:])}", file=sys.stderr)
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{script} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    with np.load(ref) as z:
        feeds = {k: z[k] for k in z.files if k in ("input_ids", "attention_mask", "token_type_ids", "pixel_values")}
        want = z["logits"] if "logits" in z.files else z["last_hidden_state"]
        checks = {"vs_torch_rel_error": _check_against(out, feeds, want, "torch")}
        if name == "dinov2":
            checks["vs_focus_backbone_rel_error"] = _check_against(
                out, feeds, _focus_backbone_output(z["pixel_values"]), "the focus ONNX's backbone output")
        if "answer" in z.files:
            checks["greedy_answer"] = str(z["answer"])
        if name == "smollm2":
            checks["with_past_rel_error"] = _check_with_past(with_past_path(), z["input_ids"], want)
    import onnx

    m = onnx.load(out)
    info = {"name": name, "file": out, "bytes": os.path.getsize(out),
            "parameters": int(sum(np.prod(i.dims) for i in m.graph.initializer if i.data_type == 1)),
            "opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
            "inputs": [i.name for i in m.graph.input], "outputs": [o.name for o in m.graph.output],
            "exported_with": versions, "checks": checks, "log": proc.stdout.strip().splitlines()[-3:]}
    with open(info_path, "w") as f:
        json.dump(info, f, indent=1)
    common.record_sources(info_path, script, os.path.join(HERE, "common.py"))
    return out


def describe(name):
    """Source package, version, file size, parameter count and licence, for tables and JSON."""
    if name in SEQ2SEQ:
        folder = ensure(name)
        with open(os.path.join(folder, "export_info.json")) as f:
            info = json.load(f)
        size = sum(os.path.getsize(os.path.join(folder, f)) for f in info["files"])
        return {"model": name, "source_package": f"transformers=={info['transformers']} (random init)",
                "licence": "n/a (random weights)", "file": folder, "file_mb": size / 2**20,
                "parameters": info["parameters"], "foreign": False,
                "producer": f"optimum {info['optimum']} main_export, torch {info['torch']}"}
    src = {"minilm_l6": "minilm_l6", "dinov2": "dinov2_focus", "smollm2": "smollm2"}.get(name, name)
    rm = common.real_models.MODELS[src]
    path = ensure(name)
    out = {"model": name, "source_package": f"{rm.package}=={rm.version}", "licence": rm.licence,
           "source_file": os.path.basename(rm.main_file), "file": path, "file_mb": os.path.getsize(path) / 2**20,
           "foreign": name in FOREIGN}
    if name in FOREIGN:
        import onnx

        m = onnx.load(path, load_external_data=False)
        # weight-only int8 exports hold their weights as int8 initializers: count every element
        out["parameters"] = int(sum(np.prod(i.dims) for i in m.graph.initializer if i.data_type in (1, 3)))
        out["producer"] = f"{m.producer_name} {m.producer_version}"
    else:
        with open(path + ".json") as f:
            info = json.load(f)
        out.update(parameters=info["parameters"], checks=info["checks"],
                   producer=f"torch.onnx.export, torch {info['exported_with'].get('torch')}, "
                            f"transformers {info['exported_with'].get('transformers')}")
    return out


def main():
    common.require_bench_packages("exports.py")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help=f"default: all of {', '.join([*FOREIGN, *EXPORTS, *SEQ2SEQ])}")
    p.add_argument("--path", action="store_true")
    a = p.parse_args()
    for name in a.names or [*FOREIGN, *EXPORTS, *SEQ2SEQ]:
        if a.path:
            print(ensure(name))
            continue
        d = describe(name)
        print(f"{name:15s} {d['source_package']:42s} {d['parameters'] / 1e6:6.1f}M params {d['file_mb']:7.1f} MiB  "
              f"{d['licence']}\n{'':15s} {d['file']}" + (f"\n{'':15s} checks {d['checks']}" if "checks" in d else ""))


if __name__ == "__main__":
    main()
