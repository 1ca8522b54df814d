"""Building the float32 / hybrid LSTM cell (lstm_cell.py's LstmCell) from the full kernel's 24 inputs: build_cell
(CheckInputTensorDimensions' rules for float and hybrid, the per-gate and combined products, sparse hybrid weights)
and the state checks the ops share (check_states, check_state_sizes, full_inputs). The ops are in lstm.py.

Sources matched: tflite/kernels/lstm.cc (Prepare, CheckInputTensorDimensions, the sparse hybrid ledger),
tflite/kernels/unidirectional_sequence_lstm.cc, tflite/kernels/bidirectional_sequence_lstm.cc.
"""

from __future__ import annotations

import numpy as np

from ...quant import (
    SseMinus128Fix,
)
from ...schema.model import BuiltinOperator
from ..common import apply_activation_to_vector
from ..hybrid_fc import hybrid_matvec
from ..registry import OpContext, TensorInfo
from .lstm_cell import GateProducts, LstmCell, Product, SparseHybridProduct
from .lstm_common import (
    BIAS,
    CELL_STATE,
    F32,
    GATES,
    IN_W,
    LN,
    OUT_STATE,
    PEEP_W,
    PROJ_B,
    PROJ_W,
    REC_W,
    lstm_sizes,
)


def check_block_sparse_16(ctx: OpContext, t: TensorInfo) -> None:
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
                check_block_sparse_16(ctx, t)
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
