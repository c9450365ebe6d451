/* The emulator's register limit (src/kernels/emu/emu_regs.cpp) on a table
 * written here: a kernel with R registers a thread may run T threads a
 * block only if ceil(T / 32) warps x (R x 32 rounded up to 256) <= 65,536,
 * as on sm_80/sm_90. 65 registers: 2,304 a warp, so 28 warps (896 threads)
 * fit and 29 (928) do not; without the rounding to 256 (2,080 a warp) 31
 * warps would fit, so 928 also tests the rounding. 255 registers (the most
 * ptxas gives) fit 256 threads (8 x 8,160). A kernel the table lacks runs,
 * unless RINGRT_EMU_REGS_STRICT=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/device.h"
#include "emu_kernels.h"
#include "test_util.h"

static rrt_status sum_dyn(int threads, double *out) {
  static double x[1024];
  for (int i = 0; i < 1024; i++)
    x[i] = 1.0;
  return emu_block_sum_dyn_emu(NULL, x, threads, out, 1, threads);
}

int main(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/ringrt-emu-regs-XXXXXX", rrt_test_tmpdir());
  int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    printf("cannot write a register table in %s\n", rrt_test_tmpdir());
    return 1;
  }
  fprintf(f, "# test table\nk_block_sum_dyn sm_80 60\nk_block_sum_dyn sm_90 65\n"
             "k_block_sum_static sm_90 255\n");
  fclose(f);
  setenv("RINGRT_EMU_REGS", path, 1); /* read at the first launch */
  unsetenv("RINGRT_EMU_REGS_STRICT");

  double out = 0.0;
  /* the larger count of the two targets (65) is the one checked */
  CHECK_OK(sum_dyn(512, &out));
  CHECK_MSG(out == 512.0, "a launch within the limit ran wrongly: %g", out);
  CHECK_OK(sum_dyn(896, &out));
  CHECK(sum_dyn(928, &out) == RRT_ERR_INVALID_ARG);
  char note[512] = "";
  rrt_launch_note_take(note, sizeof note);
  CHECK_MSG(strstr(note, "65 registers a thread x 928 threads") != NULL,
            "the refusal does not name the registers and threads: \"%s\"", note);
  CHECK(sum_dyn(1024, &out) == RRT_ERR_INVALID_ARG);

  /* 255 registers x 256 threads */
  static float xs[EMU_RED_BLOCK];
  float outs = 0.0f;
  CHECK_OK(emu_block_sum_static_emu(NULL, xs, EMU_RED_BLOCK, &outs, 1));

  /* a kernel outside the table: unchecked, or refused when strict */
  int xw[64] = {0}, outw[64];
  CHECK_OK(emu_warp_masks_emu(NULL, xw, outw, 1, 64));
  setenv("RINGRT_EMU_REGS_STRICT", "1", 1);
  CHECK(emu_warp_masks_emu(NULL, xw, outw, 1, 64) == RRT_ERR_INVALID_ARG);
  rrt_launch_note_take(note, sizeof note);
  CHECK_MSG(strstr(note, "k_warp_masks is not in the register table") != NULL, "note: \"%s\"",
            note);
  unsetenv("RINGRT_EMU_REGS_STRICT");
  remove(path);
  if (test_result() == 0) printf("emu register limit: done\n");
  return test_result();
}
