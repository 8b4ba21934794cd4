// Bodies in flight (integrator/flight.h; cenic-math.md §11.13): which trees
// count as in flight, and the half steps' positions they take.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/icf/icf_model.h"
#include "mjcenic/integrator/flight.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::LoadXml;
using test_util::ModelPtr;

// Two free bodies (trees 0 and 1, dofs 0–5 and 6–11) and a hinge arm
// (tree 2, dof 12).
constexpr char kThreeTrees[] = R"(
<mujoco><worldbody>
  <body pos="0 0 1"><freejoint/><geom type="sphere" size="0.1"/></body>
  <body pos="1 0 1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
  <body pos="2 0 1"><joint type="hinge" axis="0 1 0"/>
    <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0"/></body>
</worldbody></mujoco>)";

TEST(Flight, MarksTheTreesNoRowActsOn) {
  ModelPtr m = LoadXml(kThreeTrees);
  ASSERT_EQ(m->nv, 13);
  Flight flight(m.get());
  icf::IcfModel start, mid;
  start.Reset(m->nv);
  mid.Reset(m->nv);
  // A limit row on the box's dof 7 in the first problem, a gain row on the
  // arm in the second: only the ball's tree is in flight.
  start.limits.Add(std::vector<int>{7}, 0.1, 1.0);
  mid.gains.Add(std::vector<int>{12}, 0.0, 1.0, 0.1, -1.0, 1.0);
  ASSERT_TRUE(flight.Mark(start, mid));
  for (int i = 0; i < m->nv; ++i) EXPECT_EQ(flight.dofs()[i], i < 6 ? 1 : 0) << "dof " << i;
  // The marks hold for a problem without a row on the ball, not for one with
  // a contact row on it.
  icf::IcfModel next;
  next.Reset(m->nv);
  next.limits.Add(std::vector<int>{9}, 0.1, 1.0);
  EXPECT_TRUE(flight.HoldsFor(next));
  next.contacts.Add(std::vector<int>{0, 1, 2, 3, 4, 5}, 1.0, 1e4, 0.0, 1.0, 1.0, 0.0);
  EXPECT_FALSE(flight.HoldsFor(next));
  // A row on every tree: none is in flight.
  mid.limits.Add(std::vector<int>{2}, 0.1, 1.0);
  EXPECT_FALSE(flight.Mark(start, mid));
  EXPECT_FALSE(flight.any());
}

TEST(Flight, HalfStepPositionsAreTheHalfStepsEndUnderConstantAcceleration) {
  // The ball in flight, h = 0.01, v_t = (1, 0, 2, 0, 0, 3), a = (0, 0, −g,
  // 0, 0, 0): two half steps of implicit Euler end at
  // x_t + h v_t + ¾ h² a and at the angle h ω (constant ω), which
  // q_t ⊕ h (3 v̂ + v_t)/4 matches; the other trees keep the q given.
  ModelPtr m = LoadXml(kThreeTrees);
  Flight flight(m.get());
  icf::IcfModel start;
  start.Reset(m->nv);
  start.limits.Add(std::vector<int>{7}, 0.1, 1.0);
  start.limits.Add(std::vector<int>{12}, 0.1, 1.0);
  ASSERT_TRUE(flight.Mark(start, start));
  const double h = 0.01, g = 9.81;
  std::vector<double> v_t(m->nv, 0.0), v_hat(m->nv, 0.0);
  v_t[0] = 1, v_t[2] = 2, v_t[5] = 3;
  v_hat = v_t;
  v_hat[2] -= g * h;
  v_t[8] = 5, v_hat[8] = 7;  // the box: not in flight
  std::vector<double> q_t(m->qpos0, m->qpos0 + m->nq), q(m->nq, -1.0);
  flight.HalfStepPositions(h, q_t.data(), v_t.data(), v_hat.data(), q.data());
  // Two half steps of the ball: v_m = v_t + a h/2, v = v_t + a h.
  const double z = 1 + 0.5 * h * (2 - 0.5 * g * h) + 0.5 * h * (2 - g * h);
  EXPECT_NEAR(q[0], h * 1, 1e-15);
  EXPECT_NEAR(q[2], z, 1e-15);
  // The rotation about z by h ω = 0.03 rad.
  EXPECT_NEAR(q[3], std::cos(0.015), 1e-14);
  EXPECT_NEAR(q[6], std::sin(0.015), 1e-14);
  for (int i = 7; i < m->nq; ++i) EXPECT_EQ(q[i], -1.0) << "qpos " << i;
}

}  // namespace
}  // namespace mjcenic
