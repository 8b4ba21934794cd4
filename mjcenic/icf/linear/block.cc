// The block linear solver of the ICF Hessian (see linear_solver.h).
#include "mjcenic/icf/linear/internal.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace mjcenic::icf::detail {

namespace {

// ------------------------------------------------------------------ block --

// Block Cholesky over the trees (cenic-math.md §8.7): H's nonzero blocks are
// the tree blocks and the pairs of trees coupled by a constraint; the trees
// are ordered by minimum degree on that graph, the fill is computed once per
// pattern (a few µs for ≤ kMaxBlockTrees trees: no CHOLMOD analysis), and the
// numeric factorization runs dense kernels on the blocks. The pattern keeps
// couplings that disappeared while the superset stays small (as the sparse
// kind does), storing explicit zeros, so contacts coming and going rarely
// trigger a new ordering.
class BlockSolver final : public LinearSolver {
 public:
  bool Prepare(const IcfModel& m) override {
    const int nc = static_cast<int>(m.clique_start.size()) - 1;
    if (pairs_.capacity() == 0) {
      const size_t cap = 64 + 8 * m.clique_start.size();
      for (auto* v : {&pairs_, &stored_, &merged_}) v->reserve(cap);
    }
    CoupledCliquePairs(m, /*lower=*/false, &cliques_, &pairs_);
    const bool same_structure = analysed_ && n_ == m.nv && clique_start_ == m.clique_start;
    if (!UpdateCouplingPattern(same_structure, pairs_, &stored_, &merged_)) return false;
    n_ = m.nv;
    clique_start_ = m.clique_start;
    clique_of_dof_ = m.clique_of_dof;
    Analyse(nc);
    analysed_ = true;
    ++pattern_id_;
    ++analyses_;
    return true;
  }

  // Islands whose Newton iteration has converged (cenic-math §8.7): their
  // trees are neither assembled nor factorized, and Solve returns 0 there.
  bool SetFrozen(const char* frozen) override {
    frozen_ = frozen;
    return frozen != nullptr;
  }

  // Which trees belong to frozen islands (skip_), and L_ cleared where it
  // is assembled.
  void StartAssembly(const IcfModel& m, int nc) {
    // Trees of frozen islands (skip_[c]); none without frozen flags. H is
    // block diagonal over islands, and a block kept from an earlier pattern
    // between two islands stays exactly 0 through the elimination, so the
    // other islands' factors are the same to the bit (§8.7).
    any_skip_ = false;
    if (frozen_ != nullptr && m.num_islands > 0) {
      for (int c = 0; c < nc; ++c) {
        skip_[c] = frozen_[m.island_of_clique[c]] != 0;
        any_skip_ = any_skip_ || skip_[c];
      }
    }
    if (!any_skip_) {
      std::fill(L_.begin(), L_.begin() + total_, 0.0);
    } else {
      for (int k = 0; k < nc; ++k)
        if (!skip_[perm_[k]]) std::fill(L_.begin() + col_adr_[k], L_.begin() + col_adr_[k + 1], 0.0);
    }
  }
  bool Keep(int dof) const { return !any_skip_ || !skip_[clique_of_dof_[dof]]; }

  void AddMass(const IcfModel& m) {
    // A: tree blocks (lower triangles).
    for (int i = 0; i < m.nv; ++i) {
      if (!Keep(i)) continue;
      const int c = clique_of_dof_[i], s0 = clique_start_[c], w = Size(c);
      double* Lc = L_.data() + Block(c, c);
      const int adr = m.M_rowadr[i], nnz = m.M_rownnz[i];
      for (int k = 0; k < nnz; ++k) Lc[(m.M_colind[adr + k] - s0) * w + (i - s0)] += m.M[adr + k];
      Lc[(i - s0) * w + (i - s0)] += m.h * m.D[i] + m.h * m.h * m.K[i];
    }
  }

