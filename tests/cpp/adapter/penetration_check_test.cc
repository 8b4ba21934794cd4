// The penetration check's measure (docs/cenic-math.md §11.10): a contact's
// growth since x_t is at most that of its geom pair's deepest start depth and
// at most that of its own material points, carried back to x_t with their
// geoms' rigid motion. A collider reporting several points per pair picks
// them anew at every query, so the end state may report a point its start
// query did not, as deep at x_t as now: no step made that depth.
#include <algorithm>
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/adapter/penetration_check.h"
#include "mjcenic/icf/icf_model.h"
#include "test_util.h"

namespace mjcenic::adapter {
namespace {

// A 10 cm box tilted 0.02 rad about y on a plane: its two lower corners at
// +x 2.5 mm deep, the two at −x 0.5 mm.
const char* kXml = R"(
<mujoco>
  <compiler angle="radian"/>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body pos="0 0 0.04848993366799555" euler="0 0.02 0">
      <freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>)";

struct Scene {
  test_util::ModelPtr m;
  test_util::DataPtr d;
  ContactOptions options;
  std::unique_ptr<MujocoAdapter> builder;
  BuildRecords start;
  PenetrationCheck check;

  explicit Scene(test_util::ModelPtr model)
      : m(std::move(model)), d(mj_makeData(m.get())),
        builder(std::make_unique<MujocoAdapter>(m.get(), options)), check(m.get()) {
    mj_forward(m.get(), d.get());
    icf::IcfModel problem;
    BuildInfo info;
    builder->Build(m.get(), d.get(), 2e-3, icf::IcfParameters{}, nullptr, &problem, &start, &info);
    check.CaptureStart(m.get(), d.get());
  }
  // The box moved down by dz (stages at the new state).
  void Lower(double dz) {
    d->qpos[2] -= dz;
    mj_forward(m.get(), d.get());
  }
  // The largest tolerance x_nom of d's contacts (all equal here).
  double Tolerance() {
    double tol = 0;
    for (int i = 0; i < d->ncon; ++i)
      tol = std::max(tol, std::max(builder->NominalPenetration(m.get(), d->contact[i]), 1e-3));
    return tol;
  }
  double Ratio() { return check.Ratio(m.get(), d.get(), start, builder.get(), 1.0, 1.0, 1e-3); }
};

Scene Make() {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(kXml, &err);
  EXPECT_NE(m, nullptr) << err;
  return Scene(std::move(m));
}

TEST(PenetrationCheck, DepthAtTheStartIsNoGrowth) {
  Scene s = Make();
  ASSERT_EQ(s.d->ncon, 4);
  EXPECT_EQ(s.Ratio(), 0.0);
  // The start query reported only the shallow corners: the deep ones are as
  // deep as they were at x_t, though deeper than any start point of the pair.
  const double deep = 2e-3;
  auto& recs = s.start.contacts;
  recs.erase(std::remove_if(recs.begin(), recs.end(),
                            [](const ContactRecord& r) { return r.depth > 2e-3; }),
             recs.end());
  ASSERT_EQ(recs.size(), 2u);
  s.check.CaptureStart(s.m.get(), s.d.get());  // (a new start build: its records)
  const double tol = s.Tolerance();
  ASSERT_GT(deep / tol, 1.5);  // the pair's deepest start point: would reject
  EXPECT_LT(s.Ratio(), 1e-9);
  // Lowered by 0.4 tolerances: every point's own growth (the pair's would be
  // 2 mm more).
  s.Lower(0.4 * tol);
  EXPECT_NEAR(s.Ratio(), 0.4, 1e-6);
}

TEST(PenetrationCheck, GrowthOfThePairsDeepestPoint) {
  Scene s = Make();
  const double tol = s.Tolerance();
  s.Lower(3 * tol);
  EXPECT_NEAR(s.Ratio(), 3.0, 1e-6);
  // Levelling the box by 0.01 rad about its deep edge sinks the shallow
  // corners by 10 cm · sin 0.01 = 1 mm, to 1.5 mm, shallower than the deep
  // corners were at x_t: the pair did not deepen (a rolling body's new
  // lowest point is no growth either), though these points did.
  Scene t = Make();
  const double a = -0.01;  // about y [rad]
  double* q = t.d->qpos + 3;
  const double dq[4] = {std::cos(a / 2), 0, std::sin(a / 2), 0};
  double out[4];
  mju_mulQuat(out, dq, q);
  // Keep the deep edge (x = +5 cm, z = −5 cm in the box frame) in place.
  double edge[3] = {0.05, 0, -0.05}, before[3], after[3];
  mju_rotVecQuat(before, edge, q);
  mju_rotVecQuat(after, edge, out);
  for (int k = 0; k < 3; ++k) t.d->qpos[k] += before[k] - after[k];
  mju_copy4(q, out);
  mj_forward(t.m.get(), t.d.get());
  double shallow = 1;
  for (int i = 0; i < t.d->ncon; ++i) shallow = std::min(shallow, -t.d->contact[i].dist);
  ASSERT_NEAR(shallow, 1.5e-3, 2e-5);
  EXPECT_EQ(t.Ratio(), 0.0);
}

// A slide joint limited to [0, 0.1] m (solreflimit time constant 0.02 s),
// started at qpos = -start (violated by `start`).
Scene SlideLimit(double start) {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(R"(
<mujoco>
  <worldbody>
    <body>
      <joint name="s" type="slide" axis="0 0 1" limited="true" range="0 0.1" solreflimit="0.02 1"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>)", &err);
  EXPECT_NE(m, nullptr) << err;
  m->qpos0[0] = -start;
  return Scene(std::move(m));
}

TEST(PenetrationCheck, LimitOnItsSpringGrowsAgainstTheSpringsNominalViolation) {
  // cenic-math §11.10 on limits: a row violated at x_t by more than δ = 10⁻³
  // moves on its spring (§5.2); its growth is measured in units of the
  // spring's nominal violation g τ_r² = 9.81 · 0.02² = 3.924 mm (L = 1 m),
  // a near-rigid row's (violated by less than δ) in units of 10⁻³ L.
  const double growth = 1e-4, g_tau2 = 9.81 * 0.02 * 0.02;
  Scene spring = SlideLimit(2e-3);
  spring.d->qpos[0] -= growth;
  mj_forward(spring.m.get(), spring.d.get());
  EXPECT_NEAR(spring.Ratio(), growth / g_tau2, 1e-9);
  Scene rigid = SlideLimit(5e-4);
  rigid.d->qpos[0] -= growth;
  mj_forward(rigid.m.get(), rigid.d.get());
  EXPECT_NEAR(rigid.Ratio(), growth / 1e-3, 1e-9);
  // A shrinking violation is no growth.
  Scene back = SlideLimit(2e-3);
  back.d->qpos[0] += growth;
  mj_forward(back.m.get(), back.d.get());
  EXPECT_EQ(back.Ratio(), 0.0);
}

// The sweep cap between the queries (cenic-math §11.10): a 1 cm ball (its
// thickness 10 mm) on a free joint, a static 2 mm wall 4 cm ahead along x, and
// a 20 cm rod of 2 mm (a capsule) spinning about z on a hinge, far away.
const char* kSweepXml = R"(
<mujoco>
  <option gravity="0 0 0"/>
  <worldbody>
    <geom name="wall" type="box" size="0.001 0.05 0.05" pos="0.04 0 0"/>
    <body name="ball">
      <freejoint/>
      <geom type="sphere" size="0.005" mass="0.01"/>
    </body>
    <body name="rod" pos="5 0 0">
      <joint type="hinge" axis="0 0 1"/>
      <geom type="capsule" size="0.001" fromto="-0.1 0 0 0.1 0 0" mass="0.01"/>
      <geom type="sphere" size="0.02" pos="0 0 0.1" mass="0.01"/>
    </body>
  </worldbody>
</mujoco>)";

