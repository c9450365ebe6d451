"""ringrt.torch.hf: a Hugging Face transformers LlamaForCausalLM trained with
attn_implementation="ringrt" (context parallel over the ranks of the job)
against the same model in one process with transformers' "sdpa" (every
rank runs the reference on the whole batch), under mpirun.

- A small LlamaConfig (hidden 64, 2 layers, 4 heads, 2 KV heads: GQA;
  vocab 128), random weights from a fixed seed, nothing downloaded.
- Dense: batch 2 x 64 tokens; packed: one row of 96 tokens holding 4
  documents (position_ids restart at 0; one document shorter than 2P
  chunks), the reference masking them through transformers' own
  packed-sequence detection and labels set to -100 at document starts.
- 20 AdamW steps in float32: the global loss (hf.reduce_loss of the ranks'
  partial losses) agrees with the reference's to 1e-5 relative at every
  step, and at step 0 every parameter gradient (hf.sum_gradients) to 1e-5
  relative to its largest reference element. Both sides do the same f32
  arithmetic but for the attention, whose ring result agrees with torch's
  to ~1e-6 (test_torch_attn.py); 20 steps of AdamW at lr 1e-3 move the
  weights by ~2e-2, so differences stay at that order (measured: below
  2e-6 in loss).
- Misuse raises on every rank, never hangs: a forgotten position_ids,
  packed position_ids without cu_seq_lens (InvalidArgument pointing at
  shard_batch); a padding attention_mask on one rank, generate (a cache
  outside training), attention dropout in training (NotImplementedError
  naming the argument); a softcap on one rank only (InvalidArgument naming
  it); and shard_batch's own checks.
- Gemma 2's softcap and gpt-oss's sinks (s_aux) reach the kernels: the
  attention function gives ring_attention's result with them, bit for bit.
- np 3 (--steps 3): uneven zigzag shards (21/22/21 rows of 64 tokens).
- --compile (np 2): torch.compile(model, fullgraph=True, backend="aot_eager")
  on the packed batch gives the eager loss and gradients bit for bit.
"""
from __future__ import annotations

import copy
import sys
from typing import Dict, Tuple

import torch

torch.set_num_threads(1)  # 2 cores: one thread per rank

import rrt_testing  # noqa: E402
import ringrt  # noqa: E402
from ringrt import errors  # noqa: E402
from ringrt.torch import hf  # noqa: E402
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig,  # noqa: E402
                          MistralForCausalLM, PreTrainedModel)

STEPS = 20
TOL = 1e-5
VOCAB = 128
FAMILIES = {"llama": (LlamaConfig, LlamaForCausalLM),
            "mistral": (MistralConfig, MistralForCausalLM)}


def models(family: str = "llama", **extra) -> Tuple[PreTrainedModel, PreTrainedModel]:
    """The reference ("sdpa") and its copy with attn_implementation "ringrt"
    (same weights on every rank: a fixed seed)."""
    config_class, model_class = FAMILIES[family]
    config = config_class(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
                          max_position_embeddings=256, use_cache=False, **extra)
    torch.manual_seed(1234)
    ref = model_class._from_config(config, attn_implementation="sdpa")
    cp = copy.deepcopy(ref)
    cp.set_attn_implementation(hf.NAME)
    assert cp.config._attn_implementation == hf.NAME
    assert ref.config._attn_implementation == "sdpa"
    return ref, cp


def rel(got: torch.Tensor, want: torch.Tensor) -> float:
    return ((got.double() - want.double()).abs().max() /
            want.double().abs().max().clamp_min(1e-30)).item()


def dense_batch(step: int) -> Dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(1000 + step)  # the same global batch on every rank
    ids = torch.randint(0, VOCAB, (2, 64), generator=gen)
    return {"input_ids": ids, "labels": ids.clone()}


#: Packed document lengths (sum 96): one shorter than 2P chunks at np 2 and 3.
DOCS = (29, 3, 40, 24)


def packed_batch(step: int) -> Dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(2000 + step)
    ids = torch.randint(0, VOCAB, (1, sum(DOCS)), generator=gen)
    pos = torch.cat([torch.arange(n) for n in DOCS]).unsqueeze(0)
    return {"input_ids": ids, "labels": ids.clone(), "position_ids": pos}


