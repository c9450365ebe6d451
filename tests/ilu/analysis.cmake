# Part "analysis" of issue 13: RCM and multicolour positions computed
# without the whole pattern on every rank equal the serial orderings, for
# every rank count and an uneven partition.
ringrt_test_exe(test_ilu_order_dist test_ilu_order_dist.c)
foreach(np 1 2 3 4)
  ringrt_twin(twin ${np} 4)
  ringrt_add_test(ilu.order_dist.cpu.np${np} test_ilu_order_dist NP ${np} BACKEND cpu
                  LABELS ilu ${twin} TIMEOUT 60)
endforeach()
