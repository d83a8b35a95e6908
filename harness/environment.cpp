// Fingerprint capture: CPU, memory, kernel, governor, load, build, git, OpenBLAS, CUDA.
#include "harness/environment.h"

#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "kernels/dispatch/cuda_stream_ops.h"
#include "kernels/gemm/openblas.h"
#include "pairbench/build_info.h"

extern "C" {
char* openblas_get_corename(void);
char* openblas_get_config(void);
int openblas_get_num_threads(void);
}

namespace pairbench::harness {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\n");
  const auto e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// First value of a "key : value" field in /proc/cpuinfo.
std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return "";
}

std::string run_command(const std::string& cmd) {
  std::array<char, 256> buf{};
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    while (fgets(buf.data(), buf.size(), p)) out += buf.data();
    pclose(p);
  }
  return trim(out);
}

bool has_flag(const std::vector<std::string>& flags, const char* f) {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

}  // namespace

std::string openblas_core_name() {
  const char* name = openblas_get_corename();
  return name ? trim(name) : "";
}

std::string better_openblas_core(const std::string& core, const std::vector<std::string>& cpu_flags) {
  // One table of OpenBLAS kernels for the whole suite: kernels/gemm/openblas.h.
  kernels::gemm::CpuVectorFeatures cpu;
  cpu.avx2 = has_flag(cpu_flags, "avx2");
  cpu.fma = has_flag(cpu_flags, "fma");
  cpu.avx512f = has_flag(cpu_flags, "avx512f");
  cpu.avx512bw = has_flag(cpu_flags, "avx512bw");
  cpu.avx512vl = has_flag(cpu_flags, "avx512vl");
  cpu.avx512dq = has_flag(cpu_flags, "avx512dq");
  cpu.avx512cd = has_flag(cpu_flags, "avx512cd");
  const std::string best = kernels::gemm::best_core_for(cpu);
  const int level = kernels::gemm::core_isa_level(core);
  if (best.empty() || level < 0 || level >= kernels::gemm::core_isa_level(best)) return "";
  return best;
}

Environment capture_environment(const std::string& source_dir) {
  Environment env;
  nlohmann::json& f = env.fingerprint;

  std::vector<std::string> flags;
  {
    std::istringstream in(cpuinfo_field("flags"));
    for (std::string flag; in >> flag;) flags.push_back(flag);
  }
  std::vector<std::string> notable;
  for (const char* flag : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd",
                           "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"}) {
    if (has_flag(flags, flag)) notable.push_back(flag);
  }
  struct utsname uts {};
  uname(&uts);
  char hostname[256] = {};
  gethostname(hostname, sizeof hostname - 1);

  f["cpu_model"] = cpuinfo_field("model name");
  f["cpu_flags"] = notable;
  f["cpu_count"] = std::thread::hardware_concurrency();
  f["cpu_governor"] = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  f["memory_bytes"] = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  f["hostname"] = hostname;
  f["kernel"] = std::string(uts.sysname) + " " + uts.release;
  f["thp"] = read_first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  f["load_average_1m"] = load[0];

  f["build_type"] = PAIRBENCH_BUILD_TYPE;
  f["compiler"] = PAIRBENCH_CXX_COMPILER;
  f["cuda_compiler"] = trim(PAIRBENCH_CUDA_COMPILER);
  f["compiler_flags"] = trim(PAIRBENCH_CXX_FLAGS);
  f["cuda_architectures"] = PAIRBENCH_CUDA_ARCHITECTURES;
  f["built_with_cuda"] = static_cast<bool>(PAIRBENCH_HAVE_CUDA);
  const std::string git = "git -C '" + source_dir + "' ";
  std::string sha = run_command(git + "rev-parse --verify -q HEAD 2>/dev/null");
  if (sha.size() != 40 || sha.find_first_not_of("0123456789abcdef") != std::string::npos) sha.clear();
  f["git_sha"] = sha;  // empty outside a git checkout
  f["git_dirty"] = !run_command(git + "status --porcelain --untracked-files=no 2>/dev/null").empty();

  const std::string core = openblas_core_name();
  f["blas_library"] = "OpenBLAS";
  // The harness's own process: bench_precision re-runs itself with the right kernel where OpenBLAS
  // picks a weaker one, and each BLAS arm's label records the kernel that really ran.
  f["blas_config"] = trim(openblas_get_config());
  f["blas_core"] = core;
  f["blas_threads"] = openblas_get_num_threads();
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  f["openblas_coretype_env"] = coretype ? coretype : "";

  const kernels::cuda::DeviceInfo gpu = kernels::cuda::query_device();
  f["cuda_runtime_version"] = gpu.runtime_version;
  f["cuda_driver_version"] = gpu.driver_version;
  f["gpu_count"] = gpu.device_count;
  f["gpu_name"] = gpu.available ? gpu.name : "";
  f["gpu_compute_capability"] = gpu.available ? std::to_string(gpu.compute_capability_major) + "." +
                                                    std::to_string(gpu.compute_capability_minor)
                                              : "";
  f["gpu_unavailable_reason"] = gpu.available ? "" : gpu.reason;

  // The machine key: results are comparable only between runs with the same key (same CPU,
  // GPU, driver and build). FNV-1a over the fields that change what a benchmark measures.
  std::string key_text;
  for (const char* k : kComparableFields) {
    key_text += f[k].is_string() ? f[k].get<std::string>() : f[k].dump();
    key_text += '\x1f';
  }
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : key_text) hash = (hash ^ c) * 1099511628211ull;
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(hash));
  f["machine_key"] = key;

  // Warnings: things that silently sabotage results on this machine.
  if (std::string(PAIRBENCH_BUILD_TYPE) != "Release") {
    env.warnings.push_back(std::string("build type is ") + PAIRBENCH_BUILD_TYPE + ", not Release: timings are not representative");
  }
  if (const std::string better = better_openblas_core(core, flags); !better.empty()) {
    env.warnings.push_back("OpenBLAS selected its '" + core + "' kernels on a CPU that can run '" + better +
                           "' kernels (BLAS arms run far below this CPU's peak): set OPENBLAS_CORETYPE=" + better);
  }
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (load[0] > 0.5 * cpus) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "machine is loaded: 1-minute load average %.2f on %u CPUs", load[0], cpus);
    env.warnings.push_back(buf);
  }
  const std::string governor = f["cpu_governor"];
  if (!governor.empty() && governor != "performance") {
    env.warnings.push_back("CPU frequency governor is '" + governor + "', not 'performance'");
  }
  if (f["git_dirty"].get<bool>()) env.warnings.push_back("git work tree has uncommitted changes");
  if (gpu.available && gpu.compute_capability_major < 7) {
    env.warnings.push_back("GPU compute capability " + f["gpu_compute_capability"].get<std::string>() +
                           " has no tensor cores (C17): fp16/bf16 speed-ups will not appear");
  }
  return env;
}

nlohmann::json Environment::to_json() const {
  nlohmann::json j = fingerprint;
  j["warnings"] = warnings;
  return j;
}

}  // namespace pairbench::harness
