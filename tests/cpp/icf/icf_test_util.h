// Builders of ICF problems for the tests, without MuJoCo: a seeded random
// generator, a random SPD mass matrix block diagonal over cliques, random
// constraint Jacobians, and dense views of J and A for finite-difference and
// closed-form checks; for the linear solvers (icf/linear/), a problem with
// rows inside and across trees and the Hessian H = A + Σ JᵀGJ assembled
// densely from the model's rows, independently of their assembly.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "mjcenic/icf/icf_data.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/icf/linear/linear_solver.h"
#include "mjcenic/icf/row_store.h"

namespace mjcenic::icf {

class Random {
 public:
  explicit Random(unsigned seed) : gen_(seed) {}
  double U(double a, double b) { return std::uniform_real_distribution<double>(a, b)(gen_); }
  double N() { return std::normal_distribution<double>(0.0, 1.0)(gen_); }
  int I(int a, int b) { return std::uniform_int_distribution<int>(a, b)(gen_); }
  double Sign() { return I(0, 1) ? 1.0 : -1.0; }
  Eigen::VectorXd Vec(int n, double scale) {
    Eigen::VectorXd x(n);
    for (int i = 0; i < n; ++i) x[i] = scale * N();
    return x;
  }
  // Sorted random subset of {0..nv-1} with k elements.
  std::vector<int> Subset(int nv, int k) {
    std::vector<int> all(nv);
    for (int i = 0; i < nv; ++i) all[i] = i;
    std::shuffle(all.begin(), all.end(), gen_);
    all.resize(k);
    std::sort(all.begin(), all.end());
    return all;
  }

 private:
  std::mt19937 gen_;
};

// Resets `m` to nv = Σ cliques dofs, with a random SPD mass matrix that is
// block diagonal over the cliques (dense lower triangle per clique, diagonal
// last in each CSR row), random D, K ≥ 0, v0 and f.
inline void MakeBase(IcfModel* m, const std::vector<int>& cliques, Random& rng) {
  int nv = 0;
  for (int n : cliques) nv += n;
  m->Reset(nv);
  m->clique_start = {0};
  for (size_t c = 0; c < cliques.size(); ++c) {
    const int s = m->clique_start.back();
    for (int i = s; i < s + cliques[c]; ++i) m->clique_of_dof[i] = static_cast<int>(c);
    m->clique_start.push_back(s + cliques[c]);
  }
  m->M_colind.clear();
  m->M.clear();
  for (size_t c = 0; c + 1 < m->clique_start.size(); ++c) {
    const int s = m->clique_start[c], n = m->clique_start[c + 1] - s;
    Eigen::MatrixXd B(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) B(i, j) = 0.5 * rng.N();
    Eigen::MatrixXd Mc = B.transpose() * B;
    for (int i = 0; i < n; ++i) Mc(i, i) += rng.U(0.3, 2.0);
    for (int i = 0; i < n; ++i) {
      m->M_rowadr[s + i] = static_cast<int>(m->M.size());
      m->M_rownnz[s + i] = i + 1;
      for (int j = 0; j <= i; ++j) {
        m->M_colind.push_back(s + j);
        m->M.push_back(Mc(i, j));
      }
      m->M_diag[s + i] = Mc(i, i);
    }
  }
  for (int i = 0; i < nv; ++i) {
    m->D[i] = (i % 3 == 0) ? 0.0 : rng.U(0.0, 3.0);
    m->K[i] = (i % 2 == 0) ? rng.U(0.0, 80.0) : 0.0;
    m->v0[i] = 0.2 * rng.N();
    m->f[i] = rng.N();
  }
}

template <int R>
void FillJ(RowStore<R>& rows, int c, Random& rng) {
  double* J = rows.J(c);
  for (int q = 0; q < R * rows.ndof(c); ++q) J[q] = rng.N();
}

// R x nv dense Jacobian of constraint c.
template <int R>
Eigen::MatrixXd DenseJ(const RowStore<R>& rows, int c, int nv) {
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(R, nv);
  const auto dofs = rows.dofs(c);
  const int n = rows.ndof(c);
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < n; ++k) J(r, dofs[k]) = rows.J(c)[r * n + k];
  return J;
}

// Dense A = M + h D + h² K of a finalized model.
inline Eigen::MatrixXd DenseA(const IcfModel& m) {
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(m.nv, m.nv);
  for (int i = 0; i < m.nv; ++i)
    for (int k = 0; k < m.M_rownnz[i]; ++k) {
      const int j = m.M_colind[m.M_rowadr[i] + k];
      A(i, j) = A(j, i) = m.M[m.M_rowadr[i] + k];
    }
  for (int i = 0; i < m.nv; ++i) A(i, i) += m.h * m.D[i] + m.h * m.h * m.K[i];
  return A;
}

