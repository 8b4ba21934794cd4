// Stepper options and statistics: one plain struct each, with documented
// defaults. The C API, Python and the CLI expose exactly these.
#pragma once

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/icf/parameters.h"

namespace mjcenic {

enum class Mode {
  kFixed,  // one ICF solve per step of h = max_step (or m->opt.timestep)
};
const char* ToString(Mode mode);

struct StepperOptions {
  Mode mode = Mode::kFixed;
  double max_step = 0;               // [s]; 0 uses m->opt.timestep
  adapter::ContactOptions contact;   // solref/solimp → point contact mapping
  icf::IcfParameters icf;            // v_s, Δ, σ_R, β, h^nr_min
  icf::SolverOptions solver;         // Newton tolerances, reuse, line search, linear solver
};

struct StepperStats {
  long steps = 0;             // accepted steps
  long solves = 0;            // convex solves
  long newton_iterations = 0;
  long factorizations = 0;
  long ls_iterations = 0;
  long geometry_queries = 0;  // MuJoCo position stages run (collision + kinematics)
  double max_penetration = 0; // max(−dist) over active contacts seen [m]
  // Wall time per phase [s].
  double time_geometry = 0;   // kinematics, collision, M, bias forces
  double time_assembly = 0;   // ICF problem build
  double time_solve = 0;      // Newton (factorization + line search)
  double time_total = 0;
};

}  // namespace mjcenic
