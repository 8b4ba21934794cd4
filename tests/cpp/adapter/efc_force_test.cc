// efc_force of the non-contact rows after a step: joint and tendon limits,
// equalities (connect, weld) and friction loss carry the impulse of the
// step's last convex solve divided by its step, on MuJoCo's row (same type,
// object and side), so code that reads efc_force / efc_state after mj_step
// works with mjcenic. Checked at static equilibria, where the constraint
// force is known in closed form and mj_step's rows settle to the same values.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

constexpr double kG = 9.81;

// Independent parts, each at a static equilibrium held by one kind of row:
//   pend    1 kg rod (COM 0.25 m) on a hinge, resting on its upper limit: f = m g l_c
//   hang    2 kg free ball held by a connect to the world: f_z = m g
//   weldbox 1.5 kg free box welded to the world at its origin, COM 0.2 m off it
//   slider  1 kg on a horizontal slide with frictionloss 5 N, pushed by qfrc_applied
//   pair    two 2 kg bodies on vertical slides, fixed tendon q1 + q2 >= -0.1
constexpr char kXml[] = R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="pend">
      <joint name="hinge" type="hinge" axis="0 1 0" limited="true" range="-90 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1"/>
    </body>
    <body name="hang" pos="2 0 0">
      <freejoint/>
      <geom type="sphere" size="0.05" mass="2"/>
    </body>
    <body name="weldbox" pos="3 0 0">
      <freejoint/>
      <geom type="box" pos="0.2 0 0" size="0.05 0.05 0.05" mass="1.5"/>
    </body>
    <body name="slider" pos="4 0 0">
      <joint name="slide" type="slide" axis="1 0 0" frictionloss="5"/>
      <geom type="box" size="0.05 0.05 0.05" mass="1"/>
    </body>
    <body name="p1" pos="6 0 0">
      <joint name="z1" type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.05" mass="2"/>
    </body>
    <body name="p2" pos="7 0 0">
      <joint name="z2" type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.05" mass="2"/>
    </body>
  </worldbody>
  <equality>
    <connect name="hold" body1="hang" anchor="0 0 0"/>
    <weld name="glue" body1="weldbox" anchor="3 0 0"/>
  </equality>
  <tendon>
    <fixed name="sum" limited="true" range="-0.1 10">
      <joint joint="z1" coef="1"/>
      <joint joint="z2" coef="1"/>
    </fixed>
  </tendon>
  <contact>
    <exclude body1="p1" body2="p2"/>
  </contact>
</mujoco>)";

struct Settled {
  ModelPtr m;
  DataPtr d;
};

// Settles for `seconds` with mjcenic (mode) or mj_step (mode == nullopt),
// the slider pushed by `push` N.
Settled Settle(const Mode* mode, double push, double seconds = 1.5) {
  std::string err;
  Settled s;
  s.m = test_util::ModelFromXml(kXml, &err);
  EXPECT_NE(s.m, nullptr) << err;
  if (!s.m) return s;
  mjModel* m = s.m.get();
  s.d.reset(mj_makeData(m));
  mjData* d = s.d.get();
  // Start the tendon pair at its limit and the pendulum on its stop.
  d->qpos[m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "z1")]] = -0.05;
  d->qpos[m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "z2")]] = -0.05;
  d->qfrc_applied[m->jnt_dofadr[mj_name2id(m, mjOBJ_JOINT, "slide")]] = push;
  mj_forward(m, d);
  const long n = std::lround(seconds / m->opt.timestep);
  if (mode) {
    StepperOptions o;
    o.mode = *mode;
    auto st = Stepper::Create(m, o);
    EXPECT_TRUE(st.ok()) << st.status();
    if (!st.ok()) return s;
    for (long i = 0; i < n; ++i) EXPECT_TRUE((*st)->Step(d).ok());
  } else {
    for (long i = 0; i < n; ++i) mj_step(m, d);
  }
  return s;
}

// Rows of (type, object) in efc order.
std::vector<int> Rows(const mjData* d, int type, int id) {
  std::vector<int> rows;
  for (int i = 0; i < d->nefc; ++i)
    if (d->efc_type[i] == type && d->efc_id[i] == id) rows.push_back(i);
  return rows;
}

// Jᵀ efc_force over the non-contact rows, per dof.
std::vector<double> JtForce(const mjModel* m, const mjData* d) {
  std::vector<double> full(m->nv, 0.0);
  mj_mulJacTVec(m, d, full.data(), d->efc_force);
  return full;
}

class EfcForce : public ::testing::TestWithParam<Mode> {};

