// The tree linear solver of the ICF Hessian (see linear_solver.h): LDLᵀ on the
// sparsity of the mass matrix itself, no fill (cenic-math.md §8.8).
#include "mjcenic/icf/linear/internal.h"

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

namespace mjcenic::icf::detail {

namespace {

// Row i of M (CSR, columns ascending, diagonal last) holds dof i and its
// ancestors in the kinematic tree. When every constraint's dofs lie on one
// root-to-leaf chain, J_iᵀ G_i J_i only adds to entries (i, j) with j an
// ancestor of i, so H = A + Σ JᵀGJ keeps M's pattern, and eliminating the
// dofs from the leaves up (highest index first) creates no fill:
// H = Lᵀ D L, L unit lower triangular with the pattern of M.
// ChooseLinearSolver only picks this kind when ConstraintsFollowTree().
class TreeSolver final : public LinearSolver {
  // Constraints over at most this many dofs (RowStore::CongruenceTransform's
  // column chunk) have JᵀGJ added term by term (AssembleAndFactor).
  static constexpr int kFusedDofs = 64;

  // row_i[0..n) −= s row_k[0..n): two different rows of the factor.
  static void Update(double* __restrict row_i, const double* __restrict row_k, double s, int n) {
    // Two entries per pass (one SSE2 pair, no vector prologue or epilogue:
    // the rows of a robot's chain are a handful of entries; cenic-math §8.9).
    int t = 0;
    for (; t + 1 < n; t += 2) {
      row_i[t] -= s * row_k[t];
      row_i[t + 1] -= s * row_k[t + 1];
    }
    if (t < n) row_i[t] -= s * row_k[t];
  }

  // Σ JᵢᵀGᵢJᵢ of one pool added into H_ (constraints with Gᵢ = 0 skipped),
  // in AccumulateConstraintHessians' order; false if a constraint's dofs
  // leave the pattern (see AssembleAndFactor).
  template <class Pool, class Data>
  bool AddPool(const Pool& pool, const Data& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c) {
      const double* G = pd.G.data() + R * R * c;
      if (AllZero(G, R * R)) continue;
      const auto dofs = pool.rows.dofs(c);
      const int nd = static_cast<int>(dofs.size());
      if (nd == 0) continue;
      const double* J = pool.rows.J(c);
      if (nd == 1) {  // one dof: its diagonal, always in the pattern (diagonal last)
        double gj[R], b = 0;
        for (int r = 0; r < R; ++r) {
          gj[r] = 0;
          for (int q = 0; q < R; ++q) gj[r] += G[r * R + q] * J[q];
        }
        for (int r = 0; r < R; ++r) b += J[r] * gj[r];
        H_[rowadr_[dofs[0]] + rownnz_[dofs[0]] - 1] += b;
        continue;
      }
      if (nd > static_cast<int>(pos_.size())) {  // dofs are distinct: not reached
        return false;
      }
      const int* last_row = colind_.data() + rowadr_[dofs[nd - 1]];
      const int last_nnz = rownnz_[dofs[nd - 1]];
      int* pos = pos_.data();
      for (int b = 0; b < nd; ++b) {
        const int q = rownnz_[dofs[b]] - 1;
        if (q >= last_nnz || last_row[q] != dofs[b]) {
          return false;
        }
        pos[b] = q;
      }
      if (nd > kFusedDofs) {  // CongruenceTransform's column chunks: the block, then H
        if (static_cast<int>(block_.size()) < nd * nd) block_.resize(nd * nd);
        double* B = block_.data();
        pool.rows.CongruenceTransform(c, G, B);
        for (int a = 0; a < nd; ++a) {
          double* Ha = H_.data() + rowadr_[dofs[a]];
          const double* Ba = B + a * nd;
          for (int b = 0; b <= a; ++b) Ha[pos[b]] += Ba[b];
        }
        continue;
      }
      CongruenceTermsUpTo<R, kFusedDofs>(J, G, nd, [&](int a, int b, double x) {
        H_[rowadr_[dofs[a]] + pos[b]] += x;
      });
    }
    return true;
  }

  // L = LDLᵀ of H_ in place of M's pattern (§8.8); false if not positive definite.
  bool Factor() {
    const int n = static_cast<int>(rowadr_.size());
    std::copy(H_.begin(), H_.end(), L_.begin());
    double* L = L_.data();
    for (int k = n - 1; k >= 0; --k) {
      const int adr = rowadr_[k], off = rownnz_[k] - 1;  // off-diagonal entries of row k
      const double dk = L[adr + off];
      if (!(dk > 0)) return false;
      const double inv = 1.0 / dk;
      // For each ancestor i of k (position q in row k): the row of i is the
      // prefix of row k up to and including i, entry for entry.
      const double* row_k = L + adr;
      for (int q = off - 1; q >= 0; --q) {
        const double s = row_k[q] * inv;
        Update(L + rowadr_[colind_[adr + q]], row_k, s, q + 1);
      }
      for (int q = 0; q < off; ++q) L[adr + q] *= inv;
    }
    return true;
  }

