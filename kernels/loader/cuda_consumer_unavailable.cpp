// Stand-in for cuda_consumer.cu where nvcc is absent: reports why, never pretends to run.
#include <stdexcept>

#include "kernels/loader/cuda_consumer.h"

namespace pairbench::kernels::loader::cuda {

static constexpr const char* kNoCuda = "not compiled with CUDA";

std::string device_unavailable_reason() { return kNoCuda; }
void* pinned_allocate(std::size_t) { throw std::runtime_error(kNoCuda); }
void pinned_free(void*) {}

struct CudaConsumer::Impl {};
CudaConsumer::CudaConsumer(std::span<const float>, std::size_t features, int outputs, int max_samples)
    : impl_(nullptr), features_(features), outputs_(outputs), max_samples_(max_samples) {
  throw std::runtime_error(kNoCuda);
}
CudaConsumer::~CudaConsumer() = default;
GpuConsumeResult CudaConsumer::consume(const float*, int) { throw std::runtime_error(kNoCuda); }

}  // namespace pairbench::kernels::loader::cuda
