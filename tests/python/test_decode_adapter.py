"""bench/decode.py's octet adapter, against stand-in CLIs (seconds, no model): the decode benchmark
must fill octet's row from whatever `octet generate --json` prints once that subcommand lands,
and say "not available on this branch" (not crash) while the CLI lacks it.

- a CLI whose `generate --json` echoes the prompt in front of the new ids and reports
  time_to_first_token_ms / decode_tokens_per_second / peak_rss_bytes: the adapter strips the
  prompt, converts bytes to MB and passes --ignore-eos and --threads because --help lists them;
- a CLI whose output is not JSON, or that exits non-zero: a RuntimeError naming the command;
- a CLI without `generate` (and the real one, whatever it has): prepare() gives a model or the
  "not available" message, never an exception."""
import json
import os
import stat
import subprocess
import sys
import tempfile

import numpy as np

from harness import Tally, parse_args

args = parse_args()
TMP = tempfile.TemporaryDirectory(prefix="octet_decode_test_")
os.environ["OCTET_MODEL_CACHE"] = TMP.name  # prepare() makes its folders there, not in ~/.cache
sys.path.insert(0, os.path.join(args.source_dir, "bench"))
sys.path.insert(0, os.path.join(args.source_dir, "bench", "models"))
import decode  # noqa: E402
import decode_engines  # noqa: E402

t = Tally("decode_adapter")
PROMPT = np.array([[5, 6, 7, 8]], np.int64)
PROMPT_PATH = os.path.join(TMP.name, "prompt.npy")
np.save(PROMPT_PATH, PROMPT)

FAKE = '''#!{python}
import json, sys
argv = sys.argv[1:]
if argv[:1] == ["--version"]:
    print("octet-fake 0"); sys.exit(0)
if argv[:1] != ["generate"] or {no_generate}:
    # what CLI11 does with `octet generate --help` when there is no such subcommand: the main help, exit 0
    print("Usage: octet [OPTIONS] SUBCOMMAND"); sys.exit(0 if "--help" in argv else 109)
if "--help" in argv:
    print("--prompt-ids --max-new-tokens --json --ignore-eos --threads"); sys.exit(0)
n = int(argv[argv.index("--max-new-tokens") + 1])
prompt = [5, 6, 7, 8]
report = {{"ids": prompt + list(range(100, 100 + n)), "time_to_first_token_ms": 12.5,
          "decode_tokens_per_second": 40.0, "peak_rss_bytes": 3 * 2**20, "argv": argv}}
print({output})
sys.exit({code})
'''


def fake_cli(name, output="json.dumps(report)", code=0, no_generate=False):
    path = os.path.join(TMP.name, name)
    with open(path, "w") as f:
        f.write(FAKE.format(python=sys.executable, output=output, code=code, no_generate=no_generate))
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def reads_the_report():
    octet = fake_cli("octet_ok")
    r = decode_engines.gen_octet(octet, "model.onnx", PROMPT_PATH, 6, 2)
    assert r["ids"] == list(range(100, 106)), r["ids"]  # the echoed prompt removed
    assert r["ttft_ms"] == 12.5 and r["decode_tok_s"] == 40.0, r
    assert abs(r["peak_rss_mb"] - 3.0) < 1e-9 and r["peak_rss_from"] == "octet's report", r
    argv = r["octet_report"]["argv"]
    assert "--ignore-eos" in argv and argv[argv.index("--threads") + 1] == "2", argv
    assert argv[argv.index("--prompt-ids") + 1] == PROMPT_PATH, argv


def fails_with_the_command():
    for name, kw in (("octet_text", dict(output="'not json'")), ("octet_exit", dict(code=3))):
        octet = fake_cli(name, **kw)
        try:
            decode_engines.gen_octet(octet, "model.onnx", PROMPT_PATH, 4, 2)
        except (RuntimeError, ValueError) as e:
            if kw.get("code") and "exited 3" not in str(e):
                raise AssertionError(f"message does not say how it exited: {e}")
            continue
        raise AssertionError(f"{name}: no error")


class Args:
    prepare_timeout = 60


def not_available_without_generate():
    a = Args()
    a.octet = fake_cli("octet_old", no_generate=True)
    model, err = decode.prepare("octet", "fp32", "model.onnx", a, {})
    assert model is None and err.startswith(decode.NOT_AVAILABLE), (model, err)
    a.octet = os.path.join(TMP.name, "missing_octet")
    model, err = decode.prepare("octet", "int4", "model.onnx", a, {})
    assert model is None and err.startswith(decode.NOT_AVAILABLE), (model, err)


def the_real_cli_gives_a_model_or_the_message():
    a = Args()
    a.octet = args.octet
    model, err = decode.prepare("octet", "fp32", "model.onnx", a, {})
    help_text = subprocess.run([args.octet, "generate", "--help"], capture_output=True, text=True).stdout
    has = "--max-new-tokens" in help_text  # CLI11 prints the main help for an unknown subcommand
    assert (model == "model.onnx" and err is None) if has else (model is None and decode.NOT_AVAILABLE in err)


def first_difference():
    assert decode.first_difference([1, 2, 3], [1, 2, 3]) is None
    assert decode.first_difference([1, 2, 3], [1, 9, 3]) == 1
    assert decode.first_difference([1, 2], [1, 2, 3]) == 2


def same_size_read_picks_the_read_that_holds_the_step():
    before = {"threads_2_mib_64_gb_s": 40.0, "threads_2_mib_256_gb_s": 30.0, "threads_2_mib_2048_gb_s": 20.0,
              "threads_1_mib_256_gb_s": 99.0, "threads_2_gb_s": 20.0}
    after = {"threads_2_mib_256_gb_s": 33.0, "error_free": "yes"}
    assert decode.same_size_read([before, after], 64 * 2**20) == (64, 40.0)
    assert decode.same_size_read([before, after], 64 * 2**20 + 1) == (256, 33.0)  # higher of the two runs
    assert decode.same_size_read([before, after], 3 * 2**30) == (2048, 20.0)  # none holds it: the largest
    assert decode.same_size_read([{"error": "not built"}], 1) is None


t.check("reads_the_report", reads_the_report)
t.check("same_size_read_picks_the_read_that_holds_the_step", same_size_read_picks_the_read_that_holds_the_step)
t.check("fails_with_the_command", fails_with_the_command)
t.check("not_available_without_generate", not_available_without_generate)
t.check("the_real_cli_gives_a_model_or_the_message", the_real_cli_gives_a_model_or_the_message)
t.check("first_difference", first_difference)
t.finish()
