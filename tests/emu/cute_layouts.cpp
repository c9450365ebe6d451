// CuTe's own fragment layouts, printed as a table for test_emu_cute.c: the
// ground truth for the emulator's mma.sync and ldmatrix (tc_emu.cpp) that
// does not come from the same reading of the PTX manual. Host code only
// (CuTe's layout algebra is host-usable), compiled by nvcc against the
// headers of the nvidia-cutlass wheel (cutlass_library/source/include) by
// tests/emu/cute_truth.sh.
//
// Lines: "A K lane v m k", "B K lane v k n", "C K lane v m n" (v: the value
// index, register v / 2, half v % 2 for A and B; register v for C), and
// "L trans num lane reg half j r c": register reg, half `half` of `lane`
// after ldmatrix .x`num` holds column c of row r of matrix j, where lane 8j
// + r gave row r of matrix j.
#include <cstdio>
#include <map>

#include <cute/atom/copy_traits_sm75.hpp>
#include <cute/atom/mma_traits_sm80.hpp>
#include <cute/tensor.hpp>

using namespace cute;

template <class Op> static void dump_mma(int K) {
  using T = MMA_Traits<Op>;
  const int M = 16, N = 8;
  auto a = typename T::ALayout{}; // (thread, value) -> m + M k
  auto b = typename T::BLayout{}; // (thread, value) -> n + N k
  auto c = typename T::CLayout{}; // (thread, value) -> m + M n
  for (int l = 0; l < 32; l++) {
    for (int v = 0; v < int(size<1>(a)); v++) {
      int i = a(l, v);
      std::printf("A %d %d %d %d %d\n", K, l, v, i % M, i / M);
    }
    for (int v = 0; v < int(size<1>(b)); v++) {
      int i = b(l, v);
      std::printf("B %d %d %d %d %d\n", K, l, v, i / N, i % N);
    }
    for (int v = 0; v < int(size<1>(c)); v++) {
      int i = c(l, v);
      std::printf("C %d %d %d %d %d\n", K, l, v, i % M, i / M);
    }
  }
}

// Copy_Traits give bit offsets into the source (the lanes' rows): the
// lane and bit that the lowest lane providing an offset reads there.
template <class Op> static void dump_ldsm(int trans, int num) {
  using T = Copy_Traits<Op>;
  auto src = typename T::SrcLayout{};
  auto dst = typename T::DstLayout{};
  std::map<int, std::pair<int, int>> from;
  for (int l = 31; l >= 0; l--)
    for (int bit = 0; bit < int(size<1>(src)); bit++)
      from[src(l, bit)] = {l, bit};
  for (int l = 0; l < 32; l++)
    for (int bit = 0; bit < int(size<1>(dst)); bit += 16) {
      auto s = from.at(dst(l, bit));
      std::printf("L %d %d %d %d %d %d %d %d\n", trans, num, l, bit / 32, (bit % 32) / 16,
                  s.first / 8, s.first % 8, s.second / 16);
    }
}

int main() {
  dump_mma<SM80_16x8x16_F32BF16BF16F32_TN>(16);
  dump_mma<SM80_16x8x8_F32BF16BF16F32_TN>(8);
  dump_ldsm<SM75_U32x1_LDSM_N>(0, 1);
  dump_ldsm<SM75_U32x2_LDSM_N>(0, 2);
  dump_ldsm<SM75_U32x4_LDSM_N>(0, 4);
  dump_ldsm<SM75_U16x2_LDSM_T>(1, 1);
  dump_ldsm<SM75_U16x4_LDSM_T>(1, 2);
  dump_ldsm<SM75_U16x8_LDSM_T>(1, 4);
  return 0;
}
