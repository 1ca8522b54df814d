"""Recurrent ops: the LSTM variants, RNN, SVDF and what they share. Importing this package registers them."""

from . import (  # noqa: F401
    lstm,
    rnn,
    svdf,
)
