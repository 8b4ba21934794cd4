#include "mjcenic/icf/icf_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mjcenic::icf {

namespace {
constexpr double kEpsMachine = std::numeric_limits<double>::epsilon();

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

HessianFactor* IcfSolver::Factor(LinearSolverKind kind) {
  auto& f = (kind == LinearSolverKind::kSparse) ? sparse_ : dense_;
  if (!f) f = MakeHessianFactor(kind);
  return f.get();
}

void IcfSolver::Evaluate(const IcfModel& m, const double* v) {
  data_.Resize(m);
  const int nv = m.nv;
  std::copy(v, v + nv, data_.v.begin());
  m.MultiplyA(v, data_.Av.data());
  double cost = 0;
  for (int i = 0; i < nv; ++i) {
    data_.grad[i] = data_.Av[i] - m.r[i];
    cost += v[i] * (0.5 * data_.Av[i] - m.r[i]);
  }
  auto eval_pool = [&](const auto& pool, auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c) {
      double* vc = pd.vc.data() + R * c;
      pool.rows.Multiply(c, v, vc);
      if constexpr (R == 3)
        for (int q = 0; q < 3; ++q) vc[q] += pool.bias[3 * c + q];
      double* gamma = pd.gamma.data() + R * c;
      pool.Eval(c, vc, &pd.cost[c], gamma, pd.G.data() + R * R * c);
      cost += pd.cost[c];
      pool.rows.MultiplyTransposeAdd(c, gamma, -1.0, data_.grad.data());
    }
  };
  ForEachPool(m, data_, eval_pool);
  data_.cost = cost;
}

void IcfSolver::PrepareLineSearch(const IcfModel& m, const double* w) {
  // §3.4: momentum part ½aα² + bα + c; u_i = J_i w per constraint. Requires
  // Evaluate() at the base point v.
  const int nv = m.nv;
  std::copy(w, w + nv, data_.w.begin());
  m.MultiplyA(w, data_.Aw.data());
  data_.ls_a = Dot(data_.Aw, w, nv);
  data_.ls_b = Dot(data_.Av, w, nv) - Dot(m.r, w, nv);
  double c = 0;
  for (int i = 0; i < nv; ++i) c += data_.v[i] * (0.5 * data_.Av[i] - m.r[i]);
  data_.ls_c = c;
  auto prep = [&](const auto& pool, auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    std::copy(pd.vc.begin(), pd.vc.begin() + R * pool.size(), pd.vc_base.begin());
    for (int k = 0; k < pool.size(); ++k) pool.rows.Multiply(k, w, pd.u.data() + R * k);
  };
  ForEachPool(m, data_, prep);
}

void IcfSolver::EvalAlongLine(const IcfModel& m, double alpha, double* cost, double* d1,
                              double* d2) {
  double l = 0.5 * data_.ls_a * alpha * alpha + data_.ls_b * alpha + data_.ls_c;
  double dl = data_.ls_a * alpha + data_.ls_b;
  double ddl = data_.ls_a;
  auto along = [&](const auto& pool, auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    double vc[R], gamma[R], G[R * R], ci;
    for (int k = 0; k < pool.size(); ++k) {
      const double* u = pd.u.data() + R * k;
      for (int q = 0; q < R; ++q) vc[q] = pd.vc_base[R * k + q] + alpha * u[q];
      pool.Eval(k, vc, &ci, gamma, G);
      l += ci;
      for (int q = 0; q < R; ++q) {
        dl -= u[q] * gamma[q];
        double Gu = 0;
        for (int p = 0; p < R; ++p) Gu += G[q * R + p] * u[p];
        ddl += u[q] * Gu;
      }
    }
  };
  ForEachPool(m, data_, along);
  *cost = l;
  *d1 = dl;
  *d2 = ddl;
}

double IcfSolver::LineSearch(const IcfModel& m, double d0, const SolverOptions& o, int* evals,
                             bool* ok) {
  // §8.3: exact minimization of ℓ(v + α w) on [0, α_max]; d0 = ℓ'(0) < 0.
  *ok = true;
  const double amax = o.alpha_max;
  const double l0 = data_.cost;
  double l1, d1, dd1;
  EvalAlongLine(m, amax, &l1, &d1, &dd1);
  if (d1 <= kEpsMachine) return amax;
  // Root of f(α) = ℓ'(α)/(−ℓ'(0)), f(0) = −1 < 0 < f(α_max).
  const double scale = -d0;
  double guess;
  if (o.line_search_guess == LineSearchGuess::kCubic) {
    // Hermite cubic on t ∈ [0,1] matching ℓ, ℓ' at both ends.
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
    guess = amax * std::clamp(t, 0.0, 1.0);
  } else {
    guess = (dd1 > 0) ? std::min(-d0 / dd1, amax) : 0.5 * amax;
  }
  const double xtol = 1e-8, ftol = 1e-8;
  if (std::abs(d1 / scale) < ftol) return amax;
  double xl = 0, xh = amax;
  double x = std::clamp(guess, 0.0, amax);
  double dxold = xh - xl, dx = dxold;
  double l, f, df;
  EvalAlongLine(m, x, &l, &f, &df);
  ++*evals;
  f /= scale;
  df /= scale;
  for (int it = 0; it < 100; ++it) {
    if (std::abs(f) < ftol) return x;
    if (f < 0) xl = x; else xh = x;
    const bool out = ((x - xh) * df - f) * ((x - xl) * df - f) > 0;
    if (out || std::abs(2 * f) > std::abs(dxold * df)) {
      dxold = dx;
      dx = 0.5 * (xh - xl);
      x = xl + dx;
    } else {
      dxold = dx;
      dx = f / df;
      x -= dx;
    }
    if (std::abs(dx) < xtol) return x;
    EvalAlongLine(m, x, &l, &f, &df);
    ++*evals;
    f /= scale;
    df /= scale;
  }
  *ok = false;
  return x;
}

