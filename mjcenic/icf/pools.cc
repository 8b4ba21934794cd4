#include "mjcenic/icf/pools.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace mjcenic::icf {

namespace {
constexpr double kGuard = 1e-20;  // guards in v̂ (§4.4)
inline double Pos(double x) { return x > 0 ? x : 0; }
}  // namespace

double FrictionCoefficient(double s, double mu_s, double mu_d, double width) {
  // (P8): μ = μ_d + (μ_s − μ_d)·½(1 − σ(s − Δ)/σ(Δ)).
  const double w = 0.5 * (1.0 - Sigmoid(s - width) / Sigmoid(width));
  return mu_d + (mu_s - mu_d) * w;
}

// ---------------------------------------------------------------- contacts --

void ContactPool::Clear() {
  // Every array holds one entry (or block) per row, appended by Add: an
  // empty pool has nothing to clear (each build of a scene without contacts;
  // cenic-math §8.9.2).
  if (rows.size() == 0) return;
  rows.Clear();
  fe0.clear(); k.clear(); d.clear(); mu_s.clear(); mu_d.clear(); Rt.clear();
  bias.clear(); anchor.clear(); anchor_bias.clear(); eps_step.clear(); fn0.clear(); mu.clear(); n0.clear(); eps.clear(); vhat.clear();
  N_hat.clear();
}

int ContactPool::Add(std::span<const int> dofs, double fe0_, double k_, double d_,
                     double mu_s_, double mu_d_, double Rt_) {
  const int c = rows.Add(dofs);
  fe0.push_back(fe0_); k.push_back(k_); d.push_back(d_);
  mu_s.push_back(mu_s_); mu_d.push_back(mu_d_); Rt.push_back(Rt_);
  bias.insert(bias.end(), {0.0, 0.0, 0.0});
  anchor.insert(anchor.end(), {0.0, 0.0});
  anchor_bias.insert(anchor_bias.end(), {0.0, 0.0});
  eps_step.push_back(std::numeric_limits<double>::infinity());
  fn0.push_back(0); mu.push_back(mu_s_); n0.push_back(0); eps.push_back(0); vhat.push_back(0);
  N_hat.push_back(0);
  return c;
}

void ContactPool::Lag(const double* v0, const IcfParameters& p) {
  // §4.3: f_n^0 = (f_e^0)_+ (1 − d v_n^0)_+,  μ = μ(|v_t^0| / v_s).
  // With μ_s = μ_d the blend adds (μ_s − μ_d)·w = ±0 to μ_d (> 0, or +0 for a
  // frictionless contact) whenever w is finite, which these bounds on v_s, Δ
  // and v_t guarantee (s and s − Δ finite, σ(Δ) > 0): μ = μ_d without the
  // norm and the sigmoids, the same bits (cenic-math §8.9). Otherwise
  // (static friction, or extreme values) the full blend.
  if (size() == 0) return;  // (every build of a scene without contacts)
  const double tol = p.stiction_tolerance, width = p.transition_width;
  const bool tame = tol > 1e-100 && tol < 1e100 && width > 1e-100 && width < 1e100;
  for (int c = 0; c < size(); ++c) {
    double vc[3];
    rows.Multiply(c, v0, vc);
    for (int i = 0; i < 3; ++i) vc[i] += bias[3 * c + i];
    fn0[c] = Pos(fe0[c]) * Pos(1.0 - d[c] * vc[0]);
    if (tame && mu_s[c] == mu_d[c] && mu_d[c] >= 0 && !std::signbit(mu_d[c]) &&
        std::abs(vc[1]) < 1e100 && std::abs(vc[2]) < 1e100) {
      mu[c] = mu_d[c];
      continue;
    }
    const double s = std::hypot(vc[1], vc[2]) / tol;
    mu[c] = FrictionCoefficient(s, mu_s[c], mu_d[c], width);
  }
}

void ContactPool::SetTimeStep(double h_, const IcfParameters& p) {
  h = h_;
  for (int c = 0; c < size(); ++c) {
    n0[c] = h * fn0[c];
    eps[c] = Regularization(c, h, p);  // §4.6 (anchored: §4.10)
    for (int i = 0; i < 2; ++i) {
      bias[3 * c + 1 + i] -= anchor_bias[2 * c + i];
      anchor_bias[2 * c + i] = anchor[2 * c + i] * eps[c];
      bias[3 * c + 1 + i] += anchor_bias[2 * c + i];
    }
    vhat[c] = std::min(fe0[c] / (h * (k[c] + kGuard)), 1.0 / (d[c] + kGuard));  // §4.4
    N_hat[c] = NormalPotential(c, vhat[c]);
  }
}

