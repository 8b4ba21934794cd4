// The sparse linear solver of the ICF Hessian (see linear_solver.h).
#include "mjcenic/icf/linear/internal.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <cholmod.h>

namespace mjcenic::icf::detail {

namespace {

// ----------------------------------------------------------------- sparse --

class SparseSolver final : public LinearSolver {
 public:
  SparseSolver() {
    cholmod_start(&cc_);
    cc_.nmethods = 1;
    cc_.method[0].ordering = CHOLMOD_AMD;
    cc_.postorder = 1;
    cc_.print = 0;
    // Clique blocks are small: a simplicial LDLᵀ beats supernodal BLAS calls
    // here (fewer BLAS calls on tiny supernodes).
    cc_.supernodal = CHOLMOD_SIMPLICIAL;
  }
  ~SparseSolver() override {
    Free();
    if (B_) cholmod_free_dense(&B_, &cc_);
    if (X_) cholmod_free_dense(&X_, &cc_);
    if (Y_) cholmod_free_dense(&Y_, &cc_);
    if (E_) cholmod_free_dense(&E_, &cc_);
    cholmod_finish(&cc_);
  }

  bool Prepare(const IcfModel& m) override {
    if (pairs_.capacity() == 0) {  // room for typical coupling sets: no growth later
      const size_t cap = 64 + 8 * m.clique_start.size();
      for (auto* v : {&pairs_, &stored_, &merged_}) v->reserve(cap);
      couple_.reserve(cap);
      couple_prefix_.reserve(cap);
    }
    // Clique pairs coupled by some constraint.
    CoupledCliquePairs(m, /*lower=*/false, &cliques_, &pairs_);

    const bool same_structure = A_ && n_ == m.nv && clique_start_ == m.clique_start;
    // Reuse pattern + analysis, or a new one (union with the old couplings
    // while that stays small).
    if (!UpdateCouplingPattern(same_structure, pairs_, &stored_, &merged_)) return false;
    BuildPattern(m);
    ++pattern_id_;
    ++analyses_;
    return true;
  }

  bool AssembleAndFactor(const IcfModel& m, const IcfData& d) override {
    double* x = static_cast<double*>(A_->x);
    std::fill(x, x + nnz_, 0.0);
    AccumulateHessian(m, d, &block_, [&](int i, int j, double val) { x[Locate(i, j)] += val; });
    // What cholmod_factorize does for a simplicial LDLᵀ, without its per-call
    // allocation of triu(A(p,p)) (a permuted transpose): S_ holds that
    // matrix's pattern from the analysis and receives A's values through
    // s_index_; cholmod_rowfac then factors it into L_ in place.
    double* sx = static_cast<double*>(S_->x);
    for (long k = 0; k < nnz_; ++k) sx[s_index_[k]] = x[k];
    cc_.status = CHOLMOD_OK;
    L_->is_ll = cc_.final_ll ? 1 : 0;
    const size_t grow2 = cc_.grow2;
    if (L_->xtype == CHOLMOD_PATTERN && cc_.final_pack) cc_.grow2 = 0;  // exact space
    double beta[2] = {0, 0};
    cholmod_rowfac(S_, nullptr, beta, 0, n_, L_, &cc_);
    cc_.grow2 = grow2;
    if (cc_.status >= CHOLMOD_OK && !cc_.final_asis)
      cholmod_change_factor(L_->xtype, L_->is_ll, false, cc_.final_pack, cc_.final_monotonic, L_,
                            &cc_);
    return cc_.status == CHOLMOD_OK && L_->minor == static_cast<size_t>(n_);
  }

