// Stand-in for cuda_sin_cos.cu where nvcc is absent: reports why, never pretends to run.
#include <stdexcept>

#include "kernels/fusion/cuda_sin_cos.h"

namespace pairbench::kernels::fusion::cuda {

static constexpr const char* kNoCuda = "not compiled with CUDA";
std::string device_unavailable_reason() { return kNoCuda; }

struct DeviceSinCos::Impl {};
DeviceSinCos::DeviceSinCos(std::int64_t) : impl_(nullptr) { throw std::runtime_error(kNoCuda); }
DeviceSinCos::~DeviceSinCos() = default;
void DeviceSinCos::upload(std::span<const float>, std::span<const float>) { throw std::runtime_error(kNoCuda); }
void DeviceSinCos::poison() { throw std::runtime_error(kNoCuda); }
double DeviceSinCos::time_ms(Op, Form, int) { throw std::runtime_error(kNoCuda); }
void DeviceSinCos::download(std::span<float>) { throw std::runtime_error(kNoCuda); }

}  // namespace pairbench::kernels::fusion::cuda
