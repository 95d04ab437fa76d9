// Sets how float weights multiply (FloatMath, kernels/matmul.h) for the life of the
// object and restores the previous choice after.
#pragma once

#include "kernels/matmul.h"

namespace tps::test {

class ScopedFloatMath {
 public:
  // The caller checks that the CPU runs `m` first (and skips the test when not).
  explicit ScopedFloatMath(FloatMath m) : saved_(active_float_math()) { set_float_math(m); }
  ~ScopedFloatMath() { set_float_math(saved_); }
  ScopedFloatMath(const ScopedFloatMath&) = delete;
  ScopedFloatMath& operator=(const ScopedFloatMath&) = delete;

 private:
  FloatMath saved_;
};

}  // namespace tps::test
