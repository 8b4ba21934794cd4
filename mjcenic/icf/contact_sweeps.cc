#include "mjcenic/icf/contact_sweeps.h"

#include <algorithm>
#include <cmath>

namespace mjcenic::icf {

void ContactSweeps::Size(const IcfModel& m, int ni) {
  const int nc = m.contacts.size();
  Ai_.resize(m.nv);
  W_.resize(2 * nc);
  gamma_.resize(3 * nc);
  change_.resize(2 * ni);
  active_.resize(ni);
  dofs_.resize(ni);
  impacts_.resize(2 * ni);
  count_.resize(ni);
}

int ContactSweeps::MarkCandidates(const IcfModel& m, const IcfData& d, const char* optimal,
                                  char* took) {
  const int ni = d.num_islands;
  std::fill(took, took + ni, 0);
  std::fill(dofs_.begin(), dofs_.begin() + ni, 0);
  for (int i = 0; i < m.nv; ++i) ++dofs_[d.dof_island[i]];
  // Per large island: contacts, then impacts.
  std::fill(impacts_.begin(), impacts_.begin() + 2 * ni, 0);
  const ContactPool& P = m.contacts;
  const double* vc = d.contacts.vc.data();
  const int* isl = d.contacts.island.data();
  for (int c = 0; c < P.size(); ++c) {
    const int i = isl[c];
    const bool large = dofs_[i] > kImpactMaxDofs;
    if (large) ++impacts_[2 * i];
    else if (took[i]) continue;
    const double vn = vc[3 * c];
    if (!(vn < P.vhat[c] && P.d[c] * (P.vhat[c] - vn) > kImpactSpeed)) continue;
    bool free_bodies = true;
    for (int j : P.rows.dofs(c)) {
      const int q = m.clique_of_dof[j];
      free_bodies = free_bodies && m.clique_start[q + 1] - m.clique_start[q] <= kFreeBodyDofs;
    }
    if (large) impacts_[2 * i + 1] += free_bodies;
    else took[i] = free_bodies;
  }
  int n = 0;
  for (int i = 0; i < ni; ++i) {
    const int hits = impacts_[2 * i + 1];
    const bool pile = hits >= kPileImpactCount && hits >= kPileImpactShare * impacts_[2 * i];
    count_[i] = pile ? kPileImpactSweeps : kImpactSweeps;
    took[i] = !optimal[i] && (took[i] || pile);
    n += took[i];
  }
  return n;
}

void ContactSweeps::SolveContact(const IcfModel& m, int c, const double* v, double* g,
                                 double* dg) const {
  const ContactPool& P = m.contacts;
  const double mun = P.mu[c] * P.n0[c], e = P.eps[c], h = P.h;
  double vc[3] = {0, 0, 0};
  if (mun > 0) {
    P.rows.Multiply(c, v, vc);
  } else {  // frictionless: the normal row only
    const double* J = P.rows.J(c);
    const std::span<const int> dofs = P.rows.dofs(c);
    double s0 = 0;
    for (size_t k = 0; k < dofs.size(); ++k) s0 += J[k] * v[dofs[k]];
    vc[0] = s0;
  }
  const double wn = W_[2 * c], wt = W_[2 * c + 1];
  // Normal: v_n = v_f + W γ_n(v_n), γ_n = h (f_e − hk v_n)(1 − d v_n) below
  // v̂ (both factors positive there), 0 above: a quadratic in v_n.
  const double vf = vc[0] + P.bias[3 * c] - wn * g[0];
  double gn = 0;
  if (vf < P.vhat[c]) {
    const double k = P.k[c], d = P.d[c], fe = P.fe0[c];
    const double qa = -wn * h * h * k * d;  // qa v² + qb v + qc = 0
    const double qb = 1 + wn * h * (h * k + d * fe);
    const double qc = -(vf + wn * h * fe);
    const double disc = qb * qb - 4 * qa * qc;
    const double root =
        std::min(disc >= 0 ? -2 * qc / (qb + std::sqrt(disc)) : P.vhat[c], P.vhat[c]);
    gn = h * std::max(0.0, fe - h * k * root) * std::max(0.0, 1 - d * root);
  }
  dg[0] = gn - g[0];
  dg[1] = dg[2] = 0;
  g[0] = gn;
  if (!(mun > 0)) return;
  // Friction: v_t = u − W μn⁰ v_t/sqrt(|v_t|² + ε²), u the slip without the
  // contact's friction, so v_t = s û with s (1 + W μn⁰/sqrt(s² + ε²)) = |u|
  // (increasing in s; safeguarded Newton, at most 3 steps to 1 %: the guess
  // needs no more than a few digits).
  const double u1 = vc[1] + P.bias[3 * c + 1] - wt * g[1];
  const double u2 = vc[2] + P.bias[3 * c + 2] - wt * g[2];
  const double U = std::sqrt(u1 * u1 + u2 * u2);
  double t1 = 0, t2 = 0;
  if (U > 0) {
    const double cw = wt * mun;
    // Start: the root for ε → 0 when sliding, the sticking linearization else.
    double x = U > cw ? U - cw : U * e / (e + cw);
    for (int it = 0; it < 3; ++it) {
      const double sq = std::sqrt(x * x + e * e);
      const double q = x * (1 + cw / sq) - U;
      const double dq = 1 + cw * e * e / (sq * sq * sq);
      double xn = x - q / dq;
      if (xn < 0) xn = 0.5 * x;
      if (xn > U) xn = 0.5 * (x + U);
      const double step = xn - x;
      x = xn;
      if (std::abs(step) <= 1e-2 * (x + e)) break;
    }
    const double f = -mun * x / (std::sqrt(x * x + e * e) * U);
    t1 = f * u1;
    t2 = f * u2;
  }
  dg[1] = t1 - g[1];
  dg[2] = t2 - g[2];
  g[1] = t1;
  g[2] = t2;
}

void ContactSweeps::Sweep(const IcfModel& m, const IcfData& d, const double* v_guess,
                          const char* took, double* v) {
  // Start from one Jacobi step v_f = v_g + diag(A)⁻¹(r − A v_g) (no impulse)
  // on the candidates' dofs (islands are closed under the contacts' dofs),
  // then visit the contacts in turn: v += diag(A)⁻¹ J_cᵀ Δγ.
  const int nv = m.nv, nc = m.contacts.size(), ni = d.num_islands;
  const ContactPool& P = m.contacts;
  const int* isl = d.contacts.island.data();
  std::fill(gamma_.begin(), gamma_.begin() + 3 * nc, 0.0);
  std::copy(took, took + ni, active_.begin());
  double* Ai = Ai_.data();
  for (int i = 0; i < nv; ++i) {
    if (!active_[d.dof_island[i]]) continue;
    Ai[i] = 1.0 / m.ADiag(i);
    v[i] = v_guess[i] + Ai[i] * (m.r[i] - d.Av[i]);
  }
  // W = J_c diag(A)⁻¹ J_cᵀ's diagonal (normal row; mean of the tangent rows).
  for (int c = 0; c < nc; ++c) {
    if (!active_[isl[c]]) continue;
    const double* J = P.rows.J(c);
    const std::span<const int> dofs = P.rows.dofs(c);
    const int n = static_cast<int>(dofs.size());
    double wn = 0, wt = 0;
    for (int k = 0; k < n; ++k) {
      const double a = Ai[dofs[k]];
      wn += J[k] * J[k] * a;
      wt += (J[n + k] * J[n + k] + J[2 * n + k] * J[2 * n + k]) * a;
    }
    W_[2 * c] = wn;
    W_[2 * c + 1] = 0.5 * wt;
  }
  int most = 0;
  for (int i = 0; i < ni; ++i)
    if (active_[i]) most = std::max(most, count_[i]);
  for (int sweep = 0; sweep < most; ++sweep) {
    for (int i = 0; i < ni; ++i)  // each island's own count
      if (sweep == count_[i]) active_[i] = 0;
    std::fill(change_.begin(), change_.end(), 0.0);
    for (int c = 0; c < nc; ++c) {
      if (!active_[isl[c]]) continue;
      double* g = gamma_.data() + 3 * c;
      double dg[3];
      SolveContact(m, c, v, g, dg);
      const double* J = P.rows.J(c);
      const std::span<const int> dofs = P.rows.dofs(c);
      const int n = static_cast<int>(dofs.size());
      if (P.mu[c] * P.n0[c] > 0) {
        for (int k = 0; k < n; ++k)
          v[dofs[k]] += Ai[dofs[k]] * (J[k] * dg[0] + J[n + k] * dg[1] + J[2 * n + k] * dg[2]);
      } else if (dg[0] != 0) {
        for (int k = 0; k < n; ++k) v[dofs[k]] += Ai[dofs[k]] * J[k] * dg[0];
      }
      change_[2 * isl[c]] += std::abs(dg[0]) + std::abs(dg[1]) + std::abs(dg[2]);
      change_[2 * isl[c] + 1] += std::abs(g[0]) + std::abs(g[1]) + std::abs(g[2]);
    }
    bool any = false;
    for (int i = 0; i < ni; ++i) {
      if (active_[i] && change_[2 * i] <= kStop * change_[2 * i + 1]) active_[i] = 0;
      any = any || active_[i];
    }
    if (!any) break;
  }
}

}  // namespace mjcenic::icf
