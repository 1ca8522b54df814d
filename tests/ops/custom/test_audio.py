"""The custom ops AudioSpectrogram and Mfcc (litert_py/ops/custom/audio.py) against the oracle.

Hypothesis draws signal lengths, channel counts, window sizes (powers of two and not) and strides (shorter
and longer than the window, and windows no frame fits), both ``magnitude_squared`` settings, Mfcc
filterbank/DCT sizes, frequency limits (integers, floats LiteRT truncates, upper limits past Nyquist that
make LiteRT's filterbank return nothing) and sample rates, constant or fed at invoke; one model chains
AudioSpectrogram -> Mfcc as speech front ends do.
"""

from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers
from hypothesis import given
from hypothesis import strategies as st

from litert_py import Interpreter, PrepareError
from litert_py.schema.builder import ModelBuilder
from tests.compare import assert_close
from tests.oracle import T, oracle, run_both, run_litert, run_ours, single_op_model

# Elementwise relative tolerance, plus an absolute floor relative to the output's largest magnitude for
# values near zero (spectrum bins ~1e-9 of the frame energy, where the FFTs' double rounding shows; DCT
# coefficients that cancel to ~0). LiteRT computes both ops in double and rounds once to float; numpy's
# pocketfft and Ooura's rdft, and BLAS vs per-channel loops, differ by a few double ulps, so the floats
# agree to 1-2 ulps (measured over 400 examples per test: spectrogram bins max relative error 2.8e-7, and
# <= 8e-14 * max|out| absolute; Mfcc on the same input: exact on values above 1e-3 * max|out|, absolute
# error <= 2e-16 * max|out|). After AudioSpectrogram, Mfcc also sees the spectrogram's 1-ulp differences:
# a band moves by <= 1.2e-7 relative, its log by <= 1.2e-7 absolute, and a coefficient (sqrt(2/C) times a
# sum over C bands) by <= 1.2e-7 * sqrt(2 * C) ~ 1.1e-6 for 40 channels: an absolute 2e-6 there.
TOLERANCE = {  # op: (rtol, atol as a fraction of max|out|, absolute atol)
    "AudioSpectrogram": (2.5e-7, 1e-11, 0.0),
    "Mfcc": (2.5e-7, 1e-12, 0.0),
    "Mfcc-after-AudioSpectrogram": (2.5e-7, 1e-12, 2e-6),
}

seeds = st.integers(0, 2**32 - 1)


def _options(**kw) -> bytes:
    return bytes(flexbuffers.Dumps(kw))


