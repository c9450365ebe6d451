"""Hugging Face transformers models with ringrt's context parallelism
(``ringrt.torch.hf``).

- :func:`register` adds an attention implementation named ``"ringrt"`` to
  transformers' attention-function registry (``AttentionInterface``), so a
  model built with ``attn_implementation="ringrt"`` runs ring attention over
  the ranks of a ringrt context, every rank holding its shard of the
  sequence;
- :func:`shard_batch` cuts a global batch (``input_ids``, ``labels``,
  ``position_ids``, the same on every rank) into this rank's rows the way
  the model needs them: global positions for RoPE, labels shifted before
  sharding, packed documents as global ``cu_seq_lens_q/k``, and the global
  count of predicted tokens for the loss;
- :func:`reduce_loss` and :func:`sum_gradients` combine the ranks' partial
  losses and parameter gradients (sums over the ranks).

The training recipe is in docs/python.md ("Hugging Face transformers").
transformers itself is imported by :func:`register` only, so importing
``ringrt.torch`` does not need it.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import torch

from . import _coll, errors
from .context import Context, default_context
from .torch import _agree, _on_torch_stream
from .torch import flash_attn_func, flash_attn_varlen_func, shard_positions

__all__ = ["register", "shard_batch", "shift_labels", "reduce_loss", "sum_gradients"]

#: The name :func:`register` gives the attention implementation by default.
NAME = "ringrt"
_OP = "ringrt.torch.hf attention"
_SHARD_HINT = ("cut the batch with ringrt.torch.hf.shard_batch(input_ids, labels, position_ids) "
               "and call model(**batch)")


class _Setup:
    """What one registration attends with: the context (created on first
    use when not given), the layout and whether position_ids are checked.
    Also caches, per rank, the positions the layout gives a shard shape
    (so the check of a training loop compares one tensor per call)."""

    def __init__(self, ctx: Optional[Context], layout: str, check_positions: bool):
        self._ctx = ctx
        self.layout = layout
        self.check_positions = check_positions
        self.dense: Dict[Tuple[int, str], Tuple[int, torch.Tensor]] = {}
        self.packed: Optional[Tuple[torch.Tensor, Tuple[int, ...], torch.Tensor]] = None

    @property
    def ctx(self) -> Context:
        return self._ctx if self._ctx is not None else default_context()


def register(ctx: Optional[Context] = None, layout: str = "zigzag", *, name: str = NAME,
             check_positions: bool = True) -> str:
    """Register ring attention as transformers attention implementation
    `name` ("ringrt"); returns the name.

    Then ``LlamaForCausalLM(config)`` with ``config._attn_implementation``
    set to it (``attn_implementation="ringrt"`` in ``from_pretrained`` /
    ``_from_config`` / the config, or ``model.set_attn_implementation``)
    runs every attention layer as a collective ring attention over `ctx`'s
    ranks (default: :func:`ringrt.default_context`, over
    ``MPI.COMM_WORLD``, created on first use), in `layout`.

    Each rank feeds the model its shard of the sequence (:func:`shard_batch`)
    with ``position_ids`` holding the global positions of its rows
    (in-document positions for packed documents, whose global offsets come
    as ``cu_seq_lens_q`` / ``cu_seq_lens_k``). With `check_positions` every
    call checks that they are (outside ``torch.compile``), which catches a
    forgotten ``position_ids`` (transformers' default ``arange`` of the
    local length) on every rank.

    Registering again under the same name replaces the earlier setup.
    Needs transformers >= 4.53 (``AttentionInterface``, ``AttentionMaskInterface``;
    tested with 5.23.0).
    """
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface
    except ImportError as e:
        raise ImportError("ringrt.torch.hf.register needs transformers 4.53 or newer "
                          "(AttentionInterface, AttentionMaskInterface; launch/python-deps.sh "
                          "pins the tested one, 5.23.0)") from e
    setup = _Setup(ctx, layout, bool(check_positions))

    def ringrt_attention_forward(module: torch.nn.Module, query: torch.Tensor,
                                 key: torch.Tensor, value: torch.Tensor,
                                 attention_mask: Optional[torch.Tensor], dropout: float = 0.0,
                                 scaling: Optional[float] = None,
                                 sliding_window: Optional[int] = None,
                                 softcap: Optional[float] = None,
                                 is_causal: Optional[bool] = None,
                                 **kwargs: Any) -> Tuple[torch.Tensor, None]:
        return _forward(setup, module, query, key, value, attention_mask, dropout, scaling,
                        sliding_window, softcap, is_causal, kwargs)

    AttentionInterface.register(name, ringrt_attention_forward)
    AttentionMaskInterface.register(name, _padding_mask)
    return name


def _padding_mask(batch_size: int, q_length: int, kv_length: int, q_offset: int = 0,
                  kv_offset: int = 0, mask_function: Any = None,
                  attention_mask: Optional[torch.Tensor] = None,
                  **kwargs: Any) -> Optional[torch.Tensor]:
    """transformers' mask function for "ringrt": the user's 2-D mask when it
    masks something, else None. Without a mask function transformers would
    drop the user's mask silently for a custom implementation; with this
    one a padding mask reaches the attention function, which refuses it
    (the causal, window and document masks come from its arguments)."""
    if attention_mask is None or bool(attention_mask.all()):
        return None
    return attention_mask


# ---- the attention function ----------------------------------------------------------
def _forward(setup: _Setup, module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
             value: torch.Tensor, attention_mask: Optional[torch.Tensor], dropout: float,
             scaling: Optional[float], sliding_window: Optional[int], softcap: Optional[float],
             is_causal: Optional[bool], kwargs: Dict[str, Any]) -> Tuple[torch.Tensor, None]:
    """transformers' attention-function contract: query [B, H, S, D], key
    and value [B, H_kv, S, D] (GQA: fewer heads, not repeated) of this
    rank's rows; returns ([B, S, H, D], None)."""
    ctx = setup.ctx
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", True))
    cu = kwargs.get("cu_seq_lens_q")
    if not torch.compiler.is_compiling():
        # Agreed, so a problem on one rank raises on every rank (never a
        # rank left waiting in the ring). Under torch.compile the checks
        # (data-dependent) are skipped on every rank alike.
        unsupported, problem = None, None
        try:
            unsupported = _unsupported(module, query, key, attention_mask, dropout, softcap,
                                       kwargs)
            if unsupported is None and setup.check_positions:
                problem = _position_problem(setup, ctx, query, kwargs.get("position_ids"), cu)
        except Exception as e:  # noqa: B902 - raised on every rank by the agreement
            problem = f"checking the arguments failed: {type(e).__name__}: {e}"
        _agree(ctx, unsupported, problem, _OP)
    window = (-1, -1) if sliding_window is None else (sliding_window - 1, sliding_window - 1)
    # Gemma 2's attn_logit_softcapping arrives as softcap; gpt-oss passes its
    # sinks module parameter as s_aux (one logit per query head)
    sinks = kwargs.get("s_aux", kwargs.get("sinks"))
    softcap = softcap or 0.0
    if cu is None:
        o = flash_attn_func(query, key, value, softmax_scale=scaling, causal=causal,
                            window_size=window, softcap=softcap, ctx=ctx, sinks=sinks,
                            layout=setup.layout, qkv_format="bhsd")
        return o.transpose(1, 2), None  # BSHD, contiguous
    q, k, v = (t[0].transpose(0, 1) for t in (query, key, value))  # [T, H, D]
    o = flash_attn_varlen_func(q, k, v, cu, kwargs.get("cu_seq_lens_k", cu), None, None,
                               softmax_scale=scaling, causal=causal, window_size=window,
                               softcap=softcap, ctx=ctx, layout=setup.layout, sinks=sinks)
    return o.unsqueeze(0), None


