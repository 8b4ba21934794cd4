// Physics validation of the fixed-step ICF stepper (mjcenic::Stepper,
// Mode::kFixed) against closed-form results of cenic-math.md §13 and against
// mj_step on the scenes in models/.
//
// Every test asserts numbers that fail if the physics is wrong; the measured
// values are printed (and recorded as gtest properties) so that a run of the
// binary documents them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/adapter/stiction_anchors.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

constexpr double kPi = std::numbers::pi;

using test_util::DataPtr;
using test_util::ModelPtr;

using test_util::LoadScene;
using test_util::MakeData;

ModelPtr LoadXmlString(const std::string& xml) {
  mjVFS vfs;
  mj_defaultVFS(&vfs);
  EXPECT_EQ(mj_addBufferVFS(&vfs, "physics_test_scene.xml", xml.data(),
                            static_cast<int>(xml.size())),
            0);
  char err[1000] = "";
  ModelPtr m(mj_loadXML("physics_test_scene.xml", &vfs, err, sizeof(err)));
  mj_deleteVFS(&vfs);
  EXPECT_NE(m, nullptr) << err;
  return m;
}

// A fixed-step stepper (one ICF solve per m->opt.timestep).
std::unique_ptr<Stepper> MakeStepper(const mjModel* m, StepperOptions o = {}) {
  o.mode = Mode::kFixed;
  o.max_step = 0;
  return test_util::MakeStepper(m, o);
}

// n calls of Stepper::Step (each advances m->opt.timestep).
::testing::AssertionResult StepN(Stepper* s, mjData* d, int n) {
  for (int i = 0; i < n; ++i) {
    const absl::Status st = s->Step(d);
    if (!st.ok())
      return ::testing::AssertionFailure() << "step " << i << " at t = " << d->time << ": " << st;
  }
  return ::testing::AssertionSuccess();
}

// Short number formatting for report labels.
std::string Fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", x);
  return buf;
}

int Steps(double T, double h) { return static_cast<int>(std::lround(T / h)); }

void Report(const std::string& key, double value) {
  std::printf("[ physics  ] %-58s %.6g\n", key.c_str(), value);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", value);
  ::testing::Test::RecordProperty(key, buf);
}

// Diagonal entry M_ii of the mass matrix (MuJoCo's CSR, diagonal last).
double MassDiag(const mjModel* m, const mjData* d, int i) {
  return d->M[m->M_rowadr[i] + m->M_rownnz[i] - 1];
}

// Most penetrating active contact (−dist), 0 without contacts.
double Penetration(const mjData* d) {
  double p = 0;
  for (int i = 0; i < d->ncon; ++i)
    if (d->contact[i].exclude == 0) p = std::max(p, -d->contact[i].dist);
  return p;
}

// ---------------------------------------------------------------------------
// 1. Resting contact (cenic-math §13 item 1).
// ---------------------------------------------------------------------------

