"""ctypes front of the ring attention C API (include/ringrt/attn.h):
descriptors, shard helpers and plans, cached per context.

Nothing here knows torch: tensors are passed as addresses. ``ringrt.torch``
builds on it.
"""
from __future__ import annotations

import ctypes
import hashlib
import weakref
from collections import OrderedDict
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from . import _lib, errors
from ._coll import allgather_ints
from .context import Context

c_int, c_int64, c_double, c_size_t = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_size_t
c_void_p, c_char_p, P = ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER

DESC_MAGIC = 0x52524131
DESC_VERSION = 3
#: rrt_dtype codes of the storage types attention accepts.
DTYPE_F32, DTYPE_BF16, DTYPE_F16 = 0, 5, 6


class Desc(ctypes.Structure):
    """rrt_attn_desc, version 3."""
    _fields_ = [("size", c_size_t), ("magic", ctypes.c_uint), ("version", ctypes.c_uint),
                ("batch", c_int64), ("seq", c_int64), ("heads_q", c_int), ("heads_kv", c_int),
                ("head_dim", c_int), ("scale", c_double), ("causal", c_int), ("layout", c_int),
                ("dtype", c_int), ("window_left", c_int), ("window_right", c_int),
                ("cu_seqlens", P(c_int64)), ("num_docs", c_int64),
                ("softcap", c_double), ("sinks", c_int), ("cp_comm", c_int), ("cp_inner", c_int)]


class Stats(ctypes.Structure):
    """rrt_attn_stats."""
    _fields_ = [("total_s", c_double), ("compute_s", c_double), ("comm_s", c_double),
                ("comm_exposed_s", c_double), ("hidden_share", c_double),
                ("bytes_sent", c_double), ("flops", c_double), ("steps", c_int),
                ("backward", c_int), ("handoff_s", c_double), ("handoff_exposed_s", c_double)]


_lib.declare({
    "rrt_attn_layout_parse": (c_int, [c_char_p, P(c_int)]),
    "rrt_cp_comm_parse": (c_int, [c_char_p, P(c_int)]),
    "rrt_attn_plan_explain": (c_int, [c_void_p, c_char_p, c_size_t]),
    "rrt_attn_shard_len": (c_int, [P(Desc), c_int, c_int, P(c_int64)]),
    "rrt_attn_shard_positions": (c_int, [P(Desc), c_int, c_int, P(c_int64)]),
    "rrt_attn_desc_check": (c_int, [P(Desc), c_int, c_char_p, c_size_t]),
    "rrt_attn_plan_create": (c_int, [c_void_p, P(Desc), P(c_void_p)]),
    "rrt_attn_plan_run": (c_int, [c_void_p] * 5 + [P(ctypes.c_float)]),
    "rrt_attn_plan_run_bwd": (c_int, [c_void_p] * 5 + [P(ctypes.c_float)] + [c_void_p] * 4),
    "rrt_attn_plan_run_sinks": (c_int, [c_void_p] * 4 + [P(ctypes.c_float), c_void_p,
                                                         P(ctypes.c_float)]),
    "rrt_attn_plan_run_bwd_sinks": (c_int, [c_void_p] * 5 + [P(ctypes.c_float), c_void_p,
                                                             P(ctypes.c_float)]
                                    + [c_void_p] * 3 + [P(ctypes.c_float)]),
    "rrt_attn_plan_stats": (c_int, [c_void_p, P(Stats)]),
    "rrt_attn_plan_destroy": (c_int, [c_void_p]),
})

class Key(NamedTuple):
    """The full problem, as the fields of rrt_attn_desc (hashable: the plan
    cache's key). seq = -1 leaves the global length open (see with_seq)."""
    batch: int
    seq: int
    heads_q: int
    heads_kv: int
    head_dim: int
    scale: float
    causal: int
    layout: int
    dtype: int
    window_left: int
    window_right: int
    cu_seqlens: Optional[Tuple[int, ...]]
    softcap: float = 0.0  # version 3: soft-capping (0 off)
    sinks: int = 0  # version 3: 1 = the runs take one sink logit per query head
    cp_comm: int = 0  # rrt_cp_comm (ring)
    cp_inner: int = 0


def parse_cp_comm(name: str) -> Optional[int]:
    """The rrt_cp_comm of a name, or None when the library does not know it."""
    out = c_int()
    if not isinstance(name, str):
        return None
    ok = _lib.lib().rrt_cp_comm_parse(name.encode(), ctypes.byref(out)) == errors.SUCCESS
    return out.value if ok else None


