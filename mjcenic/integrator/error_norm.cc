#include "mjcenic/integrator/error_norm.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <absl/strings/str_cat.h>

#include "mjcenic/adapter/mujoco_adapter.h"

namespace mjcenic {

const char* ToString(ErrorNormKind k) {
  switch (k) {
    case ErrorNormKind::kWeighted: return "weighted";
    case ErrorNormKind::kDrake: return "drake";
    case ErrorNormKind::kFullState: return "full_state";
    case ErrorNormKind::kPropagated: return "propagated";
    case ErrorNormKind::kPropagatedModes: return "propagated_modes";
  }
  return "unknown";
}

ErrorNorm::ErrorNorm(const mjModel* m, ErrorNormKind kind, double length_scale,
                     double velocity_horizon)
    : kind_(kind), tau_(velocity_horizon) {
  const int nv = static_cast<int>(m->nv);
  std::vector<char> rotational(nv, 0);
  for (int j = 0; j < m->njnt; ++j) {
    const int a = m->jnt_dofadr[j];
    switch (m->jnt_type[j]) {
      case mjJNT_HINGE: rotational[a] = 1; break;
      case mjJNT_BALL: rotational[a] = rotational[a + 1] = rotational[a + 2] = 1; break;
      case mjJNT_FREE: rotational[a + 3] = rotational[a + 4] = rotational[a + 5] = 1; break;
      default: break;
    }
  }
  if (length_scale > 0) {
    L_ = length_scale;
  } else {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < nv; ++i)
      if (rotational[i] && m->dof_length[i] > 0) {
        sum += m->dof_length[i];
        ++n;
      }
    L_ = n ? sum / n : 1.0;
  }
  weight_.assign(nv, 1.0);
  for (int i = 0; i < nv; ++i) weight_[i] = rotational[i] ? 1.0 : 1.0 / L_;
  dq_.resize(nv);
  vel_weight_.assign(nv, tau_);
  drift_.assign(nv, 0.0);
  act_weight_.assign(m->na, 1.0);
  for (int a = 0; a < m->nu; ++a) {
    double range = 0;
    if (m->actuator_actlimited[a])
      range = m->actuator_actrange[2 * a + 1] - m->actuator_actrange[2 * a];
    else if (m->actuator_dyntype[a] == mjDYN_MUSCLE)
      range = 1;  // muscle activation lives in [0, 1]
    else if (m->actuator_ctrllimited[a])
      range = m->actuator_ctrlrange[2 * a + 1] - m->actuator_ctrlrange[2 * a];
    const double w = range > 0 && std::isfinite(range) ? 1.0 / range : 1.0;
    const int adr = m->actuator_actadr[a];
    for (int j = 0; adr >= 0 && j < m->actuator_actnum[a]; ++j) act_weight_[adr + j] = w;
  }
}

double ErrorNorm::PropagationWeight(double h, double H, double M, double tau) {
  // cenic-math §11.11. Per step the implicit step maps a velocity error δv to
  // (M/H) δv; summed over the following steps its position effect is
  // h Σ_k (M/H)^k δv = h H/(H − M) δv, capped by the horizon τ (h/τ H added to
  // the decay). H − M ≥ 0 up to round-off (H = M + h D + h² K + Σ JᵀGJ).
  const double decay = std::max(H - M, 0.0) + (h / tau) * H;
  return decay > 0 ? h * H / decay : tau;
}

void ErrorNorm::SetPropagation(double h, const double* H_diag, const double* M_diag) {
  for (size_t i = 0; i < vel_weight_.size(); ++i)
    vel_weight_[i] = PropagationWeight(h, H_diag[i], M_diag[i], tau_);
}

void ErrorNorm::SetPropagatedDrift(const double* drift) {
  std::copy(drift, drift + drift_.size(), drift_.begin());
  drift_set_ = true;
}

namespace {
std::string Named(const mjModel* m, int type, int id, const char* what) {
  const std::string n = adapter::ObjectName(m, type, id);
  return absl::StrCat(" (", what, " ", !n.empty() ? absl::StrCat("'", n, "'") : absl::StrCat("#", id),
                      ")");
}
}  // namespace

std::string ErrorNorm::WorstName(const mjModel* m, int worst) const {
  if (worst <= -2) {
    const int j = -2 - worst;
    for (int a = 0; a < m->nu; ++a)
      if (m->actuator_actadr[a] >= 0 && j >= m->actuator_actadr[a] &&
          j < m->actuator_actadr[a] + m->actuator_actnum[a])
        return absl::StrCat("act ", j, Named(m, mjOBJ_ACTUATOR, a, "actuator"));
    return absl::StrCat("act ", j);
  }
  if (kind_ == ErrorNormKind::kDrake) {
    if (worst < 0 || worst >= m->nq) return "none";
    int jnt = 0;
    for (int j = 0; j < m->njnt; ++j)
      if (m->jnt_qposadr[j] <= worst) jnt = j;
    return absl::StrCat("qpos ", worst, Named(m, mjOBJ_JOINT, jnt, "joint"));
  }
  if (worst < 0 || worst >= m->nv) return "none";
  return absl::StrCat("dof ", worst, Named(m, mjOBJ_JOINT, m->dof_jntid[worst], "joint"));
}

double ErrorNorm::Compute(const mjModel* m, const double* qa, const double* va,
                          const double* acta, const double* qb, const double* vb,
                          const double* actb, int* worst) {
  double e = 0;
  *worst = -1;
  for (int j = 0; j < m->na; ++j) {
    const double x = std::abs(acta[j] - actb[j]) * act_weight_[j];
    if (!(x <= e)) { e = x; *worst = -2 - j; }
  }
  if (kind_ == ErrorNormKind::kDrake) {
    for (int i = 0; i < m->nq; ++i) {
      const double x = std::abs(qa[i] - qb[i]);
      if (!(x <= e)) { e = x; *worst = i; }
    }
    return e;
  }
  mj_differentiatePos(m, dq_.data(), 1.0, qb, qa);
  for (int i = 0; i < m->nv; ++i) {
    double x = std::abs(dq_[i]) * weight_[i];
    if (kind_ == ErrorNormKind::kFullState) x = std::max(x, std::abs(va[i] - vb[i]) / L_);
    // §11.11: the position error this velocity error will cause, as positions scale.
    if (kind_ == ErrorNormKind::kPropagated)
      x = std::max(x, std::abs(va[i] - vb[i]) * vel_weight_[i] * weight_[i]);
    if (kind_ == ErrorNormKind::kPropagatedModes)
      x = std::max(x, (drift_set_ ? std::abs(drift_[i]) : std::abs(va[i] - vb[i]) * tau_) *
                          weight_[i]);
    if (!(x <= e)) { e = x; *worst = i; }  // NaN propagates
  }
  drift_set_ = false;  // one drift per Compute
  return e;
}

}  // namespace mjcenic
