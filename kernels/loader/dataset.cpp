// The on-disk dataset: generation, the data + index files, and reading a sample (pread + inflate).
#include "kernels/loader/dataset.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <system_error>
#include <utility>

namespace pairbench::kernels::loader {
namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void write_all(int fd, const void* data, std::size_t bytes, const std::filesystem::path& path) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("write " + path.string());
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

// Reads exactly `bytes` at `offset`; false when the file ends first.
bool pread_all(int fd, void* data, std::size_t bytes, std::uint64_t offset, const std::string& what) {
  auto* p = static_cast<std::uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("pread " + what);
    if (n == 0) return false;
    p += n;
    offset += static_cast<std::uint64_t>(n);
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

class File {
 public:
  File(const std::filesystem::path& path, int flags) : path_(path) {
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0600);
    if (fd_ < 0) throw_errno("open " + path.string());
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void close_checked() {
    if (::close(std::exchange(fd_, -1)) != 0) throw_errno("close " + path_.string());
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// One deflate stream reset per sample: compress2 would set up (and clear) zlib's ~256 KiB of
// state for every sample, which made writing the dataset twice as slow. Each sample is still a
// complete zlib stream (header, deflate data, adler32), so uncompress() reads it on its own.
class Deflater {
 public:
  explicit Deflater(int level) {
    const int rc = deflateInit(&z_, level);
    if (rc != Z_OK) throw std::runtime_error(std::string("deflateInit failed: ") + zError(rc));
  }
  ~Deflater() { deflateEnd(&z_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  // Compresses `in` into `out` (compressBound(in) bytes); returns the compressed size.
  std::size_t compress(std::span<const std::uint8_t> in, std::vector<std::uint8_t>& out, std::int64_t sample) {
    int rc = deflateReset(&z_);
    z_.next_in = const_cast<Bytef*>(in.data());  // zlib's API is not const-correct; it only reads
    z_.avail_in = static_cast<uInt>(in.size());
    z_.next_out = out.data();
    z_.avail_out = static_cast<uInt>(out.size());
    if (rc == Z_OK) rc = deflate(&z_, Z_FINISH);
    if (rc != Z_STREAM_END) {
      throw std::runtime_error("deflate failed for sample " + std::to_string(sample) + ": " + zError(rc));
    }
    return static_cast<std::size_t>(z_.total_out);
  }

 private:
  z_stream z_{};
};

std::uint8_t clamp_u8(int v) { return static_cast<std::uint8_t>(std::clamp(v, 0, 255)); }

}  // namespace

void generate_image(const DatasetSpec& spec, std::int64_t index, std::span<std::uint8_t> out) {
  if (out.size() != spec.sample_bytes()) throw std::invalid_argument("generate_image: out has the wrong size");
  const std::uint64_t key = splitmix64(spec.seed ^ splitmix64(static_cast<std::uint64_t>(index)));
  auto pick = [key](std::uint64_t what, int lo, int hi) {  // uniform in [lo, hi]
    return lo + static_cast<int>(splitmix64(key ^ splitmix64(what)) % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const int h = spec.height, w = spec.width;
  constexpr int kRects = 4;
  struct Rect {
    int y0, x0, y1, x1;
  };
  Rect rects[kRects];
  for (int r = 0; r < kRects; ++r) {
    const int y0 = pick(100 + r, 0, h - 1), x0 = pick(200 + r, 0, w - 1);
    rects[r] = {y0, x0, std::min(h, y0 + pick(300 + r, 1, std::max(1, h / 2))),
                std::min(w, x0 + pick(400 + r, 1, std::max(1, w / 2)))};
  }
  for (int c = 0; c < spec.channels; ++c) {
    const int base = pick(10 + c, 32, 224);
    const int gx = pick(20 + c, -3, 3), gy = pick(30 + c, -3, 3);
    int fill[kRects];
    for (int r = 0; r < kRects; ++r) fill[r] = pick(500 + 8 * r + c, 0, 255);  // once, not per pixel
    std::uint8_t* plane = out.data() + static_cast<std::size_t>(c) * h * w;
    std::uint64_t noise = 0;
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        int v = base + (gx * (x - w / 2) + gy * (y - h / 2)) / 2;
        for (int r = 0; r < kRects; ++r) {
          if (y >= rects[r].y0 && y < rects[r].y1 && x >= rects[r].x0 && x < rects[r].x1) v = fill[r];
        }
        // Sparse sensor-like noise on about 1 pixel in 8: keeps deflate from finding long runs
        // only. One 64-bit hash gives the noise byte of 8 consecutive pixels.
        const std::size_t i = static_cast<std::size_t>((c * h + y) * w + x);
        if (i % 8 == 0) noise = splitmix64(key ^ (static_cast<std::uint64_t>(i) << 20));
        const unsigned byte = static_cast<unsigned>(noise >> (8 * (i % 8))) & 0xFF;
        if ((byte & 7) == 0) v += static_cast<int>((byte >> 3) & 7) - 3;
        plane[y * w + x] = clamp_u8(v);
      }
    }
  }
}

Dataset::Dataset(const DatasetSpec& spec) : spec_(spec) {
  if (spec.samples < 0 || spec.channels <= 0 || spec.height <= 0 || spec.width <= 0) {
    throw std::invalid_argument("DatasetSpec: samples >= 0 and positive image dimensions needed");
  }
  data_path_ = dir_.path() / "samples.bin";
  index_path_ = dir_.path() / "index.bin";
  const std::size_t raw_bytes = spec.sample_bytes();
  std::vector<std::uint8_t> image(raw_bytes);
  std::vector<std::uint8_t> packed(compressBound(static_cast<uLong>(raw_bytes)));
  std::vector<std::uint64_t> offsets{0};
  {
    Deflater deflater(spec.zlib_level);
    File data(data_path_, O_WRONLY | O_CREAT | O_TRUNC);
    for (std::int64_t i = 0; i < spec.samples; ++i) {
      generate_image(spec, i, image);
      const std::size_t packed_bytes = deflater.compress(image, packed, i);
      write_all(data.fd(), packed.data(), packed_bytes, data_path_);
      offsets.push_back(offsets.back() + packed_bytes);
    }
    data.close_checked();
    File index(index_path_, O_WRONLY | O_CREAT | O_TRUNC);
    write_all(index.fd(), offsets.data(), offsets.size() * sizeof(std::uint64_t), index_path_);
    index.close_checked();
  }
  // The index is read back from disk rather than kept from the writer, so reads use what is stored.
  offsets_.resize(static_cast<std::size_t>(spec.samples) + 1);
  {
    File index(index_path_, O_RDONLY);
    if (!pread_all(index.fd(), offsets_.data(), offsets_.size() * sizeof(std::uint64_t), 0, index_path_.string())) {
      throw std::runtime_error("index file " + index_path_.string() + " is truncated");
    }
  }
  if (offsets_ != offsets) throw std::runtime_error("index file " + index_path_.string() + " reads back differently");
  total_compressed_ = static_cast<std::size_t>(offsets_.back());
  File data(data_path_, O_RDONLY);
  fd_ = data.release();
}

Dataset::~Dataset() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t Dataset::compressed_bytes(std::int64_t index) const {
  if (index < 0 || index >= spec_.samples) throw std::out_of_range("sample " + std::to_string(index) + " out of range");
  return static_cast<std::size_t>(offsets_[index + 1] - offsets_[index]);
}

std::uint64_t Dataset::offset(std::int64_t index) const {
  if (index < 0 || index >= spec_.samples) throw std::out_of_range("sample " + std::to_string(index) + " out of range");
  return offsets_[index];
}

void Dataset::read_sample(std::int64_t index, std::span<std::uint8_t> out, std::vector<std::uint8_t>& scratch) const {
  const std::size_t packed_bytes = compressed_bytes(index);  // checks the index
  if (out.size() != sample_bytes()) throw std::invalid_argument("read_sample: out has the wrong size");
  if (scratch.size() < packed_bytes) scratch.resize(packed_bytes);
  if (!pread_all(fd_, scratch.data(), packed_bytes, offsets_[index], "sample " + std::to_string(index))) {
    throw CorruptSample("sample " + std::to_string(index) + ": data file ends inside it");
  }
  uLongf got = static_cast<uLongf>(out.size());
  // uncompress checks the zlib header and the adler32 of the output: flipped bytes are caught.
  const int rc = uncompress(out.data(), &got, scratch.data(), static_cast<uLong>(packed_bytes));
  if (rc != Z_OK) {
    throw CorruptSample("sample " + std::to_string(index) + ": zlib uncompress failed (" + zError(rc) + ")");
  }
  if (got != out.size()) {
    throw CorruptSample("sample " + std::to_string(index) + ": decoded " + std::to_string(got) + " bytes, expected " +
                        std::to_string(out.size()));
  }
}

}  // namespace pairbench::kernels::loader
