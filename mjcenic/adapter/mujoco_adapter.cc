#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/short_arrays.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>

#include "mjcenic/adapter/contact_parameters.h"

namespace mjcenic::adapter {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string Name(const mjModel* m, int type, int id, const char* what) {
  const std::string n = ObjectName(m, type, id);
  if (!n.empty()) return "'" + n + "'";
  return std::string(what) + " #" + std::to_string(id);
}

// One warning per feature, naming up to five elements.
void Warn(std::vector<std::string>* out, const std::string& feature,
          const std::vector<std::string>& elements) {
  if (elements.empty()) return;
  std::string s = feature + ": ";
  for (size_t i = 0; i < elements.size() && i < 5; ++i) s += (i ? ", " : "") + elements[i];
  if (elements.size() > 5) s += " and " + std::to_string(elements.size() - 5) + " more";
  out->push_back(s);
}

bool Disabled(const mjModel* m, int flag) { return m->opt.disableflags & flag; }

// Time scale over which MuJoCo's soft constraint with this solref pulls a
// violation back: the time constant (refsafe ≥ 2·timestep), or 2/B for a
// direct solref. Large violations of near-rigid rows recover over it.
[[gnu::always_inline]] inline double RecoveryTime(const mjModel* m, const double* solref) {
  double tau;
  if (solref[0] > 0) {
    tau = solref[0];
  } else if (solref[1] < 0) {
    tau = 2.0 / -solref[1];
  } else {
    tau = 0.02;
  }
  if (!(m->opt.disableflags & mjDSBL_REFSAFE)) tau = std::max(tau, 2 * m->opt.timestep);
  return tau;
}

}  // namespace

std::string ObjectName(const mjModel* m, int type, int id) {
  const char* n = mj_id2name(m, type, id);
  return n ? n : "";
}

MujocoAdapter::MujocoAdapter(const mjModel* m, const ContactOptions& contact)
    : contact_(contact) {
  ScanModel(m);
}

void MujocoAdapter::ScanModel(const mjModel* m) {
  const int nv = static_cast<int>(m->nv);
  // Cliques = kinematic trees (dofs of a tree are contiguous).
  clique_of_dof_.assign(nv, 0);
  clique_start_.clear();
  clique_start_.push_back(0);
  for (int i = 0; i < nv; ++i) {
    if (i > 0 && m->dof_treeid[i] != m->dof_treeid[i - 1]) clique_start_.push_back(i);
    clique_of_dof_[i] = static_cast<int>(clique_start_.size()) - 1;
  }
  clique_start_.push_back(nv);
  if (nv == 0) clique_start_ = {0, 0};

  // Implicit joint damping and stiffness (mapping §3.6).
  damping_.assign(nv, 0);
  stiffness_.assign(nv, 0);
  for (int i = 0; i < nv; ++i) damping_[i] = m->dof_damping[i];
  for (int a = 0; a < m->nu && m->nu == m->nactuator; ++a) {
    const int tt = m->actuator_trntype[a];
    if ((tt == mjTRN_JOINT || tt == mjTRN_JOINTINPARENT) && m->actuator_damping[a] > 0) {
      const int j = m->actuator_trnid[2 * a];
      if (m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE) {
        const double g = m->actuator_gear[6 * a];
        damping_[m->jnt_dofadr[j]] += m->actuator_damping[a] * g * g;
      }
    }
  }
  limited_joints_.clear();
  for (int j = 0; j < m->njnt; ++j) {
    const int t = m->jnt_type[j];
    if (t == mjJNT_HINGE || t == mjJNT_SLIDE) {
      stiffness_[m->jnt_dofadr[j]] = m->jnt_stiffness[j];
      if (m->jnt_limited[j]) limited_joints_.push_back(j);
    }
  }

  ScanBodies(m);
  ScanStaticFriction(m);

  // Features mjcenic approximates or ignores (one warning each, with names).
  std::vector<std::string> w_flex;
  for (int f = 0; f < m->nflex; ++f) w_flex.push_back(Name(m, mjOBJ_FLEX, f, "flex"));
  Warn(&warnings_, "flex objects are not simulated by mjcenic", w_flex);
  std::vector<std::string> w_surfacevel;
  for (int g = 0; g < m->ngeom; ++g)
    for (int k = 0; k < 6; ++k)
      if (m->geom_surfacevel[6 * g + k] != 0) {
        w_surfacevel.push_back(Name(m, mjOBJ_GEOM, g, "geom"));
        break;
      }
  Warn(&warnings_, "surface velocity (geom surfacevel) is ignored: contacts see the geom's own motion",
       w_surfacevel);
  ScanActuators(m);
  if (m->opt.enableflags & mjENBL_SLEEP)
    warnings_.push_back("sleeping (enableflags sleep) is ignored: every body is simulated");
  ScanReplacedSettings(m);
}

void MujocoAdapter::ScanBodies(const mjModel* m) {
  // The dofs moving each body (its weld group's chain to the root, ascending):
  // the model's tree, which no run-time edit changes (cenic-math §8.9).
  chain_adr_.assign(m->nbody + 1, 0);
  chain_dofs_.clear();
  for (int b = 0; b < m->nbody; ++b) {
    chain_adr_[b] = static_cast<int>(chain_dofs_.size());
    const int weld = m->body_weldid[b];
    if (weld == 0 || m->body_dofnum[weld] == 0) continue;
    for (int j = m->body_dofadr[weld] + m->body_dofnum[weld] - 1; j >= 0; j = m->dof_parentid[j])
      chain_dofs_.push_back(j);
    std::reverse(chain_dofs_.begin() + chain_adr_[b], chain_dofs_.end());
  }
  chain_adr_[m->nbody] = static_cast<int>(chain_dofs_.size());

  // Body masses for the friction regularization (cenic-math §4.6).
  inv_mass_.assign(m->nbody, 0);
  for (int b = 1; b < m->nbody; ++b) {
    if (m->body_weldid[b] == 0) continue;  // anchored
    double mass = m->body_mass[b];
    if (!(mass > 0)) mass = m->body_subtreemass[m->body_weldid[b]];
    inv_mass_[b] = mass > 0 ? 1.0 / mass : 0.0;
  }
}

void MujocoAdapter::ScanStaticFriction(const mjModel* m) {
  // Per-geom static friction from <custom><numeric name="mjcenic:mu_static:GEOM">.
  geom_mu_static_.assign(m->ngeom, -1.0);
  for (int n = 0; n < m->nnumeric; ++n) {
    const char* name = mj_id2name(m, mjOBJ_NUMERIC, n);
    const std::string prefix = "mjcenic:mu_static:";
    if (!name || std::string(name).rfind(prefix, 0) != 0) continue;
    const int g = mj_name2id(m, mjOBJ_GEOM, name + prefix.size());
    if (g < 0 || m->numeric_size[n] < 1 || !(m->numeric_data[m->numeric_adr[n]] >= 0)) {
      warnings_.push_back(std::string("custom numeric '") + name +
                          "' ignored: needs an existing geom name and one value >= 0");
      continue;
    }
    geom_mu_static_[g] = m->numeric_data[m->numeric_adr[n]];
  }
}