// A problem for the linear solvers on trees of the given sizes (MakeBase,
// h = 0.1, so that h² K is comparable to M): a limit violated by 0.05 on
// each tree's first dof (G > 0 at the small velocities used), a gain row (G = h (h kq + kv) > 0 unclamped) over each
// dof list of `gains`, and a compressed contact with friction over each dof
// list of `contacts` (G a full 3 × 3 block near v = 0); every J random.
// A row over dofs of several trees joins them into one island.
inline IcfModel LinearProblem(unsigned seed, const std::vector<int>& trees,
                              const std::vector<std::vector<int>>& gains = {},
                              const std::vector<std::vector<int>>& contacts = {}) {
  Random rng(seed);
  IcfModel m;
  MakeBase(&m, trees, rng);
  for (size_t c = 0; c + 1 < m.clique_start.size(); ++c) {
    const int dof = m.clique_start[c];
    m.limits.rows.J(m.limits.Add(std::vector<int>{dof}, -0.05, 1 / m.M_diag[dof]))[0] = 1.0;
  }
  for (const auto& dofs : gains)
    FillJ(m.gains.rows, m.gains.Add(dofs, 0.5, 100, 2, -1e9, 1e9), rng);
  for (const auto& dofs : contacts)
    FillJ(m.contacts.rows, m.contacts.Add(dofs, 10.0, 1e4, 0.5, 0.5, 0.5, 2.65e-3), rng);
  m.Finalize(0.1);
  return m;
}

// The dofs [first, last) (a dof list for LinearProblem).
inline std::vector<int> DofRange(int first, int last) {
  std::vector<int> dofs;
  for (int i = first; i < last; ++i) dofs.push_back(i);
  return dofs;
}

// H = A + Σ_i J_iᵀ G_i J_i at the constraint Hessians G_i of `d`, dense,
// from the model's rows (DenseA, DenseJ): the truth the linear solvers'
// assemblies are compared with.
inline Eigen::MatrixXd IndependentHessian(const IcfModel& m, const IcfData& d) {
  Eigen::MatrixXd H = DenseA(m);
  ForEachPool(m, d, [&](const auto& pool, const auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c) {
      const Eigen::MatrixXd J = DenseJ(pool.rows, c, m.nv);
      using GR = Eigen::Matrix<double, R, R, Eigen::RowMajor>;
      const Eigen::Map<const GR> G(pd.G.data() + R * R * c);
      H += J.transpose() * G * J;
    }
  });
  return H;
}

// Constraints of `d` whose G_i is not 0 (rows that add to H).
inline int ActiveRows(const IcfModel& m, const IcfData& d) {
  int active = 0;
  ForEachPool(m, d, [&](const auto& pool, const auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c)
      for (int q = 0; q < R * R; ++q)
        if (pd.G[R * R * c + q] != 0) {
          ++active;
          break;
        }
  });
  return active;
}

// |w − w_ref| / |w_ref| for the Newton direction w = −H⁻¹∇ℓ(v) of `kind`
// (IcfSolver::SearchDirection) and w_ref of Eigen's LLT of
// IndependentHessian; *active (optional): ActiveRows at v.
inline double DirectionError(const IcfModel& m, const Eigen::VectorXd& v, LinearSolverKind kind,
                             int* active = nullptr) {
  IcfSolver s;
  Eigen::VectorXd w(m.nv);
  if (!s.SearchDirection(m, v.data(), kind, w.data()))
    return std::numeric_limits<double>::infinity();
  const Eigen::Map<const Eigen::VectorXd> g(s.data().grad.data(), m.nv);
  const Eigen::VectorXd w_ref = IndependentHessian(m, s.data()).llt().solve(-g);
  if (active) *active = ActiveRows(m, s.data());
  return (w - w_ref).norm() / w_ref.norm();
}

// A fixed right-hand side b_i = sin(1.3 i + 0.4).
inline Eigen::VectorXd RightHandSide(int nv) {
  Eigen::VectorXd b(nv);
  for (int i = 0; i < nv; ++i) b[i] = std::sin(1.3 * i + 0.4);
  return b;
}

// Relative residual |H x − b| / |b| of `solver`'s last factorization for
// b = RightHandSide, H = IndependentHessian(m, d).
inline double SolveResidual(LinearSolver* solver, const IcfModel& m, const IcfData& d) {
  const Eigen::VectorXd b = RightHandSide(m.nv);
  Eigen::VectorXd x(m.nv);
  solver->Solve(b.data(), x.data());
  return (IndependentHessian(m, d) * x - b).norm() / b.norm();
}

// LinearProblem on `trees` trees of `dofs` dofs each with a gain row from
// the first dof of tree a to the last dof of tree b for each pair (a, b):
// H's coupling pattern is the graph of `pairs` (and of the `contacts`).
inline IcfModel CoupledTreesProblem(unsigned seed, int trees, int dofs,
                                    const std::vector<std::pair<int, int>>& pairs,
                                    const std::vector<std::vector<int>>& contacts = {}) {
  std::vector<std::vector<int>> gains;
  for (auto [a, b] : pairs) {
    if (a > b) std::swap(a, b);
    gains.push_back({a * dofs, b * dofs + dofs - 1});
  }
  return LinearProblem(seed, std::vector<int>(trees, dofs), gains, contacts);
}

