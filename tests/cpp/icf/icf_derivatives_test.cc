// Finite-difference checks of the ICF cost, gradient and Hessian for every
// constraint type (cenic-math.md §3–7, §13 items 3, 20–24), plus the Newton
// solver's descent / early-exit / quadratic-convergence facts (§8, §13 items
// 20–22). Every problem is built by hand on a random SPD mass matrix; the
// random numbers come from seeded std::mt19937 generators.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "icf_test_util.h"

namespace mjcenic::icf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kH = 5e-3;     // time step of every test problem [s]
constexpr double kStep = 2e-7;  // finite-difference step in v (4th-order stencil)

// ------------------------------------------------------------- utilities --
// Largest errors seen by the checks (printed for the report).
struct ErrorLog {
  double grad = 0, hess = 0, kink_grad = 0;
  int points = 0, hess_points = 0, hess_skipped = 0;
};

template <int R>
double MaxAbsJ(const RowStore<R>& rows, int c, int r) {
  double a = 0;
  const int n = rows.ndof(c);
  for (int k = 0; k < n; ++k) a = std::max(a, std::abs(rows.J(c)[r * n + k]));
  return a;
}


// Independent dense assembly of H = A + Σ JᵀGJ from the constraint Hessians
// stored in the data.
Eigen::MatrixXd ReferenceHessian(const IcfModel& m, const IcfData& d) {
  Eigen::MatrixXd H = DenseA(m);
  auto add = [&](const auto& pool, const auto& pd) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c) {
      Eigen::MatrixXd G(R, R);
      for (int a = 0; a < R; ++a)
        for (int b = 0; b < R; ++b) G(a, b) = pd.G[R * R * c + R * a + b];
      const Eigen::MatrixXd J = DenseJ(pool.rows, c, m.nv);
      H += J.transpose() * G * J;
    }
  };
  add(m.contacts, d.contacts);
  add(m.limits, d.limits);
  add(m.couplings, d.couplings);
  add(m.gains, d.gains);
  add(m.dry_friction, d.dry_friction);
  add(m.contact_torques, d.contact_torques);
  return H;
}

// Constraint-velocity targets: rows a·v = value, solved in the least-norm
// sense around a base velocity.
struct Targets {
  std::vector<Eigen::RowVectorXd> rows;
  std::vector<double> values;
  void Add(const Eigen::RowVectorXd& a, double value) {
    rows.push_back(a);
    values.push_back(value);
  }
  Eigen::VectorXd Hit(const Eigen::VectorXd& base) const {
    if (rows.empty()) return base;
    const int m = static_cast<int>(rows.size()), n = static_cast<int>(base.size());
    Eigen::MatrixXd J(m, n);
    Eigen::VectorXd rhs(m);
    for (int i = 0; i < m; ++i) {
      J.row(i) = rows[i];
      rhs[i] = values[i] - rows[i].dot(base);
    }
    const auto JJt = (J * J.transpose()).ldlt();
    Eigen::VectorXd v = base + J.transpose() * JJt.solve(rhs);
    const Eigen::VectorXd target = Eigen::Map<const Eigen::VectorXd>(values.data(), m);
    for (int refine = 0; refine < 2; ++refine) v += J.transpose() * JJt.solve(target - J * v);
    EXPECT_LE((J * v - target).cwiseAbs().maxCoeff(),
              1e-12 * std::max(1.0, target.cwiseAbs().maxCoeff()))
        << "velocity targets not reachable (rank-deficient rows)";
    return v;
  }
};

// Targets v_c = (vn, vt1, vt2) for contact c (bias accounted for).
void TargetContact(const IcfModel& m, int c, double vn, double vt1, double vt2, Targets* t) {
  const Eigen::MatrixXd J = DenseJ(m.contacts.rows, c, m.nv);
  const double val[3] = {vn, vt1, vt2};
  for (int r = 0; r < 3; ++r) t->Add(J.row(r), val[r] - m.contacts.bias[3 * c + r]);
}

template <int R>
void TargetRow(const RowStore<R>& rows, int nv, int c, double value, Targets* t) {
  static_assert(R == 1);
  t->Add(DenseJ(rows, c, nv).row(0), value);
}

// Distance (in units of v, per unit change of one component) from v to the
// nearest kink of a piecewise-C² potential: contact v_n = v̂, limit v_c = v̂,
// gain y = lo / hi. Requires Evaluate(v) to have been called.
double KinkDistance(const IcfModel& m, const IcfData& d) {
  double dist = kInf;
  for (int c = 0; c < m.contacts.size(); ++c) {
    const double vhat = m.contacts.vhat[c];
    if (std::abs(vhat) < 1e10)
      dist = std::min(dist, std::abs(d.contacts.vc[3 * c] - vhat) / MaxAbsJ(m.contacts.rows, c, 0));
  }
  for (int c = 0; c < m.limits.size(); ++c)
    dist = std::min(dist, std::abs(d.limits.vc[c] - m.limits.vhat[c]) / MaxAbsJ(m.limits.rows, c, 0));
  for (int c = 0; c < m.gains.size(); ++c) {
    const double k = m.gains.kappa[c];
    if (!(k > 0)) continue;
    for (double bound : {m.gains.lo[c], m.gains.hi[c]}) {
      if (!std::isfinite(bound)) continue;
      const double vk = (m.gains.c_eff[c] - bound) / k;
      dist = std::min(dist, std::abs(d.gains.vc[c] - vk) / MaxAbsJ(m.gains.rows, c, 0));
    }
  }
  return dist;
}

double Cost(IcfSolver& s, const IcfModel& m, const Eigen::VectorXd& v) {
  s.Evaluate(m, v.data());
  return s.data().cost;
}

Eigen::VectorXd Grad(IcfSolver& s, const IcfModel& m, const Eigen::VectorXd& v) {
  s.Evaluate(m, v.data());
  return Eigen::Map<const Eigen::VectorXd>(s.data().grad.data(), m.nv);
}

// 4th-order central differences: (f(-2δ) − f(2δ) + 8 (f(δ) − f(−δ))) / 12δ.
Eigen::VectorXd FdGradient(IcfSolver& s, const IcfModel& m, Eigen::VectorXd v, double step) {
  Eigen::VectorXd g(m.nv);
  for (int i = 0; i < m.nv; ++i) {
    const double x = v[i];
    v[i] = x + 2 * step; const double f2 = Cost(s, m, v);
    v[i] = x + step;     const double f1 = Cost(s, m, v);
    v[i] = x - step;     const double fm1 = Cost(s, m, v);
    v[i] = x - 2 * step; const double fm2 = Cost(s, m, v);
    v[i] = x;
    g[i] = ((fm2 - f2) + 8.0 * (f1 - fm1)) / (12.0 * step);
  }
  return g;
}

Eigen::MatrixXd FdHessian(IcfSolver& s, const IcfModel& m, Eigen::VectorXd v, double step) {
  Eigen::MatrixXd H(m.nv, m.nv);
  for (int i = 0; i < m.nv; ++i) {
    const double x = v[i];
    v[i] = x + 2 * step; const Eigen::VectorXd g2 = Grad(s, m, v);
    v[i] = x + step;     const Eigen::VectorXd g1 = Grad(s, m, v);
    v[i] = x - step;     const Eigen::VectorXd gm1 = Grad(s, m, v);
    v[i] = x - 2 * step; const Eigen::VectorXd gm2 = Grad(s, m, v);
    v[i] = x;
    H.col(i) = ((gm2 - g2) + 8.0 * (g1 - gm1)) / (12.0 * step);
  }
  return H;
}

double MaxAbs(const Eigen::MatrixXd& x) { return x.cwiseAbs().maxCoeff(); }