TEST_P(EfcForce, StaticEquilibriaMatchClosedFormAndMjStep) {
  const Mode mode = GetParam();
  Settled ours = Settle(&mode, 2.0), ref = Settle(nullptr, 2.0);
  ASSERT_TRUE(ours.m && ref.m);
  const mjModel* m = ours.m.get();
  const mjData* d = ours.d.get();
  const mjData* e = ref.d.get();
  ASSERT_EQ(d->nefc, e->nefc);

  // Hinge on its upper limit (row J = −1): f = m g l_c.
  const int hinge = mj_name2id(m, mjOBJ_JOINT, "hinge");
  const std::vector<int> lim = Rows(d, mjCNSTR_LIMIT_JOINT, hinge);
  ASSERT_EQ(lim.size(), 1u);
  EXPECT_NEAR(d->efc_force[lim[0]], 1.0 * kG * 0.25, 1e-3 * kG);
  EXPECT_NEAR(d->efc_force[lim[0]], e->efc_force[lim[0]], 1e-3 * kG);
  EXPECT_EQ(d->efc_state[lim[0]], mjCNSTRSTATE_QUADRATIC);

  // Connect: three rows; their generalized force lifts the ball (m g).
  const int hold = mj_name2id(m, mjOBJ_EQUALITY, "hold");
  const std::vector<int> con = Rows(d, mjCNSTR_EQUALITY, hold);
  ASSERT_EQ(con.size(), 3u);
  const std::vector<double> jt = JtForce(m, d);
  const int hang_dof = m->jnt_dofadr[m->body_jntadr[mj_name2id(m, mjOBJ_BODY, "hang")]];
  EXPECT_NEAR(jt[hang_dof + 2], 2.0 * kG, 1e-3 * kG);
  for (int r : con) EXPECT_NEAR(d->efc_force[r], e->efc_force[r], 2e-3 * kG) << "connect row " << r;

  // Weld: six rows; generalized force holds weight and its 0.2 m moment.
  const int glue = mj_name2id(m, mjOBJ_EQUALITY, "glue");
  const std::vector<int> weld = Rows(d, mjCNSTR_EQUALITY, glue);
  ASSERT_EQ(weld.size(), 6u);
  const int box_dof = m->jnt_dofadr[m->body_jntadr[mj_name2id(m, mjOBJ_BODY, "weldbox")]];
  EXPECT_NEAR(jt[box_dof + 2], 1.5 * kG, 1e-3 * kG);
  EXPECT_NEAR(std::hypot(jt[box_dof + 3], jt[box_dof + 4], jt[box_dof + 5]), 1.5 * kG * 0.2,
              1e-3 * kG);
  // (Row by row the split depends on the sag of the soft weld, which differs
  // between the two simulators; the translational rows carry the weight.)
  EXPECT_NEAR(d->efc_force[weld[2]], 1.5 * kG, 0.02 * kG);

  // Friction loss below its bound: holds the push exactly.
  const int slide = mj_name2id(m, mjOBJ_JOINT, "slide");
  const std::vector<int> fr = Rows(d, mjCNSTR_FRICTION_DOF, m->jnt_dofadr[slide]);
  ASSERT_EQ(fr.size(), 1u);
  EXPECT_NEAR(d->efc_force[fr[0]], -2.0, 1e-3);  // within the Newton tolerance
  EXPECT_NEAR(e->efc_force[fr[0]], -2.0, 1e-6);
  EXPECT_EQ(d->efc_state[fr[0]], mjCNSTRSTATE_QUADRATIC);

  // Tendon at its lower limit (row J = +ten_J = (1, 1)): f = m g per body.
  const int sum = mj_name2id(m, mjOBJ_TENDON, "sum");
  const std::vector<int> ten = Rows(d, mjCNSTR_LIMIT_TENDON, sum);
  ASSERT_EQ(ten.size(), 1u);
  EXPECT_NEAR(d->efc_force[ten[0]], 2.0 * kG, 1e-3 * kG);
  EXPECT_NEAR(d->efc_force[ten[0]], e->efc_force[ten[0]], 1e-3 * kG);

  // Every non-contact row together: Jᵀ efc_force is the constraint force the
  // step applied (qfrc_constraint), at rest = −(qfrc_smooth).
  for (int i = 0; i < m->nv; ++i)
    EXPECT_NEAR(jt[i], d->qfrc_constraint[i], 2e-3 * kG) << "dof " << i;
}

TEST_P(EfcForce, SaturatedFrictionLossIsItsBound) {
  const Mode mode = GetParam();
  Settled ours = Settle(&mode, 8.0, 0.5);
  ASSERT_TRUE(ours.m);
  const mjModel* m = ours.m.get();
  const mjData* d = ours.d.get();
  const int slide = mj_name2id(m, mjOBJ_JOINT, "slide");
  const std::vector<int> fr = Rows(d, mjCNSTR_FRICTION_DOF, m->jnt_dofadr[slide]);
  ASSERT_EQ(fr.size(), 1u);
  // Sliding in +x under 8 N: friction −5 N (MuJoCo: LINEARPOS), a = 3 m/s².
  EXPECT_NEAR(d->efc_force[fr[0]], -5.0, 1e-3);
  EXPECT_EQ(d->efc_state[fr[0]], mjCNSTRSTATE_LINEARPOS);
  EXPECT_NEAR(d->qvel[m->jnt_dofadr[slide]], 3.0 * 0.5, 0.02);
}

