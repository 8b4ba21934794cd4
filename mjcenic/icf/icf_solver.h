// Newton's method with exact line search for the ICF problem
// (cenic-math.md §8). The solver only iterates: the model is constant, the
// data (IcfData) and the factorization are its workspace, reused across calls
// so that no allocation happens once sizes stop growing.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include <Eigen/Dense>

#include "mjcenic/icf/hessian.h"
#include "mjcenic/icf/icf_data.h"
#include "mjcenic/icf/icf_model.h"

namespace mjcenic::icf {

enum class LineSearchGuess { kCubic, kQuadratic };

struct SolverOptions {
  double tolerance = 1e-8;       // ε_req (§8.2); the solver uses max(ε_req, min_tolerance)
  double min_tolerance = 1e-8;   // ε_min
  int max_iterations = 100;
  bool hessian_reuse = false;    // §8.5
  int reuse_target_iterations = 10;  // k_max of (P35)
  LineSearchGuess line_search_guess = LineSearchGuess::kCubic;
  // One exact line search per island (independent groups of trees, see
  // IcfModel) instead of one step length for the whole system.
  bool island_line_search = true;
  double alpha_max = 1.0;
  // Extended line search (cenic-math §8.3, item 2): an island whose slope at
  // α_max is still below −extend_slope times its slope at 0 (the Newton step
  // undershoots the line minimum by far) searches on up to extend_alpha_max;
  // its friction duals (§8.1) take at most the α_max part of that step.
  // 0: off. The stepper sets 0.3 for every solve (fixed mode and error
  // control); its own SolverOptions value is overridden.
  double extend_slope = 0;
  double extend_alpha_max = 2.0;
  LinearSolverKind linear_solver = LinearSolverKind::kAuto;
  // kPcg: relative residual of each Newton direction (inexact Newton; every
  // CG iterate is a descent direction) and CG iteration cap.
  double pcg_tolerance = 1e-4;
  int pcg_max_iterations = 500;
  // kPcg forcing (§8.4): the direction of iteration k is solved to the
  // relative residual clamp(0.9 (|D∇ℓ_k|/|D∇ℓ_{k−1}|)², pcg_tolerance,
  // pcg_forcing_max) (pcg_forcing_max at k = 0); pcg_forcing_max ≤
  // pcg_tolerance (the default) solves every direction to pcg_tolerance.
  // The stepper sets 10⁻² for tight tolerances (fixed mode).
  double pcg_forcing_max = 0;
  // Newton iterations k < majorized_iterations assemble the friction blocks
  // from the friction cost's quadratic majorizer instead of its Hessian
  // (§8.1); with majorize_damped, so does any iteration of an island whose
  // last line search was damped (α < damped_alpha). The stepper turns
  // majorize_damped on for tight tolerances (fixed mode). Both are ignored
  // with hessian_reuse.
  int majorized_iterations = 0;
  bool majorize_damped = false;
  double damped_alpha = 0.5;
  // Primal-dual friction (§8.1): each contact's friction block of H is
  // μn⁰/(|v_t|_ε+ε)·(I − sym(z t̂ᵀ)) with a dual z that follows its own
  // Newton update, instead of the Hessian's z = t̂. friction_dual_exact_start:
  // z = t̂ at the guess (the first iteration is exact Newton), else z = 0 (the
  // majorizer). The stepper turns it on for every solve (fixed mode and
  // error control) and sets the exact start from the previous solve's
  // iteration count; its own SolverOptions values are overridden.
  // Ignored with hessian_reuse.
  bool friction_dual = false;
  bool friction_dual_exact_start = false;
  // Line-searched warm start (cenic-math §8.1): the stepper passes its warm
  // start v_t + h a_prev with the direction h a_prev, and an island whose
  // minimizer along it lies below half of it starts there (Solve's
  // guess_direction). Fixed mode only; off by default (measured: fewer
  // Newton iterations, wall time mixed).
  bool pull_back_guess = false;
  // Contact sweep guess (cenic-math §8.1, "Contact sweeps"): with n > 0, a
  // second initial guess from n nonlinear Gauss–Seidel sweeps over the
  // contacts (each contact's own normal and friction law solved exactly
  // against diag(A)), and each island not optimal at the guess starts from
  // whichever of the two gives it the lower ℓ_i. The minimizer is the same.
  // Not with a guess_direction (Solve's line-searched guess takes
  // precedence). The stepper passes it in fixed mode only (tight tolerance),
  // after a solve of ≥ 4 iterations, with sweep_min_history = 6; 0: off.
  int guess_sweeps = 0;
  // With guess_sweeps: sweep only the islands holding a dof whose island
  // needed ≥ this many Newton iterations in the last solve (each solve with
  // this > 0 keeps each dof's count for the next, also one without sweeps;
  // cenic-math §8.1, "h23e"); 0: every island not optimal at the guess, and
  // no count kept.
  int sweep_min_history = 0;
  // With sweep_min_history: an island whose dofs started from the sweep guess
  // before is swept again only if that took ≥ this many iterations fewer
  // than their last start from the usual guess.
  int sweep_min_saving = 1;
  // With guess_sweeps: an island stops sweeping once a sweep changes its
  // impulses by at most this fraction of their size (Σ|Δγ| ≤ ρ Σ|γ|).
  double sweep_stop = 1e-3;
  // Impact sweeps (cenic-math §8.1, "h24b"): with n > 0, the contact sweeps
  // of guess_sweeps also run (n sweeps, or guess_sweeps' count when that is
  // on) on each island not optimal at the guess that holds an impact there:
  // a contact with d (v̂ − v_n) > impact_speed (its Hunt–Crossley impulse is
  // dominated by the term quadratic in v_n, from which Newton only halves
  // v_n per iteration) between trees of ≤ 6 dofs (free bodies: diag(A) is
  // nearly their A), on an island of ≤ impact_max_dofs dofs. Independent of
  // the history rule (an impact is not predicted by the last solve). The
  // stepper passes 20 in fixed mode (option impact_sweeps); 0: off.
  int impact_sweeps = 0;
  double impact_speed = 3;
  int impact_max_dofs = 24;
  // Pile impacts (cenic-math §8.1, "h26a"): with impact_sweeps on, an island
  // of more than impact_max_dofs dofs (a pile: sweeping all of it for one
  // landing body costs more than the iterations it saves) is swept
  // (pile_impact_sweeps sweeps) once at least pile_impact_share of its
  // contacts, and at least pile_impact_count contacts, are such impacts:
  // many bodies landing on the pile at once. pile_impact_share = 0: never.
  double pile_impact_share = 0.03;
  int pile_impact_count = 8;
  int pile_impact_sweeps = 8;
  // Articulated sweeps (cenic-math §8.1, "h24c"): with n > 0, the contact
  // sweeps (n sweeps, unless guess_sweeps or impact_sweeps set the count)
  // on islands with an articulated tree (> 6 dofs) whose trees all have
  // ≤ articulated_max_dofs dofs, slow by the history rule (sweep_min_history),
  // with the trees' real A (one dense Cholesky per tree) in place of diag(A):
  // W_c = J_c A⁻¹ J_cᵀ and v += A⁻¹ J_cᵀ Δγ_c. Such islands use this model
  // also when swept by guess_sweeps. The minimizer is the same; 0: off.
  int articulated_sweeps = 0;
  int articulated_max_dofs = 64;
  // Quadratic step (cenic-math §8.9): when the problem has only rows whose
  // cost is piecewise quadratic (limits, couplings, gains: no contacts,
  // contact torques or dry friction), the direction is an exact Newton step
  // (direct linear solver, no Hessian reuse, α_max = 1) and every row keeps
  // its piece of ℓ_c from α = 0 to α = 1, ℓ is one quadratic along the step
  // and α = 1 is its minimizer: the line search is skipped. The next
  // evaluation and the stopping test are unchanged.
  bool quadratic_shortcut = true;
  // Small quadratic problems (cenic-math §8.9, "A path for tiny problems"):
  // with at most kSmallProblemDofs dofs, the quadratic step's conditions
  // above and only limit, gain and coupling rows, the first Newton step is
  // taken by a dense Cholesky of the whole H in dof order, without the
  // general loop's per-call machinery; any other case (a row changing
  // piece, no convergence after that step) falls back to the general loop
  // from the guess. The same iterate up to the factorization's round-off.
  bool small_problem_path = true;
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
  // Newton iterations whose step was taken without a line search because ℓ
  // is quadratic along it (SolverOptions::quadratic_shortcut).
  int quadratic_steps = 0;
  // 1 if the small-problem path (SolverOptions::small_problem_path) returned
  // this solve's result, else 0.
  int small_path = 0;
  // Island line searches that went past α_max (SolverOptions::extend_slope).
  int extended_searches = 0;
  // Islands started from the contact sweep guess (SolverOptions::guess_sweeps).
  int sweep_islands = 0;
  double cost = 0;         // ℓ at the returned v
  double scaled_gradient = 0;  // |D ∇ℓ| at the returned v
  // Wall time by phase [s]: cost/gradient/Hessian-block evaluation, Hessian
  // assembly + factorization + Newton direction, line search (incl. its setup).
  double time_evaluate = 0, time_factorize = 0, time_line_search = 0;
};

// Largest problem of the small-problem path (SolverOptions::small_problem_path).
inline constexpr int kSmallProblemDofs = 8;

class IcfSolver {
 public:
  IcfSolver();
  ~IcfSolver();
  IcfSolver(const IcfSolver&) = delete;
  IcfSolver& operator=(const IcfSolver&) = delete;

