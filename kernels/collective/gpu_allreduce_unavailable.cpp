// Stand-in for gpu_allreduce.cu where nvcc is absent: reports why, never pretends to run.
#include <stdexcept>

#include "kernels/collective/gpu_allreduce.h"

namespace pairbench::kernels::collective::gpu {

static constexpr const char* kNoCuda = "not compiled with CUDA";
std::string devices_unavailable_reason(int) { return kNoCuda; }
std::string nccl_unavailable_reason() { return kNoCuda; }

struct GpuAllReduce::Impl {};
GpuAllReduce::GpuAllReduce(int, std::size_t) : impl_(nullptr) { throw std::runtime_error(kNoCuda); }
GpuAllReduce::~GpuAllReduce() = default;
int GpuAllReduce::participants() const { return 0; }
void GpuAllReduce::upload(int, std::span<const float>) { throw std::runtime_error(kNoCuda); }
void GpuAllReduce::download(int, std::span<float>) { throw std::runtime_error(kNoCuda); }
void GpuAllReduce::poison_staging() { throw std::runtime_error(kNoCuda); }
double GpuAllReduce::time_ms(Algorithm, int) { throw std::runtime_error(kNoCuda); }

}  // namespace pairbench::kernels::collective::gpu
