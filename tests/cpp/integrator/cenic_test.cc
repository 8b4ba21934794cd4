// Tests of the error-controlled integrator: CENIC step doubling around ICF
// convex steps (cenic-math.md §8, §11, §13 items 15–19, §14.2, §14.5).
//
// Every test prints the numbers it measures (std::printf and RecordProperty)
// so that a run of `mjcenic_tests --gtest_filter='Cenic*'` doubles as a
// report. Where a physically motivated bound replaces a stricter expectation
// the comment next to the assertion says why, with the measured numbers.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <numbers>
#include <string>
#include <tuple>
#include <vector>

#include <absl/status/status.h>
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/error_norm.h"
#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/step_size_controller.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

// ---------------------------------------------------------------------------
// Helpers.

using test_util::DataPtr;
using test_util::ModelPtr;

using test_util::ModelPath;

using test_util::LoadModel;
using test_util::MakeData;
using test_util::MakeStepper;

// Writes an MJCF string to a temporary file and loads it.
ModelPtr LoadModelFromString(const std::string& name, const std::string& xml) {
  const std::string path = ::testing::TempDir() + "/cenic_test_" + name + ".xml";
  {
    std::ofstream f(path);
    f << xml;
  }
  return LoadModel(path);
}

double Seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

// Prints a measured number and records it as a test property.
void Report(const std::string& key, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", value);
  std::printf("  %-44s %s\n", key.c_str(), buf);
  ::testing::Test::RecordProperty(key, buf);
}

StepperOptions Cenic(double accuracy) {
  StepperOptions o;
  o.mode = Mode::kCenic;
  o.accuracy = accuracy;
  return o;
}

// One step of max_step h without error control (step doubling still runs).
StepperOptions OneDoubledStep(double h, bool extrapolate) {
  StepperOptions o = Cenic(1e-3);
  o.error_control = false;
  o.max_step = h;
  o.extrapolate = extrapolate;
  return o;
}

struct RunResult {
  std::vector<double> qpos, qvel;
  StepperStats stats;
  absl::Status status;
  double length_scale = 0;
  double wall = 0;
};

// One AdvanceTo(d, T) from a keyframe (one call, so the controller is free
// to take steps as large as the accuracy allows).
RunResult Advance(const mjModel* m, const char* key, const StepperOptions& o, double T) {
  RunResult r;
  DataPtr d = MakeData(m, key);
  auto s = MakeStepper(m, o);
  if (!s) return r;
  const auto t0 = std::chrono::steady_clock::now();
  r.status = s->AdvanceTo(d.get(), T);
  r.wall = Seconds(t0);
  r.qpos.assign(d->qpos, d->qpos + m->nq);
  r.qvel.assign(d->qvel, d->qvel + m->nv);
  r.stats = s->stats();
  r.length_scale = s->length_scale();
  return r;
}

// Weighted tangent-space position error (mj_differentiatePos; translations / L,
// rotations in radians; ∞-norm): the stepper's own default norm.
double PositionError(const mjModel* m, double L, const std::vector<double>& qa,
                     const std::vector<double>& qb) {
  ErrorNorm norm(m, ErrorNormKind::kWeighted, L);
  const std::vector<double> zero(m->nv, 0.0), act(m->na, 0.0);
  int worst;
  return norm.Compute(m, qa.data(), zero.data(), act.data(), qb.data(), zero.data(), act.data(),
                      &worst);
}

// Least-squares slope of log(y) against log(x).
double LogLogSlope(const std::vector<double>& x, const std::vector<double>& y) {
  const int n = static_cast<int>(x.size());
  double mx = 0, my = 0;
  for (int i = 0; i < n; ++i) {
    mx += std::log(x[i]) / n;
    my += std::log(y[i]) / n;
  }
  double sxy = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    sxy += (std::log(x[i]) - mx) * (std::log(y[i]) - my);
    sxx += (std::log(x[i]) - mx) * (std::log(x[i]) - mx);
  }
  return sxy / sxx;
}

// The configuration whose *global* error tracks the accuracy (docs/how-it-works.md,
// "Accuracy: local and global error"), option global_accuracy: full-state
// norm (velocity errors bounded too, so impacts are resolved), local
// extrapolation (second-order propagated solution, no √ε drift in smooth
// phases) and speculative contacts (a contact that starts inside a step is in
// that step's problem; margin 0.1 L).
StepperOptions GlobalAccuracy(double accuracy) {
  StepperOptions o = Cenic(accuracy);
  o.global_accuracy = true;
  return o;
}

TEST(CenicGlobalAccuracy, OptionIsTheRecipe) {
  ModelPtr m = LoadModel(ModelPath("cylinder_table.xml"));
  ASSERT_TRUE(m);
  StepperOptions option = Cenic(1e-3);
  ASSERT_TRUE(SetOption(&option, "global_accuracy", "true").ok());
  auto s = Stepper::Create(m.get(), option);
  ASSERT_TRUE(s.ok()) << s.status();
  const double L = (*s)->length_scale();  // mean dof_length of the rotational dofs
  EXPECT_NEAR(L, 0.1 * std::sqrt(2.0), 1e-12);
  EXPECT_EQ((*s)->options().error_norm, ErrorNormKind::kFullState);
  EXPECT_TRUE((*s)->options().extrapolate);
  EXPECT_DOUBLE_EQ((*s)->options().speculative_margin, 0.1 * L);
  StepperOptions recipe = Cenic(1e-3);
  recipe.error_norm = ErrorNormKind::kFullState;
  recipe.extrapolate = true;
  recipe.speculative_margin = 0.1 * L;
  const RunResult a = Advance(m.get(), "drop", recipe, 0.3);
  const RunResult b = Advance(m.get(), "drop", option, 0.3);
  ASSERT_TRUE(a.status.ok() && b.status.ok());
  EXPECT_EQ(a.qpos, b.qpos);
  EXPECT_EQ(a.stats.steps, b.stats.steps);
  // An explicit margin is kept; other modes refuse the option, naming it.
  option.speculative_margin = 0.02;
  EXPECT_DOUBLE_EQ(Stepper::Create(m.get(), option).value()->options().speculative_margin, 0.02);
  option.mode = Mode::kTrapezoid;
  const auto bad = Stepper::Create(m.get(), option);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("global_accuracy"), std::string::npos) << bad.status();
}

// Reference solutions are expensive; several tests share them. `options`
// gives the configuration; its accuracy is replaced by `accuracy`.
const RunResult& Reference(const char* file, const mjModel* m, const char* key, double T,
                           double accuracy, const StepperOptions& options = StepperOptions()) {
  static std::map<std::tuple<std::string, double, double, int, bool, bool, double>, RunResult>
      cache;
  const auto k = std::make_tuple(std::string(file), T, accuracy,
                                 static_cast<int>(options.error_norm), options.extrapolate,
                                 options.global_accuracy, options.speculative_margin);
  auto it = cache.find(k);
  if (it == cache.end()) {
    StepperOptions o = options;
    o.mode = Mode::kCenic;
    o.accuracy = accuracy;
    it = cache.emplace(k, Advance(m, key, o, T)).first;
    EXPECT_TRUE(it->second.status.ok()) << it->second.status;
  }
  return it->second;
}

// ---------------------------------------------------------------------------
// 1. Convergence against a tight reference.
//
// Local vs global error. ε_acc bounds the *local* error estimate of each step
// (‖x̂ − x‖ ≤ ε_acc). With the paper's configuration (position-only norm,
// half-step solution propagated) that is all it bounds:
//  * ICF is first order, so in smooth phases the step is h ∝ √ε_acc and the
//    global error after a time t grows like t·√ε_acc. For free fall
//    (cenic-math §13.15) the accepted two-half-step solution lags the exact
//    one by g·(h/2)·t/2, i.e. with h ≈ 0.9·2√(ε L/g): e/L ≈ 0.45·t·√(ε g/L)
//    (CenicConvergence.FreeFallGlobalErrorIsHalfOrder).
//  * A position-only local error of ε·L per step admits a velocity error of
//    ε·L/h per step (by design: impacts do not shrink the step, test 3); over
//    a contact phase of N steps these add up to N·ε·L in velocity·time.
// So with the defaults the error at the end time is ≈ √ε_acc, not ≈ ε_acc.
// GlobalAccuracy() removes both causes (extrapolation: the propagated
// solution is second order; full-state norm: velocity errors are bounded;
// speculative contacts: a contact that starts inside a step is in its
// problem) and its end error stays below ε_acc, which the tests assert; the
// default configuration is asserted against its half-order bound.
//
// Reference validity (measured while writing these tests, Release build):
//   cylinder 0.6 s, GlobalAccuracy: accuracy 1e-6 vs 1e-7: 1.3e-6 (the error
//                   at 1e-4 is 2.8e-6 against 1e-7, 4.1e-6 against 1e-6).
//   cylinder 0.6 s, defaults: accuracy 1e-7 vs 1e-8: 1.4e-4.
//   sphere 0.8 s:   accuracy 1e-7 vs 1e-8: 3.9e-11.
//   clutter 0.3 s:  accuracy 1e-6 vs fixed h = 5e-6 (11 s of CPU): 2.8e-3, i.e.
//                   8 % of the error measured at accuracy 1e-4 (3.6e-2).
// The tests re-check the cheap part of this (two tight references agree far
// better than the errors they are used to measure).

