// 16-bit storage types (bf16, IEEE fp16) for fp32 math: exact scalar reference conversions
// (round to nearest even) and bulk conversions through F16C / AVX-512 (BF16) where the CPU has them.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace pairbench::kernels::elementwise {

// Raw 16-bit words; no arithmetic on purpose: math happens in fp32 after conversion.
struct Bf16 {
  std::uint16_t bits = 0;
};
struct Fp16 {
  std::uint16_t bits = 0;
};

// Scalar conversions, the reference every bulk path is tested against. fp32 -> 16-bit rounds to
// nearest, ties to even; overflow gives infinity; NaN stays NaN (quietened, top payload bits kept);
// fp16 subnormals are exact in both directions.
Bf16 to_bf16(float f);
Fp16 to_fp16(float f);
float to_float(Bf16 h);
float to_float(Fp16 h);

// The code a bulk conversion runs. kAvx512Bf16 uses VCVTNEPS2BF16 (fp32 -> bf16), which treats
// fp32 subnormal inputs as zero; every other path agrees bit for bit with the scalar conversions.
enum class ConversionPath { kScalar, kAvx2F16c, kAvx512, kAvx512Bf16 };
const char* path_name(ConversionPath path);
bool path_supported(ConversionPath path);  // by this CPU (and OS, for the AVX-512 register state)
ConversionPath best_path_for_bf16();       // fp32 -> bf16: kAvx512Bf16 where the CPU has avx512_bf16
ConversionPath best_path_for_fp16();       // fp32 <-> fp16, bf16 -> fp32: kAvx512, kAvx2F16c, kScalar

// Bulk conversions; `in` and `out` must have the same size (std::invalid_argument otherwise).
// Without a path: the best one this CPU has. An unsupported path throws std::invalid_argument.
void convert(std::span<const float> in, std::span<Bf16> out);
void convert(std::span<const float> in, std::span<Fp16> out);
void convert(std::span<const Bf16> in, std::span<float> out);
void convert(std::span<const Fp16> in, std::span<float> out);
void convert(std::span<const float> in, std::span<Bf16> out, ConversionPath path);
void convert(std::span<const float> in, std::span<Fp16> out, ConversionPath path);
void convert(std::span<const Bf16> in, std::span<float> out, ConversionPath path);
void convert(std::span<const Fp16> in, std::span<float> out, ConversionPath path);

}  // namespace pairbench::kernels::elementwise