// Limit rows from both sources at once: hinge limits (made by the adapter for
// every limited hinge) and a ball-joint cone limit (taken from MuJoCo's row),
// with the ball joint's id between the hinges' (the write-back's records of
// the two sources interleave), and a friction-loss row.
//   left    1 kg rod (COM 0.25 m) on a hinge, resting on its upper limit: f = m g l_c
//   cone    1 kg upright rod (COM 0.25 m) on a ball joint leaning on its 30° cone
//           limit: f = m g l_c sin 30° (damped: at rest, no drift around the cone)
//   right   the left rod mirrored, resting on its lower limit: f = m g l_c
//   slider  1 kg on a slide with frictionloss 5 N, pushed by 2 N: f = −2
constexpr char kLimitsXml[] = R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="left">
      <joint name="left" type="hinge" axis="0 1 0" limited="true" range="-90 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1"/>
    </body>
    <body name="cone" pos="2 0 0">
      <joint name="cone" type="ball" limited="true" range="0 30" damping="0.5"/>
      <geom type="capsule" fromto="0 0 0 0 0 0.5" size="0.02" mass="1"/>
    </body>
    <body name="right" pos="4 0 0">
      <joint name="right" type="hinge" axis="0 1 0" limited="true" range="0 90"/>
      <geom type="capsule" fromto="0 0 0 -0.5 0 0" size="0.02" mass="1"/>
    </body>
    <body name="slider" pos="6 0 0">
      <joint name="slide" type="slide" axis="1 0 0" frictionloss="5"/>
      <geom type="box" size="0.05 0.05 0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>)";

TEST_P(EfcForce, HingeAndBallLimitRowsEachCarryTheirOwnForce) {
  const Mode mode = GetParam();
  std::string err;
  ModelPtr mp = test_util::ModelFromXml(kLimitsXml, &err);
  ASSERT_NE(mp, nullptr) << err;
  const mjModel* m = mp.get();
  DataPtr dp(mj_makeData(m)), ep(mj_makeData(m));
  mjData* d = dp.get();
  mjData* e = ep.get();
  const int cone = mj_name2id(m, mjOBJ_JOINT, "cone");
  const int slide = mj_name2id(m, mjOBJ_JOINT, "slide");
  for (mjData* x : {d, e}) {
    // The upright rod tilted 30° about y (onto its cone limit), the slider pushed.
    double* q = x->qpos + m->jnt_qposadr[cone];
    q[0] = std::cos(std::numbers::pi / 12);
    q[2] = std::sin(std::numbers::pi / 12);
    x->qfrc_applied[m->jnt_dofadr[slide]] = 2.0;
    mj_forward(m, x);
  }
  StepperOptions o;
  o.mode = mode;
  auto st = Stepper::Create(m, o);
  ASSERT_TRUE(st.ok()) << st.status();
  const long n = std::lround(1.5 / m->opt.timestep);
  for (long i = 0; i < n; ++i) {
    ASSERT_TRUE((*st)->Step(d).ok());
    mj_step(m, e);
  }
  ASSERT_EQ(d->nefc, e->nefc);
  for (const char* name : {"left", "right"}) {
    const std::vector<int> r = Rows(d, mjCNSTR_LIMIT_JOINT, mj_name2id(m, mjOBJ_JOINT, name));
    ASSERT_EQ(r.size(), 1u) << name;
    EXPECT_NEAR(d->efc_force[r[0]], 1.0 * kG * 0.25, 1e-3 * kG) << name;
    EXPECT_NEAR(d->efc_force[r[0]], e->efc_force[r[0]], 1e-3 * kG) << name;
  }
  const std::vector<int> c = Rows(d, mjCNSTR_LIMIT_JOINT, cone);
  ASSERT_EQ(c.size(), 1u);
  // At the rod's settled tilt θ (just past 30°: the soft limit yields; more so
  // in mj_step, whose row is not compared): f = m g l_c sin θ.
  const double cos_tilt = d->xmat[9 * mj_name2id(m, mjOBJ_BODY, "cone") + 8];
  const double sin_tilt = std::sqrt(1 - cos_tilt * cos_tilt);
  EXPECT_NEAR(sin_tilt, 0.5, 0.01);
  EXPECT_NEAR(d->efc_force[c[0]], 1.0 * kG * 0.25 * sin_tilt, 1e-3 * kG * 0.25);
  EXPECT_GT(e->efc_force[c[0]], 0.0);
  const std::vector<int> fr = Rows(d, mjCNSTR_FRICTION_DOF, m->jnt_dofadr[slide]);
  ASSERT_EQ(fr.size(), 1u);
  EXPECT_NEAR(d->efc_force[fr[0]], -2.0, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Modes, EfcForce, ::testing::Values(Mode::kCenic, Mode::kFixed),
                         [](const auto& info) {
                           return std::string(info.param == Mode::kCenic ? "Cenic" : "Fixed");
                         });

}  // namespace
}  // namespace mjcenic