// Gradient and Hessian checks at one point v (away from kinks unless
// `at_kink`), H symmetric positive definite, Newton direction is a descent
// direction solving H w = −g.
void CheckPoint(const IcfModel& m, const Eigen::VectorXd& v, ErrorLog* log,
                double step = kStep) {
  IcfSolver s;
  const Eigen::VectorXd g = Grad(s, m, v);
  const double kink = KinkDistance(m, s.data());
  const Eigen::MatrixXd H = s.Hessian(m, v.data());
  const Eigen::MatrixXd Href = ReferenceHessian(m, s.data());
  ++log->points;

  // ∇ℓ vs central differences of ℓ.
  const Eigen::VectorXd g_fd = FdGradient(s, m, v, step);
  const double eg = (g_fd - g).cwiseAbs().maxCoeff() / g.cwiseAbs().maxCoeff();
  EXPECT_LT(eg, 1e-6) << "gradient FD mismatch\n analytic " << g.transpose() << "\n fd       "
                      << g_fd.transpose();
  log->grad = std::max(log->grad, eg);

  // H symmetric, equal to an independent assembly of A + Σ JᵀGJ, SPD with
  // λ_min(H) ≥ λ_min(A) (every G_i is PSD).
  const double scale = MaxAbs(H);
  EXPECT_LE(MaxAbs(H - H.transpose()), 1e-14 * scale);
  EXPECT_LE(MaxAbs(H - Href), 1e-12 * scale);
  const Eigen::MatrixXd A = DenseA(m);
  const double lmin_A = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(A).eigenvalues()[0];
  const double lmin_H = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H).eigenvalues()[0];
  EXPECT_GT(lmin_A, 0.0);
  EXPECT_GE(lmin_H, lmin_A * (1 - 1e-9));

  // H vs central differences of ∇ℓ, only where the stencil stays on one side
  // of every kink.
  if (kink > 20 * step) {
    const Eigen::MatrixXd H_fd = FdHessian(s, m, v, step);
    const double eh = MaxAbs(H_fd - H) / scale;
    EXPECT_LT(eh, 1e-6) << "Hessian FD mismatch\n analytic\n" << H << "\n fd\n" << H_fd;
    log->hess = std::max(log->hess, eh);
    ++log->hess_points;
  } else {
    ++log->hess_skipped;
  }

  // Newton direction (§8.1, §13 item 20): H w = −g and gᵀw < 0.
  Eigen::VectorXd w(m.nv);
  ASSERT_TRUE(s.SearchDirection(m, v.data(), LinearSolverKind::kDense, w.data()));
  EXPECT_LE((H * w + g).norm(), 1e-9 * g.norm());
  EXPECT_LT(g.dot(w), 0.0);
}

// Gradient check exactly at a kink (§13 item 23: ℓ is C¹, so central
// differences still converge, with an error O(δ·|jump of H|)), plus
// continuity of ∇ℓ across the kink along the unit direction n.
void CheckAtKink(const IcfModel& m, const Eigen::VectorXd& v, const Eigen::VectorXd& n,
                 ErrorLog* log) {
  IcfSolver s;
  const Eigen::VectorXd g = Grad(s, m, v);
  EXPECT_LT(KinkDistance(m, s.data()), 1e-12) << "point is not at a kink";
  const Eigen::VectorXd vp = v + 1e-5 * n, vm = v - 1e-5 * n;
  const double hmax = std::max(MaxAbs(s.Hessian(m, vp.data())), MaxAbs(s.Hessian(m, vm.data())));
  const Eigen::VectorXd g_fd = FdGradient(s, m, v, kStep);
  const double err = (g_fd - g).cwiseAbs().maxCoeff();
  EXPECT_LE(err, 1e-6 * g.cwiseAbs().maxCoeff() + kStep * hmax);
  log->kink_grad = std::max(log->kink_grad, err / g.cwiseAbs().maxCoeff());
  const double t = 1e-7;
  const Eigen::VectorXd jump = Grad(s, m, v + t * n) - Grad(s, m, v - t * n);
  EXPECT_LE(jump.norm(), 2 * t * hmax * m.nv * (1 + 1e-6)) << "gradient jumps across the kink";
}

void PrintLog(const char* name, const ErrorLog& log) {
  std::printf("[ fd ] %-28s points %2d, Hessian points %2d (skipped %d): max rel err grad %.2e, "
              "Hessian %.2e, grad at kinks %.2e\n",
              name, log.points, log.hess_points, log.hess_skipped, log.grad, log.hess,
              log.kink_grad);
}

double SolverTolerance(const IcfModel& m, const SolverOptions& o) {
  double Dr = 0;
  for (int i = 0; i < m.nv; ++i) Dr += m.r[i] * m.r[i] / m.M_diag[i];
  return std::max(o.tolerance, o.min_tolerance) * std::max(1.0, std::sqrt(Dr));
}

// Solves from `guess`: converged, ℓ(v_k) non-increasing (§13 item 20), the
// result is a minimizer, and re-solving from it exits at k = 0 iff the first
// solve exited through the gradient criterion (item 21). Returns the stats.
SolveStats CheckSolve(const IcfModel& m, const Eigen::VectorXd& guess,
                      Eigen::VectorXd* solution = nullptr) {
  IcfSolver s;
  SolverOptions o;
  SolveStats st;
  std::vector<double> hist;
  Eigen::VectorXd v(m.nv);
  const SolveStatus status = s.Solve(m, guess.data(), o, v.data(), &st, &hist);
  EXPECT_EQ(status, SolveStatus::kConverged) << ToString(status);
  EXPECT_EQ(hist.size(), static_cast<size_t>(st.iterations + 1));
  for (size_t k = 0; k + 1 < hist.size(); ++k)
    EXPECT_LE(hist[k + 1], hist[k] + 1e-12 * std::max(1.0, std::abs(hist[k])))
        << "cost increased at iteration " << k;
  if (st.iterations > 0) {
    EXPECT_LT(hist.back(), hist.front());
  }
  EXPECT_EQ(hist.back(), st.cost);
  EXPECT_LE(st.ls_iterations, 100 * std::max(1, st.iterations));

  // Minimizer: within the tolerance of a tightly converged reference (in the
  // solver's scaled norm |D⁻¹Δv|, §8.2), and no nearby point is cheaper.
  const double tol = SolverTolerance(m, o);
  {
    SolverOptions tight;
    tight.tolerance = tight.min_tolerance = 1e-13;
    IcfSolver sr;
    SolveStats str;
    Eigen::VectorXd v_ref(m.nv);
    sr.Solve(m, v.data(), tight, v_ref.data(), &str);
    double dist = 0;
    for (int i = 0; i < m.nv; ++i) dist += m.M_diag[i] * (v[i] - v_ref[i]) * (v[i] - v_ref[i]);
    dist = std::sqrt(dist);
    EXPECT_LT(dist, 10 * tol);
  }
  const double l_star = Cost(s, m, v);
  Random rng(99);
  for (int k = 0; k < 6; ++k) {
    const Eigen::VectorXd u = rng.Vec(m.nv, 1e-4);
    EXPECT_GE(Cost(s, m, v + u), l_star - 1e-12 * std::max(1.0, std::abs(l_star)));
  }

  // Early exit (item 21).
  const bool gradient_exit = st.scaled_gradient < tol;
  IcfSolver s2;
  SolveStats st2;
  Eigen::VectorXd v2(m.nv);
  EXPECT_EQ(s2.Solve(m, v.data(), o, v2.data(), &st2), SolveStatus::kConverged);
  if (gradient_exit) {
    EXPECT_EQ(st2.iterations, 0);
    EXPECT_EQ(st2.factorizations, 0);
    EXPECT_EQ(v2, v);
  } else {
    EXPECT_GE(st2.iterations, 1);
  }
  std::printf("[ solve ] %d Newton iterations, %d line-search evaluations, exit through %s "
              "criterion; re-solve: %d iterations\n",
              st.iterations, st.ls_iterations, gradient_exit ? "gradient" : "step-size",
              st2.iterations);
  if (solution) *solution = v;
  return st;
}

// ---------------------------------------------------------------- contacts --

struct ContactSpec {
  double fe0, k, d, mu_s, mu_d, Rt;
};

// Adds the contacts on random dof subsets spanning cliques. Contact k always
// touches dofs 3k..3k+2 (so that the stacked contact Jacobian has full row
// rank and every contact velocity can be targeted independently), plus a
// random subset of the other dofs.
void AddContacts(IcfModel* m, const std::vector<ContactSpec>& specs, Random& rng) {
  ASSERT_LE(3 * static_cast<int>(specs.size()), m->nv);
  for (size_t k = 0; k < specs.size(); ++k) {
    const ContactSpec& c = specs[k];
    const int first = 3 * static_cast<int>(k);
    std::vector<int> dofs = {first, first + 1, first + 2};
    for (int extra : rng.Subset(m->nv - 3, rng.I(1, m->nv - 4)))
      dofs.push_back(extra < first ? extra : extra + 3);
    std::sort(dofs.begin(), dofs.end());
    const int i = m->contacts.Add(dofs, c.fe0, c.k, c.d, c.mu_s, c.mu_d, c.Rt);
    FillJ(m->contacts.rows, i, rng);
  }
}

