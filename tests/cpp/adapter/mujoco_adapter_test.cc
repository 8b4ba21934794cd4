// The problem builder (MujocoAdapter::Build, adapter/mujoco_adapter.h): what
// it makes of two small MJCF models (docs/mujoco-mapping.md), against
// numbers worked out by hand from the MJCF and the state, or read from
// MuJoCo where MuJoCo is the source (a contact's distance and frame).
//  * Two slide joints, x and z′ = (x̂ + ẑ)/√2 (child on x): the mass
//    matrix, damping and stiffness, the explicit force f = passive − bias
//    (spring, damper, gravity along z′), the momentum r = (M + h D) v0 + h f,
//    two limit rows per limited joint (gap, sign, Delassus estimate), a
//    joint equality as a coupling row, a motor as a gain row.
//  * A free box 1 mm into a plane: a contact per corner with its normal
//    and tangent rows, stiffness, dissipation, elastic force, friction and
//    regularization, and gravity in f and in the free velocity A⁻¹ r.
#include <cmath>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/icf_model.h"
#include "test_util.h"

namespace mjcenic::adapter {
namespace {

constexpr double kH = 0.01;
const double kS = 1 / std::sqrt(2.0);  // x̂ · ẑ′

const char* kSlides = R"(
<mujoco>
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="carriage">
      <joint name="x" type="slide" axis="1 0 0" damping="3" stiffness="40" armature="0.1"
             limited="true" range="-0.5 0.2" margin="0.01"/>
      <geom type="sphere" size="0.05" mass="2" contype="0" conaffinity="0"/>
      <body name="lift">
        <joint name="z" type="slide" axis="1 0 1" damping="0.5" limited="true" range="-0.3 0.3"/>
        <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
  <equality>
    <joint joint1="x" joint2="z" polycoef="0 1 0 0 0"/>
  </equality>
  <actuator>
    <motor joint="x" gear="2"/>
  </actuator>
</mujoco>)";

using test_util::BuiltProblem;

BuiltProblem Build(const mjModel* m, mjData* d, const ContactOptions& options = {}) {
  BuiltProblem b;
  MujocoAdapter builder(m, options);
  test_util::BuildProblem(&builder, m, d, kH, &b);
  return b;
}

// The lower triangle of the problem's M (CSR) as a dense symmetric matrix.
Eigen::MatrixXd DenseM(const icf::IcfModel& p) {
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(p.nv, p.nv);
  for (int i = 0; i < p.nv; ++i)
    for (int k = 0; k < p.M_rownnz[i]; ++k) {
      const int j = p.M_colind[p.M_rowadr[i] + k];
      M(i, j) = M(j, i) = p.M[p.M_rowadr[i] + k];
    }
  return M;
}

class SlidesBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    m_ = test_util::LoadXml(kSlides);
    ASSERT_NE(m_, nullptr);
    d_.reset(mj_makeData(m_.get()));
    d_->qpos[0] = 0.1;
    d_->qpos[1] = 0.05;
    d_->qvel[0] = 0.3;
    d_->qvel[1] = -0.2;
    d_->ctrl[0] = 0.5;
    mj_forward(m_.get(), d_.get());
    b_ = Build(m_.get(), d_.get());
  }
  test_util::ModelPtr m_;
  test_util::DataPtr d_;
  BuiltProblem b_;
};

TEST_F(SlidesBuild, MassMatrixDampingAndStiffness) {
  const icf::IcfModel& p = b_.problem;
  ASSERT_EQ(p.nv, 2);
  EXPECT_EQ(p.clique_start, (std::vector<int>{0, 2}));  // one tree
  // x moves both bodies (3 kg) plus its armature; z′ the child (1 kg); the
  // coupling is the child's mass times x̂ · ẑ′.
  Eigen::Matrix2d M;
  M << 3.1, kS, kS, 1.0;
  EXPECT_LT((DenseM(p) - M).cwiseAbs().maxCoeff(), 1e-12) << DenseM(p);
  EXPECT_DOUBLE_EQ(p.M_diag[0], 3.1);
  EXPECT_DOUBLE_EQ(p.M_diag[1], 1.0);
  EXPECT_EQ(p.D, (std::vector<double>{3.0, 0.5}));
  EXPECT_EQ(p.K, (std::vector<double>{40.0, 0.0}));
  EXPECT_EQ(p.v0, (std::vector<double>{0.3, -0.2}));
}

