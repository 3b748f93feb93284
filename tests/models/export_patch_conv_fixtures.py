#!/usr/bin/env python3
"""Exports patch_convs.onnx: Convs whose stride equals their kernel as vision models
other than ViT write them, for the conv_patches_to_matmul rewrite's tests.

Run with the Debian /usr/bin/python3 (torch 1.13, onnx 1.12):

    /usr/bin/python3 tests/models/export_patch_conv_fixtures.py [OUT_DIR]

The model (x: float [batch, 3, 16, 24], batch dynamic):
  stem   Conv2d(3, 20, kernel (4, 6), stride (4, 6)), then ConvNeXt's channels-last
         LayerNorm: permute(0, 2, 3, 1), LayerNorm(20), permute(0, 3, 1, 2)
  mix    Conv2d(20, 8, 1) + ReLU        (1x1, stride 1 == kernel 1, but read as NCHW)
  local  Conv2d(8, 8, 3, padding 1)     (overlapping windows)
  -> y [batch, 8, 4, 4]
  seq    Conv1d(3, 5, kernel 16, stride 16) on x.flatten(2), then .transpose(1, 2)
  -> tokens [batch, 24, 5]
Writes patch_convs_data/input_0.npy (batch 2) and output_0.npy / output_1.npy from torch.
"""
import os
import sys

import numpy as np
import torch
from torch import nn


class PatchConvs(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 20, kernel_size=(4, 6), stride=(4, 6))
        self.mix = nn.Conv2d(20, 8, kernel_size=1)
        self.norm = nn.LayerNorm(20)
        self.local = nn.Conv2d(8, 8, kernel_size=3, padding=1)
        self.seq = nn.Conv1d(3, 5, kernel_size=16, stride=16)

    def forward(self, x):
        h = self.norm(self.stem(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        y = self.local(torch.relu(self.mix(h)))
        tokens = self.seq(x.flatten(2)).transpose(1, 2)
        return y, tokens


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "fixtures")
    torch.manual_seed(4)
    torch.set_num_threads(1)
    model = PatchConvs().eval()
    x = torch.randn(2, 3, 16, 24)
    path = os.path.join(out_dir, "patch_convs.onnx")
    torch.onnx.export(model, (x,), path, opset_version=17, do_constant_folding=False, input_names=["x"],
                      output_names=["y", "tokens"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}, "tokens": {0: "batch"}})
    with torch.no_grad():
        y, tokens = model(x)
    d = os.path.join(out_dir, "patch_convs_data")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "input_0.npy"), x.numpy())
    np.save(os.path.join(d, "output_0.npy"), y.numpy())
    np.save(os.path.join(d, "output_1.npy"), tokens.numpy())
    print("wrote", path)


if __name__ == "__main__":
    main()
