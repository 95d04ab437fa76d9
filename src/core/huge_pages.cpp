#include "core/huge_pages.h"

#include <sys/mman.h>

#include <cstdlib>

#include "core/error.h"

namespace tps {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

void HugePageFree::operator()(uint8_t* p) const { std::free(p); }

HugePageBuffer allocate_huge_pages(size_t bytes) {
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHugePage, rounded == 0 ? kHugePage : rounded));
  if (p == nullptr) fail("out of memory for {} bytes", bytes);
  // Advice only: without transparent huge pages this is a no-op and reads still work.
  madvise(p, rounded, MADV_HUGEPAGE);
  return HugePageBuffer(p);
}

}  // namespace tps
