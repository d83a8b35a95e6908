// Layout randomisation (harness/exec/layout.h, kernels/common/layout.h): every time process draws
// its own placement from the run's seed and its index, the same for the same seed, recorded in its
// row; buffer offsets keep the alignment asked for; layout variants of a bench binary are found
// (and are not binaries of their own) and are the ones run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "harness/exec/catalogue.h"
#include "harness/exec/layout.h"
#include "harness/exec/process.h"
#include "harness/exec/runner.h"
#include "kernels/common/scratch.h"
#include "kernels/common/layout.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

// A scratch directory for one test, removed after it (kernels::TempDir: $TMPDIR, a clear error
// when it cannot be made), its path as the string the commands take.
struct TempDir {
  kernels::TempDir dir{"pairbench-layout"};
  std::string path = dir.path().string();
};

TEST(LayoutDraw, TheSameSeedAndIndexGiveTheSameLayout) {
  for (std::uint64_t index = 0; index < 50; ++index) {
    const ProcessLayout a = draw_layout(42, index, 4), b = draw_layout(42, index, 4);
    EXPECT_EQ(a.variant, b.variant);
    EXPECT_EQ(a.env_pad_bytes, b.env_pad_bytes);
    EXPECT_EQ(a.seed, b.seed);
  }
}

TEST(LayoutDraw, ProcessesDrawDifferentLayoutsWithinTheirRanges) {
  std::set<int> variants, pads;
  std::set<std::uint64_t> seeds;
  for (std::uint64_t index = 0; index < 200; ++index) {
    const ProcessLayout l = draw_layout(7, index, 4);
    EXPECT_TRUE(l.drawn);
    EXPECT_EQ(l.variants, 4);
    EXPECT_GE(l.variant, 0);
    EXPECT_LT(l.variant, 4);
    EXPECT_GE(l.env_pad_bytes, 0);
    EXPECT_LE(l.env_pad_bytes, kMaxLayoutPadBytes);
    EXPECT_LT(l.seed, std::uint64_t{1} << 53);  // exact in every JSON reader
    variants.insert(l.variant);
    pads.insert(l.env_pad_bytes);
    seeds.insert(l.seed);
  }
  EXPECT_EQ(variants.size(), 4u);  // every variant is drawn
  EXPECT_GT(pads.size(), 150u);    // about 195 distinct of 4096 possible
  EXPECT_EQ(seeds.size(), 200u);
  // Another run's seed, other layouts.
  int same = 0;
  for (std::uint64_t index = 0; index < 200; ++index)
    same += draw_layout(8, index, 4).seed == draw_layout(7, index, 4).seed;
  EXPECT_EQ(same, 0);
  // One binary: always the plain one.
  for (std::uint64_t index = 0; index < 20; ++index) EXPECT_EQ(draw_layout(7, index, 1).variant, 0);
}

TEST(LayoutDraw, EnvironmentCarriesThePaddingAndTheSeed) {
  const ProcessLayout l = draw_layout(3, 5, 2);
  const auto env = layout_env(l);
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env.at(kLayoutPadEnv).size(), static_cast<std::size_t>(l.env_pad_bytes));
  EXPECT_EQ(env.at(kernels::kLayoutSeedEnv), std::to_string(l.seed));
  EXPECT_TRUE(layout_env(ProcessLayout{}).empty());  // not drawn: nothing added
  const std::vector<std::string> binaries = {"bench_x", "bench_x.layout1"};
  ProcessLayout one = l;
  one.variant = 1;
  EXPECT_EQ(layout_binary(binaries, one), "bench_x.layout1");
  EXPECT_EQ(layout_binary(binaries, ProcessLayout{}), "bench_x");
}