  // Minimizes ℓ starting from v_guess; writes the minimizer into v (may alias
  // v_guess). Returns the status; `cost_history`, if given, receives ℓ(v_k).
  // guess_direction d (optional, n_v values): v_guess is the end of the
  // segment v_guess − d + β d, β ∈ [0, 1]; on an island where the minimizer
  // of ℓ_i on that segment lies at β < ½, Newton starts there instead (an
  // estimate of it; cenic-math §8.1, "Line-searched guess"). The minimizer
  // of ℓ is the same.
  // extrapolated (optional, n_v values): the part of v_guess extrapolated
  // from earlier steps (cenic-math §8.1, "Initial guess"); an island where it
  // is not 0 takes at least one Newton iteration (its optimality is not
  // tested at the guess, whose error would be biased the same way step after
  // step).
  SolveStatus Solve(const IcfModel& model, const double* v_guess, const SolverOptions& options,
                    double* v, SolveStats* stats, std::vector<double>* cost_history = nullptr,
                    const double* guess_direction = nullptr,
                    const double* extrapolated = nullptr);

  // Evaluates cost, gradient, impulses and constraint Hessians at v.
  void Evaluate(const IcfModel& model, const double* v) {
    TagIslands(model);
    Evaluate(model, v, nullptr);
  }
  // The data of the last Evaluate or Solve.
  const IcfData& data() const { return data_; }
  // The result of the last Solve: its velocities v and impulses γ per pool
  // (what the adapter reports back as MuJoCo forces); valid until the next
  // Solve or Evaluate.
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
  // not positive definite. Invalidates a factorization kept for reuse.
  bool FactorAtSolution(const IcfModel& model, const SolverOptions& options);
  void SolveAtSolution(double* x);
  // ℓ(v + α w) and its first two derivatives in α, for the direction set by
  // the last PrepareLineSearch (tests and the line search itself).
  // frozen (per island, or null): islands whose w is 0 and whose rows no
  // line search, evaluation or dual update reads; their rows keep their
  // stored v_c(0) and u.
  void PrepareLineSearch(const IcfModel& model, const double* w, const char* frozen = nullptr);
  void EvalAlongLine(const IcfModel& model, double alpha, double* cost, double* d1, double* d2);
  // The same per island i (only where active[i]): ℓ_i(v + α_i w) and its
  // derivatives; the total is their sum.
  void EvalAlongLineIslands(const IcfModel& model, const double* alpha, const char* active,
                            double* cost, double* d1, double* d2);

