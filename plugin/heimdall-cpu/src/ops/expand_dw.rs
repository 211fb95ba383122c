//! A 1x1 expansion and the depthwise convolution reading its output, run as one op
//! ([`crate::fuse_expand`]). Where a thread's share of the expanded tensor is large
//! ([`Mode::Rows`]) each thread takes a run of the depthwise output's rows and makes the
//! expansion rows they read as it goes, into a ring of rows in its scratch (the filter's
//! height of them, in the second-level cache), then the depthwise row from that ring: the
//! expanded tensor, the largest of an inverted residual block, never goes to memory (on
//! hand_landmark_lite's first block it is 3.2 MB written and read back). A thread's first rows
//! repeat the expansion rows its neighbour also makes (the filter's reach beyond its stride).
//! Where the share fits in the second-level cache anyway ([`Mode::Apart`]: on 4 threads
//! hand_landmark_lite's 3.2 MB is 0.8 MB a thread) the two ops run one after the other, the
//! expanded tensor in scratch: the repeated rows and the short matrix products of single rows
//! cost more there than the traffic they save (measured on the device host, docs/peers.md).
//! Either way every value is computed as by the two ops run apart
//! ([`PackedConv::direct_rows`], [`PackedDepthwise::output_row`]), so the output has their bits
//! at every thread count. Where half-precision kernels are wanted for the expansion and the core
//! has them (`crate::CpuPrecision::F16`) the pair runs apart with the f16 expansion, as the two
//! ops would.

use std::ops::Range;

use heimdall_ir::{Activation, Op, OpKind};

use crate::kernels::par::Tile;
use crate::kernels::window::valid_taps;
use crate::kernels::{Act, Epilogue, Par, Window};
use crate::ops::conv::PackedConv;
use crate::ops::conv::fp16::{self, F16Conv};
use crate::ops::depthwise::{InputRows, PackedDepthwise};
use crate::step::{Kernel, PrepareCx, Prepared, StepIo};

/// Multiply-accumulates a part must have at least before the rows are split over threads.
const MIN_MACS_PER_PART: usize = 1 << 16;

/// Most parts a split makes.
const MAX_PARTS: usize = 64;

/// Fewest values of the expanded tensor per thread for [`Mode::Rows`] (1 MiB of `f32`: half
/// the second-level cache of the x86 hosts measured, more than a phone core's).
pub(crate) const ROWS_MIN_VALUES_PER_THREAD: usize = 1 << 18;

/// How [`ExpandDw`] runs the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each thread makes the expansion rows its depthwise rows read, into a ring of rows.
    Rows,
    /// The expansion whole into scratch, then the depthwise convolution: the two ops' own
    /// splits.
    Apart,
}

impl Mode {
    /// The mode for an expanded tensor of `values` values on `threads` threads: rows where a
    /// thread's share is at least [`ROWS_MIN_VALUES_PER_THREAD`].
    pub fn for_threads(values: usize, threads: usize) -> Mode {
        if values / threads.max(1) >= ROWS_MIN_VALUES_PER_THREAD {
            Mode::Rows
        } else {
            Mode::Apart
        }
    }
}

/// A 1x1 stride-1 unpadded convolution (the expansion) followed by a depthwise convolution of
/// its output.
pub struct ExpandDw {
    pw: PackedConv,
    /// The expansion in half precision, where wanted and the core has it (then
    /// [`Mode::Apart`]).
    pw16: Option<F16Conv>,
    pw_act: Act<'static>,
    dw: PackedDepthwise,
    mode: Mode,
}

impl ExpandDw {
    /// The pair of `pw` (its output activated by `pw_act`, no residual) and `dw`, which reads
    /// its output, run as `mode` says.
    pub fn new(pw: PackedConv, pw_act: Act<'static>, dw: PackedDepthwise, mode: Mode) -> ExpandDw {
        let (p, d) = (pw.window(), dw.window());
        assert!(
            pw.is_pointwise()
                && (p.out_h, p.out_w, p.out_c) == (d.in_h, d.in_w, d.in_c)
                && d.in_c == d.out_c,
            "expand dw: {p:?} then {d:?}"
        );
        ExpandDw {
            pw,
            pw16: None,
            pw_act,
            dw,
            mode,
        }
    }

    /// The same pair with the expansion in half precision (`pw16`, the same convolution),
    /// run apart.
    fn with_f16_expansion(self, pw16: F16Conv) -> ExpandDw {
        assert_eq!(pw16.window(), self.pw.window(), "expand dw: f16 expansion");
        ExpandDw {
            pw16: Some(pw16),
            mode: Mode::Apart,
            ..self
        }
    }

