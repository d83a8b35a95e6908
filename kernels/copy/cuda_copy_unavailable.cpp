// Stand-in for cuda_copy.cu where nvcc is absent: reports why, never pretends to run.
#include <stdexcept>

#include "kernels/copy/cuda_copy.h"

namespace pairbench::kernels::copy::cuda {
namespace {
constexpr const char* kNoCuda = "not compiled with CUDA (nvcc not found at configure time)";
[[noreturn]] void no_cuda() { throw std::runtime_error(kNoCuda); }
}  // namespace

std::string device_unavailable_reason() { return kNoCuda; }

EventSpan::EventSpan() { no_cuda(); }
EventSpan::~EventSpan() = default;
void EventSpan::begin(StreamRef) { no_cuda(); }
void EventSpan::end(StreamRef) { no_cuda(); }
double EventSpan::elapsed_s() { no_cuda(); }

struct Transfer::Impl {};
Transfer::Transfer(std::size_t, Direction, HostKind) { no_cuda(); }
Transfer::~Transfer() = default;
std::size_t Transfer::bytes() const { return 0; }
StreamRef Transfer::stream() const { return {}; }
void Transfer::fill_source(std::uint64_t) { no_cuda(); }
void Transfer::poison_destination() { no_cuda(); }
void Transfer::enqueue(int) { no_cuda(); }
void Transfer::synchronize() { no_cuda(); }
std::size_t Transfer::first_mismatch(std::uint64_t) { no_cuda(); }
bool Transfer::spot_check(std::uint64_t, std::uint64_t) { no_cuda(); }

struct Duplex::Impl {};
Duplex::Duplex(std::size_t) { no_cuda(); }
Duplex::~Duplex() = default;
StreamRef Duplex::stream() const { return {}; }
void Duplex::fill_sources(std::uint64_t) { no_cuda(); }
void Duplex::poison_destinations() { no_cuda(); }
void Duplex::enqueue_sequential() { no_cuda(); }
void Duplex::enqueue_concurrent() { no_cuda(); }
void Duplex::synchronize() { no_cuda(); }
std::string Duplex::first_mismatch(std::uint64_t) { no_cuda(); }
bool Duplex::spot_check(std::uint64_t, std::uint64_t) { no_cuda(); }

struct OverlapPipeline::Impl {};
OverlapPipeline::OverlapPipeline(std::size_t, int, int, int, HostKind) { no_cuda(); }
OverlapPipeline::~OverlapPipeline() = default;
std::span<std::uint32_t> OverlapPipeline::input() { no_cuda(); }
std::span<std::uint32_t> OverlapPipeline::output() { no_cuda(); }
StreamRef OverlapPipeline::stream() const { return {}; }
void OverlapPipeline::run_serial() { no_cuda(); }
void OverlapPipeline::enqueue_pipelined() { no_cuda(); }
void OverlapPipeline::synchronize() { no_cuda(); }

struct RandomTensor::Impl {};
RandomTensor::RandomTensor(std::size_t) { no_cuda(); }
RandomTensor::~RandomTensor() = default;
std::size_t RandomTensor::count() const { return 0; }
StreamRef RandomTensor::stream() const { return {}; }
void RandomTensor::reseed(std::uint64_t) { no_cuda(); }
void RandomTensor::generate_on_host() { no_cuda(); }
void RandomTensor::make_on_host_and_copy() { no_cuda(); }
void RandomTensor::make_on_device() { no_cuda(); }
std::span<const float> RandomTensor::host_values() const { return {}; }
void RandomTensor::download(std::span<float>) { no_cuda(); }
void RandomTensor::poison_device() { no_cuda(); }
void RandomTensor::synchronize() { no_cuda(); }

}  // namespace pairbench::kernels::copy::cuda