void ContactPool::SetAnchor(int c, double b1, double b2, double eps_step_cap,
                            const IcfParameters& p) {
  eps_step[c] = eps_step_cap;
  eps[c] = Regularization(c, h, p);
  anchor[2 * c] = b1;
  anchor[2 * c + 1] = b2;
  for (int i = 0; i < 2; ++i) {
    bias[3 * c + 1 + i] -= anchor_bias[2 * c + i];
    anchor_bias[2 * c + i] = anchor[2 * c + i] * eps[c];
    bias[3 * c + 1 + i] += anchor_bias[2 * c + i];
  }
}

// ------------------------------------------------------------ near-rigid --

void NearRigid(double h, double w, const IcfParameters& p, double* R, double* tau_d) {
  // (P18): K = 4π²/(β² h̄² w), τ_d = β h̄/π, R = 1/(h (h + τ_d) K).
  const double pi = std::numbers::pi;
  const double hbar = std::max(h, p.h_min_near_rigid);
  *tau_d = p.beta * hbar / pi;
  *R = p.beta * p.beta * hbar * hbar * w / (4 * pi * pi * h * (h + *tau_d));
}

double NearRigidBias(double g0, double h, double tau_d, double tau_r, const IcfParameters& p) {
  // v̂ = −g0 / T with the recovery time T blending from h + τ_d (small
  // violations: the near-rigid law of §3.5, unchanged to O(|g0|/δ)) to τ_r
  // (violations ≫ δ): |v̂| stays ≲ |g0|/τ_r + δ/τ_r instead of |g0|/(h + τ_d).
  const double t = h + tau_d;
  const double T = t + std::max(0.0, tau_r - t) * Sigmoid(std::abs(g0) / p.violation_tolerance);
  return -g0 / T;
}

// ------------------------------------------------- limits and couplings --

template <bool kUnilateral>
void NearRigidPool<kUnilateral>::Clear() {
  rows.Clear();
  Resize(0);
}

template <bool kUnilateral>
int NearRigidPool<kUnilateral>::Add(std::span<const int> dofs, double g0_, double w_,
                                    double tau_r_) {
  const int c = rows.Add(dofs);
  Resize(c + 1);
  SetRow(c, g0_, w_, tau_r_);
  return c;
}

template <bool kUnilateral>
void NearRigidPool<kUnilateral>::SetTimeStep(double h, const IcfParameters& p) {
  // NearRigid (P18) with its row-independent factors computed once: the same
  // operations in the same order, so R is NearRigid's to the bit. (Nothing
  // but the rows' R and v̂ is set: an empty pool returns at once.)
  if (size() == 0) return;
  const double pi = std::numbers::pi;
  const double hbar = std::max(h, p.h_min_near_rigid);
  const double tau_d = p.beta * hbar / pi;
  const double num = p.beta * p.beta * hbar * hbar;
  const double den = 4 * pi * pi * h * (h + tau_d);
  for (int c = 0; c < size(); ++c) {
    R[c] = num * w[c] / den;
    if constexpr (kUnilateral) {
      if (g0[c] >= 0 || tau_r[c] <= 0) {
        vhat[c] = -g0[c] / (h + tau_d);  // §5 (a row without a time scale: always, §5.2)
      } else if (-g0[c] <= p.violation_tolerance) {
        // §5.2: a small violation is pulled back near-rigidly at no more than
        // the speed the spring below has at the tolerance.
        vhat[c] = std::min(-g0[c] / (h + tau_d),
                           p.violation_tolerance / (h + 2 * tau_r[c]));
      } else {
        // §5.2: a large violation is a critically damped spring of time
        // constant τ_r (solref): K = 1/(w τ_r²), D = 2/(w τ_r).
        R[c] = w[c] * tau_r[c] * tau_r[c] / (h * (h + 2 * tau_r[c]));
        vhat[c] = -g0[c] / (h + 2 * tau_r[c]);
      }
    } else {
      vhat[c] = NearRigidBias(g0[c], h, tau_d, tau_r[c], p);  // §7.1
    }
  }
}

template struct NearRigidPool<true>;
template struct NearRigidPool<false>;

// ------------------------------------------------------------------- gains --

void GainPool::Clear() {
  rows.Clear();
  Resize(0);
}

int GainPool::Add(std::span<const int> dofs, double c_, double kq_, double kv_, double lo_,
                  double hi_) {
  const int i = rows.Add(dofs);
  Resize(i + 1);
  SetRow(i, c_, kq_, kv_, lo_, hi_);
  return i;
}

void GainPool::Lag(const double* v0) {
  // v_c0 = J v0 is read only by SetTimeStep, for a row with κ = h kq + kv < 0
  // (explicit at v_c0). With kq ≥ 0 and kv ≥ 0 that cannot happen at any
  // h > 0 (a NaN fails the test and is multiplied as before), and the row
  // keeps the 0 its Put or Add set (cenic-math §8.9).
  const double *kq_ = kq.data(), *kv_ = kv.data();
  double* out = vc0.data();
  const int n = size();
  for (int i = 0; i < n; ++i)
    if (!(kq_[i] >= 0 && kv_[i] >= 0)) rows.Multiply(i, v0, out + i);
}

