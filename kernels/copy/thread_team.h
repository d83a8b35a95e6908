// A fixed team of threads that runs one function on every member and returns when all have
// finished: the all-cores arms of the memory-bandwidth limit, without a thread start per copy.
#pragma once

#include <barrier>
#include <cstddef>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace pairbench::kernels::copy {

class ThreadTeam {
 public:
  // `members` >= 1; the caller of run() is member 0, so members - 1 threads are started.
  explicit ThreadTeam(int members);
  ~ThreadTeam();
  ThreadTeam(const ThreadTeam&) = delete;
  ThreadTeam& operator=(const ThreadTeam&) = delete;

  int size() const { return members_; }
  // Calls fn(member, size()) on every member at once; blocks until every call has returned.
  // Not reentrant: one run at a time, from one thread.
  void run(const std::function<void(int member, int members)>& fn);

 private:
  void helper(int member);
  int members_;
  std::barrier<> start_;
  std::barrier<> done_;
  const std::function<void(int, int)>* job_ = nullptr;  // written before start_, read after it
  bool stop_ = false;
  std::vector<std::thread> helpers_;
};

// [begin, end) of member's share of n items, split into equal parts rounded to `granule` items.
std::pair<std::size_t, std::size_t> share(std::size_t n, int member, int members, std::size_t granule);

}  // namespace pairbench::kernels::copy
