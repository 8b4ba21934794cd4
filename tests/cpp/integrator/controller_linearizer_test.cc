// ControllerLinearizer (adapter/controller_linearizer.h) on a linear PD
// controller: the finite-difference gains are the controller's own gains, and
// the user's inputs and state come back bit for bit.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_stages.h"
#include "mjcenic/adapter/controller_linearizer.h"
#include "test_util.h"

namespace mjcenic {
namespace {

// A hinge and a slide on separate bodies; a motor on the hinge.
constexpr char kXml[] = R"(
<mujoco>
  <worldbody>
    <body><joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1"/></body>
    <body pos="1 0 0"><joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="box" size="0.05 0.05 0.05" mass="2"/></body>
  </worldbody>
  <actuator><motor joint="hinge" gear="1"/></actuator>
</mujoco>)";

constexpr double kKp[2] = {40.0, 250.0}, kKd[2] = {3.0, 11.0};
constexpr double kKc = 5.0;  // extra position gain on the hinge, through ctrl

// τ = −kp q − kd v (qfrc_applied) and ctrl = −kc q_hinge (the motor).
bool PdController(const mjModel* m, mjData* d) {
  for (int i = 0; i < m->nv; ++i) d->qfrc_applied[i] = -kKp[i] * d->qpos[i] - kKd[i] * d->qvel[i];
  d->ctrl[0] = -kKc * d->qpos[0];
  return true;
}

TEST(ControllerLinearizer, PdGainsAreRecoveredAndInputsRestored) {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(kXml, &err);
  ASSERT_NE(m, nullptr) << err;
  ASSERT_EQ(m->nv, 2);
  test_util::DataPtr d(mj_makeData(m.get()));
  const std::vector<double> q0 = {0.3, -0.02}, v0 = {-1.5, 0.4};
  std::vector<double> act0;  // no activations
  // The user's inputs, to be restored exactly.
  d->ctrl[0] = 0.125;
  d->qfrc_applied[0] = -0.75;
  d->qfrc_applied[1] = 3.5;
  const double ctrl_user = d->ctrl[0];
  const std::vector<double> qfrc_user(d->qfrc_applied, d->qfrc_applied + 2);

  adapter::MujocoStages stages(m.get(), 0.0);
  long calls = 0;
  ControllerLinearizer lin(m.get(), &stages, &calls);
  lin.Set(PdController);
  ASSERT_TRUE(lin.Linearize(d.get(), q0.data(), v0.data(), act0.data()));
  EXPECT_EQ(calls, 1 + 2 * m->nv);  // τ(x0) and two differences per dof

  const adapter::DofFeedback& fb = lin.feedback();
  const double kq[2] = {kKp[0] + kKc, kKp[1]}, kv[2] = {kKd[0], kKd[1]};
  for (int i = 0; i < 2; ++i) {
    // Forward differences of a linear law: only rounding, ~ε|τ|/√ε.
    EXPECT_NEAR(fb.kq[i], kq[i], 1e-6 * kq[i]) << "dof " << i;
    EXPECT_NEAR(fb.kv[i], kv[i], 1e-6 * kv[i]) << "dof " << i;
    EXPECT_NEAR(fb.tau[i], -kq[i] * q0[i] - kv[i] * v0[i], 1e-12) << "dof " << i;
  }
  // The state and the user's inputs are back, bit for bit.
  EXPECT_EQ(std::memcmp(d->qpos, q0.data(), 2 * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(d->qvel, v0.data(), 2 * sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(&d->ctrl[0], &ctrl_user, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(d->qfrc_applied, qfrc_user.data(), 2 * sizeof(double)), 0);

  // τ at another state keeps the gains and restores the inputs too.
  const std::vector<double> q1 = {-0.1, 0.05}, v1 = {0.2, -0.3};
  ASSERT_TRUE(lin.ForceAt(d.get(), q1.data(), v1.data(), act0.data()));
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(fb.tau[i], -kq[i] * q1[i] - kv[i] * v1[i], 1e-12) << "dof " << i;
    EXPECT_NEAR(fb.kq[i], kq[i], 1e-6 * kq[i]) << "dof " << i;
  }
  EXPECT_EQ(std::memcmp(&d->ctrl[0], &ctrl_user, sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(d->qfrc_applied, qfrc_user.data(), 2 * sizeof(double)), 0);
  EXPECT_FALSE(lin.failed());
}

TEST(ControllerLinearizer, AFailingControllerIsReportedUntilCleared) {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(kXml, &err);
  ASSERT_NE(m, nullptr) << err;
  test_util::DataPtr d(mj_makeData(m.get()));
  adapter::MujocoStages stages(m.get(), 0.0);
  long calls = 0;
  ControllerLinearizer lin(m.get(), &stages, &calls);
  bool fail = true;
  lin.Set([&](const mjModel*, mjData*) { return !fail; });
  EXPECT_FALSE(lin.Call(d.get()));
  fail = false;
  EXPECT_FALSE(lin.Call(d.get()));  // sticky within one attempt
  lin.ClearFailure();
  EXPECT_TRUE(lin.Call(d.get()));
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace mjcenic
