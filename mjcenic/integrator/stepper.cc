#include "mjcenic/integrator/stepper.h"

#include <chrono>
#include <cmath>
#include <cstring>
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

// First non-finite entry of x, or -1.
int FirstNonFinite(const double* x, long n) {
  for (long i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return static_cast<int>(i);
  return -1;
}

}  // namespace

const char* ToString(Mode mode) {
  switch (mode) {
    case Mode::kFixed: return "fixed";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<Stepper>> Stepper::Create(const mjModel* m,
                                                         const StepperOptions& options) {
  if (mj_version() != mjVERSION_HEADER)
    return absl::FailedPreconditionError(absl::StrCat(
        "mjcenic was built against MuJoCo headers ", mjVERSION_HEADER,
        " but the loaded libmujoco is ", mj_versionString(), " (", mj_version(),
        "); install the pinned mujoco wheel and rebuild"));
  if (!m) return absl::InvalidArgumentError("mjcenic: null mjModel");
  if (!(options.max_step >= 0) || !std::isfinite(options.max_step))
    return absl::InvalidArgumentError("mjcenic: max_step must be finite and >= 0");
  if (!(options.icf.stiction_tolerance > 0))
    return absl::InvalidArgumentError("mjcenic: stiction_tolerance must be > 0");
  if (!(options.solver.tolerance > 0) || options.solver.max_iterations < 1)
    return absl::InvalidArgumentError("mjcenic: solver tolerance must be > 0 and "
                                      "max_iterations >= 1");
  if (m->nhistory > 0)
    return absl::UnimplementedError(
        "mjcenic: actuator/sensor delay and history buffers are not supported");
  return std::unique_ptr<Stepper>(new Stepper(m, options));
}

Stepper::Stepper(const mjModel* m, const StepperOptions& options)
    : m_(m), options_(options), adapter_(m, options.contact) {
  problem_.params = options.icf;
  q0_.resize(m->nq); q1_.resize(m->nq);
  v0_.resize(m->nv); v1_.resize(m->nv);
  act0_.resize(m->na); act1_.resize(m->na); act_dot0_.resize(m->na);
}

unsigned long long Stepper::StateHash(const mjData* d) const {
  unsigned long long h = 1469598103934665603ull;
  HashBytes(&h, d->qpos, sizeof(double) * m_->nq);
  HashBytes(&h, d->qvel, sizeof(double) * m_->nv);
  HashBytes(&h, d->act, sizeof(double) * m_->na);
  HashBytes(&h, d->mocap_pos, sizeof(double) * 3 * m_->nmocap);
  HashBytes(&h, d->mocap_quat, sizeof(double) * 4 * m_->nmocap);
  HashBytes(&h, d->eq_active, sizeof(mjtByte) * m_->neq);
  HashBytes(&h, &m_->opt, sizeof(mjOption));
  HashBytes(&h, &d, sizeof(d));
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
  return absl::OkStatus();
}

void Stepper::EnsureStages(mjData* d) {
  const unsigned long long h = StateHash(d);
  if (h == stages_hash_) return;
  const auto t0 = Clock::now();
  adapter::MujocoAdapter::PositionVelocityStages(m_, d);
  ++stats_.geometry_queries;
  stats_.time_geometry += Seconds(t0, Clock::now());
  stages_hash_ = h;
}

absl::Status Stepper::SolveStep(mjData* d, double h, double* q_out, double* v_out,
                                double* act_out) {
  const auto t0 = Clock::now();
  adapter::BuildInfo info;
  adapter_.Build(m_, d, h, &problem_, &info);
  stats_.max_penetration = std::max(stats_.max_penetration, info.max_penetration);
  const auto t1 = Clock::now();
  stats_.time_assembly += Seconds(t0, t1);

  icf::SolveStats st;
  const icf::SolveStatus status =
      solver_.Solve(problem_, d->qvel, options_.solver, v_out, &st);
  stats_.time_solve += Seconds(t1, Clock::now());
  ++stats_.solves;
  stats_.newton_iterations += st.iterations;
  stats_.factorizations += st.factorizations;
  stats_.ls_iterations += st.ls_iterations;
  if (status != icf::SolveStatus::kConverged)
    return absl::InternalError(absl::StrCat("mjcenic: convex solve failed at time ", d->time,
                                            " (h = ", h, "): ", icf::ToString(status), " after ",
                                            st.iterations, " Newton iterations"));
  // q = q0 + h N(q0) v with MuJoCo's quaternion-exact map (cenic-math §10.1).
  std::copy(d->qpos, d->qpos + m_->nq, q_out);
  mj_integratePos(m_, q_out, v_out, h);
  // Activations: MuJoCo's rule (Euler, exact filter), clamped (mapping §4.5).
  for (int a = 0; a < m_->nu && m_->na; ++a) {
    const int adr = m_->actuator_actadr[a], num = m_->actuator_actnum[a];
    for (int j = adr; j >= 0 && j < adr + num; ++j) {
      double x = d->act[j];
      if (m_->actuator_dyntype[a] == mjDYN_FILTEREXACT) {
        const double tau = std::max(m_->actuator_dynprm[mjNDYN * a], mjMINVAL);
        x += d->act_dot[j] * tau * (1 - std::exp(-h / tau));
      } else {
        x += h * d->act_dot[j];
      }
      if (m_->actuator_actlimited[a])
        x = std::clamp(x, m_->actuator_actrange[2 * a], m_->actuator_actrange[2 * a + 1]);
      act_out[j] = x;
    }
  }
  return absl::OkStatus();
}

void Stepper::PostStep(mjData* d, double h) {
  const auto t0 = Clock::now();
  const bool energy = m_->opt.enableflags & mjENBL_ENERGY;
  mj_fwdPosition(m_, d);
  mj_sensorPos(m_, d);
  if (energy) mj_energyPos(m_, d);
  mj_fwdVelocity(m_, d);
  mj_sensorVel(m_, d);
  if (energy) mj_energyVel(m_, d);
  ++stats_.geometry_queries;
  stats_.max_penetration =
      std::max(stats_.max_penetration, adapter::MujocoAdapter::MaxPenetration(d));
  if (!(m_->opt.disableflags & mjDSBL_ACTUATION)) mj_fwdActuation(m_, d);
  mj_fwdAcceleration(m_, d);
  for (int i = 0; i < d->nefc; ++i) {
    d->efc_force[i] = 0;
    d->efc_state[i] = 0;
  }
  for (int i = 0; i < m_->nv; ++i) d->qacc[i] = (d->qvel[i] - v0_[i]) / h;
  std::copy(d->qacc, d->qacc + m_->nv, d->qacc_warmstart);
  mj_mulM(m_, d, d->qfrc_constraint, d->qacc);
  for (int i = 0; i < m_->nv; ++i) d->qfrc_constraint[i] -= d->qfrc_smooth[i];
  d->flg_rnepost = 0;
  mj_sensorAcc(m_, d);
  for (int i = 0; i < m_->nplugin; ++i) {
    const mjpPlugin* p = mjp_getPluginAtSlot(m_->plugin[i]);
    if (p && p->advance) p->advance(m_, d, i);
  }
  stages_hash_ = StateHash(d);
  stats_.time_geometry += Seconds(t0, Clock::now());
}

absl::Status Stepper::Step(mjData* d) {
  const auto start = Clock::now();
  if (absl::Status s = CheckInputs(d); !s.ok()) return s;
  const double h = options_.max_step > 0 ? std::min(options_.max_step, m_->opt.timestep)
                                         : m_->opt.timestep;
  const double t0 = d->time;
  EnsureStages(d);
  if (mjcb_control && !(m_->opt.disableflags & mjDSBL_ACTUATION)) mjcb_control(m_, d);
  if (!(m_->opt.disableflags & mjDSBL_ACTUATION)) mj_fwdActuation(m_, d);
  std::copy(d->qpos, d->qpos + m_->nq, q0_.begin());
  std::copy(d->qvel, d->qvel + m_->nv, v0_.begin());
  std::copy(d->act, d->act + m_->na, act0_.begin());
  // Fixed mode: cover m->opt.timestep with equal substeps of at most h.
  const double H = m_->opt.timestep;
  const int n = std::max(1, static_cast<int>(std::ceil(H / h - 1e-9)));
  for (int k = 0; k < n; ++k) {
    if (k > 0) {
      EnsureStages(d);
      if (!(m_->opt.disableflags & mjDSBL_ACTUATION)) mj_fwdActuation(m_, d);
    }
    const absl::Status s = SolveStep(d, H / n, q1_.data(), v1_.data(), act1_.data());
    if (!s.ok()) {  // restore the start state exactly
      std::copy(q0_.begin(), q0_.end(), d->qpos);
      std::copy(v0_.begin(), v0_.end(), d->qvel);
      std::copy(act0_.begin(), act0_.end(), d->act);
      d->time = t0;
      stages_hash_ = 0;
      return s;
    }
    std::copy(q1_.begin(), q1_.end(), d->qpos);
    std::copy(v1_.begin(), v1_.end(), d->qvel);
    std::copy(act1_.begin(), act1_.end(), d->act);
  }
  d->time = t0 + H;
  PostStep(d, H);
  ++stats_.steps;
  stats_.time_total += Seconds(start, Clock::now());
  if (FirstNonFinite(d->qpos, m_->nq) >= 0 || FirstNonFinite(d->qvel, m_->nv) >= 0)
    return absl::InternalError(absl::StrCat("mjcenic: state became non-finite at time ", d->time));
  return absl::OkStatus();
}

}  // namespace mjcenic
