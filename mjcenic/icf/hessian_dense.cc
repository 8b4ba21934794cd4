// The dense linear solver of the ICF Hessian (see hessian.h).
#include "mjcenic/icf/hessian_internal.h"

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

}  // namespace

std::unique_ptr<HessianFactor> MakeDenseHessian() {
  return std::make_unique<DenseHessian>();
}

}  // namespace mjcenic::icf::detail
