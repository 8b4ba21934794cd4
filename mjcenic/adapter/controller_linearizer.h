// User controllers seen by the integrator (docs/cenic-math.md §9): called at a
// state (zero-order hold or explicit treatment), or linearized per dof by
// finite differences into the feedback the adapter embeds in the ICF problem
// as implicit clamped gains (implicit treatment, paper §V-C).
//
// Every evaluation runs MuJoCo's smooth stages at an evaluation state in the
// caller's mjData, so afterwards d's stages belong to that state, not to the
// state the caller left in it (Linearize restores qpos/qvel/act and the
// inputs; the caller re-runs the stages it needs).
#pragma once

#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/adapter/mujoco_stages.h"
#include "mjcenic/adapter/mujoco_state.h"
#include "mjcenic/adapter/controller.h"

namespace mjcenic {

using adapter::LoadState;

class ControllerLinearizer {
 public:
  // `calls` counts every controller evaluation (statistics).
  ControllerLinearizer(const mjModel* m, adapter::MujocoStages* stages, long* calls);

  void Set(Controller controller) { controller_ = std::move(controller); }
  bool installed() const { return static_cast<bool>(controller_); }

  // Calls the controller at d's state as it is; false if it failed (now or
  // since the last ClearFailure()).
  bool Call(mjData* d);
  bool failed() const { return failed_; }
  void ClearFailure() { failed_ = false; }

  // Linearizes the controller's generalized force τ = qfrc_actuator +
  // qfrc_applied at x0 = (q0, v0, act0) per dof: feedback().tau = τ(x0),
  // kq_i = −∂τ_i/∂q_i, kv_i = −∂τ_i/∂v_i by forward differences. Leaves x0 and
  // the user's ctrl and qfrc_applied in d. False if the controller failed.
  bool Linearize(mjData* d, const double* q0, const double* v0, const double* act0);
  // τ at (q, v, act) into feedback().tau (the sensitivities are kept), d's
  // ctrl and qfrc_applied restored; d holds (q, v, act) afterwards.
  bool ForceAt(mjData* d, const double* q, const double* v, const double* act);

  const adapter::DofFeedback& feedback() const { return feedback_; }

 private:
  // τ at (q, v, act) into tau: smooth stages, controller, actuation.
  bool Force(mjData* d, const double* q, const double* v, const double* act, double* tau);
  void SaveInputs(const mjData* d);
  void RestoreInputs(mjData* d) const;

  const mjModel* m_;
  adapter::MujocoStages* stages_;
  long* calls_;
  Controller controller_;
  bool failed_ = false;
  adapter::DofFeedback feedback_;
  // The user's inputs, restored after every evaluation.
  std::vector<double> ctrl_user_, qfrc_applied_user_;
  // Finite differences: τ at x0, τ at a perturbed state, the perturbed state,
  // and the unit direction of the perturbed dof.
  std::vector<double> tau_x0_, tau_perturbed_, q_perturbed_, v_perturbed_, dof_direction_;
};

}  // namespace mjcenic
