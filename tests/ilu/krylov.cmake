# Krylov reporting (issue 13 item 3): reasons, FGMRES, callbacks, monitor,
# left side, the older result layout (test_krylov_reasons.c); the PETSc
# comparison is tests/python/krylov.cmake. The np 3 run is the twin the
# sanitizer job leaves out (np 1 and the emu np 2 run there).
ringrt_test_exe(test_ilu_krylov_reasons test_krylov_reasons.c)
foreach(np 1 3)
  ringrt_twin(twin ${np} 3)
  ringrt_add_test(ilu.krylov_reasons.cpu.np${np} test_ilu_krylov_reasons NP ${np} BACKEND cpu
                  LABELS ilu ${twin} TIMEOUT 120)
endforeach()
ringrt_add_test(ilu.krylov_reasons.emu.np2 test_ilu_krylov_reasons NP 2 BACKEND emu ARGS small
                LABELS ilu TIMEOUT 180)
