#include "mjcenic/adapter/constraint_forces.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace mjcenic::adapter {

void ConstraintForces::Write(const mjModel* m, const BuildRecords* records,
                             const icf::IcfData& data, double h, mjData* d) {
  for (int i = 0; i < d->nefc; ++i) {
    d->efc_force[i] = 0;
    d->efc_state[i] = 0;
  }
  if (!records) return;
  // (Each returns at once without records: no call then.)
  if (!records->rows.empty()) WriteRows(m, records->rows, data, h, d);
  if (!records->contacts.empty()) WriteContacts(m, records->contacts, data, h, d);
}

void ConstraintForces::WriteRows(const mjModel* m, const std::vector<RowRecord>& rows,
                                 const icf::IcfData& data, double h, mjData* d) {
  // Limits, equalities and friction loss: each efc row of d takes the impulse
  // / h of the solved row with the same MuJoCo type, object and side / row
  // number. Rows that were not solved (a limit that became active during the
  // step) stay 0.
  if (rows.empty() || !(h > 0)) return;
  RowRecord prev{-1, -1, -1, -1};
  // d's rows come in the records' order (MuJoCo orders them by type, then
  // object, then side): the lower bound of a key above the last one is at or
  // after the last one's, usually within a few records (cenic-math §8.9).
  auto from = rows.begin();
  for (int i = 0; i < d->nefc; ++i) {
    const int type = d->efc_type[i];
    if (type == mjCNSTR_CONTACT_FRICTIONLESS || type == mjCNSTR_CONTACT_PYRAMIDAL ||
        type == mjCNSTR_CONTACT_ELLIPTIC)
      continue;
    const RowRecord key{type, d->efc_id[i], EfcRowSub(m, d, i, prev), -1};
    if (!(prev < key)) from = rows.begin();
    prev = key;
    auto it = from;
    for (int k = 0; k < 4 && it != rows.end() && *it < key; ++k) ++it;
    if (it != rows.end() && *it < key) it = std::lower_bound(it, rows.end(), key);
    from = it;
    if (it == rows.end() || key < *it) continue;
    const bool friction = type == mjCNSTR_FRICTION_DOF || type == mjCNSTR_FRICTION_TENDON;
    const std::vector<double>& gamma = type == mjCNSTR_EQUALITY ? data.couplings.gamma
                                       : friction               ? data.dry_friction.gamma
                                                                : data.limits.gamma;
    if (it->index < 0 || it->index >= static_cast<int>(gamma.size())) continue;
    const double f = gamma[it->index] / h;
    d->efc_force[i] = f;
    if (type == mjCNSTR_EQUALITY) {
      d->efc_state[i] = mjCNSTRSTATE_QUADRATIC;
    } else if (friction) {
      const double F = d->efc_frictionloss[i];
      // Saturated (sliding) where the regularized law is within 0.1 % of F.
      d->efc_state[i] = f >= F * (1 - 1e-3)    ? mjCNSTRSTATE_LINEARNEG
                        : f <= -F * (1 - 1e-3) ? mjCNSTRSTATE_LINEARPOS
                                               : mjCNSTRSTATE_QUADRATIC;
    } else {
      d->efc_state[i] = f > 0 ? mjCNSTRSTATE_QUADRATIC : mjCNSTRSTATE_SATISFIED;
    }
  }
}

namespace {
// A geom pair's key, (min geom, max geom) packed in one integer: orders as the pair.
unsigned long long GeomPairKey(int g0, int g1) {
  const auto lo = static_cast<unsigned int>(std::min(g0, g1));
  const auto hi = static_cast<unsigned int>(std::max(g0, g1));
  return (static_cast<unsigned long long>(lo) << 32) | hi;
}
}  // namespace