struct ConvergenceRow {
  double accuracy, error;
  RunResult run;
};

std::vector<ConvergenceRow> ConvergenceStudy(const char* file, const mjModel* m, const char* key,
                                             double T, const RunResult& ref,
                                             const std::vector<double>& accuracies,
                                             const StepperOptions& options = StepperOptions()) {
  std::vector<ConvergenceRow> rows;
  std::printf("  %-9s %-11s %-9s %6s %5s %9s %9s %9s %7s\n", "accuracy", "error", "err/acc",
              "steps", "rej", "h_min", "h_median", "h_max", "wall[s]");
  for (double acc : accuracies) {
    StepperOptions o = options;
    o.mode = Mode::kCenic;
    o.accuracy = acc;
    RunResult r = Advance(m, key, o, T);
    EXPECT_TRUE(r.status.ok()) << file << " accuracy " << acc << ": " << r.status;
    const double e = PositionError(m, ref.length_scale, r.qpos, ref.qpos);
    const StepperStats& s = r.stats;
    std::printf("  %-9.0e %-11.4e %-9.3g %6ld %5ld %9.3e %9.3e %9.3e %7.3f\n", acc, e, e / acc,
                s.steps, s.rejected_steps, s.h_min, s.h_median, s.h_max, r.wall);
    char key_buf[64];
    std::snprintf(key_buf, sizeof(key_buf), "error_at_%.0e", acc);
    ::testing::Test::RecordProperty(key_buf, std::to_string(e));
    rows.push_back({acc, e, std::move(r)});
  }
  return rows;
}

TEST(CenicConvergence, CylinderDrop) {
  const char* file = "cylinder_table.xml";
  ModelPtr m = LoadModel(ModelPath(file));
  ASSERT_TRUE(m);
  // Impact on the rim at ≈0.25 s, rocks on the rim, slaps onto its face at
  // ≈0.30 s, bounces and settles; at rest by ≈0.5 s.
  const double T = 0.6;
  {
    std::printf(" GlobalAccuracy configuration (acceptance: monotone, <= 10 x accuracy)\n");
    const StepperOptions g = GlobalAccuracy(1e-3);
    const RunResult& ref = Reference(file, m.get(), "drop", T, 1e-6, g);
    ASSERT_TRUE(ref.status.ok());
    Report("reference_steps(acc 1e-6)", ref.stats.steps);
    auto rows = ConvergenceStudy(file, m.get(), "drop", T, ref, {1e-1, 1e-2, 1e-3, 1e-4, 1e-5}, g);
    for (int i = 1; i < 4; ++i)
      EXPECT_LT(rows[i].error, rows[i - 1].error) << "accuracy " << rows[i].accuracy;
    // Measured err/acc: 0.0038, 0.0055, 0.011 at 1e-2, 1e-3, 1e-4 (the last
    // partly the reference's own error, ~1.3e-6; see above): bounds with a
    // factor 4-5 over them, not the 10x of the acceptance (900-2600x slack).
    const double bound[4] = {0, 0.02, 0.02, 0.05};
    for (int i = 1; i <= 3; ++i)
      EXPECT_LE(rows[i].error, bound[i] * rows[i].accuracy) << "accuracy " << rows[i].accuracy;
    // Cheap reference check: a run at 1e-5 is already far closer to the
    // reference than the errors being judged at 1e-2 and 1e-3.
    EXPECT_LT(rows[4].error, 0.5 * rows[2].error);
  }
  {
    std::printf(" default configuration (paper: position-only local error control)\n");
    const RunResult& ref = Reference(file, m.get(), "drop", T, 1e-7);
    ASSERT_TRUE(ref.status.ok());
    auto rows = ConvergenceStudy(file, m.get(), "drop", T, ref, {1e-1, 1e-2, 1e-3, 1e-4, 1e-6});
    Report("reference_gap(1e-6 vs 1e-7)", rows[4].error);
    EXPECT_LT(rows[4].error, 0.1 * rows[3].error);
    for (int i = 1; i < 4; ++i)
      EXPECT_LT(rows[i].error, rows[i - 1].error) << "accuracy " << rows[i].accuracy;
    // Half-order global bound (see the comment above ConvergenceStudy).
    for (int i = 1; i <= 3; ++i) {
      // Measured error/√ε: 0.19, 0.20, 0.57 at 1e-2, 1e-3, 1e-4.
      EXPECT_LE(rows[i].error, std::sqrt(rows[i].accuracy)) << "accuracy " << rows[i].accuracy;
      if (rows[i].error > 10 * rows[i].accuracy)
        std::printf("  NOTE: error %.3e is %.0fx the accuracy %.0e (global error ~ sqrt(acc))\n",
                    rows[i].error, rows[i].error / rows[i].accuracy, rows[i].accuracy);
    }
  }
}

// Option `extrapolate` (local Richardson extrapolation, beyond the paper):
// the propagated state is 2·x_half − x_full. Implicit Euler's leading local
// error cancels, so in free fall (constant acceleration) every step is exact
// and the global error no longer grows like √accuracy.
TEST(CenicExtrapolation, FreeFallIsExactWhereThePlainSchemeIsHalfOrder) {
  ModelPtr m = LoadModel(ModelPath("sphere_plane.xml"));
  ASSERT_TRUE(m);
  const double T = 0.4;  // impact at ≈0.428 s
  const double z_exact = 1.0 + 0.5 * m->opt.gravity[2] * T * T;
  for (double acc : {1e-2, 1e-3, 1e-4}) {
    StepperOptions plain = Cenic(acc), extrapolated = Cenic(acc);
    extrapolated.extrapolate = true;
    const RunResult p = Advance(m.get(), "drop", plain, T);
    const RunResult e = Advance(m.get(), "drop", extrapolated, T);
    ASSERT_TRUE(p.status.ok() && e.status.ok());
    const double err_p = std::abs(p.qpos[2] - z_exact), err_e = std::abs(e.qpos[2] - z_exact);
    std::printf("  accuracy %.0e: |z - z_exact| plain %.3e (%ld steps), extrapolated %.3e "
                "(%ld steps)\n", acc, err_p, p.stats.steps, err_e, e.stats.steps);
    EXPECT_LT(err_e, 1e-10);
    EXPECT_GT(err_p, 10 * acc * p.length_scale);  // the plain scheme: half order
    EXPECT_EQ(e.stats.steps, p.stats.steps);      // same estimate, same steps
  }
}

// cenic-math §11.1: a step whose Richardson correction v − v̂ is large
// against its velocity change v − v_t keeps the two-half-step result. In
// the step of an impact the full step falls freely while the second half
// step bounces (v̂ − v is the whole rebound), so 2x − x̂ would send the ball
// up faster than it came down; a free-fall step, whose correction is 0, is
// extrapolated (exact).
TEST(CenicExtrapolation, ImpactStepKeepsTheHalfStepResultFreeFallIsExtrapolated) {
  ModelPtr m = LoadModel(ModelPath("sphere_plane.xml"));
  ASSERT_TRUE(m);
  const double h = 0.02, g = -m->opt.gravity[2];
  struct End { double z, vz; };
  auto one_step = [&](bool extrapolate, double z, double vz) {
    std::unique_ptr<Stepper> s = MakeStepper(m.get(), OneDoubledStep(h, extrapolate));
    DataPtr d = MakeData(m.get());
    d->qpos[2] = z;
    d->qvel[2] = vz;
    EXPECT_TRUE(s->StepOnce(d.get()).ok());
    return End{d->qpos[2], d->qvel[2]};
  };
  // Free fall from 1 m at rest: exact with extrapolation, not without.
  const End fall_p = one_step(false, 1.0, 0.0), fall_e = one_step(true, 1.0, 0.0);
  std::printf("  free fall: z plain %.9f extrapolated %.9f exact %.9f\n", fall_p.z, fall_e.z,
              1.0 - 0.5 * g * h * h);
  EXPECT_NEAR(fall_e.z, 1.0 - 0.5 * g * h * h, 1e-12);
  EXPECT_GT(std::abs(fall_p.z - fall_e.z), 0.1 * g * h * h);
  // The impact: 15 mm above the floor at 2 m/s down, on the floor by the midpoint.
  const End hit_p = one_step(false, 0.115, -2.0), hit_e = one_step(true, 0.115, -2.0);
  std::printf("  impact: vz plain %.6f extrapolated %.6f; z plain %.6f extrapolated %.6f\n",
              hit_p.vz, hit_e.vz, hit_p.z, hit_e.z);
  EXPECT_EQ(hit_e.vz, hit_p.vz);
  EXPECT_EQ(hit_e.z, hit_p.z);
  EXPECT_LT(hit_e.vz, 2.0);  // no faster rebound than the fall
}

