// The mjcenic stepper: replaces mj_step's constraint solve and integration by
// ICF convex steps, optionally wrapped in CENIC error control. One instance
// per mjModel holds all per-model state and workspace; instances are
// independent (safe to use from different threads on different mjData).
// After the first steps no per-step allocation happens.
//
// One code path serves every mode: an attempt from x_t over h gives the new
// state and (error-controlled modes) an error estimate; the controller
// accepts or rejects it; time advances only on acceptance.
//
// After Step()/AdvanceTo() the mjData satisfies the "post-step contract"
// (docs/mujoco-mapping.md §1.4): qpos, qvel, act, time describe the new state
// and kinematics, contacts, sensors and actuator forces are evaluated there.
// qacc holds the interval-average acceleration; efc_force is zero.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/adapter/stiction_anchors.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/error_norm.h"
#include "mjcenic/integrator/options.h"

namespace mjcenic {

// A user controller: reads the state in d (qpos, qvel, time; kinematics,
// mass matrix and bias forces are evaluated) and writes d->ctrl and/or
// d->qfrc_applied. Returns false to abort the step with an error.
using Controller = std::function<bool(const mjModel* m, mjData* d)>;

class Stepper {
 public:
  // Fails on a MuJoCo library/header version mismatch or invalid options.
  static absl::StatusOr<std::unique_ptr<Stepper>> Create(const mjModel* m,
                                                         const StepperOptions& options = {});
  ~Stepper();
  Stepper(const Stepper&) = delete;
  Stepper& operator=(const Stepper&) = delete;

  // Advances d by m->opt.timestep (the mj_step contract), with as many
  // internal steps as the mode and accuracy need; ends exactly on the target.
  absl::Status Step(mjData* d);
  // Advances d to time t (≥ d->time), ending exactly on t.
  absl::Status AdvanceTo(mjData* d, double t);
  // Takes exactly one accepted internal step (size chosen by the controller).
  absl::Status StepOnce(mjData* d);

  // Installs (or, with an empty function, removes) a user controller, treated
  // as options().controller says: zero-order hold, explicit per solve, or
  // implicit (finite-difference linearization per attempt, cenic-math §9.2).
  void SetController(Controller controller) { controller_ = std::move(controller); }

  const StepperOptions& options() const { return options_; }
  const StepperStats& stats() const;
  void ResetStats();
  const std::vector<std::string>& warnings() const { return adapter_.warnings(); }
  const mjModel* model() const { return m_; }
  // Step size the controller proposes next [s].
  double next_step() const { return h_ideal_; }
  // The ICF problem of the last model build (tests, diagnostics).
  const icf::IcfModel& last_problem() const { return *last_problem_; }
  // Error-norm length scale L [m].
  double length_scale() const { return norm_.length_scale(); }

 private:
  Stepper(const mjModel* m, const StepperOptions& options);
  absl::Status CheckInputs(const mjData* d) const;
  // The outer loop behind AdvanceTo (to t) and StepOnce (single_step).
  absl::Status Advance(mjData* d, double t, bool single_step);
  // Runs the position/velocity stages at d's state unless d still holds them.
  void EnsureStages(mjData* d);
  void Actuation(mjData* d);
  // Builds `model` at the state in d for step h (stages must be current).
  void BuildModel(mjData* d, double h, icf::IcfModel* model);
  bool PrepareController(mjData* d);  // explicit treatment: controller at d's state
  // Solves model from guess into v; false (status filled) on failure.
  bool Solve(const icf::IcfModel& model, const double* guess, double* v, double tolerance);
  // One internal step from the state in d, limited to end at t_limit.
  absl::Status InternalStep(mjData* d, double t_limit);
  // Attempts one step of size h from x0 (stored in q0_, v0_, act0_); on
  // success the result is in q1_, v1_, act1_ and *error the error estimate.
  void Extrapolate();  // options_.extrapolate: x ← 2x − x̂
  // efc_force of d's rows from the impulses of the step's last solve:
  // contacts matched by geom pair and nearest point, limits, equalities and
  // friction loss by MuJoCo type, object and row; rows not solved stay zero.
  void FillConstraintForces(mjData* d);
  void FillRowForces(mjData* d);  // limit, equality and friction-loss rows
  bool Attempt(mjData* d, double h, double* error, int* worst, double tolerance);
  // Linearizes the controller's generalized force per dof at x0 into
  // feedback_ (cenic-math §9.2); false if the controller failed.
  bool LinearizeController(mjData* d);
  // Controller force at (q, v) into feedback_.tau (sensitivities kept).
  bool ControllerAt(mjData* d, const double* q, const double* v);
  void RestoreInputs(mjData* d);
  // Controller force qfrc_actuator + qfrc_applied at (q, v) (act0_), into tau.
  bool ControllerForce(mjData* d, const double* q, const double* v, double* tau);
  bool CallController(mjData* d);
  void IntegrateActivations(const double* act, const double* act_dot, double h,
                            double* out) const;
  void LoadState(mjData* d, const double* q, const double* v, const double* act) const;
  void PostStep(mjData* d, double H, const double* v_start);
  unsigned long long StateHash(const mjData* d, bool with_inputs) const;
  void RecordStep(double h);

  // Model for MuJoCo's stages: m_, or a private copy with widened gaps
  // (speculative_margin); its opt is refreshed from m_ before every use.
  const mjModel* StageModel();

  const mjModel* m_;
  mjModel* m_stage_ = nullptr;
  StepperOptions options_;
  mutable StepperStats stats_;
  adapter::MujocoAdapter adapter_;
  adapter::StictionAnchors anchors_;  // elastic-slip state of sticking contacts
  ErrorNorm norm_;
  icf::IcfSolver solver_;
  icf::IcfModel model0_, model_mid_;     // built at x_t, at the midpoint / end
  // Contact records of model0_ / model_mid_, the model of the last solve and
  // the solver's impulses of that solve (for efc_force after the step).
  std::vector<adapter::ContactRecord> records0_, records_mid_;
  std::vector<adapter::RowRecord> rows0_, rows_mid_;
  const icf::IcfModel* last_solved_ = nullptr;
  std::vector<int> record_order_;
  std::vector<char> record_used_;
  const icf::IcfModel* last_problem_ = &model0_;
  icf::SolveStatus last_status_ = icf::SolveStatus::kConverged;
  unsigned long long stages_hash_ = 0;   // state d's stages belong to
  unsigned long long model0_hash_ = 0;   // state model0_ was built at
  unsigned long long fsal_hash_ = 0;     // state (with inputs) f_start_ belongs to
  double h_ideal_ = 0;                   // controller's proposal for the next step
  bool at_minimum_ = false;
  // State buffers: start, full step, half step, result.
  std::vector<double> q0_, v0_, act0_, act_dot0_;
  std::vector<double> qf_, vf_, actf_, qa_, va_, acta_, act_dota_;
  std::vector<double> q1_, v1_, act1_, vguess_, v_outer_, dq_, f_start_, tmp_;
  Controller controller_;
  bool controller_failed_ = false;
  adapter::DofFeedback feedback_;
  std::vector<double> ctrl_user_, qfrc_user_, tau_a_, tau_b_, q_pert_, v_pert_, unit_;
  // Step-size histogram (log-spaced) for the median without storing steps.
  static constexpr int kBins = 2400;       // 1e-10 s .. 1e2 s, 200 bins per decade
  std::vector<long> h_hist_;
};

}  // namespace mjcenic
