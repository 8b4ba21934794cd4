// Every linear solver kind (icf/linear/) solves the Newton system H w = −∇ℓ
// of a hand-built problem whose H is assembled here independently:
// H = M + h D + h² K + Σ Jᵀ G J over single-dof limit rows (one island per
// clique), with damping and joint stiffness on a random half of the dofs
// (icf_test_util.h), and checked against Eigen's Cholesky of that matrix.
#include <cmath>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf_test_util.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/icf/linear/linear_solver.h"

namespace mjcenic::icf {
namespace {

// Cliques of 3, 4, 2 and 5 dofs, h = 0.1 (h² K comparable to M), a violated
// limit row on the first dof of each clique (so that G > 0 there).
IcfModel Problem(unsigned seed) {
  Random rng(seed);
  IcfModel m;
  MakeBase(&m, {3, 4, 2, 5}, rng);
  for (size_t c = 0; c + 1 < m.clique_start.size(); ++c) {
    const int dof = m.clique_start[c];
    m.limits.rows.J(m.limits.Add(std::vector<int>{dof}, -1e-3, 1 / m.M_diag[dof]))[0] = 1.0;
  }
  m.Finalize(0.1);
  EXPECT_STREQ(m.Validate(), "");
  EXPECT_EQ(m.num_islands, 4);
  return m;
}

TEST(LinearSolvers, EveryKindSolvesTheNewtonSystem) {
  const LinearSolverKind kinds[] = {LinearSolverKind::kDense, LinearSolverKind::kSparse,
                                    LinearSolverKind::kIslands, LinearSolverKind::kPcg,
                                    LinearSolverKind::kLowRank, LinearSolverKind::kBlock,
                                    LinearSolverKind::kTree};
  const char* names[] = {"dense", "sparse", "islands", "pcg", "lowrank", "block", "tree"};
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const IcfModel m = Problem(seed);
    double K = 0;
    for (int i = 0; i < m.nv; ++i) K += m.h * m.h * m.K[i];
    ASSERT_GT(K, 1.0);  // stiffness is a visible part of H
    const Eigen::VectorXd v = Random(seed + 10).Vec(m.nv, 0.3);
    for (int k = 0; k < 7; ++k) {
      IcfSolver s;
      Eigen::VectorXd w(m.nv);
      ASSERT_TRUE(s.SearchDirection(m, v.data(), kinds[k], w.data())) << names[k];
      // H and ∇ℓ at v, independently of the solver's assembly.
      Eigen::MatrixXd H = DenseA(m);
      int active = 0;
      for (int c = 0; c < m.limits.size(); ++c) {
        const Eigen::MatrixXd J = DenseJ(m.limits.rows, c, m.nv);
        H += s.data().limits.G[c] * J.transpose() * J;
        active += s.data().limits.G[c] > 0;
      }
      ASSERT_GT(active, 0);
      Eigen::VectorXd g(m.nv);
      for (int i = 0; i < m.nv; ++i) g[i] = s.data().grad[i];
      const Eigen::VectorXd w_ref = H.llt().solve(-g);
      // PCG's direction is solved to a relative residual of 1e-4.
      const double tol = kinds[k] == LinearSolverKind::kPcg ? 1e-3 : 1e-10;
      EXPECT_LT((w - w_ref).norm(), tol * w_ref.norm()) << names[k] << ", seed " << seed;
    }
  }
}

}  // namespace
}  // namespace mjcenic::icf