// cenic-math §11.1: the correction leaves out the directions of the
// near-rigid rows acting at the step's end. An arm resting on its upper limit
// under gravity keeps the half steps' angle and velocity (the limit's
// violation is not doubled), an arm that starts 0.2 rad beyond its limit (the
// critically damped spring of §5.2, smooth motion) and a ball in free fall are
// extrapolated as before (the ball exactly).
TEST(CenicExtrapolation, HeldLimitKeepsTheHalfStepResultSpringAndFreeFallAreExtrapolated) {
  ModelPtr m = LoadModelFromString("limit_spring_fall", R"(
<mujoco>
  <compiler angle="radian"/>
  <option timestep="0.002"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body name="held" pos="0 0 1">
      <joint name="held" type="hinge" axis="0 1 0" range="-0.5 0.5" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1"/>
    </body>
    <body name="sprung" pos="0 1 1">
      <joint name="sprung" type="hinge" axis="0 1 0" range="-0.5 0.5" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1"/>
    </body>
    <body name="ball" pos="1 0 1">
      <joint name="drop" type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(m);
  const double h = 0.02, g = -m->opt.gravity[2];
  auto one_step = [&](bool extrapolate) {
    std::unique_ptr<Stepper> s = MakeStepper(m.get(), OneDoubledStep(h, extrapolate));
    DataPtr d = MakeData(m.get());
    d->qpos[0] = 0.5;  // on the upper limit; gravity turns the arm into it
    d->qpos[1] = 0.7;  // 0.2 rad beyond it: the spring pulls it back
    EXPECT_TRUE(s->StepOnce(d.get()).ok());
    return std::vector<double>{d->qpos[0], d->qvel[0], d->qpos[1], d->qvel[1], d->qpos[2],
                               d->qvel[2]};
  };
  const std::vector<double> plain = one_step(false), ext = one_step(true);
  std::printf("  held: angle plain %.15f extrapolated %.15f, omega %.3e / %.3e\n", plain[0],
              ext[0], plain[1], ext[1]);
  std::printf("  sprung: angle plain %.9f extrapolated %.9f, omega %.6f / %.6f\n", plain[2],
              ext[2], plain[3], ext[3]);
  std::printf("  ball: z plain %.12f extrapolated %.12f exact %.12f\n", plain[4], ext[4],
              -0.5 * g * h * h);
  EXPECT_NEAR(plain[0], 0.5, 1e-3);  // held by the limit
  EXPECT_NEAR(ext[0], plain[0], 1e-15);
  EXPECT_NEAR(ext[1], plain[1], 1e-12 * (1 + std::abs(plain[1])));
  EXPECT_LT(plain[2], 0.7);  // the spring pulls the violated arm back, smoothly:
  EXPECT_GT(std::abs(ext[3] - plain[3]), 1e-3 * std::abs(plain[3]));  // extrapolated
  EXPECT_NEAR(ext[4], -0.5 * g * h * h, 1e-12);
  EXPECT_NEAR(ext[5], -g * h, 1e-12);
  EXPECT_GT(std::abs(plain[4] - ext[4]), 0.1 * g * h * h);
}

TEST(CenicExtrapolation, SphereDropWithinTheAccuracyAndHardClutterStable) {
  // Through the impact and the settling (T = 0.8 s), against the plain
  // scheme's tight reference: the error stays within 10× the accuracy.
  ModelPtr m = LoadModel(ModelPath("sphere_plane.xml"));
  ASSERT_TRUE(m);
  const RunResult& ref = Reference("sphere_plane.xml", m.get(), "drop", 0.8, 1e-7);
  ASSERT_TRUE(ref.status.ok());
  StepperOptions extrapolated;
  extrapolated.extrapolate = true;
  auto rows = ConvergenceStudy("sphere_plane.xml", m.get(), "drop", 0.8, ref,
                               {1e-2, 1e-3, 1e-4}, extrapolated);
  for (const ConvergenceRow& r : rows) EXPECT_LE(r.error, 10 * r.accuracy);
  // Stiff contact: the hard clutter of CenicHardClutter at 1e-2, 0.5 s.
  ModelPtr c = LoadModel(ModelPath("clutter.xml"));
  ASSERT_TRUE(c);
  StepperOptions o = Cenic(1e-2);
  o.contact.stiffness_scale = 10;
  o.icf.stiction_tolerance = 1e-5;
  const RunResult plain = Advance(c.get(), "drop", o, 0.5);
  o.extrapolate = true;
  const RunResult r = Advance(c.get(), "drop", o, 0.5);
  ASSERT_TRUE(r.status.ok() && plain.status.ok()) << r.status;
  std::printf("  hard clutter: extrapolated %ld steps (%ld rejected), max penetration %.3g mm; "
              "plain %ld (%ld), %.3g mm\n", r.stats.steps, r.stats.rejected_steps,
              1e3 * r.stats.max_penetration, plain.stats.steps, plain.stats.rejected_steps,
              1e3 * plain.stats.max_penetration);
  // At accuracy 1e-2 the clutter's deepest contact is step-size dominated and
  // moves by tens of percent between equivalent runs. Counted at the
  // trajectory's states only (not at rejected attempts), extrapolation does
  // sink deeper here (measured 14 mm vs plain 5.2 mm: its velocity
  // correction is not meant for steps through contact, docs/benchmarks.md,
  // "Work-precision against mj_step"); it must not blow up.
  EXPECT_LT(r.stats.max_penetration, 4.0 * plain.stats.max_penetration);
  for (double x : r.qvel) EXPECT_TRUE(std::isfinite(x));
}

TEST(CenicConvergence, FreeFallGlobalErrorIsHalfOrder) {
  // The cylinder before its impact (T = 0.2 s, free fall): the global error
  // falls by √10 per decade of accuracy and exceeds 10·ε_acc at ε ≤ 1e-3.
  const char* file = "cylinder_table.xml";
  ModelPtr m = LoadModel(ModelPath(file));
  ASSERT_TRUE(m);
  const double T = 0.2;
  const RunResult& ref = Reference(file, m.get(), "drop", T, 1e-7);
  ASSERT_TRUE(ref.status.ok());
  auto rows = ConvergenceStudy(file, m.get(), "drop", T, ref, {1e-1, 1e-2, 1e-3, 1e-4});
  const double g = 9.81, L = ref.length_scale;
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      const double ratio = rows[i - 1].error / rows[i].error;
      EXPECT_GT(ratio, 2.0) << "accuracy " << rows[i].accuracy;
      EXPECT_LT(ratio, 5.0) << "accuracy " << rows[i].accuracy;
    }
    // Free-fall prediction: e/L = g (h/2) t / 2 with the steady step h in
    // (0.75 h*, h*], h* = 2 √(ε L / g)  →  e ∈ (0.375, 0.5] · t √(ε g / L)
    // (plus the start-up steps, which are smaller: allow 0.2 … 0.55).
    const double unit = T * std::sqrt(rows[i].accuracy * g / L);
    Report("error/(t*sqrt(acc*g/L)) at " + std::to_string(rows[i].accuracy),
           rows[i].error / unit);
    if (i > 0) {  // accuracy 0.1: only a handful of steps, start-up dominates
      EXPECT_GT(rows[i].error, 0.2 * unit);
      EXPECT_LT(rows[i].error, 0.55 * unit);
    }
  }
  // The consequence: at ε = 1e-4 the global error is far above 10 ε.
  EXPECT_GT(rows[3].error, 10 * rows[3].accuracy);
}

TEST(CenicConvergence, SphereDrop) {
  const char* file = "sphere_plane.xml";
  ModelPtr m = LoadModel(ModelPath(file));
  ASSERT_TRUE(m);
  // Impact at ≈0.428 s; with MuJoCo's default solref (critically damped) the
  // ball does not bounce and is at rest by ≈0.7 s, so at T = 0.8 s only the
  // decaying remainder of the impact transient is left.
  const double T = 0.8;
  const RunResult& ref = Reference(file, m.get(), "drop", T, 1e-7);
  ASSERT_TRUE(ref.status.ok());
  auto rows = ConvergenceStudy(file, m.get(), "drop", T, ref, {1e-1, 1e-2, 1e-3, 1e-4, 1e-6});
  const double ref_gap = rows[4].error;
  Report("reference_gap(1e-6 vs 1e-7)", ref_gap);
  EXPECT_LT(ref_gap, 0.1 * rows[3].error);
  // Measured: 0.679 (ε = 0.1: the contact is first seen 2.6 cm deep — both
  // geometry queries of the impact step missed it — and the ball is still
  // climbing out), 5.1e-8, 4.3e-8, 2.7e-9.
  for (int i = 1; i < 4; ++i)
    EXPECT_LT(rows[i].error, rows[i - 1].error) << "accuracy " << rows[i].accuracy;
  for (int i = 1; i <= 3; ++i)
    EXPECT_LE(rows[i].error, 10 * rows[i].accuracy) << "accuracy " << rows[i].accuracy;

  std::printf(" GlobalAccuracy configuration\n");
  const StepperOptions g = GlobalAccuracy(1e-3);
  const RunResult& gref = Reference(file, m.get(), "drop", T, 1e-7, g);
  ASSERT_TRUE(gref.status.ok());
  auto grows = ConvergenceStudy(file, m.get(), "drop", T, gref, {1e-1, 1e-2, 1e-3, 1e-4}, g);
  // Measured: 9.7e-2, 8.2e-8, 4.9e-9, 4.2e-10.
  for (int i = 1; i < 4; ++i)
    EXPECT_LT(grows[i].error, grows[i - 1].error) << "accuracy " << grows[i].accuracy;
  for (int i = 1; i <= 3; ++i)
    EXPECT_LE(grows[i].error, 10 * grows[i].accuracy) << "accuracy " << grows[i].accuracy;
}

