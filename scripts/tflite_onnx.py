#!/usr/bin/env python3
"""A .tflite model as ONNX, for ncnn's converter (pnnx reads ONNX only): tf2onnx's TFLite front
end, then the hand-fixes below. bench_peers.py runs this as a subprocess with the Python that has
tf2onnx and TensorFlow (--tf2onnx-python; they are large and need not share the peers' Python).

Layout: the image inputs (4-D, NHWC in TFLite) become NCHW (tf2onnx --inputs-as-nchw), ncnn's own
layout, so that the converted graph does not start with a transpose; the caller feeds them the
same arrays transposed. Outputs keep TFLite's layout (NHWC where 4-D), so that they compare with
the reference as they are.

Hand-fix (automated here): MediaPipe's custom op Convolution2DTransposeBias (selfie_segmentation's
last layer: a transposed convolution with bias, its TfLiteTransposeConvParams {padding, stride_w,
stride_h} as 12 bytes of custom options) is a TFLite custom op that tf2onnx leaves in the graph
as an unknown node `TFL_Convolution2DTransposeBias` on NHWC tensors (it logs "Unsupported ops").
`fix_transpose_conv_bias` replaces each by Transpose(NHWC->NCHW), ConvTranspose (kernel OHWI ->
IOHW, TFLite's SAME or VALID padding as explicit pads), Transpose(NCHW->NHWC).

Transposes: tf2onnx keeps TFLite's NHWC where an op needs it and moves the transposes to NCHW
through the graph with its TransposeOptimizer, which in 1.17.0 does not know HardSwish: every
HardSwish of selfie_segmentation (11) stayed in NHWC between two transposes, and with it the
squeeze-and-excitation Mul after it (29 ncnn Permutes in all, most of ncnn's CPU time).
`elementwise_through_transposes` registers HardSwish (and HardSigmoid) with the optimizer as the
element-wise ops they are. `trivial_transposes_as_reshapes` then writes a Transpose that moves
only axes of size 1 (the NCHW -> NHWC after selfie_segmentation's one-channel ConvTranspose) as
the Reshape it is; selfie_segmentation then converts with no Permute at all.

Prints one JSON object: {"inputs": [{"name", "nchw"}], "outputs": [names], "fixes": [...],
"tf2onnx": version, "tensorflow": version}.

Usage (normally from bench_peers.py):
  python3 scripts/tflite_onnx.py MODEL.tflite OUT.onnx [--opset 17]
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

OPSET = 17
CUSTOM_TRANSPOSE_CONV = "Convolution2DTransposeBias"


def tflite_custom_options(path: Path, code: str) -> dict[str, bytes]:
    """Output tensor name -> custom options bytes of every op with custom code `code`."""
    from tf2onnx.tflite.Model import Model

    model = Model.GetRootAsModel(bytearray(path.read_bytes()), 0)
    found = {}
    for s in range(model.SubgraphsLength()):
        g = model.Subgraphs(s)
        for i in range(g.OperatorsLength()):
            op = g.Operators(i)
            oc = model.OperatorCodes(op.OpcodeIndex())
            if oc.CustomCode() and oc.CustomCode().decode() == code:
                out = g.Tensors(op.Outputs(0)).Name().decode()
                found[out] = bytes(op.CustomOptionsAsNumpy().tobytes()) if op.CustomOptionsLength() else b""
    return found


def image_inputs(path: Path) -> list[str]:
    """Names of the 4-D inputs (the NHWC images) of the TFLite model."""
    from tf2onnx.tflite.Model import Model

    g = Model.GetRootAsModel(bytearray(path.read_bytes()), 0).Subgraphs(0)
    names = []
    for k in range(g.InputsLength()):
        t = g.Tensors(g.Inputs(k))
        if t.ShapeLength() == 4:
            names.append(t.Name().decode())
    return names


def same_pads(size: int, k: int, s: int) -> tuple[int, int]:
    """TFLite's SAME padding of a transposed convolution with output size*s: (before, after)."""
    total = max((size - 1) * s + k - size * s, 0)
    return total // 2, total - total // 2


