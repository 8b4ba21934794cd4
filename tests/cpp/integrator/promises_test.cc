// Documented promises (README, docs/) that no other test pins down, each against an independent
// truth: a closed form, the exact recursion of the method on a
// linear system, a conservation law, mj_step where both must agree, or a
// quantity recomputed by MuJoCo (mj_forward / mj_collision) at the stepped
// state rather than read from mjcenic's statistics. Each test is aimed at a
// mutation of scripts/mutants.py that the rest of the suite let through.
//
// Implicit joint damping and stiffness (docs/mujoco-mapping.md §3.6) make one
// fixed step of ICF the implicit Euler step of the linear system
//   m v̇ = −k q − b v:   [q₁; v₁] = (I − h A)⁻¹ [q₀; v₀],  A = [0 1; −k/m −b/m],
// which the tests evaluate independently with 2×2 algebra.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

ModelPtr Xml(const std::string& xml) { return test_util::LoadXml(xml); }

std::unique_ptr<Stepper> Make(const mjModel* m, const StepperOptions& o) {
  return test_util::MakeStepper(m, o);
}

StepperOptions Fixed() {
  StepperOptions o;
  o.mode = Mode::kFixed;
  o.max_step = 0;
  return o;
}

// Penetration recomputed by MuJoCo at d's state on a separate mjData:
// max(−dist) over the contacts mj_forward finds (not mjcenic's statistic).
double RecomputedPenetration(const mjModel* m, const mjData* d) {
  DataPtr c(mj_makeData(m));
  mj_copyData(c.get(), m, d);
  mj_forward(m, c.get());
  double p = 0;
  for (int i = 0; i < c->ncon; ++i)
    if (c->contact[i].exclude == 0) p = std::max(p, -c->contact[i].dist);
  return p;
}

// n steps of implicit Euler on m q̈ = −k q − b q̇ from (q, v).
void ImplicitEuler(double m, double k, double b, double h, int n, double* q, double* v) {
  // (I − hA) = [1, −h; h k/m, 1 + h b/m]
  const double a11 = 1, a12 = -h, a21 = h * k / m, a22 = 1 + h * b / m;
  const double det = a11 * a22 - a12 * a21;
  for (int i = 0; i < n; ++i) {
    const double q1 = (a22 * *q - a12 * *v) / det;
    const double v1 = (-a21 * *q + a11 * *v) / det;
    *q = q1;
    *v = v1;
  }
}

// A 2 kg slide joint with spring k and damper b (springref 0), gravity off.
ModelPtr Oscillator(double k, double b, const char* extra_actuator = "") {
  char xml[1500];
  std::snprintf(xml, sizeof(xml), R"(
<mujoco>
  <option timestep="0.001" gravity="0 0 0"/>
  <worldbody>
    <body>
      <joint name="x" type="slide" axis="1 0 0" stiffness="%g" damping="%g"/>
      <geom type="sphere" size="0.05" mass="2" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <actuator>%s</actuator>
</mujoco>)",
                k, b, extra_actuator);
  return Xml(xml);
}

// q and v after n fixed steps from q = 0.1, v = 0.5.
void RunOscillator(const mjModel* m, int n, double* q, double* v) {
  DataPtr d(mj_makeData(m));
  d->qpos[0] = 0.1;
  d->qvel[0] = 0.5;
  mj_forward(m, d.get());
  auto s = Make(m, Fixed());
  ASSERT_TRUE(s);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(s->Step(d.get()).ok());
  *q = d->qpos[0];
  *v = d->qvel[0];
}

TEST(Promises, JointDampingAndStiffnessAreImplicitEuler) {
  const double mass = 2, k = 200, b = 8, h = 0.001;
  const int n = 500;
  for (auto [kk, bb] : {std::pair{k, b}, std::pair{k, 0.0}, std::pair{0.0, b}}) {
    ModelPtr m = Oscillator(kk, bb);
    ASSERT_TRUE(m);
    double q, v;
    RunOscillator(m.get(), n, &q, &v);
    double qe = 0.1, ve = 0.5;
    ImplicitEuler(mass, kk, bb, h, n, &qe, &ve);
    // Continuous closed form (underdamped): the method's global error is O(h).
    const double w0 = std::sqrt(kk / mass), zeta = kk > 0 ? bb / (2 * std::sqrt(kk * mass)) : 0;
    std::printf("  k=%g b=%g: q %.9f v %.9f, implicit Euler %.9f %.9f\n", kk, bb, q, v, qe, ve);
    // The Newton solve converges to solver_tolerance (relative ~1e-10 on a
    // linear problem: exact after one iteration up to round-off).
    EXPECT_NEAR(q, qe, 1e-8);
    EXPECT_NEAR(v, ve, 1e-7);
    if (kk > 0 && bb > 0) {
      const double t = n * h, wd = w0 * std::sqrt(1 - zeta * zeta);
      const double qc = std::exp(-zeta * w0 * t) *
                        (0.1 * std::cos(wd * t) + (0.5 + zeta * w0 * 0.1) / wd * std::sin(wd * t));
      // Implicit Euler's amplitude error over t: ~ h ω² t / 2 relative.
      const double amplitude = std::hypot(0.1, 0.5 / w0);
      EXPECT_NEAR(q, qc, amplitude * h * w0 * w0 * t / 2);
    }
  }
}

TEST(Promises, ActuatorDampingAddsToTheJointDamping) {
  // MuJoCo's actuator damping (passive, along the transmission, gear 2):
  // b_eff = b_joint + b_act·gear² (docs/mujoco-mapping.md §3.6).
  ModelPtr m = Oscillator(200, 2, R"(<motor joint="x" gear="2" damping="1.5"/>)");
  ASSERT_TRUE(m);
  double q, v;
  RunOscillator(m.get(), 300, &q, &v);
  double qe = 0.1, ve = 0.5;
  ImplicitEuler(2, 200, 2 + 1.5 * 4, 0.001, 300, &qe, &ve);
  std::printf("  q %.9f v %.9f, implicit Euler (b = 8) %.9f %.9f\n", q, v, qe, ve);
  EXPECT_NEAR(q, qe, 1e-8);
  EXPECT_NEAR(v, ve, 1e-7);
}

// A free 1.5 kg sphere (I = 2/5 m r²) in zero gravity, no contacts.
ModelPtr FreeSphere() {
  return Xml(R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <body name="ball" pos="0 0 1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1.5" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>)");
}

