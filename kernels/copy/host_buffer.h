// Anonymous host mappings in a chosen page state (never touched, pre-faulted, pre-faulted and
// mlock'ed), the host-memory checks that turn "too big for this machine" into NotSupported, and
// the process's page-fault count. The CPU analogue of pageable vs pinned staging (C6).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/common/not_supported.h"

namespace pairbench::kernels::copy {

enum class PageState {
  kUntouched,   // mapped, never written: the first store to each page takes a minor fault
  kPrefaulted,  // every page backed by a physical page, as a write to each leaves it (populated in one
                // call; in a shared process, a mapping of the same size an earlier benchmark freed)
  kLocked,      // pre-faulted and mlock'ed: what a pinned staging buffer is on the host side
};

enum class PageSize {
  kDefault,   // whatever the transparent-huge-page policy gives
  kBase4KiB,  // MADV_NOHUGEPAGE: one fault per 4 KiB page, as a pageable staging buffer pays
};

// An anonymous private mapping, unmapped on destruction. Move-only.
class HostBuffer {
 public:
  HostBuffer() = default;
  // Throws NotSupported when `bytes` exceeds MemAvailable, mmap fails, or (kLocked) mlock fails;
  // the message names the limit (MemAvailable, RLIMIT_MEMLOCK). bytes == 0 maps nothing.
  HostBuffer(std::size_t bytes, PageState state, PageSize pages = PageSize::kDefault);
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::span<std::byte> span() const { return {data_, size_}; }
  bool locked() const { return locked_; }

 private:
  void release() noexcept;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool locked_ = false;
  bool poolable_ = false;  // pre-faulted, default page size: reusable where the process keeps freed memory
};

// MemAvailable from /proc/meminfo in bytes; 0 where it cannot be read.
std::size_t mem_available_bytes();
// Bytes this process's memory cgroup (v1 or v2) can still charge before its limit; SIZE_MAX
// where there is no limit or it cannot be read.
std::size_t cgroup_headroom_bytes();
// Throws NotSupported ("<what> needs 2 GiB of host memory; MemAvailable is 1.1 GiB") when
// `bytes` would not fit in MemAvailable or in the memory cgroup's headroom (where a container
// would be OOM-killed instead of failing cleanly). Checks nothing it cannot read.
void require_host_memory(std::size_t bytes, const std::string& what);
// Why an mlock of `bytes` failed with errno `err`, naming RLIMIT_MEMLOCK's soft and hard values.
std::string describe_mlock_failure(int err, std::size_t bytes);
// Minor page faults this process has taken so far (getrusage ru_minflt).
std::int64_t minor_faults();
// "4 KiB", "64 MiB", "1.5 GiB", "123 B": for messages only, never for names.
std::string format_bytes(std::size_t bytes);

}  // namespace pairbench::kernels::copy
