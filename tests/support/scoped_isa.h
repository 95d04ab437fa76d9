// Forces one instruction-set path for the life of the object and restores the previous
// choice after, so tests can run every kernel path the CPU has.
#pragma once

#include "kernels/matmul.h"

namespace tps::test {

class ScopedIsa {
 public:
  // The caller checks cpu_supports(isa) first (and skips the test when not).
  explicit ScopedIsa(Isa isa) : saved_(active_isa()) { set_active_isa(isa); }
  ~ScopedIsa() { set_active_isa(saved_); }
  ScopedIsa(const ScopedIsa&) = delete;
  ScopedIsa& operator=(const ScopedIsa&) = delete;

 private:
  Isa saved_;
};

}  // namespace tps::test
