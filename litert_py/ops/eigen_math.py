"""Bit-exact numpy emulations of Eigen's float32 ``tanh`` and ``logistic`` as LiteRT's x86-64 wheel runs them.

Where LiteRT uses them: ``optimized_ops::Tanh`` / ``optimized_ops::Logistic`` for float32 (the TANH and LOGISTIC
ops under the BUILTIN and BUILTIN_WITHOUT_DEFAULT_DELEGATES resolvers; BUILTIN_REF uses reference/tanh.h,
logistic.h instead, and AUTO hands the op to XNNPACK, both different again), and the LSTM / RNN kernels'
``tensor_utils::ApplyTanhToVector`` / ``ApplySigmoidToVector`` (tflite/kernels/internal/tensor_utils.h:
``Eigen::Map<Eigen::Vector<float, Dynamic>>(...).array().tanh()`` / ``.logistic()``).

Eigen sources matched (gitlab.com/libeigen/eigen, after commit 32d95bb0 of Aug 2024 "Add vectorized
implementation of tanh<double>" and 74dcfbbd "Use ppolevl ..."; the algorithms are unchanged up to 2026):

- tanh: ``ptanh_float`` under EIGEN_FAST_MATH (Eigen/src/Core/arch/Default/GenericPacketMathTrig.h, formerly
  GenericPacketMathFunctions.h): clamp to +-7.90738964080810547 (the non-FMA constant), then the rminimax 9/8
  rational ``(x^3 * P(x^2) + x) / Q(x^2)`` with Horner steps ``pmadd(acc, x2, c)``. The scalar path (tails)
  is the same function on scalars, so every element follows the packet formula.
- logistic: ``scalar_logistic_op<float>`` (Eigen/src/Core/functors/UnaryFunctors.h). The packet path halves x
  (clamped above at 16.6355324), computes exp(x/2) by Cephes range reduction, a degree 5 polynomial and
  ``pldexp_fast``, squares it and returns ``e / (1 + e)`` (0 below -104). The scalar path, used for the
  elements Eigen's LinearVectorizedTraversal leaves outside whole packets, is
  ``e = std::exp(min(x, 16.6355324f)); e / (1 + e)``, i.e. the C library's ``expf``.

Every ``pmadd`` is a separate multiply and add (the wheel is built without FMA: the tanh clamp at which the
output first reaches exactly 1, 7.9073896, is the non-FMA constant, and the unfused emulation matches while a
fused one does not). Packets are 4 floats wide (SSE); a buffer aligned to 16 bytes (TFLite's arena aligns
tensors to 64) is processed in whole packets and its last ``n % 4`` elements by the scalar path. A buffer
starting ``offset`` floats past a 16-byte boundary first runs ``(4 - offset % 4) % 4`` elements through the
scalar path (``internal::first_aligned``). LSTM gate buffers are such: lstm_eval.cc's gate scratch buffers start
k * n_cell * n_batch floats into the scratch tensor (k = 0..3 for input, cell, forget, output gates; CIFG:
cell, forget, output at 0, 1, 2), so pass ``offset=k * n_cell * n_batch``.

Evidence: equal bit for bit to ai-edge-litert 2.3.0 (x86-64 Linux wheel, BUILTIN_WITHOUT_DEFAULT_DELEGATES
resolver) on all 2^32 float32 bit patterns, for both functions (NaN payloads included; logistic in whole
packets), on every tensor length 1..40 with values whose packet and scalar logistic differ, and through
UNIDIRECTIONAL_SEQUENCE_LSTM's output gate (ApplySigmoidToVector) at every offset mod 4, plain and CIFG, under
BUILTIN_REF and BUILTIN_WITHOUT_DEFAULT_DELEGATES (tests/ops/test_eigen_math.py). The scalar tail of
logistic calls the machine's libm ``expf`` through ctypes, as the wheel does (numpy's float32 exp differs from
glibc's in the last bit for some inputs); without a C library numpy's float32 exp is used.
"""

from __future__ import annotations

import numpy as np

from ..libm import libm_float

