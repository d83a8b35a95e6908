// HostTensor: a view of borrowed memory, or owned storage filled by one memcpy.
#include "kernels/copy/host_tensor.h"

#include <cstring>
#include <stdexcept>

namespace pairbench::kernels::copy {
namespace {
std::size_t product(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("HostTensor: negative dimension");
    n *= static_cast<std::size_t>(d);
  }
  return n;
}
}  // namespace

HostTensor HostTensor::wrap(float* data, std::vector<std::int64_t> shape) {
  HostTensor t;
  t.data_ = data;
  t.shape_ = std::move(shape);
  product(t.shape_);  // validates the shape; a view never looks at the elements
  return t;
}

HostTensor HostTensor::copy_of(const float* data, std::vector<std::int64_t> shape) {
  HostTensor t;
  const std::size_t n = product(shape);
  t.shape_ = std::move(shape);
  t.storage_ = std::shared_ptr<float[]>(new float[n]);  // uninitialised: the copy writes every element
  t.data_ = t.storage_.get();
  std::memcpy(t.data_, data, n * sizeof(float));
  return t;
}

std::size_t HostTensor::numel() const { return product(shape_); }

}  // namespace pairbench::kernels::copy
