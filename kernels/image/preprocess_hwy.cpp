// The highway arm: the resize + normalise of preprocess.h hand-vectorised with Google Highway,
// compiled for every target Highway's foreach_target.h enables (SSE4, AVX2, AVX-512, ...) and
// chosen at run time by HWY_DYNAMIC_DISPATCH; highway_target() names the target that runs.
//
// Unlike the scalar and autovec arms (vertical pass first, on whole source rows), this arm runs
// the horizontal pass first, once per source row it needs, then the vertical pass:
//  - Horizontal, gather-free: the uint8 row is deinterleaved into R, G, B byte rows
//    (LoadInterleaved3); then for each vector of N outputs, each 128-bit block takes the 16 bytes
//    around its 4 outputs' taps (one window load per block) and one byte shuffle per tap
//    (TableLookupBytesOr0, a precomputed index vector per output vector) drops tap x0 and tap x1
//    into the low byte of each 32-bit lane, zero-extended; convert to float, blend, and fuse the
//    normalisation: h = (t0 + wx (t1 - t0)) * scale + bias. This needs the 4 outputs' taps within
//    16 source pixels: downscaling by up to about 4.3 (1024 -> 224 still fits: 4 outputs span
//    at most 14 + 2 pixels); beyond that, or for rows narrower than a vector, a gather path runs
//    (one 8-byte lane at byte 3 * x0 of the interleaved row holds R G B of x0 and x0 + 1, so two
//    64-bit gathers serve N outputs and all three channels).
//  - Vertical: out = h0 + wy (h1 - h0) on contiguous float rows: two loads, one FMA, a store.
//    The normalisation is affine, so normalising before the vertical blend gives the same value.
// The horizontal pass makes out_w outputs per source row rather than the vertical-first order's
// in_w blended pixels per output row, and each needed source row is done once (rows shared by
// consecutive output rows are kept), so downscaling from a large image does less work.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/image/preprocess_hwy.cpp"
#include <hwy/foreach_target.h>  // re-includes this file once per target
// Included after foreach_target.h, as Highway requires.
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include <cstring>
#include <new>

#include "kernels/image/preprocess.h"

#ifndef PB_PREPROCESS_HWY_SCRATCH
#define PB_PREPROCESS_HWY_SCRATCH
namespace pairbench::kernels::image::hwy_detail {
// Per-thread scratch, grown once and reused across calls: the Preprocessor's row scratch is
// sized for the vertical-first algorithm (3 * (in_w + 1) floats), too small here.
inline std::uint8_t* Scratch(std::size_t bytes) {
  thread_local hwy::AlignedFreeUniquePtr<std::uint8_t[]> buf;
  thread_local std::size_t size = 0;
  if (size < bytes) {
    buf = hwy::AllocateAligned<std::uint8_t>(bytes);
    if (!buf) throw std::bad_alloc();
    std::memset(buf.get(), 0, bytes);  // the planar rows' padding is read (never used) by the window loads
    size = bytes;
  }
  return buf.get();
}
inline std::size_t RoundUp(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }
}  // namespace pairbench::kernels::image::hwy_detail
#endif

