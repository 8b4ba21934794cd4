// The dense Cholesky of the Hessian blocks (cenic-math.md §8.4): FactorLower /
// SolveLower (the left-looking column Cholesky up to 128 dofs, Eigen's blocked
// LLT above) against Eigen's LLT on random SPD matrices, on both sides of
// every size switch (SmallCholesky below 12, the fixed-size 3 and 6, the
// islands' old 24/25 and 48 limits, the dense kind's nv < 64, Eigen above
// 128), and a loud failure (false) on matrices that are not SPD.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "icf_test_util.h"
#include "same_solves.h"
#include "mjcenic/icf/linear/internal.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"

namespace mjcenic::icf::detail {
namespace {

const int kSizes[] = {1, 2, 3, 5, 6, 11, 12, 13, 24, 25, 35, 47, 48, 63, 64, 100, 128, 129, 150};

// SPD with condition number about `cond`: Q diag(λ) Qᵀ, λ log-spaced in [1, cond].
Eigen::MatrixXd RandomSpd(int n, double cond, std::mt19937* rng) {
  std::normal_distribution<double> N;
  Eigen::MatrixXd A = Eigen::MatrixXd::NullaryExpr(n, n, [&] { return N(*rng); });
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(A);
  Eigen::MatrixXd Q = qr.householderQ();
  Eigen::VectorXd lambda(n);
  for (int i = 0; i < n; ++i) lambda[i] = std::pow(cond, n > 1 ? double(i) / (n - 1) : 0.0);
  Eigen::MatrixXd H = Q * lambda.asDiagonal() * Q.transpose();
  return 0.5 * (H + H.transpose());
}

// Factorizes the lower triangle of H (column-major copy, upper triangle set
// to a marker) with FactorLower; returns false if it refused.
bool Factor(const Eigen::MatrixXd& H, std::vector<double>* L, std::vector<double>* dinv) {
  const int n = static_cast<int>(H.rows());
  L->assign(static_cast<size_t>(n) * n, 0.0);
  dinv->assign(n, 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) (*L)[static_cast<size_t>(j) * n + i] = i >= j ? H(i, j) : -7.0;
  return FactorLower(L->data(), n, dinv->data());
}

TEST(DenseCholesky, SolvesLikeEigenLltOnRandomSpdMatrices) {
  std::mt19937 rng(19);
  std::normal_distribution<double> N;
  for (int n : kSizes) {
    for (double cond : {10.0, 1e8}) {
      SCOPED_TRACE(testing::Message() << "n = " << n << ", cond = " << cond);
      const Eigen::MatrixXd H = RandomSpd(n, cond, &rng);
      const Eigen::VectorXd b = Eigen::VectorXd::NullaryExpr(n, [&] { return N(rng); });
      std::vector<double> L, dinv;
      ASSERT_TRUE(Factor(H, &L, &dinv));
      Eigen::VectorXd x = b;
      SolveLower(L.data(), n, dinv.data(), x.data());
      const Eigen::LLT<Eigen::MatrixXd> llt(H);
      ASSERT_EQ(llt.info(), Eigen::Success);
      const Eigen::VectorXd xe = llt.solve(b);
      // Backward stable: the residual is at round-off relative to ‖H‖‖x‖,
      // and both solutions agree to round-off times the condition number.
      const double eps = std::numeric_limits<double>::epsilon();
      EXPECT_LE((H * x - b).norm(), 10 * n * eps * H.norm() * x.norm());
      EXPECT_LE((x - xe).norm(), 10 * n * eps * cond * xe.norm());
      // The factor itself: Eigen's L (lower triangle), dinv = 1 / diag, and
      // the strictly upper triangle left alone.
      const Eigen::MatrixXd Le = llt.matrixL();
      double err = 0;
      bool upper_kept = true;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          const double v = L[static_cast<size_t>(j) * n + i];
          if (i >= j) {
            err = std::max(err, std::abs(v - Le(i, j)));
          } else {
            upper_kept = upper_kept && v == -7.0;
          }
        }
      EXPECT_LE(err, 10 * n * eps * std::sqrt(cond) * Le.cwiseAbs().maxCoeff());
      EXPECT_TRUE(upper_kept);
      if (n <= kMaxColumnCholeskyDofs) {
        for (int j = 0; j < n; ++j) {
          EXPECT_NEAR(dinv[j] * L[static_cast<size_t>(j) * n + j], 1.0, 4 * eps);
        }
      }
    }
  }
}

TEST(DenseCholesky, RefusesMatricesThatAreNotPositiveDefinite) {
  std::mt19937 rng(7);
  std::normal_distribution<double> N;
  for (int n : kSizes) {
    SCOPED_TRACE(testing::Message() << "n = " << n);
    const Eigen::MatrixXd H = RandomSpd(n, 100.0, &rng);
    std::vector<double> L, dinv;
    // One negative eigenvalue: H − 2 λ_max v vᵀ along a random unit vector v
    // (its Rayleigh quotient is ≤ λ_max − 2 λ_max < 0).
    Eigen::VectorXd v = Eigen::VectorXd::NullaryExpr(n, [&] { return N(rng); }).normalized();
    const double lmax = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H).eigenvalues().maxCoeff();
    EXPECT_FALSE(Factor(H - 2 * lmax * v * v.transpose(), &L, &dinv));
    // Singular (a zero row and column in the middle), negative last pivot,
    // and a NaN.
    Eigen::MatrixXd S = H;
    S.row(n / 2).setZero();
    S.col(n / 2).setZero();
    EXPECT_FALSE(Factor(S, &L, &dinv));
    Eigen::MatrixXd D = H;
    D(n - 1, n - 1) = -1.0;
    EXPECT_FALSE(Factor(D, &L, &dinv));
    Eigen::MatrixXd X = H;
    X(n - 1, 0) = std::numeric_limits<double>::quiet_NaN();
    if (n == 1) X(0, 0) = std::numeric_limits<double>::quiet_NaN();
    EXPECT_FALSE(Factor(X, &L, &dinv));
  }
}