def _unsupported(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                 attention_mask: Any, dropout: Any, softcap: Any,
                 kwargs: Dict[str, Any]) -> Optional[str]:
    """The first argument of the call whose value ringrt attention does not
    implement (local; agreed by the caller), or None."""
    if dropout:
        return (f"dropout={dropout!r}: ringrt attention has no attention dropout (set the "
                "config's attention_dropout to 0.0, or call model.eval())")
    if kwargs.get("position_bias") is not None:
        return "position_bias: ringrt attention has no additive position bias"
    if kwargs.get("output_attentions"):
        return "output_attentions=True: ring attention never forms the attention weights"
    mask_problem = _mask_problem(attention_mask)
    if mask_problem:
        return mask_problem
    if kwargs.get("use_cache") and not getattr(module, "training", True):
        # Nothing tells generate's prefill from an eval forward, and after
        # the prefill each rank would sample from its own last row: the
        # ranks' loops diverge and wait on each other until the timeout.
        return ("use_cache=True outside training (model.generate, or an eval forward keeping a "
                "key/value cache): a rank's cache holds only its shard of the sequence, and "
                "generation would let the ranks diverge; pass use_cache=False (or set "
                "model.config.use_cache = False) and generate with another attn_implementation")
    if key.shape[2] != query.shape[2]:
        return (f"a key/value cache ({key.shape[2]} keys for {query.shape[2]} queries): "
                "ringrt attention is for training and full-sequence forwards "
                "(pass use_cache=False; generate with another attn_implementation)")
    if kwargs.get("cu_seq_lens_q") is not None and query.shape[0] != 1:
        return (f"cu_seq_lens_q (packed documents) with a batch of {query.shape[0]}: packed "
                "documents are one row (batch 1)")
    return None


