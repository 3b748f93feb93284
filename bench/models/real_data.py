#!/usr/bin/env python3
"""Real text and real photos for the real-model harness, split into calibration and evaluation.

Text: the docstrings of the Python standard library's own modules (English prose that ships with
every Python; read with ast, nothing imported). Each module file is one document, and documents go
whole to one side: a file whose path hashes (crc32) to 0 mod 4 is calibration, the rest evaluation,
so no sentence or paragraph is on both sides. Prose filter: paragraphs without code markers; a
sentence has 6..50 words, starts upper-case, ends with a full stop.
  - sentences: CALIB_SENTENCES calibration, EVAL_SENTENCES evaluation (shuffled with a fixed seed)
  - LM windows: each side's prose paragraphs joined, tokenized with SmolLM2's tokenizer (from the
    GGUF) and cut into non-overlapping 128-token windows.
Photos: scikit-image's bundled photos (skimage/data) and scikit-learn's china.jpg / flower.jpg.
Different photos on each side (CALIB_PHOTOS vs EVAL_PHOTOS); each photo gives several square crops
(random scale 0.45..1 of the short side, random place, every other one mirrored), resized to
224x224 (bicubic) and normalized with ImageNet's mean and std; grey photos are repeated to RGB.

Written under exports_dir("data") (see common.py), idempotently (a stamp holds the settings):
  text/{calib,eval}_sentences.txt, text/{calib,eval}_sources.txt
  calib/<set>/sample_NNN.npz   what `octet quantize --calib` reads, one sample each, batch 1:
      minilm3 (input_ids, attention_mask), minilm (+ token_type_ids), vit (pixel_values),
      focus (input_image), smollm2 (input_ids [1, 128])
  eval/sentences.npz  input_ids, attention_mask, token_type_ids [N, L] padded to the longest
  eval/photos.npz     pixels [N, 3, 224, 224], photo (name per crop)
  eval/lm_windows.npz input_ids [N, 128]

  python3 bench/models/real_data.py [--force]     # prints the folder
"""
import argparse
import ast
import json
import os
import re
import sysconfig
import zlib

import numpy as np

import common

CALIB_SENTENCES, EVAL_SENTENCES = 100, 300
LM_WINDOW, CALIB_WINDOWS, EVAL_WINDOWS = 128, 32, 32
CALIB_PHOTOS = ["china", "coffee", "camera", "coins", "brick", "ihc", "motorcycle_left", "motorcycle_right"]
EVAL_PHOTOS = ["astronaut", "chelsea", "rocket", "flower", "hubble_deep_field", "retina", "moon", "grass",
               "gravel", "page", "clock_motion", "cell"]
CALIB_CROPS, EVAL_CROPS = 4, 6
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)
SETTINGS = dict(version=1, calib_sentences=CALIB_SENTENCES, eval_sentences=EVAL_SENTENCES, window=LM_WINDOW,
                calib_windows=CALIB_WINDOWS, eval_windows=EVAL_WINDOWS, calib_photos=CALIB_PHOTOS,
                eval_photos=EVAL_PHOTOS, calib_crops=CALIB_CROPS, eval_crops=EVAL_CROPS)

CODE_MARKERS = (">>>", "::", "...", "==", "()", "->", "%(", "{}", "\\", "`")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


# ---------------------------------------------------------------- text

def stdlib_documents():
    """(relative path, [prose paragraphs]) for each stdlib module file, in sorted order."""
    stdlib = sysconfig.get_paths()["stdlib"]
    skip_dirs = {"test", "tests", "idlelib", "site-packages", "lib2to3", "__pycache__", "turtledemo", "tkinter"}
    docs = []
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs and not d.startswith("."))
        for f in sorted(filenames):
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            try:
                with open(path, encoding="utf-8") as fh:
                    tree = ast.parse(fh.read())
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            paras = []
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        paras += prose_paragraphs(doc)
            if paras:
                docs.append((os.path.relpath(path, stdlib), paras))
    return sorted(docs)