// Every offset is a multiple of the alignment asked for, below a page, and they spread over it.
TEST(LayoutOffsets, KeepTheAlignmentAskedFor) {
  for (const std::size_t alignment : {16u, 32u, 64u, 128u, 4096u}) {
    std::set<std::size_t> seen;
    for (std::uint64_t draw = 0; draw < 500; ++draw) {
      const std::size_t offset = kernels::layout_offset_bytes(0xfeedull, draw, alignment);
      EXPECT_EQ(offset % alignment, 0u) << alignment;
      EXPECT_LT(offset, kernels::kLayoutSpanBytes);
      seen.insert(offset);
    }
    const std::size_t slots = kernels::kLayoutSpanBytes / alignment;
    if (slots > 1)
      EXPECT_GT(seen.size(), std::min<std::size_t>(slots / 2, 100)) << alignment;
    else
      EXPECT_EQ(seen, std::set<std::size_t>{0});
  }
}

// A bench directory holding bench_timing and two "variants": scripts that note the layout
// environment they were given, then run bench_timing.
struct VariantDir {
  TempDir dir;
  std::string bench;
  VariantDir() {
    bench = dir.path + "/bench_timing";
    fs::copy_file(std::string(TIMING_BENCH_DIR) + "/bench_timing", bench);
    fs::permissions(bench, fs::perms::owner_all);
    for (int k = 1; k <= 2; ++k) {
      const std::string variant = bench + ".layout" + std::to_string(k);
      std::ofstream(variant)
          << "#!/bin/sh\nprintf '%s %s\\n' \"${#PAIRBENCH_LAYOUT_PAD}\" \"$PAIRBENCH_LAYOUT_SEED\" >> " << dir.path
          << "/ran" << k << "\nexec " << bench << " \"$@\"\n";
      fs::permissions(variant, fs::perms::owner_all);
    }
  }
  // "pad seed" lines written by variant k
  std::multiset<std::string> ran(int k) const {
    std::multiset<std::string> lines;
    std::ifstream in(dir.path + "/ran" + std::to_string(k));
    for (std::string line; std::getline(in, line);) lines.insert(line);
    return lines;
  }
};

TEST(LayoutVariants, AreFoundBesideTheirBinaryAndAreNotBinariesOfTheirOwn) {
  const VariantDir v;
  EXPECT_EQ(find_bench_binaries(v.dir.path), std::vector<std::string>{fs::absolute(v.bench).string()});
  const std::vector<std::string> variants = layout_variants_of(v.bench);
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[0], v.bench);
  EXPECT_EQ(variants[2], v.bench + ".layout2");
  for (const auto& e : load_catalogue({v.bench}, "quick")) EXPECT_EQ(e.layout_binaries, variants) << e.name;
}

RunOutcome run_on(const VariantDir& v, const std::string& layout, std::uint64_t seed) {
  std::vector<ExperimentEntry> experiments = load_catalogue({v.bench}, "quick");
  std::erase_if(experiments, [](const ExperimentEntry& e) { return e.name != "timing.work"; });
  for (auto& e : experiments) {
    std::erase_if(e.benchmarks, [](const BenchmarkEntry& b) { return !b.name.ends_with("/work:1000"); });
  }
  RunOptions options;
  options.repetitions = 12;
  options.plan = {2, 0.0005, 0.25};
  options.seed = seed;
  options.layout = layout;
  return run_sides({Side{"a", experiments, {}, {}, {}}, Side{"b", experiments, {}, {}, {}}}, options);
}

