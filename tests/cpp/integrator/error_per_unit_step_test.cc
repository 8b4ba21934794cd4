// error_per_unit_step = T (docs/benchmarks.md, "What each ingredient buys"): a step of h
// may make accuracy·h/T of error, so the steps over T add up to the accuracy.
// Free fall, where step doubling's error estimate is known exactly
// (g h²/4 / L, tests/cpp/integrator/error_estimate_test.cc): the accepted
// steps obey the scaled bound and their number grows as 1/accuracy (per step:
// 1/√accuracy).
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelFromXml;
using test_util::ModelPtr;

constexpr char kFreeFall[] = R"(
<mujoco><option gravity="0 0 -9.81" timestep="0.01"/>
  <worldbody><body pos="0 0 100"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  </worldbody></mujoco>)";

struct FallRun {
  long steps;
  double worst_ratio;  // max over steps of error / (accuracy·h/T) (or / accuracy)
  double L;            // the norm's length scale
};

FallRun Fall(double accuracy, double T) {
  std::string error;
  ModelPtr m = ModelFromXml(kFreeFall, &error);
  EXPECT_TRUE(m) << error;
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.accuracy = accuracy;
  o.error_per_unit_step = T;
  o.penetration_tolerance = 0;
  auto s = Stepper::Create(m.get(), o).value();
  FallRun r{0, 0, s->length_scale()};
  while (d->time < 1.0) {
    EXPECT_TRUE(s->StepOnce(d.get()).ok());
    const StepperStats& st = s->stats();
    const double allowed = T > 0 ? accuracy * st.last_h / T : accuracy;
    r.worst_ratio = std::max(r.worst_ratio, st.last_error / allowed);
  }
  r.steps = s->stats().steps;
  return r;
}

TEST(ErrorPerUnitStep, StepsScaleAsOneOverAccuracy) {
  for (double T : {0.0, 0.1}) {
    const FallRun a = Fall(1e-3, T), b = Fall(1e-4, T);
    EXPECT_LE(a.worst_ratio, 1.0) << "T = " << T;
    EXPECT_LE(b.worst_ratio, 1.0) << "T = " << T;
    const double ratio = static_cast<double>(b.steps) / a.steps;
    if (T > 0) {
      EXPECT_NEAR(ratio, 10, 1.5);  // h ∝ accuracy
    } else {
      EXPECT_NEAR(ratio, std::sqrt(10.0), 0.5);  // h ∝ √accuracy
    }
  }
  // Free fall's doubling error g h²/(4L) = accuracy·h/T at h = 4 L accuracy/(g T):
  // the steps are at most that and, the controller aiming at 0.9 of it, not
  // much smaller (the first steps ramp up from the initial step).
  const FallRun a = Fall(1e-3, 0.1);
  const double h_max = 4 * a.L * 1e-3 / (9.81 * 0.1);
  EXPECT_GE(a.steps, 1.0 / h_max);
  EXPECT_LE(a.steps, 1.3 / h_max);
}

// A hinge that starts 0.3 rad below its limit, its position servo's target
// clamped to the limit by ctrlrange: in the first instants the servo and the
// limit (driven back at a velocity set by its solref, cenic-math §3.5) kick
// the light link to several rad/s within a time much shorter than any step.
// That velocity jump leaves a position error ≈ c h Δv that the per-unit-step
// bound accuracy·h/T admits at no h (cenic-math §11.12), so the step holding
// it is judged by the per-step bound. Without that the first step shrank to
// 4e-8 s and the jump was spread over hundreds of steps (371 in 0.1 s).
constexpr char kServoIntoLimit[] = R"(
<mujoco><option gravity="0 0 0" timestep="0.002"/>
  <worldbody><body><joint name="j" type="hinge" axis="0 0 1" range="0.3 1" damping="0.1"/>
    <geom type="capsule" fromto="0 0 0 0.05 0 0" size="0.01" mass="0.02"/></body>
  </worldbody>
  <actuator><position joint="j" kp="1" ctrlrange="0.3 1"/></actuator></mujoco>)";

TEST(ErrorPerUnitStep, VelocityJumpIsHeldToThePerStepBound) {
  std::string error;
  ModelPtr m = ModelFromXml(kServoIntoLimit, &error);
  ASSERT_TRUE(m) << error;
  auto run = [&](StepperOptions o, double* q, long* steps, double* h1, double* v1, double* e1) {
    DataPtr d(mj_makeData(m.get()));
    mj_forward(m.get(), d.get());
    auto s = Stepper::Create(m.get(), o).value();
    ASSERT_TRUE(s->StepOnce(d.get()).ok());
    *h1 = s->stats().last_h;
    *v1 = d->qvel[0];
    *e1 = s->stats().last_error;
    while (d->time < 0.1) ASSERT_TRUE(s->StepOnce(d.get()).ok());
    *q = d->qpos[0];
    *steps = s->stats().steps;
  };
  StepperOptions o;
  o.accuracy = 1e-3;
  o.error_per_unit_step = 0.3;
  double q, h1, v1, e1;
  long steps;
  run(o, &q, &steps, &h1, &v1, &e1);
  StepperOptions fine;  // reference: fixed steps of 1e-5 s
  fine.mode = Mode::kFixed;
  fine.max_step = 1e-5;
  double q_ref, h_ref, v_ref, e_ref;
  long n_ref;
  run(fine, &q_ref, &n_ref, &h_ref, &v_ref, &e_ref);
  std::printf("first step h = %.3g s, error %.3g, v = %.3g rad/s; 0.1 s: %ld steps, "
              "q = %.6f (fixed 1e-5 s: %.6f)\n", h1, e1, v1, steps, q, q_ref);
  EXPECT_GT(v1, 1.0);            // the jump is in the first step
  EXPECT_GT(h1, 1e-5);           // not crawled through
  EXPECT_LE(e1, o.accuracy);     // the per-step bound
  EXPECT_LT(steps, 200);
  EXPECT_NEAR(q, q_ref, 1e-3);   // and the trajectory is still right
}

TEST(ErrorPerUnitStep, NegativeIsRefused) {
  std::string error;
  ModelPtr m = ModelFromXml(kFreeFall, &error);
  StepperOptions o;
  o.error_per_unit_step = -1;
  EXPECT_FALSE(Stepper::Create(m.get(), o).ok());
}

}  // namespace
}  // namespace mjcenic
