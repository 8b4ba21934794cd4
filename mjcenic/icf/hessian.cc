#include "mjcenic/icf/hessian.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include <cholmod.h>

namespace mjcenic::icf {

namespace {

// In-place Cholesky of the column-major lower triangle of L (n × n);
// dinv[j] = 1 / L_jj. Plain loops: on the small tree blocks of the lowrank
// and block Hessians Eigen's dynamic-size kernels cost more in call overhead
// than in flops (cenic-math §8.6).
bool SmallCholesky(double* L, int n, double* dinv) {
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

// The distinct pairs of cliques (trees) that some constraint couples, sorted,
// packed (a << 32) | b with a > b when `lower`, else a < b (cenic-math §8.4).
// *cliques is scratch. The coupling pattern of the PCG, sparse and block
// Hessians.
void CoupledCliquePairs(const IcfModel& m, bool lower, std::vector<int>* cliques,
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
  collect(m.contacts);
  collect(m.limits);
  collect(m.couplings);
  collect(m.gains);
  collect(m.dry_friction);
  collect(m.contact_torques);
  std::sort(pairs->begin(), pairs->end());
  pairs->erase(std::unique(pairs->begin(), pairs->end()), pairs->end());
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
    CoupledCliquePairs(m, /*lower=*/false, &cliques_, &pairs_);

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

// --------------------------------------------------------------- low rank --

// H = B + V Vᵀ (cenic-math.md §8.6): B is block diagonal over the cliques
// (A plus every constraint whose dofs lie in one tree), V has one column per
// nonzero direction of G_i for the constraints that couple trees
// (V = J_iᵀ F_i with G_i = F_i F_iᵀ). Solves use the Woodbury identity
// H⁻¹ = B⁻¹ − B⁻¹V C⁻¹ VᵀB⁻¹ with the capacitance C = I + VᵀB⁻¹V (r × r,
// SPD), so a factorization costs Σ n_c³/3 for the blocks plus r³/3 for C:
// for a few wide coupling rows (tendons through many trees, a handful of
// body–body contacts) far less than a sparse Cholesky that fills in.
class LowRankHessian final : public HessianFactor {
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
    count(m.contacts);
    count(m.limits);
    count(m.couplings);
    count(m.gains);
    count(m.dry_friction);
    count(m.contact_torques);
    Grow(&seg_adr_, cols + 1);
    Grow(&seg_clique_, segs);
    Grow(&seg_off_, segs);
    Grow(&by_clique_, segs);
    Grow(&V_, values);
    Grow(&Y_, values);
    Grow(&C_, cols * cols);
    Grow(&t_, cols);
    return changed;
  }

  bool AssembleAndFactor(const IcfModel& m, const IcfData& d) override {
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    std::fill(H_.begin(), H_.end(), 0.0);
    auto add = [this](int i, int j, double x) {  // i ≥ j, same clique
      const int c = clique_of_dof_[i], s = clique_start_[c], n = clique_start_[c + 1] - s;
      H_[boff_[c] + static_cast<size_t>(j - s) * n + (i - s)] += x;  // column-major, lower
    };
    for (int i = 0; i < m.nv; ++i) {
      const int adr = m.M_rowadr[i], nnz = m.M_rownnz[i];
      for (int k = 0; k < nnz; ++k) add(i, m.M_colind[adr + k], m.M[adr + k]);
      add(i, i, m.h * m.D[i] + m.h * m.h * m.K[i]);
    }
    r_ = 0;
    size_t nseg = 0, nval = 0;
    seg_adr_[0] = 0;
    auto add_pool = [&](const auto& pool, const auto& pd) {
      constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
      using MatR = Eigen::Matrix<double, R, R>;
      for (int c = 0; c < pool.size(); ++c) {
        const double* G = pd.G.data() + R * R * c;
        bool zero = true;
        for (int q = 0; q < R * R; ++q) zero = zero && G[q] == 0.0;
        if (zero) continue;
        const auto dofs = pool.rows.dofs(c);
        if (dofs.empty()) continue;
        const int n = static_cast<int>(dofs.size());
        if (clique_of_dof_[dofs.front()] == clique_of_dof_[dofs.back()]) {
          if (static_cast<int>(block_.size()) < n * n) block_.resize(n * n);
          pool.rows.CongruenceTransform(c, G, block_.data());
          for (int a = 0; a < n; ++a)
            for (int b = 0; b <= a; ++b) add(dofs[a], dofs[b], block_[a * n + b]);
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
    };
    ForEachPool(m, const_cast<IcfData&>(d), add_pool);
    // B = LLᵀ per clique block (in place, lower triangle).
    std::copy(H_.begin(), H_.end(), L_.begin());
    for (int c = 0; c < nc; ++c) {
      const int n = clique_start_[c + 1] - clique_start_[c];
      if (n == 0) continue;
      if (n <= kSmallBlock) {
        if (!SmallCholesky(L_.data() + boff_[c], n, dinv_.data() + clique_start_[c])) return false;
        continue;
      }
      Eigen::Map<Eigen::MatrixXd> Lc(L_.data() + boff_[c], n, n);
      Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(Lc);
      if (llt.info() != Eigen::Success) return false;
    }
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
          for (int q = 0; q < w; ++q) s += va[q] * yb[q];
          C(ka, kb) += s;
        }
      }
    }
    if (r_ > 0) {
      Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(C);
      if (llt.info() != Eigen::Success) return false;
    }
    return true;
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
          for (int q = 0; q < w; ++q) s += v[q] * z_[s0 + q];
        }
        t_[k] = s;
      }
      Eigen::Map<const Eigen::MatrixXd> C(C_.data(), r_, r_);
      Eigen::Map<Eigen::VectorXd> t(t_.data(), r_);
      C.triangularView<Eigen::Lower>().solveInPlace(t);
      C.triangularView<Eigen::Lower>().adjoint().solveInPlace(t);
      for (int k = 0; k < r_; ++k)  // z −= B⁻¹V t
        for (int sg = seg_adr_[k]; sg < seg_adr_[k + 1]; ++sg) {
          const int cl = seg_clique_[sg], s0 = clique_start_[cl], w = clique_start_[cl + 1] - s0;
          const double* y = Y_.data() + seg_off_[sg];
          for (int q = 0; q < w; ++q) z_[s0 + q] -= t_[k] * y[q];
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
  // Tree blocks up to this size are factorized and solved with plain loops
  // (Eigen's dynamic-size kernels cost more in call overhead than in flops
  // on 6×6 blocks).
  static constexpr int kSmallBlock = 32;


  // y ← B_c⁻¹ y on clique c's factored block.
  void BlockSolve(int c, double* y) const {
    const int n = clique_start_[c + 1] - clique_start_[c];
    if (n == 0) return;
    if (n <= kSmallBlock) {
      const double* L = L_.data() + boff_[c];
      const double* dinv = dinv_.data() + clique_start_[c];
      for (int j = 0; j < n; ++j) {  // L z = y, column by column
        const double z = y[j] * dinv[j];
        y[j] = z;
        for (int i = j + 1; i < n; ++i) y[i] -= L[j * n + i] * z;
      }
      for (int i = n - 1; i >= 0; --i) {  // Lᵀ x = z, row i of Lᵀ is column i of L
        double x = y[i];
        for (int k = i + 1; k < n; ++k) x -= L[i * n + k] * y[k];
        y[i] = x * dinv[i];
      }
      return;
    }
    Eigen::Map<const Eigen::MatrixXd> Lc(L_.data() + boff_[c], n, n);
    Eigen::Map<Eigen::VectorXd> yc(y, n);
    Lc.triangularView<Eigen::Lower>().solveInPlace(yc);
    Lc.triangularView<Eigen::Lower>().adjoint().solveInPlace(yc);
  }

  int n_ = -1, r_ = 0;
  std::vector<int> clique_start_, clique_of_dof_, clique_count_, seg_adr_, seg_clique_;
  std::vector<size_t> boff_, seg_off_;
  std::vector<std::uint64_t> by_clique_;  // (column << 32) | segment, grouped by clique
  std::vector<double> H_, L_, V_, Y_, C_, t_, z_, dinv_;
};

// ------------------------------------------------------------------ block --

// Block Cholesky over the trees (cenic-math.md §8.7): H's nonzero blocks are
// the tree blocks and the pairs of trees coupled by a constraint; the trees
// are ordered by minimum degree on that graph, the fill is computed once per
// pattern (a few µs for ≤ kMaxBlockTrees trees: no CHOLMOD analysis), and the
// numeric factorization runs dense kernels on the blocks. The pattern keeps
// couplings that disappeared while the superset stays small (as the sparse
// kind does), storing explicit zeros, so contacts coming and going rarely
// trigger a new ordering.
class BlockHessian final : public HessianFactor {
 public:
  bool Prepare(const IcfModel& m) override {
    const int nc = static_cast<int>(m.clique_start.size()) - 1;
    if (pairs_.capacity() == 0) {
      const size_t cap = 64 + 8 * m.clique_start.size();
      for (auto* v : {&pairs_, &stored_, &merged_}) v->reserve(cap);
    }
    CoupledCliquePairs(m, /*lower=*/false, &cliques_, &pairs_);
    const bool same_structure = analysed_ && n_ == m.nv && clique_start_ == m.clique_start;
    const bool subset = same_structure && std::includes(stored_.begin(), stored_.end(),
                                                        pairs_.begin(), pairs_.end());
    const size_t budget = 2 * pairs_.size() + 16;
    if (subset && stored_.size() <= budget) return false;
    merged_.clear();
    if (same_structure)
      std::set_union(stored_.begin(), stored_.end(), pairs_.begin(), pairs_.end(),
                     std::back_inserter(merged_));
    if (merged_.size() > budget || merged_.empty()) merged_ = pairs_;
    stored_ = merged_;
    n_ = m.nv;
    clique_start_ = m.clique_start;
    clique_of_dof_ = m.clique_of_dof;
    Analyse(nc);
    analysed_ = true;
    ++pattern_id_;
    ++analyses_;
    return true;
  }

