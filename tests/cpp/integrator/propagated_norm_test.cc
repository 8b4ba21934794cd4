// The propagated error norms (error_norm=propagated and propagated_modes,
// cenic-math §11.11): each velocity error weighted by the position error it
// will cause under the implicit step's own damping, capped by the horizon τ.
// Checked against analytic weights and against the drift a velocity
// perturbation actually causes in fixed-step runs.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/error_norm.h"
#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelFromXml;
using test_util::ModelPtr;

// Three independent slide dofs, no gravity, no contact:
//   0 "free":   mass 2, nothing acts on it (a free dof: H = M);
//   1 "damped": mass 1, joint damping c = 20 N·s/m (decay rate λ = c/M = 20/s);
//   2 "servo":  mass 1, position servo kp = 100, kv = 10 (H = M + h kv + h² kp).
constexpr char kThreeDofs[] = R"(
<mujoco><option gravity="0 0 0" timestep="0.001"/>
  <worldbody>
    <body><joint name="free" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="2" contype="0" conaffinity="0"/></body>
    <body pos="0 1 0"><joint name="damped" type="slide" axis="1 0 0" damping="20"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
    <body pos="0 2 0"><joint name="servo" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <actuator><position joint="servo" kp="100" kv="10"/></actuator>
</mujoco>)";

// Two unit masses on slide joints tied by a joint equality q0 = q1: their
// common motion is free, their relative motion is held near-rigidly.
constexpr char kTied[] = R"(
<mujoco><option gravity="0 0 0" timestep="0.001"/>
  <worldbody>
    <body><joint name="a" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
    <body pos="0 1 0"><joint name="b" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <equality><joint joint1="a" joint2="b"/></equality>
</mujoco>)";

ModelPtr Load(const char* xml) { return test_util::LoadXml(xml); }

std::unique_ptr<Stepper> FixedH(const mjModel* m, ErrorNormKind kind, double h, double tau) {
  StepperOptions o;
  o.error_norm = kind;
  o.velocity_horizon = tau;
  o.error_control = false;  // every step of exactly h
  o.max_step = h;
  return Stepper::Create(m, o).value();
}

TEST(PropagatedNorm, WeightsOfAFreeADampedAndAServoedDof) {
  ModelPtr m = Load(kThreeDofs);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  const double h = 1e-3, tau = 1.0;
  auto s = FixedH(m.get(), ErrorNormKind::kPropagated, h, tau);
  ASSERT_TRUE(s->StepOnce(d.get()).ok());
  const ErrorNorm& n = s->error_norm();
  // Free dof: the velocity error drifts for the whole horizon.
  EXPECT_NEAR(n.velocity_weight(0), tau, 1e-12);
  // Damped dof: w = h H/(H − M + h H/τ) with H = M + h c (M includes no armature here).
  const double M1 = 1, c = 20, H1 = M1 + h * c;
  EXPECT_NEAR(n.velocity_weight(1), h * H1 / (H1 - M1 + h / tau * H1), 1e-9);
  // ... which is the decay time 1/λ = M/c = 0.05 s within a few per cent (the
  // horizon shortens it by ~3 %, the sum from the current step adds h).
  EXPECT_NEAR(n.velocity_weight(1), M1 / c, 0.05 * M1 / c);
  // Servo: the diagonal of H includes the gain constraint's h kv + h² kp.
  const double M2 = 1, H2 = M2 + h * 10 + h * h * 100;
  EXPECT_NEAR(n.velocity_weight(2), h * H2 / (H2 - M2 + h / tau * H2), 1e-6);
  // The formula's limits on their own.
  EXPECT_DOUBLE_EQ(ErrorNorm::PropagationWeight(h, 3.0, 3.0, 0.1), 0.1);
  EXPECT_NEAR(ErrorNorm::PropagationWeight(h, 1 + h * 50, 1, 1e9), 1.0 / 50 + h, 1e-12);
}

// Position of dof `dof` after T of fixed steps h, started from rest with
// velocity v0 in that dof.
double DriftAfter(const mjModel* m, int dof, double v0, double h, double T) {
  DataPtr d(mj_makeData(m));
  d->qvel[dof] = v0;
  mj_forward(m, d.get());
  auto s = FixedH(m, ErrorNormKind::kWeighted, h, 1.0);
  const int n = static_cast<int>(std::lround(T / h));
  for (int k = 0; k < n; ++k) EXPECT_TRUE(s->StepOnce(d.get()).ok());
  return d->qpos[dof];
}