TEST(DenseCholesky, FixedSizeBlocksGiveTheSameBitsAsTheGeneralLoops) {
  // SmallCholesky's 3 × 3 and 6 × 6 paths promise the general loops' exact
  // result (the same operations in the same order), so switching them on
  // changes no trajectory.
  std::mt19937 rng(3);
  for (int n : {3, 6}) {
    const Eigen::MatrixXd H = RandomSpd(n, 1e4, &rng);
    std::vector<double> a(H.data(), H.data() + n * n), b = a, da(n), db(n);
    ASSERT_TRUE(SmallCholesky(a.data(), n, da.data()));
    ASSERT_TRUE(SmallCholeskyLoops(b.data(), n, db.data()));
    EXPECT_EQ(a, b);
    EXPECT_EQ(da, db);
  }
}

TEST(DenseCholesky, ReversedDofOrderOfTheDenseAndIslandKindsSolvesTheSameSystem) {
  // The dense kind and islands of >= 12 dofs store dof i at the mirrored
  // position (§8.4): their H (DenseH, back in dof order) and their Newton
  // direction must be those of CHOLMOD (the sparse kind, dof order). Two
  // islands: a 14-dof clique, and a 13-dof clique coupled to a 5-dof one.
  Random rng(5);
  IcfModel m;
  MakeBase(&m, {14, 13, 5}, rng);
  const std::vector<std::vector<int>> contacts = {
      {0, 3, 7, 13}, {2, 5, 6, 9, 11, 12}, {14, 18, 21, 26}, {16, 20, 25, 27, 29}, {15, 30, 31}};
  for (const auto& dofs : contacts) {
    const int c = m.contacts.Add(dofs, 10.0, 1e4, 0.5, 0.5, 0.5, 2.65e-3);
    FillJ(m.contacts.rows, c, rng);
  }
  m.Finalize(5e-3);
  ASSERT_STREQ(m.Validate(), "");
  ASSERT_EQ(m.num_islands, 2);
  ASSERT_EQ(m.largest_island, 18);
  const Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv) + rng.Vec(m.nv, 0.05);
  IcfSolver s;
  Eigen::VectorXd w_sparse(m.nv), w_dense(m.nv), w_islands(m.nv);
  ASSERT_TRUE(s.SearchDirection(m, v.data(), LinearSolverKind::kSparse, w_sparse.data()));
  const Eigen::VectorXd g = Eigen::Map<const Eigen::VectorXd>(s.data().grad.data(), m.nv);
  ASSERT_TRUE(s.SearchDirection(m, v.data(), LinearSolverKind::kDense, w_dense.data()));
  ASSERT_TRUE(s.SearchDirection(m, v.data(), LinearSolverKind::kIslands, w_islands.data()));
  auto sparse = MakeLinearSolver(LinearSolverKind::kSparse);
  auto dense = MakeLinearSolver(LinearSolverKind::kDense);
  auto islands = MakeLinearSolver(LinearSolverKind::kIslands);
  for (auto* f : {sparse.get(), dense.get(), islands.get()}) {
    f->Prepare(m);
    ASSERT_TRUE(f->AssembleAndFactor(m, s.data()));
  }
  const Eigen::MatrixXd H = sparse->DenseH();
  // Contacts couple dofs 0 and 13 (inside island 0), and nothing crosses islands.
  EXPECT_NE(H(13, 0), 0.0);
  EXPECT_EQ(H(14, 0), 0.0);
  const double scale = H.cwiseAbs().maxCoeff();
  EXPECT_LE((dense->DenseH() - H).cwiseAbs().maxCoeff(), 1e-14 * scale);
  EXPECT_LE((islands->DenseH() - H).cwiseAbs().maxCoeff(), 1e-14 * scale);
  // DenseH does not test the islands kind's assembly: it rebuilds H with
  // AccumulateHessian, the dense kind's routine, while the factor is built
  // from H assembled straight into its storage (linear/islands.cc). Its
  // solves of H x = b do: they agree with the dense kind's for a few b.
  ExpectSameSolves(islands.get(), dense.get(), m.nv);
  EXPECT_LE((H * w_dense + g).norm(), 1e-10 * g.norm());
  EXPECT_LE((H * w_islands + g).norm(), 1e-10 * g.norm());
  EXPECT_LE((w_dense - w_sparse).norm(), 1e-10 * w_sparse.norm());
  EXPECT_LE((w_islands - w_sparse).norm(), 1e-10 * w_sparse.norm());
}

}  // namespace
}  // namespace mjcenic::icf::detail
