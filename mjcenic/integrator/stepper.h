// The mjcenic stepper: replaces mj_step's constraint solve and integration by
// ICF convex steps, optionally wrapped in CENIC error control. One instance
// per mjModel holds all per-model state and workspace; instances are
// independent (safe to use from different threads on different mjData).
// After the first steps no per-step allocation happens.
//
// The integrator owns time only. An attempt from x_t over h reads top to
// bottom (docs/cenic-math.md §11): linearize the controller, build the
// problem at x_t (adapter), the full step (shared by every scheme), then the
// scheme's own part: nothing (fixed), two half steps (step doubling) or the
// trapezoid corrector, and the error. The step-size controller accepts or
// rejects the attempt; time advances only on acceptance. MuJoCo is reached
// only through the adapter (stages, problem build, constraint forces).
//
// After Step()/AdvanceTo() the mjData satisfies the "post-step contract"
// (docs/mujoco-mapping.md §1.4): qpos, qvel, act, time describe the new state
// and kinematics, contacts, sensors and actuator forces are evaluated there.
// qacc holds the interval-average acceleration; efc_force holds the impulses
// of the step's last solve divided by its step (rows it did not solve are 0).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <mujoco/mujoco.h>

#include "mjcenic/icf/icf_model.h"
#include "mjcenic/adapter/controller.h"
#include "mjcenic/adapter/mujoco_state.h"
#include "mjcenic/adapter/state_snapshot.h"
#include "mjcenic/integrator/error_norm.h"
#include "mjcenic/integrator/flight.h"
#include "mjcenic/adapter/model_fingerprint.h"
#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/step_size_controller.h"
#include "mjcenic/integrator/warm_start.h"

namespace mjcenic {
namespace icf {
class IcfSolver;
struct SolverOptions;
enum class SolveStatus;
}  // namespace icf

// Penetration max(−dist) over d's active contacts [m]: the measure behind
// StepperStats::max_penetration, for a run of mj_step to compare with.
double MaxPenetration(const mjData* d);

// OK if the loaded libmujoco (mj_version(), mj_versionString()) is the one
// whose headers mjcenic was built with; else the refusal Stepper::Create returns.
absl::Status CheckMujocoVersion(int library_version, const char* library_string);

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
  // Step nstep times (nstep <= 0 does nothing), like mj_step's nstep: the
  // model is compared for edits before the first step (before every step
  // while a control callback or the user controller could edit it).
  absl::Status Step(mjData* d, int nstep);
  // Advances d to time t (≥ d->time), ending exactly on t.
  absl::Status AdvanceTo(mjData* d, double t);
  // Takes exactly one accepted internal step (size chosen by the controller).
  absl::Status StepOnce(mjData* d);

  // Installs (or, with an empty function, removes) a user controller, treated
  // as options().controller says: zero-order hold, explicit per solve, or
  // implicit (finite-difference linearization per attempt, cenic-math §9.2).
  void SetController(Controller controller);

  const StepperOptions& options() const { return options_; }
  const StepperStats& stats() const;
  void ResetStats();
  const std::vector<std::string>& warnings() const;
  const mjModel* model() const { return m_; }
  // Step size the controller proposes next [s].
  double next_step() const { return step_size_.next(); }
  // The ICF problem of the last model build (tests, diagnostics).
  const icf::IcfModel& last_problem() const { return *last_problem_; }
  // Error-norm length scale L [m].
  double length_scale() const { return norm_.length_scale(); }
  // The error norm (its propagated velocity weights and drift: tests, diagnostics).
  const ErrorNorm& error_norm() const { return norm_; }
  // error_norm=propagated_modes: the drift of the velocity error va − vb
  // through the last solve's implicit step, handed to the norm for its next
  // Compute (cenic-math §11.11; the stepper calls it per attempt, tests call
  // it after a step to see the drift of a chosen δv).
  void PropagateDrift(const double* va, const double* vb);

 private:
  struct Mujoco;  // the adapter side: problem builder, stages, records, forces, controller