void ConstraintForces::IndexRecords(const std::vector<ContactRecord>& rec) {
  // Records sorted by geom pair, so each contact finds its pair by bisection.
  const int nrec = static_cast<int>(rec.size());
  // Twice the largest contact count seen: later, larger contact sets do not
  // allocate (docs/architecture.md, "Conventions": no allocation per step after warm-up).
  if (order_.capacity() < static_cast<size_t>(nrec)) {
    for (auto* v : {&sorted_keys_, &rec_keys_}) v->reserve(2 * static_cast<size_t>(nrec));
    order_.reserve(2 * static_cast<size_t>(nrec));
    used_.reserve(2 * static_cast<size_t>(nrec));
  }
  // std::sort's result is a function of the key sequence alone: with the
  // records' keys of the last call (a pile from one step to the next) its
  // order is that call's.
  bool same = static_cast<int>(rec_keys_.size()) == nrec;
  for (int r = 0; r < nrec && same; ++r)
    same = rec_keys_[r] == GeomPairKey(rec[r].geom[0], rec[r].geom[1]);
  if (!same) {
    rec_keys_.resize(nrec);
    for (int r = 0; r < nrec; ++r) rec_keys_[r] = GeomPairKey(rec[r].geom[0], rec[r].geom[1]);
    order_.resize(nrec);
    for (int r = 0; r < nrec; ++r) order_[r] = r;
    std::sort(order_.begin(), order_.end(), [&](int a, int b) { return rec_keys_[a] < rec_keys_[b]; });
    sorted_keys_.resize(nrec);
    for (int r = 0; r < nrec; ++r) sorted_keys_[r] = rec_keys_[order_[r]];
  }
  used_.assign(nrec, 0);
}

int ConstraintForces::MatchRecord(const std::vector<ContactRecord>& rec, const mjContact& con,
                                  int hint[2]) {
  // The pair's first record (lower bound): d's contacts mostly come in the
  // records' pair order, so the last contact's range start (the same pair) or
  // end (the next pair) usually is it; p is the bound iff the key before it
  // is below k and the one at it is not (cenic-math §8.9). Of the pair's
  // unused records, the nearest to the contact's point.
  const int nrec = static_cast<int>(rec.size());
  const unsigned long long k = GeomPairKey(con.geom[0], con.geom[1]);
  auto is_bound = [&](int p) {
    return p <= nrec && (p == 0 || sorted_keys_[p - 1] < k) && (p == nrec || sorted_keys_[p] >= k);
  };
  int pos = is_bound(hint[0])   ? hint[0]
            : is_bound(hint[1]) ? hint[1]
                                : static_cast<int>(std::lower_bound(sorted_keys_.begin(),
                                                                    sorted_keys_.begin() + nrec, k) -
                                                   sorted_keys_.begin());
  hint[0] = pos;
  int best = -1;
  double best_d2 = 0;
  for (; pos < nrec && sorted_keys_[pos] == k; ++pos) {
    const int* it = order_.data() + pos;
    if (used_[*it]) continue;
    double d2 = 0;
    for (int j = 0; j < 3; ++j) d2 += (rec[*it].pos[j] - con.pos[j]) * (rec[*it].pos[j] - con.pos[j]);
    if (best < 0 || d2 < best_d2) best = *it, best_d2 = d2;
  }
  hint[1] = pos;
  if (best >= 0) used_[best] = 1;
  return best;
}

void ConstraintForces::WriteContacts(const mjModel* m, const std::vector<ContactRecord>& rec,
                                     const icf::IcfData& data, double h, mjData* d) {
  const std::vector<double>& gamma = data.contacts.gamma;
  const std::vector<double>& torque_gamma = data.contact_torques.gamma;
  const int nrec = static_cast<int>(rec.size());
  if (nrec == 0 || !(h > 0) || static_cast<int>(gamma.size()) < 3 * nrec) return;
  IndexRecords(rec);
  const bool pyramidal = m->opt.cone == mjCONE_PYRAMIDAL;
  int hint[2] = {0, 0};
  for (int i = 0; i < d->ncon; ++i) {
    const mjContact& con = d->contact[i];
    if (con.efc_address < 0 || con.exclude != 0) continue;
    const int best = MatchRecord(rec, con, hint);
    if (best < 0) continue;
    // Force on geom 2 relative to geom 1 in world coordinates: frameᵀ γ / h
    // (a swapped pair reverses it), then in this contact's frame.
    const ContactRecord& r = rec[best];
    const double sign = r.geom[0] == con.geom[0] ? 1.0 : -1.0;
    double F[3] = {0, 0, 0}, T[3] = {0, 0, 0}, f[6] = {0, 0, 0, 0, 0, 0};
    for (int a = 0; a < 3; ++a)
      for (int j = 0; j < 3; ++j) F[j] += sign * r.frame[3 * a + j] * gamma[3 * best + a] / h;
    if (con.dim == 1) {  // frictionless: EncodeContact keeps only f_n = n̂ · F, summed alike
      for (int j = 0; j < 3; ++j) f[0] += con.frame[j] * F[j];
      d->efc_force[con.efc_address] = std::max(f[0], 0.0);
      continue;
    }
    if (r.torque >= 0 && static_cast<int>(torque_gamma.size()) >= 3 * (r.torque + 1))
      for (int a = 0; a < 3; ++a)
        for (int j = 0; j < 3; ++j)
          T[j] += sign * r.frame[3 * a + j] * torque_gamma[3 * r.torque + a] / h;
    for (int a = 0; a < 3; ++a)
      for (int j = 0; j < 3; ++j) {
        f[a] += con.frame[3 * a + j] * F[j];
        f[3 + a] += con.frame[3 * a + j] * T[j];  // spin, roll 1, roll 2
      }
    EncodeContact(con, pyramidal, f, d);
  }
}

