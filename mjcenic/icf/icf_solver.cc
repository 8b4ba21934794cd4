#include "mjcenic/icf/icf_solver.h"

#include "mjcenic/icf/hessian_internal.h"
#include "mjcenic/icf/short_arrays.h"

#include <Eigen/Cholesky>
#include <Eigen/Dense>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <limits>
#include <type_traits>

namespace mjcenic::icf {

namespace {
constexpr double kEpsMachine = std::numeric_limits<double>::epsilon();
// PCG forcing floor: a direction's relative residual need not be below this
// fraction of tolerance / |D∇ℓ| (cenic-math §8.4, "No oversolving").
constexpr double kOversolve = 0.1;
// The sweeps' split of trees (cenic-math §8.1, "Impact sweeps", "h24c"): a
// tree of at most this many dofs is a free body, for which diag(A) is nearly
// its A; a larger one is articulated.
constexpr int kFreeBodyDofs = 6;

double Dot(const std::vector<double>& a, const double* b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}
}  // namespace

const char* ToString(SolveStatus s) {
  switch (s) {
    case SolveStatus::kConverged: return "converged";
    case SolveStatus::kMaxIterations: return "maximum Newton iterations reached";
    case SolveStatus::kNotPositiveDefinite: return "Hessian not positive definite";
    case SolveStatus::kNotDescent: return "Newton direction is not a descent direction";
    case SolveStatus::kLineSearchFailed: return "line search failed";
    case SolveStatus::kNonFinite: return "non-finite value in the convex problem";
  }
  return "unknown";
}

IcfSolver::IcfSolver() = default;
IcfSolver::~IcfSolver() = default;

HessianFactor* IcfSolver::Factor(LinearSolverKind kind, const SolverOptions& o) {
  auto& f = kind == LinearSolverKind::kSparse    ? sparse_
            : kind == LinearSolverKind::kIslands ? islands_
            : kind == LinearSolverKind::kPcg     ? pcg_
            : kind == LinearSolverKind::kLowRank ? lowrank_
            : kind == LinearSolverKind::kBlock   ? block_
            : kind == LinearSolverKind::kTree    ? tree_
                                                 : dense_;
  if (!f) f = MakeHessianFactor(kind, o.pcg_tolerance, o.pcg_max_iterations);
  f->SetIterative(o.pcg_tolerance, o.pcg_max_iterations);  // this solve's settings
  return f.get();
}

void IcfSolver::TagIslands(const IcfModel& m) {
  data_.Resize(m);
  ResizeIslandWork(NumIslands(m));  // Evaluate's (it does not size them)
  dof_island_.resize(m.nv);
  // (The tests and tables hoisted out of the loops, through local pointers:
  // the int stores below could alias m's counts, so GCC re-read them per
  // dof and per row; cenic-math §8.9, "h25d".)
  int* dof_island = dof_island_.data();
  if (islands_on_ && m.num_islands) {
    const int *island_of_clique = m.island_of_clique.data(), *clique_of_dof = m.clique_of_dof.data();
    for (int i = 0; i < m.nv; ++i) dof_island[i] = island_of_clique[clique_of_dof[i]];
  } else {
    std::fill(dof_island, dof_island + m.nv, 0);
  }
  // A constraint's island is its first dof's (IcfModel::IslandOf).
  const bool one = !islands_on_ || m.num_islands <= 1;
  auto tag = [&](const auto& pool, auto& pd) {
    const int n = pool.size();
    if (n == 0) return;
    int* island = pd.island.data();
    if (one) {
      std::fill(island, island + n, 0);
      return;
    }
    if (pool.rows.all_single()) {  // row k's one dof at single_dofs()[k]
      const int* dof = pool.rows.single_dofs();
      for (int k = 0; k < n; ++k) island[k] = dof_island[dof[k]];
      return;
    }
    for (int k = 0; k < n; ++k) {
      const std::span<const int> dofs = pool.rows.dofs(k);
      island[k] = dofs.empty() ? 0 : dof_island[dofs[0]];
    }
  };
  ForEachPool(m, data_, tag);
}

void IcfSolver::Evaluate(const IcfModel& m, const double* v, const char* frozen,
                         const char* majorize, bool advanced, bool dual) {
  // Also, per island i, the line search's constants at this base point
  // (§3.4, §8.3): the momentum part c_i = Σ v(½Av − r) (data_.ls_c) and
  // ℓ_i(0) = c_i + Σ ℓ_c (ls_.l0), summed in the order PrepareLineSearch and
  // LineSearch used to, in this pass over the dofs and rows.
  // data_ and the per-island work are sized by TagIslands, which every
  // caller runs first for this model (cenic-math §8.9, per-call set-up).
  // Without line_search_sums_ (the small path, which takes no line search
  // and whose fallback evaluates again) the per-island sums c_i and ℓ_i(0)
  // are not formed (cenic-math §8.9, "h26b"); cost, gradient, γ and G are
  // the same.
  const int nv = m.nv;
  const int ni = NumIslands(m);
  // Freezing is per island of several: a one-island solve that converged
  // returns instead (its gradient below would miss the rows' Jᵀγ).
  if (ni <= 1) frozen = nullptr;
  CopyShort(v, nv, data_.v.data());  // (inline: cenic-math §8.9, "Short copies")
  if (!advanced) m.MultiplyA(v, data_.Av.data());
  double* lc = data_.ls_c.data();
  double* l0 = ls_.l0.data();
  const double *Av = data_.Av.data(), *r = m.r.data();
  double* grad = data_.grad.data();
  const int* dof_isl = dof_island_.data();
  double cost = 0;
  if (ni > 1 && !line_search_sums_ && !frozen) {
    // (The rows' ℓ_c below still add into l0, unread: cheaper than a test
    // per row. With frozen islands, rare here, the sums are formed.)
    for (int i = 0; i < nv; ++i) {
      grad[i] = Av[i] - r[i];
      cost += v[i] * (0.5 * Av[i] - r[i]);
    }
  } else {
    if (ni > 1) std::fill(lc, lc + ni, 0.0);  // (one island: lc[0] is set below)
    if (ni > 1 && frozen) {  // a frozen island's gradient entries stay (see the header)
      for (int i = 0; i < nv; ++i) {
        if (!frozen[dof_isl[i]]) grad[i] = Av[i] - r[i];
        const double ci = v[i] * (0.5 * Av[i] - r[i]);
        cost += ci;
        lc[dof_isl[i]] += ci;
      }
    } else if (ni > 1) {
      for (int i = 0; i < nv; ++i) {
        grad[i] = Av[i] - r[i];
        const double ci = v[i] * (0.5 * Av[i] - r[i]);
        cost += ci;
        lc[dof_isl[i]] += ci;
      }
    } else {
      for (int i = 0; i < nv; ++i) {
        grad[i] = Av[i] - r[i];
        cost += v[i] * (0.5 * Av[i] - r[i]);
      }
      lc[0] = cost;  // one island: c_0 is ℓ's momentum part, and ℓ_0(0) = ℓ (below)
    }
    for (int i = 0; i < ni; ++i) l0[i] = lc[i];
  }
  const double* alpha = ls_.alpha.data();
  auto eval_pool = [&](const auto& pool, auto& pd, auto islands) {
    constexpr bool kIslands = decltype(islands)::value;
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    const int n = pool.size();
    if (n == 0) return;  // (most pools of a small model are empty)
    const auto& rows = pool.rows;
    const int* isl = pd.island.data();
    const double *base = pd.vc_base.data(), *u = pd.u.data();
    double *vc_all = pd.vc.data(), *gamma_all = pd.gamma.data(), *G = pd.G.data();
    double* row_cost = pd.cost.data();
    for (int c = 0; c < n; ++c) {
      double* vc = vc_all + R * c;
      double* gamma = gamma_all + R * c;
      const int ic = kIslands ? isl[c] : 0;  // one island: every row's is 0
      const bool live = !frozen || !frozen[ic];
      if (live) {
        if (advanced) {  // v_c(α) = v_c(0) + α u on the island's α (§3.4)
          const double a = alpha[ic];
          for (int q = 0; q < R; ++q) vc[q] = base[R * c + q] + a * u[R * c + q];
        } else {
          rows.Multiply(c, v, vc);
        }
        if constexpr (requires { pool.bias; }) {  // contacts: surface-velocity bias
          if (!advanced)
            for (int q = 0; q < 3; ++q) vc[q] += pool.bias[3 * c + q];
          pool.Eval(c, vc, row_cost + c, gamma, G + R * R * c, majorize && majorize[ic],
                    dual ? data_.friction_dual.data() + 2 * c : nullptr);
        } else {
          pool.Eval(c, vc, row_cost + c, gamma, G + R * R * c);
        }
      }
      // One-row constraints are mostly inactive limits (ℓ_c = 0, γ = 0):
      // nothing to add (adding +0 changes no sum here: each starts at +0, so
      // none is −0).
      if (R == 1 && row_cost[c] == 0.0 && gamma[0] == 0.0) continue;
      cost += row_cost[c];
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
  };
  if (ni > 1)
    ForEachPool(m, data_, [&](const auto& p, auto& d) { eval_pool(p, d, std::true_type{}); });
  else
    ForEachPool(m, data_, [&](const auto& p, auto& d) { eval_pool(p, d, std::false_type{}); });
  data_.cost = cost;
  if (ni == 1) l0[0] = cost;
}

void IcfSolver::AdvanceProducts(const IcfModel& m) {
  // v ← v + α_i w on island i (TakeStep): A v and the constraint velocities
  // v_c = J v + b are affine in v, so they follow from the line search's
  // A w and u = J w (§3.4) without another product with A or J. The
  // constraint velocities are formed by the next Evaluate (advanced), in its
  // pass over the rows, and only for the rows it evaluates: a row of a frozen
  // island (or of an island PullBackGuess keeps) has α = 0, so its v_c is
  // already the stored one (cenic-math §8.9).
  const double* alpha = ls_.alpha.data();
  const int* isl = dof_island_.data();
  for (int i = 0; i < m.nv; ++i) data_.Av[i] += alpha[isl[i]] * data_.Aw[i];
}

void IcfSolver::StartFrictionDual(const IcfModel& m) {
  // z_0 = t̂(v_0), the exact Hessian's dual (data_ holds v_0's contact
  // velocities), cenic-math §8.1.
  const ContactPool& cp = m.contacts;
  const double* vc = data_.contacts.vc.data();
  for (int c = 0; c < cp.size(); ++c) {
    const double v1 = vc[3 * c + 1], v2 = vc[3 * c + 2], e = cp.eps[c];
    const double soft = std::sqrt(v1 * v1 + v2 * v2 + e * e);
    data_.friction_dual[2 * c] = v1 / soft;
    data_.friction_dual[2 * c + 1] = v2 / soft;
  }
}

void IcfSolver::UpdateFrictionDual(const IcfModel& m, bool per_island, double alpha_cap) {
  // Newton on z (|v_t|_ε+ε) − v_t = 0 linearized at the step's base point
  // (cenic-math §8.1): z ← t̂ + (Δv_t − z (t̂·Δv_t))/(|v_t|_ε+ε), Δv_t = α_i u_t,
  // then |z| ≤ 1. Needs PrepareLineSearch's vc_base, u and LineSearch's α.
  // An extended search's α beyond α_max is not followed (α_i ≤ alpha_cap,
  // cenic-math §8.3): the linearization would extrapolate the slip too far.
  const ContactPool& cp = m.contacts;
  const PoolData<3>& cd = data_.contacts;
  for (int c = 0; c < cp.size(); ++c) {
    const int isl = cd.island[c];
    if (per_island && isl_.frozen[isl]) continue;
    if (cp.mu[c] * cp.n0[c] == 0.0) continue;  // frictionless: z is never used
    const double* vb = cd.vc_base.data() + 3 * c;
    const double* u = cd.u.data() + 3 * c;
    const double e = cp.eps[c];
    const double soft = std::sqrt(vb[1] * vb[1] + vb[2] * vb[2] + e * e);
    const double t1 = vb[1] / soft, t2 = vb[2] / soft;
    const double a = std::min(ls_.alpha[isl], alpha_cap);
    const double d1 = a * u[1], d2 = a * u[2];
    double* z = data_.friction_dual.data() + 2 * c;
    const double td = t1 * d1 + t2 * d2;
    double z1 = t1 + (d1 - z[0] * td) / soft, z2 = t2 + (d2 - z[1] * td) / soft;
    const double nz = std::sqrt(z1 * z1 + z2 * z2);
    if (nz > 1) z1 /= nz, z2 /= nz;
    z[0] = z1;
    z[1] = z2;
  }
}

namespace {
// v_c(0) and u = J w of every row of one pool (§3.4): PrepareLineSearch's
// and SolveSmall's.
template <class Pool, class Data>
void StartRowsAlong(const Pool& pool, Data& pd, const double* w) {
  constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
  const int n = pool.size();
  CopyShort(pd.vc.data(), R * n, pd.vc_base.data());
  for (int k = 0; k < n; ++k) pool.rows.Multiply(k, w, pd.u.data() + R * k);
}
}  // namespace

void IcfSolver::PrepareLineSearch(const IcfModel& m, const double* w, const char* frozen) {
  // §3.4 per island i: momentum part ½a_iα² + b_iα + c_i; u = J w per
  // constraint. Requires Evaluate() at the base point v (and the island tags
  // it or Solve() set).
  // Also ℓ_i'(0) = ∇ℓ_iᵀ w into ls_.d0 (LineSearch's), in the same pass.
  const int nv = m.nv;
  const int ni = NumIslands(m);
  ResizeIslandWork(ni);
  if (static_cast<int>(dof_island_.size()) != nv) TagIslands(m);  // (a misuse; cheap guard)
  std::copy(w, w + nv, data_.w.begin());
  m.MultiplyA(w, data_.Aw.data());
  // c_i (data_.ls_c) is Evaluate's.
  double* la = data_.ls_a.data();
  double* lb = data_.ls_b.data();
  double* d0 = ls_.d0.data();
  const double *Aw = data_.Aw.data(), *Av = data_.Av.data();
  const double *r = m.r.data(), *g = data_.grad.data();
  const int* dof_isl = dof_island_.data();
  if (ni > 1) {
    for (int i = 0; i < ni; ++i) la[i] = lb[i] = d0[i] = 0.0;
    for (int i = 0; i < nv; ++i) {
      const int isl = dof_isl[i];
      la[isl] += Aw[i] * w[i];
      lb[isl] += (Av[i] - r[i]) * w[i];
      d0[isl] += g[i] * w[i];
    }
  } else {  // the same sums in registers
    double a = 0, b = 0, d = 0;
    for (int i = 0; i < nv; ++i) {
      a += Aw[i] * w[i];
      b += (Av[i] - r[i]) * w[i];
      d += g[i] * w[i];
    }
    la[0] = a, lb[0] = b, d0[0] = d;
  }
  auto prep = [&](const auto& pool, auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    const int n = pool.size();
    if (n == 0) return;
    if (frozen && ni > 1) {  // rows of frozen islands keep v_c(0) and u (never read)
      const int* isl = pd.island.data();
      double* u = pd.u.data();
      for (int k = 0; k < n; ++k) {
        if (frozen[isl[k]]) continue;
        for (int q = 0; q < R; ++q) pd.vc_base[R * k + q] = pd.vc[R * k + q];
        pool.rows.Multiply(k, w, u + R * k);
      }
      return;
    }
    StartRowsAlong(pool, pd, w);
  };
  ForEachPool(m, data_, prep);
}

void IcfSolver::EvalAlongLineIslands(const IcfModel& m, const double* alpha, const char* active,
                                     double* cost, double* d1, double* d2) {
  const int ni = NumIslands(m);
  for (int i = 0; i < ni; ++i) {
    if (!active[i]) continue;
    const double a = alpha[i];
    cost[i] = 0.5 * data_.ls_a[i] * a * a + data_.ls_b[i] * a + data_.ls_c[i];
    d1[i] = data_.ls_a[i] * a + data_.ls_b[i];
    d2[i] = data_.ls_a[i];
  }
  // One island (kOne): its α, and its sums kept in registers, added to in
  // the same order.
  auto along = [&](const auto& pool, auto& pd, auto one) {
    constexpr bool kOne = decltype(one)::value;
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
      if constexpr (requires { pool.bias; }) {
        // A frictionless contact (ContactPool::Eval's μn⁰ = 0): γ_t = 0 and G
        // is G[0] n̂n̂ᵀ, so the loops below reduce to their first terms (each
        // sum starts at +0, so the dropped ±0 terms change no bit).
        if (pool.mu[k] * pool.n0[k] == 0.0) {
          (kOne ? l_one : cost[isl]) += ci;
          (kOne ? f_one : d1[isl]) += 0.0 - u[0] * gamma[0];
          (kOne ? h_one : d2[isl]) += 0.0 + u[0] * (0.0 + G[0] * u[0]);
          continue;
        }
      }
      // An inactive limit (ℓ_c = 0, γ = 0, G = 0) adds nothing (the cost
      // is never −0, so + 0 would not change it).
      if (R == 1 && ci == 0.0 && gamma[0] == 0.0 && G[0] == 0.0) continue;
      (kOne ? l_one : cost[isl]) += ci;
      if (R == 1 && gamma[0] == 0.0 && G[0] == 0.0) continue;
      double dl = 0, ddl = 0;
      for (int q = 0; q < R; ++q) {
        dl -= u[q] * gamma[q];
        double Gu = 0;
        for (int p = 0; p < R; ++p) Gu += G[q * R + p] * u[p];
        ddl += u[q] * Gu;
      }
      (kOne ? f_one : d1[isl]) += dl;
      (kOne ? h_one : d2[isl]) += ddl;
    }
    if constexpr (kOne) cost[0] = l_one, d1[0] = f_one, d2[0] = h_one;
  };
  if (ni > 1)
    ForEachPool(m, data_, [&](const auto& p, auto& d) { along(p, d, std::false_type{}); });
  else if (active[0])
    ForEachPool(m, data_, [&](const auto& p, auto& d) { along(p, d, std::true_type{}); });
}

void IcfSolver::EvalAlongLine(const IcfModel& m, double alpha, double* cost, double* d1,
                              double* d2) {
  const int ni = NumIslands(m);
  ResizeIslandWork(ni);
  std::fill(ls_.alpha.begin(), ls_.alpha.begin() + ni, alpha);
  std::fill(ls_.active.begin(), ls_.active.begin() + ni, 1);
  EvalAlongLineIslands(m, ls_.alpha.data(), ls_.active.data(), ls_.l.data(), ls_.f.data(),
                       ls_.df.data());
  *cost = *d1 = *d2 = 0;
  for (int i = 0; i < ni; ++i) {
    *cost += ls_.l[i];
    *d1 += ls_.f[i];
    *d2 += ls_.df[i];
  }
}

void IcfSolver::ResizeIslandWork(int ni) {
  if (static_cast<int>(ls_.active.size()) == ni) return;  // all sized together
  for (auto* x : {&ls_.alpha, &ls_.l, &ls_.f, &ls_.df, &ls_.d0, &ls_.l0, &ls_.xl, &ls_.xh,
                  &ls_.dx, &ls_.dxold})
    x->resize(ni);
  ls_.active.resize(ni);
  ls_.extend.resize(ni);
  ls_.l_amax.resize(ni);
}

bool IcfSolver::StepStaysQuadratic(const IcfModel& m) const {
  // cenic-math §8.9. Each row's cost is a function of its scalar v_c, which
  // is affine in α, with pieces that are intervals of v_c: the same piece at
  // both ends of the step means the same piece on all of it. v_c(1) is
  // formed as the line search and the next evaluation form it, v_c(0) + 1·u.
  // The pieces of LimitPool::Active and GainPool::Piece (their Eval's).
  const LimitPool& lp = m.limits;
  const double *lb = data_.limits.vc_base.data(), *lu = data_.limits.u.data();
  for (int c = 0; c < lp.size(); ++c)
    if (lp.Active(c, lb[c]) != lp.Active(c, lb[c] + 1.0 * lu[c])) return false;
  const GainPool& gp = m.gains;
  const double *gb = data_.gains.vc_base.data(), *gu = data_.gains.u.data();
  for (int i = 0; i < gp.size(); ++i) {
    if (!(gp.kappa[i] > 0)) continue;  // explicit at v_c0: linear in v_c (GainPool::Eval)
    if (gp.Piece(i, gb[i]) != gp.Piece(i, gb[i] + 1.0 * gu[i])) return false;
  }
  return true;
}

namespace {
// Minimizer on [0, α_max] of the Hermite cubic in t = α/α_max matching ℓ, ℓ'
// at both ends (§8.3, the cubic initial guess).
double CubicGuess(double l0, double l1, double d0, double d1, double amax) {
  const double a = 2 * (l0 - l1) + amax * (d0 + d1);
  const double b = -3 * (l0 - l1) - amax * (2 * d0 + d1);
  const double c = amax * d0;
  const double A = 3 * a, B = 2 * b, C = c;
  double t;
  if (std::abs(A) < kEpsMachine) {
    t = (B != 0) ? -C / B : 0.5;
  } else {
    const double disc = std::max(B * B - 4 * A * C, 0.0);
    const double sgn = (B >= 0) ? 1.0 : -1.0;
    t = (-B - sgn * std::sqrt(disc)) / (2 * A);
    if (!(t >= 0 && t <= 1) && t != 0) t = C / (A * t);
  }
  if (!(t >= -1e-8 && t <= 1 + 1e-8)) t = 0.5;  // robust fallback
  return amax * std::clamp(t, 0.0, 1.0);
}
}  // namespace

bool IcfSolver::LineSearch(const IcfModel& m, const SolverOptions& o, int* evals,
                           int* extended) {
  // §8.3, island by island: α_i minimizes ℓ_i(v + α w) on [0, α_max]
  // (ℓ_i'(0) < 0). All islands iterate in lockstep, one pass over the
  // constraints per evaluation; an island that has its α drops out. The
  // result is left in ls_.alpha. Needs PrepareLineSearch for the direction.
  const int ni = NumIslands(m);
  ResizeIslandWork(ni);
  LineSearchWork& s = ls_;
  const double amax = o.alpha_max;
  // ℓ_i(0) is the base-point Evaluate's, ℓ_i'(0) PrepareLineSearch's.

  for (int i = 0; i < ni; ++i) {
    s.alpha[i] = amax;
    s.active[i] = s.d0[i] < 0;  // otherwise w_i = 0 up to round-off: stay
    s.extend[i] = 0;
    if (!s.active[i]) s.alpha[i] = 0;
  }
  EvalAlongLineIslands(m, s.alpha.data(), s.active.data(), s.l.data(), s.f.data(), s.df.data());
  const double xtol = 1e-8, ftol = 1e-8;
  // Past α_max the root of f is found to 1 % of the slope at 0 (ℓ_i there is
  // already below ℓ_i(α_max); the exact minimizer buys no iteration).
  const double ftol_ext = 1e-2;
  int remaining = 0;
  // Extension (item 2): the slope at α_max still below −κ ℓ_i'(0) means the
  // Newton step undershoots the line minimum by far (e.g. the impulse of a
  // Hunt–Crossley impact, quadratic in v_n, halves the distance per step).
  const double kappa = o.extend_slope;
  // A non-finite bound turns the extension off.
  const double amax_ext =
      std::isfinite(o.extend_alpha_max) ? std::max(o.extend_alpha_max, amax) : amax;
  int extending = 0;
  for (int i = 0; i < ni; ++i) {
    if (!s.active[i]) continue;
    const double d0 = s.d0[i], l0 = s.l0[i], l1 = s.l[i], d1 = s.f[i], dd1 = s.df[i];
    const double scale = -d0;
    if (d1 <= kEpsMachine || std::abs(d1 / scale) < ftol) {  // minimum at α_max
      s.active[i] = 0;
      s.extend[i] = kappa > 0 && amax_ext > amax && d1 < -kappa * scale;
      if (s.extend[i]) {
        // Next trial: Newton on ℓ_i' from α_max, within [α_max, amax_ext].
        s.xl[i] = amax;
        s.l_amax[i] = l1;
        s.dxold[i] = d1;  // ℓ_i'(α_max) until the trial's evaluation
        s.alpha[i] = dd1 > 0 ? std::clamp(amax - d1 / dd1, amax, amax_ext) : amax_ext;
        ++extending;
      }
      continue;
    }
    // Root of f(α) = ℓ_i'(α)/(−ℓ_i'(0)), f(0) = −1 < 0 < f(α_max).
    double guess;
    if (o.line_search_guess == LineSearchGuess::kCubic) {
      guess = CubicGuess(l0, l1, d0, d1, amax);
    } else {
      guess = (dd1 > 0) ? std::min(-d0 / dd1, amax) : 0.5 * amax;
    }
    s.xl[i] = 0;
    s.xh[i] = amax;
    s.alpha[i] = std::clamp(guess, 0.0, amax);
    s.dxold[i] = s.dx[i] = amax;
    ++remaining;
  }
  if (extending > 0) {
    // One evaluation at the trial α: still descending there, take it (ℓ_i
    // is lower than at α_max); else the minimizer is bracketed in
    // [α_max, trial] and rtsafe below finds it.
    EvalAlongLineIslands(m, s.alpha.data(), s.extend.data(), s.l.data(), s.f.data(),
                         s.df.data());
    ++*evals;
    for (int i = 0; i < ni; ++i) {
      if (!s.extend[i]) continue;
      ++*extended;
      if (!std::isfinite(s.l[i]) || !std::isfinite(s.f[i])) {
        // ℓ_i not finite at the trial: keep the step to α_max.
        s.alpha[i] = amax;
        s.l[i] = s.l_amax[i];
        s.extend[i] = 0;
        continue;
      }
      const double f = s.f[i] / -s.d0[i];
      if (f <= 0 || std::abs(f) < ftol) continue;  // keeps the trial α
      // rtsafe from the Hermite cubic's minimizer on [α_max, trial] (item 3).
      const double width = s.alpha[i] - s.xl[i];
      const double start = s.xl[i] + CubicGuess(s.l_amax[i], s.l[i], s.dxold[i], s.f[i], width);
      s.xh[i] = s.alpha[i];
      s.dxold[i] = s.dx[i] = width;
      s.alpha[i] = start;
      s.active[i] = 1;
      ++remaining;
    }
  }
  // Safeguarded Newton–bisection (rtsafe) on f, per island.
  for (int it = 0; remaining > 0; ++it) {
    if (it == 100) return false;
    EvalAlongLineIslands(m, s.alpha.data(), s.active.data(), s.l.data(), s.f.data(),
                         s.df.data());
    ++*evals;
    for (int i = 0; i < ni; ++i) {
      if (!s.active[i]) continue;
      const double scale = -s.d0[i];
      const double f = s.f[i] / scale, df = s.df[i] / scale;
      double& x = s.alpha[i];
      if (std::abs(f) < (s.extend[i] ? ftol_ext : ftol)) {
        s.active[i] = 0;
        --remaining;
        continue;
      }
      if (f < 0) s.xl[i] = x; else s.xh[i] = x;
      const double xl = s.xl[i], xh = s.xh[i];
      const bool out = ((x - xh) * df - f) * ((x - xl) * df - f) > 0;
      if (out || std::abs(2 * f) > std::abs(s.dxold[i] * df)) {
        s.dxold[i] = s.dx[i];
        s.dx[i] = 0.5 * (xh - xl);
        x = xl + s.dx[i];
      } else {
        s.dxold[i] = s.dx[i];
        s.dx[i] = f / df;
        x -= s.dx[i];
      }
      if (std::abs(s.dx[i]) < xtol) {
        s.active[i] = 0;
        --remaining;
      }
    }
  }
  // An extended search ends below ℓ_i(α_max) (its f may be up to ftol_ext
  // past the root); α_max where round-off says otherwise.
  for (int i = 0; i < ni; ++i)
    if (s.extend[i] && !(s.l[i] <= s.l_amax[i])) s.alpha[i] = amax;
  return true;
}

void IcfSolver::PullBackGuess(const IcfModel& m, const double* d, const char* majorize,
                              bool dual, int* evals) {
  // Line-searched guess (cenic-math §8.1). data_ holds the evaluation at the
  // full guess v_g + d. Per island, with β_i* the minimizer of the convex ℓ_i
  // on v_g + β d, β ∈ [0, 1]: keep β_i = 1 if β_i* ≥ ½ (ℓ_i'(1) ≤ 0 or
  // ℓ_i'(½) ≤ 0); else move to the minimizer on [0, ½] of the Hermite cubic
  // through ℓ_i, ℓ_i' at β = 0 and ½ (§8.3's initial guess), or to β = 0
  // where d does not descend from v_g. Islands whose guess is kept cost one
  // dot product; the others one product with A and J for d and two passes
  // over the constraints, plus their re-evaluation.
  const int nv = m.nv, ni = NumIslands(m);
  LineSearchWork& g = ls_;
  std::fill(g.d0.begin(), g.d0.begin() + ni, 0.0);
  for (int i = 0; i < nv; ++i) g.d0[DofIsland(m, i)] += data_.grad[i] * d[i];  // ℓ_i'(1)
  bool any = false;
  for (int i = 0; i < ni; ++i) {
    g.active[i] = g.d0[i] > 0;
    any = any || g.active[i];
  }
  if (!any) return;
  PrepareLineSearch(m, d);  // base v_g + d: α = β − 1
  std::fill(g.alpha.begin(), g.alpha.begin() + ni, -0.5);
  EvalAlongLineIslands(m, g.alpha.data(), g.active.data(), g.l.data(), g.f.data(), g.df.data());
  ++*evals;
  any = false;
  for (int i = 0; i < ni; ++i) {
    if (g.active[i] && g.f[i] <= 0) g.active[i] = 0;  // β* ≥ ½
    any = any || g.active[i];
    g.xl[i] = g.l[i];  // ℓ_i(½), ℓ_i'(½)
    g.xh[i] = g.f[i];
  }
  if (any) {
    std::fill(g.alpha.begin(), g.alpha.begin() + ni, -1.0);
    EvalAlongLineIslands(m, g.alpha.data(), g.active.data(), g.l.data(), g.f.data(),
                         g.df.data());
    ++*evals;
  }
  guess_kept_.resize(ni);
  for (int i = 0; i < ni; ++i) {
    guess_kept_[i] = !g.active[i];
    const double beta = !g.active[i] ? 1.0
                        : g.f[i] >= 0 ? 0.0
                                      : CubicGuess(g.l[i], g.xl[i], g.f[i], g.xh[i], 0.5);
    g.alpha[i] = beta - 1.0;
  }
  if (!any) {
    std::fill(g.alpha.begin(), g.alpha.begin() + ni, 1.0);
    return;
  }
  for (int i = 0; i < nv; ++i) vtmp_[i] += g.alpha[DofIsland(m, i)] * d[i];
  AdvanceProducts(m);
  Evaluate(m, vtmp_.data(), guess_kept_.data(), majorize, /*advanced=*/true, dual);
  std::fill(g.alpha.begin(), g.alpha.begin() + ni, 1.0);
}

int IcfSolver::SweepStart(const IcfModel& m, double tol, const SolverOptions& o,
                          const char* majorize, bool dual) {
  // Contact sweep guess (cenic-math §8.1). data_ holds the evaluation at the
  // guess vtmp_ (ls_.l0: ℓ_i there). Islands that already meet the
  // optimality test there keep it; for the others (candidates) the sweeps
  // build a second guess, evaluated (only their rows), and each keeps the
  // point of lower ℓ_i; those that go back are evaluated at the guess again.
  const int nv = m.nv, ni = NumIslands(m);
  const bool per_island = ni > 1;
  // The work is sized by SizeSweepWork (every solve with contacts).
  const int nc = m.contacts.size();
  std::copy(ls_.l0.begin(), ls_.l0.begin() + ni, guess_l0_.begin());
  const double Dg = ScaledGradient(m, per_island);
  // Targeting by history: only islands holding a dof whose island needed
  // ≥ sweep_min_history iterations in the last solve (the slow islands keep
  // their trees from step to step).
  const bool by_history = o.sweep_min_history > 0 && static_cast<int>(dof_iterations_.size()) == nv;
  if (by_history) {
    sweep_history_.assign(ni, 0);
    sweep_history_swept_.assign(ni, -1);
    for (int i = 0; i < nv; ++i) {
      const int isl = per_island ? DofIsland(m, i) : 0;
      sweep_history_[isl] = std::max(sweep_history_[isl], dof_iterations_[i]);
      sweep_history_swept_[isl] = std::max(sweep_history_swept_[isl], dof_swept_iterations_[i]);
    }
  }
  // Targeting by impact (SolverOptions::impact_sweeps, "h24b"): islands of
  // ≤ impact_max_dofs dofs holding a contact between free bodies (trees of
  // ≤ 6 dofs) with d (v̂ − v_n) > impact_speed at the guess (data_'s v_c);
  // larger islands (a pile) once at least pile_impact_share of their
  // contacts, and pile_impact_count of them, are such impacts ("h26a":
  // bodies landing on the pile, not one body; flag 2).
  std::fill(sweep_keep_.begin(), sweep_keep_.begin() + ni, 0);  // here: impact flags
  if (o.impact_sweeps > 0) {
    std::fill(sweep_dofs_.begin(), sweep_dofs_.begin() + ni, 0);
    for (int i = 0; i < nv; ++i) ++sweep_dofs_[per_island ? DofIsland(m, i) : 0];
    const bool shares = o.pile_impact_share > 0;
    if (shares) {  // per island: contacts, then impacts (large islands only)
      std::fill(sweep_impacts_.begin(), sweep_impacts_.begin() + 2 * ni, 0);
    }
    const ContactPool& P = m.contacts;
    const double* vc = data_.contacts.vc.data();
    const int* isl = data_.contacts.island.data();
    for (int c = 0; c < nc; ++c) {
      const int i = isl[c];
      const bool large = sweep_dofs_[i] > o.impact_max_dofs;
      if (large) {
        if (!shares) continue;
        ++sweep_impacts_[2 * i];
      } else if (sweep_keep_[i]) {
        continue;
      }
      const double vn = vc[3 * c];
      if (!(vn < P.vhat[c] && P.d[c] * (P.vhat[c] - vn) > o.impact_speed)) continue;
      bool free_bodies = true;
      for (int j : P.rows.dofs(c)) {
        const int q = m.clique_of_dof[j];
        free_bodies = free_bodies && m.clique_start[q + 1] - m.clique_start[q] <= kFreeBodyDofs;
      }
      if (large) sweep_impacts_[2 * i + 1] += free_bodies;
      else sweep_keep_[i] = free_bodies;
    }
    if (shares)
      for (int i = 0; i < ni; ++i)
        if (sweep_impacts_[2 * i + 1] >= std::max(o.pile_impact_count, 1) &&
            sweep_impacts_[2 * i + 1] >= o.pile_impact_share * sweep_impacts_[2 * i])
          sweep_keep_[i] = 2;
  }
  // Articulated sweeps ("h24c"): islands with a tree of > 6 dofs whose trees
  // all have ≤ articulated_max_dofs dofs are swept with the trees' A.
  std::fill(sweep_exact_.begin(), sweep_exact_.begin() + ni, 0);
  if (o.articulated_sweeps > 0) {
    std::fill(sweep_dofs_.begin(), sweep_dofs_.begin() + ni, 0);  // here: 1 too large
    const int nq = static_cast<int>(m.clique_start.size()) - 1;
    for (int q = 0; q < nq; ++q) {
      const int size = m.clique_start[q + 1] - m.clique_start[q];
      if (size == 0) continue;
      const int i = per_island ? DofIsland(m, m.clique_start[q]) : 0;
      if (size > o.articulated_max_dofs) sweep_dofs_[i] = 1;
      if (size > kFreeBodyDofs) sweep_exact_[i] = 1;
    }
    for (int i = 0; i < ni; ++i) sweep_exact_[i] = sweep_exact_[i] && !sweep_dofs_[i];
  }
  int candidates = 0;
  for (int i = 0; i < ni; ++i) {
    const bool optimal = per_island ? std::sqrt(isl_.Dg2[i]) < isl_.tol[i] : Dg < tol;
    // Slow from the usual guess, and not slower from the sweep guess the
    // last time it started there.
    const bool slow =
        (o.guess_sweeps > 0 || (o.articulated_sweeps > 0 && sweep_exact_[i])) &&
        (!by_history || (sweep_history_[i] >= o.sweep_min_history &&
                         sweep_history_swept_[i] <= sweep_history_[i] - o.sweep_min_saving));
    sweep_took_[i] = !optimal && (slow || sweep_keep_[i]);
    candidates += sweep_took_[i];
    // Its sweeps: the trees' A (h24c), the pile's impacts alone (h26a), else
    // guess_sweeps or impact_sweeps.
    sweep_count_[i] = sweep_exact_[i]                         ? o.articulated_sweeps
                      : !slow && sweep_keep_[i] == 2          ? o.pile_impact_sweeps
                      : o.guess_sweeps > 0                    ? o.guess_sweeps
                                                              : o.impact_sweeps;
  }
  if (candidates == 0) return 0;
  sweep_ran_ = true;
  // On the candidates (sweep_took_).
  SweepGuess(m, o.sweep_stop);
  // The candidates' dofs at the sweep guess, the others at the guess;
  // sweep_v_ keeps the guess on the candidates' dofs.
  for (int i = 0; i < nv; ++i)
    if (sweep_took_[DofIsland(m, i)]) std::swap(vtmp_[i], sweep_v_[i]);
  for (int i = 0; i < ni; ++i) sweep_keep_[i] = !sweep_took_[i];
  Evaluate(m, vtmp_.data(), per_island ? sweep_keep_.data() : nullptr, majorize, false, dual);
  int n = 0, back = 0;
  for (int i = 0; i < ni; ++i) {
    sweep_keep_[i] = 1;  // 0: back to the guess, evaluated again below
    if (sweep_took_[i] && !(ls_.l0[i] < guess_l0_[i])) {
      sweep_took_[i] = 0;
      sweep_keep_[i] = 0;
      ++back;
    }
    n += sweep_took_[i];
  }
  if (back == 0) return n;
  for (int i = 0; i < nv; ++i)
    if (!sweep_keep_[DofIsland(m, i)]) vtmp_[i] = sweep_v_[i];
  Evaluate(m, vtmp_.data(), per_island ? sweep_keep_.data() : nullptr, majorize, false, dual);
  return n;
}

void IcfSolver::SizeSweepWork(const IcfModel& m) {
  // SweepStart's and SweepGuess's work, sized on every solve with contacts
  // whether or not it sweeps (the stepper sweeps only after a slow solve,
  // and an impact may come at any step), so that no solve after warm-up
  // allocates.
  const int nv = m.nv, nc = m.contacts.size(), ni = NumIslands(m);
  guess_l0_.resize(ni);
  sweep_took_.resize(ni);
  sweep_keep_.resize(ni);
  sweep_dofs_.resize(ni);
  sweep_impacts_.resize(2 * ni);
  sweep_count_.resize(ni);
  sweep_v_.resize(nv);
  sweep_Ai_.resize(nv);
  sweep_W_.resize(2 * nc);
  sweep_gamma_.resize(3 * nc);
  sweep_change_.resize(2 * ni);
  sweep_active_.resize(ni);
  sweep_exact_.resize(ni);
  sweep_cq_.resize(2 * nc);
  sweep_col_off_.resize(nc);
  sweep_L_off_.resize(m.clique_start.size());
}

void IcfSolver::SweepFactorCliques(const IcfModel& m) {
  // Articulated sweeps (cenic-math §8.1, "h24c"), on the candidates marked
  // in sweep_exact_: A is block diagonal over the trees (cliques), so each
  // tree of such an island gets its dense block A_q = M_q + h D_q + h² K_q
  // and its inverse (Cholesky, then A_q⁻¹ by one blocked solve: cheaper
  // than two triangular solves per row for the ≈ 3 n_c + n_l rows). The
  // sweep base is the impulse-free minimizer v_f = A⁻¹ r on those dofs (the
  // diagonal model's Jacobi step made exact); each of their contacts keeps
  // its columns A⁻¹J_cᵀ (over its ≤ 2 trees' dofs) and W's diagonal
  // (J_c A⁻¹ J_cᵀ: normal entry, mean of the tangent entries), each limit
  // row (§5) within one tree its column A⁻¹J_lᵀ and W_l = J_l A⁻¹ J_lᵀ.
  const int nq = static_cast<int>(m.clique_start.size()) - 1;
  const int nc = m.contacts.size(), ni = NumIslands(m);
  const ContactPool& P = m.contacts;
  const int* isl = data_.contacts.island.data();
  using MapM = Eigen::Map<Eigen::MatrixXd>;
  auto exact = [&](int i) { return sweep_took_[i] && sweep_exact_[i]; };
  size_t size_L = 0;
  for (int q = 0; q < nq; ++q) {
    const int b = m.clique_start[q], n = m.clique_start[q + 1] - b;
    sweep_L_off_[q] = -1;
    if (n == 0 || !exact(ni > 1 ? DofIsland(m, b) : 0)) continue;
    sweep_L_off_[q] = static_cast<int>(size_L);
    size_L += static_cast<size_t>(n) * n;
  }
  if (sweep_L_.size() < 2 * size_L) sweep_L_.resize(2 * size_L);  // factor, then inverse
  double* v = sweep_v_.data();
  for (int q = 0; q < nq; ++q) {
    if (sweep_L_off_[q] < 0) continue;
    const int b = m.clique_start[q], n = m.clique_start[q + 1] - b;
    MapM L(sweep_L_.data() + size_L + sweep_L_off_[q], n, n);
    MapM Ai(sweep_L_.data() + sweep_L_off_[q], n, n);
    L.setZero();
    for (int i = b; i < b + n; ++i) {
      const int a = m.M_rowadr[i], nnz = m.M_rownnz[i];
      for (int k = 0; k < nnz - 1; ++k) L(i - b, m.M_colind[a + k] - b) = m.M[a + k];
      L(i - b, i - b) = m.ADiag(i);
    }
    Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> llt(L);  // in place, lower
    Ai.setIdentity();
    llt.solveInPlace(Ai);
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < n; ++j) s += Ai(i, j) * m.r[b + j];
      v[b + i] = s;
    }
  }
  // A column A⁻¹xᵀ of a row x over `dofs` (all in trees q0, q1), into col
  // (q0's dofs, then q1's).
  auto column = [&](const double* x, std::span<const int> dofs, int q0, int q1, double* col) {
    const int b0 = m.clique_start[q0], n0 = m.clique_start[q0 + 1] - b0;
    const int b1 = q1 < 0 ? 0 : m.clique_start[q1], n1 = q1 < 0 ? 0 : m.clique_start[q1 + 1] - b1;
    std::fill(col, col + n0 + n1, 0.0);
    for (size_t k = 0; k < dofs.size(); ++k) {
      const int j = dofs[k];
      if (x[k] == 0) continue;
      const bool first = m.clique_of_dof[j] == q0;
      const int b = first ? b0 : b1, n = first ? n0 : n1;
      const double* a = sweep_L_.data() + sweep_L_off_[first ? q0 : q1] + (j - b) * n;
      double* c = first ? col : col + n0;
      for (int i = 0; i < n; ++i) c[i] += x[k] * a[i];
    }
  };
  // W = x · A⁻¹xᵀ over the row's dofs.
  auto dot = [&](const double* x, std::span<const int> dofs, int q0, const double* col) {
    const int b0 = m.clique_start[q0], n0 = m.clique_start[q0 + 1] - b0;
    double W = 0;
    for (size_t k = 0; k < dofs.size(); ++k) {
      const int j = dofs[k];
      W += x[k] * (m.clique_of_dof[j] == q0 ? col[j - b0] : col[n0 + j - m.clique_start[m.clique_of_dof[j]]]);
    }
    return W;
  };
  // Each contact's trees and columns (tree 0 then 1).
  size_t size_cols = 0;
  for (int c = 0; c < nc; ++c) {
    sweep_col_off_[c] = -1;
    if (!exact(isl[c])) continue;
    int q0 = -1, q1 = -1;
    for (int j : P.rows.dofs(c)) {
      const int q = m.clique_of_dof[j];
      if (q0 < 0 || q == q0) q0 = q;
      else q1 = q;
    }
    sweep_cq_[2 * c] = q0;
    sweep_cq_[2 * c + 1] = q1;
    const int w = (m.clique_start[q0 + 1] - m.clique_start[q0]) +
                  (q1 < 0 ? 0 : m.clique_start[q1 + 1] - m.clique_start[q1]);
    sweep_col_off_[c] = static_cast<int>(size_cols);
    size_cols += 3 * static_cast<size_t>(w);
  }
  // Limit rows (§5) within one tree of such an island: one column each.
  const LimitPool& Lp = m.limits;
  const int nl = Lp.size();
  if (static_cast<int>(sweep_lim_off_.size()) < nl) {
    sweep_lim_off_.resize(nl);
    sweep_lim_W_.resize(nl);
    sweep_lim_gamma_.resize(nl);
  }
  int n_swept = 0;
  for (int l = 0; l < nl; ++l) {
    sweep_lim_off_[l] = -1;
    const std::span<const int> dofs = Lp.rows.dofs(l);
    if (dofs.empty() || !exact(ni > 1 ? DofIsland(m, dofs[0]) : 0)) continue;
    const int q = m.clique_of_dof[dofs[0]];
    bool one_tree = true;
    for (int j : dofs) one_tree = one_tree && m.clique_of_dof[j] == q;
    if (!one_tree) continue;
    sweep_lim_off_[l] = static_cast<int>(size_cols);
    size_cols += m.clique_start[q + 1] - m.clique_start[q];
    ++n_swept;
  }
  if (static_cast<int>(sweep_lim_list_.size()) < n_swept) sweep_lim_list_.resize(n_swept);
  sweep_lim_count_ = 0;
  for (int l = 0; l < nl; ++l)
    if (sweep_lim_off_[l] >= 0) sweep_lim_list_[sweep_lim_count_++] = l;
  if (sweep_cols_.size() < size_cols) sweep_cols_.resize(size_cols);
  for (int l = 0; l < nl; ++l) {
    if (sweep_lim_off_[l] < 0) continue;
    const std::span<const int> dofs = Lp.rows.dofs(l);
    const int q = m.clique_of_dof[dofs[0]];
    double* col = sweep_cols_.data() + sweep_lim_off_[l];
    column(Lp.rows.J(l), dofs, q, -1, col);
    sweep_lim_W_[l] = dot(Lp.rows.J(l), dofs, q, col);
    sweep_lim_gamma_[l] = 0;
  }
  for (int c = 0; c < nc; ++c) {
    if (sweep_col_off_[c] < 0) continue;
    const int q0 = sweep_cq_[2 * c], q1 = sweep_cq_[2 * c + 1];
    const int w = (m.clique_start[q0 + 1] - m.clique_start[q0]) +
                  (q1 < 0 ? 0 : m.clique_start[q1 + 1] - m.clique_start[q1]);
    double* col = sweep_cols_.data() + sweep_col_off_[c];
    const double* J = P.rows.J(c);
    const std::span<const int> dofs = P.rows.dofs(c);
    const int n = static_cast<int>(dofs.size());
    double W[3];
    for (int row = 0; row < 3; ++row) {
      column(J + row * n, dofs, q0, q1, col + row * w);
      W[row] = dot(J + row * n, dofs, q0, col + row * w);
    }
    sweep_W_[2 * c] = W[0];
    sweep_W_[2 * c + 1] = 0.5 * (W[1] + W[2]);
  }
}

