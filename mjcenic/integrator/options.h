// Stepper options and statistics: one plain struct each, with documented
// defaults. The front ends expose them through the table in options_table.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/contact_options.h"
#include "mjcenic/integrator/error_norm.h"
#include "mjcenic/integrator/step_size_controller.h"
#include "mjcenic/icf/parameters.h"

namespace mjcenic {

enum class Mode {
  kFixed,      // one ICF solve per step of h = max_step (or m->opt.timestep), no error control
  kCenic,      // step doubling with error control (cenic-math §11.1): 3 solves per attempt
  kTrapezoid,  // second-order trapezoid variant with error control (§11.8, paper §V-B)
};
// Parses "fixed", "cenic", "trapezoid"; returns false otherwise.
bool ParseMode(const char* s, Mode* mode);
const char* ToString(Mode mode);

// How a user controller (Stepper::SetController) enters the step.
enum class ControllerTreatment {
  kZeroOrderHold,  // called once per Step()/AdvanceTo() call, like mjcb_control
  kExplicit,       // called at the start of every convex solve; its output held during it
  kImplicit,       // linearized per dof by finite differences at each attempt and embedded
                   // as implicit clamped feedback (cenic-math §9, paper §V-C)
};
bool ParseControllerTreatment(const char* s, ControllerTreatment* t);
const char* ToString(ControllerTreatment t);

// How mode cenic estimates the local error of an attempt (cenic-math §11.9).
enum class ErrorEstimate {
  kDoubling,  // two half steps against the full step: 3 solves, 2 geometry queries
  kEmbedded,  // the full step against a second-order companion built from what is at
              // hand (v_t, v̂, the previous step's acceleration): 1 solve, 1 query
};
const char* ToString(ErrorEstimate e);

// The Newton solver settings a user sets (options_table.h); the stepper maps
// them to the ICF layer's icf::SolverOptions in one place (stepper.cc,
// ToSolverOptions); the rest is the solver's own policy (icf_solver.h).
enum class LinearSolverKind { kAuto, kDense, kSparse, kIslands, kPcg, kLowRank, kBlock, kTree };
struct SolverSettings {
  double tolerance = 1e-6;      // Newton tolerance ε_req at h = opt.timestep, ∝ h below (§8.2)
  int max_iterations = 100;     // Newton iteration cap per solve
  LinearSolverKind linear_solver = LinearSolverKind::kAuto;
  double pcg_tolerance = 1e-4;
};

// Progress guarantee (docs/how-it-works.md, "Errors and progress"): documented bounds that
// turn every would-be livelock into a clear error.
//  * accuracy >= kMinAccuracy: the error estimate is the difference of two
//    computed states whose norm-weighted components are O(1); each carries
//    rounding error of a few ε_mach ≈ 2.2e-16 per operation, accumulated
//    over a factorization and a Newton solve (hundreds to thousands of
//    operations per component), so differences below ~1e-12 are round-off,
//    not truncation error, and no step size can certify them.
//  * length_scale 0 (from the model) or >= kMinLengthScale: the weighted norm
//    asks translations to be exact to accuracy·L; at L = 1e-300 that is below
//    the rounding of any position, so error estimates are rounded to 0 and
//    the steps crawl at the size where h²·g vanishes in q's last digit.
//  * no step below max(min_step, kRelativeMinStep·max(1, |t|)) (≈ 45 ulp of t),
//    nor, with error_per_unit_step T > 0, below kMinAccuracy·T/accuracy: the
//    step's own tolerance accuracy·h/T would be below kMinAccuracy.
//  * a given length_scale L: accuracy >= kMinAccuracy·max(1, extent/L).
//  * a Step()/AdvanceTo() that needs more than max_steps_per_call (unset:
//    kMaxStepsAtLargestStep) steps even at the largest step is refused; with
//    max_steps_per_call set, a call also ends after that many accepted steps.
//  * accuracy <= kMaxAccuracy, kappa <= 1, solver_tolerance and the adaptive
//    Newton tolerance κ·accuracy <= kMaxNewtonTolerance: Newton stops when
//    |D∇ℓ| < ε·max(1, |D r|), and the warm start's residual |D h f| of a
//    small, slow model (a pendulum at rest, a box starting to fall) is below
//    0.01 or 0.1: at larger ε it passes with 0 iterations, step after step,
//    and the physics freezes.
// (kRelativeMinStep, kMaxStepsAtLargestStep, kDefaultMaxStep: step_size_controller.h.)
inline constexpr double kMinAccuracy = 1e-12;
inline constexpr double kMaxAccuracy = 1;
inline constexpr double kMaxNewtonTolerance = 1e-3;
inline constexpr double kMinLengthScale = 1e-6;  // [m]

struct StepperOptions {
  Mode mode = Mode::kCenic;          // default: error-controlled step doubling
  double accuracy = 1e-3;            // ε_acc (error-controlled modes), dimensionless
  ErrorEstimate error_estimate = ErrorEstimate::kDoubling;  // cenic: see ErrorEstimate
  bool extrapolate = false;          // cenic: propagate x_half + P(x_half − x_full)
                                     // (local Richardson extrapolation, cenic-math
                                     // §11.1) instead of x_half
  bool global_accuracy = false;      // cenic: the end error should track the accuracy
                                     // (docs/how-it-works.md): sets error_norm = full_state,
                                     // extrapolate = true and, if 0, speculative_margin
                                     // = 0.1 L; the stepper's options() show the result
  bool dense_output = true;          // error control: a Step()/AdvanceTo() whose inputs
                                     // were left as the previous call wrote them may end
                                     // inside an accepted step (state interpolated) and
                                     // the next call continues that step (docs/python.md,
                                     // "Outputs inside a step")
  bool error_control = true;         // false: cenic/trapezoid take every step at max_step
                                     // (fixed-step convergence studies of those schemes)
  double max_step = 0;               // [s]; fixed: the step (0: m->opt.timestep);
                                     //      error control: largest step (0: 0.1 s)
  double initial_step = 0;           // [s]; 0: min(0.1 max_step, m->opt.timestep)
  double min_step = 0;               // [s]; below max(this, 1e-14 max(1,|t|)): error
  long max_steps_per_call = 0;       // > 0: accepted internal steps per Step()/AdvanceTo()
                                     // call, more: error; 0: no cap (tight accuracies
                                     // may need millions). A call that needs more than
                                     // this (0: kMaxStepsAtLargestStep) steps of the
                                     // largest step is refused before it starts.
  ErrorNormKind error_norm = ErrorNormKind::kWeighted;
  double velocity_horizon = 1.0;     // τ [s] of error_norm propagated (cenic-math §11.11)
  double error_per_unit_step = 0;    // T [s] > 0: a step of h is allowed accuracy·h/T
                                     // (error per unit step); 0: accuracy per step
  double length_scale = 0;           // L [m] of the weighted norm; 0: from the model
  StepSizeControl control;           // ρ, growth/shrink limits, dead band, order
  bool adaptive_tolerance = true;    // Newton tolerance ε = κ ε_acc (paper §VI-B)
  ControllerTreatment controller = ControllerTreatment::kImplicit;  // see SetController
  // > 0: MuJoCo's collision detection also reports pairs up to this distance
  // [m] apart (added to every geom's gap on a private model copy), so ICF's
  // speculative contacts can catch objects that would cross into contact
  // within one large step. Costs more contacts. Not compatible with a
  // Python-defined mjcb_contactfilter (it would see the private model).
  double speculative_margin = 0;
  // Error control: largest growth of a contact's penetration over one step
  // (start → midpoint or end), in units of its nominal penetration x_nom
  // (mapping §5.7); a step that exceeds it is rejected and the next step is
  // limited (cenic-math §11.10). 0: off (the paper's configuration).
  double penetration_tolerance = 1;
  double kappa = 1e-3;               // κ
  bool phase_timers = false;         // time_* statistics per phase (time_total always)
  adapter::ContactOptions contact;   // solref/solimp → point contact mapping
  icf::IcfParameters icf;            // v_s, Δ, σ_R, β, h^nr_min
  SolverSettings solver;  // Newton tolerances, reuse, line search, linear solver
};

// The statistics, one line each: X(name, type, doc). StepperStats has one
// member per line; every front end lists them from here (options_table.h).
#define MJCENIC_STATS(X)                                                                   \
  X(steps, long, "accepted (internal) steps")                                              \
  X(rejected_steps, long, "rejected step attempts")                                        \
  X(h_min, double, "smallest accepted step [s]")                                           \
  X(h_median, double, "median accepted step [s] (0.5 %-resolution histogram, no per-step storage)") \
  X(h_max, double, "largest accepted step [s]")                                            \
  X(last_h, double, "last accepted step [s]")                                              \
  X(solves, long, "convex solves")                                                         \
  X(newton_iterations, long, "Newton iterations")                                          \
  X(factorizations, long, "Hessian factorizations")                                        \
  X(ls_iterations, long, "line-search evaluations")                                        \
  X(geometry_queries, long, "MuJoCo position stages run (collision + kinematics)")         \
  X(controller_calls, long, "user controller evaluations (incl. finite differences)")      \
  X(max_penetration, double, "max(−dist) over the active contacts at the trajectory's states (step starts, accepted midpoints, outputs; not rejected attempts) [m]")               \
  X(time_geometry, double, "wall time in kinematics, collision, M, bias forces [s] (with phase_timers)") \
  X(time_assembly, double, "wall time in the ICF problem build [s] (with phase_timers)")   \
  X(time_solve, double, "wall time in Newton (factorization + line search) [s] (with phase_timers)") \
  X(time_total, double, "wall time in the stepper [s]")                                    \
  X(last_error, double, "error estimate of the last accepted step (0 without error control)") \
  X(contacts, long, "active contacts summed over the problem builds (÷ builds: per problem)") \
  X(time_contacts, double, "wall time in the contact mapping, part of time_assembly [s] (with phase_timers)")    \
  X(time_evaluate, double, "wall time in cost/gradient evaluation, part of time_solve [s] (with phase_timers)")  \
  X(time_factorize, double, "wall time in Hessian assembly, factorization and Newton directions, part of time_solve [s] (with phase_timers)") \
  X(time_line_search, double, "wall time in line searches, part of time_solve [s] (with phase_timers)")          \
  X(time_writeback, double, "wall time writing efc_force/contact forces to mjData, part of time_geometry [s] (with phase_timers)") \
  X(island_solves, long, "islands (independent groups of trees) that took at least one Newton iteration, summed over the convex solves") \
  X(island_newton_iterations, long, "Newton iterations summed over each solve's islands, each stopping at its own convergence (÷ island_solves: iterations per island, as MuJoCo's solver_niter counts them; newton_iterations counts the slowest island)")

struct StepperStats {
#define MJCENIC_STATS_MEMBER(name, type, doc) type name = 0;
  MJCENIC_STATS(MJCENIC_STATS_MEMBER)
#undef MJCENIC_STATS_MEMBER
};

// Sets one option from text, as used by the MJCF plugin config, Python
// keyword arguments and the CLI. Keys are listed by OptionKeys() (the order
// of MJCENIC_OPTIONS in options_table.h); an unknown key or a bad value
// (including an empty one) gives an error naming the key.
absl::Status SetOption(StepperOptions* options, std::string_view key, std::string_view value);
const std::vector<std::string>& OptionKeys();

// The options a stepper for m runs with: range checks (an error names the
// bad option), the global_accuracy recipe expanded (docs/how-it-works.md,
// "Accuracy: local and global error": error_norm = full_state, extrapolate = true and, if 0,
// speculative_margin = 0.1 L), and model features the stepper cannot honour
// (history buffers) refused.
absl::StatusOr<StepperOptions> ResolveOptions(const mjModel* m, const StepperOptions& options);

// Consistency of the step bounds (min_step ≤ max_step, initial_step ≤
// max_step, with max_step's default kDefaultMaxStep in error-controlled
// modes); an error names the keys. ResolveOptions calls it.
absl::Status CheckStepBounds(const StepperOptions& options);

}  // namespace mjcenic
