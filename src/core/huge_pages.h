#pragma once
// Memory for data that is streamed end to end on every token (packed weights): 2 MiB
// aligned and advised to the kernel as huge pages. Streaming through 4 KiB pages costs
// a TLB miss every 4 KiB, which under a hypervisor's nested paging holds measured
// read bandwidth here to about 60 % of what huge pages reach.
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tps {

struct HugePageFree {
  void operator()(uint8_t* p) const;
};
using HugePageBuffer = std::unique_ptr<uint8_t, HugePageFree>;

// Uninitialized; fails (tps::Error) when the memory is not there.
HugePageBuffer allocate_huge_pages(size_t bytes);

}  // namespace tps
