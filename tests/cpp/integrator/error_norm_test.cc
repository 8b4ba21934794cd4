// The error norm (integrator/error_norm.h, cenic-math.md §11.3, §11.11) on
// known vectors: translations divided by L, rotations in radians, activations
// by their range, velocities by L (full_state), the ∞-norm and its worst
// coordinate; the propagated norm's weight in the free and damped limits;
// the projection of velocity differences onto the tangent space of bilateral
// rows (against the closed form, and through full_state).
#include <cmath>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "icf/icf_test_util.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/integrator/error_norm.h"
#include "test_util.h"

namespace mjcenic {
namespace {

// A slide joint (dof 0), a hinge (dof 1) and a filter actuator on the hinge
// with ctrlrange [−2, 2] (its activation's range: 4).
constexpr char kArm[] = R"(
<mujoco><worldbody>
  <body><joint name="slide" type="slide" axis="1 0 0"/><geom size="0.1" mass="1"/>
    <body><joint name="hinge" type="hinge" axis="0 0 1"/>
      <geom size="0.1" pos="0.5 0 0" mass="1"/></body></body></worldbody>
  <actuator><general name="filter" joint="hinge" dyntype="filter" dynprm="0.1"
    ctrllimited="true" ctrlrange="-2 2"/></actuator></mujoco>)";

struct Arm {
  test_util::ModelPtr m;
  std::vector<double> q0, v0, act0;
};
Arm LoadArm() {
  std::string error;
  Arm a{test_util::ModelFromXml(kArm, &error), {}, {}, {}};
  EXPECT_TRUE(a.m) << error;
  if (a.m) {
    a.q0.assign(a.m->nq, 0.0);
    a.v0.assign(a.m->nv, 0.0);
    a.act0.assign(a.m->na, 0.0);
  }
  return a;
}

TEST(ErrorNorm, WeightedNormOfAKnownVector) {
  Arm a = LoadArm();
  ASSERT_TRUE(a.m);
  ASSERT_EQ(a.m->nv, 2);
  ASSERT_EQ(a.m->na, 1);
  ErrorNorm norm(a.m.get(), ErrorNormKind::kWeighted, 0.5);
  EXPECT_EQ(norm.length_scale(), 0.5);
  EXPECT_EQ(norm.act_weight(0), 0.25);
  // Δq = (0.1 m, 0.05 rad), Δact = 0.4: max(0.1/0.5, 0.05, 0.4/4) = 0.2 at dof 0.
  const double q[] = {0.1, 0.05}, v[] = {0.3, -0.7}, act[] = {0.4};
  int worst = -1;
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   0.2);
  EXPECT_EQ(worst, 0);
  EXPECT_EQ(norm.WorstName(a.m.get(), worst), "dof 0 (joint 'slide')");
  // Velocities are not part of the weighted norm; Δact = 1.2 weighs 0.3.
  const double act_big[] = {1.2};
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act_big, a.q0.data(), a.v0.data(),
                                a.act0.data(), &worst),
                   0.3);
  EXPECT_EQ(worst, -2);
  EXPECT_EQ(norm.WorstName(a.m.get(), worst), "act 0 (actuator 'filter')");
  // A rotation is measured in radians: Δq = (0.01 m, 0.15 rad) → 0.15 at dof 1.
  const double q_rot[] = {0.01, 0.15};
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q_rot, v, act, a.q0.data(), a.v0.data(),
                                a.act0.data(), &worst),
                   0.15);
  EXPECT_EQ(worst, 1);
}

TEST(ErrorNorm, FullStateAndDrakeNorms) {
  Arm a = LoadArm();
  ASSERT_TRUE(a.m);
  const double q[] = {0.1, 0.05}, v[] = {0.3, -0.7}, act[] = {0.0};
  int worst = -1;
  // full_state adds |Δv|/L: 0.7/0.5 = 1.4 at dof 1.
  ErrorNorm full(a.m.get(), ErrorNormKind::kFullState, 0.5);
  EXPECT_DOUBLE_EQ(full.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   1.4);
  EXPECT_EQ(worst, 1);
  // drake: the raw qpos components, unweighted: 0.1 at qpos 0.
  ErrorNorm drake(a.m.get(), ErrorNormKind::kDrake, 0.5);
  EXPECT_DOUBLE_EQ(drake.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                 &worst),
                   0.1);
  EXPECT_EQ(worst, 0);
  EXPECT_EQ(drake.WorstName(a.m.get(), worst), "qpos 0 (joint 'slide')");
}

TEST(ErrorNorm, PropagationWeight) {
  // A free dof (H = M) keeps drifting: the horizon τ.
  EXPECT_DOUBLE_EQ(ErrorNorm::PropagationWeight(0.01, 2.0, 2.0, 1.0), 1.0);
  // A damped dof, H = M + h D (M = 1, D = 10, h = 0.01):
  // w = h H / (H − M + h H/τ) = 0.011 / 0.111.
  EXPECT_NEAR(ErrorNorm::PropagationWeight(0.01, 1.1, 1.0, 1.0), 0.011 / (0.1 + 0.011), 1e-14);
}

