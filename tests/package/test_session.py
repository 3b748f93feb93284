"""octet.InferenceSession against onnxruntime: the same outputs for the same inputs."""
import threading

import numpy as np
import onnxruntime as ort
import pytest

import octet


def bert_inputs(batch, seq, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "input_ids": rng.integers(0, 100, size=(batch, seq), dtype=np.int64),
        "attention_mask": np.ones((batch, seq), dtype=np.int64),
        "token_type_ids": np.zeros((batch, seq), dtype=np.int64),
    }


def ort_run(path, feed, names=None):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(names, feed)


def assert_close(actual, expected, rtol=1e-4, atol=1e-4):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def test_inputs_and_outputs_describe_the_model_like_onnxruntime(bert_tiny):
    s = octet.InferenceSession(bert_tiny)
    ref = ort.InferenceSession(bert_tiny, providers=["CPUExecutionProvider"])
    assert [(i.name, i.type, i.shape) for i in s.get_inputs()] == \
        [(i.name, i.type, i.shape) for i in ref.get_inputs()]
    assert [o.name for o in s.get_outputs()] == [o.name for o in ref.get_outputs()]
    assert s.get_outputs()[1].type == "tensor(float)"


@pytest.mark.parametrize("optimize", [True, False, 1])
def test_bert_tiny_matches_onnxruntime_at_several_shapes(bert_tiny, optimize):
    s = octet.InferenceSession(bert_tiny, threads=2, optimize=optimize)
    for batch, seq in [(1, 7), (2, 16), (3, 33)]:
        feed = bert_inputs(batch, seq, seed=seq)
        ours = s.run(None, feed)
        theirs = ort_run(bert_tiny, feed)
        for a, b in zip(ours, theirs):
            assert_close(a, b)


def test_fixed_threads_give_the_adapting_sessions_outputs(bert_tiny):
    """adapt_threads=False keeps every run on `threads`; the outputs are the same bits
    either way (a run may take one thread while other processes hold the cores)."""
    feed = bert_inputs(2, 16, seed=3)
    adapting = octet.InferenceSession(bert_tiny, threads=2)
    fixed = octet.InferenceSession(bert_tiny, threads=2, adapt_threads=False)
    one = octet.InferenceSession(bert_tiny, threads=1)
    assert fixed.threads == adapting.threads == 2
    want = fixed.run(None, feed)
    for other in (adapting, one):
        for a, b in zip(other.run(None, feed), want):
            assert np.array_equal(a, b)


def test_selected_outputs_come_back_in_the_order_asked(bert_tiny):
    s = octet.InferenceSession(bert_tiny)
    feed = bert_inputs(1, 5)
    logits, hidden = s.run(["logits", "last_hidden_state"], feed)
    assert logits.shape == (1, 2) and hidden.shape[:2] == (1, 5)


def test_model_from_bytes_and_non_contiguous_inputs(bert_tiny):
    with open(bert_tiny, "rb") as f:
        s = octet.InferenceSession(f.read())
    feed = bert_inputs(2, 9)
    strided = {k: np.asfortranarray(v) for k, v in feed.items()}  # copied to C order on the way in
    assert_close(s.run(["logits"], strided)[0], ort_run(bert_tiny, feed, ["logits"])[0])


def test_outputs_are_numpy_arrays_that_outlive_the_session(bert_tiny):
    s = octet.InferenceSession(bert_tiny)
    out = s.run(["logits"], bert_inputs(1, 4))[0]
    expected = out.copy()
    del s
    np.testing.assert_array_equal(out, expected)
    out += 1  # octet's memory, handed over: writable


def test_threads_share_one_session(bert_tiny):
    s = octet.InferenceSession(bert_tiny, threads=1)
    feeds = [bert_inputs(1, 8 + i, seed=i) for i in range(4)]
    expected = [ort_run(bert_tiny, f, ["logits"])[0] for f in feeds]
    results = [None] * len(feeds)

    def work(i):
        for _ in range(3):
            results[i] = s.run(["logits"], feeds[i])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(feeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r, e in zip(results, expected):
        assert_close(r, e)


def test_real_minilm_l3_matches_onnxruntime(minilm_l3):
    s = octet.InferenceSession(minilm_l3, threads=2)
    assert [i.name for i in s.get_inputs()] == ["input_ids", "attention_mask"]
    rng = np.random.default_rng(3)
    ids = rng.integers(1000, 30000, size=(2, 24), dtype=np.int64)
    ids[:, 0], ids[:, -1] = 101, 102
    mask = np.ones_like(ids)
    mask[1, 20:] = 0
    feed = {"input_ids": ids, "attention_mask": mask}
    names = [o.name for o in s.get_outputs()]
    for name, a, b in zip(names, s.run(names, feed), ort_run(minilm_l3, feed, names)):
        assert a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4, err_msg=name)


def test_bad_input_raises_octet_error_with_the_message(bert_tiny):
    s = octet.InferenceSession(bert_tiny)
    feed = bert_inputs(1, 4)
    with pytest.raises(octet.OctetError, match="token_type_ids.*missing"):
        s.run(None, {k: v for k, v in feed.items() if k != "token_type_ids"})
    with pytest.raises(octet.OctetError, match="input_ids.*float32") as info:
        s.run(None, dict(feed, input_ids=feed["input_ids"].astype(np.float32)))
    assert info.value.file == bert_tiny
    with pytest.raises(octet.OctetError, match="'nope' is not an output"):
        s.run(["nope"], feed)
    with pytest.raises(TypeError):
        s.run(None, [feed["input_ids"]])


def test_bad_model_files_raise_octet_error(tmp_path):
    missing = str(tmp_path / "missing.onnx")
    with pytest.raises(octet.OctetError, match="missing.onnx") as info:
        octet.InferenceSession(missing)
    assert isinstance(info.value, RuntimeError) and info.value.file == missing
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"this is not a protobuf at all" * 10)
    with pytest.raises(octet.OctetError, match="not a valid ONNX model"):
        octet.InferenceSession(str(garbage))
    with pytest.raises(octet.OctetError, match="not a valid ONNX model"):
        octet.InferenceSession(b"\x08\x01garbage")


def test_help_explains_every_public_call():
    for obj in [octet.InferenceSession, octet.InferenceSession.run, octet.InferenceSession.get_inputs,
                octet.InferenceSession.get_outputs, octet.quantize, octet.TextCalibration,
                octet.ImageCalibration, octet.NodeArg]:
        assert obj.__doc__ and len(obj.__doc__) > 40, obj