__all__ = ["eigen_logistic", "eigen_tanh", "PACKET_SIZE"]

F32 = np.float32
PACKET_SIZE = 4
_CHUNK = 8192  # elements per vectorized pass over big arrays

# ptanh_float (EIGEN_FAST_MATH, no EIGEN_VECTORIZE_FMA): clamp and rminimax [9/8] coefficients, highest first.
_TANH_CLAMP = np.array(7.90738964080810547, F32)  # 0-d arrays: a numpy scalar operand costs ~0.5 us a ufunc call
_TANH_NEG_CLAMP = -_TANH_CLAMP
_TANH_ALPHA = tuple(np.array(v, F32) for v in (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1))
_TANH_BETA = tuple(np.array(v, F32) for v in (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0))

# scalar_logistic_op<float>::packetOp constants.
_LOG_EXP_HI = np.array(16.6355324, F32)
_LOG_EXP_LO = np.array(-104.0, F32)
_HALF = np.array(0.5, F32)
_ONE = np.array(1.0, F32)
_LOG2EF = np.array(1.44269504088896341, F32)
_EXP_C1 = np.array(-0.693359375, F32)
_EXP_C2 = np.array(2.12194440e-4, F32)
_EXP_P2 = np.array(0.49999141693115234375, F32)
_EXP_P3 = np.array(0.16666877269744873046875, F32)
_EXP_P4 = np.array(4.1898667812347412109375e-2, F32)
_BIAS_127, _ZERO = np.array(127.0, F32), np.array(0.0, F32)
_EXP_P5 = np.array(8.33471305668354034423828125e-3, F32)


