"""LSTM with ``kernel_type == BASIC`` (LSTMOptions.kernel_type 1): float32 and uint8 (8-bit in, 16-bit inside).

Five inputs: 0 input (B, I), 1 prev_activ (B, N), 2 weights (4N, I + N), 3 biases (4N,), 4 prev_state (B, N);
four outputs: 0 activ_out (B, N), 1 state_out (B, N), 2 concat_temp (B, I + N), 3 activ_temp (B, 4N). The
states are ordinary (not variable) inputs: the new state goes to outputs 0 and 1, and LiteRT's Eval then
copies them back over prev_activ and prev_state (``memcpy``; it also makes those two tensors arena-persistent),
so a second invoke without ``set_tensor`` continues the sequence; litert_py does the same copy. A constant
state input then has no data in LiteRT ("Input tensor 1 lacks data" at Invoke): refused at prepare. Gate
order in the fully-connected output: input, new input, forget, output::

    concat_temp = [x, h]
    activ_temp = concat_temp @ W^T + b
    i, g, f, o = sigmoid(a0), tanh(a1), sigmoid(a2), sigmoid(a3)
    state_out = i * g + f * prev_state;  activ_out = o * tanh(state_out)

uint8 (``BasicLstmQuantized``; the input, prev_activ and output activations are read as Q0.7 with zero point
128 whatever their quantization says, weights uint8 with their zero point, bias int32, states int16 with scale
2^-11, i.e. StateIntegerBits 4, the only one LiteRT accepts), bit-exact with the oracle::

    acc = bias + sum_k (concat_k - 128)(w_k - zw)                 # exact, summed by BLAS in float64
    activ_temp = sat16(requant(acc, accum_multiplier, accum_shift))     # Q3.12
    (M, shift) = QuantizeMultiplier(4096 * bias_scale)
    i, f, o = logistic_F3(a), g = tanh_F3(a)                      # gemmlowp int16 fixed point, Q0.15
    state_out = sat16(RDBPOT(SRDHM(i, g), 4) + SRDHM(f, prev_state))      # Q4.11
    activ_out = 128 + clamp(RDBPOT(SRDHM(o, tanh_F3(sat16(2 * state_out))), 8), -128, 127)

Both op resolvers run ``optimized_ops::LstmCell`` (lstm.cc calls it directly; BUILTIN_REF registers the same
kernel). Its GEMM is ruy on x86 (cpu_backend_gemm_x86.h) whose requantization differs from the reference
``reference_ops::LstmCell``'s MultiplyByQuantizedMultiplier at negative ties of the final shift: ruy
computes SRDHM and then a right shift that rounds ties *up* (RoundingDivideByPOT rounds them away from
zero). With nested floors that is ``requant(acc) = ((acc << max(shift, 0)) * M + 2^30 + 2^(30+rs)) >>
(31 + rs)``, ``rs = max(-shift, 0)`` (no ``2^(30+rs)`` term when ``rs == 0``), matched against the oracle's
activ_temp output; the reference formula disagreed with it on about 1 element in 30, and so did ruy's
documented single rounding ``(acc*M + 2^(30+rs)) >> (31+rs)``.
Everything after the GEMM is the scalar code of the reference (no NEON on x86). Speed: the input's zero point
is folded into a float64 bias at prepare (one exact BLAS product per invoke), and the fixed-point steps after
the GEMM are lookups in tables over all int16 values (``_tables``). Float: the oracle uses
Eigen's GEMM and Eigen's logistic and tanh approximations, so the float path agrees within a tolerance,
not bit for bit.

Checks, in LiteRT's words where LiteRT has them: the Prepare shape checks of lstm.cc (basic::Prepare), and
the type combination and power-of-two state scale checks that LiteRT makes only at Eval ("Unsupported
combination of data types for LstmCell", "The internal state of a LSTM cell must have a power-of-two scale.",
"The only case of quantized LstmCell currently supported is with StateIntegerBits==4"), here at prepare.

Sources matched: LiteRT tflite/kernels/lstm.cc (namespace basic: Prepare, Eval),
tflite/kernels/internal/reference/lstm_cell.h (LstmCell float and LstmCell<StateIntegerBits>),
tflite/kernels/internal/optimized/optimized_ops.h (LstmCell, the kernel that runs),
tflite/kernels/cpu_backend_gemm_x86.h and google/ruy apply_multiplier (the GEMM's requantization),
tflite/kernels/internal/quantization_util.cc (QuantizeMultiplier, CheckedLog2), gemmlowp
fixedpoint/fixedpoint.h (int16 logistic, tanh, SaturatingRoundingDoublingHighMul, RoundingDivideByPOT,
Rescale, SaturatingAdd).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...quant import quantize_multiplier
from ...quant.gemmlowp import checked_log2, tanh16_table
from ...quant.gemmlowp import logistic16_table as sigmoid16_table
from ..eigen_math import logistic_into
from ..registry import OpContext, PreparedOp

INPUT, PREV_ACTIV, WEIGHTS, BIASES, PREV_STATE = range(5)
ACTIV_OUT, STATE_OUT, CONCAT_TEMP, ACTIV_TEMP = range(4)
F32 = np.float32


def rdbpot(v: np.ndarray, e: int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: ``v / 2^e`` rounded to nearest, ties away from zero."""
    mask = (1 << e) - 1
    return (v >> e) + ((v & mask) > (mask >> 1) + (v < 0))


