#include "mjcenic/icf/hessian.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <type_traits>

#include <cholmod.h>

namespace mjcenic::icf {

namespace {

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
  auto add_pool = [&](const auto& pool, const auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c) {
      const double* G = pd.G.data() + R * R * c;
      bool zero = true;
      for (int q = 0; q < R * R; ++q) zero = zero && G[q] == 0.0;
      if (zero) continue;
      const auto dofs = pool.rows.dofs(c);
      if (dofs.empty() || !keep(dofs[0])) continue;
      const int n = static_cast<int>(dofs.size());
      if (static_cast<int>(scratch->size()) < n * n) scratch->resize(n * n);
      double* B = scratch->data();
      pool.rows.CongruenceTransform(c, G, B);
      for (int a = 0; a < n; ++a)
        for (int b = 0; b <= a; ++b) sink(dofs[a], dofs[b], B[a * n + b]);
    }
  };
  ForEachPool(m, const_cast<IcfData&>(d), add_pool);
}

template <class Sink>
void AccumulateHessian(const IcfModel& m, const IcfData& d, std::vector<double>* scratch,
                       Sink&& sink) {
  AccumulateHessian(m, d, scratch, std::forward<Sink>(sink), [](int) { return true; });
}


// ------------------------------------------------------------------ dense --

class DenseHessian final : public HessianFactor {
 public:
  bool Prepare(const IcfModel& model) override {
    if (H_.rows() != model.nv) {
      H_.resize(model.nv, model.nv);  // the LLT sizes itself once on the first compute()
      ++pattern_id_;
      ++analyses_;
      return true;
    }
    return false;
  }
  bool AssembleAndFactor(const IcfModel& model, const IcfData& data) override {
    H_.setZero();
    AccumulateHessian(model, data, &block_, [this](int i, int j, double x) { H_(i, j) += x; });
    llt_.compute(H_.selfadjointView<Eigen::Lower>());
    return llt_.info() == Eigen::Success;
  }
  void Solve(const double* b, double* x) override {
    const int n = static_cast<int>(H_.rows());
    Eigen::Map<Eigen::VectorXd> X(x, n);
    if (x != b) X = Eigen::Map<const Eigen::VectorXd>(b, n);
    llt_.solveInPlace(X);
  }
  Eigen::MatrixXd DenseH() const override {
    Eigen::MatrixXd full = H_.selfadjointView<Eigen::Lower>();
    return full;
  }

 private:
  Eigen::MatrixXd H_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
};

// ---------------------------------------------------------------- islands --

