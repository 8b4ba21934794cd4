// The tree kind (LDLᵀ on M's own sparsity, cenic-math.md §8.8) against the
// dense LLT on problems built from a branched robot: a floating torso with
// two two-link legs and an arm, standing on a floor (contacts on one
// root-to-leaf chain each), joint limits and actuators. Same H, same Newton
// direction to round-off, same converged velocities to the solver
// tolerance; a constraint between two branches sends auto back to dense.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/icf/linear/linear_solver.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/stepper.h"

namespace mjcenic {
namespace {

using icf::IcfModel;
using icf::IcfSolver;
using icf::LinearSolverKind;

// `cross`: an equality couples the two knees (a constraint between two
// branches of the tree). `chain`: one couples the left hip and knee (one
// root-to-leaf chain, skipping the free joint's dofs and lhipx).
std::string Robot(bool cross, bool chain = false) {
  const std::string eq =
      cross   ? "<equality><joint joint1=\"lknee\" joint2=\"rknee\"/></equality>"
      : chain ? "<equality><joint joint1=\"lhip\" joint2=\"lknee\"/></equality>"
              : "";
  return R"(<mujoco>
  <option timestep="0.002"/>
  <default><geom friction="0.8 0.01 0.001"/></default>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body name="torso" pos="0 0 0.62">
      <freejoint/>
      <geom type="box" size="0.1 0.15 0.1" mass="5"/>
      <body name="lthigh" pos="0 0.08 -0.1">
        <joint name="lhip" type="hinge" axis="0 1 0" range="-60 60"/>
        <joint name="lhipx" type="hinge" axis="1 0 0" range="-30 30"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.22" size="0.04"/>
        <body name="lshin" pos="0 0 -0.22">
          <joint name="lknee" type="hinge" axis="0 1 0" range="0 120"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.22" size="0.04"/>
          <geom type="box" pos="0.03 0 -0.25" size="0.08 0.04 0.02"/>
        </body>
      </body>
      <body name="rthigh" pos="0 -0.08 -0.1">
        <joint name="rhip" type="hinge" axis="0 1 0" range="-60 60"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.22" size="0.04"/>
        <body name="rshin" pos="0 0 -0.22">
          <joint name="rknee" type="hinge" axis="0 1 0" range="0 120"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.22" size="0.04"/>
          <geom type="box" pos="0.03 0 -0.25" size="0.08 0.04 0.02"/>
        </body>
      </body>
      <body name="arm" pos="0 0 0.1">
        <joint name="shoulder" type="hinge" axis="0 1 0" range="-90 90"/>
        <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.03"/>
        <body name="hand" pos="0.2 0 0">
          <joint name="elbow" type="hinge" axis="0 0 1"/>
          <geom type="box" pos="0.03 0 0" size="0.03 0.03 0.03"/>
        </body>
      </body>
    </body>
  </worldbody>
  <contact><exclude body1="torso" body2="lthigh"/><exclude body1="torso" body2="rthigh"/>
    <exclude body1="torso" body2="arm"/></contact>
  )" + eq + R"(
  <actuator>
    <position joint="lhip" kp="50"/><position joint="lknee" kp="50"/>
    <position joint="rhip" kp="50"/><position joint="rknee" kp="50"/>
    <motor joint="shoulder" gear="1"/>
  </actuator>
</mujoco>)";
}

// The problem of the last step after `seconds` of fixed-mode simulation.
IcfModel ProblemAfter(const std::string& xml, double seconds) {
  char error[1000] = "";
  mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, error, sizeof(error));
  EXPECT_NE(spec, nullptr) << error;
  mjModel* m = spec ? mj_compile(spec, nullptr) : nullptr;
  EXPECT_NE(m, nullptr);
  IcfModel out;
  if (!m) {
    if (spec) mj_deleteSpec(spec);
    return out;
  }
  mjData* d = mj_makeData(m);
  auto stepper = Stepper::Create(m);
  EXPECT_TRUE(stepper.ok()) << stepper.status();
  if (stepper.ok()) {
    absl::Status st;
    while (st.ok() && d->time < seconds - 1e-9) st = (*stepper)->Step(d);
    EXPECT_TRUE(st.ok()) << st;
    out = (*stepper)->last_problem();
  }
  mj_deleteData(d);
  mj_deleteModel(m);
  mj_deleteSpec(spec);
  return out;
}