@functools.cache
def _tables() -> tuple[np.ndarray, ...]:
    """The fixed-point steps of the cell after the GEMM as lookup tables over every int16 value ``v``, stored
    so that ``table[v]`` (numpy's negative indexing) is the value at ``v``:

    * ``sig``: gemmlowp ``logistic`` of FixedPoint<int16, 3> (Q3.12 in, Q0.15 out);
    * ``tanh``: gemmlowp ``tanh`` of FixedPoint<int16, 3>;
    * ``state_tanh``: ``tanh(Rescale<3>(v))`` for a Q4.11 state ``v``: the saturating doubling, then tanh;
    * ``div16``: ``Rescale<4>`` of a Q0.15 product, i.e. RoundingDivideByPOT(v, 4);
    * ``to_u8``: ``128 + clamp(RoundingDivideByPOT(v, 8), -128, 127)`` as uint8, the output activation."""
    v = np.arange(-32768, 32768, dtype=np.int64)
    sig, tanh = sigmoid16_table(3), tanh16_table(3)  # indexed by v + 32768
    state_tanh = tanh[np.clip(2 * v, -32768, 32767) + 32768]
    div16 = rdbpot(v, 4)
    to_u8 = (np.clip(rdbpot(v, 8), -128, 127) + 128).astype(np.uint8)
    # roll by half the length: position v mod 65536 holds the value at v
    return tuple(np.roll(t, 32768) for t in (sig, tanh, state_tanh, div16, to_u8))


@dataclass(frozen=True, eq=False)
class BasicLstmFloat:
    """The float32 BASIC cell. ``weights_t``: (I + N, 4N) transposed weights, ``bias``: (4N,) (None: read
    at eval, the tensor is not constant). Like LiteRT's Eval it writes the new state back over the state
    inputs."""

    n_input: int
    n_output: int
    weights_t: np.ndarray | None
    bias: np.ndarray | None

    def __call__(self, inputs, outputs) -> None:
        ni, n = self.n_input, self.n_output
        activ, state, concat, temp = outputs
        concat[:, :ni] = inputs[INPUT]
        concat[:, ni:] = inputs[PREV_ACTIV]
        wt = self.weights_t if self.weights_t is not None else inputs[WEIGHTS].T
        np.matmul(concat, wt, out=temp)
        temp += self.bias if self.bias is not None else inputs[BIASES]
        sig = temp.copy()
        logistic_into(sig, sig)  # Eigen logistic; gates 0, 2, 3 (the sigmoid of gate 1, the new input, is unused)
        g = np.tanh(temp[:, n : 2 * n])
        np.multiply(sig[:, :n], g, out=state)
        np.multiply(sig[:, 2 * n : 3 * n], inputs[PREV_STATE], out=g)
        state += g
        np.tanh(state, out=activ)
        activ *= sig[:, 3 * n :]
        inputs[PREV_ACTIV][...] = activ  # lstm.cc: memcpy of the new state over the state inputs
        inputs[PREV_STATE][...] = state


