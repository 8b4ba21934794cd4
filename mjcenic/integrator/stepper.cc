#include "mjcenic/integrator/stepper.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <absl/strings/str_cat.h>

namespace mjcenic {

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void HashBytes(unsigned long long* h, const void* p, size_t n) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    *h ^= c[i];
    *h *= 1099511628211ull;  // FNV-1a
  }
}

int FirstNonFinite(const double* x, long n) {
  for (long i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return static_cast<int>(i);
  return -1;
}

bool Disabled(const mjModel* m, int flag) { return m->opt.disableflags & flag; }

}  // namespace

const char* ToString(Mode mode) {
  switch (mode) {
    case Mode::kFixed: return "fixed";
    case Mode::kCenic: return "cenic";
    case Mode::kTrapezoid: return "trapezoid";
  }
  return "unknown";
}

bool ParseMode(const char* s, Mode* mode) {
  for (Mode x : {Mode::kFixed, Mode::kCenic, Mode::kTrapezoid})
    if (std::strcmp(s, ToString(x)) == 0) {
      *mode = x;
      return true;
    }
  return false;
}

absl::StatusOr<std::unique_ptr<Stepper>> Stepper::Create(const mjModel* m,
                                                         const StepperOptions& o) {
  if (mj_version() != mjVERSION_HEADER)
    return absl::FailedPreconditionError(absl::StrCat(
        "mjcenic was built against MuJoCo headers ", mjVERSION_HEADER,
        " but the loaded libmujoco is ", mj_versionString(), " (", mj_version(),
        "); install the pinned mujoco wheel and rebuild"));
  if (!m) return absl::InvalidArgumentError("mjcenic: null mjModel");
  auto bad = [](const char* what) {
    return absl::InvalidArgumentError(absl::StrCat("mjcenic: invalid option ", what));
  };
  if (!(o.accuracy > 0) || !std::isfinite(o.accuracy)) return bad("accuracy (must be > 0)");
  if (!(o.max_step >= 0) || !std::isfinite(o.max_step)) return bad("max_step (must be >= 0)");
  if (!(o.initial_step >= 0) || !std::isfinite(o.initial_step))
    return bad("initial_step (must be >= 0)");
  if (!(o.min_step >= 0) || !std::isfinite(o.min_step)) return bad("min_step (must be >= 0)");
  if (!(o.kappa > 0)) return bad("kappa (must be > 0)");
  if (!(o.icf.stiction_tolerance > 0)) return bad("stiction_tolerance (must be > 0)");
  if (!(o.contact.mu_static_ratio >= 1)) return bad("mu_static_ratio (must be >= 1)");
  if (!(o.solver.tolerance > 0) || o.solver.max_iterations < 1)
    return bad("solver tolerance (> 0) / max_iterations (>= 1)");
  if (!(o.control.safety > 0 && o.control.safety <= 1 && o.control.max_growth > 1 &&
        o.control.min_shrink > 0 && o.control.min_shrink < 1 && o.control.order > 0))
    return bad("control (safety in (0,1], max_growth > 1, min_shrink in (0,1), order > 0)");
  if (o.extrapolate && o.mode != Mode::kCenic)
    return bad(absl::StrCat("extrapolate (applies to mode cenic only, not ", ToString(o.mode),
                            ")")
                   .c_str());
  if (m->nhistory > 0)
    return absl::UnimplementedError(
        "mjcenic: actuator/sensor delay and history buffers are not supported");
  if (!o.global_accuracy) return std::unique_ptr<Stepper>(new Stepper(m, o));
  // The global-accuracy recipe (README, "Accuracy: local and global error").
  if (o.mode != Mode::kCenic)
    return bad(absl::StrCat("global_accuracy (applies to mode cenic only, not ",
                            ToString(o.mode), ")")
                   .c_str());
  StepperOptions g = o;
  g.error_norm = ErrorNormKind::kFullState;
  g.extrapolate = true;
  if (g.speculative_margin == 0)
    g.speculative_margin = 0.1 * ErrorNorm(m, g.error_norm, g.length_scale).length_scale();
  return std::unique_ptr<Stepper>(new Stepper(m, g));
}