    /// Values of the expanded tensor.
    fn expanded_len(&self) -> usize {
        let d = self.dw.window();
        d.in_h * d.in_w * d.in_c
    }

    /// Rows of the expansion's output the ring holds: the depthwise filter's reach.
    fn slots(&self) -> usize {
        let d = self.dw.window();
        ((d.k_h.max(1) - 1) * d.dil_h + 1).min(d.in_h.max(1))
    }

    /// Values of one expanded row.
    fn row_len(&self) -> usize {
        let d = self.dw.window();
        d.in_w * d.in_c
    }

    /// Values of scratch [`ExpandDw::run`] needs on `threads` threads: a ring of expanded
    /// rows per thread ([`Mode::Rows`]) or the expanded tensor ([`Mode::Apart`]).
    pub fn scratch_len(&self, threads: usize) -> usize {
        match self.mode {
            Mode::Rows => threads.max(1) * self.slots() * self.row_len(),
            Mode::Apart => {
                let f16 =
                    (self.pw16.as_ref()).map_or(0, |k| fp16::scratch_len(k.window(), threads));
                self.expanded_len() + f16
            }
        }
    }

    /// `output = ep(dw(pw_act(pw(input))))`: `input` the expansion's input, `output` the
    /// depthwise convolution's, `scratch` at least [`ExpandDw::scratch_len`] values for
    /// `par`'s threads.
    pub fn run(
        &self,
        par: &Par,
        input: &[f32],
        output: &mut [f32],
        scratch: &mut [f32],
        ep: &Epilogue,
    ) {
        let (p, d) = (self.pw.window(), self.dw.window());
        assert!(
            input.len() >= p.in_h * p.in_w * p.in_c
                && output.len() == d.out_h * d.out_w * d.out_c
                && scratch.len() >= self.scratch_len(1),
            "expand dw: buffers of the wrong size"
        );
        if output.is_empty() {
            return;
        }
        let pw_ep = Epilogue {
            residual: None,
            act: self.pw_act,
        };
        if self.mode == Mode::Apart {
            let (expanded, rest) = scratch.split_at_mut(self.expanded_len());
            let input = &input[..p.in_h * p.in_w * p.in_c];
            match &self.pw16 {
                Some(k) => k.run(par, input, expanded, rest, &pw_ep),
                None => self.pw.run(par, input, expanded, &mut [], &pw_ep),
            }
            self.dw.run(par, expanded, output, ep);
            return;
        }
        let parts = self.parts(par);
        let mut cuts = [0usize; MAX_PARTS + 1];
        for (i, cut) in cuts[..=parts].iter_mut().enumerate() {
            *cut = d.out_h * i / parts;
        }
        let per_part = self.slots() * self.row_len();
        par.for_cuts_scratch(
            output,
            d.out_w * d.out_c,
            &cuts[..=parts],
            scratch,
            per_part,
            |rows, out, ring| self.band(input, rows, out, ring, (&pw_ep, ep)),
        );
    }

    /// Parts of the output rows on `par`: one a thread (each part repeats the expansion rows
    /// its window shares with the part before), fewer where the rows or the work are few.
    fn parts(&self, par: &Par) -> usize {
        let (p, d) = (self.pw.window(), self.dw.window());
        let work = p.in_h * p.in_w * p.in_c * p.out_c + d.out_h * d.out_w * d.out_c * d.k_h * d.k_w;
        par.threads()
            .min(d.out_h)
            .min(work / MIN_MACS_PER_PART)
            .clamp(1, MAX_PARTS)
    }

    /// Output rows `rows` into `out` (from the first row's first pixel), their expansion rows
    /// made into `ring` as the rows need them.
    fn band(
        &self,
        input: &[f32],
        rows: Range<usize>,
        out: &mut [f32],
        ring: &mut [f32],
        (pw_ep, ep): (&Epilogue, &Epilogue),
    ) {
        let (p, d) = (*self.pw.window(), *self.dw.window());
        let (slots, row_len) = (self.slots(), self.row_len());
        let ring = &mut ring[..slots * row_len];
        let in_row = p.in_w * p.in_c;
        let mut tile = Tile::whole(out, d.out_c);
        // The next expansion row to make: rows below it are in the ring or no longer read.
        let mut next = None;
        for oy in rows.clone() {
            let (ky_lo, ky_hi) = valid_taps(oy, d.stride_h, d.dil_h, d.pad_top, d.in_h, d.k_h);
            if ky_lo < ky_hi {
                let lo = oy * d.stride_h + ky_lo * d.dil_h - d.pad_top;
                let hi = oy * d.stride_h + (ky_hi - 1) * d.dil_h - d.pad_top + 1;
                let mut iy = next.map_or(lo, |n: usize| n.max(lo));
                while iy < hi {
                    // A run of rows that are consecutive in the ring: one matrix product.
                    let slot = iy % slots;
                    let n = (hi - iy).min(slots - slot);
                    self.pw.direct_rows(
                        &input[iy * in_row..(iy + n) * in_row],
                        iy * p.in_w..(iy + n) * p.in_w,
                        &mut ring[slot * row_len..(slot + n) * row_len],
                        pw_ep,
                    );
                    iy += n;
                }
                next = Some(next.map_or(hi, |n: usize| n.max(hi)));
            }
            let src = InputRows::ring(ring, row_len, slots);
            let first = (oy - rows.start) * d.out_w;
            self.dw.output_row(src, oy, &mut tile, first, ep);
        }
    }
}

