"""Convolutions: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D(_TRANSPOSE), their shared geometry and
requantization. Importing this package registers them.
"""

from . import (  # noqa: F401
    conv2d,
    conv3d,
    depthwise,
    transpose,
)