// Independent check of the contact pool against §4.3–4.7 and §13 item 3 at
// the point last evaluated.
void CheckContactFacts(const IcfModel& m, const IcfData& d) {
  const ContactPool& p = m.contacts;
  const IcfParameters& prm = m.params;
  const double h = m.h;
  for (int c = 0; c < p.size(); ++c) {
    SCOPED_TRACE("contact " + std::to_string(c));
    // Lagged quantities from v0 (with bias).
    const Eigen::Vector3d vc0 = DenseJ(p.rows, c, m.nv) * Eigen::Map<const Eigen::VectorXd>(
                                                              m.v0.data(), m.nv) +
                                Eigen::Vector3d(p.bias[3 * c], p.bias[3 * c + 1], p.bias[3 * c + 2]);
    const double fn0 = std::max(p.fe0[c], 0.0) * std::max(1 - p.d[c] * vc0[0], 0.0);
    const double mu = FrictionCoefficient(std::hypot(vc0[1], vc0[2]) / prm.stiction_tolerance,
                                          p.mu_s[c], p.mu_d[c], prm.transition_width);
    const double n0 = h * fn0;
    const double eps = std::max(prm.stiction_tolerance, mu * p.Rt[c] * n0);
    const double vhat = std::min(p.fe0[c] / (h * p.k[c]), p.d[c] > 0 ? 1 / p.d[c] : kInf);
    EXPECT_NEAR(p.n0[c], n0, 1e-13 * std::max(1.0, n0));
    EXPECT_NEAR(p.mu[c], mu, 1e-14);
    EXPECT_NEAR(p.eps[c], eps, 1e-15);
    EXPECT_NEAR(p.vhat[c], vhat, 1e-12 * std::abs(vhat));

    const double* vc = d.contacts.vc.data() + 3 * c;
    const double* gam = d.contacts.gamma.data() + 3 * c;
    const double vn = vc[0], vt = std::hypot(vc[1], vc[2]);
    const double fe = p.fe0[c], k = p.k[c], dd = p.d[c];
    // (P13).
    const double gn = h * std::max(fe - h * k * vn, 0.0) * std::max(1 - dd * vn, 0.0);
    EXPECT_NEAR(gam[0], gn, 1e-12 * std::max(1.0, gn));
    // Item 3: |γ_t| = μn⁰σ(|v_t|/ε) < μn⁰, anti-parallel to v_t.
    const double mun = mu * n0, gt = std::hypot(gam[1], gam[2]);
    EXPECT_NEAR(gt, mun * vt / std::sqrt(vt * vt + eps * eps), 1e-12 * mun);
    if (mun > 0) {
      EXPECT_LT(gt, mun);
      EXPECT_LE(std::abs(gam[1] * vc[2] - gam[2] * vc[1]), 1e-12 * gt * vt);
      EXPECT_LT(gam[1] * vc[1] + gam[2] * vc[2], 0.0);
    } else {
      EXPECT_EQ(gt, 0.0);
    }
    // §4.7: G has eigenvalue −γ_n' along n̂, μn⁰(1−|t̂_ε|²)/s along v_t and
    // μn⁰/s along the other tangent, s = sqrt(|v_t|² + ε²).
    Eigen::Matrix3d G;
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) G(a, b) = d.contacts.G[9 * c + 3 * a + b];
    const double dgn = vn < vhat ? -h * (h * k * (1 - dd * vn) + dd * (fe - h * k * vn)) : 0.0;
    const double soft = std::sqrt(vt * vt + eps * eps);
    const double tnorm2 = vt * vt / (soft * soft);
    std::vector<double> expect = {-dgn, mun * (1 - tnorm2) / soft, mun / soft};
    std::sort(expect.begin(), expect.end());
    const Eigen::Vector3d ev = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(G).eigenvalues();
    const double gscale = std::max(expect[2], 1e-300);
    for (int q = 0; q < 3; ++q) EXPECT_NEAR(ev[q], expect[q], 1e-12 * gscale) << "eigenvalue " << q;
    EXPECT_GE(ev[0], 0.0);
    const Eigen::Vector3d Gn = G * Eigen::Vector3d::UnitX();
    EXPECT_NEAR((Gn - (-dgn) * Eigen::Vector3d::UnitX()).norm(), 0.0, 1e-12 * gscale);
    if (vt > 0) {
      const Eigen::Vector3d t(0, vc[1] / vt, vc[2] / vt);
      EXPECT_NEAR((G * t - mun * (1 - tnorm2) / soft * t).norm(), 0.0, 1e-12 * gscale);
    }
  }
}


// v with every contact c in regime (sample + c) mod 4 of {normal active,
// inactive} x {sticking, sliding}; margins from the kink v̂ are ≥ 0.03 m/s.
Eigen::VectorXd ContactSample(const IcfModel& m, Random& rng, int sample) {
  Targets t;
  for (int c = 0; c < m.contacts.size(); ++c) {
    const int regime = (sample + c) % 4;
    const bool active = (regime & 1) == 0, stick = (regime & 2) == 0;
    const double vhat = m.contacts.vhat[c];
    const double vn = active ? vhat - rng.U(0.03, 0.3) : vhat + rng.U(0.03, 0.3);
    const double eps = m.contacts.eps[c];
    const double mag = stick ? eps * rng.U(0.2, 3.0) : std::min(eps * rng.U(30, 2000), 0.5);
    const double angle = rng.U(0, 2 * std::numbers::pi);
    TargetContact(m, c, vn, mag * std::cos(angle), mag * std::sin(angle), &t);
  }
  return t.Hit(rng.Vec(m.nv, 0.2));
}

enum class Slip { kStick, kTransition, kSlide };

// Sets v0 so that contact c has v_n0 ∈ [−0.02, 0.02] and |v_t0| per slip[c].
void SetContactV0(IcfModel* m, const std::vector<Slip>& slip, Random& rng) {
  Targets t;
  const double vs = m->params.stiction_tolerance;
  for (int c = 0; c < m->contacts.size(); ++c) {
    const Slip s = slip[c % slip.size()];
    const double mag = s == Slip::kStick ? 0.5 * vs : s == Slip::kTransition ? 10 * vs : 0.05;
    const double angle = rng.U(0, 2 * std::numbers::pi);
    TargetContact(*m, c, rng.U(-0.02, 0.02), mag * std::cos(angle), mag * std::sin(angle), &t);
  }
  const Eigen::VectorXd v0 = t.Hit(Eigen::Map<const Eigen::VectorXd>(m->v0.data(), m->nv));
  std::copy(v0.data(), v0.data() + m->nv, m->v0.begin());
}

// The common body of the per-regime contact tests.
void RunContactTest(const char* name, IcfModel& m, unsigned seed, ErrorLog* log) {
  Random rng(seed);
  for (int sample = 0; sample < 8; ++sample) {
    SCOPED_TRACE("sample " + std::to_string(sample));
    const Eigen::VectorXd v = ContactSample(m, rng, sample);
    CheckPoint(m, v, log);
    IcfSolver s;
    s.Evaluate(m, v.data());
    CheckContactFacts(m, s.data());
  }
  // Exactly at the normal kink v_n = v̂ of contact 0.
  {
    Eigen::VectorXd v = ContactSample(m, rng, 1);
    Targets t;
    IcfSolver s;
    s.Evaluate(m, v.data());
    for (int c = 0; c < m.contacts.size(); ++c) {
      const double* vc = s.data().contacts.vc.data() + 3 * c;
      TargetContact(m, c, c == 0 ? m.contacts.vhat[0] : vc[0], vc[1], vc[2], &t);
    }
    v = t.Hit(v);
    Eigen::VectorXd n = DenseJ(m.contacts.rows, 0, m.nv).row(0).transpose();
    CheckAtKink(m, v, n.normalized(), log);
  }
  EXPECT_EQ(log->hess_skipped, 0);
  PrintLog(name, *log);
  CheckSolve(m, Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv));
  CheckSolve(m, Random(seed + 1).Vec(m.nv, 0.3));
}

TEST(IcfDerivatives, ContactPenetratingWithDissipation) {
  Random rng(1);
  IcfModel m;
  MakeBase(&m, {4, 3, 3}, rng);
  // f_e0 > 0, d > 0. Contact 1 has v̂ = 1/d (dissipation-limited), contact 2
  // has ε = μ R_t n⁰ > v_s.
  AddContacts(&m, {{10, 1e4, 2, 0.5, 0.5, 2.65e-3}, {4, 2e3, 8, 0.3, 0.3, 2.65e-3},
                   {20, 5e4, 1, 1.0, 1.0, 0.05}}, rng);
  SetContactV0(&m, {Slip::kStick, Slip::kSlide}, rng);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  EXPECT_NEAR(m.contacts.vhat[1], 1.0 / 8, 1e-12);
  EXPECT_GT(m.contacts.eps[2], 10 * m.params.stiction_tolerance);
  ErrorLog log;
  RunContactTest("contact penetrating, d > 0", m, 11, &log);
}

