#include "mjcenic/integrator/error_norm.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>

#include "mjcenic/adapter/mujoco_state.h"
#include "mjcenic/icf/icf_model.h"

namespace mjcenic {

namespace {

// In-place Cholesky factor (lower triangle, row-major n × n) of a symmetric
// positive definite block; false if a pivot is not positive.
bool FactorBlock(double* a, int n) {
  for (int k = 0; k < n; ++k) {
    double d = a[k * n + k];
    for (int j = 0; j < k; ++j) d -= a[k * n + j] * a[k * n + j];
    if (!(d > 0)) return false;
    const double l = std::sqrt(d);
    a[k * n + k] = l;
    for (int i = k + 1; i < n; ++i) {
      double x = a[i * n + k];
      for (int j = 0; j < k; ++j) x -= a[i * n + j] * a[k * n + j];
      a[i * n + k] = x / l;
    }
  }
  return true;
}

// x ← (L Lᵀ)⁻¹ x with the factor of FactorBlock.
void SolveBlock(const double* l, int n, double* x) {
  for (int i = 0; i < n; ++i) {
    double y = x[i];
    for (int j = 0; j < i; ++j) y -= l[i * n + j] * x[j];
    x[i] = y / l[i * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    double y = x[i];
    for (int j = i + 1; j < n; ++j) y -= l[j * n + i] * x[j];
    x[i] = y / l[i * n + i];
  }
}

}  // namespace

bool TangentProjection::Apply(const icf::IcfModel& model, const double* v, double* dv) {
  // cenic-math §11.3, "Velocities on constrained motion": δv ← δv − Y S⁺ J δv
  // with Y = M⁻¹Jᵀ and S = J M⁻¹ Jᵀ over the trees the rows touch.
  model_ = &model;
  CollectRows(v);
  if (rows_.empty() || model.nv == 0) return false;
  NumberTreeDofs();
  if (!FactorMassBlocks()) return false;
  SolveMassForRows();
  if (!FactorRowProduct()) return false;
  ProjectOut(dv);
  return true;
}

int TangentProjection::TreeOf(int dof) const {
  return model_->clique_of_dof.empty() ? 0 : model_->clique_of_dof[dof];
}
int TangentProjection::TreeBegin(int t) const {
  return model_->clique_start.empty() ? 0 : model_->clique_start[t];
}
int TangentProjection::TreeEnd(int t) const {
  return model_->clique_start.empty() ? model_->nv : model_->clique_start[t + 1];
}

double TangentProjection::RowDot(int c, const double* x) const {
  // J_c x over the touched trees' local dofs.
  const std::span<const int> dofs = rows_[c].dofs;
  const double* J = rows_[c].J;
  double sum = 0;
  for (size_t k = 0; k < dofs.size(); ++k) sum += J[k] * x[local_[dofs[k]]];
  return sum;
}

void TangentProjection::CollectRows(const double* v) {
  // The equality rows, and the limits active at v, which hold like bilateral rows.
  rows_.clear();
  const auto& couplings = model_->couplings.rows;
  for (int c = 0; c < couplings.size(); ++c)
    rows_.push_back({couplings.dofs(c), couplings.J(c)});
  if (v == nullptr) return;
  const auto& limits = model_->limits.rows;
  for (int c = 0; c < limits.size(); ++c) {
    double vc;
    limits.Multiply(c, v, &vc);
    if (!model_->limits.Active(c, vc)) continue;
    if (spring_violation_ > 0 && model_->limits.g0[c] < -spring_violation_ &&
        model_->limits.tau_r[c] > 0)
      continue;  // §5.2's spring zone
    rows_.push_back({limits.dofs(c), limits.J(c)});
  }
}

void TangentProjection::NumberTreeDofs() {
  // The trees the rows touch, and their dofs numbered 0..n−1.
  local_.assign(model_->nv, -1);
  trees_.clear();
  for (const Row& row : rows_)
    for (int dof : row.dofs) {
      const int t = TreeOf(dof);
      if (local_[TreeBegin(t)] == -1) {
        local_[TreeBegin(t)] = -2;
        trees_.push_back(t);
      }
    }
  std::sort(trees_.begin(), trees_.end());
  n_ = 0;
  for (int t : trees_)
    for (int i = TreeBegin(t); i < TreeEnd(t); ++i) local_[i] = n_++;
}

bool TangentProjection::FactorMassBlocks() {
  // Dense mass blocks from M's lower triangle (block diagonal over trees), factored.
  int mass_size = 0;
  for (int t : trees_) mass_size += (TreeEnd(t) - TreeBegin(t)) * (TreeEnd(t) - TreeBegin(t));
  mass_.assign(mass_size, 0.0);
  const icf::IcfModel& model = *model_;
  for (int t = 0, off = 0; t < static_cast<int>(trees_.size()); ++t) {
    const int t0 = TreeBegin(trees_[t]), b = TreeEnd(trees_[t]) - t0;
    double* a = mass_.data() + off;
    for (int i = t0; i < t0 + b; ++i)
      for (int k = 0; k < model.M_rownnz[i]; ++k) {
        const int adr = model.M_rowadr[i] + k, j = model.M_colind[adr];
        if (j < t0 || j > i) return false;  // not a tree's lower triangle
        a[(i - t0) * b + (j - t0)] = a[(j - t0) * b + (i - t0)] = model.M[adr];
      }
    if (!FactorBlock(a, b)) return false;
    off += b * b;
  }
  return true;
}

void TangentProjection::ScatterRows() {
  // y_ = Jᵀ, one dense column of n per row over the touched trees' dofs.
  const int nr = static_cast<int>(rows_.size());
  y_.assign(static_cast<size_t>(n_) * nr, 0.0);
  for (int c = 0; c < nr; ++c) {
    double* y = y_.data() + static_cast<size_t>(c) * n_;
    const std::span<const int> dofs = rows_[c].dofs;
    for (size_t k = 0; k < dofs.size(); ++k) y[local_[dofs[k]]] = rows_[c].J[k];
  }
}

void TangentProjection::SolveMassForRows() {
  // Y = M⁻¹Jᵀ, one column of n per row.
  const int nr = static_cast<int>(rows_.size());
  ScatterRows();
  for (int c = 0; c < nr; ++c) {
    double* y = y_.data() + static_cast<size_t>(c) * n_;
    for (int t = 0, off = 0, first = 0; t < static_cast<int>(trees_.size()); ++t) {
      const int b = TreeEnd(trees_[t]) - TreeBegin(trees_[t]);
      bool touched = false;
      for (int i = first; i < first + b && !touched; ++i) touched = y[i] != 0;
      if (touched) SolveBlock(mass_.data() + off, b, y + first);
      off += b * b;
      first += b;
    }
  }
}

bool TangentProjection::FactorRowProduct() {
  // S = J M⁻¹ Jᵀ (lower triangle) and its Cholesky factor.
  const int nr = static_cast<int>(rows_.size());
  s_.assign(static_cast<size_t>(nr) * nr, 0.0);
  for (int i = 0; i < nr; ++i)
    for (int j = 0; j <= i; ++j) s_[i * nr + j] = RowDot(i, y_.data() + static_cast<size_t>(j) * n_);
  return FactorDroppingDependentRows(nr);
}

bool TangentProjection::FactorDroppingDependentRows(int nr) {
  // A row whose pivot is round-off of its diagonal depends on the rows
  // before it (or is zero, as a connect's out-of-plane row on a planar
  // chain) and is dropped.
  diag_.resize(nr);
  double largest = 0;
  for (int i = 0; i < nr; ++i) {
    diag_[i] = s_[i * nr + i];
    largest = std::max(largest, diag_[i]);
  }
  if (!(largest > 0)) return false;
  dropped_.assign(nr, 0);
  for (int k = 0; k < nr; ++k) {
    double d = s_[k * nr + k];
    for (int j = 0; j < k; ++j) d -= s_[k * nr + j] * s_[k * nr + j];
    if (!(d > 1e-9 * diag_[k] && d > 1e-14 * largest)) {
      dropped_[k] = 1;
      for (int i = k; i < nr; ++i) s_[i * nr + k] = 0;
      continue;
    }
    const double l = std::sqrt(d);
    s_[k * nr + k] = l;
    for (int i = k + 1; i < nr; ++i) {
      double x = s_[i * nr + k];
      for (int j = 0; j < k; ++j) x -= s_[i * nr + j] * s_[k * nr + j];
      s_[i * nr + k] = x / l;
    }
  }
  return true;
}

void TangentProjection::RowProducts(const double* x) {
  // z_i = J_i x over the model's dofs.
  const int nr = static_cast<int>(rows_.size());
  z_.resize(nr);
  for (int i = 0; i < nr; ++i) {
    const std::span<const int> dofs = rows_[i].dofs;
    double sum = 0;
    for (size_t k = 0; k < dofs.size(); ++k) sum += rows_[i].J[k] * x[dofs[k]];
    z_[i] = sum;
  }
}

void TangentProjection::SolveRowProduct(int nr) {
  for (int i = 0; i < nr; ++i) {
    if (dropped_[i]) { z_[i] = 0; continue; }
    double x = z_[i];
    for (int j = 0; j < i; ++j) x -= s_[i * nr + j] * z_[j];
    z_[i] = x / s_[i * nr + i];
  }
  for (int i = nr - 1; i >= 0; --i) {
    if (dropped_[i]) continue;
    double x = z_[i];
    for (int j = i + 1; j < nr; ++j) x -= s_[j * nr + i] * z_[j];
    z_[i] = x / s_[i * nr + i];
  }
}

void TangentProjection::ProjectOut(double* dv) {
  // z = S⁺ J δv (dropped rows: 0), δv ← δv − Y z.
  const int nr = static_cast<int>(rows_.size());
  RowProducts(dv);
  SolveRowProduct(nr);
  for (int t = 0, first = 0; t < static_cast<int>(trees_.size()); ++t) {
    const int t0 = TreeBegin(trees_[t]), b = TreeEnd(trees_[t]) - t0;
    for (int i = 0; i < b; ++i) {
      double x = 0;
      for (int c = 0; c < nr; ++c) x += y_[static_cast<size_t>(c) * n_ + first + i] * z_[c];
      dv[t0 + i] -= x;
    }
    first += b;
  }
}

void TangentProjection::ProjectOutEuclidean(double* dq) {
  // The rows as dense columns over the touched trees' dofs (in y_, Apply's
  // M⁻¹Jᵀ no longer needed), E = J Jᵀ in s_, z = E⁺ J dq, dq ← dq − Jᵀ z.
  const int nr = static_cast<int>(rows_.size());
  ScatterRows();
  s_.assign(static_cast<size_t>(nr) * nr, 0.0);
  for (int i = 0; i < nr; ++i)
    for (int j = 0; j <= i; ++j) s_[i * nr + j] = RowDot(i, y_.data() + static_cast<size_t>(j) * n_);
  if (!FactorDroppingDependentRows(nr)) return;
  RowProducts(dq);
  SolveRowProduct(nr);
  for (int c = 0; c < nr; ++c) {
    const std::span<const int> dofs = rows_[c].dofs;
    for (size_t k = 0; k < dofs.size(); ++k) dq[dofs[k]] -= rows_[c].J[k] * z_[c];
  }
}

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
  dv_.resize(nv_);
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

void ErrorNorm::VelocityDifference(const double* va, const double* vb, double* dv) {
  for (int i = 0; i < nv_; ++i) dv[i] = va[i] - vb[i];
  if (tangent_model_ != nullptr) projection_.Apply(*tangent_model_, tangent_v_, dv);
}

std::string ErrorNorm::WorstName(const mjModel* m, int worst) const {
  return adapter::CoordinateName(m, worst, kind_ == ErrorNormKind::kDrake);
}

namespace {
// The running maximum e of the coordinates' errors and its coordinate: a NaN
// error takes it and keeps it, so a non-finite state is never measured as
// finite by a later coordinate.
void Take(double x, int coordinate, double* e, int* worst) {
  if (std::isnan(*e) || x <= *e) return;
  *e = x;
  *worst = coordinate;
}
}  // namespace

double ErrorNorm::Compute(const mjModel* m, const double* qa, const double* va,
                          const double* acta, const double* qb, const double* vb,
                          const double* actb, int* worst, Split* split) {
  double e = 0;
  *worst = -1;
  int unused;
  if (split) split->in_group = split->rest = 0;
  // Every coordinate's error goes to the maximum, and with a split also to
  // its part's: the group's dofs, or the rest (activations, qpos).
  const auto take = [&](double x, int coordinate, bool in_group) {
    Take(x, coordinate, &e, worst);
    if (split) Take(x, coordinate, in_group ? &split->in_group : &split->rest, &unused);
  };
  for (int j = 0; j < na_; ++j) {
    const double x = std::abs(acta[j] - actb[j]) * act_weight_[j];
    take(x, -2 - j, false);
  }
  if (kind_ == ErrorNormKind::kDrake) {
    for (int i = 0; i < nq_; ++i) {
      const double x = std::abs(qa[i] - qb[i]);
      take(x, i, false);
    }
    tangent_model_ = nullptr;
    return e;
  }
  mj_differentiatePos(m, dq_.data(), 1.0, qb, qa);
  // The velocity difference in the bilateral rows' tangent space (§11.3).
  const bool velocities =
      uses_velocities() && !(kind_ == ErrorNormKind::kPropagatedModes && drift_set_);
  if (velocities) VelocityDifference(va, vb, dv_.data());
  for (int i = 0; i < nv_; ++i) {
    double x = std::abs(dq_[i]) * weight_[i];
    if (kind_ == ErrorNormKind::kFullState) x = std::max(x, std::abs(dv_[i]) / L_);
    // §11.11: the position error this velocity error will cause, as positions scale.
    if (kind_ == ErrorNormKind::kPropagated)
      x = std::max(x, std::abs(dv_[i]) * vel_weight_[i] * weight_[i]);
    if (kind_ == ErrorNormKind::kPropagatedModes)
      x = std::max(x, (drift_set_ ? std::abs(drift_[i]) : std::abs(dv_[i]) * tau_) * weight_[i]);
    take(x, i, split && split->group[i]);
  }
  drift_set_ = false;  // one drift per Compute
  tangent_model_ = nullptr;
  return e;
}

}  // namespace mjcenic
