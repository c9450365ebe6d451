#!/usr/bin/env python3
"""Training-step time of a small Hugging Face LlamaForCausalLM: ringrt
context parallelism (attn_implementation "ringrt", ringrt.torch.hf) over P
ranks against one process with transformers' "sdpa" (issue 33), CPU.

    mpirun -np 2 python bench/torch_llama_step.py --threads 1            # ringrt CP
    python bench/torch_llama_step.py --sdpa --threads 2                  # one process
    bench/torch_llama_step.sh [BUILD]                                    # both, JSON lines

A step is forward + backward + the gradient sum over the ranks
(ringrt.torch.hf.sum_gradients; none in one process) + AdamW. Per dtype
(float32, bfloat16) and mode (eager, and torch.compile'd unless
--no-compile), the median of --steps timed steps after --warmup untimed
ones (compiling happens there), every rank in step (a barrier before each
step; rank 0's time). One JSON line per measurement on stdout (rank 0).
Compare CP with P ranks x T threads against SDPA with P*T threads: the same
cores.

The model: hidden 64, 2 layers, 4 heads, 2 KV heads (GQA), vocab 128 (the
test's, tests/python/test_torch_hf.py), a global batch of --batch x --seq
random tokens (the same on every rank; each rank feeds the model its
zigzag shard), random weights from a fixed seed. --hidden / --layers /
--heads scale it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable, Dict, List, Optional

import torch


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdpa", action="store_true",
                    help="one process with transformers' sdpa (no ringrt, no MPI)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per process")
    ap.add_argument("--seq", type=int, default=2048, help="global sequence length")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10, help="timed steps (the median is reported)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--commit", default="")
    return ap.parse_args()


class Runner:
    """One side of the comparison: the model's attention, how a global
    batch becomes this process's inputs, the gradient sum, a barrier."""

    def __init__(self, sdpa: bool):
        self.sdpa = sdpa
        self.ctx: Any = None
        self.rank, self.size = 0, 1
        if not sdpa:
            import ringrt
            from ringrt.torch import hf
            self.hf = hf
            self.ctx = ringrt.Context()
            self.rank, self.size = self.ctx.rank, self.ctx.size
            hf.register(self.ctx)

    @property
    def attn(self) -> str:
        return "sdpa" if self.sdpa else self.hf.NAME

    def inputs(self, ids: torch.Tensor) -> Dict[str, Any]:
        if self.sdpa:
            return {"input_ids": ids, "labels": ids}
        return self.hf.shard_batch(ids, ids, ctx=self.ctx)

    def sum_gradients(self, model: torch.nn.Module) -> None:
        if not self.sdpa:
            self.hf.sum_gradients(model, self.ctx)

    def global_loss(self, loss: torch.Tensor) -> float:
        """The loss over the whole batch (CP: the sum of the ranks' parts)."""
        return (loss if self.sdpa else self.hf.reduce_loss(loss, self.ctx)).item()

    def barrier(self) -> None:
        if not self.sdpa:
            self.ctx.comm.Barrier()


def build_model(args: argparse.Namespace, runner: Runner, dtype: torch.dtype) -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(hidden_size=args.hidden, intermediate_size=2 * args.hidden,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=args.kv_heads, vocab_size=args.vocab,
                         max_position_embeddings=max(args.seq, 256), use_cache=False)
    torch.manual_seed(1234)  # the same weights on every rank
    model = LlamaForCausalLM._from_config(config, attn_implementation=runner.attn)
    return model.to(dtype).train()


def measure(args: argparse.Namespace, runner: Runner, dtype: torch.dtype,
            compiled: bool) -> Dict[str, Any]:
    model = build_model(args, runner, dtype)
    if compiled:
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    forward: Callable[..., Any] = torch.compile(model) if compiled else model
    gen = torch.Generator().manual_seed(7)
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), generator=gen)
    batch = runner.inputs(ids)
    times: List[float] = []
    losses: List[float] = []
    t_first: Optional[float] = None
    for i in range(args.warmup + args.steps):
        runner.barrier()
        t0 = time.perf_counter()
        loss = forward(**batch).loss
        loss.backward()
        runner.sum_gradients(model)
        opt.step()
        opt.zero_grad(set_to_none=True)
        dt = time.perf_counter() - t0
        if i == 0:
            t_first = dt
        if i >= args.warmup:
            times.append(dt)
        losses.append(runner.global_loss(loss))  # not timed
    row = {"bench": "torch_llama_step", "attn": runner.attn, "ranks": runner.size,
            "threads_per_rank": args.threads, "cores": runner.size * args.threads,
            "dtype": str(dtype).replace("torch.", ""), "mode": "compiled" if compiled else "eager",
            "seq": args.seq, "batch": args.batch, "seq_local": batch["input_ids"].shape[1],
            "hidden": args.hidden, "layers": args.layers, "heads": args.heads,
            "kv_heads": args.kv_heads, "vocab": args.vocab, "steps": args.steps,
            "step_s_median": statistics.median(times), "step_s_min": min(times),
            "first_step_s": t_first, "loss_first": losses[0], "loss_last": losses[-1],
            "torch": torch.__version__, "commit": args.commit}
    if compiled:  # where the ring call (or anything else) broke the graph
        breaks = torch._dynamo.utils.counters["graph_break"]
        row["graph_breaks"] = sum(breaks.values())
        row["graph_break_reasons"] = sorted({_first_line(r) for r in breaks})
    return row


def _first_line(reason: str) -> str:
    """A graph-break reason's explanation, on one line."""
    lines = [line.strip() for line in reason.splitlines() if line.strip()]
    explained = [line for line in lines if line.startswith("Explanation:")]
    return (explained or lines or [""])[0][:160]


def main() -> None:
    args = parse()
    torch.set_num_threads(args.threads)
    runner = Runner(args.sdpa)
    for name in args.dtypes.split(","):
        dtype = getattr(torch, name)
        for compiled in ([False] if args.no_compile else [False, True]):
            try:
                row = measure(args, runner, dtype, compiled)
            except Exception as e:  # noqa: B902 - a failed compile is a result too
                if not compiled:
                    raise
                row = {"bench": "torch_llama_step", "attn": runner.attn, "dtype": name,
                       "mode": "compiled", "error": f"{type(e).__name__}: {e}"[:500]}
            if runner.rank == 0:
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