TEST(IcfDerivatives, ContactPenetratingWithoutDissipation) {
  Random rng(2);
  IcfModel m;
  MakeBase(&m, {4, 3, 3}, rng);
  AddContacts(&m, {{10, 1e4, 0, 0.6, 0.6, 2.65e-3}, {3, 5e3, 0, 0.2, 0.2, 0.1},
                   {1, 1e3, 0, 1.2, 1.2, 2.65e-3}}, rng);
  SetContactV0(&m, {Slip::kSlide, Slip::kStick}, rng);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  for (int c = 0; c < m.contacts.size(); ++c)
    EXPECT_NEAR(m.contacts.vhat[c], m.contacts.fe0[c] / (kH * m.contacts.k[c]), 1e-12);
  ErrorLog log;
  RunContactTest("contact penetrating, d = 0", m, 12, &log);
}

TEST(IcfDerivatives, ContactSpeculative) {
  // f_e0 < 0 (φ0 > 0, MuJoCo margin): no lagged normal force, hence no
  // friction; the normal impulse acts only once the predicted gap closes,
  // v_n < v̂ = −φ0/h < 0 (§4.1, §4.4).
  Random rng(3);
  IcfModel m;
  MakeBase(&m, {4, 3, 3}, rng);
  AddContacts(&m, {{-10, 1e4, 0, 0.5, 0.5, 2.65e-3}, {-2, 1e3, 3, 0.5, 0.3, 2.65e-3},
                   {-0.5, 5e3, 10, 1.0, 1.0, 2.65e-3}}, rng);
  SetContactV0(&m, {Slip::kSlide, Slip::kStick}, rng);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  for (int c = 0; c < m.contacts.size(); ++c) {
    EXPECT_EQ(m.contacts.n0[c], 0.0);
    EXPECT_LT(m.contacts.vhat[c], 0.0);
  }
  // Active regime really produces a normal impulse.
  Random r2(31);
  const Eigen::VectorXd v = ContactSample(m, r2, 0);
  IcfSolver s;
  s.Evaluate(m, v.data());
  EXPECT_GT(s.data().contacts.gamma[0], 0.0);
  ErrorLog log;
  RunContactTest("contact speculative", m, 13, &log);
}

TEST(IcfDerivatives, ContactStaticAndDynamicFriction) {
  Random rng(4);
  IcfModel m;
  MakeBase(&m, {4, 3, 3}, rng);
  const double mu_s = 0.9, mu_d = 0.4;
  AddContacts(&m, {{10, 1e4, 2, mu_s, mu_d, 2.65e-3}, {10, 1e4, 2, mu_s, mu_d, 2.65e-3},
                   {10, 1e4, 2, mu_s, mu_d, 0.2}}, rng);
  // Surface-velocity bias on the sliding contact (§4.2): it enters the lagged
  // slip as well.
  m.contacts.bias[3 * 2 + 1] = 1e-3;
  m.contacts.bias[3 * 2 + 2] = -2e-3;
  SetContactV0(&m, {Slip::kStick, Slip::kTransition, Slip::kSlide}, rng);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  // μ(s⁰) of (P8): ≈ μ_s when sticking, the mean at s = Δ, ≈ μ_d when sliding.
  EXPECT_GT(m.contacts.mu[0], mu_s - 1e-3);
  EXPECT_LE(m.contacts.mu[0], mu_s);
  EXPECT_NEAR(m.contacts.mu[1], 0.5 * (mu_s + mu_d), 1e-9);
  EXPECT_LE(m.contacts.mu[2], mu_d);
  EXPECT_GT(m.contacts.mu[2], mu_d - 0.0025 * (mu_s - mu_d));
  ErrorLog log;
  RunContactTest("contact mu_s != mu_d", m, 14, &log);
}

// ------------------------------------------------------------------ limits --

void CheckLimitFacts(const IcfModel& m, const IcfData& d) {
  const double pi = std::numbers::pi, beta = m.params.beta;
  const double hbar = std::max(m.h, m.params.h_min_near_rigid), tau = beta * hbar / pi;
  for (int c = 0; c < m.limits.size(); ++c) {
    const double R = beta * beta * hbar * hbar * m.limits.w[c] / (4 * pi * pi * m.h * (m.h + tau));
    const double vhat = -m.limits.g0[c] / (m.h + tau);
    EXPECT_NEAR(m.limits.R[c], R, 1e-13 * R);
    EXPECT_NEAR(m.limits.vhat[c], vhat, 1e-13 * std::abs(vhat) + 1e-300);
    if (m.h >= m.params.h_min_near_rigid) {  // §13 item 10
      EXPECT_NEAR(m.limits.R[c] / m.limits.w[c], 2.4549e-4, 1e-8);
    }
    const double vc = d.limits.vc[c];
    EXPECT_NEAR(d.limits.gamma[c], std::max(vhat - vc, 0.0) / R, 1e-12 * std::abs(vc) / R);
    EXPECT_EQ(d.limits.G[c], vc < vhat ? 1 / R : 0.0);
  }
}

TEST(IcfDerivatives, Limits) {
  Random rng(5);
  IcfModel m;
  MakeBase(&m, {3, 3}, rng);
  auto add = [&](std::vector<int> dofs, double g0, double w, double j1) {
    const int c = m.limits.Add(dofs, g0, w);
    if (dofs.size() == 1)
      m.limits.rows.J(c)[0] = j1;
    else
      FillJ(m.limits.rows, c, rng);
  };
  add({0}, 1e-3, 1 / m.M_diag[0], 1.0);    // lower side of a joint, inside
  add({0}, 2e-2, 1 / m.M_diag[0], -1.0);   // its upper side (never targeted)
  add({4}, -2e-3, 1 / m.M_diag[4], 1.0);   // violated
  add({1, 2, 5}, 0.0, 0.8, 0);             // tendon-like rows
  add({2, 3, 4, 5}, 5e-3, 0.7, 0);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  const int targeted[] = {0, 2, 3, 4};
  ErrorLog log;
  for (int sample = 0; sample < 8; ++sample) {
    SCOPED_TRACE("sample " + std::to_string(sample));
    Targets t;
    for (int k = 0; k < 4; ++k) {
      const int c = targeted[k];
      const bool active = ((sample >> (k % 3)) + k) % 2 == 0;
      const double vhat = m.limits.vhat[c];
      TargetRow(m.limits.rows, m.nv, c, active ? vhat - rng.U(0.01, 0.2) : vhat + rng.U(0.01, 0.2),
                &t);
    }
    const Eigen::VectorXd v = t.Hit(rng.Vec(m.nv, 0.2));
    CheckPoint(m, v, &log);
    IcfSolver s;
    s.Evaluate(m, v.data());
    CheckLimitFacts(m, s.data());
  }
  EXPECT_EQ(log.hess_skipped, 0);
  {  // At the activation kink of the tendon-like limit 3.
    Targets t;
    TargetRow(m.limits.rows, m.nv, 3, m.limits.vhat[3], &t);
    const Eigen::VectorXd v = t.Hit(rng.Vec(m.nv, 0.2));
    CheckAtKink(m, v, DenseJ(m.limits.rows, 3, m.nv).row(0).transpose().normalized(), &log);
  }
  PrintLog("limits", log);
  CheckSolve(m, Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv));
  CheckSolve(m, rng.Vec(m.nv, 1.0));
  // h < h_min of the near-rigid model: R grows as h̄ stays at 10⁻⁴ s (§3.5).
  m.SetTimeStep(5e-5);
  IcfSolver s;
  const Eigen::VectorXd v = rng.Vec(m.nv, 0.2);
  s.Evaluate(m, v.data());
  CheckLimitFacts(m, s.data());
  EXPECT_GT(m.limits.R[0] / m.limits.w[0], 2.4549e-4 * 1.5);
}

// --------------------------------------------------------------- couplings --

TEST(IcfDerivatives, Couplings) {
  Random rng(6);
  IcfModel m;
  MakeBase(&m, {3, 2, 2}, rng);
  for (int k = 0; k < 4; ++k) {
    const int c = m.couplings.Add(rng.Subset(m.nv, rng.I(2, 5)), rng.U(-2e-3, 2e-3),
                                  rng.U(0.3, 2.0));
    FillJ(m.couplings.rows, c, rng);
  }
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  ErrorLog log;
  const double pi = std::numbers::pi, beta = m.params.beta, tau = beta * kH / pi;
  for (int sample = 0; sample < 6; ++sample) {
    const Eigen::VectorXd v = rng.Vec(m.nv, 0.3);
    CheckPoint(m, v, &log);
    IcfSolver s;
    s.Evaluate(m, v.data());
    for (int c = 0; c < m.couplings.size(); ++c) {
      const double R = beta * beta * kH * kH * m.couplings.w[c] / (4 * pi * pi * kH * (kH + tau));
      const double vhat = -m.couplings.g0[c] / (kH + tau);
      EXPECT_NEAR(s.data().couplings.gamma[c], (vhat - s.data().couplings.vc[c]) / R, 1e-9 / R);
      EXPECT_NEAR(s.data().couplings.G[c], 1 / R, 1e-12 / R);
    }
  }
  PrintLog("couplings", log);
  const SolveStats st = CheckSolve(m, rng.Vec(m.nv, 0.3));
  EXPECT_LE(st.iterations, 1);  // quadratic (§13 item 22)
  EXPECT_EQ(st.ls_iterations, 0);
}

