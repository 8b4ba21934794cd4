// Sparse Jacobian storage shared by every ICF constraint pool.
//
// Constraint c of a pool with kRows rows touches the (sorted, unique) dofs
// dofs(c) and owns a dense kRows x ndof(c) row-major block J(c), so that its
// constraint velocity is v_c = J(c) v[dofs(c)] (cenic-math.md §3.3).
// Memory only grows: after warm-up, Clear() + Add() never allocate.
#pragma once

#include <span>
#include <vector>

namespace mjcenic::icf {

template <int kRows>
class RowStore {
 public:
  static constexpr int rows = kRows;
  static constexpr int kFewDofs = 4;

  void Clear() {
    adr_.clear();
    num_.clear();
    jadr_.clear();
    dofs_.clear();
    J_.clear();
    single_ = true;
  }

  // Appends a constraint over `dofs` (sorted ascending, unique) and returns
  // its index; its Jacobian block is zero-initialized, fill it through J(c).
  // Rows of a few dofs (joint limits, actuators, friction loss: one dof) are
  // appended element by element: vector::insert and resize would call
  // memmove/memset for each, several times the cost of the row itself.
  int Add(std::span<const int> dofs) {
    const int c = static_cast<int>(adr_.size());
    const int n = static_cast<int>(dofs.size());
    adr_.push_back(static_cast<int>(dofs_.size()));
    num_.push_back(n);
    jadr_.push_back(static_cast<int>(J_.size()));
    single_ = single_ && kRows == 1 && n == 1;
    if (n <= kFewDofs) {
      for (int k = 0; k < n; ++k) dofs_.push_back(dofs[k]);
      for (int k = 0; k < kRows * n; ++k) J_.push_back(0.0);
    } else {
      dofs_.insert(dofs_.end(), dofs.begin(), dofs.end());
      J_.resize(J_.size() + kRows * dofs.size(), 0.0);
    }
    return c;
  }

  // Appends a constraint of one row on one dof (kRows == 1) with Jacobian
  // entry `value`: what Add({dof}) then J(c)[0] = value store, inline (five
  // push_backs; joint limits and actuators: docs/cenic-math.md §8.9).
  int AddSingle(int dof, double value) {
    static_assert(kRows == 1);
    const int c = static_cast<int>(adr_.size());
    adr_.push_back(static_cast<int>(dofs_.size()));
    num_.push_back(1);
    jadr_.push_back(static_cast<int>(J_.size()));
    dofs_.push_back(dof);
    J_.push_back(value);
    return c;
  }

