// The pcg linear solver of the ICF Hessian (see linear_solver.h).
#include "mjcenic/icf/linear/internal.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace mjcenic::icf::detail {

namespace {

// -------------------------------------------------------------------- pcg --

// Conjugate gradients on H x = b, preconditioned by a block symmetric
// Gauss–Seidel sweep over the cliques (cenic-math §8.4). No factorization of
// H, so it pays off on one large island of many small trees (a pile of
// particles), where a sparse Cholesky fills in. AssembleAndFactor stores H
// block-sparse over cliques: a dense block per clique (and its inverse) and
// a dense block per pair of cliques coupled by a constraint, taken from the
// same J_iᵀ G_i J_i blocks the direct kinds assemble; a coupling block whose
// only term is one frictionless contact (−g j jᵀ) is kept rank-one, one that
// no active constraint reaches is left out (cenic-math §8.4, "Rank-one
// coupling blocks"). CG runs in split form on
// the block-scaled system (one backward and one forward sweep per iteration,
// cenic-math §8.4). A Solve bound to a newer iterate than the
// assembly multiplies matrix-free by the current H instead.
// Each iterate of CG started at 0 is a descent direction for the Newton step
// (the preconditioner is SPD), so an early stop is safe.
class PcgSolver final : public LinearSolver {
 public:
  explicit PcgSolver(double tolerance, int max_iterations)
      : tolerance_(tolerance), max_iterations_(max_iterations) {}

  bool Prepare(const IcfModel& model) override {
    const int nv = model.nv;
    const int ncl = static_cast<int>(model.clique_start.size()) - 1;
    offset_.resize(ncl + 1);
    offset_[0] = 0;
    for (int c = 0; c < ncl; ++c) {
      const size_t n = model.clique_start[c + 1] - model.clique_start[c];
      offset_[c + 1] = offset_[c] + n * n;
    }
    if (L_.size() < offset_[ncl]) L_.resize(offset_[ncl]);
    if (Hd_.size() < offset_[ncl]) Hd_.resize(offset_[ncl]), Ha_.resize(offset_[ncl]);
    a_ready_ = false;  // the model's A and contacts may have changed
    contacts_ready_ = false;
    if (Cf_.size() < offset_[ncl]) Cf_.resize(offset_[ncl]);
    if (Ci_.size() < offset_[ncl]) Ci_.resize(offset_[ncl]);
    for (auto* v : {&r_, &z_, &p_, &q_, &x_, &acc_, &t_u_}) v->resize(nv);
    int widest = 0;
    for (int c = 0; c < ncl; ++c)
      widest = std::max(widest, model.clique_start[c + 1] - model.clique_start[c]);
    if (static_cast<int>(t_.size()) < widest * widest) t_.resize(widest * widest);
    uniform_ = ncl > 0 ? widest : 0;
    for (int c = 0; c < ncl; ++c)
      if (model.clique_start[c + 1] - model.clique_start[c] != widest) uniform_ = 0;
    const bool changed = clique_start_ != model.clique_start;
    if (changed) {
      clique_start_ = model.clique_start;
      ++pattern_id_;
      ++analyses_;
    }
    pairs_.swap(last_pairs_);  // the coupling pairs of the last Prepare
    if (pairs_.capacity() < last_pairs_.capacity()) pairs_.reserve(last_pairs_.capacity());
    BuildCoupling(model);
    // Other coupled pairs of the same cliques: the last assembly's coupling
    // blocks and their states are indexed by the old pairs, so they count as
    // a new pattern (assembled again).
    const bool coupling_changed = !changed && pairs_ != last_pairs_;
    if (coupling_changed) ++pattern_id_;
    assembled_ = false;
    return changed || coupling_changed;
  }

  bool AssembleAndFactor(const IcfModel& model, const IcfData& data) override {
    assembled_ = false;  // until the blocks below are complete (a failed inversion leaves them partial)
    // Clique blocks of H (column-major, lower triangle) and the coupling
    // blocks (row-major, row clique > column clique).
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    // A (block diagonal over the cliques, constant during a solve) entry by
    // entry at the first assembly after Prepare, then copied.
    if (!a_ready_) {
      std::fill(Ha_.begin(), Ha_.begin() + offset_[ncl], 0.0);
      const std::vector<int>& clique = model.clique_of_dof;
      for (int i = 0; i < model.nv; ++i) {
        const int ci = clique[i], s = clique_start_[ci], n = clique_start_[ci + 1] - s;
        double* B = Ha_.data() + offset_[ci] + static_cast<size_t>(i - s);
        const int adr = model.M_rowadr[i], nnz = model.M_rownnz[i];
        for (int k = 0; k < nnz; ++k) B[static_cast<size_t>(model.M_colind[adr + k] - s) * n] += model.M[adr + k];
        B[static_cast<size_t>(i - s) * n] += model.h * model.D[i] + model.h * model.h * model.K[i];
      }
      a_ready_ = true;
    }
    std::copy(Ha_.begin(), Ha_.begin() + offset_[ncl], Hd_.begin());
    // Coupling blocks are zeroed when their first term arrives (DenseBlock,
    // AddRankOne): a block no active constraint reaches stays empty and is
    // skipped by the sweeps.
    std::fill(state_.begin(), state_.begin() + row_start_[ncl], kEmpty);
    coupling_dense_ = false;
    Dispatch([&](auto NN) { ScatterConstraints<decltype(NN)::value>(model, data); });
    // Each clique block: its Cholesky factor and the factor's inverse.
    bool ok = true;
    Dispatch([&](auto N) { ok = InvertBlocks<decltype(N)::value>(); });
    if (!ok) return false;
    Dispatch([&](auto N) { ScaleCoupling<decltype(N)::value>(); });
    model_ = &model;
    data_ = &data;
    assembled_ = true;
    binds_ = 0;
    return true;
  }

  // Coupling block k (row-major in Ho_) ready for dense terms: zeroed at
  // its first term, a rank-one term held so far written out (−g j jᵀ, the
  // value the dense sum would have had).
  template <int N>
  double* DenseBlock(size_t k) {
    double* O = Ho_.data() + block_offset_[k];
    if (state_[k] == kDense) return O;
    std::fill(O, O + (block_offset_[k + 1] - block_offset_[k]), 0.0);
    if constexpr (N > 0) {
      if (state_[k] == kRankOne) {
        const double* e = r1_.data() + k * (N + 1);  // g, then j
        double gJ[N];
        for (int b = 0; b < N; ++b) gJ[b] = e[0] * e[1 + b];
        for (int a = 0; a < N; ++a)
          for (int b = 0; b < N; ++b) O[a * N + b] += -(e[1 + a] * gJ[b]);
      }
    }
    state_[k] = kDense;
    return O;
  }