def prose_paragraphs(doc):
    out = []
    for block in re.split(r"\n\s*\n", doc):
        lines = block.splitlines()
        if not lines or any(l.startswith((" ", "\t")) for l in lines[1:] if l.strip()) and len(lines) > 1 \
                and lines[0].rstrip().endswith(":"):
            continue
        text = " ".join(l.strip() for l in lines)
        if any(m in text for m in CODE_MARKERS) or len(text.split()) < 8:
            continue
        letters = sum(c.isalpha() or c.isspace() for c in text)
        if letters < 0.9 * len(text):
            continue
        out.append(text)
    return out


def sentences(paragraphs):
    for p in paragraphs:
        for s in SENTENCE_END.split(p):
            s = s.strip()
            words = s.split()
            if 6 <= len(words) <= 50 and s[0].isupper() and s.endswith(".") and "_" not in s:
                yield s


def split_documents(docs):
    calib, evals = [], []
    for name, paras in docs:
        (calib if zlib.crc32(name.encode()) % 4 == 0 else evals).append((name, paras))
    return calib, evals


def unique_sentences(docs, count, seed, exclude=()):
    """count distinct sentences of docs (none of exclude: some docstrings are copied between modules)."""
    seen, out = {s.lower() for s in exclude}, []
    for _, paras in docs:
        for s in sentences(paras):
            if s.lower() not in seen:
                seen.add(s.lower())
                out.append(s)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(out))
    if len(out) < count:
        raise SystemExit(f"real_data.py: only {len(out)} prose sentences on one side, {count} wanted")
    return [out[i] for i in order[:count]]