def reference_inputs(batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """The one-process batch: labels -100 at document starts (as
    transformers' DataCollatorWithFlattening makes them), so the last token
    of a document does not predict the next one's first."""
    ref = dict(batch)
    if "position_ids" in batch:
        labels = batch["labels"].clone()
        labels[batch["position_ids"] == 0] = -100
        ref["labels"] = labels
    return ref


def train(ctx: ringrt.Context, what: str, make_batch, steps: int = STEPS, **model) -> None:
    ref, cp = models(**model)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-3)
    opt_cp = torch.optim.AdamW(cp.parameters(), lr=1e-3)
    worst = 0.0
    for step in range(steps):
        batch = make_batch(step)
        want = ref(**reference_inputs(batch)).loss
        want.backward()
        mine = hf.shard_batch(batch["input_ids"], batch["labels"], batch.get("position_ids"),
                              ctx=ctx)
        local = cp(**mine).loss
        local.backward()
        hf.sum_gradients(cp, ctx)
        got = hf.reduce_loss(local, ctx)
        err = abs(got.item() - want.item()) / abs(want.item())
        worst = max(worst, err)
        assert err <= TOL, f"{what} step {step}: loss {got.item():.8f}, sdpa {want.item():.8f}"
        if step == 0:
            check_gradients(what, ref, cp)
        for opt in (opt_ref, opt_cp):
            opt.step()
            opt.zero_grad()
    if ctx.rank == 0:
        print(f"{what}: {steps} steps, largest relative loss difference {worst:.2e}")


def check_gradients(what: str, ref: PreTrainedModel, cp: PreTrainedModel) -> None:
    named = dict(cp.named_parameters())
    for name, p in ref.named_parameters():
        g = named[name].grad
        assert g is not None, f"{what}: no gradient for {name}"
        err = rel(g, p.grad)
        assert err <= TOL, f"{what}: gradient of {name} differs by {err:.2e} (relative)"


# ---- misuse ---------------------------------------------------------------------------
def everywhere(exc, fn, match: str) -> None:
    """fn raises `exc` on every rank, its message containing `match`
    (InvalidArgument: RemoteError on a rank that was fine, naming the
    failing rank's problem)."""
    try:
        fn()
    except Exception as e:  # noqa: B902 - the type is checked below
        remote = exc is errors.InvalidArgument and isinstance(e, errors.RemoteError)
        assert isinstance(e, exc) or remote, f"{type(e).__name__} raised, not {exc.__name__}: {e}"
        assert match in str(e), f"{match!r} not in {str(e)!r}"
        return
    raise AssertionError(f"{exc.__name__} not raised")


