// Newton's method with exact line search for the ICF problem
// (cenic-math.md §8). The solver only iterates: the model is constant and
// evaluates itself (evaluator.h); the data (IcfData) and the factorization are
// the solver's workspace.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include <Eigen/Dense>

#include "mjcenic/icf/contact_sweeps.h"
#include "mjcenic/icf/evaluator.h"
#include "mjcenic/icf/linear/linear_solver.h"
#include "mjcenic/icf/icf_data.h"
#include "mjcenic/icf/icf_model.h"

namespace mjcenic::icf {

// What the caller tells the solver. The accelerations of the iteration are
// the solver's own policy, keyed on these (IcfSolver, "Policy").
struct SolverOptions {
  double tolerance = 1e-8;       // ε_req (§8.2); the solver uses max(ε_req, min_tolerance)
  double min_tolerance = 1e-8;   // ε_min
  int max_iterations = 100;
  // The solve is a step of its own (fixed mode: no error estimate follows
  // from it), so its starting point may be chosen freely (contact sweeps).
  bool fixed_step = false;
  LinearSolverKind linear_solver = LinearSolverKind::kAuto;
  // kPcg: relative residual of each Newton direction (inexact Newton; every
  // CG iterate is a descent direction; §8.4) and CG iteration cap.
  double pcg_tolerance = 1e-4;
  int pcg_max_iterations = 500;
  // One exact line search per island (independent groups of trees, see
  // IcfModel) instead of one step length for the whole system.
  bool island_line_search = true;
  // Primal-dual friction (§8.1.7) in H; off: the exact Hessian (plain Newton).
  bool friction_dual = true;
  // Extended line search (§8.3, item 2); off: α ≤ 1.
  bool extended_line_search = true;
  // Contact sweeps of a fixed step (contact_sweeps.h); off: never.
  bool contact_sweeps = true;
  // Measure SolveStats' phase times (two clock reads per phase and Newton
  // iteration); off: they stay 0.
  bool phase_timers = false;
};

enum class SolveStatus { kConverged, kMaxIterations, kNotPositiveDefinite, kNotDescent,
                         kLineSearchFailed, kNonFinite };
const char* ToString(SolveStatus s);

struct SolveStats {
  SolveStatus status = SolveStatus::kConverged;
  int iterations = 0;      // Newton updates
  int factorizations = 0;
  int ls_iterations = 0;   // line-search evaluations (§8.3 item 4)
  int linear_iterations = 0;  // conjugate-gradient iterations (kPcg)
  // Σ over Newton iterations of the islands updated in it (several islands:
  // each stops at its own convergence, so this is below iterations × islands).
  int island_updates = 0;
  // Islands that took at least one Newton iteration (one system: 1 if
  // iterations > 0). island_updates / islands_iterated: Newton iterations
  // per island that needed any, as MuJoCo's solver_niter counts them per
  // island; `iterations` is the slowest island's count. With one system,
  // island_updates = iterations.
  int islands_iterated = 0;
  // Island line searches that went past α_max (SolverOptions::extend_slope).
  int extended_searches = 0;
  // Islands started from the contact sweep guess (contact_sweeps.h).
  int sweep_islands = 0;
  // Newton iterations that took the exact unit step (cenic-math §8.1.8): no
  // line search.
  int exact_steps = 0;
  double cost = 0;         // ℓ at the returned v
  double scaled_gradient = 0;  // |D ∇ℓ| at the returned v
  // Wall time by phase [s]: cost/gradient/Hessian-block evaluation, Hessian
  // assembly + factorization + Newton direction, line search (incl. its setup).
  double time_evaluate = 0, time_factorize = 0, time_line_search = 0;
};

// The Newton iteration of cenic-math §8: direction, exact line search per
// island, stopping test per island. Evaluation is the problem's own
// (evaluator.h); the solver holds the data and the factorizations as its
// workspace, reused across calls so that no allocation happens once sizes
// stop growing.
//
// Policy (the accelerations, each kept for a measured gain, cenic-math §8.1.6,
// §8.3, §8.4), keyed on what the solver is told and on its last solve:
//  - primal-dual friction (options.friction_dual): every solve; the duals
//    start at z = t̂ (exact Newton) after a solve of < 3 iterations, else at
//    z = 0 (a majorized first iteration);
//  - extended line search (options.extended_line_search): every solve;
//  - exact unit step (§8.1.8): a direct linear solver's direction on a
//    problem without contact, contact-torque or dry-friction rows, when no
//    limit or gain row changes piece along it: ℓ is one quadratic there, so
//    α = 1 is its line minimizer and the line search is skipped;
//  - PCG forcing: on a fixed step or with a tight tolerance (≤
//    kTightTolerance) the directions are solved loosely while the gradient
//    falls slowly (≤ 10⁻²);
//  - contact sweeps (options.contact_sweeps): a fixed step, after a solve of
//    ≥ 4 iterations (a scene Newton solves in a few would pay the sweeps for
//    nothing); under error control the loose solves would carry the other
//    starting point into the accepted steps.
class IcfSolver {
 public:
  static constexpr double kTightTolerance = 1e-7;

