#include "kernels/matmul.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/trial_run.h"
#include "kernels/amx_calibration.h"
#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "quant/quantize.h"

namespace tps {

namespace {

// The AMX kernels as the dispatcher uses them, set up once where the CPU runs AMX (the
// integer tiles passed their own check first, amx_status):
// - without their bf16 tiles where those disagree with the bf16-rounded products on this
//   CPU, or crash (checked in a child process);
// - with the int8 tiles only for the matmuls they timed faster at than AVX-512 here.
const IsaKernels* checked_amx_kernels() {
  static const IsaKernels* const kernels = []() -> const IsaKernels* {
    const IsaKernels* amx = isa_kernels_amx();
    if (amx == nullptr || !cpu_supports(Isa::kAmx)) return nullptr;
    static IsaKernels chosen = *amx;
    const TrialRun check = run_in_child([amx] { return bf16_tiles_agree(*amx); });
    if (check.outcome != TrialOutcome::kTrue) {
      std::fprintf(stderr, "tps: warning: the AMX bf16 tiles %s on this CPU; float weights use AVX512-BF16\n",
                   trial_failure(check, "disagree with the bf16-rounded products").c_str());
      chosen.float_panel_bf16_tiles = nullptr;
    }
    const Int8TileSpeedups speedups = time_int8_tiles(*amx);
    chosen.int8_tiles_from = int8_tiles_from(speedups);
    if (chosen.int8_tiles_from == 0) chosen.int8_panel_tiles = nullptr;
    const std::string use = chosen.int8_tiles_from == 0 ? "integer weights stay on AVX-512"
                                                         : fmt::format("used from {} tokens", chosen.int8_tiles_from);
    fmt::print(stderr, "tps: AMX int8 tiles against AVX-512 on this CPU: {:.2f}x at {} tokens, {:.2f}x at {}; {}\n",
               speedups.few, kFewTokens, speedups.many, kManyTokens, use);
    return &chosen;
  }();
  return kernels;
}

}  // namespace

const IsaKernels* kernels_for(Isa isa) {
  if (isa >= Isa::kAmx)
    if (const IsaKernels* k = checked_amx_kernels()) return k;
  if (isa >= Isa::kAvx512) {
    if (cpu_has_gfni())
      if (const IsaKernels* k = isa_kernels_avx512_gfni()) return k;
    if (const IsaKernels* k = isa_kernels_avx512()) return k;
  }
  // AVX-512 CPUs need not have AVX-VNNI (Ice Lake has not).
  if (isa >= Isa::kAvxVnni && cpu_supports(Isa::kAvxVnni))
    if (const IsaKernels* k = isa_kernels_avx_vnni()) return k;
  if (isa >= Isa::kAvx2)
    if (const IsaKernels* k = isa_kernels_avx2()) return k;
  return nullptr;
}

void prepare_kernels() { (void)kernels_for(active_isa()); }

const char* compute_path(Isa isa, bool quantized_weights, int64_t tokens) {
  if (!quantized_weights && active_float_math() == FloatMath::kBf16)
    if (const IsaKernels* k = kernels_for(isa); k != nullptr && k->float_panels_bf16 != nullptr)
      return k->float_panel_bf16_tiles != nullptr ? "amx_bf16" : "bf16";
  if (!quantized_weights || isa == Isa::kScalar) return "f32";
  const IsaKernels* k = kernels_for(isa);
  return k != nullptr && k->int8_tiles_take(tokens) ? "amx_int8" : "int8";
}

namespace {

void check_shape(const WeightMatrix& w) {
  if (!is_supported_weight_type(w.type)) fail("matmul: unsupported weight type {}", type_name(w.type));
  if (w.cols % type_info(w.type).block_size != 0)
    fail("matmul: {} columns is not a multiple of the {} block size", w.cols, type_name(w.type));
  if (w.packed != nullptr && (w.packed->type() != w.type || w.packed->rows() != w.rows || w.packed->cols() != w.cols))
    fail("matmul: packed weights do not match the {}x{} {} matrix", w.rows, w.cols, type_name(w.type));
}

// Weight bytes times tokens that a thread's range must cover before a second thread
// pays off: below it, waking and joining the other thread costs more than it saves (a
// region costs a few microseconds on two cores; stories260K's whole matrices are
// 16-90 kB, and its decode ran 2.8x faster on one thread than on two). Weights that
// stay in cache (PackedWeights::cache_resident) go faster per byte than ones read from
// memory, so they need more: with 128 kB, stories260K's steps of 2-5 rows went
// parallel and ran up to 1.4x slower on two threads than on one.
constexpr int64_t kMinRangeWork = 128 * 1024;
constexpr int64_t kMinRangeWorkInCache = 1024 * 1024;

// fn(u0, u1, thread) over ranges of [0, total) 16-row panels of panel_bytes each, for
// n_tokens tokens, that threads take guided, long ones first, as they become free; a
// range covers kMinRangeWork at least, so a small matrix runs on the calling thread.
// Ranges start and end at even panels (but at total): the kernels take panels in
// pairs, and a panel left over goes through a slower one-panel tile. A row's outputs
// do not depend on the split.
template <typename F>
void for_panel_ranges(ThreadPool& pool, const WeightMatrix& w, int64_t total, size_t panel_bytes, int64_t n_tokens,
                      F&& fn) {
  const int64_t pair_work = std::max<int64_t>(1, 2 * static_cast<int64_t>(panel_bytes) * n_tokens);
  const bool in_cache = w.packed != nullptr && w.packed->cache_resident();
  const int64_t min_pairs = std::max<int64_t>(1, (in_cache ? kMinRangeWorkInCache : kMinRangeWork) / pair_work);
  pool.parallel_for_guided((total + 1) / 2, min_pairs, [&](int64_t p0, int64_t p1, int thread) {
    fn(2 * p0, std::min(total, 2 * p1), thread);
  });
}

// Panel bytes a thread keeps in L2 while a chunk of tokens passes over them.
constexpr size_t kStretchBytes = 256 * 1024;

// Panels per stretch: as many as fit in kStretchBytes, an even number and at least 2 (a
// panel left over goes through the slower one-panel tile: a 5-panel stretch sent a
// fifth of FFN-down's panels there).
int64_t stretch_panels(size_t panel_bytes) {
  return std::max<int64_t>(2, static_cast<int64_t>(kStretchBytes / panel_bytes) / 2 * 2);
}

// row_bytes 0 means rows are packed back to back.
WeightMatrix with_row_bytes(const WeightMatrix& w) {
  WeightMatrix m = w;
  if (m.row_bytes == 0) m.row_bytes = row_bytes(w.type, w.cols);
  return m;
}

// Per-thread scratch that only grows: no allocation once warm.
template <typename T>
T* scratch(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// Scratch for panels: whole cache lines, as the kernels' loads expect (a vector's
// own alignment is malloc's 16 bytes: loads that straddle two lines cost 20 %).
uint8_t* panel_scratch(std::vector<uint8_t>& v, size_t n) {
  uint8_t* p = scratch(v, n + 63);
  return p + (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
}

// The matrices of one matmul_parts() call as one sequence of 16-row panels,
// which threads share in one parallel region.
class PartPanels {
 public:
  struct Part {
    WeightMatrix w;
    float* y;
    int64_t first_panel;
  };

  explicit PartPanels(std::initializer_list<MatmulPart> parts) {
    for (const MatmulPart& p : parts) {
      parts_[n_] = {with_row_bytes(*p.w), p.y, total_};
      total_ += (p.w->rows + kPanelRows - 1) / kPanelRows;
      ++n_;
    }
  }
  int64_t total() const { return total_; }
  const WeightMatrix& first() const { return parts_[0].w; }

  // fn(part, first panel, end panel) for each part's share of panels [u0, u1).
  template <typename F>
  void split(int64_t u0, int64_t u1, F&& fn) const {
    for (size_t i = 0; i < n_; ++i) {
      const Part& p = parts_[i];
      int64_t end = i + 1 < n_ ? parts_[i + 1].first_panel : total_;
      int64_t b = std::max(u0, p.first_panel), e = std::min(u1, end);
      if (b < e) fn(p, b - p.first_panel, e - p.first_panel);
    }
  }

 private:
  std::array<Part, kMaxMatmulParts> parts_{};
  size_t n_ = 0;
  int64_t total_ = 0;
};

// Every token of x (n_tokens rows of cols) quantized for panels whose codes have the
// zero point `zero_point`, into this thread's buffer (valid until its next call). The
// codes have a token group of blocks' slack after them: the int8 tiles read a whole
// tile of token rows.
Q8Activations quantize_tokens(const IsaKernels& k, const float* x, int64_t n_tokens, int64_t cols, int zero_point,
                              ThreadPool& pool) {
  thread_local std::vector<uint8_t> act_buffer;
  const int64_t nb32 = cols / 32, nb16 = cols / 16;
  size_t q_bytes = static_cast<size_t>(n_tokens * cols + 32 * Q8Activations::kGroup + 63) / 64 * 64;
  size_t sums = static_cast<size_t>(n_tokens * (nb32 * 3 + nb16 * 2));  // d, sum32, zero32, zero16, sum16
  static_assert(sizeof(float) == sizeof(int32_t));
  uint8_t* base = scratch(act_buffer, q_bytes + sums * sizeof(float));
  Q8Activations a;
  a.n_tokens = n_tokens;
  a.cols = cols;
  a.q = reinterpret_cast<int8_t*>(base);
  a.d = reinterpret_cast<float*>(base + q_bytes);
  a.sum32 = a.d + n_tokens * nb32;
  a.zero32 = reinterpret_cast<int32_t*>(a.sum32 + n_tokens * nb32);
  a.zero16 = a.zero32 + n_tokens * nb32;
  a.sum16 = reinterpret_cast<float*>(a.zero16 + n_tokens * nb16);
  auto quantize = [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) k.quantize_activations(x + t * cols, cols, zero_point, a.token(t));
  };
  if (n_tokens >= 8) pool.parallel_for(n_tokens, 4, quantize);
  else quantize(0, n_tokens, 0);
  return a;
}

// Panel g of part p as the kernels read it: packed, or packed here into slot 0 or 1 of
// `buffer` (of the wide layout's panel_bytes each).
const uint8_t* packed_panel(const PartPanels::Part& p, int64_t g, size_t slot, size_t panel_bytes,
                            std::vector<uint8_t>& buffer) {
  if (p.w.packed != nullptr) return p.w.packed->panel(g);
  uint8_t* buf = panel_scratch(buffer, 2 * panel_bytes) + slot * panel_bytes;
  pack_panel(p.w, g, buf);
  return buf;
}

// The layout of w's panels as pack_panel writes them (unpacked weights' panels are
// packed wide: kernels read them at once).
PanelLayout wide_layout(const WeightMatrix& w) {
  PanelLayout wide = *panel_layout(w.type);
  wide.stored_bits = 0;
  return wide;
}

void matmul_panels(const IsaKernels& k, const PartPanels& panels, const float* x, int64_t n_tokens, ThreadPool& pool) {
  const WeightMatrix& w0 = panels.first();
  // Tokens in chunks that meet stretches of panels in turn (see below); unpacked
  // weights are packed pair by pair here, once per call, so then all form one chunk.
  const int64_t chunk = w0.packed != nullptr ? 6 * Q8Activations::kGroup : n_tokens;
  // Compact panels (packed_weights.h) go to the kernels as they are for one chunk of
  // tokens: the kernels unpack their codes as they go, and the memory streams only
  // the compact bytes. For more chunks, a stretch at a time is widened before its
  // chunks (each panel once per call) and the kernels read it wide.
  const PanelLayout& stored = *panel_layout(w0.type);
  const bool widen = w0.packed != nullptr && stored.compact() && n_tokens > chunk;
  const PanelLayout wide = wide_layout(w0);
  const PanelLayout& layout = w0.packed != nullptr && !widen ? stored : wide;  // what the kernels read
  const int64_t cols = w0.cols;
  const Q8Activations a = quantize_tokens(k, x, n_tokens, cols, layout.offset, pool);

  // Threads take contiguous ranges of 16-row panels, long ones first, as they become
  // free (a fixed split loses the difference whenever other tenants of a shared
  // machine slow one core; short interleaved ranges cost decode 5-10 % of its
  // bandwidth). A range goes in stretches of panels that fit in L2 beside one chunk of
  // tokens' activations; each stretch meets every chunk in turn (a panel is reused by
  // every token of the chunk from cache). The kernels take a stretch's panels in pairs,
  // its first half beside its second (IsaKernels::panels): each token's activations
  // then serve two panels, and two memory streams keep more reads in flight than one
  // (measured on TinyLlama's Q4_0 matrices in a row, 2 threads, one token: 11-20 %
  // more bandwidth).
  const size_t panel_size = layout.wide_panel_bytes(cols);
  // One chunk of tokens needs no stretches: a whole range then is one, which pairs span.
  const int64_t stretch = n_tokens > chunk ? stretch_panels(panel_size) : panels.total();
  for_panel_ranges(pool, w0, panels.total(), panel_size, n_tokens, [&](int64_t u0, int64_t u1, int) {
    thread_local std::vector<uint8_t> panel_buffer, stretch_buffer;
    for (int64_t s0 = u0; s0 < u1; s0 += stretch) {
      const int64_t s1 = std::min(u1, s0 + stretch);
      uint8_t* wide_stretch = widen ? panel_scratch(stretch_buffer, static_cast<size_t>(s1 - s0) * panel_size) : nullptr;
      auto in_stretch = [&](const PartPanels::Part& p, int64_t g) {
        return wide_stretch + static_cast<size_t>(p.first_panel + g - s0) * panel_size;
      };
      if (widen)
        panels.split(s0, s1, [&](const PartPanels::Part& p, int64_t g0, int64_t g1) {
          for (int64_t g = g0; g < g1; ++g) k.widen_panel(stored, p.w.packed->panel(g), cols, in_stretch(p, g));
        });
      for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t t1 = std::min(n_tokens, t0 + chunk);
        panels.split(s0, s1, [&](const PartPanels::Part& p, int64_t g0, int64_t g1) {
          auto panel = [&](int64_t g, size_t slot) -> const uint8_t* {
            return widen ? in_stretch(p, g) : packed_panel(p, g, slot, panel_size, panel_buffer);
          };
          const int64_t half = (g1 - g0) / 2;
          for (int64_t g = g0; g < g0 + half; ++g)
            k.panels(panel(g, 0), panel(g + half, 1), layout, a, t0, t1, p.y, p.w.rows, g * kPanelRows,
                     (g + half) * kPanelRows);
          if ((g1 - g0) % 2 != 0)
            k.panels(panel(g1 - 1, 0), nullptr, layout, a, t0, t1, p.y, p.w.rows, (g1 - 1) * kPanelRows, 0);
        });
      }
    }
  });
}

// Ends the tile configuration k's tile kernels leave loaded when a thread's share of a
// matmul is done, however it ends.
class TilesReleased {
 public:
  explicit TilesReleased(const IsaKernels& k) : k_(k) {}
  TilesReleased(const TilesReleased&) = delete;
  TilesReleased& operator=(const TilesReleased&) = delete;
  ~TilesReleased() {
    if (k_.release_tiles != nullptr) k_.release_tiles();
  }