def fix_transpose_conv_bias(model, options: dict[str, bytes]) -> list[str]:
    """Replace every TFL_Convolution2DTransposeBias node by Transpose, ConvTranspose, Transpose
    (see the module docstring); returns the names of the nodes replaced."""
    import numpy as np
    from onnx import helper, numpy_helper, shape_inference

    g = model.graph
    inits = {t.name: t for t in g.initializer}
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in [*shape_inference.infer_shapes(model).graph.value_info, *g.input]}
    fixed, nodes = [], []
    for node in g.node:
        if node.op_type != "TFL_" + CUSTOM_TRANSPOSE_CONV:
            nodes.append(node)
            continue
        x, w_name, b_name = node.input
        padding, stride_w, stride_h = struct.unpack("<3i", options[node.output[0]][:12])
        w = numpy_helper.to_array(inits[w_name])  # [O, kH, kW, I]
        _, kh, kw, _ = w.shape
        g.initializer.remove(inits[w_name])
        g.initializer.append(numpy_helper.from_array(np.ascontiguousarray(w.transpose(3, 0, 1, 2)), w_name))
        _, h, wd, _ = shapes[x]
        pt, pb = same_pads(h, kh, stride_h) if padding == 1 else (0, 0)
        pl, pr = same_pads(wd, kw, stride_w) if padding == 1 else (0, 0)
        n = node.name
        nodes += [
            helper.make_node("Transpose", [x], [f"{n}__nchw"], name=f"{n}__to_nchw", perm=[0, 3, 1, 2]),
            helper.make_node("ConvTranspose", [f"{n}__nchw", w_name, b_name], [f"{n}__conv"], name=f"{n}__conv",
                             kernel_shape=[kh, kw], strides=[stride_h, stride_w], pads=[pt, pl, pb, pr]),
            helper.make_node("Transpose", [f"{n}__conv"], [node.output[0]], name=f"{n}__to_nhwc", perm=[0, 2, 3, 1]),
        ]
        fixed.append(n)
    del g.node[:]
    g.node.extend(nodes)
    return fixed


def elementwise_through_transposes() -> None:
    """Let tf2onnx's TransposeOptimizer move transposes through HardSwish and HardSigmoid, as
    through Relu and Sigmoid (it lacks them in 1.17.0; see the module docstring)."""
    from tf2onnx.optimizer.transpose_optimizer import TransposeOptimizer

    init = TransposeOptimizer._initialize_handlers
    if getattr(init, "_elementwise_patch", False):
        return

    def patched(self) -> None:
        init(self)
        for op in ("HardSwish", "HardSigmoid"):
            self._handler_map.setdefault(op, self._simple_through_handler)

    patched._elementwise_patch = True
    TransposeOptimizer._initialize_handlers = patched


def trivial_transposes_as_reshapes(model) -> list[str]:
    """Replace every Transpose that keeps the order of the axes longer than 1 (it moves only
    axes of size 1, so the data stays as it is in memory) by a Reshape; returns their names."""
    import numpy as np
    from onnx import helper, numpy_helper, shape_inference

    g = model.graph
    infos = [*shape_inference.infer_shapes(model).graph.value_info, *g.input]
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in infos}
    fixed, nodes = [], []
    for node in g.node:
        shape = shapes.get(node.input[0]) if node.op_type == "Transpose" else None
        if not shape or 0 in shape:
            nodes.append(node)
            continue
        perm = list(next(a.ints for a in node.attribute if a.name == "perm"))
        if [p for p in perm if shape[p] != 1] != [k for k in range(len(shape)) if shape[k] != 1]:
            nodes.append(node)
            continue
        target = f"{node.name}__shape"
        g.initializer.append(numpy_helper.from_array(np.array([shape[p] for p in perm], np.int64), target))
        nodes.append(helper.make_node("Reshape", [node.input[0], target], list(node.output), name=node.name))
        fixed.append(node.name)
    del g.node[:]
    g.node.extend(nodes)
    return fixed


def convert(src: Path, dst: Path, opset: int) -> dict:
    """tf2onnx's from_tflite with the image inputs as NCHW, then the hand-fixes; writes dst."""
    import onnx
    import tensorflow as tf
    import tf2onnx

    nchw = image_inputs(src)
    elementwise_through_transposes()
    model, _ = tf2onnx.convert.from_tflite(str(src), opset=opset, inputs_as_nchw=nchw)
    fixes = []
    custom = tflite_custom_options(src, CUSTOM_TRANSPOSE_CONV)
    if custom:
        fixes += [f"{n}: {CUSTOM_TRANSPOSE_CONV} -> ConvTranspose" for n in fix_transpose_conv_bias(model, custom)]
    fixes += [f"{n}: Transpose of axes of size 1 -> Reshape" for n in trivial_transposes_as_reshapes(model)]
    unknown = sorted({n.op_type for n in model.graph.node if n.op_type.startswith("TFL_")})
    if unknown:
        raise SystemExit(f"ops tf2onnx could not convert: {', '.join(unknown)}")
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return {"inputs": [{"name": i.name, "nchw": i.name in nchw} for i in model.graph.input],
            "outputs": [o.name for o in model.graph.output], "fixes": fixes,
            "tf2onnx": tf2onnx.__version__, "tensorflow": tf.__version__, "opset": opset}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tflite", type=Path)
    p.add_argument("onnx", type=Path)
    p.add_argument("--opset", type=int, default=OPSET, help="ONNX opset (default %(default)s)")
    args = p.parse_args(argv)
    print(json.dumps(convert(args.tflite, args.onnx, args.opset)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