TEST_F(SlidesBuild, ExplicitForceAndMomentum) {
  const icf::IcfModel& p = b_.problem;
  // f = passive − bias: the spring −k q and damper −b v, and gravity's
  // component along z′ on the child (1 kg · −9.81 ẑ·ẑ′ = −9.81/√2); none
  // along x.
  const double f[2] = {-40 * 0.1 - 3 * 0.3, -0.5 * -0.2 - 9.81 * kS};
  EXPECT_NEAR(p.f[0], f[0], 1e-12);
  EXPECT_NEAR(p.f[1], f[1], 1e-12);
  // r = (M + h D) v0 + h f.
  const double v0[2] = {0.3, -0.2};
  const double r[2] = {(3.1 + kH * 3) * v0[0] + kS * v0[1] + kH * f[0],
                       kS * v0[0] + (1 + kH * 0.5) * v0[1] + kH * f[1]};
  EXPECT_NEAR(p.r[0], r[0], 1e-12);
  EXPECT_NEAR(p.r[1], r[1], 1e-12);
  EXPECT_DOUBLE_EQ(p.h, kH);
}

TEST_F(SlidesBuild, TwoLimitRowsPerLimitedJoint) {
  const icf::IcfModel& p = b_.problem;
  ASSERT_EQ(p.limits.size(), 4);
  // (dof, J, gap g0 = q − lo − margin or hi − q − margin, w = 1/M_ii)
  struct Row {
    int dof;
    double J, g0, w;
  } rows[4] = {{0, 1, 0.1 + 0.5 - 0.01, 1 / 3.1}, {0, -1, 0.2 - 0.1 - 0.01, 1 / 3.1},
               {1, 1, 0.05 + 0.3, 1.0}, {1, -1, 0.3 - 0.05, 1.0}};
  for (int c = 0; c < 4; ++c) {
    ASSERT_EQ(p.limits.rows.ndof(c), 1) << c;
    EXPECT_EQ(p.limits.rows.dofs(c)[0], rows[c].dof) << c;
    EXPECT_EQ(p.limits.rows.J(c)[0], rows[c].J) << c;
    EXPECT_NEAR(p.limits.g0[c], rows[c].g0, 1e-15) << c;
    EXPECT_NEAR(p.limits.w[c], rows[c].w, 1e-15) << c;
    EXPECT_DOUBLE_EQ(p.limits.tau_r[c], 0.02) << c;  // solref's time constant, ≥ 2 timesteps
  }
  // Records: joint 0 lower, upper; joint 1 lower, upper.
  int seen = 0;
  for (const RowRecord& r : b_.records.rows) {
    if (r.type != mjCNSTR_LIMIT_JOINT) continue;
    EXPECT_EQ(r.id, seen / 2);
    EXPECT_EQ(r.sub, seen % 2);
    EXPECT_EQ(r.index, seen);
    ++seen;
  }
  EXPECT_EQ(seen, 4);
}

TEST_F(SlidesBuild, JointEqualityIsACouplingRow) {
  const icf::IcfModel& p = b_.problem;
  ASSERT_EQ(p.couplings.size(), 1);
  // q_x − q_z = 0.1 − 0.05, J = [1, −1]; w from MuJoCo's row.
  ASSERT_EQ(p.couplings.rows.ndof(0), 2);
  EXPECT_EQ(p.couplings.rows.dofs(0)[0], 0);
  EXPECT_EQ(p.couplings.rows.dofs(0)[1], 1);
  EXPECT_DOUBLE_EQ(p.couplings.rows.J(0)[0], 1.0);
  EXPECT_DOUBLE_EQ(p.couplings.rows.J(0)[1], -1.0);
  EXPECT_NEAR(p.couplings.g0[0], 0.05, 1e-15);
  int row = -1;
  for (int i = 0; i < d_->nefc; ++i)
    if (d_->efc_type[i] == mjCNSTR_EQUALITY) row = i;
  ASSERT_GE(row, 0);
  EXPECT_EQ(p.couplings.w[0], d_->efc_diagA[row]);
  ASSERT_EQ(b_.records.rows.size(), 5u);
  EXPECT_EQ(b_.records.rows[0].type, mjCNSTR_EQUALITY);  // sorted by type first
  EXPECT_EQ(b_.records.rows[0].index, 0);
}

TEST_F(SlidesBuild, MotorIsAGainRow) {
  const icf::IcfModel& p = b_.problem;
  ASSERT_EQ(p.gains.size(), 1);
  // τ = gear · ctrl on x: J = gear, c = ctrl, no feedback, no force limits.
  EXPECT_EQ(p.gains.rows.dofs(0)[0], 0);
  EXPECT_DOUBLE_EQ(p.gains.rows.J(0)[0], 2.0);
  EXPECT_DOUBLE_EQ(p.gains.c[0], 0.5);
  EXPECT_EQ(p.gains.kq[0], 0.0);
  EXPECT_EQ(p.gains.kv[0], 0.0);
  EXPECT_EQ(p.gains.lo[0], -INFINITY);
  EXPECT_EQ(p.gains.hi[0], INFINITY);
}

