#include "mjcenic/adapter/mujoco_stages.h"
#include "mjcenic/adapter/callback_escape.h"
#include "mjcenic/icf/short_arrays.h"

#include <algorithm>

namespace mjcenic::adapter {

namespace {
thread_local CallbackEscape* tls_escape = nullptr;
}  // namespace

CallbackEscape* ActiveCallbackEscape() { return tls_escape; }

// Whether a MuJoCo stage can run a user callback (the only frames an error
// must not unwind through; see callback_escape.h).
static bool AnyCallback() {
  return mjcb_control || mjcb_passive || mjcb_contactfilter || mjcb_sensor || mjcb_act_dyn ||
         mjcb_act_gain || mjcb_act_bias;
}

void RunEscapable(void (*f)(const mjModel*, mjData*), const mjModel* m, mjData* d) {
  if (!AnyCallback()) {
    f(m, d);
    return;
  }
  CallbackEscape e;  // (message is written only by a jump)
  e.outer = tls_escape;
  if (setjmp(e.env) == 0) {
    tls_escape = &e;
    f(m, d);
    tls_escape = e.outer;
    return;
  }
  // Jumped here from an error handler: raise the error again from this frame.
  tls_escape = e.outer;
  mju_error("%s", e.message);
}

MujocoStages::MujocoStages(const mjModel* m, double speculative_margin)
    : m_(m), margin_(speculative_margin) {
  if (!(speculative_margin > 0)) return;
  staging_ = mj_copyModel(nullptr, m);
  Widen();
}

void MujocoStages::Widen() {
  for (int g = 0; g < m_->ngeom; ++g) staging_->geom_gap[g] = m_->geom_gap[g] + 0.5 * margin_;
  for (int p = 0; p < m_->npair; ++p) staging_->pair_gap[p] = m_->pair_gap[p] + margin_;
  for (int b = 0; b < m_->nbody; ++b)
    staging_->body_margin[b] = m_->body_margin[b] + 0.5 * margin_;
}

void MujocoStages::ModelEdited() {
  if (!staging_) return;
  mj_copyModel(staging_, m_);
  Widen();
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
  // (Callbacks: contact filter, passive forces; callback_escape.h.)
  RunEscapable(
      [](const mjModel* m, mjData* d) {
        mj_fwdPosition(m, d);
        mj_fwdVelocity(m, d);
      },
      StageModel(), d);
}

void MujocoStages::Actuation(mjData* d) { RunEscapable(mj_fwdActuation, m_, d); }

void MujocoStages::Smooth(mjData* d) {
  RunEscapable(
      [](const mjModel* m, mjData* d) {
        mj_fwdKinematics(m, d);
        mj_makeM(m, d);
        mj_factorM(m, d);
        mj_transmission(m, d);
        mj_fwdVelocity(m, d);
      },
      m_, d);
}

bool MujocoStages::HasControlCallback() const {
  return mjcb_control && !(m_->opt.disableflags & mjDSBL_ACTUATION);
}

void MujocoStages::ControlCallback(mjData* d) {
  if (mjcb_control && !(m_->opt.disableflags & mjDSBL_ACTUATION)) RunEscapable(mjcb_control, m_, d);
}

void MujocoStages::SensorsAndForces(mjData* d) {
  RunEscapable(
      [](const mjModel* m, mjData* d) {
        const bool energy = m->opt.enableflags & mjENBL_ENERGY;
        mj_sensorPos(m, d);
        if (energy) mj_energyPos(m, d);
        mj_sensorVel(m, d);
        if (energy) mj_energyVel(m, d);
        mj_fwdActuation(m, d);
        mj_fwdAcceleration(m, d);
      },
      m_, d);
}

void MujocoStages::FinishStep(mjData* d, double H, const double* v_start) {
  for (int i = 0; i < m_->nv; ++i) d->qacc[i] = H > 0 ? (d->qvel[i] - v_start[i]) / H : 0;
  CopyShort(d->qacc, m_->nv, d->qacc_warmstart);  // (cenic-math §8.9.5)
  mj_mulM(m_, d, d->qfrc_constraint, d->qacc);
  for (int i = 0; i < m_->nv; ++i) d->qfrc_constraint[i] -= d->qfrc_smooth[i];
  d->flg_rnepost = 0;
  RunEscapable(mj_sensorAcc, m_, d);
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