@dataclass(frozen=True, eq=False)
class BasicLstmQuantized:
    """The uint8 BASIC cell (``LstmCell<4>``). ``weights_t``: (I + N, 4N) float64 ``w - zw``; ``bias``: (4N,)
    float64 ``bias - 128 * sum_k (w_k - zw)`` (the input zero point folded in), None when the weights or the
    bias are not constant (then both are read at eval); ``accum_multiplier`` / ``accum_shift``:
    QuantizeMultiplier(4096 * s_bias)."""

    n_input: int
    n_output: int
    weights_t: np.ndarray | None
    weights_zero_point: int
    bias: np.ndarray | None
    accum_multiplier: int
    accum_shift: int
    round_add: int  # requant(acc) = ((acc << max(shift, 0)) * M + round_add) >> round_shift (module docstring)
    round_shift: int

    def __call__(self, inputs, outputs) -> None:
        ni, n = self.n_input, self.n_output
        activ, state, concat, temp = outputs
        concat[:, :ni] = inputs[INPUT]
        concat[:, ni:] = inputs[PREV_ACTIV]
        if self.weights_t is not None:
            acc_f = concat @ self.weights_t
            acc_f += self.bias
        else:  # weights and bias at eval: the same two terms
            wt = inputs[WEIGHTS].T.astype(np.float64)
            wt -= self.weights_zero_point
            acc_f = concat @ wt
            acc_f += inputs[BIASES] - 128 * wt.sum(axis=0)
        # Every partial sum is an integer of magnitude < 2^53: the float64 sums are exact.
        acc = acc_f.astype(np.int64)
        if self.accum_shift > 0:
            acc <<= self.accum_shift
        acc *= self.accum_multiplier
        acc += self.round_add
        acc >>= self.round_shift
        np.maximum(acc, -32768, out=acc)
        np.minimum(acc, 32767, out=acc)
        temp[...] = acc
        sig_t, tanh_t, state_tanh_t, div16_t, to_u8_t = _tables()
        gates = sig_t.take(acc)  # (B, 4N) logistic of every gate (gate 1, the new input, uses tanh instead)
        # FixedPoint products are SRDHM, (a*b + 2^14) >> 15: the gate outputs are >= 0, so it never saturates.
        ig = tanh_t.take(acc[:, n : 2 * n])
        ig *= gates[:, :n]
        ig += 1 << 14
        ig >>= 15
        new = div16_t.take(ig)  # Rescale<4>(i * g)
        fc = np.multiply(inputs[PREV_STATE], gates[:, 2 * n : 3 * n])
        fc += 1 << 14
        fc >>= 15  # f * prev_state, Q4.11
        new += fc
        np.maximum(new, -32768, out=new)  # SaturatingAdd
        np.minimum(new, 32767, out=new)
        state[...] = new
        h = state_tanh_t.take(new)
        h *= gates[:, 3 * n :]
        h += 1 << 14
        h >>= 15  # o * tanh(state), Q0.15
        np.take(to_u8_t, h, out=activ)
        inputs[PREV_ACTIV][...] = activ  # lstm.cc: memcpy of the new state over the state inputs
        inputs[PREV_STATE][...] = state


