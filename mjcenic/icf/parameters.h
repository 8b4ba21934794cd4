// Constants of the ICF model (cenic-math.md §15). One plain struct, documented
// defaults; the integrator exposes it unchanged.
#pragma once

namespace mjcenic::icf {

struct IcfParameters {
  double stiction_tolerance = 1e-4;  // v_s [m/s], §2.3
  double transition_width = 10.0;    // Δ of the μ_s→μ_d blend, §2.3 (P8)
  double sigma_R = 1e-3;             // friction regularization factor σ_R, §4.6
  double beta = 0.1;                 // near-rigid factor β, §3.5
  double h_min_near_rigid = 1e-4;    // h^nr_min [s], §3.5
  // Near-rigid rows violated by more than this (rad or m; e.g. a model whose
  // initial pose lies outside a joint range) recover over the row's own time
  // scale τ_r (MuJoCo's solref) instead of within ~βh̄: a rigid correction of
  // a large violation would inject enormous velocities. Limits: a spring of
  // time constant τ_r beyond it (§5.2); equalities: the blend of §3.5.
  double violation_tolerance = 1e-3;
  // Stiction anchors (adapter/stiction_anchors.h): an elastic-slip bias per
  // sticking contact that removes the creep ε ρ/sqrt(1 − ρ²) of the
  // regularized friction. On by default (its cost on every shared model:
  // docs/how-it-works.md, "How mjcenic holds grasps"); false: the paper's friction law alone.
  bool stiction_anchors = true;
  // An anchored contact's ε stops growing with h above the model's timestep
  // (adapter/stiction_anchors.h, cenic-math §4.10): ε = max(v_s, μ R_t f_n⁰
  // min(h, opt.timestep)). false: ε ∝ h at every step (the paper's §4.6).
  bool anchor_eps_cap = true;
};

}  // namespace mjcenic::icf
