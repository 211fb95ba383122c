"""ncnn conversions for bench_peers.py, cached: .onnx -> pnnx -> ncnn, and .tflite -> ONNX
(tf2onnx, scripts/tflite_onnx.py) -> pnnx -> ncnn, with the hand-fixes each needs.

The result of a model at given input shapes is a folder `<cache>/<model>-<shapes>/` with
`model.ncnn.param`, `model.ncnn.bin` and `meta.json` (the commands, versions, the source file's
SHA-256, ncnn's input and output names, the layout of each input, the fixes applied); it is reused
while the source file is unchanged, so a machine that has the folder needs neither pnnx nor
tf2onnx (bench_peers.py --convert-only makes them).

Hand-fixes (pnnx 20261020):
- `fix_empty_reductions`: pnnx writes ONNX ReduceSum over axis 0 of a tensor without batch axis
  (multistyle26's style weights, [26,32] -> [32]) as a Reduction that reduces nothing
  (reduce_all=0, empty axes: it dropped axis 0 as the batch axis); such layers get axes [0].
- `fix_onnx_pads`: pnnx leaves an ONNX Pad that pads the channel axis (palm_detection's residual
  blocks widen 32 -> 64 channels with zeros: pads=(0,0,0,0,0,32,0,0); pnnx logs "ignore Pad")
  in the ncnn param as a layer of type `Pad`, which ncnn does not have ("layer Pad not exists or
  registered"). Such layers become ncnn `Padding` with the pads of pnnx's own model.pnnx.param
  (top, bottom, left, right, front and behind = the channel axis).

Usage (a library): from ncnn_convert import ncnn_convert
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TFLITE_ONNX = ROOT / "scripts" / "tflite_onnx.py"
# ONNX Pad mode -> ncnn Padding type.
PAD_TYPES = {"constant": 0, "edge": 1, "reflect": 2}


def layer_params(tokens: list[str]) -> dict[str, str]:
    """The key=value params of one ncnn param line (split), after its blob names."""
    nb, nt = int(tokens[2]), int(tokens[3])
    return dict(p.split("=", 1) for p in tokens[4 + nb + nt:] if "=" in p)


def fix_empty_reductions(param: str) -> tuple[str, list[str]]:
    """Give every ncnn Reduction that reduces nothing (reduce_all 1=0 and an empty axes array
    -23303=0) the axes [0]: pnnx dropped ONNX axis 0 as if it were a batch axis."""
    out, fixed = [], []
    for line in param.splitlines():
        t = line.split()
        if t and t[0] == "Reduction":
            params = layer_params(t)
            if params.get("1", "1") == "0" and params.get("-23303") == "0":
                line = re.sub(r"(?<=\s)-23303=0(?=\s|$)", "-23303=1,0", line)
                fixed.append(t[1])
        out.append(line)
    return "\n".join(out) + "\n", fixed


def pnnx_pads(pnnx_param: str) -> dict[str, dict[str, str]]:
    """Layer name -> params (pads, mode, value) of every ONNX `Pad` in pnnx's model.pnnx.param."""
    pads = {}
    for line in pnnx_param.splitlines():
        t = line.split()
        if t and t[0] == "Pad":
            pads[t[1]] = {k: v for k, v in (p.split("=", 1) for p in t[4:] if "=" in p and not p.startswith("#"))}
    return pads


def padding_params(p: dict[str, str]) -> str | None:
    """ncnn Padding params for an ONNX Pad of a 4-D NCHW tensor (no batch padding), else None."""
    pads = [int(v) for v in p.get("pads", "()").strip("()").split(",") if v]
    mode = p.get("mode", "constant").strip("'\"")
    if len(pads) != 8 or pads[0] or pads[4] or mode not in PAD_TYPES:
        return None
    _, front, top, left, _, behind, bottom, right = pads
    value = float(p.get("value", "0"))
    return f"0={top} 1={bottom} 2={left} 3={right} 4={PAD_TYPES[mode]} 5={value:e} 7={front} 8={behind}"


def fix_onnx_pads(param: str, pnnx_param: str) -> tuple[str, list[str]]:
    """Turn every layer of type `Pad` (an ONNX Pad pnnx did not convert; ncnn has no such layer)
    into ncnn `Padding` with the pads pnnx recorded for it; returns (param, names fixed)."""
    pads = pnnx_pads(pnnx_param)
    out, fixed = [], []
    for line in param.splitlines():
        t = line.split()
        if t and t[0] == "Pad" and t[1] in pads:
            new = padding_params(pads[t[1]])
            if new is not None:
                nb, nt = int(t[2]), int(t[3])
                line = " ".join(["Padding", *t[1:4 + nb + nt], new])
                fixed.append(t[1])
        out.append(line)
    return "\n".join(out) + "\n", fixed