 private:
  const IsaKernels& k_;
};

// The AMX tile drivers' loop. Each thread takes its range of panels in stretches of
// `stretch` panels whose tile form (`room_bytes` each, made by prepare(part, panel,
// room) once per panel) stays in L2; then chunks of `chunk` tokens pass over the
// stretch in turn: pass(part, g0, g1, room_of, t0, t1) for the part's panels [g0, g1)
// of the stretch, room_of(part, g) their tile forms. A pass reads every token of its
// chunk for every few weight rows, so the chunk must come from L2 too: from L3 or
// memory that would cost more than the tiles.
template <typename Prepare, typename Pass>
void for_tile_stretches(const IsaKernels& k, ThreadPool& pool, const PartPanels& panels, size_t panel_bytes,
                        size_t room_bytes, int64_t stretch, int64_t n_tokens, int64_t chunk, Prepare&& prepare,
                        Pass&& pass) {
  for_panel_ranges(pool, panels.first(), panels.total(), panel_bytes, n_tokens, [&](int64_t u0, int64_t u1, int) {
    const TilesReleased released(k);
    thread_local std::vector<uint8_t> room_buffer;
    uint8_t* room = panel_scratch(room_buffer, room_bytes * static_cast<size_t>(std::min(stretch, u1 - u0)));
    for (int64_t s0 = u0; s0 < u1; s0 += stretch) {
      const int64_t s1 = std::min(u1, s0 + stretch);
      auto room_of = [&](const PartPanels::Part& p, int64_t g) {
        return room + static_cast<size_t>(p.first_panel + g - s0) * room_bytes;
      };
      panels.split(s0, s1, [&](const PartPanels::Part& p, int64_t g0, int64_t g1) {
        for (int64_t g = g0; g < g1; ++g) prepare(p, g, room_of(p, g));
      });
      for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t t1 = std::min(n_tokens, t0 + chunk);
        panels.split(s0, s1,
                     [&](const PartPanels::Part& p, int64_t g0, int64_t g1) { pass(p, g0, g1, room_of, t0, t1); });
      }
    }
  });
}

// L2 room for the tile drivers: a stretch's tile forms, and a chunk of tokens.
constexpr int64_t kTileStretchBytes = 768 * 1024, kTileChunkBytes = 1024 * 1024;

// Integer weights through int8 tiles (AMX): every token quantized once, then stretches
// of panels unpacked into the tiles' layout (compact panels read as they are) and chunks
// of tokens over them, two panels at a time. Unpacked weights are packed panel by panel.
void matmul_int8_tiles(const IsaKernels& k, const PartPanels& panels, const float* x, int64_t n_tokens,
                       ThreadPool& pool) {
  const WeightMatrix& w0 = panels.first();
  const PanelLayout wide = wide_layout(w0);
  const PanelLayout& layout = w0.packed != nullptr ? *panel_layout(w0.type) : wide;
  const int64_t cols = w0.cols;
  const Q8Activations a = quantize_tokens(k, x, n_tokens, cols, layout.offset, pool);
  const size_t panel_bytes = wide.wide_panel_bytes(cols), tile_bytes = int8_tile_bytes(cols);
  const int64_t kGroup = Q8Activations::kGroup;
  const int64_t stretch = std::max<int64_t>(2, kTileStretchBytes / static_cast<int64_t>(tile_bytes) / 2 * 2);
  const int64_t chunk = std::max<int64_t>(1, kTileChunkBytes / cols / kGroup) * kGroup;  // codes: a byte each
  for_tile_stretches(
      k, pool, panels, panel_bytes, tile_bytes, stretch, n_tokens, chunk,
      [&](const PartPanels::Part& p, int64_t g, uint8_t* room) {
        thread_local std::vector<uint8_t> panel_buffer;  // each thread's
        k.int8_unpack_panel(packed_panel(p, g, 0, panel_bytes, panel_buffer), layout, cols, room);
      },
      [&](const PartPanels::Part& p, int64_t g0, int64_t g1, auto& room_of, int64_t t0, int64_t t1) {
        for (int64_t g = g0; g < g1; g += 2)
          k.int8_panel_tiles(room_of(p, g), g + 1 < g1 ? room_of(p, g + 1) : nullptr, layout, a, t0, t1, p.y,
                             p.w.rows, g * kPanelRows, (g + 1) * kPanelRows);
      });
}

// Elements 2p and 2p + 1 of a row of `cols` floats rounded to bf16, in the low and high
// halves (0 past the row): the operand of the bf16 products.
uint32_t bf16_pair(const float* row, int64_t cols, int64_t p) {
  const uint32_t low = 2 * p < cols ? f32_to_bf16(row[2 * p]) : 0;
  const uint32_t high = 2 * p + 1 < cols ? f32_to_bf16(row[2 * p + 1]) : 0;
  return low | high << 16;
}

// Float weights: token groups interleaved once (InterleavedTokens, or Bf16PairTokens
// under FloatMath::kBf16), then 16-row panels shared out as in matmul_panels: stretches
// that fit in L2 meet every group in turn, two panels at a time (a stretch's two halves
// side by side: two memory streams); one group of tokens needs no stretches. Unpacked
// weights are packed stretch by stretch.
void matmul_float_panels(const IsaKernels& k, FloatMath math, const PartPanels& panels, const float* x,
                         int64_t n_tokens, ThreadPool& pool) {
  const int64_t group = k.float_group;
  const WeightMatrix& w0 = panels.first();
  const int64_t cols = w0.cols, groups = (n_tokens + group - 1) / group, col_pairs = (cols + 1) / 2;
  const bool bf16 = math == FloatMath::kBf16 && k.float_panels_bf16 != nullptr;
  const float* xt = x;  // one token is its own interleaving
  const uint32_t* pairs = nullptr;
  // fn(t0, n) for each group's first token and size, the groups shared among the threads.
  auto for_each_group = [&](auto&& fn) {
    pool.parallel_for(groups, 1, [&](int64_t g0, int64_t g1, int) {
      for (int64_t g = g0; g < g1; ++g) fn(g * group, std::min(group, n_tokens - g * group));
    });
  };
  if (bf16) {
    thread_local std::vector<uint32_t> pair_buffer;
    uint32_t* out = scratch(pair_buffer, static_cast<size_t>(n_tokens * col_pairs));
    for_each_group([&](int64_t t0, int64_t n) {
      for (int64_t p = 0; p < col_pairs; ++p)
        for (int64_t j = 0; j < n; ++j) out[t0 * col_pairs + p * n + j] = bf16_pair(x + (t0 + j) * cols, cols, p);
    });
    pairs = out;
  } else if (n_tokens > 1) {
    thread_local std::vector<float> xt_buffer;
    float* out = scratch(xt_buffer, static_cast<size_t>(n_tokens * cols));
    for_each_group([&](int64_t t0, int64_t n) {
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t j = 0; j < n; ++j) out[t0 * cols + c * n + j] = x[(t0 + j) * cols + c];
    });
    xt = out;
  }
  const bool packed = w0.packed != nullptr;
  const size_t panel_bytes = float_panel_bytes(w0.type, cols);
  const int64_t stretch = n_tokens > group || !packed ? stretch_panels(panel_bytes) : panels.total();
  for_panel_ranges(pool, w0, panels.total(), panel_bytes, n_tokens, [&](int64_t u0, int64_t u1, int) {
    thread_local std::vector<uint8_t> panel_buffer;
    for (int64_t s0 = u0; s0 < u1; s0 += stretch) {
      panels.split(s0, std::min(u1, s0 + stretch), [&](const PartPanels::Part& p, int64_t g0, int64_t g1) {
        const uint8_t* first = nullptr;  // panel g0, the others after it
        if (packed) {
          first = p.w.packed->panel(g0);
        } else {
          uint8_t* buf = panel_scratch(panel_buffer, static_cast<size_t>(g1 - g0) * panel_bytes);
          for (int64_t g = g0; g < g1; ++g) pack_panel(p.w, g, buf + static_cast<size_t>(g - g0) * panel_bytes);
          first = buf;
        }
        auto panel = [&](int64_t g) { return first + static_cast<size_t>(g - g0) * panel_bytes; };
        const int64_t half = (g1 - g0) / 2;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += group) {
          const int64_t n = std::min(group, n_tokens - t0);
          // Panels g (and g2, or none) for this group of tokens, on rows from g * 16 (and g2 * 16).
          auto run = [&](int64_t g, int64_t g2) {
            const uint8_t* second = g2 >= 0 ? panel(g2) : nullptr;
            const int64_t r2 = g2 >= 0 ? g2 * kPanelRows : 0;
            if (bf16)
              k.float_panels_bf16(p.w.type, panel(g), second, cols, {pairs + t0 * col_pairs, n, n, t0}, p.y, p.w.rows,
                                  g * kPanelRows, r2);
            else
              k.float_panels(p.w.type, panel(g), second, cols, {xt + t0 * cols, n, n, t0}, p.y, p.w.rows,
                             g * kPanelRows, r2);
          };
          for (int64_t g = g0; g < g0 + half; ++g) run(g, g + half);
          if ((g1 - g0) % 2 != 0) run(g1 - 1, -1);
        }
      });
    }
  });
}

