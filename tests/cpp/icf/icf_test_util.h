// Builders of ICF problems for the tests, without MuJoCo: a seeded random
// generator, a random SPD mass matrix block diagonal over cliques, random
// constraint Jacobians, and dense views of J and A for finite-difference and
// closed-form checks.
#pragma once

#include <algorithm>
#include <random>
#include <vector>

#include <Eigen/Dense>

#include "mjcenic/icf/icf_model.h"
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

}  // namespace mjcenic::icf
