"""``SignatureRunner``: run a model through one of its SignatureDefs, as tf.lite does."""

from __future__ import annotations

import numpy as np

from .values import input_value


class SignatureRunner:
    """Runs the subgraph a signature points to, with inputs and outputs named as in the SignatureDef.

    ``__call__`` resizes every input to the given array's shape, allocates, sets, invokes and returns
    copies of the outputs, like tf.lite's SignatureRunner.
    """

    def __init__(self, interpreter=None, signature_key=None):
        self._interpreter = interpreter
        self._signature_key = signature_key
        sigs = {s.signature_key: s for s in interpreter.model.signature_defs}
        if signature_key not in sigs:
            raise ValueError(f'Invalid signature_key provided: "{signature_key}".')
        sig = sigs[signature_key]
        self._sub = interpreter._subgraph(sig.subgraph_index)
        self._inputs = {m.name: m.tensor_index for m in sig.inputs}
        self._outputs = {m.name: m.tensor_index for m in sig.outputs}

    def __call__(self, **kwargs):
        guard = self._interpreter._guard  # one thread at a time, cancellable (runtime/cancel.py)
        if not guard._busy.acquire(False):
            from ..errors import ConcurrentUseError

            raise ConcurrentUseError("SignatureRunner called while another thread is inside its Interpreter")
        try:
            return self._run(kwargs)
        finally:
            guard._busy.release()

    def _run(self, kwargs):
        if len(kwargs) != len(self._inputs):
            raise ValueError(
                "Invalid number of inputs provided for running a SignatureDef, expected "
                f"{len(self._inputs)} vs provided {len(kwargs)}"
            )
        for name in kwargs:
            if name not in self._inputs:
                raise ValueError(f"Invalid Input name ({name}) for SignatureDef")
        sub = self._sub
        arrays = {}
        positions = {name: k for k, name in enumerate(self._inputs)}
        for name, value in kwargs.items():
            i = self._inputs[name]
            t = sub.sg.tensors[i]
            arr = input_value(t.name, sub.types[i], value, positions[name])
            arrays[i] = arr
            if tuple(sub.shapes[i]) != arr.shape:
                sub.shapes[i] = arr.shape
                sub.allocated = False
        if not sub.allocated:
            sub.prepare()
        for i, arr in arrays.items():
            sub.tensors[i][...] = arr
        token = self._interpreter._guard.begin()
        try:
            sub.invoke()
        finally:
            self._interpreter._guard.end(token)
        return {name: np.array(sub.tensors[i], copy=True) for name, i in self._outputs.items()}

    def get_input_details(self) -> dict:
        from .interpreter import _tensor_details

        return {name: _tensor_details(self._sub, i) for name, i in self._inputs.items()}

    def get_output_details(self) -> dict:
        from .interpreter import _tensor_details

        return {name: _tensor_details(self._sub, i) for name, i in self._outputs.items()}