// A sphere on a plane through one point contact of stiffness k rests at
// φ = −m g / k, for any h: the stationary ICF solution is exact.
TEST(PhysicsRestingContact, SpherePenetrationIsWeightOverStiffness) {
  ModelPtr m = LoadScene("sphere_plane.xml");
  ASSERT_NE(m, nullptr);
  const int ball = mj_name2id(m.get(), mjOBJ_BODY, "ball");
  ASSERT_GE(ball, 0);
  const double mass = m->body_mass[ball], g = mju_norm3(m->opt.gravity);
  struct Case { double k, h; };
  for (const Case c : {Case{1e5, 1e-3}, Case{1e4, 1e-3}, Case{1e5, 1e-2}}) {
    SCOPED_TRACE(testing::Message() << "k = " << c.k << ", h = " << c.h);
    m->opt.timestep = c.h;
    DataPtr d = MakeData(m.get(), "rest");
    StepperOptions o;
    o.contact.stiffness = c.k;
    auto s = MakeStepper(m.get(), o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(StepN(s.get(), d.get(), Steps(1.0, c.h)));  // settle for 1 s
    ASSERT_EQ(d->ncon, 1);
    const double expected = mass * g / c.k;
    const double penetration = -d->contact[0].dist;
    const double ratio = penetration / expected;
    Report("rest penetration / (m g/k), k=" + Fmt(c.k) + " h=" + Fmt(c.h),
           ratio);
    EXPECT_NEAR(ratio, 1.0, 0.02) << "penetration " << penetration << " m, m g/k " << expected;
    EXPECT_LT(std::abs(d->qvel[2]), 1e-6);  // actually at rest
    // The ball stays put horizontally and does not spin.
    EXPECT_LT(std::hypot(d->qpos[0], d->qpos[1]), 1e-9);
  }
}

// With the default solref/solimp mapping (mujoco-mapping §5.7) the resting
// penetration is no worse than mj_step's on the same model.
TEST(PhysicsRestingContact, DefaultMappingPenetrationNoWorseThanMjStep) {
  ModelPtr m = LoadScene("sphere_plane.xml");
  ASSERT_NE(m, nullptr);
  DataPtr d = MakeData(m.get(), "rest");
  DataPtr dref = MakeData(m.get(), "rest");
  auto s = MakeStepper(m.get());
  ASSERT_NE(s, nullptr);
  const int n = Steps(1.0, m->opt.timestep);
  ASSERT_TRUE(StepN(s.get(), d.get(), n));
  for (int i = 0; i < n; ++i) mj_step(m.get(), dref.get());
  ASSERT_EQ(d->ncon, 1);
  ASSERT_GE(dref->ncon, 1);
  const double pen = Penetration(d.get()), pen_ref = Penetration(dref.get());
  Report("default mapping: rest penetration mjcenic [m]", pen);
  Report("default mapping: rest penetration mj_step [m]", pen_ref);
  Report("default mapping: penetration ratio mjcenic/mj_step", pen / pen_ref);
  EXPECT_GT(pen, 0.0);
  EXPECT_GT(pen_ref, 0.0);
  EXPECT_LE(pen, 1.02 * pen_ref);
  // The mapping is built to reproduce MuJoCo's static stiffness, so the two
  // should in fact agree closely, not just be ordered.
  EXPECT_NEAR(pen / pen_ref, 1.0, 0.1);
  EXPECT_LT(std::abs(d->qvel[2]), 1e-6);
}

// ---------------------------------------------------------------------------
// 2. Incline (cenic-math §13 item 4), μ_s = μ_d = μ = 0.5.
// ---------------------------------------------------------------------------

void SetIncline(mjModel* m, double theta) {
  const double g = 9.81;
  m->opt.gravity[0] = g * std::sin(theta);
  m->opt.gravity[1] = 0;
  m->opt.gravity[2] = -g * std::cos(theta);
}

// Box with four corner contacts, tan θ < μ: it creeps at
// v = ε ρ / sqrt(1 − ρ²), ρ = tan θ / μ. The regularization velocity of
// corner k is ε_k = max(v_s, μ σ_R (2.65/m) h f_n,k); every corner carries at
// most the full weight, so μ σ_R 2.65 h g cos θ (1.2e-5 m/s here) < v_s and
// ε_k = v_s for all four. The total friction is then μ σ(v/v_s) Σ f_n,k =
// μ σ(v/v_s) m g cos θ, independent of how the load is shared, and the
// single-contact formula holds exactly.
TEST(PhysicsIncline, BoxCreepsAtRegularizedSpeedBelowFrictionAngle) {
  ModelPtr m = LoadScene("box_incline.xml");
  ASSERT_NE(m, nullptr);
  const double theta = 20 * kPi / 180, mu = 0.5, g = 9.81;
  SetIncline(m.get(), theta);
  const int box = mj_name2id(m.get(), mjOBJ_BODY, "box");
  const double h = m->opt.timestep, mass = m->body_mass[box];
  StepperOptions o;  // default v_s = 1e-4 m/s
  o.icf.stiction_anchors = false;  // the paper's regularized law (anchors: test_creep.py)
  const double v_s = o.icf.stiction_tolerance;
  const double eps_load = mu * o.icf.sigma_R * 2.65 / mass * h * mass * g * std::cos(theta);
  ASSERT_LT(eps_load, v_s);  // so ε = v_s at every corner
  const double eps = std::max(v_s, eps_load);
  const double rho = std::tan(theta) / mu;
  const double v_pred = eps * rho / std::sqrt(1 - rho * rho);

  DataPtr d = MakeData(m.get(), "rest");
  auto s = MakeStepper(m.get(), o);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.5, h)));  // transients
  ASSERT_EQ(d->ncon, 4);
  const double x0 = d->qpos[0], t0 = d->time;
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.5, h)));
  const double v_creep = (d->qpos[0] - x0) / (d->time - t0);
  Report("box creep speed, theta=20deg [m/s]", v_creep);
  Report("box creep speed predicted [m/s]", v_pred);
  Report("box creep speed / predicted", v_creep / v_pred);
  EXPECT_NEAR(v_creep / v_pred, 1.0, 0.05);
  EXPECT_NEAR(d->qvel[0] / v_pred, 1.0, 0.05);  // instantaneous speed too
  EXPECT_LT(std::abs(d->qpos[1]), 1e-9);        // no sideways drift
  // Stuck, not sliding: the creep is a tiny fraction of free sliding.
  EXPECT_LT(v_creep, 2 * v_s);
  // Still resting flat on its four corners (no tipping).
  EXPECT_NEAR(d->qpos[3], 1.0, 1e-6);
}

