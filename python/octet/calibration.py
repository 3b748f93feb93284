"""Calibration samples from raw data: text through a Hugging Face tokenizer, images
through a resize/normalize spec. Both are handed to octet.quantize(calibration=...), which
asks them for samples shaped like the model's inputs."""
import os

import numpy as np

_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm")


def _numpy_type(element_type, name):
    try:
        return np.dtype(element_type)
    except TypeError:
        raise ValueError("model input %r has element type %s, which calibration cannot fill" % (name, element_type))


class TextCalibration:
    """Calibration samples from text: one sample per text, tokenized like the model's
    training data, batch 1.

    TextCalibration(texts, tokenizer, max_length=128)

    texts: a path to a UTF-8 file with one text per non-empty line, or a list of str.
    tokenizer: a path to a Hugging Face tokenizer.json (the `tokenizers` package reads it)
        or a tokenizers.Tokenizer.
    max_length: texts are truncated to this many tokens.

    Fills the model inputs input_ids, attention_mask and token_type_ids (each only if the
    model has it); any other required input is an error naming it, except that a decoder
    exported with a KV cache (input_ids and past_key_values.* inputs) leaves position_ids
    and past_key_values.* out: octet's calibration reader fills them as a first (prompt)
    generation step gets them (src/quant/decoder_prompt.h).
    """

    def __init__(self, texts, tokenizer, max_length=128):
        if isinstance(texts, (str, os.PathLike)):
            path = os.fspath(texts)
            with open(path, encoding="utf-8") as f:
                texts = [line.strip() for line in f if line.strip()]
            if not texts:
                raise ValueError("%s: no non-empty lines of text to calibrate on" % path)
        self.texts = list(texts)
        if not self.texts:
            raise ValueError("TextCalibration: no texts")
        if isinstance(tokenizer, (str, os.PathLike)):
            try:
                from tokenizers import Tokenizer
            except ImportError:
                raise ImportError("TextCalibration needs the `tokenizers` package: pip install tokenizers") from None
            tokenizer = Tokenizer.from_file(os.fspath(tokenizer))
        self.tokenizer = tokenizer
        self.max_length = int(max_length)
        if self.max_length < 1:
            raise ValueError("max_length must be >= 1, got %d" % self.max_length)
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.no_padding()

    def __len__(self):
        return len(self.texts)

    def samples(self, inputs):
        """Yield {input name: array} per text for the model inputs [(name, type, shape)]."""
        fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
        names = [name for name, _, _ in inputs]
        if "input_ids" in names and any(n.startswith("past_key_values.") for n in names):
            inputs = [x for x in inputs if x[0] != "position_ids" and not x[0].startswith("past_key_values.")]
        unknown = [name for name, _, _ in inputs if name not in fields]
        if unknown:
            raise ValueError("TextCalibration fills input_ids, attention_mask and token_type_ids; the model also "
                             "needs %s: give the samples as dicts of arrays instead" % ", ".join(unknown))
        for text in self.texts:
            encoding = self.tokenizer.encode(text)
            sample = {}
            for name, element_type, _ in inputs:
                values = getattr(encoding, fields[name])
                sample[name] = np.asarray([values], dtype=_numpy_type(element_type, name))
            yield sample


class ImageCalibration:
    """Calibration samples from images: each resized, scaled and normalized, batch 1.

    ImageCalibration(images, size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                     layout="NCHW", scale=1/255, resample="bilinear")

    images: a folder of image files (sorted by name), a list of file paths, or a list of
        HxWxC uint8 arrays (RGB).
    size: (height, width) to resize to, or one int for a square.
    mean, std: per channel, applied after scaling: (pixel * scale - mean) / std.
    layout: "NCHW" (channels first, most vision models) or "NHWC".
    Reading files needs Pillow. The model must have exactly one required input.
    """

    def __init__(self, images, size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), layout="NCHW",
                 scale=1 / 255.0, resample="bilinear"):
        if isinstance(images, (str, os.PathLike)):
            folder = os.fspath(images)
            if not os.path.isdir(folder):
                raise ValueError("%s: not a folder of images" % folder)
            images = [os.path.join(folder, f) for f in sorted(os.listdir(folder))
                      if f.lower().endswith(_IMAGE_SUFFIXES)]
            if not images:
                raise ValueError("%s: no image files (%s)" % (folder, ", ".join(_IMAGE_SUFFIXES)))
        self.images = list(images)
        if not self.images:
            raise ValueError("ImageCalibration: no images")
        self.size = (int(size), int(size)) if np.isscalar(size) else tuple(int(s) for s in size)
        if len(self.size) != 2 or min(self.size) < 1:
            raise ValueError("size must be (height, width) or one int, got %r" % (size,))
        self.mean = np.asarray(mean, dtype=np.float32)
        self.std = np.asarray(std, dtype=np.float32)
        if np.any(self.std == 0):
            raise ValueError("std must not contain 0")
        if layout not in ("NCHW", "NHWC"):
            raise ValueError("layout must be 'NCHW' or 'NHWC', got %r" % (layout,))
        self.layout = layout
        self.scale = float(scale)
        self.resample = resample

    def __len__(self):
        return len(self.images)

    def _load(self, image):
        try:
            from PIL import Image
        except ImportError:
            raise ImportError("ImageCalibration needs Pillow to read and resize images: pip install pillow") from None
        modes = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}
        if self.resample not in modes:
            raise ValueError("resample must be one of %s, got %r" % (", ".join(modes), self.resample))
        picture = Image.fromarray(np.asarray(image, dtype=np.uint8)) if isinstance(image, np.ndarray) \
            else Image.open(os.fspath(image))
        picture = picture.convert("RGB").resize((self.size[1], self.size[0]), modes[self.resample])
        return np.asarray(picture, dtype=np.float32)  # H x W x 3

    def samples(self, inputs):
        """Yield {input name: array} per image for a model with one image input."""
        if len(inputs) != 1:
            raise ValueError("ImageCalibration fills one image input; the model needs %s"
                             % ", ".join(name for name, _, _ in inputs))
        name, element_type, _ = inputs[0]
        dtype = _numpy_type(element_type, name)
        for image in self.images:
            pixels = (self._load(image) * self.scale - self.mean) / self.std
            if self.layout == "NCHW":
                pixels = pixels.transpose(2, 0, 1)
            yield {name: np.ascontiguousarray(pixels[None].astype(dtype))}
