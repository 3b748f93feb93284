"""Attention fusion on encoder-decoder sets as optimum exports them (issue 17: cross-attention
fused, self-attention with past as in the decoder issue).

For the tiny fixtures tests/models/fixtures/seq2seq/{marian,whisper,t5} (transformers 4.36
through optimum; Marian and Whisper in BART's per-head [B*H,S,D] layout, T5 unscaled with a
relative position bias), each of encoder_model, decoder_model and decoder_with_past_model:
(a) `octet optimize` fuses every attention: no Softmax is left, the encoder's become
    octet.Attention on the projections, the decoders' octet.GroupedAttention (self-attention
    over present.N.decoder.*, cross-attention over the encoder keys/values as given);
(b) the optimized file, run as written (--level 0), matches onnxruntime running the
    original on the same inputs, every output (present.* included): cosine >= 0.9999 and
    max |octet - ort| <= 1e-4 x max |ort|;
(c) after `octet quantize --mode dynamic` (attention products stay float) the decoders'
    attention still fuses; after --mode static the products carry Q/DQ: no float attention
    op takes them; Marian's and Whisper's encoder self-attention becomes octet.QAttention
    (fuse_qbmm_attention), and the optimized file matches onnxruntime running the same
    quantized file (cosine >= 0.9999); Marian's and Whisper's decoder attention over 4-D
    caches becomes octet.GroupedAttention carrying the four fake quantizations as inputs
    (what the in-place runner turns into CachedAttention), matching onnxruntime on the same
    Q/DQ file; so does T5's (fuse_grouped_attention, per-row softmax)."""
import collections
import os
import tempfile

import numpy as np
import onnx

from harness import Tally, parse_args, run_octet
import seq2seq_feeds as sf

args = parse_args()
t = Tally("seq2seq_attention")
TMP = tempfile.TemporaryDirectory(prefix="octet_seq2seq_attention_")
ROOT = os.path.join(args.source_dir, "tests/models/fixtures/seq2seq")
MODELS = ("marian", "whisper", "t5")
FUSED_OP = {"encoder_model": "Attention", "decoder_model": "GroupedAttention",
            "decoder_with_past_model": "GroupedAttention"}


def reference(model):
    with np.load(os.path.join(ROOT, model, "reference.npz")) as z:
        return {k: z[k] for k in z.files}


FEEDS = {m: sf.all_feeds(os.path.join(ROOT, m), reference(m)) for m in MODELS}


def op_counts(path):
    c = collections.Counter()
    for n in onnx.load(path).graph.node:
        c[(n.domain or "ai.onnx") + "." + n.op_type] += 1
    return c


def optimize(src, tag):
    out = os.path.join(TMP.name, tag + ".onnx")
    code, _, err = run_octet(args.octet, "optimize", src, "-o", out, "--force")
    assert code == 0, f"optimize {src}: exit {code}: {err.strip()[-600:]}"
    return out


def octet_run(path, feeds, tag):
    inp, out = os.path.join(TMP.name, tag + "_in.npz"), os.path.join(TMP.name, tag + "_out.npz")
    np.savez(inp, **feeds)
    code, _, err = run_octet(args.octet, "run", path, "--level", "0", "--input", inp, "--out", out)
    assert code == 0, f"{os.path.basename(path)}: exit {code}: {err.strip()[-600:]}"
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def check_fused(model, file):
    src = os.path.join(ROOT, model, file + ".onnx")
    softmaxes = op_counts(src)["ai.onnx.Softmax"]
    assert softmaxes > 0, "the fixture has no attention"
    path = optimize(src, f"{model}_{file}")
    counts = op_counts(path)
    fused = counts["octet." + FUSED_OP[file]]
    assert counts["ai.onnx.Softmax"] == 0 and fused == softmaxes, \
        f"{softmaxes} attention blocks: octet.{FUSED_OP[file]} {fused}, Softmax left {counts['ai.onnx.Softmax']}"

    feeds = FEEDS[model][file]
    sess = sf.session(src)
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    got = octet_run(path, feeds, f"{model}_{file}")
    assert set(got) == set(want), f"outputs {sorted(got)} != {sorted(want)}"
    worst = 1.0
    for k, v in want.items():
        assert got[k].shape == v.shape, f"{k}: shape {got[k].shape} != {v.shape}"
        a, b = got[k].ravel().astype(np.float64), v.ravel().astype(np.float64)
        cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
        rel = float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))
        assert cos >= 0.9999 and rel <= 1e-4, f"{k}: cosine {cos:.6f}, max abs error {rel:.2e} of the scale"
        worst = min(worst, cos)
    print(f"  {model}/{file}: {fused} x octet.{FUSED_OP[file]}, worst output cosine {worst:.7f}")


