// Allocator detection and the per-process memory readers. The test binary runs under glibc, so the
// probe must say glibc; for each installed allocator the binary re-runs one test of itself under
// LD_PRELOAD and the probe must name that allocator there.
#include "kernels/alloc/allocator_probe.h"

#include <gnu/libc-version.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "harness/exec/process.h"
#include "kernels/alloc/process_memory.h"

namespace pairbench::kernels::alloc {
namespace {

constexpr const char* kExpectVariable = "PAIRBENCH_TEST_EXPECT_ALLOCATOR";

TEST(AllocatorProbe, SaysGlibcWithoutAPreload) {
  if (std::getenv(kExpectVariable) != nullptr) GTEST_SKIP() << "skipped: running as a preloaded child";
  if (const char* preload = std::getenv("LD_PRELOAD"); preload != nullptr && *preload != '\0') {
    GTEST_SKIP() << "skipped: LD_PRELOAD is set (" << preload << ")";
  }
  const AllocatorProbe probe = probe_allocator();
  EXPECT_EQ(probe.malloc_owner, Allocator::kGlibc) << probe.describe();
  EXPECT_EQ(probe.new_owner, Allocator::kGlibc) << probe.describe();
  EXPECT_TRUE(probe.malloc_call_confirmed) << probe.describe();
  EXPECT_TRUE(probe.new_call_confirmed) << probe.describe();
  EXPECT_TRUE(probe.in_effect(Allocator::kGlibc)) << probe.describe();
  EXPECT_FALSE(probe.in_effect(Allocator::kJemalloc));
  EXPECT_EQ(probe.version, gnu_get_libc_version());
  EXPECT_NE(probe.malloc_library.find("libc.so"), std::string::npos) << probe.malloc_library;
  EXPECT_EQ(probe.describe().rfind("allocator=glibc ", 0), 0u) << probe.describe();
  EXPECT_NE(probe.describe().find("THP="), std::string::npos);
  EXPECT_NE(probe.describe().find("MALLOC_CONF="), std::string::npos);
}

// Runs only as a child: the allocator named in kExpectVariable must be in effect.
TEST(AllocatorProbe, ChildSeesItsPreload) {
  const char* expected = std::getenv(kExpectVariable);
  if (expected == nullptr) GTEST_SKIP() << "skipped: only runs as a preloaded child";
  const auto which = allocator_from_name(expected);
  ASSERT_TRUE(which.has_value()) << expected;
  const AllocatorProbe probe = probe_allocator();
  EXPECT_TRUE(probe.in_effect(*which)) << probe.describe();
  EXPECT_NE(probe.version, "unknown") << probe.describe();
  EXPECT_EQ(probe.describe().rfind(std::string("allocator=") + expected + " ", 0), 0u) << probe.describe();
  EXPECT_FALSE(probe.in_effect(Allocator::kGlibc));
}

TEST(AllocatorProbe, NamesEachInstalledAllocatorUnderItsPreload) {
  if (std::getenv(kExpectVariable) != nullptr) GTEST_SKIP() << "skipped: running as a preloaded child";
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  int checked = 0;
  for (const AllocatorLibrary& lib : preloadable_allocators()) {
    if (!std::filesystem::exists(lib.path)) continue;
    SCOPED_TRACE(lib.path);
    const harness::ProcessResult r = harness::run_process(
        {self, "--gtest_filter=AllocatorProbe.ChildSeesItsPreload"},
        {{"LD_PRELOAD", lib.path}, {kExpectVariable, allocator_name(lib.which)}}, std::chrono::seconds(60));
    ASSERT_EQ(r.status, harness::ProcessResult::Status::kExited) << r.describe();
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("[  SKIPPED ]"), std::string::npos) << r.output;
    ++checked;
  }
  if (checked == 0)
    GTEST_SKIP() << "skipped: no allocator library installed (libjemalloc2, libtcmalloc-minimal4, libmimalloc2.0)";
}

TEST(AllocatorProbe, LibraryNames) {
  EXPECT_EQ(allocator_of_library("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"), Allocator::kJemalloc);
  EXPECT_EQ(allocator_of_library("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"), Allocator::kTcmalloc);
  EXPECT_EQ(allocator_of_library("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"), Allocator::kMimalloc);
  EXPECT_EQ(allocator_of_library("/lib/x86_64-linux-gnu/libc.so.6"), Allocator::kGlibc);
  EXPECT_EQ(allocator_of_library("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"), Allocator::kUnknown);
  EXPECT_EQ(allocator_of_library(""), Allocator::kUnknown);
  for (Allocator a : {Allocator::kGlibc, Allocator::kJemalloc, Allocator::kTcmalloc, Allocator::kMimalloc}) {
    EXPECT_EQ(allocator_from_name(allocator_name(a)), a);
  }
  EXPECT_FALSE(allocator_from_name("ptmalloc").has_value());
  ASSERT_EQ(preloadable_allocators().size(), 3u);
  EXPECT_EQ(preloadable_allocators()[0].package, "libjemalloc2");
}

TEST(ProcessMemory, TouchingPagesRaisesFaultsAndThePeak) {
  const std::size_t bytes = std::size_t{64} << 20;
  const bool reset = reset_peak_rss();
  const ProcessMemory before = read_process_memory();
  ASSERT_GT(before.rss_bytes, 0);
  auto* p = static_cast<unsigned char*>(std::malloc(bytes));  // above glibc's mmap threshold: fresh pages
  ASSERT_NE(p, nullptr);
  for (std::size_t i = 0; i < bytes; i += 4096) p[i] = static_cast<unsigned char>(i);
  asm volatile("" : : "g"(p) : "memory");
  const ProcessMemory touched = read_process_memory();
  std::free(p);
  EXPECT_GE(touched.minor_faults - before.minor_faults, static_cast<std::int64_t>(bytes / 4096 * 9 / 10));
  EXPECT_GE(touched.peak_rss_bytes - before.rss_bytes, static_cast<std::int64_t>(bytes * 9 / 10));
  EXPECT_EQ(touched.peak_source, "VmHWM");
  if (!reset) GTEST_SKIP() << "skipped: /proc/self/clear_refs not writable; cannot check the reset";
  ASSERT_TRUE(reset_peak_rss());
  const ProcessMemory after_reset = read_process_memory();
  EXPECT_LT(after_reset.peak_rss_bytes, touched.peak_rss_bytes - static_cast<std::int64_t>(bytes / 2));
}

}  // namespace
}  // namespace pairbench::kernels::alloc
