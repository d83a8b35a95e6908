// The duet start gate (harness/exec/start_gate.h) with real child processes: a side is released
// only once the other is ready or has ended, both at once, and a side that never reaches its gate
// (it failed, or its binary predates the gate) holds nobody back. Order only: nothing here
// depends on how fast the machine runs.
#include "harness/exec/start_gate.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "harness/exec/process.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

// Runs two bash scripts as the two sides of a gated pair; returns their results and release()'s.
struct PairResult {
  ProcessResult side[2];
  bool all_ready = false;
};

PairResult run_pair(const std::string& script0, const std::string& script1) {
  StartGate gate(2);
  EXPECT_TRUE(gate.ok());
  PairResult out;
  const std::string scripts[2] = {script0, script1};
  std::thread threads[2];
  for (int k = 0; k < 2; ++k) {
    threads[k] = std::thread([&, k] {
      out.side[k] = run_process({"/bin/bash", "-c", "IFS=, read R G <<< \"$PAIRBENCH_START_GATE\"; " + scripts[k]},
                                {{"PAIRBENCH_START_GATE", gate.env_value(k)}}, std::chrono::seconds(60), {}, 64u << 10,
                                gate.child_fds(k));
      gate.side_ended(k);
    });
  }
  out.all_ready = gate.release(std::chrono::seconds(60));
  for (auto& t : threads) t.join();
  return out;
}

struct Mark {
  std::string path = (fs::temp_directory_path() / ("start_gate_test." + std::to_string(::getpid()))).string();
  Mark() { fs::remove(path); }
  ~Mark() { fs::remove(path); }
};

TEST(StartGate, ASideIsReleasedOnlyOnceTheOtherIsReadyAndBothAtOnce) {
  Mark mark;
  // Side 0 is slow to get ready and leaves a mark first; side 1 is ready at once and, released,
  // finds the mark: it waited for side 0.
  const PairResult r =
      run_pair("sleep 0.3; touch " + mark.path + "; printf r >&$R; cat <&$G >/dev/null; echo released",
               "printf r >&$R; cat <&$G >/dev/null; test -e " + mark.path + " && echo after-the-other");
  EXPECT_TRUE(r.all_ready);
  EXPECT_EQ(r.side[0].exit_code, 0) << r.side[0].output;
  EXPECT_NE(r.side[0].output.find("released"), std::string::npos) << r.side[0].output;
  EXPECT_NE(r.side[1].output.find("after-the-other"), std::string::npos) << r.side[1].output;
}

TEST(StartGate, ASideThatEndsBeforeItsGateHoldsNobodyBack) {
  // A process that failed in its set-up, and one whose binary knows no gate (it never writes).
  for (const std::string first : {"exit 3", "sleep 0.1; echo no gate here"}) {
    const PairResult r = run_pair(first, "printf r >&$R; cat <&$G >/dev/null; echo released");
    EXPECT_FALSE(r.all_ready) << first;
    EXPECT_EQ(r.side[1].status, ProcessResult::Status::kExited) << first;
    EXPECT_NE(r.side[1].output.find("released"), std::string::npos) << first << ": " << r.side[1].output;
  }
}

TEST(StartGate, ItsDescriptorsReachOnlyTheProcessesItWasGivenTo) {
  // A process run without them sees neither: they are opened close-on-exec.
  StartGate gate(2);
  ASSERT_TRUE(gate.ok());
  const auto fds = gate.child_fds(0);
  const std::string check = "for f in " + std::to_string(fds[0]) + " " + std::to_string(fds[1]) +
                            "; do [ -e /proc/$$/fd/$f ] && echo open-$f; done; true";
  const ProcessResult r = run_process({"/bin/bash", "-c", check}, {}, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("open-"), std::string::npos) << r.output;
  const ProcessResult given = run_process({"/bin/bash", "-c", check}, {}, std::chrono::seconds(60), {}, 64u << 10, fds);
  EXPECT_NE(given.output.find("open-" + std::to_string(fds[0])), std::string::npos) << given.output;
  gate.release(std::chrono::seconds(0));
}

}  // namespace
}  // namespace pairbench::harness