TEST(Promises, XfrcAppliedChangesMomentumByForceTimesTime) {
  ModelPtr m = FreeSphere();
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s);
  const double F[3] = {2, -1, 0.5}, tau[3] = {0.003, 0, -0.006}, T = 0.1;
  std::copy(F, F + 3, d->xfrc_applied + 6);
  std::copy(tau, tau + 3, d->xfrc_applied + 9);
  ASSERT_TRUE(s->AdvanceTo(d.get(), T).ok());
  // Linear momentum: m Δv = F T exactly (constant force at the COM). Angular:
  // the sphere's inertia is isotropic, so I Δω = τ T in any frame.
  const double mass = 1.5, I = 0.4 * mass * 0.01;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(mass * d->qvel[i], F[i] * T, 1e-9) << i;
    EXPECT_NEAR(I * d->qvel[3 + i], tau[i] * T, 1e-9) << i;
  }
}

TEST(Promises, PassiveCallbackForceActs) {
  // mjcb_passive adds a force to qfrc_passive; mjcenic takes it explicitly at
  // the start of each solve: a constant 3 N along x gives m Δv = 3 N · T.
  ModelPtr m = FreeSphere();
  ASSERT_TRUE(m);
  mjcb_passive = [](const mjModel*, mjData* d) { d->qfrc_passive[0] += 3.0; };
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  auto s = Make(m.get(), StepperOptions{});
  const bool ok = s && s->AdvanceTo(d.get(), 0.2).ok();
  mjcb_passive = nullptr;
  ASSERT_TRUE(ok);
  EXPECT_NEAR(1.5 * d->qvel[0], 3.0 * 0.2, 1e-9);
}

// A slide joint driven by an integrator actuator (na = 1) and a mocap body:
// every input array docs/how-it-works.md, "Errors", checks is present.
ModelPtr AllInputs() {
  return Xml(R"(
<mujoco>
  <worldbody>
    <body name="target" mocap="true" pos="1 0 0"/>
    <body name="b">
      <joint name="x" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="1"/>
    </body>
  </worldbody>
  <actuator>
    <general joint="x" dyntype="integrator" gainprm="1"/>
  </actuator>
</mujoco>)");
}

TEST(Promises, EveryNonFiniteInputIsRefusedByName) {
  ModelPtr m = AllInputs();
  ASSERT_TRUE(m);
  ASSERT_EQ(m->na, 1);
  ASSERT_EQ(m->nmocap, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* name;
    double* (*field)(mjData*);
    int index;
    double value;
  };
  const Case cases[] = {
      {"qpos", [](mjData* d) { return d->qpos; }, 0, nan},
      {"qvel", [](mjData* d) { return d->qvel; }, 0, inf},
      {"act", [](mjData* d) { return d->act; }, 0, nan},
      {"ctrl", [](mjData* d) { return d->ctrl; }, 0, nan},
      {"qfrc_applied", [](mjData* d) { return d->qfrc_applied; }, 0, -inf},
      {"xfrc_applied", [](mjData* d) { return d->xfrc_applied; }, 6 * 2 + 4, nan},
      {"mocap_pos", [](mjData* d) { return d->mocap_pos; }, 1, nan},
      {"mocap_quat", [](mjData* d) { return d->mocap_quat; }, 3, inf},
  };
  for (const Case& c : cases) {
    for (Mode mode : {Mode::kFixed, Mode::kCenic}) {
      DataPtr d(mj_makeData(m.get()));
      d->qpos[0] = 0.2;
      d->qvel[0] = 0.3;
      mj_forward(m.get(), d.get());
      StepperOptions o;
      o.mode = mode;
      auto s = Make(m.get(), o);
      ASSERT_TRUE(s);
      c.field(d.get())[c.index] = c.value;
      const absl::Status st = s->Step(d.get());
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.name << ": " << st;
      const std::string want = std::string(c.name) + "[" + std::to_string(c.index) + "]";
      EXPECT_NE(std::string(st.message()).find(want), std::string::npos)
          << "expected '" << want << "' in: " << st.message();
      EXPECT_EQ(d->time, 0.0) << c.name;
      if (std::string(c.name) != "qpos") {
        EXPECT_EQ(d->qpos[0], 0.2) << c.name;
      }
    }
  }
}

// A 1 kg sphere resting on a plane, its contact parameters given as MJCF
// attributes.
ModelPtr RestingSphere(const char* geom_attrs, const char* option_attrs = "",
                       const char* flags = "") {
  char xml[1500];
  std::snprintf(xml, sizeof(xml), R"(
<mujoco>
  <option timestep="0.002" %s>%s</option>
  <worldbody>
    <geom type="plane" size="2 2 0.1" %s/>
    <body pos="0 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" %s/>
    </body>
  </worldbody>
</mujoco>)",
                option_attrs, flags, geom_attrs, geom_attrs);
  return Xml(xml);
}

// Penetration recomputed by MuJoCo after settling for T under `stepper`
// (mjcenic) or mj_step (stepper == nullptr).
double SettledPenetration(const mjModel* m, Stepper* stepper, double T) {
  DataPtr d(mj_makeData(m));
  mj_forward(m, d.get());
  if (stepper) {
    EXPECT_TRUE(stepper->AdvanceTo(d.get(), T).ok());
  } else {
    while (d->time < T - 1e-12) mj_step(m, d.get());
  }
  return RecomputedPenetration(m, d.get());
}

TEST(Promises, ContactStiffnessIsCappedAtFourStepsPerPeriod) {
  // solref direct −1e7: MuJoCo's stiffness per mass ~ 2e8 1/s², far above the
  // cap ω_max = 2π / (4 · timestep): k = m_c ω_max² and the sphere rests at
  // x = g / ω_max² (mapping §5.7 step 4).
  ModelPtr m = RestingSphere(R"(solref="-1e7 -100")");
  ASSERT_TRUE(m);
  const double w_max = 2 * std::numbers::pi / (4 * 0.002);
  const double x_exact = 9.81 / (w_max * w_max);
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s);
  const double x = SettledPenetration(m.get(), s.get(), 0.6);
  std::printf("  capped rest penetration %.6g m (g / w_max^2 = %.6g)\n", x, x_exact);
  EXPECT_NEAR(x, x_exact, 0.01 * x_exact);
  ASSERT_EQ(s->last_problem().contacts.size(), 1);
  EXPECT_NEAR(s->last_problem().contacts.k[0], w_max * w_max, 1e-6 * w_max * w_max);
}

