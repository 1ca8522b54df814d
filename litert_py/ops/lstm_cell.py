"""The float32 and hybrid LSTM cell (lstm_eval.cc LstmStepFloat / LstmStepHybrid, including the sparse hybrid
product): LstmCell and build_cell. The ops, their checks and the sources are in lstm.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..quant import (
    SseMinus128Fix,
    batch_quantize_floats,
)
from ..schema.model import ActivationFunctionType as Act
from ..schema.model import BuiltinOperator
from .common import apply_activation_to_vector, clip_ufunc
from .eigen_math import logistic_into, tanh_inplace
from .hybrid_fc import hybrid_matvec
from .lstm_common import (
    BIAS,
    CELL_STATE,
    EPS_LN,
    F32,
    GATES,
    IN_W,
    LN,
    ONE,
    OUT_STATE,
    PEEP_W,
    PROJ_B,
    PROJ_W,
    REC_W,
    ZERO,
    lstm_sizes,
)
from .recurrent_common import StepHybridProduct
from .registry import OpContext, TensorInfo


def sigmoid(v: np.ndarray) -> None:
    """ApplySigmoidToVector (tensor_utils.h): Eigen's logistic, in place (litert_py.ops.eigen_math). numpy's
    1 / (1 + exp(-x)) differs from it in the last ulp now and then, enough to flip an int8 value that a hybrid
    kernel re-quantizes (tests/ops/test_lstm_known_gaps.py history)."""
    logistic_into(v, v)


def _sigmoid_to(v: np.ndarray, out: np.ndarray) -> None:
    """``sigmoid`` of ``v`` written to ``out``."""
    logistic_into(v, out)


def _float_dot(wt: np.ndarray | None):
    """``np.dot`` (~0.4 us less overhead than np.matmul for small operands; bit-identical results, checked over
    row counts 1-8, depths 1-512, 2-1024 columns, contiguous and strided rows) except for a single output column,
    where the two take different BLAS paths: np.matmul then, as the one-step code."""
    return np.dot if wt is not None and wt.shape[1] > 1 else np.matmul


def _mean_stddev_normalization(v: np.ndarray) -> None:
    """``MeanStddevNormalization`` in float32, per row, in place: ``(v - mean) / sqrt(var + 1e-8)``."""
    _mean_stddev_normalization3(v[:, None, :])


def _mean_stddev_normalization3(v: np.ndarray) -> None:
    """``_mean_stddev_normalization`` of every (row, gate) of a (B, G, n) view, in place (np.add.reduce is
    np.sum's reduction: the same pairwise sums)."""
    n = np.array(v.shape[2], F32)
    mean = np.add.reduce(v, axis=2, dtype=F32)
    mean /= n
    v -= mean[:, :, None]
    var = np.add.reduce(v * v, axis=2, dtype=F32)
    var /= n
    var += EPS_LN
    np.sqrt(var, out=var)
    np.divide(ONE, var, out=var)
    v *= var[:, :, None]


@dataclass(frozen=True, eq=False)
class Product:
    """``v -> W v`` for one weight matrix: float (``wt``: (k, n) transposed weights), hybrid (``fc``), or a
    diagonal (``diag``: elementwise, for 1-D recurrent weights)."""

    wt: np.ndarray | None = None
    fc: object = None
    diag: np.ndarray | None = None

    def add_to(self, acc: np.ndarray, v: np.ndarray, v_float: np.ndarray | None = None) -> None:
        if self.diag is not None:
            acc += self.diag * (v if v_float is None else v_float)
        elif self.fc is not None:
            t = np.empty_like(acc)
            self.fc([v], [t])
            acc += t
        else:
            acc += v @ self.wt


@dataclass(frozen=True, eq=False)
class SparseHybridProduct:
    """The hybrid product with 1x16-block-sparse weights (lstm_eval.cc CalculateLstmGateHybrid and
    CalculateLstmOutputHybrid with a ledger; sse_tensor_utils.cc SseSparseMatrixBatchVectorMultiplyAccumulate):
    ``out = f32(dot(q(v), w)) * f32(sf * w_scale)``. Unlike the dense kernel it never subtracts the zero point
    of asymmetrically quantized inputs, and LiteRT scales the recurrent product with the INPUT's scaling
    factors (``input_sf``, not the output state's): ``own_sf`` records them on the input product, the
    recurrent product reads them as ``input_sf``. The projection writes its own factors into that same scratch
    (CalculateLstmOutputHybrid's scratch2 is LstmStepHybrid's input_sf), and an all-zero input skips its
    quantization, so after an all-zero input the recurrent product is scaled by the previous step's
    projection factors, as in LiteRT. The dot product over the stored blocks
    equals the dense one (zero blocks add nothing), including DotProdInt8x4x4's -128 quirk."""

    wt: np.ndarray  # (k, n) float64 holding the int8 weights, zero blocks included
    fix: SseMinus128Fix | None
    w_scale: np.ndarray  # float32 (n,): each row's weight scale
    asymmetric: bool
    own_sf: np.ndarray | None = None  # float32 (B,): written with this product's scaling factors
    input_sf: np.ndarray | None = None  # float32 (B,): the factors to scale with instead of this product's

    def __call__(self, inputs, outputs) -> None:
        q, sf, _ = batch_quantize_floats(inputs[0], self.asymmetric)
        dot = np.matmul(q.astype(np.float64), self.wt)
        if self.fix is not None:
            self.fix.apply(q, dot)
        if self.own_sf is not None:
            self.own_sf[...] = sf
        s = sf if self.input_sf is None else self.input_sf
        np.multiply(dot.astype(F32), np.multiply(s[:, None], self.w_scale, dtype=F32), out=outputs[0])


def _check_block_sparse_16(ctx: OpContext, t: TensorInfo) -> None:
    """LiteRT's sparse hybrid LSTM reads dim_metadata[1] as a ledger of 16-wide column blocks."""
    sp = t.sparsity
    ok = (
        sp is not None
        and tuple(sp.traversal_order) == (0, 1, 2)
        and tuple(sp.block_map) == (1,)
        and len(sp.dim_metadata) == 3
        and [d.format for d in sp.dim_metadata] == [0, 1, 0]
        and sp.dim_metadata[2].dense_size == 16
        and t.shape[1] % 16 == 0
    )
    ctx.check(
        ok,
        f"{t.name}: a sparse hybrid LSTM needs every weight matrix in 1x16 block-sparse form "
        "(traversal order 0,1,2, block map 1, DENSE/SPARSE_CSR/DENSE, block size 16)",
    )
    counts = np.diff(sp.dim_metadata[1].array_segments)
    ctx.check(
        counts.size == 0 or (counts.max() <= 255 and max(sp.dim_metadata[1].array_indices, default=0) <= 255),
        f"{t.name}: more than 255 blocks in a row do not fit LiteRT's uint8 ledger",
    )


@dataclass(frozen=True, eq=False)
class GateProducts:
    """The products of one input (x, aux or h) with the weights of every gate: one combined matrix (all gates'
    rows stacked; hybrid: per-row weight scales, the same f32(sf * s_w) as per gate) or, with diagonal
    recurrent weights, one Product per gate. ``compute(v)`` -> {gate: (B, n_cell)}."""

    combined: Product | None
    per_gate: dict | None
    gates: tuple
    n_cell: int

    @property
    def hybrid(self) -> bool:
        p = self.combined if self.combined is not None else next(iter(self.per_gate.values()))
        return p.fc is not None

    def compute(self, v) -> dict:
        n = self.n_cell
        if self.combined is not None:
            acc = np.zeros((v.shape[0], n * len(self.gates)), F32)
            self.combined.add_to(acc, v)
            return {g: acc[:, k * n : (k + 1) * n] for k, g in enumerate(self.gates)}
        out = {}
        for g in self.gates:
            out[g] = np.zeros((v.shape[0], n), F32)
            self.per_gate[g].add_to(out[g], v)
        return out


@dataclass(frozen=True, eq=False)
class SequencePlan:
    """The stacked constants of ``LstmCell.run`` (gates in the order (i,) f, c, o), built once with the cell."""

    fast: bool  # the stacked sequence path applies (no sparse hybrid product; else step by step)
    k: int  # the sigmoid gates before the cell gate: (i,) f
    base: np.ndarray  # (G*n,) float32: the stacked biases (layer norm: 0)
    peep_if: np.ndarray | None  # (k, n) peephole weights of (i,) f
    ln_ifc: np.ndarray | None  # (k+1, n) layer-norm weights of (i,) f, c
    bias_ifc: np.ndarray | None  # (k+1, n) biases of (i,) f, c (with layer norm)
    diag: np.ndarray | None  # (G, n) diagonal recurrent weights
    h_fc: StepHybridProduct | None  # hybrid recurrent product (fast path)
    proj_fc: StepHybridProduct | None  # hybrid projection (fast path)


@dataclass(frozen=True, eq=False)
class LstmCell:
    x: GateProducts
    aux: GateProducts | None
    h: GateProducts
    peep: dict  # gate -> float32 (n_cell,) (dequantized for hybrid)
    ln: dict  # gate -> float32 (n_cell,)
    bias: dict  # gate -> float32 (n_cell,)
    proj: Product | None
    proj_bias: np.ndarray | None
    act: object
    cell_clip: float
    proj_clip: float
    n_cell: int
    n_output: int
    tanh_act: bool = False  # the activation is TANH (applied out of place on the cell state)

    def __post_init__(self):
        """Stacked constants of the sequence path (``run``): gates in the order (i,) f, c, o."""
        gates = self.x.gates
        n = self.n_cell
        fast = (
            all(
                gp is None or (gp.combined is None or not isinstance(gp.combined.fc, SparseHybridProduct))
                for gp in (self.x, self.aux, self.h)
            )
            and self.x.combined is not None
            and (self.aux is None or self.aux.combined is not None)
            and (self.proj is None or not isinstance(self.proj.fc, SparseHybridProduct))
            and (self.h.combined is not None or all(p.diag is not None for p in self.h.per_gate.values()))
        )
        k = len(gates) - 2  # the sigmoid gates before the cell gate: (i,) f
        ln = bool(self.ln)
        base = np.zeros(n * len(gates), F32) if ln else np.concatenate([self.bias[g] for g in gates])
        hp, pp = self.h.combined, self.proj
        plan = SequencePlan(
            fast=fast,
            k=k,
            base=base,
            peep_if=np.stack([self.peep[g] for g in gates[:k]]) if self.peep else None,
            ln_ifc=np.stack([self.ln[g] for g in gates[:-1]]) if ln else None,
            bias_ifc=np.stack([self.bias[g] for g in gates[:-1]]) if ln else None,
            diag=None if self.h.combined is not None else np.stack([self.h.per_gate[g].diag for g in gates]),
            h_fc=StepHybridProduct.of(hp.fc) if fast and hp is not None and hp.fc is not None else None,
            proj_fc=StepHybridProduct.of(pp.fc) if fast and pp is not None and pp.fc is not None else None,
        )
        object.__setattr__(self, "_seq", plan)

    def _gate(self, g, xs, auxs, hs, c, act):
        ln = self.ln.get(g)
        acc = (
            np.zeros((hs[g].shape[0], self.n_cell), F32)
            if ln is not None
            else np.repeat(self.bias[g][None, :], hs[g].shape[0], axis=0)
        )
        if xs is not None:
            acc += xs[g]
        if auxs is not None:
            acc += auxs[g]
        acc += hs[g]
        peep = self.peep.get(g)
        if peep is not None:
            acc += peep * c
        if ln is not None:
            _mean_stddev_normalization(acc)
            acc *= ln
            acc += self.bias[g]
        if act is sigmoid:
            sigmoid(acc)
        elif act is not None:
            act(acc)
        return acc

    def step(self, x, aux, h, c, out):
        """x (B, I), aux (B, A) or None, h (B, n_output) and c (B, n_cell) states (updated), out (B, n_output).
        One step at a time: the sparse hybrid kernel (its products share scaling-factor scratch)."""
        cifg = "i" not in self.x.gates
        # IsZeroVector: an all-zero input skips its products (hybrid: also an all-zero output_state)
        xs = self.x.compute(x) if x.any() else None
        auxs = self.aux.compute(aux) if aux is not None and self.aux is not None and aux.any() else None
        hs = (
            self.h.compute(h)
            if (h.any() or not self.h.hybrid)
            else {g: np.zeros((h.shape[0], self.n_cell), F32) for g in self.h.gates}
        )
        ig = None if cifg else self._gate("i", xs, auxs, hs, c, sigmoid)
        fg = self._gate("f", xs, auxs, hs, c, sigmoid)
        cg = self._gate("c", xs, auxs, hs, None, self.act)
        c *= fg
        if cifg:
            np.subtract(F32(1), fg, out=fg)
            ig = fg
        cg *= ig
        c += cg
        if self.cell_clip > 0:
            clip_ufunc(c, -self.cell_clip, self.cell_clip, out=c)
        og = self._gate("o", xs, auxs, hs, c, sigmoid)
        t = c.copy()
        if self.act is not None:
            self.act(t)
        t *= og
        if self.proj is not None:
            r = (
                np.zeros((t.shape[0], self.n_output), F32)
                if self.proj_bias is None
                else np.repeat(self.proj_bias[None, :], t.shape[0], axis=0)
            )
            if t.any() or self.proj.fc is None:
                self.proj.add_to(r, t)
            if self.proj_clip > 0:
                clip_ufunc(r, -self.proj_clip, self.proj_clip, out=r)
            t = r
        h[...] = t
        out[...] = t

    def _input_products(self, gp: GateProducts, x3: np.ndarray) -> tuple:
        """``0 + W v`` for every step ((T, B, G*n) float32) and the steps whose input is not all zeros (IsZeroVector
        over the step's batch: those skip the product). Hybrid: all T*B rows at once (each row is quantized and
        multiplied on its own, exactly: the same numbers as per step); float32: one (B, I) product per step,
        the same BLAS call as the one-step code (one GEMM over all rows can round differently)."""
        t_, b_ = x3.shape[:2]
        p = gp.combined
        prod = np.empty((t_, b_, self.n_cell * len(gp.gates)), F32)
        if p.fc is not None:
            p.fc([x3.reshape(t_ * b_, x3.shape[2])], [prod])
        else:  # float32: one product per step, as a larger GEMM may sum in another order (BLAS kernels)
            mm = _float_dot(p.wt)
            for t in range(t_):
                mm(x3[t], p.wt, out=prod[t])
        prod += ZERO  # the products are added to a zero accumulator first (-0 -> +0)
        return prod, x3.reshape(t_, -1).any(axis=1)

    def _sequence_inputs(self, x3, aux3, base) -> np.ndarray:
        """Every step's gate inputs before the recurrent product ((T, B, G*n) float32): bias (layer norm: 0) +
        (0 + W_x x) [+ (0 + W_aux aux)], each product skipped for a step whose input is all zeros."""
        pre, nz = self._input_products(self.x, x3)
        pre += base
        if not nz.all():
            pre[~nz] = base
        if aux3 is not None:
            pa, nza = self._input_products(self.aux, aux3)
            if nza.all():
                pre += pa
            else:
                pre[nza] += pa[nza]
        return pre

    def run(self, x3, aux3, h, c, out3, reverse: bool = False) -> None:
        """The whole sequence: x3 (T, B, I) and aux3 (T, B, A) or None time-major (views allowed), h / c the
        states (updated), out3 (T, B, n_output) written. Per step exactly ``step``'s arithmetic, with the input
        products of every step computed up front and the gates stacked (i, f, c, o) along the last axis."""
        n_steps = x3.shape[0]
        if n_steps == 0 or x3.shape[1] == 0:  # no time step or no sequence: the states stay as they are
            return
        order = range(n_steps - 1, -1, -1) if reverse else range(n_steps)
        aux3 = aux3 if aux3 is not None and self.aux is not None else None
        if not self._seq.fast:
            for t in order:
                self.step(x3[t], None if aux3 is None else aux3[t], h, c, out3[t])
            return
        self._run_stacked(x3, aux3, h, c, out3, order)

    def _run_stacked(self, x3, aux3, h, c, out3, order) -> None:
        """``run``'s fast path: the gates stacked (i, f, c, o) along the last axis, buffers made once."""
        d = self._seq
        n, k = self.n_cell, d.k
        n_g = len(self.x.gates)
        n_batch = x3.shape[1]
        pre = self._sequence_inputs(x3, aux3, d.base)
        acc = np.empty((n_batch, n_g * n), F32)
        acc3 = acc.reshape(n_batch, n_g, n)
        hs = np.empty_like(acc)
        hp = self.h.combined
        hybrid_h = hp is not None and hp.fc is not None
        h_fc, proj_fc = d.h_fc, d.proj_fc
        wt = hp.wt if hp is not None and hp.fc is None else None
        mm_h = _float_dot(wt)
        mm_p = _float_dot(self.proj.wt if self.proj is not None and self.proj.fc is None else None)
        diag = d.diag
        peep_if, peep_o = d.peep_if, self.peep.get("o")
        ln_ifc, bias_ifc = d.ln_ifc, d.bias_ifc
        ln_o, bias_o = self.ln.get("o"), self.bias["o"]
        act, cifg, tanh_act = self.act, k == 1, self.tanh_act
        # without peephole and layer norm the output gate does not wait for the new cell state: one sigmoid
        # pass over all gates (the cell gate's sigmoid is computed and unused)
        early_o = peep_o is None and ln_o is None
        sg = np.empty_like(acc) if early_o else None
        sg3 = None if sg is None else sg.reshape(n_batch, n_g, n)
        gsrc = acc3 if sg3 is None else sg3
        ifg, cg = gsrc[:, :k], acc3[:, k]
        fg = gsrc[:, k - 1]
        ig = None if cifg else gsrc[:, 0]
        og = gsrc[:, k + 1]
        cell_clip, proj_clip = self.cell_clip, self.proj_clip
        cc_lo, cc_hi, pc_lo, pc_hi = (np.array(v, F32) for v in (-cell_clip, cell_clip, -proj_clip, proj_clip))
        tbuf = np.empty((n_batch, n), F32)
        proj = self.proj
        pb = self.proj_bias
        r = np.empty((n_batch, self.n_output), F32) if proj is not None else None
        h_prev = h
        t = -1
        for t in order:
            # + W_h h (hybrid: skipped when h is all zeros; the zero accumulator still turns -0 into +0)
            if wt is not None:
                mm_h(h_prev, wt, out=hs)
                np.add(pre[t], hs, out=acc)
            elif hybrid_h:
                if h_fc(h_prev, hs):  # False: h is all zeros, nothing computed
                    np.add(pre[t], hs, out=acc)
                else:
                    np.add(pre[t], ZERO, out=acc)
            else:  # diagonal recurrent weights
                hd = diag * h_prev[:, None, :]
                hd += F32(0)
                np.add(pre[t], hd.reshape(n_batch, -1), out=acc)
            if peep_if is not None:
                acc3[:, :k] += peep_if * c[:, None, :]
            if ln_ifc is not None:
                v = acc3[:, : k + 1]
                _mean_stddev_normalization3(v)
                v *= ln_ifc
                v += bias_ifc
            if sg is not None:
                _sigmoid_to(acc, sg)
            else:
                sigmoid(ifg)
            if act is not None:
                act(cg)
            c *= fg
            if cifg:
                np.subtract(ONE, fg, out=fg)
                cg *= fg
            else:
                cg *= ig
            c += cg
            if cell_clip > 0:
                clip_ufunc(c, cc_lo, cc_hi, out=c)
            if sg is None:
                if peep_o is not None:
                    og += peep_o * c
                if ln_o is not None:
                    _mean_stddev_normalization(og)
                    og *= ln_o
                    og += bias_o
                sigmoid(og)
            if tanh_act:
                np.copyto(tbuf, c)
                tanh_inplace(tbuf)
            else:
                np.copyto(tbuf, c)
                if act is not None:
                    act(tbuf)
            dst = out3[t]
            if proj is None:
                np.multiply(tbuf, og, out=dst)
            else:
                tbuf *= og
                if proj.fc is None:
                    mm_p(tbuf, proj.wt, out=r)
                    if pb is not None:
                        r += pb
                elif proj_fc(tbuf, r):  # False: all zeros, skipped
                    if pb is not None:
                        r += pb
                else:
                    r[...] = F32(0) if pb is None else pb
                if proj_clip > 0:
                    clip_ufunc(r, pc_lo, pc_hi, out=r)
                dst[...] = r
            h_prev = dst
        if t >= 0:
            h[...] = h_prev


def _f32(t: TensorInfo | None):
    return None if t is None else t.data.astype(F32).reshape(-1)


def build_cell(
    ctx: OpContext,
    ins: list,
    asymmetric: bool,
    cell_clip: float,
    proj_clip: float,
    activation: int,
    use_layer_norm: bool,
    aux_w: list | None = None,
    allow_diagonal: bool = False,
) -> LstmCell:
    """``ins``: the 24 full-kernel inputs (TensorInfo or None), ``aux_w``: 4 aux weights (i, f, c, o) or None.
    Checks CheckInputTensorDimensions' rules for float and hybrid."""
    x = ins[0]
    n_input, n_cell, n_output = lstm_sizes(ctx, ins, diagonal_ok=True)
    w_o = ins[IN_W["o"]]
    ctx.check(cell_clip >= 0, "params->cell_clip >= 0 was not true.")
    ctx.check(proj_clip >= 0, "params->proj_clip >= 0 was not true.")
    wtype = w_o.dtype
    hybrid = wtype in (np.int8, np.uint8)
    ctx.check(wtype == np.float32 or hybrid, f"Type {w_o.type_name} is not currently supported.")
    cifg = ins[IN_W["i"]] is None
    ctx.check(cifg == (ins[REC_W["i"]] is None), "cifg_weights_all_or_none == true was not true.")
    for t in ins[1:18] + ins[20:24] + list(aux_w or []):
        if t is not None:
            ctx.check(t.is_constant, f"litert_py's LSTM kernels need constant weights ({t.name})")
    # lstm.cc: a sparse input_to_output weight makes the hybrid kernel read every matrix through a ledger
    sparse = hybrid and ctx.builtin_code == BuiltinOperator.LSTM and w_o.sparsity is not None
    matrices = [t for t in ins[1:9] + [ins[PROJ_W]] if t is not None]
    if sparse:
        ctx.check(
            ins[PROJ_W] is not None,
            "litert_py: a sparse hybrid LSTM without projection weights is "
            "refused (LiteRT reads the missing projection's sparsity and crashes)",
        )
        for t in matrices:
            if t.sparsity is not None:
                _check_block_sparse_16(ctx, t)
            else:  # read densely, but with the row sums that a sparse op never computes
                ctx.check(
                    not asymmetric,
                    f"litert_py: {t.name} is dense in a sparse hybrid LSTM with "
                    "asymmetric_quantize_inputs (LiteRT then uses row sums it never computed)",
                )
    for t in ins[1:24] + list(aux_w or []):
        ctx.check(
            t is None or t.sparsity is None or (sparse and any(t is m for m in matrices)),
            f"{t and t.name}: sparse weights are only read by LSTM's hybrid kernel (LiteRT reads them as "
            "dense elsewhere)",
        )
    input_sf = np.zeros(x.shape[0] if len(x.shape) == 2 else 0, F32) if sparse else None

    def sparse_product(w: np.ndarray, scales, role: str) -> Product:
        return Product(
            fc=SparseHybridProduct(
                np.ascontiguousarray(w.T, dtype=np.float64),
                SseMinus128Fix.build(w, np.float64),
                np.broadcast_to(np.asarray(scales, F32), (w.shape[0],)).copy(),
                asymmetric,
                input_sf if role in ("x", "proj") else None,
                input_sf if role == "h" else None,
            )
        )

    def product(t: TensorInfo, k: int, role: str) -> Product:
        if len(t.shape) == 1:  # diagonal recurrent weights (UNIDIRECTIONAL_SEQUENCE_LSTM)
            ctx.check(allow_diagonal, f"{t.name}: recurrent weights must be 2-D")
            ctx.check(t.shape[0] == n_cell, f"{t.name}: diagonal weights must have n_cell entries")
            # LiteRT's hybrid kernel reads 1-D int8 recurrent weights as float (garbage, NaN): not reproduced
            ctx.check(t.dtype == np.float32, "litert_py: hybrid LSTM with diagonal recurrent weights is unsupported")
            d = (
                t.data.astype(F32)
                if t.dtype == np.float32
                else np.multiply(t.data.view(np.int8), F32(t.scale), dtype=F32)
            )
            return Product(diag=d)
        ctx.check(
            t.shape == (n_cell, k) or (t is ins[PROJ_W] and t.shape == (n_output, n_cell)),
            f"{t.name}: dims {t.shape} != ({n_cell}, {k})",
        )
        ctx.check(t.dtype == wtype, f"{t.name}: type {t.type_name} != {w_o.type_name}")
        if hybrid:
            ctx.check(bool(t.quantization.scale), f"{t.name}: hybrid weights need a scale")
            if t.sparsity is not None:
                return sparse_product(t.data.view(np.int8), t.scale, role)
            return Product(fc=hybrid_matvec(t.data, t.scale, asymmetric))
        return Product(wt=np.ascontiguousarray(t.data.T, dtype=F32))

    gates = GATES[1:] if cifg else GATES

    def group(ts: list, k: int, role: str) -> GateProducts:
        per_gate = {g: product(t, k, role) for g, t in zip(gates, ts)}  # checks shapes and types
        if any(p.diag is not None for p in per_gate.values()) or len({t.sparsity is None for t in ts}) > 1:
            return GateProducts(None, per_gate, gates, n_cell)
        stacked = np.concatenate([t.data for t in ts], axis=0)
        if not hybrid:
            return GateProducts(Product(wt=np.ascontiguousarray(stacked.T, dtype=F32)), None, gates, n_cell)
        scales = np.repeat(np.array([t.scale for t in ts], F32), n_cell)
        if ts[0].sparsity is not None:
            return GateProducts(sparse_product(stacked.view(np.int8), scales, role), None, gates, n_cell)
        return GateProducts(Product(fc=hybrid_matvec(stacked, scales, asymmetric)), None, gates, n_cell)

    xp = group([ins[IN_W[g]] for g in gates], n_input, "x")
    hp = group([ins[REC_W[g]] for g in gates], n_output, "h")
    aux = None
    if aux_w is not None:
        aux = group([aux_w[GATES.index(g)] for g in gates], aux_w[1].shape[1], "aux")
    peep = {}
    c_i, c_f, c_o = (ins[PEEP_W[g]] is not None for g in ("i", "f", "o"))
    ctx.check(
        ((c_i or cifg) and c_f and c_o) or not (c_i or c_f or c_o), "peephole_weights_all_or_none == true was not true."
    )
    for g in ("i", "f", "o"):
        t = ins[PEEP_W[g]]
        if t is None or (g == "i" and cifg):
            continue
        ctx.check(len(t.shape) == 1 and t.shape[0] == n_cell, f"{t.name}: peephole weights must be (n_cell,)")
        peep[g] = (
            t.data.astype(F32) if t.dtype == np.float32 else np.multiply(t.data.view(np.int8), F32(t.scale), dtype=F32)
        )
    bias = {}
    for g in gates:
        t = ins[BIAS[g]]
        ctx.check(
            t is not None and t.shape == (n_cell,) and t.dtype == np.float32, f"{g} gate bias must be FLOAT32 (n_cell,)"
        )
        bias[g] = _f32(t)
    if cifg:
        ctx.check(ins[BIAS["i"]] is None, "input_gate_bias == nullptr was not true.")
    ln = {}
    if use_layer_norm:
        for g in gates:
            t = ins[LN[g]]
            ctx.check(
                t is not None and t.shape == (n_cell,) and t.dtype == np.float32,
                f"{g} layer norm coefficients must be FLOAT32 (n_cell,)",
            )
            ln[g] = _f32(t)
    pw, pb = ins[PROJ_W], ins[PROJ_B]
    ctx.check(pw is not None or pb is None, "projecton_tensors_consistent == true was not true.")
    proj = None
    if pw is not None:
        ctx.check(
            len(pw.shape) == 2 and pw.shape == (n_output, n_cell), "projection_weights must be (n_output, n_cell)"
        )
        proj = product(pw, n_cell, "proj")
    else:
        ctx.check(n_output == n_cell, "without projection n_output must equal n_cell")
    if pb is not None:
        ctx.check(pb.shape == (n_output,) and pb.dtype == np.float32, "projection_bias must be FLOAT32 (n_output,)")
    return LstmCell(
        xp,
        aux,
        hp,
        peep,
        ln,
        bias,
        proj,
        _f32(pb),
        apply_activation_to_vector(activation),
        float(cell_clip),
        float(proj_clip),
        n_cell,
        n_output,
        activation == Act.TANH,
    )


def check_states(ctx: OpContext, h: TensorInfo, c: TensorInfo, n_batch: int, cell: LstmCell):
    ctx.check(
        h is not None and h.is_variable and c is not None and c.is_variable,
        "output_state and cell_state must be variable tensors",
    )
    ctx.check(h.size == n_batch * cell.n_output, "NumElements(output_state) != n_batch * n_output")
    ctx.check(c.size == n_batch * cell.n_cell, "NumElements(cell_state) != n_batch * n_cell")
    ctx.check(h.dtype == np.float32 and c.dtype == np.float32, "float LSTM states must be FLOAT32")


def check_state_sizes(ctx: OpContext, ins: list, n_batch: int, cell) -> None:
    ctx.check(ins[OUT_STATE].size == n_batch * cell.n_output, "NumElements(output_state) != n_batch * n_output")
    ctx.check(ins[CELL_STATE].size == n_batch * cell.n_cell, "NumElements(cell_state) != n_batch * n_cell")


def full_inputs(ctx: OpContext) -> tuple[list, bool]:
    n = len(ctx.inputs)
    ctx.check(n in (20, 24), f"The LSTM Full kernel expects 20 or 24 inputs. Got {n} inputs")
    ctx.check(len(ctx.outputs) == 1, "node->outputs->size != 1")
    ins = list(ctx.inputs) + [None] * (24 - n)
    return ins, ins[LN["f"]] is not None