def check_misuse(ctx: ringrt.Context) -> None:
    _, cp = models()
    batch = dense_batch(0)
    mine = hf.shard_batch(batch["input_ids"], ctx=ctx)
    # transformers' default position_ids are arange(seqlen_local): wrong on a shard
    if ctx.size > 1:
        everywhere(errors.InvalidArgument, lambda: cp(input_ids=mine["input_ids"]), "shard_batch")
    # a padding mask, on the last rank only: NotImplementedError everywhere
    mask = torch.ones_like(mine["input_ids"])
    if ctx.rank == ctx.size - 1:
        mask[0, 0] = 0
    everywhere(NotImplementedError, lambda: cp(**mine, attention_mask=mask), "attention_mask")
    cp(**mine, attention_mask=torch.ones_like(mine["input_ids"]))  # all ones: nothing masked
    # packed position_ids but no cu_seq_lens (the batch cut by hand)
    packed = hf.shard_batch(**{k: v for k, v in packed_batch(0).items() if k != "labels"},
                            ctx=ctx)
    assert packed["cu_seq_lens_q"].tolist() == [0, 29, 32, 72, 96]
    if ctx.size > 1:
        everywhere(errors.InvalidArgument,
                   lambda: cp(input_ids=packed["input_ids"], position_ids=packed["position_ids"]),
                   "restart")
    # generation: the prefill already refuses (use_cache outside training)
    cp.eval()
    everywhere(NotImplementedError,
               lambda: cp.generate(mine["input_ids"], position_ids=mine["position_ids"],
                                   max_new_tokens=2, use_cache=True), "use_cache")
    cp(**mine)  # an eval forward without a cache is fine
    # attention dropout while training; fine in eval mode
    _, cp_drop = models(attention_dropout=0.1)
    everywhere(NotImplementedError, lambda: cp_drop(**mine), "dropout")
    cp_drop.eval()
    cp_drop(**mine)
    # softcap (Gemma 2's attn_logit_softcapping), on rank 0 only
    from transformers import AttentionInterface
    attn = AttentionInterface()[hf.NAME]
    layer = cp.model.layers[0].self_attn
    q, k = torch.randn(1, 4, 8, 16), torch.randn(1, 2, 8, 16)
    softcap = 50.0 if ctx.rank == 0 else None
    everywhere(errors.InvalidArgument, lambda: attn(layer, q, k, k, None, softcap=softcap),
               "softcap")
    # passed through: softcap and sinks (s_aux) as ring_attention takes them
    gen = torch.Generator().manual_seed(100 + ctx.rank)  # shards differ between ranks
    q, k = torch.randn(1, 4, 8, 16, generator=gen), torch.randn(1, 2, 8, 16, generator=gen)
    sinks = torch.tensor([0.5, 1.0, 1.5, 2.0])
    got = attn(layer, q, k, k, None, softcap=5.0, s_aux=sinks)[0]
    want = ringrt.torch.ring_attention(*(t.transpose(1, 2) for t in (q, k, k)), causal=True,
                                       softcap=5.0, sinks=sinks, ctx=ctx)
    assert torch.equal(got, want), "softcap/sinks through the HF attention function"
    # shard_batch's own checks (local: every rank passes the same global batch)
    bad = packed_batch(0)
    bad["position_ids"][0, 5] = 7
    rrt_testing.raises(errors.InvalidArgument,
                       lambda: hf.shard_batch(bad["input_ids"], position_ids=bad["position_ids"],
                                              ctx=ctx), match="position_ids[0, 5] = 7")
    two = torch.cat([packed_batch(0)["position_ids"]] * 2)
    rrt_testing.raises(errors.InvalidArgument,
                       lambda: hf.shard_batch(torch.zeros(2, 96, dtype=torch.long),
                                              position_ids=two, ctx=ctx), match="batch 1")
    rrt_testing.raises(errors.InvalidArgument,
                       lambda: hf.shard_batch(batch["input_ids"], batch["labels"][:, :5], ctx=ctx),
                       match="labels")


def check_shift() -> None:
    """shift_labels against a hand-written expectation."""
    labels = torch.tensor([[1, 2, 3, 4, 5, 6]])
    assert hf.shift_labels(labels).tolist() == [[2, 3, 4, 5, 6, -100]]
    assert hf.shift_labels(labels, [0, 2, 6], ignore_index=-1).tolist() == [[2, -1, 4, 5, 6, -1]]


def check_compiled(ctx: ringrt.Context) -> None:
    """torch.compile(model, fullgraph=True) over the packed batch: the ring
    call is a custom operator and the hf function adds no graph break;
    with backend "aot_eager" (no code generation: seconds, not minutes)
    the loss and every gradient equal the eager ones bit for bit."""
    _, cp = models()
    mine = hf.shard_batch(**packed_batch(0), ctx=ctx)

    def run(model) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
        loss = model(**mine).loss
        loss.backward()
        grads = {n: p.grad.clone() for n, p in cp.named_parameters()}
        cp.zero_grad()
        return loss.detach(), grads

    loss_e, grads_e = run(cp)
    loss_c, grads_c = run(torch.compile(cp, fullgraph=True, backend="aot_eager"))
    assert torch.equal(loss_c, loss_e), f"compiled loss {loss_c.item()} != eager {loss_e.item()}"
    for name, g in grads_e.items():
        assert torch.equal(grads_c[name], g), f"compiled gradient of {name} differs from eager"
    torch._dynamo.reset()


def main() -> None:
    # --steps N: fewer training steps (the np 3 run: uneven shards)
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else STEPS
    ctx = ringrt.default_context()
    assert hf.register() == hf.NAME
    check_shift()
    train(ctx, "dense", dense_batch, steps)
    train(ctx, "packed", packed_batch, steps)
    # transformers' sliding_window (keys within 20 positions back) as ring
    # attention's window; a few steps suffice for the mask
    train(ctx, "mistral, sliding window 20", dense_batch, steps=3, family="mistral",
          sliding_window=20)
    check_misuse(ctx)
    if "--compile" in sys.argv:
        check_compiled(ctx)


rrt_testing.run(main)