TEST(Promises, PyramidalConeFactorKeepsMujocosRestingPenetration) {
  // μ = 0.5, condim 3, pyramidal: λ = 2·impratio/(μ²(1+μ²)) = 6.4
  // (docs/mujoco-mapping.md §5.7, step 3). The resting penetration is
  // MuJoCo's: mj_step's own rest, recomputed the same way, within 2 % (the
  // mapping solves for mj_step's equilibrium; with λ = 1 the contact would be
  // 6.4x softer and rest deeper).
  ModelPtr m = RestingSphere(R"(friction="0.5 0.005 0.0001")", R"(cone="pyramidal")");
  ASSERT_TRUE(m);
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s);
  const double x = SettledPenetration(m.get(), s.get(), 0.6);
  const double x_mj = SettledPenetration(m.get(), nullptr, 0.6);
  std::printf("  pyramidal mu=0.5: rest penetration %.6g m, mj_step %.6g m\n", x, x_mj);
  EXPECT_NEAR(x, x_mj, 0.02 * x_mj);
}

TEST(Promises, RefsafeClampsTheTimeConstant) {
  // solref τ = 0.001 < 2·timestep: with refsafe (default) MuJoCo uses τ = 2·timestep
  // and mjcenic rests at mj_step's penetration; with refsafe disabled τ itself
  // (K 4x larger, beyond the cap: mjcenic rests at the cap's g / ω_max², while
  // mj_step at this τ is unstable and bounces the ball off).
  ModelPtr m = RestingSphere(R"(solref="0.001 1")");
  ASSERT_TRUE(m);
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s);
  const double x = SettledPenetration(m.get(), s.get(), 0.6);
  const double x_mj = SettledPenetration(m.get(), nullptr, 0.6);
  std::printf("  refsafe on: rest penetration %.6g m, mj_step %.6g m\n", x, x_mj);
  EXPECT_NEAR(x, x_mj, 0.02 * x_mj);
  ModelPtr off = RestingSphere(R"(solref="0.001 1")", "", R"(<flag refsafe="disable"/>)");
  ASSERT_TRUE(off);
  auto s_off = Make(off.get(), StepperOptions{});
  ASSERT_TRUE(s_off);
  const double w_max = 2 * std::numbers::pi / (4 * 0.002);
  const double x_off = SettledPenetration(off.get(), s_off.get(), 0.6);
  std::printf("  refsafe off: rest penetration %.6g m (cap: %.6g m)\n", x_off, 9.81 / (w_max * w_max));
  EXPECT_NEAR(x_off, 9.81 / (w_max * w_max), 0.01 * x_off);
  EXPECT_GT(x, 1.05 * x_off);
}

TEST(Promises, MaxPenetrationStatisticIsThePenetrationOfTheStates) {
  // A 1 kg sphere dropped from 0.3 m. Fixed mode queries geometry once per
  // step, at the state it ends with: the statistic is exactly the max of the
  // penetration MuJoCo recomputes at every stepped state. Cenic also queries
  // midpoints and rejected attempts: at least the accepted states' maximum.
  ModelPtr m = RestingSphere("");
  ASSERT_TRUE(m);
  for (Mode mode : {Mode::kFixed, Mode::kCenic}) {
    DataPtr d(mj_makeData(m.get()));
    d->qpos[2] = 0.3;
    mj_forward(m.get(), d.get());
    StepperOptions o = mode == Mode::kFixed ? Fixed() : StepperOptions{};
    auto s = Make(m.get(), o);
    ASSERT_TRUE(s);
    double recomputed = RecomputedPenetration(m.get(), d.get());
    while (d->time < 0.4) {
      ASSERT_TRUE(s->StepOnce(d.get()).ok());
      recomputed = std::max(recomputed, RecomputedPenetration(m.get(), d.get()));
    }
    // mjcenic::MaxPenetration (also what mjcenic-run and compare report for
    // mj_step) is the same recomputation.
    {
      DataPtr c(mj_makeData(m.get()));
      mj_copyData(c.get(), m.get(), d.get());
      mj_forward(m.get(), c.get());
      EXPECT_EQ(MaxPenetration(c.get()), RecomputedPenetration(m.get(), d.get()));
    }
    const double stat = s->stats().max_penetration;
    std::printf("  %s: max_penetration %.6g m, recomputed %.6g m\n",
                mode == Mode::kFixed ? "fixed" : "cenic", stat, recomputed);
    ASSERT_GT(recomputed, 1e-4);
    if (mode == Mode::kFixed) {
      EXPECT_NEAR(stat, recomputed, 1e-12);
    } else {
      EXPECT_GE(stat, recomputed);
      // Intermediate states lie between accepted ones: a deeper one than the
      // deepest accepted state by more than the local error is impossible.
      EXPECT_LE(stat, 1.5 * recomputed);
    }
  }
}

TEST(Promises, TorsionalFrictionUsesEachContactsOwnNormalForce) {
  // Two balls, 1 kg and 4 kg, condim 4, μ_spin = 0.01: bounds μ_spin m g =
  // 0.098 and 0.392 N·m. A torque of 0.2 N·m on each: the light ball spins
  // up at (τ − μ_spin m g)/I, the heavy one sticks. Each torque row must take
  // the normal force of its own contact.
  ModelPtr m = Xml(R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1" condim="4" friction="1 0.01 0"/>
    <body name="light" pos="-0.5 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" condim="4" friction="1 0.01 0"/>
    </body>
    <body name="heavy" pos="0.5 0 0.1">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="4" condim="4" friction="1 0.01 0"/>
    </body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.accuracy = 1e-4;
  auto s = Make(m.get(), o);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->AdvanceTo(d.get(), 0.2).ok());
  const double tau = 0.2;
  d->qfrc_applied[5] = tau;
  d->qfrc_applied[11] = tau;
  ASSERT_TRUE(s->AdvanceTo(d.get(), 0.5).ok());
  const double I = 0.4 * 1 * 0.01, w_exact = (tau - 0.01 * 1 * 9.81) / I * 0.3;
  std::printf("  light: omega %.4f (exact %.4f), heavy: %.3g\n", d->qvel[5], w_exact,
              d->qvel[11]);
  EXPECT_NEAR(d->qvel[5], w_exact, 0.05 * w_exact);
  // Sticking: |ω| within the soft norm's ε = v_s μ / μ_spin = 0.01 rad/s
  // (σ = τ/bound = 0.51 at ω ≈ 0.6 ε); slipping it would reach 2.2 rad/s.
  EXPECT_LT(std::abs(d->qvel[11]), 0.01);
}