// Single contact with a small v_s: ε = μ σ_R (2.65/m) h g cos θ is set by the
// load term of §4.6. A sphere on three slide joints (no rolling) gives one
// point contact and a mass-independent creep speed.
TEST(PhysicsIncline, SingleContactCreepUsesLoadRegularization) {
  const std::string xml = R"(
<mujoco model="sliding_sphere">
  <option timestep="0.001"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" friction="0.5 0.005 0.0001"/>
    <body name="ball" pos="0 0 0.1">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="y" type="slide" axis="0 1 0"/>
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom name="ball" type="sphere" size="0.1" mass="2" friction="0.5 0.005 0.0001"/>
    </body>
  </worldbody>
</mujoco>)";
  ModelPtr m = LoadXmlString(xml);
  ASSERT_NE(m, nullptr);
  const double theta = 20 * kPi / 180, mu = 0.5, g = 9.81, h = m->opt.timestep;
  SetIncline(m.get(), theta);
  StepperOptions o;
  o.icf.stiction_tolerance = 1e-6;
  o.icf.stiction_anchors = false;  // the paper's regularized law (anchors: test_creep.py)
  const double eps = std::max(o.icf.stiction_tolerance,
                              mu * o.icf.sigma_R * 2.65 * h * g * std::cos(theta));
  ASSERT_GT(eps, 5 * o.icf.stiction_tolerance);  // the load term dominates
  const double rho = std::tan(theta) / mu;
  const double v_pred = eps * rho / std::sqrt(1 - rho * rho);

  DataPtr d = MakeData(m.get(), nullptr);
  auto s = MakeStepper(m.get(), o);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.5, h)));
  ASSERT_EQ(d->ncon, 1);
  const double x0 = d->qpos[0], t0 = d->time;
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.5, h)));
  const double v_creep = (d->qpos[0] - x0) / (d->time - t0);
  Report("single-contact creep speed (v_s=1e-6) [m/s]", v_creep);
  Report("single-contact creep speed predicted [m/s]", v_pred);
  Report("single-contact creep / predicted", v_creep / v_pred);
  EXPECT_NEAR(v_creep / v_pred, 1.0, 0.05);
}

// Stiction anchors (option stiction_anchors, on by default): the
// same box at 20° (ρ = 0.73) holds at every fixed step, where the
// regularized law alone creeps at v_s ρ/sqrt(1 − ρ²) = 107 µm/s. On release
// (gravity along the normal only) the box rocks back as its corners' normal
// loads even out, with or without anchors; the anchors add at most their recoil κ ε h (κ =
// StictionAnchors::kMaxBias, ε = v_s here) to that motion.
TEST(PhysicsIncline, AnchorsHoldBoxAtEveryStepAndReleaseWithoutKick) {
  for (double h : {1e-3, 5e-3, 2e-2}) {
    double creep[2], recoil[2];
    for (bool anchors : {true, false}) {
      ModelPtr m = LoadScene("box_incline.xml");
      ASSERT_NE(m, nullptr);
      SetIncline(m.get(), 20 * kPi / 180);
      m->opt.timestep = h;
      StepperOptions o;
      o.mode = Mode::kFixed;
      o.icf.stiction_anchors = anchors;
      DataPtr d = MakeData(m.get(), "rest");
      auto s = MakeStepper(m.get(), o);
      ASSERT_NE(s, nullptr);
      ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.5, h)));
      ASSERT_EQ(d->ncon, 4);
      const double x0 = d->qpos[0], t0 = d->time;
      ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.5, h)));
      creep[anchors] = (d->qpos[0] - x0) / (d->time - t0);
      EXPECT_NEAR(d->qpos[3], 1.0, 1e-6);
      m->opt.gravity[0] = 0;  // release
      const double x1 = d->qpos[0];
      ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.2, h)));
      recoil[anchors] = d->qpos[0] - x1;
      EXPECT_LT(std::abs(d->qvel[0]), 1e-6);
    }
    Report("box at 20deg, fixed step h [s]", h);
    Report("  creep with anchors [m/s]", creep[1]);
    Report("  creep without anchors [m/s]", creep[0]);
    Report("  release motion with - without anchors [m]", recoil[1] - recoil[0]);
    EXPECT_LT(std::abs(creep[1]), 1e-9);
    EXPECT_GT(creep[0], 1e-4);
    EXPECT_LT(std::abs(recoil[1] - recoil[0]),
              adapter::StictionAnchors::kMaxBias * StepperOptions().icf.stiction_tolerance * h);
  }
}

