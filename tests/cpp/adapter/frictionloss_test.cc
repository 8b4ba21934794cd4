// Joint friction loss as regularized convex dry friction (docs/how-it-works.md,
// "Supported MJCF features": row potential ℓ = h F (sqrt(v² + v_s²) − v_s)).
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

// A disc on a hinge, no gravity, friction loss F = 2 N·m, driven by a motor.
constexpr const char* kXml = R"(
<mujoco>
  <option gravity="0 0 0" timestep="0.001"/>
  <worldbody>
    <body>
      <joint name="hinge" type="hinge" axis="0 0 1" frictionloss="2" armature="0.05"/>
      <geom type="cylinder" size="0.2 0.02" mass="2" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="hinge" gear="1" ctrlrange="-100 100"/></actuator>
</mujoco>)";

ModelPtr Load() {
  std::string err;
  ModelPtr m = test_util::ModelFromXml(kXml, &err);
  EXPECT_NE(m, nullptr) << err;
  return m;
}

double Inertia(const mjModel* m) {
  // I about z of a solid cylinder (m r²/2) plus armature.
  return m->body_inertia[3 * 1 + 2] + m->dof_armature[0];
}

TEST(FrictionLoss, BelowThresholdTurnsNoFasterThanRegularization) {
  ModelPtr m = Load();
  ASSERT_NE(m, nullptr);
  for (double rho : {0.5, 0.9}) {
    DataPtr d(mj_makeData(m.get()));
    d->ctrl[0] = rho * 2.0;  // τ = ρ F
    StepperOptions o;
    o.mode = Mode::kFixed;
    o.contact.frictionloss_stiction = true;  // regularize with the global v_s
    auto s = Stepper::Create(m.get(), o).value();
    double vmax = 0;
    for (int i = 0; i < 2000; ++i) {
      ASSERT_TRUE(s->Step(d.get()).ok());
      vmax = std::max(vmax, std::abs(d->qvel[0]));
    }
    // Steady creep of the soft norm: v = v_s ρ / sqrt(1 − ρ²).
    const double vs = o.icf.stiction_tolerance;
    const double creep = vs * rho / std::sqrt(1 - rho * rho);
    std::printf("[ frictionloss ] rho %.2f: v %.6g, predicted creep %.6g, max %.6g\n", rho,
                d->qvel[0], creep, vmax);
    EXPECT_NEAR(d->qvel[0], creep, 0.02 * creep);
    EXPECT_LE(vmax, creep * 1.02);
  }
}

TEST(FrictionLoss, DefaultRegularizationMatchesMujocoSoftness) {
  // MuJoCo's friction-loss row is soft: below saturation it acts as damping
  // with slope B d0 / ((1 - d0) A). The default mapping reproduces the creep
  // speed of mj_step under a sub-threshold torque.
  ModelPtr m = Load();
  ASSERT_NE(m, nullptr);
  DataPtr d(mj_makeData(m.get())), e(mj_makeData(m.get()));
  d->ctrl[0] = e->ctrl[0] = 1.0;  // half of F
  StepperOptions o;
  o.mode = Mode::kFixed;
  auto s = Stepper::Create(m.get(), o).value();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(s->Step(d.get()).ok());
    mj_step(m.get(), e.get());
  }
  std::printf("[ frictionloss ] creep mjcenic %.6g, mj_step %.6g\n", d->qvel[0], e->qvel[0]);
  EXPECT_GT(e->qvel[0], 0);
  // Same regime (linear damping for MuJoCo, near-linear soft norm for us):
  // within 20 % (the soft norm bends slightly at ρ = 0.5).
  EXPECT_NEAR(d->qvel[0], e->qvel[0], 0.2 * e->qvel[0]);
}

TEST(FrictionLoss, AboveThresholdAcceleratesAtTorqueMinusFriction) {
  ModelPtr m = Load();
  ASSERT_NE(m, nullptr);
  const double I = Inertia(m.get());
  for (Mode mode : {Mode::kFixed, Mode::kCenic}) {
    DataPtr d(mj_makeData(m.get()));
    d->ctrl[0] = 5.0;  // τ = 5 > F = 2
    StepperOptions o;
    o.mode = mode;
    o.accuracy = 1e-4;
    auto s = Stepper::Create(m.get(), o).value();
    ASSERT_TRUE(s->AdvanceTo(d.get(), 0.2).ok());
    const double v0 = d->qvel[0];
    ASSERT_TRUE(s->AdvanceTo(d.get(), 0.7).ok());
    const double a = (d->qvel[0] - v0) / 0.5;
    const double expected = (5.0 - 2.0) / I;
    std::printf("[ frictionloss ] %s: a %.6g, (tau - F)/I %.6g\n", ToString(mode), a, expected);
    EXPECT_NEAR(a, expected, 0.05 * expected);
    // And the other direction.
    DataPtr e(mj_makeData(m.get()));
    e->ctrl[0] = -5.0;
    auto s2 = Stepper::Create(m.get(), o).value();
    ASSERT_TRUE(s2->AdvanceTo(e.get(), 0.5).ok());
    EXPECT_NEAR(e->qvel[0] / 0.5, -expected, 0.05 * expected);
  }
}

}  // namespace
}  // namespace mjcenic