  // Adds −g j jᵀ (j: N values) to coupling block k: kept as (g, j) while it
  // is the block's only term, else added densely.
  template <int N>
  void AddRankOne(size_t k, double g, const double* j) {
    if (state_[k] == kEmpty) {
      double* e = r1_.data() + k * (N + 1);
      e[0] = g;
      for (int a = 0; a < N; ++a) e[1 + a] = j[a];
      state_[k] = kRankOne;
      return;
    }
    double* O = DenseBlock<N>(k);
    double gJ[N];
    for (int b = 0; b < N; ++b) gJ[b] = g * j[b];
    for (int a = 0; a < N; ++a)
      for (int b = 0; b < N; ++b) O[a * N + b] += -(j[a] * gJ[b]);
  }

  // Every coupling block written out densely in Ho_ (an empty one zeroed),
  // for the textbook form, once per assembly.
  void DenseCoupling() {
    if (coupling_dense_) return;
    Dispatch([&](auto N) {
      for (size_t k = 0; k < pairs_.size(); ++k) DenseBlock<decltype(N)::value>(k);
    });
    coupling_dense_ = true;
  }

  // Per contact of the model's contact pool (fixed during a solve): on one
  // whole N-dof clique (kOne), on two (kPair, and kPairMirrorRow0 /
  // kPairMirror when J's first row / every row is [J₀, −J₀]) with the
  // index of their coupling block, or neither (kSkip: the block path).
  template <int N>
  void ClassifyContacts(const IcfModel& model) {
    const ContactPool& pool = model.contacts;
    const std::vector<int>& clique = model.clique_of_dof;
    const int n = pool.size();
    if (static_cast<int>(contact_kind_.size()) < n) contact_kind_.resize(n), contact_block_.resize(n);
    for (int c = 0; c < n; ++c) {
      const auto dofs = pool.rows.dofs(c);
      const int nd = static_cast<int>(dofs.size());
      contact_kind_[c] = kSkip;
      contact_block_[c] = 0;
      if (!OnWholeCliques<N>(dofs, clique)) continue;
      if (nd == N) {
        contact_kind_[c] = kOne;
        continue;
      }
      const int c0 = clique[dofs[0]], c1 = clique[dofs[N]];
      const int* first = col_.data() + row_start_[c1];
      const int* last = col_.data() + row_start_[c1 + 1];
      contact_block_[c] = static_cast<int>(std::lower_bound(first, last, c0) - col_.data());
      const double* J = pool.rows.J(c);
      contact_kind_[c] = Mirrored<3, N>(J)   ? kPairMirror
                         : Mirrored<1, N>(J) ? kPairMirrorRow0
                                             : kPair;
    }
    contacts_ready_ = true;
  }

  // True if the dofs (ascending) are one whole N-dof clique (N of them) or
  // two (2N): the particle contact's shape, which takes fixed-size loops.
  template <int N, class Dofs>
  bool OnWholeCliques(const Dofs& dofs, const std::vector<int>& clique) const {
    const int nd = static_cast<int>(dofs.size());
    auto whole = [&](int first) { return first == clique_start_[clique[first]]; };
    return (nd == N || nd == 2 * N) && whole(dofs[0]) && dofs[N - 1] == dofs[0] + N - 1 &&
           (nd == N || (whole(dofs[N]) && dofs[nd - 1] == dofs[N] + N - 1));
  }

  // True if the first R rows of J (rows of 2N values) are [J₀, −J₀]: their
  // last N columns are the first N negated (a rank-one G reads row 0 only).
  template <int R, int N>
  static bool Mirrored(const double* J) {
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < N; ++k)
        if (J[r * 2 * N + N + k] != -J[r * 2 * N + k]) return false;
    return true;
  }