// A stepper reused after its data is reset to an earlier time starts a new
// run (StictionAnchors::Apply clears the anchors): the box at 20° holds from
// the reset on, as with a fresh stepper, bit for bit. (The anchors were
// cleared but not advanced again until the time passed the last run's end, so
// the box crept at the regularized law's speed meanwhile.)
TEST(PhysicsIncline, AnchorsHoldBoxAgainAfterTheTimeIsReset) {
  const double h = 5e-3;
  ModelPtr m = LoadScene("box_incline.xml");
  ASSERT_NE(m, nullptr);
  SetIncline(m.get(), 20 * kPi / 180);
  m->opt.timestep = h;
  DataPtr d = MakeData(m.get(), "rest"), fresh = MakeData(m.get(), "rest");
  auto s = MakeStepper(m.get());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(1.0, h)));
  mj_resetDataKeyframe(m.get(), d.get(), mj_name2id(m.get(), mjOBJ_KEY, "rest"));
  mj_forward(m.get(), d.get());
  auto s_fresh = MakeStepper(m.get());
  ASSERT_NE(s_fresh, nullptr);
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.25, h)));
  ASSERT_TRUE(StepN(s_fresh.get(), fresh.get(), Steps(0.25, h)));
  const double x0 = d->qpos[0], t0 = d->time;
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.25, h)));
  ASSERT_TRUE(StepN(s_fresh.get(), fresh.get(), Steps(0.25, h)));
  const double creep = (d->qpos[0] - x0) / (d->time - t0);
  Report("box at 20deg, creep after a time reset [m/s]", creep);
  EXPECT_LT(std::abs(creep), 1e-9);
  for (int i = 0; i < m->nq; ++i) EXPECT_EQ(d->qpos[i], fresh->qpos[i]) << "qpos " << i;
  for (int i = 0; i < m->nv; ++i) EXPECT_EQ(d->qvel[i], fresh->qvel[i]) << "qvel " << i;
}

// tan θ > μ: the box slides with a = g (sin θ − μ cos θ).
TEST(PhysicsIncline, BoxSlidesAboveFrictionAngle) {
  ModelPtr m = LoadScene("box_incline.xml");
  ASSERT_NE(m, nullptr);
  const double theta = 35 * kPi / 180, mu = 0.5, g = 9.81;
  SetIncline(m.get(), theta);
  const double h = m->opt.timestep;
  DataPtr d = MakeData(m.get(), "rest");
  auto s = MakeStepper(m.get());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.1, h)));  // transients
  const double v0 = d->qvel[0], t0 = d->time;
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(0.4, h)));
  const double a = (d->qvel[0] - v0) / (d->time - t0);
  const double a_pred = g * (std::sin(theta) - mu * std::cos(theta));
  Report("box slide acceleration, theta=35deg [m/s^2]", a);
  Report("box slide acceleration relative error", a / a_pred - 1);
  EXPECT_NEAR(a / a_pred, 1.0, 0.05);
  EXPECT_GT(d->ncon, 0);
  EXPECT_NEAR(d->qpos[3], 1.0, 1e-6);  // slides flat, no tipping
}

// ---------------------------------------------------------------------------
// 3. Contact-free convergence: fixed-step ICF is symplectic Euler (§13 item 14),
//    first order.
// ---------------------------------------------------------------------------

struct StateError {
  double q = 0, v = 0;  // |Δq| (tangent space), |Δv|
};

// Reference: mj_step with the RK4 integrator at dt = h_min/100 = 1e-5 s (one
// reference for all h). RK4's error at that step is ~1e-15, so the reference
// error is negligible against the O(h) errors of the method (~1e-3); with
// MuJoCo's default semi-implicit Euler at h/100 the reference would itself
// carry 1 % of the error being measured.
void Reference(const mjModel* m0, const char* key, double T, std::vector<double>* q,
               std::vector<double>* v) {
  mjModel* m = mj_copyModel(nullptr, m0);
  m->opt.integrator = mjINT_RK4;
  m->opt.timestep = 1e-5;
  DataPtr d = MakeData(m, key);
  for (int i = 0, n = Steps(T, m->opt.timestep); i < n; ++i) mj_step(m, d.get());
  q->assign(d->qpos, d->qpos + m->nq);
  v->assign(d->qvel, d->qvel + m->nv);
  mj_deleteModel(m);
}