  IcfSolver();
  ~IcfSolver();
  IcfSolver(const IcfSolver&) = delete;
  IcfSolver& operator=(const IcfSolver&) = delete;

  // Minimizes ℓ starting from v_guess; writes the minimizer into v (may alias
  // v_guess). Returns the status; `cost_history`, if given, receives ℓ(v_k).
  // extrapolated (optional, n_v values): the part of v_guess extrapolated
  // from earlier steps (cenic-math §8.1.1); an island where it
  // is not 0 takes at least one Newton iteration (its optimality is not
  // tested at the guess, whose error would be biased the same way step after
  // step).
  SolveStatus Solve(const IcfModel& model, const double* v_guess, const SolverOptions& options,
                    double* v, SolveStats* stats, std::vector<double>* cost_history = nullptr,
                    const double* extrapolated = nullptr);

  // Evaluates cost, gradient, impulses and constraint Hessians at v.
  void Evaluate(const IcfModel& model, const double* v) {
    TagIslands(model, true, &data_);
    icf::Evaluate(model, v, &data_);
  }
  // The data of the last Evaluate or Solve: at the returned v, its impulses
  // γ per pool (what the adapter reports back as MuJoCo forces); valid until
  // the next Solve or Evaluate.
  const IcfData& data() const { return data_; }
  const IcfData& solution() const { return data_; }

  // Newton direction w = −H(v)⁻¹ ∇ℓ(v) with the given linear solver (tests).
  bool SearchDirection(const IcfModel& model, const double* v, LinearSolverKind kind, double* w);
  // Dense H(v) (tests).
  Eigen::MatrixXd Hessian(const IcfModel& model, const double* v);
  // diag(H) = diag(A + Σ J_iᵀ G_i J_i) at the data of the last Solve or
  // Evaluate (the returned v), into diag[0..nv) (cenic-math §11.11: the
  // propagated error norm). No allocation once the scratch has grown.
  void HessianDiagonal(const IcfModel& model, double* diag);
  // Factorizes H at the data of the last Solve (the returned v), whole system,
  // with the options' linear solver; then SolveAtSolution(x) overwrites x by
  // H⁻¹ x (cenic-math §11.11: propagating a velocity error). False if H is
  // not positive definite.
  bool FactorAtSolution(const IcfModel& model, const SolverOptions& options);
  void SolveAtSolution(double* x);
  // ℓ(v + α w) and its first two derivatives in α along w from the last
  // Evaluate's v (tests; evaluator.h's PrepareLineSearch, EvalAlongLineIslands).
  void PrepareLineSearch(const IcfModel& model, const double* w) {
    icf::PrepareLineSearch(model, w, &data_);
  }
  void EvalAlongLine(const IcfModel& model, double alpha, double* cost, double* d1, double* d2);

