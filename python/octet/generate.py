"""Text generation: octet.Generator (decoder-only) and octet.Seq2SeqGenerator (encoder-decoder).

The model is an ONNX export with a KV cache in optimum's naming (past_key_values.N.* in,
present.N.* out); the text goes through a Hugging Face tokenizer.json read by the real
`tokenizers` library::

    import octet
    gen = octet.Generator("smollm2_with_past.onnx", tokenizer="tokenizer.json", threads=2)
    result = gen.generate("The capital of France is", max_new_tokens=16)
    print(result.text, result.decode_tokens_per_second)
    for piece in gen.generate("Once upon a time", max_new_tokens=32, stream=True):
        print(piece.text, end="", flush=True)
"""
import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator, List, Optional, Sequence, Union

from . import _octet


@dataclass
class GenerationResult:
    """What generate() returns: the new text and ids, and the timings of the call."""
    text: Optional[str]          #: the new tokens decoded (None without a tokenizer)
    ids: List[int]               #: the new token ids
    prompt_ids: List[int]        #: the prompt as the model saw it
    stop_reason: str             #: "max_new_tokens", "stop_token" or "callback"
    time_to_first_token_ms: float
    decode_tokens_per_second: float
    total_ms: float


@dataclass
class StreamChunk:
    """One streamed token: its id and the text it adds (may be "" inside a multi-byte character)."""
    id: int
    text: str


def _load_tokenizer(tokenizer, model):
    if tokenizer is None:
        folder = model if os.path.isdir(model) else os.path.dirname(os.path.abspath(model))
        candidate = os.path.join(folder, "tokenizer.json")
        if not os.path.isfile(candidate):
            return None
        tokenizer = candidate
    if isinstance(tokenizer, (str, os.PathLike)):
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise ImportError("text needs Hugging Face tokenizers: pip install tokenizers") from e
        return Tokenizer.from_file(os.fspath(tokenizer))
    return tokenizer  # a tokenizers.Tokenizer already


class _Detokenizer:
    """Decodes the growing list of new ids and hands out only the text each token adds."""

    def __init__(self, tokenizer):
        self.tokenizer, self.ids, self.text = tokenizer, [], ""

    def add(self, token):
        self.ids.append(token)
        if self.tokenizer is None:
            return ""
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):  # an incomplete UTF-8 sequence: wait for the next token
            return ""
        piece, self.text = text[len(self.text):], text
        return piece


