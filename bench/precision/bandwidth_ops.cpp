// precision.bandwidth_ops (C10): y = a*x + b and a row-wise layer-norm (rows of 1024) with fp32
// storage vs bf16 / fp16 storage and fp32 math, on one CPU core and on the GPU, with their error.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/common/devices.h"
#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "bench/common/process_inputs.h"
#include "kernels/elementwise/bandwidth_ops.h"
#include "kernels/elementwise/cuda_elementwise.h"
#include "kernels/gemm/gemm_reference.h"

namespace pairbench::bench {
namespace {

namespace ew = kernels::elementwise;
using kernels::cuda::ElementwiseOp;
constexpr float kA = 1.5f, kB = 0.25f, kEps = 1e-5f;
constexpr std::int64_t kCols = 1024;  // layer-norm row length (a transformer's hidden size, small end)

ElementwiseOp op_of(const Point& p) {
  const std::string& op = p.get("op");
  if (op == "axpb") return {.kind = ElementwiseOp::Kind::kAxpb, .a = kA, .b = kB};
  if (op == "layer_norm") return {.kind = ElementwiseOp::Kind::kLayerNorm, .cols = kCols, .eps = kEps};
  throw std::invalid_argument("unknown op '" + op + "'");
}

// Inputs: uniform [-1, 1), fresh in every process. (A large per-row mean would make 16-bit storage
// lose the deviations layer-norm keeps: a real effect, but not the one this experiment measures.)
// x, drawn once per process and size and shared by the process's benchmarks (process_inputs.h).
std::shared_ptr<const std::vector<float>> fresh_input(std::size_t n) {
  return process_input<std::vector<float>>("precision.bandwidth_ops/x/" + std::to_string(n), n * sizeof(float), [n] {
    std::vector<float> x(n);
    kernels::gemm::fill_random(x, kernels::gemm::fresh_seed());
    return x;
  });
}

std::vector<double> reference(const ElementwiseOp& op, const std::vector<float>& x) {
  std::vector<double> y(x.size());
  if (op.kind == ElementwiseOp::Kind::kAxpb)
    ew::axpb_reference(op.a, op.b, x, y);
  else
    ew::layer_norm_reference(x, static_cast<std::size_t>(op.cols), op.eps, y);
  return y;
}

// Sets the deciding metric, the bytes it moved (one read of x, one write of y, in the storage
// type; write-allocate traffic not counted, as in STREAM) and the error counters.
// One pass over n elements: each read once and written once in the storage type.
Work pass_work(std::size_t n, ew::Storage storage) {
  return {.bytes = 2.0 * static_cast<double>(n * ew::storage_bytes(storage)), .elements = static_cast<double>(n)};
}

bool verified(benchmark::State& state, ew::Storage storage, double rel_error) {
  const ew::ErrorCheck check = ew::check_error(rel_error, ew::elementwise_error_bound(ew::precision_of(storage)));
  state.counters["rel_error"] = check.rel_error;
  state.counters["error_bound"] = check.bound;
  if (!check.ok) {
    fail_verification(state, check.text());
    return false;
  }
  mark_verified(state);
  return true;
}

bool verified(benchmark::State& state, ew::Storage storage, const std::vector<double>& ref,
              const std::vector<float>& y) {
  return verified(state, storage, ew::rel_error(ref, y));
}

// The fp64 reference and the error a chunk of whole rows at a time: at 16 M elements a full
// reference and a widened copy of y would fault in 192 MiB, which on a VM costs more time than
// the check itself, in every process.
double chunked_rel_error(const ElementwiseOp& op, const std::vector<float>& x, const ew::HostArray& hy) {
  const std::size_t cols = op.kind == ElementwiseOp::Kind::kAxpb ? 1 : static_cast<std::size_t>(op.cols);
  const std::size_t chunk = std::max(cols, (std::size_t{1} << 16) / cols * cols);
  std::vector<double> ref(chunk);
  std::vector<float> y(chunk);
  ew::RelErrorSum sum;
  for (std::size_t i = 0; i < x.size(); i += chunk) {
    const std::size_t len = std::min(chunk, x.size() - i);
    const std::span<const float> xs(x.data() + i, len);
    const std::span<double> r(ref.data(), len);
    if (op.kind == ElementwiseOp::Kind::kAxpb)
      ew::axpb_reference(op.a, op.b, xs, r);
    else
      ew::layer_norm_reference(xs, cols, op.eps, r);
    hy.load(std::span<float>(y.data(), len), i);
    sum.add(r, std::span<const float>(y.data(), len));
  }
  return sum.value();
}

void run_cpu(benchmark::State& state, const Point& p, ew::Storage storage) {
  const ElementwiseOp op = op_of(p);
  const auto n = static_cast<std::size_t>(p.get_int("elements"));
  const auto input = fresh_input(n);
  const std::vector<float>& x = *input;
  ew::HostArray hx(storage, n), hy(storage, n);
  hx.store(x);
  hy.poison();  // also first-touches y's pages, so page faults stay out of the timing
  auto once = [&] {
    if (op.kind == ElementwiseOp::Kind::kAxpb)
      ew::axpb(op.a, op.b, hx, hy);
    else
      ew::layer_norm_rows(hx, hy, static_cast<std::size_t>(op.cols), op.eps);
  };
  once();
  state.SetLabel(std::string("1 core; conversions via ") + ew::path_name(ew::best_path_for_bf16()) + " (bf16), " +
                 ew::path_name(ew::best_path_for_fp16()) + " (fp16)");
  // The fp64 reference's check where it is due (check_due); the passes before timing run either way.
  if (!check_due()) {
    mark_checked_elsewhere(state);
  } else if (!verified(state, storage, chunked_rel_error(op, x, hy))) {
    return;
  }
  once();  // untimed: whatever else is still settling after the verification settles here
  exec(state, pass_work(n, storage), once);
}

void run_cuda(benchmark::State& state, const Point& p, ew::Storage storage) {
  const ElementwiseOp op = op_of(p);
  const auto n = static_cast<std::size_t>(p.get_int("elements"));
  const auto input = fresh_input(n);
  const std::vector<float>& x = *input;
  kernels::cuda::DeviceBandwidthOps dev(storage, static_cast<std::int64_t>(n));
  dev.upload(x);
  dev.poison_output();
  dev.enqueue(op);  // one launch, also the warm-up (module load stays out of the timing); download waits for it
  std::vector<float> y(n, std::numeric_limits<float>::quiet_NaN());
  dev.download(y);
  // The fp64 reference's check where it is due (check_due).
  if (!check_due()) {
    mark_checked_elsewhere(state);
  } else if (!verified(state, storage, reference(op, x), y)) {
    return;
  }
  exec_cuda(state, pass_work(n, storage), dev.stream(), [&] { dev.enqueue(op); });
}

Arm arm(const char* name, ew::Storage storage) {
  return {.name = name,
          .run = [storage](benchmark::State& s,
                           const Point& p) { on_device(p, "cuda") ? run_cuda(s, p, storage) : run_cpu(s, p, storage); },
          .unavailable = unavailable_for_device};
}

}  // namespace

// Expect: past the caches (16M elements: 64 MiB of fp32 x) 16-bit storage moves half the bytes.
// axpb is memory-bound either way (one core streams ~45 GB/s), so bf16/fp16 run ~2x the elements
// per second of fp32. Layer-norm makes three passes over each L1-resident row plus the widening and
// rounding, which leaves one core nearly compute-bound: ~1.1-1.3x. In cache (256K) the conversions
// make 16-bit no faster (0.8-1.2x). On a GPU both ops are memory-bound: ~1.7-2x for 16-bit.
// rel_error: ~3e-8 (axpb) / ~6e-8 (layer-norm) fp32, ~3e-4 fp16, ~2e-3 bf16.
// The deciding metric is elements per second: on bytes per second a 2x faster 16-bit arm would
// read as a tie. (So no "% of limits.memory_bandwidth" column: the summary divides medians of the
// deciding metric; bytes_per_second is recorded beside it for that comparison.)
// Timing: wall clock on the host; CUDA events around each launch at device:cuda.
PAIRBENCH_EXPERIMENT(bandwidth_ops) {
  return Experiment{
      .name = "precision.bandwidth_ops",
      .claim = "C10",
      .question = "Does 16-bit storage with fp32 math speed up bandwidth-bound ops, and what does it cost in accuracy?",
      .arms = {arm("fp32", ew::Storage::kFp32), arm("bf16", ew::Storage::kBf16), arm("fp16", ew::Storage::kFp16)},
      .grid = {{.name = "device", .quick = {"cpu", "cuda"}},
               {.name = "op", .quick = {"axpb", "layer_norm"}},
               {.name = "elements",
                .quick = {"262144", "16777216"},
                .nightly = {"262144", "1048576", "16777216", "67108864"}}},
      .timing = Timing::kByDevice,  // host clock at device:cpu, CUDA events at device:cuda
      .metric = {.name = "elements_per_second", .unit = "elements/s", .better = Better::kHigher},
      // Instruction counts gate this experiment too: one core: deterministic; the CUDA points are GPU work.
      .instructions = cpu_point,
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
      .figure = {.kind = FigureKind::kAccuracy, .counter = "rel_error"},
  };
}

}  // namespace pairbench::bench