void MujocoAdapter::ScanReplacedSettings(const mjModel* m) {
  // Settings of mj_step's integrator and constraint solver, which mjcenic
  // replaces by design (error-controlled implicit steps, docs/cenic-math.md;
  // one convex ICF solve per step instead of PGS/CG/Newton plus noslip).
  // Only values other than MuJoCo's defaults are listed.
  std::vector<std::string> replaced;
  const char* integrators[] = {"Euler", "RK4", "implicit", "implicitfast"};
  if (m->opt.integrator != mjINT_EULER && m->opt.integrator >= 0 && m->opt.integrator < 4)
    replaced.push_back(std::string("integrator=\"") + integrators[m->opt.integrator] + "\"");
  const char* solvers[] = {"PGS", "CG", "Newton"};
  if (m->opt.solver != mjSOL_NEWTON && m->opt.solver >= 0 && m->opt.solver < 3)
    replaced.push_back(std::string("solver=\"") + solvers[m->opt.solver] + "\"");
  if (m->opt.noslip_iterations > 0)
    replaced.push_back("noslip_iterations=" + std::to_string(m->opt.noslip_iterations));
  Warn(&warnings_,
       std::string(kReplacedSettingsWarning) +
           " (mjcenic integrates with its own error-controlled implicit steps and solves "
           "contacts with one convex ICF problem per step)",
       replaced);
}

void MujocoAdapter::ScanActuators(const mjModel* m) {
  // Actuators: clamped affine feedback where the law allows it (mapping §4.4).
  const int na = static_cast<int>(m->nactuator);
  implicit_actuator_.assign(na, 0);
  act_lo_.assign(na, -kInf);
  act_hi_.assign(na, kInf);
  std::vector<int> per_joint(m->njnt, 0);
  std::vector<std::string> w_explicit, w_multi_clamp, w_tendon_clamp, w_actearly, w_gravcomp;
  for (int a = 0; a < na; ++a) {
    const int tt = m->actuator_trntype[a];
    if ((tt == mjTRN_JOINT || tt == mjTRN_JOINTINPARENT) && m->actuator_trnid[2 * a] >= 0)
      ++per_joint[m->actuator_trnid[2 * a]];
  }
  for (int a = 0; a < na; ++a) {
    const bool classic = m->actuator_ctrlnum[a] == 1 && m->actuator_outnum[a] == 1;
    const int gt = m->actuator_gaintype[a], bt = m->actuator_biastype[a];
    const bool affine = (gt == mjGAIN_FIXED || gt == mjGAIN_AFFINE) &&
                        (bt == mjBIAS_NONE || bt == mjBIAS_AFFINE) && m->actuator_plugin[a] < 0;
    implicit_actuator_[a] = classic && affine;
    if (!implicit_actuator_[a]) w_explicit.push_back(Name(m, mjOBJ_ACTUATOR, a, "actuator"));
    if (m->actuator_actearly[a]) w_actearly.push_back(Name(m, mjOBJ_ACTUATOR, a, "actuator"));
    const int out = m->actuator_outadr[a];
    if (m->actuator_forcelimited[out]) {
      act_lo_[a] = m->actuator_forcerange[2 * out];
      act_hi_[a] = m->actuator_forcerange[2 * out + 1];
    }
    const int tt = m->actuator_trntype[a];
    const int id = m->actuator_trnid[2 * a];
    if ((tt == mjTRN_JOINT || tt == mjTRN_JOINTINPARENT) && id >= 0 && m->jnt_actfrclimited[id]) {
      if (per_joint[id] == 1) {
        const double g = m->actuator_gear[6 * out];
        double lo = m->jnt_actfrcrange[2 * id] / g, hi = m->jnt_actfrcrange[2 * id + 1] / g;
        if (g < 0) std::swap(lo, hi);
        act_lo_[a] = std::max(act_lo_[a], lo);
        act_hi_[a] = std::min(act_hi_[a], hi);
      } else {
        w_multi_clamp.push_back(Name(m, mjOBJ_JOINT, id, "joint"));
      }
    }
    if (tt == mjTRN_TENDON && id >= 0 && m->tendon_actfrclimited[id])
      w_tendon_clamp.push_back(Name(m, mjOBJ_TENDON, id, "tendon"));
  }
  for (int j = 0; j < m->njnt; ++j)
    if (m->jnt_actgravcomp[j]) w_gravcomp.push_back(Name(m, mjOBJ_JOINT, j, "joint"));

  Warn(&warnings_,
       "actuator law is not affine in (length, velocity): its force is applied explicitly at "
       "the start of each solve",
       w_explicit);
  Warn(&warnings_, "actuatorfrcrange with several actuators on the joint is not enforced",
       w_multi_clamp);
  Warn(&warnings_, "tendon actuatorfrcrange is not enforced", w_tendon_clamp);
  Warn(&warnings_, "actearly is ignored (force uses the activation at the step start)",
       w_actearly);
  Warn(&warnings_, "gravity compensation through actuators is not supported", w_gravcomp);
}

