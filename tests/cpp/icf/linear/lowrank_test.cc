// The lowrank linear solver (icf/linear/lowrank.cc, cenic-math §8.6):
// H = B + V Vᵀ, B the tree blocks (A and the rows inside one tree), V one
// column per curvature direction of the rows that couple trees; solved by
// the Woodbury identity with the capacitance C = I + VᵀB⁻¹V. Its rules: the
// Woodbury solve is the solve of H (rows over many trees or every dof, or
// none at all); the structure is analysed once per tree structure, whatever
// the rows; a tree block whose values are those of its last successful
// factorization keeps that factor, any other is factorized again. Truth:
// IndependentHessian (icf_test_util.h). On a contact scene, and its choice
// by `auto`: scenes/lowrank_test.cc.
#include <memory>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf/icf_test_util.h"

namespace mjcenic::icf {
namespace {

// Trees of 3, 1, 5, 2, 4 and 6 dofs (dofs 0, 3, 4, 9, 11, 15 first): a row
// over every dof, rows over three trees and over two, a row inside tree 2,
// and a contact over trees 3 and 5.
IcfModel WideRows(unsigned seed) {
  return LinearProblem(seed, {3, 1, 5, 2, 4, 6},
                       {DofRange(0, 21), {1, 3, 9, 20}, {0, 2, 4, 8, 12}, {5, 14}, {4, 6, 7}},
                       {{9, 10, 15, 16, 17, 18, 19, 20}});
}

TEST(LowRankKind, WoodburySolveIsTheSolveOfH) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const IcfModel m = WideRows(seed);
    int wide = 0;
    ASSERT_EQ(CouplingRank(m, &wide), 4 + 3);  // four gain rows and a contact couple trees
    ASSERT_EQ(wide, 3);
    ExpectSolvesTheNewtonSystem(m, LinearSolverKind::kLowRank, seed);
  }
}

TEST(LowRankKind, NoCouplingRowsIsTheBlockDiagonalSolve) {
  const IcfModel m = LinearProblem(4, {3, 1, 5, 2, 4, 6}, {{4, 6, 7}}, {DofRange(15, 21)});
  ASSERT_EQ(CouplingRank(m), 0);
  ExpectSolvesTheNewtonSystem(m, LinearSolverKind::kLowRank, 5);
}

TEST(LowRankKind, AnalysedOncePerTreeStructure) {
  const IcfModel wide = WideRows(1);
  const IcfModel local = LinearProblem(2, {3, 1, 5, 2, 4, 6}, {{4, 6, 7}});
  const IcfModel other = LinearProblem(3, {3, 1, 5, 6, 6});  // same nv, other trees
  ASSERT_EQ(other.nv, wide.nv);
  auto low = MakeLinearSolver(LinearSolverKind::kLowRank);
  EXPECT_EQ(PrepareSequence(low.get(), {&wide, &local, &wide, &other}),
            (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(low->analyses(), 2);
}

TEST(LowRankKind, ATreeBlockIsFactorizedAgainWhenItsValuesChange) {
  const IcfModel m = WideRows(6);
  IcfModel heavier = m;  // tree 2's mass matrix doubled, the rest the same bits
  for (int i = 4; i < 9; ++i) {
    for (int k = 0; k < m.M_rownnz[i]; ++k) heavier.M[m.M_rowadr[i] + k] *= 2;
    heavier.M_diag[i] *= 2;
  }
  heavier.Finalize(m.h);
  IcfModel indefinite = m;  // tree 2 not positive definite
  indefinite.M[m.M_rowadr[6] + m.M_rownnz[6] - 1] = -1e3;
  auto low = MakeLinearSolver(LinearSolverKind::kLowRank);
  IcfSolver s;
  // The same iterate each time: only tree 2's block differs between them.
  // After the failed factorization, m's block has the bits of its last
  // successful one, but the factor was overwritten.
  const IcfModel* const order[] = {&m, &heavier, &m, &indefinite, &m};
  for (int k = 0; k < 5; ++k) {
    low->Prepare(*order[k]);
    const double residual = FactorAndSolve(low.get(), *order[k], &s, 7);
    if (order[k] == &indefinite) {
      EXPECT_EQ(residual, std::numeric_limits<double>::infinity());
    } else {
      EXPECT_LT(residual, 1e-12) << "model " << k;
    }
  }
}

}  // namespace
}  // namespace mjcenic::icf
