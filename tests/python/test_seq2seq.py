"""Encoder-decoder sets as optimum exports them (issue 17, user story 1) run in octet.

Fixtures: tests/models/fixtures/seq2seq/{marian,whisper,t5} (tiny, random weights, optimum
1.16.2's own exporter; see tests/models/seq2seq/README.md). For every set:
(a) fp32: encoder_model, decoder_model, decoder_with_past_model and both branches of
    decoder_model_merged (an If on use_cache_branch) each match onnxruntime on the same
    inputs (max |octet - ort| <= 1e-4 x max |ort| per output).
(b) decoding with the cache in octet alone: decoder_model on the first tokens, then
    decoder_with_past_model fed octet's own present.* one token at a time, gives torch's
    teacher-forced logits row by row (reference.npz), within 1e-4 of their scale.
(c) onnxruntime's quantize_dynamic (per-tensor and per-channel, DefaultTensorType=1 for
    the tensors shape inference leaves untyped) of each file runs in octet and matches
    onnxruntime running the same quantized file (cosine >= 0.9999 per output).
(d) octet's own quantizer takes every file, dynamic and static (Marian's final_logits_bias
    is [1, vocab]; T5 has no biases and relative position bias; Whisper a Conv1d stem):
    octet runs the result, and onnxruntime runs the --target ort version with outputs close
    to octet's on the same file.
(e) `octet quantize FOLDER -o OUT` on a whole set: the three files quantized, the decoders
    calibrated on the greedy decode steps of the float set (static), one report with
    greedy fidelity on held-out encoder inputs (token agreement, logits cosine on the
    float run's tokens); dynamic mode needs no samples. Random weights: the tokens mean
    nothing, only their agreement does.
(f) the set's merged decoder is quantized too (static, dynamic, --target ort): one If over
    the two quantized decoders with the weights stored once; both branches run in octet and
    onnxruntime alike, are as close to fp32 as the split files, and the merged file alone
    generates what the split files do."""
import glob
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic

from harness import Tally, parse_args, run_octet
import seq2seq_feeds as sf

args = parse_args()
t = Tally("seq2seq")
TMP = tempfile.TemporaryDirectory(prefix="octet_seq2seq_test_")
ROOT = os.path.join(args.source_dir, "tests/models/fixtures/seq2seq")
MODELS = ("marian", "whisper", "t5")
REL_TOL = 1e-4


def tmp(*parts):
    p = os.path.join(TMP.name, *parts)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def reference(model):
    with np.load(os.path.join(ROOT, model, "reference.npz")) as z:
        return {k: z[k] for k in z.files}


FEEDS = {m: sf.all_feeds(os.path.join(ROOT, m), reference(m)) for m in MODELS}


def octet_run(path, feeds, tag):
    inp, out = tmp(tag, "in.npz"), tmp(tag, "out.npz")
    np.savez(inp, **feeds)
    code, _, err = run_octet(args.octet, "run", path, "--input", inp, "--out", out)
    assert code == 0, f"{os.path.basename(path)}: exit {code}: {err.strip()[-600:]}"
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def ort_run(path, feeds):
    sess = sf.session(path)
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def rel_error(got, want):
    if want.size == 0:  # optimum's merged cache branch returns empty encoder presents
        return 0.0 if got.size == 0 else float("inf")
    return float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def onnx_path(model, key):
    """The file a FEEDS key names ("decoder_model_merged:cache" is the merged file)."""
    return os.path.join(ROOT, model, key.split(":")[0] + ".onnx")


def check_fp32(model, file):
    path = onnx_path(model, file)
    want = ort_run(path, FEEDS[model][file])
    got = octet_run(path, FEEDS[model][file], f"{model}_{file.replace(':', '_')}_fp32")
    assert set(got) == set(want), f"outputs {sorted(got)} != {sorted(want)}"
    for k, v in want.items():
        assert got[k].shape == v.shape, f"{k}: shape {got[k].shape} != {v.shape}"
        err = rel_error(got[k], v)
        assert err <= REL_TOL, f"{k}: octet vs onnxruntime {err:.2e} of the output's scale"


