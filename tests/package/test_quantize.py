"""octet.quantize from Python: calibration from dicts, generators, text and images; the
report as a dict; the quantized model checked against float in octet and onnxruntime."""
import json
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest

import octet
from test_session import bert_inputs

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on the street corner.",
    "Quantization maps floating point weights to eight bit integers.",
    "The weather in Lisbon is sunny and warm today.",
    "She bought three apples and a loaf of bread at the market.",
    "Transformers use attention to relate every token to every other token.",
    "The committee postponed its decision until next week.",
    "Children were playing football in the park after school.",
    "Our train was delayed by forty minutes because of the snow.",
    "He solved the puzzle faster than anyone expected.",
    "The museum opens at nine and closes at six.",
    "Please remember to water the plants while I am away.",
]


def cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_quantize_from_a_list_of_dicts(bert_tiny, tmp_path):
    out = tmp_path / "bert_tiny_int8.onnx"
    samples = [bert_inputs(1, 16 + i % 5, seed=i) for i in range(12)]
    # per_token=["none"]: every activation calibrated, so onnxruntime reads the file too (the
    # default reads the linear layers' inputs per token with octet's own QMatMul; checked below).
    report = octet.quantize(bert_tiny, out, calibration=samples, per_token=["none"], progress=False)
    assert report["options"]["mode"] == "static"
    assert report["calibration"]["samples"] == 10 and report["calibration"]["eval_samples"] == 2
    assert report["calibration"]["source"] == "12 samples from the caller's CalibrationSource"
    assert report["coverage"]["int8_share"] > 0.9
    assert all(l["sqnr_db"] is not None for l in report["layers"] if l["kind"] != "embedding")
    logits = [f for f in report["fidelity"] if f["output"] == "logits"][0]
    assert logits["cosine"] > 0.99
    # The file runs in octet and in onnxruntime, close to the float model.
    feed = bert_inputs(2, 20, seed=99)
    (float_logits,) = ort.InferenceSession(bert_tiny, providers=["CPUExecutionProvider"]).run(["logits"], feed)
    (ours,) = octet.InferenceSession(str(out)).run(["logits"], feed)
    (ort_int8,) = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(["logits"], feed)
    assert cosine(ours, float_logits) > 0.99 and cosine(ours, ort_int8) > 0.999
    default = tmp_path / "bert_tiny_default.onnx"
    report = octet.quantize(bert_tiny, default, calibration=samples, progress=False)
    assert "per token" in report["options"]["mode_reason"], report["options"]
    (per_token,) = octet.InferenceSession(str(default)).run(["logits"], feed)
    assert cosine(per_token, float_logits) > 0.99


def test_quantize_from_a_generator_and_an_ort_style_reader(bert_tiny, tmp_path):
    def generate():
        for i in range(6):
            yield bert_inputs(1, 12, seed=i)

    report = octet.quantize(bert_tiny, tmp_path / "a.onnx", calibration=generate(), method="percentile",
                            progress=True)
    assert report["calibration"]["samples"] == 5 and report["options"]["calibration"] == "percentile"

    class Reader:  # onnxruntime.quantization.CalibrationDataReader's protocol
        def __init__(self):
            self.left = [bert_inputs(1, 10, seed=i) for i in range(3)]

        def get_next(self):
            return self.left.pop() if self.left else None

    report = octet.quantize(bert_tiny, tmp_path / "b.onnx", calibration=Reader(), target="ort", progress=False)
    assert report["calibration"]["samples"] == 3 and report["calibration"]["eval_in_sample"]
    assert report["options"]["target"] == "ort"


def test_quantize_from_an_npz_folder_and_dynamic(bert_tiny, tmp_path):
    folder = tmp_path / "calib"
    folder.mkdir()
    for i in range(5):
        np.savez(folder / ("s%d.npz" % i), **bert_inputs(1, 8, seed=i))
    report = octet.quantize(bert_tiny, tmp_path / "c.onnx", calibration=folder, progress=False)
    assert report["calibration"]["samples"] == 4 and "folder of .npz files" in report["calibration"]["source"]
    report = octet.quantize(bert_tiny, tmp_path / "d.onnx", progress=False)
    assert report["options"]["mode"] == "dynamic" and report["coverage"]["int8_share"] > 0.5


