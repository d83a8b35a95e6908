// The framework-owned timed loop (bench/common/exec.h): rates derived from declared work, one
// timed-region record per iteration, untimed hooks around each region, the refusal of a timing
// mode the experiment does not declare; and the per-process inputs a shared process's benchmarks share.
#include <gtest/gtest.h>

#include <cstdio>
#include <chrono>
#include <fstream>
#include <thread>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench/common/devices.h"
#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "bench/common/process_inputs.h"
#include "bench/common/timed_region.h"
#include "bench/common/work.h"

namespace pairbench::bench {
namespace {

TEST(RateCounters, KnownWorkAndTimeGiveExactRates) {
  const Work work{.bytes = 1000, .flop = 50, .elements = 10, .ops = 4, .per_second = {{"rows", 3}, {"pixels", 0.5}}};
  const auto c = rate_counters(work, /*iterations=*/5, /*seconds=*/2);
  EXPECT_EQ(c.size(), 6u);
  EXPECT_DOUBLE_EQ(c.at("bytes_per_second"), 2500);   // 1000 B x 5 / 2 s
  EXPECT_DOUBLE_EQ(c.at("flop_per_second"), 125);     // 50 x 5 / 2
  EXPECT_DOUBLE_EQ(c.at("elements_per_second"), 25);  // 10 x 5 / 2
  EXPECT_DOUBLE_EQ(c.at("ns_per_op"), 1e8);           // 2e9 ns / (4 x 5) ops
  EXPECT_DOUBLE_EQ(c.at("rows_per_second"), 7.5);     // 3 x 5 / 2
  EXPECT_DOUBLE_EQ(c.at("pixels_per_second"), 1.25);  // 0.5 x 5 / 2
}

TEST(RateCounters, UndeclaredWorkReportsNoCounter) {
  const auto c = rate_counters(Work{.bytes = 64}, 3, 1e-6);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_DOUBLE_EQ(c.at("bytes_per_second"), 64 * 3 / 1e-6);
}

TEST(RateCounters, NothingMeasuredReportsNothing) {
  const Work work{.bytes = 1, .ops = 1};
  EXPECT_TRUE(rate_counters(work, 0, 1).empty());
  EXPECT_TRUE(rate_counters(work, 10, 0).empty());
  EXPECT_TRUE(rate_counters(work, 10, -1).empty());
}

TEST(TimingAt, ByDeviceFollowsTheDeviceAxis) {
  const Experiment e{.name = "t.by_device", .timing = Timing::kByDevice};
  Point cpu, cuda, none;
  cpu.set("device", "cpu");
  cuda.set("device", "cuda");
  EXPECT_EQ(timing_at(e, cpu), Timing::kWallClock);
  EXPECT_EQ(timing_at(e, cuda), Timing::kCudaEvents);
  EXPECT_THROW(timing_at(e, none), std::out_of_range);  // by_device without a device axis is a declaration error
  EXPECT_EQ(timing_at(Experiment{.timing = Timing::kCudaEvents}, cpu), Timing::kCudaEvents);
  EXPECT_STREQ(timing_name(Timing::kByDevice), "by_device");
}

// Which processes use the GPU (ab's duet never runs two of them at once on one device).
TEST(UsesCuda, TimingDeviceAxisOrTheArmSaySo) {
  const Experiment by_device{.name = "t.by_device", .timing = Timing::kByDevice};
  const Experiment wall{.name = "t.wall", .timing = Timing::kWallClock};
  const Experiment events{.name = "t.events", .timing = Timing::kCudaEvents};
  const Arm plain{.name = "plain"}, gpu_arm{.name = "gpu", .cuda = true};
  Point cpu, cuda, none;
  cpu.set("device", "cpu");
  cuda.set("device", "cuda");
  none.set("bytes", "4096");
  EXPECT_FALSE(uses_cuda(by_device, plain, cpu));
  EXPECT_TRUE(uses_cuda(by_device, plain, cuda));
  EXPECT_FALSE(uses_cuda(wall, plain, none));
  EXPECT_TRUE(uses_cuda(wall, plain, cuda));
  EXPECT_TRUE(uses_cuda(wall, gpu_arm, none));
  EXPECT_TRUE(uses_cuda(events, plain, none));
}

// Runs one registered benchmark with a fixed iteration count and keeps what it reported.
class Capture : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override { runs_.insert(runs_.end(), runs.begin(), runs.end()); }
  const std::vector<Run>& runs() const { return runs_; }