SolveStatus IcfSolver::Solve(const IcfModel& m, const double* v_guess, const SolverOptions& o,
                             double* v, SolveStats* stats, std::vector<double>* history) {
  const int nv = m.nv;
  SolveStats st;
  auto finish = [&](SolveStatus s) {
    st.status = s;
    st.cost = data_.cost;
    if (stats) *stats = st;
    return s;
  };
  if (nv == 0) return finish(SolveStatus::kConverged);
  scale_.resize(nv);
  dv_.resize(nv);
  vtmp_.resize(nv);
  // §8.2: D = diag(M)^(-1/2), tol = ε max(1, |D r|).
  double Dr = 0;
  for (int i = 0; i < nv; ++i) {
    scale_[i] = 1.0 / std::sqrt(m.M_diag[i]);
    Dr += (scale_[i] * m.r[i]) * (scale_[i] * m.r[i]);
  }
  const double tol = std::max(o.tolerance, o.min_tolerance) * std::max(1.0, std::sqrt(Dr));
  if (!std::isfinite(tol)) return finish(SolveStatus::kNonFinite);

  const LinearSolverKind kind = ChooseLinearSolver(m, o.linear_solver);
  HessianFactor* H = Factor(kind);
  const bool pattern_changed = H->Prepare(m);
  if (fresh_factor_ != H) fresh_ = false;

  std::copy(v_guess, v_guess + nv, vtmp_.begin());
  double eta = 1.0;
  double step_prev = 0, step_prev2 = 0;  // δ_{k-1}, δ_{k-2}
  for (int k = 0; k < o.max_iterations; ++k) {
    Evaluate(m, vtmp_.data());
    if (history) history->push_back(data_.cost);
    double Dg = 0;
    for (int i = 0; i < nv; ++i) Dg += (scale_[i] * data_.grad[i]) * (scale_[i] * data_.grad[i]);
    Dg = std::sqrt(Dg);
    st.scaled_gradient = Dg;
    if (!std::isfinite(Dg) || !std::isfinite(data_.cost)) return finish(SolveStatus::kNonFinite);
    // Criterion 1 (optimality) and criterion 2 (Hairer–Wanner), §8.2.
    const bool converged = Dg < tol || (k >= 1 && eta * step_prev < tol);
    if (converged) {
      std::copy(vtmp_.begin(), vtmp_.end(), v);
      return finish(SolveStatus::kConverged);
    }
    if (k >= 2) {
      const double theta = std::clamp(step_prev / step_prev2, 0.0, 0.9999);
      eta = theta / (1 - theta);
      if (std::pow(theta, o.reuse_target_iterations - k) / (1 - theta) * step_prev > tol)
        fresh_ = false;  // (P35)
    }
    const bool same_pattern = k >= 1 || !pattern_changed;
    if (!(o.hessian_reuse && same_pattern && fresh_)) {
      ++st.factorizations;
      if (!H->AssembleAndFactor(m, data_)) {
        fresh_ = false;
        return finish(SolveStatus::kNotPositiveDefinite);
      }
      fresh_ = true;
      fresh_factor_ = H;
    }
    double* w = dv_.data();
    for (int i = 0; i < nv; ++i) w[i] = -data_.grad[i];
    H->Solve(w, w);
    const double d0 = Dot(data_.grad, w, nv);  // ℓ'(0) = ∇ℓᵀ w
    if (!(d0 < 0)) {
      fresh_ = false;
      return finish(std::isfinite(d0) ? SolveStatus::kNotDescent : SolveStatus::kNonFinite);
    }
    PrepareLineSearch(m, w);
    bool ok;
    const double alpha = LineSearch(m, d0, o, &st.ls_iterations, &ok);
    if (!ok) return finish(SolveStatus::kLineSearchFailed);
    double step = 0;
    for (int i = 0; i < nv; ++i) {
      const double dvi = alpha * w[i];
      vtmp_[i] += dvi;
      step += (dvi / scale_[i]) * (dvi / scale_[i]);
    }
    step_prev2 = step_prev;
    step_prev = std::sqrt(step);
    ++st.iterations;
  }
  Evaluate(m, vtmp_.data());
  std::copy(vtmp_.begin(), vtmp_.end(), v);
  return finish(SolveStatus::kMaxIterations);
}

bool IcfSolver::SearchDirection(const IcfModel& m, const double* v, LinearSolverKind kind,
                                double* w) {
  Evaluate(m, v);
  HessianFactor* H = Factor(kind);
  H->Prepare(m);
  fresh_ = false;
  if (!H->AssembleAndFactor(m, data_)) return false;
  for (int i = 0; i < m.nv; ++i) w[i] = -data_.grad[i];
  H->Solve(w, w);
  return true;
}

Eigen::MatrixXd IcfSolver::Hessian(const IcfModel& m, const double* v) {
  Evaluate(m, v);
  HessianFactor* H = Factor(LinearSolverKind::kDense);
  H->Prepare(m);
  fresh_ = false;
  H->AssembleAndFactor(m, data_);
  return H->DenseH();
}

}  // namespace mjcenic::icf