def _mask_problem(mask: Any) -> Optional[str]:
    """Why `attention_mask` is one ringrt cannot apply, or None. The causal
    and document masks come from the arguments (is_causal, cu_seq_lens);
    transformers passes the user's mask through unchanged for an
    implementation without a mask function, so a 2-D mask of ones (a
    tokenizer's, no padding) is the only one that means nothing more."""
    if mask is None:
        return None
    if isinstance(mask, torch.Tensor) and mask.dim() == 2 and bool(mask.bool().all()):
        return None
    what = (f"a {mask.dim()}-D {mask.dtype} tensor" if isinstance(mask, torch.Tensor)
            else f"a {type(mask).__name__}")
    return (f"attention_mask ({what} that is not all ones): ringrt attention applies only the "
            "causal, sliding-window and packed-document masks; instead of padding, pack the "
            "documents into one row with position_ids restarting at 0 (shard_batch derives "
            "cu_seq_lens from them), or drop attention_mask when nothing is padded")


# ---- the position_ids check -------------------------------------------------------------
def _position_problem(setup: _Setup, ctx: Context, query: torch.Tensor,
                      position_ids: Optional[torch.Tensor], cu: Any) -> Optional[str]:
    """Why this rank's position_ids are not the positions the layout gives
    its rows (global positions; in-document ones with cu_seq_lens), or None.
    A model that passes no position_ids to attention is not checked."""
    if position_ids is None or not isinstance(position_ids, torch.Tensor):
        return None
    rows = query.shape[2]
    if position_ids.dim() != 2 or position_ids.shape[-1] != rows:
        return (f"position_ids has shape {tuple(position_ids.shape)}, expected [batch, {rows}] "
                f"(this rank's {rows} rows); {_SHARD_HINT}")
    if cu is not None:
        return _packed_problem(setup, ctx, position_ids, cu)
    return _dense_problem(setup, ctx, position_ids, rows)


def _dense_problem(setup: _Setup, ctx: Context, pos: torch.Tensor, rows: int) -> Optional[str]:
    """Checks that every row of `pos` holds the global positions of this
    rank's shard of some sequence length S. S is not known locally (the
    shards of one length differ by a row or two), so the lengths whose
    shard has `rows` rows are tried: the last match is tried first."""
    cache_key = (rows, str(pos.device))
    hit = setup.dense.get(cache_key)
    if hit is not None and _rows_equal(pos, hit[1]):
        return None
    lo, hi = max(1, (rows - 2) * ctx.size), (rows + 2) * ctx.size
    for seq in range(lo, hi + 1):
        want = _layout_positions(seq, setup.layout, ctx)
        if want is not None and want.numel() == rows:
            want = want.to(pos.device)
            if _rows_equal(pos, want):
                setup.dense[cache_key] = (seq, want)
                return None
    guess = _layout_positions(max(1, rows * ctx.size), setup.layout, ctx)
    if guess is None:
        return None  # a bad layout: the ring call reports it on every rank
    restarts = bool((pos[:, 1:] < pos[:, :-1]).any()) if rows > 1 else False
    why = (" They restart (packed documents), but no cu_seq_lens_q came with them."
           if restarts else "")
    return (f"position_ids of this rank's rows are {_show(pos[0])}, but the {setup.layout} "
            f"layout of a {rows * ctx.size}-token sequence over {ctx.size} ranks gives rank "
            f"{ctx.rank} the global positions {_show(guess)} (RoPE and the causal mask must "
            f"agree; transformers' default is arange({rows})).{why} "
            f"{_SHARD_HINT[0].upper()}{_SHARD_HINT[1:]}")


