#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/amx_tiles.h"
#include "quant/quantize.h"

namespace tps {

namespace {

constexpr int kTiles = 8, kMaxRows = 16, kMaxColsb = 64;

struct TileState {
  bool configured = false;
  int64_t configurations = 0;  // ldtilecfg on this thread so far
  TileConfig config;
  uint8_t data[kTiles][kMaxRows][kMaxColsb] = {};
};

thread_local TileState state;

// The tile t as configured; the hardware raises #UD for an unconfigured one.
void check_tile(int t) {
  if (!state.configured) fail("AMX model: tile instruction without a tile configuration");
  if (t < 0 || t >= kTiles || state.config.rows[t] == 0 || state.config.colsb[t] == 0)
    fail("AMX model: tile {} is not configured", t);
}

// The shapes every tile product requires (else #UD): C is M x N 4-byte values, A is
// M x K 4-byte groups, B is K/4 rows of N x 4 bytes.
void check_product(const char* name, int c, int a, int b) {
  check_tile(c);
  check_tile(a);
  check_tile(b);
  const TileConfig& k = state.config;
  if (c == a || c == b || a == b) fail("AMX model: {} needs three different tiles", name);
  if (k.rows[c] != k.rows[a] || k.colsb[c] != k.colsb[b] || k.colsb[a] != 4 * k.rows[b] || k.colsb[a] % 4 != 0)
    fail("AMX model: {} shapes C {}x{}, A {}x{}, B {}x{} do not fit", name, k.rows[c], k.colsb[c], k.rows[a],
         k.colsb[a], k.rows[b], k.colsb[b]);
}

}  // namespace

void EmulatedTiles::configure(const TileConfig& c) {
  if (c.palette_id != 1) fail("AMX model: palette {} (only palette 1 exists)", c.palette_id);
  for (int t = 0; t < 16; ++t) {
    if (t >= kTiles && (c.rows[t] != 0 || c.colsb[t] != 0)) fail("AMX model: palette 1 has 8 tiles, not {}", t + 1);
    if (c.rows[t] > kMaxRows || c.colsb[t] > kMaxColsb)
      fail("AMX model: tile {} of {} rows x {} bytes exceeds 16 x 64", t, c.rows[t], c.colsb[t]);
    if ((c.rows[t] == 0) != (c.colsb[t] == 0)) fail("AMX model: tile {} has rows or bytes but not both", t);
  }
  state.config = c;
  state.configured = true;
  ++state.configurations;
  std::memset(state.data, 0, sizeof state.data);
}

void EmulatedTiles::release() { state.configured = false; }

int64_t EmulatedTiles::configurations() { return state.configurations; }

void EmulatedTiles::zero_tile(int t) {
  check_tile(t);
  std::memset(state.data[t], 0, sizeof state.data[t]);
}

void EmulatedTiles::load_tile(int t, const void* p, size_t stride) {
  check_tile(t);
  std::memset(state.data[t], 0, sizeof state.data[t]);
  for (int r = 0; r < state.config.rows[t]; ++r)
    std::memcpy(state.data[t][r], static_cast<const uint8_t*>(p) + r * stride, state.config.colsb[t]);
}

void EmulatedTiles::store_tile(int t, void* p, size_t stride) {
  check_tile(t);
  for (int r = 0; r < state.config.rows[t]; ++r)
    std::memcpy(static_cast<uint8_t*>(p) + r * stride, state.data[t][r], state.config.colsb[t]);
}

void EmulatedTiles::dot_ss(int c, int a, int b) {
  check_product("tdpbssd", c, a, b);
  const TileConfig& k = state.config;
  for (int m = 0; m < k.rows[c]; ++m)
    for (int n = 0; n < k.colsb[c] / 4; ++n) {
      int32_t sum;
      std::memcpy(&sum, &state.data[c][m][4 * n], 4);
      for (int kk = 0; kk < k.colsb[a]; ++kk)
        sum += static_cast<int8_t>(state.data[a][m][kk]) * static_cast<int8_t>(state.data[b][kk / 4][4 * n + kk % 4]);
      std::memcpy(&state.data[c][m][4 * n], &sum, 4);
    }
}

void EmulatedTiles::dot_bf16_pairs(int c, int a, int b) {
  check_product("tdpbf16ps", c, a, b);
  const TileConfig& k = state.config;
  auto bf16_at = [](const uint8_t* p) {  // a bf16 as f32; subnormals are 0
    uint16_t h;
    std::memcpy(&h, p, 2);
    const float v = bf16_to_f32(h);
    return std::fpclassify(v) == FP_SUBNORMAL ? 0.0f : v;
  };
  auto flush = [](float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; };
  for (int m = 0; m < k.rows[c]; ++m)
    for (int n = 0; n < k.colsb[c] / 4; ++n) {
      // The even and the odd products of the pairs in two sums from 0 (a product of two
      // bf16 is exact in f32, so only the sums round), then their sum onto C.
      float half_sums[2] = {0.0f, 0.0f};
      for (int kk = 0; kk < k.colsb[a] / 4; ++kk)
        for (int half = 0; half < 2; ++half)
          half_sums[half] = flush(half_sums[half] + bf16_at(&state.data[a][m][4 * kk + 2 * half]) *
                                                        bf16_at(&state.data[b][kk][4 * n + 2 * half]));
      float sum;
      std::memcpy(&sum, &state.data[c][m][4 * n], 4);
      sum = flush(sum + flush(half_sums[0] + half_sums[1]));
      std::memcpy(&state.data[c][m][4 * n], &sum, 4);
    }
}

}  // namespace tps