  void Solve(const double* b, double* x) override {
    if (!L_->is_ll && !L_->is_super && L_->xtype == CHOLMOD_REAL) {
      // x = Pᵀ L⁻ᵀ D⁻¹ L⁻¹ P b on the simplicial LDLᵀ factor (D on L's
      // diagonal, unit diagonal implied): what cholmod_solve2 computes, without
      // its per-call workspace allocation.
      const int* lp = static_cast<const int*>(L_->p);
      const int* li = static_cast<const int*>(L_->i);
      const int* lnz = static_cast<const int*>(L_->nz);
      const double* lx = static_cast<const double*>(L_->x);
      const int* perm = static_cast<const int*>(L_->Perm);
      for (int k = 0; k < n_; ++k) y_[k] = b[perm ? perm[k] : k];
      for (int j = 0; j < n_; ++j) {
        const double yj = y_[j];
        for (int q = lp[j] + 1; q < lp[j] + lnz[j]; ++q) y_[li[q]] -= lx[q] * yj;
      }
      for (int j = 0; j < n_; ++j) y_[j] /= lx[lp[j]];
      for (int j = n_ - 1; j >= 0; --j) {
        double yj = y_[j];
        for (int q = lp[j] + 1; q < lp[j] + lnz[j]; ++q) yj -= lx[q] * y_[li[q]];
        y_[j] = yj;
      }
      for (int k = 0; k < n_; ++k) x[perm ? perm[k] : k] = y_[k];
      return;
    }
    double* bx = static_cast<double*>(B_->x);
    std::copy(b, b + n_, bx);
    cholmod_solve2(CHOLMOD_A, L_, B_, nullptr, &X_, nullptr, &Y_, &E_, &cc_);
    const double* xx = static_cast<const double*>(X_->x);
    std::copy(xx, xx + n_, x);
  }

  Eigen::MatrixXd DenseH() const override {
    Eigen::MatrixXd H = Eigen::MatrixXd::Zero(n_, n_);
    const int* p = static_cast<const int*>(A_->p);
    const int* i = static_cast<const int*>(A_->i);
    const double* x = static_cast<const double*>(A_->x);
    for (int j = 0; j < n_; ++j)
      for (int k = p[j]; k < p[j + 1]; ++k) {
        H(i[k], j) = x[k];
        H(j, i[k]) = x[k];
      }
    return H;
  }

 private:
  void Free() {
    if (L_) cholmod_free_factor(&L_, &cc_);
    if (A_) cholmod_free_sparse(&A_, &cc_);
    if (S_) cholmod_free_sparse(&S_, &cc_);
  }

  // S_ = triu(A(p,p)) for the fill-reducing permutation p = L_->Perm: entry
  // k of A (row i ≥ column j) lands at row min(p⁻¹i, p⁻¹j), column max(…),
  // rows sorted within each column; s_index_[k] is its position in S_.
  void BuildPermutedUpper() {
    const int* perm = static_cast<const int*>(L_->Perm);
    const int* ap = static_cast<const int*>(A_->p);
    const int* ai = static_cast<const int*>(A_->i);
    std::vector<int> pinv(n_);
    for (int k = 0; k < n_; ++k) pinv[perm ? perm[k] : k] = k;
    std::vector<std::array<long, 3>> entries;  // (column, row, k)
    entries.reserve(nnz_);
    for (int j = 0; j < n_; ++j)
      for (int k = ap[j]; k < ap[j + 1]; ++k) {
        const int a = pinv[ai[k]], b = pinv[j];
        entries.push_back({std::max(a, b), std::min(a, b), k});
      }
    std::sort(entries.begin(), entries.end());
    S_ = cholmod_allocate_sparse(n_, n_, nnz_, 1, 1, 1, CHOLMOD_REAL, &cc_);
    if (!S_) throw std::runtime_error("CHOLMOD allocation failed");
    int* sp = static_cast<int*>(S_->p);
    int* si = static_cast<int*>(S_->i);
    s_index_.assign(nnz_, 0);
    std::fill(sp, sp + n_ + 1, 0);
    for (long e = 0; e < nnz_; ++e) {
      ++sp[entries[e][0] + 1];
      si[e] = static_cast<int>(entries[e][1]);
      s_index_[entries[e][2]] = e;
    }
    for (int j = 0; j < n_; ++j) sp[j + 1] += sp[j];
  }

