// IcfModel operations on hand-built problems (no MuJoCo).
#include <cmath>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf_test_util.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"

namespace mjcenic::icf {
namespace {

TEST(IcfModel, AddImpulseShiftsTheMomentumBalanceUntilTheNextSetTimeStep) {
  // Without constraints ℓ(v) = ½ vᵀAv − rᵀv, so the minimizer solves A v = r;
  // after AddImpulse(p) it solves A v = r + p. SetTimeStep recomputes r.
  Random rng(7);
  IcfModel m;
  MakeBase(&m, {3, 2}, rng);
  m.Finalize(5e-3);
  const std::vector<double> r0 = m.r;
  const Eigen::VectorXd p = rng.Vec(m.nv, 2.0);
  m.AddImpulse(p.data());
  for (int i = 0; i < m.nv; ++i) EXPECT_EQ(m.r[i], r0[i] + p[i]) << "dof " << i;
  IcfSolver solver;
  SolveStats stats;
  std::vector<double> v(m.nv);
  ASSERT_EQ(solver.Solve(m, m.v0.data(), SolverOptions{}, v.data(), &stats),
            SolveStatus::kConverged);
  const Eigen::VectorXd Av = DenseA(m) * Eigen::Map<const Eigen::VectorXd>(v.data(), m.nv);
  const Eigen::VectorXd rhs = Eigen::Map<const Eigen::VectorXd>(r0.data(), m.nv) + p;
  EXPECT_LT((Av - rhs).norm(), 1e-10 * rhs.norm());
  m.SetTimeStep(5e-3);
  for (int i = 0; i < m.nv; ++i) EXPECT_EQ(m.r[i], r0[i]) << "dof " << i;
}

// Finalize and SetTimeStep skip an empty pool's Lag and SetTimeStep (cenic-math
// §8.9.2), but every pool still takes the step h: a contact
// added afterwards (the stiction anchors' SetAnchor) reads the pool's h.
TEST(IcfModel, EmptyPoolsStillTakeTheTimeStep) {
  Random rng(3);
  IcfModel m;
  MakeBase(&m, {3}, rng);
  m.Finalize(5e-3);
  for (double h : {m.contacts.h, m.gains.h, m.dry_friction.h, m.contact_torques.h})
    EXPECT_EQ(h, 5e-3);
  m.SetTimeStep(2e-3);
  for (double h : {m.contacts.h, m.gains.h, m.dry_friction.h, m.contact_torques.h})
    EXPECT_EQ(h, 2e-3);
  // A gain row added later: its pool takes h (and its κ) at the next SetTimeStep.
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{0, 2}, 0.5, 100, 2, -1, 1), rng);
  m.SetTimeStep(4e-3);
  EXPECT_EQ(m.gains.h, 4e-3);
  EXPECT_EQ(m.gains.kappa[0], 4e-3 * 100 + 2);
}

// ComputeIslands' shortcuts (one clique; no row over two cliques) and its
// union–find: the islands are the connected components of the cliques under
// "a row touches both", numbered in clique order, each with its dof count.
TEST(IcfModel, IslandsOfEveryPathAreTheConnectedComponents) {
  Random rng(11);
  IcfModel m;
  MakeBase(&m, {2, 3, 2}, rng);  // dofs 0-1 | 2-4 | 5-6
  FillJ(m.limits.rows, m.limits.Add(std::vector<int>{1}, 1e-3, 1.0), rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{2, 4}, 0.5, 100, 2, -1, 1), rng);
  FillJ(m.couplings.rows, m.couplings.Add(std::vector<int>{5, 6}, 1e-3, 0.5), rng);
  m.ComputeIslands();  // no row over two cliques
  EXPECT_EQ(m.num_islands, 3);
  EXPECT_EQ(m.island_of_clique, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m.largest_island, 3);
  // A gain row over cliques 0 and 2: {0, 2} and {1}.
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{0, 6}, 0.5, 100, 2, -1, 1), rng);
  m.ComputeIslands();
  EXPECT_EQ(m.num_islands, 2);
  EXPECT_EQ(m.island_of_clique, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(m.largest_island, 4);
  EXPECT_EQ(m.IslandOf(m.gains.rows.dofs(1)), 0);
  EXPECT_EQ(m.IslandOf(m.gains.rows.dofs(0)), 1);
  // The same model after that row is cut again: nothing stale is kept.
  m.gains.Truncate(1);
  m.ComputeIslands();
  EXPECT_EQ(m.num_islands, 3);
  EXPECT_EQ(m.island_of_clique, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(m.largest_island, 3);
  // One clique, with and without rows over several of its dofs.
  IcfModel one;
  MakeBase(&one, {4}, rng);
  one.ComputeIslands();
  EXPECT_EQ(one.num_islands, 1);
  EXPECT_EQ(one.island_of_clique, (std::vector<int>{0}));
  EXPECT_EQ(one.largest_island, 4);
  FillJ(one.gains.rows, one.gains.Add(std::vector<int>{0, 3}, 0.5, 100, 2, -1, 1), rng);
  one.ComputeIslands();
  EXPECT_EQ(one.num_islands, 1);
  EXPECT_EQ(one.largest_island, 4);
}

// HasSmoothRows (the one-island test of the warm start's guess, cenic-math
// §8.1.1) is MarkSmoothIslands' flag on one island: limits and gains, whose
// costs are piecewise quadratic, are not smooth rows; a dry-friction row is.
TEST(IcfModel, LimitsAndGainsAreNotSmoothRowsDryFrictionIs) {
  Random rng(5);
  IcfModel m;
  MakeBase(&m, {5}, rng);
  auto limit = [&](std::vector<int> dofs, double g0) {
    FillJ(m.limits.rows, m.limits.Add(dofs, g0, 0.8), rng);
  };
  limit({1}, 1e-3);
  limit({0, 2, 4}, -2e-3);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{0, 3}, 0.5, 300, 2, -1, 1), rng);
  m.Finalize(5e-3);
  ASSERT_EQ(m.num_islands, 1);
  char smooth = 1;
  m.MarkSmoothIslands(&smooth);
  EXPECT_FALSE(m.HasSmoothRows());
  EXPECT_EQ(smooth, 0);
  FillJ(m.dry_friction.rows, m.dry_friction.Add(std::vector<int>{3}, 0.4), rng);
  m.ComputeIslands();
  m.MarkSmoothIslands(&smooth);
  EXPECT_TRUE(m.HasSmoothRows());
  EXPECT_EQ(smooth, 1);
}


}  // namespace
}  // namespace mjcenic::icf