def test_quantize_real_minilm_from_text_with_the_tokenizer(minilm_l3, minilm_tokenizer, tmp_path):
    texts = tmp_path / "sentences.txt"
    texts.write_text("\n".join(SENTENCES) + "\n")
    out = tmp_path / "minilm_int8.onnx"
    calibration = octet.TextCalibration(texts, tokenizer=minilm_tokenizer, max_length=64)
    report = octet.quantize(minilm_l3, out, calibration=calibration, progress=False)
    assert report["calibration"]["samples"] == 10 and len(report["layers"]) > 20  # MiniLM-L3: 27 int8 layers
    # The tokenizer gives what the model was trained on: [CLS] ... [SEP] in BERT's vocabulary.
    sample = next(iter(calibration.samples([("input_ids", "int64", None), ("attention_mask", "int64", None)])))
    assert sample["input_ids"][0, 0] == 101 and sample["input_ids"][0, -1] == 102
    assert sample["input_ids"].dtype == np.int64 and sample["attention_mask"].sum() == sample["input_ids"].size
    float_session = octet.InferenceSession(minilm_l3)
    int8_session = octet.InferenceSession(str(out))
    name = float_session.get_outputs()[0].name
    for s in calibration.samples([("input_ids", "int64", None), ("attention_mask", "int64", None)]):
        assert cosine(int8_session.run([name], s)[0], float_session.run([name], s)[0]) > 0.95
    fid = report["fidelity"][0]
    assert fid["cosine"] > 0.95, fid


def test_quantize_from_images_with_a_resize_normalize_spec(vit_tiny, tmp_path):
    from PIL import Image
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(5):
        Image.fromarray(rng.integers(0, 256, size=(40 + 10 * i, 50, 3), dtype=np.uint8)).save(folder / ("%d.png" % i))
    calibration = octet.ImageCalibration(folder, size=224)
    (sample,) = list(calibration.samples([("pixel_values", "float32", [1, 3, 224, 224])]))[:1]
    assert sample["pixel_values"].shape == (1, 3, 224, 224) and sample["pixel_values"].dtype == np.float32
    report = octet.quantize(vit_tiny, tmp_path / "vit_int8.onnx", calibration=calibration, progress=False)
    assert report["calibration"]["samples"] == 4 and report["coverage"]["int8_share"] > 0.5


def test_bad_calibration_and_options_raise(bert_tiny, tmp_path):
    out = tmp_path / "x.onnx"
    with pytest.raises(octet.OctetError, match="static quantization needs calibration samples"):
        octet.quantize(bert_tiny, out, mode="static", progress=False)
    with pytest.raises(octet.OctetError, match="sample_0.npz.*(input_idz|input_ids)"):
        octet.quantize(bert_tiny, out, calibration=[{"input_idz": np.zeros((1, 4), np.int64)}], progress=False)
    with pytest.raises(octet.OctetError, match="static, dynamic|'bogus'"):
        octet.quantize(bert_tiny, out, calibration=[bert_inputs(1, 4)], mode="bogus", progress=False)
    with pytest.raises(octet.OctetError, match="is the input model"):
        octet.quantize(bert_tiny, bert_tiny, progress=False)
    with pytest.raises(TypeError, match="must be a dict"):
        octet.quantize(bert_tiny, out, calibration=[np.zeros(3)], progress=False)

    def broken():
        yield bert_inputs(1, 4)
        raise ValueError("the data loader broke")

    with pytest.raises(ValueError, match="the data loader broke"):
        octet.quantize(bert_tiny, out, calibration=broken(), progress=False)
    assert not out.exists()


def test_python_entry_point_quantizes_from_text(minilm_l3, minilm_tokenizer, tmp_path):
    texts = tmp_path / "sentences.txt"
    texts.write_text("\n".join(SENTENCES[:6]) + "\n")
    out, report = tmp_path / "m.onnx", tmp_path / "r.json"
    run = subprocess.run([sys.executable, "-m", "octet", "quantize", minilm_l3, "-o", str(out), "--calib-text",
                          str(texts), "--tokenizer", minilm_tokenizer, "--report", str(report), "-q"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "int8" in run.stdout and json.loads(report.read_text())["calibration"]["samples"] == 5
    bad = subprocess.run([sys.executable, "-m", "octet", "quantize", minilm_l3, "-o", str(out), "--calib-text",
                          str(texts)], capture_output=True, text=True)
    assert bad.returncode != 0 and "--tokenizer" in bad.stderr


def test_python_entry_point_quantizes_from_images(vit_tiny, tmp_path):
    from PIL import Image
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(1)
    for i in range(3):
        Image.fromarray(rng.integers(0, 256, size=(30, 30, 3), dtype=np.uint8)).save(folder / ("%d.jpg" % i))
    run = subprocess.run([sys.executable, "-m", "octet", "quantize", vit_tiny, "-o", str(tmp_path / "v.onnx"),
                          "--calib-images", str(folder), "--image-size", "224", "--json", "-q"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["calibration"]["samples"] == 3 and report["calibration"]["eval_in_sample"]
    bad = subprocess.run([sys.executable, "-m", "octet", "quantize", vit_tiny, "-o", str(tmp_path / "v.onnx"),
                          "--calib-images", str(tmp_path / "nowhere"), "--image-size", "224"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "not a folder of images" in bad.stderr