Stepper::Stepper(const mjModel* m, const StepperOptions& o)
    : m_(m),
      options_(o),
      adapter_(m, o.contact),
      norm_(m, o.error_norm, o.length_scale),
      h_hist_(kBins, 0) {
  model0_.params = o.icf;
  model_mid_.params = o.icf;
  const int nq = static_cast<int>(m->nq), nv = static_cast<int>(m->nv),
            na = static_cast<int>(m->na);
  for (auto* v : {&q0_, &qf_, &qa_, &q1_}) v->resize(nq);
  for (auto* v : {&v0_, &vf_, &va_, &v1_, &vguess_, &v_outer_, &dq_, &f_start_, &tmp_})
    v->resize(nv);
  for (auto* v : {&act0_, &act_dot0_, &actf_, &acta_, &act_dota_, &act1_}) v->resize(na);
  if (o.speculative_margin > 0) {
    m_stage_ = mj_copyModel(nullptr, m);
    for (int g = 0; g < m->ngeom; ++g) m_stage_->geom_gap[g] += 0.5 * o.speculative_margin;
    for (int p = 0; p < m->npair; ++p) m_stage_->pair_gap[p] += o.speculative_margin;
    for (int b = 0; b < m->nbody; ++b) m_stage_->body_margin[b] += 0.5 * o.speculative_margin;
  }
  for (auto* v : {&feedback_.tau, &feedback_.kq, &feedback_.kv, &qfrc_user_, &tau_a_,
                  &tau_b_, &v_pert_, &unit_})
    v->resize(nv);
  ctrl_user_.resize(m->nu);
  q_pert_.resize(nq);
}

Stepper::~Stepper() {
  if (m_stage_) mj_deleteModel(m_stage_);
}

const mjModel* Stepper::StageModel() {
  if (!m_stage_) return m_;
  m_stage_->opt = m_->opt;  // the user (or the viewer) may change options at any time
  return m_stage_;
}

const StepperStats& Stepper::stats() const {
  // Median of the accepted steps from the histogram (0.5 % resolution).
  long total = 0, half = 0;
  for (long c : h_hist_) total += c;
  for (int b = 0; b < kBins && total > 0; ++b) {
    half += h_hist_[b];
    if (2 * half >= total) {
      stats_.h_median = std::pow(10.0, (b + 0.5) / 200.0 - 10.0);
      break;
    }
  }
  return stats_;
}

void Stepper::ResetStats() {
  stats_ = {};
  std::fill(h_hist_.begin(), h_hist_.end(), 0);
}

void Stepper::RecordStep(double h) {
  ++stats_.steps;
  stats_.last_h = h;
  stats_.h_min = stats_.steps == 1 ? h : std::min(stats_.h_min, h);
  stats_.h_max = std::max(stats_.h_max, h);
  const int b = static_cast<int>(std::floor((std::log10(std::max(h, 1e-300)) + 10.0) * 200.0));
  ++h_hist_[std::clamp(b, 0, kBins - 1)];
}

unsigned long long Stepper::StateHash(const mjData* d, bool with_inputs) const {
  unsigned long long h = 1469598103934665603ull;
  HashBytes(&h, d->qpos, sizeof(double) * m_->nq);
  HashBytes(&h, d->qvel, sizeof(double) * m_->nv);
  HashBytes(&h, d->act, sizeof(double) * m_->na);
  HashBytes(&h, d->mocap_pos, sizeof(double) * 3 * m_->nmocap);
  HashBytes(&h, d->mocap_quat, sizeof(double) * 4 * m_->nmocap);
  HashBytes(&h, d->eq_active, sizeof(mjtByte) * m_->neq);
  HashBytes(&h, &m_->opt, sizeof(mjOption));
  HashBytes(&h, &d, sizeof(d));
  if (with_inputs) {
    HashBytes(&h, d->ctrl, sizeof(double) * m_->nu);
    HashBytes(&h, d->qfrc_applied, sizeof(double) * m_->nv);
    HashBytes(&h, d->xfrc_applied, sizeof(double) * 6 * m_->nbody);
  }
  return h | 1;  // never 0
}

absl::Status Stepper::CheckInputs(const mjData* d) const {
  struct Field { const char* name; const double* x; long n; };
  const Field fields[] = {
      {"qpos", d->qpos, m_->nq},         {"qvel", d->qvel, m_->nv},
      {"act", d->act, m_->na},           {"ctrl", d->ctrl, m_->nu},
      {"qfrc_applied", d->qfrc_applied, m_->nv},
      {"xfrc_applied", d->xfrc_applied, 6 * m_->nbody},
      {"mocap_pos", d->mocap_pos, 3 * m_->nmocap},
      {"mocap_quat", d->mocap_quat, 4 * m_->nmocap}};
  for (const Field& f : fields) {
    const int i = FirstNonFinite(f.x, f.n);
    if (i >= 0)
      return absl::InvalidArgumentError(absl::StrCat("mjcenic: ", f.name, "[", i, "] is ",
                                                     f.x[i], " at time ", d->time,
                                                     "; the state was not advanced"));
  }
  if (!(m_->opt.timestep > 0) || !std::isfinite(m_->opt.timestep))
    return absl::InvalidArgumentError(
        absl::StrCat("mjcenic: opt.timestep must be positive, got ", m_->opt.timestep));
  if (!std::isfinite(d->time))
    return absl::InvalidArgumentError("mjcenic: time is not finite");
  return absl::OkStatus();
}