  // The state buffers of one attempt, x = (q, v, act) (cenic-math §11 names):
  // x_t the accepted start, x̂ the full step, x_m the second build's state
  // (step doubling: the midpoint after the first half step; trapezoid: x̂),
  // x_{t+h} the attempt's result. Sized once; nothing allocates per step.
  struct Scratch {
    std::vector<double> q_start, v_start, act_start;  // x_t
    std::vector<double> act_rate_start;               // act_dot at x_t
    std::vector<double> q_full, v_full, act_full;     // x̂: one step of h
    std::vector<double> q_mid, v_mid, act_mid;        // x_m (step doubling)
    std::vector<double> act_rate_mid;                 // act_dot at the second build
    std::vector<double> q_end, v_end, act_end;        // x_{t+h}
    std::vector<double> v_guess;                      // Newton's initial guess
    std::vector<double> guess_dir;                    // v_guess − v_t
    std::vector<double> dv, M_dv;                     // a velocity difference, M̂ times it
    std::vector<double> dq;                           // a configuration difference
    std::vector<double> impulse;                      // trapezoid: M̂ (v_t − v̂) + h/2 F_t
    std::vector<double> force_start;                  // trapezoid: F_t (first same as last)
    std::vector<double> v_call_start;                 // qvel when Step()/AdvanceTo() began
    std::vector<double> accel_prev;                   // embedded: (v − v_t)/h of the last
                                                      // accepted step
    std::vector<double> act_rate_prev;                // embedded: act_dot at its start
    std::vector<double> ctrl_prev;                    // embedded: the ctrl it was taken with
    std::vector<double> ctrl_actuated;                // ctrl of PostStep's actuation pass
    std::vector<double> q_a, v_a, act_a;              // dense output: the accepted step
    std::vector<double> q_b, v_b, act_b;              // [t_a, t_b] the last call ended in
    std::vector<double> act_rate_a, act_euler;        // act_dot at x_a; act_a advanced by it
    std::vector<double> H_diag;                       // propagated norm: diag(H) of the full step
    std::vector<double> drift, drift_y1, drift_y2, drift_My;  // propagated_modes (§11.11)
    void Resize(const adapter::Sizes& n);
  };

  Stepper(const mjModel* m, const StepperOptions& options);
  // The outer loop behind AdvanceTo (to t) and StepOnce (single_step); the
  // model's arrays are compared for edits first unless check_model is false.
  absl::Status Advance(mjData* d, double t, bool single_step, bool check_model = true);
  // The accepted steps of one call (after its checks and inputs). as_compared:
  // d is still the state Advance compared with the stages.
  absl::Status AdvanceSteps(mjData* d, double t, bool single_step, bool overshoot,
                            bool as_compared = true);
  // One internal step from the state in d, limited to end at t_limit:
  // propose → attempt → decide (step_size_). overshoot: the step may end past
  // t_limit (dense output) instead of being shortened to land on it.
  absl::Status InternalStep(mjData* d, double t_limit, bool overshoot = false);
  // A failed attempt that no step size repairs (a failed user controller, an
  // overflowing problem, a failed solve without error control): its error.
  absl::Status AttemptFailure(const mjData* d, double t0, double h, bool ok) const;
  // The penetration check of an accepted attempt (§11.10): loads x_{t+h}
  // into d; true if the step is rejected (*h set to the retry). defer_end:
  // the step ends past the call's target (dense output): its end state is
  // checked when a call continues from it (LoadDenseEnd), only the midpoint
  // now.
  bool DepthRejects(mjData* d, double* h, bool defer_end);
  // The accepted step of size h ends at t_end: d, histories and statistics.
  void FinishInternalStep(mjData* d, double h, double t_end);
  // Dense output (docs/python.md, "Outputs inside a step"): whether this call may end
  // inside an accepted step, the state at t inside [t_a, t_b] written to d,
  // and the accepted step's end loaded back into d.
  bool DenseOutputApplies() const;
  bool DenseOutputAllowed(const mjData* d) const;
  void KeepDenseStep(const mjData* d);
  void WriteInterpolated(mjData* d, double t);
  void LoadDenseEnd(mjData* d);
  // The call's output at t inside the kept step: its continuous extension,
  // unless that state fails the penetration check against the step's start
  // (§11.10), which drops the step and steps from its start to t instead.
  absl::Status OutputInsideStep(mjData* d, double t);
  // The penetration check of the state in d, span after the kept step's
  // start; true (the step rejected, counted, the next proposal limited) if
  // it fails. *ratio: its growth ratio.
  bool KeptStepFails(mjData* d, double span, double* ratio);
  // The model's arrays changed since the last call (model_arrays_): the
  // model-derived state is rebuilt.
  void ModelEdited();
  // After a solve failed on a non-finite value: an error naming the dof if
  // the problem itself overflows (no step size can repair it), else OK.
  absl::Status OverflowingProblem(const mjData* d, double t, double h) const;