class _Base:
    _native_type = None

    def __init__(self, model, tokenizer=None, threads=0, optimization_level=2):
        self.model = os.fspath(model)
        self.tokenizer = _load_tokenizer(tokenizer, self.model)
        self._native = self._native_type(self.model, threads=threads, optimization_level=optimization_level)

    def encode(self, text: str) -> List[int]:
        """Token ids of `text` (the tokenizer's special tokens included, as its post-processor adds them)."""
        if self.tokenizer is None:
            raise ValueError("no tokenizer: pass tokenizer='tokenizer.json' or give token ids")
        return list(self.tokenizer.encode(text).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of `ids` without special tokens."""
        if self.tokenizer is None:
            raise ValueError("no tokenizer: pass tokenizer='tokenizer.json'")
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def _stop_ids(self, stop):
        if stop is None:
            return []
        out = []
        for s in ([stop] if isinstance(stop, (int, str)) else stop):
            if isinstance(s, str):
                token = self.tokenizer.token_to_id(s) if self.tokenizer is not None else None
                if token is None:
                    raise ValueError("stop %r is not one token of the tokenizer; give token ids" % s)
                out.append(token)
            else:
                out.append(int(s))
        return out

    def generate(self, prompt: Union[str, Sequence[int]], max_new_tokens: int = 32, do_sample: bool = False,
                 temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0, repetition_penalty: float = 1.0,
                 seed: int = 0, stop=None, stream: Union[None, bool, Callable] = None, **beam):
        """Generate after `prompt` (text, a list of token ids, or for Seq2SeqGenerator a dict of the
        encoder's input arrays).

        Greedy unless do_sample; temperature, top_k, top_p and repetition_penalty follow
        transformers' definitions. `stop`: token ids (or single-token strings) that end
        generation; by default (None) the model's eos_token_id from its config.json; [] stops
        only at max_new_tokens. `stream`:
        a callable called as stream(StreamChunk) for each token (return False to stop), or
        True to get an iterator of StreamChunk instead of the result (its .result is set
        when it is exhausted). Returns a GenerationResult.
        """
        kwargs = dict(max_new_tokens=max_new_tokens, do_sample=do_sample, temperature=temperature, top_k=top_k,
                      top_p=top_p, repetition_penalty=repetition_penalty, seed=seed, stop_token_ids=self._stop_ids(stop),
                      use_model_stop_tokens=stop is None, **beam)
        if isinstance(prompt, dict):  # the encoder's own inputs (Seq2SeqGenerator)
            ids, native_generate = [], self._native_inputs(prompt)
        else:
            ids = self.encode(prompt) if isinstance(prompt, str) else [int(i) for i in prompt]
            native_generate = lambda **kw: self._native.generate(ids, **kw)  # noqa: E731
        if stream is True:
            return _Stream(self, ids, native_generate, kwargs)
        detok = _Detokenizer(self.tokenizer)
        on_token = None
        if callable(stream):
            def on_token(token):
                return stream(StreamChunk(token, detok.add(token)))
        return self._result(ids, native_generate(on_token=on_token, **kwargs))

    def _native_inputs(self, inputs):
        raise TypeError("a decoder-only prompt is text or token ids, not a dict of arrays")

    def _result(self, prompt_ids, native):
        ids = list(native["tokens"])
        return GenerationResult(text=self.decode(ids) if self.tokenizer is not None else None, ids=ids,
                                prompt_ids=prompt_ids, stop_reason=native["stop_reason"],
                                time_to_first_token_ms=native["time_to_first_token_ms"],
                                decode_tokens_per_second=native["decode_tokens_per_second"],
                                total_ms=native["total_ms"])


class _Stream:
    """An iterator of StreamChunk: generation runs on a thread (without the GIL) and hands
    tokens over a queue. Leaving the loop early (break, close()) stops generation."""

    def __init__(self, generator, ids, native_generate, kwargs):
        self.result = None
        self._queue, self._stop, self._error = queue.Queue(), threading.Event(), None
        detok = _Detokenizer(generator.tokenizer)

        def on_token(token):
            self._queue.put(StreamChunk(token, detok.add(token)))
            return not self._stop.is_set()

        def work():
            try:
                self.result = generator._result(ids, native_generate(on_token=on_token, **kwargs))
            except BaseException as e:  # handed to the reader
                self._error = e
            finally:
                self._queue.put(None)

        self._thread = threading.Thread(target=work, daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[StreamChunk]:
        return self

    def __next__(self) -> StreamChunk:
        item = self._queue.get()
        if item is None:
            self._thread.join()
            if self._error is not None:
                raise self._error
            raise StopIteration
        return item

    def close(self):
        self._stop.set()
        while self._queue.get() is not None:
            pass
        self._thread.join()

    def __del__(self):
        self._stop.set()


class Generator(_Base):
    """A decoder-only model (GPT-2, Llama, SmolLM2, ...) exported with a KV cache.

    `model`: the .onnx file with past_key_values inputs, or a folder with one
    (decoder_with_past_model.onnx [+ decoder_model.onnx], decoder_model_merged.onnx,
    model.onnx). `tokenizer`: a
    tokenizer.json path or a tokenizers.Tokenizer; by default the tokenizer.json beside
    the model, if any. One generate() at a time per Generator.
    """
    _native_type = _octet.Generator

    @property
    def eos_token_ids(self) -> List[int]:
        """The stop tokens named by the model's config.json / generation_config.json."""
        return list(self._native.eos_token_ids)


class Seq2SeqGenerator(_Base):
    """An encoder-decoder model (Marian, T5, BART) as optimum exports it: a folder with
    encoder_model.onnx, decoder_with_past_model.onnx [+ decoder_model.onnx] or
    decoder_model_merged.onnx, and config.json.

    generate() also takes num_beams, length_penalty and early_stopping ("false", "true",
    "never", or a bool) as transformers defines them; beam search streams nothing. The prompt
    may also be a dict of the encoder's inputs as numpy arrays (Whisper: {"input_features":
    log-mel [1, 80, frames]}).
    """
    _native_type = _octet.Seq2SeqGenerator

    def _native_inputs(self, inputs):
        import numpy as np
        feed = [(name, np.ascontiguousarray(value)) for name, value in inputs.items()]
        return lambda **kw: self._native.generate_from_inputs(feed, **kw)

    def generate(self, prompt, max_new_tokens: int = 32, num_beams: int = 1, length_penalty: float = 1.0,
                 early_stopping: Union[bool, str] = False, **kwargs):
        """As Generator.generate, from the source `prompt`, with beam search options."""
        if isinstance(early_stopping, bool):
            early_stopping = "true" if early_stopping else "false"
        return super().generate(prompt, max_new_tokens=max_new_tokens, num_beams=num_beams,
                                length_penalty=length_penalty, early_stopping=early_stopping, **kwargs)

    @property
    def eos_token_ids(self) -> List[int]:
        return list(self._native.eos_token_ids)

    @property
    def decoder_start_ids(self) -> List[int]:
        return list(self._native.decoder_start_ids)

    @decoder_start_ids.setter
    def decoder_start_ids(self, ids):
        self._native.decoder_start_ids = [int(i) for i in ids]