// FloatMath::kBf16 through bf16 tiles (AMX): every token's activations rounded and
// paired once, token by token (Bf16TokenRows), then stretches of panels paired into the
// tiles' layout and chunks of tokens over them. Unpacked weights are packed panel by
// panel.
void matmul_bf16_tiles(const IsaKernels& k, const PartPanels& panels, const float* x, int64_t n_tokens,
                       ThreadPool& pool) {
  const WeightMatrix& w0 = panels.first();
  const int64_t cols = w0.cols, col_pairs = (cols + 1) / 2;
  const int64_t stride = (col_pairs + Bf16TokenRows::kStepPairs - 1) / Bf16TokenRows::kStepPairs * Bf16TokenRows::kStepPairs;
  thread_local std::vector<uint32_t> row_buffer;
  uint32_t* pairs = scratch(row_buffer, static_cast<size_t>((n_tokens + kPanelRows) * stride));  // + slack
  pool.parallel_for(n_tokens, 1, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      uint32_t* out = pairs + t * stride;
      for (int64_t p = 0; p < stride; ++p) out[p] = bf16_pair(x + t * cols, cols, p);
    }
  });
  const Bf16TokenRows a{pairs, stride, n_tokens};
  const size_t panel_bytes = float_panel_bytes(w0.type, cols);
  const size_t paired_bytes = static_cast<size_t>(stride) * 64;  // a paired panel: 64 bytes a pair
  const int64_t stretch = std::max<int64_t>(1, kTileStretchBytes / static_cast<int64_t>(paired_bytes));
  const int64_t chunk = std::max<int64_t>(1, kTileChunkBytes / (4 * stride) / kPanelRows) * kPanelRows;
  for_tile_stretches(
      k, pool, panels, panel_bytes, paired_bytes, stretch, n_tokens, chunk,
      [&](const PartPanels::Part& p, int64_t g, uint8_t* room) {
        thread_local std::vector<uint8_t> panel_buffer;  // each thread's
        k.bf16_pair_panel(p.w.type, packed_panel(p, g, 0, panel_bytes, panel_buffer), cols,
                          stride / Bf16TokenRows::kStepPairs, reinterpret_cast<uint32_t*>(room));
      },
      [&](const PartPanels::Part& p, int64_t g0, int64_t g1, auto& room_of, int64_t t0, int64_t t1) {
        for (int64_t g = g0; g < g1; ++g)
          k.float_panel_bf16_tiles(reinterpret_cast<const uint32_t*>(room_of(p, g)), a, t0, t1, p.y, p.w.rows,
                                   g * kPanelRows);
      });
}