Eigen::VectorXd Perturbed(const IcfModel& m, double scale) {
  Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv);
  for (int i = 0; i < m.nv; ++i) v[i] += scale * std::sin(1.0 + 3.7 * i);
  return v;
}

// Constraints whose dofs span two branches (not one root-to-leaf chain),
// counted independently of ConstraintsFollowTree from MuJoCo's dof parents.
template <class Pool>
int CrossBranch(const Pool& pool, const std::string& xml) {
  char error[1000] = "";
  mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, error, sizeof(error));
  mjModel* m = mj_compile(spec, nullptr);
  int n = 0;
  for (int c = 0; c < pool.size(); ++c) {
    const auto dofs = pool.rows.dofs(c);
    std::vector<int> chain;  // the last dof and its ancestors
    for (int j = dofs.back(); j >= 0; j = m->dof_parentid[j]) chain.push_back(j);
    for (int dof : dofs)
      if (std::find(chain.begin(), chain.end(), dof) == chain.end()) {
        ++n;
        break;
      }
  }
  mj_deleteModel(m);
  mj_deleteSpec(spec);
  return n;
}

TEST(TreeSolver, StandingRobotUsesTheTreeKind) {
  const std::string xml = Robot(false);
  const IcfModel m = ProblemAfter(xml, 0.3);
  ASSERT_EQ(m.nv, 13);
  ASSERT_GT(m.contacts.size(), 0);  // the feet on the floor
  EXPECT_EQ(CrossBranch(m.contacts, xml), 0);
  EXPECT_EQ(CrossBranch(m.couplings, xml), 0);
  EXPECT_TRUE(icf::ConstraintsFollowTree(m));
  EXPECT_EQ(icf::ChooseLinearSolver(m, LinearSolverKind::kAuto), LinearSolverKind::kTree);
  // The adapter noted M's tree layout once (§8.9); the per-solve check, had it
  // not, finds the same.
  EXPECT_EQ(m.mass_tree_layout, 1);
  IcfModel unnoted = m;
  unnoted.mass_tree_layout = -1;
  EXPECT_TRUE(icf::ConstraintsFollowTree(unnoted));
  // A pattern noted as not a tree: the tree kind is refused.
  unnoted.mass_tree_layout = 0;
  EXPECT_FALSE(icf::ConstraintsFollowTree(unnoted));
  // M itself is sparse here: fewer stored entries than the dense triangle.
  EXPECT_LT(static_cast<int>(m.M_colind.size()), m.nv * (m.nv + 1) / 2);
}

TEST(TreeSolver, SameHessianAndDirectionAsDense) {
  const IcfModel m = ProblemAfter(Robot(false), 0.3);
  ASSERT_EQ(m.nv, 13);
  for (double scale : {0.0, 1e-3, 0.1}) {
    const Eigen::VectorXd v = Perturbed(m, scale);
    IcfSolver solver;
    solver.Evaluate(m, v.data());
    auto dense = icf::MakeLinearSolver(LinearSolverKind::kDense);
    auto tree = icf::MakeLinearSolver(LinearSolverKind::kTree);
    EXPECT_TRUE(dense->Prepare(m));
    EXPECT_TRUE(tree->Prepare(m));
    EXPECT_FALSE(tree->Prepare(m));  // M's pattern: nothing new to analyse
    ASSERT_TRUE(dense->AssembleAndFactor(m, solver.data()));
    ASSERT_TRUE(tree->AssembleAndFactor(m, solver.data()));
    const Eigen::MatrixXd Hd = dense->DenseH(), Ht = tree->DenseH();
    EXPECT_LE((Hd - Ht).cwiseAbs().maxCoeff(), 1e-14 * Hd.cwiseAbs().maxCoeff());
    // x = H⁻¹ b against the dense H (independent of either factorization's
    // arithmetic), in place (x aliases b) and out of place.
    const Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(m.nv, -1, 2);
    Eigen::VectorXd x = b, y(m.nv);
    tree->Solve(x.data(), x.data());
    tree->Solve(b.data(), y.data());
    EXPECT_LE((Hd * x - b).norm(), 1e-13 * Hd.norm() * x.norm());
    EXPECT_EQ(x, y);
    Eigen::VectorXd xd(m.nv);
    dense->Solve(b.data(), xd.data());
    EXPECT_LT((x - xd).norm(), 1e-10 * xd.norm());
  }
}

