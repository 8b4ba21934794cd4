// The lowrank linear solver of the ICF Hessian (see linear_solver.h).
#include "mjcenic/icf/linear/internal.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

namespace mjcenic::icf::detail {

namespace {

// --------------------------------------------------------------- low rank --

// H = B + V Vᵀ (cenic-math.md §8.6): B is block diagonal over the cliques
// (A plus every constraint whose dofs lie in one tree), V has one column per
// nonzero direction of G_i for the constraints that couple trees
// (V = J_iᵀ F_i with G_i = F_i F_iᵀ). Solves use the Woodbury identity
// H⁻¹ = B⁻¹ − B⁻¹V C⁻¹ VᵀB⁻¹ with the capacitance C = I + VᵀB⁻¹V (r × r,
// SPD), so a factorization costs Σ n_c³/3 for the blocks plus r³/3 for C:
// for a few wide coupling rows (tendons through many trees, a handful of
// body–body contacts) far less than a sparse Cholesky that fills in.
class LowRankSolver final : public LinearSolver {
 public:
  bool Prepare(const IcfModel& m) override {
    const int nv = m.nv;
    const bool changed = nv != n_ || clique_start_ != m.clique_start;
    if (changed) {
      n_ = nv;
      clique_start_ = m.clique_start;
      clique_of_dof_ = m.clique_of_dof;
      const int nc = static_cast<int>(clique_start_.size()) - 1;
      boff_.assign(nc + 1, 0);
      for (int c = 0; c < nc; ++c) {
        const size_t n = clique_start_[c + 1] - clique_start_[c];
        boff_[c + 1] = boff_[c] + n * n;
      }
      H_.assign(boff_[nc], 0.0);
      L_.assign(boff_[nc], 0.0);
      // No factor yet: NaN never matches an assembled block that factorized.
      Hf_.assign(boff_[nc], std::numeric_limits<double>::quiet_NaN());
      z_.assign(nv, 0.0);
      dinv_.assign(nv, 0.0);
      clique_count_.assign(nc + 1, 0);
      ++pattern_id_;
      ++analyses_;
    }
    // Room for this model's coupling columns (grows only): at most R columns
    // per coupling constraint, each holding its trees' full dof ranges.
    size_t cols = 0, values = 0, segs = 0;
    auto count = [&](const auto& pool) {
      constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
      for (int c = 0; c < pool.size(); ++c) {
        const auto dofs = pool.rows.dofs(c);
        if (dofs.empty() || m.clique_of_dof[dofs.front()] == m.clique_of_dof[dofs.back()]) continue;
        size_t width = 0, nseg = 0;
        int last = -1;
        for (int dof : dofs) {
          const int q = m.clique_of_dof[dof];
          if (q == last) continue;
          last = q;
          width += clique_start_[q + 1] - clique_start_[q];
          ++nseg;
        }
        cols += R;
        values += R * width;
        segs += R * nseg;
      }
    };
    ForEachPool(m, count);
    Grow(&seg_adr_, cols + 1);
    Grow(&seg_clique_, segs);
    Grow(&seg_off_, segs);
    Grow(&by_clique_, segs);
    Grow(&V_, values);
    Grow(&Y_, values);
    Grow(&C_, cols * cols);
    Grow(&t_, cols);
    Grow(&cdinv_, cols);
    // A = M + h D + h² K in the tree blocks, once per solve: a Newton
    // iteration's assembly starts from a copy of it instead of scattering M
    // again (A is constant while the model is; the same sums, so the same
    // bits, cenic-math §8.9).
    A_.assign(boff_[clique_start_.size() - 1], 0.0);
    for (int i = 0; i < m.nv; ++i) {
      const int adr = m.M_rowadr[i], nnz = m.M_rownnz[i];
      for (int k = 0; k < nnz; ++k) AddTo(&A_, i, m.M_colind[adr + k], m.M[adr + k]);
      AddTo(&A_, i, i, m.h * m.D[i] + m.h * m.h * m.K[i]);
    }
    return changed;
  }