  // Forgets a factorization kept for Hessian reuse.
  void ResetReuse() { fresh_ = false; }

 private:
  HessianFactor* Factor(LinearSolverKind kind, const SolverOptions& o);
  // Evaluate, re-using the stored per-constraint values of islands marked in
  // `frozen` (their v has not changed since they were computed; their costs
  // still enter the totals, and their gradient entries, a function of their
  // own v only, are left as the evaluation that froze them computed them:
  // the same bits, cenic-math §8.9; ignored with one island). Needs
  // TagIslands() first (it sizes data_ and the per-island work).
  // majorize (per island, or null): contact G from the friction majorizer (§8.1).
  // advanced: data_.Av already holds A v (AdvanceProducts after the last
  // step) and the constraint velocities of the rows evaluated follow from the
  // line search's v_c(α=0) + α u (§3.4) without a product with J.
  // dual: contact G from the primal-dual friction block with the duals
  // data_.friction_dual (§8.1).
  void Evaluate(const IcfModel& model, const double* v, const char* frozen,
                const char* majorize = nullptr, bool advanced = false, bool dual = false);
  // After TakeStep: A v += α A w, per island α (the constraint velocities
  // v_c = v_c(α=0) + α J w follow in the next Evaluate, advanced = true).
  void AdvanceProducts(const IcfModel& model);
  // Primal-dual friction (§8.1): z ← t̂ at the guess (exact start), and the
  // dual Newton update after each step of the islands not frozen.
  void StartFrictionDual(const IcfModel& model);
  // The dual step is α u with α ≤ alpha_cap (an extended search's α_max).
  void UpdateFrictionDual(const IcfModel& model, bool per_island, double alpha_cap);
  // Line-searched guess (§8.1): at k = 0, after the evaluation at the full
  // guess, moves the islands whose guess overshoots back along d.
  void PullBackGuess(const IcfModel& model, const double* d, const char* majorize, bool dual,
                     int* evals);
  std::vector<char> guess_kept_;  // per island: not moved by PullBackGuess
  // Contact sweep guess (§8.1): at k = 0, after the evaluation at the guess
  // vtmp_, builds the sweep guess for the islands not optimal there
  // (SweepGuess) and moves every such island whose ℓ_i is lower there.
  // tol: the whole system's (one island; several use isl_.tol). Returns the
  // number of islands moved.
  int SweepStart(const IcfModel& model, double tol, const SolverOptions& o, const char* majorize,
                 bool dual);
  // Into sweep_v_, on the islands marked in sweep_took_ (island i: at most
  // sweep_count_[i] sweeps), from the model alone.
  void SweepGuess(const IcfModel& model, double stop);
  void SizeSweepWork(const IcfModel& model);
  std::vector<double> sweep_v_, sweep_Ai_, sweep_W_, sweep_gamma_, sweep_change_, guess_l0_;
  std::vector<char> sweep_took_, sweep_keep_, sweep_active_;
  std::vector<int> sweep_dofs_;  // SweepStart: dofs per island (impact_max_dofs)
  std::vector<int> sweep_impacts_;  // SweepStart: per island, contacts and impacts (h26a)
  std::vector<int> sweep_count_;    // SweepStart: per island, the sweeps SweepGuess runs
  // Articulated sweeps (h24c): per island, whether it is swept with the
  // trees' A (sweep_exact_); per clique, the offset of its dense Cholesky
  // factor in sweep_L_ (-1: none); per contact, its (≤ 2) cliques and the
  // offset of its three columns A⁻¹J_cᵀ (over those cliques' dofs) in
  // sweep_cols_. Grown as needed, never shrunk.
  std::vector<char> sweep_exact_;
  std::vector<int> sweep_L_off_, sweep_cq_, sweep_col_off_;
  std::vector<double> sweep_L_, sweep_cols_;
  std::vector<int> sweep_lim_off_;  // per limit row: its column's offset (-1: not swept)
  std::vector<double> sweep_lim_W_, sweep_lim_gamma_;
  std::vector<int> sweep_lim_list_;  // the swept limit rows (sweep_lim_count_ of them)
  int sweep_lim_count_ = 0;
  void SweepFactorCliques(const IcfModel& m);
  // Per dof: the Newton iterations its island needed in the last solve
  // (SolverOptions::sweep_min_history); per island: their maximum.
  std::vector<int> dof_iterations_, dof_swept_iterations_, sweep_history_, sweep_history_swept_;
  bool sweep_ran_ = false;  // this solve's sweep_took_ marks the islands moved
  void RecordIterations(const IcfModel& model, bool per_island, int iterations);
  void TagIslands(const IcfModel& model);  // data_.<pool>.island
  // Exact line search per island; the step lengths are left in ls_.alpha.
  // False if some island's search did not converge.
  // *extended counts the islands whose search went past α_max.
  bool LineSearch(const IcfModel& model, const SolverOptions& o, int* evals, int* extended);
  void ResizeIslandWork(int num_islands);
  // Quadratic step (SolverOptions::quadratic_shortcut): true if every limit
  // and gain row is in the same piece of its cost at v_c(0) and v_c(0) + u
  // (the direction set by PrepareLineSearch; couplings have one piece).
  bool StepStaysQuadratic(const IcfModel& model) const;
  // Newton's per-island bookkeeping (§8.2 per island): tolerances and state
  // at the start of a solve; |D ∇ℓ| (and per island into isl_.Dg2); the
  // per-island stopping test, freezing converged islands; the update
  // v += α_island w with the scaled step length (returned, per island kept).
  const double* NewtonDirection(const IcfModel& m, HessianFactor* H, bool per_island,
                                bool any_frozen, int* linear_iterations);  // into dv_
  // scale_ = D; returns tol; with ni_split > 0 islands also StartIslands and
  // isl_.tol (needs TagIslands).
  double ScaledTolerance(const IcfModel& m, const SolverOptions& o, int ni_split);
  void StartIslands(int ni);  // isl_ sized and reset (tol = 0)
  // The small-problem path (SolverOptions::small_problem_path): true with v
  // and *stats set if it solved the problem, false to run the general loop.
  // The quadratic step's conditions (§8.9) with the automatic linear solver,
  // no majorizer, and room for the general loop's second evaluation.
  bool SmallEligible(const IcfModel& m, const SolverOptions& o) const {
    return o.small_problem_path && m.nv <= kSmallProblemDofs && o.quadratic_shortcut &&
           o.alpha_max == 1.0 && !o.hessian_reuse && !o.phase_timers &&
           o.linear_solver == LinearSolverKind::kAuto && o.majorized_iterations == 0 &&
           o.max_iterations >= 2 && m.contacts.size() == 0 && m.contact_torques.size() == 0 &&
           m.dry_friction.size() == 0;
  }
  bool SolveSmall(const IcfModel& m, const double* v_guess, const SolverOptions& o, double* v,
                  SolveStats* st, const double* extrapolated);
  // The whole system's Newton state (§8.2) and the guess's flags (§8.1),
  // one for Solve's loop and SolveSmall: the steps below serve both paths, so
  // they start, test and count alike.
  struct NewtonState {
    bool iterate_all = false;       // one island, extrapolated guess: ≥ 1 iteration
    bool optimal_at_guess = false;  // every island (the system) met criterion 1 at k = 0
    int exact_run = 0;              // trailing exact-Hessian steps of the whole system
    double eta = 1.0;
    double step_prev = 0, step_prev2 = 0;  // δ_{k-1}, δ_{k-2}
  };
  // TagIslands and tol (ScaledTolerance with the islands' own, returned);
  // if tol is finite, also the extrapolated guess's flags (isl_.iterate, or
  // s->iterate_all with one island), vtmp_ = the guess and ls_.alpha = 1.
  double StartSolve(const IcfModel& m, const SolverOptions& o, const double* v_guess,
                    const double* extrapolated, int ni, NewtonState* s);
  // |D ∇ℓ| into *Dg and st->scaled_gradient; false if it or ℓ is not finite.
  bool FiniteGradient(const IcfModel& m, bool per_island, double* Dg, SolveStats* st);
  // Criteria 1 and 2 of §8.2 after the evaluation of iteration k, for the
  // whole system or island by island (IslandsConverged, freezing converged
  // islands); at k = 0 also s->optimal_at_guess and st->islands_iterated.
  bool Converged(int k, double Dg, double tol, int ni, NewtonState* s, int* nfrozen,
                 SolveStats* st);
  // At k = 0, with the direction's ℓ'(0) = d0: a guess that met criterion 1
  // and admits no descent (round-off) is the solution, no island iterated
  // (§8.1). True if so (the caller returns vtmp_).
  bool AcceptGuess(const NewtonState& s, double d0, int ni, SolveStats* st);
  // w = 0 on the frozen islands' dofs.
  void ZeroFrozen(const IcfModel& m, double* w) const;
  // The quadratic step's lengths (§8.9): α_i = 1 where ℓ_i'(0) < 0, else 0.
  void QuadraticStep(int ni, SolveStats* st);
  // v += α w (TakeStep, δ into s), A v (AdvanceProducts), the exact-Hessian
  // runs (`major`: per island majorized in this iteration, or null: none)
  // and the iteration count.
  void FinishIteration(const IcfModel& m, const double* w, int ni, const char* major,
                       NewtonState* s, SolveStats* st);
  double ScaledGradient(const IcfModel& m, bool per_island);
  bool IslandsConverged(int k, int ni, int* nfrozen, int* island_updates);
  double TakeStep(const IcfModel& m, const double* w, bool per_island, int ni);
  int NumIslands(const IcfModel& m) const { return islands_on_ ? std::max(m.num_islands, 1) : 1; }
  // Island of dof i (TagIslands fills dof_island_ once per solve).
  int DofIsland(const IcfModel&, int i) const { return dof_island_[i]; }
  std::vector<int> dof_island_;

