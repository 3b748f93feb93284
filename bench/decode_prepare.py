#!/usr/bin/env python3
"""The model folders bench/decode.py measures, each built from the one SmolLM2 KV-cache export
(bench/models: smollm2_with_past.onnx, optimum's names) by one step, in a process of its own:

  python3 bench/decode_prepare.py ortgenai PRECISION WITH_PAST.onnx OUT_DIR   # fp32 | int8 | int4
  python3 bench/decode_prepare.py openvino PRECISION WITH_PAST.onnx OUT_DIR
  python3 bench/decode_prepare.py octet PRECISION WITH_PAST.onnx OUT_DIR --octet build/release/octet
      [--method gptq|rtn] [--block N] [--asymmetric] [--calib DIR]     # int8 | int4

ortgenai: OUT_DIR/model.onnx (fp32: a hard link to the export; int8/int4: onnxruntime's
  MatMulNBitsQuantizer, block 32, symmetric, QOperator MatMulNBits, accuracy level ORT_ACCURACY_LEVEL),
  genai_config.json written here from the model's own dimensions, tokenizer.json (real_data's
  SmolLM2 tokenizer rebuilt from the GGUF) and tokenizer_config.json.
openvino: OUT_DIR/openvino_model.xml/.bin, the ONNX converted by openvino.convert_model and made stateful the way
  openvino.genai's LLMPipeline expects (see make_stateful), weights compressed by
  nncf.compress_weights for int8 (INT8_ASYM) and int4 (INT4_SYM, group NNCF_GROUP); fp32 is saved
  without fp16 compression. openvino_tokenizer.xml / openvino_detokenizer.xml from
  openvino_tokenizers.convert_tokenizer.
octet: OUT_DIR/model.onnx from `octet quantize --weights int8|int4` (OCTET_RECIPES: GPTQ, block 32,
  calibrated on the with-past export itself with calib/smollm2's 32 windows: 128-token windows of
  the calibration documents, which real_data.py keeps apart from the documents the held-out windows
  (eval/lm_windows.npz) come from; octet's calibration reader fills the cache inputs as a prompt
  step gets them). --method rtn: round to nearest, no samples (the recipe before session 13).
Prints one JSON object describing what was written (recipe, sizes, seconds)."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))
import common  # noqa: E402

BLOCK = 32
ORT_ACCURACY_LEVEL = 4  # int8 activations inside MatMulNBits: the CPU setting ort-genai's model builder uses
NNCF_GROUP = 32
# octet's weight-only recipe per precision (bench/results/2026-11-26_decode_session13_calib_*: the
# int8 choice weighed on 32 held-out windows against the peers and the asymmetric files' step time).
OCTET_RECIPES = {"int8": dict(method="gptq", block=32, asymmetric=False),
                 "int4": dict(method="gptq", block=32, asymmetric=False)}
SMOLLM2 = dict(head_size=64, hidden_size=576, num_attention_heads=9, num_key_value_heads=3, num_hidden_layers=30,
               vocab_size=49152, context_length=8192)


def special_tokens():
    """bos / eos / pad ids and strings from the GGUF's own metadata (the tokenizer's source)."""
    from gguf import GGUFReader

    r = GGUFReader(common.real_models.path("smollm2"))
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    ids = {k: int(r.fields[f"tokenizer.ggml.{k}_token_id"].contents())
           for k in ("bos", "eos", "padding", "unknown") if f"tokenizer.ggml.{k}_token_id" in r.fields}
    ids.setdefault("padding", ids["eos"])
    return {k: (v, tokens[v]) for k, v in ids.items()}


def write_tokenizer(out):
    """tokenizer.json + tokenizer_config.json (what Hugging Face, onnxruntime-extensions and
    transformers read), from the tokenizer real_data.py builds."""
    tok = common.smollm2_tokenizer()
    special = special_tokens()
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(s, special=True) for _, s in special.values()])
    path = os.path.join(out, "tokenizer.json")
    tok.save(path)
    config = {"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": False, "model_max_length": 8192,
              "bos_token": special["bos"][1], "eos_token": special["eos"][1],
              "pad_token": special["padding"][1], "clean_up_tokenization_spaces": False}
    if "unknown" in special:
        config["unk_token"] = special["unknown"][1]
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1)
    return path, special


def genai_config(threads, special, filename="model.onnx"):
    """onnxruntime-genai's genai_config.json for the export: optimum names, SmolLM2's dimensions.
    `threads` goes into the decoder's session_options (intra-op pool; inter-op 1)."""
    m = SMOLLM2
    return {
        "model": {
            "type": "llama", "bos_token_id": special["bos"][0], "eos_token_id": special["eos"][0],
            "pad_token_id": special["padding"][0], "vocab_size": m["vocab_size"],
            "context_length": m["context_length"],
            "decoder": {
                "filename": filename, "head_size": m["head_size"], "hidden_size": m["hidden_size"],
                "num_attention_heads": m["num_attention_heads"], "num_key_value_heads": m["num_key_value_heads"],
                "num_hidden_layers": m["num_hidden_layers"],
                "session_options": {"log_id": "onnxruntime-genai", "intra_op_num_threads": threads,
                                    "inter_op_num_threads": 1, "provider_options": []},
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "position_ids": "position_ids", "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
            },
        },
        "search": {"do_sample": False, "num_beams": 1, "num_return_sequences": 1, "max_length": 256,
                   "min_length": 0, "past_present_share_buffer": False, "repetition_penalty": 1.0,
                   "temperature": 1.0, "top_k": 1, "top_p": 1.0, "length_penalty": 1.0,
                   "no_repeat_ngram_size": 0, "early_stopping": True, "diversity_penalty": 0.0},
    }


