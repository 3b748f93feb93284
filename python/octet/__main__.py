"""python -m octet: the Python entry point for what needs Python's libraries.

  python -m octet quantize MODEL -o OUT [--calib PATH | --calib-text FILE --tokenizer tokenizer.json
                                         | --calib-images DIR --image-size H[,W]] [options]
  python -m octet write-text-samples FILE --tokenizer tokenizer.json --model MODEL --out DIR
  python -m octet tokenize --tokenizer tokenizer.json --text TEXT --out ids.npy
  python -m octet detokenize --tokenizer tokenizer.json --ids ids.npy --out text.txt

`quantize` is `octet quantize` with raw-data calibration (text through a Hugging Face
tokenizer, images through a resize/normalize spec). `write-text-samples` tokenizes a text
file into a folder of .npz samples, one per line, which `octet quantize --calib` reads; the
C++ CLI's --calib-text runs it. `tokenize` / `detokenize` are what `octet generate --prompt`
runs for text in and out.
"""
import argparse
import json
import os
import sys

import numpy as np


def _floats(text):
    return tuple(float(x) for x in text.split(","))


def _size(text):
    parts = [int(x) for x in text.split(",")]
    return parts[0] if len(parts) == 1 else tuple(parts)


def _calibration(args):
    from .calibration import ImageCalibration, TextCalibration
    given = [x for x in (args.calib, args.calib_text, args.calib_images) if x]
    if len(given) > 1:
        raise SystemExit("octet: give one of --calib, --calib-text, --calib-images")
    if args.calib_text:
        if not args.tokenizer:
            raise SystemExit("octet: --calib-text needs --tokenizer tokenizer.json")
        return TextCalibration(args.calib_text, tokenizer=args.tokenizer, max_length=args.max_length)
    if args.calib_images:
        if not args.image_size:
            raise SystemExit("octet: --calib-images needs --image-size H[,W]")
        return ImageCalibration(args.calib_images, size=_size(args.image_size), mean=_floats(args.mean),
                                std=_floats(args.std), layout=args.layout)
    return args.calib


def _quantize(args):
    from .quantize import _run
    report, text = _run(args.model, args.output, _calibration(args), mode=args.mode, target=args.target,
                        method=args.method, percentile=args.percentile, activation_type=args.activation_type,
                        per_channel=not args.per_tensor, quantize_attention=args.attention != "fp32",
                        attention_row_scales=args.attention == "int8", rounding=args.rounding,
                        quantize_embeddings=not args.keep_embeddings, exclude=args.exclude,
                        smoothquant=args.smoothquant, max_drop=args.max_drop, metric=args.metric,
                        explain=args.explain, max_samples=args.calib_samples, holdout=args.holdout,
                        external_data=args.external_data, progress=not args.quiet)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2) if args.json else text, end="" if not args.json else "\n")


def _write_text_samples(args):
    from ._octet import model_inputs
    from .calibration import TextCalibration
    calibration = TextCalibration(args.text, tokenizer=args.tokenizer, max_length=args.max_length)
    os.makedirs(args.out, exist_ok=True)
    count = 0
    for i, sample in enumerate(calibration.samples([tuple(x) for x in model_inputs(args.model)])):
        if args.max_samples and i >= args.max_samples:
            break
        np.savez(os.path.join(args.out, "sample_%d.npz" % i), **sample)
        count += 1
    print("%d samples from %s written to %s" % (count, args.text, args.out))


def _tokenizer(path):
    from tokenizers import Tokenizer
    return Tokenizer.from_file(path)


def _tokenize(args):
    ids = _tokenizer(args.tokenizer).encode(args.text).ids
    np.save(args.out, np.array(ids, dtype=np.int64))


def _detokenize(args):
    ids = np.load(args.ids).astype(np.int64).reshape(-1).tolist()
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(_tokenizer(args.tokenizer).decode(ids, skip_special_tokens=True))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m octet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    q = commands.add_parser("quantize", help="quantize a float ONNX model to int8 (see `octet quantize --help`)")
    q.add_argument("model")
    q.add_argument("-o", "--output", required=True)
    q.add_argument("--calib", help="folder of .npz / .npy stacks / ONNX test data, or one .npz")
    q.add_argument("--calib-text", help="text file, one calibration sample per non-empty line")
    q.add_argument("--tokenizer", help="Hugging Face tokenizer.json for --calib-text")
    q.add_argument("--max-length", type=int, default=128, help="tokens per text sample (default 128)")
    q.add_argument("--calib-images", help="folder of images, one calibration sample each")
    q.add_argument("--image-size", help="H,W (or one number) to resize images to")
    q.add_argument("--mean", default="0.485,0.456,0.406", help="per-channel mean after scaling to [0,1]")
    q.add_argument("--std", default="0.229,0.224,0.225", help="per-channel std")
    q.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    q.add_argument("--calib-samples", type=int, default=0, help="use at most N samples")
    q.add_argument("--mode", choices=["static", "dynamic"])
    q.add_argument("--target", default="octet", choices=["octet", "ort", "tensorrt"])
    q.add_argument("--method", "--calibration", default="minmax", choices=["minmax", "percentile", "entropy", "mse"])
    q.add_argument("--percentile", type=float, default=99.99)
    q.add_argument("--activation-type", choices=["uint8", "int8"])
    q.add_argument("--per-tensor", action="store_true")
    q.add_argument("--attention", default="int8", choices=["int8", "int8-tensor", "fp32"])
    q.add_argument("--rounding", default="gptq", choices=["gptq", "nearest"])
    q.add_argument("--keep-embeddings", action="store_true")
    q.add_argument("--exclude", action="append", default=[])
    q.add_argument("--smoothquant", help="auto (static mode's default), off, or ALPHA in [0,1]")
    q.add_argument("--max-drop", type=float)
    q.add_argument("--metric", default="cosine", choices=["cosine", "top1", "mse"])
    q.add_argument("--explain", action="store_true")
    q.add_argument("--holdout", type=float, default=0.2)
    q.add_argument("--external-data", action="store_true")
    q.add_argument("--report", help="write the report as JSON to this file")
    q.add_argument("--json", action="store_true", help="print the report as JSON")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    q.set_defaults(run=_quantize)

    t = commands.add_parser("write-text-samples", help="tokenize a text file into a folder of .npz samples")
    t.add_argument("text")
    t.add_argument("--tokenizer", required=True)
    t.add_argument("--model", required=True, help="the model whose inputs the samples fill")
    t.add_argument("--out", required=True)
    t.add_argument("--max-length", type=int, default=128)
    t.add_argument("--max-samples", type=int, default=0)
    t.set_defaults(run=_write_text_samples)

    k = commands.add_parser("tokenize", help="token ids of a text (Hugging Face tokenizer.json) to a .npy file")
    k.add_argument("--tokenizer", required=True)
    k.add_argument("--text", required=True)
    k.add_argument("--out", required=True)
    k.set_defaults(run=_tokenize)

    d = commands.add_parser("detokenize", help="text of the token ids in a .npy file")
    d.add_argument("--tokenizer", required=True)
    d.add_argument("--ids", required=True)
    d.add_argument("--out", required=True)
    d.set_defaults(run=_detokenize)

    args = parser.parse_args(argv)
    from ._octet import OctetError
    try:
        args.run(args)
    except (OctetError, ValueError, OSError) as e:
        print("octet: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