def _close(op: str, ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    rtol, afloor, atol = TOLERANCE[op]
    assert all(b.dtype == np.float32 for b in theirs)
    assert_close(ours, theirs, rtol_each=rtol, rtol=afloor, atol=atol)


def _signal(rng, n: int, channels: int, kind: str) -> np.ndarray:
    t = np.arange(n)[:, None] / 16000.0
    if kind == "noise":
        x = rng.uniform(-1, 1, (n, channels))
    elif kind == "tones":
        f = rng.uniform(50, 7000, (1, channels))
        x = 0.6 * np.sin(2 * np.pi * f * t) + 0.3 * np.sin(2 * np.pi * 3.1 * f * t + 1.0)
    else:  # speech-like: noise bursts with silences (exact zeros) and a DC offset
        x = rng.normal(0, 0.3, (n, channels)) * (rng.random((n, 1)) < 0.5) + 0.1
    return x.astype(np.float32)


def _frames(n: int, window: int, stride: int) -> int:
    return 0 if n < window else 1 + (n - window) // stride


def _bins(window: int) -> int:
    return (1 << (window - 1).bit_length()) // 2 + 1


# ----------------------------------------------------------------------------------------------
# AudioSpectrogram
# ----------------------------------------------------------------------------------------------


@st.composite
def spectrogram_case(draw):
    rng = np.random.default_rng(draw(seeds))
    window = draw(st.one_of(st.sampled_from([2, 3, 64, 256, 400, 480, 512]), st.integers(2, 700)))
    stride = draw(st.one_of(st.sampled_from([1, 160, 320, window]), st.integers(1, 2 * window)))
    n = draw(st.one_of(st.integers(1, 3000), st.just(window), st.integers(1, window + 5)))
    channels = draw(st.integers(1, 3))
    squared = draw(st.booleans())
    x = _signal(rng, n, channels, draw(st.sampled_from(["noise", "tones", "speech"])))
    # LiteRT reads the options with AsInt64 / AsBool: a float window is truncated, an int flag is != 0
    opts = dict(
        window_size=draw(st.sampled_from([window, window + 0.75])),
        stride=stride,
        magnitude_squared=draw(st.sampled_from([squared, int(squared)])),
    )
    model = single_op_model(
        "CUSTOM",
        [T(x.shape)],
        [T((channels, _frames(n, window, stride), _bins(window)))],
        custom_code="AudioSpectrogram",
        custom_options=_options(**opts),
    )
    return model, [x]


@given(case=spectrogram_case())
def test_audio_spectrogram(case):
    model, inputs = case
    ours, theirs = run_both(model, inputs)
    _close("AudioSpectrogram", ours, theirs)


# ----------------------------------------------------------------------------------------------
# Mfcc
# ----------------------------------------------------------------------------------------------


@st.composite
def mfcc_options(draw, rate: int):
    channels = draw(st.integers(1, 40))
    coefficients = draw(st.integers(1, channels))
    lower = draw(st.sampled_from([0, 20, 125, 300.7]))
    nyquist = rate / 2
    # mostly below Nyquist; sometimes past it (LiteRT then outputs zeros when end_index >= bins)
    upper = draw(
        st.one_of(
            st.floats(lower + 1, nyquist).map(lambda v: float(int(v))),
            st.floats(lower + 1, nyquist),
            st.sampled_from([4000, 7600, nyquist, 1.2 * nyquist]),
        )
    )
    if upper <= lower + 1:
        upper = lower + 2
    return dict(
        upper_frequency_limit=upper,
        lower_frequency_limit=lower,
        filterbank_channel_count=channels,
        dct_coefficient_count=coefficients,
    )


@st.composite
def mfcc_case(draw):
    rng = np.random.default_rng(draw(seeds))
    rate = draw(st.sampled_from([8000, 16000, 22050, 44100]))
    opts = draw(mfcc_options(rate))
    shape = (draw(st.integers(1, 2)), draw(st.integers(0, 6)), draw(st.integers(2, 300)))
    spec = (rng.uniform(0, 3, shape) ** 4).astype(np.float32)  # squared magnitudes over a wide range
    spec[rng.random(shape) < 0.1] = 0.0  # silent bins: floored at 1e-12 before the log
    if draw(st.integers(0, 4)) == 0:  # a few inf / NaN / negative bins: they reach only their two channels
        hit = rng.random(shape) < 0.01
        spec[hit] = rng.choice(np.array([np.inf, np.nan, -1.0], np.float32), int(hit.sum()))
    const_rate = draw(st.booleans())
    rate_t = T.const(np.array([rate], np.int32)) if const_rate else T((1,), np.int32)
    model = single_op_model(
        "CUSTOM",
        [T(shape), rate_t],
        [T((*shape[:2], opts["dct_coefficient_count"]))],
        custom_code="Mfcc",
        custom_options=_options(**opts),
    )
    return model, [spec] if const_rate else [spec, np.array([rate], np.int32)]


@given(case=mfcc_case())
def test_mfcc(case):
    model, inputs = case
    ours, theirs = run_both(model, inputs)
    _close("Mfcc", ours, theirs)


# ----------------------------------------------------------------------------------------------
# AudioSpectrogram -> Mfcc, one model
# ----------------------------------------------------------------------------------------------


def _speech_frontend(
    n: int, channels: int, window: int, stride: int, rate: int | None, mfcc: dict, squared: bool = True
) -> bytes:
    b = ModelBuilder()
    wav = b.input("wav", (n, channels), np.float32)
    r = (
        b.input("rate", (1,), np.int32)
        if rate is None
        else b.tensor("rate", (1,), np.int32, data=np.array([rate], np.int32))
    )
    frames = _frames(n, window, stride)
    spec = b.tensor("spectrogram", (channels, frames, _bins(window)), np.float32)
    out = b.tensor("mfcc", (channels, frames, mfcc["dct_coefficient_count"]), np.float32)
    b.op(
        "CUSTOM",
        [wav],
        [spec],
        None,
        custom_code="AudioSpectrogram",
        custom_options=_options(window_size=window, stride=stride, magnitude_squared=squared),
    )
    b.op("CUSTOM", [spec, r], [out], None, custom_code="Mfcc", custom_options=_options(**mfcc))
    b.output(spec, out)
    return b.build()


@given(data=st.data())
def test_spectrogram_mfcc_chain(data):
    rng = np.random.default_rng(data.draw(seeds))
    rate = data.draw(st.sampled_from([8000, 16000, 44100]))
    window = data.draw(st.sampled_from([200, 256, 400, 480, 640]))
    stride = data.draw(st.sampled_from([window // 2, 160, 320]))
    n = data.draw(st.integers(window, 4000))
    channels = data.draw(st.integers(1, 2))
    opts = data.draw(mfcc_options(rate))
    const_rate = data.draw(st.booleans())
    squared = data.draw(st.booleans())
    x = _signal(rng, n, channels, data.draw(st.sampled_from(["noise", "tones", "speech"])))
    model = _speech_frontend(n, channels, window, stride, rate if const_rate else None, opts, squared)
    inputs = [x] if const_rate else [x, np.array([rate], np.int32)]
    ours, theirs = run_both(model, inputs)
    _close("AudioSpectrogram", ours[:1], theirs[:1])
    _close("Mfcc-after-AudioSpectrogram", ours[1:], theirs[1:])


def test_keyword_spotting_frontend():
    """The usual 1 s, 16 kHz front end: 30 ms windows every 20 ms, 40 mel channels, 13 coefficients."""
    x = _signal(np.random.default_rng(7), 16000, 1, "speech")
    opts = dict(
        upper_frequency_limit=4000, lower_frequency_limit=20, filterbank_channel_count=40, dct_coefficient_count=13
    )
    ours, theirs = run_both(_speech_frontend(16000, 1, 480, 320, 16000, opts), [x])
    assert ours[1].shape == (1, 49, 13)
    _close("AudioSpectrogram", ours[:1], theirs[:1])
    _close("Mfcc-after-AudioSpectrogram", ours[1:], theirs[1:])


def test_constant_signal_folded_at_prepare():
    """Every input constant: the runtime runs the chain once at prepare, on read-only constant buffers."""
    x = _signal(np.random.default_rng(1), 500, 2, "tones")
    b = ModelBuilder()
    wav = b.tensor("wav", x.shape, np.float32, data=x)
    rate = b.tensor("rate", (1,), np.int32, data=np.array([8000], np.int32))
    spec, out = b.tensor("spectrogram", (2, 6, 65), np.float32), b.tensor("mfcc", (2, 6, 10), np.float32)
    b.op(
        "CUSTOM",
        [wav],
        [spec],
        None,
        custom_code="AudioSpectrogram",
        custom_options=_options(window_size=100, stride=80, magnitude_squared=True),
    )
    b.op(
        "CUSTOM",
        [spec, rate],
        [out],
        None,
        custom_code="Mfcc",
        custom_options=_options(
            upper_frequency_limit=3000, lower_frequency_limit=100, filterbank_channel_count=12, dct_coefficient_count=10
        ),
    )
    b.output(spec, out)
    ours, theirs = run_both(b.build(), [])
    _close("AudioSpectrogram", ours[:1], theirs[:1])
    _close("Mfcc-after-AudioSpectrogram", ours[1:], theirs[1:])


def test_mfcc_rate_changes_between_invokes():
    """A fed sample rate: the filterbank follows the rate of each invoke (tables cached per rate)."""
    LiteRT, OpResolverType = oracle()
    model = single_op_model(
        "CUSTOM",
        [T((1, 4, 257)), T((1,), np.int32)],
        [T((1, 4, 13))],
        custom_code="Mfcc",
        custom_options=_options(
            upper_frequency_limit=4000, lower_frequency_limit=20, filterbank_channel_count=40, dct_coefficient_count=13
        ),
    )
    spec = (np.random.default_rng(3).uniform(0, 3, (1, 4, 257)) ** 4).astype(np.float32)
    ours = Interpreter(model_content=model)
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    results = []
    for it in (ours, theirs):
        it.allocate_tensors()
        seen = []
        for rate in (16000, 8000, 16000, 44100):
            it.set_tensor(it.get_input_details()[0]["index"], spec)
            it.set_tensor(it.get_input_details()[1]["index"], np.array([rate], np.int32))
            it.invoke()
            seen.append(it.get_tensor(it.get_output_details()[0]["index"]))
        results.append(seen)
    assert not np.array_equal(results[1][0], results[1][1])  # the rate matters
    for a, b in zip(*results):
        _close("Mfcc", [a], [b])


# ----------------------------------------------------------------------------------------------
# LiteRT's Mfcc quirks: refused parameters fail at invoke when there is a frame to compute
# ----------------------------------------------------------------------------------------------

_MFCC_OK = dict(
    upper_frequency_limit=4000, lower_frequency_limit=20, filterbank_channel_count=20, dct_coefficient_count=13
)


def _mfcc_model(shape=(1, 3, 129), rate=16000, wav_dtype=np.float32, rate_t=None, out_dtype=np.float32, **kw) -> bytes:
    opts = {**_MFCC_OK, **kw}
    if rate_t is None:
        rate_t = T((1,), np.int32) if rate is None else T.const(np.array([rate], np.int32))
    return single_op_model(
        "CUSTOM",
        [T(shape, wav_dtype), rate_t],
        [T((*shape[:2], max(opts["dct_coefficient_count"], 0)), out_dtype)],
        custom_code="Mfcc",
        custom_options=_options(**opts),
    )


@pytest.mark.parametrize("rate", [0, -8000])
def test_mfcc_bad_rate_fails_at_invoke(rate):
    model = _mfcc_model(rate=None)
    spec = np.ones((1, 3, 129), np.float32)
    with pytest.raises(RuntimeError):
        run_litert(model, [spec, np.array([rate], np.int32)])
    with pytest.raises(RuntimeError, match="sample rate must be positive"):
        run_ours(model, [spec, np.array([rate], np.int32)])


@pytest.mark.parametrize(
    "opts",
    [
        dict(dct_coefficient_count=21),
        dict(lower_frequency_limit=4000),
        dict(filterbank_channel_count=0, dct_coefficient_count=1),
    ],
    ids=["more-coefficients-than-channels", "upper-not-above-lower", "no-channels"],
)
def test_mfcc_refused_parameters(opts):
    """LiteRT allocates, then fails at invoke; with a constant rate litert_py refuses the node at prepare."""
    model = _mfcc_model(**opts)
    spec = np.ones((1, 3, 129), np.float32)
    with pytest.raises(RuntimeError):
        run_litert(model, [spec])
    with pytest.raises(PrepareError, match="Mfcc initialization failed"):
        run_ours(model, [spec])


def test_mfcc_refused_parameters_without_frames():
    """Nothing to compute: LiteRT never initializes the filterbank, so nothing fails."""
    model = _mfcc_model(shape=(1, 0, 129), dct_coefficient_count=21)
    ours, theirs = run_both(model, [np.ones((1, 0, 129), np.float32)])
    assert ours[0].shape == theirs[0].shape == (1, 0, 21)


# ----------------------------------------------------------------------------------------------
# Errors at prepare
# ----------------------------------------------------------------------------------------------


def _spectrogram_model(shape=(100, 1), dtype=np.float32, out_dtype=np.float32, out_shape=(1, 1, 33), **kw) -> bytes:
    opts = dict(window_size=64, stride=32, magnitude_squared=False)
    opts.update(kw)
    return single_op_model(
        "CUSTOM",
        [T(shape, dtype)],
        [T(out_shape, out_dtype)],
        custom_code="AudioSpectrogram",
        custom_options=_options(**opts),
    )


ERRORS = {
    "spectrogram-rank1": lambda: _spectrogram_model(shape=(100,)),
    "spectrogram-rank3": lambda: _spectrogram_model(shape=(1, 100, 1)),
    "spectrogram-int16": lambda: _spectrogram_model(dtype=np.int16, out_dtype=np.int16),
    "spectrogram-int8-output": lambda: _spectrogram_model(out_dtype=np.int8),
    "spectrogram-window-1": lambda: _spectrogram_model(window_size=1),
    "spectrogram-stride-0": lambda: _spectrogram_model(stride=0),
    "spectrogram-no-window-key": lambda: single_op_model(
        "CUSTOM", [T((100, 1))], [T((1, 1, 33))], custom_code="AudioSpectrogram", custom_options=_options(stride=4)
    ),
    "mfcc-rank2": lambda: _mfcc_model(shape=(3, 129)),
    "mfcc-rank4": lambda: _mfcc_model(shape=(1, 1, 3, 129)),
    "mfcc-int32-wav": lambda: _mfcc_model(wav_dtype=np.int32, out_dtype=np.int32),
    "mfcc-int8-output": lambda: _mfcc_model(out_dtype=np.int8),
    "mfcc-two-rates": lambda: _mfcc_model(rate_t=T((2,), np.int32)),
    "mfcc-float-rate": lambda: _mfcc_model(rate_t=T((1,), np.float32)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_prepare_errors(name):
    model = ERRORS[name]()
    LiteRT, OpResolverType = oracle()
    theirs = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    with pytest.raises(RuntimeError):  # the oracle refuses the model too
        theirs.allocate_tensors()
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("op", ["AudioSpectrogram", "Mfcc"])
@pytest.mark.parametrize("options", [b"", b"\x00\x01"], ids=["empty", "garbage"])
def test_missing_custom_options(op, options):
    """LiteRT's Init parses the options unchecked (it crashes on empty ones): only litert_py runs here."""
    ins = [T((100, 1))] if op == "AudioSpectrogram" else [T((1, 3, 129)), T.const(np.array([16000], np.int32))]
    model = single_op_model("CUSTOM", ins, [T((1, 1, 1))], custom_code=op, custom_options=options)
    with pytest.raises(PrepareError):
        Interpreter(model_content=model).allocate_tensors()