void Stepper::EnsureStages(mjData* d) {
  const unsigned long long h = StateHash(d, false);
  if (h == stages_hash_) return;
  const auto t0 = Clock::now();
  adapter::MujocoAdapter::PositionVelocityStages(StageModel(), d);
  ++stats_.geometry_queries;
  stats_.max_penetration =
      std::max(stats_.max_penetration, adapter::MujocoAdapter::MaxPenetration(d));
  stats_.time_geometry += Seconds(t0, Clock::now());
  stages_hash_ = h;
}

void Stepper::Actuation(mjData* d) {
  mj_fwdActuation(m_, d);  // honours mjDSBL_ACTUATION itself (zero actuator forces)
}

bool Stepper::CallController(mjData* d) {
  ++stats_.controller_calls;
  if (!controller_(m_, d)) controller_failed_ = true;
  return !controller_failed_;
}

bool Stepper::PrepareController(mjData* d) {
  if (controller_ && options_.controller == ControllerTreatment::kExplicit)
    return CallController(d);
  return true;
}

bool Stepper::ControllerForce(mjData* d, const double* q, const double* v, double* tau) {
  LoadState(d, q, v, act0_.data());
  // Smooth stages only (no collision): kinematics, inertia, transmission, velocities.
  mj_fwdKinematics(m_, d);
  mj_makeM(m_, d);
  mj_factorM(m_, d);
  mj_transmission(m_, d);
  mj_fwdVelocity(m_, d);
  if (!CallController(d)) return false;
  Actuation(d);
  for (int i = 0; i < m_->nv; ++i) tau[i] = d->qfrc_actuator[i] + d->qfrc_applied[i];
  return true;
}

bool Stepper::LinearizeController(mjData* d) {
  // cenic-math §9 with separate position and velocity sensitivities: per dof
  // i, kq_i = −∂τ_i/∂q_i and kv_i = −∂τ_i/∂v_i by forward differences at x0
  // (the whole q restored after each dof; quaternion-safe perturbations). The
  // solves then use τ_i(v) = τ_i(x_s) − kq_i h v_i − kv_i (v_i − v_s,i) from
  // their own start state x_s, so the gains follow each solve's step.
  const int nv = static_cast<int>(m_->nv);
  std::copy(d->ctrl, d->ctrl + m_->nu, ctrl_user_.begin());
  std::copy(d->qfrc_applied, d->qfrc_applied + nv, qfrc_user_.begin());
  bool ok = ControllerForce(d, q0_.data(), v0_.data(), tau_a_.data());
  const double sqrt_eps = std::sqrt(std::numeric_limits<double>::epsilon());
  for (int i = 0; ok && i < nv; ++i) {
    double dv = sqrt_eps * std::max(1.0, std::abs(v0_[i]));
    dv = (v0_[i] + dv) - v0_[i];  // exactly representable
    std::copy(v0_.begin(), v0_.end(), v_pert_.begin());
    v_pert_[i] += dv;
    ok = ControllerForce(d, q0_.data(), v_pert_.data(), tau_b_.data());
    feedback_.kv[i] = -(tau_b_[i] - tau_a_[i]) / dv;
    std::fill(unit_.begin(), unit_.end(), 0.0);
    unit_[i] = 1.0;
    std::copy(q0_.begin(), q0_.end(), q_pert_.begin());
    mj_integratePos(m_, q_pert_.data(), unit_.data(), sqrt_eps);
    ok = ok && ControllerForce(d, q_pert_.data(), v0_.data(), tau_b_.data());
    feedback_.kq[i] = -(tau_b_[i] - tau_a_[i]) / sqrt_eps;
  }
  std::copy(tau_a_.begin(), tau_a_.end(), feedback_.tau.begin());
  LoadState(d, q0_.data(), v0_.data(), act0_.data());
  RestoreInputs(d);
  return ok;
}

bool Stepper::ControllerAt(mjData* d, const double* q, const double* v) {
  // τ at a solve's start state (the sensitivities are reused).
  std::copy(d->ctrl, d->ctrl + m_->nu, ctrl_user_.begin());
  std::copy(d->qfrc_applied, d->qfrc_applied + m_->nv, qfrc_user_.begin());
  const bool ok = ControllerForce(d, q, v, feedback_.tau.data());
  RestoreInputs(d);
  return ok;
}

void Stepper::RestoreInputs(mjData* d) {
  std::copy(ctrl_user_.begin(), ctrl_user_.end(), d->ctrl);
  std::copy(qfrc_user_.begin(), qfrc_user_.end(), d->qfrc_applied);
  stages_hash_ = 0;  // d's stages belong to an evaluation state now
}