 private:
  std::vector<Run> runs_;
};

std::vector<benchmark::BenchmarkReporter::Run> run_one(const std::string& name) {
  Capture capture;
  // Google Benchmark appends "/iterations:N/manual_time" to the registered name.
  benchmark::RunSpecifiedBenchmarks(&capture, "^" + name + "/");
  return capture.runs();
}

nlohmann::json timed_region_record() {
  const std::string path = "/tmp/pairbench_exec_test_" + std::to_string(getpid()) + ".json";
  EXPECT_TRUE(write_timed_region_record(path));
  std::ifstream in(path);
  nlohmann::json record = nlohmann::json::parse(in);
  std::remove(path.c_str());
  return record;
}

TEST(Exec, OwnsTheLoopAndDerivesRatesFromTheRecordedTime) {
  constexpr std::int64_t kIterations = 7;
  configure_timed_regions(InstructionCounter::kNone, /*batches=*/3);
  int before = 0, bodies = 0, after = 0;
  std::vector<int> order;
  benchmark::RegisterBenchmark("exec_test/host",
                               [&](benchmark::State& state) {
                                 forget_declared_timing();
                                 reset_timed_regions(state.max_iterations);
                                 exec(
                                     state, Work{.bytes = 4096, .ops = 2}, [&] { ++before, order.push_back(0); },
                                     [&] {
                                       ++bodies, order.push_back(1);
                                       benchmark::DoNotOptimize(injected_work_loop(1000));
                                     },
                                     [&] { ++after, order.push_back(2); });
                               })
      ->UseManualTime()
      ->Iterations(kIterations);
  const auto runs = run_one("exec_test/host");
  ASSERT_EQ(runs.size(), 1u);
  const auto& run = runs[0];
  ASSERT_FALSE(run.error_occurred) << run.error_message;
  EXPECT_EQ(bodies, kIterations);
  EXPECT_EQ(before, kIterations);
  EXPECT_EQ(after, kIterations);
  for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], static_cast<int>(i % 3)) << "at " << i;
  // The counters come from the same measured time Google Benchmark was handed (manual time).
  const double seconds = run.real_accumulated_time;
  ASSERT_GT(seconds, 0);
  EXPECT_NEAR(run.counters.at("bytes_per_second").value / (4096.0 * kIterations / seconds), 1.0, 1e-9);
  EXPECT_NEAR(run.counters.at("ns_per_op").value / (seconds * 1e9 / (2.0 * kIterations)), 1.0, 1e-9);
  EXPECT_EQ(run.counters.count("flop_per_second"), 0u);
  // One timed region recorded per iteration, spread over the in-process batches.
  const nlohmann::json record = timed_region_record();
  EXPECT_EQ(record["iterations_recorded"], kIterations);
  std::int64_t in_batches = 0;
  double batch_s = 0;
  for (const auto& n : record["batch_iterations"]) in_batches += n.get<std::int64_t>();
  for (const auto& s : record["batch_seconds"]) batch_s += s.get<double>();
  EXPECT_EQ(record["batch_iterations"].size(), 3u);
  EXPECT_EQ(in_batches, kIterations);
  EXPECT_NEAR(batch_s / seconds, 1.0, 1e-9);
}

