// Helpers shared by the linear solvers of the ICF Hessian (linear/*.cc,
// one solver per file; the factory and the auto rules are in linear_solver.cc).
// Internal to mjcenic_icf: not part of any public interface.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <type_traits>
#include <vector>

#include "mjcenic/icf/linear/linear_solver.h"

namespace mjcenic::icf::detail {

// SmallCholesky's loops for an order n that is an int or, for the common
// block sizes, a compile-time constant (std::integral_constant): the same
// operations in the same order, so both give the same bits.
template <class Order>
inline bool SmallCholeskyLoops(double* L, Order n, double* dinv) {
  for (int j = 0; j < n; ++j) {
    double d = L[j * n + j];
    for (int k = 0; k < j; ++k) d -= L[k * n + j] * L[k * n + j];
    if (!(d > 0)) return false;
    d = std::sqrt(d);
    L[j * n + j] = d;
    dinv[j] = 1.0 / d;
    for (int i = j + 1; i < n; ++i) {
      double x = L[j * n + i];
      for (int k = 0; k < j; ++k) x -= L[k * n + i] * L[k * n + j];
      L[j * n + i] = x * dinv[j];
    }
  }
  return true;
}

// In-place Cholesky of the column-major lower triangle of L (n × n);
// dinv[j] = 1 / L_jj. Plain loops: on the small tree blocks of the lowrank
// and block Hessians Eigen's dynamic-size kernels cost more in call overhead
// than in flops (cenic-math §8.6). A free body (6) and a ball joint (3) get
// loops of fixed length (§8.4).
inline bool SmallCholesky(double* L, int n, double* dinv) {
  if (n == 6) return SmallCholeskyLoops(L, std::integral_constant<int, 6>(), dinv);
  if (n == 3) return SmallCholeskyLoops(L, std::integral_constant<int, 3>(), dinv);
  return SmallCholeskyLoops(L, n, dinv);
}

// SmallCholeskySolve's loops for an int order or a compile-time constant one
// (the same operations in the same order, so the same bits).
template <class Order>
inline void SmallCholeskySolveLoops(const double* L, Order n, const double* dinv, double* x) {
  for (int j = 0; j < n; ++j) {
    const double xj = x[j] * dinv[j];
    x[j] = xj;
    const double* col = L + j * n;
    for (int i = j + 1; i < n; ++i) x[i] -= col[i] * xj;
  }
  for (int j = n - 1; j >= 0; --j) {
    const double* col = L + j * n;
    double s = x[j];
    for (int i = j + 1; i < n; ++i) s -= col[i] * x[i];
    x[j] = s * dinv[j];
  }
}

// x ← (L Lᵀ)⁻¹ x with the factor of SmallCholesky (n × n, column-major lower
// triangle, dinv[j] = 1 / L_jj): forward L y = x by columns, then Lᵀ x = y.
// A free body (6) and a ball joint (3) get loops of fixed length, as in
// SmallCholesky: with a run-time order the vectorizer's alias checks and
// remainder loops cost more than the handful of products (cenic-math §8.9).
inline void SmallCholeskySolve(const double* L, int n, const double* dinv, double* x) {
  if (n == 6) return SmallCholeskySolveLoops(L, std::integral_constant<int, 6>(), dinv, x);
  if (n == 3) return SmallCholeskySolveLoops(L, std::integral_constant<int, 3>(), dinv, x);
  SmallCholeskySolveLoops(L, n, dinv, x);
}

// Below this order SmallCholesky's dot-product loops are the fastest; from it
// on DenseCholesky's column updates (cenic-math §8.4).
inline constexpr int kMinColumnCholeskyDofs = 12;
// Up to this order DenseCholesky beats Eigen's blocked LLT; above it
// FactorLower hands the matrix to Eigen (§8.4).
inline constexpr int kMaxColumnCholeskyDofs = 128;

// In-place Cholesky of the column-major lower triangle of L (n × n), the
// upper triangle untouched; dinv[j] = 1 / L_jj. Returns false, with L
// partly overwritten, if a pivot is not positive (H not numerically SPD, or
// NaN). Left-looking (cenic-math §8.4): column j of the factor is column j of
// H minus Σ_{k<j} L_jk L[j.., k], taken four columns k at a time so that each
// pass reads and writes column j once and every inner loop runs over
// contiguous memory (it vectorizes without reassociation). Columns k with
// L_jk = 0 are skipped (exactly: they add nothing), so a tree-sparse H
// ordered leaves first costs far less than n³/6. Small orders use
// SmallCholesky, whose loops cost less for a handful of dofs. Orders above
// kMaxColumnCholeskyDofs are refused (false): FactorLower takes them.
inline bool DenseCholesky(double* L, int n, double* dinv) {
  if (n < kMinColumnCholeskyDofs) return SmallCholesky(L, n, dinv);
  if (n > kMaxColumnCholeskyDofs) return false;  // FactorLower's job
  int nz[kMaxColumnCholeskyDofs];  // the columns k < j with L_jk ≠ 0
  for (int j = 0; j < n; ++j) {
    double* __restrict cj = L + static_cast<size_t>(j) * n;
    int m = 0;
    for (int k = 0; k < j; ++k)
      if (L[static_cast<size_t>(k) * n + j] != 0.0) nz[m++] = k;
    int p = 0;
    for (; p + 3 < m; p += 4) {
      const double* __restrict c0 = L + static_cast<size_t>(nz[p]) * n;
      const double* __restrict c1 = L + static_cast<size_t>(nz[p + 1]) * n;
      const double* __restrict c2 = L + static_cast<size_t>(nz[p + 2]) * n;
      const double* __restrict c3 = L + static_cast<size_t>(nz[p + 3]) * n;
      const double s0 = c0[j], s1 = c1[j], s2 = c2[j], s3 = c3[j];
      for (int i = j; i < n; ++i) cj[i] -= (s0 * c0[i] + s1 * c1[i]) + (s2 * c2[i] + s3 * c3[i]);
    }
    for (; p < m; ++p) {
      const double* __restrict ck = L + static_cast<size_t>(nz[p]) * n;
      const double s = ck[j];
      for (int i = j; i < n; ++i) cj[i] -= s * ck[i];
    }
    const double d = cj[j];
    if (!(d > 0)) return false;
    const double r = std::sqrt(d), inv = 1.0 / r;
    cj[j] = r;
    dinv[j] = inv;
    for (int i = j + 1; i < n; ++i) cj[i] *= inv;
  }
  return true;
}

// x ← (L Lᵀ)⁻¹ x with the factor of DenseCholesky. The backward pass keeps
// two partial sums (contiguous dot products of columns of L with x).
inline void DenseCholeskySolve(const double* L, int n, const double* dinv, double* x) {
  if (n < kMinColumnCholeskyDofs) return SmallCholeskySolve(L, n, dinv, x);
  for (int j = 0; j < n; ++j) {
    const double xj = x[j] * dinv[j];
    x[j] = xj;
    const double* __restrict col = L + static_cast<size_t>(j) * n;
    for (int i = j + 1; i < n; ++i) x[i] -= col[i] * xj;
  }
  for (int j = n - 1; j >= 0; --j) {
    const double* col = L + static_cast<size_t>(j) * n;
    double s0 = 0, s1 = 0;
    int i = j + 1;
    for (; i + 1 < n; i += 2) {
      s0 += col[i] * x[i];
      s1 += col[i + 1] * x[i + 1];
    }
    if (i < n) s0 += col[i] * x[i];
    x[j] = (x[j] - (s0 + s1)) * dinv[j];
  }
}

// Cholesky of a dense SPD block of any order, in place on the column-major
// lower triangle of L: DenseCholesky up to kMaxColumnCholeskyDofs, Eigen's
// blocked LLT above (dinv is then left alone). False if not SPD (or NaN).
inline bool FactorLower(double* L, int n, double* dinv) {
  if (n <= kMaxColumnCholeskyDofs) return DenseCholesky(L, n, dinv);
  Eigen::Map<Eigen::MatrixXd> Lm(L, n, n);
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(Lm);
  if (llt.info() != Eigen::Success) return false;
  // Eigen only refuses pivots ≤ 0; a NaN in H reaches the diagonal of L.
  for (int j = 0; j < n; ++j)
    if (!std::isfinite(Lm(j, j))) return false;
  return true;
}

// x ← (L Lᵀ)⁻¹ x with the factor of FactorLower (same n, L, dinv).
inline void SolveLower(const double* L, int n, const double* dinv, double* x) {
  if (n <= kMaxColumnCholeskyDofs) return DenseCholeskySolve(L, n, dinv, x);
  Eigen::Map<const Eigen::MatrixXd> Lm(L, n, n);
  Eigen::Map<Eigen::VectorXd> X(x, n);
  Lm.triangularView<Eigen::Lower>().solveInPlace(X);
  Lm.triangularView<Eigen::Lower>().adjoint().solveInPlace(X);
}

// The distinct pairs of cliques (trees) that some constraint couples, sorted,
// packed (a << 32) | b with a > b when `lower`, else a < b (cenic-math §8.4).
// *cliques is scratch. The coupling pattern of the PCG, sparse and block
// Hessians.
inline void CoupledCliquePairs(const IcfModel& m, bool lower, std::vector<int>* cliques,
                        std::vector<std::uint64_t>* pairs) {
  pairs->clear();
  auto collect = [&](const auto& pool) {
    for (int c = 0; c < pool.size(); ++c) {
      cliques->clear();
      for (int dof : pool.rows.dofs(c)) {  // dofs ascending, so cliques ascending
        const int q = m.clique_of_dof[dof];
        if (cliques->empty() || cliques->back() != q) cliques->push_back(q);
      }
      for (size_t a = 1; a < cliques->size(); ++a)
        for (size_t b = 0; b < a; ++b) {
          const std::uint64_t hi = (*cliques)[lower ? a : b], lo = (*cliques)[lower ? b : a];
          pairs->push_back((hi << 32) | lo);
        }
    }
  };
  ForEachPool(m, collect);
  std::sort(pairs->begin(), pairs->end());
  pairs->erase(std::unique(pairs->begin(), pairs->end()), pairs->end());
}

// True if the n values are all 0 (a constraint block G_i that adds nothing
// to H: an open contact, an inactive limit).
inline bool AllZero(const double* G, int n) {
  for (int q = 0; q < n; ++q)
    if (G[q] != 0.0) return false;
  return true;
}

// The sparse kinds' pattern reuse (cenic-math §8.4): with the same tree
// structure, a coupling set `pairs` (sorted) that the analysed set `stored`
// already covers, and `stored` not much larger, keeps the analysis (false).
// Otherwise `stored` becomes the union of both while that stays within the
// budget, else `pairs` (true: analyse `stored` anew). `merged` is scratch.
inline bool UpdateCouplingPattern(bool same_structure, const std::vector<std::uint64_t>& pairs,
                                  std::vector<std::uint64_t>* stored,
                                  std::vector<std::uint64_t>* merged) {
  const bool subset =
      same_structure && std::includes(stored->begin(), stored->end(), pairs.begin(), pairs.end());
  const size_t budget = 2 * pairs.size() + 16;
  if (subset && stored->size() <= budget) return false;
  merged->clear();
  if (same_structure)
    std::set_union(stored->begin(), stored->end(), pairs.begin(), pairs.end(),
                   std::back_inserter(*merged));
  if (merged->size() > budget || merged->empty()) *merged = pairs;
  *stored = *merged;
  return true;
}

// Calls f(pool, c, G, dofs) for every constraint c of every pool with
// G_c ≠ 0, at least one dof, and keep(its first dof); G is the pool's R × R
// block of constraint c. The shared walk of the Hessian assemblies below.
template <class F, class Keep>
void ForEachActiveConstraint(const IcfModel& m, const IcfData& d, Keep&& keep, F&& f) {
  auto visit = [&](const auto& pool, const auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c) {
      const double* G = pd.G.data() + R * R * c;
      if (AllZero(G, R * R)) continue;
      const auto dofs = pool.rows.dofs(c);
      if (dofs.empty() || !keep(dofs[0])) continue;
      f(pool, c, G, dofs);
    }
  };
  ForEachPool(m, const_cast<IcfData&>(d), visit);
}

