#!/usr/bin/env python3
"""Describe TFLite models: op counts, op option combinations, dtypes, sparsity,
custom ops, operator-code versions.

A developer aid for writing the TFLite importer and CPU kernels; not needed at
run time. Reads the flatbuffers with the generated schema module that ships
with ai-edge-litert (`ai_edge_litert.schema_py_generated`, object API); needs
numpy.

Usage:
  python3 scripts/describe_models.py                       # all 14 in .cache/models
  python3 scripts/describe_models.py path/a.tflite ...     # explicit files
  python3 scripts/describe_models.py --out .cache/model_facts.txt
  python3 scripts/describe_models.py --ops-only            # just the op count table
"""

from __future__ import annotations

import argparse
import io
import struct
import sys
from collections import Counter, OrderedDict, defaultdict
from pathlib import Path

import numpy as np

try:
    from ai_edge_litert import schema_py_generated as S
except ImportError:  # pragma: no cover
    sys.exit("describe_models: needs ai-edge-litert (pip install -r scripts/requirements.txt)")

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fetch_models import MODELS  # noqa: E402


def enum_names(cls) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


OPNAME = enum_names(S.BuiltinOperator)
TTYPE = enum_names(S.TensorType)
PADDING = enum_names(S.Padding)
ACT = enum_names(S.ActivationFunctionType)
OPTTYPE = enum_names(S.BuiltinOptions)
DIMTYPE = enum_names(S.DimensionType)
CUSTOMFMT = enum_names(S.CustomOptionsFormat)

NP_DTYPE = {
    S.TensorType.FLOAT32: np.float32, S.TensorType.FLOAT16: np.float16,
    S.TensorType.INT32: np.int32, S.TensorType.INT64: np.int64,
    S.TensorType.UINT8: np.uint8, S.TensorType.INT8: np.int8,
    S.TensorType.INT16: np.int16, S.TensorType.BOOL: np.bool_,
}

ENUM_FIELDS = {
    "padding": PADDING,
    "fusedActivationFunction": ACT,
}


def opname(model, op) -> str:
    code = model.operatorCodes[op.opcodeIndex]
    if code.customCode:
        return code.customCode.decode()
    b = max(code.builtinCode, code.deprecatedBuiltinCode)
    return OPNAME.get(b, f"BUILTIN_{b}")


def opts_dict(op) -> "OrderedDict[str, object]":
    o = op.builtinOptions
    d: OrderedDict[str, object] = OrderedDict()
    if o is None:
        return d
    for k in sorted(vars(o)):
        v = getattr(o, k)
        if k in ENUM_FIELDS:
            v = ENUM_FIELDS[k].get(v, v)
        elif isinstance(v, np.ndarray):
            v = v.tolist()
        d[k] = v
    return d


