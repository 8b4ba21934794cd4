#include "mjcenic/icf/icf_solver.h"

#include "mjcenic/icf/linear/internal.h"
#include "mjcenic/icf/short_arrays.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

namespace mjcenic::icf {

namespace {
constexpr double kEpsMachine = std::numeric_limits<double>::epsilon();
// §8.2, "The guess": at k = 0 the residual at v0 is at most this fraction of
// the step's smooth momentum change ‖D (A v0 − r)‖ (squared: per island).
constexpr double kGuessBalance = 0.5;
constexpr double kGuessBalance2 = kGuessBalance * kGuessBalance;
// PCG forcing floor: a direction's relative residual need not be below this
// fraction of tolerance / |D∇ℓ| (cenic-math §8.4, "No oversolving").
constexpr double kOversolve = 0.1;
// The loosest PCG direction of a converging solve (cenic-math §8.4, §8.1.6).
constexpr double kTightPcgForcing = 1e-2;
// Line search (§8.3): α_max; the extension's κ and its largest α.
constexpr double kAlphaMax = 1.0;
constexpr double kExtendSlope = 0.3;
constexpr double kExtendAlphaMax = 2.0;
// Policy: the duals start exact after a solve of fewer iterations, the
// sweeps run after a solve of at least this many (cenic-math §8.1.6).
constexpr int kDualExactBelow = 3;
constexpr int kSweepAfter = 4;

double Dot(const std::vector<double>& a, const double* b, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

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

LinearSolver* IcfSolver::Factor(LinearSolverKind kind, const SolverOptions& o) {
  auto& f = kind == LinearSolverKind::kSparse    ? sparse_
            : kind == LinearSolverKind::kIslands ? islands_
            : kind == LinearSolverKind::kPcg     ? pcg_
            : kind == LinearSolverKind::kLowRank ? lowrank_
            : kind == LinearSolverKind::kBlock   ? block_
            : kind == LinearSolverKind::kTree    ? tree_
                                                 : dense_;
  if (!f) f = MakeLinearSolver(kind, o.pcg_tolerance, o.pcg_max_iterations);
  f->SetIterative(o.pcg_tolerance, o.pcg_max_iterations);  // this solve's settings
  return f.get();
}

LinearSolver* IcfSolver::PrepareFactor(const IcfModel& m, const SolverOptions& o,
                                       bool* quadratic) {
  // Chosen and prepared only once a direction is needed: a solve that
  // converges at its guess (a scene at rest) pays for neither.
  const LinearSolverKind kind = ChooseLinearSolver(m, o.linear_solver);
  // §8.1.8: piecewise-quadratic rows and an exact direction (not PCG's).
  *quadratic = !m.HasSmoothRows() && kind != LinearSolverKind::kPcg;
  LinearSolver* H = Factor(kind, o);
  H->Prepare(m);
  H->SetFrozen(nullptr);
  return H;
}

IcfSolver::Policy IcfSolver::ChoosePolicy(const SolverOptions& o) const {
  // A fixed step's solve, or any tight one, runs to convergence (§8.1.6).
  const bool converging = o.fixed_step || o.tolerance <= kTightTolerance;
  Policy p;
  p.dual_exact_start = last_iterations_ < kDualExactBelow;
  p.pcg_forcing_max = converging ? kTightPcgForcing : 0.0;
  p.sweeps = o.contact_sweeps && o.fixed_step && last_iterations_ >= kSweepAfter;
  return p;
}

void IcfSolver::ResizeIslandWork(int ni) {
  if (static_cast<int>(ls_.active.size()) == ni) return;  // all sized together
  for (auto* x : {&ls_.alpha, &ls_.l, &ls_.f, &ls_.df, &ls_.xl, &ls_.xh, &ls_.dx, &ls_.dxold,
                  &ls_.l_amax})
    x->resize(ni);
  ls_.active.resize(ni);
  ls_.extend.resize(ni);
}

void IcfSolver::EvalAlongLine(const IcfModel& m, double alpha, double* cost, double* d1,
                              double* d2) {
  const int ni = NumIslands();
  ResizeIslandWork(ni);
  std::fill(ls_.alpha.begin(), ls_.alpha.begin() + ni, alpha);
  std::fill(ls_.active.begin(), ls_.active.begin() + ni, 1);
  EvalAlongLineIslands(m, data_, ls_.alpha.data(), ls_.active.data(), ls_.l.data(),
                       ls_.f.data(), ls_.df.data());
  *cost = *d1 = *d2 = 0;
  for (int i = 0; i < ni; ++i) {
    *cost += ls_.l[i];
    *d1 += ls_.f[i];
    *d2 += ls_.df[i];
  }
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


int IcfSolver::StartLineSearch(bool extend, int* extending) {
  // After the evaluation at α_max: an island whose minimum lies there stops,
  // or, with the extension (item 2), when its slope at α_max is still below
  // −κ ℓ_i'(0) (the Newton step undershoots the line minimum by far, e.g. the
  // impulse of a Hunt–Crossley impact, quadratic in v_n, halves the distance
  // per step), tries Newton on ℓ_i' from α_max within [α_max, α_ext]. The
  // others bracket the root of f(α) = ℓ_i'(α)/(−ℓ_i'(0)) in [0, α_max] from
  // the cubic guess (item 3).
  LineSearchWork& s = ls_;
  const double amax = kAlphaMax, ftol = 1e-8;
  const double kappa = extend ? kExtendSlope : 0.0;
  int remaining = 0;
  for (int i = 0; i < NumIslands(); ++i) {
    if (!s.active[i]) continue;
    const double d0 = data_.ls_d0[i], l0 = data_.ls_l0[i];
    const double l1 = s.l[i], d1 = s.f[i], dd1 = s.df[i];
    if (d1 <= kEpsMachine || std::abs(d1 / -d0) < ftol) {  // minimum at α_max
      s.active[i] = 0;
      s.extend[i] = kappa > 0 && d1 < -kappa * -d0;
      if (s.extend[i]) {
        s.xl[i] = amax;
        s.l_amax[i] = l1;
        s.dxold[i] = d1;  // ℓ_i'(α_max) until the trial's evaluation
        s.alpha[i] =
            dd1 > 0 ? std::clamp(amax - d1 / dd1, amax, kExtendAlphaMax) : kExtendAlphaMax;
        ++*extending;
      }
      continue;
    }
    s.xl[i] = 0;
    s.xh[i] = amax;
    s.alpha[i] = std::clamp(CubicGuess(l0, l1, d0, d1, amax), 0.0, amax);
    s.dxold[i] = s.dx[i] = amax;
    ++remaining;
  }
  return remaining;
}

int IcfSolver::ExtendLineSearch(const IcfModel& m, int* evals, int* extended) {
  // One evaluation at the trial α: still descending there, take it (ℓ_i is
  // lower than at α_max); else the minimizer is bracketed in [α_max, trial]
  // and rtsafe finds it, from the Hermite cubic's minimizer there.
  LineSearchWork& s = ls_;
  const double ftol = 1e-8;
  EvalAlongLineIslands(m, data_, s.alpha.data(), s.extend.data(), s.l.data(), s.f.data(),
                       s.df.data());
  ++*evals;
  int remaining = 0;
  for (int i = 0; i < NumIslands(); ++i) {
    if (!s.extend[i]) continue;
    ++*extended;
    if (!std::isfinite(s.l[i]) || !std::isfinite(s.f[i])) {
      // ℓ_i not finite at the trial: keep the step to α_max.
      s.alpha[i] = kAlphaMax;
      s.l[i] = s.l_amax[i];
      s.extend[i] = 0;
      continue;
    }
    const double f = s.f[i] / -data_.ls_d0[i];
    if (f <= 0 || std::abs(f) < ftol) continue;  // keeps the trial α
    const double width = s.alpha[i] - s.xl[i];
    const double start = s.xl[i] + CubicGuess(s.l_amax[i], s.l[i], s.dxold[i], s.f[i], width);
    s.xh[i] = s.alpha[i];
    s.dxold[i] = s.dx[i] = width;
    s.alpha[i] = start;
    s.active[i] = 1;
    ++remaining;
  }
  return remaining;
}

bool IcfSolver::LineSearch(const IcfModel& m, bool extend, int* evals, int* extended) {
  // §8.3, island by island: α_i minimizes ℓ_i(v + α w) on [0, α_max]
  // (ℓ_i'(0) < 0). All islands iterate in lockstep, one pass over the
  // constraints per evaluation; an island that has its α drops out. Needs
  // PrepareLineSearch for the direction.
  const int ni = NumIslands();
  LineSearchWork& s = ls_;
  for (int i = 0; i < ni; ++i) {
    s.active[i] = data_.ls_d0[i] < 0;  // otherwise w_i = 0 up to round-off: stay
    s.alpha[i] = s.active[i] ? kAlphaMax : 0.0;
    s.extend[i] = 0;
  }
  EvalAlongLineIslands(m, data_, s.alpha.data(), s.active.data(), s.l.data(), s.f.data(),
                       s.df.data());
  int extending = 0;
  int remaining = StartLineSearch(extend, &extending);
  if (extending > 0) remaining += ExtendLineSearch(m, evals, extended);
  // Safeguarded Newton–bisection (rtsafe) on f, per island. Past α_max the
  // root is found to 1 % of the slope at 0 (ℓ_i there is already below
  // ℓ_i(α_max); the exact minimizer buys no iteration).
  const double xtol = 1e-8, ftol = 1e-8, ftol_ext = 1e-2;
  for (int it = 0; remaining > 0; ++it) {
    if (it == 100) return false;
    EvalAlongLineIslands(m, data_, s.alpha.data(), s.active.data(), s.l.data(), s.f.data(),
                         s.df.data());
    ++*evals;
    for (int i = 0; i < ni; ++i) {
      if (!s.active[i]) continue;
      const double scale = -data_.ls_d0[i];
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
      const bool bisect = out || std::abs(2 * f) > std::abs(s.dxold[i] * df);
      s.dxold[i] = s.dx[i];
      if (bisect) {
        s.dx[i] = 0.5 * (xh - xl);
        x = xl + s.dx[i];
      } else {
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
    if (s.extend[i] && !(s.l[i] <= s.l_amax[i])) s.alpha[i] = kAlphaMax;
  return true;
}

bool IcfSolver::ExactUnitStep(const IcfModel& m, const char* frozen) {
  // §8.1.8. A limit or gain row's cost is a function of its v_c, affine in
  // α, with pieces that are intervals of v_c (LimitPool::Active,
  // GainPool::Piece, as their Eval): the same piece at α = 0 and α = 1
  // (v_c formed as the line search and the next evaluation form it) is the
  // same piece on all of [0, 1]. Couplings and the momentum part are one
  // quadratic. Then ℓ_i'(1) = ℓ_i'(0) + wᵀ H_i w = 0 for the exact
  // direction: α = 1 is the line minimizer.
  const LimitPool& lp = m.limits;
  const PoolData<1>& ld = data_.limits;
  for (int c = 0; c < lp.size(); ++c) {
    if (frozen && frozen[ld.island[c]]) continue;
    const double b = ld.vc_base[c];
    if (lp.Active(c, b) != lp.Active(c, b + 1.0 * ld.u[c])) return false;
  }
  const GainPool& gp = m.gains;
  const PoolData<1>& gd = data_.gains;
  for (int i = 0; i < gp.size(); ++i) {
    if (!(gp.kappa[i] > 0) || (frozen && frozen[gd.island[i]])) continue;  // κ ≤ 0: linear
    const double b = gd.vc_base[i];
    if (gp.Piece(i, b) != gp.Piece(i, b + 1.0 * gd.u[i])) return false;
  }
  // As LineSearch leaves α: 0 where ℓ_i'(0) ≥ 0 (w_i = 0 up to round-off).
  for (int i = 0; i < NumIslands(); ++i) ls_.alpha[i] = data_.ls_d0[i] < 0 ? kAlphaMax : 0.0;
  return true;
}

double IcfSolver::ScaledTolerance(const IcfModel& m, const SolverOptions& o) {
  // §8.2: D = diag(M)^(-1/2), tol = ε max(1, |D r|); with several islands
  // also each island's ε max(1, |D r|_i) and its fresh state, in the same
  // pass over the dofs.
  const int ni = NumIslands();
  scale_.resize(m.nv);
  double* tol_i = nullptr;
  if (ni > 1) {
    StartIslands(ni);
    tol_i = isl_.tol.data();
  }
  const int* isl = data_.dof_island.data();
  double Dr = 0;
  for (int i = 0; i < m.nv; ++i) {
    scale_[i] = 1.0 / std::sqrt(m.M_diag[i]);
    const double x = scale_[i] * m.r[i];
    Dr += x * x;
    if (tol_i) tol_i[isl[i]] += x * x;
  }
  const double eps = std::max(o.tolerance, o.min_tolerance);
  if (tol_i)
    for (int i = 0; i < ni; ++i) tol_i[i] = eps * std::max(1.0, std::sqrt(tol_i[i]));
  return eps * std::max(1.0, std::sqrt(Dr));
}

const double* IcfSolver::NewtonDirection(const IcfModel& m, LinearSolver* H, bool any_frozen,
                                         int* linear_iterations) {
  double* w = dv_.data();
  for (int i = 0; i < m.nv; ++i) w[i] = -data_.grad[i];
  H->Bind(m, data_);
  H->Solve(w, w);
  *linear_iterations += H->last_iterations();
  if (NumIslands() > 1 && any_frozen)
    for (int i = 0; i < m.nv; ++i)
      if (isl_.frozen[data_.dof_island[i]]) w[i] = 0;
  return w;
}

void IcfSolver::StartIslands(int ni) {
  if (static_cast<int>(isl_.tol.size()) != ni) {  // all sized together
    for (auto* x : {&isl_.tol, &isl_.Dg2, &isl_.step2, &isl_.step_prev, &isl_.step_prev2,
                    &isl_.eta})
      x->resize(ni);
    isl_.frozen.resize(ni);
    isl_.iterate.resize(ni);
  }
  for (int i = 0; i < ni; ++i) {
    isl_.tol[i] = isl_.Dg2[i] = isl_.step2[i] = isl_.step_prev[i] = isl_.step_prev2[i] = 0.0;
    isl_.eta[i] = 1.0;
    isl_.frozen[i] = 0;
    isl_.iterate[i] = 0;
  }
}

double IcfSolver::ScaledGradient(const IcfModel& m) {
  double Dg = 0;
  const double *D = scale_.data(), *g = data_.grad.data();
  if (NumIslands() > 1) {
    double* Dg2 = isl_.Dg2.data();
    const int* isl = data_.dof_island.data();
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

bool IcfSolver::IslandsConverged(int k, int* nfrozen, int* island_updates) {
  // Criterion 2 and θ use the island's last steps (k ≥ 1, k ≥ 2), §8.2.
  bool converged = true;
  for (int i = 0; i < NumIslands(); ++i) {
    if (isl_.frozen[i]) continue;
    if (k >= 2 && isl_.step_prev2[i] > 0) {
      const double theta = std::clamp(isl_.step_prev[i] / isl_.step_prev2[i], 0.0, 0.9999);
      isl_.eta[i] = theta / (1 - theta);
    }
    const double tol_i = isl_.tol[i];
    // Criterion 2 only for an island that moved in the last iteration: one
    // whose line search was skipped (ℓ_i'(0) ≥ 0, possible with an
    // inexact direction such as PCG's) has step 0 but need not be solved.
    const bool moved = isl_.step_prev[i] > 0;
    if ((std::sqrt(isl_.Dg2[i]) < tol_i && (k > 0 || !isl_.iterate[i])) ||
        (k >= 1 && moved && isl_.eta[i] * isl_.step_prev[i] < tol_i))
      isl_.frozen[i] = 1, ++*nfrozen;
    else
      converged = false, ++*island_updates;
  }
  return converged;
}

double IcfSolver::TakeStep(const IcfModel& m, const double* w) {
  const int ni = NumIslands();
  const bool per_island = ni > 1;
  double step = 0;
  if (per_island) std::fill(isl_.step2.begin(), isl_.step2.end(), 0.0);
  for (int i = 0; i < m.nv; ++i) {
    const int isl = data_.dof_island[i];
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

double IcfSolver::StartSolve(const IcfModel& m, const SolverOptions& o, const double* v_guess,
                             const double* extrapolated, NewtonState* s) {
  const int ni = NumIslands();
  const double tol = ScaledTolerance(m, o);
  if (!std::isfinite(tol)) return tol;
  // An extrapolated guess (§8.1.1) is not accepted as the solution: its
  // island (or the system) takes at least one Newton iteration.
  if (extrapolated) {
    if (ni > 1) {
      for (int i = 0; i < m.nv; ++i)
        if (extrapolated[i] != 0) isl_.iterate[data_.dof_island[i]] = 1;
    } else {
      for (int i = 0; i < m.nv && !s->iterate_all; ++i) s->iterate_all = extrapolated[i] != 0;
    }
  }
  CopyShort(v_guess, m.nv, vtmp_.data());
  ResizeIslandWork(ni);  // ls_.alpha: the last line search's α per island
  std::fill(ls_.alpha.begin(), ls_.alpha.begin() + ni, 1.0);
  return tol;
}

bool IcfSolver::FiniteGradient(const IcfModel& m, double* Dg, SolveStats* st) {
  *Dg = ScaledGradient(m);
  st->scaled_gradient = *Dg;
  return std::isfinite(*Dg) && std::isfinite(data_.cost);
}

double IcfSolver::GuessMomentumChange(const IcfModel& m) {
  // ‖D (A v − r)‖ at the evaluated iterate (data_.Av) if it is the start
  // velocity v0, per island squared into isl_.step2 (scratch until TakeStep
  // fills it); +∞ for a guess (an island) that is not v0: the test of §8.2,
  // "The guess", is for the untouched start only.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const int ni = NumIslands();
  if (ni > 1) std::fill(isl_.step2.begin(), isl_.step2.begin() + ni, 0.0);
  const int* isl = data_.dof_island.data();
  const bool have_v0 = static_cast<int>(m.v0.size()) == m.nv;
  double s2 = 0;
  bool moved = !have_v0;
  for (int i = 0; i < m.nv; ++i) {
    const double x = scale_[i] * (data_.Av[i] - m.r[i]);
    const bool at_v0 = have_v0 && vtmp_[i] == m.v0[i];
    s2 += x * x;
    moved |= !at_v0;
    if (ni > 1) isl_.step2[isl[i]] += at_v0 ? x * x : kInf;
  }
  return moved ? kInf : std::sqrt(s2);
}

bool IcfSolver::Converged(const IcfModel& m, int k, double Dg, double tol, NewtonState* s,
                          int* nfrozen, SolveStats* st) {
  // Criterion 1 (optimality, from k = 0 but not for an extrapolated guess)
  // and criterion 2 (Hairer–Wanner), §8.2: for the whole system, or island
  // by island. At k = 0 a guess that is the start velocity v0 also needs
  // ‖D g₀‖ ≤ ½ ‖D (A v0 − r)‖ (§8.2, "The guess"): the tolerance's floor and
  // its relative part do not shrink with h, so without it v0, which leaves
  // out a small step's whole momentum change (‖D g₀‖ = ‖D (A v0 − r)‖ where
  // no constraint acts), would pass.
  const int ni = NumIslands();
  if (ni > 1) {
    if (k == 0) {
      s->optimal_at_guess = true;
      bool any = false;
      for (int i = 0; i < ni; ++i) any |= std::sqrt(isl_.Dg2[i]) < isl_.tol[i];
      if (any) GuessMomentumChange(m);
      for (int i = 0; i < ni; ++i) {
        const bool met = std::sqrt(isl_.Dg2[i]) < isl_.tol[i];
        const bool optimal = met && isl_.Dg2[i] <= kGuessBalance2 * isl_.step2[i];
        if (met && !optimal) isl_.iterate[i] = 1;  // ≥ 1 iteration (IslandsConverged)
        s->optimal_at_guess &= optimal;
      }
    }
    const bool converged = IslandsConverged(k, nfrozen, &st->island_updates);
    if (k == 0) st->islands_iterated = st->island_updates;  // not converged at the guess
    return converged;
  }
  if (k == 0) {
    s->optimal_at_guess = Dg < tol && Dg <= kGuessBalance * GuessMomentumChange(m);
    return s->optimal_at_guess && !s->iterate_all;
  }
  return Dg < tol || s->eta * s->step_prev < tol;
}

bool IcfSolver::AcceptGuess(const NewtonState& s, double d0, SolveStats* st) {
  // An extrapolated guess that already met the optimality test and admits
  // no descent (round-off): it is the solution, and no island iterated
  // (IslandsConverged counted the extrapolated ones).
  if (!(s.optimal_at_guess && std::isfinite(d0) && !(d0 < 0))) return false;
  if (NumIslands() > 1) st->island_updates = st->islands_iterated = 0;
  return true;
}

void IcfSolver::FinishIteration(const IcfModel& m, const double* w, NewtonState* s,
                                SolveStats* st) {
  s->step_prev2 = s->step_prev;
  s->step_prev = TakeStep(m, w);
  AdvanceProducts(m, ls_.alpha.data(), &data_);
  ++st->iterations;
}

void IcfSolver::SizeSweepWork(const IcfModel& m, int ni) {
  // Sized whether or not the solve sweeps: no allocation later.
  sweeps_.Size(m, ni);
  for (auto* x : {&sweep_took_, &sweep_keep_, &optimal_}) x->resize(ni);
  guess_l0_.resize(ni);
  sweep_v_.resize(m.nv);
}

int IcfSolver::StartFromSweeps(const IcfModel& m, double tol, bool dual) {
  // data_ holds the evaluation at the guess vtmp_ (ls_l0: ℓ_i there). The
  // islands not optimal there that are candidates (ContactSweeps) get the
  // sweep guess, evaluated (only their rows); each keeps the point of lower
  // ℓ_i, and those that go back are evaluated at the guess again.
  const int nv = m.nv, ni = NumIslands();
  const bool per_island = ni > 1;
  const double Dg = ScaledGradient(m);
  for (int i = 0; i < ni; ++i)
    optimal_[i] = per_island ? std::sqrt(isl_.Dg2[i]) < isl_.tol[i] : Dg < tol;
  if (sweeps_.MarkCandidates(m, data_, optimal_.data(), sweep_took_.data()) == 0) return 0;
  std::copy(data_.ls_l0.begin(), data_.ls_l0.begin() + ni, guess_l0_.begin());
  sweeps_.Sweep(m, data_, vtmp_.data(), sweep_took_.data(), sweep_v_.data());
  // The candidates' dofs at the sweep guess; sweep_v_ keeps the guess there.
  for (int i = 0; i < nv; ++i)
    if (sweep_took_[data_.dof_island[i]]) std::swap(vtmp_[i], sweep_v_[i]);
  for (int i = 0; i < ni; ++i) sweep_keep_[i] = !sweep_took_[i];
  icf::Evaluate(m, vtmp_.data(), &data_, per_island ? sweep_keep_.data() : nullptr, nullptr,
                dual);
  int n = 0, back = 0;
  for (int i = 0; i < ni; ++i) {
    sweep_keep_[i] = 1;  // 0: back to the guess, evaluated again below
    if (sweep_took_[i] && !(data_.ls_l0[i] < guess_l0_[i])) {
      sweep_took_[i] = 0;
      sweep_keep_[i] = 0;
      ++back;
    }
    n += sweep_took_[i];
  }
  if (back == 0) return n;
  for (int i = 0; i < nv; ++i)
    if (!sweep_keep_[data_.dof_island[i]]) vtmp_[i] = sweep_v_[i];
  icf::Evaluate(m, vtmp_.data(), &data_, per_island ? sweep_keep_.data() : nullptr, nullptr,
                dual);
  return n;
}

void IcfSolver::EvaluateIterate(const IcfModel& m, int k, const SolverOptions& o,
                                const Policy& p, double tol, int nfrozen, bool advanced,
                                SolveStats* st) {
  // Primal-dual friction (§8.1.7): z = 0 before the first evaluation, or t̂
  // after it (the first iteration then is exact Newton).
  const bool dual_on = o.friction_dual;
  if (dual_on && k == 0 && !p.dual_exact_start)
    std::fill(data_.friction_dual.begin(), data_.friction_dual.end(), 0.0);
  const bool dual = dual_on && (k > 0 || !p.dual_exact_start);
  // No island frozen yet: the same as no frozen flags.
  icf::Evaluate(m, vtmp_.data(), &data_, nfrozen > 0 ? isl_.frozen.data() : nullptr,
                advanced ? ls_.alpha.data() : nullptr, dual);
  if (k == 0 && p.sweeps && m.contacts.size() > 0) st->sweep_islands = StartFromSweeps(m, tol, dual);
  if (dual_on && k == 0 && p.dual_exact_start) StartFrictionDual(m, &data_);
}

double IcfSolver::Forcing(int k, double Dg, double Dg_prev, double tol, const SolverOptions& o,
                          double forcing_max) const {
  // Inexact Newton (§8.4, kPcg): the relative residual of the direction
  // follows the gradient's progress (Eisenstat–Walker), loose while ℓ is far
  // from quadratic, pcg_tolerance once the iteration converges fast.
  double forcing = forcing_max;
  if (k > 0 && Dg_prev > 0) forcing = 0.9 * (Dg / Dg_prev) * (Dg / Dg_prev);
  forcing = std::clamp(forcing, o.pcg_tolerance, std::max(o.pcg_tolerance, forcing_max));
  if (forcing_max <= o.pcg_tolerance) return forcing;
  // No oversolving (§8.4): a direction whose residual is kOversolve times
  // the distance of the island farthest from its tolerance already ends the
  // iteration; a tighter solve buys nothing.
  double far = Dg / tol;
  if (NumIslands() > 1) {
    far = 0;
    for (int i = 0; i < NumIslands(); ++i)
      if (!isl_.frozen[i]) far = std::max(far, std::sqrt(isl_.Dg2[i]) / isl_.tol[i]);
  }
  if (far > 0) forcing = std::clamp(kOversolve / far, forcing, forcing_max);
  return forcing;
}

SolveStatus IcfSolver::Solve(const IcfModel& m, const double* v_guess, const SolverOptions& o,
                             double* v, SolveStats* stats, std::vector<double>* history,
                             const double* extrapolated) {
  SolveStats st;
  const SolveStatus s = Iterate(m, v_guess, o, v, &st, history, extrapolated);
  st.status = s;
  // One system: its count is the islands' (several: each stops on its own).
  if (m.nv == 0 || NumIslands() <= 1)
    st.island_updates = st.iterations, st.islands_iterated = st.iterations > 0;
  st.cost = data_.cost;
  last_iterations_ = st.iterations;
  if (stats) *stats = st;
  return s;
}

SolveStatus IcfSolver::Iterate(const IcfModel& m, const double* v_guess, const SolverOptions& o,
                               double* v, SolveStats* st, std::vector<double>* history,
                               const double* extrapolated) {
  const int nv = m.nv;
  if (nv == 0) return SolveStatus::kConverged;
  if (static_cast<int>(dv_.size()) != nv) dv_.resize(nv), vtmp_.resize(nv);
  // Several islands: each is its own problem (ℓ is a sum over islands), so
  // each stops at its own tolerance ε max(1, |D r|_i) and, once converged,
  // is frozen: no more evaluation, assembly, factorization or line search.
  TagIslands(m, o.island_line_search, &data_);  // the model is constant during the solve
  const int ni = NumIslands();
  const Policy p = ChoosePolicy(o);
  if (m.contacts.size() > 0) SizeSweepWork(m, ni);
  NewtonState ns;
  const double tol = StartSolve(m, o, v_guess, extrapolated, &ns);
  if (!std::isfinite(tol)) return SolveStatus::kNonFinite;
  LinearSolver* H = nullptr;  // chosen at the first factorization (PrepareFactor)
  bool quadratic = false;
  struct UnsetFrozen {  // the factor must not keep a pointer into isl_
    LinearSolver* h = nullptr;
    ~UnsetFrozen() {
      if (h) h->SetFrozen(nullptr);
    }
  } unset_frozen;
  const char* frozen = ni > 1 ? isl_.frozen.data() : nullptr;
  int nfrozen = 0;
  bool advanced = false;  // data_ holds A v and v_c(0), u at vtmp_ (AdvanceProducts)
  double Dg_prev = 0;     // |D ∇ℓ| of the last iteration (PCG forcing)
  for (int k = 0; k < o.max_iterations; ++k) {
    {
      PhaseTimer t(o.phase_timers ? &st->time_evaluate : nullptr);
      EvaluateIterate(m, k, o, p, tol, nfrozen, advanced, st);
    }
    if (history) history->push_back(data_.cost);
    double Dg;
    if (!FiniteGradient(m, &Dg, st)) return SolveStatus::kNonFinite;
    if (Converged(m, k, Dg, tol, &ns, &nfrozen, st)) {
      std::copy(vtmp_.begin(), vtmp_.end(), v);
      return SolveStatus::kConverged;
    }
    if (k >= 2) {
      const double theta = std::clamp(ns.step_prev / ns.step_prev2, 0.0, 0.9999);
      ns.eta = theta / (1 - theta);
    }
    std::optional<PhaseTimer> factor_timer(std::in_place,
                                           o.phase_timers ? &st->time_factorize : nullptr);
    ++st->factorizations;
    if (!H) unset_frozen.h = H = PrepareFactor(m, o, &quadratic);
    if (nfrozen > 0) H->SetFrozen(frozen);
    if (!H->AssembleAndFactor(m, data_)) return SolveStatus::kNotPositiveDefinite;
    H->SetIterative(Forcing(k, Dg, Dg_prev, tol, o, p.pcg_forcing_max), o.pcg_max_iterations);
    Dg_prev = Dg;
    const double* w = NewtonDirection(m, H, nfrozen > 0, &st->linear_iterations);
    factor_timer.reset();
    const double d0 = Dot(data_.grad, w, nv);  // ℓ'(0) = ∇ℓᵀ w
    if (k == 0 && AcceptGuess(ns, d0, st)) {
      std::copy(vtmp_.begin(), vtmp_.end(), v);
      return SolveStatus::kConverged;
    }
    if (!(d0 < 0)) return std::isfinite(d0) ? SolveStatus::kNotDescent : SolveStatus::kNonFinite;
    {
      PhaseTimer t(o.phase_timers ? &st->time_line_search : nullptr);
      icf::PrepareLineSearch(m, w, &data_, nfrozen > 0 ? frozen : nullptr);
      if (quadratic && ExactUnitStep(m, nfrozen > 0 ? frozen : nullptr))
        ++st->exact_steps;
      else if (!LineSearch(m, o.extended_line_search, &st->ls_iterations, &st->extended_searches))
        return SolveStatus::kLineSearchFailed;
    }
    FinishIteration(m, w, &ns, st);
    advanced = true;
    if (o.friction_dual) UpdateFrictionDual(m, frozen, ls_.alpha.data(), kAlphaMax, &data_);
  }
  icf::Evaluate(m, vtmp_.data(), &data_, frozen, advanced ? ls_.alpha.data() : nullptr);
  std::copy(vtmp_.begin(), vtmp_.end(), v);
  return SolveStatus::kMaxIterations;
}

bool IcfSolver::SearchDirection(const IcfModel& m, const double* v, LinearSolverKind kind,
                                double* w) {
  Evaluate(m, v);
  LinearSolver* H = Factor(kind, SolverOptions());
  H->Prepare(m);
  H->SetFrozen(nullptr);
  if (!H->AssembleAndFactor(m, data_)) return false;
  for (int i = 0; i < m.nv; ++i) w[i] = -data_.grad[i];
  H->Bind(m, data_);
  H->Solve(w, w);
  return true;
}

Eigen::MatrixXd IcfSolver::Hessian(const IcfModel& m, const double* v) {
  Evaluate(m, v);
  LinearSolver* H = Factor(LinearSolverKind::kDense, SolverOptions());
  H->Prepare(m);
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
  LinearSolver* H = Factor(ChooseLinearSolver(m, o.linear_solver), o);
  H->Prepare(m);
  H->SetFrozen(nullptr);
  if (!H->AssembleAndFactor(m, data_)) return false;
  H->Bind(m, data_);
  solution_factor_ = H;
  return true;
}

void IcfSolver::SolveAtSolution(double* x) { solution_factor_->Solve(x, x); }

}  // namespace mjcenic::icf
