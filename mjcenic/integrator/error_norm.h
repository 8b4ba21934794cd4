// CENIC error norm (cenic-math.md §11.3, mapping §7.3–7.4): the difference of
// two configurations in the tangent space (mj_differentiatePos, so quaternions
// are compared by rotation angle), weighted per dof and measured with the
// ∞-norm. Velocities are excluded by default (impacts make velocity errors
// spike while positions stay accurate, paper §V-E). Actuator activations
// (mjData.act) are part of every norm kind, each divided by its natural range
// (actrange, else ctrlrange for filters/integrators, else 1; muscles 1), so a
// stiff activation filter limits the step where it changes the force. The
// velocity norms measure a velocity difference in the tangent space of the
// rows that hold the motion (cenic-math §11.3, "Velocities on constrained
// motion").
#pragma once

#include <span>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>

namespace mjcenic {

namespace icf {
struct IcfModel;
}

// The M-orthogonal projection of a velocity onto the tangent space of the
// rows that hold a problem's motion, cenic-math §11.3 (and §11.1, where an
// extrapolation's correction leaves those rows out):
//   δv ← δv − M⁻¹Jᵀ (J M⁻¹ Jᵀ)⁺ J δv,
// J the model's coupling (equality) rows and its limit rows active at the
// solve's velocity v (none without v), M its mass matrix (dense factors of
// the mass blocks of the trees the rows touch, and of J M⁻¹ Jᵀ, whose rows
// that depend on earlier ones are dropped by a pivot test). Workspace only
// grows.
class TangentProjection {
 public:
  // false (dv unchanged) if there is no such row or a mass block is not
  // positive definite.
  bool Apply(const icf::IcfModel& model, const double* v, double* dv);
  // After an Apply that returned true: the Euclidean projection of a
  // configuration difference (tangent space, nv) onto the same rows' null
  // space, dq ← dq − Jᵀ (J Jᵀ)⁺ J dq (cenic-math §11.1: the position part of
  // an extrapolation's correction). Reuses Apply's factor workspace.
  void ProjectOutEuclidean(double* dq);
  // δ > 0: the limit rows violated by more than δ at the problem's
  // configuration (g0 < −δ with a time scale: cenic-math §5.2's critically
  // damped spring, not a near-rigid row) are left out. 0 (default): none is.
  void LeaveOutSpringsBeyond(double delta) { spring_violation_ = delta; }

 private:
  struct Row {
    std::span<const int> dofs;
    const double* J;
  };
  // The stages of Apply, in order (error_norm.cc).
  void CollectRows(const double* v);
  void NumberTreeDofs();
  bool FactorMassBlocks();
  // y_ = Jᵀ as dense columns over the touched trees' dofs.
  void ScatterRows();
  void SolveMassForRows();
  bool FactorRowProduct();
  // The Cholesky factor of s_ (nr × nr, lower triangle) in place; a row that
  // depends on earlier ones is dropped (dropped_). False if s_ is zero.
  bool FactorDroppingDependentRows(int nr);
  // z_ = J x, one entry per row.
  void RowProducts(const double* x);
  // z_ ← S⁺ z_ with that factor (dropped rows: 0).
  void SolveRowProduct(int nr);
  void ProjectOut(double* dv);
  int TreeOf(int dof) const;
  int TreeBegin(int t) const;
  int TreeEnd(int t) const;
  double RowDot(int c, const double* x) const;

