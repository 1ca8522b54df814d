"""Audio custom ops: AudioSpectrogram and Mfcc (registered by default in LiteRT's BuiltinOpResolver).

Paths: float32 only (LiteRT's kernels accept nothing else); Mfcc's sample rate is an int32 tensor of one
element. Options are a FlexBuffer map in the operator's custom options, read like LiteRT's ``Init``
(``AsInt64`` / ``AsBool``: a missing key reads 0 / false, a float is truncated toward zero, so Mfcc's
frequency limits are whole numbers of Hz). LiteRT crashes on empty custom options; here they are a
PrepareError.

AudioSpectrogram (tflite/kernels/audio_spectrogram.cc, tflite/kernels/internal/spectrogram.{h,cc}): input
``[samples, channels]``, output ``[channels, 1 + (samples - window_size) // stride (0 if negative),
fft_length / 2 + 1]`` with ``fft_length`` the next power of two >= window_size. Each frame is multiplied by
a periodic Hann window (``0.5 - 0.5 * cos(2 * pi * i / window_size)``, double), zero-padded to fft_length
and transformed in double (LiteRT uses Ooura's ``rdft``; here the frames are a strided view of the input,
windowed into a preallocated zero-padded float64 buffer, and one ``np.fft.rfft`` transforms all frames of all
channels); ``re * re + im * im`` is summed in double and rounded to float, and ``sqrtf`` of that float is
taken unless ``magnitude_squared``. The two FFTs differ by a few double ulps of the frame's energy, far
below float resolution except in bins whose power is ~1e-9 of the frame's.

Mfcc (tflite/kernels/mfcc.cc, tflite/kernels/internal/mfcc.{h,cc}, mfcc_mel_filterbank.{h,cc},
mfcc_dct.{h,cc}): input ``[audio_channels, frames, spectrogram_bins]`` (a squared-magnitude spectrogram),
output ``[audio_channels, frames, dct_coefficient_count]``. Per frame, in double: the HTK-style mel
filterbank on ``spec = sqrt(bin)`` over bins ``start_index..end_index`` (each bin adds ``weighted = spec *
weights[i]`` to channel ``band_mapper[i]`` and ``spec - weighted`` to the next channel; here both terms are
computed per bin as LiteRT does and a precomputed 0/1 ``(2 * bins, channels)`` matrix with exactly LiteRT's
band mapping sums them; inputs with inf/NaN bins take a per-channel path so that they reach only their two
channels, as in LiteRT), ``log(max(x, 1e-12))``, then the DCT-II
``sqrt(2 / channels) * cos(i * pi / channels * (j + 0.5))`` (a matrix), rounded to float. The tables depend
on the sample rate, so they are built at prepare when the rate is constant, otherwise at the first invoke
that sees a new rate. LiteRT's quirks kept: when ``end_index >= spectrogram_bins`` the filterbank returns
nothing and the frame's coefficients are all zero; when the filterbank or DCT refuses its parameters
(channels < 1, rate <= 0, bins < 2, lower < 0, upper <= lower, coefficients < 1 or > channels) an invoke
with at least one frame fails (a PrepareError here when the rate is constant), while an empty output
succeeds.

Both ops match LiteRT (BUILTIN_REF and default kernels) to 1-2 float ulps; tests/ops/custom/test_audio.py records
the tolerances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...schema.flexbuffers import as_int32, as_int64
from ..common import flex_options
from ..registry import OpContext, PreparedOp, register

F32, F64 = np.float32, np.float64
FILTERBANK_FLOOR = 1e-12  # kFilterbankFloor (mfcc.cc)


# ----------------------------------------------------------------------------------------------
# AudioSpectrogram
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AudioSpectrogramFloat:
    """Spectrogram of each channel of ``[samples, channels]`` float32 audio."""

    window: np.ndarray  # periodic Hann window, float64 (empty when no frame fits)
    stride: int
    frames: int
    magnitude_squared: bool
    padded: np.ndarray  # (channels, frames, fft_length) float64 scratch; the zero padding is never written

    def __call__(self, inputs, outputs):
        out = outputs[0]
        if out.size == 0:
            return
        x = inputs[0]
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        channels, window = x.shape[1], self.window.size
        # (channels, frames, window): every stride-th window of each channel, a view of the input
        frames = np.ndarray((channels, self.frames, window), F32, x, 0, (4, 4 * channels * self.stride, 4 * channels))
        np.multiply(frames, self.window, out=self.padded[..., :window])  # windowing in double
        spec = np.fft.rfft(self.padded, axis=-1)  # double FFT of every frame of every channel at once
        ri = spec.view(F64)
        ri *= ri
        # re * re + im * im in double, then rounded to float
        np.add(ri[..., 0::2], ri[..., 1::2], out=out, casting="same_kind")
        if not self.magnitude_squared:
            np.sqrt(out, out=out)  # sqrtf of the float power


def _next_power_of_two(n: int) -> int:
    return 1 << (n - 1).bit_length()


@register("AudioSpectrogram")
def prepare_audio_spectrogram(ctx: OpContext) -> PreparedOp:
    m = flex_options(ctx, require_map=True)
    window_size, stride = as_int32(m.get("window_size")), as_int32(m.get("stride"))
    magnitude_squared = as_int64(m.get("magnitude_squared")) != 0
    ctx.check(len(ctx.inputs) == 1, f"NumInputs(node) != 1 ({len(ctx.inputs)} != 1)")
    ctx.check(len(ctx.outputs) == 1, f"NumOutputs(node) != 1 ({len(ctx.outputs)} != 1)")
    x, y = ctx.input(0), ctx.outputs[0]
    ctx.check(len(x.shape) == 2, f"NumDimensions(input) != 2 ({len(x.shape)} != 2)")
    ctx.check(y.dtype == F32, f"output->type != kTfLiteFloat32 ({y.type_name} != FLOAT32)")
    ctx.check(x.type == y.type, f"input->type != output->type ({x.type_name} != {y.type_name})")
    ctx.check(
        2 <= window_size <= 2**30 and stride >= 1,
        "params->spectrogram->Initialize(params->window_size, params->stride) was not true "
        f"(window_size {window_size} must be in [2, 2**30], stride {stride} >= 1).",
    )
    samples, channels = x.shape
    frames = 0 if samples < window_size else 1 + (samples - window_size) // stride
    fft_length = _next_power_of_two(window_size)
    ctx.set_output_shape(0, (channels, frames, fft_length // 2 + 1))
    window, padded = np.zeros(0, F64), np.zeros((0, 0, 0), F64)
    if frames and channels:  # a window no frame fits is never used (and may be huge)
        pi = math.atan(1.0) * 4.0
        window = 0.5 - 0.5 * np.cos((2.0 * pi * np.arange(window_size, dtype=F64)) / window_size)
        padded = ctx.scratch((channels, frames, fft_length), F64, fill=0.0)
    return AudioSpectrogramFloat(window, stride, frames, magnitude_squared, padded)


# ----------------------------------------------------------------------------------------------
# Mfcc
# ----------------------------------------------------------------------------------------------


def _freq_to_mel(freq):
    return 1127.0 * np.log1p(freq / 700.0)


@dataclass(frozen=True, eq=False)
class MfccTables:
    """MfccMelFilterbank + MfccDct for one (bins, sample rate): ``None`` fields when LiteRT's init fails."""

    error: str | None = None  # why Mfcc::Initialize fails, if it does
    zeros: bool = False  # end_index >= bins: the filterbank returns nothing, every coefficient is 0
    start: int = 0
    end: int = 0  # bins start..end (inclusive) feed the filterbank
    mel: np.ndarray | None = None  # (2 * (end - start + 1), channels) 0/1: [weighted; rest] -> channels
    dct: np.ndarray | None = None  # (channels, coefficients) float64
    weights: np.ndarray | None = None  # weights[i]: bin start + i's share of its right-slope channel
    segments: tuple = ()  # per channel: (left-slope bins, right-slope bins) as slices of start..end


