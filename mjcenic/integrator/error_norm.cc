#include "mjcenic/integrator/error_norm.h"

#include <cmath>

namespace mjcenic {

const char* ToString(ErrorNormKind k) {
  switch (k) {
    case ErrorNormKind::kWeighted: return "weighted";
    case ErrorNormKind::kDrake: return "drake";
    case ErrorNormKind::kFullState: return "full_state";
  }
  return "unknown";
}

ErrorNorm::ErrorNorm(const mjModel* m, ErrorNormKind kind, double length_scale) : kind_(kind) {
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
}

double ErrorNorm::Compute(const mjModel* m, const double* qa, const double* va,
                          const double* qb, const double* vb, int* worst) {
  double e = 0;
  *worst = -1;
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
    if (!(x <= e)) { e = x; *worst = i; }  // NaN propagates
  }
  return e;
}

}  // namespace mjcenic