TEST(LayoutVariants, EachProcessRunsTheVariantItDrewWithItsEnvironment) {
  const VariantDir v;
  const RunOutcome out = run_on(v, "random", 11);
  EXPECT_EQ(out.failed_processes, 0);
  std::map<int, std::multiset<std::string>> expected;
  std::set<int> sides;
  for (const Sample& s : out.samples) {
    ASSERT_TRUE(s.layout.drawn) << s.benchmark;
    EXPECT_EQ(s.layout.variants, 3);
    expected[s.layout.variant].insert(std::to_string(s.layout.env_pad_bytes) + " " + std::to_string(s.layout.seed));
    sides.insert(s.side);
  }
  EXPECT_EQ(sides, (std::set<int>{0, 1}));  // both sides drawn
  EXPECT_EQ(out.samples.size(), 24u);
  EXPECT_GE(expected.size(), 2u);  // 24 draws of 3 variants: more than one chosen
  for (int k = 1; k <= 2; ++k) EXPECT_EQ(v.ran(k), expected[k]) << "variant " << k;

  // The same seed: the same layouts, process by process.
  const RunOutcome again = run_on(v, "random", 11);
  std::map<std::pair<int, int>, std::tuple<int, int, std::uint64_t>> first, second;
  for (const Sample& s : out.samples)
    first[{s.side, s.repetition}] = {s.layout.variant, s.layout.env_pad_bytes, s.layout.seed};
  for (const Sample& s : again.samples)
    second[{s.side, s.repetition}] = {s.layout.variant, s.layout.env_pad_bytes, s.layout.seed};
  EXPECT_EQ(first, second);
}

TEST(LayoutVariants, LayoutNoneRunsThePlainBinaryUnperturbed) {
  const VariantDir v;
  const RunOutcome out = run_on(v, "none", 11);
  EXPECT_EQ(out.failed_processes, 0);
  for (const Sample& s : out.samples) EXPECT_FALSE(s.layout.drawn);
  EXPECT_TRUE(v.ran(1).empty());
  EXPECT_TRUE(v.ran(2).empty());
}

// The row of a run file carries the layout (pairbench run, both times with the same seed).
TEST(LayoutRows, AreRecordedInTheRunFileAndRepeatWithTheSeed) {
  const VariantDir v;
  auto run = [&](const std::string& out) {
    return run_process({PAIRBENCH_EXE, "run", "--bench-dir", v.dir.path, "--experiments", "timing.work",
                        "--repetitions", "4", "--seed", "99", "--no-history", "--calibration", v.dir.path + "/cal.json",
                        "--out", out, "--instruction-processes", "0"},
                       {}, std::chrono::seconds(600));
  };
  ASSERT_EQ(run(v.dir.path + "/r1.json").exit_code, 0);
  ASSERT_EQ(run(v.dir.path + "/r2.json").exit_code, 0);
  // Per row its layout; per process (a shared process's rows are one process) the seed it drew.
  std::map<std::string, std::uint64_t> process_seed;
  auto layouts = [&](const std::string& path) {
    std::ifstream in(path);
    const nlohmann::json doc = nlohmann::json::parse(in);
    std::map<std::string, nlohmann::json> out;
    for (const auto& b : doc["benchmarks"]) {
      EXPECT_TRUE(b.contains("layout")) << b.dump();
      const std::string row = b["name"].get<std::string>() + "#" + std::to_string(b["repetition_index"].get<int>());
      out[row] = b["layout"];
      const std::string process =
          b.contains("shared_process") ? path + "#shared" + b["shared_process"]["id"].dump() : path + row;
      const auto seed = b["layout"]["seed"].get<std::uint64_t>();
      const auto [it, added] = process_seed.emplace(process, seed);
      EXPECT_EQ(it->second, seed) << "one process, one layout: " << b.dump();
    }
    return out;
  };
  const auto a = layouts(v.dir.path + "/r1.json"), b = layouts(v.dir.path + "/r2.json");
  EXPECT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);
  std::set<std::uint64_t> seeds;
  std::size_t processes = 0;
  for (const auto& [process, seed] : process_seed) {
    if (process.rfind(v.dir.path + "/r1.json", 0) != 0) continue;
    seeds.insert(seed);
    ++processes;
  }
  for (const auto& [name, l] : a) EXPECT_EQ(l["variants"], 3);
  EXPECT_LT(processes, a.size());      // timing.work's benchmarks share processes
  EXPECT_EQ(seeds.size(), processes);  // every process its own
}

}  // namespace
}  // namespace pairbench::harness
