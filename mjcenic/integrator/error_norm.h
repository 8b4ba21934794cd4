// CENIC error norm (cenic-math.md §11.3, mapping §7.3–7.4): the difference of
// two configurations in the tangent space (mj_differentiatePos, so quaternions
// are compared by rotation angle), weighted per dof and measured with the
// ∞-norm. Velocities are excluded by default (impacts make velocity errors
// spike while positions stay accurate, paper §V-E). Actuator activations
// (mjData.act) are part of every norm kind, each divided by its natural range
// (actrange, else ctrlrange for filters/integrators, else 1; muscles 1), so a
// stiff activation filter limits the step where it changes the force.
#pragma once

#include <string>
#include <vector>

#include <mujoco/mujoco.h>

namespace mjcenic {

enum class ErrorNormKind {
  kWeighted,   // translations / L, rotations in radians (default)
  kDrake,      // raw qpos components, unweighted (Drake's S = I)
  kFullState,  // kWeighted plus velocities · (1 s / L) (global-accuracy recipe, README)
};
const char* ToString(ErrorNormKind k);

class ErrorNorm {
 public:
  // length_scale ≤ 0 picks the model's: mean dof_length of rotational dofs.
  ErrorNorm(const mjModel* m, ErrorNormKind kind, double length_scale);
  // ‖(q_a, v_a, act_a) − (q_b, v_b, act_b)‖; worst receives the dof (or
  // qpos index for kDrake) with the largest weighted error, or -2 - j for
  // activation j, -1 if none (WorstName turns it into text).
  double Compute(const mjModel* m, const double* qa, const double* va, const double* acta,
                 const double* qb, const double* vb, const double* actb, int* worst);
  double act_weight(int j) const { return act_weight_[j]; }
  // "dof 3 (joint 'elbow')", "qpos 5 (joint 'free')", "act 0 (actuator 'x')".
  std::string WorstName(const mjModel* m, int worst) const;
  double length_scale() const { return L_; }
  ErrorNormKind kind() const { return kind_; }

 private:
  ErrorNormKind kind_;
  double L_ = 1;
  std::vector<double> weight_, act_weight_, dq_;
};

}  // namespace mjcenic