def parse_layout(name: str) -> Optional[int]:
    """The rrt_attn_layout of a name, or None when the library does not know it."""
    out = c_int()
    if not isinstance(name, str):
        return None
    ok = _lib.lib().rrt_attn_layout_parse(name.encode(), ctypes.byref(out)) == errors.SUCCESS
    return out.value if ok else None


def make_desc(key: Key) -> Tuple[Desc, Optional[ctypes.Array]]:
    """The descriptor of `key`, and the cu_seqlens array it points to (keep
    it alive while the descriptor is used)."""
    cu = key.cu_seqlens
    cu_arr = (c_int64 * len(cu))(*cu) if cu is not None else None
    desc = Desc(ctypes.sizeof(Desc), DESC_MAGIC, DESC_VERSION, *key[:11], cu_arr,
                len(cu) - 1 if cu is not None else 0, key.softcap, key.sinks, key.cp_comm,
                key.cp_inner)
    return desc, cu_arr


def layout_key(seq: int, layout: int, cu: Optional[Tuple[int, ...]]) -> Key:
    """A key for the shard helpers only (they read seq, layout and the documents)."""
    return Key(1, seq, 1, 1, 1, 0.0, 0, layout, DTYPE_F32, -1, -1, cu)


def desc_problem(key: Key, nranks: int) -> Optional[str]:
    """rrt_attn_desc_check's message for `key`, or None when it is valid (local)."""
    desc, _keep = make_desc(key)
    msg = ctypes.create_string_buffer(512)
    if _lib.lib().rrt_attn_desc_check(ctypes.byref(desc), nranks, msg, len(msg)) == errors.SUCCESS:
        return None
    return msg.value.decode(errors="replace")


def shard_lens(key: Key, nranks: int) -> List[int]:
    """Every rank's shard length for a valid descriptor (rrt_attn_shard_len)."""
    desc, _keep = make_desc(key)
    out, lens = c_int64(), []
    for r in range(nranks):
        status = _lib.lib().rrt_attn_shard_len(ctypes.byref(desc), nranks, r, ctypes.byref(out))
        errors.check(status, None, "rrt_attn_shard_len")
        lens.append(out.value)
    return lens


def shard_positions(key: Key, nranks: int, rank: int) -> np.ndarray:
    """Global (packed) positions of `rank`'s shard rows, increasing (int64)."""
    n = shard_lens(key, nranks)[rank]
    desc, _keep = make_desc(key)
    pos = np.empty(n, dtype=np.int64)
    status = _lib.lib().rrt_attn_shard_positions(ctypes.byref(desc), nranks, rank,
                                                 pos.ctypes.data_as(P(c_int64)))
    errors.check(status, None, "rrt_attn_shard_positions")
    return pos


def with_seq(key: Key, rows: List[int]) -> Key:
    """`key` with its global length: the last document offset, else (dense)
    the sum of every rank's shard rows."""
    cu = key.cu_seqlens
    return key._replace(seq=cu[-1] if cu else sum(rows))