// One dense lower-triangular block per island, factorized in place; for many
// small independent systems (a hundred robots, piles of separate objects)
// this costs Σ nᵢ³/3 and no sparse bookkeeping.
class IslandHessian final : public HessianFactor {
 public:
  bool Prepare(const IcfModel& model) override {
    const int nv = model.nv;
    const int ni = std::max(model.num_islands, 1);
    island_.resize(nv);
    local_.resize(nv);
    size_.assign(ni, 0);
    for (int i = 0; i < nv; ++i) {
      const int isl = model.num_islands ? model.island_of_clique[model.clique_of_dof[i]] : 0;
      island_[i] = isl;
      local_[i] = size_[isl]++;
    }
    offset_.resize(ni + 1);
    start_.resize(ni + 1);
    offset_[0] = start_[0] = 0;
    for (int k = 0; k < ni; ++k) {
      offset_[k + 1] = offset_[k] + static_cast<size_t>(size_[k]) * size_[k];
      start_[k + 1] = start_[k] + size_[k];
    }
    // Dofs gathered island by island (position start_[isl] + local).
    order_.resize(nv);
    for (int i = 0; i < nv; ++i) order_[start_[island_[i]] + local_[i]] = i;
    if (H_.size() < offset_[ni]) H_.resize(offset_[ni]);
    if (L_.size() < offset_[ni]) L_.resize(offset_[ni]);
    x_.resize(nv);
    const bool changed = island_ != last_island_;
    if (changed) {
      last_island_ = island_;
      ++pattern_id_;
      ++analyses_;
    }
    return changed;
  }
  bool SetFrozen(const char* frozen) override {
    frozen_ = frozen;
    return true;
  }
  bool AssembleAndFactor(const IcfModel& model, const IcfData& data) override {
    const int ni = static_cast<int>(size_.size());
    auto frozen = [this](int k) { return frozen_ != nullptr && frozen_[k] != 0; };
    for (int k = 0; k < ni; ++k)
      if (!frozen(k)) std::fill(H_.begin() + offset_[k], H_.begin() + offset_[k + 1], 0.0);
    AccumulateHessian(
        model, data, &block_,
        [this](int i, int j, double x) {
          const int isl = island_[i], n = size_[isl];
          H_[offset_[isl] + static_cast<size_t>(local_[j]) * n + local_[i]] += x;  // column-major
        },
        [&](int dof) { return !frozen(island_[dof]); });
    for (int k = 0; k < ni; ++k) {
      if (size_[k] == 0 || frozen(k)) continue;
      std::copy(H_.begin() + offset_[k], H_.begin() + offset_[k + 1], L_.begin() + offset_[k]);
      Eigen::Map<Eigen::MatrixXd> Lk(L_.data() + offset_[k], size_[k], size_[k]);
      Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(Lk);  // in place, lower triangle
      if (llt.info() != Eigen::Success) return false;
    }
    return true;
  }
  void Solve(const double* b, double* x) override {
    const int nv = static_cast<int>(order_.size());
    for (int p = 0; p < nv; ++p) x_[p] = b[order_[p]];
    for (size_t k = 0; k < size_.size(); ++k) {
      const int n = size_[k];
      if (n == 0) continue;
      if (frozen_ && frozen_[k]) {
        std::fill(x_.begin() + start_[k], x_.begin() + start_[k] + n, 0.0);
        continue;
      }
      Eigen::Map<const Eigen::MatrixXd> Lk(L_.data() + offset_[k], n, n);
      Eigen::Map<Eigen::VectorXd> xk(x_.data() + start_[k], n);
      Lk.triangularView<Eigen::Lower>().solveInPlace(xk);
      Lk.triangularView<Eigen::Lower>().adjoint().solveInPlace(xk);
    }
    for (int p = 0; p < nv; ++p) x[order_[p]] = x_[p];
  }
  Eigen::MatrixXd DenseH() const override {
    const int nv = static_cast<int>(order_.size());
    Eigen::MatrixXd full = Eigen::MatrixXd::Zero(nv, nv);
    for (int i = 0; i < nv; ++i)
      for (int j = 0; j < nv; ++j)
        if (island_[i] == island_[j]) {
          const int a = std::max(local_[i], local_[j]), c = std::min(local_[i], local_[j]);
          full(i, j) = H_[offset_[island_[i]] + static_cast<size_t>(c) * size_[island_[i]] + a];
        }
    return full;
  }

 private:
  std::vector<int> island_, last_island_, local_, size_, start_, order_;
  std::vector<size_t> offset_;
  std::vector<double> H_, L_, x_;
  const char* frozen_ = nullptr;  // per island, or null
};

// -------------------------------------------------------------------- pcg --