TEST(Promises, FailedSolveIsRetriedAtHalfTheStep) {
  // max_iterations = 2 on the sphere drop: fixed mode (no error control) must
  // fail at the impact; cenic halves h after each failed solve (rejected
  // attempts) and reaches the same rest as with the default solver.
  ModelPtr m(mj_loadXML(test_util::ModelPath("sphere_plane.xml").c_str(), nullptr, nullptr, 0));
  ASSERT_TRUE(m);
  auto run = [&](Mode mode, int iterations, double* z, long* rejected) {
    DataPtr d(mj_makeData(m.get()));
    mj_resetDataKeyframe(m.get(), d.get(), mj_name2id(m.get(), mjOBJ_KEY, "drop"));
    mj_forward(m.get(), d.get());
    StepperOptions o;
    o.mode = mode;
    o.solver.max_iterations = iterations;
    // The paper's controller: only failed solves and the error reject here,
    // so both runs settle along the same step sequence (the penetration
    // check, cenic-math §11.10, adds rejections of its own).
    o.penetration_tolerance = 0;
    auto s = Make(m.get(), o);
    // 1 s: at rest (at 0.6 s the bounce's tail still moved ~1e-6 m per
    // 0.05 s step, and two runs stopped at different points of it).
    const absl::Status st = s->AdvanceTo(d.get(), 1.0);
    *z = d->qpos[2];
    *rejected = s->stats().rejected_steps;
    return st;
  };
  double z_fixed, z_retry, z_ref;
  long rej_fixed, rej_retry, rej_ref;
  const absl::Status fixed = run(Mode::kFixed, 2, &z_fixed, &rej_fixed);
  EXPECT_FALSE(fixed.ok());
  EXPECT_NE(std::string(fixed.message()).find("convex solve failed"), std::string::npos) << fixed;
  const absl::Status retry = run(Mode::kCenic, 2, &z_retry, &rej_retry);
  ASSERT_TRUE(retry.ok()) << retry;
  ASSERT_TRUE(run(Mode::kCenic, 50, &z_ref, &rej_ref).ok());
  std::printf("  max_iterations 2: z %.9f after %ld rejected attempts; default solver z %.9f\n",
              z_retry, rej_retry, z_ref);
  EXPECT_GT(rej_retry, rej_ref);
  // At rest both sit at the contact's equilibrium: equal to the solver tolerance
  // times the penetration scale.
  EXPECT_NEAR(z_retry, z_ref, 1e-7);
}

TEST(Promises, AnErrorLeavesTheStateExactlyAsBefore) {
  // A step that cannot meet the accuracy above min_step is rejected (after a
  // full step-doubling attempt, which loads intermediate states into d) and
  // ends in an underflow error: qpos, qvel, act and time must be bit-identical
  // to the state before the call.
  ModelPtr m(mj_loadXML(test_util::ModelPath("sphere_plane.xml").c_str(), nullptr, nullptr, 0));
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  d->qpos[2] = 0.095;  // 5 mm deep: the contact pushes hard
  d->qvel[0] = 0.3;
  d->qvel[4] = 2;
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.accuracy = 1e-10;
  o.min_step = 1e-3;
  o.initial_step = 1e-3;
  o.max_step = 1e-3;
  auto s = Make(m.get(), o);
  ASSERT_TRUE(s);
  DataPtr before(mj_makeData(m.get()));
  mj_copyData(before.get(), m.get(), d.get());
  const absl::Status st = s->Step(d.get());
  ASSERT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_GT(s->stats().solves, 1);  // an attempt was made
  EXPECT_EQ(d->time, before->time);
  for (int i = 0; i < m->nq; ++i) EXPECT_EQ(d->qpos[i], before->qpos[i]) << i;
  for (int i = 0; i < m->nv; ++i) EXPECT_EQ(d->qvel[i], before->qvel[i]) << i;
}

TEST(Promises, TrapezoidIsSecondOrderAndBackwardEulerFirst) {
  // Undamped oscillator (k = 200, m = 2, ω = 10) over 0.5 s at fixed h and
  // h/2: the error against cos ωt falls 4x for the trapezoid rule, 2x for the
  // implicit Euler step of fixed mode (ratios within 15 %).
  ModelPtr m = Oscillator(200, 0);
  ASSERT_TRUE(m);
  auto error = [&](Mode mode, double h) {
    DataPtr d(mj_makeData(m.get()));
    d->qpos[0] = 0.1;
    mj_forward(m.get(), d.get());
    StepperOptions o;
    o.mode = mode;
    o.error_control = false;
    o.max_step = h;
    auto s = Make(m.get(), o);
    EXPECT_TRUE(s->AdvanceTo(d.get(), 0.5).ok());
    return std::abs(d->qpos[0] - 0.1 * std::cos(10 * 0.5));
  };
  const double t1 = error(Mode::kTrapezoid, 0.004), t2 = error(Mode::kTrapezoid, 0.002);
  const double e1 = error(Mode::kFixed, 0.004), e2 = error(Mode::kFixed, 0.002);
  std::printf("  trapezoid %.3g -> %.3g (ratio %.2f); implicit Euler %.3g -> %.3g (%.2f)\n", t1,
              t2, t1 / t2, e1, e2, e1 / e2);
  EXPECT_NEAR(t1 / t2, 4.0, 0.6);
  EXPECT_NEAR(e1 / e2, 2.0, 0.3);
}

TEST(Promises, CtrlIsClampedToCtrlrange) {
  // A motor (gear 3, ctrlrange ±1) on a free 2 kg slider with ctrl = 5:
  // force 3 N, so v(T) = 3 T / 2 (clamped) and not 15 T / 2.
  ModelPtr m = Oscillator(0, 0, R"(<motor joint="x" gear="3" ctrlrange="-1 1" ctrllimited="true"/>)");
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  d->ctrl[0] = 5;
  mj_forward(m.get(), d.get());
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s->AdvanceTo(d.get(), 0.2).ok());
  EXPECT_NEAR(d->qvel[0], 3 * 0.2 / 2, 1e-9);
}

// The stepper for m warns once about `feature`, naming each of `named` and
// none of `unnamed`.
void ExpectOneWarning(const mjModel* m, const std::string& feature,
                      const std::vector<std::string>& named,
                      const std::vector<std::string>& unnamed = {}) {
  auto s = Make(m, StepperOptions{});
  ASSERT_TRUE(s);
  int n = 0;
  for (const std::string& w : s->warnings()) {
    if (w.find(feature) == std::string::npos) continue;
    ++n;
    for (const std::string& name : named) EXPECT_NE(w.find(name), std::string::npos) << w;
    for (const std::string& name : unnamed) EXPECT_EQ(w.find(name), std::string::npos) << w;
  }
  EXPECT_EQ(n, 1) << feature;
}

TEST(Promises, OneWarningPerUnsupportedFeatureNamingTheElements) {
  ModelPtr m = Xml(R"(
<mujoco>
  <worldbody>
    <body><joint name="a" type="slide" axis="1 0 0"/><geom type="sphere" size="0.05" mass="1"/></body>
    <body><joint name="b" type="slide" axis="0 1 0"/><geom type="sphere" size="0.05" mass="1"/></body>
  </worldbody>
  <actuator>
    <general name="early1" joint="a" dyntype="filter" dynprm="0.1" actearly="true"/>
    <general name="early2" joint="b" dyntype="filter" dynprm="0.1" actearly="true"/>
  </actuator>
</mujoco>)");
  ASSERT_TRUE(m);
  ExpectOneWarning(m.get(), "actearly", {"early1", "early2"});
}

