// kernels/common/pages.h: set-up memory populated in one call, and kept for reuse in a shared
// process. Checked by what the process observes: its own minor-fault count and the addresses.
#include "kernels/common/pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace pairbench::kernels {
namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

constexpr std::size_t kPages = 1024;

std::size_t page() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

// Writes one byte per page; the faults it took.
long faults_writing(std::byte* p, std::size_t bytes) {
  const long before = minor_faults();
  for (std::size_t off = 0; off < bytes; off += page()) static_cast<volatile std::byte*>(p)[off] = std::byte{7};
  return minor_faults() - before;
}

TEST(Pages, PopulatedPagesTakeNoFaultWhenWritten) {
  const std::size_t bytes = kPages * page();
  auto* m = static_cast<std::byte*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m, MAP_FAILED);
  madvise(m, bytes, MADV_NOHUGEPAGE);  // one fault per page where nothing populated them
  // An unaligned span inside the mapping: its partial first and last pages are backed too.
  std::byte* begin = m + 100;
  const std::size_t span = bytes - 200;
  populate_pages(begin, span);
  EXPECT_LT(faults_writing(m, bytes), static_cast<long>(kPages / 16));
  munmap(m, bytes);
}

TEST(Pages, UnpopulatedPagesDoFaultSoTheCheckAboveCanFail) {
  const std::size_t bytes = kPages * page();
  auto* m = static_cast<std::byte*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(m, MAP_FAILED);
  madvise(m, bytes, MADV_NOHUGEPAGE);
  EXPECT_GE(faults_writing(m, bytes), static_cast<long>(kPages / 2));
  munmap(m, bytes);
}

TEST(Pages, PopulatingKeepsWhatWasWritten) {
  std::vector<unsigned char> v(3 * page() + 123);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<unsigned char>(i * 31 + 7);
  populate_pages(v.data() + 5, v.size() - 5);
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], static_cast<unsigned char>(i * 31 + 7)) << i;
}

TEST(Pages, APageBufferIsBackedAndPlacedAtItsOffset) {
  const PageBuffer b(kPages * page(), 16);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % page(), 16u);
  EXPECT_EQ(b.size(), kPages * page());
  EXPECT_LT(faults_writing(b.data(), b.size()), static_cast<long>(kPages / 16));
}

// Reuse is process-wide and cannot be switched off, so it runs in a child (a death test's fork).
TEST(PagesDeathTest, AReusedBufferIsTheFreedOneOfItsSizeAndOthersAreFresh) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const std::size_t bytes = kPages * page();
        std::byte* first = nullptr;
        {
          const PageBuffer a(bytes, 16);
          first = a.data();
        }
        const PageBuffer not_kept(bytes, 16);  // reuse not yet on: freed memory went back
        reuse_page_buffers();
        std::byte* kept = nullptr;
        {
          const PageBuffer b(bytes, 16);
          kept = b.data();
        }
        const PageBuffer other_size(2 * bytes, 16);  // a size nobody freed: fresh
        const PageBuffer again(bytes, 16);
        const long faults = faults_writing(again.data(), bytes);
        const bool ok = page_buffers_reused() && again.data() == kept && other_size.data() != kept && faults < 64;
        std::fprintf(stderr, "%s", ok ? "reused" : "not reused");
        (void)first;
        std::exit(ok ? 0 : 1);
      },
      testing::ExitedWithCode(0), "reused");
}

TEST(Pages, SingleNumaNodeAgreesWithSysfs) {
  FILE* f = std::fopen("/sys/devices/system/node/online", "r");
  if (!f) GTEST_SKIP() << "no /sys/devices/system/node/online here";
  char buf[64] = {};
  const bool read = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  ASSERT_TRUE(read);
  EXPECT_EQ(single_numa_node(), std::strncmp(buf, "0\n", 2) == 0 || std::strcmp(buf, "0") == 0);
}

}  // namespace
}  // namespace pairbench::kernels