// ------------------------------------------------------------------- gains --

void CheckGainFacts(const IcfModel& m, const IcfData& d) {
  const GainPool& p = m.gains;
  for (int c = 0; c < p.size(); ++c) {
    SCOPED_TRACE("gain " + std::to_string(c));
    const double kappa = m.h * p.kq[c] + p.kv[c];
    const double vc = d.gains.vc[c], lo = p.lo[c], hi = p.hi[c];
    double gamma, G;
    if (kappa > 0) {
      const double y = p.c[c] - kappa * vc;
      gamma = m.h * std::clamp(y, lo, hi);
      G = (y >= lo && y <= hi) ? m.h * kappa : 0.0;
    } else {  // explicit at v_c0 (negative κ) or constant (κ = 0)
      const Eigen::VectorXd v0 = Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv);
      const double vc0 = (DenseJ(p.rows, c, m.nv) * v0)[0];
      gamma = m.h * std::clamp(p.c[c] - std::min(kappa, 0.0) * vc0, lo, hi);
      G = 0;
    }
    EXPECT_NEAR(d.gains.gamma[c], gamma, 1e-14 * std::max(1.0, std::abs(gamma / m.h)));
    EXPECT_NEAR(d.gains.G[c], G, 1e-14 * std::max(1.0, G));
    // Effort limits are never exceeded (§13 item 12).
    EXPECT_GE(d.gains.gamma[c], m.h * lo);
    EXPECT_LE(d.gains.gamma[c], m.h * hi);
  }
}

TEST(IcfDerivatives, Gains) {
  Random rng(7);
  IcfModel m;
  MakeBase(&m, {4, 4}, rng);
  auto add = [&](std::vector<int> dofs, double c, double kq, double kv, double lo, double hi) {
    const int i = m.gains.Add(dofs, c, kq, kv, lo, hi);
    FillJ(m.gains.rows, i, rng);
  };
  add({0, 1, 5}, 1.0, 200, 3, -2, 3);         // κ > 0, cycles through regimes
  add({2}, -0.5, 0, 40, -1, 1);               // κ = kv > 0, cycles through regimes
  add({3, 4, 6, 7}, 2, -3000, 2, -1, 1.5);    // κ = h kq + kv < 0: explicit
  add({1, 6}, 0.3, 100, 1, -kInf, kInf);      // infinite limits: pure feedback
  add({7}, 5, 0, 0, -1, 2);                   // κ = 0, b above e_max
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  EXPECT_EQ(m.gains.kappa[2], 0.0);
  {  // explicit at v_c0: c_eff = c − κ v_c0
    const Eigen::VectorXd v0 = Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv);
    const double vc0 = (DenseJ(m.gains.rows, 2, m.nv) * v0)[0];
    EXPECT_NEAR(m.gains.c_eff[2], 2 - (kH * -3000 + 2) * vc0, 1e-13);
  }
  ErrorLog log;
  const char* regimes[] = {"unsaturated", "below e_min", "above e_max"};
  for (int sample = 0; sample < 9; ++sample) {
    Targets t;
    std::string trace = "sample " + std::to_string(sample);
    for (int c = 0; c < 2; ++c) {
      const int regime = (sample + 2 * c + sample / 3) % 3;
      const double lo = m.gains.lo[c], hi = m.gains.hi[c];
      const double y = regime == 0   ? rng.U(lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo))
                       : regime == 1 ? lo - rng.U(0.1, 2.0)
                                     : hi + rng.U(0.1, 2.0);
      TargetRow(m.gains.rows, m.nv, c, (m.gains.c_eff[c] - y) / m.gains.kappa[c], &t);
      trace += std::string(", gain ") + std::to_string(c) + " " + regimes[regime];
    }
    SCOPED_TRACE(trace);
    const Eigen::VectorXd v = t.Hit(rng.Vec(m.nv, 0.2));
    CheckPoint(m, v, &log);
    IcfSolver s;
    s.Evaluate(m, v.data());
    CheckGainFacts(m, s.data());
    EXPECT_EQ(s.data().gains.gamma[4], kH * 2.0);  // item 12: exactly h e_max
  }
  EXPECT_EQ(log.hess_skipped, 0);
  {  // At the saturation kink y = e_max of gain 0.
    Targets t;
    TargetRow(m.gains.rows, m.nv, 0, (m.gains.c_eff[0] - m.gains.hi[0]) / m.gains.kappa[0], &t);
    const Eigen::VectorXd v = t.Hit(rng.Vec(m.nv, 0.2));
    CheckAtKink(m, v, DenseJ(m.gains.rows, 0, m.nv).row(0).transpose().normalized(), &log);
  }
  PrintLog("gains", log);
  CheckSolve(m, Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv));
  CheckSolve(m, rng.Vec(m.nv, 0.5));
}

// ------------------------------------------------------------ dry friction --

TEST(IcfDerivatives, DryFriction) {
  Random rng(8);
  IcfModel m;
  MakeBase(&m, {3, 2}, rng);
  const double F[] = {0.5, 2.0, 5.0};
  const std::vector<int> dofs[] = {{0, 2}, {1, 3, 4}, {2}};
  for (int k = 0; k < 3; ++k) {
    const int c = m.dry_friction.Add(dofs[k], F[k]);
    FillJ(m.dry_friction.rows, c, rng);
  }
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  const double vs = m.params.stiction_tolerance;
  ErrorLog log;
  for (int sample = 0; sample < 8; ++sample) {
    Targets t;
    for (int c = 0; c < 3; ++c) {
      const bool stick = (sample + c) % 2 == 0;
      const double vc = rng.Sign() * (stick ? vs * rng.U(0.1, 3.0) : rng.U(0.01, 0.5));
      TargetRow(m.dry_friction.rows, m.nv, c, vc, &t);
    }
    const Eigen::VectorXd v = t.Hit(rng.Vec(m.nv, 0.2));
    CheckPoint(m, v, &log);
    IcfSolver s;
    s.Evaluate(m, v.data());
    for (int c = 0; c < 3; ++c) {
      const double vc = s.data().dry_friction.vc[c], g = s.data().dry_friction.gamma[c];
      const double hF = kH * F[c], sq = std::sqrt(vc * vc + vs * vs);
      EXPECT_NEAR(g, -hF * vc / sq, 1e-14 * hF);
      EXPECT_LT(std::abs(g), hF);
      EXPECT_LT(g * vc, 0.0);
      EXPECT_NEAR(s.data().dry_friction.G[c], hF * vs * vs / (sq * sq * sq),
                  1e-12 * hF / vs);
    }
  }
  PrintLog("dry friction", log);
  CheckSolve(m, Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv));
}

// ---------------------------------------------------------- contact torques --