TEST(Promises, MarginContactsRestAtMujocosDistance) {
  // margin 5 mm: the sphere rests with dist = margin − x (x the load's
  // penetration of the margin layer), as under mj_step, within 2 % of margin.
  ModelPtr m = RestingSphere(R"(margin="0.005")");
  ASSERT_TRUE(m);
  auto dist_after = [&](Stepper* s) {
    DataPtr d(mj_makeData(m.get()));
    d->qpos[2] = 0.11;
    mj_forward(m.get(), d.get());
    if (s) {
      EXPECT_TRUE(s->AdvanceTo(d.get(), 0.6).ok());
    } else {
      while (d->time < 0.6 - 1e-12) mj_step(m.get(), d.get());
    }
    return d->qpos[2] - 0.1;  // the sphere's distance to the plane
  };
  auto s = Make(m.get(), StepperOptions{});
  const double dist = dist_after(s.get()), dist_mj = dist_after(nullptr);
  std::printf("  margin 5 mm: rest distance %.6g m, mj_step %.6g m\n", dist, dist_mj);
  EXPECT_NEAR(dist, dist_mj, 0.02 * 0.005);
  EXPECT_GT(dist, 0.004);
}

// A pendulum on a ball joint limited to 30°.
constexpr char kBallPendulum[] = R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body>
      <joint type="ball" range="0 30" limited="true"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>)";

TEST(Promises, BallJointLimitHolds) {
  // A pendulum on a ball joint limited to 30° released horizontally: the
  // swing angle never exceeds the limit by more than the near-rigid
  // violation (a few mrad); without the limit it swings to 90°.
  ModelPtr m = Xml(kBallPendulum);
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s);
  double worst = 0;
  while (d->time < 0.5) {
    ASSERT_TRUE(s->Step(d.get()).ok());
    const double angle = 2 * std::acos(std::min(1.0, std::abs(d->qpos[0])));
    worst = std::max(worst, angle);
  }
  const double limit = 30 * std::numbers::pi / 180;
  std::printf("  ball limit 30 deg: max angle %.4f deg\n", worst * 180 / std::numbers::pi);
  EXPECT_LT(worst, limit + 0.01);
  EXPECT_GT(worst, limit - 0.05);  // it did reach the limit
}

TEST(Promises, LimitMetInsideALongStepIsCheckedLikeAContact) {
  // cenic-math §11.10 on limits: the ball pendulum above, stepped with its
  // own accepted steps (StepOnce, up to max_step = 0.05 s). A ball limit's
  // row exists only once the joint is past the limit, so a step that starts
  // short of it and ends past it never sees it: without the check
  // (penetration_tolerance = 0) the swing ends 0.024 rad (accuracy 1e-3) and
  // 0.075 rad (1e-1) past 30°. With it, a step whose violation grows by more
  // than the tolerance 10⁻³ rad is rejected, so the swing stops within one
  // tolerance of growth plus the row's resting compliance (< 10⁻³ rad).
  ModelPtr m = Xml(kBallPendulum);
  ASSERT_TRUE(m);
  const double limit = 30 * std::numbers::pi / 180, tol = 1e-3;
  auto overshoot = [&](double accuracy, double c_pen) {
    DataPtr d(mj_makeData(m.get()));
    mj_forward(m.get(), d.get());
    StepperOptions o;
    o.accuracy = accuracy;
    o.max_step = 0.05;
    o.penetration_tolerance = c_pen;
    auto s = Make(m.get(), o);
    double worst = 0;
    while (s && d->time < 0.5) {
      if (!s->StepOnce(d.get()).ok()) return std::numeric_limits<double>::infinity();
      worst = std::max(worst, 2 * std::acos(std::min(1.0, std::abs(d->qpos[0]))));
    }
    return worst - limit;
  };
  for (double accuracy : {1e-3, 1e-1}) {
    const double with = overshoot(accuracy, 1.0), without = overshoot(accuracy, 0.0);
    std::printf("  accuracy %g: overshoot %.2e rad with the check, %.2e without\n", accuracy, with,
                without);
    EXPECT_LT(with, 2 * tol) << accuracy;
    EXPECT_GT(with, -0.01) << accuracy;  // it did reach the limit
    EXPECT_GT(without, 10 * tol) << accuracy;  // the scene does meet the limit inside a step
  }
}

// A 1 cm ball shot at 1 m/s, without gravity, at a 2 mm wall 4 cm ahead.
constexpr char kThinWall[] = R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <geom type="box" size="0.001 0.2 0.2"/>
    <body pos="-0.05 0 0">
      <freejoint/>
      <geom type="sphere" size="0.01" mass="0.1"/>
    </body>
  </worldbody>
  <keyframe><key name="shot" qpos="-0.05 0 0 1 0 0 0" qvel="1 0 0 0 0 0"/></keyframe>
</mujoco>)";

TEST(Promises, ABallDoesNotPassThroughAThinWall) {
  // cenic-math §11.5 and §11.10: in free flight the error is 0 and the steps
  // grow to max_step (0.1 s, 10 cm of flight), so the ball would cross the
  // wall (2.2 cm of overlap along its path) between two geometry queries of
  // one step. The sweep limit caps the step near the wall at the pair's
  // thickness over its relative speed (22 ms), so a query sees the overlap;
  // and a state a Step() loop receives from inside a step (dense output) is
  // checked like a step's end. In one advance_to and in a Step() loop the
  // ball comes back off the wall at every accuracy; without the check
  // (penetration_tolerance = 0) it flies through.
  ModelPtr m = Xml(kThinWall);
  ASSERT_TRUE(m);
  auto run = [&](double accuracy, double c_pen, bool step_loop) {
    DataPtr d = test_util::MakeData(m.get(), "shot");
    StepperOptions o;
    o.accuracy = accuracy;
    o.penetration_tolerance = c_pen;
    auto s = Make(m.get(), o);
    EXPECT_TRUE(s);
    if (!s) return std::pair{0.0, 0.0};
    if (step_loop)
      while (d->time < 0.2) EXPECT_TRUE(s->Step(d.get()).ok());
    else
      EXPECT_TRUE(s->AdvanceTo(d.get(), 0.2).ok());
    return std::pair{d->qpos[0], d->qvel[0]};
  };
  for (double accuracy : {1e-1, 1e-2, 1e-3})
    for (bool step_loop : {false, true}) {
      const auto [x, vx] = run(accuracy, 1.0, step_loop);
      const auto [x_without, vx_without] = run(accuracy, 0.0, step_loop);
      std::printf("  accuracy %g, %s: x %.4f m, vx %.3f m/s; without the check x %.4f m, "
                  "vx %.3f m/s\n", accuracy, step_loop ? "Step() loop" : "advance_to", x, vx,
                  x_without, vx_without);
      EXPECT_LT(x, -0.011 + 0.002) << accuracy;  // in front of the wall (centre −r − half width)
      EXPECT_LT(vx, 0) << accuracy;               // moving back
      EXPECT_GT(x_without, 0.1) << accuracy;  // the scene does cross the wall inside a step
    }
}

