// The dense linear solver (icf/linear/dense.cc): H = A + Σ JᵀGJ in one dense
// lower triangle with the dofs in reverse order, factorized by FactorLower
// (cenic-math §8.4). Its rules: any coupling pattern (rows across trees need
// nothing of it), storage made again only when nv changes, every
// AssembleAndFactor factorizes the values it is given, a Hessian that is not
// positive definite is refused. Truth: IndependentHessian (icf_test_util.h)
// and Eigen's LLT of it.
#include <memory>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf/icf_test_util.h"

namespace mjcenic::icf {
namespace {

// Trees of 3, 4, 2 and 5 dofs joined by gain rows over three trees and over
// two, and a contact over trees 1 and 2: one island of 14 dofs.
IcfModel CoupledProblem(unsigned seed) {
  return LinearProblem(seed, {3, 4, 2, 5}, {{0, 5, 9}, {2, 13}}, {DofRange(3, 9)});
}

TEST(DenseKind, SolvesTheNewtonSystemOfCoupledTrees) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const IcfModel m = CoupledProblem(seed);
    ASSERT_EQ(m.num_islands, 1);
    ExpectSolvesTheNewtonSystem(m, LinearSolverKind::kDense, seed);  // DenseH in dof order
  }
}

TEST(DenseKind, NewStorageOnlyWhenTheSizeChanges) {
  const IcfModel coupled = CoupledProblem(1);
  const IcfModel apart = LinearProblem(2, {3, 4, 2, 5});  // same nv, no row across trees
  const IcfModel small = LinearProblem(3, {3, 4});
  ASSERT_EQ(apart.nv, coupled.nv);
  auto dense = MakeLinearSolver(LinearSolverKind::kDense);
  // Another pattern, the same n × n triangle; then another n.
  EXPECT_EQ(PrepareSequence(dense.get(), {&coupled, &apart, &small}),
            (std::vector<bool>{true, false, true}));
  EXPECT_EQ(dense->analyses(), 2);
}

TEST(DenseKind, EveryAssemblyFactorizesItsOwnValues) {
  const IcfModel m = CoupledProblem(8);
  IcfModel heavier = m;  // same pattern, M three times as large
  for (double& x : heavier.M) x *= 3;
  for (double& x : heavier.M_diag) x *= 3;
  heavier.Finalize(m.h);
  auto dense = MakeLinearSolver(LinearSolverKind::kDense);
  EXPECT_EQ(PrepareSequence(dense.get(), {&m, &heavier, &m}),
            (std::vector<bool>{true, false, false}));
  // H changed by far more than the solves' tolerance: an old factor fails.
  IcfSolver s;
  s.Evaluate(m, m.v0.data());
  const Eigen::MatrixXd H = IndependentHessian(m, s.data());
  EXPECT_GT((IndependentHessian(heavier, s.data()) - H).norm(), 1e-3 * H.norm());
}

TEST(DenseKind, RefusesAHessianThatIsNotPositiveDefinite) {
  const IcfModel m = CoupledProblem(10);
  IcfModel indefinite = m;
  const int dof = 4;
  indefinite.M[m.M_rowadr[dof] + m.M_rownnz[dof] - 1] = -1e3;  // beyond what h D, h² K, rows add
  auto dense = MakeLinearSolver(LinearSolverKind::kDense);
  dense->Prepare(m);
  IcfSolver s;
  EXPECT_EQ(FactorAndSolve(dense.get(), indefinite, &s, 11),
            std::numeric_limits<double>::infinity());
  const Eigen::MatrixXd H = IndependentHessian(indefinite, s.data());
  EXPECT_LT(H.selfadjointView<Eigen::Lower>().eigenvalues().minCoeff(), 0);
  EXPECT_LT(FactorAndSolve(dense.get(), m, &s, 11), 1e-12);  // the next assembly starts afresh
}

}  // namespace
}  // namespace mjcenic::icf
