// Inputs generated once per process and shared, read-only, by every benchmark that process runs
// (a --pairbench_plan runs up to 16 benchmarks of one experiment, many on inputs of the same
// size). Generating large random inputs is set-up every sample used to repeat; with the cache a
// process pays it once per key. Inputs stay fresh where it matters for the checks: each process
// draws its own (a fresh seed), so a kernel is still verified on inputs nobody chose, process
// after process; within one process the benchmarks that share a key read the same values.
//
// Only read-only inputs belong here: a benchmark that writes its inputs, or whose timed work
// depends on where they were first touched (their pages' NUMA node, their cache state), makes its
// own. The cache keeps at most kProcessInputsBudgetBytes alive, dropping the oldest entries first
// (an entry still in use lives on in its users' shared_ptr).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace pairbench::bench {

inline constexpr std::size_t kProcessInputsBudgetBytes = std::size_t{1} << 30;

namespace detail {
struct ProcessInputsEntry {
  std::string key;
  std::shared_ptr<const void> value;
  std::size_t bytes = 0;
};
struct ProcessInputs {
  std::mutex mutex;
  std::deque<ProcessInputsEntry> entries;  // oldest first
  std::size_t bytes = 0;
  std::size_t made = 0, reused = 0;  // for tests: how often a key was made and found
};
inline ProcessInputs& process_inputs() {
  static ProcessInputs inputs;
  return inputs;
}
}  // namespace detail

// The value cached under `key` (T must match what was cached under it), made by `make()` the
// first time; `bytes` is its size for the budget. `key` names what the value depends on (kind,
// size, storage), never the benchmark: benchmarks that share inputs share the key.
template <class T, class Make>
std::shared_ptr<const T> process_input(const std::string& key, std::size_t bytes, Make&& make) {
  auto& inputs = detail::process_inputs();
  std::lock_guard lock(inputs.mutex);
  for (const auto& e : inputs.entries) {
    if (e.key == key) {
      ++inputs.reused;
      return std::static_pointer_cast<const T>(e.value);
    }
  }
  auto value = std::make_shared<const T>(std::forward<Make>(make)());
  ++inputs.made;
  while (!inputs.entries.empty() && inputs.bytes + bytes > kProcessInputsBudgetBytes) {
    inputs.bytes -= inputs.entries.front().bytes;
    inputs.entries.pop_front();
  }
  if (bytes <= kProcessInputsBudgetBytes) {
    inputs.entries.push_back({key, value, bytes});
    inputs.bytes += bytes;
  }
  return value;
}

// How many values were made and how many were found cached, since the process started.
inline std::pair<std::size_t, std::size_t> process_input_counts() {
  auto& inputs = detail::process_inputs();
  std::lock_guard lock(inputs.mutex);
  return {inputs.made, inputs.reused};
}

}  // namespace pairbench::bench