TEST(IcfDerivatives, ContactTorques) {
  // Torsional and rolling friction (condim 4/6) bounded by the lagged normal
  // impulse of their contact: spin only, roll only, both with anisotropic
  // rolling (MuJoCo's friction[3] ≠ friction[4]).
  Random rng(10);
  IcfModel m;
  MakeBase(&m, {6, 6}, rng);
  AddContacts(&m, {{12, 1e4, 3, 0.8, 0.8, 2.65e-3}, {6, 2e4, 1, 0.5, 0.5, 2.65e-3},
                   {3, 5e3, 0, 1.0, 1.0, 2.65e-3}}, rng);
  const double mu_spin[] = {0.01, 0.0, 0.02}, mu_roll1[] = {0.0, 0.005, 0.003},
               mu_roll2[] = {0.0, 0.005, 0.001};
  const double eps_spin[] = {0.01, 1.0, 0.005}, eps_roll[] = {1.0, 0.02, 0.03};
  for (int k = 0; k < 3; ++k) {
    const int c = m.contact_torques.Add(m.contacts.rows.dofs(k), k, mu_spin[k], mu_roll1[k],
                                        mu_roll2[k], eps_spin[k], eps_roll[k]);
    FillJ(m.contact_torques.rows, c, rng);
  }
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(m.contact_torques.fn0[k], m.contacts.fn0[k]);
    EXPECT_NEAR(m.contact_torques.n0[k], kH * m.contacts.fn0[k], 1e-15);
    EXPECT_GT(m.contact_torques.n0[k], 0);
  }
  ErrorLog log;
  for (int sample = 0; sample < 8; ++sample) {
    SCOPED_TRACE("sample " + std::to_string(sample));
    // Angular velocities from inside the regularization to far outside it.
    const double scale = sample % 2 ? 0.05 : 2.0;
    const Eigen::VectorXd v =
        Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv) + rng.Vec(m.nv, scale);
    CheckPoint(m, v, &log);
    IcfSolver s;
    s.Evaluate(m, v.data());
    const auto& pd = s.data().contact_torques;
    for (int c = 0; c < 3; ++c) {
      const double* w = pd.vc.data() + 3 * c;
      const double* g = pd.gamma.data() + 3 * c;
      const double n0 = m.contact_torques.n0[c];
      // Bounds: |τ_spin| < μ_spin n⁰, (τ₁/μ₁)² + (τ₂/μ₂)² < n⁰²; dissipative.
      EXPECT_LT(std::abs(g[0]), mu_spin[c] * n0 + 1e-300);
      if (mu_roll1[c] > 0)
        EXPECT_LT(std::hypot(g[1] / mu_roll1[c], g[2] / mu_roll2[c]), n0);
      else
        EXPECT_EQ(std::hypot(g[1], g[2]), 0.0);
      EXPECT_LE(g[0] * w[0] + g[1] * w[1] + g[2] * w[2], 0.0);
      // Closed form of the spin part.
      const double ss = std::sqrt(w[0] * w[0] + eps_spin[c] * eps_spin[c]);
      EXPECT_NEAR(g[0], -mu_spin[c] * n0 * w[0] / ss, 1e-14 * n0);
    }
  }
  PrintLog("contact torques", log);
  CheckSolve(m, Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv));
  CheckSolve(m, rng.Vec(m.nv, 0.5));
}

// ---------------------------------------------------------------- together --

// Every constraint type in one problem over three cliques.
void MakeMixed(IcfModel* m, Random& rng) {
  MakeBase(m, {4, 4, 4}, rng);
  AddContacts(m, {{12, 1e4, 3, 0.8, 0.5, 2.65e-3}, {-3, 5e3, 1, 0.6, 0.6, 2.65e-3},
                  {6, 2e4, 0, 0.4, 0.4, 0.05}}, rng);
  m->contacts.bias[1] = 2e-3;  // surface velocity on contact 0
  auto limit = [&](std::vector<int> dofs, double g0, double w) {
    FillJ(m->limits.rows, m->limits.Add(dofs, g0, w), rng);
  };
  limit({1}, 1e-3, 1 / m->M_diag[1]);
  limit({5}, -1e-3, 1 / m->M_diag[5]);
  limit({2, 6, 10}, 2e-3, 0.9);
  FillJ(m->couplings.rows, m->couplings.Add(std::vector<int>{3, 7}, 1e-3, 0.5), rng);
  FillJ(m->couplings.rows, m->couplings.Add(std::vector<int>{0, 4, 8, 11}, -5e-4, 1.2), rng);
  auto gain = [&](std::vector<int> dofs, double c, double kq, double kv, double lo, double hi) {
    FillJ(m->gains.rows, m->gains.Add(dofs, c, kq, kv, lo, hi), rng);
  };
  gain({0, 9}, 0.5, 300, 2, -1, 1);
  gain({6}, -2, 0, 10, -1, 1);
  gain({1, 2, 3}, 1, -5000, 5, -2, 2);
  gain({10, 11}, 0.2, 50, 0, -kInf, kInf);
  FillJ(m->dry_friction.rows, m->dry_friction.Add(std::vector<int>{4, 5}, 1.5), rng);
  FillJ(m->dry_friction.rows, m->dry_friction.Add(std::vector<int>{9}, 0.3), rng);
  FillJ(m->contact_torques.rows,
        m->contact_torques.Add(m->contacts.rows.dofs(0), 0, 0.01, 0.002, 0.002, 0.01, 0.05), rng);
  SetContactV0(m, {Slip::kSlide, Slip::kStick, Slip::kStick}, rng);
}

TEST(IcfDerivatives, AllConstraintTypesTogether) {
  Random rng(9);
  IcfModel m;
  MakeMixed(&m, rng);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  ErrorLog log;
  for (int sample = 0; sample < 12; ++sample) {
    SCOPED_TRACE("sample " + std::to_string(sample));
    // Mix of targeted contact regimes and plain random velocities.
    const Eigen::VectorXd v = sample % 2 ? ContactSample(m, rng, sample)
                                         : Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv) +
                                               rng.Vec(m.nv, 0.1);
    CheckPoint(m, v, &log);
    IcfSolver s;
    s.Evaluate(m, v.data());
    CheckContactFacts(m, s.data());
    CheckLimitFacts(m, s.data());
    CheckGainFacts(m, s.data());
  }
  EXPECT_GE(log.hess_points, 10);
  PrintLog("all types", log);
  CheckSolve(m, Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv));
  CheckSolve(m, rng.Vec(m.nv, 0.5));
  // The same problem at another step size (model reused, §3.2).
  m.SetTimeStep(2 * kH);
  CheckSolve(m, Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv));
}

TEST(IcfDerivatives, ConstraintsOverMoreThan64Dofs) {
  // RowStore::CongruenceTransform works in 64-column chunks.
  Random rng(10);
  IcfModel m;
  MakeBase(&m, {40, 30}, rng);
  std::vector<int> all(m.nv);
  for (int i = 0; i < m.nv; ++i) all[i] = i;
  AddContacts(&m, {}, rng);
  FillJ(m.contacts.rows, m.contacts.Add(all, 10, 1e4, 2, 0.7, 0.5, 2.65e-3), rng);
  FillJ(m.couplings.rows, m.couplings.Add(rng.Subset(m.nv, 66), 1e-3, 0.5), rng);
  FillJ(m.gains.rows, m.gains.Add(rng.Subset(m.nv, 65), 0.5, 100, 5, -0.5, 0.5), rng);
  SetContactV0(&m, {Slip::kSlide}, rng);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  ErrorLog log;
  for (int sample = 0; sample < 3; ++sample) {
    SCOPED_TRACE("sample " + std::to_string(sample));
    CheckPoint(m, ContactSample(m, rng, sample), &log);
  }
  PrintLog("rows over 70 dofs", log);
  CheckSolve(m, Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv));
}

// ----------------------------------------------------------------- solver --

TEST(IcfSolverFacts, QuadraticProblemTakesOneNewtonStep) {
  // Couplings, pure linear feedback (infinite effort limits), explicit gains
  // and implicit damping/stiffness only: ℓ is quadratic, so one Newton step
  // with α = 1 lands on the minimizer (§13 item 22).
  Random rng(20);
  IcfModel m;
  MakeBase(&m, {3, 4, 3}, rng);
  for (int k = 0; k < 4; ++k)
    FillJ(m.couplings.rows,
          m.couplings.Add(rng.Subset(m.nv, rng.I(2, 6)), rng.U(-1e-3, 1e-3), rng.U(0.5, 2)), rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{0, 4, 8}, 0.5, 400, 3, -kInf, kInf), rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{2}, 1.0, -1e4, 1, -kInf, kInf), rng);  // explicit
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{5, 6}, 3.0, 0, 0, -1, 1), rng);        // constant
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  ErrorLog log;
  for (int sample = 0; sample < 3; ++sample) CheckPoint(m, rng.Vec(m.nv, 0.3), &log);
  PrintLog("quadratic problem", log);

  const Eigen::VectorXd guess = rng.Vec(m.nv, 0.5);
  Eigen::VectorXd v;
  const SolveStats st = CheckSolve(m, guess, &v);
  EXPECT_EQ(st.iterations, 1);
  EXPECT_EQ(st.factorizations, 1);
  EXPECT_EQ(st.ls_iterations, 0);
  EXPECT_EQ(st.exact_steps, 1);  // the unit step of §8.1.8: no line search
  // Exited through the gradient criterion, and v = guess − H⁻¹∇ℓ(guess).
  EXPECT_LT(st.scaled_gradient, SolverTolerance(m, SolverOptions{}));
  IcfSolver s;
  const Eigen::VectorXd g = Grad(s, m, guess);
  const Eigen::MatrixXd H = s.Hessian(m, guess.data());
  const Eigen::VectorXd v_ref = guess - H.ldlt().solve(g);
  EXPECT_LE((v - v_ref).norm(), 1e-10 * v_ref.norm());
  // From the exact minimizer: zero iterations.
  SolveStats st0;
  Eigen::VectorXd v0(m.nv);
  EXPECT_EQ(s.Solve(m, v.data(), SolverOptions{}, v0.data(), &st0), SolveStatus::kConverged);
  EXPECT_EQ(st0.iterations, 0);
}