// The record splits the benchmark's span into before, inside and after its timed loop: a set-up
// that sleeps 30 ms and a check after timing that sleeps 20 ms land in setup_s and after_s (at
// least those sleeps: the bounds are ordering, never the machine's speed).
TEST(Exec, TheRecordSplitsTheBenchmarksSpanIntoSetUpLoopAndAfter) {
  configure_timed_regions(InstructionCounter::kNone, /*batches=*/1);
  std::chrono::steady_clock::time_point began;
  benchmark::RegisterBenchmark("exec_test/parts",
                               [&](benchmark::State& state) {
                                 began = std::chrono::steady_clock::now();
                                 forget_declared_timing();
                                 reset_timed_regions(state.max_iterations);
                                 std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the set-up
                                 exec(state, Work{.ops = 1},
                                      [] { benchmark::DoNotOptimize(injected_work_loop(1000)); });
                                 std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the check after timing
                               })
      ->UseManualTime()
      ->Iterations(3);
  const auto runs = run_one("exec_test/parts");
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_FALSE(runs[0].error_occurred) << runs[0].error_message;
  const nlohmann::json record = timed_region_record();
  const double span = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const double setup = record["setup_s"], loop = record["loop_wall_s"], after = record["after_s"];
  EXPECT_GE(setup, 0.030);
  EXPECT_GE(after, 0.020);
  EXPECT_GE(loop, record["measured_s"].get<double>() * (1 - 1e-9));
  EXPECT_LE(setup + loop + after, span) << "the parts lie inside the span";
}

TEST(Exec, RefusesAClockTheExperimentDoesNotDeclare) {
  int bodies = 0;
  benchmark::RegisterBenchmark("exec_test/host_under_events",
                               [&](benchmark::State& state) {
                                 reset_timed_regions(state.max_iterations);
                                 declare_timing(Timing::kCudaEvents);
                                 exec(state, Work{.ops = 1}, [&] { ++bodies; });
                                 forget_declared_timing();
                               })
      ->UseManualTime()
      ->Iterations(3);
  const auto runs = run_one("exec_test/host_under_events");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].error_occurred);
  EXPECT_EQ(runs[0].error_message,
            "failed: the arm timed with wall_clock but its experiment declares cuda_events at this point");
  EXPECT_EQ(bodies, 0);
}

TEST(Exec, RunsWhereTheDeclarationMatches) {
  int bodies = 0;
  benchmark::RegisterBenchmark("exec_test/host_under_wall_clock",
                               [&](benchmark::State& state) {
                                 reset_timed_regions(state.max_iterations);
                                 declare_timing(Timing::kWallClock);
                                 exec(state, Work{.ops = 1}, [&] { ++bodies; });
                                 forget_declared_timing();
                               })
      ->UseManualTime()
      ->Iterations(4);
  const auto runs = run_one("exec_test/host_under_wall_clock");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].error_occurred) << runs[0].error_message;
  EXPECT_EQ(bodies, 4);
}

TEST(ExecCuda, RefusesCudaEventsInAWallClockExperimentBeforeAnyCudaCall) {
  int enqueued = 0;
  benchmark::RegisterBenchmark("exec_test/events_under_wall_clock",
                               [&](benchmark::State& state) {
                                 reset_timed_regions(state.max_iterations);
                                 declare_timing(Timing::kWallClock);
                                 exec_cuda(state, Work{.bytes = 1}, kernels::cuda::StreamRef{}, [&] { ++enqueued; });
                                 forget_declared_timing();
                               })
      ->UseManualTime()
      ->Iterations(2);
  const auto runs = run_one("exec_test/events_under_wall_clock");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].error_occurred);
  EXPECT_EQ(runs[0].error_message,
            "failed: the arm timed with cuda_events but its experiment declares wall_clock at this point");
  EXPECT_EQ(enqueued, 0);
}

