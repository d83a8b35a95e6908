// Fresh anonymous memory for set-up, backed with physical pages in one system call rather than one
// page fault per 4 KiB page, and reused by the next benchmark of a shared process. A set-up that
// writes a large fresh buffer element by element pays a trap per page; in a virtual machine that
// trap, and the first user access to each newly mapped page, cost microseconds (docs/guide.md,
// "What a sample costs"). The timed loop sees resident, written pages either way: this changes what
// set-up costs, not what is timed. Arms that time page faults or allocation (copy.page_state's
// faulting arm, copy.wrap_vs_copy's copy, the allocator experiments) allocate their own way.
#pragma once

#include <cstddef>

namespace pairbench::kernels {

// Makes every page of [p, p + bytes) resident and writable: madvise(MADV_POPULATE_WRITE) over the
// whole pages inside the span, then one write per page for what that left (the partial pages at
// either end, or everything on a kernel older than 5.14). Values already written are unchanged.
// Populating runs on the calling thread, so on a NUMA host the pages follow its memory policy as a
// first touch by that thread would: a team that first-touches its own shares calls this per share.
void populate_pages(void* p, std::size_t bytes);

// Whether this machine has one NUMA node (/sys/devices/system/node/online reads "0"; a kernel
// without NUMA has no such directory and counts as one node).
bool single_numa_node();

// For a process that runs several benchmarks one after another (a shared process, which never
// holds an experiment that measures the process's own heap or pages; bench main calls it): a
// PageBuffer freed by one benchmark is kept, backed, for the next one that asks for its size,
// instead of being unmapped, so that only the first benchmark pays for fresh pages. Nothing else
// about the process's memory changes: malloc and operator new behave as before.
void reuse_page_buffers();
bool page_buffers_reused();

// Above this size glibc's malloc always maps a block of its own (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
// Linux): fresh pages, the data 16 bytes into the first. A PageBuffer replaces such a block without
// changing where the data lands in its page; below it, malloc's own placement is kept.
inline constexpr std::size_t kMallocAlwaysMapsBytes = std::size_t{32} << 20;

// A private anonymous mapping of at least `bytes`, every page resident and written (contents
// unspecified: the caller fills or poisons it), data at `offset` bytes into its first page (16 is
// where glibc's malloc puts a block it maps, so a buffer that replaces `new T[n]` of that size
// lands as it did). Unmapped on destruction, or kept for reuse (reuse_page_buffers). Throws
// std::bad_alloc where mmap fails. Move-only.
class PageBuffer {
 public:
  PageBuffer() = default;
  explicit PageBuffer(std::size_t bytes, std::size_t offset = 0);
  ~PageBuffer();
  PageBuffer(PageBuffer&& other) noexcept;
  PageBuffer& operator=(PageBuffer&& other) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  std::byte* data() const { return mapping_ ? mapping_ + offset_ : nullptr; }
  std::size_t size() const { return bytes_; }

 private:
  void release() noexcept;
  std::byte* mapping_ = nullptr;
  std::size_t mapped_ = 0, offset_ = 0, bytes_ = 0;
};

// The mapping primitives PageBuffer uses, for a type that maps its own (copy::HostBuffer): a kept,
// backed mapping of exactly `mapped` bytes or nullptr; and keeping one (false: unmap it yourself).
void* take_kept_mapping(std::size_t mapped);
bool keep_mapping(void* mapping, std::size_t mapped);

}  // namespace pairbench::kernels