// One solve from `guess` (converged), its statistics, v and the solver
// (its data: γ of every row).
struct SolveRun {
  SolveStats st;
  Eigen::VectorXd v;
};
SolveRun SolveFrom(const IcfModel& m, const Eigen::VectorXd& guess, const double* extrapolated = nullptr,
              IcfSolver* solver = nullptr) {
  IcfSolver own;
  IcfSolver& s = solver ? *solver : own;
  SolveRun r;
  r.v.resize(m.nv);
  EXPECT_EQ(s.Solve(m, guess.data(), SolverOptions{}, r.v.data(), &r.st, nullptr, extrapolated),
            SolveStatus::kConverged);
  return r;
}

// v = guess − H⁻¹∇ℓ(guess), the exact Newton step.
Eigen::VectorXd NewtonStep(const IcfModel& m, const Eigen::VectorXd& guess) {
  IcfSolver s;
  const Eigen::VectorXd g = Grad(s, m, guess);
  const Eigen::MatrixXd H = s.Hessian(m, guess.data());
  return guess - H.ldlt().solve(g);
}

TEST(IcfSolverFacts, QuadraticAlongTheStepEndsTheLineSearchAtTheFullStep) {
  // Couplings, gains inside their effort limits and limits that stay open:
  // every row keeps its piece of ℓ_c along the Newton step, so ℓ is one
  // quadratic along it and α = 1 is its exact minimizer (§8.3): the line
  // search stops at its first trial, one iteration lands on the minimizer.
  Random rng(23);
  IcfModel m;
  MakeBase(&m, {3, 4, 3}, rng);
  for (int k = 0; k < 3; ++k)
    FillJ(m.couplings.rows,
          m.couplings.Add(rng.Subset(m.nv, rng.I(2, 5)), rng.U(-1e-3, 1e-3), rng.U(0.5, 2)), rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{0, 4, 8}, 0.5, 400, 3, -1e6, 1e6), rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{2}, 1.0, -1e4, 1, -kInf, kInf), rng);  // explicit
  FillJ(m.limits.rows, m.limits.Add(std::vector<int>{1}, 10.0, 1 / m.M_diag[1]), rng);  // far open
  FillJ(m.limits.rows, m.limits.Add(std::vector<int>{5, 6}, 10.0, 0.8), rng);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  const Eigen::VectorXd guess = rng.Vec(m.nv, 0.3);
  const SolveRun r = SolveFrom(m, guess);
  EXPECT_EQ(r.st.iterations, 1);
  EXPECT_EQ(r.st.ls_iterations, 0);
  EXPECT_EQ(r.st.exact_steps, 1);  // §8.1.8: taken without the line search
  const Eigen::VectorXd v_ref = NewtonStep(m, guess);
  EXPECT_LE((r.v - v_ref).norm(), 1e-10 * v_ref.norm());
}

// Two trees with a gain row and a limit on dof 1 (v_1 ≥ v̂ = 0, gap 0 at q0),
// and an impulse pushing dof 1 hard toward v_1 < 0: from the guess, where the
// limit is open (v_1 = 1 > v̂), the first Newton step closes it.
struct ClosingLimit {
  IcfModel m;
  Eigen::VectorXd guess;
};
ClosingLimit MakeClosingLimit(Random& rng) {
  ClosingLimit p;
  IcfModel& m = p.m;
  MakeBase(&m, {4, 3}, rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{0, 2}, 0.5, 400, 3, -1e6, 1e6), rng);
  m.limits.Add(std::vector<int>{1}, 0.0, 1 / m.M_diag[1]);
  m.limits.rows.J(0)[0] = 1.0;
  m.Finalize(kH);
  p.guess = rng.Vec(m.nv, 0.1);
  p.guess[1] = 1.0;
  std::vector<double> push(m.nv, 0.0);
  push[1] = -100 * m.ADiag(1);
  m.AddImpulse(push.data());
  return p;
}

TEST(IcfSolverFacts, ARowChangingPieceInsideTheStepIsLineSearched) {
  // A limit closing inside the step: ℓ changes curvature along it, the line
  // search runs, and the solution has the limit active.
  Random rng(24);
  ClosingLimit p = MakeClosingLimit(rng);
  IcfModel& m = p.m;
  ASSERT_STREQ(m.Validate(), "");
  ASSERT_EQ(m.limits.vhat[0], 0.0);
  const SolveRun r = SolveFrom(m, p.guess);
  EXPECT_GE(r.st.iterations, 2);
  EXPECT_GT(r.st.ls_iterations, 0);
  // The first step closes the limit: not taken as the exact unit step
  // (§8.1.8); the last, inside the limit's piece, may be.
  EXPECT_LT(r.st.exact_steps, r.st.iterations);
  IcfSolver se;
  se.Evaluate(m, r.v.data());
  EXPECT_GT(se.data().limits.gamma[0], 0.0);  // the limit is active at the solution
  // A gain saturating inside the step (effort limit below its force at the
  // solution): more than one step.
  IcfModel g;
  MakeBase(&g, {3}, rng);
  FillJ(g.gains.rows, g.gains.Add(std::vector<int>{0, 1, 2}, 50.0, 400, 3, -0.01, 0.01), rng);
  g.Finalize(kH);
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(g.nv);
  IcfSolver s0;
  s0.Evaluate(g, zero.data());
  ASSERT_EQ(s0.data().gains.G[0], 0.0);  // clamped at v = 0 (c = 50 ≫ hi)
  const double kappa = g.gains.kappa[0];
  const Eigen::MatrixXd J = DenseJ(g.gains.rows, 0, g.nv);
  // A guess where the gain is unclamped: y = c − κ J v ∈ [lo, hi].
  const Eigen::VectorXd inside = J.transpose() * (g.gains.c_eff[0] / kappa / J.squaredNorm());
  s0.Evaluate(g, inside.data());
  ASSERT_GT(s0.data().gains.G[0], 0.0);
  EXPECT_GE(SolveFrom(g, inside).st.iterations, 2);
}

// A small problem of gains, couplings and open limits over the given trees.
IcfModel SmallQuadraticProblem(const std::vector<int>& trees, bool couple, Random& rng) {
  IcfModel m;
  MakeBase(&m, trees, rng);
  if (couple)
    FillJ(m.couplings.rows, m.couplings.Add(std::vector<int>{0, m.nv - 1}, 1e-4, 1.0), rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{0}, 0.5, 400, 3, -1e6, 1e6), rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{m.nv - 2, m.nv - 1}, 0.2, 50, 1, -1e6, 1e6),
        rng);
  FillJ(m.gains.rows, m.gains.Add(std::vector<int>{1}, 1.0, -1e4, 1, -kInf, kInf), rng);  // explicit
  FillJ(m.limits.rows, m.limits.Add(std::vector<int>{1}, 10.0, 1 / m.M_diag[1]), rng);  // far open
  m.Finalize(kH);
  EXPECT_STREQ(m.Validate(), "");
  return m;
}

// The minimizer of m to 1e-14 (from a random guess): a guess that meets the
// default tolerance.
Eigen::VectorXd TightSolution(const IcfModel& m, Random& rng) {
  SolverOptions o;
  o.tolerance = o.min_tolerance = 1e-14;
  IcfSolver s;
  Eigen::VectorXd v_star(m.nv);
  EXPECT_EQ(s.Solve(m, rng.Vec(m.nv, 0.3).data(), o, v_star.data(), nullptr),
            SolveStatus::kConverged);
  return v_star;
}

TEST(IcfSolverFacts, TinyQuadraticProblemsTakeOneNewtonStep) {
  Random rng(31);
  // Several islands, one island: one step, the exact Newton step.
  for (const std::vector<int>& trees :
       {std::vector<int>{1, 2, 3}, std::vector<int>{2}, std::vector<int>{3, 5}}) {
    const IcfModel m = SmallQuadraticProblem(trees, trees.size() == 2, rng);
    const Eigen::VectorXd guess = rng.Vec(m.nv, 0.3);
    const SolveRun r = SolveFrom(m, guess);
    EXPECT_EQ(r.st.iterations, 1);
    const Eigen::VectorXd v_ref = NewtonStep(m, guess);
    EXPECT_LE((r.v - v_ref).norm(), 1e-10 * v_ref.norm());
  }
  // Islands already optimal at the guess are frozen (no step), unless the
  // guess was extrapolated there (§8.1: at least one iteration).
  const IcfModel m = SmallQuadraticProblem({2, 3}, false, rng);
  ASSERT_EQ(m.num_islands, 2);
  const Eigen::VectorXd v_star = TightSolution(m, rng);
  Eigen::VectorXd guess = v_star;
  for (int i = 0; i < 2; ++i) guess[i] += 0.3 * rng.N();  // island 0 off its minimum, 1 at it
  SolveRun r = SolveFrom(m, guess);
  EXPECT_EQ(r.st.islands_iterated, 1);
  EXPECT_EQ(r.v.tail(3), guess.tail(3));  // the frozen island did not move
  std::vector<double> extrapolated(m.nv, 0.0);
  extrapolated[4] = 1e-3;
  r = SolveFrom(m, guess, extrapolated.data());
  EXPECT_EQ(r.st.islands_iterated, 2);
  // From the minimizer: no iteration.
  r = SolveFrom(m, v_star);
  EXPECT_EQ(r.st.iterations, 0);
  EXPECT_EQ(r.v, v_star);
}