// True if G (R × R) is g e₀e₀ᵀ: RowStore::CongruenceTransform's rank-one case.
template <int R>
inline bool RankOneG(const double* G) {
  for (int q = 1; q < R * R; ++q)
    if (G[q] != 0.0) return false;
  return true;
}

// Calls sink(a, b, x), b ≤ a < n, with x = (J_iᵀ G J_i)_ab for a constraint
// of R rows over n ≤ Cap dofs (J row-major R × n, Cap ≤ 64, G not rank-one):
// the sums of RowStore::CongruenceTransform in its order, so x has the same
// bits as its block entry B[a n + b] (cenic-math §8.9), without the block.
template <int R, int Cap, class Sink>
inline void CongruenceTermsUpTo(const double* J, const double* G, int n, Sink&& sink) {
  static_assert(Cap <= 64);
  double GJ[R * Cap];  // rows of G J
  for (int r = 0; r < R; ++r)
    for (int k = 0; k < n; ++k) {
      double s = 0;
      for (int q = 0; q < R; ++q) s += G[r * R + q] * J[q * n + k];
      GJ[r * Cap + k] = s;
    }
  for (int a = 0; a < n; ++a) {
    double ja[R];
    for (int r = 0; r < R; ++r) ja[r] = J[r * n + a];
    for (int b = 0; b <= a; ++b) {
      double s = 0;
      for (int r = 0; r < R; ++r) s += ja[r] * GJ[r * Cap + b];
      sink(a, b, s);
    }
  }
}

