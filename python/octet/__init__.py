"""octet: quantize transformer ONNX models to int8 and run them fast on the CPU.

Running a model, as with onnxruntime::

    import numpy as np, octet
    session = octet.InferenceSession("model.onnx", threads=2)
    print([i.name for i in session.get_inputs()])
    ids = np.array([[101, 7592, 102]], dtype=np.int64)
    (embeddings,) = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})

Quantizing one, with calibration from dicts of arrays, a folder, or raw text/images::

    report = octet.quantize("model.onnx", "model_int8.onnx",
                            calibration=octet.TextCalibration("sentences.txt", tokenizer="tokenizer.json"))
    print(report["coverage"])

Generating text from a decoder exported with a KV cache (optimum's naming)::

    gen = octet.Generator("model_with_past.onnx", tokenizer="tokenizer.json", threads=2)
    print(gen.generate("The capital of France is", max_new_tokens=16).text)

Every failure raises octet.OctetError (a RuntimeError) with octet's message and the
attributes .file, .node and .reason.
"""
from ._octet import OctetError
from .calibration import ImageCalibration, TextCalibration
from .generate import GenerationResult, Generator, Seq2SeqGenerator, StreamChunk
from .quantize import quantize
from .session import InferenceSession, NodeArg

__version__ = "0.1.0"
__all__ = ["InferenceSession", "NodeArg", "quantize", "TextCalibration", "ImageCalibration", "OctetError",
           "Generator", "Seq2SeqGenerator", "GenerationResult", "StreamChunk"]