TEST(CenicConvergence, SphereDropDuringImpact) {
  // The same drop measured 12 ms into the impact (contact from ≈0.428 s;
  // MuJoCo's default solref has a 20 ms time constant), while the ball is
  // still being decelerated: here the error is not washed out by coming to
  // rest (SphereDrop measures at 0.8 s). Bounds by the order of the
  // configuration (see the comment above ConvergenceStudy), each with a
  // factor 2 over the constant measured when the test was written:
  //  * defaults (position-only local control) are half order: error =
  //    C √ε with C = 0.048, 0.041, 0.045 at ε = 1e-3, 1e-4, 1e-5; asserted:
  //    error ≤ 0.1 √ε and a fall by more than √10 / 2 per decade. (At 1e-2
  //    the 26 steps straddle the impact and the error is small by chance.)
  //  * GlobalAccuracy stays below the accuracy: error/ε = 0.001 … 0.009;
  //    asserted: error ≤ 0.02 ε and a fall by more than 3 per decade.
  const char* file = "sphere_plane.xml";
  ModelPtr m = LoadModel(ModelPath(file));
  ASSERT_TRUE(m);
  const double T = 0.44;
  const RunResult& ref = Reference(file, m.get(), "drop", T, 1e-8);
  ASSERT_TRUE(ref.status.ok());
  auto rows = ConvergenceStudy(file, m.get(), "drop", T, ref, {1e-3, 1e-4, 1e-5, 1e-7});
  Report("reference_gap(1e-7 vs 1e-8)", rows[3].error);
  EXPECT_LT(rows[3].error, 0.1 * rows[2].error);
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(rows[i].error, 0.1 * std::sqrt(rows[i].accuracy)) << "accuracy " << rows[i].accuracy;
    if (i > 0) {
      EXPECT_GT(rows[i - 1].error / rows[i].error, std::sqrt(10.0) / 2)
          << "accuracy " << rows[i].accuracy;
    }
  }
  std::printf(" GlobalAccuracy configuration\n");
  const StepperOptions g = GlobalAccuracy(1e-3);
  const RunResult& gref = Reference(file, m.get(), "drop", T, 1e-8, g);
  ASSERT_TRUE(gref.status.ok());
  auto grows = ConvergenceStudy(file, m.get(), "drop", T, gref, {1e-2, 1e-3, 1e-4, 1e-5}, g);
  for (size_t i = 0; i < grows.size(); ++i) {
    EXPECT_LE(grows[i].error, 0.02 * grows[i].accuracy) << "accuracy " << grows[i].accuracy;
    if (i > 0) {
      EXPECT_GT(grows[i - 1].error / grows[i].error, 3.0) << "accuracy " << grows[i].accuracy;
    }
  }
}

TEST(CenicConvergence, Clutter) {
  const char* file = "clutter.xml";
  ModelPtr m = LoadModel(ModelPath(file));
  ASSERT_TRUE(m);
  const double T = 0.3;
  const RunResult& ref = Reference(file, m.get(), "drop", T, 1e-6);
  ASSERT_TRUE(ref.status.ok());
  Report("reference_steps(acc 1e-6)", ref.stats.steps);
  Report("reference_wall_s", ref.wall);
  auto rows = ConvergenceStudy(file, m.get(), "drop", T, ref, {1e-1, 1e-2, 1e-3, 1e-4});
  // Measured (MuJoCo 3.12 / 4.0.0): 0.0960 / 0.0958, 0.07006 / 0.06988,
  // 0.07006 / 0.07006, 0.0243 / 0.0243. Between 1e-2 and 1e-3 the error is
  // on a plateau: both runs take steps above opt.timestep in the contact
  // phase, where an anchored contact's ε is capped (cenic-math §4.10), and
  // their errors agree to 3e-3 (before the cap: 0.0750 and 0.0685). The
  // plateau may not rise by more than 5 %; every other decade must fall, and
  // 1e-4 at least halves the error of 1e-2.
  EXPECT_LT(rows[1].error, rows[0].error) << "accuracy 1e-2";
  EXPECT_LT(rows[2].error, 1.05 * rows[1].error) << "accuracy 1e-3";
  EXPECT_LT(rows[3].error, rows[2].error) << "accuracy 1e-4";
  EXPECT_LT(rows[3].error, 0.5 * rows[1].error);
  for (int i = 1; i <= 3; ++i)
    EXPECT_LE(rows[i].error, 5 * std::sqrt(rows[i].accuracy)) << "accuracy " << rows[i].accuracy;
}

// ---------------------------------------------------------------------------
// 2. Energy of a zero-dissipation bouncing ball (paper §VII-A, Fig. 8).

constexpr double kG = 9.81;
constexpr double kBallRadius = 0.1;

double BallEnergy(const mjModel* m, const mjData* d, double k) {
  const double mass = m->body_mass[1];
  const double* I = m->body_inertia + 3;
  const double* v = d->qvel;
  const double phi = d->qpos[2] - kBallRadius;
  double e = mass * kG * d->qpos[2] + 0.5 * mass * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) +
             0.5 * (I[0] * v[3] * v[3] + I[1] * v[4] * v[4] + I[2] * v[5] * v[5]);
  if (phi < 0) e += 0.5 * k * phi * phi;
  return e;
}

struct EnergyRun {
  double dE = 0;
  bool in_contact = false;
  long steps = 0, rejected = 0;
  absl::Status status;
};

// Drops the 1 kg ball with its center at z0 (zero velocity), contact
// stiffness k, zero dissipation, and returns E(T) − E(0).
EnergyRun DropBall(const mjModel* m, StepperOptions o, double z0, double k, double T) {
  EnergyRun r;
  o.contact.stiffness = k;
  o.contact.dissipation = 0;
  DataPtr d = MakeData(m);
  d->qpos[2] = z0;
  mj_forward(m, d.get());
  const double E0 = BallEnergy(m, d.get(), k);
  auto s = MakeStepper(m, o);
  if (!s) return r;
  r.status = s->AdvanceTo(d.get(), T);
  r.dE = BallEnergy(m, d.get(), k) - E0;
  r.in_contact = d->qpos[2] < kBallRadius;
  r.steps = s->stats().steps;
  r.rejected = s->stats().rejected_steps;
  return r;
}

StepperOptions FixedStep(Mode mode, double h) {
  StepperOptions o;
  o.mode = mode;
  o.error_control = false;
  o.max_step = h;
  // With error_control = false the stepper still uses the Newton tolerance
  // κ·ε_acc (= 1e-6 with the default accuracy) instead of the fixed-step
  // 1e-8 of cenic-math §11.6; that tolerance floor dominates the trapezoid's
  // energy error below h = 1e-4 (e.g. h = 2.5e-5: 1.3e-5 J instead of
  // 1.3e-7 J). Use the tight tolerance explicitly.
  o.adaptive_tolerance = false;
  return o;
}

// Stiffness for which a ball hitting the ground at speed v stays in contact
// for exactly tau (linear spring plus gravity: the ball oscillates about
// −mg/k, so the contact lasts longer than π/ω).
double StiffnessForContactDuration(double mass, double v, double tau) {
  double lo = 1, hi = 1e4;  // ω [rad/s]
  for (int i = 0; i < 200; ++i) {
    const double w = 0.5 * (lo + hi);
    const double delta = kG / (w * w);
    const double amplitude = std::sqrt(delta * delta + v * v / (w * w));
    const double duration = (std::numbers::pi + 2 * std::asin(delta / amplitude)) / w;
    (duration > tau ? lo : hi) = w;
  }
  return mass * lo * lo;
}

