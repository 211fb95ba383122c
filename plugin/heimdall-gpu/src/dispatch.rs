//! What a kernel builder sees and produces: the op and its context ([`OpContext`]: the graph,
//! storage precisions, the device's tuning, the model's constant buffers) and the compute
//! [`Dispatch`]es it turns the op into (composed source, uniform parameters, operands, work-group
//! count), plus the shape helpers the builders share.

use heimdall_ir::{Activation, Graph, Op, TensorId};

use crate::layout::Phwc4;
use crate::params::ShaderParams;
use crate::precision::Precision;
use crate::wgsl::{EpilogueAct, EpilogueDecl, KernelSource, WORKGROUP_SIZE};

/// A buffer bound to a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A tensor of the graph (an activation planned in a slot).
    Tensor(TensorId),
    /// A constant buffer of the model (weights, bias, alpha, constant inputs): its index.
    Const(usize),
}

/// A constant buffer's contents.
#[derive(Clone, Debug)]
pub struct ConstBuffer {
    /// What it is, for labels.
    pub label: String,
    /// Bytes to upload.
    pub bytes: Vec<u8>,
}

/// One compute dispatch of a step.
#[derive(Clone, Debug)]
pub struct Dispatch {
    /// The kernel's composition.
    pub source: KernelSource,
    /// Uniform parameter bytes (binding 0).
    pub params: Vec<u8>,
    /// Buffers for bindings 1.., in order (kernel, then epilogue).
    pub operands: Vec<Operand>,
    /// Number of work groups (folded into 2-D at encode time).
    pub workgroups: u32,
    /// Which output pixels each work group writes, where the kernel's thread order is known:
    /// the convolution cache can then skip work groups ([`crate::conv_cache`]).
    pub tiles: Option<TileMap>,
}

/// Which output pixels (of a `[1, H, W, C]` output) work group `g` of a dispatch writes: the
/// kernels' thread orders, for the convolution cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileMap {
    /// Thread `t = g * threads + lid` (`t < total`) handles column block `t % col_blocks` (of
    /// `bx` columns), row `(t / col_blocks) % out_h`, and a slice (block) above that.
    Rows {
        /// Threads per work group.
        threads: u32,
        /// Threads of the dispatch.
        total: u32,
        /// Column blocks per row.
        col_blocks: u32,
        /// Columns per block.
        bx: u32,
    },
    /// Work group `g` handles flat pixels (`y * W + x`) `(g % pixel_tiles) * tile_pixels ..`
    /// `+ tile_pixels` (of every slice it computes).
    PixelTiles {
        /// Pixel tiles.
        pixel_tiles: u32,
        /// Pixels per tile.
        tile_pixels: u32,
    },
}

impl TileMap {
    /// The map's numbers as `cache_tiles.wgsl` reads them: rows `[threads, total, col_blocks,
    /// bx]`, pixel tiles `[pixel_tiles, tile_pixels, 0, 0]`.
    pub fn words(&self) -> [u32; 4] {
        match *self {
            TileMap::Rows {
                threads,
                total,
                col_blocks,
                bx,
            } => [threads, total, col_blocks, bx],
            TileMap::PixelTiles {
                pixel_tiles,
                tile_pixels,
            } => [pixel_tiles, tile_pixels, 0, 0],
        }
    }
}

impl Dispatch {
    /// A dispatch of `source` with uniform parameters `params` (whose layout `source` declares),
    /// binding `operands`, over `workgroups` work groups.
    pub fn new<P: ShaderParams>(
        source: KernelSource,
        params: &P,
        operands: Vec<Operand>,
        workgroups: u32,
    ) -> Dispatch {
        debug_assert_eq!(
            source.params,
            Some(P::LAYOUT),
            "{}: the source declares other parameters",
            source.name
        );
        Dispatch {
            source,
            params: params.to_bytes(),
            operands,
            workgroups,
            tiles: None,
        }
    }

    /// This dispatch with its work groups' output pixels described by `tiles`.
    pub fn with_tiles(mut self, tiles: TileMap) -> Dispatch {
        self.tiles = Some(tiles);
        self
    }

    /// A [`TileMap::Rows`] dispatch of one thread per output vec4 (columns fastest, then rows,
    /// then slices) over `total` threads.
    pub fn with_vec4_rows(self, total: usize, out_w: usize) -> Dispatch {
        let (Ok(total), Ok(col_blocks)) = (u32::try_from(total), u32::try_from(out_w)) else {
            return self;
        };
        self.with_tiles(TileMap::Rows {
            threads: WORKGROUP_SIZE,
            total,
            col_blocks,
            bx: 1,
        })
    }
}

