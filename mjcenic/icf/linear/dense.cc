// The dense linear solver of the ICF Hessian (see linear_solver.h).
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

// ------------------------------------------------------------------ dense --

// H (column-major lower triangle, n × n) assembled in place, dofs in reverse
// order, and factorized by FactorLower: the column Cholesky of §8.4 up to 128
// dofs, Eigen's blocked LLT above. MuJoCo numbers a parent dof before its
// children, so the reversed order eliminates leaves first: on a tree (plus a
// few couplings between branches) the factor keeps most of M's zeros, and
// the column Cholesky skips them (§8.4).
class DenseSolver final : public LinearSolver {
 public:
  bool Prepare(const IcfModel& model) override {
    if (n_ != model.nv) {
      n_ = model.nv;
      H_.assign(static_cast<size_t>(n_) * n_, 0.0);
      L_.assign(H_.size(), 0.0);
      dinv_.assign(n_, 0.0);
      y_.assign(n_, 0.0);
      ++pattern_id_;
      ++analyses_;
      return true;
    }
    return false;
  }
  bool AssembleAndFactor(const IcfModel& model, const IcfData& data) override {
    const int n = n_;
    double* H = H_.data();
    for (int j = 0; j < n; ++j)  // the lower triangle only
      std::fill(H + static_cast<size_t>(j) * n + j, H + static_cast<size_t>(j + 1) * n, 0.0);
    // Dof i at position n−1−i: term (i, j), i ≥ j, lands in the lower
    // triangle at (n−1−j, n−1−i).
    AccumulateHessian(model, data, &block_, [H, n](int i, int j, double x) {
      H[static_cast<size_t>(n - 1 - i) * n + (n - 1 - j)] += x;
    });
    for (int j = 0; j < n; ++j) {
      const size_t c = static_cast<size_t>(j) * n;
      std::copy(H + c + j, H + c + n, L_.data() + c + j);
    }
    return FactorLower(L_.data(), n, dinv_.data());
  }
  void Solve(const double* b, double* x) override {
    std::reverse_copy(b, b + n_, y_.data());
    SolveLower(L_.data(), n_, dinv_.data(), y_.data());
    std::reverse_copy(y_.begin(), y_.end(), x);
  }
  Eigen::MatrixXd DenseH() const override {
    Eigen::Map<const Eigen::MatrixXd> H(H_.data(), n_, n_);
    Eigen::MatrixXd full = H.selfadjointView<Eigen::Lower>();
    return full.reverse();  // back to dof order
  }

 private:
  int n_ = 0;
  std::vector<double> H_, L_, dinv_, y_;
};

}  // namespace

std::unique_ptr<LinearSolver> MakeDenseSolver() {
  return std::make_unique<DenseSolver>();
}

}  // namespace mjcenic::icf::detail