TEST(CenicEnergy, FirstVsSecondOrder) {
  ModelPtr m = LoadModel(ModelPath("sphere_plane.xml"));
  ASSERT_TRUE(m);
  ASSERT_NEAR(m->body_mass[1], 1.0, 1e-12);
  const std::vector<double> hs = {4e-4, 2e-4, 1e-4, 5e-5};

  // (a) Three bounces, ball center at z = 1 m (bottom 0.9 m above the floor),
  // k = 1e4 N/m, T = 2.6 s (flight phase after the third bounce).
  // Step doubling dissipates O(h) energy per bounce (restitution ≈ e^{−πhω/4}
  // for half steps h/2, cenic-math §13.18): slope ≈ 1. The trapezoid's error is
  // dominated by the contact onset/separation kinks of the spring force,
  // O(h²)·f(phase of the kink on the step grid) with a phase factor of either
  // sign, so one configuration gives erratic numbers (measured slopes 0.7–1.9
  // for k = 1e4…1e5 and T = 1.6…3.0 s); they are printed, not asserted.
  {
    const double k = 1e4, z0 = 1.0, T = 2.6;
    std::vector<double> e_cenic, e_trap;
    std::printf("  three bounces, center z0 = 1 m, k = 1e4 N/m, T = 2.6 s\n");
    for (double h : hs) {
      const EnergyRun c = DropBall(m.get(), FixedStep(Mode::kCenic, h), z0, k, T);
      const EnergyRun t = DropBall(m.get(), FixedStep(Mode::kTrapezoid, h), z0, k, T);
      ASSERT_TRUE(c.status.ok()) << c.status;
      ASSERT_TRUE(t.status.ok()) << t.status;
      EXPECT_FALSE(c.in_contact);
      EXPECT_FALSE(t.in_contact);
      std::printf("  h %.1e: cenic dE %+.4e J (%ld steps)  trapezoid dE %+.4e J\n", h, c.dE,
                  c.steps, t.dE);
      e_cenic.push_back(std::abs(c.dE));
      e_trap.push_back(std::abs(t.dE));
    }
    const double sc = LogLogSlope(hs, e_cenic), st = LogLogSlope(hs, e_trap);
    Report("slope_cenic(3 bounces)", sc);
    Report("slope_trapezoid(3 bounces, not asserted)", st);
    EXPECT_NEAR(sc, 1.0, 0.3);
    for (size_t i = 0; i < hs.size(); ++i) EXPECT_LT(e_trap[i], 0.01 * e_cenic[i]);
  }

  // (b) One bounce, phase-averaged: bottom of the ball ≈1.0 m above the floor
  // (impact after t_c ≈ 0.4516 s). For every h the impact time is placed at
  // the same fractions θ ∈ {1/8, 3/8, 5/8, 7/8} of a step and k is chosen so
  // that the contact lasts 0.0312 s + ψh with ψ = θ + ½ (mod 1); E is
  // measured at the apex after the bounce. Every h then sees the same set of
  // kink phases, so the mean |ΔE| behaves like C·h^p with the scheme's order.
  {
    std::vector<double> e_cenic, e_trap;
    const double tc0 = 0.4516, tau0 = 0.0312;
    std::printf("  one bounce, bottom at ~1.0 m, phase-averaged over 4 onset phases\n");
    for (double h : hs) {
      double sum_c = 0, sum_t = 0;
      for (int j = 0; j < 4; ++j) {
        const double theta = (j + 0.5) / 4, psi = std::fmod(theta + 0.5, 1.0);
        const double tc = std::round(tc0 / h) * h + theta * h;
        const double tau = std::round(tau0 / h) * h + psi * h;
        const double k = StiffnessForContactDuration(1.0, kG * tc, tau);
        const double z0 = kBallRadius + 0.5 * kG * tc * tc;
        const double T = 2 * tc + tau;
        const EnergyRun c = DropBall(m.get(), FixedStep(Mode::kCenic, h), z0, k, T);
        const EnergyRun t = DropBall(m.get(), FixedStep(Mode::kTrapezoid, h), z0, k, T);
        ASSERT_TRUE(c.status.ok()) << c.status;
        ASSERT_TRUE(t.status.ok()) << t.status;
        EXPECT_FALSE(t.in_contact);
        sum_c += std::abs(c.dE) / 4;
        sum_t += std::abs(t.dE) / 4;
      }
      std::printf("  h %.1e: mean |dE| cenic %.4e J  trapezoid %.4e J\n", h, sum_c, sum_t);
      e_cenic.push_back(sum_c);
      e_trap.push_back(sum_t);
    }
    const double sc = LogLogSlope(hs, e_cenic), st = LogLogSlope(hs, e_trap);
    Report("slope_cenic(phase-averaged)", sc);
    Report("slope_trapezoid(phase-averaged)", st);
    EXPECT_NEAR(sc, 1.0, 0.3);
    EXPECT_NEAR(st, 2.0, 0.3);
  }

  // (c) Under error control (configuration (a)): printed only.
  {
    std::printf("  error control, configuration (a):\n");
    for (double acc : {1e-2, 1e-3, 1e-4, 1e-5}) {
      const EnergyRun c = DropBall(m.get(), Cenic(acc), 1.0, 1e4, 2.6);
      StepperOptions ot = Cenic(acc);
      ot.mode = Mode::kTrapezoid;
      const EnergyRun t = DropBall(m.get(), ot, 1.0, 1e4, 2.6);
      EXPECT_TRUE(c.status.ok()) << c.status;
      EXPECT_TRUE(t.status.ok()) << t.status;
      std::printf("  accuracy %.0e: cenic dE %+.4e J (%ld steps, %ld rej)  trapezoid dE %+.4e J "
                  "(%ld steps, %ld rej)\n",
                  acc, c.dE, c.steps, c.rejected, t.dE, t.steps, t.rejected);
    }
  }
}

// ---------------------------------------------------------------------------
// 3. Velocity jumps and the position-only error norm (paper §V-E).

struct StepTrace {
  std::vector<double> t, h;   // end time and size of each accepted step
  std::vector<int> ncon;      // contacts at the end of the step
  std::vector<long> rejected; // rejections before the step
};

TEST(CenicVelocityJump, FreeFlightJumpKeepsTheStep) {
  // A body in free flight: the position error estimate is exactly ¼ g h²
  // whatever the velocity, so a jump of qvel leaves the step unchanged with
  // the default norm. The velocity error estimate of free fall is exactly
  // zero (cenic-math §13.15), so kFullState keeps the step as well: a pure
  // velocity jump without velocity-dependent forces cannot shrink the step
  // under either norm (the difference shows at impacts, next test).
  ModelPtr m = LoadModel(ModelPath("sphere_plane.xml"));
  ASSERT_TRUE(m);
  for (ErrorNormKind kind : {ErrorNormKind::kWeighted, ErrorNormKind::kFullState}) {
    StepperOptions o = Cenic(1e-3);
    o.error_norm = kind;
    DataPtr d = MakeData(m.get(), "drop");
    auto s = MakeStepper(m.get(), o);
    ASSERT_TRUE(s);
    while (d->time < 0.1) ASSERT_TRUE(s->StepOnce(d.get()).ok());
    const double h_before = s->stats().last_h;
    const long rej_before = s->stats().rejected_steps;
    d->qvel[0] += 2.0;
    d->qvel[1] -= 1.0;
    d->qvel[2] += 6.0;  // upwards: stays far from the floor
    std::vector<double> after;
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(s->StepOnce(d.get()).ok());
      after.push_back(s->stats().last_h);
    }
    std::printf("  %-10s h before jump %.6e, after: %.6e %.6e %.6e %.6e %.6e, rejections %ld\n",
                ToString(kind), h_before, after[0], after[1], after[2], after[3], after[4],
                s->stats().rejected_steps - rej_before);
    for (double h : after) EXPECT_EQ(h, h_before) << ToString(kind);
    EXPECT_EQ(s->stats().rejected_steps, rej_before) << ToString(kind);
  }
}

StepTrace TraceImpact(const mjModel* m, ErrorNormKind kind, double T) {
  StepTrace tr;
  StepperOptions o = Cenic(1e-3);
  o.error_norm = kind;
  DataPtr d = MakeData(m, "drop");
  auto s = MakeStepper(m, o);
  if (!s) return tr;
  while (d->time < T) {
    const long rej = s->stats().rejected_steps;
    const absl::Status st = s->StepOnce(d.get());
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) break;
    tr.t.push_back(d->time);
    tr.h.push_back(s->stats().last_h);
    tr.ncon.push_back(d->ncon);
    tr.rejected.push_back(s->stats().rejected_steps - rej);
  }
  return tr;
}

TEST(CenicVelocityJump, ImpactShrinksStepOnlyUnderFullStateNorm) {
  // The impact of the sphere (default compliant contact, impact speed
  // 4.2 m/s) reverses the velocity within a few milliseconds while the
  // position barely changes. Under kFullState the velocity error forces tiny
  // steps through the whole impact; the position-only norm only resolves
  // the contact onset.
  ModelPtr m = LoadModel(ModelPath("sphere_plane.xml"));
  ASSERT_TRUE(m);
  const StepTrace w = TraceImpact(m.get(), ErrorNormKind::kWeighted, 0.5);
  const StepTrace f = TraceImpact(m.get(), ErrorNormKind::kFullState, 0.5);
  ASSERT_FALSE(w.t.empty());
  ASSERT_FALSE(f.t.empty());
  // Free flight (t < 0.4 s): identical steps (velocity error of free fall is 0).
  int n_flight = 0;
  for (size_t i = 0; i < std::min(w.t.size(), f.t.size()) && w.t[i] < 0.4; ++i, ++n_flight)
    EXPECT_EQ(w.h[i], f.h[i]) << "step " << i;
  EXPECT_GT(n_flight, 50);
  // Impact window: from the first step that ends in contact, 20 ms.
  struct Window {
    double h_first = 0, h_min = 1, t0 = 0;
    int steps = 0;
    long rejected = 0;
  };
  auto window = [](const StepTrace& tr) {
    Window win;
    size_t i0 = 0;
    while (i0 < tr.t.size() && tr.ncon[i0] == 0) ++i0;
    if (i0 == tr.t.size()) return win;
    win.t0 = tr.t[i0];
    win.h_first = i0 + 1 < tr.h.size() ? tr.h[i0 + 1] : 0;
    for (size_t i = i0 + 1; i < tr.t.size() && tr.t[i] <= win.t0 + 0.02; ++i) {
      win.h_min = std::min(win.h_min, tr.h[i]);
      win.rejected += tr.rejected[i];
      ++win.steps;
    }
    return win;
  };
  const Window ww = window(w), wf = window(f);
  Report("weighted: contact_time", ww.t0);
  Report("weighted: h_first_after_contact", ww.h_first);
  Report("weighted: h_min_in_impact", ww.h_min);
  Report("weighted: steps_in_impact(20ms)", ww.steps);
  Report("weighted: rejections_in_impact", ww.rejected);
  Report("full_state: contact_time", wf.t0);
  Report("full_state: h_first_after_contact", wf.h_first);
  Report("full_state: h_min_in_impact", wf.h_min);
  Report("full_state: steps_in_impact(20ms)", wf.steps);
  Report("full_state: rejections_in_impact", wf.rejected);
  ASSERT_GT(ww.steps, 0);
  ASSERT_GT(wf.steps, 0);
  // Measured: h_min 2.9e-4 (weighted) vs 4.8e-6 (full state); 15 vs ~400 steps.
  EXPECT_LT(wf.h_first, 0.1 * ww.h_first);
  EXPECT_LT(wf.h_min, 0.1 * ww.h_min);
  EXPECT_GT(wf.steps, 5 * ww.steps);
}