void Stepper::BuildModel(mjData* d, double h, icf::IcfModel* model) {
  const auto t0 = Clock::now();
  adapter::BuildInfo info;
  const bool implicit_ctrl = controller_ && options_.controller == ControllerTreatment::kImplicit;
  adapter_.Build(m_, d, h, model, &info, implicit_ctrl ? &feedback_ : nullptr);
  // The model at a step's start state advances the anchors (once per state)
  // by the contacts' slip at its velocity.
  if (model->params.stiction_anchors)
    anchors_.Apply(m_, d, adapter_.contact_records(), h, model == &model0_,
                   model->v0.data(), model);
  (model == &model0_ ? records0_ : records_mid_) = adapter_.contact_records();
  (model == &model0_ ? rows0_ : rows_mid_) = adapter_.row_records();
  stats_.max_penetration = std::max(stats_.max_penetration, info.max_penetration);
  stats_.time_assembly += Seconds(t0, Clock::now());
  last_problem_ = model;
}

bool Stepper::Solve(const icf::IcfModel& model, const double* guess, double* v,
                    double tolerance) {
  const auto t0 = Clock::now();
  icf::SolverOptions o = options_.solver;
  o.tolerance = tolerance;
  icf::SolveStats st;
  last_status_ = solver_.Solve(model, guess, o, v, &st);
  last_solved_ = &model;
  stats_.time_solve += Seconds(t0, Clock::now());
  ++stats_.solves;
  stats_.newton_iterations += st.iterations;
  stats_.factorizations += st.factorizations;
  stats_.ls_iterations += st.ls_iterations;
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

void Stepper::LoadState(mjData* d, const double* q, const double* v, const double* act) const {
  std::copy(q, q + m_->nq, d->qpos);
  std::copy(v, v + m_->nv, d->qvel);
  std::copy(act, act + m_->na, d->act);
}

void Stepper::Extrapolate() {
  // Local Richardson extrapolation of step doubling: the two-half-step
  // result x and the full step x̂ differ by ≈ C h²/2, so 2x − x̂ cancels the
  // leading local error term; the estimate ‖x̂ − x‖ still sizes the step.
  mj_differentiatePos(m_, tmp_.data(), 1.0, qf_.data(), q1_.data());
  mj_integratePos(m_, q1_.data(), tmp_.data(), 1.0);
  for (int i = 0; i < m_->nv; ++i) v1_[i] = 2 * v1_[i] - vf_[i];
  for (int a = 0; a < m_->nu; ++a) {
    const int adr = m_->actuator_actadr[a], num = m_->actuator_actnum[a];
    for (int j = adr; adr >= 0 && j < adr + num; ++j) {
      double x = 2 * act1_[j] - actf_[j];
      if (m_->actuator_actlimited[a])
        x = std::clamp(x, m_->actuator_actrange[2 * a], m_->actuator_actrange[2 * a + 1]);
      act1_[j] = x;
    }
  }
}

bool Stepper::Attempt(mjData* d, double h, double* error, int* worst, double tol) {
  const int nv = static_cast<int>(m_->nv), na = static_cast<int>(m_->na);
  *error = 0;
  *worst = -1;
  // Model at x_t: built once, reused after a rejection (only h changes).
  const bool implicit_ctrl = controller_ && options_.controller == ControllerTreatment::kImplicit;
  if (StateHash(d, true) == model0_hash_) {
    model0_.SetTimeStep(h);
    last_problem_ = &model0_;
  } else {
    if (implicit_ctrl && !LinearizeController(d)) return false;
    EnsureStages(d);
    if (!PrepareController(d)) return false;
    Actuation(d);
    std::copy(d->act_dot, d->act_dot + na, act_dot0_.begin());
    BuildModel(d, h, &model0_);
    model0_hash_ = StateHash(d, true);
  }
  // Full step (P24).
  if (!Solve(model0_, v0_.data(), vf_.data(), tol)) return false;
  std::copy(q0_.begin(), q0_.end(), qf_.begin());
  mj_integratePos(m_, qf_.data(), vf_.data(), h);
  IntegrateActivations(act0_.data(), act_dot0_.data(), h, actf_.data());
  if (options_.mode == Mode::kFixed) {
    q1_ = qf_;
    v1_ = vf_;
    act1_ = actf_;
    return true;
  }

  if (options_.mode == Mode::kCenic) {
    // Two half steps (P22, P23): the first reuses the model at x_t.
    model0_.SetTimeStep(0.5 * h);
    for (int i = 0; i < nv; ++i) vguess_[i] = 0.5 * (v0_[i] + vf_[i]);
    if (!Solve(model0_, vguess_.data(), va_.data(), tol)) return false;
    std::copy(q0_.begin(), q0_.end(), qa_.begin());
    mj_integratePos(m_, qa_.data(), va_.data(), 0.5 * h);
    IntegrateActivations(act0_.data(), act_dot0_.data(), 0.5 * h, acta_.data());
    if (implicit_ctrl && !ControllerAt(d, qa_.data(), va_.data())) return false;
    LoadState(d, qa_.data(), va_.data(), acta_.data());
    EnsureStages(d);  // geometry query 2, at the midpoint
    if (!PrepareController(d)) return false;
    Actuation(d);
    std::copy(d->act_dot, d->act_dot + na, act_dota_.begin());
    BuildModel(d, 0.5 * h, &model_mid_);
    const bool ok = Solve(model_mid_, vf_.data(), v1_.data(), tol);
    LoadState(d, q0_.data(), v0_.data(), act0_.data());
    if (!ok) return false;
    std::copy(qa_.begin(), qa_.end(), q1_.begin());
    mj_integratePos(m_, q1_.data(), v1_.data(), 0.5 * h);
    IntegrateActivations(acta_.data(), act_dota_.data(), 0.5 * h, act1_.data());
    *error = norm_.Compute(m_, qf_.data(), vf_.data(), actf_.data(), q1_.data(), v1_.data(),
                          act1_.data(), worst);
    if (options_.extrapolate) Extrapolate();
    return true;
  }

  // Trapezoid (cenic-math §11.8, our reconstruction): momentum
  //   M̂ (v − v_t) = h/2 (F_t + F̂(v)),   q = q_t + h/2 (v_t + v),
  // with F̂(v) the ICF forces of a model built at the first-order result x̂
  // (time step h/2, configuration shifted so that it predicts q(v)), and
  // F_t the end force of the previous accepted step (first same as last) or,
  // without one, the implicit-Euler force of the full step.
  if (fsal_hash_ != StateHash(d, true)) {
    model0_.MultiplyM(vf_.data(), f_start_.data());
    model0_.MultiplyM(v0_.data(), tmp_.data());
    for (int i = 0; i < nv; ++i) f_start_[i] = (f_start_[i] - tmp_[i]) / h;
  }
  if (implicit_ctrl && !ControllerAt(d, qf_.data(), vf_.data())) return false;
  LoadState(d, qf_.data(), vf_.data(), actf_.data());
  EnsureStages(d);  // geometry query 2, at t + h
  if (!PrepareController(d)) return false;
  Actuation(d);
  std::copy(d->act_dot, d->act_dot + na, act_dota_.begin());
  BuildModel(d, 0.5 * h, &model_mid_);
  // dq = q_t ⊖ q̂ + h/2 v_t
  mj_differentiatePos(m_, dq_.data(), 1.0, qf_.data(), q0_.data());
  for (int i = 0; i < nv; ++i) dq_[i] += 0.5 * h * v0_[i];
  model_mid_.ShiftConfiguration(dq_.data());
  model_mid_.SetTimeStep(0.5 * h);
  // r: replace M̂ v̂ by M̂ v_t + h/2 F_t.
  for (int i = 0; i < nv; ++i) vguess_[i] = v0_[i] - vf_[i];
  model_mid_.MultiplyM(vguess_.data(), tmp_.data());
  for (int i = 0; i < nv; ++i) model_mid_.r[i] += tmp_[i] + 0.5 * h * f_start_[i];
  const bool ok = Solve(model_mid_, vf_.data(), v1_.data(), tol);
  LoadState(d, q0_.data(), v0_.data(), act0_.data());
  if (!ok) return false;
  std::copy(q0_.begin(), q0_.end(), q1_.begin());
  mj_integratePos(m_, q1_.data(), v0_.data(), 0.5 * h);
  mj_integratePos(m_, q1_.data(), v1_.data(), 0.5 * h);
  for (int j = 0; j < na; ++j) act_dota_[j] = 0.5 * (act_dot0_[j] + act_dota_[j]);
  IntegrateActivations(act0_.data(), act_dota_.data(), h, act1_.data());
  *error = norm_.Compute(m_, qf_.data(), vf_.data(), actf_.data(), q1_.data(), v1_.data(),
                          act1_.data(), worst);
  return true;
}

absl::Status Stepper::InternalStep(mjData* d, double t_limit) {
  const double t0 = d->time;
  std::copy(d->qpos, d->qpos + m_->nq, q0_.begin());
  std::copy(d->qvel, d->qvel + m_->nv, v0_.begin());
  std::copy(d->act, d->act + m_->na, act0_.begin());
  const bool fixed = options_.mode == Mode::kFixed;
  const double timestep = m_->opt.timestep;
  const double h_max = (fixed || !options_.error_control) ? (options_.max_step > 0 ? options_.max_step : timestep)
                             : (options_.max_step > 0 ? options_.max_step : 0.1);
  const double h_min = std::max({1e-14, 1e-14 * std::abs(t0), options_.min_step});
  const bool controlled = !fixed && options_.error_control;
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
  for (;;) {
    bool limited = false;
    const double remaining = t_limit - t0;
    bool to_limit = false;
    if (remaining < 0.95 * h) {
      h = remaining;
      limited = to_limit = true;
    } else if (remaining < 1.001 * h) {
      h = remaining;
      to_limit = true;
    }
    double error;
    int worst;
    controller_failed_ = false;
    const bool ok = Attempt(d, h, &error, &worst, tol);
    if (controller_failed_) {
      LoadState(d, q0_.data(), v0_.data(), act0_.data());
      return absl::AbortedError(absl::StrCat("mjcenic: the user controller failed at time ", t0));
    }
    if (!controlled) {
      if (!ok)
        return absl::InternalError(absl::StrCat("mjcenic: convex solve failed at time ", t0,
                                                " (h = ", h, "): ", icf::ToString(last_status_)));
      break;
    }
    StepDecision dec;
    if (ok) {
      dec = AdjustStepSize(options_.control, error, options_.accuracy, h, h_max, h_min,
                           &at_minimum_);
    } else {  // a failed solve is treated like a failed step: retry with h/2
      dec.h_next = 0.5 * h;
      dec.underflow = dec.h_next < h_min;
    }
    if (dec.underflow)
      return absl::ResourceExhaustedError(absl::StrCat(
          "mjcenic: step size underflow at time ", t0, ": the error ", error,
          " exceeds the accuracy ", options_.accuracy, " even at h = ", h,
          " (minimum ", h_min, "); worst coordinate: ", norm_.WorstName(m_, worst),
          ok ? "" : absl::StrCat("; last solve: ", icf::ToString(last_status_))));
    if (dec.accept) {
      if (!limited) h_ideal_ = dec.h_next;
      break;
    }
    ++stats_.rejected_steps;
    h = dec.h_next;
  }
  LoadState(d, q1_.data(), v1_.data(), act1_.data());
  d->time = (h == t_limit - t0) ? t_limit : t0 + h;
  if (options_.mode == Mode::kTrapezoid) {
    // End force of this step starts the next one: F_end = 2 M̂ (v − v_t)/h − F_t.
    for (int i = 0; i < m_->nv; ++i) vguess_[i] = v1_[i] - v0_[i];
    model_mid_.MultiplyM(vguess_.data(), tmp_.data());
    for (int i = 0; i < m_->nv; ++i) f_start_[i] = 2 * tmp_[i] / h - f_start_[i];
    fsal_hash_ = StateHash(d, true);
  }
  RecordStep(h);
  return absl::OkStatus();
}

void Stepper::FillRowForces(mjData* d) {
  // Limits, equalities and friction loss: each efc row of d (forwarded at the
  // step's end) takes the impulse / h of the last solve's row with the same
  // MuJoCo type, object and side / row number. Rows that were not in that
  // solve (a limit that became active during the step) stay 0.
  const std::vector<adapter::RowRecord>& rows = last_solved_ == &model0_ ? rows0_ : rows_mid_;
  const double h = last_solved_->h;
  if (rows.empty() || !(h > 0)) return;
  const icf::IcfData& data = solver_.data();
  adapter::RowRecord prev{-1, -1, -1, -1};
  for (int i = 0; i < d->nefc; ++i) {
    const int type = d->efc_type[i];
    if (type == mjCNSTR_CONTACT_FRICTIONLESS || type == mjCNSTR_CONTACT_PYRAMIDAL ||
        type == mjCNSTR_CONTACT_ELLIPTIC)
      continue;
    const adapter::RowRecord key{type, d->efc_id[i], adapter::EfcRowSub(m_, d, i, prev), -1};
    prev = key;
    const auto it = std::lower_bound(rows.begin(), rows.end(), key);
    if (it == rows.end() || key < *it) continue;
    const bool friction = type == mjCNSTR_FRICTION_DOF || type == mjCNSTR_FRICTION_TENDON;
    const std::vector<double>& gamma = type == mjCNSTR_EQUALITY ? data.couplings.gamma
                                       : friction               ? data.dry_friction.gamma
                                                                : data.limits.gamma;
    if (it->index < 0 || it->index >= static_cast<int>(gamma.size())) continue;
    const double f = gamma[it->index] / h;
    d->efc_force[i] = f;
    if (type == mjCNSTR_EQUALITY) {
      d->efc_state[i] = mjCNSTRSTATE_QUADRATIC;
    } else if (friction) {
      const double F = d->efc_frictionloss[i];
      // Saturated (sliding) where the regularized law is within 0.1 % of F.
      d->efc_state[i] = f >= F * (1 - 1e-3)    ? mjCNSTRSTATE_LINEARNEG
                        : f <= -F * (1 - 1e-3) ? mjCNSTRSTATE_LINEARPOS
                                               : mjCNSTRSTATE_QUADRATIC;
    } else {
      d->efc_state[i] = f > 0 ? mjCNSTRSTATE_QUADRATIC : mjCNSTRSTATE_SATISFIED;
    }
  }
}

void Stepper::FillConstraintForces(mjData* d) {
  for (int i = 0; i < d->nefc; ++i) {
    d->efc_force[i] = 0;
    d->efc_state[i] = 0;
  }
  if (!last_solved_ || (last_solved_ != &model0_ && last_solved_ != &model_mid_)) return;
  FillRowForces(d);
  const std::vector<adapter::ContactRecord>& rec =
      last_solved_ == &model0_ ? records0_ : records_mid_;
  const std::vector<double>& gamma = solver_.data().contacts.gamma;
  const std::vector<double>& torque_gamma = solver_.data().contact_torques.gamma;
  const double h = last_solved_->h;
  const int nrec = static_cast<int>(rec.size());
  if (nrec == 0 || !(h > 0) || static_cast<int>(gamma.size()) < 3 * nrec) return;
  // Records sorted by geom pair, so each contact finds its pair by bisection.
  auto key = [&](int r) {
    return std::pair(std::min(rec[r].geom[0], rec[r].geom[1]),
                     std::max(rec[r].geom[0], rec[r].geom[1]));
  };
  record_order_.resize(nrec);
  for (int r = 0; r < nrec; ++r) record_order_[r] = r;
  std::sort(record_order_.begin(), record_order_.end(),
            [&](int a, int b) { return key(a) < key(b); });
  record_used_.assign(nrec, 0);
  const bool pyramidal = m_->opt.cone == mjCONE_PYRAMIDAL;
  for (int i = 0; i < d->ncon; ++i) {
    const mjContact& con = d->contact[i];
    if (con.efc_address < 0 || con.exclude != 0) continue;
    const std::pair<int, int> k(std::min(con.geom[0], con.geom[1]),
                                std::max(con.geom[0], con.geom[1]));
    auto it = std::lower_bound(record_order_.begin(), record_order_.end(), k,
                               [&](int r, const std::pair<int, int>& x) { return key(r) < x; });
    int best = -1;
    double best_d2 = 0;
    for (; it != record_order_.end() && key(*it) == k; ++it) {
      if (record_used_[*it]) continue;
      double d2 = 0;
      for (int j = 0; j < 3; ++j) d2 += (rec[*it].pos[j] - con.pos[j]) * (rec[*it].pos[j] - con.pos[j]);
      if (best < 0 || d2 < best_d2) best = *it, best_d2 = d2;
    }
    if (best < 0) continue;
    record_used_[best] = 1;
    // Force on geom 2 relative to geom 1 in world coordinates: frameᵀ γ / h
    // (a swapped pair reverses it), then in this contact's frame.
    const adapter::ContactRecord& r = rec[best];
    const double sign = r.geom[0] == con.geom[0] ? 1.0 : -1.0;
    double F[3] = {0, 0, 0}, T[3] = {0, 0, 0}, f[6] = {0, 0, 0, 0, 0, 0};
    for (int a = 0; a < 3; ++a)
      for (int j = 0; j < 3; ++j) F[j] += sign * r.frame[3 * a + j] * gamma[3 * best + a] / h;
    if (r.torque >= 0 && static_cast<int>(torque_gamma.size()) >= 3 * (r.torque + 1))
      for (int a = 0; a < 3; ++a)
        for (int j = 0; j < 3; ++j)
          T[j] += sign * r.frame[3 * a + j] * torque_gamma[3 * r.torque + a] / h;
    for (int a = 0; a < 3; ++a)
      for (int j = 0; j < 3; ++j) {
        f[a] += con.frame[3 * a + j] * F[j];
        f[3 + a] += con.frame[3 * a + j] * T[j];  // spin, roll 1, roll 2
      }
    f[0] = std::max(f[0], 0.0);
    const int dim = con.dim;
    if (dim == 1) {
      d->efc_force[con.efc_address] = f[0];
      continue;
    }
    if (pyramidal) {
      // Inside MuJoCo's pyramid: Σ |f_j| / μ_j ≤ f_n over the friction
      // components (the ICF bounds are separate: a round sliding cone and
      // separate torque bounds).
      double l1 = 0;
      for (int j = 1; j < dim; ++j)
        l1 += con.friction[j - 1] > 0 ? std::abs(f[j]) / con.friction[j - 1] : 0;
      if (l1 > f[0] && l1 > 0)
        for (int j = 1; j < dim; ++j) f[j] *= f[0] / l1;
      // Edge pairs (2j, 2j+1) carry a_j = |f_j|/μ_j plus an equal share of
      // the slack, so that all edges are ≥ 0 and MuJoCo's decoding returns
      // f_n = Σ edges and f_j = μ_j (e_2j − e_2j+1).
      double used = 0;
      for (int j = 1; j < dim; ++j) {
        if (!(con.friction[j - 1] > 0)) f[j] = 0;
        else used += std::abs(f[j]) / con.friction[j - 1];
      }
      const double share = std::max(f[0] - used, 0.0) / (dim - 1);
      for (int j = 1; j < dim; ++j) {
        const double t = f[j] != 0 ? f[j] / con.friction[j - 1] : 0.0;
        const double a = std::abs(t) + share;
        d->efc_force[con.efc_address + 2 * (j - 1)] = 0.5 * (a + t);
        d->efc_force[con.efc_address + 2 * (j - 1) + 1] = 0.5 * (a - t);
      }
    } else {
      // Inside MuJoCo's elliptic cone Σ (f_j/μ_j)² ≤ f_n² (ICF bounds sliding
      // and torques separately, so their combination can exceed it).
      double e2 = 0;
      for (int j = 1; j < dim; ++j) {
        if (!(con.friction[j - 1] > 0)) f[j] = 0;
        else e2 += (f[j] / con.friction[j - 1]) * (f[j] / con.friction[j - 1]);
      }
      const double e = std::sqrt(e2);
      if (e > f[0] && e > 0)
        for (int j = 1; j < dim; ++j) f[j] *= f[0] / e;
      for (int j = 0; j < dim; ++j) d->efc_force[con.efc_address + j] = f[j];
    }
  }
}

void Stepper::PostStep(mjData* d, double H, const double* v_start) {
  const auto t0 = Clock::now();
  const bool energy = m_->opt.enableflags & mjENBL_ENERGY;
  if (StateHash(d, false) != stages_hash_) {
    const mjModel* ms = StageModel();
    mj_fwdPosition(ms, d);
    mj_fwdVelocity(ms, d);
    ++stats_.geometry_queries;
    stats_.max_penetration =
        std::max(stats_.max_penetration, adapter::MujocoAdapter::MaxPenetration(d));
  }
  mj_sensorPos(m_, d);
  if (energy) mj_energyPos(m_, d);
  mj_sensorVel(m_, d);
  if (energy) mj_energyVel(m_, d);
  Actuation(d);
  mj_fwdAcceleration(m_, d);
  FillConstraintForces(d);
  for (int i = 0; i < m_->nv; ++i) d->qacc[i] = H > 0 ? (d->qvel[i] - v_start[i]) / H : 0;
  std::copy(d->qacc, d->qacc + m_->nv, d->qacc_warmstart);
  mj_mulM(m_, d, d->qfrc_constraint, d->qacc);
  for (int i = 0; i < m_->nv; ++i) d->qfrc_constraint[i] -= d->qfrc_smooth[i];
  d->flg_rnepost = 0;
  mj_sensorAcc(m_, d);
  for (int i = 0; i < m_->nplugin; ++i) {
    const mjpPlugin* p = mjp_getPluginAtSlot(m_->plugin[i]);
    if (p && p->advance) p->advance(m_, d, i);
  }
  stages_hash_ = StateHash(d, false);
  stats_.time_geometry += Seconds(t0, Clock::now());
}

absl::Status Stepper::Advance(mjData* d, double t, bool single_step) {
  // One outer call: checks, control inputs once (zero-order hold), internal
  // steps until t (or one step), then the post-step contract.
  const auto start = Clock::now();
  if (absl::Status s = CheckInputs(d); !s.ok()) return s;
  if (!std::isfinite(t) && !single_step)
    return absl::InvalidArgumentError("mjcenic: target time is not finite");
  if (t < d->time)
    return absl::InvalidArgumentError(absl::StrCat("mjcenic: cannot advance from time ",
                                                   d->time, " to ", t));
  const double t_start = d->time;
  std::copy(d->qvel, d->qvel + m_->nv, v_outer_.begin());
  EnsureStages(d);
  if (mjcb_control && !Disabled(m_, mjDSBL_ACTUATION)) mjcb_control(m_, d);
  if (controller_ && options_.controller == ControllerTreatment::kZeroOrderHold &&
      !CallController(d))
    return absl::AbortedError(absl::StrCat("mjcenic: the user controller failed at time ", d->time));
  absl::Status status;
  do {
    status = InternalStep(d, t);
  } while (status.ok() && !single_step && d->time < t);
  PostStep(d, d->time - t_start, v_outer_.data());
  stats_.time_total += Seconds(start, Clock::now());
  if (!status.ok()) return status;
  if (FirstNonFinite(d->qpos, m_->nq) >= 0 || FirstNonFinite(d->qvel, m_->nv) >= 0)
    return absl::InternalError(absl::StrCat("mjcenic: state became non-finite at time ", d->time));
  return absl::OkStatus();
}

absl::Status Stepper::AdvanceTo(mjData* d, double t) {
  if (t == d->time) return CheckInputs(d);  // nothing to do
  return Advance(d, t, false);
}

absl::Status Stepper::Step(mjData* d) { return AdvanceTo(d, d->time + m_->opt.timestep); }

absl::Status Stepper::StepOnce(mjData* d) {
  return Advance(d, std::numeric_limits<double>::infinity(), true);
}

}  // namespace mjcenic
