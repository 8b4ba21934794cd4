#include "mjcenic/icf/evaluator.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "mjcenic/icf/short_arrays.h"

namespace mjcenic::icf {

void TagIslands(const IcfModel& m, bool islands_on, IcfData* d) {
  d->Resize(m);
  const bool split = islands_on && m.num_islands > 1;
  d->num_islands = split ? m.num_islands : 1;
  // (The tables read through local pointers: the int stores below could
  // alias m's counts, so the compiler re-read them per dof; cenic-math §8.9.)
  int* dof_island = d->dof_island.data();
  if (split) {
    const int *island_of_clique = m.island_of_clique.data(), *clique_of_dof = m.clique_of_dof.data();
    for (int i = 0; i < m.nv; ++i) dof_island[i] = island_of_clique[clique_of_dof[i]];
  } else {
    std::fill(dof_island, dof_island + m.nv, 0);
  }
  // A constraint's island is its first dof's (IcfModel::IslandOf).
  ForEachPool(m, *d, [&](const auto& pool, auto& pd) {
    const int n = pool.size();
    if (n == 0) return;
    int* island = pd.island.data();
    if (!split) {
      std::fill(island, island + n, 0);
    } else if (pool.rows.all_single()) {  // row k's one dof at single_dofs()[k]
      const int* dof = pool.rows.single_dofs();
      for (int k = 0; k < n; ++k) island[k] = dof_island[dof[k]];
    } else {
      for (int k = 0; k < n; ++k) {
        const std::span<const int> dofs = pool.rows.dofs(k);
        island[k] = dofs.empty() ? 0 : dof_island[dofs[0]];
      }
    }
  });
}

namespace {

// The momentum part of Evaluate: ∇ℓ = A v − r (before the rows' Jᵀγ), its
// cost, and per island c_i, also into ℓ_i(0). Returns the cost.
double EvaluateMomentum(const IcfModel& m, const double* v, const char* frozen, IcfData* d) {
  const int nv = m.nv, ni = d->num_islands;
  const double *Av = d->Av.data(), *r = m.r.data();
  double *grad = d->grad.data(), *lc = d->ls_c.data();
  const int* dof_isl = d->dof_island.data();
  double cost = 0;
  if (ni > 1) {
    std::fill(lc, lc + ni, 0.0);
    for (int i = 0; i < nv; ++i) {
      // A frozen island's gradient entries stay (see the header).
      if (!frozen || !frozen[dof_isl[i]]) grad[i] = Av[i] - r[i];
      const double ci = v[i] * (0.5 * Av[i] - r[i]);
      cost += ci;
      lc[dof_isl[i]] += ci;
    }
  } else {
    for (int i = 0; i < nv; ++i) {
      grad[i] = Av[i] - r[i];
      cost += v[i] * (0.5 * Av[i] - r[i]);
    }
    lc[0] = cost;  // one island: c_0 is ℓ's momentum part
  }
  std::copy(lc, lc + ni, d->ls_l0.data());
  return cost;
}

// One pool's rows at v (or at v_c(0) + α u), their costs into *cost and the
// island sums, −Jᵀγ into the gradient.
template <bool kIslands, class Pool, class Data>
void EvaluatePool(const Pool& pool, Data& pd, const double* v, const char* frozen,
                  const double* alpha, double* dual, double* cost, IcfData* d) {
  constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
  const int n = pool.size();
  if (n == 0) return;  // (most pools of a small model are empty)
  const auto& rows = pool.rows;
  const int* isl = pd.island.data();
  const double *base = pd.vc_base.data(), *u = pd.u.data();
  double *vc_all = pd.vc.data(), *gamma_all = pd.gamma.data(), *G = pd.G.data();
  double *row_cost = pd.cost.data(), *l0 = d->ls_l0.data(), *grad = d->grad.data();
  for (int c = 0; c < n; ++c) {
    double* vc = vc_all + R * c;
    double* gamma = gamma_all + R * c;
    const int ic = kIslands ? isl[c] : 0;  // one island: every row's is 0
    const bool live = !frozen || !frozen[ic];
    if (live) {
      if (alpha) {  // v_c(α) = v_c(0) + α u on the island's α (§3.4)
        const double a = alpha[ic];
        for (int q = 0; q < R; ++q) vc[q] = base[R * c + q] + a * u[R * c + q];
      } else {
        rows.Multiply(c, v, vc);
      }
      if constexpr (requires { pool.bias; }) {  // contacts: surface-velocity bias
        if (!alpha)
          for (int q = 0; q < 3; ++q) vc[q] += pool.bias[3 * c + q];
        pool.Eval(c, vc, row_cost + c, gamma, G + R * R * c, dual ? dual + 2 * c : nullptr);
      } else {
        pool.Eval(c, vc, row_cost + c, gamma, G + R * R * c);
      }
    }
    // One-row constraints are mostly inactive limits (ℓ_c = 0, γ = 0):
    // nothing to add (each sum starts at +0, so adding +0 changes none).
    if (R == 1 && row_cost[c] == 0.0 && gamma[0] == 0.0) continue;
    *cost += row_cost[c];
    if constexpr (kIslands) l0[ic] += row_cost[c];
    if constexpr (R == 3) {
      // γ_t = 0 (a frictionless contact): J's first row alone, the same sum.
      if (live && gamma[1] == 0.0 && gamma[2] == 0.0) {
        rows.MultiplyTransposeAddFirst(c, gamma[0], -1.0, grad);
        continue;
      }
    }
    if (live && (R > 1 || gamma[0] != 0.0)) rows.MultiplyTransposeAdd(c, gamma, -1.0, grad);
  }
}

}  // namespace

void Evaluate(const IcfModel& m, const double* v, IcfData* d, const char* frozen,
              const double* advanced_alpha, bool dual) {
  const int ni = d->num_islands;
  // Freezing is per island of several: a one-island solve that converged
  // returns instead (its gradient below would miss the rows' Jᵀγ).
  if (ni <= 1) frozen = nullptr;
  CopyShort(v, m.nv, d->v.data());  // (inline: cenic-math §8.9.5)
  if (!advanced_alpha) m.MultiplyA(v, d->Av.data());
  double cost = EvaluateMomentum(m, v, frozen, d);
  double* z = dual ? d->friction_dual.data() : nullptr;
  if (ni > 1)
    ForEachPool(m, *d, [&](const auto& p, auto& pd) {
      EvaluatePool<true>(p, pd, v, frozen, advanced_alpha, z, &cost, d);
    });
  else
    ForEachPool(m, *d, [&](const auto& p, auto& pd) {
      EvaluatePool<false>(p, pd, v, frozen, advanced_alpha, z, &cost, d);
    });
  d->cost = cost;
  if (ni == 1) d->ls_l0[0] = cost;
}

void AdvanceProducts(const IcfModel& m, const double* alpha, IcfData* d) {
  // A v and the constraint velocities v_c = J v + b are affine in v, so they
  // follow from the line search's A w and u = J w (§3.4) without another
  // product with A or J; a frozen island has α = 0 (cenic-math §8.9).
  const int* isl = d->dof_island.data();
  for (int i = 0; i < m.nv; ++i) d->Av[i] += alpha[isl[i]] * d->Aw[i];
}

void PrepareLineSearch(const IcfModel& m, const double* w, IcfData* d, const char* frozen) {
  // §3.4 per island i: momentum part ½a_iα² + b_iα + c_i (c_i is
  // Evaluate's); u = J w per constraint; ℓ_i'(0) in the same pass.
  const int nv = m.nv, ni = d->num_islands;
  std::copy(w, w + nv, d->w.begin());
  m.MultiplyA(w, d->Aw.data());
  double *la = d->ls_a.data(), *lb = d->ls_b.data(), *d0 = d->ls_d0.data();
  const double *Aw = d->Aw.data(), *Av = d->Av.data();
  const double *r = m.r.data(), *g = d->grad.data();
  const int* dof_isl = d->dof_island.data();
  if (ni > 1) {
    for (int i = 0; i < ni; ++i) la[i] = lb[i] = d0[i] = 0.0;
    for (int i = 0; i < nv; ++i) {
      const int isl = dof_isl[i];
      la[isl] += Aw[i] * w[i];
      lb[isl] += (Av[i] - r[i]) * w[i];
      d0[isl] += g[i] * w[i];
    }
  } else {  // the same sums in registers
    double a = 0, b = 0, s = 0;
    for (int i = 0; i < nv; ++i) {
      a += Aw[i] * w[i];
      b += (Av[i] - r[i]) * w[i];
      s += g[i] * w[i];
    }
    la[0] = a, lb[0] = b, d0[0] = s;
  }
  ForEachPool(m, *d, [&](const auto& pool, auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    const int n = pool.size();
    if (n == 0) return;
    const bool skip = frozen && ni > 1;  // rows of frozen islands keep v_c(0) and u
    const int* isl = pd.island.data();
    if (!skip) CopyShort(pd.vc.data(), R * n, pd.vc_base.data());
    for (int k = 0; k < n; ++k) {
      if (skip) {
        if (frozen[isl[k]]) continue;
        for (int q = 0; q < R; ++q) pd.vc_base[R * k + q] = pd.vc[R * k + q];
      }
      pool.rows.Multiply(k, w, pd.u.data() + R * k);
    }
  });
}

namespace {

// One pool's part of EvalAlongLineIslands; kOne: one island, its sums kept
// in registers and added to in the same order.
template <bool kOne, class Pool, class Data>
void AlongPool(const Pool& pool, const Data& pd, const double* alpha, const char* active,
               double* cost, double* d1, double* d2) {
  constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
  const int n = pool.size();
  if (n == 0) return;
  const int* island = pd.island.data();
  const double *base = pd.vc_base.data(), *u_all = pd.u.data();
  double vc[R], gamma[R], G[R * R], ci;
  double l_one = 0, f_one = 0, h_one = 0, a_one = 0;
  if constexpr (kOne) l_one = cost[0], f_one = d1[0], h_one = d2[0], a_one = alpha[0];
  for (int k = 0; k < n; ++k) {
    int isl = 0;
    double a = a_one;
    if constexpr (!kOne) {
      isl = island[k];
      if (!active[isl]) continue;
      a = alpha[isl];
    }
    const double* u = u_all + R * k;
    for (int q = 0; q < R; ++q) vc[q] = base[R * k + q] + a * u[q];
    pool.Eval(k, vc, &ci, gamma, G);
    double& l = kOne ? l_one : cost[isl];
    double& f = kOne ? f_one : d1[isl];
    double& h = kOne ? h_one : d2[isl];
    if constexpr (requires { pool.bias; }) {
      // A frictionless contact (μn⁰ = 0): γ_t = 0 and G = G[0] n̂n̂ᵀ, so the
      // sums below reduce to their first terms (each starts at +0, so the
      // dropped ±0 terms change no bit).
      if (pool.mu[k] * pool.n0[k] == 0.0) {
        l += ci;
        f += 0.0 - u[0] * gamma[0];
        h += 0.0 + u[0] * (0.0 + G[0] * u[0]);
        continue;
      }
    }
    // An inactive limit (ℓ_c = 0, γ = 0, G = 0) adds nothing.
    if (R == 1 && ci == 0.0 && gamma[0] == 0.0 && G[0] == 0.0) continue;
    l += ci;
    if (R == 1 && gamma[0] == 0.0 && G[0] == 0.0) continue;
    double dl = 0, ddl = 0;
    for (int q = 0; q < R; ++q) {
      dl -= u[q] * gamma[q];
      double Gu = 0;
      for (int p = 0; p < R; ++p) Gu += G[q * R + p] * u[p];
      ddl += u[q] * Gu;
    }
    f += dl;
    h += ddl;
  }
  if constexpr (kOne) cost[0] = l_one, d1[0] = f_one, d2[0] = h_one;
}

}  // namespace

void EvalAlongLineIslands(const IcfModel& m, const IcfData& d, const double* alpha,
                          const char* active, double* cost, double* d1, double* d2) {
  const int ni = d.num_islands;
  for (int i = 0; i < ni; ++i) {
    if (!active[i]) continue;
    const double a = alpha[i];
    cost[i] = 0.5 * d.ls_a[i] * a * a + d.ls_b[i] * a + d.ls_c[i];
    d1[i] = d.ls_a[i] * a + d.ls_b[i];
    d2[i] = d.ls_a[i];
  }
  if (ni > 1)
    ForEachPool(m, d, [&](const auto& p, const auto& pd) {
      AlongPool<false>(p, pd, alpha, active, cost, d1, d2);
    });
  else if (active[0])
    ForEachPool(m, d, [&](const auto& p, const auto& pd) {
      AlongPool<true>(p, pd, alpha, active, cost, d1, d2);
    });
}

void StartFrictionDual(const IcfModel& m, IcfData* d) {
  // z_0 = t̂(v_0), the exact Hessian's dual (cenic-math §8.1.7).
  const ContactPool& cp = m.contacts;
  const double* vc = d->contacts.vc.data();
  for (int c = 0; c < cp.size(); ++c) {
    const double v1 = vc[3 * c + 1], v2 = vc[3 * c + 2], e = cp.eps[c];
    const double soft = std::sqrt(v1 * v1 + v2 * v2 + e * e);
    d->friction_dual[2 * c] = v1 / soft;
    d->friction_dual[2 * c + 1] = v2 / soft;
  }
}

void UpdateFrictionDual(const IcfModel& m, const char* frozen, const double* alpha,
                        double alpha_cap, IcfData* d) {
  // Newton on z (|v_t|_ε+ε) − v_t = 0 linearized at the step's base point
  // (cenic-math §8.1.7): z ← t̂ + (Δv_t − z (t̂·Δv_t))/(|v_t|_ε+ε), Δv_t = α_i u_t,
  // then |z| ≤ 1. An extended search's α beyond α_max is not followed
  // (cenic-math §8.3): the linearization would extrapolate the slip too far.
  const ContactPool& cp = m.contacts;
  const PoolData<3>& cd = d->contacts;
  for (int c = 0; c < cp.size(); ++c) {
    const int isl = cd.island[c];
    if (frozen && frozen[isl]) continue;
    if (cp.mu[c] * cp.n0[c] == 0.0) continue;  // frictionless: z is never used
    const double* vb = cd.vc_base.data() + 3 * c;
    const double* u = cd.u.data() + 3 * c;
    const double e = cp.eps[c];
    const double soft = std::sqrt(vb[1] * vb[1] + vb[2] * vb[2] + e * e);
    const double t1 = vb[1] / soft, t2 = vb[2] / soft;
    const double a = std::min(alpha[isl], alpha_cap);
    const double d1 = a * u[1], d2 = a * u[2];
    double* z = d->friction_dual.data() + 2 * c;
    const double td = t1 * d1 + t2 * d2;
    double z1 = t1 + (d1 - z[0] * td) / soft, z2 = t2 + (d2 - z[1] * td) / soft;
    const double nz = std::sqrt(z1 * z1 + z2 * z2);
    if (nz > 1) z1 /= nz, z2 /= nz;
    z[0] = z1;
    z[1] = z2;
  }
}

}  // namespace mjcenic::icf
