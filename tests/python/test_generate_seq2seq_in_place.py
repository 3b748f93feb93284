"""`octet generate` on the encoder-decoder fixtures (tests/models/fixtures/seq2seq: Marian,
Whisper, T5 shapes, random weights) with the decoder's cache in place (seq2seq_in_place_runner.h:
self-attention caches appended by octet.CachedAttention, cross-attention keys/values held
from the first step) against the portable runner (present.* fed back as past every step) and
onnxruntime's loop over the same files: greedy and beam-search tokens, for the float set and
the sets `octet quantize` writes (static with calibration, dynamic).

OCTET_KV_CACHE picks the runner: in-place fails when the rewrite does not apply (so a pass
proves the in-place runner ran), portable forces the portable one.

Static int8 decoders quantize attention's two products (Q/DQ around Q.K^T and P.V):
fuse_qbmm_attention (Marian, Whisper) and fuse_grouped_attention (T5) fold those into
octet.GroupedAttention's fake quantization inputs, which then runs in place. onnxruntime
runs the float and static (standard QDQ) sets; the dynamic set uses octet's own int8 ops,
so there the portable runner is the reference. An unoptimized run (--level 1) cannot run in
place: in-place fails naming the reason, and the default (auto) takes the portable runner."""
import json
import os
import subprocess
import tempfile

import numpy as np

from harness import Tally, parse_args
from ort_seq2seq import id_inputs, ort_beam_search, ort_greedy

args = parse_args()
ROOT = os.environ.get("OCTET_SEQ2SEQ_FIXTURES", os.path.join(args.source_dir, "tests/models/fixtures/seq2seq"))
NAMES = ["marian", "whisper", "t5"]
NEW_TOKENS = 12
t = Tally("generate_seq2seq_in_place")
TMP = tempfile.TemporaryDirectory(prefix="octet_generate_seq2seq_in_place_")


def octet(cache, *argv):
    env = dict(os.environ, OCTET_KV_CACHE=cache)
    return subprocess.run([args.octet, *map(str, argv)], capture_output=True, text=True, timeout=300, env=env)


def reference(name):
    with np.load(os.path.join(ROOT, name, "reference.npz")) as z:
        return {k: z[k] for k in z.files}


def encoder_inputs(name):
    ref = reference(name)
    return {"input_features": ref["input_features"]} if "input_features" in ref else id_inputs(ref["input_ids"])


def source_args(name):
    """The CLI's encoder input: the ids, or Whisper's log-mel features as .npy."""
    ref = reference(name)
    if "input_features" not in ref:
        return ["--prompt-ids", ",".join(map(str, ref["input_ids"][0].tolist()))]
    path = os.path.join(TMP.name, name + "_features.npy")
    np.save(path, ref["input_features"])
    return ["--encoder-input", f"input_features={path}"]


def generate(cache, folder, name, *extra):
    proc = octet(cache, "generate", folder, *source_args(name), "--json", "--threads", "1", *extra)
    assert proc.returncode == 0, f"OCTET_KV_CACHE={cache}: exit {proc.returncode}: {proc.stderr.strip()[-600:]}"
    return json.loads(proc.stdout)["ids"]


def quantized(name, mode):
    """The fixture set quantized by `octet quantize FOLDER` (static: random encoder samples)."""
    out = os.path.join(TMP.name, f"{name}_{mode}")
    if os.path.isdir(out):
        return out
    extra = []
    if mode == "static":
        calib = os.path.join(TMP.name, f"{name}_calib")
        os.makedirs(calib)
        rng, ref = np.random.default_rng(5), reference(name)
        for i in range(4):
            if "input_features" in ref:
                feeds = {"input_features": rng.standard_normal(ref["input_features"].shape).astype(np.float32)}
            else:
                n = int(rng.integers(5, 16))
                feeds = id_inputs(rng.integers(2, 90, (1, n)).astype(np.int64))
            np.savez(os.path.join(calib, f"sample_{i:03d}.npz"), **feeds)
        extra = ["--calib", calib]
    proc = octet("auto", "quantize", os.path.join(ROOT, name), "-o", out, "--mode", mode, "-q", *extra)
    assert proc.returncode == 0, proc.stderr.strip()[-600:]
    return out


def set_folder(name, variant):
    return os.path.join(ROOT, name) if variant == "fp32" else quantized(name, variant)


def config(name):
    return json.load(open(os.path.join(ROOT, name, "config.json")))


def check_greedy(name, variant):
    folder = set_folder(name, variant)
    flags = ("--max-new-tokens", NEW_TOKENS, "--ignore-eos")
    got, portable = generate("in-place", folder, name, *flags), generate("portable", folder, name, *flags)
    assert got == portable, f"in place {got} vs portable {portable}"
    if variant != "dynamic":
        want = ort_greedy(folder, encoder_inputs(name), config(name)["decoder_start_token_id"], NEW_TOKENS)
        assert got == want, f"in place {got} vs onnxruntime {want}"


def check_beam_search(name, variant):
    folder = set_folder(name, variant)
    c = config(name)
    flags = ("--max-new-tokens", NEW_TOKENS, "--num-beams", 3, "--length-penalty", 1.0, "--early-stopping", "false")
    got, portable = generate("in-place", folder, name, *flags), generate("portable", folder, name, *flags)
    assert got == portable, f"in place {got} vs portable {portable}"
    if variant != "dynamic":
        want = ort_beam_search(folder, None, c["decoder_start_token_id"], c["eos_token_id"], 3, NEW_TOKENS,
                               encoder_inputs=encoder_inputs(name))
        assert got == want, f"in place {got} vs onnxruntime {want}"


def check_unfused_falls_back(name):
    """--level 1 fuses no attention: in-place says why, auto runs the portable runner."""
    folder = os.path.join(ROOT, name)
    proc = octet("in-place", "generate", folder, *source_args(name), "--max-new-tokens", 4, "--json", "--level", 1)
    assert proc.returncode != 0 and "cannot run in place: optimization level" in proc.stderr, proc.stderr
    flags = ("--max-new-tokens", NEW_TOKENS, "--ignore-eos", "--level", 1)
    assert generate("auto", folder, name, *flags) == generate("portable", folder, name, *flags)


def check_bad_choice_named():
    proc = octet("sideways", "generate", os.path.join(ROOT, "marian"), "--prompt-ids", "5,6", "--max-new-tokens", 2)
    assert proc.returncode != 0 and "OCTET_KV_CACHE is 'sideways'" in proc.stderr, proc.stderr


if not os.path.isdir(ROOT):
    print(f"generate_seq2seq_in_place: SKIPPED, no fixtures at {ROOT}")
else:
    for name in NAMES:
        for variant in ("fp32", "dynamic", "static"):
            t.check(f"greedy: in place == portable == onnxruntime ({name} {variant})", check_greedy, name, variant)
            t.check(f"beam: in place == portable == onnxruntime ({name} {variant})", check_beam_search, name, variant)
    t.check("--level 1: in place refused with a reason, auto == portable", check_unfused_falls_back, "marian")
    t.check("OCTET_KV_CACHE: a bad value is named", check_bad_choice_named)
    t.finish()
