// ICF constraint pools (cenic-math.md §4–7, §6). Each pool stores its
// constraints contiguously: the Jacobian rows (RowStore), the parameters fixed
// while the model is built (h-independent), and the quantities that depend on
// the time step h (SetTimeStep). Eval() maps a constraint velocity v_c to the
// potential ℓ_i, the impulse γ_i = -∂ℓ_i/∂v_c and the Hessian G_i = ∂²ℓ_i/∂v_c².
// Nothing here knows about MuJoCo.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "mjcenic/icf/parameters.h"
#include "mjcenic/icf/row_store.h"

namespace mjcenic::icf {

// The ICF sigmoid σ(x) = x / sqrt(1 + x²).
inline double Sigmoid(double x);
// μ(s) of (P8): blends from mu_s (s = 0) to mu_d (s ≥ 2Δ), s = |v_t| / v_s.
double FrictionCoefficient(double s, double mu_s, double mu_d, double width);

// Point contacts (§4). Rows are expressed in the contact frame
// [n̂, t̂1, t̂2]: v_c[0] = v_n (positive when separating), v_c[1..2] = v_t.
struct ContactPool {
  RowStore<3> rows;
  // Set when the constraint is added.
  std::vector<double> fe0;   // elastic force f_e^0 = -k φ_0 [N] (may be < 0)
  std::vector<double> k;     // stiffness [N/m]
  std::vector<double> d;     // Hunt–Crossley dissipation [s/m]
  std::vector<double> mu_s, mu_d;
  std::vector<double> Rt;    // σ_R w_t (§4.6) [1/kg]
  std::vector<double> bias;  // surface-velocity bias b (3 per contact)
  // Stiction anchor β (2 per contact, tangential, in units of ε): SetTimeStep
  // adds β ε to the tangential bias (anchor_bias: the part added), so the
  // anchor holds the same load fraction at every step size
  // (adapter/stiction_anchors.h). Set after Lag, which sees no anchor.
  std::vector<double> anchor, anchor_bias;
  // The step whose σ_R term sets ε (§4.6): ε = max(v_s, μ R_t f_n⁰ min(h, eps_step)).
  // +∞ (the paper's ε ∝ h) unless SetAnchor caps it for an anchored contact
  // (cenic-math §4.10).
  std::vector<double> eps_step;
  // Lagged quantities (§4.3), set by Lag(v0).
  std::vector<double> fn0;   // f_n^0 [N]
  std::vector<double> mu;    // μ(s^0)
  // Time-step dependent (§4.4, §4.6).
  std::vector<double> n0, eps, vhat;
  std::vector<double> N_hat;  // N⁺(v̂): subtracted so that ℓ_k = 0 where γ_n = 0
  double h = 0;