  // One attempt of step h from x_t (scratch_ *_start); on success the result
  // is in scratch_ *_end and *error holds the error estimate.
  bool Attempt(mjData* d, double h, double tolerance, double* error, int* worst);
  // The problem at x_t: built (controller linearized first), or the one kept
  // from a rejected attempt at the same state with only h changed.
  bool ProblemAtStart(mjData* d, double h);
  // x̂: the full step of h on the problem at x_t (every scheme's first solve):
  // guess (warm_) → solve → integrate.
  bool FullStep(double h, double tolerance);
  void FixedStep();  // x_{t+h} = x̂
  bool StepDoubling(mjData* d, double h, double tolerance, double* error, int* worst);
  // Doubling, or x̂ alone when the controller lets a capped step skip the
  // estimate (cenic-math §11.13); FullStepDrift: ‖x̂ − (q_t ⊕ h (v_t + v̂)/2)‖.
  bool EstimatedStep(mjData* d, double h, double tolerance, double* error, int* worst);
  double FullStepDrift(double h);
  // After doubling: the trees in flight (flight_) and the parts of the
  // estimate for NoteEstimate (§11.13, "Bodies in flight"); unchanged
  // (rest = the estimate, flight = 0) without such trees.
  void FlightParts(double h, double* rest, double* flight);
  bool Trapezoid(mjData* d, double h, double tolerance, double* error, int* worst);
  // Embedded estimate (cenic-math §11.9): x_{t+h} = x̂, error against the
  // second-order companion x̃ (scratch *_mid). EmbeddedHistory says whether
  // the previous accepted step ended at d's state (its acceleration and
  // act_dot are then usable); without it the velocity and activation parts
  // of the norm cannot be estimated and the attempt uses doubling.
  void EmbeddedError(double h, bool history, double* error, int* worst);
  bool EmbeddedHistory(const mjData* d) const;
  void RecordEmbeddedHistory(const mjData* d, double h);
  // options_.extrapolate: x ← x + P (x − x̂), P leaving out the directions of
  // the near-rigid rows acting at the step's end (cenic-math §11.1).
  void Extrapolate();
  // Whether ‖v − v̂‖_M ≤ kRichardsonRatio ‖v − v_t‖_M (cenic-math §11.1):
  // extrapolate only then.
  bool CorrectionIsSmall() const;
  static constexpr double kRichardsonRatio = 0.25;
  // End force of an accepted trapezoid step, F_end = 2 M̂ (v − v_t)/h − F_t.
  void TrapezoidEndForce(const mjData* d, double h);

  // Builds the problem `model` at the state in d for step h (stages run as
  // needed, explicit controller called, actuation at d's inputs); act_dot at
  // that state into act_rate. False if the controller failed.
  // stages_current: d is known to hold the state its stages were compared
  // with (no comparison needed).
  bool BuildAt(mjData* d, double h, icf::IcfModel* model, double* act_rate,
               bool stages_current = false);
  // Solves model from guess into v; false (status kept) on failure.
  void PrepareSolveOptions();  // solve_options_' fixed part (construction)
  bool Solve(const icf::IcfModel& model, const double* guess, double* v, double tolerance,
             const double* extrapolated = nullptr);
  // q_out = q ⊕ h v; act_out = act advanced by act_rate over h.
  void Integrate(const double* q, const double* v, const double* act, const double* act_rate,
                 double h, double* q_out, double* act_out) const;
  // The controller linearization and its evaluation at a solve's start state
  // (implicit treatment), and the explicit call before a build.
  bool LinearizeController(mjData* d);
  bool ControllerAt(mjData* d, const double* q, const double* v);
  bool ExplicitController(mjData* d);
  bool ImplicitController() const;

  // Runs the position/velocity stages at d's state unless d still holds them;
  // the deepest contact found goes to *penetration (default: the statistic).
  // known_current: the caller knows d still holds the state of the last
  // comparison (no second comparison).
  void EnsureStages(mjData* d, double* penetration = nullptr, bool known_current = false);
  void PostStep(mjData* d, double H, const double* v_start);
  void RecordStep(double h);
  // Penetration check (cenic-math §11.10): whether it is on, and the growth
  // ratio of d's contacts and limits over the start build's (the adapter's
  // PenetrationCheck).
  bool PenetrationCheck() const;
  double DepthGrowthRatio(const mjData* d);
  // Stiction anchors (cenic-math §4.9): the time step whose ε the slip of
  // velocity v (nv) is measured in: h_slip_ if v is the last accepted step's
  // end velocity, else h.
  double AnchorSlipStep(const double* v, double h) const;

