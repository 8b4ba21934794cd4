// IcfModel operations on hand-built problems (no MuJoCo).
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

}  // namespace
}  // namespace mjcenic::icf
