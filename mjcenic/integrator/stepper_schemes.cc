// The schemes' own parts of an attempt after the full step (cenic-math.md
// §11): fixed step, step doubling (with Richardson extrapolation), the
// embedded estimate, the trapezoid corrector; and the propagated norm's drift.
#include <algorithm>
#include <cmath>

#include "mjcenic/icf/short_arrays.h"
#include "mjcenic/integrator/stepper_internal.h"

namespace mjcenic {

void Stepper::Integrate(const double* q, const double* v, const double* act,
                        const double* act_rate, double h, double* q_out, double* act_out) const {
  CopyShort(q, n_.nq, q_out);
  mj_integratePos(m_, q_out, v, h);
  adapter::IntegrateActivations(m_, act, act_rate, h, act_out);
}

void Stepper::PropagateDrift(const double* va, const double* vb) {
  // cenic-math §11.11 (error_norm=propagated_modes): the velocity error
  // δv = va − vb at the end of the attempt, propagated by the implicit step
  // of the last solve (H at its solution, step h_s): y₁ = H⁻¹M δv,
  // y₂ = H⁻¹M y₁, per-step factor s = ‖y₂‖_M/‖y₁‖_M of what survives, drift
  //   p = h_s (δv + y₁) + h_s y₂ / (1 − s + h_s/τ).
  if (norm_.kind() != ErrorNormKind::kPropagatedModes || last_solved_ == nullptr) return;
  Scratch& s = scratch_;
  const icf::IcfModel& model = *last_solved_;
  const int nv = n_.nv;
  const double hs = model.h, tau = norm_.velocity_horizon();
  norm_.VelocityDifference(va, vb, s.drift.data());  // in the tangent space (§11.3)
  if (!solver_.FactorAtSolution(model, solver_state_->user)) {
    for (int i = 0; i < nv; ++i) s.drift[i] *= tau;  // no H: a free dof's weight
    norm_.SetPropagatedDrift(s.drift.data());
    return;
  }
  model.MultiplyM(s.drift.data(), s.drift_y1.data());
  solver_.SolveAtSolution(s.drift_y1.data());
  model.MultiplyM(s.drift_y1.data(), s.drift_y2.data());
  double n1 = 0, n2 = 0;
  for (int i = 0; i < nv; ++i) n1 += s.drift_y1[i] * s.drift_y2[i];
  solver_.SolveAtSolution(s.drift_y2.data());
  model.MultiplyM(s.drift_y2.data(), s.drift_My.data());
  for (int i = 0; i < nv; ++i) n2 += s.drift_y2[i] * s.drift_My[i];
  const double factor = n1 > 0 ? std::clamp(std::sqrt(std::max(n2, 0.0) / n1), 0.0, 1.0) : 0.0;
  const double tail = hs / (1 - factor + hs / tau);
  for (int i = 0; i < nv; ++i)
    s.drift[i] = hs * (s.drift[i] + s.drift_y1[i]) + tail * s.drift_y2[i];
  norm_.SetPropagatedDrift(s.drift.data());
}

void Stepper::Extrapolate() {
  // Local Richardson extrapolation of step doubling (cenic-math §11.1): x
  // and x̂ differ by ≈ C h²/2, so x + (x − x̂) cancels the leading local error
  // term; the estimate ‖x̂ − x‖ still sizes the step. Along a near-rigid row
  // that holds the motion at the step's end (an equality, a limit acting at
  // v, not one in §5.2's spring zone) they differ by the row's violation
  // instead, which the correction leaves alone: velocities projected
  // M-orthogonally, positions Euclidean.
  Scratch& s = scratch_;
  mj_differentiatePos(m_, s.dq.data(), 1.0, s.q_full.data(), s.q_end.data());
  for (int i = 0; i < n_.nv; ++i) s.dv[i] = s.v_end[i] - s.v_full[i];
  held_rows_.LeaveOutSpringsBeyond(options_.icf.violation_tolerance);
  if (held_rows_.Apply(model_mid_, s.v_end.data(), s.dv.data()))
    held_rows_.ProjectOutEuclidean(s.dq.data());
  mj_integratePos(m_, s.q_end.data(), s.dq.data(), 1.0);
  for (int i = 0; i < n_.nv; ++i) s.v_end[i] += s.dv[i];
  adapter::ExtrapolateActivations(m_, s.act_full.data(), s.act_end.data());
}

void Stepper::FixedStep() {
  Scratch& s = scratch_;
  s.q_end = s.q_full;
  s.v_end = s.v_full;
  s.act_end = s.act_full;
}

double Stepper::FullStepDrift(double h) {
  // ‖x̂ − x̃‖ with x̃ = (q_t ⊕ h (v_t + v̂)/2, v̂, act̂): the position part of
  // the embedded estimate without history (cenic-math §11.9), h² a/2.
  Scratch& s = scratch_;
  for (int i = 0; i < n_.nv; ++i) s.dv[i] = 0.5 * (s.v_start[i] + s.v_full[i]);
  CopyShort(s.q_start.data(), n_.nq, s.q_mid.data());
  mj_integratePos(m_, s.q_mid.data(), s.dv.data(), h);
  int worst;
  return norm_.Compute(m_, s.q_full.data(), s.v_full.data(), s.act_full.data(), s.q_mid.data(),
                       s.v_full.data(), s.act_full.data(), &worst);
}

bool Stepper::EstimatedStep(mjData* d, double h, double tolerance, double* error, int* worst) {
  // Step doubling, or, for a step cut to land on the call's target while the
  // last estimate predicts a small error, the full step alone, with the half
  // steps' positions on the trees in flight (cenic-math §11.13). Not with
  // extrapolation (it needs the half steps) or the propagated-modes norm (its
  // drift belongs to the estimate's solves), nor from a velocity the last
  // accepted step did not end with (edited state).
  const bool skippable = !options_.extrapolate &&
                         norm_.kind() != ErrorNormKind::kPropagatedModes;
  const int ncontacts = static_cast<int>(model_start_.contacts.size());
  Scratch& s = scratch_;
  double drift = -1;
  if (skippable && step_size_.MaySkipEstimate(ncontacts) && warm_.EndsAt(s.v_start.data()) &&
      (!flight_.any() || flight_.HoldsFor(model_start_))) {
    drift = FullStepDrift(h);
    if (step_size_.SkipEstimate(drift, h, error)) {
      FixedStep();
      if (flight_.any())
        flight_.HalfStepPositions(h, s.q_start.data(), s.v_start.data(), s.v_full.data(),
                                  s.q_end.data());
      return true;
    }
  }
  if (!StepDoubling(d, h, tolerance, error, worst)) return false;
  // (The drift needs x̂, which doubling leaves in place; q_mid and dv are free again.)
  if (skippable) {
    double rest = *error, flight = 0;
    FlightParts(h, &rest, &flight);
    step_size_.NoteEstimate(*error, drift >= 0 ? drift : FullStepDrift(h), ncontacts, rest,
                            flight);
  }
  return true;
}

void Stepper::FlightParts(double h, double* rest, double* flight) {
  // cenic-math §11.13, "Bodies in flight": the trees no row of the attempt's
  // two problems acts on, if their half-step positions q_t ⊕ h (3 v̂ + v_t)/4
  // (with v̂) lie within a quarter of their part of the estimate from the
  // half steps' x: then their predicted error is that part plus the gap, the
  // rest's is twice the rest of the estimate. Else no tree is in flight.
  Scratch& s = scratch_;
  if (!flight_.Mark(model_start_, model_mid_)) return;
  ErrorNorm::Split full{flight_.dofs()}, corrected{flight_.dofs()};
  int unused;
  norm_.SetTangentModel(last_solved_, s.v_end.data());
  norm_.Compute(m_, s.q_full.data(), s.v_full.data(), s.act_full.data(), s.q_end.data(),
                s.v_end.data(), s.act_end.data(), &unused, &full);
  CopyShort(s.q_full.data(), n_.nq, s.q_mid.data());
  flight_.HalfStepPositions(h, s.q_start.data(), s.v_start.data(), s.v_full.data(),
                            s.q_mid.data());
  norm_.SetTangentModel(last_solved_, s.v_end.data());
  norm_.Compute(m_, s.q_mid.data(), s.v_full.data(), s.act_full.data(), s.q_end.data(),
                s.v_end.data(), s.act_end.data(), &unused, &corrected);
  if (!(corrected.in_group <= Flight::kGap * full.in_group)) {
    flight_.Clear();
    return;
  }
  *rest = full.rest;
  *flight = full.in_group + corrected.in_group;
}

bool Stepper::StepDoubling(mjData* d, double h, double tolerance, double* error, int* worst) {
  // Two half steps (P22, P23); the first reuses the problem at x_t.
  Scratch& s = scratch_;
  const int nv = n_.nv;
  model_start_.SetTimeStep(0.5 * h);
  for (int i = 0; i < nv; ++i) s.v_guess[i] = 0.5 * (s.v_start[i] + s.v_full[i]);
  if (!Solve(model_start_, s.v_guess.data(), s.v_mid.data(), tolerance)) return false;
  Integrate(s.q_start.data(), s.v_mid.data(), s.act_start.data(), s.act_rate_start.data(),
            0.5 * h, s.q_mid.data(), s.act_mid.data());
  if (ImplicitController() && !ControllerAt(d, s.q_mid.data(), s.v_mid.data())) return false;
  adapter::LoadState(m_, d, s.q_mid.data(), s.v_mid.data(), s.act_mid.data());
  // Geometry query 2, at the midpoint.
  if (!BuildAt(d, 0.5 * h, &model_mid_, s.act_rate_mid.data())) return false;
  if (PenetrationCheck()) attempt_depth_ratio_ = DepthGrowthRatio(d);  // §11.10
  const bool ok = Solve(model_mid_, s.v_full.data(), s.v_end.data(), tolerance);
  adapter::LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
  if (!ok) return false;
  Integrate(s.q_mid.data(), s.v_end.data(), s.act_mid.data(), s.act_rate_mid.data(), 0.5 * h,
            s.q_end.data(), s.act_end.data());
  norm_.SetTangentModel(last_solved_, s.v_end.data());  // §11.3: the attempt's last problem
  PropagateDrift(s.v_full.data(), s.v_end.data());
  *error = norm_.Compute(m_, s.q_full.data(), s.v_full.data(), s.act_full.data(),
                         s.q_end.data(), s.v_end.data(), s.act_end.data(), worst);
  if (options_.extrapolate && CorrectionIsSmall()) Extrapolate();
  return true;
}

bool Stepper::CorrectionIsSmall() const {
  // cenic-math §11.1: on a smooth step the correction v − v̂ is O(h²), the
  // step's velocity change v − v_t O(h); a correction above a quarter of
  // the change (M-weighted) marks a step through a kink of the forces
  // (contact made or broken, a limit or a force range engaged) or a stiff
  // mode neither h nor h/2 resolves, where 2x − x̂ is no more accurate.
  const Scratch& s = scratch_;
  double correction = 0, change = 0;
  for (int i = 0; i < n_.nv; ++i) {
    const double c = s.v_end[i] - s.v_full[i], dv = s.v_end[i] - s.v_start[i];
    correction += model_start_.M_diag[i] * c * c;
    change += model_start_.M_diag[i] * dv * dv;
  }
  return correction <= kRichardsonRatio * kRichardsonRatio * change;
}

void Stepper::EmbeddedError(double h, bool history, double* error, int* worst) {
  // cenic-math §11.9. The accepted result is the implicit step x̂ itself;
  // its local error is estimated against a companion x̃ that is one order
  // more accurate, built without another solve:
  //   q̃ = q_t ⊕ h (v_t + v̂)/2          (trapezoidal positions: q̂ − q̃ = h (v̂ − v_t)/2)
  //   ṽ = v̂ − h²/2 · ȧ,  ȧ ≈ (a − a_prev) / ((h + h_prev)/2),  a = (v̂ − v_t)/h
  //   ã = act̂ + h²/2 · (act_dot_t − act_dot_prev)/h_prev
  // with a_prev and act_dot_prev from the previous accepted step (history).
  Scratch& s = scratch_;
  const int nv = n_.nv, na = n_.na;
  FixedStep();
  for (int i = 0; i < nv; ++i) s.dv[i] = 0.5 * (s.v_start[i] + s.v_full[i]);
  std::copy(s.q_start.begin(), s.q_start.end(), s.q_mid.begin());
  mj_integratePos(m_, s.q_mid.data(), s.dv.data(), h);
  const double c = history ? h * h / (h + h_prev_) : 0;
  for (int i = 0; i < nv; ++i) {
    const double a = (s.v_full[i] - s.v_start[i]) / h;
    s.v_mid[i] = s.v_full[i] - c * (a - s.accel_prev[i]);
  }
  const double ca = history ? 0.5 * h * h / h_prev_ : 0;
  for (int j = 0; j < na; ++j)
    s.act_mid[j] = s.act_full[j] + ca * (s.act_rate_start[j] - s.act_rate_prev[j]);
  norm_.SetTangentModel(last_solved_, s.v_full.data());  // §11.3: the full step's problem
  PropagateDrift(s.v_full.data(), s.v_mid.data());
  *error = norm_.Compute(m_, s.q_full.data(), s.v_full.data(), s.act_full.data(), s.q_mid.data(),
                         s.v_mid.data(), s.act_mid.data(), worst);
}

bool Stepper::EmbeddedHistory(const mjData* d) const {
  if (!(h_prev_ > 0) || !prev_end_state_.Matches(m_, d)) return false;
  // A new ctrl changes act_dot by itself, not through the step's error.
  return adapter::CtrlEquals(m_, d, scratch_.ctrl_prev.data());
}

void Stepper::RecordEmbeddedHistory(const mjData* d, double h) {
  Scratch& s = scratch_;
  for (int i = 0; i < n_.nv; ++i) s.accel_prev[i] = (s.v_end[i] - s.v_start[i]) / h;
  std::copy(s.act_rate_start.begin(), s.act_rate_start.end(), s.act_rate_prev.begin());
  adapter::CopyCtrl(m_, d, s.ctrl_prev.data());
  h_prev_ = h;
  prev_end_state_.Capture(m_, d);
}

bool Stepper::Trapezoid(mjData* d, double h, double tolerance, double* error, int* worst) {
  // Trapezoid (cenic-math §11.8, our reconstruction): momentum
  //   M̂ (v − v_t) = h/2 (F_t + F̂(v)),   q = q_t + h/2 (v_t + v),
  // with F̂(v) the ICF forces of a problem built at the first-order result x̂
  // (time step h/2, configuration shifted so that it predicts q(v)), and
  // F_t the end force of the previous accepted step (first same as last) or,
  // without one, the implicit-Euler force of the full step.
  Scratch& s = scratch_;
  const int nv = n_.nv, na = n_.na;
  if (!force_start_state_.Matches(m_, d)) {
    model_start_.MultiplyM(s.v_full.data(), s.force_start.data());
    model_start_.MultiplyM(s.v_start.data(), s.M_dv.data());
    for (int i = 0; i < nv; ++i) s.force_start[i] = (s.force_start[i] - s.M_dv[i]) / h;
  }
  if (ImplicitController() && !ControllerAt(d, s.q_full.data(), s.v_full.data())) return false;
  adapter::LoadState(m_, d, s.q_full.data(), s.v_full.data(), s.act_full.data());
  // Geometry query 2, at t + h.
  if (!BuildAt(d, 0.5 * h, &model_mid_, s.act_rate_mid.data())) return false;
  // dq = q_t ⊖ q̂ + h/2 v_t
  mj_differentiatePos(m_, s.dq.data(), 1.0, s.q_full.data(), s.q_start.data());
  for (int i = 0; i < nv; ++i) s.dq[i] += 0.5 * h * s.v_start[i];
  model_mid_.ShiftConfiguration(s.dq.data());
  model_mid_.SetTimeStep(0.5 * h);
  // r: replace M̂ v̂ by M̂ v_t + h/2 F_t.
  for (int i = 0; i < nv; ++i) s.dv[i] = s.v_start[i] - s.v_full[i];
  model_mid_.MultiplyM(s.dv.data(), s.M_dv.data());
  for (int i = 0; i < nv; ++i) s.impulse[i] = s.M_dv[i] + 0.5 * h * s.force_start[i];
  model_mid_.AddImpulse(s.impulse.data());
  const bool ok = Solve(model_mid_, s.v_full.data(), s.v_end.data(), tolerance);
  adapter::LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
  if (!ok) return false;
  std::copy(s.q_start.begin(), s.q_start.end(), s.q_end.begin());
  mj_integratePos(m_, s.q_end.data(), s.v_start.data(), 0.5 * h);
  mj_integratePos(m_, s.q_end.data(), s.v_end.data(), 0.5 * h);
  for (int j = 0; j < na; ++j) s.act_rate_mid[j] = 0.5 * (s.act_rate_start[j] + s.act_rate_mid[j]);
  adapter::IntegrateActivations(m_, s.act_start.data(), s.act_rate_mid.data(), h, s.act_end.data());
  norm_.SetTangentModel(last_solved_, s.v_end.data());  // §11.3: the attempt's last problem
  PropagateDrift(s.v_full.data(), s.v_end.data());
  *error = norm_.Compute(m_, s.q_full.data(), s.v_full.data(), s.act_full.data(),
                         s.q_end.data(), s.v_end.data(), s.act_end.data(), worst);
  return true;
}

void Stepper::TrapezoidEndForce(const mjData* d, double h) {
  // The end force of this step starts the next one (first same as last).
  Scratch& s = scratch_;
  for (int i = 0; i < n_.nv; ++i) s.dv[i] = s.v_end[i] - s.v_start[i];
  model_mid_.MultiplyM(s.dv.data(), s.M_dv.data());
  for (int i = 0; i < n_.nv; ++i) s.force_start[i] = 2 * s.M_dv[i] / h - s.force_start[i];
  force_start_state_.Capture(m_, d);
}

}  // namespace mjcenic