class Graph:
    def __init__(self, path: Path):
        self.path = path
        self.raw = path.read_bytes()
        self.m = S.ModelT.InitFromPackedBuf(self.raw, 0)
        assert len(self.m.subgraphs) >= 1
        self.g = self.m.subgraphs[0]
        self.T = self.g.tensors
        self.producer: dict[int, int] = {}
        self.consumers: dict[int, list[int]] = defaultdict(list)
        for i, op in enumerate(self.g.operators):
            for t in op.outputs:
                self.producer[int(t)] = i
            for t in op.inputs:
                if t >= 0:
                    self.consumers[int(t)].append(i)

    def name(self, op) -> str:
        return opname(self.m, op)

    def shape(self, t: int) -> list[int]:
        s = self.T[t].shape
        return [] if s is None else [int(x) for x in s]

    def tname(self, t: int) -> str:
        n = self.T[t].name
        return n.decode() if isinstance(n, bytes) else str(n)

    def buffer_bytes(self, t: int) -> bytes | None:
        b = self.m.buffers[self.T[t].buffer]
        if b.data is not None and len(b.data):
            return bytes(np.asarray(b.data, dtype=np.uint8))
        if b.offset and b.size:
            return self.raw[b.offset : b.offset + b.size]
        return None

    def const_value(self, t: int):
        data = self.buffer_bytes(t)
        if data is None:
            return None
        dt = NP_DTYPE.get(self.T[t].type)
        if dt is None:
            return data
        a = np.frombuffer(data, dtype=dt)
        shp = self.shape(t)
        if self.T[t].sparsity is None and shp and int(np.prod(shp)) == a.size:
            a = a.reshape(shp)
        return a

    def is_const(self, t: int) -> bool:
        return self.buffer_bytes(t) is not None

    def is_weight(self, t: int) -> bool:
        """Constant, or the output of a DEQUANTIZE/DENSIFY chain that starts at a constant."""
        if t < 0:
            return False
        if self.is_const(t):
            return True
        p = self.producer.get(t)
        if p is None:
            return False
        op = self.g.operators[p]
        if self.name(op) in ("DEQUANTIZE", "DENSIFY"):
            return self.is_weight(int(op.inputs[0]))
        return False

    def weight_chain(self, t: int) -> list[str]:
        """['FLOAT16 const(sparse)', 'DENSIFY', 'DEQUANTIZE'] for a weight tensor."""
        p = self.producer.get(t)
        if p is None:
            tt = self.T[t]
            return [f"{TTYPE[tt.type]} const" + ("(sparse)" if tt.sparsity is not None else "")]
        op = self.g.operators[p]
        return self.weight_chain(int(op.inputs[0])) + [self.name(op)]

    def weight_value(self, t: int):
        """Value of a weight tensor after DENSIFY/DEQUANTIZE, as float32 (dense)."""
        p = self.producer.get(t)
        if p is None:
            v = self.const_value(t)
            return None if isinstance(v, bytes) or v is None else v
        op = self.g.operators[p]
        src = int(op.inputs[0])
        if self.name(op) == "DEQUANTIZE":
            v = self.weight_value(src)
            return None if v is None else v.astype(np.float32).reshape(self.shape(t))
        if self.name(op) == "DENSIFY":
            return densify(self, src)
        return None


def densify(g: Graph, t: int) -> np.ndarray:
    """Expand a sparse constant (TFLite SparsityParameters) to dense; supports the
    general traversal with DENSE and SPARSE_CSR dims and block maps."""
    tt = g.T[t]
    sp = tt.sparsity
    vals = g.const_value(t)  # flat
    shape = g.shape(t)
    order = [int(x) for x in sp.traversalOrder]
    block_map = [int(x) for x in (sp.blockMap if sp.blockMap is not None else [])]
    dims = sp.dimMetadata
    n_orig = len(shape)
    # Size of each traversal dim
    out = np.zeros(shape, dtype=vals.dtype)
    blk_sizes = {}
    for i, bm in enumerate(block_map):
        blk_sizes[bm] = int(dims[n_orig + i].denseSize)

    def seg_idx(dm):
        segs = dm.arraySegments.values if dm.arraySegments is not None else None
        idxs = dm.arrayIndices.values if dm.arrayIndices is not None else None
        return (np.asarray(segs) if segs is not None else None, np.asarray(idxs) if idxs is not None else None)

    coords = [0] * len(order)

    def rec(level: int, prev_pos: int):
        dm = dims[level]
        if dm.format == S.DimensionType.DENSE:
            n = int(dm.denseSize)
            for i in range(n):
                coords[level] = i
                cur = prev_pos * n + i
                if level + 1 == len(order):
                    write(cur)
                else:
                    rec(level + 1, cur)
        else:
            segs, idxs = seg_idx(dm)
            for k in range(int(segs[prev_pos]), int(segs[prev_pos + 1])):
                coords[level] = int(idxs[k])
                if level + 1 == len(order):
                    write(k)
                else:
                    rec(level + 1, k)

    def write(value_pos: int):
        orig = [0] * n_orig
        for lvl, d in enumerate(order):
            if d < n_orig:
                orig[d] += coords[lvl] * (blk_sizes.get(d, 1))
            else:
                bd = block_map[d - n_orig]
                orig[bd] += coords[lvl]
        out[tuple(orig)] = vals[value_pos]

    rec(0, 0)
    return out


def conv_gflop(g: Graph) -> float:
    macs = 0
    for op in g.g.operators:
        n = g.name(op)
        if n in ("CONV_2D", "DEPTHWISE_CONV_2D", "Convolution2DTransposeBias"):
            w = g.shape(int(op.inputs[1]))
            o = g.shape(int(op.outputs[0]))
            i = g.shape(int(op.inputs[0]))
            if n == "CONV_2D":
                macs += int(np.prod(o)) * w[1] * w[2] * w[3]
            elif n == "DEPTHWISE_CONV_2D":
                macs += int(np.prod(o)) * w[1] * w[2]
            else:  # transpose: every input pixel scatters a kh*kw*O patch
                macs += int(np.prod(i)) * w[0] * w[1] * w[2]
    return 2 * macs / 1e9