/// Work groups needed for `items` threads.
pub fn groups_for(items: usize) -> u32 {
    items.div_ceil(WORKGROUP_SIZE as usize) as u32
}

/// What kernel builders see: the graph, the op, storage precisions, and the constants store.
pub struct OpContext<'a> {
    /// The graph.
    pub graph: &'a Graph,
    /// The op being built.
    pub op: &'a Op,
    /// Storage precision of every tensor.
    pub precisions: &'a [Precision],
    /// Precision of this op's weights and constant inputs.
    pub weights: Precision,
    /// Blocking choices for the device (family, work-group sizes, outputs per thread).
    pub tuning: crate::context::Tuning,
    /// Constant buffers of the model; builders append.
    pub consts: &'a mut Vec<ConstBuffer>,
}

impl OpContext<'_> {
    /// The shape of input `i`.
    pub fn in_shape(&self, i: usize) -> Result<&[usize], String> {
        self.op
            .inputs
            .get(i)
            .map(|t| self.graph.tensor(*t).shape.as_slice())
            .ok_or_else(|| format!("missing input {i}"))
    }

    /// The PHWC4 geometry of input `i`.
    pub fn in_geom(&self, i: usize) -> Result<Phwc4, String> {
        Phwc4::of(self.in_shape(i)?).map_err(|e| e.to_string())
    }

    /// The op's (single) output tensor.
    pub fn output(&self) -> Result<TensorId, String> {
        match self.op.outputs.as_slice() {
            [o] => Ok(*o),
            _ => Err(format!("{} outputs, expected 1", self.op.outputs.len())),
        }
    }

    /// The PHWC4 geometry of the output.
    pub fn out_geom(&self) -> Result<Phwc4, String> {
        Phwc4::of(&self.graph.tensor(self.output()?).shape).map_err(|e| e.to_string())
    }

    /// Storage precision of the output.
    pub fn out_precision(&self) -> Result<Precision, String> {
        Ok(self.precisions[self.output()?.index()])
    }

    /// The dense constant values of input `i` (weights), or an error naming it.
    pub fn constant(&self, i: usize) -> Result<&[f32], String> {
        let id = *self.op.inputs.get(i).ok_or(format!("missing input {i}"))?;
        let t = self.graph.tensor(id);
        match &t.constant {
            Some(c) if c.sparsity.is_none() => Ok(&c.values),
            Some(_) => Err(format!(
                "input {i} ('{}') is sparse: run the passes",
                t.name
            )),
            None => Err(format!(
                "input {i} ('{}') must be a constant (weights computed at run time are not supported on the GPU)",
                t.name
            )),
        }
    }

    /// Adds a constant buffer and returns its operand.
    pub fn add_const(&mut self, label: String, bytes: Vec<u8>) -> Operand {
        self.consts.push(ConstBuffer { label, bytes });
        Operand::Const(self.consts.len() - 1)
    }

    /// Bias of `channels` output channels from input `i` (zeros if absent), one f32 vec4 per
    /// slice.
    pub fn bias(&mut self, i: usize, channels: usize) -> Result<Operand, String> {
        let mut v = vec![0.0f32; 4 * channels.div_ceil(4).max(1)];
        if self.op.inputs.len() > i {
            let b = self.constant(i)?;
            if b.len() != channels {
                return Err(format!("bias has {} values, expected {channels}", b.len()));
            }
            v[..channels].copy_from_slice(b);
        }
        Ok(self.add_const("bias".into(), Precision::F32.encode(&v)))
    }

    /// An input as an operand with its precision and geometry: tensors bind their slot,
    /// constants are uploaded in PHWC4 at the op's weight precision.
    pub fn input_operand(&mut self, i: usize) -> Result<(Operand, Precision, Phwc4), String> {
        let id = *self.op.inputs.get(i).ok_or(format!("missing input {i}"))?;
        let g = self.in_geom(i)?;
        if self.graph.tensor(id).constant.is_some() {
            let values = g.pack(self.constant(i)?);
            let p = self.weights;
            let op = self.add_const(format!("constant input {i}"), p.encode(&values));
            Ok((op, p, g))
        } else {
            Ok((Operand::Tensor(id), self.precisions[id.index()], g))
        }
    }

    /// The op's fused epilogue and the operands it binds (residual tensor, PReLU alphas).
    pub fn epilogue(&mut self) -> Result<(EpilogueDecl, Vec<Operand>), String> {
        let ep = self.op.epilogue;
        let mut operands = Vec::new();
        let residual = match ep.residual {
            Some(r) if self.graph.tensor(r).constant.is_some() => {
                // A constant residual (ONNX: a bias added after a conv, fused as a residual):
                // uploaded in the output's PHWC4 geometry at the weights' precision.
                let t = self.graph.tensor(r);
                let g = Phwc4::of(&t.shape).map_err(|e| e.to_string())?;
                if g != self.out_geom()? {
                    return Err(format!(
                        "constant residual {:?} for output {:?}",
                        t.shape,
                        self.out_geom()?
                    ));
                }
                let values = match &t.constant {
                    Some(c) if c.sparsity.is_none() => g.pack(&c.values),
                    _ => return Err(format!("residual '{}' must be a dense constant", t.name)),
                };
                let p = self.weights;
                operands.push(self.add_const("constant residual".into(), p.encode(&values)));
                Some(p)
            }
            Some(r) => {
                operands.push(Operand::Tensor(r));
                Some(self.precisions[r.index()])
            }
            None => None,
        };
        let act = match ep.activation {
            Activation::None => EpilogueAct::None,
            Activation::Unary(u) => EpilogueAct::Unary(u),
            Activation::Prelu(a) => {
                let c = self.out_geom()?.c;
                let alpha = self.alpha_values(a, c)?;
                operands.push(self.add_const("prelu alpha".into(), Precision::F32.encode(&alpha)));
                EpilogueAct::Prelu
            }
        };
        Ok((EpilogueDecl { residual, act }, operands))
    }

    /// PReLU alphas broadcast to one f32 vec4 per slice of `c` channels.
    fn alpha_values(&self, a: TensorId, c: usize) -> Result<Vec<f32>, String> {
        let t = self.graph.tensor(a);
        let values = match &t.constant {
            Some(k) if k.sparsity.is_none() => &k.values,
            _ => return Err(format!("PReLU alpha '{}' must be a dense constant", t.name)),
        };
        let mut v = vec![0.0f32; 4 * c.div_ceil(4).max(1)];
        match values.len() {
            1 => v[..c].fill(values[0]),
            n if n == c => v[..c].copy_from_slice(values),
            n => return Err(format!("PReLU alpha of {n} values for {c} channels")),
        }
        Ok(v)
    }

    /// The matrix input `i` as an operand: a tensor binds its slot in its own precision, a constant
    /// is uploaded in f32 (not at the weights' precision: its translation column is in pixels).
    pub fn matrix_operand(&mut self, i: usize) -> Result<(Operand, Precision), String> {
        let g = self.in_geom(i)?;
        if g != MATRIX {
            return Err(format!(
                "the matrix input must be [1, 4, 4], got {:?}",
                self.in_shape(i)?
            ));
        }
        let id = self.op.inputs[i];
        if self.graph.tensor(id).constant.is_some() {
            let values = g.pack(self.constant(i)?);
            let op = self.add_const("matrix".into(), Precision::F32.encode(&values));
            Ok((op, Precision::F32))
        } else {
            Ok((Operand::Tensor(id), self.precisions[id.index()]))
        }
    }
}

