"""LSTM, integer 8x8_8 kernel: int8 input, int8 weights, int8 output_state, int16 cell state (scale 2^-15), int32
biases, int16 layer-norm coefficients and 12 intermediate tensors, bit-exact with LiteRT's reference.

LiteRT picks this kernel for an int8 LSTM (full kernel) with 12 intermediates (5 select 8x8_16, see lstm.py; any
other count is refused). Only LSTM has it: UNIDIRECTIONAL_SEQUENCE_LSTM requires exactly 5 intermediates
("num_intermediate_tensors == 5 was not true.", refused in lstm.py's build_integer_cell).

The intermediates hold, per gate (input 0-2, forget 3-5, cell 6-8, output 9-11), the scale of ``Wx + Wh`` and
the int8 scale / zero point of ``Wx`` and of ``Wh``. One step (LstmStepInteger8x8_8), for gates f, c, o::

    sx = sat8(mbqm(W_x (x - zx), eff_x) + zp_x)           # MatrixBatchVectorMultiply, int8 out
    sh = sat8(mbqm(W_h (h - zh), eff_h) + zp_h)
    G  = sat16(mbqm(sx - zp_x, s_x / s_sum) + mbqm(sh - zp_h, s_h / s_sum))   # TwoGateSaturatingAdd
    G  = ApplyLayerNormFloat(G)  (float32 mean / variance, round(... * 2^12))
    f, o = sigmoid (float32, Q3.12 -> Q0.15);  g = tanh (float32, Q3.12 -> Q0.15)
    c  = sat16(w16(rdbpot(f c, 15)) + w16(rdbpot((32767 - f) g, 15)))  [clip]
    h  = sat8(mbqm64(proj_bias + W_p w16(rdbpot(o tanh(c), 15)), s_p 2^-15 / s_h) + zh)  [clip]
    output = h

LiteRT's kernel as it is, reproduced (not corrected):
- it is always CIFG (``i = 1 - f``, "no-CIFG is not supported here"): input-gate weights, bias, layer norm and
  every peephole weight are checked by Prepare but never read;
- the output gate's recurrent product is rescaled with ``intermediate_scale_a[11]`` (past the end of the
  8-entry array: ``intermediate_scale_b[3]``, a shift, used as the multiplier), ``intermediate_scale_b[7]`` and
  the cell gate's zero point ``intermediate_zp[7]`` instead of ``intermediate_zp[11]``;
- Prepare ignores the status of PopulateQuantizedLstmParams8x8_8: a cell state scale other than 1/32768 is
  accepted, and then both clips are off (the check returns before they are computed); a cell clip is only used
  when it is in (0, 1);
- the layer norm's ``static_cast<int32_t>(round(y))`` keeps the low 32 bits of a 64-bit conversion (as the
  wheel is compiled): a negative float32 variance (rounding, e.g. equal gate values) gives NaN, hence 0;
- sigmoid and tanh are float32 (``expf`` / ``tanhf`` of the C library: tabulated here over all 65536 int16
  inputs through the same libm; numpy's own float32 exp/tanh differ in the last bit).
LiteRT crashes (segmentation fault) without layer norm, without projection weights, without a projection bias,
or with an intermediate that has no quantization parameters: litert_py refuses those models at prepare.

Sources matched: LiteRT tflite/kernels/lstm.cc (Prepare, CheckInputTensorDimensions,
PopulateQuantizedLstmParams8x8_8, Eval), tflite/kernels/lstm_eval.h (IntegerLstmParameter layout),
tflite/kernels/lstm_eval.cc (EvalInteger8x8_8, LstmStepInteger8x8_8, CalculateLstmGateInteger8x8_8,
UpdateLstmCellInteger, CalculateLstmOutputInteger8x8_8), tflite/kernels/internal/reference/
portable_tensor_utils.cc (PortableMatrixBatchVectorMultiply (int8 and int16 inputs), PortableTwoGateSaturatingAdd,
PortableApplyLayerNormFloat, PortableApplySigmoidFloat, PortableApplyTanhFloat, PortableCwiseMul,
PortableCwiseAdd, PortableSub1Vector, PortableCwiseClipping; sse_tensor_utils.h maps all of them to the portable
versions on x86), tflite/kernels/internal/common.h (MultiplyByQuantizedMultiplier, int32 and int64 overloads).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...libm import libm_float
from ...quant import multiply_by_quantized_multiplier_int64, quantize_multiplier, wrap32
from ...quant.gemmlowp import wrap16 as w16
from ..registry import OpContext, TensorInfo
from .lstm_common import BIAS, CELL_STATE, IN_W, LN, OUT_STATE, PEEP_W, PROJ_B, PROJ_W, REC_W, mbqm, rdbpot

F32 = np.float32
#: gate -> (intermediate index of Wx + Wh, of Wx, of Wh)
INTER = {"i": (0, 1, 2), "f": (3, 4, 5), "c": (6, 7, 8), "o": (9, 10, 11)}


# -------------------------------------------------------------------------------------------------------------
# float32 activations over every int16 input (PortableApplySigmoidFloat / PortableApplyTanhFloat)
# -------------------------------------------------------------------------------------------------------------


_EXPF = libm_float("expf")
_TANHF = libm_float("tanhf")


def _to_q15(y: np.ndarray) -> np.ndarray:
    """``static_cast<int32_t>(y * 2^15)`` (truncation) clamped to int16."""
    return np.clip(np.trunc(y * F32(32768)).astype(np.int64), -32768, 32767)


@functools.cache
def sigmoid_float_table() -> np.ndarray:
    """PortableApplySigmoidFloat for every int16 input (index raw + 32768): ``1 / (1 + expf(-x 2^-12))``."""
    x = np.arange(-32768, 32768).astype(F32) * F32(2.0**-12)
    e = _EXPF(-x)
    return _to_q15(F32(1) / (F32(1) + e))


@functools.cache
def tanh_float_table(integer_bits: int) -> np.ndarray:
    """PortableApplyTanhFloat(integer_bits) for every int16 input: ``tanhf(x 2^integer_bits)``."""
    x = (np.arange(-32768, 32768) * 2.0**integer_bits).astype(F32)
    return _to_q15(_TANHF(x))


# -------------------------------------------------------------------------------------------------------------
# The kernel
# -------------------------------------------------------------------------------------------------------------


def _w8(z: int) -> int:
    """An int32 zero point passed as ``int8_t`` (wraps)."""
    return ((int(z) + 128) & 0xFF) - 128


def _mvm(v: np.ndarray, zp: int, wt: np.ndarray, m: tuple, out_zp: int) -> np.ndarray:
    """PortableMatrixBatchVectorMultiply (int8 input): ``sat8(mbqm(sum (v - zp) w, m) + out_zp)``."""
    acc = np.matmul(v.astype(np.float64) - zp, wt).astype(np.int64)  # exact: |acc| < 2^53
    return np.clip(mbqm(acc, *m) + out_zp, -128, 127)


@dataclass(frozen=True, eq=False)
class Gate8:
    wx: np.ndarray  # (n_input, n_cell) float64 holding the int8 weights
    m_x: tuple
    zp_x: int  # int8 zero point of Wx (already wrapped)
    wh: np.ndarray  # (n_output, n_cell)
    m_h: tuple
    zp_h: int
    m_sx: tuple  # TwoGateSaturatingAdd's rescale of Wx, of Wh
    m_sh: tuple
    ln: np.ndarray  # float32 (n_cell,): the int16 coefficients
    ln_scale: np.float32
    bias: np.ndarray  # float32 (n_cell,): the int32 bias as float
    bias_scale: np.float32
    table: np.ndarray  # int64 (65536,): the activation

    def __call__(self, x: np.ndarray, zx: int, h: np.ndarray, zh: int) -> np.ndarray:
        sx = _mvm(x, zx, self.wx, self.m_x, self.zp_x)
        sh = _mvm(h, zh, self.wh, self.m_h, self.zp_h)
        g = mbqm(sx - self.zp_x, *self.m_sx) + mbqm(sh - self.zp_h, *self.m_sh)
        g = np.clip(g, -32768, 32767)
        return self.table[self._layer_norm(g) + 32768]

    def _layer_norm(self, g: np.ndarray) -> np.ndarray:
        """PortableApplyLayerNormFloat: float32 sums in element order, ``round(... * 2^12)`` saturated to int16."""
        v = g.astype(F32)
        n = F32(v.shape[1])
        s = np.add.accumulate(v, axis=1, dtype=F32)[:, -1]
        s2 = np.add.accumulate(v * v, axis=1, dtype=F32)[:, -1]
        mean = s / n
        var = s2 / n - mean * mean
        with np.errstate(invalid="ignore", divide="ignore"):
            inv = np.where(var == 0, F32(1) / np.sqrt(F32(1e-8)), F32(1) / np.sqrt(var)).astype(F32)
            y = (v - mean[:, None]) * inv[:, None]
            y = y * self.ln * self.ln_scale + self.bias * self.bias_scale
            y = y * F32(4096)
            r = np.trunc(y) + np.copysign(np.abs(y - np.trunc(y)) >= F32(0.5), y)  # round half away from zero
            # static_cast<int32_t>(round(y)) is compiled as a 64-bit lround whose low 32 bits are kept: NaN (a
            # negative float32 variance) and infinities give LONG_MIN, i.e. 0 (measured against the wheel)
            ok = np.isfinite(r) & (np.abs(r) < 2.0**63)
            r = wrap32(np.where(ok, r, 0).astype(np.int64))
        return np.clip(r, -32768, 32767)


@dataclass(frozen=True, eq=False)
class LstmInteger8x8_8:
    """LSTM (full kernel), int8 x int8 -> int8 gates, int16 cell state at 2^-15 (LstmStepInteger8x8_8)."""

    gates: dict  # "f", "c", "o" -> Gate8
    z_in: int
    z_out_state: int
    cell_clip: int
    proj: np.ndarray  # (n_cell, n_output) float64 holding the int8 projection weights
    proj_bias: np.ndarray  # int64 (n_output,)
    m_proj: tuple
    proj_clip: int
    n_cell: int
    n_output: int

    def __call__(self, inputs, outputs):
        x = inputs[0]
        n_batch = x.shape[0]
        h_state = inputs[OUT_STATE].reshape(n_batch, self.n_output)
        c_state = inputs[CELL_STATE].reshape(n_batch, self.n_cell)
        zx, zh = self.z_in, self.z_out_state
        h = h_state.astype(np.int64)
        c = c_state.astype(np.int64)
        fg = self.gates["f"](x, zx, h, zh)
        cg = self.gates["c"](x, zx, h, zh)
        # UpdateLstmCellInteger(cell_state_scale=-15, use_cifg=true): CwiseMul wraps to int16, CwiseAdd saturates
        c = np.clip(w16(rdbpot(fg * c, 15)) + w16(rdbpot((32767 - fg) * cg, 15)), -32768, 32767)
        if self.cell_clip > 0:
            c = np.clip(c, -self.cell_clip, self.cell_clip)
        og = self.gates["o"](x, zx, h, zh)
        # CalculateLstmOutputInteger8x8_8
        t = w16(rdbpot(og * tanh_float_table(-15)[c + 32768], 15))
        acc = np.matmul(t.astype(np.float64), self.proj).astype(np.int64) + self.proj_bias
        hn = np.clip(multiply_by_quantized_multiplier_int64(acc, *self.m_proj) + zh, -128, 127)
        if self.proj_clip > 0:
            hn = np.clip(hn, -self.proj_clip, self.proj_clip)
        c_state[...] = c
        h_state[...] = hn
        outputs[0][...] = hn


def _scale(t: TensorInfo) -> np.float32:
    return F32(t.scale)


def prepare_lstm_8x8_8(ctx: OpContext, ins: list, use_ln: bool) -> LstmInteger8x8_8:
    """Prepare of lstm.cc for an int8 input with 12 intermediates (CheckInputTensorDimensions with is_integer,
    PopulateQuantizedLstmParams8x8_8). ``ins``: the 24 full-kernel inputs (TensorInfo or None)."""
    opts = ctx.options
    x = ins[0]
    n_batch, n_input = x.shape
    w_o = ins[IN_W["o"]]
    ctx.check(w_o is not None and len(w_o.shape) == 2, "input_to_output_weights->dims->size != 2")
    n_cell = w_o.shape[0]
    ctx.check(w_o.shape[1] == n_input, "input_to_output_weights->dims->data[1] != n_input")
    r_o = ins[REC_W["o"]]
    ctx.check(r_o is not None and len(r_o.shape) == 2, "recurrent_to_output_weights->dims->size != 2")
    ctx.check(r_o.shape[0] == n_cell, "recurrent_to_output_weights->dims->data[0] != n_cell")
    n_output = r_o.shape[1]
    # CheckInputTensorDimensions (is_integer)
    ctx.check(opts.cell_clip >= 0, "params->cell_clip >= 0 was not true.")
    ctx.check(opts.proj_clip >= 0, "params->proj_clip >= 0 was not true.")
    cifg = ins[IN_W["i"]] is None
    ctx.check(cifg == (ins[REC_W["i"]] is None), "cifg_weights_all_or_none == true was not true.")
    gates = ("f", "c", "o") if cifg else ("i", "f", "c", "o")
    for g in gates:
        for t, k in ((ins[IN_W[g]], n_input), (ins[REC_W[g]], n_output)):
            ctx.check(t is not None and t.shape == (n_cell, k), f"{t and t.name}: dims must be ({n_cell}, {k})")
    for t in [ins[IN_W[g]] for g in gates] + [ins[REC_W[g]] for g in gates] + [ins[PROJ_W]]:
        if t is not None:
            ctx.check(
                t.dtype == np.int8, f"{t.name}: litert_py's 8x8_8 integer LSTM needs INT8 weights, got {t.type_name}"
            )
            ctx.check(
                t.is_constant and bool(t.quantization.scale),
                f"{t.name}: integer LSTM weights must be constant and quantized",
            )
    for g in ("i", "f", "o"):
        t = ins[PEEP_W[g]]
        if t is not None:
            ctx.check(t.shape == (n_cell,), f"{t.name}: cell_to_{g} weights must be ({n_cell},)")
            ctx.check(t.dtype == np.int16, f"{t.name}: integer peephole weights must be INT16, got {t.type_name}")
    c_i, c_f, c_o = (ins[PEEP_W[g]] is not None for g in ("i", "f", "o"))
    ctx.check(
        ((c_i or cifg) and c_f and c_o) or not (c_i or c_f or c_o), "peephole_weights_all_or_none == true was not true."
    )
    if cifg:
        ctx.check(ins[BIAS["i"]] is None, "input_gate_bias == nullptr was not true.")
    for g in gates:
        t = ins[BIAS[g]]
        ctx.check(t is not None and t.shape == (n_cell,), f"{g} gate bias must have shape ({n_cell},)")
        ctx.check(t.dtype == np.int32, f"{t.name}: integer gate biases must be INT32, got {t.type_name}")
        ctx.check(t.is_constant, f"{t.name}: litert_py's LSTM kernels need constant biases")
    pw, pb = ins[PROJ_W], ins[PROJ_B]
    if pw is not None:
        ctx.check(pw.shape == (n_output, n_cell), f"projection_weights must be ({n_output}, {n_cell})")
    if pb is not None:
        ctx.check(
            pb.shape == (n_output,) and pb.dtype == np.int32 and pb.is_constant,
            f"projection_bias must be a constant INT32 ({n_output},)",
        )
    ctx.check(pw is not None or pb is None, "projecton_tensors_consistent == true was not true.")
    if use_ln:
        if cifg:
            ctx.check(ins[LN["i"]] is None, "input_layer_norm_coefficients == nullptr was not true.")
        for g in gates:
            t = ins[LN[g]]
            ctx.check(t is not None, f"{g}_layer_norm_coefficients != nullptr was not true.")
            ctx.check(
                t.shape == (n_cell,) and t.dtype == np.int16 and t.is_constant,
                f"{t.name}: layer-norm coefficients must be constant INT16 ({n_cell},)",
            )
    h_state, c_state, out = ins[OUT_STATE], ins[CELL_STATE], ctx.outputs[0]
    ctx.check(
        h_state is not None and h_state.is_variable and c_state is not None and c_state.is_variable,
        "output_state and cell_state must be variable tensors",
    )
    ctx.check(h_state.size == n_batch * n_output, "NumElements(output_state) != n_batch * n_output")
    ctx.check(c_state.size == n_batch * n_cell, "NumElements(cell_state) != n_batch * n_cell")
    ctx.check(
        h_state.dtype == np.int8 and c_state.dtype == np.int16 and out.dtype == np.int8,
        "litert_py: the 8x8_8 integer LSTM needs an INT8 output_state and output and an INT16 cell_state",
    )
    # where LiteRT's 8x8_8 kernel dereferences a null pointer
    crash = "litert_py: refused, LiteRT's 8x8_8 integer LSTM (12 intermediates) crashes on it"
    ctx.check(use_ln, f"{crash}: it needs layer-norm coefficients")
    ctx.check(pw is not None, f"{crash}: it needs projection weights")
    ctx.check(pb is not None, f"{crash}: it needs a projection bias")
    inter = ctx.intermediates
    for t in inter:
        ctx.check(
            bool(t.quantization.scale) and bool(t.quantization.zero_point),
            f"{crash}: intermediate {t.name} has no quantization parameters",
        )
    for t in (x, h_state, c_state, out):
        ctx.check(bool(t.quantization.scale), f"{t.name}: litert_py needs quantization parameters")

    s = [F32(t.scale) for t in inter]
    zp = [int(t.zero_point) for t in inter]
    s_in, s_os = _scale(x), _scale(h_state)

    def qm(v, what: str, lo: int = -31, hi: int = 31) -> tuple:
        m, e = quantize_multiplier(float(v))
        ctx.check(lo <= e <= hi, f"litert_py: the {what} scale {float(v)!r} is out of range")
        return m, e

    # the TwoGateSaturatingAdd rescales, in IntegerLstmParameter's intermediate_scale_a / _b order
    pairs = [
        qm(F32(s[a] / s[b]), f"intermediate {a}/{b}")
        for a, b in ((1, 0), (2, 0), (4, 3), (5, 3), (7, 6), (8, 6), (10, 9), (11, 9))
    ]
    scale_a = [p[0] for p in pairs] + [p[1] for p in pairs]  # intermediate_scale_a[8] then _b[8], contiguous
    scale_b = [p[1] for p in pairs]
    # LstmStepInteger8x8_8's arguments per gate: (pair index of Wx, of Wh, zp of Wx, zp of Wh); the output gate
    # reads intermediate_scale_a[11] (= intermediate_scale_b[3]) and intermediate_zp[7]
    step_args = {
        "f": ((scale_a[2], scale_b[2]), (scale_a[3], scale_b[3]), zp[4], zp[5]),
        "c": ((scale_a[4], scale_b[4]), (scale_a[5], scale_b[5]), zp[7], zp[8]),
        "o": ((scale_a[6], scale_b[6]), (scale_a[11], scale_b[7]), zp[10], zp[7]),
    }
    tables = {"f": sigmoid_float_table(), "c": tanh_float_table(-12), "o": sigmoid_float_table()}
    gate_objs = {}
    for g in ("f", "c", "o"):
        _, kx, kh = INTER[g]
        wx, wh, ln = ins[IN_W[g]], ins[REC_W[g]], ins[LN[g]]
        m_sx, m_sh, zp_x, zp_h = step_args[g]
        ln_m, ln_e = quantize_multiplier(float(_scale(ln)))
        ln_scale = F32(ln_m * 2.0 ** (ln_e - 31))
        gate_objs[g] = Gate8(
            np.ascontiguousarray(wx.data.astype(np.float64).T),
            qm(F32(_scale(wx) * s_in) / s[kx], f"{g} Wx"),
            _w8(zp_x),
            np.ascontiguousarray(wh.data.astype(np.float64).T),
            qm(F32(_scale(wh) * s_os) / s[kh], f"{g} Wh"),
            _w8(zp_h),
            m_sx,
            m_sh,
            ln.data.astype(F32),
            ln_scale,
            ins[BIAS[g]].data.astype(F32),
            F32(2.0**-10) * ln_scale,
            tables[g],
        )
    m_proj = quantize_multiplier(float(F32(float(_scale(pw)) * 2.0**-15 / float(s_os))))
    ctx.check(-31 <= m_proj[1] <= 14, "litert_py: the projection scale is out of range")
    cell_clip = proj_clip = 0
    if float(F32(c_state.scale)) == 1.0 / 32768:  # else Populate returned early (ignored) with the clips at 0
        cc, pc = F32(opts.cell_clip), F32(opts.proj_clip)
        if 0 < cc < 1:
            cell_clip = int(np.trunc(min(max(cc / _scale(c_state), F32(-32768)), F32(32767))))
        if pc > 0:
            proj_clip = int(np.trunc(min(max(pc / _scale(out), F32(-128)), F32(127))))
    ctx.set_output_shape(0, (n_batch, n_output))
    return LstmInteger8x8_8(
        gate_objs,
        int(x.zero_point),
        int(h_state.zero_point),
        cell_clip,
        np.ascontiguousarray(pw.data.astype(np.float64).T),
        pb.data.astype(np.int64),
        m_proj,
        proj_clip,
        n_cell,
        n_output,
    )