// ---------------------------------------------------------------------------
// 4. Ablations on the cylinder drop at accuracy 1e-3.

// Runs the six ablation variants of one configuration and checks the
// accuracy assertion of test 1 (`bound`) for each.
struct Variant {
  const char* name;
  StepperOptions o;
  RunResult r;
  double error = 0;
};

std::vector<Variant> RunAblations(const mjModel* m, const StepperOptions& config, double T,
                                  const RunResult& ref, double bound) {
  std::vector<Variant> v(3);
  for (auto& x : v) x.o = config;
  v[0].name = "baseline";
  v[1].name = "adaptive_tolerance=off";
  v[1].o.adaptive_tolerance = false;
  v[2].name = "linear_solver=dense";
  v[2].o.solver.linear_solver = LinearSolverKind::kDense;
  std::printf("  %-24s %-10s %6s %4s %6s %7s %7s %7s\n", "variant", "error", "steps", "rej",
              "solves", "newton", "factor", "ls_it");
  for (auto& x : v) {
    x.r = Advance(m, "drop", x.o, T);
    EXPECT_TRUE(x.r.status.ok()) << x.name << ": " << x.r.status;
    x.error = PositionError(m, ref.length_scale, x.r.qpos, ref.qpos);
    const StepperStats& s = x.r.stats;
    std::printf("  %-24s %-10.3e %6ld %4ld %6ld %7ld %7ld %7ld\n", x.name, x.error, s.steps,
                s.rejected_steps, s.solves, s.newton_iterations, s.factorizations,
                s.ls_iterations);
    EXPECT_LE(x.error, bound) << x.name;
  }
  // Every Newton iteration factorizes (no Hessian reuse, cenic-math §8.5);
  // besides, a solve whose extrapolated guess admits no descent returns it
  // after that one factorization (§8.1.1): at most one more per solve.
  const StepperStats& base = v[0].r.stats;
  EXPECT_GE(base.factorizations, base.newton_iterations);
  EXPECT_LE(base.factorizations, base.newton_iterations + base.solves);
  return v;
}

TEST(CenicAblations, CylinderDrop) {
  const char* file = "cylinder_table.xml";
  ModelPtr m = LoadModel(ModelPath(file));
  ASSERT_TRUE(m);
  const double T = 0.6, acc = 1e-3;
  // The accuracy assertions of test 1 at ε = 1e-3, with every speed
  // technique on or off: GlobalAccuracy within 10·ε, the defaults within
  // their half-order bound 2√ε.
  std::printf(" GlobalAccuracy configuration, accuracy 1e-3\n");
  const StepperOptions g = GlobalAccuracy(acc);
  const RunResult& gref = Reference(file, m.get(), "drop", T, 1e-6, g);
  ASSERT_TRUE(gref.status.ok());
  RunAblations(m.get(), g, T, gref, 10 * acc);
  std::printf(" default configuration, accuracy 1e-3\n");
  const RunResult& ref = Reference(file, m.get(), "drop", T, 1e-7);
  ASSERT_TRUE(ref.status.ok());
  // The paper's controller (no penetration check, cenic-math §11.10): the
  // ablations compare the solver's techniques on the paper's step sequence.
  StepperOptions paper = Cenic(acc);
  paper.penetration_tolerance = 0;
  std::vector<Variant> v = RunAblations(m.get(), paper, T, ref, 2 * std::sqrt(acc));
  for (const Variant& x : v) {
    ::testing::Test::RecordProperty(std::string(x.name) + ":newton",
                                    std::to_string(x.r.stats.newton_iterations));
    ::testing::Test::RecordProperty(std::string(x.name) + ":factorizations",
                                    std::to_string(x.r.stats.factorizations));
    ::testing::Test::RecordProperty(std::string(x.name) + ":ls_iterations",
                                    std::to_string(x.r.stats.ls_iterations));
  }
  const StepperStats &base = v[0].r.stats, &fixed_tol = v[1].r.stats;
  // Adaptive tolerance κ·ε_acc = 1e-6 vs fixed 1e-8. The two runs take
  // different step sequences (different problems), so their totals are only
  // printed; on identical problems the looser tolerance never needs more
  // Newton iterations and needs fewer in total (paper Table II).
  std::printf("  newton iterations per solve: adaptive %.3f, fixed tolerance %.3f\n",
              static_cast<double>(base.newton_iterations) / base.solves,
              static_cast<double>(fixed_tol.newton_iterations) / fixed_tol.solves);
  {
    ModelPtr m = LoadModel(ModelPath("cylinder_table.xml"));
    DataPtr d(mj_makeData(m.get()));
    mj_resetDataKeyframe(m.get(), d.get(), 0);
    StepperOptions o;
    o.mode = Mode::kFixed;
    auto st = Stepper::Create(m.get(), o).value();
    icf::IcfSolver solver;
    long loose = 0, tight = 0;
    std::vector<double> v_out;
    for (int i = 0; i < 600; ++i) {
      ASSERT_TRUE(st->Step(d.get()).ok());
      if (i % 10 != 0) continue;
      const icf::IcfModel& p = st->last_problem();
      v_out.resize(p.nv);
      for (double tol : {1e-6, 1e-8}) {
        icf::SolverOptions so;
        so.tolerance = tol;
        // Plain Newton: the duals' start follows the last solve (icf_solver.h, "Policy").
        so.friction_dual = false;
        icf::SolveStats ss;
        ASSERT_EQ(solver.Solve(p, p.v0.data(), so, v_out.data(), &ss), icf::SolveStatus::kConverged);
        (tol == 1e-6 ? loose : tight) += ss.iterations;
        if (tol == 1e-8) {
          EXPECT_LE(loose, tight);
        }
      }
    }
    std::printf("  same problems: %ld Newton iterations at 1e-6, %ld at 1e-8\n", loose, tight);
    EXPECT_LT(loose, tight);
  }
  Report("ls_iterations_per_newton(cubic)",
         static_cast<double>(base.ls_iterations) / base.newton_iterations);
}

// ---------------------------------------------------------------------------
// 5. Conveyor belt with static and dynamic friction (paper §VII-D2, Fig. 14).

constexpr char kConveyorXml[] = R"(
<mujoco model="conveyor">
  <option timestep="0.001"/>
  <custom>
    <numeric name="mjcenic:mu_static:block" data="0.6"/>
  </custom>
  <worldbody>
    <body name="belt">
      <joint name="belt" type="slide" axis="1 0 0"/>
      <geom name="belt" type="box" size="3 0.5 0.05" pos="0 0 -0.05" mass="1000"
            friction="0.3 0.005 0.0001" condim="3"/>
    </body>
    <body name="block" pos="0 0 0.05">
      <freejoint name="block"/>
      <geom name="block" type="box" size="0.05 0.05 0.05" mass="1"
            friction="0.3 0.005 0.0001" condim="3"/>
    </body>
  </worldbody>
  <actuator>
    <velocity name="drive" joint="belt" kv="1e6" ctrlrange="-10 10"/>
  </actuator>
</mujoco>
)";

struct ConveyorTrace {
  std::vector<double> t, slip, force;
  StepperStats stats;
};

// Belt velocity v_b(t) = A sin(ωt) through a stiff velocity servo, ctrl set
// before each Step() to the belt velocity at the end of the step. Friction
// on the block from its momentum change over each outer step (1 ms).
ConveyorTrace RunConveyor(const mjModel* m, const StepperOptions& o, double A, double w,
                          double T) {
  ConveyorTrace tr;
  DataPtr d = MakeData(m);
  auto s = MakeStepper(m, o);
  if (!s) return tr;
  const double dt = m->opt.timestep, mass = m->body_mass[2];
  const int block_vx = 1;  // qvel index: belt slide 0, block free joint 1..6
  while (d->time < T - 0.5 * dt) {
    d->ctrl[0] = A * std::sin(w * (d->time + dt));
    const double v0 = d->qvel[block_vx];
    const absl::Status st = s->Step(d.get());
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) break;
    tr.t.push_back(d->time);
    tr.slip.push_back(d->qvel[block_vx] - d->qvel[0]);
    tr.force.push_back(mass * (d->qvel[block_vx] - v0) / dt);
  }
  tr.stats = s->stats();
  return tr;
}

