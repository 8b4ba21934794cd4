// The sparse linear solver (icf/linear/sparse.cc): CHOLMOD's LDLᵀ of H on a
// block pattern, a dense block per tree plus one per pair of trees coupled
// by a row. Its rules (linear_solver.h, cenic-math §8.4): the symbolic
// analysis is kept while the coupled pairs are a subset of the analysed
// ones and those are at most 2·(pairs) + 16; a new pair analyses the union of
// old and new, a pattern grown past that budget is analysed afresh, and so
// is a new tree structure. Whatever pattern is in use, the solve is exact.
// Truth: IndependentHessian (icf_test_util.h). The same solver on a MuJoCo
// scene: scenes/linear_solver_test.cc.
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "icf/icf_test_util.h"

namespace mjcenic::icf {
namespace {

constexpr int kTrees = 24, kDofs = 2;

TEST(SparseKind, SolvesTheNewtonSystemOnARingOfTrees) {
  // A ring of coupled trees (its factor fills in) and a contact over trees
  // 0 and 5.
  for (unsigned seed = 1; seed <= 2; ++seed) {
    const IcfModel m = CoupledTreesProblem(seed, kTrees, kDofs, Ring(kTrees), {{0, 1, 10, 11}});
    ASSERT_EQ(m.num_islands, 1);
    ExpectSolvesTheNewtonSystem(m, LinearSolverKind::kSparse, seed);
  }
}

TEST(SparseKind, KeepsItsAnalysisWhileTheCouplingsAreASubset) {
  const IcfModel ring = CoupledTreesProblem(1, kTrees, kDofs, Ring(kTrees));
  const IcfModel half = CoupledTreesProblem(2, kTrees, kDofs, Ring(kTrees, 2));  // 12 of 24
  const IcfModel none = CoupledTreesProblem(3, kTrees, kDofs, {});
  auto sparse = MakeLinearSolver(LinearSolverKind::kSparse);
  // 24 stored pairs ≤ 2·12 + 16: `half` takes the ring's analysis (with
  // explicit zeros); 24 > 2·0 + 16: `none` is analysed afresh.
  EXPECT_EQ(PrepareSequence(sparse.get(), {&ring, &half, &ring, &none}),
            (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(sparse->analyses(), 2);
}

TEST(SparseKind, ANewCouplingAnalysesTheUnion) {
  const IcfModel even = CoupledTreesProblem(1, kTrees, kDofs, Ring(kTrees, 2, 0));
  const IcfModel odd = CoupledTreesProblem(2, kTrees, kDofs, Ring(kTrees, 2, 1));
  auto sparse = MakeLinearSolver(LinearSolverKind::kSparse);
  // `odd`: 12 pairs not analysed, the union of 24 (≤ 2·12 + 16); then both
  // lie inside it.
  EXPECT_EQ(PrepareSequence(sparse.get(), {&even, &odd, &even, &odd}),
            (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(sparse->analyses(), 2);
}

TEST(SparseKind, ANewTreeStructureIsANewAnalysis) {
  // The same nv and no coupling, trees of 4 dofs instead of 2: the blocks
  // of the old pattern do not hold the new trees.
  const IcfModel pairs = CoupledTreesProblem(1, kTrees, kDofs, {});
  const IcfModel quads = CoupledTreesProblem(2, kTrees / 2, 2 * kDofs, {});
  ASSERT_EQ(pairs.nv, quads.nv);
  auto sparse = MakeLinearSolver(LinearSolverKind::kSparse);
  EXPECT_EQ(PrepareSequence(sparse.get(), {&pairs, &quads}), (std::vector<bool>{true, true}));
}

}  // namespace
}  // namespace mjcenic::icf