// Two dofs of masses m1, m2 (one tree each) tied by the row v1 − v2 = 0
// (cenic-math §11.3): the M-orthogonal projection of δv = (1, 0) is the
// common velocity that keeps the momentum, m1/(m1 + m2) on both. A second,
// dependent row (2v1 − 2v2) and a zero row are dropped, not inverted.
TEST(TangentProjection, TiedPairKeepsMomentum) {
  icf::IcfModel model;
  model.Reset(2);
  model.clique_start = {0, 1, 2};
  model.clique_of_dof = {0, 1};
  model.M_rowadr = {0, 1};
  model.M_rownnz = {1, 1};
  model.M_colind = {0, 1};
  const double m1 = 2.0, m2 = 6.0;
  model.M = {m1, m2};
  model.M_diag = {m1, m2};
  const int both[] = {0, 1};
  for (double scale : {1.0, 2.0, 0.0}) {
    const int c = model.couplings.Add(both, 0.0, 1.0);
    model.couplings.rows.J(c)[0] = scale;
    model.couplings.rows.J(c)[1] = -scale;
    TangentProjection projection;
    double dv[] = {1.0, 0.0};
    ASSERT_TRUE(projection.Apply(model, nullptr, dv));
    EXPECT_NEAR(dv[0], m1 / (m1 + m2), 1e-14) << model.couplings.size() << " rows";
    EXPECT_NEAR(dv[1], m1 / (m1 + m2), 1e-14) << model.couplings.size() << " rows";
    double along[] = {0.7, 0.7};  // tangent already: unchanged
    ASSERT_TRUE(projection.Apply(model, nullptr, along));
    EXPECT_NEAR(along[0], 0.7, 1e-15);
    EXPECT_NEAR(along[1], 0.7, 1e-15);
  }
}

// Random trees (3, 4 and 2 dofs, dense SPD mass blocks) and rows over the
// first two, one of them a combination of two others: the projection equals
// δv − M⁻¹Jᵀ(J M⁻¹ Jᵀ)⁻¹J δv over the independent rows, J δv_T = 0, the
// untouched tree keeps its δv, and a second application changes nothing.
TEST(TangentProjection, MatchesTheClosedFormOnRandomTrees) {
  icf::Random rng(7);
  icf::IcfModel model;
  icf::MakeBase(&model, {3, 4, 2}, rng);
  const int nv = model.nv;
  const std::vector<int> dofs = {0, 1, 2, 3, 4, 5, 6};
  for (int c = 0; c < 3; ++c) {
    model.couplings.Add(dofs, 0.0, 1.0);
    icf::FillJ(model.couplings.rows, c, rng);
  }
  const int dep = model.couplings.Add(dofs, 0.0, 1.0);  // row 0 − 2·row 2
  for (int k = 0; k < 7; ++k)
    model.couplings.rows.J(dep)[k] =
        model.couplings.rows.J(0)[k] - 2 * model.couplings.rows.J(2)[k];
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(nv, nv);
  for (int i = 0; i < nv; ++i)
    for (int k = 0; k < model.M_rownnz[i]; ++k) {
      const int j = model.M_colind[model.M_rowadr[i] + k];
      M(i, j) = M(j, i) = model.M[model.M_rowadr[i] + k];
    }
  Eigen::MatrixXd J(3, nv);
  for (int c = 0; c < 3; ++c) J.row(c) = icf::DenseJ(model.couplings.rows, c, nv);
  const Eigen::VectorXd dv = rng.Vec(nv, 1.0);
  const Eigen::MatrixXd Y = M.ldlt().solve(J.transpose());
  const Eigen::VectorXd expected = dv - Y * (J * Y).ldlt().solve(J * dv);
  std::vector<double> x(dv.data(), dv.data() + nv);
  TangentProjection projection;
  ASSERT_TRUE(projection.Apply(model, nullptr, x.data()));
  for (int i = 0; i < nv; ++i) EXPECT_NEAR(x[i], expected[i], 1e-12) << "dof " << i;
  const Eigen::Map<const Eigen::VectorXd> projected(x.data(), nv);
  EXPECT_LT((J * projected).norm(), 1e-12);
  for (int i = 7; i < nv; ++i) EXPECT_EQ(x[i], dv[i]);
  const std::vector<double> once = x;
  ASSERT_TRUE(projection.Apply(model, nullptr, x.data()));
  for (int i = 0; i < nv; ++i) EXPECT_NEAR(x[i], once[i], 1e-13);
}