  // Σ JᵀGJ: one block lookup per pair of the constraint's dof runs (trees).
  template <class Dofs>
  void AddBlock(const Dofs& dofs, const double* B) {
    const int n = static_cast<int>(dofs.size());
    runs_.clear();
    for (int k = 0; k < n; ++k)
      if (k == 0 || clique_of_dof_[dofs[k]] != clique_of_dof_[dofs[k - 1]]) runs_.push_back(k);
    runs_.push_back(n);
    const int nr = static_cast<int>(runs_.size()) - 1;
    for (int ra = 0; ra < nr; ++ra) {
      const int ca = clique_of_dof_[dofs[runs_[ra]]], sa = clique_start_[ca], wa = Size(ca);
      for (int rb = 0; rb <= ra; ++rb) {
        const int cb = clique_of_dof_[dofs[runs_[rb]]], sb = clique_start_[cb], wb = Size(cb);
        if (ra == rb) {  // lower triangle of the tree block
          double* T = L_.data() + Block(ca, ca);
          for (int a = runs_[ra]; a < runs_[ra + 1]; ++a)
            for (int b = runs_[ra]; b <= a; ++b)
              T[(dofs[b] - sa) * wa + (dofs[a] - sa)] += B[a * n + b];
        } else if (pos_[ca] > pos_[cb]) {  // block (ca, cb): wa × wb
          double* T = L_.data() + Block(ca, cb);
          for (int a = runs_[ra]; a < runs_[ra + 1]; ++a)
            for (int b = runs_[rb]; b < runs_[rb + 1]; ++b)
              T[(dofs[b] - sb) * wa + (dofs[a] - sa)] += B[a * n + b];
        } else {  // block (cb, ca): wb × wa, transposed
          double* T = L_.data() + Block(cb, ca);
          for (int a = runs_[ra]; a < runs_[ra + 1]; ++a)
            for (int b = runs_[rb]; b < runs_[rb + 1]; ++b)
              T[(dofs[a] - sa) * wb + (dofs[b] - sb)] += B[a * n + b];
        }
      }
    }
  }

  // dofs[k..k+6): all of one 6-dof tree.
  template <class Dofs>
  bool Whole6(const Dofs& dofs, int k) const {
    const int c = clique_of_dof_[dofs[k]];
    return dofs[k] == clique_start_[c] && Size(c) == 6 && dofs[k + 5] == dofs[k] + 5;
  }

    // A contact on one or two whole free bodies (6-dof trees, the stones of
    // a pile): its terms go straight into their blocks (CongruenceTerms: the
    // same values, each entry still one addition per constraint in order).
  template <class Pool, class Dofs>
  bool AddDirect(const Pool& pool, int c, const double* G, const Dofs& dofs) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    if constexpr (R != 3) {
      return false;
    } else {
      const int n = static_cast<int>(dofs.size());
      if ((n != 6 && n != 12) || !Whole6(dofs, 0) || (n == 12 && !Whole6(dofs, 6)) ||
          RankOneG<3>(G))
        return false;
      const int ca = clique_of_dof_[dofs[0]];
      double* Taa = L_.data() + Block(ca, ca);
      if (n == 6) {
        CongruenceTerms<3, 6>(pool.rows.J(c), G, [&](int a, int b, double x) { Taa[b * 6 + a] += x; });
        return true;
      }
      const int cb = clique_of_dof_[dofs[6]];
      double* Tbb = L_.data() + Block(cb, cb);
      // Coupling (row a of tree cb, column b of tree ca): block (cb, ca) or
      // the transposed (ca, cb), as add_block places it.
      const bool below = pos_[cb] > pos_[ca];
      double* Tab = L_.data() + (below ? Block(cb, ca) : Block(ca, cb));
      const int sr = below ? 1 : 6, sc = below ? 6 : 1;
      CongruenceTerms<3, 12>(pool.rows.J(c), G, [&](int a, int b, double x) {
        if (a < 6) Taa[b * 6 + a] += x;
        else if (b < 6) Tab[(a - 6) * sr + b * sc] += x;
        else Tbb[(b - 6) * 6 + (a - 6)] += x;
      });
      return true;
    }
  }

