#include "mjcenic/integrator/stepper.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include <absl/strings/str_cat.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "mjcenic/adapter/constraint_forces.h"
#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/adapter/mujoco_stages.h"
#include "mjcenic/adapter/stiction_anchors.h"
#include "mjcenic/integrator/controller_linearizer.h"
#include "mjcenic/icf/short_arrays.h"

namespace mjcenic {

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The time-stamp counter of time_total (Stepper::StartTicks; cenic-math
// §8.9, "The wall clock of time_total"): a few cycles to read, against
// ~35 ns for each steady-clock read on the shared VM, twice per call.
#if defined(__x86_64__) || defined(__i386__)
constexpr bool kHaveTicks = true;
std::uint64_t Ticks() { return __rdtsc(); }
#else
constexpr bool kHaveTicks = false;
std::uint64_t Ticks() { return 0; }
#endif
std::int64_t ClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// A phase timer's clock read: the epoch when phase timers are off, so every
// Seconds() of two such reads is 0 without reading the clock.
Clock::time_point PhaseNow(bool on) { return on ? Clock::now() : Clock::time_point{}; }

// Finiteness of many arrays in one test: x·0 is ±0 for a finite x and NaN
// for ±inf and NaN, and a NaN survives the sum. AddTimesZero adds x·0 of one
// array into a two-lane accumulator (SSE2 on x86-64, the baseline: ~2
// instructions per value against the test-and-branch loop's ~8); the
// accumulator of all arrays is tested once (docs/cenic-math.md §8.9).
typedef double ZeroSum __attribute__((vector_size(16)));
inline void AddTimesZero(const double* x, long n, ZeroSum* acc) {
  ZeroSum a = *acc, b = {0.0, 0.0};
  long i = 0;
  for (; i + 4 <= n; i += 4) {  // two independent sums: long arrays (humanoid100)
    ZeroSum u, v;
    std::memcpy(&u, x + i, sizeof(u));
    std::memcpy(&v, x + i + 2, sizeof(v));
    a += u * 0.0;
    b += v * 0.0;
  }
  if (i + 2 <= n) {
    ZeroSum u;
    std::memcpy(&u, x + i, sizeof(u));
    a += u * 0.0;
    i += 2;
  }
  if (i < n) a[0] += x[i] * 0.0;
  *acc = a + b;
}

// An error status built out of line: the message's formatting stays out of
// the per-step functions' hot code (docs/cenic-math.md §8.9).
template <class... Args>
[[gnu::cold, gnu::noinline]] absl::Status ErrorStatus(absl::StatusCode code,
                                                      const Args&... args) {
  return absl::Status(code, absl::StrCat(args...));
}

int FirstNonFinite(const double* x, long n) {
  for (long i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return static_cast<int>(i);
  return -1;
}

}  // namespace

// The adapter side of one stepper (everything that reads or writes MuJoCo's
// data), kept out of the public header.
struct Stepper::Mujoco {
  Mujoco(const mjModel* m, const StepperOptions& o, long* controller_calls)
      : builder(m, o.contact), stages(m, o.speculative_margin),
        controller(m, &stages, controller_calls) {
    builder.set_phase_timers(o.phase_timers);
  }
  adapter::MujocoAdapter builder;
  adapter::MujocoStages stages;
  adapter::ConstraintForces forces;
  // Where the constraints of model_start_ / model_mid_ came from.
  adapter::BuildRecords records_start, records_mid;
  adapter::StictionAnchors anchors;  // elastic-slip state of sticking contacts
  ControllerLinearizer controller;
};

// (0 without contacts, what the loop over them returns, without the call.)
double MaxPenetration(const mjData* d) {
  return d->ncon > 0 ? adapter::MujocoStages::MaxPenetration(d) : 0.0;
}

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

void Stepper::Scratch::Resize(int nq, int nv, int na) {
  for (auto* x : {&q_start, &q_full, &q_mid, &q_end, &q_a, &q_b}) x->resize(nq);
  for (auto* x : {&v_start, &v_full, &v_mid, &v_end, &v_guess, &dv, &M_dv, &dq, &impulse,
                  &force_start, &v_call_start, &accel_prev, &v_a, &v_b, &warm_accel,
                  &warm_v, &guess_dir, &H_diag, &drift, &drift_y1, &drift_y2, &drift_My,
                  &warm_accel_old, &warm_accel_older})
    x->resize(nv);
  // One entry per island of the problem (at most one per dof, at least one).
  const int ni = std::max(nv, 1);
  island_c.resize(ni);
  island_sums.resize(5 * ni);
  island_lag2.resize(2 * ni);
  island_q.resize(ni);
  for (auto* x : {&island_smooth, &island_piece}) x->resize(ni);
  for (auto* x : {&act_start, &act_rate_start, &act_full, &act_mid, &act_rate_mid, &act_end,
                  &act_rate_prev, &act_a, &act_b, &act_rate_a, &act_euler})
    x->resize(na);
}

Stepper::Stepper(const mjModel* m, const StepperOptions& o)
    : m_(m),
      options_(o),
      mujoco_(std::make_unique<Mujoco>(m, o, &stats_.controller_calls)),
      norm_(m, o.error_norm, o.length_scale, o.velocity_horizon),
      model_fingerprint_(m),
      h_hist_(kBins, 0) {
  scratch_.Resize(static_cast<int>(m->nq), static_cast<int>(m->nv), static_cast<int>(m->na));
  scratch_.ctrl_prev.resize(m->nu);
  scratch_.ctrl_actuated.resize(m->nu);
  // Penetration check on limits (§11.10): at most two rows per limited
  // joint or tendon, reserved here (no allocation while stepping).
  int limit_rows = 0;
  for (int j = 0; j < m->njnt; ++j) limit_rows += m->jnt_limited[j] ? 2 : 0;
  for (int t = 0; t < m->ntendon; ++t) limit_rows += m->tendon_limited[t] ? 2 : 0;
  has_limits_ = limit_rows > 0;
  start_limits_.reserve(limit_rows);
  check_limits_.reserve(limit_rows);
  PrepareSolveOptions();
}

Stepper::~Stepper() = default;

void Stepper::SetController(Controller controller) {
  mujoco_->controller.Set(std::move(controller));
}

const std::vector<std::string>& Stepper::warnings() const { return mujoco_->builder.warnings(); }

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

namespace {
// The first non-finite input of d, named (CheckInputs' message): out of line
// and cold, the per-call test only sums (cenic-math §8.9, "Tiny problems").
[[gnu::cold, gnu::noinline]] absl::Status NonFiniteInput(const mjModel* m, const mjData* d) {
  struct Field { const char* name; const double* x; long n; };
  const Field fields[] = {
      {"qpos", d->qpos, m->nq},         {"qvel", d->qvel, m->nv},
      {"act", d->act, m->na},           {"ctrl", d->ctrl, m->nu},
      {"qfrc_applied", d->qfrc_applied, m->nv},
      {"xfrc_applied", d->xfrc_applied, 6 * m->nbody},
      {"mocap_pos", d->mocap_pos, 3 * m->nmocap},
      {"mocap_quat", d->mocap_quat, 4 * m->nmocap}};
  for (const Field& f : fields) {
    const int i = FirstNonFinite(f.x, f.n);
    if (i >= 0)
      return ErrorStatus(absl::StatusCode::kInvalidArgument, "mjcenic: ", f.name, "[", i,
                         "] is ", f.x[i], " at time ", d->time, "; the state was not advanced");
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status Stepper::CheckInputs(const mjData* d) const {
  struct Array { const double* x; long n; };
  const Array arrays[] = {{d->qpos, m_->nq},         {d->qvel, m_->nv},
                          {d->act, m_->na},          {d->ctrl, m_->nu},
                          {d->qfrc_applied, m_->nv}, {d->xfrc_applied, 6 * m_->nbody},
                          {d->mocap_pos, 3 * m_->nmocap}, {d->mocap_quat, 4 * m_->nmocap}};
  ZeroSum acc = {0.0, 0.0};
  for (const Array& a : arrays) AddTimesZero(a.x, a.n, &acc);
  if (acc[0] + acc[1] != 0.0) [[unlikely]] {
    if (absl::Status st = NonFiniteInput(m_, d); !st.ok()) return st;
  }
  if (!(m_->opt.timestep > 0) || !std::isfinite(m_->opt.timestep)) [[unlikely]]
    return ErrorStatus(absl::StatusCode::kInvalidArgument,
                       "mjcenic: opt.timestep must be positive, got ", m_->opt.timestep);
  if (!std::isfinite(d->time)) [[unlikely]]
    return absl::InvalidArgumentError("mjcenic: time is not finite");
  return absl::OkStatus();
}

void Stepper::EnsureStages(mjData* d, double* penetration, bool known_current) {
  if (known_current || stages_state_.Matches(m_, d)) return;
  const bool timed = options_.phase_timers;
  const auto t0 = PhaseNow(timed);
  mujoco_->stages.PositionVelocity(d);
  actuation_fresh_ = false;
  ++stats_.geometry_queries;
  if (!penetration) penetration = &stats_.max_penetration;
  *penetration = std::max(*penetration, MaxPenetration(d));
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
        std::equal(d->ctrl, d->ctrl + m_->nu, scratch_.ctrl_actuated.begin())))
    mujoco_->stages.Actuation(d);
  actuation_fresh_ = false;
  std::copy(d->act_dot, d->act_dot + m_->na, act_rate);
  const bool timed = options_.phase_timers;
  const auto t0 = PhaseNow(timed);
  adapter::BuildInfo info;
  adapter::BuildRecords* records =
      model == &model_start_ ? &mujoco_->records_start : &mujoco_->records_mid;
  mujoco_->builder.Build(m_, d, h, options_.icf,
                         ImplicitController() ? &mujoco_->controller.feedback() : nullptr, model,
                         records, &info);
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
constexpr double kTightTolerance = 1e-7;
constexpr double kTightPcgForcing = 1e-2;  // cenic-math §8.4
constexpr double kExtendSlope = 0.3;  // κ of the extended line search (cenic-math §8.3)
constexpr int kSweepAfter = 4;  // contact sweeps after a solve of ≥ 4 iterations (§8.1)
// ... and only on islands whose dofs' island needed ≥ 6 iterations last time
// (SolverOptions::sweep_min_history, cenic-math §8.1, "h23e"), and again
// after a swept start only if that saved ≥ 2 of them (sweep_min_saving: the
// sweeps cost about as much as one or two Newton iterations of the island).
constexpr int kSweepHistory = 6;
constexpr int kSweepSaving = 2;
constexpr double kDepthSafety = 0.9;  // ρ of the depth-growth step limit (§11.10)
constexpr double kDepthFloor = 1e-3;  // tolerance floor 10⁻³ L (§11.10)
std::uint64_t PairKey(int g1, int g2) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(g1)) << 32) |
         static_cast<std::uint32_t>(g2);
}
}  // namespace