struct SweepScene {
  test_util::ModelPtr m = test_util::LoadXml(kSweepXml);
  test_util::DataPtr d{mj_makeData(m.get())};
  // The ball at (x, y, 0) moving at vx along x, the rod spinning at w about
  // z; stages at that state.
  double Limit(double x, double y, double vx, double w, double h) {
    mj_resetData(m.get(), d.get());
    d->qpos[0] = x;
    d->qpos[1] = y;
    d->qvel[0] = vx;
    d->qvel[6] = w;
    mj_forward(m.get(), d.get());
    PenetrationCheck check(m.get());
    return check.SweepLimit(m.get(), d.get(), h);
  }
};

TEST(PenetrationCheck, SweepCapsAStepAtTheThicknessesOverTheClosingSpeed) {
  SweepScene s;
  ASSERT_TRUE(s.m);
  // 1 m/s toward the wall: h = (10 mm + 2 mm) / (1 m/s); the speed counts
  // either way.
  EXPECT_NEAR(s.Limit(0, 0, 1.0, 0.0, 0.1), 0.012, 1e-12);
  EXPECT_NEAR(s.Limit(0, 0, -2.0, 0.0, 0.1), 0.006, 1e-12);
  // A ball that travels less than its own thickness within h keeps h.
  EXPECT_EQ(s.Limit(0, 0, 0.09, 0.0, 0.1), 0.1);
  // A fast ball that cannot reach the wall within h keeps it (5 m away).
  EXPECT_EQ(s.Limit(-5, 0, 1.0, 0.0, 0.1), 0.1);
  // The spinning rod is fast (its ends at 50 rad/s · 0.1 m, 2 mm thick) but
  // meets nothing: h is kept. With the ball beside its end, the rod's bound
  // |ω| r_bound on its points' speed caps the step.
  EXPECT_EQ(s.Limit(0, 0, 0.0, 50.0, 0.1), 0.1);
  const double r_rod = s.m->geom_rbound[2];
  ASSERT_NEAR(r_rod, 0.101, 1e-12);
  EXPECT_NEAR(s.Limit(5, 0.11, 0.0, 50.0, 0.1), (0.01 + 0.002) / (50.0 * r_rod), 1e-12);
  // Spinning slowly enough that its ends travel less than 2 mm: kept.
  EXPECT_EQ(s.Limit(5, 0.11, 0.0, 0.19, 0.1), 0.1);
}

}  // namespace
}  // namespace mjcenic::adapter
