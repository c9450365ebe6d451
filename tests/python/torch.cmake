# ringrt.torch (ring attention autograd, shard/unshard): one script per rank
# count covering many small cases (import torch costs ~3 s per process); the
# np 2 run adds one tiny case on the emu backend (the GPU code path).
ringrt_python_test(py_torch_attn_np2 test_torch_attn.py NP 2 ARGS emu LABELS torch)
ringrt_python_test(py_torch_attn_np3 test_torch_attn.py NP 3 LABELS torch)
# The docs' training example (docs/python.md), a few steps, checked against
# the same model on the whole sequence in one process; started the way the
# docs say, by launch/ringrt-run (which adds what Open MPI wants as root or
# oversubscribed).
add_test(NAME py_torch_example_np2
         COMMAND ${PROJECT_SOURCE_DIR}/launch/ringrt-run -n 2 --mpirun ${MPIEXEC_EXECUTABLE} --
                 ${RINGRT_TEST_RANK_WRAPPER} ${RINGRT_PYTHON}
                 ${PROJECT_SOURCE_DIR}/examples/python/train_ring_attention.py --check --steps 3)
set_tests_properties(py_torch_example_np2 PROPERTIES
  ENVIRONMENT "${RINGRT_TEST_ENV};RINGRT_LIBRARY=$<TARGET_FILE:ringrt>;PYTHONPATH=${PROJECT_SOURCE_DIR}/python;PYTHONDONTWRITEBYTECODE=1"
  LABELS "python;mpi;torch" TIMEOUT 300)
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
# The custom operators: torch.compile(fullgraph) over every option with the
# eager bits, eager bits against the C API called directly, autocast,
# misuse inside a compiled function (np 1-3; np 2 adds a compiled emu case).
ringrt_python_test(py_torch_compile_np1 test_torch_compile.py NP 1 LABELS torch)
ringrt_python_test(py_torch_compile_np2 test_torch_compile.py NP 2 ARGS emu LABELS torch)
ringrt_python_test(py_torch_compile_np3 test_torch_compile.py NP 3 ARGS --lean LABELS torch)
# Context.from_process_group / from_device_mesh with a gloo group under
# mpirun; np 3 adds a subgroup; mismatched rank mappings raise everywhere.
foreach(np 2 3)
  ringrt_python_test(py_torch_dist_np${np} test_torch_dist.py NP ${np} LABELS torch)
endforeach()
# Hugging Face transformers (ringrt.torch.hf): a small LlamaForCausalLM
# trained 20 steps with attn_implementation "ringrt" against "sdpa" in one
# process (dense and packed documents), misuse raising on every rank, and
# the model compiled with fullgraph=True (aot_eager: the eager bits).
ringrt_python_test(py_torch_hf_np2 test_torch_hf.py NP 2 ARGS --compile LABELS torch)
# np 3: uneven zigzag shards (64 and 96 tokens over 6 chunks), 3 steps.
ringrt_python_test(py_torch_hf_np3 test_torch_hf.py NP 3 ARGS --steps 3 LABELS torch)
