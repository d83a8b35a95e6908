// Stand-in for cublas_gemm.cu where nvcc is absent: reports why, never pretends to run.
#include <stdexcept>

#include "kernels/gemm/cublas_gemm.h"

namespace pairbench::kernels::cuda {

static constexpr const char* kNoCuda = "not compiled with CUDA";
std::string gemm_unsupported_reason(elementwise::Precision) { return "not compiled with CUDA (nvcc not found at configure time)"; }

struct LtGemm::Impl {};
LtGemm::LtGemm(elementwise::Precision, const gemm::GemmShape&) : impl_(nullptr) { throw std::runtime_error(kNoCuda); }
LtGemm::~LtGemm() = default;
void LtGemm::upload(std::span<const float>, std::span<const float>) { throw std::runtime_error(kNoCuda); }
void LtGemm::poison_output() { throw std::runtime_error(kNoCuda); }
GemmAlgoChoice LtGemm::tune(int, int) { throw std::runtime_error(kNoCuda); }
void LtGemm::enqueue() { throw std::runtime_error(kNoCuda); }
double LtGemm::time_ms(int) { throw std::runtime_error(kNoCuda); }
void LtGemm::sync() { throw std::runtime_error(kNoCuda); }
void LtGemm::download(std::span<float>) { throw std::runtime_error(kNoCuda); }

}  // namespace pairbench::kernels::cuda