TEST(PropagatedNorm, DampedWeightIsTheDriftAVelocityErrorCauses) {
  // Independent truth: start the damped dof with δv and let the implicit
  // steps run out (T = 2 s ≫ 1/λ): the position it ends at is the drift.
  ModelPtr m = Load(kThreeDofs);
  const double h = 1e-3, dv = 0.01;
  const double drift = DriftAfter(m.get(), 1, dv, h, 2.0);
  EXPECT_NEAR(drift, dv * 0.05, 0.02 * dv * 0.05);  // ≈ δv/λ
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  for (ErrorNormKind kind : {ErrorNormKind::kPropagated, ErrorNormKind::kPropagatedModes}) {
    auto s = FixedH(m.get(), kind, h, 1e6);  // horizon out of the way
    ASSERT_TRUE(s->StepOnce(d.get()).ok());
    if (kind == ErrorNormKind::kPropagated) {
      EXPECT_NEAR(s->error_norm().velocity_weight(1) * dv, drift, 0.05 * drift);
    } else {
      const double va[3] = {0, dv, 0}, vb[3] = {0, 0, 0};
      s->PropagateDrift(va, vb);
      EXPECT_NEAR(s->error_norm().drift(1), drift, 0.05 * drift);
      EXPECT_NEAR(s->error_norm().drift(0), 0, 1e-15);
    }
  }
}

TEST(PropagatedNorm, ModesSeeTheFreeCommonMotionOfTiedBodies) {
  // The equality makes both diagonal entries of H stiff, but a common δv does
  // not stretch it: it drifts for the whole horizon. The diagonal weights
  // miss that; the propagated modes do not.
  ModelPtr m = Load(kTied);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  const double h = 1e-3, tau = 0.5, dv = 1e-3;
  const double va[2] = {dv, dv}, vb[2] = {0, 0};
  auto modes = FixedH(m.get(), ErrorNormKind::kPropagatedModes, h, tau);
  ASSERT_TRUE(modes->StepOnce(d.get()).ok());
  modes->PropagateDrift(va, vb);
  // p = 2 h_s δv + τ δv: the current and next step, then the capped free
  // tail; h_s = h/2 is the step of the last solve (doubling's second half).
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR(modes->error_norm().drift(i), (tau + h) * dv, 1e-6 * tau * dv);
  // Independent truth: the tied pair started with a common δv moves by δv·T.
  const double T = 0.2;
  DataPtr e(mj_makeData(m.get()));
  e->qvel[0] = e->qvel[1] = dv;
  mj_forward(m.get(), e.get());
  auto fixed = FixedH(m.get(), ErrorNormKind::kWeighted, h, 1.0);
  for (int k = 0; k < 200; ++k) ASSERT_TRUE(fixed->StepOnce(e.get()).ok());
  EXPECT_NEAR(e->qpos[0], dv * T, 1e-3 * dv * T);
  // The diagonal version underestimates this drift by orders of magnitude.
  auto diag = FixedH(m.get(), ErrorNormKind::kPropagated, h, tau);
  DataPtr f(mj_makeData(m.get()));
  mj_forward(m.get(), f.get());
  ASSERT_TRUE(diag->StepOnce(f.get()).ok());
  EXPECT_LT(diag->error_norm().velocity_weight(0), 0.1 * tau);
}

TEST(PropagatedNorm, ReducesToThePositionNormWhenVelocitiesAgree) {
  ModelPtr m = Load(kThreeDofs);
  const double qa[3] = {0.01, -0.002, 0.003}, qb[3] = {0, 0, 0};
  const double v[3] = {0.5, -1, 2}, dv[3] = {0.5, -1.001, 2};
  const double act[1] = {0};
  int worst;
  ErrorNorm weighted(m.get(), ErrorNormKind::kWeighted, 0.1);
  const double pos = weighted.Compute(m.get(), qa, v, act, qb, v, act, &worst);
  EXPECT_NEAR(pos, 0.1, 1e-12);  // 0.01 m / L
  for (ErrorNormKind kind : {ErrorNormKind::kPropagated, ErrorNormKind::kPropagatedModes}) {
    ErrorNorm n(m.get(), kind, 0.1, 1.0);
    EXPECT_EQ(n.Compute(m.get(), qa, v, act, qb, v, act, &worst), pos) << ToString(kind);
    // A velocity error of 1e-3 m/s drifts τ·1e-3 = 1 mm in a free dof (before
    // any step set the weights): 0.01 of L, below the position part.
    EXPECT_EQ(n.Compute(m.get(), qa, dv, act, qb, v, act, &worst), pos) << ToString(kind);
    // Without the position difference it is the drift: 1e-3 · 1 s / 0.1 m.
    EXPECT_NEAR(n.Compute(m.get(), qb, dv, act, qb, v, act, &worst), 1e-2, 1e-12)
        << ToString(kind);
  }
}

TEST(PropagatedNorm, BadHorizonIsRefused) {
  ModelPtr m = Load(kThreeDofs);
  for (double tau : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    StepperOptions o;
    o.error_norm = ErrorNormKind::kPropagated;
    o.velocity_horizon = tau;
    EXPECT_FALSE(Stepper::Create(m.get(), o).ok()) << tau;
  }
}

}  // namespace
}  // namespace mjcenic
