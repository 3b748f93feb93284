// Memory for the weight copies kernels repack at session creation (MatMulNBits' panels,
// simd/nbits_packed.h), in 2 MiB pages where the system allows.
//
// Why: a decode step streams every weight once (SmolLM2-135M int8: ~150 MB a step). In 4 KiB
// pages that is a TLB miss and a page walk every 4 KiB, and the hardware prefetchers stop at
// each page's end; one 2 MiB page covers 512 of them. Linux gives 2 MiB pages to anonymous
// memory that is 2 MiB aligned and marked MADV_HUGEPAGE (transparent huge pages, in the
// common "madvise" mode); where it does not, this is plain zeroed memory.
//
// Small requests share 32 MiB regions (bump allocation, never reused), so the ~120 per-layer
// matrices of a model lie in huge pages too without each rounding up to 2 MiB; a region is
// unmapped when the last buffer carved from it (and the allocator, once it moves on) lets go.
#pragma once

#include <cstddef>
#include <memory>

#include "core/tensor.h"

namespace octet::cpu {

// A zero-filled, writable buffer of `bytes` (64-byte aligned) in huge-page-backed memory.
// Thread-safe. Throws std::bad_alloc when the system has no memory to map.
std::shared_ptr<Buffer> weight_pages(size_t bytes);

// The same in a mapping of its own, `bytes` rounded up to 4 KiB, whatever the size: only
// the whole 2 MiB pages inside it become huge pages, the rest stays in 4 KiB pages. Why:
// weight_pages' shared regions each leave a partly used huge page behind, resident in full
// (SmolLM2's 120 fp32 layer matrices of 1.3-7 MiB in them: +17 MB peak RSS), and its own
// regions round up to 2 MiB; here nothing past the buffer's own pages is ever resident.
// Costs one mapping per buffer: meant for big ones (the fp32 MatMul's prepacked B).
std::shared_ptr<Buffer> weight_pages_exact(size_t bytes);

}  // namespace octet::cpu