def _layout_positions(seq: int, layout: str, ctx: Context) -> Optional[torch.Tensor]:
    """This rank's global positions in a `seq`-token sequence, or None for
    a bad layout (a check must not raise on one rank alone)."""
    try:
        return shard_positions(seq, layout, ctx=ctx)
    except errors.InvalidArgument:
        return None


def _packed_problem(setup: _Setup, ctx: Context, pos: torch.Tensor, cu: Any) -> Optional[str]:
    """Checks that `pos` holds the in-document positions of this rank's rows
    of the packed documents whose global offsets are `cu`."""
    if pos.shape[0] != 1:
        return None  # reported as unsupported (batch > 1 with cu_seq_lens)
    cached = setup.packed
    if cached is None or cached[0] is not cu:
        offsets = _offsets(cu)
        if offsets is None:
            return None  # a bad cu_seq_lens_q: flash_attn_varlen_func reports it on every rank
        try:
            mine = shard_positions(offsets[-1], setup.layout, cu_seqlens=list(offsets), ctx=ctx)
        except errors.InvalidArgument:
            return None  # flash_attn_varlen_func reports it on every rank
        starts = torch.tensor(offsets[:-1], dtype=torch.int64)
        doc = torch.searchsorted(starts, mine, right=True) - 1
        want = (mine - starts[doc]).to(pos.device)
        cached = setup.packed = (cu, offsets, want)
    want = cached[2]
    if want.numel() == pos.shape[1] and _rows_equal(pos, want):
        return None
    return (f"position_ids of this rank's rows are {_show(pos[0])}, but the rank's rows of the "
            f"packed documents cu_seq_lens_q={list(cached[1])} ({setup.layout} layout over "
            f"{ctx.size} ranks) have the in-document positions {_show(want)}; {_SHARD_HINT}")


def _offsets(cu: Any) -> Optional[Tuple[int, ...]]:
    try:
        values = cu.tolist() if isinstance(cu, torch.Tensor) else list(cu)
        offsets = tuple(int(x) for x in values)
    except (TypeError, ValueError):
        return None
    if len(offsets) < 2 or offsets[0] != 0 or any(b < a for a, b in zip(offsets, offsets[1:])):
        return None
    return offsets


def _rows_equal(pos: torch.Tensor, want: torch.Tensor) -> bool:
    """Every row of `pos` ([batch, n]) equals `want` ([n])."""
    return pos.shape[-1] == want.numel() and bool((pos == want).all())


def _show(t: torch.Tensor, runs: int = 6) -> str:
    """Positions as runs of consecutive values: [0..31, 96..127]."""
    values = [int(x) for x in t.reshape(-1).tolist()]
    parts: List[str] = []
    start = 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[i - 1] + 1:
            a, b = values[start], values[i - 1]
            parts.append(str(a) if a == b else f"{a}..{b}")
            start = i
    more = ", ..." if len(parts) > runs else ""
    return "[" + ", ".join(parts[:runs]) + more + "]"