  // A constraint on one or two whole N-dof cliques (particles), its terms
  // straight into the clique and coupling blocks; false: not of that shape.
  template <int N, class Pool, class Dofs>
  bool AddDirect(const Pool& pool, int c, const double* G, const Dofs& dofs,
                 const std::vector<int>& clique) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    constexpr bool kContacts = std::is_same_v<std::remove_cvref_t<decltype(pool)>, ContactPool>;
    if constexpr (R != 3 || N == 0 || 2 * N > 64) {
      return false;
    } else {
      const int nd = static_cast<int>(dofs.size());
      std::uint8_t kind = kSkip;
      if constexpr (kContacts) {
        kind = contact_kind_[c];
        if (kind == kSkip) return false;
      } else if (!OnWholeCliques<N>(dofs, clique)) {
        return false;
      }
      const double* J = pool.rows.J(c);
      double* D0 = Hd_.data() + offset_[clique[dofs[0]]];
      if (nd == N) {
        auto sink = [&](int a, int b, double x) { D0[b * N + a] += x; };
        if (RankOneG<R>(G)) CongruenceTermsRankOne<N>(J, G, sink);
        else CongruenceTerms<R, N>(J, G, sink);
        return true;
      }
      const int c0 = clique[dofs[0]], c1 = clique[dofs[N]];
      double* D1 = Hd_.data() + offset_[c1];
      const bool rank_one = RankOneG<R>(G);
      size_t k;
      bool mirrored;
      if constexpr (kContacts) {
        k = contact_block_[c];
        mirrored = rank_one ? kind >= kPairMirrorRow0 : kind == kPairMirror;
      } else {
        const int* first = col_.data() + row_start_[c1];
        const int* last = col_.data() + row_start_[c1 + 1];
        k = std::lower_bound(first, last, c0) - col_.data();
        mirrored = rank_one ? Mirrored<1, N>(J) : Mirrored<R, N>(J);
      }
      if (mirrored) {
        AddMirrored<R, N>(J, G, rank_one, k, D0, D1);
        return true;
      }
      double* O = DenseBlock<N>(k);
      auto sink = [&](int a, int b, double x) {
        if (a < N) D0[b * N + a] += x;
        else if (b < N) O[(a - N) * N + b] += x;
        else D1[(b - N) * N + (a - N)] += x;
      };
      if (rank_one) CongruenceTermsRankOne<2 * N>(J, G, sink);
      else CongruenceTerms<R, 2 * N>(J, G, sink);
      return true;
    }
  }

  // J = [J₀, −J₀] (two free particles: the second clique's columns are the
  // first's negated). With S = J₀ᵀ G J₀ summed as CongruenceTerms sums the
  // first clique's terms, the second's are (−J₀)ᵀ G (−J₀) = S and the
  // coupling terms −S, to the bit (a negation is exact): 9 sums instead of
  // 21. A rank-one G (a frictionless contact) couples the two cliques by
  // −g j jᵀ, j = J₀'s first row: kept as g and j (AddRankOne).
  template <int R, int N>
  void AddMirrored(const double* J, const double* G, bool rank_one, size_t k, double* D0,
                   double* D1) {
    if (rank_one) {
      double gJ[N];
      for (int q = 0; q < N; ++q) gJ[q] = G[0] * J[q];
      for (int a = 0; a < N; ++a)
        for (int b = 0; b <= a; ++b) {
          const double x = J[a] * gJ[b];
          D0[b * N + a] += x, D1[b * N + a] += x;
        }
      AddRankOne<N>(k, G[0], J);
      return;
    }
    double* O = DenseBlock<N>(k);
    double GJ[R * N];  // rows of G J₀
    for (int r = 0; r < R; ++r)
      for (int col = 0; col < N; ++col) {
        double x = 0;
        for (int q = 0; q < R; ++q) x += G[r * R + q] * J[q * 2 * N + col];
        GJ[r * N + col] = x;
      }
    for (int a = 0; a < N; ++a) {
      double ja[R];
      for (int r = 0; r < R; ++r) ja[r] = J[r * 2 * N + a];
      for (int b = 0; b < N; ++b) {
        double x = 0;
        for (int r = 0; r < R; ++r) x += ja[r] * GJ[r * N + b];
        if (b <= a) D0[b * N + a] += x, D1[b * N + a] += x;
        O[a * N + b] += -x;
      }
    }
  }

  // One J_iᵀG_iJ_i block Bc by runs of dofs in one clique.
  template <int N, class Dofs>
  void AddBlock(const Dofs& dofs, const double* Bc, const std::vector<int>& clique) {
    const int nd = static_cast<int>(dofs.size());
    if constexpr (N > 0) {
      if (OnWholeCliques<N>(dofs, clique)) {
        const int c0 = clique[dofs[0]];
        double* D0 = Hd_.data() + offset_[c0];
        for (int a = 0; a < N; ++a)
          for (int b = 0; b <= a; ++b) D0[b * N + a] += Bc[a * nd + b];
        if (nd == N) return;
        const int c1 = clique[dofs[N]];
        double* D1 = Hd_.data() + offset_[c1];
        for (int a = 0; a < N; ++a)
          for (int b = 0; b <= a; ++b) D1[b * N + a] += Bc[(N + a) * nd + N + b];
        const int* first = col_.data() + row_start_[c1];
        const int* last = col_.data() + row_start_[c1 + 1];
        double* O = DenseBlock<N>(std::lower_bound(first, last, c0) - col_.data());
        for (int a = 0; a < N; ++a)
          for (int b = 0; b < N; ++b) O[a * N + b] += Bc[(N + a) * nd + b];
        return;
      }
    }
    runs_.clear();
    for (int a = 0; a < nd; ++a)
      if (a == 0 || clique[dofs[a]] != clique[dofs[a - 1]]) runs_.push_back(a);
    runs_.push_back(nd);
    const int nr = static_cast<int>(runs_.size()) - 1;
    for (int ra = 0; ra < nr; ++ra) {
      const int ci = clique[dofs[runs_[ra]]], si = clique_start_[ci];
      const int ni = clique_start_[ci + 1] - si;
      for (int rb = 0; rb <= ra; ++rb) {
        if (ra == rb) {
          double* D = Hd_.data() + offset_[ci];
          for (int a = runs_[ra]; a < runs_[ra + 1]; ++a)
            for (int b = runs_[ra]; b <= a; ++b)
              D[static_cast<size_t>(dofs[b] - si) * ni + (dofs[a] - si)] += Bc[a * nd + b];
          continue;
        }
        const int cj = clique[dofs[runs_[rb]]], sj = clique_start_[cj];
        const int nj = clique_start_[cj + 1] - sj;
        const int* first = col_.data() + row_start_[ci];
        const int* last = col_.data() + row_start_[ci + 1];
        double* O = DenseBlock<N>(std::lower_bound(first, last, cj) - col_.data());
        for (int a = runs_[ra]; a < runs_[ra + 1]; ++a)
          for (int b = runs_[rb]; b < runs_[rb + 1]; ++b)
            O[static_cast<size_t>(dofs[a] - si) * nj + (dofs[b] - sj)] += Bc[a * nd + b];
      }
    }
  }

  // Adds each J_iᵀG_iJ_i block to Hd_/Ho_ by runs of dofs in one clique (the
  // dofs ascend, so the runs' cliques do): a run with itself into its clique
  // block, a pair of runs into their coupling block, located once per pair.
  // Every entry receives the same terms in the same order as entry by entry.
  // With N-dof cliques, a constraint on one or two whole cliques (a particle
  // contact) takes fixed-size loops.
  template <int N>
  void ScatterConstraints(const IcfModel& model, const IcfData& data) {
    const std::vector<int>& clique = model.clique_of_dof;
    // A contact on one or two whole N-dof cliques (particles): its terms go
    // straight into the clique and coupling blocks (CongruenceTerms, the
    // same values in the same order as through the block).
    // The contact pool's kinds and blocks are those ClassifyContacts found
    // for this solve; another pool of three-row constraints is checked here.
    if constexpr (N > 0 && 2 * N <= 64)
      if (!contacts_ready_) ClassifyContacts<N>(model);
    ForEachConstraintHessian(
        model, data, &block_,
        [&](const auto& dofs, const double* Bc) { AddBlock<N>(dofs, Bc, clique); },
        [](int) { return true; },
        [&](const auto& pool, int c, const double* G, const auto& dofs) {
          return AddDirect<N>(pool, c, G, dofs, clique);
        });
  }

  void SetIterative(double tolerance, int max_iterations) override {
    tolerance_ = tolerance;
    max_iterations_ = max_iterations;
  }

  void Bind(const IcfModel& model, const IcfData& data) override {
    model_ = &model;
    data_ = &data;
    // The first Bind after an assembly is the assembled iterate's own
    // direction; a later one has a newer H.
    if (++binds_ > 1) assembled_ = false;
  }

  void Solve(const double* b, double* x) override {
    if (assembled_) {
      Dispatch([&](auto N) { SolveSplitN<decltype(N)::value>(b, x); });
      return;
    }
    const int nv = model_->nv;
    double bb = 0;
    for (int i = 0; i < nv; ++i) {
      r_[i] = b[i];
      x_[i] = 0;
      bb += b[i] * b[i];
    }
    iterations_ = 0;
    const double stop = tolerance_ * tolerance_ * bb;
    Inverses();
    DenseCoupling();
    Precondition(r_.data(), z_.data());
    double rz = 0;
    for (int i = 0; i < nv; ++i) {
      p_[i] = z_[i];
      rz += r_[i] * z_[i];
    }
    double rr = bb;
    while (rr > stop && iterations_ < max_iterations_) {
      MultiplyH(p_.data(), q_.data());
      double pq = 0;
      for (int i = 0; i < nv; ++i) pq += p_[i] * q_[i];
      if (!(pq > 0)) break;  // not positive definite along p (or breakdown): keep x
      const double a = rz / pq;
      rr = 0;
      for (int i = 0; i < nv; ++i) {
        x_[i] += a * p_[i];
        r_[i] -= a * q_[i];
        rr += r_[i] * r_[i];
      }
      ++iterations_;
      Precondition(r_.data(), z_.data());
      double rz_new = 0;
      for (int i = 0; i < nv; ++i) rz_new += r_[i] * z_[i];
      const double beta = rz_new / rz;
      rz = rz_new;
      for (int i = 0; i < nv; ++i) p_[i] = z_[i] + beta * p_[i];
    }
    std::copy(x_.begin(), x_.begin() + nv, x);
  }

  int last_iterations() const override { return iterations_; }

  Eigen::MatrixXd DenseH() const override {
    if (!model_) return Eigen::MatrixXd();  // nothing bound yet
    const int nv = model_->nv;
    Eigen::MatrixXd H = Eigen::MatrixXd::Zero(nv, nv);
    std::vector<double> scratch;
    AccumulateHessian(*model_, *data_, &scratch, [&](int i, int j, double x) {
      H(i, j) += x;
      if (i != j) H(j, i) += x;
    });
    return H;
  }

 private:
  // Coupling pattern: every pair of cliques (a > b) joined by a constraint,
  // in CSR by row clique a (col_ ascending), with the offset of each dense
  // n_a × n_b block in Ho_. Memory only grows.
  void BuildCoupling(const IcfModel& m) {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    CoupledCliquePairs(m, /*lower=*/true, &cliques_, &pairs_);
    row_start_.assign(ncl + 1, 0);
    col_.resize(pairs_.size());
    block_offset_.resize(pairs_.size() + 1);
    size_t off = 0;
    for (size_t k = 0; k < pairs_.size(); ++k) {
      const int a = static_cast<int>(pairs_[k] >> 32);
      const int b = static_cast<int>(pairs_[k] & 0xffffffffu);
      ++row_start_[a + 1];
      col_[k] = b;
      block_offset_[k] = off;
      off += static_cast<size_t>(clique_start_[a + 1] - clique_start_[a]) *
             (clique_start_[b + 1] - clique_start_[b]);
    }
    block_offset_[pairs_.size()] = off;
    for (int c = 0; c < ncl; ++c) row_start_[c + 1] += row_start_[c];
    // The same blocks by column clique (CSC: block index and row clique),
    // rows ascending, for the backward sweep's gathers.
    const size_t np = pairs_.size();
    col_start_.assign(ncl + 1, 0);
    for (size_t k = 0; k < np; ++k) ++col_start_[col_[k] + 1];
    for (int c = 0; c < ncl; ++c) col_start_[c + 1] += col_start_[c];
    col_block_.resize(np);
    col_row_.resize(np);
    fill_.assign(col_start_.begin(), col_start_.end() - 1);
    for (int a = 0; a < ncl; ++a)
      for (int k = row_start_[a]; k < row_start_[a + 1]; ++k) {
        const int pos = fill_[col_[k]]++;
        col_block_[pos] = k;
        col_row_[pos] = a;
      }
    if (Ho_.size() < off) Ho_.resize(off);
    if (Hs_.size() < off) Hs_.resize(off);
    // (Offsets are stored as int in the sweeps' entries.)
    if (off > static_cast<size_t>(std::numeric_limits<int>::max()))
      throw std::length_error("pcg: coupling blocks exceed 2^31 values");
    if (state_.size() < np) state_.resize(np), listed_.resize(np);
    lists_ok_ = false;
    if (uniform_ > 0 && r1_.size() < np * (uniform_ + 1)) r1_.resize(np * (uniform_ + 1));
    if (row_entry_.size() < np) row_entry_.resize(np), col_entry_.resize(np);
    if (static_cast<int>(row_one_.size()) < ncl)
      for (auto* x : {&row_one_, &row_end_, &col_one_, &col_end_}) x->resize(ncl);
  }

  // z = P⁻¹ r, P = (B + L) B⁻¹ (B + Lᵀ): one forward and one backward block
  // Gauss–Seidel sweep (B the clique blocks, L the coupling blocks below
  // them; cenic-math §8.4). SPD for SPD H. Block Jacobi (z = B⁻¹ r) while no
  // coupling blocks are stored.
  // Factorizes each clique block of Hd_ (lower triangle assembled) as
  // B = C Cᵀ into Cf_ and writes C⁻¹ into Ci_, in plain loops (the blocks
  // are at most a few dofs; N = 0: sizes differ), straight into their
  // storage. B⁻¹ = C⁻ᵀC⁻¹ (L_), which only the textbook form's
  // preconditioner uses, is formed from Ci_ when that form first needs it
  // (Inverses).
  template <int N>
  bool InvertBlocks() {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    for (int c = 0; c < ncl; ++c) {
      const int n = N ? N : clique_start_[c + 1] - clique_start_[c];
      const double* H = Hd_.data() + offset_[c];  // column-major: H[j*n + i] = (i, j)
      double* C = Cf_.data() + offset_[c];
      double* T = Ci_.data() + offset_[c];
      // Cholesky into C (column-major lower; the upper triangle is not read).
      for (int j = 0; j < n; ++j) {
        double d = H[j * n + j];
        for (int k = 0; k < j; ++k) d -= C[k * n + j] * C[k * n + j];
        if (!(d > 0)) return false;
        const double ljj = std::sqrt(d);
        C[j * n + j] = ljj;
        for (int i = j + 1; i < n; ++i) {
          double x = H[j * n + i];
          for (int k = 0; k < j; ++k) x -= C[k * n + i] * C[k * n + j];
          C[j * n + i] = x / ljj;
        }
      }
      // T ← C⁻¹ (lower), column by column from the right.
      for (int j = n - 1; j >= 0; --j) {
        T[j * n + j] = 1.0 / C[j * n + j];
        for (int i = n - 1; i > j; --i) {
          double x = 0;
          for (int k = j + 1; k <= i; ++k) x += T[k * n + i] * C[j * n + k];
          T[j * n + i] = -x * T[j * n + j];
        }
      }
    }
    inverses_ = false;
    return true;
  }

  // L_c = B_c⁻¹ = C⁻ᵀ C⁻¹: (a, b) = Σ_{k ≥ max(a,b)} C⁻¹(k, a) C⁻¹(k, b), for
  // the textbook form's preconditioner, once per assembly.
  void Inverses() {
    if (inverses_) return;
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    for (int c = 0; c < ncl; ++c) {
      const int n = clique_start_[c + 1] - clique_start_[c];
      const double* T = Ci_.data() + offset_[c];
      double* L = L_.data() + offset_[c];
      for (int a = 0; a < n; ++a)
        for (int b = 0; b <= a; ++b) {
          double x = 0;
          for (int k = a; k < n; ++k) x += T[a * n + k] * T[b * n + k];
          L[b * n + a] = L[a * n + b] = x;
        }
    }
    inverses_ = true;
  }

  // Every clique has uniform_ dofs (0: sizes differ): the kernels below are
  // instantiated for the common small sizes so the block loops unroll.
  template <class F>
  void Dispatch(F&& f) {
    switch (uniform_) {
      case 1: f(std::integral_constant<int, 1>()); break;
      case 2: f(std::integral_constant<int, 2>()); break;
      case 3: f(std::integral_constant<int, 3>()); break;
      case 6: f(std::integral_constant<int, 6>()); break;
      default: f(std::integral_constant<int, 0>()); break;
    }
  }

  void Precondition(const double* r, double* z) {
    Dispatch([&](auto N) { PreconditionN<decltype(N)::value>(r, z); });
  }

  template <int N>
  void PreconditionN(const double* r, double* z) {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    double* t = t_.data();
    auto size = [&](int c) { return N ? N : clique_start_[c + 1] - clique_start_[c]; };
    // out_c = B_c⁻¹ t (t a separate buffer of the clique's size).
    auto apply_inverse = [&](int c, double* out) {
      const int n = size(c);
      const double* B = L_.data() + offset_[c];  // symmetric: row/column order is moot
      for (int a = 0; a < n; ++a) {
        double x = 0;
        for (int b = 0; b < n; ++b) x += B[a * n + b] * t[b];
        out[a] = x;
      }
    };
    // Forward: y_a = B_a⁻¹ (r_a − Σ_{b<a} H_ab y_b), into z.
    for (int a = 0; a < ncl; ++a) {
      const int s = clique_start_[a], n = size(a);
      for (int i = 0; i < n; ++i) t[i] = r[s + i];
      for (int k = row_start_[a]; k < row_start_[a + 1]; ++k) {
        const int b = col_[k], sb = clique_start_[b], nb = size(b);
        const double* blk = Ho_.data() + block_offset_[k];
        for (int i = 0; i < n; ++i) {
          double x = 0;
          for (int j = 0; j < nb; ++j) x += blk[i * nb + j] * z[sb + j];
          t[i] -= x;
        }
      }
      apply_inverse(a, z + s);
    }
    if (row_start_[ncl] == 0) return;
    // Backward: z_a = y_a − B_a⁻¹ Σ_{b>a} H_baᵀ z_b; once z_a is final its
    // H_abᵀ z_a is pushed to the rows b < a (acc_).
    double* acc = acc_.data();
    std::fill(acc, acc + model_->nv, 0.0);
    for (int a = ncl - 1; a >= 0; --a) {
      const int s = clique_start_[a], n = size(a);
      for (int i = 0; i < n; ++i) t[i] = acc[s + i];
      apply_inverse(a, acc + s);
      for (int i = 0; i < n; ++i) z[s + i] -= acc[s + i];
      for (int k = row_start_[a]; k < row_start_[a + 1]; ++k) {
        const int b = col_[k], sb = clique_start_[b], nb = size(b);
        const double* blk = Ho_.data() + block_offset_[k];
        for (int i = 0; i < n; ++i) {
          const double zi = z[s + i];
          for (int j = 0; j < nb; ++j) acc[sb + j] += blk[i * nb + j] * zi;
        }
      }
    }
  }

  // Hs_ = C_a⁻¹ H_ab C_b⁻ᵀ for every coupling block (a > b): the coupling of
  // H̃ = S H Sᵀ, S = diag(C_c⁻¹), whose clique blocks are identities. A
  // rank-one block −g j jᵀ becomes x yᵀ with x = −g C_a⁻¹ j, y = C_b⁻¹ j
  // (stored as x, then y); an empty one is left out. Also the sweeps' lists
  // of the non-empty blocks by row and by column, rank-one ones first.
  template <int N>
  void ScaleCoupling() {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    auto size = [&](int c) { return N ? N : clique_start_[c + 1] - clique_start_[c]; };
    double* W = t_.data();  // scratch ≥ widest² (Prepare)
    // The lists depend only on the blocks' states: kept while they are those
    // of the last build (same pattern, e.g. the later Newton iterations of a
    // solve once the active contacts settle).
    const size_t np = static_cast<size_t>(row_start_[ncl]);
    const bool keep = lists_ok_ && std::equal(state_.begin(), state_.begin() + np, listed_.begin());
    if (!keep) std::copy(state_.begin(), state_.begin() + np, listed_.begin());
    lists_ok_ = true;
    for (int a = 0; a < ncl; ++a) {
      const int na = size(a);
      const double* Ca = Ci_.data() + offset_[a];  // (i, m) at Ca[m * na + i], m ≤ i
      int dummy1, dummy2;
      int* e1 = keep ? &dummy1 : row_one_.data() + a;
      int* en = keep ? &dummy2 : row_end_.data() + a;
      *e1 = *en = row_start_[a];
      for (int k = row_start_[a]; k < row_start_[a + 1]; ++k) {
        if (state_[k] == kEmpty) continue;
        const int bq = col_[k], nb = size(bq);
        const double* Cb = Ci_.data() + offset_[bq];
        double* O = Hs_.data() + block_offset_[k];
        const Entry entry{N > 0 ? clique_start_[bq] : bq, static_cast<int>(block_offset_[k])};
        if constexpr (N > 0) {
          if (state_[k] == kRankOne) {
            const double* e = r1_.data() + static_cast<size_t>(k) * (N + 1);  // g, j
            for (int i = 0; i < N; ++i) {
              double x = 0, y = 0;
              for (int m = 0; m <= i; ++m) {
                x += Ca[m * N + i] * e[1 + m];
                y += Cb[m * N + i] * e[1 + m];
              }
              O[i] = -e[0] * x;
              O[N + i] = y;
            }
            // Rank-one entries first (in column order): the first dense one
            // moves to the end, so the dense ones are not in column order
            // (which only changes the rounding order of the sweeps' sums).
            if (!keep) {
              row_entry_[*en] = row_entry_[*e1];
              row_entry_[(*e1)++] = entry;
              ++*en;
            }
            continue;
          }
        }
        if (!keep) row_entry_[(*en)++] = entry;
        ScaleDense(Ho_.data() + block_offset_[k], Ca, Cb, na, nb, W, O);
      }
    }
    if (!keep) ListByColumn<N>(ncl);
  }

  // O = C_a⁻¹ H C_b⁻ᵀ of a dense na × nb coupling block H (W: scratch).
  static void ScaleDense(const double* H, const double* Ca, const double* Cb, int na, int nb,
                         double* W, double* O) {
    // W = H C_b⁻ᵀ: W(i, j) = Σ_{l ≤ j} H(i, l) C_b⁻¹(j, l).
    for (int i = 0; i < na; ++i)
      for (int j = 0; j < nb; ++j) {
        double sum = 0;
        for (int l = 0; l <= j; ++l) sum += H[i * nb + l] * Cb[l * nb + j];
        W[i * nb + j] = sum;
      }
    // O = C_a⁻¹ W: O(i, j) = Σ_{m ≤ i} C_a⁻¹(i, m) W(m, j).
    for (int i = 0; i < na; ++i)
      for (int j = 0; j < nb; ++j) {
        double sum = 0;
        for (int m = 0; m <= i; ++m) sum += Ca[m * na + i] * W[m * nb + j];
        O[i * nb + j] = sum;
      }
  }

  // The sweeps' list of the non-empty coupling blocks by column clique.
  template <int N>
  void ListByColumn(int ncl) {
    // By column clique, rank-one entries first as by row: those in row
    // order, the dense ones not (a rank-one entry moves the first dense one
    // to the end), which only changes the rounding order of the sweeps' sums.
    for (int b = 0; b < ncl; ++b) {
      int* e1 = col_one_.data() + b;
      int* en = col_end_.data() + b;
      *e1 = *en = col_start_[b];
      for (int q = col_start_[b]; q < col_start_[b + 1]; ++q) {
        const int k = col_block_[q];
        if (state_[k] == kEmpty) continue;
        const int cq = col_row_[q];
        const Entry entry{N > 0 ? clique_start_[cq] : cq, static_cast<int>(block_offset_[k])};
        if (state_[k] == kRankOne) {
          col_entry_[*en] = col_entry_[*e1];
          col_entry_[(*e1)++] = entry;
          ++*en;
        } else {
          col_entry_[(*en)++] = entry;
        }
      }
    }
  }

  // Split form's sweeps (SolveSplitN). out = Ẽ⁻¹ v (forward sweep, unit
  // diagonal). With N-dof cliques a clique's sums are kept in a local array
  // (in registers: the stores to `out` cannot alias them). A rank-one block
  // x yᵀ costs x (yᵀ v_b). With kDot also pᵀ(out + t), the iteration's
  // pᵀ K p̂ (K p̂ = t + out), summed in dof order as a separate pass would.
  template <int N, bool kDot>
  double SplitForward(const double* v, double* out) {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    auto size = [&](int c) { return N ? N : clique_start_[c + 1] - clique_start_[c]; };
    auto start = [&](int other) { return N > 0 ? other : clique_start_[other]; };
    const double* hs = Hs_.data();
    const Entry* rows = row_entry_.data();
    const double *p = p_.data(), *t = acc_.data();
    double pq = 0;
    for (int a = 0; a < ncl; ++a) {
      const int s0 = clique_start_[a], n = size(a);
      double local[N > 0 ? N : 1];
      double* o = N > 0 ? local : out + s0;
      for (int i = 0; i < n; ++i) o[i] = v[s0 + i];
      if constexpr (N > 0) {
        for (int e = row_start_[a]; e < row_one_[a]; ++e) {
          const double* xy = hs + rows[e].off;
          const double* ob = out + rows[e].other;
          double d = 0;
          for (int j = 0; j < N; ++j) d += xy[N + j] * ob[j];
          for (int i = 0; i < N; ++i) o[i] -= xy[i] * d;
        }
      }
      for (int e = row_one_[a]; e < row_end_[a]; ++e) {
        const int sb = start(rows[e].other), nb = N ? N : size(rows[e].other);
        const double* blk = hs + rows[e].off;
        for (int i = 0; i < n; ++i) {
          double sum = 0;
          for (int j = 0; j < nb; ++j) sum += blk[i * nb + j] * out[sb + j];
          o[i] -= sum;
        }
      }
      if constexpr (N > 0)
        for (int i = 0; i < N; ++i) out[s0 + i] = local[i];
      if constexpr (kDot)
        for (int i = 0; i < n; ++i) pq += p[s0 + i] * (o[i] + t[s0 + i]);
    }
    return pq;
  }

  // t = Ẽ⁻ᵀ v (backward sweep, gathered by column) and u = v − t.
  template <int N>
  void SplitBackward(const double* v) {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    auto size = [&](int c) { return N ? N : clique_start_[c + 1] - clique_start_[c]; };
    auto start = [&](int other) { return N > 0 ? other : clique_start_[other]; };
    const double* hs = Hs_.data();
    const Entry* cols = col_entry_.data();
    double *t = acc_.data(), *u = t_u_.data();
    for (int a = ncl - 1; a >= 0; --a) {
      const int s0 = clique_start_[a], n = size(a);
      double local[N > 0 ? N : 1];
      double* ta = N > 0 ? local : t + s0;
      for (int i = 0; i < n; ++i) ta[i] = v[s0 + i];
      if constexpr (N > 0) {
        for (int e = col_start_[a]; e < col_one_[a]; ++e) {  // (x yᵀ)ᵀ t_c = y (xᵀ t_c)
          const double* xy = hs + cols[e].off;
          const double* tc = t + cols[e].other;
          double d = 0;
          for (int j = 0; j < N; ++j) d += xy[j] * tc[j];
          for (int i = 0; i < N; ++i) ta[i] -= xy[N + i] * d;
        }
      }
      for (int e = col_one_[a]; e < col_end_[a]; ++e) {
        const int sb = start(cols[e].other), nb = N ? N : size(cols[e].other);
        const double* blk = hs + cols[e].off;  // nb × n
        for (int j = 0; j < nb; ++j) {
          const double tj = t[sb + j];
          for (int i = 0; i < n; ++i) ta[i] -= blk[j * n + i] * tj;
        }
      }
      if constexpr (N > 0)
        for (int i = 0; i < N; ++i) t[s0 + i] = local[i];
      for (int i = 0; i < n; ++i) u[s0 + i] = v[s0 + i] - ta[i];
    }
  }

  // ‖C (r̂ + L̃ r̂)‖², the residual of H x = b.
  template <int N>
  double SplitResidual() {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    auto size = [&](int c) { return N ? N : clique_start_[c + 1] - clique_start_[c]; };
    auto start = [&](int other) { return N > 0 ? other : clique_start_[other]; };
    const double* hs = Hs_.data();
    const Entry* rows = row_entry_.data();
    const double* r = r_.data();
    double* tmp_all = z_.data();
    double rr = 0;
    for (int a = 0; a < ncl; ++a) {
      const int s0 = clique_start_[a], n = size(a);
      double local[N > 0 ? N : 1];
      double* tmp = N > 0 ? local : tmp_all;
      for (int i = 0; i < n; ++i) tmp[i] = r[s0 + i];
      if constexpr (N > 0) {
        for (int e = row_start_[a]; e < row_one_[a]; ++e) {
          const double* xy = hs + rows[e].off;
          const double* rb = r + rows[e].other;
          double d = 0;
          for (int j = 0; j < N; ++j) d += xy[N + j] * rb[j];
          for (int i = 0; i < N; ++i) tmp[i] += xy[i] * d;
        }
      }
      for (int e = row_one_[a]; e < row_end_[a]; ++e) {
        const int sb = start(rows[e].other), nb = N ? N : size(rows[e].other);
        const double* blk = hs + rows[e].off;
        for (int i = 0; i < n; ++i) {
          double sum = 0;
          for (int j = 0; j < nb; ++j) sum += blk[i * nb + j] * r[sb + j];
          tmp[i] += sum;
        }
      }
      const double* C = Cf_.data() + offset_[a];  // (i, m) at C[m * n + i], m ≤ i
      for (int i = 0; i < n; ++i) {
        double sum = 0;
        for (int m = 0; m <= i; ++m) sum += C[m * n + i] * tmp[m];
        rr += sum * sum;
      }
    }
    return rr;
  }

  // PCG with the preconditioner P = E B⁻¹ Eᵀ, E = B + L (cenic-math §8.4),
  // on the block-scaled system: with B_c = C_c C_cᵀ and S = diag(C_c⁻¹),
  // H̃ = S H Sᵀ = Ẽ + Ẽᵀ − I with Ẽ = I + L̃, L̃_ab = C_a⁻¹ H_ab C_b⁻ᵀ, and
  // P̃ = S P Sᵀ = Ẽ Ẽᵀ (PCG is invariant under the congruence: x = Sᵀ x̃).
  // Split form (Eisenstat's trick): plain CG on K = Ẽ⁻¹ H̃ Ẽ⁻ᵀ, right side
  // Ẽ⁻¹ S b; K p̂ = t + Ẽ⁻¹(p̂ − t) with t = Ẽ⁻ᵀ p̂: one backward and one forward
  // sweep over L̃ per iteration and no clique-block products; x̃ accumulates
  // α t. The residual of H x = b is r = S⁻¹ Ẽ r̂ = C (r̂ + L̃ r̂), formed (one
  // more pass over L̃) only once ‖r‖² estimated from ‖r̂‖² (the ratio at the
  // last check) is within 4× of the stopping threshold, then at every
  // iteration until it stops. Same iterates as the textbook form.
  template <int N>
  void SolveSplitN(const double* b, double* x) {
    const int nv = model_->nv;
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    auto size = [&](int c) { return N ? N : clique_start_[c + 1] - clique_start_[c]; };
    double *r = r_.data(), *p = p_.data(), *q = q_.data(), *xs = x_.data();
    double *t = acc_.data(), *u = t_u_.data();
    double bb = 0;
    for (int a = 0; a < ncl; ++a) {  // u = S b = C⁻¹ b per clique
      const int s0 = clique_start_[a], n = size(a);
      const double* Ci = Ci_.data() + offset_[a];
      for (int i = 0; i < n; ++i) {
        double sum = 0;
        for (int m = 0; m <= i; ++m) sum += Ci[m * n + i] * b[s0 + m];
        u[s0 + i] = sum;
        bb += b[s0 + i] * b[s0 + i];
      }
    }
    for (int i = 0; i < nv; ++i) xs[i] = 0;
    iterations_ = 0;
    const double stop = tolerance_ * tolerance_ * bb;
    SplitForward<N, false>(u, r);  // r̂ = Ẽ⁻¹ S b
    double rz = 0;
    for (int i = 0; i < nv; ++i) {
      p[i] = r[i];
      rz += r[i] * r[i];
    }
    double rr = bb;  // ‖r‖² where known
    bool known = true, check_each = false;
    double ratio = rz > 0 ? bb / rz : 1.0;  // ‖r‖² / ‖r̂‖² at the last check
    while (!(known && rr <= stop) && iterations_ < max_iterations_) {
      SplitBackward<N>(p);  // t = Ẽ⁻ᵀ p̂, u = p̂ − t
      // q = Ẽ⁻¹ u; K p̂ = t + Ẽ⁻¹(p̂ − t) = q + t, and pᵀ K p̂.
      const double pq = SplitForward<N, true>(u, q);
      if (!(pq > 0)) break;  // not positive definite along p (or breakdown): keep x
      const double alpha = rz / pq;
      double rz_new = 0;
      for (int i = 0; i < nv; ++i) {
        xs[i] += alpha * t[i];
        r[i] -= alpha * (q[i] + t[i]);
        rz_new += r[i] * r[i];
      }
      ++iterations_;
      known = check_each || ratio * rz_new <= 4 * stop;
      if (known) {
        rr = SplitResidual<N>();
        if (rz_new > 0) ratio = rr / rz_new;
        check_each = rr > stop;
        if (!check_each) break;
      }
      const double beta = rz_new / rz;
      rz = rz_new;
      for (int i = 0; i < nv; ++i) p[i] = r[i] + beta * p[i];
    }
    for (int a = 0; a < ncl; ++a) {  // x = Sᵀ x̃ = C⁻ᵀ x̃ per clique
      const int s0 = clique_start_[a], n = size(a);
      const double* Ci = Ci_.data() + offset_[a];
      for (int i = 0; i < n; ++i) {
        double sum = 0;
        for (int m = i; m < n; ++m) sum += Ci[i * n + m] * xs[s0 + m];
        x[s0 + i] = sum;
      }
    }
  }

  // y = H p = A p + Σ Jᵀ G J p, matrix-free at the bound data.
  void MultiplyH(const double* p, double* y) {
    const IcfModel& m = *model_;
    m.MultiplyA(p, y);
    auto add_pool = [&](const auto& pool, const auto& pd) {
      constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
      double u[R], Gu[R];
      for (int c = 0; c < pool.size(); ++c) {
        const double* G = pd.G.data() + R * R * c;
        if (AllZero(G, R * R)) continue;
        pool.rows.Multiply(c, p, u);
        for (int a = 0; a < R; ++a) {
          Gu[a] = 0;
          for (int b = 0; b < R; ++b) Gu[a] += G[R * a + b] * u[b];
        }
        pool.rows.MultiplyTransposeAdd(c, Gu, 1.0, y);
      }
    };
    ForEachPool(m, const_cast<IcfData&>(*data_), add_pool);
  }

  double tolerance_;
  int max_iterations_;
  int iterations_ = 0;
  const IcfModel* model_ = nullptr;
  const IcfData* data_ = nullptr;
  bool assembled_ = false;  // Hd_/Ho_ hold the H that Solve multiplies by
  bool inverses_ = false;   // L_ holds B_c⁻¹ of the last assembly
  int binds_ = 0;           // Bind calls since the last assembly
  int uniform_ = 0;         // dofs of every clique, 0 if they differ
  std::vector<int> clique_start_;
  std::vector<size_t> offset_;                 // clique block offsets in Hd_ and L_
  std::vector<double> Hd_, L_;                 // clique blocks of H and their inverses
  std::vector<double> Ha_;  // clique blocks of A alone (the model's, since Prepare)
  bool a_ready_ = false;
  static constexpr std::uint8_t kSkip = 0, kOne = 1, kPair = 2, kPairMirrorRow0 = 3, kPairMirror = 4;
  std::vector<std::uint8_t> contact_kind_;  // ClassifyContacts, since Prepare
  std::vector<int> contact_block_;
  bool contacts_ready_ = false;
  std::vector<std::uint64_t> pairs_;           // coupled clique pairs (a << 32 | b), a > b
  std::vector<int> cliques_, row_start_, col_;
  std::vector<int> runs_;  // AssembleAndFactor: starts of a constraint's clique runs
  std::vector<int> col_start_, col_block_, col_row_, fill_;  // coupling blocks by column clique
  std::vector<size_t> block_offset_;
  std::vector<double> Ho_;                     // coupling blocks H_ab, row-major
  std::vector<double> Cf_, Ci_;  // Cholesky factor C_c of each clique block and C_c⁻¹ (column-major)
  std::vector<double> Hs_;       // scaled coupling blocks C_a⁻¹ H_ab C_b⁻ᵀ, row-major (rank-one: x, y)
  // Per coupling block: nothing added yet, one rank-one term −g j jᵀ held
  // in r1_ (g, j), or dense in Ho_.
  static constexpr char kEmpty = 0, kRankOne = 1, kDense = 2;
  std::vector<char> state_;
  std::vector<std::uint64_t> last_pairs_;  // pairs_ of the last Prepare
  std::vector<char> listed_;  // the states the sweeps' lists were built for
  bool lists_ok_ = false;     // (false: none since the pattern was built)
  std::vector<double> r1_;
  bool coupling_dense_ = false;  // every block written out in Ho_ (DenseCoupling)
  // The sweeps' non-empty blocks of each row clique a (row_entry_ from
  // row_start_[a]: rank-one ones up to row_one_[a], dense ones up to
  // row_end_[a]) and of each column clique (col_entry_, col_start_,
  // col_one_, col_end_): the other clique and the block's offset in Hs_.
  struct Entry {
    int other;  // with N-dof cliques (uniform_) its first dof, else its index
    int off;
  };
  std::vector<Entry> row_entry_, col_entry_;
  std::vector<int> row_one_, row_end_, col_one_, col_end_;
  std::vector<double> r_, z_, p_, q_, x_, acc_, t_, t_u_;
};

}  // namespace

std::unique_ptr<LinearSolver> MakePcgSolver(double tolerance, int max_iterations) {
  return std::make_unique<PcgSolver>(tolerance, max_iterations);
}

}  // namespace mjcenic::icf::detail
