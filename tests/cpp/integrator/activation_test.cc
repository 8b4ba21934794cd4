// Actuator activation dynamics under error control: act is
// advanced with MuJoCo's rule in every (half) step and is part of the error
// norm, so a stiff activation filter limits the step where it changes the
// force, and an exact filter does not.
#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/error_norm.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

// A free-spinning disk (I = 1e-2 kg m², no gravity) driven by one actuator
// with first-order activation dynamics of time constant tau = 2 ms:
//   act' = (ctrl − act)/tau,  torque = act.
ModelPtr FilterModel(const char* dyntype) {
  const std::string xml = std::string(R"(
<mujoco>
  <option gravity="0 0 0" timestep="0.01"/>
  <worldbody>
    <body>
      <joint name="spin" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
      <geom type="sphere" size="0.1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>
    <general name="valve" joint="spin" dyntype=")") + dyntype + R"(" dynprm="0.002"
             gainprm="1" ctrllimited="true" ctrlrange="0 1"/>
  </actuator>
</mujoco>)";
  std::string err;
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  EXPECT_NE(m, nullptr) << err;
  return m;
}

constexpr double kTau = 0.002, kInertia = 0.01;

// Exact solution for act(0) = 0, ctrl = 1: act = 1 − e^{−t/τ},
// θ = (t²/2 − τ t + τ² (1 − e^{−t/τ})) / I.
double ExactAct(double t) { return 1 - std::exp(-t / kTau); }
double ExactAngle(double t) {
  return (0.5 * t * t - kTau * t + kTau * kTau * (1 - std::exp(-t / kTau))) / kInertia;
}

struct FilterRun {
  double max_act = 0, act_error = 0, angle_error = 0;
  double h_min = 0;
  long steps = 0, rejected = 0;
};

// Advances to 0.1 s with error control, landing on τ/2, τ, 2τ, 3τ and 5τ on
// the way to sample act (advance_to ends exactly on each sample).
FilterRun Drive(const char* dyntype, double accuracy, bool dense_output = false) {
  ModelPtr m = FilterModel(dyntype);
  DataPtr d(mj_makeData(m.get()));
  d->ctrl[0] = 1;
  StepperOptions o;
  o.mode = Mode::kCenic;
  o.accuracy = accuracy;
  o.max_step = 0.05;
  o.dense_output = dense_output;
  auto s = Stepper::Create(m.get(), o).value();
  FilterRun r;
  for (double t : {0.5 * kTau, kTau, 2 * kTau, 3 * kTau, 5 * kTau, 0.1}) {
    EXPECT_TRUE(s->AdvanceTo(d.get(), t).ok());
    r.max_act = std::max(r.max_act, d->act[0]);
    r.act_error = std::max(r.act_error, std::abs(d->act[0] - ExactAct(t)));
  }
  r.angle_error = std::abs(d->qpos[0] - ExactAngle(0.1));
  r.steps = s->stats().steps;
  r.rejected = s->stats().rejected_steps;
  r.h_min = s->stats().h_min;
  return r;
}

TEST(ActivationErrorControl, StiffFilterIsResolvedAndConverges) {
  // Explicit Euler on act' = (1 − act)/τ overshoots for h > τ and diverges for
  // h > 2τ; with act in the error norm the controller keeps h small while act
  // moves and the activation follows the exponential.
  const FilterRun loose = Drive("filter", 1e-2), tight = Drive("filter", 1e-4);
  std::printf("filter: acc 1e-2: act err %.3g, max act %.6f, angle err %.3g, %ld steps, "
              "h_min %.3g\n", loose.act_error, loose.max_act, loose.angle_error, loose.steps,
              loose.h_min);
  std::printf("filter: acc 1e-4: act err %.3g, max act %.6f, angle err %.3g, %ld steps\n",
              tight.act_error, tight.max_act, tight.angle_error, tight.steps);
  EXPECT_LE(loose.max_act, 1 + 1e-9);  // no overshoot past ctrl
  EXPECT_LE(tight.max_act, 1 + 1e-9);
  EXPECT_LT(loose.act_error, 0.1);
  EXPECT_LT(tight.act_error, 0.3 * loose.act_error);  // first order: ∝ √accuracy
  EXPECT_LT(tight.angle_error, loose.angle_error);
  EXPECT_LT(tight.angle_error, 1e-2 * ExactAngle(0.1));
  EXPECT_LT(loose.h_min, kTau);  // the initial step (5 ms) was cut to resolve act
}

TEST(ActivationErrorControl, ExactFilterDoesNotLimitTheStep) {
  // filterexact integrates act exactly for any h: full and half steps agree,
  // so act adds nothing to the error and the steps stay long.
  const FilterRun exact = Drive("filterexact", 1e-3), euler = Drive("filter", 1e-3);
  std::printf("filterexact: %ld steps, act err %.3g; filter: %ld steps, act err %.3g\n",
              exact.steps, exact.act_error, euler.steps, euler.act_error);
  EXPECT_LT(exact.act_error, 1e-12);
  EXPECT_LT(exact.steps, euler.steps);
}

TEST(ActivationErrorControl, DenseOutputInterpolatesTheExactFilterExactly) {
  // With dense output the calls read act inside accepted steps: MuJoCo's rule
  // from the step's start over the partial step plus the linear correction
  // (cenic-math §11.5) is exact for filterexact, whose steps are exact too.
  const FilterRun dense = Drive("filterexact", 1e-3, true);
  const FilterRun capped = Drive("filterexact", 1e-3, false);
  std::printf("filterexact, dense output: %ld steps, act err %.3g (landing: %ld steps)\n",
              dense.steps, dense.act_error, capped.steps);
  EXPECT_LT(dense.act_error, 1e-12);
  EXPECT_LE(dense.steps, capped.steps);
  // Euler dynamics: the interpolant is the chord, first order like the step.
  const FilterRun euler = Drive("filter", 1e-3, true);
  EXPECT_LT(euler.act_error, 0.1);
}

TEST(ActivationErrorControl, NormWeightsActivationByItsRange) {
  ModelPtr m = FilterModel("filter");
  m->actuator_actlimited[0] = 1;
  m->actuator_actrange[0] = 0;
  m->actuator_actrange[1] = 2;
  ErrorNorm norm(m.get(), ErrorNormKind::kWeighted, 1.0);
  const double q[1] = {0}, v[1] = {0}, act_a[1] = {0.1}, act_b[1] = {0};
  int worst = 0;
  EXPECT_DOUBLE_EQ(norm.Compute(m.get(), q, v, act_a, q, v, act_b, &worst), 0.05);
  EXPECT_EQ(norm.WorstName(m.get(), worst), "act 0 (actuator 'valve')");
  // Without actrange the control range (span 1) is the scale.
  ErrorNorm by_ctrl(FilterModel("filter").get(), ErrorNormKind::kDrake, 1.0);
  EXPECT_DOUBLE_EQ(by_ctrl.Compute(m.get(), q, v, act_a, q, v, act_b, &worst), 0.1);
  const double q2[1] = {0.5};
  EXPECT_DOUBLE_EQ(by_ctrl.Compute(m.get(), q2, v, act_a, q, v, act_b, &worst), 0.5);
  EXPECT_EQ(by_ctrl.WorstName(m.get(), worst), "qpos 0 (joint 'spin')");
}

}  // namespace
}  // namespace mjcenic