def check_quantized(model, file, mode):
    src = os.path.join(ROOT, model, file + ".onnx")
    q = os.path.join(TMP.name, f"{model}_{file}_{mode}.onnx")
    extra = []
    if mode == "static":  # a few calibration samples: the feeds themselves suffice here
        calib = os.path.join(TMP.name, f"calib_{model}_{file}")
        os.makedirs(calib, exist_ok=True)
        np.savez(os.path.join(calib, "sample_000.npz"), **FEEDS[model][file])
        # Calibrated throughout (no per-token linear inputs): onnxruntime runs the file too.
        extra = ["--calib", calib, "--per-token", "none"]
    code, _, err = run_octet(args.octet, "quantize", src, "-o", q, "--mode", mode, "-q", *extra, timeout=600)
    assert code == 0, f"quantize: exit {code}: {err.strip()[-600:]}"
    counts = op_counts(optimize(q, f"{model}_{file}_{mode}_opt"))
    softmaxes = op_counts(src)["ai.onnx.Softmax"]
    if mode == "dynamic":
        assert counts["octet." + FUSED_OP[file]] == softmaxes, f"dynamic: {dict(counts)}"
    else:
        if file == "decoder_with_past_model":
            check_static_decoder(model, q, counts, softmaxes)
            return
        fused = counts["octet.Attention"] + counts["octet.GroupedAttention"]
        assert fused == 0, f"static: float attention fused over int8 products: {dict(counts)}"
        if model != "t5" and file == "encoder_model":
            check_static_encoder(model, q, counts, softmaxes)


def check_static_decoder(model, q, counts, softmaxes):
    """The static decoder's int8 attention over its caches: octet.GroupedAttention with Q, K,
    V and P's scales and zero points as inputs 5..12, computing what onnxruntime computes on
    the same Q/DQ file."""
    assert counts["octet.GroupedAttention"] == softmaxes, f"static decoder: {softmaxes} blocks, {dict(counts)}"
    path = optimize(q, f"{model}_static_decoder_opt2")
    for n in onnx.load(path).graph.node:
        if n.op_type == "GroupedAttention":
            assert len(n.input) == 13 and all(n.input[i] for i in (5, 7, 9, 11)), f"{n.name}: inputs {list(n.input)}"
    feeds = FEEDS[model]["decoder_with_past_model"]
    sess = sf.session(q)
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    got = octet_run(path, feeds, f"{model}_static_decoder")
    for k, v in want.items():
        a, b = got[k].ravel().astype(np.float64), v.ravel().astype(np.float64)
        cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
        assert cos >= 0.9999, f"{k}: octet (fake-quantized GroupedAttention) vs onnxruntime, cosine {cos:.6f}"
    print(f"  {model} static decoder: {softmaxes} x int8 octet.GroupedAttention, logits cosine vs onnxruntime "
          f"{cos:.6f}")


def check_static_encoder(model, q, counts, softmaxes):
    """The static encoder's int8 bmm attention is octet.QAttention, and octet's optimized
    file computes what onnxruntime computes on the same Q/DQ file."""
    assert counts["octet.QAttention"] == softmaxes, f"static encoder: {softmaxes} blocks, {dict(counts)}"
    feeds = FEEDS[model]["encoder_model"]
    sess = sf.session(q)
    want = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    got = octet_run(optimize(q, f"{model}_static_encoder_opt2"), feeds, f"{model}_static_encoder")
    for k, v in want.items():
        a, b = got[k].ravel().astype(np.float64), v.ravel().astype(np.float64)
        cos = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
        assert cos >= 0.9999, f"{k}: octet (QAttention) vs onnxruntime on the same int8 file, cosine {cos:.6f}"
    print(f"  {model} static encoder: {softmaxes} x octet.QAttention, cosine vs onnxruntime {cos:.6f}")


for m in MODELS:
    for f in sf.FILES:
        t.check(f"{m}/{f}: every attention fused, outputs match onnxruntime", check_fused, m, f)
    for f in ("encoder_model", "decoder_with_past_model"):
        for mode in ("dynamic", "static"):
            t.check(f"{m}/{f}: after octet quantize --mode {mode}", check_quantized, m, f, mode)
t.finish()