void Stepper::PrepareSolveOptions() {
  // The convex solve's options that do not change from solve to solve (the
  // options are fixed at construction); Solve sets the rest per call without
  // copying the whole struct (cenic-math §8.9, "h26b").
  icf::SolverOptions& o = solve_options_;
  o = options_.solver;
  o.phase_timers = options_.phase_timers;
  // Primal-dual friction (cenic-math §8.1), in fixed mode and under error
  // control: only H changes, so the solution is the same to the tolerance.
  o.friction_dual = true;
  // Extended line search (cenic-math §8.3): an island whose Newton step
  // undershoots the line minimum by far searches on past α = 1.
  o.extend_slope = kExtendSlope;
  // The islands' history is kept only when the sweeps are on (default off:
  // no per-solve bookkeeping for them).
  if (o.guess_sweeps > 0 || o.articulated_sweeps > 0) {  // (h24c: articulated sweeps too)
    o.sweep_min_history = kSweepHistory;
    o.sweep_min_saving = kSweepSaving;
  }
}

bool Stepper::Solve(const icf::IcfModel& model, const double* guess, double* v,
                    double tolerance, const double* guess_direction,
                    const double* extrapolated) {
  const bool timed = options_.phase_timers;
  const auto t0 = PhaseNow(timed);
  icf::SolverOptions& o = solve_options_;  // (the fixed part: PrepareSolveOptions)
  o.tolerance = tolerance;
  // After a hard solve (≥ 3 iterations) the duals start at 0 (a majorized
  // first iteration); a near-steady scene, solved in 1–2 exact steps, starts
  // at z = t̂ (exact Newton).
  // The PCG directions' forcing (cenic-math §8.4) is loose while the
  // gradient falls slowly, with a tight tolerance only: under error control
  // the few iterations would carry the looser directions into the solution.
  o.pcg_forcing_max =
      tolerance <= kTightTolerance ? kTightPcgForcing : options_.solver.pcg_forcing_max;
  o.friction_dual_exact_start = last_iterations_ < 3;
  // Contact sweep guess (cenic-math §8.1): fixed mode only (a tight
  // tolerance; under error control the loose solves would carry the other
  // starting point into the accepted steps), and only after a solve that
  // needed ≥ kSweepAfter iterations (a scene that Newton solves in a few
  // would pay the sweeps for nothing).
  // The impact sweeps (h24b) follow the same rule.
  const bool fixed_steps = options_.mode == Mode::kFixed || !options_.error_control;
  const bool sweeps = fixed_steps && tolerance <= kTightTolerance && last_iterations_ >= kSweepAfter;
  o.guess_sweeps = sweeps ? options_.solver.guess_sweeps : 0;
  o.impact_sweeps = sweeps ? options_.solver.impact_sweeps : 0;
  o.articulated_sweeps = sweeps ? options_.solver.articulated_sweeps : 0;
  icf::SolveStats st;
  last_status_ = solver_.Solve(model, guess, o, v, &st, nullptr, guess_direction, extrapolated);
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

void Stepper::IntegrateActivations(const double* act, const double* act_dot, double h,
                                   double* out) const {
  // MuJoCo's rule (Euler, exact filter), clamped to actrange (mapping §4.5).
  for (int a = 0; a < m_->nu && m_->na; ++a) {
    const int adr = m_->actuator_actadr[a], num = m_->actuator_actnum[a];
    for (int j = adr; j >= 0 && j < adr + num; ++j) {
      double x = act[j];
      if (m_->actuator_dyntype[a] == mjDYN_FILTEREXACT) {
        const double tau = std::max(m_->actuator_dynprm[mjNDYN * a], mjMINVAL);
        x += act_dot[j] * tau * (1 - std::exp(-h / tau));
      } else {
        x += h * act_dot[j];
      }
      if (m_->actuator_actlimited[a])
        x = std::clamp(x, m_->actuator_actrange[2 * a], m_->actuator_actrange[2 * a + 1]);
      out[j] = x;
    }
  }
}

void Stepper::Integrate(const double* q, const double* v, const double* act,
                        const double* act_rate, double h, double* q_out, double* act_out) const {
  CopyShort(q, m_->nq, q_out);
  mj_integratePos(m_, q_out, v, h);
  IntegrateActivations(act, act_rate, h, act_out);
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
  const int nv = static_cast<int>(m_->nv);
  const double hs = model.h, tau = norm_.velocity_horizon();
  for (int i = 0; i < nv; ++i) s.drift[i] = va[i] - vb[i];
  if (!solver_.FactorAtSolution(model, options_.solver)) {
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
  // Local Richardson extrapolation of step doubling: the two-half-step
  // result x and the full step x̂ differ by ≈ C h²/2, so 2x − x̂ cancels the
  // leading local error term; the estimate ‖x̂ − x‖ still sizes the step.
  Scratch& s = scratch_;
  mj_differentiatePos(m_, s.dq.data(), 1.0, s.q_full.data(), s.q_end.data());
  mj_integratePos(m_, s.q_end.data(), s.dq.data(), 1.0);
  for (int i = 0; i < m_->nv; ++i) s.v_end[i] = 2 * s.v_end[i] - s.v_full[i];
  for (int a = 0; a < m_->nu; ++a) {
    const int adr = m_->actuator_actadr[a], num = m_->actuator_actnum[a];
    for (int j = adr; adr >= 0 && j < adr + num; ++j) {
      double x = 2 * s.act_end[j] - s.act_full[j];
      if (m_->actuator_actlimited[a])
        x = std::clamp(x, m_->actuator_actrange[2 * a], m_->actuator_actrange[2 * a + 1]);
      s.act_end[j] = x;
    }
  }
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
      // written them (cenic-math §8.9, "Tiny problems").
      Scratch& s = scratch_;
      s.q_end.swap(s.q_full);
      s.v_end.swap(s.v_full);
      s.act_end.swap(s.act_full);
      return true;
    }
    case Mode::kCenic:
      if (options_.error_estimate == ErrorEstimate::kEmbedded) {
        const bool history = EmbeddedHistory(d);
        // Without history only a position-only norm can be estimated.
        if (history || (!norm_.uses_velocities() && m_->na == 0)) {
          EmbeddedError(h, history, error, worst);
          return true;
        }
      }
      return StepDoubling(d, h, tolerance, error, worst);
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
  start_depths_valid_ = false;  // penetration check: new start contacts
  if (has_limits_ && PenetrationCheck()) LimitViolations(d, &start_limits_);  // and limits
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
  const Scratch& s = scratch_;
  const bool ours = warm_valid_ && h_slip_ > 0 && std::equal(s.warm_v.begin(), s.warm_v.end(), v);
  return ours ? h_slip_ : h;
}

bool Stepper::PenetrationCheck() const {
  return options_.penetration_tolerance > 0 && options_.mode != Mode::kFixed &&
         options_.error_control;
}

double Stepper::DepthGrowthRatio(const mjData* d) {
  // cenic-math §11.10: growth of each active contact's depth over the
  // deepest start depth of its geom pair (0 for a pair that was not in
  // contact at x_t), relative to its tolerance c·x_nom.
  // Floor: the position resolution of the default accuracy, 10⁻³ L (stiff
  // contacts have x_nom of micrometres and would otherwise force tiny steps).
  const double floor = kDepthFloor * norm_.length_scale();
  if (!start_depths_valid_) {
    // The deepest start depth per geom pair, sorted by pair (built once per
    // start build; a lookup is then a binary search, not a scan).
    start_depths_.clear();
    for (const adapter::ContactRecord& r : mujoco_->records_start.contacts)
      start_depths_.push_back({PairKey(r.geom[0], r.geom[1]), r.depth});
    std::sort(start_depths_.begin(), start_depths_.end());
    size_t n = 0;
    for (const auto& e : start_depths_) {
      if (n > 0 && start_depths_[n - 1].first == e.first)
        start_depths_[n - 1].second = std::max(start_depths_[n - 1].second, e.second);
      else
        start_depths_[n++] = e;
    }
    start_depths_.resize(n);
    start_depths_valid_ = true;
  }
  double ratio = 0;
  for (int i = 0; i < d->ncon; ++i) {
    const mjContact& c = d->contact[i];
    if (c.exclude != 0 || !(c.dist < 0)) continue;
    const std::uint64_t key = PairKey(c.geom[0], c.geom[1]);
    const auto it = std::lower_bound(
        start_depths_.begin(), start_depths_.end(), key,
        [](const std::pair<std::uint64_t, double>& e, std::uint64_t k) { return e.first < k; });
    const double start = it != start_depths_.end() && it->first == key ? it->second : 0.0;
    const double growth = -c.dist - start;
    if (!(growth > 0)) continue;
    const double tol = options_.penetration_tolerance *
                       std::max(mujoco_->builder.NominalPenetration(m_, c), floor);
    if (tol > 0) ratio = std::max(ratio, growth / tol);
  }
  // Joint and tendon limits (§11.10): a limit first met inside a step (a
  // ball joint's row, present only once violated, or a nonlinear tendon's)
  // is reached too late exactly like a contact. Growth of each row's
  // violation over its violation at x_t, against c·10⁻³ in the row's unit.
  if (has_limits_) {
    LimitViolations(d, &check_limits_);
    for (const auto& [key, violation] : check_limits_) {
      const auto it = std::lower_bound(
          start_limits_.begin(), start_limits_.end(), key,
          [](const std::pair<std::uint64_t, double>& e, std::uint64_t k) { return e.first < k; });
      const double start = it != start_limits_.end() && it->first == key ? it->second : 0.0;
      const double growth = violation - start;
      if (!(growth > 0)) continue;
      const int type = static_cast<int>(key >> 62), id = static_cast<int>((key >> 1) & 0x7fffffff);
      const double tol = options_.penetration_tolerance * kDepthFloor *
                         LimitUnit(type == 0 ? mjCNSTR_LIMIT_JOINT : mjCNSTR_LIMIT_TENDON, id);
      if (tol > 0) ratio = std::max(ratio, growth / tol);
    }
  }
  return ratio;
}

void Stepper::LimitViolations(const mjData* d,
                              std::vector<std::pair<std::uint64_t, double>>* out) const {
  // MuJoCo's limit rows at d's stages (a row exists once its distance is
  // below its margin; mjcenic's residual is efc_pos − efc_margin,
  // docs/mujoco-mapping.md §6.1). Key: bit 62 the type (0 joint, 1 tendon),
  // bits 1… the object, bit 0 the side (adapter::EfcRowSub).
  out->clear();
  adapter::RowRecord prev{-1, -1, -1, -1};
  for (int row = 0; row < d->nefc; ++row) {
    const int type = d->efc_type[row];
    if (type != mjCNSTR_LIMIT_JOINT && type != mjCNSTR_LIMIT_TENDON) continue;
    const adapter::RowRecord here{type, d->efc_id[row], adapter::EfcRowSub(m_, d, row, prev), -1};
    prev = here;
    const double violation = d->efc_margin[row] - d->efc_pos[row];
    if (!(violation > 0)) continue;
    const std::uint64_t key = (static_cast<std::uint64_t>(type == mjCNSTR_LIMIT_TENDON) << 62) |
                              (static_cast<std::uint64_t>(here.id) << 1) |
                              static_cast<std::uint64_t>(here.sub & 1);
    out->push_back({key, violation});
  }
  std::sort(out->begin(), out->end());
}

double Stepper::LimitUnit(int type, int id) const {
  // The unit of a limit's violation in the weighted norm (§11.3): L for a
  // length (slide joint, spatial tendon, fixed tendon over a slide joint),
  // 1 for an angle (hinge, ball, fixed tendon over hinges).
  const double L = norm_.length_scale();
  if (type == mjCNSTR_LIMIT_JOINT) return m_->jnt_type[id] == mjJNT_SLIDE ? L : 1.0;
  for (int w = m_->tendon_adr[id]; w < m_->tendon_adr[id] + m_->tendon_num[id]; ++w) {
    if (m_->wrap_type[w] != mjWRAP_JOINT) return L;  // spatial
    if (m_->jnt_type[m_->wrap_objid[w]] == mjJNT_SLIDE) return L;
  }
  return 1.0;
}

namespace {
// A change h|a|_M below ε_req max(1, |D r|) (the requested tolerance, never
// looser than the solver's island tolerance): v_t is (nearly) the solution
// already, keep it (cenic-math §8.1).
inline bool NearRest(double aa, double rr, double h, double tolerance) {
  const double tol = tolerance * std::max(1.0, std::sqrt(rr));
  return h * h * aa < tol * tol;
}

// The initial guess's factor c of one island (cenic-math §8.1), from its
// M-weighted sums aa = |a|², dd = |a − a_old|², ao = ⟨a, a_old⟩, oo = |a_old|²
// and rr = |D r|²: for the one-island and the per-island paths of FullStep.
inline double GuessFactor(bool smooth, double aa, double dd, double ao, double oo, double rr,
                          double h, double tolerance) {
  double c;
  if (smooth) {
    c = dd < aa ? 1.0 : 0.0;  // the acceleration is predictable
  } else {
    c = oo > 0 ? std::clamp(ao / oo, -1.0, 1.0) : 0.0;
    if (!(aa - 2 * c * ao + c * c * oo < 0.5 * aa)) c = 0.0;  // |a − c a_old|² ≥ ½|a|²
  }
  if (NearRest(aa, rr, h, tolerance)) c = 0.0;
  return c;
}

// Period-2 guess (cenic-math §8.1): a_old predicts the next acceleration
// when a matches a_older (the step before a_old) better than
// √kPeriod2Match·|a − a_old|_M, and the guess releases fewer than
// kPeriod2MaxReleased limit rows (each released row cost about one more
// Newton iteration: tendon.xml).
constexpr double kPeriod2Match = 0.5;
constexpr int kPeriod2MaxReleased = 2;
// Lag-2 guess (cenic-math §8.1, "h26c"): on one of several islands with
// contact rows, a_next = q a_old with q the least-squares factor of
// a ≈ q a_older, taken when that fit leaves less than kLag2Fit of
// min(|a|²_M, |a − a_old|²_M) (what the rule of GuessFactor leaves).
constexpr double kLag2Fit = 1e-2;
}  // namespace

bool Stepper::Period2Guess(double dd, double h) {
  // One island with contact rows whose acceleration a changed by more than
  // its size (dd = |a − a_old|²_M ≥ |a|²_M: the constant-acceleration guess
  // was rejected). Where the accelerations alternate (a ≈ a_older, period-2
  // chatter of a foot wedged between two height-field prisms, §4.11), the
  // next one is a_old's: guess v_t + h a_old. Returns whether it is taken
  // (s.guess_dir and s.v_guess set; else they still hold v_t's).
  Scratch& s = scratch_;
  const icf::IcfModel& mm = model_start_;
  const int nv = static_cast<int>(m_->nv);
  double ee = 0.0;
  for (int i = 0; i < nv; ++i) {
    const double e = s.warm_accel[i] - s.warm_accel_older[i];
    ee += mm.M_diag[i] * e * e;
  }
  if (!(ee < kPeriod2Match * dd)) return false;
  for (int i = 0; i < nv; ++i) s.v_guess[i] = s.v_start[i] + h * s.warm_accel_old[i];
  if (mm.ReleasedLimits(s.v_start.data(), s.v_guess.data(), kPeriod2MaxReleased) >=
      kPeriod2MaxReleased) {
    std::copy(s.v_start.begin(), s.v_start.end(), s.v_guess.begin());
    return false;
  }
  for (int i = 0; i < nv; ++i) s.guess_dir[i] = h * s.warm_accel_old[i];
  return true;
}

bool Stepper::FullStep(double h, double tolerance) {
  // (P24): v̂ from v_t, x̂ = x_t advanced by h.
  // Newton's initial guess (cenic-math §8.1, "Initial guess"): without error
  // control (fixed mode: a tight tolerance), island by island, v_t + c h a_prev, a_prev the
  // previous accepted step's mean acceleration, when d still holds the
  // velocity that step ended with and that step started where the one before
  // ended (a_old, its acceleration, is known); else v_t. On an island of
  // piecewise-quadratic rows only (limits, gains, couplings: a piecewise
  // linear system) c is the least-squares factor of a_prev ≈ c a_old,
  // clamped to [−1, 1], kept if it explains half of |a_prev|²_M, and 0 if
  // the guess moves a limit or gain row to another piece of its cost. On an
  // island with contacts c = 1 if |a_prev − a_old|_M < |a_prev|_M, else 0.
  // c = 0 where h |a_prev|_M is below the island's tolerance (near rest).
  // One island with contacts where c = 0 after period-2 chatter
  // (a_prev ≈ a_older): v_t + h a_old (Period2Guess, option period2_guess);
  // of several islands, each with contacts whose a_prev ≈ q a_older (within
  // kLag2Fit): v_t + q h a_old (the lag-2 guess, same option).
  // An island with c ≠ 0 takes at least one Newton iteration (Solve's
  // `extrapolated`): accepted at k = 0, the guess's error would have the same
  // sign step after step and accumulate.
  // With pull_back_guess, moved back along the guess direction on islands
  // where it overshoots the line minimum more than twice. ℓ is strictly
  // convex, so the guess changes the iteration count, never the solution
  // (beyond the solver tolerance).
  // Under error control with a tight tolerance (accuracy ≤ 10⁻⁴) the rule
  // is the earlier one, kept so that those runs' accepted steps stay as they
  // were: v_t + h a_prev for the whole system after a solve of ≥ 2
  // iterations, else v_t.
  Scratch& s = scratch_;
  const int nv = static_cast<int>(m_->nv);
  const bool warm = tolerance <= kTightTolerance && starts_at_warm_v_;
  const bool fixed_steps = options_.mode == Mode::kFixed || !options_.error_control;
  bool any_warm = false;
  if (warm && fixed_steps && warm_old_valid_ && model_start_.num_islands <= 1) {
    // One island (cenic-math §8.9, "Tiny problems"): the rule below with its
    // sums in registers, the same terms in the same order; the pieces are
    // compared only when they can change c (c ≠ 0 on an island without
    // smooth rows), and the comparison stops at the first change.
    const icf::IcfModel& mm = model_start_;
    double aa = 0.0, dd = 0.0, ao = 0.0, oo = 0.0, rr = 0.0;
    for (int i = 0; i < nv; ++i) {
      const double a = s.warm_accel[i], o = s.warm_accel_old[i], Mi = mm.M_diag[i];
      aa += Mi * a * a;
      dd += Mi * (a - o) * (a - o);
      ao += Mi * a * o;
      oo += Mi * o * o;
      rr += mm.r[i] * mm.r[i] / Mi;
    }
    const bool smooth = mm.HasSmoothRows();
    double c = GuessFactor(smooth, aa, dd, ao, oo, rr, h, tolerance);
    if (c != 0.0 && !smooth && (mm.limits.size() > 0 || mm.gains.size() > 0)) {
      for (int i = 0; i < nv; ++i) s.v_guess[i] = s.v_start[i] + c * h * s.warm_accel[i];
      if (mm.PieceChanges(s.v_start.data(), s.v_guess.data())) c = 0.0;
    }
    for (int i = 0; i < nv; ++i) {
      s.guess_dir[i] = c * h * s.warm_accel[i];
      s.v_guess[i] = s.v_start[i] + s.guess_dir[i];
    }
    any_warm = nv > 0 && c != 0.0;
    if (c == 0.0 && smooth && !(dd < aa) && options_.period2_guess && warm_older_valid_ &&
        !NearRest(aa, rr, h, tolerance))
      any_warm = Period2Guess(dd, h);
  } else if (warm && fixed_steps && warm_old_valid_) {
    const icf::IcfModel& mm = model_start_;
    const int ni = std::max(mm.num_islands, 1);
    // (Here num_islands ≥ 2: each dof's island is island_of_clique[clique_of_dof[i]];
    // the tables and sums through local pointers, cenic-math §8.9, "h25d".)
    const int *island_of_clique = mm.island_of_clique.data(), *clique_of_dof = mm.clique_of_dof.data();
    auto island = [=](int i) { return island_of_clique[clique_of_dof[i]]; };
    // The five sums of island k at island_sums[5k..5k+4], cleared by one
    // std::fill (five fills were five memset calls; cenic-math §8.9, "h26b").
    double* sums = s.island_sums.data();
    std::fill(sums, sums + 5 * ni, 0.0);
    {
      const double *acc = s.warm_accel.data(), *acc_old = s.warm_accel_old.data();
      const double *Md = mm.M_diag.data(), *r = mm.r.data();
      for (int i = 0; i < nv; ++i) {
        double* q = sums + 5 * island(i);  // aa, dd, ao, oo, rr
        const double a = acc[i], ao = acc_old[i], Mi = Md[i];
        q[0] += Mi * a * a;
        q[1] += Mi * (a - ao) * (a - ao);
        q[2] += Mi * a * ao;
        q[3] += Mi * ao * ao;
        q[4] += r[i] * r[i] / Mi;
      }
    }
    // (Without contact, contact-torque or dry-friction rows no island is
    // smooth; the pieces are compared only if some island's c can change.)
    if (mm.HasSmoothRows())
      mm.MarkSmoothIslands(s.island_smooth.data());
    else
      std::fill(s.island_smooth.begin(), s.island_smooth.begin() + ni, 0);
    bool check_pieces = false;
    for (int k = 0; k < ni; ++k) {
      const double* q = sums + 5 * k;
      const double c = GuessFactor(s.island_smooth[k], q[0], q[1], q[2], q[3], q[4], h, tolerance);
      s.island_c[k] = c;
      check_pieces = check_pieces || (c != 0.0 && !s.island_smooth[k]);
    }
    if (check_pieces) {
      for (int i = 0; i < nv; ++i)
        s.v_guess[i] = s.v_start[i] + s.island_c[island(i)] * h * s.warm_accel[i];
      mm.MarkPieceChanges(s.v_start.data(), s.v_guess.data(), s.island_piece.data());
      for (int k = 0; k < ni; ++k)
        if (!s.island_smooth[k] && s.island_piece[k]) s.island_c[k] = 0.0;
    }
    // Lag-2 guess (option period2_guess): an island with contact rows whose
    // accelerations repeat, up to a factor, every second step (period-2 or
    // period-4 chatter of an object resting in a hand) starts from
    // v_t + q h a_old.
    bool any_lag2 = false;
    if (options_.period2_guess && warm_older_valid_ && mm.HasSmoothRows()) {
      double* lag = s.island_lag2.data();
      std::fill(lag, lag + 2 * ni, 0.0);
      const double *acc = s.warm_accel.data(), *acc_older = s.warm_accel_older.data();
      const double* Md = mm.M_diag.data();
      for (int i = 0; i < nv; ++i) {
        double* q = lag + 2 * island(i);  // ab, bb
        const double a = acc[i], b = acc_older[i], Mi = Md[i];
        q[0] += Mi * a * b;
        q[1] += Mi * b * b;
      }
      for (int k = 0; k < ni; ++k) {
        s.island_q[k] = 0.0;
        const double* q5 = sums + 5 * k;
        const double ab = lag[2 * k], bb = lag[2 * k + 1];
        if (!s.island_smooth[k] || !(bb > 0) || NearRest(q5[0], q5[4], h, tolerance)) continue;
        const double q = ab / bb;
        if (q != 0.0 && q5[0] - q * ab < kLag2Fit * std::min(q5[0], q5[1])) {
          s.island_q[k] = q;
          any_lag2 = true;
        }
      }
    }
    for (int i = 0; i < nv; ++i) {
      const int k = island(i);
      const double c = s.island_c[k], q = any_lag2 ? s.island_q[k] : 0.0;
      any_warm = any_warm || c != 0.0 || q != 0.0;
      s.guess_dir[i] = q != 0.0 ? q * h * s.warm_accel_old[i] : c * h * s.warm_accel[i];
      s.v_guess[i] = s.v_start[i] + s.guess_dir[i];
    }
  } else {
    any_warm = warm && !fixed_steps && last_iterations_ >= 2;
    for (int i = 0; i < nv; ++i) {
      s.guess_dir[i] = any_warm ? h * s.warm_accel[i] : 0.0;
      s.v_guess[i] = s.v_start[i] + s.guess_dir[i];
    }
  }
  const bool pull_back = any_warm && options_.solver.pull_back_guess;
  // The per-island rule's extrapolated islands take ≥ 1 Newton iteration.
  if (!Solve(model_start_, s.v_guess.data(), s.v_full.data(), tolerance,
             pull_back ? s.guess_dir.data() : nullptr,
             any_warm && fixed_steps ? s.guess_dir.data() : nullptr))
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

void Stepper::FixedStep() {
  Scratch& s = scratch_;
  s.q_end = s.q_full;
  s.v_end = s.v_full;
  s.act_end = s.act_full;
}

bool Stepper::StepDoubling(mjData* d, double h, double tolerance, double* error, int* worst) {
  // Two half steps (P22, P23); the first reuses the problem at x_t.
  Scratch& s = scratch_;
  const int nv = static_cast<int>(m_->nv);
  model_start_.SetTimeStep(0.5 * h);
  for (int i = 0; i < nv; ++i) s.v_guess[i] = 0.5 * (s.v_start[i] + s.v_full[i]);
  if (!Solve(model_start_, s.v_guess.data(), s.v_mid.data(), tolerance)) return false;
  Integrate(s.q_start.data(), s.v_mid.data(), s.act_start.data(), s.act_rate_start.data(),
            0.5 * h, s.q_mid.data(), s.act_mid.data());
  if (ImplicitController() && !ControllerAt(d, s.q_mid.data(), s.v_mid.data())) return false;
  LoadState(m_, d, s.q_mid.data(), s.v_mid.data(), s.act_mid.data());
  // Geometry query 2, at the midpoint.
  if (!BuildAt(d, 0.5 * h, &model_mid_, s.act_rate_mid.data())) return false;
  if (PenetrationCheck()) attempt_depth_ratio_ = DepthGrowthRatio(d);  // §11.10
  const bool ok = Solve(model_mid_, s.v_full.data(), s.v_end.data(), tolerance);
  LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
  if (!ok) return false;
  Integrate(s.q_mid.data(), s.v_end.data(), s.act_mid.data(), s.act_rate_mid.data(), 0.5 * h,
            s.q_end.data(), s.act_end.data());
  PropagateDrift(s.v_full.data(), s.v_end.data());
  *error = norm_.Compute(m_, s.q_full.data(), s.v_full.data(), s.act_full.data(),
                         s.q_end.data(), s.v_end.data(), s.act_end.data(), worst);
  if (options_.extrapolate) Extrapolate();
  return true;
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
  const int nv = static_cast<int>(m_->nv), na = static_cast<int>(m_->na);
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
  PropagateDrift(s.v_full.data(), s.v_mid.data());
  *error = norm_.Compute(m_, s.q_full.data(), s.v_full.data(), s.act_full.data(), s.q_mid.data(),
                         s.v_mid.data(), s.act_mid.data(), worst);
}

bool Stepper::EmbeddedHistory(const mjData* d) const {
  if (!(h_prev_ > 0) || !prev_end_state_.Matches(m_, d)) return false;
  // A new ctrl changes act_dot by itself, not through the step's error.
  return std::equal(d->ctrl, d->ctrl + m_->nu, scratch_.ctrl_prev.begin());
}

void Stepper::RecordEmbeddedHistory(const mjData* d, double h) {
  Scratch& s = scratch_;
  for (int i = 0; i < m_->nv; ++i) s.accel_prev[i] = (s.v_end[i] - s.v_start[i]) / h;
  std::copy(s.act_rate_start.begin(), s.act_rate_start.end(), s.act_rate_prev.begin());
  std::copy(d->ctrl, d->ctrl + m_->nu, s.ctrl_prev.begin());
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
  const int nv = static_cast<int>(m_->nv), na = static_cast<int>(m_->na);
  if (!force_start_state_.Matches(m_, d)) {
    model_start_.MultiplyM(s.v_full.data(), s.force_start.data());
    model_start_.MultiplyM(s.v_start.data(), s.M_dv.data());
    for (int i = 0; i < nv; ++i) s.force_start[i] = (s.force_start[i] - s.M_dv[i]) / h;
  }
  if (ImplicitController() && !ControllerAt(d, s.q_full.data(), s.v_full.data())) return false;
  LoadState(m_, d, s.q_full.data(), s.v_full.data(), s.act_full.data());
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
  LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
  if (!ok) return false;
  std::copy(s.q_start.begin(), s.q_start.end(), s.q_end.begin());
  mj_integratePos(m_, s.q_end.data(), s.v_start.data(), 0.5 * h);
  mj_integratePos(m_, s.q_end.data(), s.v_end.data(), 0.5 * h);
  for (int j = 0; j < na; ++j) s.act_rate_mid[j] = 0.5 * (s.act_rate_start[j] + s.act_rate_mid[j]);
  IntegrateActivations(s.act_start.data(), s.act_rate_mid.data(), h, s.act_end.data());
  PropagateDrift(s.v_full.data(), s.v_end.data());
  *error = norm_.Compute(m_, s.q_full.data(), s.v_full.data(), s.act_full.data(),
                         s.q_end.data(), s.v_end.data(), s.act_end.data(), worst);
  return true;
}

void Stepper::TrapezoidEndForce(const mjData* d, double h) {
  // The end force of this step starts the next one (first same as last).
  Scratch& s = scratch_;
  for (int i = 0; i < m_->nv; ++i) s.dv[i] = s.v_end[i] - s.v_start[i];
  model_mid_.MultiplyM(s.dv.data(), s.M_dv.data());
  for (int i = 0; i < m_->nv; ++i) s.force_start[i] = 2 * s.M_dv[i] / h - s.force_start[i];
  force_start_state_.Capture(m_, d);
}

absl::Status Stepper::InternalStep(mjData* d, double t_limit, bool overshoot) {
  const double t0 = d->time;
  Scratch& s = scratch_;
  // (Short copies inline, not memmove calls: cenic-math §8.9, "Short copies".)
  CopyShort(d->qpos, m_->nq, s.q_start.data());
  CopyShort(d->qvel, m_->nv, s.v_start.data());
  CopyShort(d->act, m_->na, s.act_start.data());
  // Whether this step starts where the last accepted one ended (the guess's
  // history, §8.1): compared once per step, read by FullStep and below
  // (cenic-math §8.9, "h26b"; v_start, warm_v and warm_valid_ do not change
  // before the end of the step).
  starts_at_warm_v_ =
      warm_valid_ && std::equal(s.v_start.begin(), s.v_start.end(), s.warm_v.begin());
  const bool fixed = options_.mode == Mode::kFixed;
  const double timestep = m_->opt.timestep;
  const double h_max = LargestStep();
  const bool controlled = !fixed && options_.error_control;
  // (Read only under error control.)
  // With error per unit step, a step's tolerance is accuracy·h/T: below
  // kMinAccuracy it is round-off, so such steps are below the minimum too.
  const double h_min =
      controlled ? std::max({kRelativeMinStep, kRelativeMinStep * std::abs(t0), options_.min_step,
                             kMinAccuracy * options_.error_per_unit_step / options_.accuracy})
                 : 0.0;
  if (!controlled) {
    h_ideal_ = h_max;
  } else if (!(h_ideal_ > 0)) {
    h_ideal_ = options_.initial_step > 0 ? options_.initial_step
                                         : std::min(0.1 * h_max, timestep);
  }
  // Adaptive Newton tolerance ε = κ ε_acc only when the accuracy means something.
  const double tol = (controlled && options_.adaptive_tolerance)
                         ? options_.kappa * options_.accuracy
                         : options_.solver.tolerance;
  double h = std::min(h_ideal_, h_max);
  at_minimum_ = false;
  bool solve_failed = false;  // some attempt of this step failed its convex solve
  // Error per unit step: the previous attempt's scaled error and step, and
  // whether this step holds a velocity jump (cenic-math §11.12).
  double prev_scaled = 0, prev_h = 0;
  bool jump = false;
  for (;;) {
    bool limited = false;
    const double remaining = t_limit - t0;
    bool to_limit = false;
    if (remaining < 0.95 * h && !overshoot) {
      h = remaining;
      limited = to_limit = true;
    } else if (remaining < 1.001 * h && remaining >= 0.95 * h) {
      h = remaining;
      to_limit = true;
    }
    double error;
    int worst;
    mujoco_->controller.ClearFailure();
    const bool ok = Attempt(d, h, tol, &error, &worst);
    solve_failed = solve_failed || !ok;
    if (!ok) failed_status_ = last_status_;
    if (!ok && last_status_ == icf::SolveStatus::kNonFinite) {
      if (absl::Status st = OverflowingProblem(d, t0, h); !st.ok()) {
        LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
        return st;
      }
    }
    if (mujoco_->controller.failed()) {
      LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
      return ErrorStatus(absl::StatusCode::kAborted,
                         "mjcenic: the user controller failed at time ", t0);
    }
    if (!controlled) {
      if (!ok)
        return ErrorStatus(absl::StatusCode::kInternal, "mjcenic: convex solve failed at time ",
                           t0, " (h = ", h, "): ", icf::ToString(last_status_));
      stats_.last_error = error;  // the estimate, when the scheme makes one
      break;
    }
    StepDecision dec;
    if (ok && options_.error_per_unit_step > 0) {
      // Error per unit step (cenic-math §11.12): a step of
      // h may make accuracy·h/T of error, so the errors of the steps over T
      // add up to the accuracy; the scaled error is one order lower in h.
      // A velocity jump inside the step leaves an error ≈ c h Δv that the
      // scaled bound admits at no h: when cutting h did not shrink the raw
      // error faster than h^1.5, the step is held to the per-step bound.
      const double scaled = error * options_.error_per_unit_step / h;
      if (prev_h > 0 && h < prev_h && scaled > std::sqrt(h / prev_h) * prev_scaled) jump = true;
      prev_scaled = scaled;
      prev_h = h;
      StepSizeControl c = options_.control;
      if (!jump) c.order = std::max(1.0, c.order - 1);
      dec = AdjustStepSize(c, jump ? error : scaled, options_.accuracy, h, h_max, h_min,
                           &at_minimum_);
    } else if (ok) {
      dec = AdjustStepSize(options_.control, error, options_.accuracy, h, h_max, h_min,
                           &at_minimum_);
    } else {  // a failed solve is treated like a failed step: retry with h/2
      dec.h_next = 0.5 * h;
      dec.underflow = dec.h_next < h_min;
    }
    if (dec.underflow)
      return ErrorStatus(absl::StatusCode::kResourceExhausted,
          "mjcenic: step size underflow at time ", t0, ": the error ", error,
          " exceeds the accuracy ", options_.accuracy, " even at h = ", h,
          " (minimum ", h_min, "); worst coordinate: ", norm_.WorstName(m_, worst),
          ok ? "" : absl::StrCat("; last solve: ", icf::ToString(last_status_)));
    double h_depth = std::numeric_limits<double>::infinity();
    if (dec.accept && PenetrationCheck()) {
      // cenic-math §11.10: the end state's geometry query (the next step's
      // or the post-step contract's anyway) checks that no contact deepened
      // by more than its tolerance since x_t; the growth, first order in h,
      // sizes the step like an error of order 1.
      LoadState(m_, d, s.q_end.data(), s.v_end.data(), s.act_end.data());
      EnsureStages(d, &attempt_penetration_);
      const double ratio = std::max(attempt_depth_ratio_, DepthGrowthRatio(d));
      if (ratio > 0) h_depth = kDepthSafety * h / ratio;
      if (ratio > 1 && h > h_min) {
        LoadState(m_, d, s.q_start.data(), s.v_start.data(), s.act_start.data());
        ++stats_.rejected_steps;
        h = std::max({h_depth, 0.1 * h, h_min});
        continue;
      }
    }
    if (dec.accept) {
      if (absl::Status st = SolverProgress(t0, h, solve_failed); !st.ok()) return st;
      stats_.last_error = error;
      if (!limited) h_ideal_ = std::max(std::min(dec.h_next, h_depth), h_min);
      break;
    }
    ++stats_.rejected_steps;
    h = dec.h_next;
  }
  LoadState(m_, d, s.q_end.data(), s.v_end.data(), s.act_end.data());
  d->time = (h == t_limit - t0) ? t_limit : t0 + h;
  if (options_.mode == Mode::kTrapezoid) TrapezoidEndForce(d, h);
  if (options_.error_estimate == ErrorEstimate::kEmbedded) RecordEmbeddedHistory(d, h);
  // The initial guess's history (§8.1): a_old is the acceleration of the step
  // just before only if this step started where that one ended.
  const bool continues = starts_at_warm_v_;
  warm_older_valid_ = continues && warm_old_valid_;
  warm_old_valid_ = continues;
  std::swap(s.warm_accel_old, s.warm_accel_older);
  std::swap(s.warm_accel, s.warm_accel_old);
  for (int i = 0; i < m_->nv; ++i) s.warm_accel[i] = (s.v_end[i] - s.v_start[i]) / h;
  CopyShort(s.v_end.data(), m_->nv, s.warm_v.data());
  warm_valid_ = true;
  h_slip_ = last_solved_ ? last_solved_->h : h;  // the solve that produced v_end (§4.9)
  RecordStep(h);
  return absl::OkStatus();
}

absl::Status Stepper::OverflowingProblem(const mjData* d, double t, double h) const {
  // A solve failed on a non-finite value. If the problem's momentum term
  // r = M v + h f (cenic-math §3) has an entry whose square overflows
  // (|r_i| ≥ 1e150), no smaller step repairs it: name the dof and its inputs.
  if (!last_solved_) return absl::OkStatus();
  const std::vector<double>& r = last_solved_->r;
  const Scratch& s = scratch_;
  for (int i = 0; i < m_->nv && i < static_cast<int>(r.size()); ++i) {
    if (std::abs(r[i]) < 1e150) continue;
    const int joint = m_->dof_jntid[i];
    const std::string name = adapter::ObjectName(m_, mjOBJ_JOINT, joint);
    return ErrorStatus(absl::StatusCode::kInvalidArgument,
        "mjcenic: non-finite convex problem at time ", t, " (h = ", h, "): the momentum r[", i,
        "] = M v + h f of dof ", i, " (joint ",
        name.empty() ? absl::StrCat("#", joint) : absl::StrCat("'", name, "'"), ") is ", r[i],
        ", beyond double range when squared; at this dof qvel = ", s.v_start[i],
        ", qfrc_applied = ", d->qfrc_applied[i], ", qfrc_bias = ", d->qfrc_bias[i],
        ", qfrc_passive = ", d->qfrc_passive[i], ", qfrc_actuator = ", d->qfrc_actuator[i],
        "; the state was not advanced");
  }
  return absl::OkStatus();
}

absl::Status Stepper::SolverProgress(double t0, double h, bool solve_failed) {
  // Progress guarantee: steps sized by solver failures, not by the accuracy,
  // for kMaxSolverLimitedSteps accepted steps in a row (e.g. max_iterations =
  // 1 converges only at h ~ 1e-8 s) end in an error.
  solver_limited_steps_ = solve_failed ? solver_limited_steps_ + 1 : 0;
  if (solver_limited_steps_ < kMaxSolverLimitedSteps) return absl::OkStatus();
  solver_limited_steps_ = 0;
  return ErrorStatus(absl::StatusCode::kResourceExhausted,
      "mjcenic: no progress guarantee at time ", t0, ": the convex solve failed at a "
      "larger step before each of the last ", kMaxSolverLimitedSteps, " accepted steps (",
      "now h = ", h, " s; last failure: ", icf::ToString(failed_status_), ", max_iterations ",
      options_.solver.max_iterations, "): steps are sized by the solver, not the "
      "accuracy. Raise max_iterations or solver_tolerance; the state is the last accepted "
      "step");
}

double Stepper::LargestStep() const {
  const double h_max = options_.max_step > 0 ? options_.max_step : 0;
  if (options_.mode == Mode::kFixed || !options_.error_control)
    return h_max > 0 ? h_max : m_->opt.timestep;
  return h_max > 0 ? h_max : kDefaultMaxStep;
}

absl::Status Stepper::CheckStepCount(double t_start, double t) const {
  // Progress guarantee: refuse a call that needs more than max_steps_per_call
  // (unset: kMaxStepsAtLargestStep) steps even at the largest step (e.g.
  // opt.timestep = 1e10, max_step = 1e-9).
  const long cap = options_.max_steps_per_call > 0 ? options_.max_steps_per_call
                                                   : kMaxStepsAtLargestStep;
  const double h_max = LargestStep();
  if (!((t - t_start) > h_max * static_cast<double>(cap))) return absl::OkStatus();
  return ErrorStatus(absl::StatusCode::kResourceExhausted,
      "mjcenic: advancing from time ", t_start, " to ", t, " needs more than ", cap,
      options_.max_steps_per_call > 0 ? " (max_steps_per_call)"
                                      : " (the limit when max_steps_per_call is 0)",
      " steps of the largest step ", h_max, " s (max_step",
      options_.max_step > 0 ? "" : " default",
      "); the state was not advanced. Raise max_step or max_steps_per_call, or advance in "
      "shorter calls");
}

void Stepper::PostStep(mjData* d, double H, const double* v_start) {
  const bool timed = options_.phase_timers;
  const auto t0 = PhaseNow(timed);
  if (!stages_state_.Matches(m_, d)) {
    mujoco_->stages.PositionVelocity(d);
    ++stats_.geometry_queries;
    stats_.max_penetration = std::max(stats_.max_penetration, MaxPenetration(d));
  }
  mujoco_->stages.SensorsAndForces(d);  // actuation at d's state and ctrl
  // A plugin's advance (FinishStep) may change act after that actuation.
  actuation_fresh_ = m_->nplugin == 0;
  CopyShort(d->ctrl, m_->nu, scratch_.ctrl_actuated.data());
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
  // and stiffness, body masses, actuators, ...) is read again, and a pending
  // dense-output step, taken with the old values, is dropped.
  mujoco_->builder = adapter::MujocoAdapter(m_, options_.contact);
  mujoco_->builder.set_phase_timers(options_.phase_timers);
  mujoco_->stages.ModelEdited();
  // The stages and problems computed from the old values are stale.
  for (StateSnapshot* s : {&stages_state_, &model_start_state_, &force_start_state_,
                           &prev_end_state_, &dense_written_})
    s->Invalidate();
  actuation_fresh_ = false;
  dense_pending_ = false;
  model_start_.damper_spring_source = model_mid_.damper_spring_source = -1;  // D, K refilled
}

absl::Status Stepper::Advance(mjData* d, double t, bool single_step) {
  // One outer call: checks, control inputs once (zero-order hold), internal
  // steps until t (or one step), then the post-step contract.
  if (const std::uint64_t seen = model_fingerprint_.Compute(); seen != model_seen_) {
    model_seen_ = seen;
    ModelEdited();
  }
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
  if (absl::Status s = CheckInputs(d); !s.ok()) return s;
  if (!std::isfinite(t) && !single_step)
    return absl::InvalidArgumentError("mjcenic: target time is not finite");
  if (t < d->time)
    return ErrorStatus(absl::StatusCode::kInvalidArgument, "mjcenic: cannot advance from time ",
                       d->time, " to ", t);
  const double t_start = d->time;
  if (!single_step)
    if (absl::Status s = CheckStepCount(t_start, t); !s.ok()) return s;
  CopyShort(d->qvel, m_->nv, scratch_.v_call_start.data());
  EnsureStages(d);
  mujoco_->stages.ControlCallback(d);
  if (mujoco_->controller.installed() &&
      options_.controller == ControllerTreatment::kZeroOrderHold && !mujoco_->controller.Call(d))
    return ErrorStatus(absl::StatusCode::kAborted, "mjcenic: the user controller failed at time ",
                       d->time);
  // Dense output: a call that finds d as the previous call left it continues
  // that call's accepted step (interpolating again if t is still inside it)
  // and may end inside its own last step. StepOnce restarts from d (its one
  // step starts where the caller stands).
  const bool overshoot = !single_step && DenseOutputAllowed(d);
  if (!overshoot) dense_pending_ = false;
  if (dense_pending_ && t <= dense_t_b_) {
    WriteInterpolated(d, t);
    PostStep(d, d->time - t_start, scratch_.v_call_start.data());
    dense_written_.Capture(m_, d);
    dense_written_time_ = d->time;
    add_total();
    return absl::OkStatus();
  }
  const bool loaded_dense = dense_pending_;
  if (dense_pending_) LoadDenseEnd(d);
  // d is the state EnsureStages compared above unless something ran since
  // that may change it (a control callback, a zero-order-hold controller,
  // the dense-output end just loaded): the first build may skip comparing
  // it again (ProblemAtStart).
  bool checked = !mujoco_->stages.HasControlCallback() && !mujoco_->controller.installed() &&
                 !loaded_dense;
  absl::Status status;
  long steps = 0;
  do {
    stages_checked_ = checked;
    checked = false;
    status = InternalStep(d, t, overshoot);
    stages_checked_ = false;
    if (status.ok() && ++steps == options_.max_steps_per_call && !single_step && d->time < t)
      status = ErrorStatus(absl::StatusCode::kResourceExhausted,
          "mjcenic: no progress guarantee: ", steps, " accepted steps (max_steps_per_call) ",
          "took the state only from time ", t_start, " to ", d->time, " of the target ", t,
          " (last step ", stats_.last_h, " s); the state is the last accepted step. Raise "
          "max_steps_per_call, relax accuracy / max_iterations, or advance in shorter calls");
  } while (status.ok() && !single_step && d->time < t);
  if (status.ok() && overshoot && d->time > t) {
    // The last accepted step [t_a, t_b] ends past t: keep it, write x(t).
    Scratch& s = scratch_;
    std::copy(s.q_start.begin(), s.q_start.end(), s.q_a.begin());
    std::copy(s.v_start.begin(), s.v_start.end(), s.v_a.begin());
    std::copy(s.act_start.begin(), s.act_start.end(), s.act_a.begin());
    std::copy(s.act_rate_start.begin(), s.act_rate_start.end(), s.act_rate_a.begin());
    std::copy(d->qpos, d->qpos + m_->nq, s.q_b.begin());
    std::copy(d->qvel, d->qvel + m_->nv, s.v_b.begin());
    std::copy(d->act, d->act + m_->na, s.act_b.begin());
    dense_t_a_ = d->time - stats_.last_h;
    dense_t_b_ = d->time;
    dense_pending_ = true;
    WriteInterpolated(d, t);
  }
  PostStep(d, d->time - t_start, scratch_.v_call_start.data());
  add_total();
  if (!status.ok()) {
    dense_pending_ = false;
    dense_written_.Invalidate();
    return status;
  }
  if (!single_step && DenseOutputApplies()) {  // no copy per call without it
    dense_written_.Capture(m_, d);
    dense_written_time_ = d->time;
  } else {
    dense_written_.Invalidate();
  }
  // (x·0 summed, as CheckInputs tests its inputs: one test, no branch per
  // entry; cenic-math §8.9, "h26b".)
  ZeroSum state_times_zero = {0.0, 0.0};
  AddTimesZero(d->qpos, m_->nq, &state_times_zero);
  AddTimesZero(d->qvel, m_->nv, &state_times_zero);
  if (state_times_zero[0] + state_times_zero[1] != 0.0) [[unlikely]]
    return ErrorStatus(absl::StatusCode::kInternal, "mjcenic: state became non-finite at time ",
                       d->time);
  return absl::OkStatus();
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
  return DenseOutputApplies() && d->time == dense_written_time_ &&
         dense_written_.Matches(m_, d);
}

void Stepper::WriteInterpolated(mjData* d, double t) {
  // The continuous extension of the accepted step [t_a, t_b]: positions along
  // the tangent-space chord q_a ⊕ σ(q_b ⊖ q_a), velocities linear,
  // σ = (t − t_a)/(t_b − t_a); first-order accurate like the step.
  // Activations: MuJoCo's rule from act_a over σh plus σ times what the step
  // added to it (linear for Euler dynamics, exact for filterexact).
  Scratch& s = scratch_;
  const double span = dense_t_b_ - dense_t_a_;
  const double sigma = span > 0 ? std::clamp((t - dense_t_a_) / span, 0.0, 1.0) : 1.0;
  mj_differentiatePos(m_, s.dq.data(), 1.0, s.q_a.data(), s.q_b.data());
  std::copy(s.q_a.begin(), s.q_a.end(), d->qpos);
  mj_integratePos(m_, d->qpos, s.dq.data(), sigma);
  for (int i = 0; i < m_->nv; ++i) d->qvel[i] = s.v_a[i] + sigma * (s.v_b[i] - s.v_a[i]);
  IntegrateActivations(s.act_a.data(), s.act_rate_a.data(), span, s.act_euler.data());
  for (int i = 0; i < m_->na; ++i) d->act[i] = -sigma * s.act_euler[i];
  IntegrateActivations(s.act_a.data(), s.act_rate_a.data(), sigma * span, s.act_euler.data());
  for (int i = 0; i < m_->na; ++i)
    d->act[i] += s.act_euler[i] + sigma * s.act_b[i];
  d->time = t;
}

void Stepper::LoadDenseEnd(mjData* d) {
  const Scratch& s = scratch_;
  LoadState(m_, d, s.q_b.data(), s.v_b.data(), s.act_b.data());
  d->time = dense_t_b_;
  dense_pending_ = false;
}

absl::Status Stepper::AdvanceTo(mjData* d, double t) {
  if (t == d->time) return CheckInputs(d);  // nothing to do
  return Advance(d, t, false);
}

absl::Status Stepper::Step(mjData* d) {
  // A timestep below the minimum step at this time (README: 1e-14·|t|, ≈ 45
  // ulp of t) cannot be taken: at t = 1e17, t + 0.002 == t and the call
  // would otherwise succeed without moving.
  const double dt = m_->opt.timestep;
  if (std::isfinite(d->time) && dt > 0 && dt < kRelativeMinStep * std::abs(d->time))
    return ErrorStatus(absl::StatusCode::kResourceExhausted,
        "mjcenic: step size underflow at time ", d->time, ": opt.timestep ", dt,
        " is below the minimum step ", kRelativeMinStep * std::abs(d->time),
        " (1e-14 |t|; one ulp of t is ",
        std::nextafter(std::abs(d->time), std::numeric_limits<double>::infinity()) -
            std::abs(d->time),
        "); the state was not advanced. Reset time closer to 0");
  return AdvanceTo(d, d->time + dt);
}

absl::Status Stepper::StepOnce(mjData* d) {
  return Advance(d, std::numeric_limits<double>::infinity(), true);
}

}  // namespace mjcenic
