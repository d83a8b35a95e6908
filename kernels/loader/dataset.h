// A small image dataset on local disk for the loader experiment (C5): N structured uint8 images
// [channels, height, width], each deflate-compressed with zlib into one data file, plus an index
// file of (offset, compressed bytes). Reading a sample is one pread and one zlib uncompress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/rng.h"
#include "kernels/common/scratch.h"

namespace pairbench::kernels::loader {

using ::pairbench::kernels::TempDir;  // kernels/common/scratch.h

struct DatasetSpec {
  std::int64_t samples = 1024;
  int channels = 3;
  int height = 64;
  int width = 64;
  std::uint64_t seed = 1;  // names the images: the same seed writes the same bytes
  // Level 1 (fastest) keeps writing the dataset to ~0.2 s per process; levels 1-6 give 2.5-2.9x
  // on these images and about the same decode cost, which is what the experiment measures.
  int zlib_level = 1;
  std::size_t sample_bytes() const { return static_cast<std::size_t>(channels) * height * width; }
};

// A decode failed (corrupt or truncated data): the message names the sample.
struct CorruptSample : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The image of sample `index` (CHW, uint8): smooth per-channel gradients, a few flat rectangles and
// sparse small noise, so deflate compresses it (2-4x) the way it does real pictures, not noise.
void generate_image(const DatasetSpec& spec, std::int64_t index, std::span<std::uint8_t> out);

// The dataset on disk. Generated once, in the constructor; read-only afterwards and safe to read
// from many threads at once (pread on one descriptor, no shared file offset).
// Why one data file and an index rather than a file per sample: that is how loaders that care about
// speed store small samples (tar / record shards), and it keeps open()/close() out of the cost, so
// a read is one syscall and what is measured is decode + augment + collate.
class Dataset {
 public:
  explicit Dataset(const DatasetSpec& spec);  // writes the files; throws std::runtime_error on I/O errors
  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  const DatasetSpec& spec() const { return spec_; }
  std::int64_t size() const { return spec_.samples; }
  std::size_t sample_bytes() const { return spec_.sample_bytes(); }
  std::size_t compressed_bytes(std::int64_t index) const;  // stored size of one sample
  std::size_t total_compressed_bytes() const { return total_compressed_; }
  std::uint64_t offset(std::int64_t index) const;  // where it starts in data_path()
  const std::filesystem::path& data_path() const { return data_path_; }
  const std::filesystem::path& index_path() const { return index_path_; }

  // pread of the compressed bytes into `scratch` (resized as needed), then zlib uncompress into
  // `out` (sample_bytes()). Throws CorruptSample naming the sample when the stream does not decode
  // to exactly sample_bytes() bytes, std::out_of_range for a bad index, std::runtime_error on I/O.
  void read_sample(std::int64_t index, std::span<std::uint8_t> out, std::vector<std::uint8_t>& scratch) const;

 private:
  DatasetSpec spec_;
  TempDir dir_{"pairbench-loader"};
  std::filesystem::path data_path_, index_path_;
  std::vector<std::uint64_t> offsets_;  // samples + 1 entries, read back from the index file
  std::size_t total_compressed_ = 0;
  int fd_ = -1;
};

using ::pairbench::kernels::fresh_seed;  // kernels/common/rng.h
using ::pairbench::kernels::splitmix64;  // kernels/common/rng.h: behind every seeded choice here

}  // namespace pairbench::kernels::loader