 private:
  struct Policy {
    bool dual_exact_start;
    double pcg_forcing_max;  // ≤ pcg_tolerance: no forcing
    bool sweeps;
  };
  Policy ChoosePolicy(const SolverOptions& o) const;
  LinearSolver* Factor(LinearSolverKind kind, const SolverOptions& o);
  // The solve's linear solver (ChooseLinearSolver), prepared for m, at its
  // first factorization; *quadratic: the exact unit step's precondition
  // (§8.1.8: no smooth rows, a direct solver).
  LinearSolver* PrepareFactor(const IcfModel& m, const SolverOptions& o, bool* quadratic);
  SolveStatus Iterate(const IcfModel& m, const double* v_guess, const SolverOptions& o,
                      double* v, SolveStats* st, std::vector<double>* history,
                      const double* extrapolated);
  // The evaluation of iteration k (with the guess's sweeps and the duals'
  // start at k = 0).
  void EvaluateIterate(const IcfModel& m, int k, const SolverOptions& o, const Policy& p,
                       double tol, int nfrozen, bool advanced, SolveStats* st);
  // Contact sweeps at the guess (contact_sweeps.h): each island not optimal
  // there whose sweep guess has the lower ℓ_i starts from it. Returns the
  // number of such islands.
  int StartFromSweeps(const IcfModel& m, double tol, bool dual);
  // The sweeps' work sized for m's ni islands (a solve with contacts).
  void SizeSweepWork(const IcfModel& m, int ni);
  // Relative residual of this iteration's PCG direction (§8.4).
  double Forcing(int k, double Dg, double Dg_prev, double tol, const SolverOptions& o,
                 double forcing_max) const;
  // Exact line search per island; the step lengths are left in ls_.alpha.
  // False if some island's search did not converge. *extended counts the
  // islands whose search went past α_max.
  bool LineSearch(const IcfModel& m, bool extend, int* evals, int* extended);
  // §8.1.8: whether ℓ is one quadratic along the prepared direction on
  // [0, 1] (no limit or gain row of an island not frozen changes piece
  // between v_c(0) and v_c(0) + u); the caller has checked that the rows are
  // piecewise quadratic and the direction exact. If so, ls_.alpha = 1 on
  // each island that descends (0 elsewhere, as LineSearch leaves it).
  bool ExactUnitStep(const IcfModel& m, const char* frozen);
  // The first trial of each island (α_max, or past it when extending);
  // returns the islands still searching.
  int StartLineSearch(bool extend, int* extending);
  // One evaluation at the extended trials; returns the islands to bracket.
  int ExtendLineSearch(const IcfModel& m, int* evals, int* extended);
  void ResizeIslandWork(int num_islands);
  // w = −H⁻¹ ∇ℓ into dv_, 0 on frozen islands.
  const double* NewtonDirection(const IcfModel& m, LinearSolver* H, bool any_frozen,
                                int* linear_iterations);
  // scale_ = D; returns tol; with several islands also each island's tol
  // (isl_.tol) and fresh state.
  double ScaledTolerance(const IcfModel& m, const SolverOptions& o);
  void StartIslands(int ni);  // isl_ sized and reset (tol = 0)
  // The whole system's Newton state (§8.2) and the guess's flags (§8.1.1).
  struct NewtonState {
    bool iterate_all = false;       // one island, extrapolated guess: ≥ 1 iteration
    bool optimal_at_guess = false;  // every island (the system) met criterion 1 at k = 0
    double eta = 1.0;
    double step_prev = 0, step_prev2 = 0;  // δ_{k-1}, δ_{k-2}
  };
  // Tolerances (returned), the extrapolated guess's flags (isl_.iterate, or
  // s->iterate_all with one island), vtmp_ = the guess and ls_.alpha = 1.
  double StartSolve(const IcfModel& m, const SolverOptions& o, const double* v_guess,
                    const double* extrapolated, NewtonState* s);
  // |D ∇ℓ| into *Dg and st->scaled_gradient; false if it or ℓ is not finite.
  bool FiniteGradient(const IcfModel& m, double* Dg, SolveStats* st);
  // Criteria 1 and 2 of §8.2 after the evaluation of iteration k, for the
  // whole system or island by island (IslandsConverged, freezing converged
  // islands); at k = 0 also s->optimal_at_guess and st->islands_iterated.
  // (m: the guess's test at k = 0, GuessMomentumChange.)
  bool Converged(const IcfModel& m, int k, double Dg, double tol, NewtonState* s, int* nfrozen,
                 SolveStats* st);
  // ‖D (A v − r)‖ at the evaluated iterate if it is m.v0, per island squared
  // into isl_.step2; +∞ where it is not v0.
  double GuessMomentumChange(const IcfModel& m);
  // At k = 0, with the direction's ℓ'(0) = d0: a guess that met criterion 1
  // and admits no descent (round-off) is the solution, no island iterated
  // (§8.1.1). True if so (the caller returns vtmp_).
  bool AcceptGuess(const NewtonState& s, double d0, SolveStats* st);
  // v += α w (δ into s), A v (AdvanceProducts), θ's steps, the count.
  void FinishIteration(const IcfModel& m, const double* w, NewtonState* s, SolveStats* st);
  // |D ∇ℓ|, and per island into isl_.Dg2.
  double ScaledGradient(const IcfModel& m);
  bool IslandsConverged(int k, int* nfrozen, int* island_updates);
  double TakeStep(const IcfModel& m, const double* w);
  int NumIslands() const { return data_.num_islands; }

  // Per-island line-search state (sized to the island count, grows only).
  struct LineSearchWork {
    std::vector<double> alpha, l, f, df, xl, xh, dx, dxold;
    std::vector<char> active;
    std::vector<char> extend;  // searching past α_max (§8.3 item 2)
    std::vector<double> l_amax;  // ℓ_i(α_max) of an extended search
  };
  LineSearchWork ls_;

  // Per-island Newton state (§8.2 applied to each island on its own).
  struct IslandNewton {
    std::vector<double> tol, Dg2, step2, step_prev, step_prev2, eta;
    std::vector<char> frozen;
    std::vector<char> iterate;  // not tested at k = 0 (Solve's `extrapolated`)
  };
  IslandNewton isl_;

  IcfData data_;
  ContactSweeps sweeps_;
  std::vector<double> sweep_v_, guess_l0_;
  std::vector<char> sweep_took_, sweep_keep_, optimal_;
  int last_iterations_ = 0;  // of the last Solve (Policy)
  std::unique_ptr<LinearSolver> dense_, sparse_, islands_, pcg_, lowrank_, block_, tree_;
  std::vector<double> scale_, dv_, vtmp_;
  std::vector<double> diag_block_;  // HessianDiagonal: one J_iᵀ G_i J_i block
  LinearSolver* solution_factor_ = nullptr;  // FactorAtSolution's
};

}  // namespace mjcenic::icf
