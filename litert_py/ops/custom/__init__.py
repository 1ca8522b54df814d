"""Custom ops registered by default: audio (AudioSpectrogram, Mfcc), TFLite_Detection_PostProcess,
aeq.hadamard_rotation, NumericVerify and MediaPipe's ops. Importing this package registers them.
"""

from . import (  # noqa: F401
    audio,
    detection,
    hadamard,
    mediapipe_pooling,
    mediapipe_transform,
    numeric_verify,
)
