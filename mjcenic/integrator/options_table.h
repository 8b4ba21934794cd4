// The one table of stepper options and statistics. Every front end visits it:
// SetOption/OptionKeys (options.cc, hence the MJCF plugin <config> and the
// CLI's --option), the C API (mjcenic_get_stat, mjcenicStats), the Python
// bindings (option_table(), stats, options), the CLI's JSON and the README
// generator (scripts/gen_readme_tables.py). Adding an option is one line here
// (plus its member in StepperOptions); adding a statistic is one line in
// MJCENIC_STATS (options.h), which also declares the StepperStats member.
//
// MJCENIC_OPTIONS(X): X(key, member of StepperOptions, codec, level, doc). The
// codec (namespace option_codec) parses and formats the value and says what it
// expects; the default shown in the README is the member of a
// default-constructed StepperOptions, formatted by the codec. level: kPublic
// (physics, accuracy, stepping: the README's table, at most 24 rows, each doc
// ≤ 30 words) or kExpert (speed knobs and internals: docs/options.md). Every
// key is settable by name (MJCF <config>, CLI --option, Python) either way.
#pragma once

#include <string>
#include <string_view>

#include "mjcenic/integrator/options.h"

namespace mjcenic {

const char* ToString(LinearSolverKind k);

enum OptionLevel { kPublic, kExpert };

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

// accuracy: in [kMinAccuracy, kMaxAccuracy] (docs/how-it-works.md, "Errors and progress").
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
using LinearSolverName =
    Enum<LinearSolverKind, LinearSolverKind::kAuto, LinearSolverKind::kDense,
         LinearSolverKind::kSparse, LinearSolverKind::kIslands, LinearSolverKind::kPcg,
         LinearSolverKind::kLowRank, LinearSolverKind::kBlock, LinearSolverKind::kTree>;

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
  X(mode, mode, ModeName, kPublic,                                            \
    "`fixed`: one convex solve per step; `cenic`: step doubling with error control; `trapezoid`: second-order variant with error control") \
  X(accuracy, accuracy, AccuracyValue, kPublic,                               \
    "ε_acc: allowed local error per step in the weighted norm (≈ fraction of the model size)") \
  X(max_step, max_step, NonNegative, kPublic,                                 \
    "[s] fixed: the step (0: `opt.timestep`); error control: largest step (0: 0.1 s)") \
  X(initial_step, initial_step, NonNegative, kPublic,                         \
    "[s] first step (0: min(0.1·max_step, opt.timestep)); not above max_step") \
  X(min_step, min_step, NonNegative, kPublic,                                 \
    "[s] a step below max(min_step, 1e-14·max(1,\\|t\\|)) is an error; not above max_step") \
  X(max_steps_per_call, max_steps_per_call, StepCount, kPublic,               \
    "> 0: a `step()`/`advance_to` call errors after this many accepted steps (0: no cap; a call needing over 1e6 largest steps is refused)") \
  X(error_norm, error_norm, ErrorNormName, kPublic,                           \
    "`weighted` (translations / L, rotations in rad), `drake` (raw qpos), `full_state` (adds velocities · 1 s / L), `propagated`, `propagated_modes` (add velocity errors as drift; see docs/options.md)") \
  X(velocity_horizon, velocity_horizon, Positive, kExpert, \
    "τ [s] of `error_norm=propagated`: the longest a velocity error counts as drifting (a free "  \
    "dof's weight; a damped or stiff dof's is ≈ its decay time)") \
  X(error_per_unit_step, error_per_unit_step, NonNegative, kExpert, \
    "[s] T > 0: error per unit step, a step of h may make `accuracy`·h/T of error, so the "      \
    "errors of the steps over T add up to the accuracy (steps ∝ 1/accuracy); 0: per step") \
  X(length_scale, length_scale, LengthScaleValue, kPublic,                    \
    "L [m] of the weighted norm (0: mean `dof_length` of the rotational dofs)") \
  X(error_estimate, error_estimate, ErrorEstimateName, kPublic,               \
    "cenic: `doubling` (two half steps against the full step, 3 solves per attempt) or `embedded` (1 solve per attempt; docs/how-it-works.md, \"Error estimates\")") \
  X(global_accuracy, global_accuracy, Flag, kPublic,                          \
    "cenic: make the end error track the accuracy (docs/how-it-works.md, \"Accuracy: local and global error\"); ≈50× the steps") \
  X(extrapolate, extrapolate, Flag, kExpert, \
    "cenic: propagate x_half + (x_half − x_full) (local Richardson extrapolation, beyond the "    \
    "paper) on steps whose correction is under a quarter of their velocity change (not through " \
    "impacts, limits, saturations or unresolved stiff modes), outside the directions of the "     \
    "equalities and limits that hold the motion (cenic-math §11.1): exact in free fall, global "  \
    "error ∝ accuracy in smooth phases; same estimate (refused in other modes)") \
  X(dense_output, dense_output, Flag, kPublic,                                \
    "error control: a call may end inside an accepted step, its state interpolated, the next call continuing it (docs/python.md, \"Outputs inside a step\"); `false`: land on every target") \
  X(error_control, error_control, Flag, kPublic,                              \
    "false: cenic/trapezoid take every step at `max_step` (convergence studies)") \
  X(adaptive_tolerance, adaptive_tolerance, Flag, kExpert, \
    "Newton tolerance ε = κ·ε_acc (paper §VI-B); off: `solver_tolerance`") \
  X(kappa, kappa, PositiveAtMost<1.0>, kExpert, \
    "κ of the adaptive Newton tolerance (κ·`accuracy` at most 1e-3)") \
  X(controller_mode, controller, ControllerName, kPublic,                     \
    "how a user controller enters the step (docs/python.md, \"User controllers, integrated implicitly\")") \
  X(linear_solver, solver.linear_solver, LinearSolverName, kExpert, \
    "`dense` (Eigen LLT), `sparse` (CHOLMOD), `islands` (one dense LLT per island; an island of "  \
    "> 48 dofs of small trees by `block`), `pcg` (conjugate gradients, symmetric block " \
    "Gauss–Seidel over the trees; no factorization), `lowrank` (dense LLT per tree plus a Woodbury correction " \
    "for the rows coupling trees), `block` (block Cholesky over the graph of coupled trees), "     \
    "`auto` (`islands` when there are several islands of ≤ 128 dofs; when the trees average ≥ 12 "  \
    "dofs, `lowrank` if its factorization (Σ trees³ + coupling rows³) is cheaper than the islands' "  \
    "(Σ islands³), else `islands` up to 320 dofs; else `pcg` when an island has ≥ 1000 dofs and no tree more than "  \
    "12; else, when nv ≥ 64 and the tree blocks cover < 25 % of the matrix: `lowrank` if a "     \
    "constraint spans ≥ 3 trees and the coupling constraints have ≤ min(160, nv) rows, else "     \
    "`block` for ≤ 128 trees of ≤ 12 dofs, else `lowrank` under the same row limit, else "        \
    "`sparse`; else `tree` when nv < 64 and every constraint's dofs lie on one root-to-leaf "    \
    "chain, else `dense`); `tree`: LDLᵀ on the mass matrix's own sparsity, no fill (`dense` on "   \
    "a step where a constraint couples two branches)") \
  X(pcg_tolerance, solver.pcg_tolerance, Positive, kExpert, \
    "`pcg`: relative residual of each Newton direction (inexact Newton; every CG iterate is a "   \
    "descent direction, so the Newton tolerance still decides convergence); in fixed mode the "   \
    "floor, early directions are solved to ≤ 1e-2 while the gradient falls slowly") \
  X(solver_tolerance, solver.tolerance, PositiveAtMost<mjcenic::kMaxNewtonTolerance>, kPublic,                    \
    "Newton tolerance of a fixed step of `opt.timestep`; a shorter step's is smaller in proportion") \
  X(max_iterations, solver.max_iterations, Count, kPublic,                    \
    "Newton iteration cap per convex solve") \
  X(phase_timers, phase_timers, Flag, kExpert, \
    "measure the wall time of each phase (the `time_*` statistics but `time_total`, which is "    \
    "always measured); off: they stay 0, no phase reads the clock and `time_total` uses the "     \
    "CPU's time-stamp counter on x86") \
  X(stiction_tolerance, icf.stiction_tolerance, Positive, kPublic,            \
    "v_s [m/s] of the regularized contact friction") \
  X(frictionloss_regularization, contact.frictionloss_stiction, FrictionlossName, kExpert, \
    "joint/tendon friction loss regularized like MuJoCo's soft row (`mujoco`) or with v_s "       \
    "(`stiction`)") \
  X(stiction_anchors, icf.stiction_anchors, Flag, kPublic,                    \
    "elastic-slip anchor per sticking contact: static friction holds without creep at every step size (docs/how-it-works.md, \"How mjcenic holds grasps\")") \
  X(anchor_eps_cap, icf.anchor_eps_cap, Flag, kExpert, \
    "an anchored (sticking) contact's friction regularization ε stops growing with the step "     \
    "above `opt.timestep` (steps beyond it would otherwise let a load near the friction bound "   \
    "creep ∝ h², cenic-math §4.10); `false`: ε ∝ h at every step (the paper's)") \
  X(transition_width, icf.transition_width, Positive, kExpert, \
    "Δ of the μ_s → μ_d blend") \
  X(speculative_margin, speculative_margin, NonNegative, kPublic,             \
    "> 0 [m]: MuJoCo also reports pairs this far apart, so large steps stop bodies before they cross into contact; costs extra contacts") \
  X(penetration_tolerance, penetration_tolerance, NonNegative, kPublic,       \
    "error control: reject steps whose contacts deepen (or limits overshoot) by more than this many nominal penetrations; size steps so bodies cannot pass through each other (cenic-math §11.10); 0: off") \
  X(sigma_r, icf.sigma_R, NonNegative, kExpert, \
    "σ_R of the friction regularization ε = max(v_s, μ·σ_R·w_t·h·f_n) (0: ε = v_s; the term "     \
    "grows with h and lets tight grasps creep at large steps)") \
  X(contact_stiffness, contact.stiffness, NonNegative, kPublic,               \
    "> 0: use this k [N/m] for every contact instead of the solref mapping") \
  X(contact_dissipation, contact.dissipation, NonNegativeOrAuto, kPublic,     \
    "≥ 0: Hunt–Crossley d [s/m] for every contact (-1: from solref)") \
  X(stiffness_scale, contact.stiffness_scale, Positive, kExpert, \
    "multiplies the mapped stiffness") \
  X(contact_stiffening, contact.stiffening, Flag, kExpert, \
    "deeper contacts follow MuJoCo's nonlinear force–penetration curve (mapping §5.7)") \
  X(contact_deep_separation, contact.deep_separation, Flag, kExpert, \
    "a contact deeper than its nominal penetration is pushed out no slower than under mj_step "  \
    "(Hunt–Crossley d ≤ B/(d(x)·K·x), cenic-math §4.11); off: d from solref at every depth") \
  X(mu_static, contact.mu_static, NonNegative, kPublic,                       \
    "static friction floor: μ_s = max(μ_d·mu_static_ratio, mu_static, per-geom value) (-1: none)") \
  X(mu_static_ratio, contact.mu_static_ratio, AtLeastOne, kPublic,            \
    "μ_s / μ_d for every contact")
// clang-format on

}  // namespace mjcenic
