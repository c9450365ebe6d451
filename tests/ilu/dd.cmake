# The domain-decomposition orderings (dd, dd-color): permutation against a
# naive classification, factors and apply bitwise against the serial IKJ of
# that permutation, dd_blocks = 3 the same at every rank count, the schedule
# of the interiors (cpu; emu: the sync-free sweeps), bad dd_blocks (test_ilu_dd.c).
ringrt_test_exe(test_ilu_dd test_ilu_dd.c)
foreach(np 1 2 3)
  ringrt_twin(twin ${np} 3)
  ringrt_add_test(ilu.dd.cpu.np${np} test_ilu_dd NP ${np} BACKEND cpu LABELS ilu ${twin}
                  TIMEOUT 120)
endforeach()
ringrt_add_test(ilu.dd.emu.np2 test_ilu_dd NP 2 BACKEND emu ARGS small LABELS ilu TIMEOUT 180)
# The sync-free sweeps' dd schedule (interiors, then the interface rank by
# rank) at 3 ranks, also with a block's threads resumed in reverse order.
ringrt_add_test(ilu.dd.emu.np3 test_ilu_dd NP 3 BACKEND emu ARGS small LABELS ilu TIMEOUT 180)
ringrt_add_test(ilu.dd.emu.reverse.np3 test_ilu_dd NP 3 BACKEND emu ARGS small LABELS ilu
                TIMEOUT 180 ENV RINGRT_EMU_ORDER=reverse)