  // One pool's JᵀGJ: a constraint inside one tree into H_'s block, one
  // coupling several trees as the columns V = Jᵀ F of G = F Fᵀ (segments
  // over its trees' dof ranges; r_, *nseg, *nval advance).
  template <class Pool, class Data>
  void AddPool(const Pool& pool, const Data& pd, size_t* nseg_out, size_t* nval_out) {
    size_t nseg = *nseg_out, nval = *nval_out;
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    using MatR = Eigen::Matrix<double, R, R>;
    for (int c = 0; c < pool.size(); ++c) {
      const double* G = pd.G.data() + R * R * c;
      if (AllZero(G, R * R)) continue;
      const auto dofs = pool.rows.dofs(c);
      if (dofs.empty()) continue;
      const int n = static_cast<int>(dofs.size());
      if (clique_of_dof_[dofs.front()] == clique_of_dof_[dofs.back()]) {
        if (static_cast<int>(block_.size()) < n * n) block_.resize(n * n);
        pool.rows.CongruenceTransform(c, G, block_.data());
        for (int a = 0; a < n; ++a)
          for (int b = 0; b <= a; ++b) AddTo(&H_, dofs[a], dofs[b], block_[a * n + b]);
        continue;
      }
      // G = F Fᵀ from a pivoted LDLᵀ (G is PSD: the constraint costs are
      // convex); directions with D ≤ 0 carry no curvature and are dropped.
      MatR F;
      if constexpr (R == 1) {
        if (!(G[0] > 0)) continue;
        F(0, 0) = std::sqrt(G[0]);
      } else {
        const MatR Gm = Eigen::Map<const Eigen::Matrix<double, R, R, Eigen::RowMajor>>(G);
        const Eigen::LDLT<MatR> ldlt(0.5 * (Gm + Gm.transpose()));
        MatR LD = ldlt.matrixL();
        for (int q = 0; q < R; ++q) LD.col(q) *= std::sqrt(std::max(ldlt.vectorD()[q], 0.0));
        F = ldlt.transpositionsP().transpose() * LD;
      }
      const double* J = pool.rows.J(c);
      for (int q = 0; q < R; ++q) {
        if (F.col(q).squaredNorm() == 0) continue;
        // Column V = Jᵀ f, scattered over the full dof ranges of its trees.
        int last = -1;
        for (int k = 0; k < n; ++k) {
          const int cl = clique_of_dof_[dofs[k]];
          if (cl != last) {
            last = cl;
            const int w = clique_start_[cl + 1] - clique_start_[cl];
            seg_clique_[nseg] = cl;
            seg_off_[nseg] = nval;
            std::fill(V_.begin() + nval, V_.begin() + nval + w, 0.0);
            nval += w;
            ++nseg;
          }
          double s = 0;
          for (int p = 0; p < R; ++p) s += J[p * n + k] * F(p, q);
          V_[seg_off_[nseg - 1] + dofs[k] - clique_start_[cl]] = s;
        }
        seg_adr_[++r_] = nseg;
      }
    }
    *nseg_out = nseg;
    *nval_out = nval;
  }

  // B = LLᵀ per clique block of H_; false if one is not positive definite.
  bool FactorBlocks(int nc) {
    // B = LLᵀ per clique block (in place, lower triangle): the column
    // Cholesky of §8.4, Eigen's blocked LLT above 128 dofs. A block whose
    // bits equal those it had at its last successful factorization keeps
    // that factor (a tree no contact of its own touches: A_c only, the same
    // through a whole step's Newton iterations).
    for (int c = 0; c < nc; ++c) {
      const int n = clique_start_[c + 1] - clique_start_[c];
      if (n == 0) continue;
      const size_t o = boff_[c], len = boff_[c + 1] - o;
      if (std::memcmp(H_.data() + o, Hf_.data() + o, len * sizeof(double)) == 0) continue;
      std::copy(H_.begin() + o, H_.begin() + o + len, L_.begin() + o);
      if (!FactorLower(L_.data() + o, n, dinv_.data() + clique_start_[c])) {
        // L_'s block is partly overwritten: no values may keep it.
        std::fill(Hf_.begin() + o, Hf_.begin() + o + len, std::numeric_limits<double>::quiet_NaN());
        return false;
      }
      std::copy(H_.begin() + o, H_.begin() + o + len, Hf_.begin() + o);
    }
    return true;
  }