StateError RunFixed(mjModel* m, const char* key, double h, double T, const std::vector<double>& qref,
                    const std::vector<double>& vref, double* max_quat_error) {
  m->opt.timestep = h;
  DataPtr d = MakeData(m, key);
  auto s = MakeStepper(m);
  StateError e;
  if (!s) return e;
  for (int i = 0, n = Steps(T, h); i < n; ++i) {
    const absl::Status st = s->Step(d.get());
    EXPECT_TRUE(st.ok()) << st;
    if (!st.ok()) break;
    for (int j = 0; j < m->njnt; ++j) {
      if (m->jnt_type[j] != mjJNT_FREE && m->jnt_type[j] != mjJNT_BALL) continue;
      const int adr = m->jnt_qposadr[j] + (m->jnt_type[j] == mjJNT_FREE ? 3 : 0);
      const double nrm = std::sqrt(d->qpos[adr] * d->qpos[adr] + d->qpos[adr + 1] * d->qpos[adr + 1] +
                                   d->qpos[adr + 2] * d->qpos[adr + 2] +
                                   d->qpos[adr + 3] * d->qpos[adr + 3]);
      *max_quat_error = std::max(*max_quat_error, std::abs(nrm - 1));
    }
  }
  EXPECT_NEAR(d->time, T, 1e-9);
  std::vector<double> dq(m->nv);
  mj_differentiatePos(m, dq.data(), 1.0, qref.data(), d->qpos);
  for (int i = 0; i < m->nv; ++i) {
    e.q += dq[i] * dq[i];
    e.v += (d->qvel[i] - vref[i]) * (d->qvel[i] - vref[i]);
  }
  e.q = std::sqrt(e.q);
  e.v = std::sqrt(e.v);
  return e;
}

void CheckFirstOrder(const char* file, const char* key, const char* label) {
  ModelPtr m = LoadScene(file);
  ASSERT_NE(m, nullptr);
  const double T = 0.5;
  std::vector<double> qref, vref;
  Reference(m.get(), key, T, &qref, &vref);
  const double hs[3] = {4e-3, 2e-3, 1e-3};
  StateError e[3];
  double quat_error = 0;
  for (int i = 0; i < 3; ++i) {
    e[i] = RunFixed(m.get(), key, hs[i], T, qref, vref, &quat_error);
    Report(std::string(label) + ": |dq| at T, h=" + Fmt(hs[i]), e[i].q);
    Report(std::string(label) + ": |dv| at T, h=" + Fmt(hs[i]), e[i].v);
  }
  for (int i = 0; i < 2; ++i) {
    const double order_q = std::log2(e[i].q / e[i + 1].q);
    const double order_v = std::log2(e[i].v / e[i + 1].v);
    Report(std::string(label) + ": order q, h=" + Fmt(hs[i + 1]), order_q);
    Report(std::string(label) + ": order v, h=" + Fmt(hs[i + 1]), order_v);
    EXPECT_NEAR(order_q, 1.0, 0.2) << label << " position error " << e[i].q << " -> " << e[i + 1].q;
    EXPECT_NEAR(order_v, 1.0, 0.2) << label << " velocity error " << e[i].v << " -> " << e[i + 1].v;
  }
  // The errors are those of a first-order method, not round-off.
  EXPECT_GT(e[2].q, 1e-8);
  Report(std::string(label) + ": max | |quat| - 1 |", quat_error);
  EXPECT_LT(quat_error, 1e-9);
}

TEST(PhysicsConvergence, DoublePendulumIsFirstOrder) {
  CheckFirstOrder("pendulum.xml", "start", "double pendulum");
}

TEST(PhysicsConvergence, TumblingBoxIsFirstOrderAndKeepsUnitQuaternion) {
  CheckFirstOrder("tumbling_box.xml", "spin", "tumbling box");
}

// ---------------------------------------------------------------------------
// 4. Actuators and limits (§6, §5, §13 items 10–12).
// ---------------------------------------------------------------------------

// Gravity torque on the servo arm's hinge: −m g l_c sin q (l_c: hinge to COM).
struct ArmGeometry {
  double mass = 0, lc = 0;
};
ArmGeometry Arm(const mjModel* m, const mjData* d) {
  const int link = mj_name2id(m, mjOBJ_BODY, "link");
  const int hinge = mj_name2id(m, mjOBJ_JOINT, "hinge");
  ArmGeometry a;
  a.mass = m->body_mass[link];
  const double* com = d->xipos + 3 * link;
  const double* anchor = d->xanchor + 3 * hinge;
  a.lc = std::sqrt((com[0] - anchor[0]) * (com[0] - anchor[0]) +
                   (com[2] - anchor[2]) * (com[2] - anchor[2]));
  return a;
}

