"""octet.Seq2SeqGenerator from Python on the encoder-decoder fixtures (tests/models/fixtures/seq2seq,
made by tests/models/export_seq2seq_fixtures.py): greedy and 3-beam search equal the torch /
transformers references stored beside them; Whisper from its log-mel input_features. Skipped when
the fixtures are not in the tree ($OCTET_SEQ2SEQ_FIXTURES names another folder)."""
import os

import numpy as np
import pytest

import octet
from conftest import FIXTURES

ROOT = os.environ.get("OCTET_SEQ2SEQ_FIXTURES", str(FIXTURES / "seq2seq"))
pytestmark = pytest.mark.skipif(not os.path.isdir(ROOT), reason=f"no seq2seq fixtures at {ROOT}")


@pytest.mark.parametrize("name", ["marian", "t5"])
def test_greedy_and_beam_search_equal_transformers(name):
    ref = np.load(os.path.join(ROOT, name, "reference.npz"))
    gen = octet.Seq2SeqGenerator(os.path.join(ROOT, name), threads=1)
    source = ref["input_ids"][0].tolist()
    greedy = gen.generate(source, max_new_tokens=12, stop=[])
    assert greedy.ids == ref["greedy_tokens"][0, 1:].tolist()
    beams = gen.generate(source, max_new_tokens=12, num_beams=3, length_penalty=1.0, early_stopping=False)
    assert beams.ids == ref["beam_tokens"][0, 1:].tolist()
    streamed = [c.id for c in gen.generate(source, max_new_tokens=5, stop=[], stream=True)]
    assert streamed == greedy.ids[:5]


def test_whisper_from_input_features():
    ref = np.load(os.path.join(ROOT, "whisper", "reference.npz"))
    gen = octet.Seq2SeqGenerator(os.path.join(ROOT, "whisper"), threads=1)
    r = gen.generate({"input_features": ref["input_features"]}, max_new_tokens=12, stop=[])
    assert r.ids == ref["greedy_tokens"][0, 1:].tolist() and r.prompt_ids == []
    with pytest.raises(octet.OctetError, match="input_features"):
        gen.generate([1, 2, 3])  # Whisper's encoder reads no ids
