"""octet.quantize: post-training int8 quantization (docs/quantization.md) from Python."""
import json
import os

from . import _octet
from .session import as_input_array


def _smoothquant_setting(smoothquant):
    if smoothquant is None:
        return ""  # octet's default: auto in static mode
    if smoothquant is False:
        return "off"
    if smoothquant is True:
        return "auto"
    if isinstance(smoothquant, str):
        return smoothquant
    return repr(float(smoothquant))


class _Progress:
    """tqdm bars, one per stage octet reports ("reading samples", "calibrating", ...)."""

    def __init__(self, enabled):
        self.bar = None
        self.stage = None
        self.tqdm = None
        if enabled:
            try:
                from tqdm.auto import tqdm
                self.tqdm = tqdm
            except ImportError:  # progress is a nicety, never a requirement
                self.tqdm = None

    def __call__(self, stage, done, total):
        if self.tqdm is None:
            return
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = self.tqdm(total=total or None, desc=stage, unit="sample" if "sample" in stage else "step",
                                 leave=False)
        if total and self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _sample_iterator(calibration, model):
    """An iterator of dict samples from what `calibration=` accepts (other than a path)."""
    if hasattr(calibration, "samples"):  # TextCalibration, ImageCalibration
        inputs = [tuple(i) for i in _octet.model_inputs(model)]
        return iter(calibration.samples(inputs))
    if hasattr(calibration, "get_next"):  # onnxruntime.quantization.CalibrationDataReader
        return iter(calibration.get_next, None)
    if isinstance(calibration, dict):
        raise TypeError("calibration: give a list of dicts (one per sample), not one dict")
    try:
        return iter(calibration)
    except TypeError:
        raise TypeError("calibration must be a path, an iterable of {input name: array} dicts, "
                        "a TextCalibration/ImageCalibration or a CalibrationDataReader; got %s"
                        % type(calibration).__name__) from None


def _run(model, output, calibration=None, *, mode=None, target="octet", method="minmax", percentile=99.99,
         activation_type=None, per_channel=True, quantize_attention=True, attention_row_scales=True,
         rounding="gptq", quantize_embeddings=True, embedding_min_kib=1024, exclude=(),
         per_token=(), smoothquant=None, smoothquant_min_outlier=4.0, max_drop=None, metric="cosine", explain=False,
         max_samples=None, holdout=0.2, sqnr_samples=8, external_data=False, progress=True):
    """quantize() returning (report dict, report text)."""
    model, output = os.fspath(model), os.fspath(output)
    options = _octet.QuantizeOptions()
    options.mode = mode or "auto"
    options.target = target
    options.method = method
    options.percentile = float(percentile)
    options.activation_type = activation_type or ""
    options.per_channel = bool(per_channel)
    options.quantize_attention = bool(quantize_attention)
    options.attention_row_scales = bool(attention_row_scales)
    options.rounding = str(rounding)
    options.quantize_embeddings = bool(quantize_embeddings)
    options.embedding_min_kib = int(embedding_min_kib)
    options.exclude = [str(e) for e in exclude]
    options.per_token = [str(e) for e in per_token]
    options.smoothquant = _smoothquant_setting(smoothquant)
    options.smoothquant_min_outlier = float(smoothquant_min_outlier)
    options.max_drop = None if max_drop is None else float(max_drop)
    options.metric = metric
    options.explain = bool(explain)
    options.max_samples = int(max_samples or 0)
    options.holdout = float(holdout)
    options.sqnr_samples = int(sqnr_samples)
    options.external_data = bool(external_data)

    calibration_path = None
    next_sample = None
    if isinstance(calibration, (str, os.PathLike)):
        calibration_path = os.fspath(calibration)
    elif calibration is not None:
        samples = _sample_iterator(calibration, model)
        count = [0]

        def next_sample():
            sample = next(samples, None)
            if sample is None:
                return None
            if not isinstance(sample, dict):
                raise TypeError("calibration sample %d is a %s; each sample must be a dict {input name: array}"
                                % (count[0], type(sample).__name__))
            count[0] += 1
            return [(str(k), as_input_array(k, v)) for k, v in sample.items()]

    bars = _Progress(progress)
    try:
        report_json, text = _octet.quantize(model, output, options, calibration_path, next_sample, bars)
    finally:
        bars.close()
    return json.loads(report_json), text