TEST(PhysicsActuators, PositionServoReachesSetPointWithoutGravity) {
  ModelPtr m = LoadScene("servo_arm.xml");
  ASSERT_NE(m, nullptr);
  mju_zero3(m->opt.gravity);
  DataPtr d = MakeData(m.get(), "home");
  ASSERT_EQ(d->ctrl[0], 0.5);
  auto s = MakeStepper(m.get());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(1.5, m->opt.timestep)));
  Report("servo, no gravity: q - 0.5 [rad]", d->qpos[0] - 0.5);
  EXPECT_NEAR(d->qpos[0], 0.5, 1e-3);
  EXPECT_NEAR(d->qvel[0], 0.0, 1e-3);
}

TEST(PhysicsActuators, PositionServoSettlesAtStaticEquilibriumWithGravity) {
  ModelPtr m = LoadScene("servo_arm.xml");
  ASSERT_NE(m, nullptr);
  DataPtr d = MakeData(m.get(), "home");
  const int servo = mj_name2id(m.get(), mjOBJ_ACTUATOR, "servo");
  const double kp = m->actuator_gainprm[mjNGAIN * servo], u = d->ctrl[servo];
  ASSERT_EQ(kp, 50);
  const ArmGeometry arm = Arm(m.get(), d.get());
  const double g = mju_norm3(m->opt.gravity);
  ASSERT_NEAR(arm.lc, 0.2, 1e-9);
  // kp (u − q) = m g l_c sin q, by Newton's method.
  double q = u;
  for (int i = 0; i < 50; ++i)
    q -= (kp * (u - q) - arm.mass * g * arm.lc * std::sin(q)) /
         (-kp - arm.mass * g * arm.lc * std::cos(q));
  ASSERT_LT(std::abs(kp * (u - q) - arm.mass * g * arm.lc * std::sin(q)), 1e-12);
  auto s = MakeStepper(m.get());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(StepN(s.get(), d.get(), Steps(2.0, m->opt.timestep)));
  Report("servo with gravity: equilibrium q* [rad]", q);
  Report("servo with gravity: q - q* [rad]", d->qpos[0] - q);
  EXPECT_NEAR(d->qpos[0], q, 1e-3);
  EXPECT_LT(q, u - 0.01);  // gravity visibly pulls it below the set point
}

// forcerange clamp, checked through the dynamics: the servo wants
// kp (1.5 − q) − kv v ≥ 75 N m but is clamped to 20; the motor opposes it with
// 30 N m, so the arm accelerates at (−30 + 20 − m g l_c sin q)/I. Per step of
// the fixed scheme this is exact: I (v1 − v0) = h (−30 + 20 − bias(q0)).
TEST(PhysicsActuators, ServoForceRangeClampsTheAppliedTorque) {
  ModelPtr m = LoadScene("servo_arm.xml");
  ASSERT_NE(m, nullptr);
  const int hinge = mj_name2id(m.get(), mjOBJ_JOINT, "hinge");
  m->jnt_range[2 * hinge] = -3;  // limits out of the way
  m->jnt_range[2 * hinge + 1] = 3;
  const int servo = mj_name2id(m.get(), mjOBJ_ACTUATOR, "servo");
  const int motor = mj_name2id(m.get(), mjOBJ_ACTUATOR, "motor");
  const double kp = 50, kv = 5, fmax = 20;
  ASSERT_EQ(m->actuator_forcerange[2 * servo + 1], fmax);
  for (const double sign : {1.0, -1.0}) {
    SCOPED_TRACE(testing::Message() << "servo pushes towards " << sign);
    DataPtr d = MakeData(m.get(), "home");
    d->ctrl[servo] = 1.5 * sign;
    d->ctrl[motor] = -30 * sign;
    mj_forward(m.get(), d.get());
    auto s = MakeStepper(m.get());
    ASSERT_NE(s, nullptr);
    const ArmGeometry arm = Arm(m.get(), d.get());
    const double g = mju_norm3(m->opt.gravity);
    const double h = m->opt.timestep;
    double max_step_error = 0, min_unclamped = 1e300, gravity_torque = 0;
    const double v_start = d->qvel[0], t_start = d->time;
    const double I0 = MassDiag(m.get(), d.get(), 0);
    const int n = Steps(0.05, h);
    for (int i = 0; i < n; ++i) {
      const double I = MassDiag(m.get(), d.get(), 0), bias = d->qfrc_bias[0];
      const double q0 = d->qpos[0], v0 = d->qvel[0];
      min_unclamped = std::min(min_unclamped, sign * (kp * (1.5 * sign - q0) - kv * v0));
      gravity_torque += -arm.mass * g * arm.lc * std::sin(q0) / n;
      ASSERT_TRUE(s->Step(d.get()).ok());
      const double applied = I * d->qacc[0] + bias - (-30 * sign);  // servo torque this step
      max_step_error = std::max(max_step_error, std::abs(applied - sign * fmax));
      EXPECT_LE(std::abs(d->actuator_force[servo]), fmax + 1e-9);
    }
    // Analytic: mean acceleration over the window against
    // (−τ_motor + 20 + mean gravity torque)/I (I is constant for one hinge).
    const double a_meas = (d->qvel[0] - v_start) / (d->time - t_start);
    const double a_pred = (-30 * sign + fmax * sign + gravity_torque) / I0;
    Report("servo clamp: unclamped servo torque would be at least [N m]", min_unclamped);
    Report("servo clamp: max |applied servo torque - 20| per step [N m]", max_step_error);
    Report("servo clamp: acceleration / (-tau+20-grav)/I", a_meas / a_pred);
    EXPECT_GT(min_unclamped, 3 * fmax);  // the clamp is really active
    EXPECT_LT(max_step_error, 1e-6 * fmax);
    EXPECT_NEAR(a_meas / a_pred, 1.0, 0.03);
    EXPECT_LT(sign * d->qvel[0], -1.0);  // really driven backwards by the motor
  }
}