// Parts can share a region when one kernel serves them all with the same activations.
bool can_share_region(std::initializer_list<MatmulPart> parts) {
  const WeightMatrix& w0 = *parts.begin()->w;
  for (const MatmulPart& p : parts)
    if (p.w->type != w0.type || p.w->cols != w0.cols || (p.w->packed == nullptr) != (w0.packed == nullptr)) return false;
  return parts.size() <= kMaxMatmulParts;
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  matmul_parts({{&w, y}}, x, n_tokens, pool);
}

void matmul_parts(std::initializer_list<MatmulPart> parts, const float* x, int64_t n_tokens, ThreadPool& pool) {
  matmul_parts_with(kernels_for(active_isa()), parts, x, n_tokens, pool);
}

void matmul_parts_with(const IsaKernels* k, std::initializer_list<MatmulPart> parts, const float* x, int64_t n_tokens,
                       ThreadPool& pool, FloatMath math) {
  for (const MatmulPart& p : parts) check_shape(*p.w);
  if (n_tokens <= 0 || parts.size() == 0) return;
  if (k == nullptr || !can_share_region(parts)) {
    for (const MatmulPart& p : parts) {
      if (p.w->rows == 0) continue;
      if (k == nullptr) matmul_scalar(with_row_bytes(*p.w), x, n_tokens, p.y, pool);
      else matmul_parts_with(k, {p}, x, n_tokens, pool, math);
    }
  } else if (panel_layout(parts.begin()->w->type) != nullptr) {
    if (k->int8_tiles_take(n_tokens))
      matmul_int8_tiles(*k, PartPanels(parts), x, n_tokens, pool);
    else
      matmul_panels(*k, PartPanels(parts), x, n_tokens, pool);
  } else if (math == FloatMath::kBf16 && k->float_panel_bf16_tiles != nullptr) {
    matmul_bf16_tiles(*k, PartPanels(parts), x, n_tokens, pool);
  } else {
    matmul_float_panels(*k, math, PartPanels(parts), x, n_tokens, pool);
  }
}

