"""Building the 8x8_16 integer LSTM cell (lstm_integer.py's LstmIntegerCell) from the full kernel's inputs and
its 5 intermediates: PopulateQuantizedLstmParams8x8_16 and PopulatePrecomputedZPTimesWeightsWithBias
(unidirectional_sequence_lstm.cc / lstm.cc), with Prepare's checks. The ops and the sources are in lstm.py."""

from __future__ import annotations

import numpy as np

from ...quant import quantize_multiplier
from ..registry import OpContext, TensorInfo
from .lstm_common import (
    BIAS,
    CELL_STATE,
    F32,
    GATES,
    IN_W,
    LN,
    OUT_STATE,
    PEEP_W,
    PROJ_B,
    PROJ_W,
    REC_W,
    lstm_sizes,
)
from .lstm_integer import IntGate, LstmIntegerCell


def _scale(t: TensorInfo | None) -> np.float32:
    return F32(t.scale) if t is not None else F32(1)


def build_integer_cell(
    ctx: OpContext, ins: list, opts, use_ln: bool, out: TensorInfo, rowwise: bool
) -> LstmIntegerCell:
    """PopulateQuantizedLstmParams8x8_16 and PopulatePrecomputedZPTimesWeightsWithBias (unidirectional_sequence_
    lstm.cc / lstm.cc) for int8 input, int8 weights, int16 cell state, 5 intermediates."""
    ctx.check(len(ctx.intermediates) == 5, "num_intermediate_tensors == 5 was not true.")
    x, h_state, c_state = ins[0], ins[OUT_STATE], ins[CELL_STATE]
    n_input, n_cell, n_output = lstm_sizes(ctx, ins, diagonal_ok=False)
    cifg = ins[IN_W["i"]] is None
    ctx.check(cifg == (ins[REC_W["i"]] is None), "cifg_weights_all_or_none == true was not true.")
    ctx.check(opts.cell_clip >= 0, "params->cell_clip >= 0 was not true.")
    ctx.check(opts.proj_clip >= 0, "params->proj_clip >= 0 was not true.")
    gates = GATES[1:] if cifg else GATES
    for t in [ins[IN_W[g]] for g in gates] + [ins[REC_W[g]] for g in gates] + [ins[PROJ_W]]:
        if t is not None:
            ctx.check(
                t.dtype == np.int8 and t.is_constant and bool(t.quantization.scale),
                f"{t.name}: integer LSTM weights must be constant quantized INT8",
            )
    for g in gates:
        ctx.check(
            ins[IN_W[g]].shape == (n_cell, n_input) and ins[REC_W[g]].shape == (n_cell, n_output),
            f"{g} gate weights must be (n_cell, n_input) and (n_cell, n_output)",
        )
        b = ins[BIAS[g]]
        ctx.check(
            b is not None and b.dtype == np.int32 and b.is_constant and b.shape == (n_cell,),
            f"{g} gate bias must be a constant INT32 (n_cell,)",
        )
    c_i, c_f, c_o = (ins[PEEP_W[g]] is not None for g in ("i", "f", "o"))
    ctx.check(
        ((c_i or cifg) and c_f and c_o) or not (c_i or c_f or c_o), "peephole_weights_all_or_none == true was not true."
    )
    peephole = c_o
    for t in ins[9:12] + ins[20:24]:
        if t is not None:
            ctx.check(
                t.dtype == np.int16 and t.is_constant and t.shape == (n_cell,),
                f"{t.name}: peephole / layer-norm weights must be constant INT16 (n_cell,)",
            )
    if peephole:
        ctx.check(n_output <= n_cell, "litert_py: integer peephole LSTM needs n_output <= n_cell")
    pw, pb = ins[PROJ_W], ins[PROJ_B]
    ctx.check(pw is not None or pb is None, "projecton_tensors_consistent == true was not true.")
    if pw is not None:
        ctx.check(pw.shape == (n_output, n_cell), "projection_weights must be (n_output, n_cell)")
        ctx.check(
            pb is None or (pb.dtype == np.int32 and pb.is_constant and pb.shape == (n_output,)),
            "projection_bias must be a constant INT32 (n_output,)",
        )
    else:
        ctx.check(n_output == n_cell, "without projection n_output must equal n_cell")
    ctx.check(
        h_state is not None and h_state.is_variable and c_state is not None and c_state.is_variable,
        "output_state and cell_state must be variable tensors",
    )
    ctx.check(
        h_state.dtype == np.int8 and c_state.dtype == np.int16 and out.dtype == np.int8,
        "integer LSTM needs an INT8 output_state and output and an INT16 cell_state",
    )
    for t in (x, h_state, c_state, out):
        ctx.check(bool(t.quantization.scale), f"{t.name}: quantization.type != kTfLiteNoQuantization")
    cs_f = float(F32(c_state.scale))
    cs = int(round(np.log2(cs_f)))
    ctx.check(cs_f > 0 and 2.0**cs == cs_f, "CheckedLog2(cell_state->params.scale, &cell_scale) was not true.")
    ctx.check(0 <= 15 + cs <= 6, "litert_py: the cell state scale must be 2^-15 .. 2^-9")
    inter = ctx.intermediates
    for t in inter[:4] if use_ln else inter[4:]:
        ctx.check(bool(t.quantization.scale), "intermediate->quantization.type != kTfLiteNoQuantization")
    ctx.check(bool(inter[4].quantization.scale), "hidden->quantization.type != kTfLiteNoQuantization")
    s_int = [_scale(inter[k]) if use_ln else F32(2.0**-12) for k in range(4)]
    s_h, z_h = F32(inter[4].scale), inter[4].zero_point
    s_in, s_os = _scale(x), _scale(h_state)
    zi, zos = x.zero_point, h_state.zero_point

    def qm(v) -> tuple:
        return quantize_multiplier(float(F32(v)))

    def rowsum(t):
        return t.data.astype(np.int64).sum(axis=1)

    gate_objs = {}
    for k, g in enumerate(GATES):
        if g not in gates:
            continue
        wx, wh = ins[IN_W[g]], ins[REC_W[g]]
        bias = ins[BIAS[g]].data.astype(np.int64)
        eff_x = (0 if use_ln else bias) + (-zi) * rowsum(wx)
        eff_h = (-zos) * rowsum(wh)
        pw_g = ins[PEEP_W[g]] if peephole and g != "c" else None
        m_p = (0, 0)
        if pw_g is not None:
            m_p = quantize_multiplier(float(F32(2.0**cs * float(_scale(pw_g)) / float(s_int[k]))))
        ln = ins[LN[g]] if use_ln else None
        m_ln = quantize_multiplier(float(_scale(ln))) if ln is not None else (0, 0)
        ctx.check(  # MultiplyByQuantizedMultiplier(., scale_a, scale_b + 12): a shift past 31 is undefined in LiteRT
            m_ln[1] + 12 <= 31,
            f"the layer-norm multiplier {float(_scale(ln)) if ln is not None else 0.0} of gate {g} is too large for"
            f" LiteRT's 32-bit fixed point (shift {m_ln[1] + 12})",
        )
        guard = variance_guard(_scale(ln)) if ln is not None else 1
        gate_objs[g] = IntGate(
            np.ascontiguousarray(wx.data.astype(np.int64).T),
            eff_x.astype(np.int64),
            qm(F32(_scale(wx) * s_in) / s_int[k]),
            np.ascontiguousarray(wh.data.astype(np.int64).T),
            eff_h.astype(np.int64),
            qm(F32(_scale(wh) * s_os) / s_int[k]),
            None if pw_g is None else pw_g.data.astype(np.int64)[:n_output],
            m_p,
            None if ln is None else ln.data.astype(np.int64),
            None if ln is None else bias,
            m_ln,
            guard,
        )
    m_hidden = quantize_multiplier(float(F32(2.0**-15 / float(s_h) * 2.0**-15)))
    proj = proj_eff = None
    m_proj = (0, 0)
    if pw is not None:
        proj = np.ascontiguousarray(pw.data.astype(np.int64).T)
        proj_eff = (pb.data.astype(np.int64) if pb is not None else 0) + z_h * rowsum(pw)
        proj_eff = np.broadcast_to(np.asarray(proj_eff, np.int64), (n_output,)).copy()
        m_proj = qm(F32(_scale(pw) * s_h) / s_os)
    cell_clip = (
        int(np.trunc(min(max(F32(opts.cell_clip) / F32(c_state.scale), F32(-32768)), F32(32767))))
        if opts.cell_clip > 0
        else 0
    )
    proj_clip = (
        int(np.trunc(min(max(F32(opts.proj_clip) / _scale(out), F32(-128)), F32(127)))) if opts.proj_clip > 0 else 0
    )
    return LstmIntegerCell(
        gate_objs, cs, cell_clip, proj_clip, m_hidden, z_h, proj, proj_eff, m_proj, zos, n_cell, n_output, rowwise
    )


def variance_guard(ln_scale) -> int:
    """PopulateQuantizedLstmParams8x8_16's layer-norm variance guard ``std::max(1, static_cast<int32_t>(10000 *
    scale))``, the product in float32. Past int32 (and for inf / NaN) x86's truncating conversion gives INT32_MIN
    (the "integer indefinite" value), so the guard is 1, as LiteRT's wheel computes it (measured against
    BUILTIN_REF: tests/ops/recurrent/test_lstm_integer_guard.py)."""
    with np.errstate(over="ignore", invalid="ignore"):
        g = np.float32(10000) * np.float32(ln_scale)
    return max(1, int(g)) if g < 2.0**31 else 1  # NaN fails the test too
