// The stepper's outputs besides the state: statistics (with the wall clock of
// time_total and the step-size histogram) and dense output (docs/python.md,
// "Outputs inside a step").
#include <algorithm>
#include <cmath>

#include "mjcenic/integrator/stepper_internal.h"

namespace mjcenic {

using stepper_internal::ClockNs;
using stepper_internal::Ticks;

std::uint64_t Stepper::StartTicks() {
  const std::uint64_t t = Ticks();
  if (!ticks_started_) {
    ticks_started_ = true;
    ticks_origin_ = t;
    clock_origin_ns_ = ClockNs();
  }
  return t;
}

const StepperStats& Stepper::stats() const {
  // time_total: the counter's ticks in seconds at the rate measured since the
  // first call (steady-clock time over ticks), plus the steady clock's part.
  double per_tick = 0;
  if (total_ticks_ > 0) {
    const std::uint64_t now = Ticks();
    const std::uint64_t ticks = now > ticks_origin_ ? now - ticks_origin_ : 0;
    const double ns = static_cast<double>(ClockNs() - clock_origin_ns_);
    if (ticks > 0 && ns > 0) per_tick = 1e-9 * ns / static_cast<double>(ticks);
  }
  stats_.time_total = clock_total_ + static_cast<double>(total_ticks_) * per_tick;
  // Median of the accepted steps from the histogram (0.5 % resolution).
  long total = 0, half = 0;
  for (long c : h_hist_) total += c;
  for (int b = 0; b < kBins && total > 0; ++b) {
    half += h_hist_[b];
    if (2 * half >= total) {
      // The bin centre, clamped: h_min ≤ h_median ≤ h_max.
      stats_.h_median =
          std::clamp(std::pow(10.0, (b + 0.5) / 200.0 - 10.0), stats_.h_min, stats_.h_max);
      break;
    }
  }
  return stats_;
}

void Stepper::ResetStats() {
  stats_ = {};
  total_ticks_ = 0;
  clock_total_ = 0;
  std::fill(h_hist_.begin(), h_hist_.end(), 0);
}

void Stepper::RecordStep(double h) {
  ++stats_.steps;
  stats_.last_h = h;
  stats_.max_penetration = std::max(stats_.max_penetration, attempt_penetration_);
  stats_.h_min = stats_.steps == 1 ? h : std::min(stats_.h_min, h);
  stats_.h_max = std::max(stats_.h_max, h);
  // The bin of the last h is kept: a fixed-step run records one h (§8.9).
  if (!(h == hist_h_)) {
    const int b = static_cast<int>(std::floor((std::log10(std::max(h, 1e-300)) + 10.0) * 200.0));
    hist_h_ = h;
    hist_bin_ = std::clamp(b, 0, kBins - 1);
  }
  ++h_hist_[hist_bin_];
}

bool Stepper::DenseOutputApplies() const {
  // Only where the step is the integrator's own choice and the inputs cannot
  // change inside a call (no callback, no user controller).
  return options_.dense_output && options_.mode != Mode::kFixed && options_.error_control &&
         !mujoco_->controller.installed() && !mujoco_->stages.HasControlCallback();
}

bool Stepper::DenseOutputAllowed(const mjData* d) const {
  // ... and d holds exactly what the previous call wrote (else the user
  // changed something and the integration restarts from d).
  return DenseOutputApplies() && adapter::Time(d) == dense_written_time_ &&
         dense_written_.Matches(m_, d);
}

void Stepper::KeepDenseStep(const mjData* d) {
  // The last accepted step [t_a, t_b] ends past the target: keep it.
  Scratch& s = scratch_;
  std::copy(s.q_start.begin(), s.q_start.end(), s.q_a.begin());
  std::copy(s.v_start.begin(), s.v_start.end(), s.v_a.begin());
  std::copy(s.act_start.begin(), s.act_start.end(), s.act_a.begin());
  std::copy(s.act_rate_start.begin(), s.act_rate_start.end(), s.act_rate_a.begin());
  adapter::SaveState(m_, d, s.q_b.data(), s.v_b.data(), s.act_b.data());
  dense_t_b_ = adapter::Time(d);
  dense_t_a_ = dense_t_b_ - stats_.last_h;
  dense_pending_ = true;
  dense_end_checked_ = !end_check_deferred_;
}

void Stepper::WriteInterpolated(mjData* d, double t) {
  // The continuous extension of the accepted step [t_a, t_b]: positions along
  // the tangent-space chord q_a ⊕ σ(q_b ⊖ q_a), velocities linear,
  // σ = (t − t_a)/(t_b − t_a); first-order accurate like the step.
  // Activations: MuJoCo's rule from act_a over σh plus σ times what the step
  // added to it (linear for Euler dynamics, exact for filterexact).
  // (Formed in the x_m buffers, free between attempts.)
  Scratch& s = scratch_;
  const double span = dense_t_b_ - dense_t_a_;
  const double sigma = span > 0 ? std::clamp((t - dense_t_a_) / span, 0.0, 1.0) : 1.0;
  mj_differentiatePos(m_, s.dq.data(), 1.0, s.q_a.data(), s.q_b.data());
  std::copy(s.q_a.begin(), s.q_a.end(), s.q_mid.begin());
  mj_integratePos(m_, s.q_mid.data(), s.dq.data(), sigma);
  for (int i = 0; i < n_.nv; ++i) s.v_mid[i] = s.v_a[i] + sigma * (s.v_b[i] - s.v_a[i]);
  adapter::IntegrateActivations(m_, s.act_a.data(), s.act_rate_a.data(), span,
                                s.act_euler.data());
  for (int i = 0; i < n_.na; ++i) s.act_mid[i] = -sigma * s.act_euler[i];
  adapter::IntegrateActivations(m_, s.act_a.data(), s.act_rate_a.data(), sigma * span,
                                s.act_euler.data());
  for (int i = 0; i < n_.na; ++i) s.act_mid[i] += s.act_euler[i] + sigma * s.act_b[i];
  adapter::LoadState(m_, d, s.q_mid.data(), s.v_mid.data(), s.act_mid.data());
  adapter::SetTime(d, t);
}

absl::Status Stepper::OutputInsideStep(mjData* d, double t) {
  // cenic-math §11.5: the geometry queries of the step [t_a, t_b] were at
  // t_a, its midpoint and t_b; the state written at t is a chord between
  // them, and a body may cross another there (a finger brushing a
  // neighbour, a ball passing a thin wall). Its stages are the post-step
  // contract's (PostStep then finds them current), so the check costs only
  // the depth comparison against x_a (§11.10).
  WriteInterpolated(d, t);
  double ratio;
  if (!PenetrationCheck() || !KeptStepFails(d, t - dense_t_a_, &ratio)) return absl::OkStatus();
  // x_a is loaded back (its problem is reused) and the call steps from
  // there to t, landing on it.
  const Scratch& s = scratch_;
  dense_pending_ = false;
  adapter::LoadState(m_, d, s.q_a.data(), s.v_a.data(), s.act_a.data());
  adapter::SetTime(d, dense_t_a_);
  return AdvanceSteps(d, t, /*single_step=*/false, /*overshoot=*/false, /*as_compared=*/false);
}

void Stepper::LoadDenseEnd(mjData* d) {
  // The kept step's end, whose geometry query (the next step's start's) now
  // also makes its penetration check (§11.10, deferred by DepthRejects). If
  // that fails, the step is rejected after the fact and the call continues
  // from the state it was given (the step's last returned, checked state).
  Scratch& s = scratch_;
  dense_pending_ = false;
  const double t_given = adapter::Time(d);
  if (!dense_end_checked_)
    adapter::SaveState(m_, d, s.q_mid.data(), s.v_mid.data(), s.act_mid.data());
  adapter::LoadState(m_, d, s.q_b.data(), s.v_b.data(), s.act_b.data());
  adapter::SetTime(d, dense_t_b_);
  if (dense_end_checked_) return;
  const double h = dense_t_b_ - dense_t_a_;
  double ratio;
  if (!KeptStepFails(d, h, &ratio)) {
    step_size_.LimitAccepted(ratio, h);
    return;
  }
  adapter::LoadState(m_, d, s.q_mid.data(), s.v_mid.data(), s.act_mid.data());
  adapter::SetTime(d, t_given);
}

bool Stepper::KeptStepFails(mjData* d, double span, double* ratio) {
  // The penetration check (§11.10) of the state in d, `span` after the kept
  // step's start x_a (whose problem and depths the check still holds).
  // Failing, the step is rejected after the fact: counted so, and the next
  // proposal is the depth limit of a step of that span.
  double penetration = 0;
  EnsureStages(d, &penetration);
  *ratio = DepthGrowthRatio(d);
  if (!(*ratio > 1 && span > step_size_.min_step())) {
    stats_.max_penetration = std::max(stats_.max_penetration, penetration);
    return false;
  }
  --stats_.steps;
  ++stats_.rejected_steps;
  step_size_.DropStep(*ratio, span);
  return true;
}

}  // namespace mjcenic