// CongruenceTermsUpTo for a constraint over exactly N dofs (fixed-size loops).
template <int R, int N, class Sink>
inline void CongruenceTerms(const double* J, const double* G, Sink&& sink) {
  CongruenceTermsUpTo<R, N>(J, G, N, sink);
}

// CongruenceTerms for a rank-one G = g e₀e₀ᵀ (RankOneG): x = J₀_a (g J₀_b),
// RowStore::CongruenceTransform's rank-one product, to the bit.
template <int N, class Sink>
inline void CongruenceTermsRankOne(const double* J, const double* G, Sink&& sink) {
  double gJ[N];
  for (int k = 0; k < N; ++k) gJ[k] = G[0] * J[k];
  for (int a = 0; a < N; ++a)
    for (int b = 0; b <= a; ++b) sink(a, b, J[a] * gJ[b]);
}

// Calls f(dofs, B) for every constraint with G_i ≠ 0, a dof, and keep(its
// first dof): B (n × n, row-major, in *scratch) is J_iᵀ G_i J_i over its dofs.
// A constraint for which direct(pool, c, G, dofs) returns true is left to it
// (a caller that adds the terms itself, e.g. CongruenceTerms).
template <class F, class Keep, class Direct>
void ForEachConstraintHessian(const IcfModel& m, const IcfData& d, std::vector<double>* scratch,
                              F&& f, Keep&& keep, Direct&& direct) {
  ForEachActiveConstraint(m, d, keep, [&](const auto& pool, int c, const double* G, const auto& dofs) {
    if (direct(pool, c, G, dofs)) return;
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    const int n = static_cast<int>(dofs.size());
    if (static_cast<int>(scratch->size()) < n * n) scratch->resize(n * n);
    double* B = scratch->data();
    if constexpr (R == 1) {
      if (n == 1) {  // a joint limit or actuator: CongruenceTransform's two sums, inline
        const double J = pool.rows.J(c)[0];
        double gj = 0, b = 0;
        gj += G[0] * J;
        b += J * gj;
        B[0] = b;
        f(dofs, static_cast<const double*>(B));
        return;
      }
    }
    pool.rows.CongruenceTransform(c, G, B);
    f(dofs, static_cast<const double*>(B));
  });
}

