// Stand-in for cuda_elementwise.cu where nvcc is absent: reports why, never pretends to run.
#include <stdexcept>

#include "kernels/elementwise/cuda_elementwise.h"

namespace pairbench::kernels::cuda {

struct DeviceBandwidthOps::Impl {};
static constexpr const char* kNoCuda = "not compiled with CUDA";
DeviceBandwidthOps::DeviceBandwidthOps(elementwise::Storage, std::int64_t) : impl_(nullptr) {
  throw std::runtime_error(kNoCuda);
}
DeviceBandwidthOps::~DeviceBandwidthOps() = default;
void DeviceBandwidthOps::upload(std::span<const float>) { throw std::runtime_error(kNoCuda); }
void DeviceBandwidthOps::poison_output() { throw std::runtime_error(kNoCuda); }
void DeviceBandwidthOps::enqueue(const ElementwiseOp&) { throw std::runtime_error(kNoCuda); }
double DeviceBandwidthOps::time_ms(const ElementwiseOp&, int) { throw std::runtime_error(kNoCuda); }
void DeviceBandwidthOps::download(std::span<float>) { throw std::runtime_error(kNoCuda); }

}  // namespace pairbench::kernels::cuda
