// The embedded error estimate (error_estimate=embedded, cenic-math §11.9)
// against the true local error of the step it accepts, on cases whose exact
// solution is known, side by side with step doubling.
#include <cmath>
#include <cstdio>
#include <memory>
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

// A free sphere in free fall (no floor): constant acceleration −g.
constexpr char kFreeFall[] = R"(
<mujoco><option gravity="0 0 -9.81" timestep="0.01"/>
  <worldbody><body pos="0 0 1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  </worldbody></mujoco>)";

// A unit mass on a slide joint with joint stiffness k = ω² (ω = 10 rad/s),
// no gravity: x'' = −ω² x.
constexpr char kOscillator[] = R"(
<mujoco><option gravity="0 0 0" timestep="0.001"/>
  <worldbody><body><joint name="x" type="slide" axis="1 0 0" stiffness="100"/>
    <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody></mujoco>)";

ModelPtr Load(const char* xml) { return test_util::LoadXml(xml); }

// One accepted step from rest in free fall: the accepted z and the estimate.
struct FallStep {
  double h, z_end, z_exact, estimate, L;
  long solves, geometry_queries, attempts;
};
FallStep FallOnce(ErrorEstimate estimate) {
  ModelPtr m = Load(kFreeFall);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.error_estimate = estimate;
  o.initial_step = 0.01;
  o.accuracy = 1;  // accept the first attempt
  auto s = Stepper::Create(m.get(), o).value();
  const double z0 = d->qpos[2];
  EXPECT_TRUE(s->StepOnce(d.get()).ok());
  const StepperStats& st = s->stats();
  const double h = st.last_h;
  return {h, d->qpos[2], z0 - 0.5 * 9.81 * h * h, st.last_error, s->length_scale(), st.solves,
          st.geometry_queries, st.steps + st.rejected_steps};
}

TEST(ErrorEstimate, EmbeddedIsTheExactLocalErrorInFreeFall) {
  // Implicit Euler: z = z0 − g h² against the exact z0 − g h²/2; the
  // trapezoidal companion is exact for constant acceleration, so the
  // estimate is the true error g h²/2 (divided by L: a translation).
  const FallStep f = FallOnce(ErrorEstimate::kEmbedded);
  EXPECT_DOUBLE_EQ(f.h, 0.01);
  const double true_error = std::abs(f.z_end - f.z_exact) / f.L;
  EXPECT_NEAR(true_error, 0.5 * 9.81 * f.h * f.h / f.L, 1e-9 * true_error);
  EXPECT_NEAR(f.estimate, true_error, 1e-9 * true_error);
  // One convex solve per attempt and no geometry query beyond the start's.
  EXPECT_EQ(f.solves, f.attempts);
  EXPECT_LE(f.geometry_queries, 2 * f.attempts);
}

TEST(ErrorEstimate, DoublingEstimatesTheErrorOfItsHalfSteps) {
  // Two half steps: z = z0 − 3 g h²/4, true error g h²/4, and the difference
  // to the full step (z0 − g h²) is g h²/4 too.
  const FallStep f = FallOnce(ErrorEstimate::kDoubling);
  const double true_error = std::abs(f.z_end - f.z_exact) / f.L;
  EXPECT_NEAR(true_error, 0.25 * 9.81 * f.h * f.h / f.L, 1e-9 * true_error);
  EXPECT_NEAR(f.estimate, true_error, 1e-9 * true_error);
  EXPECT_EQ(f.solves, 3 * f.attempts);
}