  void Clear();
  int Add(std::span<const int> dofs, double fe0, double k, double d, double mu_s,
          double mu_d, double Rt);
  int size() const { return rows.size(); }
  void Lag(const double* v0, const IcfParameters& p);
  void SetTimeStep(double h, const IcfParameters& p);
  // Sets contact c's anchor β = (b1, b2), the step cap of its ε (eps_step,
  // +∞: none) and its bias β ε at the current time step (after SetTimeStep;
  // what SetTimeStep would set, for c alone).
  void SetAnchor(int c, double b1, double b2, double eps_step_cap, const IcfParameters& p);
  // ε of contact c at time step h (§4.6, with its step cap).
  double Regularization(int c, double h, const IcfParameters& p) const {
    return std::max(p.stiction_tolerance, mu[c] * Rt[c] * fn0[c] * std::min(h, eps_step[c]));
  }
  // vc (3) -> cost, gamma (3), G (3x3 row-major).
  // dual (2 values, or null): G's friction block is the primal-dual one
  // μn⁰/(|v_t|_ε+ε)·(I − sym(z t̂ᵀ)) with the contact's friction dual z, |z| ≤ 1,
  // instead of the Hessian (z = t̂); z = 0 is the friction cost's quadratic
  // majorizer (cenic-math §8.1.7).
  void Eval(int c, const double* vc, double* cost, double* gamma, double* G,
            const double* dual = nullptr) const;
  double NormalPotential(int c, double vn) const;  // N⁺(v_n)
};

// x->resize(n), by an inline push_back of 0 when it grows by one row (a
// rebuild appending rows one by one, docs/cenic-math.md §8.9): the same
// contents, without resize's out-of-line append.
inline void GrowOrResize(std::vector<double>* x, int n) {
  if (static_cast<int>(x->size()) + 1 == n)
    x->push_back(0.0);
  else
    x->resize(n);
}

// Near-rigid compliance shared by limits and couplings (§3.5; violated limits: §5.2): returns R and
// the damping time scale τ_d for Delassus estimate w.
void NearRigid(double h, double w, const IcfParameters& p, double* R, double* tau_d);

// Velocity bias v̂ = −g0/T of a near-rigid row: T = h + τ_d (§3.5) for
// violations ≪ p.violation_tolerance, blending to tau_r for larger ones.
double NearRigidBias(double g0, double h, double tau_d, double tau_r, const IcfParameters& p);

// Near-rigid rows (§3.5) with ġ = v_c: one-sided limits (§5, g(q) ≥ 0; joint,
// tendon and ball limits) or two-sided couplings (§7: couplers, balls, welds,
// tendon equalities, one row each).
template <bool kUnilateral>
struct NearRigidPool {
  RowStore<1> rows;
  std::vector<double> g0, w;  // residual at q0 (a limit gap may be < 0), Delassus estimate
  std::vector<double> tau_r;  // recovery time scale of large violations [s]
  std::vector<double> R, vhat;
  void Clear();
  int Add(std::span<const int> dofs, double g0, double w, double tau_r = 0);
  // Add of a one-dof row with J = [J1], inline (RowStore::AddSingle).
  int AddSingle(int dof, double J1, double g0_, double w_, double tau_r_) {
    const int c = rows.AddSingle(dof, J1);
    Resize(c + 1);
    SetRow(c, g0_, w_, tau_r_);
    return c;
  }
  // Row c of a rebuild whose rows 0..c−1 are made (docs/cenic-math.md §8.9):
  // the previous build's row c is kept if it is one row on `dof` and every
  // number of it refilled as AddSingle sets it; else the pool is cut at c and
  // the row appended. Returns c.
  // The refill is inline, the cut and append out of line (so the compiler
  // inlines the refill into the build's loops).
  int PutSingle(int c, int dof, double J1, double g0_, double w_, double tau_r_) {
    if (!rows.IsSingleOn(c, dof)) [[unlikely]] {
      if (!rows.RefitSingle(c, dof, J1)) return CutAndAddSingle(c, dof, J1, g0_, w_, tau_r_);
    } else {
      rows.SetSingleJ(c, J1);
    }
    SetRow(c, g0_, w_, tau_r_);
    return c;
  }
  [[gnu::noinline]] int CutAndAddSingle(int c, int dof, double J1, double g0_, double w_,
                                        double tau_r_) {
    Truncate(c);
    return AddSingle(dof, J1, g0_, w_, tau_r_);
  }
  // As PutSingle for a row over `dofs` (its Jacobian block zeroed, as Add's).
  int Put(int c, std::span<const int> dofs, double g0_, double w_, double tau_r_) {
    if (!rows.IsOn(c, dofs)) [[unlikely]] {
      if (!rows.Refit(c, dofs)) return CutAndAdd(c, dofs, g0_, w_, tau_r_);
    } else {
      rows.ZeroJ(c);
    }
    SetRow(c, g0_, w_, tau_r_);
    return c;
  }
  [[gnu::noinline]] int CutAndAdd(int c, std::span<const int> dofs, double g0_, double w_,
                                  double tau_r_) {
    Truncate(c);
    return Add(dofs, g0_, w_, tau_r_);
  }
  // Drops the constraints from n on.
  void Truncate(int n) {
    if (n >= size()) return;
    rows.Truncate(n);
    Resize(n);
  }
  // Every per-row array sized to n rows (the one list of them), and row c's
  // numbers as a new row has them (R and v̂ follow in SetTimeStep).
  void Resize(int n) {
    for (auto* x : {&g0, &w, &tau_r, &R, &vhat}) x->resize(n);
  }
  void SetRow(int c, double g0_, double w_, double tau_r_) {
    g0[c] = g0_; w[c] = w_; tau_r[c] = tau_r_; R[c] = 0; vhat[c] = 0;
  }
  int size() const { return rows.size(); }
  void SetTimeStep(double h, const IcfParameters& p);
  // Inline (as GainPool's and DryFrictionPool's): the solver calls it for
  // every row several times per Newton iteration, mostly for an inactive
  // limit, where the call would cost more than the row.
  // A limit row's piece: active (quadratic) while v̂ − v_c > 0, as in Eval.
  bool Active(int c, double vc) const { return vhat[c] - vc > 0; }
  void Eval(int c, const double* vc, double* cost, double* gamma, double* G) const {
    // ℓ = (v_c − v̂)²/(2R), one-sided for limits (active only while v_c < v̂).
    const double x = vhat[c] - vc[0];
    if (kUnilateral && x <= 0) {
      *cost = 0; gamma[0] = 0; G[0] = 0;
      return;
    }
    *cost = 0.5 * x * x / R[c];
    gamma[0] = x / R[c];
    G[0] = 1.0 / R[c];
  }
};
using LimitPool = NearRigidPool<true>;
using CouplingPool = NearRigidPool<false>;
extern template struct NearRigidPool<true>;
extern template struct NearRigidPool<false>;

// Clamped linear feedback (§6, P19): force = clamp(c - κ v_c, lo, hi) along
// the row, κ = h·kq + kv (first-order position update, §4.4 of the MuJoCo
// mapping). A negative κ is non-stabilizing and is made explicit at v_c0.
struct GainPool {
  RowStore<1> rows;
  std::vector<double> c, kq, kv, vc0, lo, hi;
  std::vector<double> kappa, c_eff, h_over_kappa;  // h / κ (κ > 0): Eval's cost factor
  double h = 0;
  void Clear();
  int Add(std::span<const int> dofs, double c, double kq, double kv, double lo, double hi);
  // Add of a one-dof row with J = [J1], inline (RowStore::AddSingle).
  int AddSingle(int dof, double J1, double c_, double kq_, double kv_, double lo_, double hi_) {
    const int i = rows.AddSingle(dof, J1);
    Resize(i + 1);
    SetRow(i, c_, kq_, kv_, lo_, hi_);
    return i;
  }
  // As NearRigidPool::PutSingle (docs/cenic-math.md §8.9).
  int PutSingle(int i, int dof, double J1, double c_, double kq_, double kv_, double lo_,
                double hi_) {
    if (!rows.IsSingleOn(i, dof)) [[unlikely]] {
      if (!rows.RefitSingle(i, dof, J1))
        return CutAndAddSingle(i, dof, J1, c_, kq_, kv_, lo_, hi_);
    } else {
      rows.SetSingleJ(i, J1);
    }
    SetRow(i, c_, kq_, kv_, lo_, hi_);
    return i;
  }
  [[gnu::noinline]] int CutAndAddSingle(int i, int dof, double J1, double c_, double kq_,
                                        double kv_, double lo_, double hi_) {
    Truncate(i);
    return AddSingle(dof, J1, c_, kq_, kv_, lo_, hi_);
  }
  // As NearRigidPool::Put.
  int Put(int i, std::span<const int> dofs, double c_, double kq_, double kv_, double lo_,
          double hi_) {
    if (!rows.IsOn(i, dofs)) [[unlikely]] {
      if (!rows.Refit(i, dofs)) return CutAndAdd(i, dofs, c_, kq_, kv_, lo_, hi_);
    } else {
      rows.ZeroJ(i);
    }
    SetRow(i, c_, kq_, kv_, lo_, hi_);
    return i;
  }
  [[gnu::noinline]] int CutAndAdd(int i, std::span<const int> dofs, double c_, double kq_,
                                  double kv_, double lo_, double hi_) {
    Truncate(i);
    return Add(dofs, c_, kq_, kv_, lo_, hi_);
  }
  // Drops the constraints from n on.
  void Truncate(int n) {
    if (n >= size()) return;
    rows.Truncate(n);
    Resize(n);
  }
  // As NearRigidPool's: every per-row array, and row i as a new row has it.
  void Resize(int n) {
    for (auto* x : {&c, &kq, &kv, &vc0, &lo, &hi, &kappa, &c_eff, &h_over_kappa})
      GrowOrResize(x, n);
  }
  void SetRow(int i, double c_, double kq_, double kv_, double lo_, double hi_) {
    c[i] = c_; kq[i] = kq_; kv[i] = kv_; vc0[i] = 0;
    lo[i] = lo_; hi[i] = hi_; kappa[i] = 0; c_eff[i] = c_;
    h_over_kappa[i] = 0;
  }
  int size() const { return rows.size(); }
  void Lag(const double* v0);
  void SetTimeStep(double h, const IcfParameters& p);
  // The piece of Eval's Ψ a row with κ > 0 is on at v_c: 0 below lo, 1
  // inside (quadratic), 2 above hi (κ ≤ 0: one linear piece).
  int Piece(int i, double vc) const {
    const double y = c_eff[i] - kappa[i] * vc;
    return y < lo[i] ? 0 : (y > hi[i] ? 2 : 1);
  }
  void Eval(int i, const double* vc, double* cost, double* gamma, double* G) const {
    const double l = lo[i], u = hi[i], k = kappa[i];
    if (k > 0) {
      const double y = c_eff[i] - k * vc[0];
      double psi;  // Huber-type Ψ(y) of §6
      if (y < l) {
        psi = l * (y - 0.5 * l);
        gamma[0] = h * l;
        G[0] = 0;
      } else if (y > u) {
        psi = u * (y - 0.5 * u);
        gamma[0] = h * u;
        G[0] = 0;
      } else {
        psi = 0.5 * y * y;
        gamma[0] = h * y;
        G[0] = h * k;
      }
      *cost = h_over_kappa[i] * psi;  // h / κ Ψ
    } else {
      gamma[0] = h * std::clamp(c_eff[i], l, u);
      *cost = -gamma[0] * vc[0];
      G[0] = 0;
    }
  }
};

// Regularized dry friction |F| along a row (joint/tendon friction loss):
// ℓ = h F (sqrt(v_c² + ε²) − ε). Convex; |γ| < h F. ε is the row's own
// regularization velocity, or v_s where none is given (ε ≤ 0).
struct DryFrictionPool {
  RowStore<1> rows;
  std::vector<double> F, eps_row, eps;
  double h = 0;
  void Clear();
  int Add(std::span<const int> dofs, double F, double eps = 0);
  // As NearRigidPool::Put (docs/cenic-math.md §8.9): row c of a rebuild
  // refilled in place when it is on the same dofs, else the pool cut at c
  // and the row appended.
  int Put(int c, std::span<const int> dofs, double F_, double eps_) {
    if (!rows.IsOn(c, dofs)) [[unlikely]] {
      if (!rows.Refit(c, dofs)) return CutAndAdd(c, dofs, F_, eps_);
    } else {
      rows.ZeroJ(c);
    }
    F[c] = F_; eps_row[c] = eps_; eps[c] = 0;
    return c;
  }
  [[gnu::noinline]] int CutAndAdd(int c, std::span<const int> dofs, double F_, double eps_) {
    Truncate(c);
    return Add(dofs, F_, eps_);
  }
  void Truncate(int n) {
    if (n >= size()) return;
    rows.Truncate(n);
    for (auto* x : {&F, &eps_row, &eps}) x->resize(n);
  }
  int size() const { return rows.size(); }
  void SetTimeStep(double h, const IcfParameters& p);
  void Eval(int c, const double* vc, double* cost, double* gamma, double* G) const {
    const double e = eps[c];
    const double s = std::sqrt(vc[0] * vc[0] + e * e);
    const double hF = h * F[c];
    *cost = hF * (s - e);
    gamma[0] = -hF * vc[0] / s;
    G[0] = hF * e * e / (s * s * s);
  }
};

// Torsional and rolling friction of point contacts (MuJoCo condim 4 and 6;
// not in the CENIC paper). Rows: the relative angular velocity of the two
// bodies in the contact frame, w = [n̂, t̂1, t̂2]ᵀ(ω_B − ω_A): w[0] spins about
// the normal, w[1..2] roll. The torque bound is the contact's *lagged* normal
// impulse times a length (MuJoCo's friction[2] and friction[3]), as for the
// sliding friction (P14), with the same soft norm:
//   ℓ = n⁰ (μ_spin ‖w₀‖_ε_spin + μ_roll ‖(w₁, w₂)‖_ε_roll),  n⁰ = h f_n⁰,
// so every solve stays convex and |τ_spin| < μ_spin f_n⁰, ‖τ_roll‖ < μ_roll f_n⁰.
struct ContactTorquePool {
  RowStore<3> rows;
  std::vector<int> contact;               // index into ContactPool (its f_n⁰)
  // MuJoCo's friction[2..4] lengths [m] (spin; roll about tangent 1, 2); 0: absent.
  std::vector<double> mu_spin, mu_roll1, mu_roll2;
  // Regularization angular velocities [rad/s]: spin; roll, for the larger of
  // the two rolling lengths.
  std::vector<double> eps_spin, eps_roll;
  std::vector<double> fn0, n0;            // lagged normal force [N], n⁰ = h f_n⁰ [N s]
  double h = 0;