template <class F, class Keep>
void ForEachConstraintHessian(const IcfModel& m, const IcfData& d, std::vector<double>* scratch,
                              F&& f, Keep&& keep) {
  ForEachConstraintHessian(m, d, scratch, std::forward<F>(f), std::forward<Keep>(keep),
                           [](const auto&, int, const double*, const auto&) { return false; });
}

// Calls sink(i, j, value), i ≥ j, for every lower-triangle term of the
// constraint part Σ_i J_iᵀ G_i J_i of H (constraints with G_i = 0 skipped).
// `keep(dof)` selects the constraints, by their first dof. Each term is
// RowStore::CongruenceTransform's sum, in its order, computed when it is
// passed on (no block stored and re-read; cenic-math §8.9); constraints over
// more dofs than its column chunk go through the block.
// The same walk with a sink per constraint: begin(dofs) returns term(a, b, x)
// for the positions a ≥ b in dofs (a caller that maps a constraint's dofs
// once, not per term).
template <class Begin, class Keep>
void AccumulateConstraintTerms(const IcfModel& m, const IcfData& d,
                               std::vector<double>* scratch, Begin&& begin, Keep&& keep) {
  constexpr int kChunk = 64;  // CongruenceTransform's column chunk
  ForEachActiveConstraint(m, d, keep, [&](const auto& pool, int c, const double* G, const auto& dofs) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    const int n = static_cast<int>(dofs.size());
    auto term = begin(dofs);
    if (n > kChunk) {
      if (static_cast<int>(scratch->size()) < n * n) scratch->resize(n * n);
      double* B = scratch->data();
      pool.rows.CongruenceTransform(c, G, B);
      for (int a = 0; a < n; ++a)
        for (int b = 0; b <= a; ++b) term(a, b, B[a * n + b]);
      return;
    }
    CongruenceTermsUpTo<R, kChunk>(pool.rows.J(c), G, n, term);
  });
}

