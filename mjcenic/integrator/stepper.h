// The mjcenic stepper: replaces mj_step's constraint solve and integration by
// ICF convex steps. One instance per mjModel, holding all per-model state and
// workspace; instances are independent (safe to use from different threads on
// different mjData). After the first step no per-step allocation happens.
//
// After Step() the mjData satisfies the "post-step contract"
// (docs/mujoco-mapping.md §1.4): qpos, qvel, act, time describe the new state
// and kinematics, contacts, sensors, actuator forces are evaluated there, so
// viewers and user code see the current pose. qacc holds the step-average
// acceleration (v₁ − v₀)/h; efc_force is zero.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/options.h"

namespace mjcenic {

class Stepper {
 public:
  // Fails on a MuJoCo library/header version mismatch or invalid options.
  static absl::StatusOr<std::unique_ptr<Stepper>> Create(const mjModel* m,
                                                         const StepperOptions& options = {});

  // Advances d by m->opt.timestep (like mj_step). On error (non-finite
  // input, solver failure) d is left unchanged and the status says why.
  absl::Status Step(mjData* d);

  const StepperOptions& options() const { return options_; }
  const StepperStats& stats() const { return stats_; }
  void ResetStats() { stats_ = {}; }
  const std::vector<std::string>& warnings() const { return adapter_.warnings(); }
  const mjModel* model() const { return m_; }
  // The ICF problem of the last solve (tests, diagnostics).
  const icf::IcfModel& last_problem() const { return problem_; }

 private:
  Stepper(const mjModel* m, const StepperOptions& options);
  absl::Status CheckInputs(const mjData* d) const;
  // Runs the position/velocity stages at d's state unless d still holds them.
  void EnsureStages(mjData* d);
  // One convex solve from the state in d over h; writes (q, v, act) into
  // q_out/v_out/act_out. d must hold the stages at that state.
  absl::Status SolveStep(mjData* d, double h, double* q_out, double* v_out, double* act_out);
  void PostStep(mjData* d, double h);
  unsigned long long StateHash(const mjData* d) const;

  const mjModel* m_;
  StepperOptions options_;
  StepperStats stats_;
  adapter::MujocoAdapter adapter_;
  icf::IcfModel problem_;
  icf::IcfSolver solver_;
  unsigned long long stages_hash_ = 0;  // hash of the state d's stages belong to
  std::vector<double> q0_, v0_, act0_, act_dot0_, q1_, v1_, act1_;
};

}  // namespace mjcenic