def prepare_ortgenai(precision, src, out, threads=2):
    info = {"engine": "onnxruntime-genai", "precision": precision}
    model = os.path.join(out, "model.onnx")
    if os.path.exists(model):
        os.remove(model)
    if precision == "fp32":
        os.link(src, model)  # the export itself, unchanged
        info["recipe"] = "the fp32 export as is"
    else:
        import onnx
        from onnxruntime.quantization import QuantFormat
        from onnxruntime.quantization.matmul_nbits_quantizer import (DefaultWeightOnlyQuantConfig,
                                                                     MatMulNBitsQuantizer)

        bits = {"int8": 8, "int4": 4}[precision]
        cfg = DefaultWeightOnlyQuantConfig(block_size=BLOCK, is_symmetric=True, accuracy_level=ORT_ACCURACY_LEVEL,
                                           quant_format=QuantFormat.QOperator, bits=bits)
        q = MatMulNBitsQuantizer(onnx.load(src), bits=bits, block_size=BLOCK, is_symmetric=True,
                                 accuracy_level=ORT_ACCURACY_LEVEL, algo_config=cfg)
        q.process()
        q.model.save_model_to_file(model, use_external_data_format=False)
        ops = {}
        for n in onnx.load(model, load_external_data=False).graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        info["recipe"] = (f"onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer(bits={bits}, "
                          f"block_size={BLOCK}, is_symmetric=True, accuracy_level={ORT_ACCURACY_LEVEL}, "
                          "QOperator): every MatMul with a constant weight (the LM head too) -> MatMulNBits; "
                          "the embedding Gather stays fp32")
        info["matmulnbits_nodes"] = ops.get("MatMulNBits", 0)
        info["matmul_nodes_left"] = ops.get("MatMul", 0)
    _, special = write_tokenizer(out)
    with open(os.path.join(out, "genai_config.json"), "w") as f:
        json.dump(genai_config(threads, special), f, indent=1)
    info["model_mb"] = os.path.getsize(model) / 2**20
    info["special_tokens"] = {k: v[0] for k, v in special.items()}
    return info