  // A rebuild may keep the rows of the previous build that it would make
  // again (docs/cenic-math.md §8.9): true if constraint c exists and is one
  // row on `dof`; SetSingleJ then refills its Jacobian entry.
  bool IsSingleOn(int c, int dof) const {
    return c < size() && num_[c] == 1 && dofs_[adr_[c]] == dof;
  }
  void SetSingleJ(int c, double value) { J_[jadr_[c]] = value; }
  // Likewise for any row: true if constraint c exists and is over `dofs`;
  // ZeroJ then clears its Jacobian block as Add leaves it.
  bool IsOn(int c, std::span<const int> dofs) const {
    if (c >= size() || num_[c] != static_cast<int>(dofs.size())) return false;
    const int* own = dofs_.data() + adr_[c];
    for (size_t k = 0; k < dofs.size(); ++k)
      if (own[k] != dofs[k]) return false;
    return true;
  }
  void ZeroJ(int c) {
    double* Jc = J(c);
    for (int k = 0; k < kRows * num_[c]; ++k) Jc[k] = 0.0;
  }
  // Constraint c (not the last) refilled over other `dofs` in place, when
  // they fit in the storage it has up to constraint c + 1 (its dofs and its
  // zeroed block as Add leaves them): a rebuild whose row c lost or regained
  // a dof keeps every later row where it is instead of cutting the store at
  // c (docs/cenic-math.md §8.9: slider_crank's `backward` moment
  // row alternates between dofs {0, 1} and {1}). False if they do not fit.
  // The store may then have a gap: the one-dof shortcut is off.
  bool Refit(int c, std::span<const int> dofs) {
    const int n = static_cast<int>(dofs.size());
    if (c + 1 >= size() || adr_[c] + n > adr_[c + 1]) return false;
    num_[c] = n;
    int* own = dofs_.data() + adr_[c];
    for (int k = 0; k < n; ++k) own[k] = dofs[k];
    ZeroJ(c);
    single_ = false;
    return true;
  }
  // Refit for one row on one dof with Jacobian entry `value` (SetSingleJ).
  bool RefitSingle(int c, int dof, double value) {
    static_assert(kRows == 1);
    if (c + 1 >= size() || adr_[c] + 1 > adr_[c + 1]) return false;
    num_[c] = 1;
    dofs_[adr_[c]] = dof;
    J_[jadr_[c]] = value;
    single_ = false;
    return true;
  }
  // Drops the constraints from n on: the store is then what n Adds made.
  void Truncate(int n) {
    if (n >= size()) return;
    dofs_.resize(adr_[n]);
    J_.resize(jadr_[n]);
    adr_.resize(n);
    num_.resize(n);
    jadr_.resize(n);
    if (!single_) {  // (a refitted row may have left a gap: constraint c at dofs_[c])
      single_ = kRows == 1;
      for (int c = 0; c < n && single_; ++c) single_ = num_[c] == 1 && adr_[c] == c;
    }
  }

  int size() const { return static_cast<int>(adr_.size()); }
  // Every constraint so far is one row on one dof.
  bool all_single() const { return kRows == 1 && single_; }
  // With all_single(): constraint c's one dof is single_dofs()[c].
  const int* single_dofs() const { return dofs_.data(); }
  // With all_single(): constraint c's one entry of J is single_J()[c].
  const double* single_J() const { return J_.data(); }
  int ndof(int c) const { return num_[c]; }
  std::span<const int> dofs(int c) const {
    return {dofs_.data() + adr_[c], static_cast<size_t>(num_[c])};
  }
  double* J(int c) { return J_.data() + jadr_[c]; }
  const double* J(int c) const { return J_.data() + jadr_[c]; }

  // out[kRows] = J(c) v[dofs(c)]
  void Multiply(int c, const double* v, double* out) const {
    if (kRows == 1 && single_) {  // every row on one dof: dof c at dofs_[c], J at J_[c]
      out[0] = 0.0 + J_[c] * v[dofs_[c]];  // the loop's sum, bit for bit (also ±0)
      return;
    }
    const int n = num_[c];
    const int* dof = dofs_.data() + adr_[c];
    const double* Jc = J(c);
    if constexpr (kRows == 3) {  // one pass over the dofs, each row summed in dof order
      const double *J0 = Jc, *J1 = Jc + n, *J2 = Jc + 2 * n;
      double s0 = 0, s1 = 0, s2 = 0;
      for (int k = 0; k < n; ++k) {
        const double vk = v[dof[k]];
        s0 += J0[k] * vk;
        s1 += J1[k] * vk;
        s2 += J2[k] * vk;
      }
      out[0] = s0;
      out[1] = s1;
      out[2] = s2;
      return;
    }
    for (int r = 0; r < kRows; ++r) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += Jc[r * n + k] * v[dof[k]];
      out[r] = s;
    }
  }

