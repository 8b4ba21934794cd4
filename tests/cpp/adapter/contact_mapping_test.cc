// Each contact of a build gets the stiffness and dissipation of its own
// solref/solimp, bodies and friction (docs/mujoco-mapping.md §5.7), also
// when consecutive contacts share some of them: the build reuses the previous
// contact's mapping only when all of its inputs are the same (cenic-math
// §8.9). Truth: MapContact on each contact's own numbers.
#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/contact_parameters.h"
#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/icf_model.h"
#include "test_util.h"

namespace mjcenic::adapter {
namespace {

constexpr double kH = 2e-3;

// Spheres 1 µm into a plane (shallower than any nominal penetration here, so
// no stiffening). Body "one": a, a2 (a's twin), b (another solref), b2 (b's
// solref, another solimp), c (a's solref, μ 0.5: another pyramidal factor);
// body "two": e (c's numbers on a heavier body: another effective mass).
const char* kXml = R"(
<mujoco>
  <option timestep="0.002" cone="pyramidal" impratio="1"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1" friction="1"/>
    <body name="one" pos="0 0 0.049999">
      <freejoint/>
      <geom name="a" type="sphere" size="0.05" pos="0 0 0" mass="1" friction="1" solref="0.02 1"/>
      <geom name="a2" type="sphere" size="0.05" pos="0.2 0 0" mass="1" friction="1" solref="0.02 1"/>
      <geom name="b" type="sphere" size="0.05" pos="0.4 0 0" mass="1" friction="1" solref="0.05 0.7"/>
      <geom name="b2" type="sphere" size="0.05" pos="0.6 0 0" mass="1" friction="1"
            solref="0.05 0.7" solimp="0.8 0.9 0.002 0.5 2"/>
      <geom name="c" type="sphere" size="0.05" pos="0.8 0 0" mass="1" friction="0.5" solref="0.02 1"/>
    </body>
    <body name="two" pos="2 0 0.049999">
      <freejoint/>
      <geom name="e" type="sphere" size="0.05" mass="7" friction="0.5" solref="0.02 1"/>
    </body>
  </worldbody>
</mujoco>)";

TEST(ContactMapping, EveryContactGetsTheMappingOfItsOwnInputs) {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(kXml, &err);
  ASSERT_NE(m, nullptr) << err;
  test_util::DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  ASSERT_EQ(d->ncon, 6);
  const ContactOptions options;
  MujocoAdapter builder(m.get(), options);
  icf::IcfModel problem;
  BuildRecords records;
  BuildInfo info;
  builder.Build(m.get(), d.get(), kH, icf::IcfParameters{}, nullptr, &problem, &records, &info);
  ASSERT_EQ(problem.contacts.size(), 6);
  const double g_ref = 9.81, omega_max = 2 * M_PI / (options.omega_cap_steps * m->opt.timestep);
  double k_of[6];
  for (int c = 0; c < 6; ++c) {
    const ContactRecord& rec = records.contacts[c];
    const mjContact* con = nullptr;
    for (int i = 0; i < d->ncon; ++i)
      if (d->contact[i].geom[0] == rec.geom[0] && d->contact[i].geom[1] == rec.geom[1])
        con = &d->contact[i];
    ASSERT_NE(con, nullptr);
    const int b1 = m->geom_bodyid[con->geom[0]], b2 = m->geom_bodyid[con->geom[1]];
    const double m_c = 1 / (m->body_invweight0[2 * b1] + m->body_invweight0[2 * b2]);
    const double mu = con->friction[0];
    const double lambda = std::max(1.0, 2 * m->opt.impratio / (mu * mu * (1 + mu * mu)));
    const PointContactParameters p = MapContact(con->solref, con->solimp, m_c, lambda,
                                                m->opt.timestep, true, g_ref, omega_max);
    const int geom = std::max(con->geom[0], con->geom[1]);
    EXPECT_EQ(problem.contacts.k[c], p.k) << mj_id2name(m.get(), mjOBJ_GEOM, geom);
    EXPECT_EQ(problem.contacts.d[c], p.d) << mj_id2name(m.get(), mjOBJ_GEOM, geom);
    k_of[geom - 1] = p.k;
  }
  // The scene tells the inputs apart: a and its twin map alike, every other
  // geom differently from the one before it.
  EXPECT_EQ(k_of[0], k_of[1]);
  EXPECT_NE(k_of[1], k_of[2]);
  EXPECT_NE(k_of[2], k_of[3]);
  EXPECT_NE(k_of[3], k_of[4]);
  EXPECT_NE(k_of[4], k_of[5]);
}

// contact_deep_separation (cenic-math §4.11): a contact deeper than nominal
// has d ≤ B/(d(x)·K·x), MuJoCo's separating speed x·d(x)K/B instead of
// Hunt–Crossley's 1/d_map; a shallow contact keeps d_map. Default off.
TEST(ContactMapping, DeepContactSeparatesAtMujocosSpeed) {
  const char* xml = R"(
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="5 5 0.1" condim="1"/>
    <body pos="0 0 0.03"><freejoint/><geom type="sphere" size="0.05" mass="1" condim="1"/></body>
    <body pos="1 0 0.049999"><freejoint/><geom type="sphere" size="0.05" mass="1" condim="1"/></body>
  </worldbody>
</mujoco>)";
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(xml, &err);
  ASSERT_NE(m, nullptr) << err;
  test_util::DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  ASSERT_EQ(d->ncon, 2);
  double d_of[2][2];  // [option off/on][deep, shallow]
  for (int on = 0; on < 2; ++on) {
    ContactOptions options;
    EXPECT_FALSE(options.deep_separation);
    options.deep_separation = on;
    MujocoAdapter builder(m.get(), options);
    icf::IcfModel problem;
    BuildRecords records;
    BuildInfo info;
    builder.Build(m.get(), d.get(), m->opt.timestep, icf::IcfParameters{}, nullptr, &problem,
                  &records, &info);
    ASSERT_EQ(problem.contacts.size(), 2);
    for (int c = 0; c < 2; ++c)
      d_of[on][records.contacts[c].depth > 1e-3 ? 0 : 1] = problem.contacts.d[c];
  }
  const mjContact& deep = d->contact[d->contact[0].dist < d->contact[1].dist ? 0 : 1];
  const double x = -deep.dist;
  ASSERT_NEAR(x, 0.02, 1e-9);
  const double rate = SeparationRate(deep.solref, deep.solimp, m->opt.timestep, true, x);
  EXPECT_DOUBLE_EQ(d_of[1][0], 1 / (x * rate));
  EXPECT_LT(d_of[1][0], 0.1 * d_of[0][0]);  // 2 cm ≫ x_nom: ≥ 10× faster push-out
  EXPECT_EQ(d_of[1][1], d_of[0][1]);          // 1 µm deep: unchanged
}