def lm_windows(docs, count, tokenizer):
    text = "\n\n".join(p for _, paras in docs for p in paras)
    ids = tokenizer.encode(text).ids
    n = min(count, len(ids) // LM_WINDOW)
    if n < count:
        raise SystemExit(f"real_data.py: {len(ids)} tokens give {n} windows of {LM_WINDOW}, {count} wanted")
    return np.array(ids[:n * LM_WINDOW], np.int64).reshape(n, LM_WINDOW)


def bert_batch(tok, texts):
    enc = [tok.encode(t) for t in texts]
    length = max(len(e.ids) for e in enc)
    ids = np.zeros((len(enc), length), np.int64)
    mask = np.zeros_like(ids)
    for i, e in enumerate(enc):
        ids[i, :len(e.ids)] = e.ids
        mask[i, :len(e.ids)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


# ---------------------------------------------------------------- photos

def load_photo(name):
    if name in ("china", "flower"):
        from sklearn.datasets import load_sample_image
        img = load_sample_image(name + ".jpg")
    else:
        import skimage.data
        from PIL import Image
        folder = os.path.dirname(skimage.data.__file__)  # the photos shipped in the wheel
        path = next(os.path.join(folder, f) for f in os.listdir(folder) if os.path.splitext(f)[0] == name)
        img = Image.open(path)
        img = img.convert("RGB") if img.mode not in ("L", "RGB") else img
    img = np.asarray(img)
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    img = img[..., :3]
    if img.dtype != np.uint8:  # a few skimage photos are float or bool
        img = (255 * (img.astype(np.float64) - img.min()) / max(np.ptp(img), 1e-12)).astype(np.uint8)
    return img


def crops(img, count, seed):
    from PIL import Image

    rng = np.random.default_rng(seed)
    h, w = img.shape[:2]
    out = []
    for i in range(count):
        side = int(min(h, w) * (1.0 if i == 0 else rng.uniform(0.45, 1.0)))
        y = (h - side) // 2 if i == 0 else int(rng.integers(0, h - side + 1))
        x = (w - side) // 2 if i == 0 else int(rng.integers(0, w - side + 1))
        patch = Image.fromarray(img[y:y + side, x:x + side]).resize((224, 224), Image.BICUBIC)
        a = np.asarray(patch, np.float32) / 255.0
        if i % 2 == 1:
            a = a[:, ::-1]
        a = (a - IMAGENET_MEAN) / IMAGENET_STD
        out.append(np.ascontiguousarray(a.transpose(2, 0, 1)))
    return out


# ---------------------------------------------------------------- writing

def write_calib(folder, samples):
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        if f.endswith(".npz"):
            os.remove(os.path.join(folder, f))
    for i, s in enumerate(samples):
        np.savez(os.path.join(folder, f"sample_{i:03d}.npz"), **s)


def build(out):
    docs = stdlib_documents()
    calib_docs, eval_docs = split_documents(docs)
    calib_sents = unique_sentences(calib_docs, CALIB_SENTENCES, seed=1)
    eval_sents = unique_sentences(eval_docs, EVAL_SENTENCES, seed=2,
                                  exclude=[s for _, paras in calib_docs for s in sentences(paras)])
    assert not {s.lower() for s in calib_sents} & {s.lower() for s in eval_sents}
    text = os.path.join(out, "text")
    os.makedirs(text, exist_ok=True)
    for side, sents, side_docs in (("calib", calib_sents, calib_docs), ("eval", eval_sents, eval_docs)):
        with open(os.path.join(text, f"{side}_sentences.txt"), "w") as f:
            f.write("\n".join(sents) + "\n")
        with open(os.path.join(text, f"{side}_sources.txt"), "w") as f:
            f.write("\n".join(name for name, _ in side_docs) + "\n")

    tok = common.minilm_tokenizer()
    calib = os.path.join(out, "calib")
    minilm = [bert_batch(tok, [s]) for s in calib_sents]
    write_calib(os.path.join(calib, "minilm"), minilm)
    write_calib(os.path.join(calib, "minilm3"), [{k: s[k] for k in ("input_ids", "attention_mask")} for s in minilm])
    ev = os.path.join(out, "eval")
    os.makedirs(ev, exist_ok=True)
    np.savez(os.path.join(ev, "sentences.npz"), **bert_batch(tok, eval_sents))

    lm_tok = common.smollm2_tokenizer()
    calib_w = lm_windows(calib_docs, CALIB_WINDOWS, lm_tok)
    eval_w = lm_windows(eval_docs, EVAL_WINDOWS, lm_tok)
    write_calib(os.path.join(calib, "smollm2"), [{"input_ids": w[None]} for w in calib_w])
    np.savez(os.path.join(ev, "lm_windows.npz"), input_ids=eval_w)

    calib_px = [c for k, name in enumerate(CALIB_PHOTOS) for c in crops(load_photo(name), CALIB_CROPS, 100 + k)]
    eval_px, eval_names = [], []
    for k, name in enumerate(EVAL_PHOTOS):
        cs = crops(load_photo(name), EVAL_CROPS, 200 + k)
        eval_px += cs
        eval_names += [name] * len(cs)
    write_calib(os.path.join(calib, "vit"), [{"pixel_values": c[None]} for c in calib_px])
    write_calib(os.path.join(calib, "focus"), [{"input_image": c[None]} for c in calib_px])
    np.savez(os.path.join(ev, "photos.npz"), pixels=np.stack(eval_px), photo=np.array(eval_names))
    return {"calib_documents": len(calib_docs), "eval_documents": len(eval_docs),
            "calib_sentences": len(calib_sents), "eval_sentences": len(eval_sents),
            "calib_windows": len(calib_w), "eval_windows": len(eval_w),
            "calib_crops": len(calib_px), "eval_crops": len(eval_px)}


def ensure(force=False):
    """Builds the data unless the stamp says it is there with these settings; returns the folder."""
    out = common.exports_dir("data")
    stamp = os.path.join(out, "stamp.json")
    if not force and os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f).get("settings") == SETTINGS:
                return out
    counts = build(out)
    with open(stamp, "w") as f:
        json.dump({"settings": SETTINGS, "counts": counts}, f, indent=1)
    return out


def describe(out):
    with open(os.path.join(out, "stamp.json")) as f:
        return json.load(f)


def main():
    common.require_bench_packages("real_data.py")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    a = p.parse_args()
    out = ensure(a.force)
    print(out)
    print(json.dumps(describe(out)["counts"]))


if __name__ == "__main__":
    main()