TEST(IcfSolverFacts, TheExactUnitStepIsTheLineMinimizer) {
  // §8.1.8: where no row changes piece along the exact Newton direction w,
  // ℓ(v + α w) is one quadratic and α = 1 is its minimizer: ℓ'(1) = 0 to
  // round-off and ℓ'' = wᵀHw > 0 all along, so the exact line search would
  // return α = 1. The solve takes that step without searching, and lands on
  // the minimizer found with the line search forced (an inexact PCG
  // direction never takes the unit step unsearched).
  Random rng(41);
  for (const std::vector<int>& trees : {std::vector<int>{3}, std::vector<int>{2, 3}}) {
    const IcfModel m = SmallQuadraticProblem(trees, trees.size() == 1, rng);
    const Eigen::VectorXd guess = rng.Vec(m.nv, 0.3);
    IcfSolver s;
    Eigen::VectorXd w(m.nv);
    ASSERT_TRUE(s.SearchDirection(m, guess.data(), LinearSolverKind::kDense, w.data()));
    s.PrepareLineSearch(m, w.data());
    double l0, d0, dd0, l1, d1, dd1;
    s.EvalAlongLine(m, 0.0, &l0, &d0, &dd0);
    s.EvalAlongLine(m, 1.0, &l1, &d1, &dd1);
    ASSERT_LT(d0, 0.0);
    EXPECT_LE(std::abs(d1), 1e-10 * std::abs(d0));
    EXPECT_NEAR(dd1, dd0, 1e-12 * dd0);  // one quadratic: the same curvature
    EXPECT_NEAR(l1, l0 + 0.5 * d0, 1e-10 * std::max(std::abs(l0), -d0));  // ℓ(1) = ℓ(0) + ½ℓ'(0)
    const SolveRun r = SolveFrom(m, guess);
    EXPECT_EQ(r.st.exact_steps, r.st.iterations);
    EXPECT_EQ(r.st.ls_iterations, 0);
    SolverOptions pcg;
    pcg.linear_solver = LinearSolverKind::kPcg;
    pcg.pcg_tolerance = 1e-12;
    SolveStats sp;
    Eigen::VectorXd vp(m.nv);
    IcfSolver s2;
    ASSERT_EQ(s2.Solve(m, guess.data(), pcg, vp.data(), &sp), SolveStatus::kConverged);
    EXPECT_EQ(sp.exact_steps, 0);
    EXPECT_LE((r.v - vp).norm(), 1e-6 * std::max(1.0, vp.norm()));
  }
}

// An extrapolated guess (§8.1), one island and several: not accepted by the
// optimality test at k = 0, so one Newton iteration from a guess that is
// optimal to the tolerance, and none (no island counted) from the exact
// minimizer, where no direction descends.
TEST(IcfSolverFacts, AnExtrapolatedGuessTakesOneIterationUnlessNothingDescends) {
  Random rng(37);
  // One island, a guess optimal at the default tolerance (a tight solution).
  {
    const IcfModel m = SmallQuadraticProblem({2, 3}, true, rng);
    ASSERT_LE(m.num_islands, 1);
    const Eigen::VectorXd v_star = TightSolution(m, rng);
    SolveRun r = SolveFrom(m, v_star);  // control: accepted as is
    EXPECT_EQ(r.st.iterations, 0);
    EXPECT_EQ(r.st.factorizations, 0);
    EXPECT_EQ(r.v, v_star);
    std::vector<double> extrapolated(m.nv, 0.0);
    extrapolated[m.nv - 1] = 1e-3;
    r = SolveFrom(m, v_star, extrapolated.data());
    EXPECT_EQ(r.st.iterations, 1);
    EXPECT_EQ(r.st.factorizations, 1);
    EXPECT_LE((r.v - v_star).norm(), 1e-10 * std::max(1.0, v_star.norm()));
  }
  // The exact minimizer: r = 0 (an impulse cancels it) and v = 0 with only
  // a far open limit (γ = 0), so ∇ℓ = A·0 − 0 = 0 to the bit and w = 0.
  for (const std::vector<int>& trees : {std::vector<int>{3}, std::vector<int>{2, 3}}) {
    IcfModel m;
    MakeBase(&m, trees, rng);
    FillJ(m.limits.rows, m.limits.Add(std::vector<int>{1}, 10.0, 1 / m.M_diag[1]), rng);
    m.Finalize(kH);
    std::vector<double> cancel(m.r);
    for (double& x : cancel) x = -x;
    m.AddImpulse(cancel.data());
    ASSERT_STREQ(m.Validate(), "");
    const int ni = std::max(m.num_islands, 1);
    ASSERT_EQ(ni, static_cast<int>(trees.size()));
    const Eigen::VectorXd zero = Eigen::VectorXd::Zero(m.nv);
    IcfSolver s;
    ASSERT_EQ(Grad(s, m, zero), zero);
    std::vector<double> extrapolated(m.nv, 0.0);
    extrapolated[m.nv - 1] = 1e-3;  // the last island
    const SolveRun r = SolveFrom(m, zero, extrapolated.data());
    EXPECT_EQ(r.st.iterations, 0);
    EXPECT_EQ(r.st.factorizations, 1);  // not accepted before the direction
    EXPECT_EQ(r.st.islands_iterated, 0);
    EXPECT_EQ(r.st.island_updates, 0);
    EXPECT_EQ(r.v, zero);
  }
}

TEST(IcfSolverFacts, CostDecreasesAlongNewtonIterationsOnContactProblem) {
  // A harder contact problem (several contacts sliding, large initial
  // velocity error) must take several Newton iterations, each one lowering ℓ.
  Random rng(21);
  IcfModel m;
  MakeBase(&m, {4, 4, 4}, rng);
  AddContacts(&m, {{50, 1e5, 5, 1.0, 0.6, 2.65e-3}, {30, 1e5, 5, 0.8, 0.8, 2.65e-3},
                   {5, 1e4, 0, 0.5, 0.5, 2.65e-3}, {-1, 1e4, 1, 0.5, 0.5, 2.65e-3}}, rng);
  SetContactV0(&m, {Slip::kSlide, Slip::kStick}, rng);
  m.Finalize(kH);
  ASSERT_STREQ(m.Validate(), "");
  for (int trial = 0; trial < 4; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const SolveStats st = CheckSolve(m, rng.Vec(m.nv, 1.0));
    EXPECT_GE(st.iterations, 2);
    EXPECT_EQ(st.factorizations, st.iterations);
    EXPECT_EQ(st.exact_steps, 0);  // contact rows: never one quadratic (§8.1.8)
  }
  // Primal-dual friction (§8.1) against plain Newton (the exact Hessian):
  // only H differs, so the same minimizer to the tolerance, ℓ falling at
  // every iteration of both.
  const Eigen::VectorXd guess = Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv);
  IcfSolver s1, s2;
  SolverOptions o1, o2;
  o2.friction_dual = false;
  SolveStats st1, st2;
  std::vector<double> h1, h2;
  Eigen::VectorXd v1(m.nv), v2(m.nv);
  ASSERT_EQ(s1.Solve(m, guess.data(), o1, v1.data(), &st1, &h1), SolveStatus::kConverged);
  ASSERT_EQ(s2.Solve(m, guess.data(), o2, v2.data(), &st2, &h2), SolveStatus::kConverged);
  for (const auto* hist : {&h1, &h2})
    for (size_t k = 0; k + 1 < hist->size(); ++k)
      EXPECT_LE((*hist)[k + 1], (*hist)[k] + 1e-12 * std::max(1.0, std::abs((*hist)[k])));
  std::printf("[ dual ] Newton iterations: primal-dual %d, exact Hessian %d\n", st1.iterations,
              st2.iterations);
  const Eigen::VectorXd Dinv = Eigen::Map<const Eigen::VectorXd>(m.M_diag.data(), m.nv).cwiseSqrt();
  EXPECT_LE((Dinv.cwiseProduct(v1 - v2)).norm(), 1e3 * SolverTolerance(m, o1));
}

}  // namespace
}  // namespace mjcenic::icf
