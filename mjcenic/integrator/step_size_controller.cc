#include "mjcenic/integrator/step_size_controller.h"

#include "mjcenic/integrator/options.h"  // kMinAccuracy

#include <algorithm>
#include <cmath>
#include <limits>

#include <absl/strings/str_cat.h>

namespace mjcenic {

namespace {
template <class... Args>
[[gnu::cold, gnu::noinline]] absl::Status ErrorStatus(absl::StatusCode code,
                                                      const Args&... args) {
  return absl::Status(code, absl::StrCat(args...));
}
}  // namespace

StepDecision AdjustStepSize(const StepSizeControl& c, double e, double accuracy, double h,
                            double h_max, double h_min, bool* at_minimum, bool after_rejection) {
  StepDecision out;
  if (!std::isfinite(e)) {
    out.h_next = c.min_shrink * h;
    out.underflow = out.h_next < h_min;
    return out;
  }
  double hn = (e == 0) ? c.max_growth * h
                       : c.safety * h * std::pow(accuracy / e, 1.0 / c.order);
  if (hn > h) {
    *at_minimum = false;
    // Dead band: no small growth; and none right after a rejection (§11.4).
    if (hn < c.grow_threshold * h || after_rejection) hn = h;
  }
  if (hn < h && *at_minimum) {
    out.accept = true;
    out.h_next = h;
    return out;
  }
  if (hn < h) hn = (e <= accuracy) ? h : std::min(hn, c.shrink_factor * h);
  hn = std::clamp(hn, c.min_shrink * h, c.max_growth * h);
  // Accept iff the error is within the accuracy (the dead band keeps h, growth
  // raises it). Decided before the h_max clamp: a step stretched by ≤ 0.1 % to
  // land on a target may exceed h_max and must still be accepted.
  const bool accept = hn >= h;
  hn = std::min(hn, h_max);
  if (hn < h_min && !accept) {
    out.underflow = true;
    out.h_next = h_min;
    return out;
  }
  hn = std::max(hn, h_min);
  if (hn == h_min) {
    *at_minimum = true;
    if (!accept) {
      out.h_next = hn;
      return out;  // reject
    }
  }
  out.accept = accept;
  out.h_next = hn;
  return out;
}


double StepSizeController::LargestStep(double timestep) const {
  const double h_max = rules_.max_step > 0 ? rules_.max_step : 0;
  if (!rules_.error_control) return h_max > 0 ? h_max : timestep;
  return h_max > 0 ? h_max : kDefaultMaxStep;
}

double StepSizeController::Propose(double t0, double timestep) {
  h_max_ = LargestStep(timestep);
  const bool controlled = rules_.error_control;
  // With error per unit step, a step's tolerance is accuracy·h/T: below
  // kMinAccuracy it is round-off, so such steps are below the minimum too.
  h_min_ = controlled ? std::max({kRelativeMinStep, kRelativeMinStep * std::abs(t0),
                                  rules_.min_step,
                                  kMinAccuracy * rules_.error_per_unit_step / rules_.accuracy})
                      : 0.0;
  if (!controlled) {
    h_ideal_ = h_max_;
  } else if (!(h_ideal_ > 0)) {
    h_ideal_ = rules_.initial_step > 0 ? rules_.initial_step : std::min(0.1 * h_max_, timestep);
  }
  at_minimum_ = false;
  first_attempt_ = true;
  rejections_ = 0;
  slow_shrink_ = false;
  attempt_error_ = attempt_h_ = 0;
  solve_failed_ = false;
  prev_scaled_ = prev_h_ = 0;
  jump_ = false;
  return std::min(h_ideal_, h_max_);
}

double StepSizeController::LandOn(double h, double remaining, bool overshoot) {
  limited_ = false;
  if (remaining < 0.95 * h && !overshoot) {
    limited_ = true;
    return remaining;
  }
  if (remaining < 1.001 * h && remaining >= 0.95 * h) return remaining;
  return h;
}

StepDecision StepSizeController::Decide(bool solved, double error, double h) {
  StepDecision dec = DecideError(solved, error, h);
  if (solved && attempt_h_ > 0 && h < attempt_h_ &&
      error > attempt_error_ * std::pow(h / attempt_h_, 1.5))
    slow_shrink_ = true;
  if (solved) {
    attempt_error_ = error;
    attempt_h_ = h;
  }
  if (!dec.accept) ++rejections_;
  return dec;
}

StepDecision StepSizeController::DecideError(bool solved, double error, double h) {
  h_depth_ = std::numeric_limits<double>::infinity();
  first_attempt_ = false;
  solve_failed_ = solve_failed_ || !solved;
  StepDecision dec;
  if (!rules_.error_control) {
    dec.accept = solved;
    dec.h_next = h;
    return dec;
  }
  if (!solved) {  // a failed solve is treated like a failed step: retry with h/2
    dec.h_next = 0.5 * h;
    dec.underflow = dec.h_next < h_min_;
    return dec;
  }
  if (!(rules_.error_per_unit_step > 0))
    return AdjustStepSize(rules_.control, error, rules_.accuracy, h, h_max_, h_min_,
                          &at_minimum_, rejections_ > 0);
  // Error per unit step (cenic-math §11.12): a step of h may make
  // accuracy·h/T of error, so the errors of the steps over T add up to the
  // accuracy; the scaled error is one order lower in h. A velocity jump
  // inside the step leaves an error ≈ c h Δv that the scaled bound admits at
  // no h: when cutting h did not shrink the raw error faster than h^1.5, the
  // step is held to the per-step bound.
  const double scaled = error * rules_.error_per_unit_step / h;
  if (prev_h_ > 0 && h < prev_h_ && scaled > std::sqrt(h / prev_h_) * prev_scaled_) jump_ = true;
  prev_scaled_ = scaled;
  prev_h_ = h;
  StepSizeControl c = rules_.control;
  if (!jump_) c.order = std::max(1.0, c.order - 1);
  return AdjustStepSize(c, jump_ ? error : scaled, rules_.accuracy, h, h_max_, h_min_,
                        &at_minimum_, rejections_ > 0);
}

bool StepSizeController::MaySkipEstimate(int ncontacts) const {
  return rules_.error_control && first_of_call_ && first_attempt_ && limited_ && skip_scale_ >= 0 &&
         ncontacts == skip_contacts_ && skipped_ < kMaxSkippedEstimates && skip_budget_ < 1;
}

bool StepSizeController::SkipEstimate(double drift, double h, double* predicted) {
  // cenic-math §11.13: the estimate measures the two half steps' error, half
  // the full step's (§11.9); the full step's drift h (v̂ − v_t)/2 scales with
  // its acceleration, so a new contact, impact or input change since the
  // estimate raises the prediction and the step estimates again. Trees in
  // flight take the half steps' positions and keep their error (Flight).
  const double tol = rules_.error_per_unit_step > 0
                         ? rules_.accuracy * h / rules_.error_per_unit_step
                         : rules_.accuracy;
  const double e_rest = 2 * skip_scale_ * drift, e_flight = flight_scale_ * drift;
  const double e = std::max(e_rest, e_flight);
  if (!(e_rest <= tol / kSkipMargin && e_flight <= tol && skip_budget_ + e / tol <= 1))
    return false;
  skip_budget_ += e / tol;
  ++skipped_;
  *predicted = e;
  return true;
}

void StepSizeController::NoteEstimate(double error, double drift, int ncontacts, double rest,
                                      double flight) {
  // A drift of 0 with an error (a resting stiff contact, say) gives no scale.
  skip_scale_ = error == 0 ? 0 : drift > 0 ? rest / drift : -1;
  flight_scale_ = drift > 0 ? flight / drift : 0;
  skip_contacts_ = ncontacts;
  skipped_ = 0;
  skip_budget_ = 0;
}

bool StepSizeController::LimitDepth(double ratio, double h, double* h_retry) {
  // cenic-math §11.10: the growth, first order in h, sizes the step like an
  // error of order 1. A contact or limit deepening by more than half its
  // tolerance also ends estimate skipping (§11.13).
  if (ratio > 0.5) ForgetEstimate();
  if (ratio > 0) h_depth_ = kDepthSafety * h / ratio;
  if (!(ratio > 1 && h > h_min_)) return false;
  *h_retry = std::max({h_depth_, 0.1 * h, h_min_});
  ++rejections_;
  return true;
}

void StepSizeController::DropStep(double ratio, double span) {
  ForgetEstimate();
  h_ideal_ = std::max({kDepthSafety * span / ratio, 0.1 * span, h_min_});
}

void StepSizeController::LimitAccepted(double ratio, double h) {
  if (ratio > 0.5) ForgetEstimate();
  if (ratio > 0) h_ideal_ = std::max(std::min(h_ideal_, kDepthSafety * h / ratio), h_min_);
}

bool StepSizeController::Accept(double h_next) {
  // Progress guarantee: steps sized by solver failures, not by the accuracy,
  // for kMaxSolverLimitedSteps accepted steps in a row (e.g. max_iterations =
  // 1 converges only at h ~ 1e-8 s) end in an error.
  first_of_call_ = false;
  if (rules_.error_control) {
    solver_limited_steps_ = solve_failed_ ? solver_limited_steps_ + 1 : 0;
    if (solver_limited_steps_ >= kMaxSolverLimitedSteps) {
      solver_limited_steps_ = 0;
      return false;
    }
    if (!limited_) h_ideal_ = std::max(std::min(h_next, h_depth_), h_min_);
  }
  return true;
}

absl::Status StepSizeController::CheckStepCount(double t_start, double t,
                                                double timestep) const {
  // Progress guarantee: refuse a call that needs more than max_steps_per_call
  // (unset: kMaxStepsAtLargestStep) steps even at the largest step (e.g.
  // opt.timestep = 1e10, max_step = 1e-9).
  const long cap = rules_.max_steps_per_call > 0 ? rules_.max_steps_per_call
                                                 : kMaxStepsAtLargestStep;
  const double h_max = LargestStep(timestep);
  if (!((t - t_start) > h_max * static_cast<double>(cap))) return absl::OkStatus();
  return ErrorStatus(absl::StatusCode::kResourceExhausted,
      "mjcenic: advancing from time ", t_start, " to ", t, " needs more than ", cap,
      rules_.max_steps_per_call > 0 ? " (max_steps_per_call)"
                                    : " (the limit when max_steps_per_call is 0)",
      " steps of the largest step ", h_max, " s (max_step",
      rules_.max_step > 0 ? "" : " default",
      "); the state was not advanced. Raise max_step or max_steps_per_call, or advance in "
      "shorter calls");
}

absl::Status StepSizeController::CheckCallSteps(long steps, double t_start, double t_now,
                                                double t, double last_h) const {
  if (steps != rules_.max_steps_per_call || !(t_now < t)) return absl::OkStatus();
  return ErrorStatus(absl::StatusCode::kResourceExhausted,
      "mjcenic: no progress guarantee: ", steps, " accepted steps (max_steps_per_call) ",
      "took the state only from time ", t_start, " to ", t_now, " of the target ", t,
      " (last step ", last_h, " s); the state is the last accepted step. Raise "
      "max_steps_per_call, relax accuracy / max_iterations, or advance in shorter calls");
}

absl::Status StepSizeController::CheckTimestep(double t, double dt) {
  // A timestep below the minimum step at this time (docs/how-it-works.md, "Errors and progress": 1e-14·|t|, ≈ 45
  // ulp of t) cannot be taken: at t = 1e17, t + 0.002 == t and the call
  // would otherwise succeed without moving.
  if (!(std::isfinite(t) && dt > 0 && dt < kRelativeMinStep * std::abs(t)))
    return absl::OkStatus();
  return ErrorStatus(absl::StatusCode::kResourceExhausted,
      "mjcenic: step size underflow at time ", t, ": opt.timestep ", dt,
      " is below the minimum step ", kRelativeMinStep * std::abs(t), " (1e-14 |t|; one ulp of t is ",
      std::nextafter(std::abs(t), std::numeric_limits<double>::infinity()) - std::abs(t),
      "); the state was not advanced. Reset time closer to 0");
}

absl::Status StepSizeController::Underflow(double t0, double error, double h,
                                           const std::string& detail) const {
  return ErrorStatus(absl::StatusCode::kResourceExhausted,
      "mjcenic: step size underflow at time ", t0, ": the error ", error,
      " exceeds the accuracy ", rules_.accuracy, " even at h = ", h, " (minimum ", h_min_, ")",
      detail);
}

}  // namespace mjcenic
