// Copies and bitwise comparisons of the short arrays a step passes around
// (qpos, qvel, ctrl, a few dofs' velocities), as inline loops.
//
// std::copy of doubles and std::memcmp become calls of libc's memmove and
// memcmp: a jump through the procedure linkage table and a dispatch on the
// size, several times the cost of moving three doubles, and on the smallest
// models a step made about thirty such calls (docs/cenic-math.md
// §8.9.5). The loops below copy and compare the same bits;
// they may alias (the compiler then checks the overlap, as memmove does), so
// GCC does not turn them back into library calls.
#pragma once

#include <cstring>

namespace mjcenic {

// y[0..n) = x[0..n), bit for bit.
inline void CopyShort(const double* x, long n, double* y) {
  for (long i = 0; i < n; ++i) y[i] = x[i];
}

// True if x[0..n) and y[0..n) hold the same bits (memcmp's equality, not
// ==: −0 differs from +0, a NaN equals itself). Each 8-byte memcmp is a load
// and a compare, inline.
inline bool SameBits(const double* x, const double* y, long n) {
  for (long i = 0; i < n; ++i)
    if (std::memcmp(x + i, y + i, sizeof(double)) != 0) return false;
  return true;
}

}  // namespace mjcenic