const char* kBox = R"(
<mujoco>
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <geom type="plane" size="1 1 0.1" friction="0.7"/>
    <body name="box" pos="0 0 0.099">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="1" friction="0.7"/>
    </body>
  </worldbody>
</mujoco>)";

TEST(BoxBuild, ContactPerCornerWithItsRowsAndLaw) {
  test_util::ModelPtr m = test_util::LoadXml(kBox);
  ASSERT_NE(m, nullptr);
  test_util::DataPtr d = test_util::MakeData(m.get());
  ASSERT_EQ(d->ncon, 4);
  ContactOptions options;
  options.stiffness = 5000;  // k and d given: the law is then known by hand
  options.dissipation = 0.3;
  options.mu_static_ratio = 1.5;
  const BuiltProblem b = Build(m.get(), d.get(), options);
  const icf::IcfModel& p = b.problem;
  ASSERT_EQ(p.nv, 6);
  // M = diag(m, m, m, I, I, I), I = m (0.2² + 0.2²)/12; gravity in f.
  Eigen::VectorXd M(6);
  M << 1, 1, 1, 0.08 / 12, 0.08 / 12, 0.08 / 12;
  EXPECT_LT((DenseM(p) - Eigen::MatrixXd(M.asDiagonal())).cwiseAbs().maxCoeff(), 1e-12);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(p.f[i], i == 2 ? -9.81 : 0.0, 1e-12) << i;
  // The free velocity A⁻¹ r (no damping or stiffness: A = M) of the box at
  // rest: one step of free fall, v_z = −h g.
  const Eigen::VectorXd v_free =
      DenseM(p).llt().solve(Eigen::Map<const Eigen::VectorXd>(p.r.data(), 6));
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(v_free[i], i == 2 ? -kH * 9.81 : 0.0, 1e-12) << i;
  EXPECT_EQ(b.info.ncontact, 4);
  EXPECT_NEAR(b.info.max_penetration, 0.001, 1e-12);
  ASSERT_EQ(p.contacts.size(), 4);
  ASSERT_EQ(b.records.contacts.size(), 4u);
  const double com[3] = {0, 0, 0.099};
  for (int c = 0; c < 4; ++c) {
    const mjContact& con = d->contact[c];
    EXPECT_NEAR(con.dist, -0.001, 1e-12);
    EXPECT_EQ(b.records.contacts[c].geom[1], con.geom[1]);
    EXPECT_NEAR(b.records.contacts[c].depth, 0.001, 1e-12);
    // The box's six dofs; row q of J = t_q · (v + ω × r) = t_q·v + (r × t_q)·ω
    // for the contact frame's rows t_q (normal first, pointing into the box:
    // v_n > 0 separates), r from the box's centre to the contact point.
    ASSERT_EQ(p.contacts.rows.ndof(c), 6);
    const double r[3] = {con.pos[0] - com[0], con.pos[1] - com[1], con.pos[2] - com[2]};
    EXPECT_NEAR(std::abs(r[0]), 0.1, 1e-9);
    EXPECT_NEAR(std::abs(r[1]), 0.1, 1e-9);
    EXPECT_NEAR(con.frame[2], 1.0, 1e-12);  // the plane's normal, +z
    for (int q = 0; q < 3; ++q) {
      const double* t = con.frame + 3 * q;
      const double rxt[3] = {r[1] * t[2] - r[2] * t[1], r[2] * t[0] - r[0] * t[2],
                             r[0] * t[1] - r[1] * t[0]};
      for (int k = 0; k < 3; ++k) {
        EXPECT_NEAR(p.contacts.rows.J(c)[6 * q + k], t[k], 1e-12) << c << " row " << q;
        EXPECT_NEAR(p.contacts.rows.J(c)[6 * q + 3 + k], rxt[k], 1e-12) << c << " row " << q;
      }
    }
    // fe0 = −k φ, φ = dist (no margin); friction μ_d = 0.7, μ_s = 1.5 μ_d;
    // R_t = σ_R 2.65 / m_box (the plane has no mass).
    EXPECT_EQ(p.contacts.k[c], 5000.0);
    EXPECT_EQ(p.contacts.d[c], 0.3);
    EXPECT_NEAR(p.contacts.fe0[c], 5.0, 1e-9);
    EXPECT_DOUBLE_EQ(p.contacts.mu_d[c], 0.7);
    EXPECT_DOUBLE_EQ(p.contacts.mu_s[c], 1.05);
    EXPECT_DOUBLE_EQ(p.contacts.Rt[c], icf::IcfParameters{}.sigma_R * 2.65);
  }
  EXPECT_EQ(p.limits.size() + p.couplings.size() + p.gains.size() + p.dry_friction.size(), 0);
}

}  // namespace
}  // namespace mjcenic::adapter