// Ratio estimate / true local error along the oscillator's trajectory, for
// every step after the first two (the embedded velocity estimate needs the
// previous step's acceleration), at fixed h with the full-state norm.
void OscillatorRatios(ErrorEstimate estimate, double h, double* lo, double* hi) {
  ModelPtr m = Load(kOscillator);
  DataPtr d(mj_makeData(m.get()));
  d->qpos[0] = 0.1;  // released from 0.1 m
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.error_estimate = estimate;
  o.error_norm = ErrorNormKind::kFullState;
  o.error_control = false;
  o.max_step = h;
  auto s = Stepper::Create(m.get(), o).value();
  ASSERT_DOUBLE_EQ(s->length_scale(), 1.0);  // no rotational dof
  const double w = 10;
  *lo = 1e300;
  *hi = 0;
  for (int k = 0; k < 60; ++k) {  // about one period
    const double x = d->qpos[0], v = d->qvel[0];
    ASSERT_TRUE(s->StepOnce(d.get()).ok());
    const double c = std::cos(w * h), sn = std::sin(w * h);
    const double x_exact = x * c + v / w * sn, v_exact = -x * w * sn + v * c;
    const double true_error = std::max(std::abs(d->qpos[0] - x_exact), std::abs(d->qvel[0] - v_exact));
    if (k < 2 || true_error < 1e-3 * 0.5 * h * h * w * w * 0.1) continue;
    const double ratio = s->stats().last_error / true_error;
    *lo = std::min(*lo, ratio);
    *hi = std::max(*hi, ratio);
  }
}

TEST(ErrorEstimate, EmbeddedTracksTheTrueLocalErrorOfAnOscillator) {
  // Both estimates are asymptotically exact for the step they accept:
  // estimate / true → 1 as ωh → 0, with an O(ωh) deviation.
  for (double h : {1e-2, 1e-3}) {
    double lo, hi;
    OscillatorRatios(ErrorEstimate::kEmbedded, h, &lo, &hi);
    // Measured: 0.69..1.51 at ωh = 0.1, 0.94..1.06 at ωh = 0.01 (≈ 5–6 ωh).
    const double tol = 8 * 10 * h;  // O(ωh), ω = 10
    EXPECT_GT(lo, 1 - tol) << "h = " << h;
    EXPECT_LT(hi, 1 + tol) << "h = " << h;
    OscillatorRatios(ErrorEstimate::kDoubling, h, &lo, &hi);
    EXPECT_GT(lo, 1 - tol) << "doubling, h = " << h;
    EXPECT_LT(hi, 1 + tol) << "doubling, h = " << h;
  }
}

TEST(ErrorEstimate, OptionsAreCheckedAndCombined) {
  ModelPtr m = Load(kFreeFall);
  StepperOptions o;
  o.error_estimate = ErrorEstimate::kEmbedded;
  o.mode = Mode::kTrapezoid;
  auto bad = Stepper::Create(m.get(), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("error_estimate"), std::string::npos);
  o.mode = Mode::kCenic;
  o.extrapolate = true;
  EXPECT_FALSE(Stepper::Create(m.get(), o).ok());
  o.extrapolate = false;
  o.global_accuracy = true;  // full-state norm, no extrapolation without half steps
  auto s = Stepper::Create(m.get(), o).value();
  EXPECT_EQ(s->options().error_norm, ErrorNormKind::kFullState);
  EXPECT_FALSE(s->options().extrapolate);
  StepperOptions text;
  EXPECT_TRUE(SetOption(&text, "error_estimate", "embedded").ok());
  EXPECT_EQ(text.error_estimate, ErrorEstimate::kEmbedded);
  EXPECT_FALSE(SetOption(&text, "error_estimate", "richardson").ok());
}

TEST(ErrorEstimate, EmbeddedControlledRunMeetsTheAccuracyInFreeFall) {
  // Error-controlled free fall over 0.5 s: each accepted step's true local
  // error stays below the accuracy (the estimate is exact here), in one
  // solve per attempt.
  ModelPtr m = Load(kFreeFall);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.error_estimate = ErrorEstimate::kEmbedded;
  o.accuracy = 1e-4;
  auto s = Stepper::Create(m.get(), o).value();
  const double L = s->length_scale();
  while (d->time < 0.5) {
    const double z = d->qpos[2], vz = d->qvel[2];
    ASSERT_TRUE(s->StepOnce(d.get()).ok());
    const double h = s->stats().last_h;
    const double z_exact = z + vz * h - 0.5 * 9.81 * h * h;
    EXPECT_LE(std::abs(d->qpos[2] - z_exact) / L, 1e-4 * (1 + 1e-9));
  }
  EXPECT_EQ(s->stats().solves, s->stats().steps + s->stats().rejected_steps);
}