// Constant force into a slide limit: steady violation τ/K,
// K = 4π²/(β² h̄² w), w = 1/M_ii, h̄ = max(h, 1e-4) (§13 item 10).
TEST(PhysicsLimits, SlideLimitStaticViolationMatchesNearRigidStiffness) {
  ModelPtr m = LoadScene("slider_limits.xml");
  ASSERT_NE(m, nullptr);
  const int slide = mj_name2id(m.get(), mjOBJ_JOINT, "slide");
  const double q_u = m->jnt_range[2 * slide + 1];
  const double force = 20;
  StepperOptions o;
  const double beta = o.icf.beta, hmin = o.icf.h_min_near_rigid;
  const double hs[4] = {2e-3, 1e-3, 5e-4, 5e-5};
  double violation[4];
  for (int i = 0; i < 4; ++i) {
    const double h = hs[i];
    m->opt.timestep = h;
    DataPtr d = MakeData(m.get(), "start");
    d->qpos[0] = q_u;
    d->ctrl[0] = force;
    mj_forward(m.get(), d.get());
    const double w = 1.0 / MassDiag(m.get(), d.get(), 0);
    auto s = MakeStepper(m.get(), o);
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(StepN(s.get(), d.get(), std::min(Steps(0.1, h), 1000)));
    const double hbar = std::max(h, hmin);
    const double K = 4 * kPi * kPi / (beta * beta * hbar * hbar * w);
    violation[i] = d->qpos[0] - q_u;
    const double ratio = violation[i] / (force / K);
    Report("slide limit: violation / (tau/K), h=" + Fmt(h), ratio);
    EXPECT_NEAR(ratio, 1.0, 0.05) << "violation " << violation[i] << " m, tau/K " << force / K;
    EXPECT_NEAR(d->qvel[0], 0.0, 1e-9);
  }
  for (int i = 0; i < 2; ++i) {
    const double r = violation[i] / violation[i + 1];
    Report("slide limit: violation(2h)/violation(h), h=" + Fmt(hs[i + 1]), r);
    EXPECT_NEAR(r, 4.0, 0.2);  // ∝ h²
  }
  // Below h̄_min = 1e-4 s the stiffness is frozen at its 1e-4 s value: the
  // h = 5e-5 case (checked against τ/K with h̄ = 1e-4 above) is 1/4 of h = 2e-4.
  EXPECT_NEAR(violation[1] / violation[3], 100.0, 5.0);
}