def prepare_basic_lstm(ctx: OpContext) -> PreparedOp:
    """Prepare of lstm.cc ``basic``: shapes, then (at prepare, where LiteRT waits for Eval) the dtype path."""
    ctx.check(len(ctx.inputs) == 5, f"node->inputs->size != kInputNum ({len(ctx.inputs)} != 5)")
    ctx.check(len(ctx.outputs) == 4, f"node->outputs->size != kOutputNum ({len(ctx.outputs)} != 4)")
    x, h, w, b, c = (ctx.input(i) for i in range(5))
    ctx.check(len(x.shape) == 2, f"input->dims->size != 2 ({len(x.shape)} != 2)")
    n_batch, n_input = x.shape
    ctx.check(len(h.shape) == 2, f"prev_activation->dims->size != 2 ({len(h.shape)} != 2)")
    ctx.check(h.shape[0] == n_batch, f"prev_activation->dims->data[0] != num_batches ({h.shape[0]} != {n_batch})")
    n = h.shape[1]
    ctx.check(len(w.shape) == 2, f"weights->dims->size != 2 ({len(w.shape)} != 2)")
    ctx.check(w.shape[0] == 4 * n, f"weights->dims->data[0] != 4 * activation_depth ({w.shape[0]} != {4 * n})")
    ctx.check(w.shape[1] == n_input + n, f"weights->dims->data[1] != total_depth ({w.shape[1]} != {n_input + n})")
    ctx.check(len(b.shape) == 1, f"bias->dims->size != 1 ({len(b.shape)} != 1)")
    ctx.check(b.shape[0] == 4 * n, f"bias->dims->data[0] != 4 * activation_depth ({b.shape[0]} != {4 * n})")
    ctx.check(len(c.shape) == 2, f"prev_state->dims->size != 2 ({len(c.shape)} != 2)")
    ctx.check(c.shape[0] == n_batch, f"prev_state->dims->data[0] != num_batches ({c.shape[0]} != {n_batch})")
    ctx.check(c.shape[1] == n, f"prev_state->dims->data[1] != activation_depth ({c.shape[1]} != {n})")
    ctx.set_output_shape(ACTIV_OUT, h.shape)
    ctx.set_output_shape(STATE_OUT, c.shape)
    ctx.set_output_shape(CONCAT_TEMP, (n_batch, n_input + n))
    ctx.set_output_shape(ACTIV_TEMP, (n_batch, 4 * n))

    types = [t.dtype for t in (x, h, w, b, c)] + [
        ctx.outputs[i].dtype for i in (STATE_OUT, ACTIV_OUT, CONCAT_TEMP, ACTIV_TEMP)
    ]
    u8, i16, i32 = np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.int32)
    # LiteRT turns the state inputs into arena tensors; a constant one then has no data and Invoke fails.
    for t in (h, c):
        ctx.check(not t.is_constant, f"Input tensor {t.index} lacks data")
    if all(t == np.float32 for t in types):
        return BasicLstmFloat(
            n_input,
            n,
            None if w.data is None else np.ascontiguousarray(w.data.T, dtype=F32),
            None if b.data is None else np.array(b.data, F32),
        )
    ctx.check(types == [u8, u8, u8, i32, i16, i16, u8, u8, i16], "Unsupported combination of data types for LstmCell")
    pot, log2 = checked_log2(ctx.outputs[STATE_OUT].scale)
    ctx.check(pot, "The internal state of a LSTM cell must have a power-of-two scale.")
    ctx.check(15 + log2 == 4, "The only case of quantized LstmCell currently supported is with StateIntegerBits==4")
    m, shift = quantize_multiplier(4096 * float(F32(b.scale)))
    zw = int(w.zero_point)
    wt = bias = None
    if w.data is not None and b.data is not None:
        wt = w.data.T.astype(np.float64)
        wt -= zw
        bias = b.data.astype(np.float64) - 128 * wt.sum(axis=0)
    rs = max(-shift, 0)
    return BasicLstmQuantized(
        n_input, n, wt, zw, bias, int(m), int(shift), (1 << 30) + ((1 << (30 + rs)) if rs else 0), 31 + rs
    )