def mfcc_tables(
    bins: int, sample_rate: float, channels: int, coefficients: int, lower: float, upper: float
) -> MfccTables:
    """The tables of Mfcc::Initialize(bins, sample_rate) (mfcc_mel_filterbank.cc, mfcc_dct.cc)."""
    errors = []
    if channels < 1:
        errors.append("filterbank_channel_count must be positive")
    if sample_rate <= 0:
        errors.append("sample rate must be positive")
    if bins < 2:
        errors.append("the spectrogram needs at least 2 bins")
    if lower < 0:
        errors.append("lower_frequency_limit must be nonnegative")
    if upper <= lower:
        errors.append("upper_frequency_limit must be greater than lower_frequency_limit")
    if coefficients < 1:
        errors.append("dct_coefficient_count must be positive")
    if channels >= 1 and coefficients > channels:
        errors.append("dct_coefficient_count must not exceed filterbank_channel_count")
    if errors:
        return MfccTables(error="Mfcc initialization failed: " + "; ".join(errors))

    # Mel filterbank: the extra center frequency at the top bounds the last triangle.
    mel_low, mel_hi = float(_freq_to_mel(F64(lower))), float(_freq_to_mel(F64(upper)))
    mel_spacing = (mel_hi - mel_low) / float(channels + 1)
    centers = mel_low + mel_spacing * np.arange(1, channels + 2, dtype=F64)
    hz_per_sbin = 0.5 * sample_rate / float(bins - 1)
    start = int(1.5 + lower / hz_per_sbin)  # always exclude DC (HTK)
    end = int(upper / hz_per_sbin)
    if end >= bins:  # MfccMelFilterbank::Compute: "Input too short to compute filterbank"
        return MfccTables(zeros=True)
    idx = np.arange(start, end + 1)
    melf = _freq_to_mel(idx * hz_per_sbin)
    # band_mapper[i]: the channel whose right slope bin i is on (-1: left of the first center); LiteRT walks
    # `channel` up while centers[channel] < melf, and melf grows with i, so it is a left search.
    band = np.searchsorted(centers[:channels], melf, side="left") - 1
    upper_c = centers[band + 1]
    lower_c = np.where(band >= 0, centers[np.maximum(band, 0)], mel_low)
    weights = (upper_c - melf) / (upper_c - lower_c)
    # LiteRT adds ``weighted = spec_val * weights[i]`` to channel band[i] (right side of the triangle) and
    # ``spec_val - weighted`` to channel band[i] + 1 (left side of the next one). Those per-bin terms are
    # computed as LiteRT does (spec * (1 - w) rounds differently, and a channel fed only by bins with w
    # close to 1 cancels), so the matrix only routes them: rows [weighted..., rest...], entries 0 or 1.
    nb = idx.size
    mel = np.zeros((2 * nb, channels), F64)
    rows = np.arange(nb)
    right = band >= 0
    mel[rows[right], band[right]] = 1.0
    left = band + 1 < channels
    mel[nb + rows[left], band[left] + 1] = 1.0

    # DCT-II rows i < coefficients: fnorm * cos(i * arg * (j + 0.5))
    pi = math.atan(1.0) * 4.0
    arg = pi / channels
    i = np.arange(coefficients, dtype=F64)[None, :]
    j = np.arange(channels, dtype=F64)[:, None]
    dct = math.sqrt(2.0 / channels) * np.cos(i * arg * (j + 0.5))
    # Bins are ordered by band, so each channel's left-slope (band == c - 1) and right-slope (band == c)
    # bins are contiguous runs.
    edges = np.searchsorted(band, np.arange(-1, channels + 1), side="left")
    segments = tuple((slice(edges[c], edges[c + 1]), slice(edges[c + 1], edges[c + 2])) for c in range(channels))
    return MfccTables(start=start, end=end, mel=mel, dct=dct, weights=weights, segments=segments)