// Dynamic: pushed from rest at q = 0 by the 20 N motor, the block arrives at
// the limit at ≈ 2 m/s. The largest violation stays bounded (here: equal to
// the static τ/K) and shrinks with h (∝ h²).
TEST(PhysicsLimits, SlideLimitImpactViolationShrinksWithStep) {
  ModelPtr m = LoadScene("slider_limits.xml");
  ASSERT_NE(m, nullptr);
  const int slide = mj_name2id(m.get(), mjOBJ_JOINT, "slide");
  const double q_u = m->jnt_range[2 * slide + 1];
  const double hs[3] = {2e-3, 1e-3, 5e-4};
  const double beta = StepperOptions{}.icf.beta, hmin = StepperOptions{}.icf.h_min_near_rigid;
  double max_violation[3];
  for (int i = 0; i < 3; ++i) {
    const double h = hs[i];
    m->opt.timestep = h;
    DataPtr d = MakeData(m.get(), "start");
    d->ctrl[0] = 20;
    auto s = MakeStepper(m.get());
    ASSERT_NE(s, nullptr);
    max_violation[i] = 0;
    double v_max = 0;
    for (int k = 0, n = Steps(0.3, h); k < n; ++k) {
      ASSERT_TRUE(s->Step(d.get()).ok());
      max_violation[i] = std::max(max_violation[i], d->qpos[0] - q_u);
      v_max = std::max(v_max, d->qvel[0]);
    }
    const double K = 4 * kPi * kPi * MassDiag(m.get(), d.get(), 0) /
                     (beta * beta * std::max(h, hmin) * std::max(h, hmin));
    Report("slide impact: max violation [m], h=" + Fmt(h), max_violation[i]);
    Report("slide impact: max violation / static (tau/K), h=" + Fmt(h),
           max_violation[i] / (20 / K));
    // No overshoot beyond the static violation: the limit acts on the
    // predicted gap g0 + h v (§5, §13 item 11), so the block is slowed
    // before it reaches q_u and approaches the limit geometrically (the gap
    // shrinks by ≈ τ_d/(h + τ_d) ≈ 0.03 per step) instead of bouncing.
    EXPECT_LT(max_violation[i], 1.5 * 20 / K);
    EXPECT_GT(v_max, 1.9);          // it did arrive at speed
    EXPECT_LT(max_violation[i], 1e-4);  // bounded: < 0.1 % of the travel
  }
  for (int i = 0; i < 2; ++i) {
    Report("slide impact: max violation ratio, h=" + Fmt(hs[i + 1]),
           max_violation[i] / max_violation[i + 1]);
    EXPECT_GT(max_violation[i], 1.5 * max_violation[i + 1]);
  }
}

// ---------------------------------------------------------------------------
// 5. Bad input.
// ---------------------------------------------------------------------------

struct Snapshot {
  std::vector<double> qpos, qvel, act, ctrl;
  double time;
  explicit Snapshot(const mjModel* m, const mjData* d)
      : qpos(d->qpos, d->qpos + m->nq),
        qvel(d->qvel, d->qvel + m->nv),
        act(d->act, d->act + m->na),
        ctrl(d->ctrl, d->ctrl + m->nu),
        time(d->time) {}
  // Bitwise comparison (NaN-safe).
  bool Same(const Snapshot& o) const {
    auto eq = [](const std::vector<double>& a, const std::vector<double>& b) {
      return a.size() == b.size() &&
             (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
    };
    return eq(qpos, o.qpos) && eq(qvel, o.qvel) && eq(act, o.act) && eq(ctrl, o.ctrl) &&
           std::memcmp(&time, &o.time, sizeof(double)) == 0;
  }
};

TEST(PhysicsBadInput, NonFiniteInputIsRejectedAndStateUnchanged) {
  ModelPtr m = LoadScene("servo_arm.xml");
  ASSERT_NE(m, nullptr);
  auto s = MakeStepper(m.get());
  ASSERT_NE(s, nullptr);
  struct Case { const char* field; double* (*where)(mjData*); };
  const Case cases[] = {
      {"qpos", [](mjData* d) { return &d->qpos[0]; }},
      {"qvel", [](mjData* d) { return &d->qvel[0]; }},
      {"ctrl", [](mjData* d) { return &d->ctrl[1]; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    DataPtr d = MakeData(m.get(), "home");
    ASSERT_TRUE(StepN(s.get(), d.get(), 10));
    *c.where(d.get()) = std::nan("");
    const Snapshot before(m.get(), d.get());
    const absl::Status st = s->Step(d.get());
    EXPECT_FALSE(st.ok());
    EXPECT_NE(std::string(st.message()).find(c.field), std::string::npos) << st;
    EXPECT_TRUE(before.Same(Snapshot(m.get(), d.get()))) << "state changed on a rejected step";
    // After repairing the input the same stepper continues.
    *c.where(d.get()) = 0;
    EXPECT_TRUE(s->Step(d.get()).ok());
    EXPECT_TRUE(std::isfinite(d->qpos[0]));
  }
}

TEST(PhysicsBadInput, ModelWithoutDofsAdvancesTime) {
  ModelPtr m = LoadXmlString(R"(
<mujoco model="static_only">
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body pos="0 0 0.05">
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody>
</mujoco>)");
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->nv, 0);
  DataPtr d = MakeData(m.get(), nullptr);
  auto s = MakeStepper(m.get());
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(StepN(s.get(), d.get(), 10));
  EXPECT_NEAR(d->time, 10 * 0.002, 1e-12);
}

}  // namespace
}  // namespace mjcenic
