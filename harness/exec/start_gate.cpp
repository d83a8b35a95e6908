// The duet start gate (start_gate.h).
#include "harness/exec/start_gate.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "harness/exec/interrupt.h"

namespace pairbench::harness {

StartGate::StartGate(int sides)
    : ready_read_(static_cast<std::size_t>(sides), -1),
      ready_write_(static_cast<std::size_t>(sides), -1),
      ended_(static_cast<std::size_t>(sides)) {
  ok_ = true;
  for (int k = 0; k < sides; ++k) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      ok_ = false;
      break;
    }
    ready_read_[static_cast<std::size_t>(k)] = fds[0];
    ready_write_[static_cast<std::size_t>(k)] = fds[1];
  }
  int go[2];
  if (ok_ && pipe2(go, O_CLOEXEC) == 0) {
    go_read_ = go[0];
    go_write_ = go[1];
  } else {
    ok_ = false;
  }
}

StartGate::~StartGate() {
  for (const int fd : ready_read_)
    if (fd >= 0) close(fd);
  for (const int fd : ready_write_)
    if (fd >= 0) close(fd);
  for (const int fd : {go_read_, go_write_})
    if (fd >= 0) close(fd);
}

std::string StartGate::env_value(int k) const {
  return std::to_string(ready_write_[static_cast<std::size_t>(k)]) + "," + std::to_string(go_read_);
}

std::vector<int> StartGate::child_fds(int k) const { return {ready_write_[static_cast<std::size_t>(k)], go_read_}; }

bool StartGate::release(std::chrono::duration<double> limit) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const std::size_t sides = ready_read_.size();
  std::vector<bool> ready(sides, false);
  bool all_ready = false;
  while (!interrupt_signal() && Clock::now() - start < limit) {
    std::vector<pollfd> pfds;
    std::vector<std::size_t> side_of;
    std::size_t waiting = 0;
    for (std::size_t k = 0; k < sides; ++k) {
      if (ready[k] || ended_[k]) continue;
      ++waiting;
      pfds.push_back({ready_read_[k], POLLIN, 0});
      side_of.push_back(k);
    }
    if (waiting == 0) {
      all_ready = std::all_of(ready.begin(), ready.end(), [](bool r) { return r; });
      break;
    }
    // A byte wakes this at once; a side that ended before its gate is seen within 5 ms.
    if (poll(pfds.data(), pfds.size(), 5) < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < pfds.size(); ++i) {
      if (!(pfds[i].revents & POLLIN)) continue;
      char c;
      if (read(pfds[i].fd, &c, 1) == 1) ready[side_of[i]] = true;
    }
  }
  close(go_write_);  // every side blocked reading GO wakes now
  go_write_ = -1;
  return all_ready;
}

}  // namespace pairbench::harness
