// conv.cpp: im2col / col2im and max pooling.
#include "kernels/cpu/conv.h"

#include <algorithm>
#include <cstring>

namespace gradshare::kernels::cpu {
namespace {

// Output columns ox whose input column ox*stride - padding + kx lies inside [0, width).
struct ValidRange {
  int begin, end;
};

ValidRange valid_outputs(int offset, int stride, int in_size, int out_size) {
  // ox*stride + offset >= 0  and  ox*stride + offset < in_size
  int begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int end = in_size - offset <= 0 ? 0 : (in_size - offset + stride - 1) / stride;
  begin = std::min(begin, out_size);
  end = std::clamp(end, begin, out_size);
  return {begin, end};
}

// One im2col row block (channel plane, kernel offset ky, kx) for stride 1 when the output is
// as wide as the input ("same" padding, the common case): the valid output rows are then one
// contiguous run of the plane, so a single copy replaces a short copy per output row, and
// only the columns that fall into the padding are zeroed afterwards.
void im2col_block_same_width(const float* plane, const ConvGeometry& g, int ky, int kx,
                             ValidRange xs, float* dst) {
  const int out_h = g.out_height(), out_w = g.out_width();
  const int row0 = std::clamp(g.padding - ky, 0, out_h);
  const int row1 = std::clamp(g.height + g.padding - ky, row0, out_h);
  const auto at = [out_w](int row) { return static_cast<std::size_t>(row) * out_w; };
  std::fill(dst, dst + at(row0), 0.0f);
  std::fill(dst + at(row1), dst + at(out_h), 0.0f);
  if (row0 == row1 || xs.begin == xs.end) {
    std::fill(dst + at(row0), dst + at(row1), 0.0f);
    return;
  }
  const std::size_t first = at(row0) + xs.begin, last = at(row1 - 1) + xs.end;
  const float* src = plane + static_cast<std::size_t>(row0 - g.padding + ky) * g.width +
                     (xs.begin + kx - g.padding);
  std::memcpy(dst + first, src, sizeof(float) * (last - first));
  for (int row = row0; row < row1; ++row) {
    std::fill(dst + at(row), dst + at(row) + xs.begin, 0.0f);
    std::fill(dst + at(row) + xs.end, dst + at(row + 1), 0.0f);
  }
}

}  // namespace

void im2col(const float* image, const ConvGeometry& g, float* col) {
  const int out_h = g.out_height(), out_w = g.out_width();
  for (int c = 0; c < g.channels; ++c) {
    const float* plane = image + static_cast<std::size_t>(c) * g.height * g.width;
    for (int ky = 0; ky < g.kernel; ++ky) {
      for (int kx = 0; kx < g.kernel; ++kx) {
        const ValidRange xs = valid_outputs(kx - g.padding, g.stride, g.width, out_w);
        if (g.stride == 1 && out_w == g.width) {
          im2col_block_same_width(plane, g, ky, kx, xs, col);
          col += static_cast<std::size_t>(out_h) * out_w;
          continue;
        }
        for (int oy = 0; oy < out_h; ++oy) {
          float* dst = col + static_cast<std::size_t>(oy) * out_w;
          const int iy = oy * g.stride - g.padding + ky;
          if (iy < 0 || iy >= g.height || xs.begin == xs.end) {
            std::fill(dst, dst + out_w, 0.0f);
            continue;
          }
          // First valid input pixel of this row (never form a pointer outside the plane).
          const float* src = plane + static_cast<std::size_t>(iy) * g.width +
                             (xs.begin * g.stride + kx - g.padding);
          std::fill(dst, dst + xs.begin, 0.0f);
          if (g.stride == 1) {
            std::memcpy(dst + xs.begin, src,
                        sizeof(float) * static_cast<std::size_t>(xs.end - xs.begin));
          } else {
            for (int ox = xs.begin; ox < xs.end; ++ox) dst[ox] = src[(ox - xs.begin) * g.stride];
          }
          std::fill(dst + xs.end, dst + out_w, 0.0f);
        }
        col += static_cast<std::size_t>(out_h) * out_w;
      }
    }
  }
}

void col2im(const float* col, const ConvGeometry& g, float* image) {
  const int out_h = g.out_height(), out_w = g.out_width();
  std::fill(image, image + static_cast<std::size_t>(g.channels) * g.height * g.width, 0.0f);
  for (int c = 0; c < g.channels; ++c) {
    float* plane = image + static_cast<std::size_t>(c) * g.height * g.width;
    for (int ky = 0; ky < g.kernel; ++ky) {
      for (int kx = 0; kx < g.kernel; ++kx) {
        const ValidRange xs = valid_outputs(kx - g.padding, g.stride, g.width, out_w);
        for (int oy = 0; oy < out_h; ++oy) {
          const int iy = oy * g.stride - g.padding + ky;
          if (iy < 0 || iy >= g.height || xs.begin == xs.end) continue;
          const float* src = col + static_cast<std::size_t>(oy) * out_w;
          float* dst = plane + static_cast<std::size_t>(iy) * g.width +
                       (xs.begin * g.stride + kx - g.padding);
          if (g.stride == 1) {  // contiguous: vectorises
            for (int ox = xs.begin; ox < xs.end; ++ox) dst[ox - xs.begin] += src[ox];
          } else {
            for (int ox = xs.begin; ox < xs.end; ++ox) dst[(ox - xs.begin) * g.stride] += src[ox];
          }
        }
        col += static_cast<std::size_t>(out_h) * out_w;
      }
    }
  }
}

namespace {

// Pool > 0 fixes the window size at compile time (the common 2x2), so the window loops unroll.
template <int Pool>
void maxpool_planes(const float* x, const PoolGeometry& g, std::size_t planes, float* y,
                    std::int32_t* argmax) {
  const int pool = Pool > 0 ? Pool : g.pool;
  const int out_h = g.out_height(), out_w = g.out_width();
  const std::size_t in_plane = static_cast<std::size_t>(g.height) * g.width;
  const std::size_t out_plane = static_cast<std::size_t>(out_h) * out_w;
  for (std::size_t p = 0; p < planes; ++p) {
    const float* in = x + p * in_plane;
    float* out = y + p * out_plane;
    std::int32_t* arg = argmax != nullptr ? argmax + p * out_plane : nullptr;
    for (int oy = 0; oy < out_h; ++oy) {
      for (int ox = 0; ox < out_w; ++ox) {
        const int y0 = oy * g.stride, x0 = ox * g.stride;
        int best = y0 * g.width + x0;
        float best_value = in[best];
        for (int dy = 0; dy < pool; ++dy) {
          for (int dx = 0; dx < pool; ++dx) {
            // Selects rather than a branch: which element wins is unpredictable.
            const int at = (y0 + dy) * g.width + x0 + dx;
            const bool better = in[at] > best_value;
            best_value = better ? in[at] : best_value;
            best = better ? at : best;
          }
        }
        out[oy * out_w + ox] = best_value;
        if (arg != nullptr) arg[oy * out_w + ox] = best;
      }
    }
  }
}

}  // namespace

void maxpool_forward(const float* x, const PoolGeometry& g, std::size_t planes, float* y,
                     std::int32_t* argmax) {
  if (g.pool == 2) return maxpool_planes<2>(x, g, planes, y, argmax);
  maxpool_planes<0>(x, g, planes, y, argmax);
}

void maxpool_backward(const float* dy, const std::int32_t* argmax, const PoolGeometry& g,
                      std::size_t planes, float* dx) {
  const std::size_t in_plane = static_cast<std::size_t>(g.height) * g.width;
  const std::size_t out_plane =
      static_cast<std::size_t>(g.out_height()) * static_cast<std::size_t>(g.out_width());
  std::fill(dx, dx + planes * in_plane, 0.0f);
  for (std::size_t p = 0; p < planes; ++p) {
    float* plane = dx + p * in_plane;
    const float* grad = dy + p * out_plane;
    const std::int32_t* arg = argmax + p * out_plane;
    for (std::size_t i = 0; i < out_plane; ++i) plane[arg[i]] += grad[i];
  }
}

}  // namespace gradshare::kernels::cpu