  // MultiplyTransposeAdd for x = (x0, 0, 0) (three rows): each dof's sum
  // 0 + J₀x₀ + J₁·0 + J₂·0 is 0 + J₀x₀ to the bit (it is never −0, and adding
  // ±0 to it changes nothing), so only the first row is read.
  void MultiplyTransposeAddFirst(int c, double x0, double scale, double* g) const
    requires(kRows == 3)
  {
    const int n = num_[c];
    const int* dof = dofs_.data() + adr_[c];
    const double* J0 = J(c);
    for (int k = 0; k < n; ++k) g[dof[k]] += scale * (0.0 + J0[k] * x0);
  }
  // g[dofs(c)] += scale * J(c)^T x
  void MultiplyTransposeAdd(int c, const double* x, double scale, double* g) const {
    if (kRows == 1 && single_) {
      g[dofs_[c]] += scale * (0.0 + J_[c] * x[0]);
      return;
    }
    const int n = num_[c];
    const int* dof = dofs_.data() + adr_[c];
    const double* Jc = J(c);
    if constexpr (kRows == 3) {  // x read once (g and x never overlap)
      const double *J0 = Jc, *J1 = Jc + n, *J2 = Jc + 2 * n;
      const double x0 = x[0], x1 = x[1], x2 = x[2];
      for (int k = 0; k < n; ++k) {
        double s = 0;
        s += J0[k] * x0;
        s += J1[k] * x1;
        s += J2[k] * x2;
        g[dof[k]] += scale * s;
      }
      return;
    }
    for (int k = 0; k < n; ++k) {
      double s = 0;
      for (int r = 0; r < kRows; ++r) s += Jc[r * n + k] * x[r];
      g[dof[k]] += scale * s;
    }
  }

  // B (ndof x ndof, row-major) = J(c)^T G J(c), G is kRows x kRows row-major;
  // only the lower triangle B[i * ndof + k], k <= i, is written (B is
  // symmetric and every caller reads that half).
  void CongruenceTransform(int c, const double* G, double* B) const {
    const int n = num_[c];
    const double* Jc = J(c);
    if (kRows > 1) {
      // G = g e₀e₀ᵀ (a frictionless contact): B = g J₀ᵀJ₀, the products
      // below without their zero terms (equal up to the sign of a zero).
      bool rank_one = true;
      for (int q = 1; q < kRows * kRows; ++q) rank_one = rank_one && G[q] == 0.0;
      if (rank_one) {
        double gJ[64];
        for (int k0 = 0; k0 < n; k0 += 64) {
          const int kn = (n - k0 < 64) ? n - k0 : 64;
          for (int k = 0; k < kn; ++k) gJ[k] = G[0] * Jc[k0 + k];
          for (int i = k0; i < n; ++i) {
            const double a = Jc[i];
            const int kend = (i - k0 + 1 < kn) ? i - k0 + 1 : kn;
            double* Bi = B + i * n + k0;
            for (int k = 0; k < kend; ++k) Bi[k] = a * gJ[k];
          }
        }
        return;
      }
    }
    double GJ[kRows * 64];  // rows of G*J computed per column chunk
    for (int k0 = 0; k0 < n; k0 += 64) {
      const int kn = (n - k0 < 64) ? n - k0 : 64;
      for (int r = 0; r < kRows; ++r)
        for (int k = 0; k < kn; ++k) {
          double s = 0;
          for (int q = 0; q < kRows; ++q) s += G[r * kRows + q] * Jc[q * n + k0 + k];
          GJ[r * 64 + k] = s;
        }
      for (int i = k0; i < n; ++i) {
        // Column i of J in registers and one trip count k ≤ i − k0: the same
        // sums in the same order, without reloading J through B's alias.
        double a[kRows];
        for (int r = 0; r < kRows; ++r) a[r] = Jc[r * n + i];
        const int kend = (i - k0 + 1 < kn) ? i - k0 + 1 : kn;
        double* Bi = B + i * n + k0;
        for (int k = 0; k < kend; ++k) {
          double s = 0;
          for (int r = 0; r < kRows; ++r) s += a[r] * GJ[r * 64 + k];
          Bi[k] = s;
        }
      }
    }
  }

 private:
  std::vector<int> adr_, num_, jadr_, dofs_;
  std::vector<double> J_;
  // Every constraint so far has one row on one dof (joint limits, joint
  // actuators, dof friction loss): Multiply and MultiplyTransposeAdd skip the
  // offset tables, since constraint c then sits at dofs_[c] and J_[c].
  bool single_ = true;
};

}  // namespace mjcenic::icf