  // Block Cholesky over the trees in elimination order (§8.7); false if a
  // pivot block is not positive definite.
  bool Eliminate(int nc) {
    for (int k = 0; k < nc; ++k) {
      const int c = perm_[k], n = Size(c);
      if (n == 0 || (any_skip_ && skip_[c])) continue;
      double* Lkk = L_.data() + Block(c, c);
      double* dinv = dinv_.data() + clique_start_[c];
      if (!DenseCholesky(Lkk, n, dinv)) return false;  // L_kk in place
      const int a0 = adj_adr_[k], a1 = adj_adr_[k + 1];
      for (int a = a0; a < a1; ++a) {  // L_jk = A_jk L_kk⁻ᵀ, row by row
        const int cj = adj_[a], nj = Size(cj);
        double* Ljk = L_.data() + Block(cj, c);
        // The same loops with the orders as constants for free bodies (6 × 6).
        auto solve = [&](auto NJ, auto N) {
          for (int r = 0; r < NJ; ++r)
            for (int t = 0; t < N; ++t) {
              double x = Ljk[t * NJ + r];
              for (int s = 0; s < t; ++s) x -= Ljk[s * NJ + r] * Lkk[s * N + t];
              Ljk[t * NJ + r] = x * dinv[t];
            }
        };
        if (n == 6 && nj == 6) solve(std::integral_constant<int, 6>(), std::integral_constant<int, 6>());
        else solve(nj, n);
      }
      // Schur complement: A_ji −= L_jk L_ikᵀ for i ≤ j (by position).
      for (int a = a0; a < a1; ++a) {
        const int ci = adj_[a], ni = Size(ci);
        const double* Lik = L_.data() + Block(ci, c);
        for (int b = a; b < a1; ++b) {
          const int cj = adj_[b], nj = Size(cj);
          const double* Ljk = L_.data() + Block(cj, c);
          double* T = L_.data() + Block(cj, ci);  // nj × ni, column-major
          if (n == 6 && ni == 6 && nj == 6) {  // free bodies: fixed-size kernel
            using M6 = Eigen::Matrix<double, 6, 6>;
            Eigen::Map<M6> Tm(T);
            Tm.noalias() -= Eigen::Map<const M6>(Ljk) * Eigen::Map<const M6>(Lik).transpose();
            continue;
          }
          for (int s = 0; s < ni; ++s)
            for (int r = (b == a ? s : 0); r < nj; ++r) {
              double x = T[s * nj + r];
              for (int t = 0; t < n; ++t) x -= Ljk[t * nj + r] * Lik[t * ni + s];
              T[s * nj + r] = x;
            }
        }
      }
    }
    return true;
  }

  bool AssembleAndFactor(const IcfModel& m, const IcfData& d) override {
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    StartAssembly(m, nc);
    AddMass(m);
    auto keep = [&](int dof) { return Keep(dof); };
    auto add_block = [&](const auto& dofs, const double* B) { AddBlock(dofs, B); };
    auto direct = [&](const auto& pool, int c, const double* G, const auto& dofs) {
      return AddDirect(pool, c, G, dofs);
    };
    ForEachConstraintHessian(m, d, &block_, add_block, keep, direct);
    if (!any_skip_) {
      std::copy(L_.begin(), L_.begin() + total_, H_.begin());
    } else {
      for (int k = 0; k < nc; ++k)
        if (!skip_[perm_[k]])
          std::copy(L_.begin() + col_adr_[k], L_.begin() + col_adr_[k + 1], H_.begin() + col_adr_[k]);
    }
    return Eliminate(nc);
  }