def make_stateful(model):
    """The stateful form LLMPipeline runs (as optimum-intel's exporter writes it):
    - a `beam_idx` input (i32 [batch]) and a Gather of every past_key_values.* input by it on the
      batch axis (LLMPipeline feeds it on every step; it reorders the cache for beam search);
    - openvino's MakeStateful pass: each past_key_values.N.key/.value input becomes a ReadValue of
      a variable that present.N.key/.value's Assign writes, both hidden from the model's I/O;
    - each ReadValue initialized with zeros of shape [batch, kv_heads, 0, head_size] (batch from
      input_ids), so the first call starts with an empty cache of the right batch."""
    import numpy as np
    import openvino as ov
    from openvino import opset13 as ops
    from openvino._offline_transformations import apply_make_stateful_transformation

    names = lambda ports: [n for p in ports for n in p.get_names()]  # noqa: E731
    past = sorted(n for n in names(model.inputs) if n.startswith("past_key_values."))
    present = [n.replace("past_key_values.", "present.") for n in past]
    missing = [n for n in present if n not in names(model.outputs)]
    if not past or missing:
        raise RuntimeError(f"make_stateful: past inputs {len(past)}, present outputs missing {missing[:4]}")
    batch_dim = model.input("input_ids").get_partial_shape()[0]
    beam_idx = ops.parameter(ov.PartialShape([batch_dim]), ov.Type.i32, name="beam_idx")
    beam_idx.output(0).get_tensor().set_names({"beam_idx"})
    model.add_parameters([beam_idx])
    for name in past:
        port = model.input(name)
        consumers = list(port.get_target_inputs())
        gathered = ops.gather(port, beam_idx, ops.constant(np.int64(0)))
        for c in consumers:
            c.replace_source_output(gathered.output(0))
    model.validate_nodes_and_infer_types()
    apply_make_stateful_transformation(model, dict(zip(past, present)))
    ids = model.input("input_ids")
    batch = ops.gather(ops.shape_of(ids, output_type="i64"), ops.constant(np.array([0], np.int64)),
                       ops.constant(np.int64(0)))
    states = 0
    for op in model.get_ops():
        if op.get_type_name() != "ReadValue":
            continue
        shape = op.get_output_partial_shape(0)
        dims = [batch] + [ops.constant(np.array([d.get_length() if d.is_static else 0], np.int64))
                          for d in list(shape)[1:]]
        zeros = ops.broadcast(ops.constant(np.float32(0)), ops.concat(dims, axis=0))
        op.set_arguments([zeros])
        states += 1
    model.validate_nodes_and_infer_types()
    return states


def prepare_openvino(precision, src, out):
    import openvino as ov

    info = {"engine": "openvino-genai", "precision": precision}
    t0 = time.perf_counter()
    # ov.convert_model (what the ovc tool runs), not Core.read_model: its MOC transformations fuse each
    # layer's MatMul/Softmax attention into ScaledDotProductAttention (30 here; read_model leaves 0),
    # which openvino's CPU attention kernels and LLMPipeline's paged-attention backend need.
    model = ov.convert_model(src)
    info["sdpa_nodes"] = sum(op.get_type_name() == "ScaledDotProductAttention" for op in model.get_ops())
    info["states"] = make_stateful(model)
    info["inputs"] = [p.get_any_name() for p in model.inputs]
    info["outputs"] = [p.get_any_name() for p in model.outputs]
    if precision == "fp32":
        info["recipe"] = ("openvino.convert_model(ONNX) -> stateful (beam_idx + MakeStateful) -> "
                          "ov.save_model(compress_to_fp16=False)")
    else:
        import nncf

        if precision == "int8":
            kw = dict(mode=nncf.CompressWeightsMode.INT8_ASYM)
        else:
            kw = dict(mode=nncf.CompressWeightsMode.INT4_SYM, group_size=NNCF_GROUP, ratio=1.0)
        model = nncf.compress_weights(model, **kw)
        info["recipe"] = (f"stateful IR as fp32, then nncf.compress_weights({', '.join(f'{k}={v}' for k, v in kw.items())})"
                          + ("; NNCF's defaults keep the embedding and the LM head in INT8_ASYM (all_layers=False)"
                             if precision == "int4" else ""))
    xml = os.path.join(out, "openvino_model.xml")
    ov.save_model(model, xml, compress_to_fp16=False)
    info["model_mb"] = (os.path.getsize(xml) + os.path.getsize(xml[:-4] + ".bin")) / 2**20
    info["convert_s"] = time.perf_counter() - t0
    try:
        info["tokenizer"] = write_ov_tokenizer(out)
    except Exception as e:  # LLMPipeline takes token ids without it; record why
        info["tokenizer"] = f"failed: {type(e).__name__}: {e}"
    return info


def write_ov_tokenizer(out):
    import openvino as ov
    from openvino_tokenizers import convert_tokenizer
    from transformers import PreTrainedTokenizerFast

    path, special = write_tokenizer(out)
    hf = PreTrainedTokenizerFast(tokenizer_file=path, bos_token=special["bos"][1], eos_token=special["eos"][1],
                                 pad_token=special["padding"][1])
    tok, detok = convert_tokenizer(hf, with_detokenizer=True)
    ov.save_model(tok, os.path.join(out, "openvino_tokenizer.xml"))
    ov.save_model(detok, os.path.join(out, "openvino_detokenizer.xml"))
    # LLMPipeline reads eos / bos from here when present (else from the tokenizer's rt_info)
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": special["bos"][0], "eos_token_id": special["eos"][0],
                   "pad_token_id": special["padding"][0]}, f)
    return "openvino_tokenizers.convert_tokenizer(PreTrainedTokenizerFast(tokenizer.json), with_detokenizer=True)"