def summarize_options(g: Graph, op) -> str:
    """A canonical description of one op's configuration (kernel sizes etc.)."""
    n = g.name(op)
    d = opts_dict(op)
    ins = [int(x) for x in op.inputs]
    outs = [int(x) for x in op.outputs]
    act = d.get("fusedActivationFunction")

    def strides():
        return f"s{d.get('strideH')}x{d.get('strideW')}" if d.get("strideH") == d.get("strideW") else f"s{d.get('strideH')},{d.get('strideW')}"

    if n == "CONV_2D":
        w = g.shape(ins[1])
        dil = (d.get("dilationHFactor"), d.get("dilationWFactor"))
        bias = "bias" if len(ins) > 2 and ins[2] >= 0 else "nobias"
        return f"k{w[1]}x{w[2]} {strides()} {d['padding']} {act} dil{dil[0]}x{dil[1]} {bias}"
    if n == "DEPTHWISE_CONV_2D":
        w = g.shape(ins[1])
        dil = (d.get("dilationHFactor"), d.get("dilationWFactor"))
        cin = g.shape(ins[0])[-1]
        cout = w[3]
        return (f"k{w[1]}x{w[2]} {strides()} {d['padding']} {act} mult{d.get('depthMultiplier')}"
                f" (cin{'==' if cin == cout else '!='}cout) dil{dil[0]}x{dil[1]}")
    if n in ("MAX_POOL_2D", "AVERAGE_POOL_2D"):
        return f"f{d.get('filterHeight')}x{d.get('filterWidth')} {strides()} {d['padding']} {act}"
    if n in ("ADD", "MUL", "SUB", "DIV"):
        a, b = g.shape(ins[0]), g.shape(ins[1])
        kinds = ["w" if g.is_weight(t) else "x" for t in ins]
        bc = "same" if a == b else f"bcast {a}x{b}"
        return f"{act} {'/'.join(kinds)} {bc}"
    if n == "PAD":
        p = g.const_value(ins[1])
        return f"pads={p.tolist() if p is not None else '?'}"
    if n == "RESHAPE":
        sh = g.const_value(ins[1]) if len(ins) > 1 and ins[1] >= 0 else None
        return (f"{g.shape(ins[0])} -> {g.shape(outs[0])} newShape={d.get('newShape')} "
                f"shape_tensor={sh.tolist() if sh is not None else None}")
    if n == "STRIDED_SLICE":
        b, e, s = (g.const_value(t) for t in ins[1:4])
        return (f"{g.shape(ins[0])} begin={b.tolist()} end={e.tolist()} strides={s.tolist()} "
                f"opts={dict(d)} -> {g.shape(outs[0])}")
    if n == "RESIZE_BILINEAR" or n == "RESIZE_NEAREST_NEIGHBOR":
        sz = g.const_value(ins[1])
        return (f"alignCorners={d.get('alignCorners')} halfPixelCenters={d.get('halfPixelCenters')} "
                f"{g.shape(ins[0])[1:3]}->{sz.tolist()}")
    if n == "MEAN":
        ax = g.const_value(ins[1])
        return f"axes={ax.tolist()} keepDims={d.get('keepDims')} {g.shape(ins[0])}->{g.shape(outs[0])}"
    if n == "CONCATENATION":
        return f"axis={d.get('axis')} {act} n_in={len(ins)} in={[g.shape(t) for t in ins]} -> {g.shape(outs[0])}"
    if n == "FULLY_CONNECTED":
        w = g.shape(ins[1])
        bias = "bias" if len(ins) > 2 and ins[2] >= 0 else "nobias"
        return (f"keepNumDims={d.get('keepNumDims')} {act} weightsFormat={d.get('weightsFormat')} "
                f"W{w} {bias} {g.shape(ins[0])}->{g.shape(outs[0])}")
    if n == "DEPTH_TO_SPACE":
        return f"block={d.get('blockSize')} {g.shape(ins[0])}->{g.shape(outs[0])}"
    if n == "PRELU":
        return f"alpha{g.shape(ins[1])} ({'w' if g.is_weight(ins[1]) else 'x'})"
    if n in ("DEQUANTIZE", "DENSIFY"):
        return f"{TTYPE[g.T[ins[0]].type]}->{TTYPE[g.T[outs[0]].type]}" + (
            " sparse-in" if g.T[ins[0]].sparsity is not None else "")
    if n in ("LOGISTIC", "RELU", "RELU6", "HARD_SWISH", "TANH"):
        return ""
    # custom ops and anything else
    if op.customOptions is not None:
        return f"custom_options={bytes(np.asarray(op.customOptions, np.uint8)).hex()}"
    return str(dict(d))