void GainPool::SetTimeStep(double h_, const IcfParameters&) {
  h = h_;
  for (int i = 0; i < size(); ++i) {
    const double k = h * kq[i] + kv[i];
    if (k >= 0) {
      kappa[i] = k;
      c_eff[i] = c[i];
      h_over_kappa[i] = k > 0 ? h / k : 0.0;
    } else {  // non-stabilizing: explicit at v_c0 (§9.1 item 5)
      kappa[i] = 0;
      c_eff[i] = c[i] - k * vc0[i];
    }
  }
}

// ------------------------------------------------------------ dry friction --

void DryFrictionPool::Clear() { rows.Clear(); F.clear(); eps_row.clear(); eps.clear(); }

int DryFrictionPool::Add(std::span<const int> dofs, double F_, double eps_) {
  const int c = rows.Add(dofs);
  F.push_back(F_);
  eps_row.push_back(eps_);
  eps.push_back(0);
  return c;
}

void DryFrictionPool::SetTimeStep(double h_, const IcfParameters& p) {
  h = h_;
  for (int c = 0; c < size(); ++c) eps[c] = eps_row[c] > 0 ? eps_row[c] : p.stiction_tolerance;
}

void ContactTorquePool::Clear() {
  if (rows.size() == 0) return;  // nothing to clear (ContactPool::Clear)
  rows.Clear();
  contact.clear();
  mu_spin.clear();
  mu_roll1.clear();
  mu_roll2.clear();
  eps_spin.clear();
  eps_roll.clear();
  fn0.clear();
  n0.clear();
}

int ContactTorquePool::Add(std::span<const int> dofs, int contact_, double mu_spin_,
                           double mu_roll1_, double mu_roll2_, double eps_spin_,
                           double eps_roll_) {
  const int c = rows.Add(dofs);
  contact.push_back(contact_);
  mu_spin.push_back(mu_spin_);
  mu_roll1.push_back(mu_roll1_);
  mu_roll2.push_back(mu_roll2_);
  eps_spin.push_back(eps_spin_);
  eps_roll.push_back(eps_roll_);
  fn0.push_back(0);
  n0.push_back(0);
  return c;
}

void ContactTorquePool::Lag(const ContactPool& contacts) {
  for (int c = 0; c < size(); ++c) fn0[c] = contacts.fn0[contact[c]];
}

void ContactTorquePool::SetTimeStep(double h_) {
  h = h_;
  for (int c = 0; c < size(); ++c) n0[c] = h * fn0[c];
}

void ContactTorquePool::Eval(int c, const double* w, double* cost, double* gamma,
                             double* G) const {
  for (int i = 0; i < 9; ++i) G[i] = 0;
  gamma[0] = gamma[1] = gamma[2] = 0;
  *cost = 0;
  // Spin: ‖w₀‖_ε = sqrt(w₀² + ε²) − ε.
  const double ts = n0[c] * mu_spin[c];
  if (ts > 0) {
    const double e = eps_spin[c], s = std::sqrt(w[0] * w[0] + e * e);
    *cost += ts * (s - e);
    gamma[0] = -ts * w[0] / s;
    G[0] = ts * e * e / (s * s * s);
  }
  // Roll, MuJoCo's elliptic bound (τ₁/μ₁)² + (τ₂/μ₂)² ≤ f_n²: with u = (μ₁w₁,
  // μ₂w₂) [m/s] the potential is n⁰(sqrt(‖u‖² + e²) − e), e = ε μ_max, so
  // τ_k = μ_k σ_k with ‖σ‖ ≤ f_n; ∂/∂w_k = μ_k ∂/∂u_k.
  const double m1 = mu_roll1[c], m2 = mu_roll2[c], n = n0[c];
  if (n > 0 && (m1 > 0 || m2 > 0)) {
    const double e = eps_roll[c] * std::max(m1, m2);
    const double u1 = m1 * w[1], u2 = m2 * w[2];
    const double s = std::sqrt(u1 * u1 + u2 * u2 + e * e);
    *cost += n * (s - e);
    gamma[1] = -n * m1 * u1 / s;
    gamma[2] = -n * m2 * u2 / s;
    const double a = n / s, b = n / (s * s * s);
    G[4] = m1 * m1 * (a - b * u1 * u1);
    G[5] = G[7] = -m1 * m2 * b * u1 * u2;
    G[8] = m2 * m2 * (a - b * u2 * u2);
  }
}

}  // namespace mjcenic::icf