@dataclass(frozen=True, eq=False)
class MfccFloat:
    """MFCCs of every frame of a ``[audio_channels, frames, bins]`` float32 squared-magnitude spectrogram."""

    tables: MfccTables | None  # None: built at eval for the rate tensor's value (non-constant rate)
    params: tuple  # (channels, coefficients, lower, upper) for tables built at eval
    cache: dict = field(default_factory=dict)  # sample rate -> MfccTables (non-constant rate)

    def __call__(self, inputs, outputs):
        out = outputs[0]
        if out.size == 0:
            return  # no frame (nothing computed nor checked) or no coefficient (0 == mfcc_output.size())
        t = self.tables
        if t is None:
            x = inputs[0]
            rate = int(inputs[1].reshape(-1)[0])
            t = self.cache.get(rate)
            if t is None:
                if len(self.cache) >= 16:
                    self.cache.clear()
                t = self.cache[rate] = mfcc_tables(x.shape[2], float(rate), *self.params)
        if t.error is not None:
            raise RuntimeError(f"{t.error} (params->dct_coefficient_count != mfcc_output.size())")
        if t.zeros:
            out[...] = 0.0
            return
        x = inputs[0]
        nb = t.weights.size
        terms = np.empty((*x.shape[:2], 2 * nb), F64)
        mag = np.sqrt(x[..., t.start : t.end + 1], out=terms[..., nb:], dtype=F64)  # spec_val
        weighted = np.multiply(mag, t.weights, out=terms[..., :nb])
        np.subtract(mag, weighted, out=mag)  # spec_val - weighted
        bands = terms @ t.mel
        if not np.isfinite(bands).all():  # inf/NaN bins: a 0 in the routing matrix would spread them
            bands = _bands_per_channel(terms, t)
        np.maximum(bands, FILTERBANK_FLOOR, out=bands)  # NaN stays NaN, as `val < floor` is false for it
        np.log(bands, out=bands)
        np.copyto(out, bands @ t.dct, casting="same_kind")