HWY_BEFORE_NAMESPACE();
namespace pairbench::kernels::image {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using DU8 = hn::Repartition<std::uint8_t, DF>;  // a full vector of bytes

// One output of the horizontal pass, all channels, scalar, from the interleaved row.
HWY_INLINE void ColumnScalar(const ResizePlan& plan, const std::uint8_t* HWY_RESTRICT src, float* HWY_RESTRICT h,
                             std::size_t stride, std::size_t ox) {
  const std::uint8_t* p0 = src + plan.x0[ox];
  const std::uint8_t* p1 = src + plan.x1[ox];
  const float w = plan.wx[ox];
  for (int c = 0; c < kChannels; ++c) {
    const float a = p0[c], b = p1[c];
    h[c * stride + ox] = (a + w * (b - a)) * plan.scale[c] + plan.bias[c];
  }
}

#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
constexpr std::size_t kBlock = 16;  // bytes per 128-bit block: TableLookupBytes works within one

// The horizontal plan of this target's vector width: for each output vector (starting at
// starts[v], the last one overlapping its predecessor), each 128-bit block j covers 4 outputs
// whose taps lie within 16 bytes of the planar row from pixel base[v][j]; idx0/idx1 put tap
// x0/x1 of each output into the low byte of its 32-bit lane (0x80: zero the other three).
// `shuffle` is false when some block's taps span more than 16 pixels (downscaling by more than
// about 4.3) or the row is narrower than a vector: then the gather path runs instead.
struct XTables {
  std::vector<std::int32_t> key_x0, key_x1;  // the plan these were made for
  bool shuffle = false;
  std::vector<std::size_t> starts;
  std::vector<std::int32_t> base;
  std::vector<std::uint8_t> idx0, idx1;
};

const XTables& Tables(const ResizePlan& plan) {
  thread_local XTables t;  // per target and thread; rebuilt when the plan's columns change
  if (t.key_x0 == plan.x0 && t.key_x1 == plan.x1) return t;
  const DF df;
  const std::size_t n = hn::Lanes(df), blocks = n / 4, out_w = plan.x0.size();
  t.key_x0 = plan.x0;
  t.key_x1 = plan.x1;
  t.starts.clear();
  t.base.clear();
  t.idx0.clear();
  t.idx1.clear();
  t.shuffle = out_w >= n;
  if (!t.shuffle) return t;
  for (std::size_t s = 0; s < out_w; s += n) t.starts.push_back(s + n <= out_w ? s : out_w - n);
  for (const std::size_t s : t.starts) {
    for (std::size_t j = 0; j < blocks; ++j) {
      const std::int32_t b = plan.x0[s + 4 * j] / kChannels;
      t.base.push_back(b);
      for (std::size_t i = 0; i < 4; ++i) {
        const std::int32_t p0 = plan.x0[s + 4 * j + i] / kChannels - b, p1 = plan.x1[s + 4 * j + i] / kChannels - b;
        if (p0 < 0 || p1 < 0 || p0 >= static_cast<std::int32_t>(kBlock) || p1 >= static_cast<std::int32_t>(kBlock)) {
          t.shuffle = false;
        }
        const std::uint8_t lane0[4] = {static_cast<std::uint8_t>(p0), 0x80, 0x80, 0x80};
        const std::uint8_t lane1[4] = {static_cast<std::uint8_t>(p1), 0x80, 0x80, 0x80};
        t.idx0.insert(t.idx0.end(), lane0, lane0 + 4);
        t.idx1.insert(t.idx1.end(), lane1, lane1 + 4);
      }
    }
  }
  return t;
}

// A vector whose 128-bit block j is the 16 bytes at p + base[j].
template <class D>
HWY_INLINE hn::Vec<D> LoadBlocks(D d, const std::uint8_t* HWY_RESTRICT p, const std::int32_t* base) {
  if constexpr (hn::MaxLanes(d) <= kBlock) {
    return hn::LoadU(d, p + base[0]);
  } else {
    const hn::Half<D> dh;
    return hn::Combine(d, LoadBlocks(dh, p, base + hn::MaxLanes(dh) / kBlock), LoadBlocks(dh, p, base));
  }
}

// Outputs [ox, ox + N) of one source row from its three planar uint8 rows: per block a window
// load and one byte shuffle per tap instead of a gather.
HWY_INLINE void ColumnsShuffle(const std::uint8_t* HWY_RESTRICT planes, std::size_t pstride, const std::int32_t* base,
                               const std::uint8_t* i0, const std::uint8_t* i1, const float* HWY_RESTRICT wx,
                               const hn::Vec<DF>* scale, const hn::Vec<DF>* bias, float* HWY_RESTRICT h,
                               std::size_t stride, std::size_t ox) {
  const DF df;
  const DI di;
  const DU8 du8;
  const auto vi0 = hn::LoadU(du8, i0);
  const auto vi1 = hn::LoadU(du8, i1);
  const auto w = hn::LoadU(df, wx + ox);
  for (int c = 0; c < kChannels; ++c) {
    const auto win = LoadBlocks(du8, planes + c * pstride, base);
    const auto f0 = hn::ConvertTo(df, hn::BitCast(di, hn::TableLookupBytesOr0(win, vi0)));
    const auto f1 = hn::ConvertTo(df, hn::BitCast(di, hn::TableLookupBytesOr0(win, vi1)));
    const auto v = hn::MulAdd(w, hn::Sub(f1, f0), f0);
    hn::StoreU(hn::MulAdd(v, scale[c], bias[c]), df, h + c * stride + ox);
  }
}

// Deinterleaves one interleaved uint8 row into three planar rows `pstride` bytes apart.
HWY_INLINE void Deinterleave(const std::uint8_t* HWY_RESTRICT src, std::size_t in_w, std::uint8_t* HWY_RESTRICT planes,
                             std::size_t pstride) {
  const DU8 du8;
  const std::size_t n8 = hn::Lanes(du8);
  const auto one = [&](std::size_t x) {
    hn::Vec<DU8> r, g, b;
    hn::LoadInterleaved3(du8, src + kChannels * x, r, g, b);
    hn::StoreU(r, du8, planes + x);
    hn::StoreU(g, du8, planes + pstride + x);
    hn::StoreU(b, du8, planes + 2 * pstride + x);
  };
  std::size_t x = 0;
  if (in_w >= n8) {
    for (; x + n8 <= in_w; x += n8) one(x);
    if (x < in_w) one(in_w - n8);  // the partial last vector, overlapping
    return;
  }
  for (; x < in_w; ++x) {
    for (int c = 0; c < kChannels; ++c) planes[c * pstride + x] = src[kChannels * x + c];
  }
}

// Outputs [ox, ox + N) of one source row, all three channels, by gathers from the interleaved
// row: one 8-byte lane at byte offset 3 * x0 holds R G B of x0 and of x0 + 1. Requires, for each
// of those outputs, x1 = x0 + 1 and 3 * x0 + 8 <= in_w * 3 (the read stays inside the image).
HWY_INLINE void ColumnsGather(const std::uint8_t* HWY_RESTRICT src, const std::int32_t* HWY_RESTRICT x0,
                              const float* HWY_RESTRICT wx, const hn::Vec<DF>* scale, const hn::Vec<DF>* bias,
                              float* HWY_RESTRICT h, std::size_t stride, std::size_t ox) {
  const DF df;
  const DI di;
  const DU du;
  const hn::Repartition<std::int64_t, DF> d64;  // N/2 lanes
  const hn::Rebind<std::int32_t, decltype(d64)> d32h;
  const std::size_t half = hn::Lanes(d64);
  const auto* base = reinterpret_cast<const std::int64_t*>(src);
  const auto lo = hn::GatherOffset(d64, base, hn::PromoteTo(d64, hn::LoadU(d32h, x0 + ox)));
  const auto hi = hn::GatherOffset(d64, base, hn::PromoteTo(d64, hn::LoadU(d32h, x0 + ox + half)));
  // Little-endian words, outputs in order: a = R0 | G0 << 8 | B0 << 16 | R1 << 24,
  // b = G1 | B1 << 8 | (R2, junk).
  const auto a = hn::ConcatEven(du, hn::BitCast(du, hi), hn::BitCast(du, lo));
  const auto b = hn::ConcatOdd(du, hn::BitCast(du, hi), hn::BitCast(du, lo));
  const auto mask = hn::Set(du, 0xFFu);
  const hn::Vec<DU> t0[kChannels] = {hn::And(a, mask), hn::And(hn::ShiftRight<8>(a), mask),
                                     hn::And(hn::ShiftRight<16>(a), mask)};
  const hn::Vec<DU> t1[kChannels] = {hn::ShiftRight<24>(a), hn::And(b, mask), hn::And(hn::ShiftRight<8>(b), mask)};
  const auto w = hn::LoadU(df, wx + ox);
  for (int c = 0; c < kChannels; ++c) {
    const auto f0 = hn::ConvertTo(df, hn::BitCast(di, t0[c]));
    const auto f1 = hn::ConvertTo(df, hn::BitCast(di, t1[c]));
    const auto v = hn::MulAdd(w, hn::Sub(f1, f0), f0);
    hn::StoreU(hn::MulAdd(v, scale[c], bias[c]), df, h + c * stride + ox);
  }
}
#endif

// Horizontal pass of one source row into three normalised float planes `stride` apart.
// `safe_end`: outputs [0, safe_end) satisfy ColumnsGather's requirements (x0 is nondecreasing).
// `tables`: Tables(plan), looked up once per image (null on the scalar target).
template <class T>
void HorizontalRow(const ResizePlan& plan, const T* tables, const std::uint8_t* HWY_RESTRICT src, float* HWY_RESTRICT h,
                   std::size_t stride, std::size_t safe_end, std::uint8_t* HWY_RESTRICT planes, std::size_t pstride) {
  const std::size_t out_w = static_cast<std::size_t>(plan.out_w);
  std::size_t ox = 0;
#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
  const DF df;
  const std::size_t n = hn::Lanes(df);
  const hn::Vec<DF> scale[kChannels] = {hn::Set(df, plan.scale[0]), hn::Set(df, plan.scale[1]),
                                        hn::Set(df, plan.scale[2])};
  const hn::Vec<DF> bias[kChannels] = {hn::Set(df, plan.bias[0]), hn::Set(df, plan.bias[1]), hn::Set(df, plan.bias[2])};
  const XTables& t = *tables;
  if (t.shuffle) {
    Deinterleave(src, static_cast<std::size_t>(plan.in_w), planes, pstride);
    const std::size_t blocks = n / 4, bytes = 4 * n;
    for (std::size_t v = 0; v < t.starts.size(); ++v) {
      ColumnsShuffle(planes, pstride, t.base.data() + v * blocks, t.idx0.data() + v * bytes, t.idx1.data() + v * bytes,
                     plan.wx.data(), scale, bias, h, stride, t.starts[v]);
    }
    return;
  }
  if (safe_end >= n) {
    const std::int32_t* x0 = plan.x0.data();
    const float* wx = plan.wx.data();
    for (; ox + n <= safe_end; ox += n) ColumnsGather(src, x0, wx, scale, bias, h, stride, ox);
    // The partial last vector is redone overlapping the previous one (same values).
    if (ox < safe_end) ColumnsGather(src, x0, wx, scale, bias, h, stride, safe_end - n);
    ox = safe_end;
  }
#else
  (void)tables;
  (void)safe_end;
  (void)planes;
  (void)pstride;
#endif
  for (; ox < out_w; ++ox) ColumnScalar(plan, src, h, stride, ox);
}

void PreprocessRows(const ResizePlan& plan, const std::uint8_t* HWY_RESTRICT rgb, float* HWY_RESTRICT /*row*/,
                    float* HWY_RESTRICT out) {
  const DF df;
  const std::size_t n = hn::Lanes(df);
  const std::size_t in_w = static_cast<std::size_t>(plan.in_w);
  const std::size_t in_w3 = in_w * kChannels;
  const std::size_t out_w = static_cast<std::size_t>(plan.out_w);
  const std::size_t plane = out_w * static_cast<std::size_t>(plan.out_h);
  // Scratch: two horizontally resized rows (3 float planes each, padded to whole vectors so the
  // vertical pass loads aligned vectors), then three planar uint8 rows with 64 bytes of padding
  // (the 16-byte window loads read past the last pixel).
  const std::size_t stride = hwy::DivCeil(out_w, n) * n;
  const std::size_t pstride = hwy_detail::RoundUp(in_w + 64, 64);
  const std::size_t hbytes = hwy_detail::RoundUp(2 * kChannels * stride * sizeof(float), 64);
  std::uint8_t* scratch = hwy_detail::Scratch(hbytes + kChannels * pstride);
  float* slot[2];
  slot[0] = reinterpret_cast<float*>(scratch);
  slot[1] = slot[0] + kChannels * stride;
  std::uint8_t* planes = scratch + hbytes;
  int slot_row[2] = {-1, -1};  // which source row each slot holds

  std::size_t safe_end = 0;  // outputs whose 8-byte gather is in bounds and whose taps are adjacent
  while (safe_end < out_w && plan.x1[safe_end] == plan.x0[safe_end] + kChannels &&
         static_cast<std::size_t>(plan.x0[safe_end]) + 8 <= in_w3) {
    ++safe_end;
  }

#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
  const XTables* tables = &Tables(plan);
#else
  const void* tables = nullptr;
#endif
  // The slot holding source row y, computing it (into the slot not holding `keep`) if absent.
  const auto row = [&](int y, int keep) -> const float* {
    for (int s = 0; s < 2; ++s) {
      if (slot_row[s] == y) return slot[s];
    }
    const int s = slot_row[0] == keep ? 1 : 0;
    HorizontalRow(plan, tables, rgb + static_cast<std::size_t>(y) * in_w3, slot[s], stride, safe_end, planes, pstride);
    slot_row[s] = y;
    return slot[s];
  };

  for (int oy = 0; oy < plan.out_h; ++oy) {
    const int y0 = plan.y0[oy], y1 = plan.y1[oy];
    const float* h0 = row(y0, y1);
    const float* h1 = row(y1, y0);
    const float wy = plan.wy[oy];
    for (int c = 0; c < kChannels; ++c) {
      float* o = out + c * plane + static_cast<std::size_t>(oy) * out_w;
      const float* a = h0 + c * stride;
      const float* b = h1 + c * stride;
      std::size_t ox = 0;
      if (out_w >= n) {
        const auto vwy = hn::Set(df, wy);
        for (; ox + n <= out_w; ox += n) {
          const auto va = hn::Load(df, a + ox);
          hn::StoreU(hn::MulAdd(vwy, hn::Sub(hn::Load(df, b + ox), va), va), df, o + ox);
        }
        if (ox < out_w) {  // the partial last vector, redone overlapping the previous one
          const std::size_t x = out_w - n;
          const auto va = hn::LoadU(df, a + x);
          hn::StoreU(hn::MulAdd(vwy, hn::Sub(hn::LoadU(df, b + x), va), va), df, o + x);
        }
        ox = out_w;
      }
      for (; ox < out_w; ++ox) o[ox] = a[ox] + wy * (b[ox] - a[ox]);
    }
  }
}

// HWY_TARGET of the copy the dispatcher calls.
std::int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace pairbench::kernels::image
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pairbench::kernels::image {

HWY_EXPORT(PreprocessRows);
HWY_EXPORT(CompiledTarget);

void preprocess_rows_highway(const ResizePlan& plan, const std::uint8_t* rgb, float* row, float* out) {
  HWY_DYNAMIC_DISPATCH(PreprocessRows)(plan, rgb, row, out);
}

std::string highway_target() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(CompiledTarget)()); }

}  // namespace pairbench::kernels::image
#endif  // HWY_ONCE