  double spring_violation_ = 0;           // LeaveOutSpringsBeyond
  const icf::IcfModel* model_ = nullptr;  // the model of the current Apply
  int n_ = 0;                             // dofs of the touched trees
  std::vector<Row> rows_;
  std::vector<int> local_;        // dof → index among the touched trees' dofs, or −1
  std::vector<int> trees_;        // touched trees, ascending
  std::vector<double> mass_;      // their dense mass blocks, Cholesky factors (one after another)
  std::vector<double> y_;         // M⁻¹Jᵀ, one column of n per row
  std::vector<double> s_;         // J M⁻¹ Jᵀ (rows × rows), then its Cholesky factor
  std::vector<double> z_;         // J δv, then (J M⁻¹ Jᵀ)⁺ J δv
  std::vector<double> diag_;      // J M⁻¹ Jᵀ's diagonal (the pivot test's scale)
  std::vector<char> dropped_;     // rows left out by the pivot test
};

enum class ErrorNormKind {
  kWeighted,   // translations / L, rotations in radians (default)
  kDrake,      // raw qpos components, unweighted (Drake's S = I)
  kFullState,  // kWeighted plus velocities · (1 s / L) (global_accuracy, docs/how-it-works.md)
  kPropagated, // kWeighted plus each velocity error times the position error it will
               // cause under the implicit step's own damping, capped by a horizon τ
               // (cenic-math §11.11), per dof from the diagonals of H and M
  kPropagatedModes,  // the same through the coupled step: δv propagated by H⁻¹M
                     // (two solves with H), tail capped by τ (cenic-math §11.11)
};
const char* ToString(ErrorNormKind k);

class ErrorNorm {
 public:
  // length_scale ≤ 0 picks the model's: mean dof_length of rotational dofs.
  // velocity_horizon: τ [s] of kPropagated (its velocity weights start at τ,
  // the free-dof limit, until SetPropagation).
  ErrorNorm(const mjModel* m, ErrorNormKind kind, double length_scale,
            double velocity_horizon = 1.0);
  // kPropagated (cenic-math §11.11): the time [s] over which a velocity error
  // δv of a dof with Hessian diagonal H and mass diagonal M (the implicit
  // step of size h) turns into position error, w = h H / (H − M + (h/τ) H):
  // τ for a free dof (H = M), ≈ 1/λ + h for a dof damped at rate λ ≪ 1/h.
  static double PropagationWeight(double h, double H, double M, double tau);
  // Sets every dof's weight from the diagonals of the step's H and M.
  void SetPropagation(double h, const double* H_diag, const double* M_diag);
  double velocity_horizon() const { return tau_; }
  double velocity_weight(int i) const { return vel_weight_[i]; }
  // kPropagatedModes: the position drift [dof units] of the next attempt's
  // velocity error, computed by the stepper (without it: τ·|δv|).
  void SetPropagatedDrift(const double* drift);
  double drift(int i) const { return drift_[i]; }
  // The problem (and the velocity its last solve found, which says which
  // limits hold) whose rows and mass matrix define the tangent space of the
  // next Compute's (or VelocityDifference's) velocity difference (nullptr:
  // none, the raw difference). Compute clears it.
  void SetTangentModel(const icf::IcfModel* model, const double* v = nullptr) {
    tangent_model_ = model;
    tangent_v_ = v;
  }
  // dv = va − vb, projected onto the tangent space of the model set by
  // SetTangentModel (cenic-math §11.3).
  void VelocityDifference(const double* va, const double* vb, double* dv);
  // Whether the norm reads velocities (then an estimate needs their error).
  bool uses_velocities() const {
    return kind_ == ErrorNormKind::kFullState || kind_ == ErrorNormKind::kPropagated ||
           kind_ == ErrorNormKind::kPropagatedModes;
  }
  // ‖(q_a, v_a, act_a) − (q_b, v_b, act_b)‖; worst receives the dof (or
  // qpos index for kDrake) with the largest weighted error, or -2 - j for
  // activation j, -1 if none (WorstName turns it into text).
  // split (optional): the same maximum over the dofs with group[i] set
  // (in_group) and over every other coordinate (rest: the other dofs, the
  // activations; every qpos of kDrake, whose coordinates are not dofs).
  struct Split {
    const char* group;
    double in_group = 0, rest = 0;
  };
  double Compute(const mjModel* m, const double* qa, const double* va, const double* acta,
                 const double* qb, const double* vb, const double* actb, int* worst,
                 Split* split = nullptr);
  double act_weight(int j) const { return act_weight_[j]; }
  // "dof 3 (joint 'elbow')", "qpos 5 (joint 'free')", "act 0 (actuator 'x')".
  std::string WorstName(const mjModel* m, int worst) const;
  double length_scale() const { return L_; }
  ErrorNormKind kind() const { return kind_; }

 private:
  ErrorNormKind kind_;
  int nq_ = 0, nv_ = 0, na_ = 0;
  double L_ = 1;
  double tau_ = 1;
  std::vector<double> weight_, act_weight_, dq_, dv_, vel_weight_, drift_;
  bool drift_set_ = false;
  const icf::IcfModel* tangent_model_ = nullptr;
  const double* tangent_v_ = nullptr;
  TangentProjection projection_;
};

}  // namespace mjcenic