// A constraint on part of a chain (the hip–knee coupling: not the dofs
// from the root) adds its terms at the dofs' positions in the rows, as the
// contacts on whole chains do at consecutive ones: the same H as dense.
TEST(TreeSolver, PartialChainConstraintSameHessianAsDense) {
  const IcfModel m = ProblemAfter(Robot(false, true), 0.3);
  ASSERT_EQ(m.nv, 13);
  ASSERT_EQ(m.couplings.size(), 1);
  const auto dofs = m.couplings.rows.dofs(0);
  ASSERT_EQ(dofs.size(), 2u);
  EXPECT_NE(dofs[0], 0);  // not the chain from the root
  ASSERT_GT(m.contacts.size(), 0);  // and contacts on whole chains
  EXPECT_EQ(icf::ChooseLinearSolver(m, LinearSolverKind::kAuto), LinearSolverKind::kTree);
  IcfSolver solver;
  solver.Evaluate(m, m.v0.data());
  ASSERT_GT(solver.data().couplings.G[0], 0.0);
  auto dense = icf::MakeLinearSolver(LinearSolverKind::kDense);
  auto tree = icf::MakeLinearSolver(LinearSolverKind::kTree);
  dense->Prepare(m);
  tree->Prepare(m);
  ASSERT_TRUE(dense->AssembleAndFactor(m, solver.data()));
  ASSERT_TRUE(tree->AssembleAndFactor(m, solver.data()));
  const Eigen::MatrixXd Hd = dense->DenseH(), Ht = tree->DenseH();
  EXPECT_LE((Hd - Ht).cwiseAbs().maxCoeff(), 1e-14 * Hd.cwiseAbs().maxCoeff());
}

TEST(TreeSolver, SolvesLikeDense) {
  const IcfModel m = ProblemAfter(Robot(false), 0.3);
  ASSERT_EQ(m.nv, 13);
  icf::SolverOptions od, ot;
  od.linear_solver = LinearSolverKind::kDense;
  ot.linear_solver = LinearSolverKind::kTree;
  IcfSolver sd, st;
  icf::SolveStats a, b;
  Eigen::VectorXd vd(m.nv), vt(m.nv);
  ASSERT_EQ(sd.Solve(m, m.v0.data(), od, vd.data(), &a), icf::SolveStatus::kConverged);
  ASSERT_EQ(st.Solve(m, m.v0.data(), ot, vt.data(), &b), icf::SolveStatus::kConverged);
  EXPECT_EQ(a.iterations, b.iterations);
  double Dr = 0, dv = 0;  // the solver's scaled norm |D⁻¹ Δv| against its tolerance
  for (int i = 0; i < m.nv; ++i) {
    Dr += m.r[i] * m.r[i] / m.M_diag[i];
    dv += m.M_diag[i] * (vd[i] - vt[i]) * (vd[i] - vt[i]);
  }
  EXPECT_LT(std::sqrt(dv), 1e-8 * std::max(1.0, std::sqrt(Dr)));
  std::printf("[ tree ] nv %d, %d contacts: Newton iterations dense %d / tree %d, "
              "scaled |v_dense - v_tree| %.2e\n",
              m.nv, m.contacts.size(), a.iterations, b.iterations, std::sqrt(dv));
}

TEST(TreeSolver, ConstraintBetweenBranchesFallsBackToDense) {
  const std::string xml = Robot(true);
  const IcfModel m = ProblemAfter(xml, 0.3);
  ASSERT_EQ(m.nv, 13);
  ASSERT_EQ(CrossBranch(m.couplings, xml), 1);  // knee to knee
  EXPECT_FALSE(icf::ConstraintsFollowTree(m));
  EXPECT_EQ(icf::ChooseLinearSolver(m, LinearSolverKind::kAuto), LinearSolverKind::kDense);
  EXPECT_EQ(icf::ChooseLinearSolver(m, LinearSolverKind::kTree), LinearSolverKind::kDense);
}

}  // namespace
}  // namespace mjcenic