TEST(CenicConveyor, StickSlipWithStaticFriction) {
  // A = 1 m/s, ω = 2π rad/s (peak belt acceleration 6.28 m/s² > μ_s g =
  // 5.89 m/s²). μ_d = 0.3 (MuJoCo friction), μ_s = 0.6 (custom numeric
  // mjcenic:mu_static:block). While stuck the friction force is m·a_belt;
  // the block breaks away when that reaches μ_s N and then slides with μ_d N
  // until its velocity meets the belt's again.
  ModelPtr m = LoadModelFromString("conveyor", kConveyorXml);
  ASSERT_TRUE(m);
  ASSERT_NEAR(m->body_mass[2], 1.0, 1e-12);
  const double A = 1.0, w = 2 * std::numbers::pi, T = 3.0;
  const double mass = 1.0, N = mass * 9.81, mu_s = 0.6, mu_d = 0.3;
  const ConveyorTrace tr = RunConveyor(m.get(), Cenic(1e-3), A, w, T);
  ASSERT_GT(tr.t.size(), 2900u);
  const std::vector<double>&t = tr.t, &slip = tr.slip, &force = tr.force;
  const int n = static_cast<int>(t.size());
  // Stick phases: contiguous runs with |slip| < 1e-3 m/s of at least 20 ms.
  struct Phase {
    int begin, end;  // [begin, end)
  };
  std::vector<Phase> sticks;
  for (int i = 0; i < n;) {
    if (std::abs(slip[i]) >= 1e-3) {
      ++i;
      continue;
    }
    int j = i;
    while (j < n && std::abs(slip[j]) < 1e-3) ++j;
    if (j - i >= 20) sticks.push_back({i, j});
    i = j;
  }
  Report("stick_phases", sticks.size());
  EXPECT_GE(sticks.size(), 4u);
  // Break-away: a stick phase followed by sliding (|slip| > 1e-2 within 10 ms).
  int breakaways = 0;
  for (const Phase& p : sticks) {
    bool breaks = false;
    for (int i = p.end; i < std::min(n, p.end + 10); ++i) breaks |= std::abs(slip[i]) > 1e-2;
    if (!breaks) continue;
    ++breakaways;
    double peak = 0;  // over the last 10 ms of the stick phase
    for (int i = std::max(p.begin, p.end - 10); i < p.end; ++i)
      peak = std::max(peak, std::abs(force[i]));
    std::printf("  stick %.3f–%.3f s (%d ms): peak |friction| before break-away %.4f N "
                "= %.3f μ_s N\n",
                t[p.begin], t[p.end - 1], p.end - p.begin, peak, peak / (mu_s * N));
    EXPECT_NEAR(peak / (mu_s * N), 1.0, 0.15) << "stick phase ending at " << t[p.end - 1];
  }
  Report("breakaways", breakaways);
  EXPECT_GE(breakaways, 3);
  // Sliding: |slip| > 1e-2 m/s (well beyond the μ_s → μ_d blend, which ends
  // at 20 v_s = 2 mm/s), away from transitions.
  double f_min = 1e9, f_max = 0, f_sum = 0;
  int n_slide = 0;
  for (int i = 3; i < n; ++i) {
    bool sliding = true;
    for (int j = i - 3; j <= i; ++j) sliding &= std::abs(slip[j]) > 1e-2;
    if (!sliding) continue;
    const double f = std::abs(force[i]);
    f_min = std::min(f_min, f);
    f_max = std::max(f_max, f);
    f_sum += f;
    ++n_slide;
  }
  ASSERT_GT(n_slide, 100);
  Report("sliding_samples", n_slide);
  Report("sliding |friction| mean / (mu_d N)", f_sum / n_slide / (mu_d * N));
  Report("sliding |friction| min / (mu_d N)", f_min / (mu_d * N));
  Report("sliding |friction| max / (mu_d N)", f_max / (mu_d * N));
  EXPECT_NEAR(f_min / (mu_d * N), 1.0, 0.1);
  EXPECT_NEAR(f_max / (mu_d * N), 1.0, 0.1);
  Report("internal_steps", tr.stats.steps);
  Report("rejected_steps", tr.stats.rejected_steps);

  // The same μ_s through ContactOptions::mu_static_ratio = 2 (model without
  // the custom numeric) gives the same motion.
  std::string xml = kConveyorXml;
  const size_t a = xml.find("  <custom>"), b = xml.find("</custom>\n");
  ASSERT_NE(a, std::string::npos);
  xml.erase(a, b + std::strlen("</custom>\n") - a);
  ModelPtr m2 = LoadModelFromString("conveyor_ratio", xml);
  ASSERT_TRUE(m2);
  StepperOptions o2 = Cenic(1e-3);
  o2.contact.mu_static_ratio = 2;
  const ConveyorTrace tr2 = RunConveyor(m2.get(), o2, A, w, T);
  ASSERT_EQ(tr2.slip.size(), slip.size());
  double max_diff = 0;
  for (size_t i = 0; i < slip.size(); ++i)
    max_diff = std::max(max_diff, std::abs(tr2.slip[i] - slip[i]));
  Report("max |slip difference| (ratio vs numeric)", max_diff);
  EXPECT_LT(max_diff, 1e-9);
}

// ---------------------------------------------------------------------------
// 6. Time keeping and determinism.

TEST(CenicTimeKeeping, AdvanceToEndsExactlyOnTarget) {
  ModelPtr m = LoadModel(ModelPath("sphere_plane.xml"));
  ASSERT_TRUE(m);
  DataPtr d = MakeData(m.get(), "drop");
  auto s = MakeStepper(m.get(), Cenic(1e-3));
  ASSERT_TRUE(s);
  // Awkward targets, including ones inside the impact (≈0.428 s).
  for (double target : {0.1234567, 0.1234568, 1.0 / 3.0, 0.4271, 0.42811111, 0.5 + 1e-9, 0.7654321,
                        1.0}) {
    ASSERT_TRUE(s->AdvanceTo(d.get(), target).ok());
    EXPECT_EQ(d->time, target);  // bitwise
  }
  // Advancing to the current time is a no-op.
  const std::vector<double> q(d->qpos, d->qpos + m->nq);
  ASSERT_TRUE(s->AdvanceTo(d.get(), d->time).ok());
  EXPECT_EQ(d->time, 1.0);
  for (int i = 0; i < m->nq; ++i) EXPECT_EQ(d->qpos[i], q[i]);
  // Going backwards is an error and leaves the state alone.
  EXPECT_FALSE(s->AdvanceTo(d.get(), 0.5).ok());
  EXPECT_EQ(d->time, 1.0);
  Report("steps", s->stats().steps);
}

// Cylinder just above the table, falling at 2 m/s: 37 steps of 1 ms contain
// the impact on the rim. (near_impact = false: the "drop" keyframe, free fall.)
DataPtr CylinderStart(const mjModel* m, bool near_impact) {
  DataPtr d = MakeData(m, "drop");
  if (near_impact) {
    d->qpos[2] -= 0.28;  // lowest rim point ≈2 cm above the table
    d->qvel[2] = -2.0;
    mj_forward(m, d.get());
  }
  return d;
}

struct StepRun {
  std::vector<double> qpos, qvel;
  StepperStats stats;
  double time = 0;
  double length_scale = 0;
};

// n_steps calls of Step(), then (advance_to > 0) one AdvanceTo(advance_to).
StepRun RunCylinder(const mjModel* m, bool near_impact, int n_steps, double advance_to,
                    double acc, bool dense_output = false) {
  StepRun r;
  DataPtr d = CylinderStart(m, near_impact);
  StepperOptions o = Cenic(acc);
  o.dense_output = dense_output;
  auto s = MakeStepper(m, o);
  if (!s) return r;
  for (int i = 0; i < n_steps; ++i) EXPECT_TRUE(s->Step(d.get()).ok());
  if (advance_to > 0) {
    EXPECT_TRUE(s->AdvanceTo(d.get(), advance_to).ok());
  }
  r.qpos.assign(d->qpos, d->qpos + m->nq);
  r.qvel.assign(d->qvel, d->qvel + m->nv);
  r.stats = s->stats();
  r.time = d->time;
  r.length_scale = s->length_scale();
  return r;
}