def quantize(model, output, calibration=None, *, mode=None, target="octet", method="minmax", percentile=99.99,
             activation_type=None, per_channel=True, quantize_attention=True, attention_row_scales=True,
             rounding="gptq", quantize_embeddings=True, embedding_min_kib=1024, exclude=(),
             per_token=(), smoothquant=None, smoothquant_min_outlier=4.0, max_drop=None, metric="cosine", explain=False,
             max_samples=None, holdout=0.2, sqnr_samples=8, external_data=False, progress=True):
    """Quantize the float ONNX model `model` to int8 and write it to `output`.

    calibration: where the samples come from (required in static mode):
      - a path: a folder of .npz files, of <input>.npy stacks, ONNX test-data folders, or one .npz;
      - an iterable of dicts {input name: numpy array} (a list, a generator), one per sample;
      - octet.TextCalibration(texts, tokenizer=...) or octet.ImageCalibration(images, size=...);
      - an onnxruntime.quantization.CalibrationDataReader (get_next() until None).
    mode: "static" or "dynamic"; None: static with calibration, dynamic without, and per-token
      dynamic for a decoder LLM on target "octet" (the report's options.mode_reason says why).
    target: "octet", "ort" (onnxruntime's int8 kernels) or "tensorrt".
    method: calibration "minmax", "percentile" (see `percentile`), "entropy" or "mse".
    activation_type: "uint8" or "int8" (default int8 for tensorrt, else uint8).
    per_channel, quantize_attention, quantize_embeddings: what gets int8 (all by default);
      embedding_min_kib: embedding tables smaller than this (positions, token types) stay float;
      attention_row_scales: the softmax probabilities get a scale per row (default; False: one
      scale for all of them, as other quantizers write).
    rounding: "gptq" (default; int8 MatMul/Gemm weights rounded against their inputs' Gram
      matrices on the calibration samples) or "nearest".
    exclude: node names or op types kept in float.
    per_token: static mode, target "octet": MatMul/Gemm node names or op types whose input is
      quantized per token at run time instead of with one calibrated scale.
    smoothquant: None (the default: "auto" in static mode), False or "off", True or "auto"
      (alpha per activation, or none where smoothing does not lower the error), or an alpha in [0, 1];
      smoothquant_min_outlier: smooth only activations at least this uneven.
    max_drop, metric: keep the fewest layers float so that 1 - cosine ("cosine"),
      1 - top-1 agreement ("top1") or the MSE ("mse") stays within max_drop.
    explain: per-layer input statistics in the report.
    max_samples: use at most this many samples; holdout: share kept out for the fidelity report;
    sqnr_samples: per-layer SQNR over at most this many samples.
    external_data: write the weights to OUTPUT.data.
    progress: tqdm progress bars while reading samples, calibrating and evaluating.

    Returns the report as a dict: sizes, "coverage" (int8 share of MACs), "layers" (SQNR per
    layer), "fidelity" (end outputs against float), as `octet quantize --report` writes it.
    Raises octet.OctetError with octet's message when anything is wrong.
    """
    report, _ = _run(model, output, calibration, mode=mode, target=target, method=method, percentile=percentile,
                     activation_type=activation_type, per_channel=per_channel,
                     quantize_attention=quantize_attention, attention_row_scales=attention_row_scales,
                     rounding=rounding, quantize_embeddings=quantize_embeddings, embedding_min_kib=embedding_min_kib,
                     exclude=exclude, per_token=per_token, smoothquant=smoothquant, smoothquant_min_outlier=smoothquant_min_outlier,
                     max_drop=max_drop, metric=metric, explain=explain, max_samples=max_samples, holdout=holdout,
                     sqnr_samples=sqnr_samples, external_data=external_data, progress=progress)
    return report
