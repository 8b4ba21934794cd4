#include "mjcenic/adapter/mujoco_state.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <absl/strings/str_cat.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/short_arrays.h"

namespace mjcenic::adapter {

namespace {
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

struct Field {
  const char* name;
  const double* x;
  long n;
};

// The first non-finite input of d, named (CheckInputs' message): out of line
// and cold, the per-call test only sums (cenic-math §8.9.7).
[[gnu::cold, gnu::noinline]] absl::Status NonFiniteInput(const Field* fields, int n, double t) {
  for (int k = 0; k < n; ++k) {
    const Field& f = fields[k];
    for (long i = 0; i < f.n; ++i)
      if (!std::isfinite(f.x[i]))
        return ErrorStatus(absl::StatusCode::kInvalidArgument, "mjcenic: ", f.name, "[", i,
                           "] is ", f.x[i], " at time ", t, "; the state was not advanced");
  }
  return absl::OkStatus();
}
}  // namespace

Sizes ModelSizes(const mjModel* m) {
  return {static_cast<int>(m->nq), static_cast<int>(m->nv), static_cast<int>(m->na),
          static_cast<int>(m->nu)};
}
double Timestep(const mjModel* m) { return m->opt.timestep; }
bool HasPlugins(const mjModel* m) { return m->nplugin > 0; }
bool HasHistoryBuffers(const mjModel* m) { return m->nhistory > 0; }
double Time(const mjData* d) { return d->time; }
void SetTime(mjData* d, double t) { d->time = t; }

void LoadState(const mjModel* m, mjData* d, const double* q, const double* v, const double* act) {
  CopyShort(q, m->nq, d->qpos);  // (inline: cenic-math §8.9.5)
  CopyShort(v, m->nv, d->qvel);
  CopyShort(act, m->na, d->act);
}

double Extent(const mjModel* m) { return m->stat.extent; }

void SaveState(const mjModel* m, const mjData* d, double* q, double* v, double* act) {
  CopyShort(d->qpos, m->nq, q);
  CopyShort(d->qvel, m->nv, v);
  CopyShort(d->act, m->na, act);
}

void CopyVelocity(const mjModel* m, const mjData* d, double* out) {
  CopyShort(d->qvel, m->nv, out);
}

void CopyCtrl(const mjModel* m, const mjData* d, double* out) { CopyShort(d->ctrl, m->nu, out); }

bool CtrlEquals(const mjModel* m, const mjData* d, const double* ctrl) {
  return std::equal(d->ctrl, d->ctrl + m->nu, ctrl);
}

void CopyActRate(const mjModel* m, const mjData* d, double* out) {
  std::copy(d->act_dot, d->act_dot + m->na, out);
}

absl::Status CheckInputs(const mjModel* m, const mjData* d) {
  const Field fields[] = {{"qpos", d->qpos, m->nq},
                          {"qvel", d->qvel, m->nv},
                          {"act", d->act, m->na},
                          {"ctrl", d->ctrl, m->nu},
                          {"qfrc_applied", d->qfrc_applied, m->nv},
                          {"xfrc_applied", d->xfrc_applied, 6 * m->nbody},
                          {"mocap_pos", d->mocap_pos, 3 * m->nmocap},
                          {"mocap_quat", d->mocap_quat, 4 * m->nmocap}};
  constexpr int kFields = sizeof(fields) / sizeof(fields[0]);
  ZeroSum acc = {0.0, 0.0};
  for (const Field& f : fields) AddTimesZero(f.x, f.n, &acc);
  if (acc[0] + acc[1] != 0.0) [[unlikely]] {
    if (absl::Status st = NonFiniteInput(fields, kFields, d->time); !st.ok()) return st;
  }
  if (!(m->opt.timestep > 0) || !std::isfinite(m->opt.timestep)) [[unlikely]]
    return ErrorStatus(absl::StatusCode::kInvalidArgument,
                       "mjcenic: opt.timestep must be positive, got ", m->opt.timestep);
  if (!std::isfinite(d->time)) [[unlikely]]
    return absl::InvalidArgumentError("mjcenic: time is not finite");
  return absl::OkStatus();
}

bool StateFinite(const mjModel* m, const mjData* d) {
  // (x·0 summed, as CheckInputs tests its inputs: one test, no branch per entry.)
  ZeroSum acc = {0.0, 0.0};
  AddTimesZero(d->qpos, m->nq, &acc);
  AddTimesZero(d->qvel, m->nv, &acc);
  return acc[0] + acc[1] == 0.0;
}

void IntegrateActivations(const mjModel* m, const double* act, const double* act_dot, double h,
                          double* out) {
  for (int a = 0; a < m->nu && m->na; ++a) {
    const int adr = m->actuator_actadr[a], num = m->actuator_actnum[a];
    for (int j = adr; j >= 0 && j < adr + num; ++j) {
      double x = act[j];
      if (m->actuator_dyntype[a] == mjDYN_FILTEREXACT) {
        const double tau = std::max(m->actuator_dynprm[mjNDYN * a], mjMINVAL);
        x += act_dot[j] * tau * (1 - std::exp(-h / tau));
      } else {
        x += h * act_dot[j];
      }
      if (m->actuator_actlimited[a])
        x = std::clamp(x, m->actuator_actrange[2 * a], m->actuator_actrange[2 * a + 1]);
      out[j] = x;
    }
  }
}

void ExtrapolateActivations(const mjModel* m, const double* act_full, double* act_end) {
  for (int a = 0; a < m->nu; ++a) {
    const int adr = m->actuator_actadr[a], num = m->actuator_actnum[a];
    for (int j = adr; adr >= 0 && j < adr + num; ++j) {
      double x = 2 * act_end[j] - act_full[j];
      if (m->actuator_actlimited[a])
        x = std::clamp(x, m->actuator_actrange[2 * a], m->actuator_actrange[2 * a + 1]);
      act_end[j] = x;
    }
  }
}

std::string DofJointLabel(const mjModel* m, int dof) {
  const int joint = m->dof_jntid[dof];
  const std::string name = ObjectName(m, mjOBJ_JOINT, joint);
  return name.empty() ? absl::StrCat("#", joint) : absl::StrCat("'", name, "'");
}

std::string DofForces(const mjModel*, const mjData* d, int i) {
  return absl::StrCat(", qfrc_applied = ", d->qfrc_applied[i], ", qfrc_bias = ", d->qfrc_bias[i],
                      ", qfrc_passive = ", d->qfrc_passive[i],
                      ", qfrc_actuator = ", d->qfrc_actuator[i]);
}

void NormWeights(const mjModel* m, double length_scale, double* L, std::vector<double>* weight,
                 std::vector<double>* act_weight) {
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
    *L = length_scale;
  } else {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < nv; ++i)
      if (rotational[i] && m->dof_length[i] > 0) {
        sum += m->dof_length[i];
        ++n;
      }
    *L = n ? sum / n : 1.0;
  }
  weight->assign(nv, 1.0);
  for (int i = 0; i < nv; ++i) (*weight)[i] = rotational[i] ? 1.0 : 1.0 / *L;
  act_weight->assign(m->na, 1.0);
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
    for (int j = 0; adr >= 0 && j < m->actuator_actnum[a]; ++j) (*act_weight)[adr + j] = w;
  }
}

