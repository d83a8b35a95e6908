// A fixed thread team: two barriers per run (start, done); the caller works as member 0.
#include "kernels/copy/thread_team.h"

#include <algorithm>
#include <stdexcept>

namespace pairbench::kernels::copy {

ThreadTeam::ThreadTeam(int members)
    : members_(members > 0 ? members : throw std::invalid_argument("ThreadTeam: members must be >= 1")),
      start_(members),
      done_(members) {
  helpers_.reserve(static_cast<std::size_t>(members - 1));
  for (int m = 1; m < members; ++m) helpers_.emplace_back(&ThreadTeam::helper, this, m);
}

ThreadTeam::~ThreadTeam() {
  stop_ = true;
  if (!helpers_.empty()) start_.arrive_and_wait();  // releases the helpers, which see stop_
  for (std::thread& t : helpers_) t.join();
}

void ThreadTeam::helper(int member) {
  for (;;) {
    start_.arrive_and_wait();  // the barrier orders job_ and stop_ writes before these reads
    if (stop_) return;
    (*job_)(member, members_);
    done_.arrive_and_wait();
  }
}

void ThreadTeam::run(const std::function<void(int, int)>& fn) {
  job_ = &fn;
  start_.arrive_and_wait();
  fn(0, members_);
  done_.arrive_and_wait();
  job_ = nullptr;
}

std::pair<std::size_t, std::size_t> share(std::size_t n, int member, int members, std::size_t granule) {
  const std::size_t granules = (n + granule - 1) / granule;
  const std::size_t per = granules / static_cast<std::size_t>(members);
  const std::size_t extra = granules % static_cast<std::size_t>(members);
  const auto m = static_cast<std::size_t>(member);
  const std::size_t first = m * per + std::min(m, extra);
  const std::size_t count = per + (m < extra ? 1 : 0);
  return {std::min(n, first * granule), std::min(n, (first + count) * granule)};
}

}  // namespace pairbench::kernels::copy
