// Bandwidth-bound ops on the host, fp32 or 16-bit storage with fp32 math: y = a*x + b and a
// row-wise layer-norm, plus their fp64 references. Single-threaded; no timing here.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "kernels/common/pages.h"
#include "kernels/elementwise/accuracy.h"
#include "kernels/elementwise/float16.h"

namespace pairbench::kernels::elementwise {

enum class Storage { kFp32, kBf16, kFp16 };
const char* storage_name(Storage s);   // "fp32", "bf16", "fp16"
std::size_t storage_bytes(Storage s);  // bytes per element: 4 or 2
Precision precision_of(Storage s);

// n elements in one storage type, 64-byte aligned, pages untouched until first written. Under
// pairbench's layout randomisation (kernels/common/layout.h) the data starts at a random multiple of
// 64 bytes within its first page, a different one in every process.
class HostArray {
 public:
  HostArray(Storage storage, std::size_t n);
  Storage storage() const { return storage_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * storage_bytes(storage_); }
  void store(std::span<const float> values);                 // rounds to the storage type (nearest even)
  void load(std::span<float> out) const;                     // widens to fp32, exactly
  void load(std::span<float> out, std::size_t first) const;  // elements [first, first + out.size())
  void poison();                                             // NaN in every element
  void* data() { return base_ + offset_; }
  const void* data() const { return base_ + offset_; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  Storage storage_;
  std::size_t n_;
  std::size_t offset_;                     // bytes from the allocation's start to the data: a multiple of 64
  std::unique_ptr<std::byte, Free> heap_;  // below malloc's mapping threshold
  PageBuffer pages_;                       // above it
  std::byte* base_ = nullptr;
};

// y = a*x + b elementwise; x and y have the same storage and size (std::invalid_argument otherwise).
// 16-bit storage: 1024-element chunks are widened into an L1-resident fp32 buffer and rounded back.
void axpb(float a, float b, const HostArray& x, HostArray& y);
// Each row of `cols` elements: y = (x - mean) / sqrt(var + eps), mean and (biased) variance in fp32
// over the row (two passes over a row that stays in L1). x.size() must be a multiple of cols.
void layer_norm_rows(const HostArray& x, HostArray& y, std::size_t cols, float eps);

// fp64 references on the fp32 inputs before any rounding to 16-bit storage: the error an arm
// reports includes what its storage type loses, which is the point of the comparison.
void axpb_reference(double a, double b, std::span<const float> x, std::span<double> y);
void layer_norm_reference(std::span<const float> x, std::size_t cols, double eps, std::span<double> y);

}  // namespace pairbench::kernels::elementwise
