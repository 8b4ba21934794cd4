// Torsional (condim 4) and rolling (condim 6) friction: ICF's contact torque
// pool, bounded by the contact's lagged normal force times MuJoCo's
// friction[1] (spin) and friction[2] (roll) lengths. Checked against the
// rigid-body solutions for a 1 kg ball (radius 0.1 m, I = 2/5 m r²) on a plane:
//  * spin under a torque τ about the normal: sticks for τ < μ_spin m g,
//    accelerates at (τ − μ_spin m g)/I above it, and at τ/I with condim 3;
//  * rolling without slip at v₀: decelerates at μ_roll g / (1.4 r), and not at
//    all with condim 3;
// and the torques reach MuJoCo's efc_force (mj_contactForce).
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

constexpr double kG = 9.81, kMass = 1.0, kRadius = 0.1;
constexpr double kInertia = 0.4 * kMass * kRadius * kRadius;

ModelPtr Ball(int condim, double mu_spin, double mu_roll, const char* cone = "elliptic") {
  char xml[1500];
  std::snprintf(xml, sizeof(xml), R"(
<mujoco>
  <option timestep="0.002" cone="%s" gravity="0 0 -%g"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" condim="%d" friction="1 %g %g"/>
    <body name="ball" pos="0 0 %g">
      <freejoint/>
      <geom type="sphere" size="%g" mass="%g" condim="%d" friction="1 %g %g"/>
    </body>
  </worldbody>
</mujoco>)",
                cone, kG, condim, mu_spin, mu_roll, kRadius, kRadius, kMass, condim, mu_spin,
                mu_roll);
  std::string err;
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  EXPECT_NE(m, nullptr) << err;
  return m;
}

struct BallRun {
  std::unique_ptr<Stepper> stepper;
  DataPtr d;
};

// The ball settled on the plane (0.3 s), ready for a torque or a push.
BallRun Settled(const mjModel* m) {
  BallRun r;
  r.d.reset(mj_makeData(m));
  mj_forward(m, r.d.get());
  StepperOptions o;
  o.accuracy = 1e-4;
  auto s = Stepper::Create(m, o);
  EXPECT_TRUE(s.ok()) << s.status();
  r.stepper = std::move(s).value();
  EXPECT_TRUE(r.stepper->AdvanceTo(r.d.get(), 0.3).ok());
  EXPECT_TRUE(r.stepper->warnings().empty()) << r.stepper->warnings()[0];
  return r;
}

// ω_z after applying torque τ about the vertical for 0.5 s.
double SpinAfter(const mjModel* m, double tau, double* angle = nullptr) {
  BallRun r = Settled(m);
  r.d->qfrc_applied[5] = tau;  // free joint: angular dofs in the body frame (z stays vertical)
  const double q0 = 2 * std::atan2(r.d->qpos[6], r.d->qpos[3]);
  EXPECT_TRUE(r.stepper->AdvanceTo(r.d.get(), 0.8).ok());
  if (angle) *angle = 2 * std::atan2(r.d->qpos[6], r.d->qpos[3]) - q0;
  return r.d->qvel[5];
}

TEST(ContactTorque, SpinSticksBelowTheTorsionalBoundAndSlipsAbove) {
  const double mu_spin = 0.01, bound = mu_spin * kMass * kG;  // 0.0981 N·m
  ModelPtr m3 = Ball(3, mu_spin, 0), m4 = Ball(4, mu_spin, 0);
  ASSERT_TRUE(m3 && m4);
  // condim 3: a point contact has no torsional friction.
  const double w3 = SpinAfter(m3.get(), 2 * bound);
  const double w3_exact = 2 * bound / kInertia * 0.5;
  std::printf("  condim 3, tau = 2 bound: omega %.4f rad/s (free: %.4f)\n", w3, w3_exact);
  EXPECT_NEAR(w3, w3_exact, 0.01 * w3_exact);
  // condim 4 below the bound: the ball sticks (|ω| within the regularization
  // ε = v_s μ / μ_spin = 0.01 rad/s; σ(ω/ε) = 1/2 at ω = 0.577 ε).
  double angle = 0;
  const double w_stick = SpinAfter(m4.get(), 0.5 * bound, &angle);
  std::printf("  condim 4, tau = bound/2: omega %.3g rad/s, turned %.3g rad in 0.5 s\n", w_stick,
              angle);
  EXPECT_LT(std::abs(w_stick), 0.01);
  EXPECT_LT(std::abs(angle), 0.005);
  // condim 4 above the bound: α = (τ − μ_spin m g) / I.
  const double w_slip = SpinAfter(m4.get(), 2 * bound);
  const double w_slip_exact = bound / kInertia * 0.5;
  std::printf("  condim 4, tau = 2 bound: omega %.4f rad/s (exact %.4f)\n", w_slip, w_slip_exact);
  EXPECT_NEAR(w_slip, w_slip_exact, 0.05 * w_slip_exact);
}

// Ball rolling at v₀ = 1 m/s along x (ω_y = v₀/r): speed after 1 s.
struct Rolling {
  double v = 0, w_y = 0, w_z = 0;
};
Rolling RollFor1s(const mjModel* m) {
  BallRun r = Settled(m);
  r.d->qvel[0] = 1.0;
  r.d->qvel[4] = 1.0 / kRadius;
  EXPECT_TRUE(r.stepper->AdvanceTo(r.d.get(), 1.3).ok());
  return {r.d->qvel[0], r.d->qvel[4], r.d->qvel[5]};
}

