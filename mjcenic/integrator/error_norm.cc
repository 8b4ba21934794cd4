#include "mjcenic/integrator/error_norm.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "mjcenic/adapter/mujoco_state.h"

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
  const adapter::Sizes n = adapter::ModelSizes(m);
  nq_ = n.nq;
  nv_ = n.nv;
  na_ = n.na;
  adapter::NormWeights(m, length_scale, &L_, &weight_, &act_weight_);
  dq_.resize(nv_);
  vel_weight_.assign(nv_, tau_);
  drift_.assign(nv_, 0.0);
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

std::string ErrorNorm::WorstName(const mjModel* m, int worst) const {
  return adapter::CoordinateName(m, worst, kind_ == ErrorNormKind::kDrake);
}

double ErrorNorm::Compute(const mjModel* m, const double* qa, const double* va,
                          const double* acta, const double* qb, const double* vb,
                          const double* actb, int* worst) {
  double e = 0;
  *worst = -1;
  for (int j = 0; j < na_; ++j) {
    const double x = std::abs(acta[j] - actb[j]) * act_weight_[j];
    if (!(x <= e)) { e = x; *worst = -2 - j; }
  }
  if (kind_ == ErrorNormKind::kDrake) {
    for (int i = 0; i < nq_; ++i) {
      const double x = std::abs(qa[i] - qb[i]);
      if (!(x <= e)) { e = x; *worst = i; }
    }
    return e;
  }
  mj_differentiatePos(m, dq_.data(), 1.0, qb, qa);
  for (int i = 0; i < nv_; ++i) {
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