def check_cached_decoding(model):
    folder = os.path.join(ROOT, model)
    ref = reference(model)
    ids, want = ref["decoder_input_ids"], ref["logits"]
    first = 3
    feeds = sf.decoder_feeds(folder, sf.encoder_feeds(folder, ref), ref["encoder_hidden_states"], ids[:, :first],
                             "decoder_model")
    out = octet_run(os.path.join(folder, "decoder_model.onnx"), feeds, f"{model}_chain_0")
    errors = [rel_error(out["logits"], want[:, :first])]
    with_past = os.path.join(folder, "decoder_with_past_model.onnx")
    names = sf.input_names(with_past)
    cache = {n: out[n.replace("past_key_values.", "present.")] for n in names if n.startswith("past_key_values.")}
    for pos in range(first, ids.shape[1]):
        step = {n: feeds[n] for n in names if n in feeds and n != "input_ids"}
        step.update(cache, input_ids=ids[:, pos:pos + 1])
        out = octet_run(with_past, step, f"{model}_chain_{pos}")
        errors.append(rel_error(out["logits"][:, 0], want[:, pos]))
        for n in cache:
            if ".decoder." in n:  # the encoder's keys/values are computed once and kept
                cache[n] = out[n.replace("past_key_values.", "present.")]
        assert out["present.0.decoder.key"].shape[2] == pos + 1, out["present.0.decoder.key"].shape
    assert max(errors) <= REL_TOL, f"logits vs torch per step: {['%.1e' % e for e in errors]}"


