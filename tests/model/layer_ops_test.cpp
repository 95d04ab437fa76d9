#include "model/layer_ops.h"

#include <cmath>

#include <gtest/gtest.h>

namespace tps {

TEST(LayerOps, RmsNormScalesToUnitRootMeanSquare) {
  const float x[4] = {1, -2, 3, -4};  // mean square 7.5
  const float w[4] = {1, 1, 2, 0.5f};
  float out[4];
  rms_norm(x, w, out, 4, 0.0f);
  const float s = 1.0f / std::sqrt(7.5f);
  EXPECT_FLOAT_EQ(out[0], 1 * s);
  EXPECT_FLOAT_EQ(out[1], -2 * s);
  EXPECT_FLOAT_EQ(out[2], 6 * s);
  EXPECT_FLOAT_EQ(out[3], -2 * s);
}

TEST(LayerOps, RopeAnglesFollowTheBase) {
  float c[2], s[2];
  rope_angles(3, 100.0f, 4, c, s);  // theta_i = 3 * 100^(-i/2): 3 and 0.3
  EXPECT_NEAR(c[0], std::cos(3.0), 1e-6);
  EXPECT_NEAR(s[0], std::sin(3.0), 1e-6);
  EXPECT_NEAR(c[1], std::cos(0.3), 1e-6);
  EXPECT_NEAR(s[1], std::sin(0.3), 1e-6);
}

TEST(LayerOps, RopeRotatesAdjacentPairsOrHalves) {
  // Rotation by 90 degrees for pair 0 and by 180 for pair 1: (a, b) -> (-b, a), -> (-a, -b).
  const float c[2] = {0, -1}, s[2] = {1, 0};
  float adjacent[4] = {1, 2, 3, 4};
  apply_rope(adjacent, 1, 4, 4, RopeStyle::kAdjacentPairs, c, s);  // pairs (1,2), (3,4)
  EXPECT_FLOAT_EQ(adjacent[0], -2);
  EXPECT_FLOAT_EQ(adjacent[1], 1);
  EXPECT_FLOAT_EQ(adjacent[2], -3);
  EXPECT_FLOAT_EQ(adjacent[3], -4);
  float neox[4] = {1, 2, 3, 4};
  apply_rope(neox, 1, 4, 4, RopeStyle::kNeox, c, s);  // pairs (1,3), (2,4)
  EXPECT_FLOAT_EQ(neox[0], -3);
  EXPECT_FLOAT_EQ(neox[2], 1);
  EXPECT_FLOAT_EQ(neox[1], -2);
  EXPECT_FLOAT_EQ(neox[3], -4);
}

TEST(LayerOps, RopeLeavesDimensionsPastRopeDimsAlone) {
  const float c[1] = {0}, s[1] = {1};
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};  // two heads of 4, only the first 2 rotated
  apply_rope(x, 2, 4, 2, RopeStyle::kAdjacentPairs, c, s);
  const float expected[8] = {-2, 1, 3, 4, -6, 5, 7, 8};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(x[i], expected[i]) << i;
}

TEST(LayerOps, SiluMul) {
  float gate[2] = {0.0f, 2.0f};
  const float up[2] = {5.0f, 3.0f};
  silu_mul(gate, up, 2);
  EXPECT_FLOAT_EQ(gate[0], 0.0f);
  EXPECT_NEAR(gate[1], 2.0 / (1 + std::exp(-2.0)) * 3.0, 1e-6);
}

}  // namespace tps