impl Kernel for ExpandDw {
    fn run(&self, io: StepIo<'_>) {
        ExpandDw::run(self, io.par, io.inputs.get(0), io.out, io.scratch, io.ep);
    }
}

/// Prepares a DEPTHWISE_CONV_2D (`cx`, its input 0 the expansion's input) with the 1x1
/// CONV_2D `pw` before it ([`crate::fuse_expand`]), the expansion in half precision where
/// `pw_f16` asks for it and the core has it (as the convolution alone would run).
pub(crate) fn prepare(cx: &PrepareCx, pw: &Op, pw_f16: bool) -> Result<Prepared, String> {
    let OpKind::DepthwiseConv2d { attrs, .. } = &cx.op.kind else {
        return Err("an expansion fused into an op that is not a depthwise convolution".into());
    };
    let (x, e) = (
        cx.graph.tensor(pw.inputs[0]).shape.clone(),
        cx.graph.tensor(pw.outputs[0]).shape.clone(),
    );
    let (&[_, h, w, c], &[_, eh, ew, mid]) = (&x[..], &e[..]) else {
        return Err("a fused expansion of a tensor that is not [1, H, W, C]".into());
    };
    if (eh, ew) != (h, w) {
        return Err("a fused expansion that changes the image's size".into());
    }
    let pw_act = match pw.epilogue.activation {
        Activation::None => Act::None,
        Activation::Unary(u) => Act::of(u).ok_or("a fused expansion's activation")?,
        Activation::Prelu(_) => return Err("a fused expansion's PReLU".into()),
    };
    if pw.epilogue.residual.is_some() {
        return Err("a fused expansion with a residual".into());
    }
    let pw_w = Window {
        in_h: h,
        in_w: w,
        in_c: c,
        out_h: h,
        out_w: w,
        out_c: mid,
        k_h: 1,
        k_w: 1,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        pad_top: 0,
        pad_left: 0,
    };
    let constant = |i: usize| match cx.graph.tensor(pw.inputs[i]).constant.as_ref() {
        Some(k) if k.sparsity.is_none() => Ok(&k.values[..]),
        _ => Err(format!(
            "a fused expansion's input {i} is not a dense constant"
        )),
    };
    let pw_bias = if pw.inputs.len() > 2 {
        Some(constant(2)?)
    } else {
        None
    };
    let pw16 = if pw_f16 {
        F16Conv::new(constant(1)?, pw_bias, pw_w)
    } else {
        None
    };
    let pw_k = PackedConv::new(constant(1)?, pw_bias, pw_w);
    // The depthwise convolution as the graph has it: reading the expansion's output.
    let mut dw_op = cx.op.clone();
    dw_op.inputs[0] = pw.outputs[0];
    let dcx = PrepareCx {
        graph: cx.graph,
        op: &dw_op,
        threads: cx.threads,
        reflect_pad: None,
        pad_output: None,
        channel_padded: None,
        tail: None,
        expansion: None,
        f16: false,
    };
    let f = dcx.shape(1);
    let dw_w = dcx.window([f[1], f[2]], attrs);
    if dw_w.in_c != dw_w.out_c {
        return Err("a fused expansion before a depthwise multiplier".into());
    }
    let dw_k = PackedDepthwise::new(dcx.constant(1)?, dcx.bias(2)?, dw_w);
    let mode = Mode::for_threads(h * w * mid, cx.threads);
    let k = ExpandDw::new(pw_k, pw_act, dw_k, mode);
    let f16 = pw16.is_some();
    let k = match pw16 {
        Some(k16) => k.with_f16_expansion(k16),
        None => k,
    };
    let scratch = k.scratch_len(cx.threads);
    Ok(Prepared {
        f16,
        ..Prepared::with_scratch(k, scratch)
    })
}

#[cfg(test)]
mod tests;