// The fall of kFreeFall on a slide joint whose limits (far away) put a row on
// it at every step: not a body in flight (cenic-math §11.13).
constexpr char kSlideFall[] = R"(
<mujoco><option gravity="0 0 -9.81" timestep="0.01"/>
  <worldbody><body pos="0 0 1"><joint type="slide" axis="0 0 1" limited="true" range="-100 100"/>
    <geom type="sphere" size="0.1" mass="1"/></body>
  </worldbody></mujoco>)";

// Free fall in the loop a controller runs: one Step (a call of opt.timestep)
// at a time, calls shorter than the proposal, each ending on its target (no
// dense output: as when the controller writes a new ctrl every call). Every step is h = 0.01 s from
// a state with the exact velocity, so each step's error adds up: g h²/4 per
// doubled step (its half steps) or per skipped step of a body in flight (the
// half steps' positions), g h²/2 per other skipped step (the full step x̂).
// `ratio`: the doubling estimate g h²/(4 L) over the accuracy; z: the
// height's qpos (1 m at t = 0). Returns the final position error over the
// doubled steps' N g h²/4.
double EveryCallFallError(const char* xml, int z, double ratio, double* solves_per_call) {
  ModelPtr m = Load(xml);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  const double h = 0.01, g = 9.81;
  StepperOptions o;
  o.accuracy = 1;
  const double L = Stepper::Create(m.get(), o).value()->length_scale();
  o.accuracy = 0.25 * g * h * h / L / ratio;
  o.dense_output = false;
  auto s = Stepper::Create(m.get(), o).value();
  const int n = 60;
  for (int k = 0; k < n; ++k) EXPECT_TRUE(s->Step(d.get()).ok());
  EXPECT_EQ(s->stats().steps, n);
  *solves_per_call = static_cast<double>(s->stats().solves) / n;
  const double t = n * h;
  const double height = (z == 2 ? 0 : 1) + d->qpos[z];
  return std::abs(height - (1 - 0.5 * g * t * t)) / (n * 0.25 * g * h * h);
}

TEST(ErrorEstimate, SkippedEstimatesKeepTheLoopAtTheHalfStepsError) {
  // cenic-math §11.13. On the slide joint (a row: not in flight), estimate
  // 0.35 ε: x̂'s predicted error 0.7 ε is within the accuracy but above ε/4,
  // so every call doubles (three solves) and the trajectory keeps the half
  // steps' error. Skipping there (accepting x̂ at twice the error) would
  // double the trajectory's error.
  double solves;
  EXPECT_NEAR(EveryCallFallError(kSlideFall, 0, 0.35, &solves), 1.0, 0.02);
  EXPECT_DOUBLE_EQ(solves, 3.0);
  // Estimate ε/20: predicted ε/10 per call, so the ten calls after each
  // estimate skip it (their predictions sum to the budget ε): 6 of the 60
  // calls double, (6 · 3 + 54)/60 = 1.2 solves per call, and the error is
  // (6 + 54 · 2)/60 = 1.9 times the half steps'.
  const double e = EveryCallFallError(kSlideFall, 0, 0.05, &solves);
  EXPECT_NEAR(solves, 1.2, 1e-12);
  EXPECT_NEAR(e, 1.9, 0.03);
}

TEST(ErrorEstimate, ABodyInFlightSkipsAtTheHalfStepsError) {
  // cenic-math §11.13, "Bodies in flight". The free body has no row: a
  // skipped step takes q_t ⊕ h (3 v̂ + v_t)/4, which for constant gravity
  // is the half steps' end, so the trajectory keeps their error exactly.
  // Estimate 0.35 ε, predicted 0.35 ε per skipped step: two calls skip
  // after each estimate (budget ε), (20 · 3 + 40)/60 solves per call.
  double solves;
  EXPECT_NEAR(EveryCallFallError(kFreeFall, 2, 0.35, &solves), 1.0, 1e-9);
  EXPECT_NEAR(solves, 100.0 / 60, 1e-12);
  // Estimate ε/20: 19 or 20 calls skip after each estimate (the budget, up
  // to round-off), still at the half steps' error.
  const double e = EveryCallFallError(kFreeFall, 2, 0.05, &solves);
  EXPECT_LE(solves, (3 * 3 + 57) / 60.0 + 1e-12);
  EXPECT_NEAR(e, 1.0, 1e-9);
}

}  // namespace
}  // namespace mjcenic
