// Anonymous mappings in a chosen page state; host-memory limits reported as NotSupported.
#include "kernels/copy/host_buffer.h"

#include "kernels/common/pages.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

namespace pairbench::kernels::copy {

HostBuffer::HostBuffer(std::size_t bytes, PageState state, PageSize pages) {
  if (bytes == 0) return;
  poolable_ = state == PageState::kPrefaulted && pages == PageSize::kDefault;
  if (poolable_) {
    if (void* m = take_kept_mapping(bytes)) {  // a shared process's earlier buffer, still backed
      data_ = static_cast<std::byte*>(m);
      size_ = bytes;
      return;
    }
  }
  require_host_memory(bytes, "a host buffer");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    throw NotSupported("mmap of " + format_bytes(bytes) + " failed: " + std::strerror(errno) +
                       " (vm.overcommit_memory, RLIMIT_AS)");
  }
  data_ = static_cast<std::byte*>(p);
  size_ = bytes;
  // Advisory: where THP is disabled already this changes nothing, so its result is not checked.
  if (pages == PageSize::kBase4KiB) madvise(p, bytes, MADV_NOHUGEPAGE);
  if (state == PageState::kUntouched) return;
  populate_pages(p, bytes);  // backed and writable, as one write per page would leave it
  if (state == PageState::kLocked) {
    if (mlock(p, bytes) != 0) {
      const int err = errno;
      release();
      throw NotSupported(describe_mlock_failure(err, bytes));
    }
    locked_ = true;
  }
}

HostBuffer::~HostBuffer() { release(); }

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      locked_(std::exchange(other.locked_, false)),
      poolable_(std::exchange(other.poolable_, false)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    locked_ = std::exchange(other.locked_, false);
    poolable_ = std::exchange(other.poolable_, false);
  }
  return *this;
}

void HostBuffer::release() noexcept {
  if (data_ && !(poolable_ && keep_mapping(data_, size_))) munmap(data_, size_);  // also drops the lock
  data_ = nullptr;
  size_ = 0;
  locked_ = false;
  poolable_ = false;
}

std::size_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

namespace {

std::size_t read_size(const std::string& path) {
  std::ifstream in(path);
  std::string v;
  if (!(in >> v) || v == "max") return std::numeric_limits<std::size_t>::max();
  try {
    return static_cast<std::size_t>(std::stoull(v));
  } catch (const std::exception&) {
    return std::numeric_limits<std::size_t>::max();
  }
}

}  // namespace

std::size_t cgroup_headroom_bytes() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::size_t headroom = std::numeric_limits<std::size_t>::max();
  while (std::getline(in, line)) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    std::size_t limit = std::numeric_limits<std::size_t>::max(), usage = 0;
    if (controllers.empty()) {  // cgroup v2
      limit = read_size("/sys/fs/cgroup" + path + "/memory.max");
      usage = read_size("/sys/fs/cgroup" + path + "/memory.current");
    } else if (controllers == "memory") {  // cgroup v1
      limit = read_size("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
      usage = read_size("/sys/fs/cgroup/memory" + path + "/memory.usage_in_bytes");
    }
    if (limit == std::numeric_limits<std::size_t>::max() || usage == std::numeric_limits<std::size_t>::max()) continue;
    headroom = std::min(headroom, limit > usage ? limit - usage : 0);
  }
  return headroom;
}

void require_host_memory(std::size_t bytes, const std::string& what) {
  const std::size_t available = mem_available_bytes();
  if (available != 0 && bytes > available) {
    throw NotSupported(what + " needs " + format_bytes(bytes) + " of host memory; MemAvailable is " +
                       format_bytes(available) + " (/proc/meminfo)");
  }
  const std::size_t headroom = cgroup_headroom_bytes();
  if (bytes > headroom) {
    throw NotSupported(what + " needs " + format_bytes(bytes) + " of host memory; this process's memory cgroup has " +
                       format_bytes(headroom) + " left before its limit");
  }
}

namespace {
std::string format_rlimit(rlim_t v) {
  return v == RLIM_INFINITY ? std::string("unlimited") : format_bytes(static_cast<std::size_t>(v));
}
}  // namespace

std::string describe_mlock_failure(int err, std::size_t bytes) {
  std::string out = "mlock of " + format_bytes(bytes) + " failed: " + std::strerror(err);
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) == 0) {
    out += " (RLIMIT_MEMLOCK soft " + format_rlimit(limit.rlim_cur) + ", hard " + format_rlimit(limit.rlim_max) +
           "; raise it with ulimit -l or grant CAP_IPC_LOCK)";
  } else {
    out += " (RLIMIT_MEMLOCK unreadable)";
  }
  return out;
}

std::int64_t minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

std::string format_bytes(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == static_cast<double>(static_cast<std::size_t>(v))) {
    std::snprintf(buf, sizeof buf, "%zu %s", static_cast<std::size_t>(v), units[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

}  // namespace pairbench::kernels::copy
