"""Which NCCL ringrt opens, so that ``import torch`` works before or after it.

libringrt.so never links NCCL: a cuda context opens it at run time, taking
first an NCCL already loaded in the process (torch's, when torch came
first), then ``RINGRT_NCCL_LIBRARY``, then ``libnccl.so.2`` (the system's).
A process holds one library per SONAME: had ringrt opened the system's
``libnccl.so.2`` before ``import torch``, torch would bind to that copy and
fail (``undefined symbol: ncclCommResume`` when it is older than torch's).
So when NCCL comes from a wheel in this environment (``nvidia-nccl-*``, what
torch's CUDA wheels use) and ``RINGRT_NCCL_LIBRARY`` is unset, importing
ringrt points ``RINGRT_NCCL_LIBRARY`` at that wheel's library: ringrt and
torch then share one NCCL whichever is imported first. A value you set is
never changed.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Optional


def wheel_nccl() -> Optional[str]:
    """The ``libnccl.so.2`` of the ``nvidia.nccl`` wheel in this environment,
    or ``None`` when there is none (found without importing torch)."""
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "lib", "libnccl.so.2")
        if os.path.exists(path):
            return path
    return None


def prefer_wheel_nccl() -> Optional[str]:
    """Set ``RINGRT_NCCL_LIBRARY`` to :func:`wheel_nccl` unless it is already
    set; returns the value now in effect (``None``: ringrt's default order)."""
    current = os.environ.get("RINGRT_NCCL_LIBRARY")
    if current:
        return current
    path = wheel_nccl()
    if path:
        os.environ["RINGRT_NCCL_LIBRARY"] = path
    return path