def key_hash(key: Key) -> int:
    """A hash of `key` that is the same in every process (Python's hash() of
    strings is not), as a non-negative int64."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


class Plan:
    """An rrt_attn_plan on a context: created collectively, destroyed
    locally when it is dropped or, at the latest, before its context closes."""

    def __init__(self, ctx: Context, key: Key):
        self.ctx, self.key = ctx, key
        desc, _keep = make_desc(key)
        handle = c_void_p()
        ctx.check(_lib.lib().rrt_attn_plan_create(ctx.handle, ctypes.byref(desc),
                                                  ctypes.byref(handle)), "rrt_attn_plan_create")
        self._box: List[Optional[int]] = [handle.value]
        close = _closer(self._box)
        ctx._adopt(self, close)
        weakref.finalize(self, close)

    @property
    def handle(self) -> int:
        """The rrt_attn_plan_t; raises once the plan (or its context) is closed."""
        if self._box[0] is None:
            raise ValueError("this ring attention plan is closed (its ringrt Context was closed)")
        return self._box[0]

    def run(self, q: int, k: int, v: int, o: int, lse: int, sinks: Optional[int] = None
            ) -> None:
        """Forward (collective); arguments are addresses in backend memory
        (`sinks`: f32 [heads_q], for a plan whose key has sinks)."""
        f32 = P(ctypes.c_float)
        if self.key.sinks:
            status = _lib.lib().rrt_attn_plan_run_sinks(self.handle, q, k, v,
                                                        ctypes.cast(sinks, f32), o,
                                                        ctypes.cast(lse, f32))
            self.ctx.check(status, "rrt_attn_plan_run_sinks")
            return
        status = _lib.lib().rrt_attn_plan_run(self.handle, q, k, v, o, ctypes.cast(lse, f32))
        self.ctx.check(status, "rrt_attn_plan_run")

    def run_bwd(self, q: int, k: int, v: int, o: int, lse: int, dout: int, dq: int, dk: int,
                dv: int, sinks: Optional[int] = None, dsinks: Optional[int] = None) -> None:
        """Backward (collective); arguments are addresses in backend memory
        (with sinks: `dsinks` receives their gradient, f32 [heads_q])."""
        f32 = P(ctypes.c_float)
        if self.key.sinks:
            status = _lib.lib().rrt_attn_plan_run_bwd_sinks(
                self.handle, q, k, v, o, ctypes.cast(lse, f32), dout, ctypes.cast(sinks, f32),
                dq, dk, dv, ctypes.cast(dsinks, f32))
            self.ctx.check(status, "rrt_attn_plan_run_bwd_sinks")
            return
        status = _lib.lib().rrt_attn_plan_run_bwd(self.handle, q, k, v, o, ctypes.cast(lse, f32),
                                                  dout, dq, dk, dv)
        self.ctx.check(status, "rrt_attn_plan_run_bwd")

    def stats(self) -> Dict[str, float]:
        """rrt_attn_plan_stats of the last run, as a dict."""
        out = Stats()
        self.ctx.check(_lib.lib().rrt_attn_plan_stats(self.handle, ctypes.byref(out)),
                       "rrt_attn_plan_stats")
        return {name: getattr(out, name) for name, _ in Stats._fields_}


def _closer(box: List[Optional[int]]):
    def close() -> None:
        handle, box[0] = box[0], None
        if handle is not None:
            _lib.lib().rrt_attn_plan_destroy(handle)
    return close


class PlanCache:
    """The last few plans of one context, least recently used evicted.

    Every rank must reuse its plan or every rank must create one (a hit on
    some ranks and a miss on others would pair a plan creation with a ring
    run). So the cache changes only where every rank has the same key (a
    lookup after the keys were compared, an insertion after a successful,
    agreed plan creation), and the caches of a context's ranks stay equal."""

    def __init__(self, capacity: int = 8):
        self.capacity = capacity
        self._plans: "OrderedDict[Key, Plan]" = OrderedDict()
        self.last: Optional[Plan] = None  # the plan of the latest call (for its stats)
        # Key hashes whose device inputs were probed once (ringrt.torch's
        # identical-shards check reads CUDA tensors on a problem's first call only).
        self.probed: set = set()

    def get(self, ctx: Context, key: Key) -> Plan:
        """The cached plan for `key` (every rank holds the same key), or a
        new one made collectively and cached."""
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = Plan(ctx, key)
            while len(self._plans) > self.capacity:
                self._plans.popitem(last=False)
        self._plans.move_to_end(key)
        self.last = plan
        return plan


_caches: "weakref.WeakKeyDictionary[Context, PlanCache]" = weakref.WeakKeyDictionary()


def cache_of(ctx: Context) -> PlanCache:
    """The plan cache of a context (created on first use)."""
    cache = _caches.get(ctx)
    if cache is None:
        cache = _caches[ctx] = PlanCache()
    return cache


def plan_for(ctx: Context, key: Key, local_rows: int, probe: int = -1
             ) -> Tuple[Plan, Key, List[int], List[int]]:
    """Collective: the plan, its full key, every rank's shard rows and every
    rank's `probe` (rank order).

    `key` leaves the global length open (seq = -1, see :func:`with_seq`).
    One small gather carries each rank's rows, the hash of its key and its
    probe (a hash of its inputs, -1 for none: the caller's identical-shards
    check rides on this gather instead of costing another); with equal key
    hashes every rank looks up the same key in its cache (a plan is created
    on a miss, collectively). With differing keys a plan is created without
    caching: its creation checks that every rank describes the same problem
    and reports the first differing field on every rank."""
    gathered = allgather_ints(ctx, [local_rows, key_hash(key), probe])
    rows = [g[0] for g in gathered]
    probes = [g[2] for g in gathered]
    key = with_seq(key, rows)
    if any(g[1] != gathered[0][1] for g in gathered):
        return Plan(ctx, key), key, rows, probes
    return cache_of(ctx).get(ctx, key), key, rows, probes
