// The one table of stepper options and statistics. Every front end visits it:
// SetOption/OptionKeys (options.cc, hence the MJCF plugin <config> and the
// CLI's --option), the C API (mjcenic_get_stat, mjcenicStats), the Python
// bindings (option_table(), stats, options), the CLI's JSON and the README
// generator (scripts/gen_readme_tables.py). Adding an option is one line here
// (plus its member in StepperOptions); adding a statistic is one line in
// MJCENIC_STATS (options.h), which also declares the StepperStats member.
//
// MJCENIC_OPTIONS(X): X(key, member of StepperOptions, codec, doc). The codec
// (namespace option_codec) parses and formats the value and says what it
// expects; the default shown in the README is the member of a
// default-constructed StepperOptions, formatted by the codec.
#pragma once

#include <string>
#include <string_view>

#include "mjcenic/integrator/options.h"

namespace mjcenic {

const char* ToString(icf::LineSearchGuess g);
const char* ToString(icf::LinearSolverKind k);

namespace option_codec {

bool ParseReal(std::string_view text, double* x);  // the whole text, finite
std::string FormatReal(double x);                   // shortest text that reads back exactly

// A real number with a lower bound (open if kStrict).
template <double kLo, bool kStrict>
struct Real {
  using Value = double;
  static bool Parse(std::string_view s, double* x) {
    double y;
    if (!ParseReal(s, &y) || (kStrict ? !(y > kLo) : !(y >= kLo))) return false;
    *x = y;
    return true;
  }
  static std::string Format(double x) { return FormatReal(x); }
  static std::string Expect() { return (kStrict ? "> " : ">= ") + FormatReal(kLo); }
};
using Positive = Real<0.0, true>;

// A real number in (0, kHi].
template <double kHi>
struct PositiveAtMost {
  using Value = double;
  static bool Parse(std::string_view s, double* x) {
    double y;
    if (!ParseReal(s, &y) || !(y > 0 && y <= kHi)) return false;
    *x = y;
    return true;
  }
  static std::string Format(double x) { return FormatReal(x); }
  static std::string Expect() { return "> 0 and <= " + FormatReal(kHi); }
};
using NonNegative = Real<0.0, false>;
using AtLeastOne = Real<1.0, false>;

// >= 0, or -1 for "from the MJCF parameters".
struct NonNegativeOrAuto {
  using Value = double;
  static bool Parse(std::string_view s, double* x);
  static std::string Format(double x) { return FormatReal(x); }
  static std::string Expect() { return ">= 0, or -1 for the solref mapping"; }
};

// accuracy: in [kMinAccuracy, kMaxAccuracy] (README, "Errors and progress").
struct AccuracyValue {
  using Value = double;
  static bool Parse(std::string_view s, double* x) {
    return Real<kMinAccuracy, false>::Parse(s, x) && *x <= kMaxAccuracy;
  }
  static std::string Format(double x) { return FormatReal(x); }
  static std::string Expect() {
    return ">= 1e-12 (smaller errors are double round-off) and <= 1 (the model's size)";
  }
};

// length_scale: 0 (from the model) or at least kMinLengthScale [m].
struct LengthScaleValue {
  using Value = double;
  static bool Parse(std::string_view s, double* x);
  static std::string Format(double x) { return FormatReal(x); }
  static std::string Expect() { return "0 (from the model) or >= 1e-6 [m]"; }
};

struct StepCount {  // an integer in [0, 1e15]; 0: no cap
  using Value = long;
  static bool Parse(std::string_view s, long* n);
  static std::string Format(long n) { return std::to_string(n); }
  static std::string Expect() { return "an integer >= 0 (0: no cap)"; }
};

struct SweepCount {  // an integer in [0, 1000]; 0: off
  using Value = int;
  static bool Parse(std::string_view s, int* n);
  static std::string Format(int n) { return std::to_string(n); }
  static std::string Expect() { return "an integer in [0, 1000] (0: off)"; }
};

struct Count {  // an integer in [1, 1e6]
  using Value = int;
  static bool Parse(std::string_view s, int* n);
  static std::string Format(int n) { return std::to_string(n); }
  static std::string Expect() { return "an integer >= 1"; }
};

struct Flag {
  using Value = bool;
  static bool Parse(std::string_view s, bool* b);
  static std::string Format(bool b) { return b ? "true" : "false"; }
  static std::string Expect() { return "true or false"; }
};

// An enumeration whose names are ToString(value) for the listed values.
template <class T, T... kValues>
struct Enum {
  using Value = T;
  static bool Parse(std::string_view s, T* v) {
    for (T x : {kValues...})
      if (s == ToString(x)) {
        *v = x;
        return true;
      }
    return false;
  }
  static std::string Format(T v) { return ToString(v); }
  static std::string Expect() {
    std::string e;
    const T all[] = {kValues...};
    const int n = sizeof...(kValues);
    for (int i = 0; i < n; ++i)
      e += std::string(i == 0 ? "" : (i == n - 1 ? " or " : ", ")) + ToString(all[i]);
    return e;
  }
};
using ModeName = Enum<Mode, Mode::kFixed, Mode::kCenic, Mode::kTrapezoid>;
using ErrorNormName = Enum<ErrorNormKind, ErrorNormKind::kWeighted, ErrorNormKind::kDrake,
                           ErrorNormKind::kFullState, ErrorNormKind::kPropagated,
                           ErrorNormKind::kPropagatedModes>;
using ErrorEstimateName = Enum<ErrorEstimate, ErrorEstimate::kDoubling, ErrorEstimate::kEmbedded>;
using ControllerName =
    Enum<ControllerTreatment, ControllerTreatment::kZeroOrderHold, ControllerTreatment::kExplicit,
         ControllerTreatment::kImplicit>;
using LineSearchGuessName =
    Enum<icf::LineSearchGuess, icf::LineSearchGuess::kCubic, icf::LineSearchGuess::kQuadratic>;
using LinearSolverName =
    Enum<icf::LinearSolverKind, icf::LinearSolverKind::kAuto, icf::LinearSolverKind::kDense,
         icf::LinearSolverKind::kSparse, icf::LinearSolverKind::kIslands,
         icf::LinearSolverKind::kPcg, icf::LinearSolverKind::kLowRank,
         icf::LinearSolverKind::kBlock, icf::LinearSolverKind::kTree>;

// ContactOptions::frictionloss_stiction: "mujoco" (false) or "stiction" (true).
struct FrictionlossName {
  using Value = bool;
  static bool Parse(std::string_view s, bool* b);
  static std::string Format(bool b) { return b ? "stiction" : "mujoco"; }
  static std::string Expect() { return "mujoco or stiction"; }
};

}  // namespace option_codec

// clang-format off
#define MJCENIC_OPTIONS(X)                                                                        \
  X(mode, mode, ModeName,                                                                         \
    "`fixed`: one convex solve per step; `cenic`: step doubling with error control; "             \
    "`trapezoid`: second-order variant with error control")                                       \
  X(accuracy, accuracy, AccuracyValue,                                                                 \
    "ε_acc: allowed local error per step in the weighted norm below (≈ fraction of the model size)") \
  X(max_step, max_step, NonNegative,                                                              \
    "[s] fixed: the step (0: `opt.timestep`); error control: largest step (0: 0.1 s)")            \
  X(initial_step, initial_step, NonNegative,                                                      \
    "[s] first step (0: min(0.1·max_step, opt.timestep)); not above max_step (or its 0.1 s default)")                                        \
  X(min_step, min_step, NonNegative,                                                              \
    "[s] below max(min_step, 1e-14·max(1,\\|t\\|)) the step errors out; not above max_step "    \
    "(or its 0.1 s default)")                           \
  X(max_steps_per_call, max_steps_per_call, StepCount,                                            \
    "> 0: a `step()`/`advance_to` call errors after this many accepted steps (0: no cap); a call " \
    "needing more than this (0: 1e6) steps of the largest step is refused before it starts")      \
  X(error_norm, error_norm, ErrorNormName,                                                        \
    "`weighted` (translations / L, rotations in rad), `drake` (raw qpos, Drake's), "              \
    "`full_state` (adds velocities · 1 s / L; used by `global_accuracy`), `propagated` (adds "   \
    "each velocity error times the time it keeps moving the dof under the step's own damping, "  \
    "at most `velocity_horizon`, per dof from the diagonals of H and M), `propagated_modes` "      \
    "(the same through the coupled step: H⁻¹M applied twice, one extra factorization per "        \
    "attempt; see \"What each ingredient buys\")")                              \
  X(velocity_horizon, velocity_horizon, Positive,                                                 \
    "τ [s] of `error_norm=propagated`: the longest a velocity error counts as drifting (a free "  \
    "dof's weight; a damped or stiff dof's is ≈ its decay time)")                                  \
  X(error_per_unit_step, error_per_unit_step, NonNegative,                                       \
    "[s] T > 0: error per unit step, a step of h may make `accuracy`·h/T of error, so the "      \
    "errors of the steps over T add up to the accuracy (steps ∝ 1/accuracy); 0: per step")       \
  X(length_scale, length_scale, LengthScaleValue,                                                      \
    "L [m] of the weighted norm (0: mean `dof_length` of the rotational dofs)")                   \
  X(error_estimate, error_estimate, ErrorEstimateName,                                            \
    "cenic: `doubling` (two half steps against the full step, 3 solves per attempt) or "         \
    "`embedded` (the full step against a second-order companion from v_t, v̂ and the previous "   \
    "step's acceleration: 1 solve, 1 geometry query per attempt; see \"Error estimates\")")      \
  X(global_accuracy, global_accuracy, Flag,                                                       \
    "cenic: make the end error track the accuracy (see \"Accuracy: local and global error\"): "   \
    "sets `error_norm=full_state`, `extrapolate=true` (doubling only) and, if 0, `speculative_margin` = 0.1·L; "  \
    "≈50× the steps")                                                                              \
  X(extrapolate, extrapolate, Flag,                                                               \
    "cenic: propagate 2·x_half − x_full (local Richardson extrapolation, beyond the paper): "      \
    "exact in free fall, global error ∝ accuracy in smooth phases; same steps (refused in other " \
    "modes)")                                                                                      \
  X(dense_output, dense_output, Flag,                                                             \
    "error control: when a call finds the state and inputs as the previous call left them, its "  \
    "last step is not shortened to land on the target; the state there is interpolated inside "   \
    "the accepted step and the next call continues it (see \"Outputs inside a step\"; `false`: "   \
    "every call lands on its target, capping the step at the call interval)")                     \
  X(error_control, error_control, Flag,                                                           \
    "false: cenic/trapezoid take every step at `max_step` (convergence studies)")                 \
  X(adaptive_tolerance, adaptive_tolerance, Flag,                                                 \
    "Newton tolerance ε = κ·ε_acc (paper §VI-B); off: `solver_tolerance`")                        \
  X(kappa, kappa, PositiveAtMost<1.0>,                                                           \
    "κ of the adaptive Newton tolerance (κ·`accuracy` at most 1e-3)")                                 \
  X(controller_mode, controller, ControllerName,                                                  \
    "how a user controller enters the step (see \"User controllers\")")                           \
  X(hessian_reuse, solver.hessian_reuse, Flag,                                                    \
    "reuse factorizations across iterations/solves/steps with the θ-test (P35)")                  \
  X(period2_guess, period2_guess, Flag,                                                         \
    "fixed mode: a one-island scene with contacts whose accelerations alternate from step to "    \
    "step (period-2 chatter, e.g. a foot wedged in a height field) starts Newton at v_t + h·a_old, " \
    "the velocity change of the step before last; with several islands, an island with contacts " \
    "whose accelerations repeat every second step up to a factor q (a ≈ q·a_older: an object "  \
    "chattering in a hand) starts at v_t + q·h·a_old (see docs/cenic-math.md §8.1, "            \
    "\"Period-2 guess\", \"Lag-2 guess\")")                                                     \
  X(pull_back_guess, solver.pull_back_guess, Flag,                                              \
    "fixed mode: Newton starts at (a cubic estimate of) the line minimum of the cost along the "  \
    "warm start v_t + h·a_prev where the warm start overshoots it more than twice (fewer Newton " \
    "iterations on flowing piles; wall time mixed, see docs/cenic-math.md §8.1)")                 \
  X(guess_sweeps, solver.guess_sweeps, SweepCount,                                              \
    "fixed mode: Gauss–Seidel sweeps over the contacts that build a second initial guess; an "    \
    "island not optimal at the usual guess whose dofs needed ≥ 6 Newton iterations last time "    \
    "starts from whichever has the lower cost (fewer "                                            \
    "Newton iterations on piles; wall time mixed, see docs/cenic-math.md §8.1, \"Contact "        \
    "sweeps\"); 0: off")                                                                           \
  X(impact_sweeps, solver.impact_sweeps, SweepCount,                                            \
    "fixed mode: the contact sweeps of guess_sweeps on small islands of free bodies with an "     \
    "impact at the usual guess, and (8 sweeps) on a larger island when ≥ 3 % of its contacts "   \
    "are such impacts (fewer Newton iterations where falling objects land, see "                  \
    "docs/cenic-math.md §8.1, \"Impact sweeps\", \"Pile impacts\"); 0: off")                     \
  X(articulated_sweeps, solver.articulated_sweeps, SweepCount,                                  \
    "fixed mode: the contact sweeps with the trees' real A (one dense Cholesky per tree of ≤ 64 "   \
    "dofs) on islands with an articulated tree whose dofs needed ≥ 6 Newton iterations last time " \
    "(see docs/cenic-math.md §8.1, \"h24c\"); 0: off")                                             \
  X(island_line_search, solver.island_line_search, Flag,                                          \
    "one exact line search per island (trees joined by constraints) instead of one step length "  \
    "for the whole system")                                                                        \
  X(line_search_guess, solver.line_search_guess, LineSearchGuessName,                             \
    "`cubic` (paper) or `quadratic` (SAP) initial guess")                                         \
  X(linear_solver, solver.linear_solver, LinearSolverName,                                        \
    "`dense` (Eigen LLT), `sparse` (CHOLMOD), `islands` (one dense LLT per island; an island of "  \
    "> 48 dofs of small trees by `block`), `pcg` (conjugate gradients, symmetric block " \
    "Gauss–Seidel over the trees; no factorization), `lowrank` (dense LLT per tree plus a Woodbury correction " \
    "for the rows coupling trees), `block` (block Cholesky over the graph of coupled trees), "     \
    "`auto` (`islands` when there are several islands of ≤ 128 dofs, or ≤ 320 dofs when the "    \
    "trees average ≥ 12 dofs; else `pcg` when an island has ≥ 1000 dofs and no tree more than "  \
    "12; else, when nv ≥ 64 and the tree blocks cover < 25 % of the matrix: `lowrank` if a "     \
    "constraint spans ≥ 3 trees and the coupling constraints have ≤ min(160, nv) rows, else "     \
    "`block` for ≤ 128 trees of ≤ 12 dofs, else `lowrank` under the same row limit, else "        \
    "`sparse`; else `tree` when nv < 64 and every constraint's dofs lie on one root-to-leaf "    \
    "chain, else `dense`); `tree`: LDLᵀ on the mass matrix's own sparsity, no fill (`dense` on "   \
    "a step where a constraint couples two branches)")                                                                       \
  X(pcg_tolerance, solver.pcg_tolerance, Positive,                                                \
    "`pcg`: relative residual of each Newton direction (inexact Newton; every CG iterate is a "   \
    "descent direction, so the Newton tolerance still decides convergence); in fixed mode the "   \
    "floor, early directions are solved to ≤ 1e-2 while the gradient falls slowly")               \
  X(solver_tolerance, solver.tolerance, PositiveAtMost<mjcenic::kMaxNewtonTolerance>,           \
    "Newton tolerance (fixed mode)")                \
  X(max_iterations, solver.max_iterations, Count, "Newton iteration cap per convex solve")        \
  X(phase_timers, phase_timers, Flag,                                                             \
    "measure the wall time of each phase (the `time_*` statistics but `time_total`, which is "    \
    "always measured); off: they stay 0, no phase reads the clock and `time_total` uses the "     \
    "CPU's time-stamp counter on x86")                                                             \
  X(stiction_tolerance, icf.stiction_tolerance, Positive,                                         \
    "v_s [m/s] of the regularized contact friction")                                              \
  X(frictionloss_regularization, contact.frictionloss_stiction, FrictionlossName,                 \
    "joint/tendon friction loss regularized like MuJoCo's soft row (`mujoco`) or with v_s "       \
    "(`stiction`)")                                                                                \
  X(stiction_anchors, icf.stiction_anchors, Flag,                                                \
    "elastic-slip anchor per sticking contact: static friction holds without the creep "          \
    "ε·ρ/√(1−ρ²) of the regularized law, at every step size (see \"How mjcenic holds grasps\"; " \
    "`false`: the paper's friction law alone)")                                                    \
  X(anchor_eps_cap, icf.anchor_eps_cap, Flag,                                                    \
    "an anchored (sticking) contact's friction regularization ε stops growing with the step "     \
    "above `opt.timestep` (steps beyond it would otherwise let a load near the friction bound "   \
    "creep ∝ h², cenic-math §4.10); `false`: ε ∝ h at every step (the paper's)")                 \
  X(transition_width, icf.transition_width, Positive, "Δ of the μ_s → μ_d blend")                 \
  X(speculative_margin, speculative_margin, NonNegative,                                          \
    "> 0 [m]: MuJoCo also reports pairs this far apart (gaps widened on a private model copy), "  \
    "so ICF's speculative contacts stop bodies that would cross into contact within one large "   \
    "step; costs extra contacts; not with a Python `mjcb_contactfilter`")                         \
  X(penetration_tolerance, penetration_tolerance, NonNegative,                                    \
    "error control: a step is rejected (and the next one limited) when a contact at its midpoint " \
    "or end is deeper than at its start by more than this many times the contact's nominal "     \
    "penetration x_nom = m_c·g/k, at least 1e-3·L, or a joint/tendon limit is violated by more "  \
    "than this many times 1e-3·L (lengths) or 1e-3 rad (angles) beyond its start violation "       \
    "(cenic-math §11.10; stops sinking and limit overshoot at loose accuracies and long steps); " \
    "0: off "                                                                                      \
    "(the paper's configuration)")                                                                 \
  X(sigma_r, icf.sigma_R, NonNegative,                                                            \
    "σ_R of the friction regularization ε = max(v_s, μ·σ_R·w_t·h·f_n) (0: ε = v_s; the term "     \
    "grows with h and lets tight grasps creep at large steps)")                                   \
  X(contact_stiffness, contact.stiffness, NonNegative,                                            \
    "> 0: use this k [N/m] for every contact instead of the solref mapping")                      \
  X(contact_dissipation, contact.dissipation, NonNegativeOrAuto,                                  \
    "≥ 0: Hunt–Crossley d [s/m] for every contact (-1: from solref)")                             \
  X(stiffness_scale, contact.stiffness_scale, Positive, "multiplies the mapped stiffness")        \
  X(contact_stiffening, contact.stiffening, Flag,                                                 \
    "deeper contacts follow MuJoCo's nonlinear force–penetration curve (see the mapping)")        \
  X(contact_deep_separation, contact.deep_separation, Flag,                                       \
    "a contact deeper than its nominal penetration is pushed out no slower than under mj_step "  \
    "(Hunt–Crossley d ≤ B/(d(x)·K·x), cenic-math §4.11); off: d from solref at every depth")     \
  X(mu_static, contact.mu_static, NonNegative,                                                    \
    "static friction floor: μ_s = max(μ_d·mu_static_ratio, mu_static, per-geom value) (-1: none)") \
  X(mu_static_ratio, contact.mu_static_ratio, AtLeastOne, "μ_s / μ_d for every contact")
// clang-format on

}  // namespace mjcenic
