// The step-size controller: every rule that chooses the size of an internal
// step (cenic-math.md §11.13, §11.4, §11.10, §11.12; docs/how-it-works.md, "Errors and
// progress").
// One internal step reads propose → attempt → decide:
//   Propose(t0): the first size to attempt (the last proposal, or the
//     initial step); LandOn: each attempt's size landed on the target;
//   Decide(solved, error, h): accept, reject (with the size to retry), or
//     underflow (the needed step is below the minimum: an error);
//   LimitDepth(ratio, h): the penetration/depth-growth limit of an accepted
//     attempt (§11.10), which may still reject it;
//   Accept(h_next): the next proposal and the progress guarantee.
// A step capped by the call's target may skip the error estimate while the
// last estimate predicts an error well inside the accuracy (MaySkipEstimate,
// SkipEstimate, NoteEstimate: cenic-math §11.13).
// Without error control every step is the largest step of the mode (landed
// on the target); with it, h_new = ρ h (ε_acc/‖e‖)^(1/p) with a dead band and
// growth/shrink limits (Drake's constants), at least the minimum step.
#pragma once

#include <string>

#include <absl/status/status.h>

namespace mjcenic {

struct StepSizeControl {
  double safety = 0.9;        // ρ
  double max_growth = 5.0;
  double min_shrink = 0.1;
  double grow_threshold = 1.2;  // grow only if the proposal is ≥ 1.2 h
  double shrink_factor = 0.9;   // a rejected step retries with ≤ 0.9 h
  double order = 2.0;           // error-estimate order p
};

struct StepDecision {
  bool accept = false;
  double h_next = 0;
  bool underflow = false;  // the needed step is below the minimum
};

// The error-based rule alone: accept iff ‖e‖ ≤ ε_acc (within the dead band),
// the next size clamped to [min_shrink h, max_growth h], ≤ h_max, ≥ h_min;
// an attempt accepted after a rejected one (after_rejection) does not grow h.
// `at_minimum` persists over the retries of one outer step (reset by the caller).
StepDecision AdjustStepSize(const StepSizeControl& c, double error, double accuracy, double h,
                            double h_max, double h_min, bool* at_minimum,
                            bool after_rejection = false);

// Progress guarantee bounds (docs/how-it-works.md, "Errors and progress").
inline constexpr double kRelativeMinStep = 1e-14;  // no step below 1e-14 max(1, |t|)
inline constexpr long kMaxStepsAtLargestStep = 1000000;
inline constexpr double kDefaultMaxStep = 0.1;  // error-controlled largest step [s]

// The step-size settings of StepperOptions the controller reads.
struct StepSizeRules {
  bool error_control = true;       // false: every step is the largest step
  double accuracy = 1e-3;          // ε_acc
  double error_per_unit_step = 0;  // T [s] > 0: a step of h may make ε_acc h/T (§11.12)
  double max_step = 0;             // [s] 0: the mode's default (timestep / 0.1 s)
  double initial_step = 0;         // [s] 0: min(0.1 h_max, timestep)
  double min_step = 0;             // [s] the minimum step's floor
  long max_steps_per_call = 0;     // progress guarantee per call (0: no cap)
  bool depth_limit = false;        // penetration check on (§11.10)
  StepSizeControl control;
};

class StepSizeController {
 public:
  explicit StepSizeController(const StepSizeRules& rules) : rules_(rules) {}

  // The largest step [s] of the mode for the model's timestep.
  double LargestStep(double timestep) const;
  // The first size to attempt for an internal step from t0 (the last
  // proposal, else the initial step; without error control the largest
  // step), before landing. Resets the per-step state.
  double Propose(double t0, double timestep);
  // Landing (docs/python.md, "Outputs inside a step"): a step that would end within
  // 5 % short of or 0.1 % past t_limit is stretched/shortened to end on it;
  // one ending further past it is shortened (limited, unless overshoot:
  // dense output may end past the target).
  double LandOn(double h, double remaining, bool overshoot);
  // After an attempt of size h: accept, reject (h_next the retry, landed on
  // the target by the caller's next LandOn), or underflow. Without error
  // control: accept iff solved. Under error control a failed solve
  // retries with h/2. With error_per_unit_step > 0 the error is scaled by
  // T/h (one order lower) unless the attempts show a velocity jump (§11.12).
  StepDecision Decide(bool solved, double error, double h);
  // Depth-growth limit of an accepted attempt (§11.10): ratio is the largest
  // growth over its tolerance; > 1 rejects (returns true, *h_retry set)
  // unless h is already the minimum step; > 0 caps the next proposal at
  // ρ_depth h / ratio.
  bool LimitDepth(double ratio, double h, double* h_retry);
  // An accepted step is dropped after the fact (dense output, cenic-math
  // §11.5): the state it gave a call's target `span` after its start grew a
  // depth by `ratio` > 1 of the tolerance. The steps from its start to the
  // target begin at LimitDepth's retry for a step of that span.
  void DropStep(double ratio, double span);
  // The depth ratio of an accepted step of size h found after its
  // acceptance (dense output): LimitDepth's cap on the next proposal.
  void LimitAccepted(double ratio, double h);
  // An accepted step of size h: records the next proposal (unless the step
  // was shortened to land on the target) and checks the progress guarantee
  // (a run of kMaxSolverLimitedSteps accepted steps each after a failed
  // solve at a larger step: returns false, the run is an error).
  bool Accept(double h_next);