# ---- batches -----------------------------------------------------------------------------
def _invalid(op: str, message: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(errors.INVALID_ARG, f"{op}: {message}", "RRT_ERR_INVALID_ARG")


def _documents(op: str, position_ids: Optional[torch.Tensor], batch: int,
               seq: int) -> Optional[Tuple[int, ...]]:
    """The global offsets of the packed documents of `position_ids` (the
    in-document positions of one row: each document counts 0, 1, 2, ...),
    or None for one sequence per row (positions 0 .. seq-1). Documents
    start where the position is 0, as transformers' flash-attention path
    reads them; anything else is refused, naming the first bad index."""
    if position_ids is None:
        return None
    if not isinstance(position_ids, torch.Tensor) or position_ids.dim() != 2 or \
            position_ids.shape[1] != seq or position_ids.shape[0] not in (1, batch):
        shape = tuple(position_ids.shape) if isinstance(position_ids, torch.Tensor) else \
            type(position_ids).__name__
        raise _invalid(op, f"position_ids is {shape}; expected [{batch} or 1, {seq}] "
                           "(global, like input_ids)")
    pos = position_ids.detach().cpu().to(torch.int64)
    starts = pos == 0
    prev = torch.cat([torch.full_like(pos[:, :1], -1), pos[:, :-1]], dim=1)
    bad = ~(starts | (pos == prev + 1))
    if bool(bad.any()):
        b, i = (int(x) for x in bad.nonzero()[0])
        raise _invalid(op, f"position_ids[{b}, {i}] = {int(pos[b, i])} after "
                           f"{int(prev[b, i]) if i else 'the start'}: positions must count "
                           "0, 1, 2, ... within each packed document (a document starts at 0)")
    if not bool(starts[:, 1:].any()):
        return None
    if pos.shape[0] != 1 or batch != 1:
        raise _invalid(op, f"position_ids restart (packed documents) in a batch of {batch} "
                           "rows: packed documents must be one row (batch 1), as transformers' "
                           "DataCollatorWithFlattening makes them")
    return tuple(int(i) for i in starts[0].nonzero().flatten().tolist()) + (seq,)


def shift_labels(labels: torch.Tensor, cu_seqlens: Optional[Iterable[int]] = None,
                 ignore_index: int = -100) -> torch.Tensor:
    """The labels each position predicts: ``labels[:, t + 1]`` at position
    t, `ignore_index` at the last position of the sequence and of every
    packed document (global offsets `cu_seqlens`), so no token predicts the
    next document's first. Local: call it on the GLOBAL labels, before
    sharding (a shard's last row predicts a token that another rank holds)."""
    shifted = torch.full_like(labels, ignore_index)
    shifted[:, :-1] = labels[:, 1:]
    if cu_seqlens is not None:
        ends = [int(c) - 1 for c in list(cu_seqlens)[1:] if int(c) > 0]
        shifted[:, ends] = ignore_index
    return shifted


def shard_batch(input_ids: torch.Tensor, labels: Optional[torch.Tensor] = None,
                position_ids: Optional[torch.Tensor] = None, *, ctx: Optional[Context] = None,
                layout: str = "zigzag", ignore_index: int = -100) -> Dict[str, Any]:
    """This rank's part of a global batch, as keyword arguments of a
    transformers causal LM (``model(**batch)``). Local (no communication):
    every rank passes the same global tensors.

    Args:
        input_ids: the global token ids ``[batch, seq]``.
        labels: the global labels ``[batch, seq]`` (as a transformers model
            takes them: unshifted, `ignore_index` where no loss is wanted);
            None for a forward without a loss.
        position_ids: None for one sequence per row; for packed documents
            (batch 1), the in-document positions of the global row (each
            document counts 0, 1, ...), from which the documents are read
            the way transformers' flash-attention path reads them.
        ctx: the ringrt context (default :func:`ringrt.default_context`).
        layout: ring attention's layout, as given to :func:`register`.
        ignore_index: the label that is not predicted.

    Returns:
        ``input_ids`` and ``position_ids`` (this rank's rows; global
        positions, in-document ones for packed documents), and with labels:
        ``labels`` (this rank's rows), ``shift_labels`` (shifted on the
        global sequence before sharding, so the loss at shard and document
        boundaries is right; the model uses them as they are) and
        ``num_items_in_batch`` (the global count of predicted tokens, so
        each rank's loss is its sum of token losses over the global count:
        :func:`reduce_loss` adds them up to the global mean). For packed
        documents also ``cu_seq_lens_q``, ``cu_seq_lens_k`` (their global
        offsets, int32) and ``max_length_q``, ``max_length_k``.

    Raises:
        ringrt.errors.InvalidArgument: a bad shape, layout, position_ids
            that do not count 0, 1, ... within documents, or packed
            documents in a batch of more than one row.
    """
    op = "shard_batch"
    ctx = ctx or default_context()
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        shape = tuple(input_ids.shape) if isinstance(input_ids, torch.Tensor) else \
            type(input_ids).__name__
        raise _invalid(op, f"input_ids is {shape}; expected [batch, seq] (the global batch)")
    batch, seq = input_ids.shape
    if labels is not None and (not isinstance(labels, torch.Tensor) or
                               tuple(labels.shape) != (batch, seq)):
        shape = tuple(labels.shape) if isinstance(labels, torch.Tensor) else type(labels).__name__
        raise _invalid(op, f"labels is {shape}; expected input_ids' shape {(batch, seq)}")
    cu = _documents(op, position_ids, batch, seq)
    mine = shard_positions(seq, layout, cu_seqlens=list(cu) if cu else None, ctx=ctx)
    device = input_ids.device
    idx = mine.to(device)
    out: Dict[str, Any] = {"input_ids": input_ids[:, idx]}
    if cu is None:
        out["position_ids"] = idx.unsqueeze(0).expand(batch, -1)
    else:
        out["position_ids"] = position_ids.to(device)[:, idx]
        cu_t = torch.tensor(cu, dtype=torch.int32, device=device)
        longest = max(b - a for a, b in zip(cu, cu[1:]))
        out.update(cu_seq_lens_q=cu_t, cu_seq_lens_k=cu_t, max_length_q=longest,
                   max_length_k=longest)
    if labels is not None:
        shifted = shift_labels(labels, cu, ignore_index)
        out.update(labels=labels[:, idx.to(labels.device)],
                   shift_labels=shifted[:, idx.to(labels.device)],
                   num_items_in_batch=(shifted != ignore_index).sum())
    return out


# ---- sums over the ranks --------------------------------------------------------------------
def _allreduced(ctx: Context, buf: torch.Tensor) -> torch.Tensor:
    """The sum over the ranks of a float32/float64 tensor, in the context's
    backend memory (the GPU tensor on the cuda backend, host memory else)."""
    device = buf.device if ctx.backend == "cuda" else torch.device("cpu")
    out = buf.to(device).contiguous().clone()
    code = _coll.REDUCE_F64 if out.dtype == torch.float64 else _coll.REDUCE_F32
    with _on_torch_stream(ctx, out.device):
        _coll.allreduce_sum(ctx, out.data_ptr(), out.numel(), code)
    return out.to(buf.device)


def reduce_loss(loss: torch.Tensor, ctx: Optional[Context] = None) -> torch.Tensor:
    """The global loss: the sum over the ranks of each rank's loss (a sum
    of its token losses over the global token count, as a model fed by
    :func:`shard_batch` returns it). Collective; detached (for logging:
    each rank's backward of its own loss already gives the gradients whose
    sum :func:`sum_gradients` forms)."""
    ctx = ctx or default_context()
    total = _allreduced(ctx, loss.detach().to(torch.float64).reshape(1))
    return total[0].to(loss.dtype)


def sum_gradients(params: Union[torch.nn.Module, Iterable[torch.nn.Parameter]],
                  ctx: Optional[Context] = None) -> None:
    """Sum the parameters' ``.grad`` over the context's ranks, in place (one
    collective; float32 accumulation for lower-precision gradients, float64
    kept). Every rank must pass the same parameters (same shapes, same ones
    holding a gradient). Collective."""
    ctx = ctx or default_context()
    if isinstance(params, torch.nn.Module):
        params = params.parameters()
    grads = [p.grad for p in params if p.grad is not None]
    _check_same_grads(ctx, grads)
    for dtype in (torch.float64, None):
        group = [g for g in grads if (g.dtype == torch.float64) == (dtype is not None)]
        if not group:
            continue
        flat = _allreduced(ctx, torch.cat([g.reshape(-1).to(dtype or torch.float32)
                                           for g in group]))
        offset = 0
        for g in group:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()


def _check_same_grads(ctx: Context, grads: List[torch.Tensor]) -> None:
    """Raise on every rank when the ranks' gradients differ in count, size
    or float64-ness (the flat sums would mix parameters)."""
    sizes = [sum(g.numel() for g in grads if g.dtype == torch.float64),
             sum(g.numel() for g in grads if g.dtype != torch.float64)]
    gathered = _coll.allgather_ints(ctx, [len(grads)] + sizes)
    bad = next((r for r, g in enumerate(gathered) if g != gathered[0]), None)
    if bad is not None:
        raise _invalid("sum_gradients", f"rank {bad} has {gathered[bad][0]} gradients of "
                       f"{gathered[bad][1] + gathered[bad][2]} elements, rank 0 "
                       f"{gathered[0][0]} of {gathered[0][1] + gathered[0][2]}: every rank must "
                       "pass the same parameters, each with a gradient")