def parse_ncnn_py(text: str) -> tuple[list[dict], list[str]]:
    """Input names with pnnx's batch_index, and output names, from pnnx's <model>_ncnn.py."""
    ins = [{"name": m[1], "batch_index": int(m[2] or 233)} for m in re.finditer(
        r'ex\.input\("([^"]+)",\s*ncnn\.Mat\(\w+\.numpy\(\)(?:,\s*batch_index=(\d+))?\)', text)]
    outs = re.findall(r'ex\.extract\("([^"]+)"\)', text)
    return ins, outs


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def last_line(text: str, n: int = 300) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1][-n:] if lines else ""


def tflite_to_onnx(src: Path, dst: Path, python: str) -> tuple[dict | None, str]:
    """scripts/tflite_onnx.py SRC DST under `python` (the one with tf2onnx): (its JSON, "") or
    (None, why not)."""
    cmd = [python, str(TFLITE_ONNX), str(src), str(dst)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if proc.returncode != 0:
        err = last_line(proc.stderr or proc.stdout)
        if "No module named" in err:
            return None, f"tf2onnx is not installed for {python} (--tf2onnx-python): {err}"
        return None, f"tf2onnx failed: {err}"
    return json.loads(last_line(proc.stdout, 10**6)), ""


def to_nchw(shape: tuple[int, ...]) -> list[int]:
    n, h, w, c = shape
    return [n, c, h, w]


def run_pnnx(t: Path, shapes: list[list[int]]) -> str:
    """pnnx on t/model.onnx at the given input shapes, f32 weights; "" or why it failed."""
    import pnnx

    inputshape = ",".join("[" + ",".join(map(str, s)) + "]" for s in shapes)
    cmd = [pnnx.EXEC_PATH, "model.onnx", f"inputshape={inputshape}", "fp16=0"]
    proc = subprocess.run(cmd, cwd=t, capture_output=True, text=True)
    if proc.returncode != 0 or not (t / "model.ncnn.param").is_file():
        return f"pnnx failed: {last_line(proc.stderr or proc.stdout)}"
    return ""


def ncnn_convert(name: str, fmt: str, path: Path, inputs: list[Any], cache: Path,
                 tf2onnx_python: str = sys.executable) -> tuple[Path | None, str]:
    """The folder with model.ncnn.param/.bin and meta.json for this model (fmt "onnx" or
    "tflite") and input arrays (converting when missing), or (None, why not)."""
    shapes = "-".join("x".join(map(str, x.shape)) for x in inputs)
    d = cache / f"{name}-{shapes}"
    digest, key = sha256(path), f"{fmt}_sha256"
    meta_file = d / "meta.json"
    if meta_file.is_file() and json.loads(meta_file.read_text()).get(key) == digest:
        return d, ""
    try:
        import pnnx  # noqa: F401
    except ImportError:
        return None, f"no conversion in {d} and pnnx is not installed"
    meta: dict[str, Any] = {"model": name, key: digest, "pnnx": importlib.metadata.version("pnnx")}
    with tempfile.TemporaryDirectory(prefix="pnnx-") as tmp:
        t = Path(tmp)
        pnnx_shapes = [list(x.shape) for x in inputs]
        nchw = [False] * len(inputs)
        if fmt == "tflite":
            info, why = tflite_to_onnx(path, t / "model.onnx", tf2onnx_python)
            if info is None:
                return None, why
            nchw = [i["nchw"] for i in info["inputs"]]
            pnnx_shapes = [to_nchw(x.shape) if c else list(x.shape) for x, c in zip(inputs, nchw)]
            meta.update(tf2onnx=info["tf2onnx"], tensorflow=info["tensorflow"], onnx_opset=info["opset"],
                        onnx_fixes=info["fixes"],
                        convert_command=f"python3 scripts/tflite_onnx.py {path.name} model.onnx")
        else:
            shutil.copy(path, t / "model.onnx")
        why = run_pnnx(t, pnnx_shapes)
        if why:
            return None, why
        param, reductions = fix_empty_reductions((t / "model.ncnn.param").read_text())
        param, pads = fix_onnx_pads(param, (t / "model.pnnx.param").read_text())
        ins, outs = parse_ncnn_py((t / "model_ncnn.py").read_text())
        for i, c in zip(ins, nchw):
            i["nchw"] = c  # feed the (NHWC) input transposed to NCHW
        d.mkdir(parents=True, exist_ok=True)
        (d / "model.ncnn.param").write_text(param)
        shutil.copy(t / "model.ncnn.bin", d / "model.ncnn.bin")
    inputshape = ",".join("[" + ",".join(map(str, s)) + "]" for s in pnnx_shapes)
    meta.update(command=f"pnnx model.onnx inputshape={inputshape} fp16=0", inputs=ins, outputs=outs,
                fixed_reductions=reductions, fixed_pads=pads)
    meta_file.write_text(json.dumps(meta, indent=2) + "\n")
    if reductions:
        print(f"  {name}: pnnx wrote {len(reductions)} Reductions without axes, set to axis 0", file=sys.stderr)
    if pads:
        print(f"  {name}: pnnx left {len(pads)} ONNX Pads unconverted, written as ncnn Padding", file=sys.stderr)
    return d, ""