void ConstraintForces::EncodeContact(const mjContact& con, bool pyramidal, double f[6],
                                     mjData* d) {
  f[0] = std::max(f[0], 0.0);
  const int dim = con.dim;
  if (dim == 1) {
    d->efc_force[con.efc_address] = f[0];
    return;
  }
  if (pyramidal) {
    // Inside MuJoCo's pyramid: Σ |f_j| / μ_j ≤ f_n over the friction
    // components (the ICF bounds are separate: a round sliding cone and
    // separate torque bounds).
    // q_j = |f_j|/μ_j, one division per direction: the same quotient serves
    // the bound, the slack and t_j = f_j/μ_j = ±q_j (a quotient's magnitude
    // does not depend on the signs), recomputed only after a scaling
    // (cenic-math §8.9).
    double q[5] = {0, 0, 0, 0, 0};
    double l1 = 0;
    for (int j = 1; j < dim; ++j) {
      q[j - 1] = con.friction[j - 1] > 0 ? std::abs(f[j]) / con.friction[j - 1] : 0;
      l1 += q[j - 1];
    }
    const bool scaled = l1 > f[0] && l1 > 0;
    if (scaled)
      for (int j = 1; j < dim; ++j) f[j] *= f[0] / l1;
    // Edge pairs (2j, 2j+1) carry a_j = |f_j|/μ_j plus an equal share of
    // the slack, so that all edges are ≥ 0 and MuJoCo's decoding returns
    // f_n = Σ edges and f_j = μ_j (e_2j − e_2j+1).
    double used = 0;
    for (int j = 1; j < dim; ++j) {
      if (!(con.friction[j - 1] > 0)) {
        f[j] = 0;
        q[j - 1] = 0;
      } else {
        if (scaled) q[j - 1] = std::abs(f[j]) / con.friction[j - 1];
        used += q[j - 1];
      }
    }
    // x/2 and x·0.5 are the same rounding of the same number: condim 3 saves
    // the division.
    const double slack = std::max(f[0] - used, 0.0);
    const double share = dim == 3 ? slack * 0.5 : slack / (dim - 1);
    for (int j = 1; j < dim; ++j) {
      const double t = f[j] != 0 ? std::copysign(q[j - 1], f[j]) : 0.0;
      const double a = q[j - 1] + share;  // |t| + share
      d->efc_force[con.efc_address + 2 * (j - 1)] = 0.5 * (a + t);
      d->efc_force[con.efc_address + 2 * (j - 1) + 1] = 0.5 * (a - t);
    }
  } else {
    // Inside MuJoCo's elliptic cone Σ (f_j/μ_j)² ≤ f_n² (ICF bounds sliding
    // and torques separately, so their combination can exceed it).
    double e2 = 0;
    for (int j = 1; j < dim; ++j) {
      if (!(con.friction[j - 1] > 0)) f[j] = 0;
      else e2 += (f[j] / con.friction[j - 1]) * (f[j] / con.friction[j - 1]);
    }
    const double e = std::sqrt(e2);
    if (e > f[0] && e > 0)
      for (int j = 1; j < dim; ++j) f[j] *= f[0] / e;
    for (int j = 0; j < dim; ++j) d->efc_force[con.efc_address + j] = f[j];
  }
}

}  // namespace mjcenic::adapter
