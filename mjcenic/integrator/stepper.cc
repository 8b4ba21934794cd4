#include "mjcenic/integrator/stepper.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "mjcenic/icf/linear/linear_solver.h"
#include "mjcenic/icf/short_arrays.h"
#include "mjcenic/integrator/stepper_internal.h"

namespace mjcenic {

using stepper_internal::Clock;
using stepper_internal::ErrorStatus;
using stepper_internal::kHaveTicks;
using stepper_internal::PhaseNow;
using stepper_internal::Seconds;
using stepper_internal::Ticks;

static_assert(static_cast<int>(icf::LinearSolverKind::kTree) ==
                  static_cast<int>(LinearSolverKind::kTree) &&
              static_cast<int>(icf::LinearSolverKind::kPcg) ==
                  static_cast<int>(LinearSolverKind::kPcg) &&
              static_cast<int>(icf::LinearSolverKind::kIslands) ==
                  static_cast<int>(LinearSolverKind::kIslands));

icf::SolverOptions ToSolverOptions(const SolverSettings& s) {
  icf::SolverOptions o;
  o.tolerance = s.tolerance;
  o.max_iterations = s.max_iterations;
  o.linear_solver = static_cast<icf::LinearSolverKind>(s.linear_solver);  // same order
  o.pcg_tolerance = s.pcg_tolerance;
  return o;
}

namespace {
// The step-size controller's settings from the options.
StepSizeRules Rules(const StepperOptions& o) {
  StepSizeRules r;
  r.error_control = o.mode != Mode::kFixed && o.error_control;
  r.accuracy = o.accuracy;
  r.error_per_unit_step = o.error_per_unit_step;
  r.max_step = o.max_step;
  r.initial_step = o.initial_step;
  r.min_step = o.min_step;
  r.max_steps_per_call = o.max_steps_per_call;
  r.depth_limit = r.error_control && o.penetration_tolerance > 0;
  r.control = o.control;
  return r;
}
}  // namespace

double MaxPenetration(const mjData* d) { return adapter::MujocoStages::MaxPenetration(d); }

absl::Status CheckMujocoVersion(int library_version, const char* library_string) {
  if (library_version == mjVERSION_HEADER) return absl::OkStatus();
  return ErrorStatus(absl::StatusCode::kFailedPrecondition,
      "mjcenic was built against MuJoCo headers ", mjVERSION_HEADER,
      " but the loaded libmujoco is ", library_string, " (", library_version,
      "); install the pinned mujoco wheel and rebuild");
}

absl::StatusOr<std::unique_ptr<Stepper>> Stepper::Create(const mjModel* m,
                                                         const StepperOptions& options) {
  if (absl::Status v = CheckMujocoVersion(mj_version(), mj_versionString()); !v.ok()) return v;
  if (!m) return absl::InvalidArgumentError("mjcenic: null mjModel");
  absl::StatusOr<StepperOptions> resolved = ResolveOptions(m, options);
  if (!resolved.ok()) return resolved.status();
  return std::unique_ptr<Stepper>(new Stepper(m, *resolved));
}

void Stepper::Scratch::Resize(const adapter::Sizes& n) {
  for (auto* x : {&q_start, &q_full, &q_mid, &q_end, &q_a, &q_b}) x->resize(n.nq);
  for (auto* x : {&v_start, &v_full, &v_mid, &v_end, &v_guess, &dv, &M_dv, &dq, &impulse,
                  &force_start, &v_call_start, &accel_prev, &v_a, &v_b, &guess_dir, &H_diag,
                  &drift, &drift_y1, &drift_y2, &drift_My})
    x->resize(n.nv);
  for (auto* x : {&act_start, &act_rate_start, &act_full, &act_mid, &act_rate_mid, &act_end,
                  &act_rate_prev, &act_a, &act_b, &act_rate_a, &act_euler})
    x->resize(n.na);
  for (auto* x : {&ctrl_prev, &ctrl_actuated}) x->resize(n.nu);
}

Stepper::Stepper(const mjModel* m, const StepperOptions& o)
    : m_(m),
      n_(adapter::ModelSizes(m)),
      options_(o),
      mujoco_(std::make_unique<Mujoco>(m, o, &stats_.controller_calls)),
      norm_(m, o.error_norm, o.length_scale, o.velocity_horizon),
      step_size_(Rules(o)),
      flight_(m),
      solver_state_(std::make_unique<SolverState>()),
      solver_(solver_state_->solver),
      solve_options_(solver_state_->solve),
      last_status_(icf::SolveStatus::kConverged),
      model_arrays_(m),
      failed_status_(icf::SolveStatus::kConverged),
      h_hist_(kBins, 0) {
  solver_state_->user = ToSolverOptions(o.solver);
  scratch_.Resize(n_);
  warm_.Configure(n_.nv);
  PrepareSolveOptions();
}

Stepper::~Stepper() = default;

void Stepper::SetController(Controller controller) {
  mujoco_->controller.Set(std::move(controller));
}

const std::vector<std::string>& Stepper::warnings() const { return mujoco_->builder.warnings(); }

void Stepper::EnsureStages(mjData* d, double* penetration, bool known_current) {
  if (known_current || stages_state_.Matches(m_, d)) return;
  const bool timed = options_.phase_timers;
  const auto t0 = PhaseNow(timed);
  mujoco_->stages.PositionVelocity(d);
  actuation_fresh_ = false;
  ++stats_.geometry_queries;
  if (!penetration) penetration = &stats_.max_penetration;
  *penetration = std::max(*penetration, adapter::MujocoStages::MaxPenetration(d));
  stats_.time_geometry += Seconds(t0, PhaseNow(timed));
  stages_state_.Capture(m_, d);
}

bool Stepper::ImplicitController() const {
  return mujoco_->controller.installed() &&
         options_.controller == ControllerTreatment::kImplicit;
}

bool Stepper::ExplicitController(mjData* d) {
  if (mujoco_->controller.installed() && options_.controller == ControllerTreatment::kExplicit)
    return mujoco_->controller.Call(d);
  return true;
}

bool Stepper::LinearizeController(mjData* d) {
  const Scratch& s = scratch_;
  const bool ok =
      mujoco_->controller.Linearize(d, s.q_start.data(), s.v_start.data(), s.act_start.data());
  stages_state_.Invalidate();  // d's stages belong to an evaluation state now
  actuation_fresh_ = false;
  return ok;
}

bool Stepper::ControllerAt(mjData* d, const double* q, const double* v) {
  // τ at a solve's start state (the sensitivities are reused).
  const bool ok = mujoco_->controller.ForceAt(d, q, v, scratch_.act_start.data());
  stages_state_.Invalidate();  // d's stages belong to an evaluation state now
  actuation_fresh_ = false;
  return ok;
}

bool Stepper::BuildAt(mjData* d, double h, icf::IcfModel* model, double* act_rate,
                      bool stages_current) {
  // Penetration counts at the trajectory's states: a step's start state at
  // once, the second build's state (midpoint) only if its attempt is accepted.
  double* penetration =
      model == &model_mid_ ? &attempt_penetration_ : &stats_.max_penetration;
  EnsureStages(d, penetration, stages_current);
  if (!ExplicitController(d)) return false;
  // Actuation at this state: already in d if the last PostStep computed it
  // here with the same ctrl (mj_step's one actuation pass per step).
  if (!(actuation_fresh_ &&
        adapter::CtrlEquals(m_, d, scratch_.ctrl_actuated.data())))
    mujoco_->stages.Actuation(d);
  actuation_fresh_ = false;
  adapter::CopyActRate(m_, d, act_rate);
  const bool timed = options_.phase_timers;
  const auto t0 = PhaseNow(timed);
  adapter::BuildInfo info;
  adapter::BuildRecords* records =
      model == &model_start_ ? &mujoco_->records_start : &mujoco_->records_mid;
  mujoco_->builder.Build(m_, d, h, options_.icf,
                         ImplicitController() ? &mujoco_->controller.feedback() : nullptr, model,
                         records, &info);
  // The ICF layer notes the mass matrix pattern the adapter set (once per reset).
  if (model->mass_tree_layout < 0) icf::NoteMassPattern(model);
  // The problem at a step's start state advances the anchors (once per
  // state) by the contacts' slip at its velocity.
  // (Without contacts and anchors Apply does nothing: no call.)
  if (model->params.stiction_anchors &&
      (model->contacts.size() > 0 || !mujoco_->anchors.empty()))
    mujoco_->anchors.Apply(m_, d, records->contacts, AnchorSlipStep(model->v0.data(), h),
                           model == &model_start_, model->v0.data(), model);
  *penetration = std::max(*penetration, info.max_penetration);
  stats_.contacts += info.ncontact;
  stats_.time_contacts += info.time_contacts;
  stats_.time_assembly += Seconds(t0, PhaseNow(timed));
  last_problem_ = model;
  return true;
}

namespace {
}  // namespace

void Stepper::PrepareSolveOptions() {
  // The convex solve's options that do not change from solve to solve (the
  // options are fixed at construction); Solve sets the tolerance per call.
  // The solver's accelerations are its own policy, keyed on the tolerance
  // and on whether the solve is a fixed step (icf_solver.h, "Policy").
  icf::SolverOptions& o = solve_options_;
  o = solver_state_->user;
  o.phase_timers = options_.phase_timers;
  o.fixed_step = options_.mode == Mode::kFixed || !options_.error_control;
}

bool Stepper::Solve(const icf::IcfModel& model, const double* guess, double* v,
                    double tolerance, const double* extrapolated) {
  const bool timed = options_.phase_timers;
  const auto t0 = PhaseNow(timed);
  icf::SolverOptions& o = solve_options_;  // (the fixed part: PrepareSolveOptions)
  o.tolerance = tolerance;
  icf::SolveStats st;
  last_status_ = solver_.Solve(model, guess, o, v, &st, nullptr, extrapolated);
  last_solved_ = &model;
  stats_.time_solve += Seconds(t0, PhaseNow(timed));
  ++stats_.solves;
  stats_.newton_iterations += st.iterations;
  stats_.island_solves += st.islands_iterated;
  stats_.island_newton_iterations += st.island_updates;
  last_iterations_ = st.iterations;
  stats_.factorizations += st.factorizations;
  stats_.ls_iterations += st.ls_iterations;
  stats_.time_evaluate += st.time_evaluate;
  stats_.time_factorize += st.time_factorize;
  stats_.time_line_search += st.time_line_search;
  return last_status_ == icf::SolveStatus::kConverged;
}

bool Stepper::Attempt(mjData* d, double h, double tolerance, double* error, int* worst) {
  // linearize → build → full step → the scheme's own part → error.
  attempt_penetration_ = 0;
  attempt_depth_ratio_ = 0;
  *error = 0;
  *worst = -1;
  if (!ProblemAtStart(d, h)) return false;
  if (!FullStep(h, tolerance)) return false;
  switch (options_.mode) {
    case Mode::kFixed: {
      // The full step is the step. In fixed mode its buffers are swapped in,
      // not copied (FixedStep, which the embedded estimate uses, copies): the
      // full-step buffers are read again only after the next FullStep has
      // written them (cenic-math §8.9.4).
      Scratch& s = scratch_;
      s.q_end.swap(s.q_full);
      s.v_end.swap(s.v_full);
      s.act_end.swap(s.act_full);
      return true;
    }
    case Mode::kCenic:
      if (options_.error_estimate == ErrorEstimate::kEmbedded &&
          !step_size_.EstimateByDoubling()) {
        const bool history = EmbeddedHistory(d);
        // Without history only a position-only norm can be estimated.
        if (history || (!norm_.uses_velocities() && n_.na == 0)) {
          EmbeddedError(h, history, error, worst);
          return true;
        }
      }
      return EstimatedStep(d, h, tolerance, error, worst);
    case Mode::kTrapezoid:
      return Trapezoid(d, h, tolerance, error, worst);
  }
  return false;
}

bool Stepper::ProblemAtStart(mjData* d, double h) {
  // Whether d is still the state Advance's EnsureStages compared with the
  // stages (cenic-math §8.9: one comparison per call, not two); used once.
  const bool stages_current = stages_checked_;
  stages_checked_ = false;
  // Built once per start state, reused after a rejection (only h changes).
  if (model_start_state_.Matches(m_, d)) {
    model_start_.SetTimeStep(h);
    last_problem_ = &model_start_;
    return true;
  }
  if (ImplicitController() && !LinearizeController(d)) return false;  // (moves d's stages)
  if (!BuildAt(d, h, &model_start_, scratch_.act_rate_start.data(),
               stages_current && !ImplicitController()))
    return false;
  if (PenetrationCheck()) mujoco_->depth_check.CaptureStart(m_, d);  // contacts and limits
  // Kept for the retries of a rejected attempt; without error control every
  // step is one attempt, and a call after a failed one rebuilds the same
  // problem (cenic-math §8.9).
  if (options_.mode != Mode::kFixed && options_.error_control)
    model_start_state_.Capture(m_, d);
  else
    model_start_state_.Invalidate();
  return true;
}

double Stepper::AnchorSlipStep(const double* v, double h) const {
  // cenic-math §4.9: the slip of a state's velocity is measured in the ε of
  // the solve that produced it, when v is the last accepted step's end
  // velocity (else, e.g. a velocity set by the user, in this step's).
  return h_slip_ > 0 && warm_.EndsAt(v) ? h_slip_ : h;
}

bool Stepper::PenetrationCheck() const { return step_size_.rules().depth_limit; }

double Stepper::DepthGrowthRatio(const mjData* d) {
  return mujoco_->depth_check.Ratio(m_, d, mujoco_->records_start, &mujoco_->builder,
                                    options_.penetration_tolerance, norm_.length_scale(),
                                    options_.icf.violation_tolerance);
}

bool Stepper::FullStep(double h, double tolerance) {
  // (P24): v̂ from v_t, x̂ = x_t advanced by h. Guess (cenic-math §8.1.1, the
  // warm-start unit) → solve → integrate. An extrapolated island takes at
  // least one Newton iteration (Solve's `extrapolated`).
  Scratch& s = scratch_;
  const bool any_warm = warm_.Propose(model_start_, s.v_start.data(), h, tolerance,
                                      s.v_guess.data(), s.guess_dir.data());
  if (!Solve(model_start_, s.v_guess.data(), s.v_full.data(), tolerance,
             any_warm ? s.guess_dir.data() : nullptr))
    return false;
  if (norm_.kind() == ErrorNormKind::kPropagated) {
    // cenic-math §11.11: velocity weights from this step's H and M diagonals.
    solver_.HessianDiagonal(model_start_, s.H_diag.data());
    norm_.SetPropagation(h, s.H_diag.data(), model_start_.M_diag.data());
  }
  Integrate(s.q_start.data(), s.v_full.data(), s.act_start.data(), s.act_rate_start.data(), h,
            s.q_full.data(), s.act_full.data());
  return true;
}

absl::Status Stepper::InternalStep(mjData* d, double t_limit, bool overshoot) {
  const double t0 = adapter::Time(d);
  Scratch& s = scratch_;
  adapter::SaveState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
  warm_.BeginStep(s.v_start.data());
  // Adaptive Newton tolerance ε = κ ε_acc only when the accuracy means something;
  // else solver_tolerance at a step of opt.timestep, in proportion to a
  // shorter step (cenic-math §8.2).
  const bool adaptive = step_size_.controlled() && options_.adaptive_tolerance;
  const double tol = adaptive ? options_.kappa * options_.accuracy : options_.solver.tolerance;
  const double dt = adapter::Timestep(m_);
  double h = step_size_.Propose(t0, dt);
  // §11.10, between the queries: no two geoms may pass through each other
  // inside the step (x_t's stages are its first build's anyway).
  if (PenetrationCheck()) {
    EnsureStages(d);
    h = std::max(mujoco_->depth_check.SweepLimit(m_, d, h), step_size_.min_step());
  }
  for (;;) {
    h = step_size_.LandOn(h, t_limit - t0, overshoot);
    double error;
    int worst;
    mujoco_->controller.ClearFailure();
    const bool ok = Attempt(d, h, adaptive ? tol : tol * std::min(1.0, h / dt), &error, &worst);
    if (!ok) failed_status_ = last_status_;
    if (absl::Status st = AttemptFailure(d, t0, h, ok); !st.ok()) return st;
    const StepDecision dec = step_size_.Decide(ok, error, h);
    if (dec.underflow)
      return step_size_.Underflow(
          t0, error, h,
          absl::StrCat("; worst coordinate: ", norm_.WorstName(m_, worst),
                       ok ? "" : absl::StrCat("; last solve: ", icf::ToString(last_status_))));
    if (dec.accept && DepthRejects(d, &h, overshoot && h > t_limit - t0)) continue;
    if (dec.accept) {
      if (!step_size_.Accept(dec.h_next))
        return ErrorStatus(absl::StatusCode::kResourceExhausted,
            "mjcenic: no progress guarantee at time ", t0, ": the convex solve failed at a "
            "larger step before each of the last ", StepSizeController::kMaxSolverLimitedSteps,
            " accepted steps (now h = ", h, " s; last failure: ", icf::ToString(failed_status_),
            ", max_iterations ", options_.solver.max_iterations, "): steps are sized by the "
            "solver, not the accuracy. Raise max_iterations or solver_tolerance; the state is "
            "the last accepted step");
      stats_.last_error = error;  // the estimate, when the scheme makes one
      break;
    }
    ++stats_.rejected_steps;
    h = dec.h_next;
  }
  FinishInternalStep(d, h, h == t_limit - t0 ? t_limit : t0 + h);
  return absl::OkStatus();
}

absl::Status Stepper::AttemptFailure(const mjData* d, double t0, double h, bool ok) const {
  const Scratch& s = scratch_;
  absl::Status st;
  if (!ok && last_status_ == icf::SolveStatus::kNonFinite) st = OverflowingProblem(d, t0, h);
  if (st.ok() && mujoco_->controller.failed())
    st = ErrorStatus(absl::StatusCode::kAborted, "mjcenic: the user controller failed at time ",
                     t0);
  if (!st.ok()) {
    adapter::LoadState(m_, const_cast<mjData*>(d), s.q_start.data(), s.v_start.data(),
                       s.act_start.data());
    return st;
  }
  if (!ok && !step_size_.controlled())
    return ErrorStatus(absl::StatusCode::kInternal, "mjcenic: convex solve failed at time ", t0,
                       " (h = ", h, "): ", icf::ToString(last_status_));
  return absl::OkStatus();
}

bool Stepper::DepthRejects(mjData* d, double* h, bool defer_end) {
  // cenic-math §11.10: the end state's geometry query (the next step's or the
  // post-step contract's anyway) checks that no contact or limit deepened by
  // more than its tolerance since x_t. A step that ends past the call's
  // target hands the call a state inside it (§11.5), whose own query comes
  // first: its end is queried, and checked, once a call continues from it.
  end_check_deferred_ = false;
  if (!PenetrationCheck()) return false;
  const Scratch& s = scratch_;
  double ratio = attempt_depth_ratio_;
  if (defer_end) {
    end_check_deferred_ = true;
  } else {
    adapter::LoadState(m_, d, s.q_end.data(), s.v_end.data(), s.act_end.data());
    EnsureStages(d, &attempt_penetration_);
    ratio = std::max(ratio, DepthGrowthRatio(d));
  }
  if (!step_size_.LimitDepth(ratio, *h, h)) return false;
  adapter::LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
  ++stats_.rejected_steps;
  return true;
}

void Stepper::FinishInternalStep(mjData* d, double h, double t_end) {
  Scratch& s = scratch_;
  adapter::LoadState(m_, d, s.q_end.data(), s.v_end.data(), s.act_end.data());
  adapter::SetTime(d, t_end);
  if (options_.mode == Mode::kTrapezoid) TrapezoidEndForce(d, h);
  if (options_.error_estimate == ErrorEstimate::kEmbedded) RecordEmbeddedHistory(d, h);
  warm_.Accept(s.v_start.data(), s.v_end.data(), h);
  h_slip_ = last_solved_ ? last_solved_->h : h;  // the solve that produced v_end (§4.9)
  RecordStep(h);
}

absl::Status Stepper::OverflowingProblem(const mjData* d, double t, double h) const {
  // A solve failed on a non-finite value. If the problem's momentum term
  // r = M v + h f (cenic-math §3) has an entry whose square overflows
  // (|r_i| ≥ 1e150), no smaller step repairs it: name the dof and its inputs.
  if (!last_solved_) return absl::OkStatus();
  const std::vector<double>& r = last_solved_->r;
  for (int i = 0; i < n_.nv && i < static_cast<int>(r.size()); ++i) {
    if (std::abs(r[i]) < 1e150) continue;
    return ErrorStatus(absl::StatusCode::kInvalidArgument,
        "mjcenic: non-finite convex problem at time ", t, " (h = ", h, "): the momentum r[", i,
        "] = M v + h f of dof ", i, " (joint ", adapter::DofJointLabel(m_, i), ") is ", r[i],
        ", beyond double range when squared; at this dof qvel = ", scratch_.v_start[i],
        adapter::DofForces(m_, d, i), "; the state was not advanced");
  }
  return absl::OkStatus();
}

void Stepper::PostStep(mjData* d, double H, const double* v_start) {
  const bool timed = options_.phase_timers;
  const auto t0 = PhaseNow(timed);
  if (!stages_state_.Matches(m_, d)) {
    mujoco_->stages.PositionVelocity(d);
    ++stats_.geometry_queries;
    stats_.max_penetration = std::max(stats_.max_penetration, adapter::MujocoStages::MaxPenetration(d));
  }
  mujoco_->stages.SensorsAndForces(d);  // actuation at d's state and ctrl
  // A plugin's advance (FinishStep) may change act after that actuation.
  actuation_fresh_ = !adapter::HasPlugins(m_);
  adapter::CopyCtrl(m_, d, scratch_.ctrl_actuated.data());
  // efc_force from the impulses of the step's last solve.
  const adapter::BuildRecords* records = last_solved_ == &model_start_ ? &mujoco_->records_start
                                         : last_solved_ == &model_mid_ ? &mujoco_->records_mid
                                                                       : nullptr;
  const auto t_write = PhaseNow(timed);
  mujoco_->forces.Write(m_, records, solver_.solution(), records ? last_solved_->h : 0, d);
  stats_.time_writeback += Seconds(t_write, PhaseNow(timed));
  mujoco_->stages.FinishStep(d, H, v_start);
  // (m->opt is the one the call's first EnsureStages compared or recorded:
  // the model is const during a call, so its copy of the options is kept.)
  stages_state_.Capture(m_, d, /*options=*/false);
  stats_.time_geometry += Seconds(t0, PhaseNow(timed));
}

void Stepper::ModelEdited() {
  // What the adapter read from the model when it was made (implicit damping
  // and stiffness, body masses, actuators, ...) is read again, the stages are
  // recomputed, and a pending dense-output step, taken with the old values,
  // is dropped.
  mujoco_->builder = adapter::MujocoAdapter(m_, options_.contact);
  mujoco_->builder.set_phase_timers(options_.phase_timers);
  mujoco_->depth_check = adapter::PenetrationCheck(m_);  // thicknesses and reaches
  mujoco_->stages.ModelEdited();
  // The stages and problems computed from the old values are stale.
  for (StateSnapshot* s : {&stages_state_, &model_start_state_, &force_start_state_,
                           &prev_end_state_, &dense_written_})
    s->Invalidate();
  actuation_fresh_ = false;
  dense_pending_ = false;
  step_size_.ForgetEstimate();
  model_start_.damper_spring_source = model_mid_.damper_spring_source = -1;  // D, K refilled
}

absl::Status Stepper::Advance(mjData* d, double t, bool single_step, bool check_model) {
  // One outer call: checks, control inputs once (zero-order hold), internal
  // steps until t (or one step), then the post-step contract.
  if (check_model && model_arrays_.Changed()) ModelEdited();
  const bool by_ticks = kHaveTicks && !options_.phase_timers;
  const std::uint64_t start_ticks = by_ticks ? StartTicks() : 0;
  const auto start = by_ticks ? Clock::time_point{} : Clock::now();
  auto add_total = [&] {
    if (by_ticks) {
      // A counter that went backwards (unsynchronized across cores) adds 0.
      const std::uint64_t end = Ticks();
      if (end > start_ticks) total_ticks_ += end - start_ticks;
    } else {
      clock_total_ += Seconds(start, Clock::now());
    }
  };
  if (absl::Status s = adapter::CheckInputs(m_, d); !s.ok()) return s;
  const double t_start = adapter::Time(d);
  if (!std::isfinite(t) && !single_step)
    return absl::InvalidArgumentError("mjcenic: target time is not finite");
  if (t < t_start)
    return ErrorStatus(absl::StatusCode::kInvalidArgument, "mjcenic: cannot advance from time ",
                       t_start, " to ", t);
  if (!single_step)
    if (absl::Status s = step_size_.CheckStepCount(t_start, t, adapter::Timestep(m_)); !s.ok())
      return s;
  adapter::CopyVelocity(m_, d, scratch_.v_call_start.data());
  EnsureStages(d);
  mujoco_->stages.ControlCallback(d);
  if (mujoco_->controller.installed() &&
      options_.controller == ControllerTreatment::kZeroOrderHold && !mujoco_->controller.Call(d))
    return ErrorStatus(absl::StatusCode::kAborted, "mjcenic: the user controller failed at time ",
                       t_start);
  // Dense output: a call that finds d as the previous call left it continues
  // that call's accepted step (interpolating again if t is still inside it)
  // and may end inside its own last step. StepOnce restarts from d (its one
  // step starts where the caller stands).
  const bool overshoot = !single_step && DenseOutputAllowed(d);
  if (!overshoot) dense_pending_ = false;
  absl::Status status;
  if (dense_pending_ && t <= dense_t_b_)
    status = OutputInsideStep(d, t);
  else
    status = AdvanceSteps(d, t, single_step, overshoot);
  PostStep(d, adapter::Time(d) - t_start, scratch_.v_call_start.data());
  add_total();
  if (!status.ok()) {
    dense_pending_ = false;
    dense_written_.Invalidate();
    return status;
  }
  if (!single_step && DenseOutputApplies()) {  // no copy per call without it
    dense_written_.Capture(m_, d);
    dense_written_time_ = adapter::Time(d);
  } else {
    dense_written_.Invalidate();
  }
  if (!adapter::StateFinite(m_, d)) [[unlikely]]
    return ErrorStatus(absl::StatusCode::kInternal, "mjcenic: state became non-finite at time ",
                       adapter::Time(d));
  return absl::OkStatus();
}

absl::Status Stepper::AdvanceSteps(mjData* d, double t, bool single_step, bool overshoot,
                                   bool as_compared) {
  const double t_start = adapter::Time(d);
  const bool loaded_dense = dense_pending_;
  if (dense_pending_) LoadDenseEnd(d);
  // d is the state EnsureStages compared in Advance unless something ran
  // since that may change it (a control callback, a zero-order-hold
  // controller, the dense-output end just loaded): the first build may skip
  // comparing it again (ProblemAtStart).
  bool checked = as_compared && !mujoco_->stages.HasControlCallback() &&
                 !mujoco_->controller.installed() && !loaded_dense;
  absl::Status status;
  long steps = 0;
  step_size_.BeginCall();
  do {
    stages_checked_ = checked;
    checked = false;
    status = InternalStep(d, t, overshoot);
    stages_checked_ = false;
    if (status.ok() && !single_step)
      status = step_size_.CheckCallSteps(++steps, t_start, adapter::Time(d), t, stats_.last_h);
  } while (status.ok() && !single_step && adapter::Time(d) < t);
  if (status.ok() && overshoot && adapter::Time(d) > t) {
    KeepDenseStep(d);
    status = OutputInsideStep(d, t);
  }
  return status;
}

absl::Status Stepper::AdvanceTo(mjData* d, double t) {
  if (t == adapter::Time(d)) return adapter::CheckInputs(m_, d);  // nothing to do
  return Advance(d, t, false);
}

absl::Status Stepper::Step(mjData* d) { return Step(d, 1); }

absl::Status Stepper::Step(mjData* d, int nstep) {
  // The model is compared before the first step only: nothing but a control
  // callback or the user controller, run between the steps, can edit it.
  const bool callbacks = mujoco_->stages.HasControlCallback() || mujoco_->controller.installed();
  const double dt = adapter::Timestep(m_);
  for (int i = 0; i < nstep; ++i) {
    if (absl::Status s = StepSizeController::CheckTimestep(adapter::Time(d), dt); !s.ok())
      return s;
    const bool check_model = i == 0 || callbacks;
    if (absl::Status s = Advance(d, adapter::Time(d) + dt, false, check_model); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Stepper::StepOnce(mjData* d) {
  return Advance(d, std::numeric_limits<double>::infinity(), true);
}

}  // namespace mjcenic
