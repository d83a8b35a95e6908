// cuBLASLt GEMM in fp32, tf32, fp16 and bf16 (fp32 accumulation), tuned over the heuristic's
// candidates in an untimed pass; row-major C = A*B runs as column-major C^T = B^T A^T. cuBLASLt is
// dlopen'ed on first use (see lt() below), not linked.
#include <cublasLt.h>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/cuda_events.h"
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/elementwise/bandwidth_ops.h"
#include "kernels/gemm/cublas_gemm.h"

namespace pairbench::kernels::cuda {
namespace {

using elementwise::Precision;

using kernels::check;
#ifndef PAIRBENCH_CUDA_LIBRARY_DIR
#define PAIRBENCH_CUDA_LIBRARY_DIR ""
#endif

// The cuBLASLt entry points this file uses, resolved from the shared library at first use. Linked
// instead, its static initialisers cost ~0.5 s of CPU at every bench_precision start (twice with
// the OpenBLAS re-exec), CPU-only arms included.
struct LtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatmulAlgoConfigGetAttribute) algo_config = nullptr;
  std::string error;  // why loading failed; empty when every pointer is set
};

template <typename Fn>
void resolve(void* lib, const char* name, Fn& out, std::string& error) {
  out = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!out && error.empty()) error = std::string("cuBLASLt has no symbol ") + name;
}

const LtApi& lt() {
  static const LtApi api = [] {
    LtApi a;
    // The soname of the cuBLAS we were compiled against, then the toolkit's own directory.
    const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib && *PAIRBENCH_CUDA_LIBRARY_DIR) {
      lib = dlopen((std::string(PAIRBENCH_CUDA_LIBRARY_DIR) + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
      const char* why = dlerror();
      a.error = "cannot load " + soname + ": " + (why ? why : "unknown error");
      return a;
    }
    resolve(lib, "cublasLtCreate", a.create, a.error);
    resolve(lib, "cublasLtDestroy", a.destroy, a.error);
    resolve(lib, "cublasLtGetStatusString", a.status_string, a.error);
    resolve(lib, "cublasLtMatmulDescCreate", a.desc_create, a.error);
    resolve(lib, "cublasLtMatmulDescDestroy", a.desc_destroy, a.error);
    resolve(lib, "cublasLtMatrixLayoutCreate", a.layout_create, a.error);
    resolve(lib, "cublasLtMatrixLayoutDestroy", a.layout_destroy, a.error);
    resolve(lib, "cublasLtMatmulPreferenceCreate", a.pref_create, a.error);
    resolve(lib, "cublasLtMatmulPreferenceSetAttribute", a.pref_set, a.error);
    resolve(lib, "cublasLtMatmulPreferenceDestroy", a.pref_destroy, a.error);
    resolve(lib, "cublasLtMatmulAlgoGetHeuristic", a.heuristic, a.error);
    resolve(lib, "cublasLtMatmul", a.matmul, a.error);
    resolve(lib, "cublasLtMatmulAlgoConfigGetAttribute", a.algo_config, a.error);
    return a;
  }();
  if (!api.error.empty()) throw std::runtime_error(api.error);
  return api;
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + ": " + lt().status_string(status));
  }
}
#define PB_CHECK(call) check((call), #call)

constexpr std::size_t kWorkspaceBytes = std::size_t{64} << 20;  // cuBLAS's recommendation for Hopper is 32 MiB+
constexpr int kMaxHeuristics = 16;