  // Y = B⁻¹ V and the lower triangle of C = I + VᵀB⁻¹V (§8.6).
  void FormCapacitance(int nc, size_t nseg) {
    // Y = B⁻¹ V, segment by segment; segments grouped by clique.
    std::fill(clique_count_.begin(), clique_count_.end(), 0);
    for (size_t s = 0; s < nseg; ++s) {
      const int cl = seg_clique_[s], w = clique_start_[cl + 1] - clique_start_[cl];
      std::copy(V_.begin() + seg_off_[s], V_.begin() + seg_off_[s] + w, Y_.begin() + seg_off_[s]);
      BlockSolve(cl, Y_.data() + seg_off_[s]);
      ++clique_count_[cl + 1];
    }
    for (int c = 0; c < nc; ++c) clique_count_[c + 1] += clique_count_[c];
    // Columns are visited in increasing order, so each clique's list ascends.
    for (int k = 0; k < r_; ++k)
      for (int s = seg_adr_[k]; s < seg_adr_[k + 1]; ++s) {
        const int cl = seg_clique_[s];
        by_clique_[clique_count_[cl]++] = (static_cast<std::uint64_t>(k) << 32) | s;
      }
    for (int c = nc; c > 0; --c) clique_count_[c] = clique_count_[c - 1];  // undo the shift
    clique_count_[0] = 0;
    // C = I + VᵀB⁻¹V (lower triangle): only columns sharing a clique meet.
    Eigen::Map<Eigen::MatrixXd> C(C_.data(), r_, r_);
    C.setIdentity();
    for (int c = 0; c < nc; ++c) {
      const int w = clique_start_[c + 1] - clique_start_[c];
      for (int a = clique_count_[c]; a < clique_count_[c + 1]; ++a) {
        const int ka = static_cast<int>(by_clique_[a] >> 32);
        const double* va = V_.data() + seg_off_[by_clique_[a] & 0xffffffffu];
        for (int b = clique_count_[c]; b <= a; ++b) {
          const int kb = static_cast<int>(by_clique_[b] >> 32);
          const double* yb = Y_.data() + seg_off_[by_clique_[b] & 0xffffffffu];
          double s = 0;
          WithWidth(w, [&](auto W) {
            for (int q = 0; q < W; ++q) s += va[q] * yb[q];
          });
          C(ka, kb) += s;
        }
      }
    }
  }

  bool AssembleAndFactor(const IcfModel& m, const IcfData& d) override {
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    std::copy(A_.begin(), A_.end(), H_.begin());  // A, assembled by Prepare
    r_ = 0;
    size_t nseg = 0, nval = 0;
    seg_adr_[0] = 0;
    ForEachPool(m, d, [&](const auto& pool, const auto& pd) { AddPool(pool, pd, &nseg, &nval); });
    if (!FactorBlocks(nc)) return false;
    FormCapacitance(nc, nseg);
    // C = I + VᵀB⁻¹V by the column Cholesky of §8.4 (C's zeros, between
    // coupling columns that share no tree, are skipped).
    return r_ == 0 || FactorLower(C_.data(), r_, cdinv_.data());
  }

