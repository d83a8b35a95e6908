// The one seam every timed region of a bench process passes through. It hands Google Benchmark
// each iteration's time (manual time), records it for the harness's in-process samples (batches
// of consecutive iterations), counts the region's user-space instructions when the harness asks
// (callgrind client requests or a perf_event counter), and runs the gate self-test's injected
// work inside the region. Bench code uses it through WallTimer, or region_begin / region_end /
// record_iteration where it times regions itself.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <string>

namespace pairbench::bench {

// How the process counts instructions inside timed regions (--pairbench_count_instructions=).
enum class InstructionCounter {
  kNone,
  kCallgrind,  // the harness runs us under `valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no`
  kPerf,       // perf_event_open(PERF_COUNT_HW_INSTRUCTIONS), user space only, this thread
};

// Called by the shared bench main: the counter to use, and the in-process batches to form.
void configure_timed_regions(InstructionCounter counter, int batches);
// Called by the shared bench main before each invocation of an arm: forgets earlier invocations
// (Google Benchmark's iteration ramp calls an arm several times; only the last one counts).
void reset_timed_regions(std::int64_t max_iterations);

// `ab`'s duet start gate (PAIRBENCH_START_GATE, see timed_region.cpp): the first region_begin of
// the process waits there until the harness releases both sides of the pair at once. Called by the
// bench main at start: the gate's descriptors are not inherited by programs the arm executes.
void keep_start_gate_from_children();

// Opens a timed region: call right before reading the start clock. When counting instructions,
// the first region of the process is not counted (one-time paths: lazy binding, first calls).
void region_begin();
// The self-test's injected work for a region that has taken `region_ns` so far: real dependent
// integer work (a multiply-add chain), not clock polling, so it adds instructions and time alike.
// Call between the region's work and its end clock. Does nothing unless the self-test asked.
void inject_work(double region_ns);
// Closes the region: call right after reading the end clock.
void region_end();

// The arm has passed its check against the reference (mark_verified): the record's `verify_s` is
// the benchmark's span up to here, the part of its set-up that inputs, buffers and the check took.
// Only the first call before the first timed region counts.
void note_verified();

// Called by the shared bench main before each invocation: whether this benchmark runs on the CUDA
// device. Its record then carries the GPU's SM clock and the reasons it was slowed, read right
// after the benchmark (kernels/common/gpu_clocks.h), so that a throttled sample is named.
void declare_gpu_use(bool uses_gpu);

// The framework's loops (exec.h) declare the work of one iteration before they start (work.h,
// work_fields); the record carries it as work_per_iteration. Arms that keep their own loop and
// count their work while it runs declare none.
void note_iteration_work(const std::map<std::string, double>& work);

// Hands one iteration's measured time to Google Benchmark (UseManualTime) and records it.
void record_iteration(benchmark::State& state, double seconds);

// Whether the self-test asked for injected work in this process (recorded in the output).
bool work_injection_active();

// Writes `text` to `path` through a temporary file and a rename: a reader (the harness, after a
// crash) finds the whole file or none. False when it cannot be written.
bool write_file_atomically(const std::string& path, const std::string& text);

// Writes what the timed regions recorded (batches, instructions, injection) as JSON to `path`,
// atomically (a temporary file renamed), with `finished_s` (the second of the process's life its
// benchmark ended at, under --pairbench_plan) where >= 0. Returns false, with a message on
// stderr, when the file cannot be written.
bool write_timed_region_record(const std::string& path, double finished_s = -1);

// The injected work unit, exposed for its test: `loops` dependent multiply-adds; returns the chain.
std::uint64_t injected_work_loop(std::uint64_t loops);

}  // namespace pairbench::bench