elementwise::Storage storage_of(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return elementwise::Storage::kFp16;
    case Precision::kBf16:
      return elementwise::Storage::kBf16;
    default:
      return elementwise::Storage::kFp32;
  }
}
cudaDataType_t data_type(Precision p) {
  switch (p) {
    case Precision::kFp16:
      return CUDA_R_16F;
    case Precision::kBf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}
cublasComputeType_t compute_type(Precision p) {
  return p == Precision::kTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

std::string ordinal(int i) {
  const int n = i + 1;
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

}  // namespace

std::string gemm_unsupported_reason(Precision p) {
  const DeviceInfo device = query_device();
  if (!device.available) return device.reason;
  const int cc = device.compute_capability_major * 10 + device.compute_capability_minor;
  const std::string has = device.name + " has compute capability " + std::to_string(device.compute_capability_major) +
                          "." + std::to_string(device.compute_capability_minor);
  switch (p) {
    case Precision::kTf32:
      if (cc < 80) return "tf32 tensor cores need compute capability >= 8.0; " + has;
      break;
    case Precision::kBf16:
      if (cc < 80) return "bf16 tensor cores need compute capability >= 8.0; " + has;
      break;
    case Precision::kFp16:
      if (cc < 70) return "fp16 tensor cores need compute capability >= 7.0; " + has;
      break;
    case Precision::kFp32:
      break;
  }
  return "";
}

struct LtGemm::Impl {
  Precision precision;
  gemm::GemmShape shape;
  elementwise::Storage storage;
  cublasLtHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  void *a = nullptr, *b = nullptr, *c = nullptr, *workspace = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t lay_b = nullptr, lay_a = nullptr, lay_c = nullptr;  // column-major views
  // A plain array: std::vector of this unnamed typedef'd struct crashes nvcc 13's front end.
  cublasLtMatmulHeuristicResult_t candidates[kMaxHeuristics] = {};
  int candidate_count = 0;
  cublasLtMatmulAlgo_t algo{};
  float alpha = 1.0f, beta = 0.0f;

  std::size_t elem() const { return elementwise::storage_bytes(storage); }
  std::size_t count(std::int64_t r, std::int64_t c) const { return static_cast<std::size_t>(r * c); }
  void release() {
    if (lay_c) lt().layout_destroy(lay_c);
    if (lay_a) lt().layout_destroy(lay_a);
    if (lay_b) lt().layout_destroy(lay_b);
    if (op) lt().desc_destroy(op);
    if (stream) cudaStreamDestroy(stream);
    if (workspace) cudaFree(workspace);
    if (c) cudaFree(c);
    if (b) cudaFree(b);
    if (a) cudaFree(a);
    if (handle) lt().destroy(handle);
  }
  void launch(const cublasLtMatmulAlgo_t& with) {
    // Column-major: C^T (n x m) = B^T (n x k) * A^T (k x m); the row-major buffers already are these.
    PB_CHECK(lt().matmul(handle, op, &alpha, b, lay_b, a, lay_a, &beta, c, lay_c, c, lay_c, &with, workspace,
                         kWorkspaceBytes, stream));
  }
  double time_with(const cublasLtMatmulAlgo_t& with, int launches) {  // ms, on the shared event pair
    EventSpan span;
    span.begin({stream});
    for (int i = 0; i < launches; ++i) launch(with);
    span.end({stream});
    return span.elapsed_s() * 1e3;
  }
};

LtGemm::LtGemm(Precision precision, const gemm::GemmShape& shape) : impl_(new Impl) {
  Impl& d = *impl_;
  d.precision = precision;
  d.shape = shape;
  d.storage = storage_of(precision);
  try {
    if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) throw std::invalid_argument("LtGemm: empty shape");
    PB_CHECK(lt().create(&d.handle));
    PB_CHECK(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
    PB_CHECK(cudaMalloc(&d.a, d.count(shape.m, shape.k) * d.elem()));
    PB_CHECK(cudaMalloc(&d.b, d.count(shape.k, shape.n) * d.elem()));
    PB_CHECK(cudaMalloc(&d.c, d.count(shape.m, shape.n) * d.elem()));
    PB_CHECK(cudaMalloc(&d.workspace, kWorkspaceBytes));
    PB_CHECK(lt().desc_create(&d.op, compute_type(precision), CUDA_R_32F));
    const cudaDataType_t t = data_type(precision);
    PB_CHECK(lt().layout_create(&d.lay_b, t, shape.n, shape.k, shape.n));
    PB_CHECK(lt().layout_create(&d.lay_a, t, shape.k, shape.m, shape.k));
    PB_CHECK(lt().layout_create(&d.lay_c, t, shape.n, shape.m, shape.n));
    cublasLtMatmulPreference_t pref = nullptr;
    PB_CHECK(lt().pref_create(&pref));
    const std::size_t ws = kWorkspaceBytes;
    cublasStatus_t st = lt().pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    int returned = 0;
    cublasLtMatmulHeuristicResult_t found[kMaxHeuristics] = {};
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = lt().heuristic(d.handle, d.op, d.lay_b, d.lay_a, d.lay_c, d.lay_c, pref, kMaxHeuristics, found, &returned);
    }
    lt().pref_destroy(pref);
    check(st, "cublasLtMatmulAlgoGetHeuristic");
    for (int i = 0; i < returned; ++i) {
      if (found[i].state == CUBLAS_STATUS_SUCCESS) d.candidates[d.candidate_count++] = found[i];
    }
    if (d.candidate_count == 0)
      throw std::runtime_error("cublasLtMatmulAlgoGetHeuristic: no algorithm for " + shape.text());
    d.algo = d.candidates[0].algo;
  } catch (...) {
    d.release();
    delete impl_;
    throw;
  }
}

LtGemm::~LtGemm() {
  cudaStreamSynchronize(impl_->stream);
  impl_->release();
  delete impl_;
}

void LtGemm::upload(std::span<const float> a, std::span<const float> b) {
  Impl& d = *impl_;
  if (a.size() != d.count(d.shape.m, d.shape.k) || b.size() != d.count(d.shape.k, d.shape.n)) {
    throw std::invalid_argument("LtGemm::upload: sizes do not match " + d.shape.text());
  }
  elementwise::HostArray ha(d.storage, a.size()), hb(d.storage, b.size());
  ha.store(a);
  hb.store(b);
  PB_CHECK(cudaMemcpyAsync(d.a, ha.data(), ha.bytes(), cudaMemcpyHostToDevice, d.stream));
  PB_CHECK(cudaMemcpyAsync(d.b, hb.data(), hb.bytes(), cudaMemcpyHostToDevice, d.stream));
  PB_CHECK(cudaStreamSynchronize(d.stream));
}

void LtGemm::poison_output() {
  Impl& d = *impl_;
  // All-ones bytes are NaN in fp32, fp16 and bf16 alike.
  PB_CHECK(cudaMemsetAsync(d.c, 0xFF, d.count(d.shape.m, d.shape.n) * d.elem(), d.stream));
  PB_CHECK(cudaStreamSynchronize(d.stream));
}

GemmAlgoChoice LtGemm::tune(int max_candidates, int launches_per_candidate) {
  Impl& d = *impl_;
  GemmAlgoChoice out;
  double best = 0;
  const int n = std::min(max_candidates, d.candidate_count);
  for (int i = 0; i < n; ++i) {
    const cublasLtMatmulAlgo_t& algo = d.candidates[i].algo;
    try {
      d.time_with(algo, 1);  // warm-up: module load, first-launch costs
      const double ms = d.time_with(algo, launches_per_candidate) / launches_per_candidate;
      if (i == 0) out.heuristic_first_ms = ms;
      if (out.candidates == 0 || ms < best) {
        best = ms;
        out.chosen = i;
        d.algo = algo;
      }
      ++out.candidates;
    } catch (const std::runtime_error&) {
      cudaGetLastError();  // a candidate that fails to launch is skipped, not fatal
    }
  }
  if (out.candidates == 0) throw std::runtime_error("LtGemm::tune: no candidate algorithm ran");
  out.chosen_ms = best;
  std::int32_t id = 0, splitk = 0;
  std::uint32_t tile = 0, stages = 0;
  std::size_t written = 0;
  lt().algo_config(&d.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  lt().algo_config(&d.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
  lt().algo_config(&d.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &written);
  lt().algo_config(&d.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &written);
  char buf[160];
  std::snprintf(buf, sizeof buf, "algo %d tile %u stages %u splitk %d (%s of %d candidates)", id, tile, stages, splitk,
                ordinal(out.chosen).c_str(), out.candidates);
  out.description = buf;
  return out;
}

void LtGemm::enqueue() { impl_->launch(impl_->algo); }

kernels::cuda::StreamRef LtGemm::stream() const { return {impl_->stream}; }

void LtGemm::sync() { PB_CHECK(cudaStreamSynchronize(impl_->stream)); }

void LtGemm::download(std::span<float> c) {
  Impl& d = *impl_;
  if (c.size() != d.count(d.shape.m, d.shape.n)) throw std::invalid_argument("LtGemm::download: size mismatch");
  elementwise::HostArray host(d.storage, c.size());
  PB_CHECK(cudaMemcpyAsync(host.data(), d.c, host.bytes(), cudaMemcpyDeviceToHost, d.stream));
  PB_CHECK(cudaStreamSynchronize(d.stream));
  host.load(c);
}

}  // namespace pairbench::kernels::cuda
