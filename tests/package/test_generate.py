"""octet.Generator from Python on the tiny decoder fixtures (tests/models/export_generation_fixtures.py):
greedy ids equal transformers' generate(), text in and out through a real `tokenizers`
tokenizer.json (a byte-level one over the fixtures' 256-token vocabulary), streaming by callback
and by iterator, stopping early, and the errors."""
import json

import pytest

import octet
from conftest import FIXTURES

LLAMA = str(FIXTURES / "llama_gen_with_past.onnx")
REFS = json.loads((FIXTURES / "generation_references.json").read_text())


@pytest.fixture(scope="module")
def byte_tokenizer(tmp_path_factory):
    """A byte-level BPE without merges: its 256 tokens are the fixtures' vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tok = Tokenizer(models.BPE({ch: i for i, ch in enumerate(sorted(alphabet))}, []))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return str(path)


def test_greedy_ids_equal_transformers():
    gen = octet.Generator(LLAMA, threads=1)
    for case in REFS["models"]["llama_gen_with_past.onnx"]:
        r = gen.generate(case["prompt"], max_new_tokens=REFS["new_tokens"])
        assert r.ids == case["new"], (case["prompt"], r.ids)
        assert r.text is None and r.stop_reason == "max_new_tokens" and r.prompt_ids == case["prompt"]
        p = gen.generate(case["prompt"], max_new_tokens=REFS["new_tokens"],
                         repetition_penalty=REFS["repetition_penalty"])
        assert p.ids == case["new_penalized"]
    assert r.time_to_first_token_ms > 0 and r.decode_tokens_per_second > 0 and r.total_ms >= r.time_to_first_token_ms


def test_text_in_and_out(byte_tokenizer):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(byte_tokenizer)
    gen = octet.Generator(LLAMA, tokenizer=byte_tokenizer, threads=1)
    r = gen.generate("Hello octet", max_new_tokens=10)
    assert r.prompt_ids == tok.encode("Hello octet").ids and len(r.ids) == 10
    assert r.text == tok.decode(r.ids)
    assert gen.generate(r.prompt_ids, max_new_tokens=10).ids == r.ids  # text or ids: the same


def test_stream_callback_and_iterator(byte_tokenizer):
    gen = octet.Generator(LLAMA, tokenizer=byte_tokenizer, threads=1)
    full = gen.generate("abc", max_new_tokens=8)
    seen = []
    r = gen.generate("abc", max_new_tokens=8, stream=lambda chunk: seen.append(chunk) or len(seen) < 3)
    assert [c.id for c in seen] == full.ids[:3] and r.ids == full.ids[:3] and r.stop_reason == "callback"
    stream = gen.generate("abc", max_new_tokens=8, stream=True)
    chunks = list(stream)
    assert [c.id for c in chunks] == full.ids and "".join(c.text for c in chunks) == full.text
    assert stream.result.ids == full.ids


def test_stop_tokens_and_errors():
    gen = octet.Generator(LLAMA, threads=1)
    case = REFS["models"]["llama_gen_with_past.onnx"][1]
    r = gen.generate(case["prompt"], max_new_tokens=20, stop=[case["new"][3]])
    assert r.ids == case["new"][:case["new"].index(case["new"][3]) + 1] and r.stop_reason == "stop_token"
    with pytest.raises(octet.OctetError, match="top_p"):
        gen.generate([1, 2], do_sample=True, top_p=0)
    with pytest.raises(ValueError, match="tokenizer"):
        gen.generate("text without a tokenizer")
    with pytest.raises(octet.OctetError, match="past_key_values"):
        octet.Generator(str(FIXTURES / "gpt2_tiny.onnx"))

    def boom(chunk):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        gen.generate([1, 2], max_new_tokens=4, stream=boom)


def test_cli_text_through_the_package(byte_tokenizer, tmp_path):
    """`octet generate --prompt TEXT --tokenizer` tokenizes and detokenizes with this package."""
    import os
    import subprocess
    cli = os.environ.get("OCTET_CLI", str(FIXTURES.parents[2] / "build" / "release" / "octet"))
    assert os.path.exists(cli), "%s is missing: build it with scripts/build.sh release (or set OCTET_CLI)" % cli
    run = subprocess.run([cli, "generate", LLAMA, "--tokenizer", byte_tokenizer, "--prompt", "Hello octet",
                          "--max-new-tokens", "6", "--threads", "1", "--json"], capture_output=True, text=True,
                         env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    want = octet.Generator(LLAMA, tokenizer=byte_tokenizer, threads=1).generate("Hello octet", max_new_tokens=6)
    assert got["ids"] == want.ids and got["text"] == want.text and got["prompt_tokens"] == len(want.prompt_ids)
    assert list(tmp_path.iterdir()) == []  # the scratch folder is gone


def test_model_folder_config_eos(tmp_path):
    """A folder with model.onnx and a config.json: its eos_token_id stops generation unless stop=[]."""
    import shutil
    case = REFS["models"]["llama_gen_with_past.onnx"][2]
    eos = case["new"][5]
    shutil.copy(LLAMA, tmp_path / "model.onnx")
    (tmp_path / "config.json").write_text(json.dumps({"eos_token_id": [eos, 9999]}))
    gen = octet.Generator(str(tmp_path), threads=1)
    assert gen.eos_token_ids == [eos, 9999]
    r = gen.generate(case["prompt"], max_new_tokens=REFS["new_tokens"])
    assert r.ids == case["new"][:case["new"].index(eos) + 1] and r.stop_reason == "stop_token"
    assert gen.generate(case["prompt"], max_new_tokens=REFS["new_tokens"], stop=[]).ids == case["new"]
