// The propagated error norms (integrator/error_norm.h, cenic-math.md §11.11)
// on known vectors: the propagated norm weighs a velocity error by its
// propagation weight (not by the horizon), and the propagated-modes norm
// reads a drift set for one Compute only.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/error_norm.h"
#include "test_util.h"

namespace mjcenic {
namespace {

// A slide joint (dof 0) and a hinge (dof 1) with a filter actuator on it
// (ctrlrange [−2, 2]: the activation's range is 4).
constexpr char kArm[] = R"(
<mujoco><worldbody>
  <body><joint name="slide" type="slide" axis="1 0 0"/><geom size="0.1" mass="1"/>
    <body><joint name="hinge" type="hinge" axis="0 0 1"/>
      <geom size="0.1" pos="0.5 0 0" mass="1"/></body></body></worldbody>
  <actuator><general joint="hinge" dyntype="filter" dynprm="0.1"
    ctrllimited="true" ctrlrange="-2 2"/></actuator></mujoco>)";

test_util::ModelPtr Arm() {
  std::string error;
  test_util::ModelPtr m = test_util::ModelFromXml(kArm, &error);
  EXPECT_TRUE(m) << error;
  return m;
}

// propagated: max(|Δq| w_q, |Δv| w_v w_q) with w_v the propagation weight of
// SetPropagation: M = 1, D = 10, h = 0.01 (H = 1.1), τ = 1:
// w_v = h H / (H − M + h H/τ) = 0.011 / 0.111; L = 0.5 (the slide's w_q = 2).
TEST(ErrorNormRules, PropagatedNormWeighsVelocityByThePropagationWeight) {
  auto m = Arm();
  ASSERT_TRUE(m);
  ErrorNorm norm(m.get(), ErrorNormKind::kPropagated, 0.5, 1.0);
  const double H[] = {1.1, 2.0}, M[] = {1.0, 2.0};
  norm.SetPropagation(0.01, H, M);
  const double w = 0.011 / 0.111;
  EXPECT_NEAR(norm.velocity_weight(0), w, 1e-15);
  EXPECT_DOUBLE_EQ(norm.velocity_weight(1), 1.0);  // a free dof: the horizon
  const double q0[] = {0, 0}, v0[] = {0, 0}, a0[] = {0};
  const double q[] = {1e-4, 0.0}, v[] = {0.3, 0.0}, act[] = {0.0};
  int worst = -1;
  EXPECT_NEAR(norm.Compute(m.get(), q, v, act, q0, v0, a0, &worst), 0.3 * w * 2, 1e-14);
  EXPECT_EQ(worst, 0);
}

// propagated_modes: the drift set by SetPropagatedDrift replaces |Δv| τ for
// the next Compute only.
TEST(ErrorNormRules, PropagatedModesReadsTheDriftOnce) {
  auto m = Arm();
  ASSERT_TRUE(m);
  ErrorNorm norm(m.get(), ErrorNormKind::kPropagatedModes, 0.5, 2.0);
  const double q0[] = {0, 0}, v0[] = {0, 0}, a0[] = {0};
  const double q[] = {0.0, 0.0}, v[] = {0.0, 0.05}, act[] = {0.0};
  int worst = -1;
  // No drift: |Δv| τ on the hinge (radians): 0.05 · 2.
  EXPECT_DOUBLE_EQ(norm.Compute(m.get(), q, v, act, q0, v0, a0, &worst), 0.1);
  EXPECT_EQ(worst, 1);
  const double drift[] = {-0.03, 0.0};
  norm.SetPropagatedDrift(drift);
  // |drift| / L on the slide: 0.06 (the hinge's drift is 0).
  EXPECT_DOUBLE_EQ(norm.Compute(m.get(), q, v, act, q0, v0, a0, &worst), 0.06);
  EXPECT_EQ(worst, 0);
  EXPECT_DOUBLE_EQ(norm.Compute(m.get(), q, v, act, q0, v0, a0, &worst), 0.1);
}

// A NaN in any coordinate is the norm's value, whatever the later coordinates
// hold (a non-finite attempt is never measured as finite and accepted).
TEST(ErrorNormRules, ANanCoordinateIsTheNormsValue) {
  auto m = Arm();
  ASSERT_TRUE(m);
  for (ErrorNormKind kind : {ErrorNormKind::kWeighted, ErrorNormKind::kFullState,
                             ErrorNormKind::kPropagatedModes}) {
    ErrorNorm norm(m.get(), kind, 0.5, 1.0);
    const double q0[] = {0, 0}, v0[] = {0, 0}, a0[] = {0};
    const double q[] = {std::nan(""), 0.3}, v[] = {0.0, 0.4}, act[] = {0.1};
    int worst = -1;
    EXPECT_TRUE(std::isnan(norm.Compute(m.get(), q, v, act, q0, v0, a0, &worst)))
        << ToString(kind);
    EXPECT_EQ(worst, 0) << ToString(kind);
  }
}

}  // namespace
}  // namespace mjcenic
