"""TFLite's fixed-point quantization toolbox, vectorized in numpy.

* :mod:`litert_py.quant.fixedpoint`: rounding, QuantizeMultiplier, SRDHM / RDBPOT /
  MultiplyByQuantizedMultiplier (int32 and int64 overloads) and fast exact requantization.
* :mod:`litert_py.quant.gemmlowp`: gemmlowp's FixedPoint helpers (exp, reciprocal, logistic/tanh int16 tables,
  CLZ, saturating shifts, CheckedLog2, GetInvSqrtQuantizedMultiplierExp), int32 and int16 forms.
* :mod:`litert_py.quant.params`: fused-activation clamp ranges, QUANTIZE / DEQUANTIZE arithmetic.
* :mod:`litert_py.quant.lut`: 8-bit and 16-bit activation lookup tables.
* :mod:`litert_py.quant.requantizer`: requantization epilogues prepared once per kernel.
* :mod:`litert_py.quant.hybrid`: the per-row int8 quantization and dot-product quirks of hybrid kernels.

See docs/quantized-arithmetic.md for the semantics being reproduced.
"""

from litert_py.quant.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    downscale_int32_to_int16_multiplier,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    multiply_by_quantized_multiplier_int64_ok,
    quantize_multiplier,
    quantize_multiplier_array,
    requantize,
    requantize_float64_ok,
    round_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    trunc_to_int32,
    wrap32,
)
from litert_py.quant.hybrid import SseMinus128Fix, batch_quantize_floats, sse_reduction_sum_vector
from litert_py.quant.lut import (
    LUT_PAIRS_MIN_VALUES,
    lut_int8,
    lut_int16,
    lut_lookup_int8,
    lut_lookup_int16,
    lut_lookup_pairs,
    lut_pairs,
)
from litert_py.quant.params import (
    ACT_NONE,
    ACT_RELU,
    ACT_RELU6,
    ACT_RELU_N1_TO_1,
    ACT_SIGN_BIT,
    ACT_TANH,
    calculate_activation_range,
    calculate_activation_range_float,
    calculate_activation_range_quantized,
    dequantize,
    dequantize_per_axis,
    dtype_range,
    quantize,
    quantize_per_axis,
)
from litert_py.quant.requantizer import (
    PerChannelMBQM,
    Requantizer,
    copysign_bits,
    copysign_bits_calls,
    fused_exact_bound,
    requantize_int64_inplace,
)

__all__ = [
    "INT32_MIN",
    "INT32_MAX",
    "wrap32",
    "trunc_to_int32",
    "round_away",
    "quantize_multiplier",
    "quantize_multiplier_array",
    "saturating_rounding_doubling_high_mul",
    "rounding_divide_by_pot",
    "multiply_by_quantized_multiplier",
    "multiply_by_quantized_multiplier_int64",
    "multiply_by_quantized_multiplier_int64_ok",
    "Requantizer",
    "PerChannelMBQM",
    "fused_exact_bound",
    "copysign_bits",
    "copysign_bits_calls",
    "requantize_int64_inplace",
    "batch_quantize_floats",
    "sse_reduction_sum_vector",
    "SseMinus128Fix",
    "downscale_int32_to_int16_multiplier",
    "requantize_float64_ok",
    "requantize",
    "ACT_NONE",
    "ACT_RELU",
    "ACT_RELU_N1_TO_1",
    "ACT_RELU6",
    "ACT_TANH",
    "ACT_SIGN_BIT",
    "dtype_range",
    "calculate_activation_range_quantized",
    "calculate_activation_range",
    "calculate_activation_range_float",
    "quantize",
    "quantize_per_axis",
    "dequantize",
    "dequantize_per_axis",
    "lut_int8",
    "lut_lookup_int8",
    "lut_pairs",
    "LUT_PAIRS_MIN_VALUES",
    "lut_lookup_pairs",
    "lut_int16",
    "lut_lookup_int16",
]
