// Fingerprint capture: CPU, memory, kernel, governor, load, build, git, OpenBLAS, CUDA.
#include "harness/exec/environment.h"

#include "kernels/common/gpu_clocks.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "harness/exec/process.h"
#include "kernels/common/device.h"
#include "kernels/gemm/openblas.h"
#include "pairbench/build_info.h"

extern char** environ;

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

// What a command printed on stdout, and whether it exited 0 within its time limit.
struct CommandOutput {
  std::string out;
  bool ok = false;
};

// Runs `argv` (argv[0] looked up on PATH) by posix_spawnp, never through a shell, so a source
// directory named with quotes or `$(...)` stays one argument. stdin and stderr are /dev/null;
// `extra_env` entries ("NAME=value") are added. Killed after `limit`: a git waiting on a network
// file system must not hang `pairbench env` or a run.
CommandOutput run_argv(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                       std::chrono::milliseconds limit) {
  CommandOutput result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);  // the copy is not close-on-exec
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('=') + 1);
    const bool overridden =
        std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) { return x.rfind(name, 0) == 0; });
    if (!overridden) env_strings.push_back(entry);
  }
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> arg_strings = argv;
  std::vector<char*> args, envp;
  for (auto& a : arg_strings) args.push_back(a.data());
  args.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;  // interrupted, or the limit reached: checked above
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      result.out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      break;  // end of output
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.out = trim(result.out);
  result.ok = !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return result;
}

// git in the source tree. GIT_OPTIONAL_LOCKS=0: `git status` must not take the index lock a
// concurrent `git commit` in the same tree needs.
CommandOutput run_git(const std::string& source_dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", source_dir});
  return run_argv(args, {"GIT_OPTIONAL_LOCKS=0"}, std::chrono::seconds(10));
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

namespace {

// The CUDA device's fields of the fingerprint (none where there is none).
kernels::cuda::DeviceInfo add_gpu_fields(nlohmann::json& f) {
  const kernels::cuda::DeviceInfo gpu = kernels::cuda::query_device();
  f["cuda_runtime_version"] = gpu.runtime_version;
  f["cuda_driver_version"] = gpu.driver_version;
  f["gpu_count"] = gpu.device_count;
  f["gpu_name"] = gpu.available ? gpu.name : "";
  f["gpu_compute_capability"] =
      gpu.available ? std::to_string(gpu.compute_capability_major) + "." + std::to_string(gpu.compute_capability_minor)
                    : "";
  f["gpu_unavailable_reason"] = gpu.available ? "" : gpu.reason;
  // What NVML says of the GPU: clocks, power limit, ECC, driver (not part of the machine key: a
  // changed power limit is named beside the figures, not a new machine).
  if (gpu.available) {
    const kernels::cuda::GpuClocks c = kernels::cuda::read_gpu_clocks();
    f["gpu_sm_clock_max_mhz"] = c.sm_max_mhz;
    f["gpu_memory_clock_mhz"] = c.memory_mhz;
    f["gpu_power_limit_w"] = c.power_limit_w;
    f["gpu_ecc"] = c.ecc == 1 ? "on" : c.ecc == 0 ? "off" : "";
    f["gpu_driver"] = c.driver;
    f["gpu_clocks_unavailable_reason"] = c.available ? "" : c.reason;
  }

  return gpu;
}

// The machine key: results are comparable only between runs with the same key (same CPU, GPU,
// driver and build). FNV-1a over the fields that change what a benchmark measures.
std::string machine_key_of(const nlohmann::json& f) {
  std::string key_text;
  for (const char* k : kComparableFields) {
    key_text += f[k].is_string() ? f[k].get<std::string>() : f[k].dump();
    key_text += '\x1f';
  }
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : key_text) hash = (hash ^ c) * 1099511628211ull;
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(hash));
  return key;
}

// Things that silently sabotage results on this machine.
std::vector<std::string> environment_warnings(const nlohmann::json& f, const kernels::cuda::DeviceInfo& gpu,
                                              const std::string& core, const std::vector<std::string>& flags,
                                              double load_1m) {
  std::vector<std::string> warnings;
  if (std::string(PAIRBENCH_BUILD_TYPE) != "Release") {
    warnings.push_back(std::string("build type is ") + PAIRBENCH_BUILD_TYPE +
                       ", not Release: timings are not representative");
  }
  if (const std::string better = better_openblas_core(core, flags); !better.empty()) {
    warnings.push_back("OpenBLAS selected its '" + core + "' kernels on a CPU that can run '" + better +
                       "' kernels (BLAS arms run far below this CPU's peak): set OPENBLAS_CORETYPE=" + better);
  }
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (load_1m > 0.5 * cpus) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "machine is loaded: 1-minute load average %.2f on %u CPUs", load_1m, cpus);
    warnings.push_back(buf);
  }
  const std::string governor = f["cpu_governor"];
  if (!governor.empty() && governor != "performance") {
    warnings.push_back("CPU frequency governor is '" + governor + "', not 'performance'");
  }
  if (f["git_dirty"].get<bool>()) warnings.push_back("git work tree has uncommitted changes");
  if (gpu.available && gpu.compute_capability_major < 7) {
    warnings.push_back("GPU compute capability " + f["gpu_compute_capability"].get<std::string>() +
                       " has no tensor cores (C17): fp16/bf16 speed-ups will not appear");
  }
  return warnings;
}

}  // namespace

