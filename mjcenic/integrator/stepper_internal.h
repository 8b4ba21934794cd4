// Helpers shared by the stepper's source files (stepper.cc,
// stepper_schemes.cc, stepper_outputs.cc); not part of the API.
#pragma once

#include <chrono>
#include <cstdint>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "mjcenic/adapter/constraint_forces.h"
#include "mjcenic/adapter/controller_linearizer.h"
#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/adapter/mujoco_stages.h"
#include "mjcenic/adapter/penetration_check.h"
#include "mjcenic/adapter/stiction_anchors.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/stepper.h"

namespace mjcenic::stepper_internal {

using Clock = std::chrono::steady_clock;
inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The time-stamp counter of time_total (Stepper::StartTicks; cenic-math
// §8.9, "The wall clock of time_total"): a few cycles to read, against
// ~35 ns for each steady-clock read on the shared VM, twice per call.
#if defined(__x86_64__) || defined(__i386__)
inline constexpr bool kHaveTicks = true;
inline std::uint64_t Ticks() { return __rdtsc(); }
#else
inline constexpr bool kHaveTicks = false;
inline std::uint64_t Ticks() { return 0; }
#endif
inline std::int64_t ClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// A phase timer's clock read: the epoch when phase timers are off, so every
// Seconds() of two such reads is 0 without reading the clock.
inline Clock::time_point PhaseNow(bool on) { return on ? Clock::now() : Clock::time_point{}; }

// An error status built out of line: the message's formatting stays out of
// the per-step functions' hot code (docs/cenic-math.md §8.9).
template <class... Args>
[[gnu::cold, gnu::noinline]] absl::Status ErrorStatus(absl::StatusCode code,
                                                      const Args&... args) {
  return absl::Status(code, absl::StrCat(args...));
}

}  // namespace mjcenic::stepper_internal

namespace mjcenic {

// The ICF solver of one stepper and its options: Solve's (solve), and the
// user's settings mapped once (user, ToSolverOptions).
struct Stepper::SolverState {
  icf::IcfSolver solver;
  icf::SolverOptions solve;
  icf::SolverOptions user;
};

// StepperOptions' solver settings as the ICF layer's options (the one place
// that maps them; the fields a user does not set keep icf's defaults).
icf::SolverOptions ToSolverOptions(const SolverSettings& s);

// The adapter side of one stepper (everything that reads or writes MuJoCo's
// data), kept out of the public header.
struct Stepper::Mujoco {
  Mujoco(const mjModel* m, const StepperOptions& o, long* controller_calls)
      : builder(m, o.contact), stages(m, o.speculative_margin),
        controller(m, &stages, controller_calls), depth_check(m) {
    builder.set_phase_timers(o.phase_timers);
  }
  adapter::MujocoAdapter builder;
  adapter::MujocoStages stages;
  adapter::ConstraintForces forces;
  // Where the constraints of model_start_ / model_mid_ came from.
  adapter::BuildRecords records_start, records_mid;
  adapter::StictionAnchors anchors;  // elastic-slip state of sticking contacts
  ControllerLinearizer controller;
  adapter::PenetrationCheck depth_check;  // cenic-math §11.10
};

}  // namespace mjcenic
