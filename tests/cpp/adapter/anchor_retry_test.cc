// Stiction anchors across a rejected and retried step (cenic-math §4.9):
// the anchors advance once per accepted state. A step that is rejected is
// retried from the same start state, whose problem is built again: that
// rebuild must find the anchors as the first build left them (β grown by the
// slip once), not grow them again. A later state grows them by its own slip.
// Also the friction regularization R_t = σ_R 2.65 (1/m_A + 1/m_B) of a
// contact between two free bodies (cenic-math §4.6): both masses count.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/adapter/stiction_anchors.h"
#include "mjcenic/icf/icf_model.h"
#include "test_util.h"

namespace mjcenic::adapter {
namespace {

constexpr double kH = 2e-3;

// A 1 kg box resting on a 3 kg box resting on the floor, friction 1 (both stick).
const char* kStack = R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="2 2 .1" friction="1"/>
    <body name="low" pos="0 0 0.0999"><freejoint/>
      <geom type="box" size=".2 .2 .1" mass="3" friction="1"/></body>
    <body name="top" pos="0 0 0.2998"><freejoint/>
      <geom type="box" size=".1 .1 .1" mass="1" friction="1"/></body>
  </worldbody>
</mujoco>)";

using test_util::BuiltProblem;

void Build(MujocoAdapter* builder, const mjModel* m, mjData* d, BuiltProblem* b) {
  test_util::BuildProblem(builder, m, d, kH, b);
}

TEST(StictionAnchorRetry, RebuildAtTheSameStateDoesNotGrowTheAnchorAgain) {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(kStack, &err);
  ASSERT_NE(m, nullptr) << err;
  test_util::DataPtr d(mj_makeData(m.get()));
  // A slow slip of the top box along x: 2e-5 m/s, below ε (≥ v_s = 1e-4 m/s),
  // above the dead band: every sticking contact of the top box grows β.
  const int top = mj_name2id(m.get(), mjOBJ_BODY, "top");
  d->qvel[m->jnt_dofadr[m->body_jntadr[top]]] = 2e-5;
  mj_forward(m.get(), d.get());
  ASSERT_GE(d->ncon, 8);
  MujocoAdapter builder(m.get(), ContactOptions{});
  StictionAnchors anchors;
  BuiltProblem first, retry, next;
  Build(&builder, m.get(), d.get(), &first);
  anchors.Apply(m.get(), d.get(), first.records.contacts, kH, true, first.problem.v0.data(),
                &first.problem);
  // The retry: the same start state built again (the stepper passes advance for
  // every build of a step's start problem).
  Build(&builder, m.get(), d.get(), &retry);
  anchors.Apply(m.get(), d.get(), retry.records.contacts, kH, true, retry.problem.v0.data(),
                &retry.problem);
  // The next accepted state (here: the same configuration a step later).
  d->time += kH;
  Build(&builder, m.get(), d.get(), &next);
  anchors.Apply(m.get(), d.get(), next.records.contacts, kH, true, next.problem.v0.data(),
                &next.problem);
  const icf::ContactPool& p1 = first.problem.contacts;
  ASSERT_EQ(retry.problem.contacts.size(), p1.size());
  ASSERT_EQ(next.problem.contacts.size(), p1.size());
  int anchored = 0;
  for (int c = 0; c < p1.size(); ++c) {
    const double b = std::hypot(p1.anchor[2 * c], p1.anchor[2 * c + 1]);
    if (b == 0) continue;
    ++anchored;
    // β = (J v)_t / ε after one advance: 2e-5/ε of the slip, ≤ 0.2.
    EXPECT_LT(b, 0.25) << c;
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(retry.problem.contacts.anchor[2 * c + i], p1.anchor[2 * c + i]) << c;
      EXPECT_EQ(retry.problem.contacts.anchor_bias[2 * c + i], p1.anchor_bias[2 * c + i]) << c;
      // The next state grows β by the same slip once more: twice the first.
      EXPECT_NEAR(next.problem.contacts.anchor[2 * c + i], 2 * p1.anchor[2 * c + i],
                  1e-9 * b) << c;
    }
  }
  EXPECT_GE(anchored, 4);  // the top box's contacts (the low box does not slip)
}

TEST(FrictionRegularization, TwoBodyContactUsesBothMasses) {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(kStack, &err);
  ASSERT_NE(m, nullptr) << err;
  test_util::DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  MujocoAdapter builder(m.get(), ContactOptions{});
  BuiltProblem b;
  Build(&builder, m.get(), d.get(), &b);
  const double sigma_R = icf::IcfParameters{}.sigma_R;
  int box_box = 0, floor_box = 0;
  for (int c = 0; c < b.problem.contacts.size(); ++c) {
    const ContactRecord& rec = b.records.contacts[c];
    double inv = 0;
    for (int side = 0; side < 2; ++side) {
      const int body = m->geom_bodyid[rec.geom[side]];
      if (body > 0) inv += 1 / m->body_mass[body];
    }
    const bool both = m->geom_bodyid[rec.geom[0]] > 0 && m->geom_bodyid[rec.geom[1]] > 0;
    (both ? box_box : floor_box)++;
    EXPECT_NEAR(inv, both ? 1.0 + 1.0 / 3 : 1.0 / 3, 1e-12);
    EXPECT_NEAR(b.problem.contacts.Rt[c], sigma_R * 2.65 * inv, 1e-12 * sigma_R) << c;
  }
  EXPECT_GE(box_box, 4);
  EXPECT_GE(floor_box, 4);
}

}  // namespace
}  // namespace mjcenic::adapter
