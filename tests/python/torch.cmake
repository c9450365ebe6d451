# ringrt.torch (ring attention autograd, shard/unshard): one script per rank
# count covering many small cases (import torch costs ~3 s per process); the
# np 2 run adds one tiny case on the emu backend (the GPU code path).
ringrt_python_test(py_torch_attn_np2 test_torch_attn.py NP 2 ARGS emu LABELS torch)
ringrt_python_test(py_torch_attn_np3 test_torch_attn.py NP 3 LABELS torch)
# The docs' training example (docs/python.md), a few steps, checked against
# the same model on the whole sequence in one process.
ringrt_python_test(py_torch_example_np2 ../../examples/python/train_ring_attention.py NP 2
                   ARGS --check --steps 3 LABELS torch)
# A good guest: affinity and torch's threads unchanged unless asked.
ringrt_python_test(py_torch_guest_np2 test_guest.py NP 2 LABELS torch)
set_tests_properties(py_torch_guest_np2 PROPERTIES ENVIRONMENT_MODIFICATION "RINGRT_BIND=unset:")
# flash-attn's calling convention, qkv_format, the identical-shards check and
# misuse raising on every rank (np 1-3, cpu backend).
foreach(np 1 2 3)
  ringrt_python_test(py_torch_flash_np${np} test_torch_flash.py NP ${np} LABELS torch)
endforeach()
# torchrun --nproc_per_node 2 (no MPI launcher): Context() refuses in every process.
ringrt_python_test(py_torchrun_refused test_torchrun.py LABELS torch)
# Hugging Face transformers (ringrt.torch.hf): a small LlamaForCausalLM
# trained 20 steps with attn_implementation "ringrt" against "sdpa" in one
# process (dense and packed documents), and misuse raising on every rank.
ringrt_python_test(py_torch_hf_np2 test_torch_hf.py NP 2 LABELS torch)
# np 3: uneven zigzag shards (64 and 96 tokens over 6 chunks), 3 steps.
ringrt_python_test(py_torch_hf_np3 test_torch_hf.py NP 3 ARGS --steps 3 LABELS torch)