  bool AssembleAndFactor(const IcfModel& m, const IcfData& d) override {
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    std::fill(L_.begin(), L_.begin() + total_, 0.0);
    // A: tree blocks (lower triangles).
    for (int i = 0; i < m.nv; ++i) {
      const int c = clique_of_dof_[i], s0 = clique_start_[c], w = Size(c);
      double* Lc = L_.data() + Block(c, c);
      const int adr = m.M_rowadr[i], nnz = m.M_rownnz[i];
      for (int k = 0; k < nnz; ++k) Lc[(m.M_colind[adr + k] - s0) * w + (i - s0)] += m.M[adr + k];
      Lc[(i - s0) * w + (i - s0)] += m.h * m.D[i] + m.h * m.h * m.K[i];
    }
    // Σ JᵀGJ: one block lookup per pair of the constraint's dof runs (trees).
    auto add_pool = [&](const auto& pool, const auto& pd) {
      constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
      for (int c = 0; c < pool.size(); ++c) {
        const double* G = pd.G.data() + R * R * c;
        bool zero = true;
        for (int q = 0; q < R * R; ++q) zero = zero && G[q] == 0.0;
        if (zero) continue;
        const auto dofs = pool.rows.dofs(c);
        const int n = static_cast<int>(dofs.size());
        if (n == 0) continue;
        if (static_cast<int>(block_.size()) < n * n) block_.resize(n * n);
        const double* B = block_.data();
        pool.rows.CongruenceTransform(c, G, block_.data());
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
    };
    ForEachPool(m, const_cast<IcfData&>(d), add_pool);
    std::copy(L_.begin(), L_.begin() + total_, H_.begin());
    for (int k = 0; k < nc; ++k) {
      const int c = perm_[k], n = Size(c);
      if (n == 0) continue;
      double* Lkk = L_.data() + Block(c, c);
      double* dinv = dinv_.data() + clique_start_[c];
      if (!SmallCholesky(Lkk, n, dinv)) return false;  // L_kk in place
      const int a0 = adj_adr_[k], a1 = adj_adr_[k + 1];
      for (int a = a0; a < a1; ++a) {  // L_jk = A_jk L_kk⁻ᵀ, row by row
        const int cj = adj_[a], nj = Size(cj);
        double* Ljk = L_.data() + Block(cj, c);
        for (int r = 0; r < nj; ++r)
          for (int t = 0; t < n; ++t) {
            double x = Ljk[t * nj + r];
            for (int s = 0; s < t; ++s) x -= Ljk[s * nj + r] * Lkk[s * n + t];
            Ljk[t * nj + r] = x * dinv[t];
          }
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

  void Solve(const double* b, double* x) override {
    const int nc = static_cast<int>(clique_start_.size()) - 1;
    std::copy(b, b + n_, y_.begin());
    for (int k = 0; k < nc; ++k) {  // L y = b
      const int c = perm_[k], n = Size(c), s0 = clique_start_[c];
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
    for (int k = 0; k < nc; ++k) {
      const int c = perm_[k];
      block_of_[static_cast<size_t>(c) * nc + c] = off;
      off += static_cast<long>(Size(c)) * Size(c);
      for (int a = adj_adr_[k]; a < adj_adr_[k + 1]; ++a) {
        block_of_[static_cast<size_t>(adj_[a]) * nc + c] = off;
        off += static_cast<long>(Size(adj_[a])) * Size(c);
      }
    }
    total_ = off;
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
  std::vector<std::uint64_t> pairs_, stored_, merged_, graph_;
  std::vector<double> L_, H_, dinv_, y_;
};

// ---------------------------------------------------------------- islands --

// One dense lower-triangular block per island, factorized in place; for many
// small independent systems (a hundred robots, piles of separate objects)
// this costs Σ nᵢ³/3 and no sparse bookkeeping. When an island grows large
// and its trees are small, the whole system goes through BlockHessian.
class IslandHessian final : public HessianFactor {
 public:
  bool Prepare(const IcfModel& model) override {
    // An island of many small trees: block elimination over the tree graph
    // (§8.7) instead of its dense n³/3 (a settled pile of free bodies is one
    // or two islands of ~100 dofs whose coupling graph is sparse).
    const bool by_block = UseBlock(model);
    if (by_block) {
      const bool changed = graph_.Prepare(model) || !by_block_;
      by_block_ = true;
      last_island_.clear();  // back to dense blocks: a new partition
      if (changed) ++pattern_id_, ++analyses_;
      return changed;
    }
    const bool left_block = by_block_;
    by_block_ = false;
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
    const bool changed = island_ != last_island_ || left_block;
    if (changed) {
      last_island_ = island_;
      ++pattern_id_;
      ++analyses_;
    }
    return changed;
  }
  bool SetFrozen(const char* frozen) override {
    frozen_ = frozen;
    return !by_block_;  // the block factorization covers every island
  }
  bool AssembleAndFactor(const IcfModel& model, const IcfData& data) override {
    if (by_block_) return graph_.AssembleAndFactor(model, data);
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
    if (by_block_) return graph_.Solve(b, x);
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
    if (by_block_) return graph_.DenseH();
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

  // Islands larger than this are factorized by block elimination when the
  // trees qualify for it (≤ kMaxBlockTrees trees of ≤ kMaxBlockTreeDofs).
  static constexpr int kMaxDenseIslandDofs = 48;

 private:
  static bool UseBlock(const IcfModel& m) {
    if (m.largest_island <= kMaxDenseIslandDofs) return false;
    const int trees = static_cast<int>(m.clique_start.size()) - 1;
    if (trees > kMaxBlockTrees) return false;
    for (int c = 0; c < trees; ++c)
      if (m.clique_start[c + 1] - m.clique_start[c] > kMaxBlockTreeDofs) return false;
    return true;
  }

  BlockHessian graph_;
  bool by_block_ = false;
  std::vector<int> island_, last_island_, local_, size_, start_, order_;
  std::vector<size_t> offset_;
  std::vector<double> H_, L_, x_;
  const char* frozen_ = nullptr;  // per island, or null
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
  if (blocks >= 0.25 * full) return LinearSolverKind::kDense;
  // §8.6–§8.7: rows over three or more trees fill a Cholesky factor, the
  // Woodbury correction takes them at the cost of their rank; couplings of
  // pairs of trees only add edges to the tree graph, which the block
  // Cholesky factorizes with little fill.
  int wide = 0;
  const int rank = CouplingRank(m, &wide);
  if (wide > 0 && rank <= kMaxLowRank && rank <= m.nv) return LinearSolverKind::kLowRank;
  const int trees = static_cast<int>(m.clique_start.size()) - 1;
  int widest = 0;
  for (int c = 0; c < trees; ++c)
    widest = std::max(widest, m.clique_start[c + 1] - m.clique_start[c]);
  if (trees <= kMaxBlockTrees && widest <= kMaxBlockTreeDofs) return LinearSolverKind::kBlock;
  return rank <= kMaxLowRank && rank <= m.nv ? LinearSolverKind::kLowRank
                                             : LinearSolverKind::kSparse;
}

int CouplingRank(const IcfModel& m, int* wide) {
  int rank = 0, w = 0;
  auto count = [&](const auto& pool) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c) {
      const auto dofs = pool.rows.dofs(c);
      if (dofs.empty()) continue;
      const int first = m.clique_of_dof[dofs.front()], last = m.clique_of_dof[dofs.back()];
      if (first == last) continue;
      rank += R;
      if (wide) {
        for (int dof : dofs) {
          const int q = m.clique_of_dof[dof];
          if (q != first && q != last) {
            ++w;
            break;
          }
        }
      }
    }
  };
  count(m.contacts);
  count(m.limits);
  count(m.couplings);
  count(m.gains);
  count(m.dry_friction);
  count(m.contact_torques);
  if (wide) *wide = w;
  return rank;
}

std::unique_ptr<HessianFactor> MakeHessianFactor(LinearSolverKind kind, double pcg_tolerance,
                                                 int pcg_max_iterations) {
  if (kind == LinearSolverKind::kPcg)
    return std::make_unique<PcgHessian>(pcg_tolerance, pcg_max_iterations);
  if (kind == LinearSolverKind::kSparse) return std::make_unique<SparseHessian>();
  if (kind == LinearSolverKind::kLowRank) return std::make_unique<LowRankHessian>();
  if (kind == LinearSolverKind::kBlock) return std::make_unique<BlockHessian>();
  if (kind == LinearSolverKind::kIslands) return std::make_unique<IslandHessian>();
  return std::make_unique<DenseHessian>();
}

}  // namespace mjcenic::icf
