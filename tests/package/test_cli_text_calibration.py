"""`octet quantize --calib-text FILE --tokenizer tokenizer.json`: the C++ CLI tokenizing
through the installed Python package. The CLI is build/release/octet (scripts/build.sh),
or $OCTET_CLI."""
import json
import os
import pathlib
import subprocess

from test_quantize import SENTENCES

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLI = os.environ.get("OCTET_CLI", str(ROOT / "build" / "release" / "octet"))


def run_cli(*args, env=None):
    assert os.path.exists(CLI), "%s is missing: build it with scripts/build.sh release (or set OCTET_CLI)" % CLI
    return subprocess.run([CLI, "quantize", *map(str, args)], capture_output=True, text=True, env=env)


def test_cli_quantizes_real_minilm_from_text(minilm_l3, minilm_tokenizer, tmp_path):
    texts = tmp_path / "sentences.txt"
    texts.write_text("\n".join(SENTENCES) + "\n")
    out = tmp_path / "q.onnx"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = run_cli(minilm_l3, "-o", out, "--calib-text", texts, "--tokenizer", minilm_tokenizer, "--max-length", 32,
                  "--json", "-q", env=dict(os.environ, TMPDIR=str(scratch)))
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)  # the helper's own output went to stderr
    assert report["options"]["mode"] == "static"
    assert report["calibration"]["samples"] == 10 and len(report["layers"]) > 20  # MiniLM-L3: 27 int8 layers
    assert out.exists()
    assert list(scratch.iterdir()) == []  # the temporary samples folder is gone


def test_cli_text_calibration_errors(minilm_l3, minilm_tokenizer, tmp_path):
    texts = tmp_path / "sentences.txt"
    texts.write_text("one sentence\n")
    out = tmp_path / "q.onnx"
    run = run_cli(minilm_l3, "-o", out, "--calib-text", texts)
    assert run.returncode == 1 and "--tokenizer" in run.stderr
    run = run_cli(minilm_l3, "-o", out, "--calib-text", texts, "--tokenizer", tmp_path / "none.json")
    assert run.returncode == 1 and "none.json: no such file" in run.stderr
    env = dict(os.environ, OCTET_PYTHON=str(tmp_path / "no-python"))
    run = run_cli(minilm_l3, "-o", out, "--calib-text", texts, "--tokenizer", minilm_tokenizer, env=env)
    assert run.returncode == 1 and "could not be started" in run.stderr and "pip install" in run.stderr
    assert not out.exists()


def word_tokenizer(path, words):
    """A word-level tokenizer.json whose ids fit a tiny fixture's vocabulary."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["<unk>", *words])}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(path))
    return path


def test_cli_weight_only_gptq_on_a_with_past_decoder_from_text(tmp_path):
    # The with-past export asks for position_ids and past_key_values.*; the text gives input_ids and
    # attention_mask, and octet's reader fills the rest as a prompt step gets them.
    model = ROOT / "tests" / "models" / "fixtures" / "llama_gen_with_past.onnx"
    words = sorted({w for s in SENTENCES for w in s.replace(".", " ").replace(",", " ").split()})[:200]
    tokenizer = word_tokenizer(tmp_path / "tokenizer.json", words)
    texts = tmp_path / "sentences.txt"
    texts.write_text("\n".join(SENTENCES) + "\n")
    out = tmp_path / "q.onnx"
    run = run_cli(model, "-o", out, "--weights", "int4", "--block", 16, "--method", "gptq", "--calib-text", texts,
                  "--tokenizer", tokenizer, "--json", "-q")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["method"] == "gptq" and report["gptq_layers"] > 0 and out.exists()
    run = run_cli(model, "-o", out, "--weights", "int4", "--calib-text", texts, "--tokenizer", tokenizer, "--force")
    assert run.returncode == 1 and "--calib and --calib-text go with --method" in run.stderr
