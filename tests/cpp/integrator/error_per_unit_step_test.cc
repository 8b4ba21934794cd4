// error_per_unit_step = T (README, "What each ingredient buys"): a step of h
// may make accuracy·h/T of error, so the steps over T add up to the accuracy.
// Free fall, where step doubling's error estimate is known exactly
// (g h²/4 / L, tests/cpp/integrator/error_estimate_test.cc): the accepted
// steps obey the scaled bound and their number grows as 1/accuracy (per step:
// 1/√accuracy).
#include <cmath>
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

TEST(ErrorPerUnitStep, NegativeIsRefused) {
  std::string error;
  ModelPtr m = ModelFromXml(kFreeFall, &error);
  StepperOptions o;
  o.error_per_unit_step = -1;
  EXPECT_FALSE(Stepper::Create(m.get(), o).ok());
}

}  // namespace
}  // namespace mjcenic
