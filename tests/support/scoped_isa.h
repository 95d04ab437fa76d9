// Forces a process-wide kernel choice (the instruction-set path, the float math) for the
// life of the object and restores the previous choice after, so tests can run every
// kernel path the CPU has.
#pragma once

#include "kernels/matmul.h"

namespace tps::test {

template <typename T, T (*kGet)(), void (*kSet)(T)>
class ScopedChoice {
 public:
  // The caller checks that the CPU runs `value` first (and skips the test when not).
  explicit ScopedChoice(T value) : saved_(kGet()) { kSet(value); }
  ~ScopedChoice() { kSet(saved_); }
  ScopedChoice(const ScopedChoice&) = delete;
  ScopedChoice& operator=(const ScopedChoice&) = delete;

 private:
  T saved_;
};

using ScopedIsa = ScopedChoice<Isa, active_isa, set_active_isa>;
using ScopedFloatMath = ScopedChoice<FloatMath, active_float_math, set_float_math>;

}  // namespace tps::test
