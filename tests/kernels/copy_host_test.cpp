// The CPU copy workloads against references: copy loops (plain, non-temporal) against memcpy on
// fresh random data with poisoned, guarded destinations at odd sizes and misaligned addresses;
// STREAM kernels; the random stream and its checks; page states, mlock failure reporting; the
// thread team's shares; host tensors; the overlap pipeline's host reference.
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/copy/cuda_copy.h"
#include "kernels/copy/host_buffer.h"
#include "kernels/copy/host_copy.h"
#include "kernels/copy/host_tensor.h"
#include "kernels/copy/thread_team.h"
#include "kernels/copy/verify.h"

namespace pairbench::kernels::copy {
namespace {

using CopyFn = void (*)(void*, const void*, std::size_t);

// Copies `n` bytes from src+src_off into dst+dst_off inside guarded, poisoned buffers and checks
// every byte: the copy itself against memcmp, and the guards for writes outside the range.
void expect_exact_copy(CopyFn copy, std::size_t n, std::size_t src_off, std::size_t dst_off, std::uint64_t seed) {
  constexpr std::size_t kGuard = 64;
  std::vector<std::byte> src(n + src_off + kGuard), dst(n + dst_off + 2 * kGuard);
  fill_random(src, seed);
  poison(dst);
  std::byte* d = dst.data() + kGuard + dst_off;
  copy(d, src.data() + src_off, n);
  ASSERT_EQ(first_mismatch(d, src.data() + src_off, n), n)
      << "n=" << n << " src_off=" << src_off << " dst_off=" << dst_off;
  for (std::size_t i = 0; i < kGuard + dst_off; ++i) ASSERT_EQ(dst[i], kPoison) << "wrote before the range, n=" << n;
  for (std::size_t i = kGuard + dst_off + n; i < dst.size(); ++i)
    ASSERT_EQ(dst[i], kPoison) << "wrote past the range, n=" << n;
}

const std::vector<std::size_t> kSizes = {
    0,  1,   3,   7,   8,   15,  16,  17,   31,   32,   33,   63,    64,
    65, 127, 128, 129, 255, 256, 257, 1000, 4095, 4096, 4097, 65537, (std::size_t{1} << 20) + 13};

class CopyLoopTest : public ::testing::TestWithParam<CopyFn> {};

TEST_P(CopyLoopTest, EqualsMemcpyAtOddSizesAndMisalignedPointers) {
  const std::uint64_t seed = fresh_seed();
  for (std::size_t n : kSizes) {
    for (std::size_t src_off : {0u, 1u, 5u, 32u}) {
      for (std::size_t dst_off : {0u, 1u, 3u, 16u, 31u, 33u}) {
        expect_exact_copy(GetParam(), n, src_off, dst_off, seed + n);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(CopyLoopTest, LargeCopyEveryByte) {
  const std::size_t n = (std::size_t{16} << 20) + 7;  // past L2, through the streaming loop
  HostBuffer src(n + 1, PageState::kPrefaulted), dst(n + 1, PageState::kPrefaulted);
  const std::uint64_t seed = fresh_seed();
  fill_random(src.span(), seed);
  poison(dst.span());
  GetParam()(dst.data() + 1, src.data(), n);
  EXPECT_EQ(first_mismatch_random({dst.data() + 1, n}, seed), n);
  EXPECT_EQ(dst.data()[0], kPoison);
}

INSTANTIATE_TEST_SUITE_P(Loops, CopyLoopTest, ::testing::Values(&copy_plain, &copy_nontemporal),
                         [](const auto& info) { return info.index == 0 ? "plain" : "nontemporal"; });

TEST(CopyLoops, NontemporalAvailableOnX86) {
#if defined(__x86_64__)
  EXPECT_EQ(nontemporal_unavailable_reason(), "");
  EXPECT_TRUE(std::string(copy_vector_isa()) == "avx2" || std::string(copy_vector_isa()) == "sse2");
#else
  EXPECT_NE(nontemporal_unavailable_reason(), "");
#endif
}

TEST(StreamKernels, CopyAndTriadMatchReference) {
  std::mt19937_64 rng(fresh_seed());
  for (std::size_t n : {0u, 1u, 3u, 17u, 1000u, 65537u}) {
    std::vector<double> a(n + 1, -1), b(n), c(n);
    for (std::size_t i = 0; i < n; ++i) {
      b[i] = static_cast<double>(rng() & 0xFFFF);
      c[i] = static_cast<double>(rng() & 0xFFFF);
    }
    stream_copy(a.data(), b.data(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], b[i]) << "copy n=" << n << " i=" << i;
    EXPECT_EQ(a[n], -1) << "copy wrote past n";
    stream_triad(a.data(), b.data(), c.data(), 3.0, n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], b[i] + 3.0 * c[i]) << "triad n=" << n << " i=" << i;
    EXPECT_EQ(a[n], -1) << "triad wrote past n";
  }
}

TEST(RandomStream, AnyRangeRegeneratesTheSameBytes) {
  const std::uint64_t seed = fresh_seed();
  std::vector<std::byte> whole(10007);
  fill_random(whole, seed);
  for (std::size_t off : {0u, 1u, 7u, 8u, 13u, 4096u, 9999u}) {
    std::vector<std::byte> part(whole.size() - off);
    fill_random(part, seed, off);
    ASSERT_EQ(std::memcmp(part.data(), whole.data() + off, part.size()), 0) << "offset " << off;
  }
  std::vector<std::byte> other(whole.size());
  fill_random(other, seed + 1);
  EXPECT_NE(std::memcmp(other.data(), whole.data(), whole.size()), 0);
}

TEST(RandomStream, ChecksFindTheFirstWrongByte) {
  const std::uint64_t seed = fresh_seed();
  std::vector<std::byte> data(300001);
  fill_random(data, seed);
  EXPECT_EQ(first_mismatch_random(data, seed), data.size());
  EXPECT_TRUE(spot_check_random(data, seed, /*pick_seed=*/1));
  data[123457] ^= std::byte{1};
  EXPECT_EQ(first_mismatch_random(data, seed), 123457u);
  EXPECT_EQ(first_mismatch_random({data.data() + 100000, 100000}, seed, 100000), 23457u);
  data[123457] ^= std::byte{1};
  data.back() ^= std::byte{0x80};  // the last 4 KiB are always spot-checked
  EXPECT_FALSE(spot_check_random(data, seed, /*pick_seed=*/1));
  for (const auto& [off, len] : spot_ranges(data.size(), 7)) EXPECT_LE(off + len, data.size());
  EXPECT_TRUE(spot_ranges(0, 7).empty());
}

TEST(HostBufferTest, UntouchedPagesFaultOnFirstWritePrefaultedDoNot) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t pages = 256;
  HostBuffer fresh(pages * page, PageState::kUntouched, PageSize::kBase4KiB);
  std::int64_t f0 = minor_faults();
  poison(fresh.span());
  EXPECT_GE(minor_faults() - f0, static_cast<std::int64_t>(pages / 2));
  HostBuffer ready(pages * page, PageState::kPrefaulted, PageSize::kBase4KiB);
  f0 = minor_faults();
  poison(ready.span());
  EXPECT_LT(minor_faults() - f0, static_cast<std::int64_t>(pages / 8));
}

TEST(HostBufferTest, LockedIsLockedOrNotSupported) {
  try {
    HostBuffer locked(std::size_t{1} << 20, PageState::kLocked);
    EXPECT_TRUE(locked.locked());
    HostBuffer moved = std::move(locked);
    EXPECT_TRUE(moved.locked());
    EXPECT_EQ(locked.data(), nullptr);
  } catch (const NotSupported& e) {
    EXPECT_NE(std::string(e.what()).find("RLIMIT_MEMLOCK"), std::string::npos) << e.what();
  }
}

TEST(HostBufferTest, ZeroBytesMapsNothing) {
  HostBuffer empty(0, PageState::kLocked);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

TEST(HostBufferTest, BeyondMemAvailableIsNotSupported) {
  ASSERT_GT(mem_available_bytes(), 0u);
  try {
    HostBuffer huge(std::size_t{1} << 60, PageState::kUntouched);
    FAIL() << "a 1 EiB buffer was mapped";
  } catch (const NotSupported& e) {
    EXPECT_NE(std::string(e.what()).find("MemAvailable"), std::string::npos) << e.what();
  }
}

TEST(MlockFailure, MessageNamesTheLimit) {
  const std::string why = describe_mlock_failure(ENOMEM, std::size_t{64} << 20);
  EXPECT_NE(why.find("mlock of 64 MiB failed"), std::string::npos) << why;
  EXPECT_NE(why.find("RLIMIT_MEMLOCK soft"), std::string::npos) << why;
  EXPECT_NE(why.find("ulimit -l"), std::string::npos) << why;
}

// A real refusal: a child process lowers RLIMIT_MEMLOCK to 64 KiB and drops CAP_IPC_LOCK (root
// would bypass the limit), then asks for 1 MiB of locked pages. Exit codes say what happened.
TEST(MlockFailure, LowRlimitIsReportedAsNotSupported) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit low{64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_MEMLOCK, &low) != 0) _exit(10);
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2]{};
    if (syscall(SYS_capget, &header, caps) == 0) {
      caps[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
      if (syscall(SYS_capset, &header, caps) != 0) _exit(11);
    }
    try {
      HostBuffer locked(std::size_t{1} << 20, PageState::kLocked);
      _exit(12);  // locked despite the limit
    } catch (const NotSupported& e) {
      const std::string why = e.what();
      _exit(why.find("RLIMIT_MEMLOCK soft 64 KiB") != std::string::npos ? 0 : 13);
    } catch (...) {
      _exit(14);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: capset, 12: mlock succeeded, 13: message, 14: other error";
}

TEST(ThreadTeamTest, SharesCoverEverythingOnce) {
  for (std::size_t n : {0u, 1u, 511u, 512u, 513u, 100000u}) {
    for (int members : {1, 2, 3, 7}) {
      std::size_t expect_begin = 0;
      for (int m = 0; m < members; ++m) {
        const auto [b, e] = share(n, m, members, 512);
        ASSERT_EQ(b, expect_begin) << "n=" << n << " members=" << members << " m=" << m;
        ASSERT_LE(b, e);
        if (e < n) {
          ASSERT_EQ(e % 512, 0u);
        }
        expect_begin = e;
      }
      EXPECT_EQ(expect_begin, n);
    }
  }
}

TEST(ThreadTeamTest, EveryMemberRunsEveryTime) {
  for (int members : {1, 2, 4}) {
    ThreadTeam team(members);
    EXPECT_EQ(team.size(), members);
    std::vector<std::atomic<int>> calls(static_cast<std::size_t>(members));
    for (int round = 0; round < 50; ++round) {
      team.run([&](int m, int count) {
        EXPECT_EQ(count, members);
        calls[static_cast<std::size_t>(m)].fetch_add(1);
      });
    }
    for (auto& c : calls) EXPECT_EQ(c.load(), 50);
  }
}

TEST(HostTensorTest, WrapAdoptsCopyOfOwnsAFreshCopy) {
  std::vector<float> src(1001);
  std::mt19937 rng(static_cast<std::uint32_t>(fresh_seed()));
  for (float& x : src) x = std::uniform_real_distribution<float>(-100, 100)(rng);
  const HostTensor view = HostTensor::wrap(src.data(), {7, 11, 13});
  EXPECT_EQ(view.data(), src.data());
  EXPECT_FALSE(view.owns_storage());
  EXPECT_EQ(view.numel(), 1001u);
  EXPECT_EQ(view.bytes(), 1001u * sizeof(float));
  const HostTensor copy = HostTensor::copy_of(src.data(), {1001});
  EXPECT_NE(copy.data(), src.data());
  EXPECT_TRUE(copy.owns_storage());
  EXPECT_EQ(first_mismatch(copy.data(), src.data(), copy.bytes()), copy.bytes());
  src[500] += 1;  // the copy is independent, the view is not
  EXPECT_NE(copy.data()[500], src[500]);
  EXPECT_EQ(view.data()[500], src[500]);
  EXPECT_THROW(HostTensor::wrap(src.data(), {-1}), std::invalid_argument);
}

TEST(OverlapReference, ClosedFormEqualsIteration) {
  std::mt19937 rng(static_cast<std::uint32_t>(fresh_seed()));
  for (int rounds : {0, 1, 2, 7, 256, 2048}) {
    const cuda::Affine32 f = cuda::lcg_power(rounds);
    for (int k = 0; k < 100; ++k) {
      const std::uint32_t x = rng();
      std::uint32_t y = x;
      for (int r = 0; r < rounds; ++r) y = 1664525u * y + 1013904223u;
      ASSERT_EQ(f(x), y) << "rounds=" << rounds;
    }
  }
}

}  // namespace
}  // namespace pairbench::kernels::copy