  void Solve(const double* b, double* x) override {
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    std::copy(b, b + n_, z_.begin());
    for (int c = 0; c < nc; ++c) BlockSolve(c, z_.data() + clique_start_[c]);  // z = B⁻¹ b
    if (r_ > 0) {
      for (int k = 0; k < r_; ++k) {  // t = Vᵀ z
        double s = 0;
        for (int sg = seg_adr_[k]; sg < seg_adr_[k + 1]; ++sg) {
          const int cl = seg_clique_[sg], s0 = clique_start_[cl], w = clique_start_[cl + 1] - s0;
          const double* v = V_.data() + seg_off_[sg];
          const double* z = z_.data() + s0;
          WithWidth(w, [&](auto W) {
            for (int q = 0; q < W; ++q) s += v[q] * z[q];
          });
        }
        t_[k] = s;
      }
      SolveLower(C_.data(), r_, cdinv_.data(), t_.data());
      for (int k = 0; k < r_; ++k)  // z −= B⁻¹V t
        for (int sg = seg_adr_[k]; sg < seg_adr_[k + 1]; ++sg) {
          const int cl = seg_clique_[sg], s0 = clique_start_[cl], w = clique_start_[cl + 1] - s0;
          const double* y = Y_.data() + seg_off_[sg];
          double* z = z_.data() + s0;
          const double tk = t_[k];
          WithWidth(w, [&](auto W) {
            for (int q = 0; q < W; ++q) z[q] -= tk * y[q];
          });
        }
    }
    std::copy(z_.begin(), z_.begin() + n_, x);
  }

  Eigen::MatrixXd DenseH() const override {
    Eigen::MatrixXd full = Eigen::MatrixXd::Zero(n_, n_);
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    for (int c = 0; c < nc; ++c) {
      const int s = clique_start_[c], n = clique_start_[c + 1] - s;
      for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) full(s + i, s + j) = full(s + j, s + i) = H_[boff_[c] + j * n + i];
    }
    Eigen::VectorXd v(n_);
    for (int k = 0; k < r_; ++k) {
      v.setZero();
      for (int sg = seg_adr_[k]; sg < seg_adr_[k + 1]; ++sg) {
        const int cl = seg_clique_[sg], s0 = clique_start_[cl], w = clique_start_[cl + 1] - s0;
        for (int q = 0; q < w; ++q) v[s0 + q] = V_[seg_off_[sg] + q];
      }
      full += v * v.transpose();
    }
    return full;
  }

  // Coupling columns of the last factorization (tests, diagnostics).
  int rank() const { return r_; }

 private:
  template <class T>
  static void Grow(std::vector<T>* v, size_t n) {
    if (v->size() < n) v->resize(n);
  }
  // f(w) with w a compile-time constant for a free body's 6 dofs (the same
  // loop, unrolled: a run-time trip count of 6 costs more in the
  // vectorizer's checks than in products, cenic-math §8.9), else the int.
  template <class F>
  static void WithWidth(int w, F&& f) {
    if (w == 6) f(std::integral_constant<int, 6>());
    else f(w);
  }
  // (*T)(i, j) += x in the tree blocks (i ≥ j, same clique; column-major,
  // lower triangle).
  void AddTo(std::vector<double>* T, int i, int j, double x) const {
    const int c = clique_of_dof_[i], s = clique_start_[c], n = clique_start_[c + 1] - s;
    (*T)[boff_[c] + static_cast<size_t>(j - s) * n + (i - s)] += x;
  }
  // y ← B_c⁻¹ y on clique c's factored block.
  void BlockSolve(int c, double* y) const {
    const int n = clique_start_[c + 1] - clique_start_[c];
    if (n == 0) return;
    SolveLower(L_.data() + boff_[c], n, dinv_.data() + clique_start_[c], y);
  }

  int n_ = -1, r_ = 0;
  std::vector<int> clique_start_, clique_of_dof_, clique_count_, seg_adr_, seg_clique_;
  std::vector<size_t> boff_, seg_off_;
  std::vector<std::uint64_t> by_clique_;  // (column << 32) | segment, grouped by clique
  std::vector<double> H_, L_, V_, Y_, C_, t_, z_, dinv_, cdinv_;
  std::vector<double> A_;  // the tree blocks of A (Prepare)
  std::vector<double> Hf_;  // each block as it was at its last successful factorization
};

}  // namespace

std::unique_ptr<LinearSolver> MakeLowRankSolver() {
  return std::make_unique<LowRankSolver>();
}

}  // namespace mjcenic::icf::detail