  // Per-island line-search state (sized to the island count, grows only).
  struct LineSearchWork {
    std::vector<double> alpha, l, f, df, d0, l0, xl, xh, dx, dxold;
    std::vector<char> active;
    std::vector<char> extend;  // searching past α_max (SolverOptions::extend_slope)
    std::vector<double> l_amax;  // ℓ_i(α_max) of an extended search
  };
  LineSearchWork ls_;
  bool islands_on_ = true;

  // Per-island Newton state (§8.2 applied to each island on its own).
  struct IslandNewton {
    std::vector<double> tol, Dg2, step2, step_prev, step_prev2, eta;
    std::vector<char> frozen;
    std::vector<char> iterate;  // not tested at k = 0 (Solve's `extrapolated`)
    // Majorized G in this iteration (§8.1); trailing run of exact-Hessian steps.
    std::vector<char> major;
    std::vector<int> exact_run;
    std::vector<int> done_at;  // iteration at which the island froze, -1: not yet
  };
  IslandNewton isl_;

  IcfData data_;
  std::unique_ptr<HessianFactor> dense_, sparse_, islands_, pcg_, lowrank_, block_, tree_;
  std::vector<double> scale_, dv_, vtmp_;
  std::vector<double> diag_block_;  // HessianDiagonal: one J_iᵀ G_i J_i block
  bool fresh_ = false;                 // reuse state machine (§8.5)
  bool partial_factor_ = false;        // the kept factorization skipped frozen islands
  // Evaluate forms the line search's per-island sums c_i and ℓ_i(0); the
  // small path turns them off, the general loop on (cenic-math §8.9, "h26b").
  bool line_search_sums_ = true;
  HessianFactor* fresh_factor_ = nullptr;
  HessianFactor* solution_factor_ = nullptr;  // FactorAtSolution's
};

}  // namespace mjcenic::icf
