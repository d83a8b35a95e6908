// A minimal host tensor (float32 elements, a shape, storage it owns or borrows), enough to tell
// torch.as_tensor (adopt an existing buffer: no allocation, no copy) from torch.tensor (allocate
// new storage and copy into it) apart (C11).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace pairbench::kernels::copy {

class HostTensor {
 public:
  // as_tensor: a view of `data`, which the caller keeps alive; only the shape is allocated.
  static HostTensor wrap(float* data, std::vector<std::int64_t> shape);
  // tensor(): new storage (operator new, so pages the allocator hands out fresh fault on first
  // write, as they do for PyTorch's CPU allocator) and a copy of numel(shape) elements.
  static HostTensor copy_of(const float* data, std::vector<std::int64_t> shape);

  float* data() const { return data_; }
  std::span<const std::int64_t> shape() const { return shape_; }
  std::size_t numel() const;
  std::size_t bytes() const { return numel() * sizeof(float); }
  bool owns_storage() const { return storage_ != nullptr; }

 private:
  std::shared_ptr<float[]> storage_;  // null for a view
  float* data_ = nullptr;
  std::vector<std::int64_t> shape_;
};

}  // namespace pairbench::kernels::copy
