#include "mjcenic/adapter/controller_linearizer.h"
#include "mjcenic/icf/short_arrays.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mjcenic {

ControllerLinearizer::ControllerLinearizer(const mjModel* m, adapter::MujocoStages* stages,
                                           long* calls)
    : m_(m), stages_(stages), calls_(calls) {
  for (auto* v : {&feedback_.tau, &feedback_.kq, &feedback_.kv, &qfrc_applied_user_, &tau_x0_,
                  &tau_perturbed_, &v_perturbed_, &dof_direction_})
    v->resize(m->nv);
  ctrl_user_.resize(m->nu);
  q_perturbed_.resize(m->nq);
}

bool ControllerLinearizer::Call(mjData* d) {
  ++*calls_;
  if (!controller_(m_, d)) failed_ = true;
  return !failed_;
}

bool ControllerLinearizer::Force(mjData* d, const double* q, const double* v, const double* act,
                                 double* tau) {
  LoadState(m_, d, q, v, act);
  stages_->Smooth(d);  // no collision: the controller reads the smooth dynamics only
  if (!Call(d)) return false;
  stages_->Actuation(d);
  for (int i = 0; i < m_->nv; ++i) tau[i] = d->qfrc_actuator[i] + d->qfrc_applied[i];
  return true;
}

void ControllerLinearizer::SaveInputs(const mjData* d) {
  std::copy(d->ctrl, d->ctrl + m_->nu, ctrl_user_.begin());
  std::copy(d->qfrc_applied, d->qfrc_applied + m_->nv, qfrc_applied_user_.begin());
}

void ControllerLinearizer::RestoreInputs(mjData* d) const {
  std::copy(ctrl_user_.begin(), ctrl_user_.end(), d->ctrl);
  std::copy(qfrc_applied_user_.begin(), qfrc_applied_user_.end(), d->qfrc_applied);
}

bool ControllerLinearizer::Linearize(mjData* d, const double* q0, const double* v0,
                                     const double* act0) {
  // cenic-math §9 with separate position and velocity sensitivities, by
  // forward differences at x0 (the whole q restored after each dof;
  // quaternion-safe perturbations). The solves then use
  // τ_i(v) = τ_i(x_s) − kq_i h v_i − kv_i (v_i − v_s,i) from their own start
  // state x_s, so the gains follow each solve's step.
  const int nv = static_cast<int>(m_->nv);
  SaveInputs(d);
  bool ok = Force(d, q0, v0, act0, tau_x0_.data());
  const double sqrt_eps = std::sqrt(std::numeric_limits<double>::epsilon());
  for (int i = 0; ok && i < nv; ++i) {
    double dv = sqrt_eps * std::max(1.0, std::abs(v0[i]));
    dv = (v0[i] + dv) - v0[i];  // exactly representable
    std::copy(v0, v0 + nv, v_perturbed_.begin());
    v_perturbed_[i] += dv;
    ok = Force(d, q0, v_perturbed_.data(), act0, tau_perturbed_.data());
    feedback_.kv[i] = -(tau_perturbed_[i] - tau_x0_[i]) / dv;
    std::fill(dof_direction_.begin(), dof_direction_.end(), 0.0);
    dof_direction_[i] = 1.0;
    std::copy(q0, q0 + m_->nq, q_perturbed_.begin());
    mj_integratePos(m_, q_perturbed_.data(), dof_direction_.data(), sqrt_eps);
    ok = ok && Force(d, q_perturbed_.data(), v0, act0, tau_perturbed_.data());
    feedback_.kq[i] = -(tau_perturbed_[i] - tau_x0_[i]) / sqrt_eps;
  }
  std::copy(tau_x0_.begin(), tau_x0_.end(), feedback_.tau.begin());
  LoadState(m_, d, q0, v0, act0);
  RestoreInputs(d);
  return ok;
}

bool ControllerLinearizer::ForceAt(mjData* d, const double* q, const double* v,
                                   const double* act) {
  SaveInputs(d);
  const bool ok = Force(d, q, v, act, feedback_.tau.data());
  RestoreInputs(d);
  return ok;
}

}  // namespace mjcenic
