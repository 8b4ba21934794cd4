// Bodies in flight (cenic-math.md §11.13, "Bodies in flight"): the kinematic
// trees that no row of a step's problems acts on (no contact, limit,
// coupling, actuator gain, dry friction or contact torque), so that their
// step is the smooth dynamics alone. For constant acceleration the two half
// steps of step doubling end at
//   q = q_t ⊕ h (3 v̂ + v_t)/4,   v = v̂,
// the midpoint of the full step's q̂ = q_t ⊕ h v̂ and the trapezoidal
// q̃ = q_t ⊕ h (v_t + v̂)/2: a step whose estimate is skipped takes these
// positions on such trees and keeps the half steps' error, not the full
// step's twice that.
#pragma once

#include <vector>

#include <mujoco/mujoco.h>

namespace mjcenic {
namespace icf {
struct IcfModel;
}

class Flight {
 public:
  // The half-step positions stand for the half steps only while they lie
  // within this fraction of the trees' part of the estimate from them.
  static constexpr double kGap = 0.25;
  explicit Flight(const mjModel* m);
  // Marks the dofs of the trees no row of a or b acts on; true if any is.
  bool Mark(const icf::IcfModel& a, const icf::IcfModel& b);
  // Whether no row of m acts on a marked dof (the marks still hold for m).
  bool HoldsFor(const icf::IcfModel& m);
  void Clear() { any_ = false; }
  bool any() const { return any_; }
  // 1 on the dofs of a tree in flight (valid while any()).
  const char* dofs() const { return dof_.data(); }
  // q ← q_t ⊕ h (3 v̂ + v_t)/4 on the joints of the trees in flight; the
  // other coordinates of q are left as they are.
  void HalfStepPositions(double h, const double* q_t, const double* v_t, const double* v_hat,
                         double* q);

 private:
  // row_[i] = 1 if a row of the given problems acts on dof i.
  void MarkRows(const icf::IcfModel* a, const icf::IcfModel* b);

  const mjModel* m_;
  std::vector<char> row_, tree_row_, dof_;
  std::vector<double> w_, q_;  // the velocity h (3 v̂ + v_t)/4 integrates, q_t ⊕ h w
  bool any_ = false;
};

}  // namespace mjcenic