TEST(Promises, AWallMadeCollidableByAModelEditStopsTheBall) {
  // The thin wall above starts without collisions (contype = conaffinity =
  // 0); the user turns them on after the stepper is made. The edit is seen
  // at the next call (docs/limitations.md), and the sweep limit then knows
  // the wall's thickness: the ball comes back off it as in the test above.
  ModelPtr m = Xml(kThinWall);
  ASSERT_TRUE(m);
  m->geom_contype[0] = m->geom_conaffinity[0] = 0;
  DataPtr d = test_util::MakeData(m.get(), "shot");
  StepperOptions o;
  o.accuracy = 1e-2;
  auto s = Make(m.get(), o);
  ASSERT_TRUE(s);
  m->geom_contype[0] = m->geom_conaffinity[0] = 1;
  ASSERT_TRUE(s->AdvanceTo(d.get(), 0.2).ok());
  EXPECT_LT(d->qpos[0], -0.011 + 0.002);  // in front of the wall
  EXPECT_LT(d->qvel[0], 0);               // moving back
}

TEST(Promises, TendonLimitsHoldFixedAndSpatial) {
  // A 1 kg slider falling under gravity along a vertical slide, tied to the
  // world by a fixed tendon (length = q) and, in the second scene, by a
  // spatial tendon between sites, each limited to 0.2 m of travel/length.
  for (const char* tendon : {R"(<fixed limited="true" range="-1 0.2"><joint joint="z" coef="-1"/></fixed>)",
                             R"(<spatial limited="true" range="0 0.3"><site site="top"/><site site="bob"/></spatial>)"}) {
    char xml[1500];
    std::snprintf(xml, sizeof xml, R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <site name="top" pos="0 0 0.1"/>
    <body>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/>
      <site name="bob"/>
    </body>
  </worldbody>
  <tendon>%s</tendon>
</mujoco>)", tendon);
    ModelPtr m = Xml(xml);
    ASSERT_TRUE(m);
    DataPtr d(mj_makeData(m.get()));
    mj_forward(m.get(), d.get());
    auto s = Make(m.get(), StepperOptions{});
    ASSERT_TRUE(s);
    double lowest = 0;
    while (d->time < 0.6) {
      ASSERT_TRUE(s->Step(d.get()).ok());
      lowest = std::min(lowest, d->qpos[0]);
    }
    // Both limits stop the slider at z = −0.2 (fixed: length −q ≤ 0.2; spatial:
    // 0.1 − z ≤ 0.3). Near-rigid: violation below 2 mm during the catch.
    std::printf("  %s: lowest z %.5f, rest z %.5f\n", tendon[1] == 'f' ? "fixed" : "spatial",
                lowest, d->qpos[0]);
    EXPECT_GT(lowest, -0.202);
    EXPECT_NEAR(d->qpos[0], -0.2, 5e-4);
  }
}

TEST(Promises, JointActuatorfrcrangeClampsTheForce) {
  // A motor (gear 1) with ctrl = 5 on a 2 kg slider whose joint limits the
  // actuator force to ±1.5 N: v(T) = 1.5 T / 2.
  ModelPtr m = Xml(R"(
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <body><joint name="x" type="slide" axis="1 0 0" actuatorfrcrange="-1.5 1.5"/>
      <geom type="sphere" size="0.05" mass="2" contype="0" conaffinity="0"/></body>
  </worldbody>
  <actuator><motor joint="x"/></actuator>
</mujoco>)");
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  d->ctrl[0] = 5;
  mj_forward(m.get(), d.get());
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s->AdvanceTo(d.get(), 0.2).ok());
  EXPECT_NEAR(d->qvel[0], 1.5 * 0.2 / 2, 1e-9);
}

TEST(Promises, MjcbControlIsCalledOncePerStep) {
  // mjcb_control sets ctrl = 2 (motor, gear 1, 2 kg slider): v(T) = 2 T / 2,
  // and it runs once per Step call (not per internal step or attempt).
  ModelPtr m = Oscillator(0, 0, R"(<motor joint="x"/>)");
  ASSERT_TRUE(m);
  static int calls = 0;
  calls = 0;
  mjcb_control = [](const mjModel*, mjData* d) {
    d->ctrl[0] = 2;
    ++calls;
  };
  DataPtr d(mj_makeData(m.get()));
  auto s = Make(m.get(), StepperOptions{});
  bool ok = static_cast<bool>(s);
  for (int i = 0; i < 100 && ok; ++i) ok = s->Step(d.get()).ok();
  const int n = calls;
  mjcb_control = nullptr;
  ASSERT_TRUE(ok);
  EXPECT_EQ(n, 100);
  EXPECT_NEAR(d->qvel[0], 2 * 100 * 0.001 / 2, 1e-9);
}