// full_state through a tangent model: the component of Δv along the row's
// normal does not count; the raw difference does without the model, and
// along a limit that the solve's velocity leaves.
TEST(ErrorNorm, FullStateMeasuresTangentVelocities) {
  Arm a = LoadArm();
  ASSERT_TRUE(a.m);
  icf::IcfModel model;
  model.Reset(2);
  model.clique_start = {0, 2};
  model.clique_of_dof = {0, 0};
  model.M_rowadr = {0, 1};
  model.M_rownnz = {1, 2};
  model.M_colind = {0, 0, 1};
  model.M = {1.0, 0.0, 1.0};
  const int dof1[] = {1};
  model.couplings.Add(dof1, 0.0, 1.0);  // holds the hinge: v1 = 0
  model.couplings.rows.J(0)[0] = 1.0;
  ErrorNorm norm(a.m.get(), ErrorNormKind::kFullState, 0.5);
  const double q[] = {0.0, 0.0}, v[] = {0.1, -0.7}, act[] = {0.0};
  int worst = -1;
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   1.4);
  norm.SetTangentModel(&model);
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   0.2);
  EXPECT_EQ(worst, 0);
  // One tangent model per Compute.
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   1.4);
  // A limit row on the hinge counts where it is active at the solve's
  // velocity (v_c = −0.5 below its target 0) and not where it separates.
  icf::IcfModel limited = model;
  limited.couplings.Clear();
  limited.limits.Add(dof1, 0.0, 1.0);
  limited.limits.rows.J(0)[0] = 1.0;
  const double v_held[] = {0.0, -0.5}, v_free[] = {0.0, 0.5};
  norm.SetTangentModel(&limited, v_held);
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   0.2);
  norm.SetTangentModel(&limited, v_free);
  EXPECT_DOUBLE_EQ(norm.Compute(a.m.get(), q, v, act, a.q0.data(), a.v0.data(), a.act0.data(),
                                &worst),
                   1.4);
}

// propagated: max(|Δq| w_q, |Δv| w_v w_q) with w_v the propagation weight of
// SetPropagation: M = 1, D = 10, h = 0.01 (H = 1.1), τ = 1:
// w_v = h H / (H − M + h H/τ) = 0.011 / 0.111; L = 0.5 (the slide's w_q = 2).
TEST(ErrorNorm, PropagatedNormWeighsVelocityByThePropagationWeight) {
  Arm a = LoadArm();
  ASSERT_TRUE(a.m);
  const mjModel* m = a.m.get();
  ErrorNorm norm(m, ErrorNormKind::kPropagated, 0.5, 1.0);
  const double H[] = {1.1, 2.0}, M[] = {1.0, 2.0};
  norm.SetPropagation(0.01, H, M);
  const double w = 0.011 / 0.111;
  EXPECT_NEAR(norm.velocity_weight(0), w, 1e-15);
  EXPECT_DOUBLE_EQ(norm.velocity_weight(1), 1.0);  // a free dof: the horizon
  const double q0[] = {0, 0}, v0[] = {0, 0}, a0[] = {0};
  const double q[] = {1e-4, 0.0}, v[] = {0.3, 0.0}, act[] = {0.0};
  int worst = -1;
  EXPECT_NEAR(norm.Compute(m, q, v, act, q0, v0, a0, &worst), 0.3 * w * 2, 1e-14);
  EXPECT_EQ(worst, 0);
}

// propagated_modes: the drift set by SetPropagatedDrift replaces |Δv| τ for
// the next Compute only.
TEST(ErrorNorm, PropagatedModesReadsTheDriftOnce) {
  Arm a = LoadArm();
  ASSERT_TRUE(a.m);
  const mjModel* m = a.m.get();
  ErrorNorm norm(m, ErrorNormKind::kPropagatedModes, 0.5, 2.0);
  const double q0[] = {0, 0}, v0[] = {0, 0}, a0[] = {0};
  const double q[] = {0.0, 0.0}, v[] = {0.0, 0.05}, act[] = {0.0};
  int worst = -1;
  // No drift: |Δv| τ on the hinge (radians): 0.05 · 2.
  EXPECT_DOUBLE_EQ(norm.Compute(m, q, v, act, q0, v0, a0, &worst), 0.1);
  EXPECT_EQ(worst, 1);
  const double drift[] = {-0.03, 0.0};
  norm.SetPropagatedDrift(drift);
  // |drift| / L on the slide: 0.06 (the hinge's drift is 0).
  EXPECT_DOUBLE_EQ(norm.Compute(m, q, v, act, q0, v0, a0, &worst), 0.06);
  EXPECT_EQ(worst, 0);
  EXPECT_DOUBLE_EQ(norm.Compute(m, q, v, act, q0, v0, a0, &worst), 0.1);
}

// A NaN in any coordinate is the norm's value, whatever the later coordinates
// hold (a non-finite attempt is never measured as finite and accepted).
TEST(ErrorNorm, ANanCoordinateIsTheNormsValue) {
  Arm a = LoadArm();
  ASSERT_TRUE(a.m);
  const mjModel* m = a.m.get();
  for (ErrorNormKind kind : {ErrorNormKind::kWeighted, ErrorNormKind::kFullState,
                             ErrorNormKind::kPropagatedModes}) {
    ErrorNorm norm(m, kind, 0.5, 1.0);
    const double q0[] = {0, 0}, v0[] = {0, 0}, a0[] = {0};
    const double q[] = {std::nan(""), 0.3}, v[] = {0.0, 0.4}, act[] = {0.1};
    int worst = -1;
    EXPECT_TRUE(std::isnan(norm.Compute(m, q, v, act, q0, v0, a0, &worst)))
        << ToString(kind);
    EXPECT_EQ(worst, 0) << ToString(kind);
  }
}

}  // namespace
}  // namespace mjcenic