 public:
  bool Prepare(const IcfModel& m) override {
    if (m.M_rowadr == rowadr_ && m.M_rownnz == rownnz_ && m.M_colind == colind_) return false;
    tree_layout_ = MassMatrixHasTreeLayout(m);
    rowadr_ = m.M_rowadr;
    rownnz_ = m.M_rownnz;
    colind_ = m.M_colind;
    H_.resize(colind_.size());
    L_.resize(colind_.size());
    pos_.resize(rowadr_.size());  // a constraint has at most nv dofs
    ++pattern_id_;
    ++analyses_;
    return true;
  }

  bool AssembleAndFactor(const IcfModel& m, const IcfData& data) override {
    const int n = m.nv;
    std::copy(m.M.begin(), m.M.begin() + static_cast<long>(H_.size()), H_.begin());
    for (int i = 0; i < n; ++i)
      H_[rowadr_[i] + rownnz_[i] - 1] += m.h * m.D[i] + m.h * m.h * m.K[i];
    // Σ JᵢᵀGᵢJᵢ (constraints with Gᵢ = 0 skipped), in AccumulateConstraintHessians'
    // order. With M's tree layout the row of a dof is the row of its parent
    // followed by itself, so along one root-to-leaf chain every row is a
    // prefix of the next and dof d sits at position rownnz(d) − 1 of the row
    // of each dof below it: term (dofs[a], dofs[b]), b ≤ a, is entry
    // rownnz(dofs[b]) − 1 of row dofs[a], no search. One check per dof that
    // it does lie on the chain of the constraint's last dof.
    bool in_pattern = tree_layout_;
    // Per constraint: its dofs' positions in the rows (pattern check), then
    // JᵀGJ added straight into H: CongruenceTransform's sums for each term,
    // in its order, each added once to its entry (the same bits as forming
    // the block first, without storing and re-reading it; cenic-math §8.9).
    ForEachPool(m, data, [&](const auto& pool, const auto& pd) {
      in_pattern = in_pattern && AddPool(pool, pd);
    });
    if (!in_pattern) return false;  // not reached: ChooseLinearSolver checked the chains
    return Factor();
  }

  void Solve(const double* b, double* x) override {
    const int n = static_cast<int>(rowadr_.size());
    if (x != b) std::copy(b, b + n, x);
    const double* L = L_.data();
    // Lᵀ y = b: dof k, once complete, pushes its value to its ancestors.
    for (int k = n - 1; k >= 0; --k) {
      const int adr = rowadr_[k], off = rownnz_[k] - 1;
      const double xk = x[k];
      for (int q = 0; q < off; ++q) x[colind_[adr + q]] -= L[adr + q] * xk;
    }
    for (int k = 0; k < n; ++k) x[k] /= L[rowadr_[k] + rownnz_[k] - 1];
    // L x = z: ancestors first.
    for (int k = 0; k < n; ++k) {
      const int adr = rowadr_[k], off = rownnz_[k] - 1;
      double s = x[k];
      for (int q = 0; q < off; ++q) s -= L[adr + q] * x[colind_[adr + q]];
      x[k] = s;
    }
  }

  Eigen::MatrixXd DenseH() const override {
    const int n = static_cast<int>(rowadr_.size());
    Eigen::MatrixXd full = Eigen::MatrixXd::Zero(n, n);
    for (int i = 0; i < n; ++i)
      for (int q = 0; q < rownnz_[i]; ++q) {
        const int j = colind_[rowadr_[i] + q];
        full(i, j) = full(j, i) = H_[rowadr_[i] + q];
      }
    return full;
  }

 private:
  std::vector<int> rowadr_, rownnz_, colind_;
  bool tree_layout_ = false;  // MassMatrixHasTreeLayout at the last Prepare
  std::vector<int> pos_;       // scratch: each dof's position in the rows of a constraint
  std::vector<double> H_, L_;  // H in M's layout; its factor (L off the diagonal, D on it)
};

}  // namespace

std::unique_ptr<LinearSolver> MakeTreeSolver() { return std::make_unique<TreeSolver>(); }

}  // namespace mjcenic::icf::detail