def describe(path: Path, out: io.TextIOBase) -> dict:
    g = Graph(path)
    m = g.m
    w = out.write
    name = path.stem
    ops = g.g.operators
    counts = Counter(g.name(op) for op in ops)
    total = len(ops)
    compute = total - counts.get("DEQUANTIZE", 0) - counts.get("DENSIFY", 0)

    w(f"\n{'=' * 100}\n{name}  ({path}, {len(g.raw)} bytes)\n{'=' * 100}\n")
    desc = m.description.decode() if isinstance(m.description, bytes) else m.description
    w(f"schema version {m.version}; description {desc!r}; subgraphs {len(m.subgraphs)}; "
      f"tensors {len(g.T)}; buffers {len(m.buffers)}; signatureDefs {len(m.signatureDefs or [])}\n")
    for md in m.metadata or []:
        data = bytes(np.asarray(m.buffers[md.buffer].data, np.uint8)) if m.buffers[md.buffer].data is not None else b""
        w(f"metadata {md.name.decode()}: {data!r}\n")
    for kind, idxs in (("input", g.g.inputs), ("output", g.g.outputs)):
        for k, t in enumerate(idxs):
            t = int(t)
            w(f"{kind}[{k}] #{t} {g.tname(t)!r} {TTYPE[g.T[t].type]} {g.shape(t)} "
              f"sig={None if g.T[t].shapeSignature is None else list(g.T[t].shapeSignature)}\n")
    w(f"ops: total {total}, without DEQUANTIZE/DENSIFY {compute}, without DEQUANTIZE only "
      f"{total - counts.get('DEQUANTIZE', 0)}; conv GFLOP {conv_gflop(g):.3f}\n")
    for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        w(f"  {k:28s} {v}\n")

    w("operator codes (index: name builtin/deprecated version):\n")
    for i, c in enumerate(m.operatorCodes):
        nm = c.customCode.decode() if c.customCode else OPNAME.get(max(c.builtinCode, c.deprecatedBuiltinCode))
        w(f"  {i}: {nm} builtin={c.builtinCode} deprecated={c.deprecatedBuiltinCode} v{c.version}\n")

    # dtypes
    dt_all = Counter()
    for t in range(len(g.T)):
        kind = "const" if g.is_const(t) else "act"
        dt_all[(TTYPE[g.T[t].type], kind)] += 1
    w("tensor dtypes: " + ", ".join(f"{a}/{b}={c}" for (a, b), c in sorted(dt_all.items())) + "\n")
    quant = [t for t in range(len(g.T)) if g.T[t].quantization is not None and (
        g.T[t].quantization.scale is not None and len(g.T[t].quantization.scale))]
    w(f"tensors with quantization params: {len(quant)}\n")

    # weights: chains
    chains = Counter()
    for op in ops:
        n = g.name(op)
        if n in ("DEQUANTIZE", "DENSIFY"):
            continue
        for t in op.inputs:
            t = int(t)
            if t >= 0 and g.is_weight(t):
                chains[(n, " -> ".join(g.weight_chain(t)))] += 1
    w("weight/const inputs by consumer and producing chain:\n")
    for (n, ch), c in sorted(chains.items()):
        w(f"  {n:28s} {ch:45s} x{c}\n")
    # dequant of non-const?
    for op in ops:
        if g.name(op) == "DEQUANTIZE" and not g.is_weight(int(op.inputs[0])):
            w(f"  NOTE: DEQUANTIZE of a non-constant tensor #{op.inputs[0]}\n")

    # fp16 constants: subnormals must survive the fp16 -> fp32 conversion
    tot = sub = nonfin = 0
    for t in range(len(g.T)):
        if g.T[t].type == S.TensorType.FLOAT16 and g.is_const(t):
            v = np.asarray(g.const_value(t)).view(np.uint16).ravel()
            e = (v >> 10) & 0x1F
            tot += v.size
            sub += int(((e == 0) & ((v & 0x3FF) != 0)).sum())
            nonfin += int((e == 0x1F).sum())
    if tot:
        w(f"fp16 constant values: {tot}, subnormal {sub}, inf/nan {nonfin}\n")
    shared = []
    for op in ops:
        if g.name(op) in ("DEQUANTIZE", "DENSIFY"):
            o = int(op.outputs[0])
            cs = [c for c in g.consumers.get(o, []) if g.name(ops[c]) not in ("DEQUANTIZE", "DENSIFY")]
            if len(cs) > 1:
                v = g.weight_value(o)
                shared.append(f"{g.tname(o)}{g.shape(o)} x{len(cs)}"
                              + (" (all zero)" if v is not None and not np.any(v) else ""))
    for t in range(len(g.T)):
        if g.is_const(t) and len(g.consumers.get(t, [])) > 1:
            shared.append(f"{g.tname(t)}{g.shape(t)} x{len(g.consumers[t])}")
    w(f"constants shared by several ops: {len(shared)}" + (": " + "; ".join(shared) if shared else "") + "\n")

    # sparsity
    sparse = [t for t in range(len(g.T)) if g.T[t].sparsity is not None]
    w(f"sparse tensors: {len(sparse)}\n")
    sp_kinds = Counter()
    for t in sparse:
        sp = g.T[t].sparsity
        dims = []
        for dm in sp.dimMetadata:
            if dm.format == S.DimensionType.DENSE:
                dims.append(f"DENSE({dm.denseSize})")
            else:
                dims.append(f"CSR(seg:{enum_names(S.SparseIndexVector).get(dm.arraySegmentsType)},"
                            f"idx:{enum_names(S.SparseIndexVector).get(dm.arrayIndicesType)})")
        cons = [g.name(ops[c]) for c in g.consumers.get(t, [])]
        down = []
        for c in g.consumers.get(t, []):
            o = int(ops[c].outputs[0])
            down += [g.name(ops[c2]) for c2 in g.consumers.get(o, [])]
        final = []
        for c in g.consumers.get(t, []):
            o = int(ops[c].outputs[0])
            for c2 in g.consumers.get(o, []):
                o2 = int(ops[c2].outputs[0])
                final += [g.name(ops[c3]) for c3 in g.consumers.get(o2, [])]
        key = (TTYPE[g.T[t].type], len(g.shape(t)), f"order={[int(x) for x in sp.traversalOrder]}",
               f"blockMap={None if sp.blockMap is None else [int(x) for x in sp.blockMap]}",
               " ".join(dims), "->".join(cons), "->".join(down), "->".join(sorted(set(final))))
        sp_kinds[key] += 1
    for k, c in sp_kinds.items():
        w(f"  x{c}: dtype {k[0]} rank {k[1]} {k[2]} {k[3]} dims [{k[4]}] consumed by {k[5]} -> {k[6]} -> {k[7]}\n")
    # verify one sparse tensor densifies to the size claimed
    if sparse:
        t0 = sparse[0]
        dense = densify(g, t0)
        w(f"  example #{t0} {g.tname(t0)!r} shape {g.shape(t0)}: stored values {g.const_value(t0).size}, "
          f"dense {dense.size}, density {g.const_value(t0).size / dense.size:.3f}\n")
        dens = [g.const_value(t).size / int(np.prod(g.shape(t))) for t in sparse]
        w(f"  density over all sparse tensors: min {min(dens):.3f} max {max(dens):.3f} "
          f"mean {np.mean(dens):.3f}\n")

    # option combinations
    w("op option combinations (count  op  config):\n")
    combos = Counter()
    for op in ops:
        n = g.name(op)
        if n in ("DEQUANTIZE",):
            continue
        combos[(n, summarize_options(g, op))] += 1
    for (n, s), c in sorted(combos.items()):
        w(f"  {c:4d}  {n:26s} {s}\n")

    # raw builtin options per op type (distinct)
    w("distinct raw builtin options per op type:\n")
    raw = defaultdict(Counter)
    for op in ops:
        raw[g.name(op)][str(dict(opts_dict(op)))] += 1
    for n in sorted(raw):
        for s, c in raw[n].items():
            w(f"  {n:26s} x{c:<4d} {s}\n")

    # custom ops
    for i, op in enumerate(ops):
        code = m.operatorCodes[op.opcodeIndex]
        if code.customCode:
            co = bytes(np.asarray(op.customOptions, np.uint8)) if op.customOptions is not None else b""
            w(f"custom op #{i} {code.customCode.decode()} v{code.version} format="
              f"{CUSTOMFMT.get(op.customOptionsFormat)} options[{len(co)}]={co.hex()}\n")
            w(f"    inputs  {[(int(t), g.tname(int(t)), g.shape(int(t)), TTYPE[g.T[int(t)].type], 'w' if g.is_weight(int(t)) else 'x') for t in op.inputs]}\n")
            w(f"    outputs {[(int(t), g.tname(int(t)), g.shape(int(t))) for t in op.outputs]}\n")
            if op.customOptionsFormat == S.CustomOptionsFormat.FLEXBUFFERS and co and \
                    code.customCode != b"Convolution2DTransposeBias":
                try:
                    from flatbuffers import flexbuffers
                    w(f"    flexbuffer map: {flexbuffers.Loads(co)}\n")
                except Exception as e:  # noqa: BLE001
                    w(f"    (flexbuffer decode failed: {e})\n")
            if code.customCode == b"Convolution2DTransposeBias" and len(co) == 12:
                pad, sw, sh = struct.unpack("<iii", co)
                w(f"    NOT a flexbuffer despite format={CUSTOMFMT.get(op.customOptionsFormat)} (the enum's "
                  f"default 0): a raw little-endian C struct TfLiteTransposeConvParams{{int32 padding={pad} "
                  f"(1=SAME, 2=VALID), int32 stride_width={sw}, int32 stride_height={sh}}}\n")
    return {"name": name, "total": total, "compute": compute, "counts": counts,
            "gflop": conv_gflop(g), "combos": combos}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", type=Path, help=".tflite files (default: all 14 in --models-dir)")
    ap.add_argument("--models-dir", type=Path, default=REPO_ROOT / ".cache" / "models")
    ap.add_argument("--out", type=Path, help="also write the full text here")
    ap.add_argument("--ops-only", action="store_true",
                    help="print only the op-count table and the cross-model option summary")
    args = ap.parse_args(argv)
    paths = args.models or [args.models_dir / f"{n}.tflite" for n in MODELS]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print("describe_models: missing: " + ", ".join(map(str, missing))
              + " (run scripts/fetch_models.py)", file=sys.stderr)
        return 1
    buf = io.StringIO()
    rows = [describe(p, buf) for p in paths]

    table = io.StringIO()
    table.write(f"\n{'model':34s} {'total':>6s} {'no DQ/DS':>9s} {'no DQ':>6s} {'conv GFLOP':>10s}\n")
    for r in rows:
        c = r["counts"]
        table.write(f"{r['name']:34s} {r['total']:6d} {r['compute']:9d} {r['total'] - c.get('DEQUANTIZE', 0):6d} "
                    f"{r['gflop']:10.3f}\n")
    allc = Counter()
    for r in rows:
        allc.update(r["counts"])
    table.write("\nops over all models: " + ", ".join(f"{k} {v}" for k, v in sorted(allc.items(), key=lambda kv: -kv[1])) + "\n")

    # option combinations over all models, with the models that use each
    agg: dict = defaultdict(Counter)
    for r in rows:
        for key, c in r["combos"].items():
            agg[key][r["name"]] += c
    table.write("\nop option combinations over all models (count  op  config  [models]):\n")
    for (n, s_), per in sorted(agg.items(), key=lambda kv: (kv[0][0], -sum(kv[1].values()), kv[0][1])):
        table.write(f"  {sum(per.values()):4d}  {n:26s} {s_}  [{', '.join(f'{m}:{c}' for m, c in per.items())}]\n")

    text = table.getvalue() if args.ops_only else table.getvalue() + buf.getvalue()
    sys.stdout.write(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table.getvalue() + buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