  void Solve(const double* b, double* x) override {
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    std::copy(b, b + n_, y_.begin());
    if (any_skip_)  // frozen islands: 0 (their y never meets a nonzero block)
      for (int c = 0; c < nc; ++c)
        if (skip_[c]) std::fill(y_.begin() + clique_start_[c], y_.begin() + clique_start_[c + 1], 0.0);
    for (int k = 0; k < nc; ++k) {  // L y = b
      const int c = perm_[k], n = Size(c), s0 = clique_start_[c];
      if (any_skip_ && skip_[c]) continue;
      const double* Lkk = L_.data() + Block(c, c);
      const double* dinv = dinv_.data() + s0;
      double* yc = y_.data() + s0;
      for (int j = 0; j < n; ++j) {
        const double z = yc[j] * dinv[j];
        yc[j] = z;
        for (int i = j + 1; i < n; ++i) yc[i] -= Lkk[j * n + i] * z;
      }
      for (int a = adj_adr_[k]; a < adj_adr_[k + 1]; ++a) {
        const int cj = adj_[a], nj = Size(cj);
        const double* Ljk = L_.data() + Block(cj, c);
        double* yj = y_.data() + clique_start_[cj];
        for (int t = 0; t < n; ++t)
          for (int r = 0; r < nj; ++r) yj[r] -= Ljk[t * nj + r] * yc[t];
      }
    }
    for (int k = nc - 1; k >= 0; --k) {  // Lᵀ x = y
      const int c = perm_[k], n = Size(c), s0 = clique_start_[c];
      if (any_skip_ && skip_[c]) continue;
      const double* Lkk = L_.data() + Block(c, c);
      const double* dinv = dinv_.data() + s0;
      double* yc = y_.data() + s0;
      for (int a = adj_adr_[k]; a < adj_adr_[k + 1]; ++a) {
        const int cj = adj_[a], nj = Size(cj);
        const double* Ljk = L_.data() + Block(cj, c);
        const double* yj = y_.data() + clique_start_[cj];
        for (int t = 0; t < n; ++t) {
          double s = 0;
          for (int r = 0; r < nj; ++r) s += Ljk[t * nj + r] * yj[r];
          yc[t] -= s;
        }
      }
      for (int i = n - 1; i >= 0; --i) {
        double z = yc[i];
        for (int t = i + 1; t < n; ++t) z -= Lkk[i * n + t] * yc[t];
        yc[i] = z * dinv[i];
      }
    }
    std::copy(y_.begin(), y_.begin() + n_, x);
  }

  Eigen::MatrixXd DenseH() const override {
    Eigen::MatrixXd full = Eigen::MatrixXd::Zero(n_, n_);
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    for (int ci = 0; ci < nc; ++ci)
      for (int cj = 0; cj < nc; ++cj) {
        if (pos_[ci] < pos_[cj] || block_of_[static_cast<size_t>(ci) * nc + cj] < 0) continue;
        const size_t off = Block(ci, cj);
        const int ni = Size(ci), nj = Size(cj);
        for (int q = 0; q < nj; ++q)
          for (int p = (ci == cj ? q : 0); p < ni; ++p) {
            const double v = H_[off + static_cast<size_t>(q) * ni + p];
            full(clique_start_[ci] + p, clique_start_[cj] + q) = v;
            full(clique_start_[cj] + q, clique_start_[ci] + p) = v;
          }
      }
    return full;
  }

 private:
  int Size(int c) const { return clique_start_[c + 1] - clique_start_[c]; }
  // Offset of block (row tree i, column tree j), pos_[i] ≥ pos_[j].
  size_t Block(int i, int j) const {
    return static_cast<size_t>(block_of_[static_cast<size_t>(i) * nc_ + j]);
  }