// The pairs (k, k + step mod trees) for k = first, first + every, … below
// trees: every tree (every other one with `every` = 2) coupled to the tree
// `step` ahead, around a ring.
inline std::vector<std::pair<int, int>> Ring(int trees, int every = 1, int first = 0,
                                             int step = 1) {
  std::vector<std::pair<int, int>> pairs;
  for (int k = first; k < trees; k += every) pairs.push_back({k, (k + step) % trees});
  return pairs;
}

// Evaluates m at a small random velocity (seed; contacts stay compressed)
// into *s, then assembles and factorizes H with `solver` and binds it to
// that iterate: SolveResidual, or +∞ if the factorization fails. (Prepare
// is the caller's.)
inline double FactorAndSolve(LinearSolver* solver, const IcfModel& m, IcfSolver* s,
                             unsigned seed) {
  s->Evaluate(m, Random(seed).Vec(m.nv, 0.01).data());
  if (!solver->AssembleAndFactor(m, s->data())) return std::numeric_limits<double>::infinity();
  solver->Bind(m, s->data());
  return SolveResidual(solver, m, s->data());
}

// The Newton system of m solved by `kind` (every icf/linear/<kind>_test.cc):
// the direction of IcfSolver::SearchDirection at a small velocity (seed)
// within 1e-10 of Eigen's, every row of m active there; a fresh solver's
// solve within 1e-12 and, unless its DenseH rebuilds H with the dense
// kind's routine (own_dense_h false), its assembled H within 1e-13 of
// IndependentHessian.
inline void ExpectSolvesTheNewtonSystem(const IcfModel& m, LinearSolverKind kind, unsigned seed,
                                        bool own_dense_h = true) {
  int active = 0;
  EXPECT_LT(DirectionError(m, Random(seed).Vec(m.nv, 0.01), kind, &active), 1e-10)
      << "seed " << seed;
  EXPECT_EQ(active, m.limits.size() + m.gains.size() + m.contacts.size() + m.couplings.size());
  IcfSolver s;
  auto solver = MakeLinearSolver(kind);
  solver->Prepare(m);
  EXPECT_LT(FactorAndSolve(solver.get(), m, &s, seed), 1e-12) << "seed " << seed;
  if (!own_dense_h) return;
  const Eigen::MatrixXd H = IndependentHessian(m, s.data());
  EXPECT_LE((solver->DenseH() - H).cwiseAbs().maxCoeff(), 1e-13 * H.cwiseAbs().maxCoeff())
      << "seed " << seed;
}

// Prepare, then FactorAndSolve (seed 10 + k for the k-th), for each model
// in turn on one solver: what each Prepare returned (true: new storage or a
// new analysis). A residual above 1e-12 is a test failure.
inline std::vector<bool> PrepareSequence(LinearSolver* solver,
                                         const std::vector<const IcfModel*>& models) {
  std::vector<bool> changed;
  IcfSolver s;
  for (size_t k = 0; k < models.size(); ++k) {
    changed.push_back(solver->Prepare(*models[k]));
    EXPECT_LT(FactorAndSolve(solver, *models[k], &s, 10 + k), 1e-12) << "model " << k;
  }
  return changed;
}

// The rule of kinds that skip converged islands (LinearSolver::SetFrozen)
// on m with `dof`'s mass diagonal made −1e3 (its island indefinite): with
// that island frozen, the factorization succeeds (it is not factorized) and
// H x = b gives x = 0 on its dofs and H⁻¹b on the others (H is block
// diagonal over islands); unfrozen, the factorization fails.
inline void ExpectFrozenIslandSkipped(LinearSolverKind kind, IcfModel m, int dof) {
  m.M[m.M_rowadr[dof] + m.M_rownnz[dof] - 1] = -1e3;
  const int frozen = m.island_of_clique[m.clique_of_dof[dof]];
  auto solver = MakeLinearSolver(kind);
  IcfSolver s;
  s.Evaluate(m, Random(1).Vec(m.nv, 0.01).data());
  std::vector<char> flags(m.num_islands, 0);
  flags[frozen] = 1;
  solver->Prepare(m);
  EXPECT_TRUE(solver->SetFrozen(flags.data()));
  ASSERT_TRUE(solver->AssembleAndFactor(m, s.data()));
  solver->Bind(m, s.data());
  const Eigen::VectorXd b = RightHandSide(m.nv);
  Eigen::VectorXd x(m.nv);
  solver->Solve(b.data(), x.data());
  Eigen::MatrixXd H = IndependentHessian(m, s.data());
  for (int i = 0; i < m.nv; ++i)
    if (m.island_of_clique[m.clique_of_dof[i]] == frozen) {
      EXPECT_EQ(x[i], 0.0) << "dof " << i;
      H.row(i).setZero();  // the frozen island as the identity: x_ref = b there
      H.col(i).setZero();
      H(i, i) = 1;
      x[i] = b[i];
    }
  const Eigen::VectorXd x_ref = H.llt().solve(b);
  EXPECT_LT((x - x_ref).norm() / x_ref.norm(), 1e-12);
  solver->SetFrozen(nullptr);
  EXPECT_FALSE(solver->AssembleAndFactor(m, s.data()));
}

}  // namespace mjcenic::icf