// A contact's rows are J = frame · (J₂ − J₁) at the contact point
// (mapping §5.6), frame = (normal, tangent 1, tangent 2) from geom 1 to geom 2, also
// when one dof moves both bodies (the cart's slide carries the table and the
// arm: the general rows over the union of both chains, not the disjoint-chains
// shortcut). Truth: mj_jac of each body at the contact point.
TEST(ContactMapping, RowsAreTheFrameTimesTheRelativePointJacobian) {
  const char* xml = R"(
<mujoco>
  <option><flag filterparent="disable"/></option>
  <worldbody>
    <body name="cart">
      <joint type="slide" axis="1 1 0"/>
      <geom name="table" type="box" size="0.5 0.4 0.05" euler="10 20 0" mass="5"/>
      <body name="arm" pos="0 0 0.3">
        <joint type="hinge" axis="1 2 0.5"/>
        <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.1"/>
        <geom name="tip" type="sphere" pos="0.1 0 -0.2514" size="0.03" mass="0.5"/>
      </body>
    </body>
    <body name="ball" pos="0.3 0.2 0.086">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1"/>
    </body>
  </worldbody>
</mujoco>)";
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(xml, &err);
  ASSERT_NE(m, nullptr) << err;
  test_util::DataPtr d = test_util::MakeData(m.get());
  ASSERT_EQ(d->ncon, 2);  // tip–table (one tree), ball–table (two trees)
  MujocoAdapter builder(m.get(), ContactOptions{});
  icf::IcfModel problem;
  BuildRecords records;
  BuildInfo info;
  builder.Build(m.get(), d.get(), 2e-3, icf::IcfParameters{}, nullptr, &problem, &records, &info);
  ASSERT_EQ(problem.contacts.size(), 2);
  const int nv = static_cast<int>(m->nv);
  for (int c = 0; c < 2; ++c) {
    const mjContact* con = nullptr;
    for (int i = 0; i < d->ncon; ++i)
      if (d->contact[i].geom[0] == records.contacts[c].geom[0] &&
          d->contact[i].geom[1] == records.contacts[c].geom[1])
        con = &d->contact[i];
    ASSERT_NE(con, nullptr);
    std::vector<double> jac1(3 * nv), jac2(3 * nv), built(3 * nv, 0.0);
    mj_jac(m.get(), d.get(), jac1.data(), nullptr, con->pos, m->geom_bodyid[con->geom[0]]);
    mj_jac(m.get(), d.get(), jac2.data(), nullptr, con->pos, m->geom_bodyid[con->geom[1]]);
    const std::span<const int> dofs = problem.contacts.rows.dofs(c);
    const double* J = problem.contacts.rows.J(c);
    for (int r = 0; r < 3; ++r)
      for (size_t k = 0; k < dofs.size(); ++k) built[r * nv + dofs[k]] = J[r * dofs.size() + k];
    for (int r = 0; r < 3; ++r)
      for (int q = 0; q < nv; ++q) {
        double truth = 0;
        for (int i = 0; i < 3; ++i)
          truth += con->frame[3 * r + i] * (jac2[i * nv + q] - jac1[i * nv + q]);
        EXPECT_NEAR(built[r * nv + q], truth, 1e-12) << "contact " << c << " row " << r
                                                      << " dof " << q;
      }
  }
}
}  // namespace
}  // namespace mjcenic::adapter