def _check_out(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    if out is None:
        return np.empty(x.shape, F32)
    if out.dtype != F32 or out.shape != x.shape or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float32 array of shape {x.shape}")
    return out


def eigen_tanh(x, out: np.ndarray | None = None) -> np.ndarray:
    """Eigen ``ptanh_float`` of float32 ``x`` elementwise (every element, packet or tail, takes this path).

    ``out`` (C-contiguous float32, x's shape) receives the result when given; it may be ``x`` itself.
    """
    x = np.asarray(x, F32)
    out = _check_out(x, out)
    with np.errstate(invalid="ignore"):  # signalling NaN inputs raise "invalid"
        if x.size <= _CHUNK:
            _tanh(x, out)
        else:  # cache-sized pieces: the ~20 passes below then stay in L2
            xf, of = x.reshape(-1), out.reshape(-1)
            for i in range(0, xf.size, _CHUNK):
                _tanh(xf[i : i + _CHUNK], of[i : i + _CHUNK])
    return out


def _tanh(x: np.ndarray, out: np.ndarray) -> None:
    # Clamp: np.minimum / np.maximum propagate NaN as minps/maxps do with Eigen's operand order here.
    c = np.minimum(x, _TANH_CLAMP)
    np.maximum(c, _TANH_NEG_CLAMP, out=c)
    x2 = c * c
    p = x2 * _TANH_ALPHA[0]
    for a in _TANH_ALPHA[1:-1]:  # ppolevl: p = p * x2 + a, rounded after each operation
        p += a
        p *= x2
    p += _TANH_ALPHA[-1]
    q = x2 * _TANH_BETA[0]
    for b in _TANH_BETA[1:-1]:
        q += b
        q *= x2
    q += _TANH_BETA[-1]
    # p = pmadd(x3, p, x) with x3 = x2 * x
    x2 *= c
    p *= x2
    p += c
    np.divide(p, q, out=out)


def _logistic_packet(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``scalar_logistic_op<float>::packetOp`` elementwise (into ``out``, a new float32 array by default).
    Overflow / underflow / invalid warnings are the caller's to silence (the kernels run inside np.errstate)."""
    zero = x < _LOG_EXP_LO  # before out (which may be x) is written
    v = np.minimum(x, _LOG_EXP_HI)
    v *= _HALF
    m = v * _LOG2EF
    m += _HALF
    np.floor(m, out=m)
    r = m * _EXP_C1
    r += v
    t = m * _EXP_C2
    r += t
    r2 = r * r
    pe = r2 * _EXP_P4
    pe += _EXP_P2
    po = r2 * _EXP_P5
    po += _EXP_P3
    po *= r
    po += pe  # p = pmadd(r, p_odd, p_even)
    po *= r2
    r += _ONE
    po += r  # p = pmadd(r2, p, r + 1)
    # pldexp_fast: multiply by 2^m built from the biased exponent m + 127. Eigen clamps it to [0, 255]; for
    # x >= -104 it lies in [52, 139] already, and other lanes are NaN (p is NaN) or zeroed below.
    m += _BIAS_127
    scale = (m.astype(np.int32) << 23).view(F32)
    po *= scale
    po *= po  # exp(x) = exp(x / 2)^2
    den = po + _ONE
    out = np.divide(po, den, out=out)
    np.copyto(out, _ZERO, where=zero)
    return out


_EXPF = libm_float("expf")


def _logistic_scalar(x: np.ndarray) -> np.ndarray:
    """``scalar_logistic_op<float>::operator()``: ``e = expf(min(x, hi)); e / (1 + e)`` (a few elements)."""
    x = np.asarray(x, F32)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        e = _EXPF(np.where(x > _LOG_EXP_HI, _LOG_EXP_HI, x))  # std::min(x, hi) keeps a NaN x
        return e / (e + F32(1.0))  # float32 arithmetic, elementwise as the scalar code


def eigen_logistic(x, out: np.ndarray | None = None, offset: int = 0) -> np.ndarray:
    """Eigen ``array().logistic()`` of float32 ``x`` as one contiguous buffer (C order).

    The elements in whole 4-float packets take the packet path; the ``(4 - offset % 4) % 4`` leading ones
    (``offset``: floats from the previous 16-byte boundary to the buffer start; 0 for TFLite tensors) and the
    trailing remainder take the scalar ``expf`` path. ``out`` (C-contiguous float32, x's shape) may be ``x``.
    """
    x = np.asarray(x, F32)
    out = _check_out(x, out)
    xf, of = x.reshape(-1), out.reshape(-1)
    n = xf.size
    start = min((PACKET_SIZE - offset % PACKET_SIZE) % PACKET_SIZE, n)
    end = start + (n - start) // PACKET_SIZE * PACKET_SIZE
    head, tail = xf[:start].copy(), xf[end:].copy()  # copies: out may alias x
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for i in range(start, end, _CHUNK):
            j = min(i + _CHUNK, end)
            _logistic_packet(xf[i:j], of[i:j])
    if start:
        of[:start] = _logistic_scalar(head)
    if end < n:
        of[end:] = _logistic_scalar(tail)
    return out


def tanh_inplace(v: np.ndarray) -> None:
    """``eigen_tanh`` written back into the float32 array or view ``v`` (strided views go through a copy), for
    kernels: they run inside the invoke's np.errstate, so small arrays skip eigen_tanh's own checks."""
    if v.flags.c_contiguous and v.ndim and v.size <= _CHUNK and v.dtype == F32:
        _tanh(v, v)
    elif v.flags.c_contiguous:
        eigen_tanh(v, out=v)
    else:
        v[...] = eigen_tanh(np.ascontiguousarray(v))


def logistic_into(v: np.ndarray, out: np.ndarray) -> None:
    """``eigen_logistic`` of ``v`` into ``out`` (may be ``v``; strided views go through a copy). The buffer is
    taken as 16-byte aligned: which trailing elements take the scalar path can differ from LiteRT's per-gate
    buffers by their offset, which changes a result only where the packet and scalar paths differ (an ulp)."""
    n = v.size
    if out.flags.c_contiguous and v.flags.c_contiguous and v.ndim and 0 < n <= _CHUNK and n % PACKET_SIZE == 0:
        _logistic_packet(v.reshape(-1), out.reshape(-1))  # whole packets only: no scalar tail
    elif out.flags.c_contiguous and v.flags.c_contiguous:
        eigen_logistic(v, out=out)
    else:
        out[...] = eigen_logistic(np.ascontiguousarray(v))
