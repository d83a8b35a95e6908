// The simulated bench for decision tests (tests/bench/sim_bench.cpp; issue 37): a copy of bench_sim
// in DIR/bin with its declaration beside it. The times its processes report are the declared
// generator's, whatever the machine's load, so a test may assert what the harness decides about
// them (a verdict, a number of rounds, a stopping point); tests on the real bench binaries check
// mechanics only.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace pairbench::harness {

// `spec`: {"seed": ..., "cases": {"a": {...}, ...}} as sim_bench.cpp's head describes. Returns DIR/bin.
// `layouts` > 1: the build has that many layout variants (bench_sim.layout1 ... copies, which read
// bench_sim's declaration; a case's "layout_x" says how each one runs), as a real build's
// bench_<area>.layout<k> relinked variants.
inline std::string sim_build(const std::string& dir, const nlohmann::json& spec, int layouts = 1) {
  const std::string bin = dir + "/bin";
  std::filesystem::create_directories(bin);
  std::filesystem::copy_file(SIM_BENCH_EXE, bin + "/bench_sim", std::filesystem::copy_options::overwrite_existing);
  for (int k = 1; k < layouts; ++k) {
    std::filesystem::copy_file(SIM_BENCH_EXE, bin + "/bench_sim.layout" + std::to_string(k),
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::ofstream(bin + "/bench_sim.sim") << spec.dump();
  return bin;
}

// A build directory DIR/bin whose bench_sim is a wrapper around `real` (a sim_build's bin) that
// reports the other CUDA setting in its listing (`build.built_with_cuda` flipped), and runs `real`
// otherwise: a build configured differently, with no pairbench of its own. Returns DIR/bin.
inline std::string sim_build_reporting_other_cuda(const std::string& dir, const std::string& real) {
  const std::string bin = dir + "/bin";
  std::filesystem::create_directories(bin);
  {
    std::ofstream wrapper(bin + "/bench_sim");
    wrapper << "#!/bin/sh\n"
            << "if [ \"$1\" = --pairbench_list ]; then\n"
            << "  \"" << real << "/bench_sim\" \"$@\" | sed -e 's/\"built_with_cuda\": false/\"built_with_cuda\": X/'"
            << " -e 's/\"built_with_cuda\": true/\"built_with_cuda\": false/' -e 's/\"built_with_cuda\": "
               "X/\"built_with_cuda\": true/'\n"
            << "  exit 0\n"
            << "fi\n"
            << "exec \"" << real << "/bench_sim\" \"$@\"\n";
  }
  std::filesystem::permissions(bin + "/bench_sim", std::filesystem::perms::owner_all);
  return bin;
}

}  // namespace pairbench::harness
