// The duet start gate: both processes of an `ab` duet pair start their timed regions at the same
// instant, after both set-ups, whichever was launched first.
//
// Why: launched one after the other, the first side's timed loop can run beside the second's
// start-up and set-up, and the second's beside the first's timed loop: the side always launched
// second ran slower, and `ab` of a build against itself decided a regression (measurements:
// docs/gate.md, "Duet pairing").
//
// How: each side gets PAIRBENCH_START_GATE="READY,GO", two descriptors it inherits. Its first
// timed region (bench/common/timed_region.cpp) writes one byte to READY and blocks reading GO.
// The harness closes GO's write end once every side is ready or has ended (a process that fails
// before timing must not hold the other back), which wakes both at once.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace pairbench::harness {

class StartGate {
 public:
  explicit StartGate(int sides);
  ~StartGate();
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;

  // False when its pipes could not be made: the pair then runs without it.
  bool ok() const { return ok_; }
  // Side k's PAIRBENCH_START_GATE value and the descriptors its process keeps across exec.
  std::string env_value(int k) const;
  std::vector<int> child_fds(int k) const;
  // Side k's process has ended (called by its launching thread when the process is reaped).
  void side_ended(int k) { ended_[static_cast<std::size_t>(k)] = true; }
  // Blocks until every side is ready or has ended, `limit` passes, or pairbench is interrupted;
  // then releases them together. Returns whether every side was ready when released.
  bool release(std::chrono::duration<double> limit);

 private:
  bool ok_ = false;
  std::vector<int> ready_read_, ready_write_;
  int go_read_ = -1, go_write_ = -1;
  std::vector<std::atomic<bool>> ended_;
};

}  // namespace pairbench::harness