void quantize_activations_scalar(const float* x, int64_t cols, int zero_point, const Q8Token& out) {
  const int64_t stride = out.stride;
  for (int64_t b = 0; b < cols / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    int sums[2] = {0, 0};
    for (int j = 0; j < 32; ++j) {
      int v = static_cast<int>(std::nearbyint(xb[j] * id));
      out.q[b * 32 * stride + j] = static_cast<int8_t>(v);
      sums[j / 16] += v;
    }
    out.set_block(b, db, sums[0], sums[1], zero_point);
  }
}

// Dequantizes each row once into a per-thread buffer, then dots it with every token.
void matmul_scalar(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  pool.parallel_for(w.rows, 1, [&](int64_t r0, int64_t r1, int) {
    thread_local std::vector<float> row_buffer;
    float* row = scratch(row_buffer, static_cast<size_t>(w.cols));
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_row(w.type, w.data + r * w.row_bytes, row, w.cols);
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* xt = x + t * w.cols;
        float acc[8] = {};
        int64_t c = 0;
        for (; c + 8 <= w.cols; c += 8)
          for (int k = 0; k < 8; ++k) acc[k] += row[c + k] * xt[c + k];
        for (; c < w.cols; ++c) acc[0] += row[c] * xt[c];
        y[t * w.rows + r] = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
      }
    }
  });
}

void matmul_reference(const WeightMatrix& weights, const float* x, int64_t n_tokens, float* y) {
  check_shape(weights);
  WeightMatrix w = with_row_bytes(weights);
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), w.cols);
    for (int64_t t = 0; t < n_tokens; ++t) {
      double acc = 0;
      for (int64_t c = 0; c < w.cols; ++c) acc += static_cast<double>(row[c]) * x[t * w.cols + c];
      y[t * w.rows + r] = static_cast<float>(acc);
    }
  }
}

}  // namespace tps