TEST(Promises, FlexIsOneWarning) {
  ModelPtr m = Xml(R"(
<mujoco>
  <worldbody>
    <flexcomp name="cloth" type="grid" count="3 3 1" spacing="0.1 0.1 0.1" radius="0.01" dim="2" mass="0.1">
      <edge equality="true"/>
    </flexcomp>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(m);
  ASSERT_GT(m->nflex, 0);
  ExpectOneWarning(m.get(), "flex", {"cloth"});
}

TEST(Promises, SurfaceVelocityIsOneWarning) {
  ModelPtr m = Xml(R"(
<mujoco>
  <worldbody>
    <geom name="belt" type="box" size="1 1 .1" surfacevel="0.5 0 0"/>
    <geom name="still" type="box" pos="3 0 0" size="1 1 .1"/>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(m);
  ExpectOneWarning(m.get(), "surfacevel", {"belt"}, {"still"});
}

TEST(Promises, ActuatorDelayIsRefused) {
  ModelPtr m = Oscillator(0, 0, R"(<general name="late" joint="x" nsample="3" interp="zoh" delay="0.002"/>)");
  ASSERT_TRUE(m);
  auto s = Stepper::Create(m.get(), StepperOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find("delay"), std::string::npos) << s.status();
}

// Rest height of the 1 kg sphere of `xml` (free joint qpos[2]) after 0.6 s
// from 0.11 m under mjcenic and mj_step.
void RestHeights(const std::string& xml, double* z, double* z_mj) {
  ModelPtr m = Xml(xml);
  ASSERT_TRUE(m);
  for (int pass = 0; pass < 2; ++pass) {
    DataPtr d(mj_makeData(m.get()));
    d->qpos[2] = 0.11;
    mj_forward(m.get(), d.get());
    if (pass == 0) {
      auto s = Make(m.get(), StepperOptions{});
      ASSERT_TRUE(s->AdvanceTo(d.get(), 0.6).ok());
      *z = d->qpos[2];
    } else {
      while (d->time < 0.6 - 1e-12) mj_step(m.get(), d.get());
      *z_mj = d->qpos[2];
    }
  }
}

std::string SphereOnPlane(const std::string& plane, const std::string& sphere,
                          const std::string& extra = "") {
  return R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" )" + plane + R"(/>
    <body name="ball" pos="0 0 0.11"><freejoint/>
      <geom name="ball" type="sphere" size="0.1" mass="1" )" + sphere + R"(/></body>
  </worldbody>
  )" + extra + R"(
</mujoco>)";
}

TEST(Promises, ContactParameterCombinationIsMujocos) {
  // mjcenic maps each contact's solref/solimp/margin after MuJoCo combined
  // them (priority, solmix, <pair>, gap): the sphere rests at mj_step's
  // height within 2 % of its penetration. The two geoms differ by 4x in
  // stiffness, so taking the wrong side moves the rest by ~2x.
  struct Case {
    const char* name;
    std::string xml;
  };
  const std::string soft = R"(solref="0.04 1")", stiff = R"(solref="0.01 1")";
  const Case cases[] = {
      {"priority (soft floor wins)", SphereOnPlane(soft + R"( priority="1")", stiff)},
      {"priority (stiff ball wins)", SphereOnPlane(soft, stiff + R"( priority="1")")},
      {"solmix 0.9 / 0.1", SphereOnPlane(soft + R"( solmix="9")", stiff + R"( solmix="1")")},
      {"<pair> solref", SphereOnPlane(R"(contype="0" conaffinity="0")",
                                      R"(contype="0" conaffinity="0")",
                                      R"(<contact><pair geom1="floor" geom2="ball" solref="0.03 1"/></contact>)")},
      // The floor's margin 4 mm and gap 4 mm: MuJoCo lists contacts from 8 mm
      // but makes them active only below 4 mm (includemargin).
      {"margin 4 mm + gap 4 mm", SphereOnPlane(R"(margin="0.004" gap="0.004")", "")},
  };
  for (const Case& c : cases) {
    double z = 0, z_mj = 0;
    RestHeights(c.xml, &z, &z_mj);
    const double pen = 0.1 - z_mj;
    std::printf("  %s: rest z %.7f, mj_step %.7f (penetration %.3g m)\n", c.name, z, z_mj, pen);
    EXPECT_NEAR(z, z_mj, 0.02 * std::abs(pen)) << c.name;
  }
}

TEST(Promises, ExcludedAndFilteredPairsDoNotCollide) {
  // The sphere starts 2 cm inside the floor; with <exclude> (a body pair) or
  // contype/conaffinity filtering there is no contact: it falls freely.
  const char* exclude = R"(<contact><exclude body1="world" body2="ball"/></contact>)";
  for (const std::string& xml :
       {SphereOnPlane("", "", exclude), SphereOnPlane(R"(contype="2" conaffinity="2")", "")}) {
    ModelPtr m = Xml(xml);
    ASSERT_TRUE(m);
    DataPtr d(mj_makeData(m.get()));
    d->qpos[2] = 0.08;
    mj_forward(m.get(), d.get());
    auto s = Make(m.get(), Fixed());
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(s->Step(d.get()).ok());
    // Semi-implicit Euler in free fall: z_n = z0 − g h² n(n+1)/2.
    EXPECT_NEAR(d->qpos[2], 0.08 - 9.81 * 0.002 * 0.002 * 100 * 101 / 2, 1e-9);
  }
}

TEST(Promises, JointLimitsHoldOnBothSidesWithTheirMargin) {
  // A 1 kg slider along the vertical, range ±0.1 m and margin 0.01 m (the
  // limit engages 1 cm before the range: MuJoCo's and mjcenic's rest is at
  // range ∓ margin, mjcenic's near-rigid to well below 1 mm). Gravity pushes it
  // down onto the lower side, then (flipped) up onto the upper side.
  ModelPtr m = Xml(R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body><joint name="z" type="slide" axis="0 0 1" range="-0.1 0.1" limited="true" margin="0.01"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
</mujoco>)");
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->AdvanceTo(d.get(), 0.5).ok());
  const double lower = d->qpos[0];
  m->opt.gravity[2] = 9.81;
  ASSERT_TRUE(s->AdvanceTo(d.get(), 1.2).ok());
  const double upper = d->qpos[0];
  std::printf("  rest on the lower side %.6f m, on the upper side %.6f m (expected -/+0.09)\n",
              lower, upper);
  EXPECT_NEAR(lower, -0.09, 5e-4);
  EXPECT_NEAR(upper, 0.09, 5e-4);
}

TEST(Promises, ActrangeClampsTheActivation) {
  // An integrator actuator (act' = ctrl = 1) limited to act ≤ 0.3: after
  // 0.5 s act = 0.3 exactly (MuJoCo's rule clamps after each update), and the
  // force gain·act = 0.3 N has accelerated the 2 kg slider to at most
  // 0.3·0.5/2 m/s (less while act was still rising).
  ModelPtr m = Oscillator(0, 0, R"(<general joint="x" dyntype="integrator" gainprm="1" actlimited="true" actrange="0 0.3"/>)");
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  d->ctrl[0] = 1;
  mj_forward(m.get(), d.get());
  auto s = Make(m.get(), StepperOptions{});
  ASSERT_TRUE(s->AdvanceTo(d.get(), 0.5).ok());
  EXPECT_EQ(d->act[0], 0.3);
  // v = ∫ act/m dt with act = min(t, 0.3): (0.3²/2 + 0.3·0.2)/2 = 0.0525,
  // less the force's lag (the force uses act at each step's start, so it
  // lags by up to one step h ≤ h_max): Δv ≤ 0.3 N · h_max / 2 kg.
  const double lag = 0.3 * s->stats().h_max / 2;
  std::printf("  act %.6g, v %.6g (exact integral 0.0525, lag bound %.3g)\n", d->act[0],
              d->qvel[0], lag);
  EXPECT_LE(d->qvel[0], 0.0525 + 1e-9);
  EXPECT_GE(d->qvel[0], 0.0525 - lag);
}