  // Estimate skipping (cenic-math §11.13). An attempt whose size was cut to
  // land on the call's target (not chosen by the error) may accept the full
  // step x̂ without the doubling estimate when the last estimate, scaled by
  // the full step's own position drift, predicts ‖e(x̂)‖ ≤ tol/4 and the sum
  // of the predictions since that estimate stays ≤ tol (tol: the accuracy,
  // per unit step ε_acc h/T).
  // MaySkipEstimate: before the estimate of the attempt just landed: the
  // call's first step (BeginCall) and its first attempt, cut to land (the
  // whole call is shorter than the proposal), an estimate to scale from taken
  // with the same number of contacts, fewer than kMaxSkippedEstimates skipped
  // since.
  bool MaySkipEstimate(int ncontacts) const;
  // drift: the full step's position drift ‖x̂ − (q_t ⊕ h (v_t + v̂)/2)‖ in the
  // error norm. True: skip, *predicted = the predicted error of the step
  // taken (to Decide).
  bool SkipEstimate(double drift, double h, double* predicted);
  // An attempt estimated its error (doubling): the scales for the steps that
  // follow, and the budget restarts. error: the estimate e at drift d_e; of
  // it, rest: the part a skipped step takes x̂ for (predicted 2 rest), and
  // flight ≥ 0: the predicted error of the trees in flight, which take the
  // half steps' positions instead (Flight; cenic-math §11.13). Without
  // trees in flight: rest = error, flight = 0.
  void NoteEstimate(double error, double drift, int ncontacts, double rest, double flight);
  void BeginCall() { first_of_call_ = true; }
  // No scale: the next capped step estimates (state or model edited).
  void ForgetEstimate() { skip_scale_ = -1; }
  // Rejection storms (cenic-math §11.13): an embedded estimate gives way to
  // step doubling for the rest of the step once a retry at a smaller h found
  // an error that shrank more slowly than h^1.5 (the embedded estimate of a
  // step holding a velocity jump shrinks as h, not h²) after
  // kRejectionsBeforeDoubling rejections, or after kMaxEmbeddedRejections.
  bool EstimateByDoubling() const {
    return (rejections_ >= kRejectionsBeforeDoubling && slow_shrink_) ||
           rejections_ >= kMaxEmbeddedRejections;
  }
  // The size the controller proposes next [s] (0 before the first step).
  double next() const { return h_ideal_; }
  // The minimum step of the current internal step (0 without error control).
  double min_step() const { return h_min_; }
  bool controlled() const { return rules_.error_control; }
  const StepSizeRules& rules() const { return rules_; }

  // Progress guarantee errors (their messages; the stepper adds context).
  // A call from t_start to t that needs more than max_steps_per_call (0:
  // kMaxStepsAtLargestStep) steps of the largest step: refused.
  absl::Status CheckStepCount(double t_start, double t, double timestep) const;
  // A call that took `steps` accepted steps without reaching t.
  absl::Status CheckCallSteps(long steps, double t_start, double t_now, double t,
                              double last_h) const;
  // A timestep below the minimum step at time t.
  static absl::Status CheckTimestep(double t, double timestep);
  // The underflow error of a Decide at time t0.
  absl::Status Underflow(double t0, double error, double h, const std::string& detail) const;

  static constexpr int kMaxSolverLimitedSteps = 200;
  static constexpr double kDepthSafety = 0.9;  // ρ of the depth-growth step limit (§11.10)
  static constexpr int kRejectionsBeforeDoubling = 2;
  static constexpr int kMaxEmbeddedRejections = 4;
  static constexpr int kMaxSkippedEstimates = 32;  // capped steps between two estimates
  static constexpr double kSkipMargin = 4;  // a skipped step's predicted error ≤ tol/4

 private:
  StepDecision DecideError(bool solved, double error, double h);

  StepSizeRules rules_;
  double h_ideal_ = 0;
  double h_max_ = 0, h_min_ = 0;
  bool at_minimum_ = false;
  bool limited_ = false;      // this attempt was shortened to land on the target
  bool solve_failed_ = false; // some attempt of this step failed its solve
  double prev_scaled_ = 0, prev_h_ = 0;  // error per unit step: the previous attempt
  bool jump_ = false;                    // ... and a velocity jump in this step
  double h_depth_ = 0;                   // the depth-growth cap on the next proposal
  int solver_limited_steps_ = 0;
  bool first_attempt_ = true;  // no attempt of this step decided yet
  int rejections_ = 0;         // rejected attempts of this step
  bool slow_shrink_ = false;   // a retry's error shrank more slowly than h^1.5
  double attempt_error_ = 0, attempt_h_ = 0;  // this step's last decided attempt
  bool first_of_call_ = false; // no step of this call accepted yet
  // Estimate skipping: rest/drift of the last estimate (< 0: none), its
  // number of contacts, the steps skipped and the predicted error (in units
  // of tol) they used since.
  double skip_scale_ = -1;
  double flight_scale_ = 0;  // the trees in flight's predicted error / drift
  int skip_contacts_ = -1;
  int skipped_ = 0;
  double skip_budget_ = 0;
};

}  // namespace mjcenic
