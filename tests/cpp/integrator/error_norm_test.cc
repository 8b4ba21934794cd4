// The error norm (integrator/error_norm.h, cenic-math.md §11.3, §11.11) on
// known vectors: translations divided by L, rotations in radians, activations
// by their range, velocities by L (full_state), the ∞-norm and its worst
// coordinate; the propagated norm's weight in the free and damped limits.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/error_norm.h"
#include "test_util.h"

namespace mjcenic {
namespace {

// A slide joint (dof 0), a hinge (dof 1) and a filter actuator on the hinge
// with ctrlrange [−2, 2] (its activation's range: 4).
constexpr char kArm[] = R"(
<mujoco><worldbody>
  <body><joint name="slide" type="slide" axis="1 0 0"/><geom size="0.1" mass="1"/>
    <body><joint name="hinge" type="hinge" axis="0 0 1"/>
      <geom size="0.1" pos="0.5 0 0" mass="1"/></body></body></worldbody>
  <actuator><general name="filter" joint="hinge" dyntype="filter" dynprm="0.1"
    ctrllimited="true" ctrlrange="-2 2"/></actuator></mujoco>)";

struct Arm {
  test_util::ModelPtr m;
  std::vector<double> q0, v0, act0;
};
Arm LoadArm() {
  std::string error;
  Arm a{test_util::ModelFromXml(kArm, &error), {}, {}, {}};
  EXPECT_TRUE(a.m) << error;
  if (a.m) {
    a.q0.assign(a.m->nq, 0.0);
    a.v0.assign(a.m->nv, 0.0);
    a.act0.assign(a.m->na, 0.0);
  }
  return a;
}

TEST(ErrorNorm, WeightedNormOfAKnownVector) {
  Arm a = LoadArm();
  ASSERT_TRUE(a.m);
  ASSERT_EQ(a.m->nv, 2);
  ASSERT_EQ(a.m->na, 1);
  ErrorNorm norm(a.m.get(), ErrorNormKind::kWeighted, 0.5);
  EXPECT_EQ(norm.length_scale(), 0.5);
  EXPECT_EQ(norm.act_weight(0), 0.25);
  // Δq = (0.1 m, 0.05 rad), Δact = 0.4: max(0.1/0.5, 0.05, 0.4/4) = 0.2 at dof 0.
  const double q[] = {0.1, 0.05}, v[] = {0.3, -0.7}, act[] = {0.4};
  int worst = -1;
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   0.2);
  EXPECT_EQ(worst, 0);
  EXPECT_EQ(norm.WorstName(a.m.get(), worst), "dof 0 (joint 'slide')");
  // Velocities are not part of the weighted norm; Δact = 1.2 weighs 0.3.
  const double act_big[] = {1.2};
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act_big, a.q0.data(), a.v0.data(),
                                a.act0.data(), &worst),
                   0.3);
  EXPECT_EQ(worst, -2);
  EXPECT_EQ(norm.WorstName(a.m.get(), worst), "act 0 (actuator 'filter')");
  // A rotation is measured in radians: Δq = (0.01 m, 0.15 rad) → 0.15 at dof 1.
  const double q_rot[] = {0.01, 0.15};
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q_rot, v, act, a.q0.data(), a.v0.data(),
                                a.act0.data(), &worst),
                   0.15);
  EXPECT_EQ(worst, 1);
}

TEST(ErrorNorm, FullStateAndDrakeNorms) {
  Arm a = LoadArm();
  ASSERT_TRUE(a.m);
  const double q[] = {0.1, 0.05}, v[] = {0.3, -0.7}, act[] = {0.0};
  int worst = -1;
  // full_state adds |Δv|/L: 0.7/0.5 = 1.4 at dof 1.
  ErrorNorm full(a.m.get(), ErrorNormKind::kFullState, 0.5);
  EXPECT_DOUBLE_EQ(full.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   1.4);
  EXPECT_EQ(worst, 1);
  // drake: the raw qpos components, unweighted: 0.1 at qpos 0.
  ErrorNorm drake(a.m.get(), ErrorNormKind::kDrake, 0.5);
  EXPECT_DOUBLE_EQ(drake.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                 &worst),
                   0.1);
  EXPECT_EQ(worst, 0);
  EXPECT_EQ(drake.WorstName(a.m.get(), worst), "qpos 0 (joint 'slide')");
}

TEST(ErrorNorm, PropagationWeight) {
  // A free dof (H = M) keeps drifting: the horizon τ.
  EXPECT_DOUBLE_EQ(ErrorNorm::PropagationWeight(0.01, 2.0, 2.0, 1.0), 1.0);
  // A damped dof, H = M + h D (M = 1, D = 10, h = 0.01):
  // w = h H / (H − M + h H/τ) = 0.011 / 0.111.
  EXPECT_NEAR(ErrorNorm::PropagationWeight(0.01, 1.1, 1.0, 1.0), 0.011 / (0.1 + 0.011), 1e-14);
}

}  // namespace
}  // namespace mjcenic
