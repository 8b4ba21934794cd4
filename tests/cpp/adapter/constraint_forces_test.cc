// The write-back of ICF impulses into MuJoCo's efc_force / efc_state
// (adapter/constraint_forces.h), checked directly: known impulses γ of a
// problem built from a forwarded mjData go in; the efc rows must carry γ/h in
// MuJoCo's encoding, so that MuJoCo's own decoding (mj_contactForce) returns
// the force, inside MuJoCo's friction cone.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/constraint_forces.h"
#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/icf_data.h"
#include "mjcenic/icf/icf_model.h"
#include "test_util.h"

namespace mjcenic::adapter {
namespace {

constexpr double kH = 2e-3;  // step of the "solved" problem [s]

// A sphere resting 1 mm deep on a plane (one contact, condim 3, μ = 0.8) and
// a hinge pendulum 0.1 rad beyond its lower limit (one limit row).
std::string Xml(const char* cone) {
  char xml[1200];
  std::snprintf(xml, sizeof(xml), R"(
<mujoco>
  <option cone="%s"/>
  <worldbody>
    <geom type="plane" size="1 1 0.1" friction="0.8"/>
    <body pos="0 0 0.049"><freejoint/><geom type="sphere" size="0.05" mass="1" friction="0.8"/></body>
    <body pos="1 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" limited="true" range="-0.5 0.5"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02" mass="0.5"/>
    </body>
  </worldbody>
</mujoco>)", cone);
  return xml;
}

struct Scene {
  test_util::ModelPtr m;
  test_util::DataPtr d;
  icf::IcfModel problem;
  BuildRecords records;
  icf::IcfData data;
};

// Forwards the scene and builds its ICF problem (the records to invert).
void Load(const char* cone, Scene* s) {
  std::string err;
  s->m = test_util::ModelFromXml(Xml(cone), &err);
  ASSERT_NE(s->m, nullptr) << err;
  s->d.reset(mj_makeData(s->m.get()));
  s->d->qpos[s->m->jnt_qposadr[mj_name2id(s->m.get(), mjOBJ_JOINT, "hinge")]] = -0.6;
  mj_forward(s->m.get(), s->d.get());
  ASSERT_EQ(s->d->ncon, 1);
  MujocoAdapter builder(s->m.get(), ContactOptions{});
  BuildInfo info;
  builder.Build(s->m.get(), s->d.get(), kH, icf::IcfParameters{}, nullptr, &s->problem,
                &s->records, &info);
  ASSERT_EQ(s->records.contacts.size(), 1u);
  s->data.Resize(s->problem);
}

// Sets the contact impulse so that its force in the contact frame is f.
void SetContactForce(Scene* s, const double f[3]) {
  for (int a = 0; a < 3; ++a) s->data.contacts.gamma[a] = kH * f[a];
}

void Write(Scene* s) {
  ConstraintForces writer;
  writer.Write(s->m.get(), &s->records, s->data, kH, s->d.get());
}

void ExpectDecodes(const Scene& s, const double f[3], double tol) {
  double out[6];
  mj_contactForce(s.m.get(), s.d.get(), 0, out);
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(out[a], f[a], tol) << "component " << a;
}

TEST(ConstraintForces, EllipticContactInsideTheConeIsCopied) {
  Scene s;
  Load("elliptic", &s);
  const double f[3] = {10, 3, -4};  // |f_t| = 5 < μ f_n = 8
  SetContactForce(&s, f);
  Write(&s);
  const int adr = s.d->contact[0].efc_address;
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(s.d->efc_force[adr + a], f[a], 1e-12) << a;
  ExpectDecodes(s, f, 1e-12);
}

TEST(ConstraintForces, EllipticContactOutsideTheConeIsProjectedRadially) {
  Scene s;
  Load("elliptic", &s);
  const double f[3] = {10, 30, 40};  // |f_t| = 50 > μ f_n = 8: scaled to 8 along (3, 4)/5
  SetContactForce(&s, f);
  Write(&s);
  const double expect[3] = {10, 0.8 * 10 * 0.6, 0.8 * 10 * 0.8};
  ExpectDecodes(s, expect, 1e-12);
}

TEST(ConstraintForces, PyramidalContactIsEncodedOnNonNegativeEdges) {
  Scene s;
  Load("pyramidal", &s);
  const double f[3] = {10, 3, -4};  // Σ|f_j|/μ = 8.75 ≤ f_n = 10
  SetContactForce(&s, f);
  Write(&s);
  // Edges e_2j, e_2j+1 = ½(|t_j| + share ± t_j), t_j = f_j/μ, share = (f_n − Σ|t|)/2.
  const double t1 = 3 / 0.8, t2 = -4 / 0.8, share = (10 - std::abs(t1) - std::abs(t2)) / 2;
  const double edges[4] = {0.5 * (std::abs(t1) + share + t1), 0.5 * (std::abs(t1) + share - t1),
                           0.5 * (std::abs(t2) + share + t2), 0.5 * (std::abs(t2) + share - t2)};
  const int adr = s.d->contact[0].efc_address;
  for (int e = 0; e < 4; ++e) {
    EXPECT_NEAR(s.d->efc_force[adr + e], edges[e], 1e-12) << "edge " << e;
    EXPECT_GE(s.d->efc_force[adr + e], 0.0) << "edge " << e;
  }
  ExpectDecodes(s, f, 1e-12);
}

TEST(ConstraintForces, PyramidalContactOutsideThePyramidIsScaledIntoIt) {
  Scene s;
  Load("pyramidal", &s);
  // Σ|f_j|/μ = 87.5 > f_n = 10: the friction force is scaled by 10/87.5
  // onto the pyramid's face (no slack left), then encoded; the edges must
  // carry the scaled force, not the one asked for.
  const double f[3] = {10, 30, -40};
  SetContactForce(&s, f);
  Write(&s);
  const double expect[3] = {10, 30 * 10 / 87.5, -40 * 10 / 87.5};
  const int adr = s.d->contact[0].efc_address;
  for (int e = 0; e < 4; ++e) EXPECT_GE(s.d->efc_force[adr + e], 0.0) << "edge " << e;
  ExpectDecodes(s, expect, 1e-12);
  // On the face: each pair has one zero edge (no slack share).
  EXPECT_EQ(std::min(s.d->efc_force[adr], s.d->efc_force[adr + 1]), 0.0);
  EXPECT_EQ(std::min(s.d->efc_force[adr + 2], s.d->efc_force[adr + 3]), 0.0);
}

TEST(ConstraintForces, PullingContactWritesNoForce) {
  Scene s;
  Load("elliptic", &s);
  const double f[3] = {-5, 0, 0};  // a negative normal impulse is clamped to 0
  SetContactForce(&s, f);
  Write(&s);
  const int adr = s.d->contact[0].efc_address;
  for (int a = 0; a < 3; ++a) EXPECT_EQ(s.d->efc_force[adr + a], 0.0) << a;
}

TEST(ConstraintForces, LimitRowCarriesItsImpulseOverH) {
  Scene s;
  Load("elliptic", &s);
  const int hinge = mj_name2id(s.m.get(), mjOBJ_JOINT, "hinge");
  int row = -1;
  for (int i = 0; i < s.d->nefc; ++i)
    if (s.d->efc_type[i] == mjCNSTR_LIMIT_JOINT && s.d->efc_id[i] == hinge) row = i;
  ASSERT_GE(row, 0);
  int index = -1;  // the lower-limit row of the build
  for (const RowRecord& r : s.records.rows)
    if (r.type == mjCNSTR_LIMIT_JOINT && r.id == hinge && r.sub == 0) index = r.index;
  ASSERT_GE(index, 0);
  s.data.limits.gamma[index] = kH * 7.0;
  Write(&s);
  EXPECT_NEAR(s.d->efc_force[row], 7.0, 1e-12);
  EXPECT_EQ(s.d->efc_state[row], mjCNSTRSTATE_QUADRATIC);
  s.data.limits.gamma[index] = 0;
  Write(&s);
  EXPECT_EQ(s.d->efc_force[row], 0.0);
  EXPECT_EQ(s.d->efc_state[row], mjCNSTRSTATE_SATISFIED);
}

TEST(ConstraintForces, WithoutRecordsEveryRowIsZero) {
  Scene s;
  Load("pyramidal", &s);
  for (int i = 0; i < s.d->nefc; ++i) s.d->efc_force[i] = 1.0;
  ConstraintForces writer;
  writer.Write(s.m.get(), nullptr, s.data, kH, s.d.get());
  for (int i = 0; i < s.d->nefc; ++i) {
    EXPECT_EQ(s.d->efc_force[i], 0.0) << "row " << i;
    EXPECT_EQ(s.d->efc_state[i], 0) << "row " << i;
  }
}

}  // namespace
}  // namespace mjcenic::adapter
