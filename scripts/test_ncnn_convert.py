#!/usr/bin/env python3
"""Tests of the ncnn conversion's hand-fixes (scripts/ncnn_convert.py) on param text of the
shape pnnx 20261020 writes, and of tflite_onnx.py's SAME padding; standard library only (no
ncnn, pnnx or tf2onnx needed).

  python3 scripts/test_ncnn_convert.py        # or: python3 -m pytest scripts/test_ncnn_convert.py
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ncnn_convert import fix_empty_reductions, fix_onnx_pads, padding_params, parse_ncnn_py  # noqa: E402
from tflite_onnx import same_pads  # noqa: E402

NCNN_PARAM = """7767517
3 3
Input                    in0                      0 1 in0
Pad                      Pad_19                   1 1 in0 1
Reduction                reduce_0                 1 1 1 out0 0=0 1=0 -23303=0 4=0 5=1
"""
PNNX_PARAM = """7767518
3 3
pnnx.Input               pnnx_input_0             0 1 0 #0=(1,32,48,48)f32
Pad                      Pad_19                   1 1 0 1 pads=(0,0,0,0,0,32,0,0) #0=(1,32,48,48)f32 #1=(1,64,48,48)f32
pnnx.Output              pnnx_output_0            1 0 1
"""


class Fixes(unittest.TestCase):
    def test_channel_pad_becomes_padding(self) -> None:
        param, fixed = fix_onnx_pads(NCNN_PARAM, PNNX_PARAM)
        self.assertEqual(fixed, ["Pad_19"])
        line = next(x for x in param.splitlines() if "Pad_19" in x).split()
        self.assertEqual(line[:6], ["Padding", "Pad_19", "1", "1", "in0", "1"])
        params = dict(p.split("=") for p in line[6:])
        self.assertEqual((params["7"], params["8"], params["0"], params["1"]), ("0", "32", "0", "0"))
        self.assertEqual(float(params["5"]), 0.0)

    def test_spatial_pad_and_unsupported(self) -> None:
        self.assertEqual(padding_params({"pads": "(0,0,1,2,0,0,3,4)"}),
                         "0=1 1=3 2=2 3=4 4=0 5=0.000000e+00 7=0 8=0")
        self.assertIsNone(padding_params({"pads": "(1,0,0,0,0,0,0,0)"}))  # batch padding
        self.assertIsNone(padding_params({"pads": "(0,0,1,1,0,0,1,1)", "mode": "wrap"}))
        self.assertIsNone(padding_params({"pads": "(0,1,0,1)"}))  # not 4-D

    def test_empty_reduction_gets_axis_0(self) -> None:
        param, fixed = fix_empty_reductions(NCNN_PARAM)
        self.assertEqual(fixed, ["reduce_0"])
        self.assertIn("-23303=1,0", param)

    def test_parse_ncnn_py(self) -> None:
        text = ('ex.input("in0", ncnn.Mat(in0.numpy(), batch_index=0).clone())\n'
                'ex.input("in1", ncnn.Mat(in1.numpy()).clone())\n_, out0 = ex.extract("out0")\n')
        ins, outs = parse_ncnn_py(text)
        self.assertEqual(ins, [{"name": "in0", "batch_index": 0}, {"name": "in1", "batch_index": 233}])
        self.assertEqual(outs, ["out0"])

    def test_transpose_conv_same_pads(self) -> None:
        self.assertEqual(same_pads(128, 2, 2), (0, 0))  # selfie_segmentation's last layer
        self.assertEqual(same_pads(10, 3, 2), (0, 1))  # TFLite puts the odd pixel after
        self.assertEqual(same_pads(10, 4, 1), (1, 2))


if __name__ == "__main__":
    unittest.main()