TEST(CenicTimeKeeping, RepeatedStepIsDeterministicAndAccurate) {
  ModelPtr m = LoadModel(ModelPath("cylinder_table.xml"));
  ASSERT_TRUE(m);
  const int N = 37;
  const double acc = 1e-3, dt = m->opt.timestep;
  // Determinism: two fresh steppers, the same 37 Step() calls through an impact.
  const StepRun a = RunCylinder(m.get(), true, N, 0, acc);
  const StepRun b = RunCylinder(m.get(), true, N, 0, acc);
  Report("time_after_37_steps - 37*dt", a.time - N * dt);
  EXPECT_NEAR(a.time, N * dt, 1e-12);
  EXPECT_EQ(a.time, b.time);
  for (int i = 0; i < m->nq; ++i) EXPECT_EQ(a.qpos[i], b.qpos[i]) << "qpos " << i;
  for (int i = 0; i < m->nv; ++i) EXPECT_EQ(a.qvel[i], b.qvel[i]) << "qvel " << i;
  EXPECT_EQ(a.stats.steps, b.stats.steps);
  EXPECT_EQ(a.stats.rejected_steps, b.stats.rejected_steps);
  EXPECT_EQ(a.stats.newton_iterations, b.stats.newton_iterations);

  // 37 Step() calls vs one AdvanceTo(37·dt). By default every call forces an
  // interval end (the step is capped at dt); with dense_output the repeated
  // calls do not cap the step: they take the controller's steps (at most one
  // more, the step that ends past 37·dt) and read the state inside them.
  // Either way the calls and AdvanceTo are different discretizations of the
  // same solution: they agree to the accumulated (global) error, not
  // bitwise. In free fall that is a few ε (plus the chord interpolation,
  // g h²/8 inside a step); through the impact the first-order global error
  // (∝ √ε, see CenicConvergence) dominates.
  for (bool near_impact : {false, true}) {
    const StepRun capped = near_impact ? a : RunCylinder(m.get(), false, N, 0, acc);
    const StepRun steps = RunCylinder(m.get(), near_impact, N, 0, acc, true);
    EXPECT_NEAR(steps.time, N * dt, 1e-12);
    const StepRun adv = RunCylinder(m.get(), near_impact, 0, N * dt, acc);
    EXPECT_EQ(adv.time, N * dt);  // bitwise
    EXPECT_NEAR(capped.time, N * dt, 1e-12);
    const std::string tag = near_impact ? "impact: " : "free fall: ";
    Report(tag + "steps(37 x Step)", steps.stats.steps);
    Report(tag + "steps(37 x Step, dense_output=false)", capped.stats.steps);
    Report(tag + "steps(AdvanceTo)", adv.stats.steps);
    EXPECT_LE(steps.stats.steps, adv.stats.steps + 1);
    EXPECT_GT(capped.stats.steps, adv.stats.steps);
    for (const StepRun* r : {&steps, &capped}) {
      const double diff = PositionError(m.get(), adv.length_scale, r->qpos, adv.qpos);
      Report(tag + (r == &steps ? "difference/accuracy" : "difference/accuracy (capped)"),
             diff / acc);
      EXPECT_GT(diff, 0.0);
      if (near_impact) {
        EXPECT_LE(diff, 2 * std::sqrt(acc));
      } else {
        EXPECT_LE(diff, 10 * acc);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// 7. Hard clutter: stiff contact, tight stiction tolerance.

TEST(CenicHardClutter, CompletesOneSecond) {
  ModelPtr m = LoadModel(ModelPath("clutter.xml"));
  ASSERT_TRUE(m);
  StepperOptions o = Cenic(1e-2);
  o.contact.stiffness_scale = 10;
  o.icf.stiction_tolerance = 1e-5;
  DataPtr d = MakeData(m.get(), "drop");
  auto s = MakeStepper(m.get(), o);
  ASSERT_TRUE(s);
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status st = s->AdvanceTo(d.get(), 1.0);
  const double wall = Seconds(t0);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(d->time, 1.0);
  const StepperStats& S = s->stats();
  Report("steps", S.steps);
  Report("rejected_steps", S.rejected_steps);
  Report("solves", S.solves);
  Report("newton_iterations", S.newton_iterations);
  Report("factorizations", S.factorizations);
  Report("ls_iterations", S.ls_iterations);
  Report("geometry_queries", S.geometry_queries);
  Report("h_min", S.h_min);
  Report("h_median", S.h_median);
  Report("h_max", S.h_max);
  Report("max_penetration", S.max_penetration);
  Report("wall_s", wall);
  EXPECT_GT(S.steps, 0);
  EXPECT_EQ(S.solves, 3 * (S.steps + S.rejected_steps));
  // Everything came to rest inside the bin (nothing exploded or tunnelled).
  for (int b = 1; b < m->nbody; ++b) {
    if (m->body_jntnum[b] == 0) continue;
    const double* x = d->xpos + 3 * b;
    EXPECT_LT(std::abs(x[0]), 0.2) << mj_id2name(m.get(), mjOBJ_BODY, b);
    EXPECT_LT(std::abs(x[1]), 0.2) << mj_id2name(m.get(), mjOBJ_BODY, b);
    EXPECT_GT(x[2], 0.0) << mj_id2name(m.get(), mjOBJ_BODY, b);
    EXPECT_LT(x[2], 0.35) << mj_id2name(m.get(), mjOBJ_BODY, b);
  }
}

// (8. The step-size controller: step_size_controller_test.cc.)

TEST(CenicController, FreeFallRunUsesQuarterGHSquared) {
  // kCenic on the sphere in free fall with max_step 0.1, initial_step 0.01:
  // the error estimate is ¼ g h² exactly (cenic-math §13.15), so the first
  // accepted step proposes 0.9 h (ε/e)^½. With the unweighted Drake norm
  // (or the weighted norm with L = 1) that is 0.0181735 s, after which the
  // step stays put (e = 0.81 ε). With the default weighted norm (L = 0.1 m
  // for this sphere) the error is ¼ g h² / L = 2.4525e-3 > ε: the first
  // attempt is rejected and retried with 0.9 h (ε L / e)^½ = 5.747e-3 s.
  ModelPtr m = LoadModel(ModelPath("sphere_plane.xml"));
  ASSERT_TRUE(m);
  const double g = 9.81, acc = 1e-3;
  for (int variant = 0; variant < 3; ++variant) {
    StepperOptions o = Cenic(acc);
    o.max_step = 0.1;
    o.initial_step = 0.01;
    if (variant == 0) o.error_norm = ErrorNormKind::kDrake;
    if (variant == 1) o.length_scale = 1.0;
    DataPtr d = MakeData(m.get(), "drop");
    auto s = MakeStepper(m.get(), o);
    ASSERT_TRUE(s);
    const double L = variant == 0 ? 1.0 : s->length_scale();
    ASSERT_TRUE(s->StepOnce(d.get()).ok());
    const double h1 = s->stats().last_h, next1 = s->next_step();
    // Error implied by the controller's proposal: e = ε (0.9 h / h_next)².
    const double e_implied = acc * std::pow(0.9 * h1 / next1, 2);
    std::printf("  %-22s L %.3g: first step %.7f (rejected %ld), next %.7f, implied e %.6e, "
                "¼gh²/L %.6e\n",
                variant == 0 ? "drake" : variant == 1 ? "weighted L=1" : "weighted default", L,
                h1, s->stats().rejected_steps, next1, e_implied, 0.25 * g * h1 * h1 / L);
    if (variant < 2) {
      EXPECT_EQ(h1, 0.01);
      EXPECT_EQ(s->stats().rejected_steps, 0);
      EXPECT_NEAR(next1, 0.0181735, 1e-7);
      EXPECT_NEAR(e_implied, 2.4525e-4, 1e-9);
      // Steady state: e = 0.81 ε, the step stays exactly.
      for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(s->StepOnce(d.get()).ok());
        EXPECT_EQ(s->stats().last_h, next1);
        EXPECT_EQ(s->next_step(), next1);
      }
      EXPECT_EQ(s->stats().rejected_steps, 0);
    } else {
      EXPECT_NEAR(L, 0.1, 1e-12);
      EXPECT_EQ(s->stats().rejected_steps, 1);
      EXPECT_NEAR(h1, 0.9 * 0.01 * std::sqrt(acc * L / (0.25 * g * 1e-4)), 1e-9);
      // The retry's own error ¼ g h1² / L and its proposal.
      const double e1 = 0.25 * g * h1 * h1 / L;
      EXPECT_NEAR(e1 / acc, 0.81, 1e-6);
      EXPECT_EQ(next1, h1);  // e1 = 0.81 ε: inside the dead band
    }
  }
}

// Regression: a target that lies a few ulps beyond a run of h_max steps must
// be reached (the last step is stretched by < 0.1 % past h_max and accepted).
TEST(CenicTimeKeeping, ReachesTargetsAfterManyMaximumSteps) {
  const char* xml = R"(<mujoco><option gravity="0 0 0"/><worldbody><body>
      <freejoint/><geom size=".1" contype="0" conaffinity="0"/></body></worldbody></mujoco>)";
  std::string err;
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  ASSERT_NE(m, nullptr) << err;
  DataPtr d(mj_makeData(m.get()));
  d->qvel[0] = 1.0;  // uniform motion: zero error, steps grow to max_step
  StepperOptions o;
  o.mode = Mode::kCenic;
  o.max_step = 0.1;
  auto s = Stepper::Create(m.get(), o).value();
  for (double t : {1.0, 4.0, 5.0, 7.3}) {
    ASSERT_TRUE(s->AdvanceTo(d.get(), t).ok());
    EXPECT_EQ(d->time, t);
  }
  EXPECT_LT(s->stats().steps, 90);
  EXPECT_EQ(s->stats().rejected_steps, 0);
  EXPECT_NEAR(d->qpos[0], 7.3, 1e-12);
}

}  // namespace
}  // namespace mjcenic
