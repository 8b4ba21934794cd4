// The tree linear solver (icf/linear/tree.cc, cenic-math §8.8): LᵀDL of H on
// the mass matrix's own pattern, eliminating leaves first, no fill. Its
// rules: H keeps M's pattern when every row lies on one root-to-leaf chain,
// and then the solve is exact on a branched tree; a row across two branches
// leaves the pattern, so a request for it falls back to the dense kind
// (ChooseLinearSolver). Truth: IndependentHessian (icf_test_util.h). On a
// branched MuJoCo robot: scenes/tree_test.cc.
#include <memory>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf/icf_test_util.h"

namespace mjcenic::icf {
namespace {

// One branched tree: dof 0 the root, 1–2 one branch, 3–4–5 another, and a
// second tree of dofs 6–7. M = LᵀDL with L unit lower triangular on the
// ancestors (what a kinematic tree's mass matrix is), so M's pattern is
// each dof and its ancestors, stored in MuJoCo's layout (row i: its
// parent's row, then i). Rows: a limit on every root, a gain row on the
// chain 0–1–2, a contact on 0–3–5, a gain row inside the second tree, and
// `extra` rows.
IcfModel BranchedTree(unsigned seed, const std::vector<std::vector<int>>& extra = {}) {
  const std::vector<int> parent = {-1, 0, 1, 0, 3, 4, -1, 6};
  const int nv = 8;
  Random rng(seed);
  Eigen::MatrixXd L = Eigen::MatrixXd::Identity(nv, nv), D = Eigen::MatrixXd::Zero(nv, nv);
  std::vector<std::vector<int>> ancestors(nv);  // ascending, i itself last
  for (int i = 0; i < nv; ++i) {
    if (parent[i] >= 0) ancestors[i] = ancestors[parent[i]];
    ancestors[i].push_back(i);
    for (int a : ancestors[i])
      if (a != i) L(i, a) = 0.5 * rng.N();
    D(i, i) = rng.U(0.3, 2.0);
  }
  const Eigen::MatrixXd M = L.transpose() * D * L;
  IcfModel m;
  m.Reset(nv);
  m.clique_start = {0, 6, 8};
  for (int i = 0; i < nv; ++i) m.clique_of_dof[i] = i < 6 ? 0 : 1;
  m.M_colind.clear();
  m.M.clear();
  for (int i = 0; i < nv; ++i) {
    m.M_rowadr[i] = static_cast<int>(m.M.size());
    m.M_rownnz[i] = static_cast<int>(ancestors[i].size());
    for (int a : ancestors[i]) {
      m.M_colind.push_back(a);
      m.M.push_back(M(i, a));
    }
    m.M_diag[i] = M(i, i);
    m.D[i] = rng.U(0.0, 2.0);
    m.K[i] = i % 2 ? rng.U(0.0, 50.0) : 0.0;
    m.v0[i] = 0.2 * rng.N();
    m.f[i] = rng.N();
  }
  for (int root : {0, 6})
    m.limits.rows.J(m.limits.Add(std::vector<int>{root}, -0.05, 1 / m.M_diag[root]))[0] = 1.0;
  std::vector<std::vector<int>> gains = {{0, 1, 2}, {6, 7}};
  gains.insert(gains.end(), extra.begin(), extra.end());
  for (const auto& dofs : gains)
    FillJ(m.gains.rows, m.gains.Add(dofs, 0.5, 100, 2, -1e9, 1e9), rng);
  const std::vector<int> chain = {0, 3, 5};
  FillJ(m.contacts.rows, m.contacts.Add(chain, 10.0, 1e4, 0.5, 0.5, 0.5, 2.65e-3), rng);
  m.Finalize(0.1);
  // M has no entry between the branches: the pattern is the tree's.
  EXPECT_EQ(M(2, 3), 0.0);
  EXPECT_EQ(M(1, 5), 0.0);
  return m;
}

TEST(TreeKind, SolvesTheNewtonSystemOfABranchedTree) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const IcfModel m = BranchedTree(seed);
    ASSERT_TRUE(ConstraintsFollowTree(m));
    EXPECT_EQ(ChooseLinearSolver(m, LinearSolverKind::kTree), LinearSolverKind::kTree);
    ExpectSolvesTheNewtonSystem(m, LinearSolverKind::kTree, seed);
    IcfSolver s;
    s.Evaluate(m, m.v0.data());
    EXPECT_EQ(IndependentHessian(m, s.data())(2, 3), 0.0);  // H keeps M's zeros
  }
}

TEST(TreeKind, ARowAcrossBranchesFallsBackToDense) {
  const IcfModel m = BranchedTree(4, {{2, 4}});
  EXPECT_FALSE(ConstraintsFollowTree(m));
  EXPECT_EQ(ChooseLinearSolver(m, LinearSolverKind::kTree), LinearSolverKind::kDense);
  // The tree kind itself refuses it rather than drop the entry (2, 4).
  IcfSolver s;
  auto tree = MakeLinearSolver(LinearSolverKind::kTree);
  tree->Prepare(m);
  EXPECT_EQ(FactorAndSolve(tree.get(), m, &s, 5), std::numeric_limits<double>::infinity());
  // A row across the two trees is no chain either.
  EXPECT_FALSE(ConstraintsFollowTree(BranchedTree(6, {{5, 7}})));
}

}  // namespace
}  // namespace mjcenic::icf