// Where a device is usable: the one event pair times the default stream; the GPU's clock goes to
// Google Benchmark and the region record, and the rates come from it.
TEST(ExecCuda, TimesWithTheEventPairWhereADeviceIs) {
  if (const std::string why = cuda_unavailable_reason(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  constexpr std::int64_t kIterations = 5;
  configure_timed_regions(InstructionCounter::kNone, /*batches=*/1);
  int enqueued = 0, after = 0;
  double after_s = 0;
  benchmark::RegisterBenchmark("exec_test/events",
                               [&](benchmark::State& state) {
                                 forget_declared_timing();
                                 reset_timed_regions(state.max_iterations);
                                 exec_cuda(
                                     state, Work{.bytes = 1 << 20}, kernels::cuda::StreamRef{}, [] {},
                                     [&] { ++enqueued; }, [&](double s) { ++after, after_s += s; });
                               })
      ->UseManualTime()
      ->Iterations(kIterations);
  const auto runs = run_one("exec_test/events");
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_FALSE(runs[0].error_occurred) << runs[0].error_message;
  EXPECT_EQ(enqueued, kIterations);
  EXPECT_EQ(after, kIterations);
  EXPECT_NEAR(after_s, runs[0].real_accumulated_time, 1e-12);
  if (runs[0].real_accumulated_time > 0) {
    EXPECT_NEAR(runs[0].counters.at("bytes_per_second").value /
                    ((1 << 20) * double{kIterations} / runs[0].real_accumulated_time),
                1.0, 1e-9);
  }
  EXPECT_EQ(timed_region_record()["iterations_recorded"], kIterations);
}

// Without a usable device the event pair cannot be made: the arm fails loudly, nothing is timed.
TEST(ExecCuda, ThrowsWithoutADevice) {
  if (cuda_unavailable_reason().empty()) GTEST_SKIP() << "a CUDA device is usable here";
  int enqueued = 0;
  std::string thrown;
  benchmark::RegisterBenchmark("exec_test/events_without_device",
                               [&](benchmark::State& state) {
                                 forget_declared_timing();
                                 reset_timed_regions(state.max_iterations);
                                 try {
                                   exec_cuda(state, Work{.bytes = 1}, kernels::cuda::StreamRef{}, [&] { ++enqueued; });
                                 } catch (const std::runtime_error& e) {
                                   thrown = e.what();
                                   state.SkipWithError(thrown.c_str());
                                 }
                               })
      ->UseManualTime()
      ->Iterations(2);
  const auto runs = run_one("exec_test/events_without_device");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].error_occurred);
  EXPECT_FALSE(thrown.empty());
  EXPECT_EQ(enqueued, 0);
}

// bench/common/process_inputs.h: inputs made once per process and key, shared read-only.
TEST(ProcessInputs, AKeyIsMadeOnceAndSharedAfterwards) {
  int made = 0;
  auto make = [&made] {
    ++made;
    return std::vector<float>(1000, 1.5f);
  };
  const auto [made_before, reused_before] = process_input_counts();
  const auto a = process_input<std::vector<float>>("test/x/1000", 4000, make);
  const auto b = process_input<std::vector<float>>("test/x/1000", 4000, make);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ((*b)[999], 1.5f);
  const auto c = process_input<std::vector<float>>("test/x/2000", 8000, [] { return std::vector<float>(2000, 2.0f); });
  EXPECT_NE(c.get(), a.get());
  EXPECT_EQ(c->size(), 2000u);
  const auto [made_after, reused_after] = process_input_counts();
  EXPECT_EQ(made_after - made_before, 2u);
  EXPECT_EQ(reused_after - reused_before, 1u);
}

TEST(ProcessInputs, PastTheBudgetTheOldestIsDroppedButLivesOnInItsUsers) {
  const std::size_t half = kProcessInputsBudgetBytes / 2 + 1;  // declared sizes: nothing that large is made
  int made = 0;
  auto make = [&made] { return ++made; };
  const auto first = process_input<int>("test/budget/first", half, make);
  process_input<int>("test/budget/second", half, make);  // over the budget: "first" is dropped
  EXPECT_EQ(*first, 1);                                  // still held here
  const auto first_again = process_input<int>("test/budget/first", half, make);
  EXPECT_EQ(*first_again, 3);  // made anew
  EXPECT_EQ(made, 3);
}

}  // namespace
}  // namespace pairbench::bench
