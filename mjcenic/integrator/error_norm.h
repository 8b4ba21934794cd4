// CENIC error norm (cenic-math.md §11.3, mapping §7.3–7.4): the difference of
// two configurations in the tangent space (mj_differentiatePos, so quaternions
// are compared by rotation angle), weighted per dof and measured with the
// ∞-norm. Velocities are excluded by default (impacts make velocity errors
// spike while positions stay accurate, paper §V-E).
#pragma once

#include <vector>

#include <mujoco/mujoco.h>

namespace mjcenic {

enum class ErrorNormKind {
  kWeighted,   // translations / L, rotations in radians (default)
  kDrake,      // raw qpos components, unweighted (Drake's S = I)
  kFullState,  // kWeighted plus velocities · (1 s / L)  (for comparison only)
};
const char* ToString(ErrorNormKind k);

class ErrorNorm {
 public:
  // length_scale ≤ 0 picks the model's: mean dof_length of rotational dofs.
  ErrorNorm(const mjModel* m, ErrorNormKind kind, double length_scale);
  // ‖(q_a, v_a) − (q_b, v_b)‖; worst receives the dof (or qpos index for
  // kDrake) with the largest weighted error.
  double Compute(const mjModel* m, const double* qa, const double* va, const double* qb,
                 const double* vb, int* worst);
  double length_scale() const { return L_; }
  ErrorNormKind kind() const { return kind_; }

 private:
  ErrorNormKind kind_;
  double L_ = 1;
  std::vector<double> weight_, dq_;
};

}  // namespace mjcenic