Environment capture_environment(const std::string& source_dir) {
  Environment env;
  nlohmann::json& f = env.fingerprint;

  std::vector<std::string> flags;
  {
    std::istringstream in(cpuinfo_field("flags"));
    for (std::string flag; in >> flag;) flags.push_back(flag);
  }
  std::vector<std::string> notable;
  for (const char* flag : {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq",
                           "avx512cd", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"}) {
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
  const CommandOutput head = run_git(source_dir, {"rev-parse", "--verify", "-q", "HEAD"});
  std::string sha = head.ok ? head.out : "";
  if (sha.size() != 40 || sha.find_first_not_of("0123456789abcdef") != std::string::npos) sha.clear();
  f["git_sha"] = sha;  // empty outside a git checkout
  const CommandOutput status = run_git(source_dir, {"status", "--porcelain", "--untracked-files=no"});
  f["git_dirty"] = status.ok && !status.out.empty();

  const std::string core = openblas_core_name();
  f["blas_library"] = "OpenBLAS";
  // The harness's own process: bench_precision re-runs itself with the right kernel where OpenBLAS
  // picks a weaker one, and each BLAS arm's label records the kernel that really ran.
  f["blas_config"] = trim(openblas_get_config());
  f["blas_core"] = core;
  f["blas_threads"] = openblas_get_num_threads();
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  f["openblas_coretype_env"] = coretype ? coretype : "";

  const kernels::cuda::DeviceInfo gpu = add_gpu_fields(f);
  f["machine_key"] = machine_key_of(f);
  env.warnings = environment_warnings(f, gpu, core, flags, load[0]);
  return env;
}

nlohmann::json Environment::to_json() const {
  nlohmann::json j = fingerprint;
  j["warnings"] = warnings;
  return j;
}

Environment environment_of_build(const std::string& bench_dir, const std::string& source_dir) {
  const std::string exe = bench_dir + "/pairbench";
  if (std::filesystem::exists(exe)) {
    const ProcessResult r = run_process({exe, "env", "--format", "json"}, {}, std::chrono::seconds(60));
    if (r.status == ProcessResult::Status::kExited && r.exit_code == 0) {
      try {
        Environment env;
        env.fingerprint = nlohmann::json::parse(r.output);
        env.warnings = env.fingerprint.value("warnings", std::vector<std::string>{});
        env.fingerprint.erase("warnings");
        return env;
      } catch (const nlohmann::json::exception&) {
      }
    }
  }
  return capture_environment(source_dir);
}

namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : "; ") + line;
  return out;
}

}  // namespace

std::vector<std::string> apply_bench_build_facts(Environment& env, const std::vector<ExperimentEntry>& experiments) {
  std::vector<std::string> added;
  const ExperimentEntry* first = nullptr;
  std::set<std::string> binaries;
  for (const ExperimentEntry& e : experiments) {
    if (e.build.empty() || !binaries.insert(e.binary).second) continue;
    if (!first) {
      first = &e;
      continue;
    }
    for (const std::string& d : build_differences(first->build, e.build)) {
      added.push_back("bench binaries built differently (" + first->binary + " vs " + e.binary + "): " + d);
    }
  }
  if (first) {
    nlohmann::json built = env.fingerprint;
    for (const char* field : kBuildFields) {
      if (first->build.contains(field)) built[field] = first->build[field];
    }
    if (const std::string fields = joined(build_differences(env.fingerprint, built)); !fields.empty()) {
      added.push_back("the bench binaries were built otherwise than this fingerprint says (" + first->binary + ": " +
                      fields + "); what they report is recorded");
    }
    built["machine_key"] = machine_key_of(built);
    env.fingerprint = std::move(built);
  }
  env.warnings.insert(env.warnings.end(), added.begin(), added.end());
  return added;
}

std::vector<std::string> build_differences_said(const Environment& baseline, const Environment& candidate,
                                                std::vector<std::string>& warnings) {
  std::vector<std::string> differences = build_differences(baseline.fingerprint, candidate.fingerprint);
  if (!differences.empty()) {
    warnings.push_back("the two builds are configured differently (baseline vs candidate: " + joined(differences) +
                       "); a change may come from the configuration, not the code");
  }
  return differences;
}

}  // namespace pairbench::harness