TEST(ContactTorque, RollingResistanceDeceleratesARollingBall) {
  const double mu_roll = 0.002;
  ModelPtr m3 = Ball(3, 0.005, mu_roll), m6 = Ball(6, 0.005, mu_roll);
  ASSERT_TRUE(m3 && m6);
  const Rolling free = RollFor1s(m3.get());
  const Rolling roll = RollFor1s(m6.get());
  // Energy: (m + I/r²) v dv/dt = −μ_roll m g v / r  →  a = μ_roll g / (1.4 r).
  const double a_exact = mu_roll * kG / (1.4 * kRadius);
  std::printf("  condim 3: v = %.5f m/s; condim 6: v = %.5f m/s, deceleration %.4f (exact %.4f)\n",
              free.v, roll.v, 1.0 - roll.v, a_exact);
  EXPECT_NEAR(free.v, 1.0, 1e-3);
  EXPECT_NEAR(1.0 - roll.v, a_exact, 0.05 * a_exact);
  // Still rolling without slip, and no spin appears.
  EXPECT_NEAR(roll.w_y * kRadius, roll.v, 0.01 * roll.v);
  EXPECT_LT(std::abs(roll.w_z), 1e-6);
}

// Anisotropic rolling (a <pair> with friction[3] ≠ friction[4], MuJoCo's
// elliptic bound (τ₁/μ₁)² + (τ₂/μ₂)² ≤ f_n²): rolling about contact tangent k
// decelerates at μ_k g / (1.4 r), in both directions.
TEST(ContactTorque, AnisotropicRollingUsesEachTangentsLength) {
  const double mu1 = 0.003, mu2 = 0.001;
  char xml[1500];
  std::snprintf(xml, sizeof(xml), R"(
<mujoco>
  <option timestep="0.002" cone="elliptic" gravity="0 0 -%g"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="ball" pos="0 0 %g">
      <freejoint/>
      <geom name="ball" type="sphere" size="%g" mass="%g"/>
    </body>
  </worldbody>
  <contact>
    <pair geom1="floor" geom2="ball" condim="6" friction="1 1 0.005 %g %g"/>
  </contact>
</mujoco>)",
                kG, kRadius, kRadius, kMass, mu1, mu2);
  std::string err;
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  ASSERT_NE(m, nullptr) << err;
  // Which world axis is tangent 1 of the ball's contact (normal +z)?
  DataPtr d0(mj_makeData(m.get()));
  mj_forward(m.get(), d0.get());
  ASSERT_EQ(d0->ncon, 1);
  const double* t1 = d0->contact[0].frame + 3;
  // Roll along x: ω about y; along y: ω about x (world axes = free-joint dofs 3, 4).
  double decel[2];
  for (int dir = 0; dir < 2; ++dir) {
    BallRun r = Settled(m.get());
    r.d->qvel[dir] = 1.0;
    r.d->qvel[dir == 0 ? 4 : 3] = dir == 0 ? 1.0 / kRadius : -1.0 / kRadius;
    ASSERT_TRUE(r.stepper->AdvanceTo(r.d.get(), 1.3).ok());
    decel[dir] = 1.0 - r.d->qvel[dir];
  }
  // ω about y is about tangent 1 when t1 = ±y.
  const bool y_is_t1 = std::abs(t1[1]) > 0.99;
  const double mu_x = y_is_t1 ? mu1 : mu2, mu_y = y_is_t1 ? mu2 : mu1;
  const double ax = mu_x * kG / (1.4 * kRadius), ay = mu_y * kG / (1.4 * kRadius);
  std::printf("  tangent 1 = (%.2f, %.2f, %.2f): deceleration along x %.4f (exact %.4f), along "
              "y %.4f (exact %.4f)\n", t1[0], t1[1], t1[2], decel[0], ax, decel[1], ay);
  EXPECT_NEAR(decel[0], ax, 0.05 * ax);
  EXPECT_NEAR(decel[1], ay, 0.05 * ay);
}

TEST(ContactTorque, TorsionalTorqueReachesMujocoContactForce) {
  const double mu_spin = 0.01, tau = 0.5 * mu_spin * kMass * kG;
  for (const char* cone : {"elliptic", "pyramidal"}) {
    SCOPED_TRACE(cone);
    ModelPtr m = Ball(4, mu_spin, 0, cone);
    ASSERT_TRUE(m);
    BallRun r = Settled(m.get());
    r.d->qfrc_applied[5] = tau;
    ASSERT_TRUE(r.stepper->AdvanceTo(r.d.get(), 0.5).ok());
    ASSERT_EQ(r.d->ncon, 1);
    mjtNum f[6];
    mj_contactForce(m.get(), r.d.get(), 0, f);
    std::printf("  %s: normal %.5f N (m g = %.5f), torsional %.6f N m (applied %.6f)\n", cone, f[0],
                kMass * kG, f[3], tau);
    EXPECT_NEAR(f[0], kMass * kG, 1e-3 * kMass * kG);
    EXPECT_NEAR(std::abs(f[3]), tau, 0.01 * tau);
  }
}

}  // namespace
}  // namespace mjcenic