/// The geometry of a 4×4 matrix (`[1, 4, 4]`, `[4, 4]` or `[1, 1, 4, 4]`).
pub const MATRIX: Phwc4 = Phwc4 { h: 1, w: 4, c: 4 };

/// Right-aligns a per-axis list of rank ≤ 4 into 4 axes, filling leading axes with `fill`.
pub fn align4<T: Copy>(v: &[T], fill: T) -> Result<[T; 4], String> {
    if v.len() > 4 {
        return Err(format!("rank {} > 4", v.len()));
    }
    let mut out = [fill; 4];
    out[4 - v.len()..].copy_from_slice(v);
    Ok(out)
}

/// `u32` of a size, or an error when it does not fit.
pub fn u32_of(v: usize) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("size {v} does not fit in 32 bits"))
}

/// A shape of rank ≤ 4 right-aligned into 4 axes (leading axes of size 1), as `u32`.
pub fn dims4(shape: &[usize]) -> Result<[u32; 4], String> {
    let d = align4(shape, 1)?;
    Ok([u32_of(d[0])?, u32_of(d[1])?, u32_of(d[2])?, u32_of(d[3])?])
}

/// Fails unless the leading (batch) axis of a right-aligned shape is 1.
pub fn batch_one(shape: &[usize]) -> Result<(), String> {
    let d = align4(shape, 1)?;
    if d[0] != 1 {
        return Err(format!(
            "shape {shape:?}: the GPU backend needs batch 1 and rank ≤ 4"
        ));
    }
    Ok(())
}