void MujocoAdapter::Build(const mjModel* m, mjData* d, double h,
                          const icf::IcfParameters& params, const DofFeedback* feedback,
                          icf::IcfModel* model, BuildRecords* records, BuildInfo* info) {
  const int nv = static_cast<int>(m->nv);
  SetMassAndPassive(m, d, params, model);
  AddExplicitForces(m, d, feedback, model);
  info->ncontact = 0;
  info->max_penetration = 0;
  records->rows.clear();
  records->contacts.clear();
  limit_rows_ = gain_rows_ = coupling_rows_ = friction_rows_ = 0;
  size_t limit_records = 0;
  // (AddTendonSprings, AddEfcRows and AddContacts loop over tendons, efc
  // rows and contacts and do nothing else: not called without them.)
  if (m->ntendon > 0) AddTendonSprings(m, d, model);
  if (feedback) {
    // A linearized user controller stands in for actuators and qfrc_applied.
    const double inf = std::numeric_limits<double>::infinity();
    for (int i = 0; i < nv; ++i)
      model->gains.PutSingle(gain_rows_++, i, 1.0,
                             feedback->tau[i] + feedback->kv[i] * d->qvel[i], feedback->kq[i],
                             feedback->kv[i], -inf, inf);
  } else if (m->nactuator > 0 && !Disabled(m, mjDSBL_ACTUATION)) {
    AddActuators(m, d, model);
  }
  model->gains.Truncate(gain_rows_);  // the previous build's rows past this one's
  if (!Disabled(m, mjDSBL_CONSTRAINT)) {
    if ((!limited_joints_.empty() || m->ntendon > 0) && !Disabled(m, mjDSBL_LIMIT))
      AddLimits(m, d, model, &records->rows);
    limit_records = records->rows.size();
    if (d->nefc > 0) AddEfcRows(m, d, model, &records->rows);
    if (d->ncon > 0 && phase_timers_) {
      const auto t0 = std::chrono::steady_clock::now();
      AddContacts(m, d, params, model, &records->contacts, info);
      info->time_contacts =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else if (d->ncon > 0) {
      AddContacts(m, d, params, model, &records->contacts, info);
    }
  }
  model->limits.Truncate(limit_rows_);
  model->couplings.Truncate(coupling_rows_);
  model->dry_friction.Truncate(friction_rows_);
  // Joint then tendon limits, by id: sorted; rows of mj_makeConstraint may not be.
  if (records->rows.size() > limit_records) SortRecords(limit_records, &records->rows);
  model->Finalize(h);
}

void MujocoAdapter::SetMassAndPassive(const mjModel* m, const mjData* d,
                                      const icf::IcfParameters& params, icf::IcfModel* model) {
  const int nv = static_cast<int>(m->nv);
  // (A model Reset to nv holds its cliques, at least {0, nv}, also at nv = 0:
  // a scene of static geoms keeps its empty problem.)
  const bool pools_only = model->nv == nv && !model->clique_start.empty();
  if (!pools_only) {
    model->Reset(nv);
    model->clique_start = clique_start_;
    model->clique_of_dof = clique_of_dof_;
    model->M_rowadr.assign(m->M_rowadr, m->M_rowadr + nv);
    model->M_rownnz.assign(m->M_rownnz, m->M_rownnz + nv);
    model->M_colind.assign(m->M_colind, m->M_colind + m->nC);
  } else {
    // The limit, gain, coupling and dry-friction pools are rebuilt in place:
    // rows a new build makes again are refilled (Put, PutSingle), the rest
    // cut (cenic-math §8.9).
    model->contacts.Clear();
    model->contact_torques.Clear();
  }
  model->params = params;
  if (static_cast<int>(model->M.size()) != m->nC) model->M.resize(m->nC);
  CopyShort(d->M, m->nC, model->M.data());
  for (int i = 0; i < nv; ++i) model->M_diag[i] = d->M[m->M_rowadr[i] + m->M_rownnz[i] - 1];
  const bool no_damper = Disabled(m, mjDSBL_DAMPER), no_spring = Disabled(m, mjDSBL_SPRING);
  // D and K are the adapter's (model-only) damping and stiffness under the
  // two flags: refilled only when the flags differ from the last fill or the
  // model was reset (cenic-math §8.9).
  const int damper_spring = (no_damper ? 1 : 0) | (no_spring ? 2 : 0);
  if (model->damper_spring_source != damper_spring) {
    for (int i = 0; i < nv; ++i) {
      model->D[i] = no_damper ? 0 : damping_[i];
      model->K[i] = no_spring ? 0 : stiffness_[i];
    }
    model->damper_spring_source = damper_spring;
  }
  CopyShort(d->qvel, nv, model->v0.data());  // (inline: cenic-math §8.9.5)
}

void MujocoAdapter::AddExplicitForces(const mjModel* m, mjData* d, const DofFeedback* feedback,
                                      icf::IcfModel* model) {
  const int nv = static_cast<int>(m->nv);
  // Explicit forces f = passive − bias + applied + Σ Jᵀ xfrc (+ explicit actuators).
  for (int i = 0; i < nv; ++i)
    model->f[i] = d->qfrc_passive[i] - d->qfrc_bias[i] + (feedback ? 0.0 : d->qfrc_applied[i]);
  // A double tests false only at ±0, whose bits are 0 but for the sign: one
  // OR of all the bodies' wrench bits (a loop GCC vectorizes) finds the
  // usual case of no applied wrench without a test per entry (cenic-math
  // §8.9); the per-body tests below are the usual ones.
  std::uint64_t wrench_bits = 0;
  for (long k = 6; k < 6L * m->nbody; ++k) {
    std::uint64_t bits;
    std::memcpy(&bits, d->xfrc_applied + k, sizeof bits);
    wrench_bits |= bits;
  }
  if (wrench_bits << 1 != 0) {
    for (int b = 1; b < m->nbody; ++b) {
      const double* x = d->xfrc_applied + 6 * b;
      if (x[0] || x[1] || x[2] || x[3] || x[4] || x[5])
        mj_applyFT(m, d, x, x + 3, d->xipos + 3 * b, b, model->f.data());
    }
  }
}

void MujocoAdapter::SortRecords(size_t limit_records, std::vector<RowRecord>* records) {
  // Both runs are usually sorted on their own (MuJoCo orders its rows by type,
  // then object): then one merge, not a sort; the keys are distinct, so the
  // result is the sorted sequence either way (cenic-math §8.9).
  // AddLimits' run [0, limit_records) is sorted as made (joints, then tendons,
  // by id, lower side first). Without ball-joint limits every row of
  // AddEfcRows (equality, friction loss) sorts before it: a rotation.
  std::vector<RowRecord>& rows = *records;
  const auto mid = rows.begin() + static_cast<std::ptrdiff_t>(limit_records);
  if (!std::is_sorted(mid, rows.end())) {
    std::sort(rows.begin(), rows.end());
  } else if (limit_records > 0 && *mid < *(mid - 1)) {
    if (rows.back() < rows.front()) {
      std::rotate(rows.begin(), mid, rows.end());
    } else {
      merged_rows_.resize(rows.size());
      std::merge(rows.begin(), mid, mid, rows.end(), merged_rows_.begin());
      std::copy(merged_rows_.begin(), merged_rows_.end(), rows.begin());
    }
  }
}

void MujocoAdapter::AddTendonSprings(const mjModel* m, const mjData* d, icf::IcfModel* model) {
  // Tendon springs and dampers as implicit gain rows along the tendon
  // Jacobian: f(v) = −k (x0 + h J v) − b J v (mapping §3.6). MuJoCo put their
  // linear parts at (q0, v0) into qfrc_passive; remove those from f.
  const bool spring = !Disabled(m, mjDSBL_SPRING), damper = !Disabled(m, mjDSBL_DAMPER);
  for (int t = 0; t < m->ntendon; ++t) {
    const double k = spring ? m->tendon_stiffness[t] : 0.0;
    const double b = damper ? m->tendon_damping[t] : 0.0;
    if (!(k > 0) && !(b > 0)) continue;
    const int nnz = m->ten_J_rownnz[t], adr = m->ten_J_rowadr[t];
    if (nnz == 0) continue;
    const double L = d->ten_length[t], lo = m->tendon_lengthspring[2 * t],
                 hi = m->tendon_lengthspring[2 * t + 1];
    const double x = L > hi ? L - hi : (L < lo ? L - lo : 0.0);
    const double f_lin = -k * x - b * d->ten_velocity[t];
    for (int q = 0; q < nnz; ++q)
      model->f[m->ten_J_colind[adr + q]] -= d->ten_J[adr + q] * f_lin;
    dofs_.assign(m->ten_J_colind + adr, m->ten_J_colind + adr + nnz);
    const double inf = std::numeric_limits<double>::infinity();
    const int c = model->gains.Put(gain_rows_++, dofs_, -k * x, x != 0 ? k : 0.0, b, -inf, inf);
    std::copy(d->ten_J + adr, d->ten_J + adr + nnz, model->gains.rows.J(c));
  }
}

void MujocoAdapter::AddActuators(const mjModel* m, const mjData* d, icf::IcfModel* model) {
  const bool clampctrl = !Disabled(m, mjDSBL_CLAMPCTRL);
  // (No disabled group, the usual case: no per-actuator group test; cenic-math
  // §8.9.)
  const int disabled_groups = m->opt.disableactuator;
  for (int a = 0; a < m->nactuator; ++a) {
    if (disabled_groups && m->actuator_group[a] >= 0 && m->actuator_group[a] < 31 &&
        (disabled_groups & (1 << m->actuator_group[a])))
      continue;
    const int out = m->actuator_outadr[a];
    const int nnz = d->moment_rownnz[out], adr = d->moment_rowadr[out];
    if (nnz == 0) continue;
    if (!implicit_actuator_[a]) {  // explicit: MuJoCo's force at the start state
      for (int k = 0; k < nnz; ++k)
        model->f[d->moment_colind[adr + k]] += d->actuator_moment[adr + k] * d->actuator_force[out];
      continue;
    }
    double input;
    if (m->actuator_dyntype[a] == mjDYN_NONE) {
      input = d->ctrl[m->actuator_ctrladr[a]];
      if (clampctrl && m->actuator_ctrllimited[a])
        input = std::clamp(input, m->actuator_ctrlrange[2 * a], m->actuator_ctrlrange[2 * a + 1]);
    } else {
      input = d->act[m->actuator_actadr[a] + m->actuator_actnum[a] - 1];
    }
    const double* g = m->actuator_gainprm + mjNGAIN * a;
    const double* b = m->actuator_biasprm + mjNBIAS * a;
    const bool affine_gain = m->actuator_gaintype[a] == mjGAIN_AFFINE;
    const bool affine_bias = m->actuator_biastype[a] == mjBIAS_AFFINE;
    const double g1 = affine_gain ? g[1] : 0, g2 = affine_gain ? g[2] : 0;
    const double b0 = affine_bias ? b[0] : 0, b1 = affine_bias ? b[1] : 0,
                 b2 = affine_bias ? b[2] : 0;
    const double L0 = d->actuator_length[out];
    // f(v) = c − κ (m·v), κ = h kq + kv  (mapping §4.4)
    const double c = (g[0] + g1 * L0) * input + b0 + b1 * L0;
    const double kq = -(g1 * input + b1), kv = -(g2 * input + b2);
    if (nnz == 1) {  // a joint actuator: nothing to sort
      model->gains.PutSingle(gain_rows_++, d->moment_colind[adr], d->actuator_moment[adr], c, kq,
                             kv, act_lo_[a], act_hi_[a]);
      continue;
    }
    // Sorted dofs of the moment row: MuJoCo's own order when it is ascending
    // (the usual case: no permutation, no sort; cenic-math §8.9).
    const int* cols = d->moment_colind + adr;
    bool ascending = true;
    for (int k = 1; k < nnz && ascending; ++k) ascending = cols[k - 1] < cols[k];
    if (ascending) {
      const int i = model->gains.Put(gain_rows_++, std::span<const int>(cols, nnz), c, kq, kv,
                                     act_lo_[a], act_hi_[a]);
      CopyShort(d->actuator_moment + adr, nnz, model->gains.rows.J(i));  // (a few entries)
      continue;
    }
    perm_.resize(nnz);
    for (int k = 0; k < nnz; ++k) perm_[k] = k;
    std::sort(perm_.begin(), perm_.end(), [&](int x, int y) {
      return d->moment_colind[adr + x] < d->moment_colind[adr + y];
    });
    dofs_.resize(nnz);
    for (int k = 0; k < nnz; ++k) dofs_[k] = d->moment_colind[adr + perm_[k]];
    const int i = model->gains.Put(gain_rows_++, dofs_, c, kq, kv, act_lo_[a], act_hi_[a]);
    double* J = model->gains.rows.J(i);
    for (int k = 0; k < nnz; ++k) J[k] = d->actuator_moment[adr + perm_[k]];
  }
}

void MujocoAdapter::AddLimits(const mjModel* m, const mjData* d, icf::IcfModel* model,
                              std::vector<RowRecord>* records) {
  // Hinge/slide limits, always present (the potential vanishes away from
  // the limit), Delassus estimate w = 1/M_ii (cenic-math §5).
  for (int j : limited_joints_) {
    const int dof = m->jnt_dofadr[j];
    const double q = d->qpos[m->jnt_qposadr[j]], margin = m->jnt_margin[j];
    const double w = 1.0 / model->M_diag[dof];
    const double tau_r = RecoveryTime(m, m->jnt_solref + 2 * j);
    int c = model->limits.PutSingle(limit_rows_++, dof, 1.0, q - m->jnt_range[2 * j] - margin,
                                    w, tau_r);
    records->push_back({mjCNSTR_LIMIT_JOINT, j, 0, c});
    c = model->limits.PutSingle(limit_rows_++, dof, -1.0, m->jnt_range[2 * j + 1] - q - margin,
                                w, tau_r);
    records->push_back({mjCNSTR_LIMIT_JOINT, j, 1, c});
  }
  // Tendon limits from ten_length and the tendon Jacobian.
  for (int t = 0; t < m->ntendon; ++t) {
    if (!m->tendon_limited[t]) continue;
    const int nnz = m->ten_J_rownnz[t], adr = m->ten_J_rowadr[t];
    if (nnz == 0) continue;
    dofs_.assign(m->ten_J_colind + adr, m->ten_J_colind + adr + nnz);
    const double L = d->ten_length[t], margin = m->tendon_margin[t];
    const double w = m->tendon_invweight0[t] > 0 ? m->tendon_invweight0[t] : 1.0;
    for (int side = 0; side < 2; ++side) {
      const double g0 = side == 0 ? L - m->tendon_range[2 * t] - margin
                                  : m->tendon_range[2 * t + 1] - L - margin;
      const int c = model->limits.Put(limit_rows_++, dofs_, g0, w,
                                      RecoveryTime(m, m->tendon_solref_lim + 2 * t));
      records->push_back({mjCNSTR_LIMIT_TENDON, t, side, c});
      double* J = model->limits.rows.J(c);
      for (int k = 0; k < nnz; ++k) J[k] = (side == 0 ? 1 : -1) * d->ten_J[adr + k];
    }
  }
}

double MujocoAdapter::FrictionLossSpeed(const mjModel* m, const mjData* d, int row) {
  // MuJoCo's friction-loss row below saturation is linear damping with slope
  // B d₀/((1 − d₀) A) (mapping §6.2): the matching regularization speed is
  // v_s = F (1 − d₀) A / (d₀ B).
  const int id = d->efc_id[row];
  const bool dof = d->efc_type[row] == mjCNSTR_FRICTION_DOF;
  const double* solref = dof ? m->dof_solref + mjNREF * id : m->tendon_solref_fri + mjNREF * id;
  const double* solimp = dof ? m->dof_solimp + mjNIMP * id : m->tendon_solimp_fri + mjNIMP * id;
  // d₀ and B are functions of (solref, solimp, timestep, refsafe) alone: a
  // row whose inputs are the last row's bits (the usual default solref and
  // solimp of every dof) takes its d₀ and B (cenic-math §8.9).
  FrictionMemo& f = friction_memo_;
  const bool refsafe = !Disabled(m, mjDSBL_REFSAFE);
  // (Compared as numbers: inputs that differ only in the sign of a zero give
  // the same d₀, and a B of ±0 makes the speed 0 either way; NaN never matches.)
  bool same = f.valid && f.refsafe == refsafe && f.key[mjNREF + mjNIMP] == m->opt.timestep;
  for (int k = 0; k < mjNREF && same; ++k) same = f.key[k] == solref[k];
  for (int k = 0; k < mjNIMP && same; ++k) same = f.key[mjNREF + k] == solimp[k];
  if (!same) [[unlikely]]
    f.Fill(solref, solimp, m->opt.timestep, refsafe);
  const double d0 = f.d0, B = f.B;
  const double A = d->efc_diagA[row];
  if (!(B > 0) || !(A > 0)) return 0.0;
  return d->efc_frictionloss[row] * (1 - d0) * A / (d0 * B);
}

void MujocoAdapter::FrictionMemo::Fill(const double* solref, const double* solimp,
                                        double timestep, bool refsafe_) {
  d0 = Impedance(solimp, 0.0);
  double K;
  ReferenceGains(solref, std::clamp(solimp[1], 1e-4, 0.9999), timestep, refsafe_, &K, &B);
  std::copy(solref, solref + mjNREF, key);
  std::copy(solimp, solimp + mjNIMP, key + mjNREF);
  key[mjNREF + mjNIMP] = timestep;
  refsafe = refsafe_;
  valid = true;
}

void MujocoAdapter::EfcRow(const mjModel* m, const mjData* d, int row, bool sparse) {
  dofs_.clear();
  row_.clear();
  if (d->efc_type[row] == mjCNSTR_FRICTION_DOF) {
    // MuJoCo's friction-loss row of dof i is the unit row e_i: read at i, not
    // scanned over nv (cenic-math §8.9).
    const int i = d->efc_id[row];
    const int adr = sparse ? d->efc_J_rowadr[row] : 0;
    const bool unit = sparse ? d->efc_J_rownnz[row] == 1 && d->efc_J_colind[adr] == i
                             : d->efc_J[static_cast<long>(row) * m->nv + i] != 0;
    if (unit) {
      dofs_.push_back(i);
      row_.push_back(sparse ? d->efc_J[adr] : d->efc_J[static_cast<long>(row) * m->nv + i]);
      return;
    }
  }
  if (sparse) {
    const int adr = d->efc_J_rowadr[row], nnz = d->efc_J_rownnz[row];
    for (int k = 0; k < nnz; ++k) {
      dofs_.push_back(d->efc_J_colind[adr + k]);
      row_.push_back(d->efc_J[adr + k]);
    }
  } else {
    const double* J = d->efc_J + static_cast<long>(row) * m->nv;
    for (int i = 0; i < m->nv; ++i)
      if (J[i] != 0) {
        dofs_.push_back(i);
        row_.push_back(J[i]);
      }
  }
}

int EfcRowSub(const mjModel* m, const mjData* d, int row, const RowRecord& prev_row) {
  const int type = d->efc_type[row], id = d->efc_id[row];
  if (type == mjCNSTR_EQUALITY)
    return prev_row.type == type && prev_row.id == id ? prev_row.sub + 1 : 0;
  // First nonzero of the row (sparse or dense efc_J).
  auto first = [&](int* col) {
    if (mj_isSparse(m)) {
      for (int k = 0; k < d->efc_J_rownnz[row]; ++k) {
        const double v = d->efc_J[d->efc_J_rowadr[row] + k];
        if (v != 0) return *col = d->efc_J_colind[d->efc_J_rowadr[row] + k], v;
      }
    } else {
      const double* J = d->efc_J + static_cast<long>(row) * m->nv;
      for (int i = 0; i < m->nv; ++i)
        if (J[i] != 0) return *col = i, J[i];
    }
    return *col = -1, 0.0;
  };
  int col;
  if (type == mjCNSTR_LIMIT_JOINT) {
    if (m->jnt_type[id] == mjJNT_BALL) return 0;
    // A hinge or slide limit row has one nonzero, ±1 at the joint's dof: a
    // dense row is read there instead of scanned (cenic-math §8.9).
    if (!mj_isSparse(m)) {
      const double v = d->efc_J[static_cast<long>(row) * m->nv + m->jnt_dofadr[id]];
      if (v != 0) return v > 0 ? 0 : 1;
    }
    return first(&col) > 0 ? 0 : 1;  // lower limit: +1, upper: −1
  }
  if (type == mjCNSTR_LIMIT_TENDON) {
    const double v = first(&col);
    // Upper limit rows are −ten_J: compare with the tendon's own entry.
    const int adr = m->ten_J_rowadr[id];
    for (int k = 0; k < m->ten_J_rownnz[id]; ++k)
      if (m->ten_J_colind[adr + k] == col) return (v > 0) == (d->ten_J[adr + k] > 0) ? 0 : 1;
    return 0;
  }
  return 0;
}

void MujocoAdapter::AddEfcRows(const mjModel* m, const mjData* d, icf::IcfModel* model,
                               std::vector<RowRecord>* records) {
  // Equalities (near-rigid couplings, cenic-math §7), friction loss, and ball
  // joint limits, from the rows of mj_makeConstraint.
  RowRecord prev{-1, -1, -1, -1};
  const bool sparse = mj_isSparse(m);
  for (int row = 0; row < d->nefc; ++row) {
    const int type = d->efc_type[row];
    const bool ball_limit = type == mjCNSTR_LIMIT_JOINT && m->jnt_type[d->efc_id[row]] == mjJNT_BALL;
    if (type != mjCNSTR_EQUALITY && type != mjCNSTR_FRICTION_DOF &&
        type != mjCNSTR_FRICTION_TENDON && !ball_limit)
      continue;
    const RowRecord here{type, d->efc_id[row], EfcRowSub(m, d, row, prev), -1};
    prev = here;
    EfcRow(m, d, row, sparse);
    if (dofs_.empty()) continue;
    int c;
    double* J;
    if (type == mjCNSTR_EQUALITY) {
      c = model->couplings.Put(coupling_rows_++, dofs_, d->efc_pos[row],
                               std::max(d->efc_diagA[row], 1e-12),
                               RecoveryTime(m, m->eq_solref + 2 * d->efc_id[row]));
      J = model->couplings.rows.J(c);
    } else if (ball_limit) {
      c = model->limits.Put(limit_rows_++, dofs_, d->efc_pos[row] - d->efc_margin[row],
                            std::max(d->efc_diagA[row], 1e-12),
                            RecoveryTime(m, m->jnt_solref + 2 * d->efc_id[row]));
      J = model->limits.rows.J(c);
    } else {
      c = model->dry_friction.Put(friction_rows_++, dofs_, d->efc_frictionloss[row],
                                  contact_.frictionloss_stiction ? 0.0 : FrictionLossSpeed(m, d, row));
      J = model->dry_friction.rows.J(c);
    }
    records->push_back({here.type, here.id, here.sub, c});
    std::copy(row_.begin(), row_.end(), J);
  }
}

void MujocoAdapter::PointJacobian(const mjModel* m, const mjData* d, int body, const double p[3],
                                  std::vector<int>* dofs, std::vector<double>* cols,
                                  std::vector<double>* rot) const {
  // Columns j of the chain of dofs moving `body`:
  //   cdof_lin(j) + cdof_rot(j) × (p − subtree_com[root])   (mapping §5.6).
  dofs->clear();
  cols->clear();
  if (rot) rot->clear();
  const int weld = m->body_weldid[body];
  if (weld == 0 || m->body_dofnum[weld] == 0) return;
  const double* com = d->subtree_com + 3 * m->body_rootid[body];
  const double off[3] = {p[0] - com[0], p[1] - com[1], p[2] - com[2]};
  const int* chain = chain_dofs_.data() + chain_adr_[body];
  const int n = chain_adr_[body + 1] - chain_adr_[body];
  dofs->assign(chain, chain + n);
  cols->resize(3 * n);
  double* col = cols->data();
  for (int k = 0; k < n; ++k, col += 3) {
    const double* cd = d->cdof + 6 * chain[k];
    col[0] = cd[3] + cd[1] * off[2] - cd[2] * off[1];
    col[1] = cd[4] + cd[2] * off[0] - cd[0] * off[2];
    col[2] = cd[5] + cd[0] * off[1] - cd[1] * off[0];
  }
  if (rot) {
    rot->resize(3 * n);
    for (int k = 0; k < n; ++k) std::copy(d->cdof + 6 * chain[k], d->cdof + 6 * chain[k] + 3,
                                          rot->data() + 3 * k);
  }
}

double MujocoAdapter::ReferenceGravity(const mjModel* m) {
  const double g = mju_norm3(m->opt.gravity);
  return g > 0 ? g : 9.81;
}

double MujocoAdapter::OmegaMax(const mjModel* m) const {
  return contact_.omega_cap_steps > 0
             ? 2 * std::numbers::pi / (contact_.omega_cap_steps * m->opt.timestep)
             : 0;
}

void MujocoAdapter::ContactKey(const mjModel* m, const mjContact& con, double key[11]) const {
  // The inputs of the solref/solimp mapping (mapping §5.7): solref, solimp,
  // effective mass m_c, pyramidal factor λ, timestep, ±g_ref (sign: refsafe).
  const int b1 = m->geom_bodyid[con.geom[0]], b2 = m->geom_bodyid[con.geom[1]];
  const double inv_mc = m->body_invweight0[2 * b1] + m->body_invweight0[2 * b2];
  const double m_c = inv_mc > 0 ? 1.0 / inv_mc : 1.0;
  const double mu = con.dim > 1 ? con.friction[0] : 0.0;
  double lambda = 1;
  if (contact_.pyramidal_factor && m->opt.cone == mjCONE_PYRAMIDAL && con.dim > 1)
    lambda = std::max(1.0, (con.dim - 1) * m->opt.impratio / (mu * mu * (1 + mu * mu)));
  const double g_ref = ReferenceGravity(m);
  const double in[11] = {con.solref[0], con.solref[1], con.solimp[0], con.solimp[1],
                         con.solimp[2], con.solimp[3], con.solimp[4], m_c, lambda,
                         m->opt.timestep, Disabled(m, mjDSBL_REFSAFE) ? -g_ref : g_ref};
  std::copy(in, in + 11, key);
}

double MujocoAdapter::LimitSpringNominal(const mjModel* m, int type, int id) {
  const double* solref = type == mjCNSTR_LIMIT_JOINT ? m->jnt_solref + mjNREF * id
                                                      : m->tendon_solref_lim + mjNREF * id;
  const double tau_r = RecoveryTime(m, solref);
  return ReferenceGravity(m) * tau_r * tau_r;
}

double MujocoAdapter::NominalPenetration(const mjModel* m, const mjContact& con) {
  // x_nom = m_c g_ref / k: the depth at which the contact carries its share
  // m_c g_ref of weight (mapping §5.7), with the stiffness Build gives it
  // (before stiffening).
  if (con.geom[0] < 0 || con.geom[1] < 0) return 0;
  double key[11];
  ContactKey(m, con, key);
  double k_map, d_map;
  MappedContact(key, OmegaMax(m), &k_map, &d_map);
  const double k = contact_.stiffness > 0 ? contact_.stiffness : k_map * contact_.stiffness_scale;
  return k > 0 ? key[7] * ReferenceGravity(m) / k : std::numeric_limits<double>::infinity();
}

void MujocoAdapter::MappedContact(const double key[11], double omega_max, double* k, double* d) {
  if (map_cache_.empty()) map_cache_.resize(1024);
  unsigned long long h = 1469598103934665603ull;
  for (int i = 0; i < 11; ++i) {
    unsigned long long bits;
    std::memcpy(&bits, &key[i], sizeof(bits));
    h = (h ^ bits) * 1099511628211ull;
  }
  const size_t n = map_cache_.size();
  for (size_t probe = 0; probe < 16; ++probe) {
    MapEntry& e = map_cache_[(h + probe) % n];
    if (e.used && std::memcmp(e.key, key, sizeof(e.key)) == 0) {
      *k = e.k;
      *d = e.d;
      return;
    }
    if (!e.used) {
      const double solref[2] = {key[0], key[1]};
      const double solimp[5] = {key[2], key[3], key[4], key[5], key[6]};
      const PointContactParameters p = MapContact(solref, solimp, key[7], key[8], key[9],
                                                  key[10] > 0, std::abs(key[10]), omega_max);
      std::memcpy(e.key, key, sizeof(e.key));
      e.k = p.k;
      e.d = p.d;
      e.used = true;
      *k = p.k;
      *d = p.d;
      return;
    }
  }
  // Table region full: compute without caching.
  const double solref[2] = {key[0], key[1]};
  const double solimp[5] = {key[2], key[3], key[4], key[5], key[6]};
  const PointContactParameters p = MapContact(solref, solimp, key[7], key[8], key[9],
                                              key[10] > 0, std::abs(key[10]), omega_max);
  *k = p.k;
  *d = p.d;
}

void MujocoAdapter::FrameRows(const double frame[9], const std::vector<double>& cols_a,
                              const std::vector<double>& cols_b, double* J) const {
  // J = frame · (cols_b − cols_a) over the union dofs_ (columns of each side
  // follow dofs_a_ / dofs_b_).
  const int n = static_cast<int>(dofs_.size());
  size_t ia = 0, ib = 0;
  for (int q = 0; q < n; ++q) {
    double diff[3] = {0, 0, 0};
    if (ib < dofs_b_.size() && dofs_b_[ib] == dofs_[q]) {
      for (int r = 0; r < 3; ++r) diff[r] += cols_b[3 * ib + r];
      ++ib;
    }
    if (ia < dofs_a_.size() && dofs_a_[ia] == dofs_[q]) {
      for (int r = 0; r < 3; ++r) diff[r] -= cols_a[3 * ia + r];
      ++ia;
    }
    for (int r = 0; r < 3; ++r)
      J[r * n + q] =
          frame[3 * r] * diff[0] + frame[3 * r + 1] * diff[1] + frame[3 * r + 2] * diff[2];
  }
}

void MujocoAdapter::DisjointFrameRows(const mjModel* m, const mjData* d, const mjContact& con,
                                      int b1, int b2, bool a_first, double* J) const {
  // FrameRows' J = frame · (J₂ − J₁)(pos) (mapping §5.6) when no dof moves both bodies: each
  // column is 0 + J₂'s or 0 − J₁'s column of PointJacobian (the same sums,
  // so the same bits), in dofs_ order (one chain after the other).
  const int n = static_cast<int>(dofs_.size());
  const double* frame = con.frame;
  int q = 0;
  // Inline at both calls: GCC's file-wide inlining budget dropped it after
  // unrelated edits elsewhere in this file (+60 instructions per contact).
  auto side = [&](int body, auto plus) __attribute__((always_inline)) {
    const int* chain = chain_dofs_.data() + chain_adr_[body];
    const int len = chain_adr_[body + 1] - chain_adr_[body];
    if (len == 0) return;
    const double* com = d->subtree_com + 3 * m->body_rootid[body];
    const double off[3] = {con.pos[0] - com[0], con.pos[1] - com[1], con.pos[2] - com[2]};
    for (int k = 0; k < len; ++k, ++q) {
      const double* cd = d->cdof + 6 * chain[k];
      const double col[3] = {cd[3] + cd[1] * off[2] - cd[2] * off[1],
                             cd[4] + cd[2] * off[0] - cd[0] * off[2],
                             cd[5] + cd[0] * off[1] - cd[1] * off[0]};
      double diff[3];
      for (int r = 0; r < 3; ++r) diff[r] = decltype(plus)::value ? 0.0 + col[r] : 0.0 - col[r];
      for (int r = 0; r < 3; ++r)
        J[r * n + q] =
            frame[3 * r] * diff[0] + frame[3 * r + 1] * diff[1] + frame[3 * r + 2] * diff[2];
    }
  };
  const std::true_type plus;
  const std::false_type minus;
  if (a_first) {
    side(b1, minus);
    side(b2, plus);
  } else {
    side(b2, plus);
    side(b1, minus);
  }
}

void MujocoAdapter::AddContacts(const mjModel* m, const mjData* d,
                                const icf::IcfParameters& params, icf::IcfModel* model,
                                std::vector<ContactRecord>* records, BuildInfo* info) {
  const ContactConstants consts{m->opt.timestep, !Disabled(m, mjDSBL_REFSAFE),
                                ReferenceGravity(m), OmegaMax(m)};
  law_memo_.valid = false;
  for (int i = 0; i < d->ncon; ++i) {
    const mjContact& con = d->contact[i];
    if (con.exclude != 0 && con.exclude != 1) continue;
    if (con.geom[0] < 0 || con.geom[1] < 0) continue;  // flex contacts
    const int b1 = m->geom_bodyid[con.geom[0]], b2 = m->geom_bodyid[con.geom[1]];
    if (con.exclude == 0) info->max_penetration = std::max(info->max_penetration, -con.dist);
    // Jacobian rows in the contact frame: frame · (J₂ − J₁)(pos).
    // condim 4/6: torsional (friction[2]) and rolling (friction[3]) friction.
    const double mu_spin = con.dim >= 4 ? con.friction[2] : 0.0;
    const double mu_roll1 = con.dim >= 6 ? con.friction[3] : 0.0;
    const double mu_roll2 = con.dim >= 6 ? con.friction[4] : 0.0;
    const bool torques = mu_spin > 0 || mu_roll1 > 0 || mu_roll2 > 0;
    bool a_first = true;
    const bool disjoint = ContactDofs(m, d, con, b1, b2, torques, &a_first);
    if (dofs_.empty()) continue;
    const double mu = con.dim > 1 ? con.friction[0] : 0.0;
    double k, dis;
    ContactLaw(m, con, b1, b2, mu, consts, &k, &dis);
    const double phi = con.dist - con.includemargin;
    const double Rt = params.sigma_R * 2.65 * (inv_mass_[b1] + inv_mass_[b2]);
    double mu_s = mu * contact_.mu_static_ratio;
    if (con.dim > 1) {
      mu_s = std::max(mu_s, contact_.mu_static);
      for (int side = 0; side < 2; ++side)
        if (geom_mu_static_[con.geom[side]] >= 0) mu_s = std::max(mu_s, geom_mu_static_[con.geom[side]]);
    }
    mu_s = std::max(mu_s, mu);
    const int c = model->contacts.Add(dofs_, -k * phi, k, dis, mu_s, mu, Rt);
    ContactRecord& rec = records->emplace_back();
    rec.geom[0] = con.geom[0];
    rec.geom[1] = con.geom[1];
    rec.depth = std::max(0.0, -con.dist);
    std::copy(con.pos, con.pos + 3, rec.pos);
    std::copy(con.frame, con.frame + 9, rec.frame);
    if (disjoint)
      DisjointFrameRows(m, d, con, b1, b2, a_first, model->contacts.rows.J(c));
    else
      FrameRows(con.frame, cols_a_, cols_b_, model->contacts.rows.J(c));
    if (torques) {
      // Regularization: the angular velocity at which the torque bound
      // dissipates the same power as the sliding bound at v_s, i.e. v_s over
      // the lever arm μ_x/μ (docs/how-it-works.md, "Contact parameters for unchanged MJCF").
      const double vs = params.stiction_tolerance;
      auto eps = [&](double mu_x) { return mu_x > 0 ? vs * std::max(mu, 1e-3) / mu_x : 1.0; };
      rec.torque = model->contact_torques.Add(dofs_, c, mu_spin, mu_roll1, mu_roll2,
                                              eps(mu_spin), eps(std::max(mu_roll1, mu_roll2)));
      FrameRows(con.frame, rot_a_, rot_b_, model->contact_torques.rows.J(rec.torque));
    }
    ++info->ncontact;
  }
}

bool MujocoAdapter::ContactDofs(const mjModel* m, const mjData* d, const mjContact& con, int b1,
                                int b2, bool torques, bool* a_first) {
  // Two kinematic trees (or a static side) share no dof, and a tree's dofs
  // are one contiguous range: the union is the two chains one after the
  // other, and the rows are formed straight from cdof (DisjointFrameRows,
  // the arithmetic of PointJacobian and FrameRows) without the columns.
  const int na = chain_adr_[b1 + 1] - chain_adr_[b1], nb = chain_adr_[b2 + 1] - chain_adr_[b2];
  const bool disjoint = !torques && (na == 0 || nb == 0 || m->body_rootid[b1] != m->body_rootid[b2]);
  dofs_.clear();
  // b1's chain first if its dofs come first (dofs_ ascending); the order
  // DisjointFrameRows writes J's columns in.
  *a_first = true;
  if (disjoint) {
    const int* ca = chain_dofs_.data() + chain_adr_[b1];
    const int* cb = chain_dofs_.data() + chain_adr_[b2];
    *a_first = nb == 0 || (na > 0 && ca[0] < cb[0]);
    for (int side = 0; side < 2; ++side) {
      const bool a = (side == 0) == *a_first;
      const int* chain = a ? ca : cb;
      for (int k = 0, n = a ? na : nb; k < n; ++k) dofs_.push_back(chain[k]);
    }
  } else {
    PointJacobian(m, d, b1, con.pos, &dofs_a_, &cols_a_, torques ? &rot_a_ : nullptr);
    PointJacobian(m, d, b2, con.pos, &dofs_b_, &cols_b_, torques ? &rot_b_ : nullptr);
    std::set_union(dofs_a_.begin(), dofs_a_.end(), dofs_b_.begin(), dofs_b_.end(),
                   std::back_inserter(dofs_));
  }
  return disjoint;
}

void MujocoAdapter::ContactLaw(const mjModel* m, const mjContact& con, int b1, int b2, double mu,
                               const ContactConstants& cc, double* k_out, double* d_out) {
  // Stiffness and dissipation from solref/solimp (mapping §5.7). The
  // mapping's inputs are a function of solref, solimp, the two bodies, dim
  // and μ (the options are the call's): a contact whose values equal the
  // previous contact's (the points of one geom pair, the geoms of one body
  // pair) takes its m_c, λ, k and d without forming the key again
  // (cenic-math §8.9; the same values, so the same bits).
  LawMemo& prev = law_memo_;
  if (!(prev.valid && b1 == prev.b1 && b2 == prev.b2 && con.dim == prev.dim &&
        std::memcmp(&mu, &prev.mu, sizeof(double)) == 0 &&
        std::memcmp(con.solref, prev.solref, sizeof(prev.solref)) == 0 &&
        std::memcmp(con.solimp, prev.solimp, sizeof(prev.solimp)) == 0)) {
    double key[11];
    ContactKey(m, con, key);
    prev.m_c = key[7];
    prev.lambda = key[8];
    MappedContact(key, cc.omega_max, &prev.k_map, &prev.d_map);
    prev.b1 = b1;
    prev.b2 = b2;
    prev.dim = con.dim;
    prev.mu = mu;
    std::copy(con.solref, con.solref + 2, prev.solref);
    std::copy(con.solimp, con.solimp + 5, prev.solimp);
    prev.valid = true;
  }
  const double m_c = prev.m_c, lambda = prev.lambda;
  double k_map = prev.k_map;
  const double d_map = prev.d_map;
  if (contact_.stiffening && con.dist - con.includemargin < 0) {
    // Deeper than nominal: MuJoCo's secant stiffness at the current depth.
    const double x = con.includemargin - con.dist;
    if (x * k_map > m_c * cc.g_ref)
      k_map = std::max(k_map, m_c * SecantStiffnessPerMass(con.solref, con.solimp, lambda,
                                                            cc.timestep, cc.refsafe,
                                                            cc.omega_max, x));
  }
  const double k = contact_.stiffness > 0 ? contact_.stiffness : k_map * contact_.stiffness_scale;
  const double depth = con.includemargin - con.dist;  // −φ
  double dis = contact_.dissipation >= 0 ? contact_.dissipation : d_map;
  if (contact_.deep_separation && contact_.dissipation < 0 && depth * k > m_c * cc.g_ref) {
    // Deeper than nominal: Hunt–Crossley stops pushing at v_n = 1/d, MuJoCo
    // at x·d(x)K/B; d ≤ B/(d(x)K x) keeps MuJoCo's push-out speed
    // (cenic-math §4.11; unchanged up to ≈ x_nom/√(1 − d_w)).
    dis = std::min(dis, 1 / (depth * SeparationRate(con.solref, con.solimp, cc.timestep,
                                                    cc.refsafe, depth)));
  }
  *k_out = k;
  *d_out = dis;
}

}  // namespace mjcenic::adapter