def calib_windows():
    """calib/smollm2: 32 samples of input_ids [1, 128] from the calibration documents (real_data.py)."""
    import real_data

    return os.path.join(real_data.ensure(), "calib", "smollm2")


def prepare_octet(precision, src, out, octet, method, block, asymmetric, calib=None):
    import subprocess

    if precision == "fp32":
        raise SystemExit("decode_prepare: octet's fp32 rows run the export itself; nothing to prepare")
    model = os.path.join(out, "model.onnx")
    report = os.path.join(out, "quantize_report.json")
    cmd = [octet, "quantize", src, "-o", model, "--weights", precision, "--block", str(block), "--force", "--quiet",
           "--report", report]
    if asymmetric:
        cmd.append("--asymmetric")
    info = {"engine": "octet", "precision": precision, "method": method, "block": block,
            "symmetric": not asymmetric}
    if method != "rtn":
        calib = calib or calib_windows()
        cmd += ["--method", method, "--calib", calib]
        count = len([f for f in os.listdir(calib) if f.endswith(".npz")])
        info["calibration"] = (f"{calib}: {count} windows of 128 tokens (input_ids only) from the calibration "
                               "documents, none from the documents of the held-out windows; attention_mask, "
                               "position_ids and the empty cache filled by octet's reader as a prompt step")
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"decode_prepare: {' '.join(cmd[1:4])} ... exited {p.returncode}: "
                         f"{(p.stderr.strip().splitlines() or [''])[-1]}")
    info["quantize_s"] = time.perf_counter() - t0
    with open(report) as f:
        r = json.load(f)
    short = {src: os.path.basename(src), model: "model.onnx", report: "quantize_report.json"}
    info["recipe"] = "octet " + " ".join(short.get(c, c) for c in cmd[1:])
    info["gptq_layers"] = r.get("gptq_layers")
    info["calibration_samples"] = r.get("calibration_samples")
    info["quantized_layers"] = len(r.get("layers", []))
    info["form"] = r.get("form")
    info["model_mb"] = os.path.getsize(model) / 2**20
    return info


def octet_recipe(precision, method=None, block=None, asymmetric=None):
    """OCTET_RECIPES[precision] with the given fields replaced."""
    r = dict(OCTET_RECIPES[precision])
    r.update({k: v for k, v in (("method", method), ("block", block), ("asymmetric", asymmetric)) if v is not None})
    return r


def octet_tag(precision, recipe):
    """The folder name under exports_dir("decode", "octet") for a recipe: int8-gptq-b32-sym."""
    return f"{precision}-{recipe['method']}-b{recipe['block']}-{'asym' if recipe['asymmetric'] else 'sym'}"


def main():
    import argparse

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("engine", choices=["ortgenai", "openvino", "octet"])
    p.add_argument("precision", choices=["fp32", "int8", "int4"])
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--octet", default=os.path.join(os.path.dirname(HERE), "build", "release", "octet"))
    p.add_argument("--method", choices=["gptq", "rtn", "awq", "awq-gptq"], help="octet: default OCTET_RECIPES'")
    p.add_argument("--block", type=int, help="octet: default OCTET_RECIPES'")
    p.add_argument("--asymmetric", action="store_true", default=None, help="octet: default OCTET_RECIPES'")
    p.add_argument("--calib", help="octet: calibration folder (default calib/smollm2)")
    a = p.parse_args()
    engine, precision, src, out = a.engine, a.precision, a.src, a.out
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    if engine == "octet":
        r = octet_recipe(precision, a.method, a.block, a.asymmetric)
        info = prepare_octet(precision, src, out, a.octet, r["method"], r["block"], r["asymmetric"], a.calib)
    elif engine == "ortgenai":
        info = prepare_ortgenai(precision, src, out)
    else:
        info = prepare_openvino(precision, src, out)
    info["prepare_s"] = time.perf_counter() - t0
    print(json.dumps(info))


if __name__ == "__main__":
    main()
