// The islands linear solver (icf/linear/islands.cc): one dense block per
// island (H is block diagonal over islands), dof order below 12 dofs and
// reversed from there (cenic-math §8.4), assembled straight into the
// factor's storage; an island of more than 48 dofs of small trees goes to
// the block kind (§8.7). Its rules: the layout is made again only when the
// partition into islands changes; frozen islands are neither assembled nor
// factorized and solve to 0. Its DenseH rebuilds H with the dense kind's
// routine, so these tests check its solves. Truth: IndependentHessian
// (icf_test_util.h). Islands of a solve on MuJoCo scenes:
// scenes/islands_test.cc.
#include <memory>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf/icf_test_util.h"

namespace mjcenic::icf {
namespace {

// Trees of 3, 4, 2, 5, 8 and 6 dofs (dofs 0, 3, 7, 9, 14, 22 first) and
// gain rows joining trees 0–1 and 4–5: islands of 7, 2, 5 and 14 dofs.
IcfModel FourIslands(unsigned seed) {
  return LinearProblem(seed, {3, 4, 2, 5, 8, 6}, {{0, 5}, {17, 27}});
}

TEST(IslandsKind, SolvesTheNewtonSystemIslandByIsland) {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const IcfModel m = FourIslands(seed);
    ASSERT_EQ(m.num_islands, 4);
    ASSERT_EQ(m.largest_island, 14);  // ≥ 12: a reversed block
    ExpectSolvesTheNewtonSystem(m, LinearSolverKind::kIslands, seed, /*own_dense_h=*/false);
  }
}

TEST(IslandsKind, NewLayoutOnlyWhenThePartitionChanges) {
  const IcfModel m = FourIslands(1);
  const IcfModel same = FourIslands(2);  // other values, the same islands
  // Trees 0–1, 2–3, 4, 5: as many islands, another partition.
  const IcfModel other = LinearProblem(3, {3, 4, 2, 5, 8, 6}, {{0, 5}, {8, 12}});
  ASSERT_EQ(other.num_islands, m.num_islands);
  auto islands = MakeLinearSolver(LinearSolverKind::kIslands);
  EXPECT_EQ(PrepareSequence(islands.get(), {&m, &same, &other, &m}),
            (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(islands->analyses(), 3);
}

TEST(IslandsKind, FrozenIslandsAreSkipped) {
  // Dof 17: in the reversed 14-dof island of trees 4 and 5.
  ExpectFrozenIslandSkipped(LinearSolverKind::kIslands, FourIslands(8), 17);
}

TEST(IslandsKind, ALargeIslandOfSmallTreesGoesToTheBlockKindAndBack) {
  // 20 trees of 3 dofs in a ring (60 > 48 dofs) and a lone tree: the ring's
  // island by block elimination; then the ring cut into pairs, dense blocks.
  const IcfModel ring = CoupledTreesProblem(1, 21, 3, Ring(20));
  const IcfModel pairs = CoupledTreesProblem(2, 21, 3, Ring(20, 2));
  ASSERT_EQ(ring.num_islands, 2);
  ASSERT_EQ(ring.largest_island, 60);
  ASSERT_EQ(pairs.largest_island, 6);
  auto islands = MakeLinearSolver(LinearSolverKind::kIslands);
  EXPECT_EQ(PrepareSequence(islands.get(), {&ring, &ring, &pairs, &ring}),
            (std::vector<bool>{true, false, true, true}));
  ExpectSolvesTheNewtonSystem(ring, LinearSolverKind::kIslands, 6);  // DenseH: the block kind's
}

}  // namespace
}  // namespace mjcenic::icf