  void Clear();
  int Add(std::span<const int> dofs, int contact, double mu_spin, double mu_roll1,
          double mu_roll2, double eps_spin, double eps_roll);
  int size() const { return rows.size(); }
  void Lag(const ContactPool& contacts);  // after contacts.Lag
  void SetTimeStep(double h);
  void Eval(int c, const double* vc, double* cost, double* gamma, double* G) const;
};

inline double Sigmoid(double x) { return x / std::sqrt(1.0 + x * x); }

// ContactPool's per-row evaluation, inline so that the solver's loops
// (Evaluate, the line search) drop the stores a frictionless row does not need
// (the same operations, so the same bits; cenic-math §8.4).
inline double PosPart(double x) { return x > 0 ? x : 0; }

inline double ContactPool::NormalPotential(int c, double x) const {
  // N⁺(x) = h [f_e⁰ x − ½ h k x² − ½ d f_e⁰ x² + ⅓ d h k x³]
  const double kc = k[c], dc = d[c], fe = fe0[c];
  return h * (fe * x - 0.5 * h * kc * x * x - 0.5 * dc * fe * x * x + dc * h * kc * x * x * x / 3.0);
}

// Always inlined into the solver's row loops (cenic-math §8.9: the
// compiler's budget for icf_solver.cc dropped it after unrelated edits there,
// +2 % instructions per step on clutter).
[[gnu::always_inline]] inline void ContactPool::Eval(int c, const double* vc, double* cost,
                                                     double* gamma, double* G,
                                                     const double* dual) const {
  const double vn = vc[0], kc = k[c], dc = d[c], fe = fe0[c];
  // Normal impulse (P13) and its antiderivative N (§4.4), shifted by the
  // constant N⁺(v̂) so that the potential vanishes where the contact is open.
  const double N = NormalPotential(c, std::min(vn, vhat[c])) - N_hat[c];
  double gn = 0, dgn = 0;
  if (vn < vhat[c]) {
    gn = h * PosPart(fe - h * kc * vn) * PosPart(1.0 - dc * vn);
    dgn = -h * (h * kc * (1.0 - dc * vn) + dc * (fe - h * kc * vn));
  }
  // Lagged regularized friction (§4.6, P14).
  const double mun = mu[c] * n0[c], e = eps[c];
  if (mun == 0.0) {  // frictionless (condim 1, or no normal force at v⁰): the
                     // friction terms below are all zero
    *cost = 0.0 - N;
    gamma[0] = gn;
    gamma[1] = gamma[2] = 0.0;
    G[0] = -dgn;
    for (int q = 1; q < 9; ++q) G[q] = 0.0;
    return;
  }
  const double vt1 = vc[1], vt2 = vc[2];
  const double soft = std::sqrt(vt1 * vt1 + vt2 * vt2 + e * e);  // |v_t|_ε + ε
  const double t1 = vt1 / soft, t2 = vt2 / soft;
  *cost = mun * (soft - e) - N;
  gamma[0] = gn;
  gamma[1] = -mun * t1;
  gamma[2] = -mun * t2;
  // G (§4.7): μn⁰/(|v_t|_ε+ε)·(I − n̂n̂ᵀ − t̂t̂ᵀ) − γ_n' n̂n̂ᵀ.
  const double a = mun / soft;
  G[0] = -dgn; G[1] = 0;                 G[2] = 0;
  G[3] = 0;    G[4] = a * (1 - t1 * t1); G[5] = -a * t1 * t2;
  G[6] = 0;    G[7] = -a * t1 * t2;      G[8] = a * (1 - t2 * t2);
  if (dual) {
    // Primal-dual friction block (cenic-math §8.1.7): a (I − sym(z t̂ᵀ)); PSD
    // for |z| ≤ 1 since |t̂| < 1, and the Hessian itself at z = t̂.
    const double z1 = dual[0], z2 = dual[1];
    G[4] = a * (1 - z1 * t1);
    G[5] = G[7] = -0.5 * a * (z1 * t2 + z2 * t1);
    G[8] = a * (1 - z2 * t2);
  }
}

}  // namespace mjcenic::icf
