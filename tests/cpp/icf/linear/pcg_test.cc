// The pcg linear solver (icf/linear/pcg.cc, cenic-math §8.4): conjugate
// gradients on H x = b, preconditioned by a symmetric block Gauss–Seidel
// sweep over the trees, no factorization of H. Its rules: it stops at the
// first iterate whose residual is within its tolerance, |H x − b| ≤ tol |b|
// (SetIterative), or at its iteration cap; at a tight tolerance it solves
// the Newton system to round-off. Truth: IndependentHessian
// (icf_test_util.h). On a 1029-dof pile of particles, rebinding and the
// forcing of a solve: scenes/pcg_test.cc.
#include <memory>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf/icf_test_util.h"

namespace mjcenic::icf {
namespace {

// 30 trees of 3 dofs, coupled to their neighbours and to the tree 7 ahead,
// and contacts between trees 0–1 and 10–12.
IcfModel Pile(unsigned seed) {
  auto pairs = Ring(30);
  for (auto p : Ring(30, 1, 0, 7)) pairs.push_back(p);
  return CoupledTreesProblem(seed, 30, 3, pairs, {DofRange(0, 6), {30, 31, 32, 36, 37, 38}});
}

// |H x − b| / |b| of a solve at `tolerance` capped at `cap` iterations, and
// the iterations taken.
double Residual(const IcfModel& m, double tolerance, int cap, int* iterations) {
  IcfSolver s;
  auto pcg = MakeLinearSolver(LinearSolverKind::kPcg, tolerance, cap);
  pcg->Prepare(m);
  const double r = FactorAndSolve(pcg.get(), m, &s, 3);
  *iterations = pcg->last_iterations();
  return r;
}

TEST(PcgKind, TightToleranceSolvesTheSystemOfH) {
  const IcfModel m = Pile(1);
  ASSERT_EQ(m.num_islands, 1);
  IcfSolver s;
  auto pcg = MakeLinearSolver(LinearSolverKind::kPcg, 1e-13, 1000);
  pcg->Prepare(m);
  EXPECT_LT(FactorAndSolve(pcg.get(), m, &s, 2), 1e-12);
  const Eigen::MatrixXd H = IndependentHessian(m, s.data());
  EXPECT_LE((pcg->DenseH() - H).cwiseAbs().maxCoeff(), 1e-13 * H.cwiseAbs().maxCoeff());
}

TEST(PcgKind, StopsAtTheFirstIterateWithinItsTolerance) {
  const IcfModel m = Pile(5);
  int previous = 0;
  for (double tolerance : {1e-2, 1e-5, 1e-9}) {
    int iterations = 0;
    EXPECT_LE(Residual(m, tolerance, 1000, &iterations), tolerance) << tolerance;
    EXPECT_GT(iterations, previous) << tolerance;  // a looser tolerance stops earlier
    // One iteration less is not within it.
    int capped = 0;
    EXPECT_GT(Residual(m, tolerance, iterations - 1, &capped), tolerance) << tolerance;
    EXPECT_EQ(capped, iterations - 1);
    previous = iterations;
  }
}

}  // namespace
}  // namespace mjcenic::icf
