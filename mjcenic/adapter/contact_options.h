// How MuJoCo's contact parameters become ICF point contacts: a plain struct
// (no MuJoCo, no Eigen), so that the stepper options can hold it.
#pragma once

namespace mjcenic::adapter {

// How MuJoCo's contact parameters become point-contact stiffness and dissipation.
struct ContactOptions {
  double stiffness = 0;          // > 0: use this k [N/m] for every contact
  double dissipation = -1;       // ≥ 0: use this Hunt–Crossley d [s/m] for every contact
  double stiffness_scale = 1;    // multiplies the mapped k
  bool pyramidal_factor = true;  // include λ of pyramidal cones (matches mj_step's rest penetration)
  double omega_cap_steps = 4;    // contact period ≥ this many model time steps (≤ 0: no cap)
  // Static friction μ_s = mu_static_ratio · μ_d for every contact (μ_d is
  // MuJoCo's friction[0]); a geom can set its own μ_s with the MJCF custom
  // numeric "mjcenic:mu_static:<geom name>". A contact uses the larger μ_s of
  // its two geoms, never below μ_d.
  double mu_static_ratio = 1;
  double mu_static = -1;         // ≥ 0: global μ_s floor for every frictional contact
  // Follow MuJoCo's nonlinear force–penetration curve: a contact deeper than
  // the nominal penetration x* uses MuJoCo's secant stiffness at its current
  // depth (lagged, re-evaluated at every geometry query), so solimp profiles
  // that stiffen with depth (e.g. Newton's cradle) are honoured.
  bool stiffening = true;
  // A contact deeper than its nominal penetration separates no slower than
  // under MuJoCo: its Hunt–Crossley d is at most B/(d(x)·K·x) (solref's
  // B, K and solimp's d at depth x; cenic-math §4.11). Without it a contact
  // pushes out at most at 1/d ≈ g/(2ζω) (a few cm/s) however deep it is.
  bool deep_separation = false;
  // Joint/tendon friction loss regularization: false (default) = MuJoCo's own
  // (the slope of its soft friction-loss row, v_s = F(1−d₀)A/(d₀B) from
  // solreffriction/solimpfriction), true = the global stiction tolerance v_s.
  bool frictionloss_stiction = false;
};

}  // namespace mjcenic::adapter
