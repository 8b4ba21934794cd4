// The block linear solver (icf/linear/block.cc, cenic-math §8.7): a block
// Cholesky over the trees, ordered by minimum degree on the graph of coupled
// trees, with the fill computed once per pattern. Its rules: any tree graph
// (a ring fills in, rows over every tree fill it all) solves exactly; a
// contact over one or two whole 6-dof trees goes straight into its blocks
// (either block orientation); the ordering is kept while the coupled pairs are a subset of the analysed
// ones within 2·(pairs) + 16, a new pair orders the union; frozen islands
// are neither assembled nor factorized and solve to 0. Truth:
// IndependentHessian (icf_test_util.h). Its choice by `auto` and its solves
// on a contact scene: scenes/lowrank_test.cc; frozen islands in a solve:
// scenes/islands_test.cc.
#include <memory>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf/icf_test_util.h"

namespace mjcenic::icf {
namespace {

TEST(BlockKind, SolvesTheNewtonSystemOnARingOfTrees) {
  for (unsigned seed = 1; seed <= 2; ++seed) {
    const IcfModel m = CoupledTreesProblem(seed, 16, 3, Ring(16), {{0, 1, 2, 27, 28, 29}});
    ASSERT_EQ(m.num_islands, 1);
    ExpectSolvesTheNewtonSystem(m, LinearSolverKind::kBlock, seed);
  }
}

TEST(BlockKind, RowsOverEveryTreeFillTheWholeFactor) {
  // A row over every dof and one over three trees: every pair of trees is
  // coupled, H is dense.
  const IcfModel m = LinearProblem(2, {3, 1, 5, 2, 4, 6}, {DofRange(0, 21), {1, 3, 9, 20}});
  ExpectSolvesTheNewtonSystem(m, LinearSolverKind::kBlock, 3);
  IcfSolver s;
  s.Evaluate(m, m.v0.data());
  EXPECT_EQ((IndependentHessian(m, s.data()).array() == 0).count(), 0);
}

TEST(BlockKind, ContactsOnWholeFreeBodiesGoStraightIntoTheirBlocks) {
  // Four 6-dof trees and a 3-dof one: contacts on one whole body and on
  // pairs of whole bodies (both orders of their blocks in the elimination),
  // and one on a body and the small tree (the general path).
  const std::vector<std::vector<int>> contacts = {
      DofRange(0, 6), DofRange(0, 12), DofRange(12, 24), {0, 1, 2, 3, 4, 5, 18, 19, 20, 21, 22, 23},
      {6, 7, 8, 9, 10, 11, 24, 25, 26}};
  ExpectSolvesTheNewtonSystem(LinearProblem(3, {6, 6, 6, 6, 3}, {}, contacts),
                              LinearSolverKind::kBlock, 4);
}

TEST(BlockKind, KeepsItsOrderingWhileTheCouplingsAreASubset) {
  const IcfModel ring = CoupledTreesProblem(1, 20, 3, Ring(20));
  const IcfModel even = CoupledTreesProblem(2, 20, 3, Ring(20, 2, 0));
  const IcfModel odd = CoupledTreesProblem(3, 20, 3, Ring(20, 2, 1));
  const IcfModel none = CoupledTreesProblem(4, 20, 3, {});
  auto block = MakeLinearSolver(LinearSolverKind::kBlock);
  // `odd` adds pairs: the union (the ring) is ordered; `ring`, `even` and
  // `odd` lie inside it; 20 stored pairs > 2·0 + 16: `none` ordered afresh.
  EXPECT_EQ(PrepareSequence(block.get(), {&even, &odd, &ring, &even, &odd, &none}),
            (std::vector<bool>{true, true, false, false, false, true}));
  EXPECT_EQ(block->analyses(), 3);
}

TEST(BlockKind, FrozenIslandsAreSkipped) {
  // Islands: trees 0 and 1 (a contact), tree 2 (dofs 12–17), tree 3.
  const IcfModel m = LinearProblem(5, {6, 6, 6, 6}, {}, {DofRange(0, 12)});
  ASSERT_EQ(m.num_islands, 3);
  ExpectFrozenIslandSkipped(LinearSolverKind::kBlock, m, 14);
}

}  // namespace
}  // namespace mjcenic::icf
