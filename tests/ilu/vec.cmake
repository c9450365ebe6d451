# The multi-vector Krylov kernels (mdot, maxpy) of the cpu and emu tables.
ringrt_test_exe(test_vec_kernels test_vec_kernels.c)
ringrt_add_test(ilu.vec_kernels test_vec_kernels NP 1 LABELS ilu TIMEOUT 120)