  // Lower-triangle CSC pattern: column j of clique c holds rows j..end(c)-1,
  // then all dofs of every coupled clique c' > c.
  void BuildPattern(const IcfModel& m) {
    Free();
    n_ = m.nv;
    clique_start_ = m.clique_start;
    clique_of_dof_ = m.clique_of_dof;
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    couple_adr_.assign(nc + 1, 0);
    for (std::uint64_t p : stored_) ++couple_adr_[(p >> 32) + 1];
    for (int c = 0; c < nc; ++c) couple_adr_[c + 1] += couple_adr_[c];
    couple_.resize(stored_.size());
    couple_prefix_.resize(stored_.size());
    couple_total_.assign(nc, 0);
    for (size_t k = 0; k < stored_.size(); ++k) {
      const int a = static_cast<int>(stored_[k] >> 32);
      const int b = static_cast<int>(stored_[k] & 0xffffffffu);
      couple_[k] = b;  // stored_ is sorted, so per clique a the b's ascend
      couple_prefix_[k] = couple_total_[a];
      couple_total_[a] += clique_start_[b + 1] - clique_start_[b];
    }
    nnz_ = 0;
    for (int j = 0; j < n_; ++j) {
      const int c = clique_of_dof_[j];
      nnz_ += (clique_start_[c + 1] - j) + couple_total_[c];
    }
    A_ = cholmod_allocate_sparse(n_, n_, nnz_, 1, 1, -1, CHOLMOD_REAL, &cc_);
    int* p = static_cast<int*>(A_->p);
    int* i = static_cast<int*>(A_->i);
    int pos = 0;
    for (int j = 0; j < n_; ++j) {
      p[j] = pos;
      const int c = clique_of_dof_[j];
      for (int r = j; r < clique_start_[c + 1]; ++r) i[pos++] = r;
      for (int k = couple_adr_[c]; k < couple_adr_[c + 1]; ++k)
        for (int r = clique_start_[couple_[k]]; r < clique_start_[couple_[k] + 1]; ++r)
          i[pos++] = r;
    }
    p[n_] = pos;
    L_ = cholmod_analyze(A_, &cc_);
    if (!L_) throw std::runtime_error("CHOLMOD symbolic analysis failed");
    BuildPermutedUpper();
    y_.assign(n_, 0.0);
    if (!B_ || static_cast<int>(B_->nrow) != n_) {
      if (B_) cholmod_free_dense(&B_, &cc_);
      B_ = cholmod_allocate_dense(n_, 1, n_, CHOLMOD_REAL, &cc_);
    }
  }

  int Locate(int i, int j) const {
    const int* p = static_cast<const int*>(A_->p);
    const int cj = clique_of_dof_[j], ci = clique_of_dof_[i];
    if (ci == cj) return p[j] + (i - j);
    const int* first = couple_.data() + couple_adr_[cj];
    const int* last = couple_.data() + couple_adr_[cj + 1];
    const int k = static_cast<int>(std::lower_bound(first, last, ci) - couple_.data());
    return p[j] + (clique_start_[cj + 1] - j) + couple_prefix_[k] + (i - clique_start_[ci]);
  }

  cholmod_common cc_;
  cholmod_sparse* A_ = nullptr;
  cholmod_sparse* S_ = nullptr;  // triu(A(p,p)), the matrix cholmod_rowfac factors
  std::vector<long> s_index_;    // position in S_ of each entry of A_
  std::vector<double> y_;        // Solve's permuted work vector
  cholmod_factor* L_ = nullptr;
  cholmod_dense *B_ = nullptr, *X_ = nullptr, *Y_ = nullptr, *E_ = nullptr;
  int n_ = 0;
  long nnz_ = 0;
  std::vector<int> clique_start_, clique_of_dof_, cliques_;
  std::vector<std::uint64_t> pairs_, stored_, merged_;
  std::vector<int> couple_adr_, couple_, couple_prefix_, couple_total_;
};

}  // namespace

std::unique_ptr<LinearSolver> MakeSparseSolver() {
  return std::make_unique<SparseSolver>();
}

}  // namespace mjcenic::icf::detail
