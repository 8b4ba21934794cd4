// Two factorizations of one Hessian compared through their solves: H x = b for
// a few right-hand sides, the same x to a relative tolerance. A kind whose
// DenseH() rebuilds H with another routine (the islands kind, which assembles
// straight into its factor's storage) is only tested through this.
#pragma once

#include <cmath>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "mjcenic/icf/linear/linear_solver.h"

namespace mjcenic::icf {

inline void ExpectSameSolves(LinearSolver* kind, LinearSolver* reference, int nv,
                             double rel = 1e-12) {
  for (int r = 0; r < 3; ++r) {
    Eigen::VectorXd b(nv), x_kind(nv), x_ref(nv);
    for (int i = 0; i < nv; ++i) b[i] = std::sin(1.7 * (r + 1) * i + r);
    kind->Solve(b.data(), x_kind.data());
    reference->Solve(b.data(), x_ref.data());
    EXPECT_LE((x_kind - x_ref).norm(), rel * x_ref.norm()) << "right-hand side " << r;
  }
}

}  // namespace mjcenic::icf
