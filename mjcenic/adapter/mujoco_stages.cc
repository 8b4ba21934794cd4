#include "mjcenic/adapter/mujoco_stages.h"
#include "mjcenic/icf/short_arrays.h"

#include <algorithm>

namespace mjcenic::adapter {

MujocoStages::MujocoStages(const mjModel* m, double speculative_margin) : m_(m) {
  if (!(speculative_margin > 0)) return;
  staging_ = mj_copyModel(nullptr, m);
  for (int g = 0; g < m->ngeom; ++g) staging_->geom_gap[g] += 0.5 * speculative_margin;
  for (int p = 0; p < m->npair; ++p) staging_->pair_gap[p] += speculative_margin;
  for (int b = 0; b < m->nbody; ++b) staging_->body_margin[b] += 0.5 * speculative_margin;
}

MujocoStages::~MujocoStages() {
  if (staging_) mj_deleteModel(staging_);
}

const mjModel* MujocoStages::StageModel() {
  if (!staging_) return m_;
  staging_->opt = m_->opt;
  return staging_;
}

void MujocoStages::PositionVelocity(mjData* d) {
  const mjModel* m = StageModel();
  mj_fwdPosition(m, d);
  mj_fwdVelocity(m, d);
}

void MujocoStages::Actuation(mjData* d) { mj_fwdActuation(m_, d); }

void MujocoStages::Smooth(mjData* d) {
  mj_fwdKinematics(m_, d);
  mj_makeM(m_, d);
  mj_factorM(m_, d);
  mj_transmission(m_, d);
  mj_fwdVelocity(m_, d);
}

bool MujocoStages::HasControlCallback() const {
  return mjcb_control && !(m_->opt.disableflags & mjDSBL_ACTUATION);
}

void MujocoStages::ControlCallback(mjData* d) {
  if (mjcb_control && !(m_->opt.disableflags & mjDSBL_ACTUATION)) mjcb_control(m_, d);
}

void MujocoStages::SensorsAndForces(mjData* d) {
  const bool energy = m_->opt.enableflags & mjENBL_ENERGY;
  mj_sensorPos(m_, d);
  if (energy) mj_energyPos(m_, d);
  mj_sensorVel(m_, d);
  if (energy) mj_energyVel(m_, d);
  Actuation(d);
  mj_fwdAcceleration(m_, d);
}

void MujocoStages::FinishStep(mjData* d, double H, const double* v_start) {
  for (int i = 0; i < m_->nv; ++i) d->qacc[i] = H > 0 ? (d->qvel[i] - v_start[i]) / H : 0;
  CopyShort(d->qacc, m_->nv, d->qacc_warmstart);  // (cenic-math §8.9, "Short copies")
  mj_mulM(m_, d, d->qfrc_constraint, d->qacc);
  for (int i = 0; i < m_->nv; ++i) d->qfrc_constraint[i] -= d->qfrc_smooth[i];
  d->flg_rnepost = 0;
  mj_sensorAcc(m_, d);
  for (int i = 0; i < m_->nplugin; ++i) {
    const mjpPlugin* p = mjp_getPluginAtSlot(m_->plugin[i]);
    if (p && p->advance) p->advance(m_, d, i);
  }
}

double MujocoStages::MaxPenetration(const mjData* d) {
  double p = 0;
  for (int i = 0; i < d->ncon; ++i)
    if (d->contact[i].exclude == 0) p = std::max(p, -d->contact[i].dist);
  return p;
}

}  // namespace mjcenic::adapter