def _bands_per_channel(terms: np.ndarray, t: MfccTables) -> np.ndarray:
    """MfccMelFilterbank::Compute channel by channel: each bin reaches only its two channels, so an inf or
    NaN bin leaves the other channels finite exactly as in LiteRT (slow; non-finite input only)."""
    nb = t.weights.size
    weighted, rest = terms[..., :nb], terms[..., nb:]
    bands = np.empty((*terms.shape[:-1], len(t.segments)), F64)
    for c, (left, right) in enumerate(t.segments):
        bands[..., c] = rest[..., left].sum(axis=-1) + weighted[..., right].sum(axis=-1)
    return bands


@register("Mfcc")
def prepare_mfcc(ctx: OpContext) -> PreparedOp:
    m = flex_options(ctx, require_map=True)
    # LiteRT stores AsInt64() of each limit in a float field, then hands it to Mfcc as double.
    upper = float(F32(as_int64(m.get("upper_frequency_limit"))))
    lower = float(F32(as_int64(m.get("lower_frequency_limit"))))
    channels = as_int32(m.get("filterbank_channel_count"))
    coefficients = as_int32(m.get("dct_coefficient_count"))
    ctx.check(len(ctx.inputs) == 2, f"NumInputs(node) != 2 ({len(ctx.inputs)} != 2)")
    ctx.check(len(ctx.outputs) == 1, f"NumOutputs(node) != 1 ({len(ctx.outputs)} != 1)")
    wav, rate, y = ctx.input(0), ctx.input(1), ctx.outputs[0]
    ctx.check(len(wav.shape) == 3, f"NumDimensions(input_wav) != 3 ({len(wav.shape)} != 3)")
    ctx.check(rate.size == 1, f"NumElements(input_rate) != 1 ({rate.size} != 1)")
    ctx.check(y.dtype == F32, f"output->type != kTfLiteFloat32 ({y.type_name} != FLOAT32)")
    ctx.check(wav.type == y.type, f"input_wav->type != output->type ({wav.type_name} != {y.type_name})")
    ctx.check(rate.dtype == np.int32, f"input_rate->type != kTfLiteInt32 ({rate.type_name} != INT32)")
    ctx.check(coefficients >= 0, f"dct_coefficient_count must be non-negative, got {coefficients}")
    ctx.check(channels <= 1 << 16, f"filterbank_channel_count {channels} is too large")
    ctx.set_output_shape(0, (wav.shape[0], wav.shape[1], coefficients))
    params = (channels, coefficients, lower, upper)
    tables = None
    if rate.is_constant:
        tables = mfcc_tables(wav.shape[2], float(int(rate.data.reshape(-1)[0])), *params)
        ctx.check(
            tables.error is None or wav.shape[0] * wav.shape[1] * coefficients == 0,
            f"{tables.error} (LiteRT fails at invoke: params->dct_coefficient_count != mfcc_output.size())",
        )
    return MfccFloat(tables, params)