template <class Sink, class Keep>
void AccumulateConstraintHessians(const IcfModel& m, const IcfData& d,
                                  std::vector<double>* scratch, Sink&& sink, Keep&& keep) {
  AccumulateConstraintTerms(
      m, d, scratch,
      [&sink](const auto& dofs) {
        return [&sink, &dofs](int a, int b, double x) { sink(dofs[a], dofs[b], x); };
      },
      std::forward<Keep>(keep));
}

// Calls sink(i, j, value), i ≥ j, for every lower-triangle term of
// H = A + Σ_i J_iᵀ G_i J_i.
// `keep(dof)` selects the rows (and constraints, by their first dof) to add;
// H is block diagonal over islands, so skipping whole islands is exact.
template <class Sink, class Keep>
void AccumulateHessian(const IcfModel& m, const IcfData& d, std::vector<double>* scratch,
                       Sink&& sink, Keep&& keep) {
  for (int i = 0; i < m.nv; ++i) {
    if (!keep(i)) continue;
    const int adr = m.M_rowadr[i], nnz = m.M_rownnz[i];
    for (int k = 0; k < nnz; ++k) sink(i, m.M_colind[adr + k], m.M[adr + k]);
    sink(i, i, m.h * m.D[i] + m.h * m.h * m.K[i]);
  }
  AccumulateConstraintHessians(m, d, scratch, sink, keep);
}

template <class Sink>
void AccumulateHessian(const IcfModel& m, const IcfData& d, std::vector<double>* scratch,
                       Sink&& sink) {
  AccumulateHessian(m, d, scratch, std::forward<Sink>(sink), [](int) { return true; });
}

// True when M's rows (M_rowadr, M_rownnz, M_colind) have the kinematic-tree
// layout: row i is the row of its parent dof followed by i (cenic-math §8.8).
bool MassMatrixHasTreeLayout(const IcfModel& m);

// One factory per linear solver kind (linear/<kind>.cc).
std::unique_ptr<LinearSolver> MakeDenseSolver();
std::unique_ptr<LinearSolver> MakePcgSolver(double tolerance, int max_iterations);
std::unique_ptr<LinearSolver> MakeSparseSolver();
std::unique_ptr<LinearSolver> MakeLowRankSolver();
std::unique_ptr<LinearSolver> MakeBlockSolver();
std::unique_ptr<LinearSolver> MakeIslandsSolver();
std::unique_ptr<LinearSolver> MakeTreeSolver();

}  // namespace mjcenic::icf::detail