namespace {
std::string Named(const mjModel* m, int type, int id, const char* what) {
  const std::string n = ObjectName(m, type, id);
  return absl::StrCat(" (", what, " ", !n.empty() ? absl::StrCat("'", n, "'") : absl::StrCat("#", id),
                      ")");
}
}  // namespace

std::string CoordinateName(const mjModel* m, int worst, bool by_qpos) {
  if (worst <= -2) {
    const int j = -2 - worst;
    for (int a = 0; a < m->nu; ++a)
      if (m->actuator_actadr[a] >= 0 && j >= m->actuator_actadr[a] &&
          j < m->actuator_actadr[a] + m->actuator_actnum[a])
        return absl::StrCat("act ", j, Named(m, mjOBJ_ACTUATOR, a, "actuator"));
    return absl::StrCat("act ", j);
  }
  if (by_qpos) {
    if (worst < 0 || worst >= m->nq) return "none";
    int jnt = 0;
    for (int j = 0; j < m->njnt; ++j)
      if (m->jnt_qposadr[j] <= worst) jnt = j;
    return absl::StrCat("qpos ", worst, Named(m, mjOBJ_JOINT, jnt, "joint"));
  }
  if (worst < 0 || worst >= m->nv) return "none";
  return absl::StrCat("dof ", worst, Named(m, mjOBJ_JOINT, m->dof_jntid[worst], "joint"));
}

}  // namespace mjcenic::adapter