// Conjugate gradients on H x = b, preconditioned by a block symmetric
// Gauss–Seidel sweep over the cliques (cenic-math §8.4). No factorization of
// H, so it pays off on one large island of many small trees (a pile of
// particles), where a sparse Cholesky fills in. AssembleAndFactor stores H
// block-sparse over cliques: a dense block per clique (and its inverse) and
// a dense block per pair of cliques coupled by a constraint, taken from the
// same J_iᵀ G_i J_i blocks the direct kinds assemble; CG multiplies by it and
// the preconditioner sweeps it. A Solve bound to a newer iterate than the
// assembly (Hessian reuse) multiplies matrix-free by the current H instead.
// Each iterate of CG started at 0 is a descent direction for the Newton step
// (the preconditioner is SPD), so an early stop is safe.
class PcgHessian final : public HessianFactor {
 public:
  explicit PcgHessian(double tolerance, int max_iterations)
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
    if (Hd_.size() < offset_[ncl]) Hd_.resize(offset_[ncl]);
    for (auto* v : {&r_, &z_, &p_, &q_, &x_, &acc_}) v->resize(nv);
    int widest = 0;
    for (int c = 0; c < ncl; ++c)
      widest = std::max(widest, model.clique_start[c + 1] - model.clique_start[c]);
    if (identity_.rows() < widest) identity_ = Eigen::MatrixXd::Identity(widest, widest);
    if (static_cast<int>(t_.size()) < widest) t_.resize(widest);
    uniform_ = ncl > 0 ? widest : 0;
    for (int c = 0; c < ncl; ++c)
      if (model.clique_start[c + 1] - model.clique_start[c] != widest) uniform_ = 0;
    const bool changed = clique_start_ != model.clique_start;
    if (changed) {
      clique_start_ = model.clique_start;
      ++pattern_id_;
      ++analyses_;
    }
    BuildCoupling(model);
    assembled_ = false;
    return changed;
  }

  bool AssembleAndFactor(const IcfModel& model, const IcfData& data) override {
    // Clique blocks of H (column-major, lower triangle) and the coupling
    // blocks (row-major, row clique > column clique).
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    std::fill(Hd_.begin(), Hd_.begin() + offset_[ncl], 0.0);
    std::fill(Ho_.begin(), Ho_.begin() + block_offset_[row_start_[ncl]], 0.0);
    const std::vector<int>& clique = model.clique_of_dof;
    int last_ci = -1, last_cj = -1;
    size_t last_block = 0;
    AccumulateHessian(model, data, &block_, [&](int i, int j, double x) {
      const int ci = clique[i], cj = clique[j];  // i ≥ j, so ci ≥ cj
      if (ci == cj) {
        const int s = clique_start_[ci], n = clique_start_[ci + 1] - s;
        Hd_[offset_[ci] + static_cast<size_t>(j - s) * n + (i - s)] += x;
        return;
      }
      if (ci != last_ci || cj != last_cj) {
        const int* first = col_.data() + row_start_[ci];
        const int* last = col_.data() + row_start_[ci + 1];
        const int k = static_cast<int>(std::lower_bound(first, last, cj) - col_.data());
        last_ci = ci, last_cj = cj, last_block = block_offset_[k];
      }
      const int nj = clique_start_[cj + 1] - clique_start_[cj];
      Ho_[last_block + static_cast<size_t>(i - clique_start_[ci]) * nj +
          (j - clique_start_[cj])] += x;
    });
    // Each clique block: full symmetric copy in Hd_, inverse in L_ (Cholesky,
    // then L⁻ᵀ L⁻¹), so the sweeps use plain small matrix–vector products.
    bool ok = true;
    Dispatch([&](auto N) { ok = InvertBlocks<decltype(N)::value>(); });
    if (!ok) return false;
    model_ = &model;
    data_ = &data;
    assembled_ = true;
    binds_ = 0;
    return true;
  }

  void SetIterative(double tolerance, int max_iterations) override {
    tolerance_ = tolerance;
    max_iterations_ = max_iterations;
  }

  void Bind(const IcfModel& model, const IcfData& data) override {
    model_ = &model;
    data_ = &data;
    // The first Bind after an assembly is the assembled iterate's own
    // direction; a later one (Hessian reuse) has a newer H.
    if (++binds_ > 1) assembled_ = false;
  }

  void Solve(const double* b, double* x) override {
    const int nv = model_->nv;
    double bb = 0;
    for (int i = 0; i < nv; ++i) {
      r_[i] = b[i];
      x_[i] = 0;
      bb += b[i] * b[i];
    }
    iterations_ = 0;
    const double stop = tolerance_ * tolerance_ * bb;
    Precondition(r_.data(), z_.data());
    double rz = 0;
    for (int i = 0; i < nv; ++i) {
      p_[i] = z_[i];
      rz += r_[i] * z_[i];
    }
    double rr = bb;
    while (rr > stop && iterations_ < max_iterations_) {
      if (assembled_) MultiplyAssembled(p_.data(), q_.data());
      else MultiplyH(p_.data(), q_.data());
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
    pairs_.clear();
    auto collect = [&](const auto& pool, const auto&) {
      for (int c = 0; c < pool.size(); ++c) {
        cliques_.clear();
        for (int dof : pool.rows.dofs(c)) {
          const int q = m.clique_of_dof[dof];
          if (cliques_.empty() || cliques_.back() != q) cliques_.push_back(q);
        }
        for (size_t a = 1; a < cliques_.size(); ++a)
          for (size_t b = 0; b < a; ++b)
            pairs_.push_back((static_cast<std::uint64_t>(cliques_[a]) << 32) | cliques_[b]);
      }
    };
    collect(m.contacts, 0);
    collect(m.limits, 0);
    collect(m.couplings, 0);
    collect(m.gains, 0);
    collect(m.dry_friction, 0);
    collect(m.contact_torques, 0);
    std::sort(pairs_.begin(), pairs_.end());
    pairs_.erase(std::unique(pairs_.begin(), pairs_.end()), pairs_.end());
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
    if (Ho_.size() < off) Ho_.resize(off);
  }

  // z = P⁻¹ r, P = (B + L) B⁻¹ (B + Lᵀ): one forward and one backward block
  // Gauss–Seidel sweep (B the clique blocks, L the coupling blocks below
  // them; cenic-math §8.4). SPD for SPD H. Block Jacobi (z = B⁻¹ r) while no
  // coupling blocks are stored.
  // Symmetrizes each clique block of Hd_ (lower triangle assembled) and
  // writes its inverse into L_: Cholesky B = LLᵀ, then B⁻¹ = L⁻ᵀL⁻¹, in
  // plain loops (the blocks are at most a few dofs; N = 0: sizes differ).
  template <int N>
  bool InvertBlocks() {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    double* T = identity_.data();  // scratch, ≥ n×n
    for (int c = 0; c < ncl; ++c) {
      const int n = N ? N : clique_start_[c + 1] - clique_start_[c];
      double* H = Hd_.data() + offset_[c];  // column-major: H[j*n + i] = (i, j)
      double* L = L_.data() + offset_[c];
      for (int j = 0; j < n; ++j)
        for (int i = j + 1; i < n; ++i) H[i * n + j] = H[j * n + i];
      // Cholesky into T (column-major lower).
      for (int j = 0; j < n; ++j) {
        double d = H[j * n + j];
        for (int k = 0; k < j; ++k) d -= T[k * n + j] * T[k * n + j];
        if (!(d > 0)) return false;
        const double ljj = std::sqrt(d);
        T[j * n + j] = ljj;
        for (int i = j + 1; i < n; ++i) {
          double x = H[j * n + i];
          for (int k = 0; k < j; ++k) x -= T[k * n + i] * T[k * n + j];
          T[j * n + i] = x / ljj;
        }
      }
      // T ← L⁻¹ in place (lower), column by column from the right.
      for (int j = n - 1; j >= 0; --j) {
        T[j * n + j] = 1.0 / T[j * n + j];
        for (int i = n - 1; i > j; --i) {
          double x = 0;
          for (int k = j + 1; k <= i; ++k) x += T[k * n + i] * T[j * n + k];
          T[j * n + i] = -x * T[j * n + j];
        }
      }
      // L_c = L⁻ᵀ L⁻¹: (a, b) = Σ_{k ≥ max(a,b)} L⁻¹(k, a) L⁻¹(k, b).
      for (int a = 0; a < n; ++a)
        for (int b = 0; b <= a; ++b) {
          double x = 0;
          for (int k = a; k < n; ++k) x += T[a * n + k] * T[b * n + k];
          L[b * n + a] = L[a * n + b] = x;
        }
    }
    return true;
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
  void MultiplyAssembled(const double* p, double* y) {
    Dispatch([&](auto N) { MultiplyAssembledN<decltype(N)::value>(p, y); });
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

  // y = H p with the assembled blocks.
  template <int N>
  void MultiplyAssembledN(const double* p, double* y) const {
    const int ncl = static_cast<int>(clique_start_.size()) - 1;
    auto size = [&](int c) { return N ? N : clique_start_[c + 1] - clique_start_[c]; };
    for (int c = 0; c < ncl; ++c) {
      const int s = clique_start_[c], n = size(c);
      const double* B = Hd_.data() + offset_[c];  // full symmetric
      for (int a = 0; a < n; ++a) {
        double x = 0;
        for (int b = 0; b < n; ++b) x += B[a * n + b] * p[s + b];
        y[s + a] = x;
      }
    }
    for (int a = 0; a < ncl; ++a) {
      const int s = clique_start_[a], n = size(a);
      for (int k = row_start_[a]; k < row_start_[a + 1]; ++k) {
        const int b = col_[k], sb = clique_start_[b], nb = size(b);
        const double* blk = Ho_.data() + block_offset_[k];
        for (int i = 0; i < n; ++i) {
          double x = 0;
          const double pi = p[s + i];
          for (int j = 0; j < nb; ++j) {
            x += blk[i * nb + j] * p[sb + j];
            y[sb + j] += blk[i * nb + j] * pi;
          }
          y[s + i] += x;
        }
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
        bool zero = true;
        for (int q = 0; q < R * R; ++q) zero = zero && G[q] == 0.0;
        if (zero) continue;
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
  int binds_ = 0;           // Bind calls since the last assembly
  int uniform_ = 0;         // dofs of every clique, 0 if they differ
  std::vector<int> clique_start_;
  std::vector<size_t> offset_;                 // clique block offsets in Hd_ and L_
  std::vector<double> Hd_, L_;                 // clique blocks of H and their inverses
  std::vector<std::uint64_t> pairs_;           // coupled clique pairs (a << 32 | b), a > b
  std::vector<int> cliques_, row_start_, col_;
  std::vector<size_t> block_offset_;
  std::vector<double> Ho_;                     // coupling blocks H_ab, row-major
  std::vector<double> r_, z_, p_, q_, x_, acc_, t_;
  Eigen::MatrixXd identity_;  // scratch of the widest clique block (InvertBlocks)
};

// ----------------------------------------------------------------- sparse --

class SparseHessian final : public HessianFactor {
 public:
  SparseHessian() {
    cholmod_start(&cc_);
    cc_.nmethods = 1;
    cc_.method[0].ordering = CHOLMOD_AMD;
    cc_.postorder = 1;
    cc_.print = 0;
    // Clique blocks are small: a simplicial LDLᵀ beats supernodal BLAS calls
    // here (fewer BLAS calls on tiny supernodes).
    cc_.supernodal = CHOLMOD_SIMPLICIAL;
  }
  ~SparseHessian() override {
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
    pairs_.clear();
    auto collect = [&](const auto& pool, const auto&) {
      for (int c = 0; c < pool.size(); ++c) {
        const auto dofs = pool.rows.dofs(c);
        cliques_.clear();
        for (int dof : dofs) {
          const int q = m.clique_of_dof[dof];
          if (cliques_.empty() || cliques_.back() != q) cliques_.push_back(q);
        }
        for (size_t a = 0; a < cliques_.size(); ++a)
          for (size_t b = a + 1; b < cliques_.size(); ++b)
            pairs_.push_back((static_cast<std::uint64_t>(cliques_[a]) << 32) | cliques_[b]);
      }
    };
    collect(m.contacts, 0);
    collect(m.limits, 0);
    collect(m.couplings, 0);
    collect(m.gains, 0);
    collect(m.dry_friction, 0);
    collect(m.contact_torques, 0);
    std::sort(pairs_.begin(), pairs_.end());
    pairs_.erase(std::unique(pairs_.begin(), pairs_.end()), pairs_.end());

    const bool same_structure = A_ && n_ == m.nv && clique_start_ == m.clique_start;
    const bool subset = same_structure && std::includes(stored_.begin(), stored_.end(),
                                                        pairs_.begin(), pairs_.end());
    const size_t budget = 2 * pairs_.size() + 16;
    if (subset && stored_.size() <= budget) return false;  // reuse pattern + analysis
    // New pattern: union with the old couplings while that stays small.
    merged_.clear();
    if (same_structure)
      std::set_union(stored_.begin(), stored_.end(), pairs_.begin(), pairs_.end(),
                     std::back_inserter(merged_));
    if (merged_.size() > budget || merged_.empty()) merged_ = pairs_;
    stored_ = merged_;
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

LinearSolverKind ChooseLinearSolver(const IcfModel& m, LinearSolverKind requested) {
  if (requested != LinearSolverKind::kAuto) return requested;
  if (m.num_islands > 1) {
    const int trees = std::max<int>(static_cast<int>(m.clique_start.size()) - 1, 1);
    const bool large_trees = m.nv >= kMinTreeDofsForLargeIslands * trees;
    if (m.largest_island <= (large_trees ? kMaxIslandDofsLargeTrees : kMaxIslandDofs))
      return LinearSolverKind::kIslands;
  }
  if (m.nv < 64) return LinearSolverKind::kDense;
  if (m.largest_island >= kMinPcgDofs) {
    int widest = 0;
    for (size_t c = 0; c + 1 < m.clique_start.size(); ++c)
      widest = std::max(widest, m.clique_start[c + 1] - m.clique_start[c]);
    if (widest <= kMaxPcgCliqueDofs) return LinearSolverKind::kPcg;
  }
  // Fraction of the lower triangle covered by the clique blocks.
  double blocks = 0;
  for (size_t c = 0; c + 1 < m.clique_start.size(); ++c) {
    const double n = m.clique_start[c + 1] - m.clique_start[c];
    blocks += 0.5 * n * (n + 1);
  }
  const double full = 0.5 * m.nv * (m.nv + 1.0);
  return blocks < 0.25 * full ? LinearSolverKind::kSparse : LinearSolverKind::kDense;
}

std::unique_ptr<HessianFactor> MakeHessianFactor(LinearSolverKind kind, double pcg_tolerance,
                                                 int pcg_max_iterations) {
  if (kind == LinearSolverKind::kPcg)
    return std::make_unique<PcgHessian>(pcg_tolerance, pcg_max_iterations);
  if (kind == LinearSolverKind::kSparse) return std::make_unique<SparseHessian>();
  if (kind == LinearSolverKind::kIslands) return std::make_unique<IslandHessian>();
  return std::make_unique<DenseHessian>();
}

}  // namespace mjcenic::icf
