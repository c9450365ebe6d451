"""Load order (issue 11): ``import ringrt`` + a Context before ``import
torch``, and after it, both work with this build's libringrt.so, each in a
fresh interpreter (an MPI singleton). Plus the stream contract of a cpu
context (ringrt.streams) and the NCCL that ringrt would open next to torch.

What it proves depends on the build and the node, and it says so: a CUDA
build has the static CUDA runtime and NCCL loader in the library (the case
that used to fail with ``undefined symbol: ncclCommResume``); on a GPU node
the Context is a cuda one and really opens NCCL before torch.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Dict

BODY = """
import json, ringrt
from ringrt import errors, streams
ctx = ringrt.Context()
info = ctx.info()
out = {"backend": ctx.backend, "cuda": info["cuda_version"],
       "nccl": info["nccl_version"], "nccl_library": streams.nccl_library(ctx),
       "ringrt_nccl_library": __import__("os").environ.get("RINGRT_NCCL_LIBRARY", "")}
if ctx.backend == "cpu":
    streams.set_stream(ctx, None)
    assert streams.get_stream(ctx) is None
    try:
        streams.set_stream(ctx, 12345)
        raise AssertionError("a stream on a cpu context was accepted")
    except errors.InvalidArgument as e:
        assert "no CUDA streams" in str(e), str(e)
    try:
        streams.set_stream(ctx, "stream")
        raise AssertionError("a str stream was accepted")
    except TypeError:
        pass
"""
USE_TORCH = """
import torch
assert torch.ones(4).sum().item() == 4.0
if torch.cuda.is_available():
    assert torch.ones(4, device="cuda").sum().item() == 4.0
out["torch"] = torch.__version__
"""
END = """
ctx.close()
print("RESULT " + json.dumps(out))
"""
CASES = {
    "ringrt first": BODY + USE_TORCH + END,
    "torch first": "import torch\n" + BODY + USE_TORCH + END,
}


def child_env() -> Dict[str, str]:
    """The test's environment without a parent MPI job's variables (a
    singleton must not think it is a rank of this job)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("OMPI_COMM_WORLD", "OMPI_MCA_ess", "PMIX_", "OMPI_FILE"))}


def run_case(name: str, code: str) -> Dict[str, str]:
    """Run one case in a fresh interpreter; its RESULT line as a dict."""
    p = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                       text=True, timeout=240)
    if p.returncode != 0:
        raise AssertionError(f"{name}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, f"{name}: no result\n{p.stdout}\n{p.stderr}"
    return json.loads(line[-1][len("RESULT "):])


def nccl_next_to_torch() -> None:
    """The NCCL ringrt's loader would open before torch (RINGRT_NCCL_LIBRARY
    as ``import ringrt`` leaves it) opened first, then ``import torch``."""
    code = ("import ctypes, os, ringrt\n"
            "p = os.environ.get('RINGRT_NCCL_LIBRARY')\n"
            "print('RESULT ' + repr(p))\n"
            "if p:\n"
            "    ctypes.CDLL(p, ctypes.RTLD_LOCAL)\n"
            "    import torch\n")
    p = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                       text=True, timeout=240)
    assert p.returncode == 0, f"torch after ringrt's NCCL choice failed:\n{p.stderr}"
    print(f"ringrt's NCCL next to torch: {p.stdout.strip()} then import torch: ok")


def main() -> None:
    """Every case must work; print what each proves."""
    for name, code in CASES.items():
        r = run_case(name, code)
        print(f"{name}: ok ({json.dumps(r)})")
    cuda_build = r["cuda"] != "none"
    if not cuda_build:
        print("NOTE: CPU-only build of libringrt.so: no CUDA runtime or NCCL loader in it, "
              "so this proves less than a CUDA build")
    elif r["backend"] != "cuda":
        print("NOTE: CUDA build, no usable GPU here: the contexts were cpu ones, NCCL was not "
              "opened; the library itself loaded before torch (what used to fail)")
    else:
        assert r["nccl_library"], "a cuda context without an NCCL library"
        print(f"GPU node: the cuda context opened {r['nccl_library']} before torch")
    nccl_next_to_torch()
    print("PASS")


if __name__ == "__main__":
    main()