TEST(Promises, AdvanceToEndsExactlyOnTheTarget) {
  // Targets where t0 + (t − t0) ≠ t in floating point (0.2 + 0.7 =
  // 0.8999999999999999): the last step must land on t itself.
  ModelPtr m = FreeSphere();
  ASSERT_TRUE(m);
  for (Mode mode : {Mode::kFixed, Mode::kCenic}) {
    for (auto [t0, t] : {std::pair{0.2, 0.9}, std::pair{0.4, 1.7}, std::pair{0.7, 2.9}}) {
      DataPtr d(mj_makeData(m.get()));
      d->time = t0;
      mj_forward(m.get(), d.get());
      StepperOptions o;
      o.mode = mode;
      o.max_step = 5;
      auto s = Make(m.get(), o);
      ASSERT_TRUE(s->AdvanceTo(d.get(), t).ok());
      EXPECT_EQ(d->time, t) << t0 << " -> " << t;
    }
  }
}

TEST(Promises, TrapezoidUnderErrorControlConvergesWithTheAccuracy) {
  // Undamped oscillator (ω = 10, 0.5 s) with error control. The trapezoid
  // variant (second order) keeps the end error against cos ωt within a small
  // multiple of the accuracy (measured 1.1, 1.4, 1.7 ε at ε = 1e-3, 1e-4,
  // 1e-5; asserted ≤ 3 ε) and it falls by more than 5x per decade (measured
  // 8x); the first-order default falls only by ≈ √10 and is less accurate
  // at the same ε (0.0087, 0.0027, 0.00095).
  ModelPtr m = Oscillator(200, 0);
  ASSERT_TRUE(m);
  auto run = [&](Mode mode, double acc, long* steps) {
    DataPtr d(mj_makeData(m.get()));
    d->qpos[0] = 0.1;
    mj_forward(m.get(), d.get());
    StepperOptions o;
    o.mode = mode;
    o.accuracy = acc;
    auto s = Make(m.get(), o);
    EXPECT_TRUE(s->AdvanceTo(d.get(), 0.5).ok());
    *steps = s->stats().steps;
    return std::abs(d->qpos[0] - 0.1 * std::cos(10 * 0.5));
  };
  double prev = 1;  // the first decade is not compared
  for (double acc : {1e-3, 1e-4, 1e-5}) {
    long nt, nc;
    const double et = run(Mode::kTrapezoid, acc, &nt), ec = run(Mode::kCenic, acc, &nc);
    std::printf("  accuracy %.0e: trapezoid error %.3g in %ld steps; cenic %.3g in %ld steps\n",
                acc, et, nt, ec, nc);
    EXPECT_LE(et, 3 * acc);
    EXPECT_LT(et, prev / 5);
    EXPECT_LT(et, ec);
    prev = et;
  }
}


// mj_step runs MuJoCo's actuation pass once per step; a fixed mjcenic step
// reuses the pass its previous call ran at the same state (post-step
// contract) unless ctrl changed in between. Counted with a user bias
// callback (the actuator is then explicit: force = ctrl at the step start),
// and checked on the velocity: a 1 kg slider, no gravity, each step adds
// h·ctrl exactly.
int act_bias_calls = 0;
mjtNum CountingBias(const mjModel*, const mjData*, int) {
  ++act_bias_calls;
  return 0;
}

TEST(Promises, ActuationRunsOncePerStepAndSeesCtrlChangedBetweenCalls) {
  ModelPtr m = Xml(R"(<mujoco><option gravity="0 0 0" timestep="0.01"/>
    <worldbody><body><joint name="x" type="slide" axis="1 0 0"/>
      <geom type="box" size=".1 .1 .1" mass="1"/></body></worldbody>
    <actuator><general joint="x" gaintype="fixed" gainprm="1" biastype="user"/></actuator>
    </mujoco>)");
  ASSERT_NE(m, nullptr);
  DataPtr d(mj_makeData(m.get()));
  auto s = Make(m.get(), Fixed());
  ASSERT_NE(s, nullptr);
  mjcb_act_bias = CountingBias;
  act_bias_calls = 0;
  const double h = m->opt.timestep;
  double v = 0;
  const int n = 20;
  for (int i = 0; i < n; ++i) {
    d->ctrl[0] = (i % 3 == 0) ? 1.0 : (i % 3 == 1 ? 3.0 : 3.0);  // changes and holds
    ASSERT_TRUE(s->Step(d.get()).ok());
    v += h * d->ctrl[0];
    EXPECT_NEAR(d->qvel[0], v, 1e-12) << "step " << i;
  }
  mjcb_act_bias = nullptr;
  // One pass per step after the ones ctrl changes forced: first step (build
  // + post-step) 2, then 1 per step plus 1 per ctrl change (i % 3 == 0, 1:
  // 13 changes among steps 1..19).
  int changes = 0;
  for (int i = 1; i < n; ++i) changes += ((i % 3 == 0) != ((i - 1) % 3 == 0));
  EXPECT_EQ(act_bias_calls, 2 + (n - 1) + changes);
}


// docs/statistics.md: time_total is the wall time in the stepper, always measured (by
// the time-stamp counter without phase timers, cenic-math §8.9, "The wall
// clock of time_total"; by the steady clock with them). The truth: a steady
// clock read around the calls, which contain it (the loop between calls is a
// few instructions, so it is most of it).
TEST(Promises, TimeTotalIsTheWallTimeInsideTheCalls) {
  ModelPtr m = Xml(R"(
<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <body pos="0 0 1">
      <joint type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02" mass="1"/>
    </body>
  </worldbody>
</mujoco>)");
  for (bool timers : {false, true}) {
    StepperOptions o = Fixed();
    o.phase_timers = timers;
    auto s = Make(m.get(), o);
    DataPtr d(mj_makeData(m.get()));
    d->qpos[0] = 0.5;
    ASSERT_TRUE(s->Step(d.get()).ok());
    s->ResetStats();
    EXPECT_EQ(s->stats().time_total, 0.0);
    // The wall time of each call, measured around it here: time_total counts the inside of
    // every call (in counter ticks calibrated to the steady clock), so it lies below this sum
    // and, the call overhead being small, near it.
    // Time spent between calls (a loaded machine's preemption) enters neither side.
    double wall = 0.0;
    for (int i = 0; i < 3000; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      ASSERT_TRUE(s->Step(d.get()).ok());
      wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const double total = s->stats().time_total;
    EXPECT_LE(total, 1.02 * wall) << "phase timers " << timers;  // ticks calibrated to the clock
    EXPECT_GE(total, 0.5 * wall) << "phase timers " << timers;
  }
}

}  // namespace
}  // namespace mjcenic