void IcfSolver::RecordIterations(const IcfModel& m, bool per_island, int iterations) {
  // SolverOptions::sweep_min_history: each dof keeps the Newton iterations
  // its island needed (the whole solve's count with one island), from the
  // usual guess and, separately, from the sweep guess.
  const int nv = m.nv;
  if (static_cast<int>(dof_iterations_.size()) != nv) {
    dof_iterations_.assign(nv, 0);
    dof_swept_iterations_.assign(nv, -1);
  }
  const bool split = per_island && static_cast<int>(dof_island_.size()) == nv;
  for (int i = 0; i < nv; ++i) {
    const int isl = split ? dof_island_[i] : 0;
    const int d = !split || isl_.done_at[isl] < 0 ? iterations : isl_.done_at[isl];
    if (sweep_ran_ && sweep_took_[isl])
      dof_swept_iterations_[i] = d;
    else
      dof_iterations_[i] = d;
  }
}

void IcfSolver::SweepGuess(const IcfModel& m, double stop) {
  // Contact sweep guess (cenic-math §8.1), on the islands marked in
  // sweep_took_. With A replaced by its diagonal (free bodies: nearly
  // exact), start from v_f = v⁰ + diag(A)⁻¹(r − A v⁰) (no impulse) and visit
  // the contacts in turn, each solving its own law exactly with the others
  // held: with W = J_c diag(A)⁻¹ J_cᵀ's diagonal (normal row; mean of the
  // tangent rows) and the velocity v_c − W γ_c without the contact's own
  // impulse, the normal impulse of §4.4 below v̂ is quadratic in v_n (a
  // closed-form root), and the friction of §4.6 (lagged μn⁰) keeps the
  // slip's direction and solves one monotone scalar equation for its size;
  // v += diag(A)⁻¹ J_cᵀ Δγ. An island stops sweeping once a sweep changes
  // its impulses by at most `stop` of their size (Σ|Δγ| ≤ ρ Σ|γ|).
  // Cost: at most sweep_count_[i] passes over island i's contact rows, no factorization.
  const int nv = m.nv, nc = m.contacts.size(), ni = NumIslands(m);
  const ContactPool& P = m.contacts;
  const int* isl = data_.contacts.island.data();
  std::fill(sweep_gamma_.begin(), sweep_gamma_.begin() + 3 * nc, 0.0);
  sweep_active_.assign(sweep_took_.begin(), sweep_took_.begin() + ni);
  double* v = sweep_v_.data();
  double* Ai = sweep_Ai_.data();
  // One Jacobi step from the guess vtmp_ (data_.Av = A vtmp_ from the
  // evaluation there), on the candidates' dofs only (islands are closed
  // under the contacts' dofs).
  const double* Av = data_.Av.data();
  for (int i = 0; i < nv; ++i) {
    if (!sweep_active_[ni > 1 ? DofIsland(m, i) : 0]) continue;
    Ai[i] = 1.0 / m.ADiag(i);
    v[i] = vtmp_[i] + Ai[i] * (m.r[i] - Av[i]);
  }
  for (int c = 0; c < nc; ++c) {
    if (!sweep_active_[isl[c]]) continue;
    const double* J = P.rows.J(c);
    const std::span<const int> dofs = P.rows.dofs(c);
    const int n = static_cast<int>(dofs.size());
    double wn = 0, wt = 0;
    for (int k = 0; k < n; ++k) {
      const double a = Ai[dofs[k]];
      wn += J[k] * J[k] * a;
      wt += (J[n + k] * J[n + k] + J[2 * n + k] * J[2 * n + k]) * a;
    }
    sweep_W_[2 * c] = wn;
    sweep_W_[2 * c + 1] = 0.5 * wt;
  }
  // Articulated sweeps (h24c): the trees' A on the islands marked for it
  // (their v_f, columns and W replace the diagonal model's above).
  bool any_exact = false;
  for (int i = 0; i < ni; ++i) any_exact = any_exact || (sweep_active_[i] && sweep_exact_[i]);
  if (any_exact) SweepFactorCliques(m);
  else std::fill(sweep_col_off_.begin(), sweep_col_off_.begin() + nc, -1);
  const double h = P.h;
  int most = 0;
  for (int i = 0; i < ni; ++i)
    if (sweep_active_[i]) most = std::max(most, sweep_count_[i]);
  for (int sweep = 0; sweep < most; ++sweep) {
    for (int i = 0; i < ni; ++i)  // each island's own count
      if (sweep == sweep_count_[i]) sweep_active_[i] = 0;
    std::fill(sweep_change_.begin(), sweep_change_.end(), 0.0);
    for (int c = 0; c < nc; ++c) {
      if (!sweep_active_[isl[c]]) continue;
      const double mun = P.mu[c] * P.n0[c], e = P.eps[c];
      const double* J = P.rows.J(c);
      const std::span<const int> dofs = P.rows.dofs(c);
      const int n = static_cast<int>(dofs.size());
      double vc[3] = {0, 0, 0};
      if (mun > 0) {
        P.rows.Multiply(c, v, vc);
      } else {  // frictionless: the normal row only
        double s0 = 0;
        for (int k = 0; k < n; ++k) s0 += J[k] * v[dofs[k]];
        vc[0] = s0;
      }
      double* g = sweep_gamma_.data() + 3 * c;
      const double wn = sweep_W_[2 * c], wt = sweep_W_[2 * c + 1];
      // Normal: v_n = v_f + W γ_n(v_n), γ_n = h (f_e − hk v_n)(1 − d v_n)
      // below v̂ (both factors positive there), 0 above.
      const double vf = vc[0] + P.bias[3 * c] - wn * g[0];
      double gn = 0;
      if (vf < P.vhat[c]) {
        const double k = P.k[c], d = P.d[c], fe = P.fe0[c];
        const double qa = -wn * h * h * k * d;  // qa v² + qb v + qc = 0
        const double qb = 1 + wn * h * (h * k + d * fe);
        const double qc = -(vf + wn * h * fe);
        const double disc = qb * qb - 4 * qa * qc;
        const double root = std::min(
            disc >= 0 ? -2 * qc / (qb + std::sqrt(disc)) : P.vhat[c], P.vhat[c]);
        gn = h * std::max(0.0, fe - h * k * root) * std::max(0.0, 1 - d * root);
      }
      double dg[3] = {gn - g[0], 0, 0};
      g[0] = gn;
      // Friction: v_t = u − W μn⁰ v_t/sqrt(|v_t|² + ε²), u the slip without
      // the contact's friction, so v_t = s û with s (1 + W μn⁰/sqrt(s² + ε²))
      // = |u| (increasing in s; safeguarded Newton).
      if (mun > 0) {
        const double u1 = vc[1] + P.bias[3 * c + 1] - wt * g[1];
        const double u2 = vc[2] + P.bias[3 * c + 2] - wt * g[2];
        const double U = std::sqrt(u1 * u1 + u2 * u2);
        double t1 = 0, t2 = 0;
        if (U > 0) {
          const double cw = wt * mun;
          // Start: the root for ε → 0 when sliding (U > W μn⁰), the sticking
          // linearization s = U ε/(ε + W μn⁰) otherwise; a guess needs no
          // more than a few digits.
          double x = U > cw ? U - cw : U * e / (e + cw);
          // At most 3 Newton steps to 1 % (h23e: the friction root dominated
          // the sweeps' cost; 8 steps to 10⁻⁴ bought no Newton iteration).
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
      if (sweep_col_off_[c] >= 0) {  // articulated: v += A⁻¹J_cᵀ Δγ over the trees
        const int q0 = sweep_cq_[2 * c], q1 = sweep_cq_[2 * c + 1];
        const int b0 = m.clique_start[q0], n0 = m.clique_start[q0 + 1] - b0;
        const int b1 = q1 < 0 ? 0 : m.clique_start[q1];
        const int w = n0 + (q1 < 0 ? 0 : m.clique_start[q1 + 1] - b1);
        const double* col = sweep_cols_.data() + sweep_col_off_[c];
        for (int k = 0; k < w; ++k)
          v[k < n0 ? b0 + k : b1 + k - n0] +=
              col[k] * dg[0] + col[w + k] * dg[1] + col[2 * w + k] * dg[2];
      } else if (mun > 0) {
        for (int k = 0; k < n; ++k)
          v[dofs[k]] += Ai[dofs[k]] * (J[k] * dg[0] + J[n + k] * dg[1] + J[2 * n + k] * dg[2]);
      } else if (dg[0] != 0) {
        for (int k = 0; k < n; ++k) v[dofs[k]] += Ai[dofs[k]] * J[k] * dg[0];
      }
      sweep_change_[2 * isl[c]] += std::abs(dg[0]) + std::abs(dg[1]) + std::abs(dg[2]);
      sweep_change_[2 * isl[c] + 1] += std::abs(g[0]) + std::abs(g[1]) + std::abs(g[2]);
    }
    // Articulated sweeps (h24c): the limit rows of those islands, one-sided
    // (§5): with u = v_c − W γ, γ = (v̂ − u)₊/(R + W) solves γ = (v̂ − v_c)₊/R.
    if (any_exact) {
      const LimitPool& Lp = m.limits;
      for (int li = 0; li < sweep_lim_count_; ++li) {
        const int l = sweep_lim_list_[li];
        const std::span<const int> dofs = Lp.rows.dofs(l);
        const int i = ni > 1 ? DofIsland(m, dofs[0]) : 0;
        if (!sweep_active_[i]) continue;
        const double* J = Lp.rows.J(l);
        double vl = 0;
        for (size_t k = 0; k < dofs.size(); ++k) vl += J[k] * v[dofs[k]];
        const double W = sweep_lim_W_[l];
        double& gl = sweep_lim_gamma_[l];
        const double gnew = std::max(0.0, (Lp.vhat[l] - (vl - W * gl)) / (Lp.R[l] + W));
        const double dgl = gnew - gl;
        gl = gnew;
        if (dgl == 0) continue;
        const int q = m.clique_of_dof[dofs[0]];
        const int b = m.clique_start[q], n = m.clique_start[q + 1] - b;
        const double* col = sweep_cols_.data() + sweep_lim_off_[l];
        for (int k = 0; k < n; ++k) v[b + k] += col[k] * dgl;
        sweep_change_[2 * i] += std::abs(dgl);
        sweep_change_[2 * i + 1] += std::abs(gnew);
      }
    }
    bool any = false;
    for (int i = 0; i < ni; ++i) {
      if (sweep_active_[i] && sweep_change_[2 * i] <= stop * sweep_change_[2 * i + 1])
        sweep_active_[i] = 0;
      any = any || sweep_active_[i];
    }
    if (!any) break;
  }
}

double IcfSolver::ScaledTolerance(const IcfModel& m, const SolverOptions& o, int ni_split) {
  // §8.2: D = diag(M)^(-1/2), tol = ε max(1, |D r|); with several islands
  // (ni_split > 0, after TagIslands) also each island's ε max(1, |D r|_i)
  // and its fresh state, in the same pass over the dofs.
  scale_.resize(m.nv);
  double* tol_i = nullptr;
  if (ni_split > 0) {
    StartIslands(ni_split);
    tol_i = isl_.tol.data();
  }
  const int* isl = dof_island_.data();
  double Dr = 0;
  for (int i = 0; i < m.nv; ++i) {
    scale_[i] = 1.0 / std::sqrt(m.M_diag[i]);
    const double x = scale_[i] * m.r[i];
    Dr += x * x;
    if (tol_i) tol_i[isl[i]] += x * x;
  }
  const double eps = std::max(o.tolerance, o.min_tolerance);
  for (int i = 0; i < ni_split; ++i) tol_i[i] = eps * std::max(1.0, std::sqrt(tol_i[i]));
  return eps * std::max(1.0, std::sqrt(Dr));
}

const double* IcfSolver::NewtonDirection(const IcfModel& m, HessianFactor* H, bool per_island,
                                        bool any_frozen, int* linear_iterations) {
  // w = −H⁻¹ ∇ℓ with the current factorization, 0 on frozen islands.
  double* w = dv_.data();
  for (int i = 0; i < m.nv; ++i) w[i] = -data_.grad[i];
  H->Bind(m, data_);
  H->Solve(w, w);
  *linear_iterations += H->last_iterations();
  if (per_island && any_frozen) ZeroFrozen(m, w);
  return w;
}

void IcfSolver::ZeroFrozen(const IcfModel& m, double* w) const {
  for (int i = 0; i < m.nv; ++i)
    if (isl_.frozen[DofIsland(m, i)]) w[i] = 0;
}

void IcfSolver::StartIslands(int ni) {
  if (static_cast<int>(isl_.tol.size()) != ni) {  // all sized together
    for (auto* x : {&isl_.tol, &isl_.Dg2, &isl_.step2, &isl_.step_prev, &isl_.step_prev2,
                    &isl_.eta})
      x->resize(ni);
    isl_.exact_run.resize(ni);
    isl_.done_at.resize(ni);
    isl_.frozen.resize(ni);
    isl_.iterate.resize(ni);
  }
  for (int i = 0; i < ni; ++i) {
    isl_.tol[i] = isl_.Dg2[i] = isl_.step2[i] = isl_.step_prev[i] = isl_.step_prev2[i] = 0.0;
    isl_.eta[i] = 1.0;
    isl_.exact_run[i] = 0;
    isl_.done_at[i] = -1;
    isl_.frozen[i] = 0;
    isl_.iterate[i] = 0;
  }
}

double IcfSolver::ScaledGradient(const IcfModel& m, bool per_island) {
  double Dg = 0;
  const double *D = scale_.data(), *g = data_.grad.data();
  if (per_island) {
    double* Dg2 = isl_.Dg2.data();
    const int* isl = dof_island_.data();
    std::fill(isl_.Dg2.begin(), isl_.Dg2.end(), 0.0);
    for (int i = 0; i < m.nv; ++i) {
      const double x = D[i] * g[i];
      Dg += x * x;
      Dg2[isl[i]] += x * x;
    }
  } else {
    for (int i = 0; i < m.nv; ++i) {
      const double x = D[i] * g[i];
      Dg += x * x;
    }
  }
  return std::sqrt(Dg);
}

bool IcfSolver::IslandsConverged(int k, int ni, int* nfrozen, int* island_updates) {
  // The step criterion only trusts exact-Hessian steps (§8.1): θ needs the
  // last two, the test the last one.
  bool converged = true;
  for (int i = 0; i < ni; ++i) {
    if (isl_.frozen[i]) continue;
    if (k >= 2 && isl_.exact_run[i] >= 2 && isl_.step_prev2[i] > 0) {
      const double theta = std::clamp(isl_.step_prev[i] / isl_.step_prev2[i], 0.0, 0.9999);
      isl_.eta[i] = theta / (1 - theta);
    }
    const double tol_i = isl_.tol[i];
    // Criterion 2 only for an island that moved in the last iteration: one
    // whose line search was skipped (ℓ_i'(0) ≥ 0, possible with an
    // inexact direction such as PCG's) has step 0 but need not be solved.
    const bool moved = isl_.step_prev[i] > 0;
    if ((std::sqrt(isl_.Dg2[i]) < tol_i && (k > 0 || !isl_.iterate[i])) ||
        (k >= 1 && isl_.exact_run[i] >= 1 && moved && isl_.eta[i] * isl_.step_prev[i] < tol_i))
      isl_.frozen[i] = 1, isl_.done_at[i] = k, ++*nfrozen;
    else
      converged = false, ++*island_updates;
  }
  return converged;
}

double IcfSolver::TakeStep(const IcfModel& m, const double* w, bool per_island, int ni) {
  double step = 0;
  if (per_island) std::fill(isl_.step2.begin(), isl_.step2.end(), 0.0);
  for (int i = 0; i < m.nv; ++i) {
    const int isl = DofIsland(m, i);
    const double dvi = ls_.alpha[isl] * w[i];
    vtmp_[i] += dvi;
    const double x = (dvi / scale_[i]) * (dvi / scale_[i]);
    step += x;
    if (per_island) isl_.step2[isl] += x;
  }
  if (per_island)
    for (int i = 0; i < ni; ++i) {
      if (isl_.frozen[i]) continue;
      isl_.step_prev2[i] = isl_.step_prev[i];
      isl_.step_prev[i] = std::sqrt(isl_.step2[i]);
    }
  return std::sqrt(step);
}

// StartSolve, Converged and FinishIteration are inline (the tiny problems'
// per-step cost, cenic-math §8.9: out of line they cost more instructions
// per step than the code they replaced).
inline double IcfSolver::StartSolve(const IcfModel& m, const SolverOptions& o,
                                    const double* v_guess, const double* extrapolated, int ni,
                                    NewtonState* s) {
  const bool per_island = ni > 1;
  TagIslands(m);  // the model is constant during the solve
  const double tol = ScaledTolerance(m, o, per_island ? ni : 0);  // and the islands' (StartIslands)
  if (!std::isfinite(tol)) return tol;
  // An extrapolated guess (§8.1) is not accepted as the solution: its
  // island (or the system) takes at least one Newton iteration.
  if (extrapolated) {
    if (per_island) {
      for (int i = 0; i < m.nv; ++i)
        if (extrapolated[i] != 0) isl_.iterate[DofIsland(m, i)] = 1;
    } else {
      for (int i = 0; i < m.nv && !s->iterate_all; ++i) s->iterate_all = extrapolated[i] != 0;
    }
  }
  CopyShort(v_guess, m.nv, vtmp_.data());
  ResizeIslandWork(ni);  // ls_.alpha: the last line search's α per island
  std::fill(ls_.alpha.begin(), ls_.alpha.begin() + ni, 1.0);
  return tol;
}

bool IcfSolver::FiniteGradient(const IcfModel& m, bool per_island, double* Dg, SolveStats* st) {
  *Dg = ScaledGradient(m, per_island);
  st->scaled_gradient = *Dg;
  return std::isfinite(*Dg) && std::isfinite(data_.cost);
}

inline bool IcfSolver::Converged(int k, double Dg, double tol, int ni, NewtonState* s,
                                 int* nfrozen, SolveStats* st) {
  // Criterion 1 (optimality, from k = 0 but not for an extrapolated guess)
  // and criterion 2 (Hairer–Wanner), §8.2: for the whole system, or island
  // by island. Criterion 2 assumes Newton's rate, so it (and θ) only use
  // steps of exact-Hessian iterations (§8.1).
  if (ni > 1) {
    if (k == 0) {
      s->optimal_at_guess = true;
      for (int i = 0; i < ni; ++i) s->optimal_at_guess &= std::sqrt(isl_.Dg2[i]) < isl_.tol[i];
    }
    const bool converged = IslandsConverged(k, ni, nfrozen, &st->island_updates);
    if (k == 0) st->islands_iterated = st->island_updates;  // not converged at the guess
    return converged;
  }
  if (k == 0) {
    s->optimal_at_guess = Dg < tol;
    return s->optimal_at_guess && !s->iterate_all;
  }
  return Dg < tol || (s->exact_run >= 1 && s->eta * s->step_prev < tol);
}

bool IcfSolver::AcceptGuess(const NewtonState& s, double d0, int ni, SolveStats* st) {
  // An extrapolated guess that already met the optimality test and admits
  // no descent (round-off): it is the solution, and no island iterated
  // (IslandsConverged counted the extrapolated ones).
  if (!(s.optimal_at_guess && std::isfinite(d0) && !(d0 < 0))) return false;
  if (ni > 1) st->island_updates = st->islands_iterated = 0;
  return true;
}

void IcfSolver::QuadraticStep(int ni, SolveStats* st) {
  // ℓ_i is one quadratic along the exact Newton step: α_i = 1 where it
  // descends, 0 where LineSearch would not move (ℓ_i'(0) ≥ 0).
  for (int i = 0; i < ni; ++i) ls_.alpha[i] = ls_.d0[i] < 0 ? 1.0 : 0.0;
  ++st->quadratic_steps;
}

inline void IcfSolver::FinishIteration(const IcfModel& m, const double* w, int ni,
                                       const char* major, NewtonState* s, SolveStats* st) {
  const bool per_island = ni > 1;
  s->step_prev2 = s->step_prev;
  s->step_prev = TakeStep(m, w, per_island, ni);
  AdvanceProducts(m);
  bool all_exact = true;
  for (int i = 0; i < ni; ++i) {
    const bool majorized = major && major[i];
    all_exact = all_exact && !majorized;
    if (per_island && !isl_.frozen[i]) isl_.exact_run[i] = majorized ? 0 : isl_.exact_run[i] + 1;
  }
  s->exact_run = all_exact ? s->exact_run + 1 : 0;
  ++st->iterations;
}

namespace {
// Adds the wall time of its scope to *total (SolveStats' phase times); a
// null total (SolverOptions::phase_timers off) reads no clock.
class PhaseTimer {
 public:
  explicit PhaseTimer(double* total) : total_(total) {
    if (total_) start_ = std::chrono::steady_clock::now();
  }
  ~PhaseTimer() {
    if (total_)
      *total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double* total_;
  std::chrono::steady_clock::time_point start_;
};
}  // namespace

bool IcfSolver::SolveSmall(const IcfModel& m, const double* v_guess, const SolverOptions& o,
                           double* v, SolveStats* st, const double* extrapolated) {
  // cenic-math §8.9, "A path for tiny problems": the general loop's first
  // iteration and its second evaluation, in the same calls and order
  // (evaluation, per-island stopping test, exact Newton direction with the
  // frozen islands' part 0, quadratic step, evaluation, stopping test). With
  // several islands H is assembled whole in dof order and factorized by
  // SmallCholesky: on islands in dof order (under kMinColumnCholeskyDofs)
  // the islands kind's factor to the bit (the blocks between islands are
  // exact zeros); one island uses the general loop's kind. Nothing
  // of v is written unless it returns true; false hands the problem to the
  // general loop, which starts again from the guess.
  const int nv = m.nv;
  const int ni = NumIslands(m);
  const bool per_island = ni > 1;
  NewtonState ns;
  const double tol = StartSolve(m, o, v_guess, extrapolated, ni, &ns);
  if (!std::isfinite(tol)) return false;
  fresh_ = false;  // (no factorization kept for reuse)
  partial_factor_ = false;
  line_search_sums_ = false;  // (both evaluations of the path: no line search)
  Evaluate(m, vtmp_.data(), nullptr);
  double Dg;
  if (!FiniteGradient(m, per_island, &Dg, st)) return false;
  int nfrozen = 0;
  if (Converged(0, Dg, tol, ni, &ns, &nfrozen, st)) {
    CopyShort(vtmp_.data(), nv, v);
    return true;
  }
  double* w = dv_.data();
  for (int i = 0; i < nv; ++i) w[i] = -data_.grad[i];
  if (per_island) {
    // H = A + Σ JᵀGJ (AccumulateHessian's sums, in its order), lower
    // triangle, whole: the islands kind's factor without its per-island
    // layout and bookkeeping.
    // The rows here are one-row constraints (limits, couplings, gains:
    // SmallEligible), so each term of J_cᵀ G_c J_c is CongruenceTermsUpTo's
    // sums for R = 1, 0 + J_a (0 + G J_b), written out (cenic-math §8.9,
    // "h25c": the general walk cost ≈ 380 instructions per solve for
    // slider_crank's five terms); pools, rows and terms in its order.
    double L[kSmallProblemDofs * kSmallProblemDofs], dinv[kSmallProblemDofs];
    std::fill(L, L + nv * nv, 0.0);
    for (int i = 0; i < nv; ++i) {
      const int adr = m.M_rowadr[i], nnz = m.M_rownnz[i];
      for (int k = 0; k < nnz; ++k) L[m.M_colind[adr + k] * nv + i] += m.M[adr + k];
      L[i * nv + i] += m.h * m.D[i] + m.h * m.h * m.K[i];
    }
    ForEachPool(m, data_, [&](const auto& pool, const auto& pd) {
      constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
      if constexpr (R == 1) {
        for (int c = 0; c < pool.size(); ++c) {
          const double G = pd.G[c];
          if (G == 0.0) continue;
          const std::span<const int> dofs = pool.rows.dofs(c);
          const int n = static_cast<int>(dofs.size());
          const double* J = pool.rows.J(c);
          double gJ[kSmallProblemDofs];
          for (int k = 0; k < n; ++k) gJ[k] = 0.0 + G * J[k];
          for (int a = 0; a < n; ++a)
            for (int b = 0; b <= a; ++b) L[dofs[b] * nv + dofs[a]] += 0.0 + J[a] * gJ[b];
        }
      }
    });
    if (!detail::SmallCholesky(L, nv, dinv)) return false;
    detail::SmallCholeskySolve(L, nv, dinv, w);
  } else {
    // One island: the general loop's own kind (the tree LDLᵀ of §8.8 on a
    // chain or a free body costs less than the dense loops).
    HessianFactor* H = Factor(ChooseLinearSolver(m, o.linear_solver), o);
    H->Prepare(m);
    H->SetFrozen(nullptr);
    if (!H->AssembleAndFactor(m, data_)) return false;
    H->Bind(m, data_);
    H->Solve(w, w);
  }
  ++st->factorizations;
  if (per_island && nfrozen > 0) ZeroFrozen(m, w);
  const double d0 = Dot(data_.grad, w, nv);
  if (AcceptGuess(ns, d0, ni, st)) {
    CopyShort(vtmp_.data(), nv, v);
    return true;
  }
  if (!(d0 < 0)) return false;
  // PrepareLineSearch's A w, ℓ_i'(0) = ∇ℓ_iᵀ w (ls_.d0), v_c(0) and u = J w
  // of every row, in its order, without the line search's momentum sums.
  CopyShort(w, nv, data_.w.data());
  m.MultiplyA(w, data_.Aw.data());
  {
    const double* g = data_.grad.data();
    double* d0_i = ls_.d0.data();
    if (per_island) {
      const int* dof_isl = dof_island_.data();
      for (int i = 0; i < ni; ++i) d0_i[i] = 0.0;
      for (int i = 0; i < nv; ++i) d0_i[dof_isl[i]] += g[i] * w[i];
    } else {
      double d = 0;
      for (int i = 0; i < nv; ++i) d += g[i] * w[i];
      d0_i[0] = d;
    }
  }
  ForEachPool(m, data_, [&](const auto& pool, auto& pd) {
    if (pool.size() > 0) StartRowsAlong(pool, pd, w);
  });
  if (!StepStaysQuadratic(m)) return false;
  QuadraticStep(ni, st);
  FinishIteration(m, w, ni, nullptr, &ns, st);  // (exact: no majorizer)
  Evaluate(m, vtmp_.data(), nfrozen > 0 ? isl_.frozen.data() : nullptr, nullptr, true);
  if (!FiniteGradient(m, per_island, &Dg, st)) return false;
  if (!Converged(1, Dg, tol, ni, &ns, &nfrozen, st)) return false;  // (η = 1 after one step)
  CopyShort(vtmp_.data(), nv, v);
  return true;
}

SolveStatus IcfSolver::Solve(const IcfModel& m, const double* v_guess, const SolverOptions& o,
                             double* v, SolveStats* stats, std::vector<double>* history,
                             const double* guess_direction, const double* extrapolated) {
  const int nv = m.nv;
  SolveStats st;
  bool split = false;  // several islands, each converging on its own
  auto finish = [&](SolveStatus s) {
    st.status = s;
    if (!split) st.island_updates = st.iterations, st.islands_iterated = st.iterations > 0;
    if (o.sweep_min_history > 0) RecordIterations(m, split && !st.small_path, st.iterations);
    st.cost = data_.cost;
    if (stats) *stats = st;
    return s;
  };
  if (nv == 0) return finish(SolveStatus::kConverged);
  if (static_cast<int>(dv_.size()) != nv) {  // (the usual case: sized already, no call)
    dv_.resize(nv);
    vtmp_.resize(nv);
  }
  islands_on_ = o.island_line_search;
  sweep_ran_ = false;
  if (!history && !guess_direction && SmallEligible(m, o)) {
    if (SolveSmall(m, v_guess, o, v, &st, extrapolated)) {
      split = NumIslands(m) > 1;
      st.small_path = 1;
      return finish(SolveStatus::kConverged);
    }
    st = SolveStats();  // the general loop, from the guess
  }
  line_search_sums_ = true;  // (the small path turns them off)
  // Several islands: each is its own problem (ℓ is a sum over islands), so
  // each stops at its own tolerance ε max(1, |D r|_i) and, once converged,
  // is frozen: no more evaluation, assembly, factorization or line search.
  const int ni = NumIslands(m);
  const bool per_island = ni > 1;
  if (m.contacts.size() > 0) SizeSweepWork(m);
  NewtonState ns;
  const double tol = StartSolve(m, o, v_guess, extrapolated, ni, &ns);
  if (!std::isfinite(tol)) return finish(SolveStatus::kNonFinite);

  const LinearSolverKind kind = ChooseLinearSolver(m, o.linear_solver);
  HessianFactor* H = Factor(kind, o);
  // Quadratic step (§8.9): only rows with piecewise-quadratic costs and an
  // exact Newton direction.
  const bool quadratic_rows = o.quadratic_shortcut && o.alpha_max == 1.0 && !o.hessian_reuse &&
                              kind != LinearSolverKind::kPcg && m.contacts.size() == 0 &&
                              m.contact_torques.size() == 0 && m.dry_friction.size() == 0;
  const bool pattern_changed = H->Prepare(m);
  // A new pattern invalidates the stored factorization even if this solve
  // ends before factorizing (converged at k = 0); so does one that skipped
  // the islands frozen in the last solve.
  if (fresh_factor_ != H || pattern_changed || partial_factor_) fresh_ = false;
  partial_factor_ = false;

  split = per_island;
  const char* frozen = per_island ? isl_.frozen.data() : nullptr;
  int nfrozen = 0;
  H->SetFrozen(nullptr);
  // The factor must not keep a pointer into isl_ once this solve returns.
  struct UnsetFrozen {
    HessianFactor* h;
    ~UnsetFrozen() { h->SetFrozen(nullptr); }
  } unset_frozen{H};

  isl_.major.assign(ni, 0);
  bool advanced = false;  // data_ holds A v and J v + b at vtmp_ (AdvanceProducts)
  const bool dual_on = o.friction_dual && !o.hessian_reuse;  // §8.1
  double Dg_prev = 0;  // |D ∇ℓ| of the last iteration (PCG forcing)
  for (int k = 0; k < o.max_iterations; ++k) {
    {
      PhaseTimer t(o.phase_timers ? &st.time_evaluate : nullptr);
      // §8.1: majorized friction for k < K and, with K > 0, for an island
      // whose last line search was damped. Not with Hessian reuse (§8.5): a
      // kept majorized factorization would steer many iterations.
      const int K = o.hessian_reuse ? 0 : o.majorized_iterations;
      const bool damped = !o.hessian_reuse && o.majorize_damped && k > 0;
      bool any_major = false;
      for (int i = 0; i < ni; ++i) {
        isl_.major[i] = k < K || (damped && ls_.alpha[i] < o.damped_alpha);
        any_major = any_major || isl_.major[i];
      }
      // Primal-dual friction (§8.1): z = 0 before the first evaluation, or
      // t̂ after it (the first iteration then is exact Newton).
      // Not with Hessian reuse, like the majorizer.
      if (dual_on && k == 0 && !o.friction_dual_exact_start)
        std::fill(data_.friction_dual.begin(), data_.friction_dual.end(), 0.0);
      const bool dual = dual_on && (k > 0 || !o.friction_dual_exact_start);
      // No island frozen yet: the same as no frozen flags.
      Evaluate(m, vtmp_.data(), nfrozen > 0 ? frozen : nullptr,
               any_major ? isl_.major.data() : nullptr, advanced, dual);
      if (k == 0 && guess_direction)
        PullBackGuess(m, guess_direction, any_major ? isl_.major.data() : nullptr, dual,
                      &st.ls_iterations);
      else if (k == 0 && (o.guess_sweeps > 0 || o.impact_sweeps > 0 || o.articulated_sweeps > 0) &&
               m.contacts.size() > 0) {
        st.sweep_islands =
            SweepStart(m, tol, o, any_major ? isl_.major.data() : nullptr, dual);
      }
      if (dual_on && k == 0 && o.friction_dual_exact_start) StartFrictionDual(m);
    }
    if (history) history->push_back(data_.cost);
    double Dg;
    if (!FiniteGradient(m, per_island, &Dg, &st)) return finish(SolveStatus::kNonFinite);
    if (Converged(k, Dg, tol, ni, &ns, &nfrozen, &st)) {
      std::copy(vtmp_.begin(), vtmp_.end(), v);
      return finish(SolveStatus::kConverged);
    }
    if (k >= 2 && ns.exact_run >= 2) {
      const double theta = std::clamp(ns.step_prev / ns.step_prev2, 0.0, 0.9999);
      ns.eta = theta / (1 - theta);
      if (std::pow(theta, o.reuse_target_iterations - k) / (1 - theta) * ns.step_prev > tol)
        fresh_ = false;  // (P35)
    }
    const bool same_pattern = k >= 1 || !pattern_changed;
    std::optional<PhaseTimer> factor_timer(std::in_place,
                                           o.phase_timers ? &st.time_factorize : nullptr);
    if (!(o.hessian_reuse && same_pattern && fresh_)) {
      ++st.factorizations;
      partial_factor_ = nfrozen > 0 && H->SetFrozen(frozen);
      if (!H->AssembleAndFactor(m, data_)) {
        fresh_ = false;
        return finish(SolveStatus::kNotPositiveDefinite);
      }
      fresh_ = true;
      fresh_factor_ = H;
    }
    // Inexact Newton (§8.4, kPcg): the relative residual of the direction
    // follows the gradient's progress (Eisenstat–Walker), loose while ℓ is
    // far from quadratic, pcg_tolerance once the iteration converges fast.
    double forcing = o.pcg_forcing_max;
    if (k > 0 && Dg_prev > 0) forcing = 0.9 * (Dg / Dg_prev) * (Dg / Dg_prev);
    forcing = std::clamp(forcing, o.pcg_tolerance, std::max(o.pcg_tolerance, o.pcg_forcing_max));
    if (o.pcg_forcing_max > o.pcg_tolerance) {
      // No oversolving (§8.4): a direction whose residual is kOversolve
      // times the distance of the island farthest from its tolerance
      // already ends the iteration; a tighter solve buys nothing.
      double far = Dg / tol;
      if (per_island) {
        far = 0;
        for (int i = 0; i < ni; ++i)
          if (!isl_.frozen[i]) far = std::max(far, std::sqrt(isl_.Dg2[i]) / isl_.tol[i]);
      }
      if (far > 0) forcing = std::clamp(kOversolve / far, forcing, o.pcg_forcing_max);
    }
    H->SetIterative(forcing, o.pcg_max_iterations);
    Dg_prev = Dg;
    const double* w = NewtonDirection(m, H, per_island, nfrozen > 0, &st.linear_iterations);
    factor_timer.reset();
    const double d0 = Dot(data_.grad, w, nv);  // ℓ'(0) = ∇ℓᵀ w
    if (k == 0 && AcceptGuess(ns, d0, ni, &st)) {
      std::copy(vtmp_.begin(), vtmp_.end(), v);
      return finish(SolveStatus::kConverged);
    }
    if (!(d0 < 0)) {
      fresh_ = false;
      return finish(std::isfinite(d0) ? SolveStatus::kNotDescent : SolveStatus::kNonFinite);
    }
    {
      PhaseTimer t(o.phase_timers ? &st.time_line_search : nullptr);
      // StepStaysQuadratic reads every limit and gain row.
      PrepareLineSearch(m, w, nfrozen > 0 && !quadratic_rows ? frozen : nullptr);
      if (quadratic_rows && StepStaysQuadratic(m)) {
        QuadraticStep(ni, &st);
      } else if (!LineSearch(m, o, &st.ls_iterations, &st.extended_searches)) {
        return finish(SolveStatus::kLineSearchFailed);
      }
    }
    FinishIteration(m, w, ni, isl_.major.data(), &ns, &st);
    advanced = true;
    if (dual_on) UpdateFrictionDual(m, per_island, o.alpha_max);
  }
  Evaluate(m, vtmp_.data(), frozen, nullptr, advanced);
  std::copy(vtmp_.begin(), vtmp_.end(), v);
  return finish(SolveStatus::kMaxIterations);
}

bool IcfSolver::SearchDirection(const IcfModel& m, const double* v, LinearSolverKind kind,
                                double* w) {
  Evaluate(m, v);
  HessianFactor* H = Factor(kind, SolverOptions());
  H->Prepare(m);
  H->SetFrozen(nullptr);
  fresh_ = false;
  if (!H->AssembleAndFactor(m, data_)) return false;
  for (int i = 0; i < m.nv; ++i) w[i] = -data_.grad[i];
  H->Bind(m, data_);
  H->Solve(w, w);
  return true;
}

Eigen::MatrixXd IcfSolver::Hessian(const IcfModel& m, const double* v) {
  Evaluate(m, v);
  HessianFactor* H = Factor(LinearSolverKind::kDense, SolverOptions());
  H->Prepare(m);
  fresh_ = false;
  H->AssembleAndFactor(m, data_);
  return H->DenseH();
}

void IcfSolver::HessianDiagonal(const IcfModel& m, double* diag) {
  std::fill(diag, diag + m.nv, 0.0);
  detail::AccumulateHessian(m, data_, &diag_block_, [diag](int i, int j, double x) {
    if (i == j) diag[i] += x;
  });
}

bool IcfSolver::FactorAtSolution(const IcfModel& m, const SolverOptions& o) {
  solution_factor_ = nullptr;
  if (m.nv == 0) return false;
  HessianFactor* H = Factor(ChooseLinearSolver(m, o.linear_solver), o);
  H->Prepare(m);
  H->SetFrozen(nullptr);
  fresh_ = false;
  partial_factor_ = false;
  if (!H->AssembleAndFactor(m, data_)) return false;
  H->Bind(m, data_);
  solution_factor_ = H;
  return true;
}

void IcfSolver::SolveAtSolution(double* x) { solution_factor_->Solve(x, x); }

}  // namespace mjcenic::icf