  const mjModel* m_;
  adapter::Sizes n_;  // nq, nv, na, nu
  StepperOptions options_;
  mutable StepperStats stats_;
  // time_total without phase timers (cenic-math §8.9, "The wall clock of
  // time_total"): the processor's time-stamp counter while in Advance,
  // converted to seconds in stats() by the ratio of steady-clock time to
  // counter ticks since the first call; with phase timers (or without a
  // counter) the steady clock, as the phases.
  std::uint64_t total_ticks_ = 0, ticks_origin_ = 0;
  std::int64_t clock_origin_ns_ = 0;
  bool ticks_started_ = false;
  double clock_total_ = 0;  // seconds measured with the steady clock
  std::uint64_t StartTicks();
  std::unique_ptr<Mujoco> mujoco_;
  ErrorNorm norm_;
  TangentProjection held_rows_;  // Extrapolate's P (cenic-math §11.1)
  StepSizeController step_size_;
  WarmStart warm_;
  Flight flight_;  // the trees in flight at the last estimate (§11.13)
  // The ICF solver and its options, kept out of this header (stepper_internal.h):
  // solver_ and solve_options_ (Solve's options: PrepareSolveOptions, then per
  // solve) refer into it.
  struct SolverState;
  std::unique_ptr<SolverState> solver_state_;
  icf::IcfSolver& solver_;
  icf::SolverOptions& solve_options_;
  icf::IcfModel model_start_, model_mid_;  // built at x_t, at x_m
  const icf::IcfModel* last_solved_ = nullptr;
  const icf::IcfModel* last_problem_ = &model_start_;
  icf::SolveStatus last_status_;
  // Stage-cache keys: the state d's stages belong to, the state (with
  // inputs) model_start_ was built at, and the one force_start belongs to.
  StateSnapshot stages_state_{false};
  StateSnapshot model_start_state_{true};
  StateSnapshot force_start_state_{true};
  StateSnapshot prev_end_state_{false};  // embedded: where the last accepted step ended
  double h_prev_ = 0;                    // embedded: its size
  // Dense output: d's state and inputs as the last call left them, and whether
  // an accepted step [t_a, t_b] (scratch q_a.., q_b..) extends past d's time.
  StateSnapshot dense_written_{true};
  double dense_written_time_ = 0;
  // The model arrays the problem reads, as the last call saw them: a call
  // that finds one edited (dof_damping, body_mass, geom_friction,
  // actuator_gainprm, ...) rebuilds what was derived from them
  // (ModelEdited), in every mode. Checked at every call.
  adapter::ModelFingerprint model_arrays_;
  bool dense_pending_ = false;
  double dense_t_a_ = 0, dense_t_b_ = 0;
  bool end_check_deferred_ = false;  // the last accepted attempt's end is not checked yet
  bool dense_end_checked_ = true;    // ... of the kept step [t_a, t_b]
  double attempt_penetration_ = 0;  // deepest contact at this attempt's second build
  double attempt_depth_ratio_ = 0;  // penetration check: growth ratio at the midpoint
  double h_slip_ = 0;  // time step of the solve that produced the last accepted v_end
  // d's actuation outputs (actuator_force, act_dot, qfrc_actuator) belong to
  // d's stages and to scratch_.ctrl_actuated (set by PostStep, cleared when
  // the stages are recomputed or invalidated).
  bool actuation_fresh_ = false;
  // Set by Advance for the first internal step when d is still the state its
  // EnsureStages compared; consumed by ProblemAtStart.
  bool stages_checked_ = false;
  int last_iterations_ = 0;              // Newton iterations of the last solve
  Scratch scratch_;
  icf::SolveStatus failed_status_;  // the last failed solve's
  // Step-size histogram (log-spaced) for the median without storing steps.
  static constexpr int kBins = 2400;  // 1e-10 s .. 1e2 s, 200 bins per decade
  std::vector<long> h_hist_;
  double hist_h_ = std::numeric_limits<double>::quiet_NaN();  // RecordStep: the last h's bin
  int hist_bin_ = 0;
};

}  // namespace mjcenic