def check_ort_dynamic(model, file, per_channel):
    src = onnx_path(model, file)
    tag = f"{model}_{file.replace(':', '_')}_ort_dyn_{int(per_channel)}"
    path = tmp(tag + ".onnx")
    quantize_dynamic(src, path, weight_type=QuantType.QInt8, per_channel=per_channel,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    ops = [n.op_type for n in all_nodes(onnx.load(path).graph)]
    assert ops.count("MatMulInteger") >= 4, f"only {ops.count('MatMulInteger')} MatMulInteger"
    want = ort_run(path, FEEDS[model][file])
    got = octet_run(path, FEEDS[model][file], tag)
    for k, v in want.items():
        c = cosine(got[k], v)
        assert c >= 0.9999, f"{k}: octet vs onnxruntime on the same int8 file, cosine {c:.6f}"


def all_nodes(graph):
    """The graph's nodes and those of its subgraphs."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(a.g)


def calibration(model, file, samples=4):
    """Samples for `file`: other encoder inputs (seeded), other decoder tokens, all through
    onnxruntime's fp32 encoder (and first decoder step for the cache)."""
    folder = os.path.join(ROOT, model)
    out_dir = tmp("calib", model, file, "x")[:-2]
    if glob.glob(os.path.join(out_dir, "*.npz")):
        return out_dir
    ref = reference(model)
    rng = np.random.default_rng(5)
    vocab = ref["logits"].shape[-1]
    for i in range(samples):
        r = dict(ref)
        if "input_features" in r:
            r["input_features"] = rng.standard_normal(r["input_features"].shape).astype(np.float32)
        else:
            n = int(rng.integers(5, 16))
            r["input_ids"] = rng.integers(2, vocab - 2, (1, n)).astype(np.int64)
            r["attention_mask"] = np.ones((1, n), np.int64)
        r["decoder_input_ids"] = np.concatenate(
            [ref["decoder_input_ids"][:, :1], rng.integers(2, vocab - 2, (1, int(rng.integers(2, 7))))], axis=1)
        feeds = sf.all_feeds(folder, r, prefix=r["decoder_input_ids"].shape[1])[file]
        np.savez(os.path.join(out_dir, f"sample_{i:03d}.npz"), **feeds)
    return out_dir


def octet_quantize(model, file, mode, target):
    src = os.path.join(ROOT, model, file + ".onnx")
    out = tmp(f"{model}_{file}_octet_{mode}_{target}.onnx")
    extra = ["--calib", calibration(model, file)] if mode == "static" else []
    code, stdout, err = run_octet(args.octet, "quantize", src, "-o", out, "--mode", mode, "--target", target,
                                  "--json", "-q", *extra, timeout=600)
    assert code == 0, f"exit {code}: {err.strip()[-800:]}"
    return out, json.loads(stdout)


def check_octet_quantize(model, file, mode):
    feeds = FEEDS[model][file]
    fp32 = ort_run(os.path.join(ROOT, model, file + ".onnx"), feeds)
    main = "logits" if "logits" in fp32 else "last_hidden_state"
    path, report = octet_quantize(model, file, mode, "octet")
    got = octet_run(path, feeds, f"{model}_{file}_octq_{mode}")
    c = cosine(got[main], fp32[main])
    floor = 0.99 if mode == "dynamic" else 0.95
    assert c >= floor, f"{main}: int8 ({mode}) vs fp32 cosine {c:.4f} < {floor}"
    # the same quantization written for onnxruntime: both engines agree on that file
    ort_path, _ = octet_quantize(model, file, mode, "ort")
    want = ort_run(ort_path, feeds)
    got = octet_run(ort_path, feeds, f"{model}_{file}_octq_{mode}_ort")
    c2 = cosine(got[main], want[main])
    assert c2 >= 0.999, f"{main}: octet vs onnxruntime on octet's --target ort file, cosine {c2:.5f}"
    print(f"  {model}/{file} {mode}: int8 vs fp32 cosine {c:.5f}, octet vs ort on the ort file {c2:.6f}")


def check_merged_quantize_says_why(model):
    """octet's quantizer does not go inside the merged file's If: it must say so, not
    silently write a float model."""
    out = tmp(f"{model}_merged_octet.onnx")
    code, stdout, err = run_octet(args.octet, "quantize", onnx_path(model, "decoder_model_merged"), "-o", out,
                                  "--mode", "dynamic", "--json", "-q")
    assert code == 0, err
    skipped = [s for s in json.loads(stdout)["float_nodes"] if s["op"] == "If"]
    assert skipped and "quantize the set's folder" in skipped[0]["reason"], skipped


def check_incomplete_set_named():
    """A set folder missing a decoder: one line naming the file, exit 1, nothing written."""
    import shutil

    folder = tmp("broken_set", "x")[:-2]
    shutil.copytree(os.path.join(ROOT, "marian"), folder, dirs_exist_ok=True)
    os.remove(os.path.join(folder, "decoder_with_past_model.onnx"))
    out = tmp("broken_set_out")
    code, _, err = run_octet(args.octet, "quantize", folder, "-o", out, "-q")
    assert code == 1 and "decoder_with_past_model.onnx: missing" in err and err.count("\n") == 1, err
    assert not os.path.exists(out), os.listdir(out)


def check_foreign_merged_named():
    """A set whose decoder_model_merged.onnx is not optimum's merged layout (here: a copy of
    decoder_model.onnx) fails naming that file, rather than writing a wrong merged file."""
    import shutil

    folder = tmp("odd_merged_set", "x")[:-2]
    shutil.copytree(os.path.join(ROOT, "marian"), folder, dirs_exist_ok=True)
    shutil.copy(os.path.join(folder, "decoder_model.onnx"), os.path.join(folder, "decoder_model_merged.onnx"))
    code, _, err = run_octet(args.octet, "quantize", folder, "-o", tmp("odd_merged_set_out"), "--mode", "dynamic", "-q")
    assert code == 1 and "decoder_model_merged.onnx: not optimum's merged decoder" in err, err


def encoder_calibration(model, samples=6):
    out_dir = tmp("calib_set", model, "x")[:-2]
    ref = reference(model)
    rng = np.random.default_rng(9)
    vocab = ref["logits"].shape[-1]
    for i in range(samples):
        if "input_features" in ref:
            feeds = {"input_features": rng.standard_normal(ref["input_features"].shape).astype(np.float32)}
        else:
            n = int(rng.integers(5, 16))
            feeds = {"input_ids": rng.integers(2, vocab - 2, (1, n)).astype(np.int64),
                     "attention_mask": np.ones((1, n), np.int64)}
        np.savez(os.path.join(out_dir, f"sample_{i:03d}.npz"), **feeds)
    return out_dir


def check_merged_of_set(model, mode, target, out, report):
    """The set's merged decoder, quantized: one If whose branches are the two quantized
    decoders, the weights stored once for both. It runs in octet (and in onnxruntime when
    the target is one onnxruntime runs: static QDQ, or --target ort) with the same outputs
    on each branch; its with-past branch computes what the quantized
    decoder_with_past_model computes; its no-past branch is as close to float as the
    quantized decoder_model (it shares the with-past branch's rounding of the weights)."""
    m = report["merged_decoder"]
    # the weights live once: what is shared outweighs what each branch keeps to itself
    assert m["shared_initializers"] > 0 and m["shared_bytes"] > 2 * m["branch_bytes"], m
    path = os.path.join(out, "decoder_model_merged.onnx")
    merged = onnx.load(path)
    assert [n.op_type for n in merged.graph.node] == ["If"], [n.op_type for n in merged.graph.node]
    quantized_ops = {"DequantizeLinear", "MatMulInteger", "QMatMul", "DynamicQuantizeLinear"}
    for a in merged.graph.node[0].attribute:
        n_q = sum(n.op_type in quantized_ops for n in all_nodes(a.g))
        assert n_q >= 4, f"{a.name}: only {n_q} quantized nodes"
    in_ort = mode == "static" or target == "ort"
    floor = 0.99 if mode == "dynamic" else 0.95
    for key, split in (("decoder_model_merged:no_cache", "decoder_model"),
                       ("decoder_model_merged:cache", "decoder_with_past_model")):
        feeds = FEEDS[model][key]
        tag = f"{model}_set_{mode}_{target}_{key.replace(':', '_')}"
        got = octet_run(path, feeds, tag)
        if in_ort:
            for k, v in ort_run(path, feeds).items():
                assert v.size == 0 or cosine(got[k], v) >= 0.999, f"{k}: octet vs onnxruntime cosine {cosine(got[k], v):.5f}"
                assert got[k].shape == v.shape, f"{k}: {got[k].shape} vs onnxruntime {v.shape}"
        split_logits = octet_run(os.path.join(out, split + ".onnx"), FEEDS[model][split], tag + "_split")["logits"]
        fp32 = ort_run(onnx_path(model, "decoder_model_merged"), feeds)["logits"]
        c_merged, c_split = cosine(got["logits"], fp32), cosine(split_logits, fp32)
        if key.endswith(":cache"):
            err = rel_error(got["logits"], split_logits)
            assert err <= 1e-5, f"with-past branch vs the quantized decoder_with_past_model: {err:.2e}"
        assert c_merged >= floor and c_merged >= c_split - 0.01, \
            f"{key}: int8 vs fp32 cosine {c_merged:.5f} (the split file {c_split:.5f})"
        print(f"  {model} {mode}/{target} {key}: int8 vs fp32 cosine {c_merged:.5f}, split file {c_split:.5f}")
    if "vs_split_files" in m:
        vs = m["vs_split_files"]
        assert vs["tokens"] > 0 and vs["agreeing_tokens"] >= 0.9 * vs["tokens"], vs
        assert vs["max_logits_rel_diff"] <= 0.05, vs


def check_merged_generates(model):
    """`octet generate` with the quantized encoder and merged decoder alone samples (seeded,
    high temperature: a different token almost every step) what the quantized split files
    sample."""
    import shutil

    out = tmp(f"{model}_set_static")  # written by the static set check
    alone = tmp(f"{model}_set_static_merged_only", "x")[:-2]
    for f in ("encoder_model.onnx", "decoder_model_merged.onnx", "config.json"):
        shutil.copy(os.path.join(out, f), alone)
    ids = ",".join(map(str, reference(model)["input_ids"][0].tolist()))
    runs = []
    for folder in (out, alone):
        code, stdout, err = run_octet(args.octet, "generate", folder, "--prompt-ids", ids, "--json", "--threads", "1",
                                      "--max-new-tokens", "12", "--ignore-eos", "--do-sample", "--temperature", "3",
                                      "--seed", "7")
        assert code == 0, f"exit {code}: {err.strip()[-600:]}"
        runs.append(json.loads(stdout)["ids"])
    assert len(set(runs[0])) > 3, f"sampling gave too few distinct tokens to test anything: {runs[0]}"
    assert runs[1] == runs[0], f"merged decoder {runs[1]} vs split files {runs[0]}"


def check_set_quantize(model, mode, target="octet"):
    out = tmp(f"{model}_set_{mode}" + ("" if target == "octet" else "_" + target))
    extra = ["--calib", encoder_calibration(model)] if mode == "static" else []
    code, stdout, err = run_octet(args.octet, "quantize", os.path.join(ROOT, model), "-o", out, "--mode", mode,
                                  "--target", target, "--json", "-q", *extra, timeout=600)
    assert code == 0, f"exit {code}: {err.strip()[-800:]}"
    report = json.loads(stdout)
    assert sorted(report["files"]) == sorted(sf.FILES), sorted(report["files"])
    for f in sf.FILES:
        assert os.path.exists(os.path.join(out, f + ".onnx")), f
    assert os.path.exists(os.path.join(out, "config.json"))
    check_merged_of_set(model, mode, target, out, report)
    if mode == "dynamic":
        assert "greedy_fidelity" not in report and report["decoder_calibration_samples"] == 0
        return
    # 5 samples (the 6th is held out) x 2 to 16 greedy steps (the set's default; EOS may end one
    # early): the first step calibrates decoder_model, the rest the cache file
    assert 5 * 2 <= report["decoder_calibration_samples"] <= 5 * 16, report["decoder_calibration_samples"]
    fid = report["greedy_fidelity"]
    assert fid["sequences"] == 1 and not fid["in_sample"], fid  # the last of 6 held out
    assert fid["tokens"] > 0 and fid["forced_steps"] > 0, fid
    assert fid["forced_top1_agreement"] >= 0.9 and fid["mean_logits_cosine"] >= 0.99, fid
    print(f"  {model} set static: {fid}")
    # the quantized set runs as a set: its encoder and first decoder step in octet
    ref_feeds = FEEDS[model]
    for f in ("encoder_model", "decoder_model"):
        octet_run(os.path.join(out, f + ".onnx"), ref_feeds[f], f"{model}_set_{f}")


for m in MODELS:
    for f in (*sf.FILES, *sf.MERGED):
        t.check(f"{m}/{f}: fp32 matches onnxruntime", check_fp32, m, f)
    t.check(f"{m}: cached decoding in octet gives torch's logits", check_cached_decoding, m)
    # not the merged file: quantize_dynamic leaves its If branches float (their weights are
    # initializers of the outer graph, which it does not look for)
    # per-tensor and per-channel weights across the files (not both on each: CI time)
    for f, pc in zip(sf.FILES, (False, True, m != "t5")):
        t.check(f"{m}/{f}: onnxruntime quantize_dynamic per_channel={pc} runs in octet", check_ort_dynamic, m, f, pc)
    for f in sf.FILES:
        for mode in ("dynamic", "static"):
            t.check(f"{m}/{f}: octet quantize --mode {mode}", check_octet_quantize, m, f, mode)
    for mode in ("static", "dynamic"):
        t.check(f"{m}: octet quantize on the set folder, --mode {mode}", check_set_quantize, m, mode)
    t.check(f"{m}: octet quantize on the set folder, --mode dynamic --target ort", check_set_quantize, m, "dynamic",
            "ort")
    if m != "whisper":  # Whisper's prompt is log-mel features, not ids
        t.check(f"{m}: the quantized merged decoder alone generates what the quantized split files do",
                check_merged_generates, m)
    t.check(f"{m}: octet quantize on the merged file says its If stays float", check_merged_quantize_says_why, m)
t.check("a set folder missing a file is named before anything is written", check_incomplete_set_named)
t.check("a merged decoder not in optimum's layout is named", check_foreign_merged_named)
t.finish()