  // Minimum-degree order of the trees on the coupling graph, its fill, and
  // the block layout. Memory only grows.
  void Analyse(int nc) {
    nc_ = nc;
    const int words = (nc + 63) / 64;
    Grow(&graph_, static_cast<size_t>(nc) * words);
    std::fill(graph_.begin(), graph_.begin() + static_cast<size_t>(nc) * words, 0);
    auto set = [&](int a, int b) { graph_[static_cast<size_t>(a) * words + b / 64] |= 1ull << (b % 64); };
    for (std::uint64_t p : stored_) {
      const int a = static_cast<int>(p >> 32), b = static_cast<int>(p & 0xffffffffu);
      set(a, b);
      set(b, a);
    }
    Grow(&perm_, nc);
    Grow(&pos_, nc);
    Grow(&alive_, nc);
    Grow(&adj_adr_, nc + 1);
    std::fill(alive_.begin(), alive_.begin() + nc, 1);
    adj_.clear();
    adj_adr_[0] = 0;
    for (int k = 0; k < nc; ++k) {
      int best = -1, best_deg = 0;
      for (int c = 0; c < nc; ++c) {
        if (!alive_[c]) continue;
        int deg = 0;
        for (int w = 0; w < words; ++w) deg += std::popcount(graph_[static_cast<size_t>(c) * words + w]);
        if (best < 0 || deg < best_deg) best = c, best_deg = deg;
      }
      perm_[k] = best;
      pos_[best] = k;
      alive_[best] = 0;
      // Its remaining neighbours become a clique; it leaves the graph.
      const std::uint64_t* nb = graph_.data() + static_cast<size_t>(best) * words;
      for (int u = 0; u < nc; ++u) {
        if (!(nb[u / 64] >> (u % 64) & 1)) continue;
        adj_.push_back(u);
        std::uint64_t* gu = graph_.data() + static_cast<size_t>(u) * words;
        for (int w = 0; w < words; ++w) gu[w] |= nb[w];
        gu[u / 64] &= ~(1ull << (u % 64));
        gu[best / 64] &= ~(1ull << (best % 64));
      }
      adj_adr_[k + 1] = static_cast<int>(adj_.size());
      std::fill(graph_.begin() + static_cast<size_t>(best) * words,
                graph_.begin() + static_cast<size_t>(best + 1) * words, 0);
    }
    // Each column's rows in elimination order; block offsets.
    for (int k = 0; k < nc; ++k)
      std::sort(adj_.begin() + adj_adr_[k], adj_.begin() + adj_adr_[k + 1],
                [&](int a, int b) { return pos_[a] < pos_[b]; });
    Grow(&block_of_, static_cast<size_t>(nc) * nc);
    std::fill(block_of_.begin(), block_of_.begin() + static_cast<size_t>(nc) * nc, -1);
    long off = 0;
    Grow(&col_adr_, nc + 1);
    Grow(&skip_, nc);
    for (int k = 0; k < nc; ++k) {
      const int c = perm_[k];
      col_adr_[k] = off;  // column k's blocks are contiguous
      block_of_[static_cast<size_t>(c) * nc + c] = off;
      off += static_cast<long>(Size(c)) * Size(c);
      for (int a = adj_adr_[k]; a < adj_adr_[k + 1]; ++a) {
        block_of_[static_cast<size_t>(adj_[a]) * nc + c] = off;
        off += static_cast<long>(Size(adj_[a])) * Size(c);
      }
    }
    total_ = off;
    col_adr_[nc] = off;
    // Room for the densest fill from the start (every pair of trees:
    // (nv² + Σ n_c²)/2 values) while that is small, so that a pattern with
    // more fill later does not allocate in a step.
    size_t room = total_;
    if (n_ <= kReserveDofs) {
      size_t squares = 0;
      for (int c = 0; c < nc; ++c) squares += static_cast<size_t>(Size(c)) * Size(c);
      room = std::max(room, (static_cast<size_t>(n_) * n_ + squares) / 2);
      adj_.reserve(static_cast<size_t>(nc) * (nc - 1) / 2);
    }
    Grow(&L_, room);
    Grow(&H_, room);
    Grow(&dinv_, n_);
    Grow(&y_, n_);
  }

  template <class T>
  static void Grow(std::vector<T>* v, size_t n) {
    if (v->size() < n) v->resize(n);
  }

  static constexpr int kReserveDofs = 512;
  bool analysed_ = false;
  int n_ = 0, nc_ = 0;
  long total_ = 0;
  std::vector<int> clique_start_, clique_of_dof_, cliques_, perm_, pos_, adj_adr_, adj_, runs_;
  std::vector<char> alive_;
  std::vector<long> block_of_;  // (row tree, column tree) → offset, −1: no block
  std::vector<long> col_adr_;   // offset of column k's first block (k = nc: total_)
  std::vector<char> skip_;      // per tree: in a frozen island (any_skip_)
  const char* frozen_ = nullptr;  // per island, or null (SetFrozen)
  bool any_skip_ = false;
  std::vector<std::uint64_t> pairs_, stored_, merged_, graph_;
  std::vector<double> L_, H_, dinv_, y_;
};

}  // namespace

std::unique_ptr<LinearSolver> MakeBlockSolver() {
  return std::make_unique<BlockSolver>();
}

}  // namespace mjcenic::icf::detail
