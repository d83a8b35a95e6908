// GoogleTest suite for AsyncEngine: random dependency graphs against a sequential reference,
// wait_for / wait_all semantics, parallelism, shutdown, back-pressure, exceptions, and many
// parked sync round trips to catch lost wake-ups. No timing assertions; watchdogs abort hangs.
#include "kernels/dispatch/async_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace pairbench::kernels {
namespace {

using namespace std::chrono_literals;

#if defined(__SANITIZE_THREAD__)
constexpr int kSlowdown = 4;  // divides iteration counts under ThreadSanitizer
#else
constexpr int kSlowdown = 1;
#endif

// Aborts the process if the guarded scope outlives `limit`: a lost wake-up or a deadlock must
// fail loudly, not hang the test run.
class Watchdog {
 public:
  Watchdog(std::chrono::seconds limit, std::string what)
      : what_(std::move(what)), thread_([this, limit] {
          std::unique_lock<std::mutex> lock(mu_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: '%s' still running after %llds, aborting\n", what_.c_str(),
                         static_cast<long long>(limit.count()));
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// Test ops are closures; the deque keeps their addresses stable while the engine holds them.
// Declare it before the engine: the engine destructor may still run ops.
class Tasks {
 public:
  void* add(std::function<void()> fn) {
    tasks_.push_back(std::move(fn));
    return &tasks_.back();
  }
  static void run(void* ctx) { (*static_cast<std::function<void()>*>(ctx))(); }

 private:
  std::deque<std::function<void()>> tasks_;
};

// Spins until flag is set or `limit` passes; true if it was set.
bool wait_flag(const std::atomic<bool>& flag, std::chrono::milliseconds limit = 10'000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!flag.load(std::memory_order_acquire)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  return x ^ (x >> 29);
}

// ---- random dependency graphs vs a sequential reference ----

constexpr int kGraphBuffers = 8;

struct GraphData {
  std::array<std::uint64_t, kGraphBuffers> value{};
  std::array<std::vector<int>, kGraphBuffers> write_log;  // op ids, in the order they wrote
};

struct GraphOp {
  int id = 0;
  std::vector<int> reads;  // indices into the buffer arrays; may repeat or overlap writes
  std::vector<int> writes;
  int busy_iters = 0;               // spreads op durations so workers interleave differently
  std::vector<std::uint64_t> seen;  // values observed through reads, in list order
  std::atomic<int> runs{0};
};

// The op body, shared by the engine run and the sequential reference. Touches only the
// buffers the op declared, so a scheduling bug is a data race ThreadSanitizer reports too.
void apply(GraphOp& op, GraphData& data) {
  std::uint64_t acc = static_cast<std::uint64_t>(op.id);
  for (int r : op.reads) {
    op.seen.push_back(data.value[r]);
    acc = mix(acc, data.value[r]);
  }
  volatile std::uint64_t sink = 0;
  for (int i = 0; i < op.busy_iters; ++i) sink = sink + static_cast<std::uint64_t>(i);
  std::set<int> distinct(op.writes.begin(), op.writes.end());
  for (int w : distinct) {
    data.value[w] = mix(data.value[w], acc);
    data.write_log[w].push_back(op.id);
  }
}

struct GraphCtx {
  GraphOp* op;
  GraphData* data;
};

void run_graph_op(void* ctx) {
  auto* c = static_cast<GraphCtx*>(ctx);
  c->op->runs.fetch_add(1, std::memory_order_relaxed);
  apply(*c->op, *c->data);
}

class AsyncEngineConfig : public ::testing::TestWithParam<std::tuple<int, std::int64_t>> {
 protected:
  AsyncEngineOptions options() const {
    AsyncEngineOptions o;
    o.workers = std::get<0>(GetParam());
    o.spin_ns = std::get<1>(GetParam());
    return o;
  }
};

TEST_P(AsyncEngineConfig, RandomGraphMatchesSequentialReference) {
  Watchdog dog(60s, "RandomGraphMatchesSequentialReference");
  const int kOps = 3000 / kSlowdown;
  std::mt19937 rng(1234 + std::get<0>(GetParam()));
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };

  std::deque<GraphOp> ops;  // engine run; its `seen` is filled by the workers
  std::deque<GraphOp> ref_ops;
  std::deque<GraphCtx> ctxs;
  GraphData data;
  GraphData ref;
  {
    AsyncEngine engine(options());
    std::array<BufferId, kGraphBuffers> tag{};
    for (BufferId& t : tag) t = engine.new_buffer();

    for (int i = 0; i < kOps; ++i) {
      GraphOp& op = ops.emplace_back();
      op.id = i;
      const int shape = pick(20);
      if (shape == 0) {
        // Many tags with repeats: exercises deduplication by sorting.
        for (int k = 0; k < 40; ++k) (pick(2) ? op.reads : op.writes).push_back(pick(kGraphBuffers));
      } else if (shape != 1) {  // shape 1: an op with no buffers at all
        for (int k = pick(4); k > 0; --k) op.reads.push_back(pick(kGraphBuffers));
        for (int k = pick(3); k > 0; --k) op.writes.push_back(pick(kGraphBuffers));
        if (pick(8) == 0 && !op.reads.empty()) op.writes.push_back(op.reads[0]);  // read+write
      }
      op.busy_iters = pick(4) == 0 ? pick(3000) : 0;

      GraphOp& r = ref_ops.emplace_back();
      r.id = op.id;
      r.reads = op.reads;
      r.writes = op.writes;
      apply(r, ref);

      std::vector<BufferId> reads, writes;
      for (int b : op.reads) reads.push_back(tag[b]);
      for (int b : op.writes) writes.push_back(tag[b]);
      ctxs.push_back(GraphCtx{&op, &data});
      engine.push(run_graph_op, &ctxs.back(), reads, writes);

      if (pick(40) == 0) {
        // After wait_for(b) every earlier writer of b is done and no later one exists yet, so
        // b's data must equal the reference at this point of the sequence.
        const int b = pick(kGraphBuffers);
        engine.wait_for(tag[b]);
        ASSERT_EQ(data.value[b], ref.value[b]) << "buffer " << b << " after op " << i;
        ASSERT_EQ(data.write_log[b], ref.write_log[b]) << "buffer " << b << " after op " << i;
      }
      if (pick(500) == 0) {
        engine.wait_all();
        EXPECT_EQ(engine.outstanding_ops(), 0u);
      }
    }
    engine.wait_all();
    EXPECT_EQ(engine.outstanding_ops(), 0u);
  }
  for (int b = 0; b < kGraphBuffers; ++b) {
    EXPECT_EQ(data.value[b], ref.value[b]) << "buffer " << b;
    EXPECT_EQ(data.write_log[b], ref.write_log[b]) << "write order of buffer " << b;
  }
  for (int i = 0; i < kOps; ++i) {
    ASSERT_EQ(ops[i].runs.load(), 1) << "op " << i;
    ASSERT_EQ(ops[i].seen, ref_ops[i].seen) << "values read by op " << i;
  }
}

TEST_P(AsyncEngineConfig, SyncRoundTripsNeverLoseWakeups) {
  Watchdog dog(60s, "SyncRoundTripsNeverLoseWakeups");
  AsyncEngine engine(options());
  const BufferId a = engine.new_buffer();
  const BufferId b = engine.new_buffer();
  std::uint64_t va = 0;
  std::uint64_t vb = 0;
  auto inc = [](void* p) { ++*static_cast<std::uint64_t*>(p); };
  const int kRounds = 3000 / kSlowdown;
  for (int i = 1; i <= kRounds; ++i) {
    switch (i % 4) {
      case 0:
        engine.push(inc, &va, {}, {a});
        engine.wait_for(a);
        break;
      case 1:
        engine.push(inc, &vb, {}, {b});
        engine.wait_all();
        break;
      case 2:
        engine.push(inc, &va, {}, {a});
        engine.push(inc, &vb, {}, {b});
        engine.wait_for(b);
        engine.wait_for(a);
        break;
      default:
        // Let idle workers reach their parking path before the next push.
        if (i % 64 == 3) std::this_thread::sleep_for(200us);
        engine.push(inc, &vb, {a}, {b});
        engine.wait_for(b);
        break;
    }
    ASSERT_EQ(va + vb, static_cast<std::uint64_t>(i / 4 * 5 + (i % 4 >= 1) + 2 * (i % 4 >= 2) + (i % 4 >= 3)))
        << "round " << i;
  }
}

TEST_P(AsyncEngineConfig, IndependentOpsRunInParallel) {
  if (std::get<0>(GetParam()) < 2) GTEST_SKIP() << "needs two workers";
  Watchdog dog(60s, "IndependentOpsRunInParallel");
  Tasks tasks;
  AsyncEngine engine(options());
  const BufferId x = engine.new_buffer();
  const BufferId y = engine.new_buffer();
  for (int round = 0; round < 20; ++round) {
    // Each op waits for the other to start: with serial execution neither would see the other.
    std::atomic<bool> a_started{false}, b_started{false};
    bool a_saw_b = false, b_saw_a = false;
    void* op_a = tasks.add([&] {
      a_started.store(true);
      a_saw_b = wait_flag(b_started);
    });
    void* op_b = tasks.add([&] {
      b_started.store(true);
      b_saw_a = wait_flag(a_started);
    });
    if (round % 2 == 0) {
      engine.push(Tasks::run, op_a, {}, {x});  // two writers of different buffers
      engine.push(Tasks::run, op_b, {}, {y});
    } else {
      engine.push(Tasks::run, op_a, {x}, {});  // two readers of the same buffer
      engine.push(Tasks::run, op_b, {x}, {});
    }
    engine.wait_all();
    ASSERT_TRUE(a_saw_b && b_saw_a) << "round " << round;
  }
}

TEST_P(AsyncEngineConfig, DestructorRunsQueuedWork) {
  Watchdog dog(60s, "DestructorRunsQueuedWork");
  std::atomic<int> ran{0};
  std::uint64_t chain = 0;
  {
    Tasks tasks;
    AsyncEngine engine(options());
    const BufferId slow = engine.new_buffer();
    const BufferId fast = engine.new_buffer();
    engine.push(Tasks::run, tasks.add([&] {
      std::this_thread::sleep_for(20ms);
      ++ran;
    }),
                {}, {slow});
    for (int i = 0; i < 2000; ++i) {
      engine.push(Tasks::run, tasks.add([&] {
        ++chain;
        ++ran;
      }),
                  {slow}, {fast});
      engine.push(Tasks::run, tasks.add([&] { ++ran; }), {}, {});
    }
  }
  EXPECT_EQ(ran.load(), 4001);
  EXPECT_EQ(chain, 2000u);
}

TEST_P(AsyncEngineConfig, BackPressureBoundsOutstandingOps) {
  Watchdog dog(60s, "BackPressureBoundsOutstandingOps");
  constexpr std::size_t kBound = 4;
  AsyncEngineOptions o = options();
  o.max_queued_ops = kBound;
  Tasks tasks;
  AsyncEngine engine(o);
  const BufferId b = engine.new_buffer();
  const BufferId c = engine.new_buffer();
  std::atomic<std::size_t> max_seen_in_op{0};
  std::atomic<int> ran{0};
  const int kOps = 600 / kSlowdown;
  for (int i = 0; i < kOps; ++i) {
    engine.push(Tasks::run, tasks.add([&, i] {
      const std::size_t now = engine.outstanding_ops();
      std::size_t prev = max_seen_in_op.load();
      while (now > prev && !max_seen_in_op.compare_exchange_weak(prev, now)) {
      }
      if (i % 50 == 0) std::this_thread::sleep_for(100us);
      ++ran;
    }),
                {}, {i % 3 == 0 ? c : b});
    ASSERT_LE(engine.outstanding_ops(), kBound) << "after push " << i;
  }
  engine.wait_all();
  EXPECT_EQ(ran.load(), kOps);
  EXPECT_LE(max_seen_in_op.load(), kBound);
  EXPECT_LE(engine.peak_outstanding_ops(), kBound);
  EXPECT_GE(engine.peak_outstanding_ops(), 1u);
  EXPECT_EQ(engine.outstanding_ops(), 0u);
}

TEST_P(AsyncEngineConfig, PushBlocksAtTheBoundUntilAnOpCompletes) {
  Watchdog dog(60s, "PushBlocksAtTheBoundUntilAnOpCompletes");
  constexpr std::size_t kBound = 3;
  AsyncEngineOptions o = options();
  o.max_queued_ops = kBound;
  Tasks tasks;
  AsyncEngine engine(o);
  const BufferId b = engine.new_buffer();
  std::atomic<bool> gate{false};
  std::atomic<int> pushed{0};
  void* blocked = tasks.add([&] { wait_flag(gate, 30'000ms); });
  void* noop = tasks.add([] {});
  // The pusher thread is the frontend until it is joined.
  std::thread pusher([&] {
    engine.push(Tasks::run, blocked, {}, {b});
    for (int i = 0; i < 10; ++i) {
      engine.push(Tasks::run, noop, {b}, {});
      ++pushed;
    }
  });
  // Until the pusher has reached the bound (the gated op and kBound - 1 no-ops outstanding): a
  // condition waited for, not a guess of how long the pusher takes (issue 44: after a 50 ms sleep
  // a slow or loaded machine had not pushed them yet). Its limit is the gated op's own.
  const auto deadline = std::chrono::steady_clock::now() + 30'000ms;
  while ((pushed.load() < static_cast<int>(kBound) - 1 || engine.outstanding_ops() < kBound) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(engine.outstanding_ops(), kBound);
  // The next push must wait while the gated op holds the bound: for a while nothing more is
  // pushed. (A window to look in, not a synchronisation: a push that blocks passes on any machine;
  // one that does not block shows here unless the pusher got no CPU for the whole window.)
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(pushed.load(), static_cast<int>(kBound) - 1) << "push did not block at the bound";
  EXPECT_EQ(engine.outstanding_ops(), kBound);
  gate.store(true);
  pusher.join();
  engine.wait_all();
  EXPECT_EQ(pushed.load(), 10);
  EXPECT_EQ(engine.peak_outstanding_ops(), kBound);
}

TEST_P(AsyncEngineConfig, FullRingIsDrainedByTheFrontend) {
  Watchdog dog(60s, "FullRingIsDrainedByTheFrontend");
  Tasks tasks;
  AsyncEngine engine(options());
  const BufferId b = engine.new_buffer();
  const BufferId c = engine.new_buffer();
  const BufferId d = engine.new_buffer();
  std::atomic<bool> gate{false};
  engine.push(Tasks::run, tasks.add([&] { wait_flag(gate, 30'000ms); }), {}, {b});
  // Far more records than the ring holds while the gate blocks them all; mixed record sizes so
  // records hit the ring end at odd offsets (wrap markers).
  std::uint64_t value = 0;
  auto inc = [](void* p) { ++*static_cast<std::uint64_t*>(p); };
  const int kOps = 30000 / kSlowdown;
  for (int i = 0; i < kOps; ++i) {
    if (i % 3 == 0) {
      engine.push(inc, &value, {c, d}, {b});
    } else {
      engine.push(inc, &value, {}, {b});
    }
  }
  gate.store(true);
  engine.wait_for(b);
  EXPECT_EQ(value, static_cast<std::uint64_t>(kOps));
}

TEST_P(AsyncEngineConfig, HugeOpsWrapTheRing) {
  Watchdog dog(60s, "HugeOpsWrapTheRing");
  Tasks tasks;
  AsyncEngine engine(options());
  std::vector<BufferId> tags;
  for (int i = 0; i < 8; ++i) tags.push_back(engine.new_buffer());
  std::vector<BufferId> many;  // 40000 ids, 8 distinct: a record of almost a third of the ring
  for (int i = 0; i < 40000; ++i) many.push_back(tags[static_cast<std::size_t>(i) % tags.size()]);
  std::atomic<bool> gate{false};
  engine.push(Tasks::run, tasks.add([&] { wait_flag(gate, 30'000ms); }), {}, {tags[0]});
  std::uint64_t value = 0;
  auto inc = [](void* p) { ++*static_cast<std::uint64_t*>(p); };
  const BufferId first[] = {tags[0]};
  for (int i = 0; i < 60; ++i) {
    if (i % 5 == 0) {
      engine.push(inc, &value, many, first);
    } else {
      engine.push(inc, &value, {tags[1 + i % 7]}, {tags[0]});
    }
  }
  gate.store(true);
  engine.wait_for(tags[0]);
  EXPECT_EQ(value, 60u);
  std::vector<BufferId> too_many(70000, tags[1]);
  EXPECT_THROW(engine.push(inc, &value, too_many, {}), std::length_error);
}

TEST_P(AsyncEngineConfig, OpThatThrowsStillCompletesAndIsRethrown) {
  Watchdog dog(60s, "OpThatThrowsStillCompletesAndIsRethrown");
  Tasks tasks;
  AsyncEngine engine(options());
  const BufferId b = engine.new_buffer();
  const BufferId c = engine.new_buffer();
  std::vector<int> log;  // written only by writers of b, which the engine serialises
  engine.push(Tasks::run, tasks.add([&] { log.push_back(0); }), {}, {b});
  engine.push(Tasks::run, tasks.add([&] {
    log.push_back(1);
    throw std::runtime_error("first");
  }),
              {}, {b});
  engine.push(Tasks::run, tasks.add([&] {
    log.push_back(2);
    throw std::logic_error("second");
  }),
              {}, {b});
  engine.push(Tasks::run, tasks.add([&] { log.push_back(3); }), {b}, {b});
  try {
    engine.wait_all();
    FAIL() << "wait_all did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "first");
  }
  EXPECT_EQ(log, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NO_THROW(engine.wait_all());  // rethrown once, then cleared

  engine.push(Tasks::run, tasks.add([] { throw std::out_of_range("via wait_for"); }), {}, {c});
  EXPECT_THROW(engine.wait_for(c), std::out_of_range);
  EXPECT_NO_THROW(engine.wait_for(c));

  // An exception nobody waits for is dropped by the destructor, not thrown from it.
  engine.push(Tasks::run, tasks.add([] { throw 42; }), {}, {c});
}

INSTANTIATE_TEST_SUITE_P(WorkersAndSpin, AsyncEngineConfig,
                         ::testing::Combine(::testing::Values(1, 2, 4),
                                            ::testing::Values(std::int64_t{50'000}, std::int64_t{0})),
                         [](const ::testing::TestParamInfo<AsyncEngineConfig::ParamType>& p) {
                           return "workers" + std::to_string(std::get<0>(p.param)) +
                                  (std::get<1>(p.param) == 0 ? "_park" : "_spin");
                         });

// ---- single-configuration tests ----

// Pushes land at random moments around the end of a short worker spin, i.e. while workers are
// deciding to park (the push side then uses no fence when membarrier is available).
TEST(AsyncEngineParking, PushesRacingWorkersThatStartToPark) {
  Watchdog dog(60s, "PushesRacingWorkersThatStartToPark");
  std::mt19937 rng(7);
  for (int workers : {1, 2, 4}) {
    AsyncEngine engine({.workers = workers, .spin_ns = 12'000});
    const BufferId b = engine.new_buffer();
    const BufferId c = engine.new_buffer();
    std::uint64_t vb = 0;
    std::uint64_t vc = 0;
    auto inc = [](void* p) { ++*static_cast<std::uint64_t*>(p); };
    const int kRounds = 1500 / kSlowdown;
    for (int i = 0; i < kRounds; ++i) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(rng() % 30);
      while (std::chrono::steady_clock::now() < until) {
      }
      engine.push(inc, &vb, {}, {b});
      if (i % 3 == 0) engine.push(inc, &vc, {}, {c});
      if (i % 2 == 0) {
        engine.wait_for(b);
        ASSERT_EQ(vb, static_cast<std::uint64_t>(i + 1));
      }
    }
    engine.wait_all();
    EXPECT_EQ(vb, static_cast<std::uint64_t>(kRounds));
    EXPECT_EQ(vc, static_cast<std::uint64_t>((kRounds + 2) / 3));
  }
}

TEST(AsyncEngineWaitFor, WaitsForWritersOnlyAndSeesTheirData) {
  Watchdog dog(60s, "WaitsForWritersOnlyAndSeesTheirData");
  Tasks tasks;
  AsyncEngine engine({.workers = 2});
  const BufferId b = engine.new_buffer();
  const BufferId unused = engine.new_buffer();
  std::atomic<bool> gate{false};
  std::atomic<bool> reader_done{false};
  std::vector<int> data(1000, 0);  // plain memory: visibility comes from wait_for alone

  engine.wait_for(unused);  // no writers at all: returns at once

  engine.push(Tasks::run, tasks.add([&] {
    wait_flag(gate, 30'000ms);
    reader_done.store(true);
  }),
              {b}, {});
  engine.wait_for(b);  // a blocked reader of b is not waited for
  EXPECT_FALSE(reader_done.load());

  engine.push(Tasks::run, tasks.add([&] {
    EXPECT_TRUE(reader_done.load()) << "write-after-read order broken";
    for (int& v : data) v = 7;
  }),
              {}, {b});
  std::thread opener([&] {
    std::this_thread::sleep_for(20ms);
    gate.store(true);
  });
  engine.wait_for(b);
  EXPECT_TRUE(reader_done.load());
  EXPECT_EQ(data.front() + data.back(), 14);
  opener.join();

  for (int i = 0; i < 50; ++i) {
    engine.push(Tasks::run, tasks.add([&data, i] {
      if (i % 10 == 0) std::this_thread::sleep_for(1ms);
      for (int& v : data) v += 1;
    }),
                {b}, {b});
  }
  engine.wait_for(b);
  for (int v : data) ASSERT_EQ(v, 57);
}

TEST(AsyncEngineBuffers, ReadAndWriteOfOneBufferAndRepeatsWork) {
  Tasks tasks;
  AsyncEngine engine({.workers = 2});
  const BufferId b = engine.new_buffer();
  std::vector<int> log;
  for (int i = 0; i < 100; ++i) {
    void* op = tasks.add([&log, i] { log.push_back(i); });
    switch (i % 3) {
      case 0:
        engine.push(Tasks::run, op, {b, b}, {b});
        break;
      case 1:
        engine.push(Tasks::run, op, {b}, {b, b, b});
        break;
      default:
        engine.push(Tasks::run, op, {}, {b, b});
        break;
    }
  }
  engine.wait_for(b);
  ASSERT_EQ(log.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(log[i], i);
}

TEST(AsyncEngineBuffers, OpWithManyBuffersOrdersAgainstEach) {
  Tasks tasks;
  AsyncEngine engine({.workers = 4});
  std::vector<BufferId> tags;
  for (int i = 0; i < 300; ++i) tags.push_back(engine.new_buffer());
  std::vector<int> values(300, 0);
  // One op writes all 300 (inline entries overflow), then readers of single buffers follow it.
  engine.push(Tasks::run, tasks.add([&] {
    std::this_thread::sleep_for(5ms);
    for (int& v : values) v = 1;
  }),
              {}, tags);
  std::atomic<int> ok{0};
  for (int i = 0; i < 300; i += 7) {
    engine.push(Tasks::run, tasks.add([&, i] { ok += values[i] == 1; }), {tags[i]}, {});
  }
  engine.wait_all();
  EXPECT_EQ(ok.load(), (300 + 6) / 7);
}

TEST(AsyncEngineBuffers, NewBufferIsThreadSafeAndUnique) {
  AsyncEngine engine({.workers = 1});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 1500;  // crosses several table chunks
  std::vector<std::vector<BufferId>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) got[t].push_back(engine.new_buffer());
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<BufferId> all;
  for (const auto& v : got) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kPerThread));
  EXPECT_EQ(*all.rbegin(), static_cast<BufferId>(kThreads * kPerThread - 1));
  std::uint64_t value = 0;
  engine.push([](void* p) { ++*static_cast<std::uint64_t*>(p); }, &value, {}, {*all.rbegin()});
  engine.wait_for(*all.rbegin());
  EXPECT_EQ(value, 1u);
}

TEST(AsyncEngineApi, RejectsBadArguments) {
  EXPECT_THROW(AsyncEngine({.workers = 0}), std::invalid_argument);
  AsyncEngine engine({.workers = 3});
  EXPECT_EQ(engine.workers(), 3);
  const BufferId b = engine.new_buffer();
  auto noop = [](void*) {};
  EXPECT_THROW(engine.push(noop, nullptr, {}, {b + 1}), std::out_of_range);
  EXPECT_THROW(engine.push(noop, nullptr, {b + 100}, {}), std::out_of_range);
  EXPECT_THROW(engine.push(nullptr, nullptr, {}, {b}), std::invalid_argument);
  EXPECT_THROW(engine.wait_for(b + 1), std::out_of_range);
  EXPECT_EQ(engine.outstanding_ops(), 0u);
  EXPECT_EQ(engine.peak_outstanding_ops(), 0u);
  engine.push(noop, nullptr, {}, {b});
  engine.wait_all();
  EXPECT_EQ(engine.outstanding_ops(), 0u);
  EXPECT_EQ(engine.peak_outstanding_ops(), 1u);
}

}  // namespace
}  // namespace pairbench::kernels
