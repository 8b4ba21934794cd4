// Stiction anchors: an elastic-slip state per sticking contact that removes
// the creep of regularized friction (cenic-math §4.9; docs/how-it-works.md,
// "How mjcenic holds grasps").
//
// ICF's friction γ_t = −μ n⁰ v_c,t / sqrt(|v_c,t|² + ε²) (§4.6) needs a slip
// velocity |v_c,t| = ε ρ/sqrt(1 − ρ²) to carry a load at the fraction ρ of its
// friction bound, so a held object creeps at that speed. Each contact here
// carries an anchor β (tangential, in units of its ε): the contact pool
// shifts the friction's argument by b_t = β ε (v_c = J v + b), and β
// integrates the contact's physical slip from one accepted state to the next,
//     β ← clamp(β + (J v̄)_t / ε, |β| ≤ κ),
// v̄ the velocity of the accepted state. In steady sticking β
// converges to ρ/sqrt(1 − ρ²), the same for every step size (ε changes with
// h, β does not), and the physical slip to zero: the friction force is
// unchanged, the creep is gone. With a stiff contact response the update is
// a contraction with factor 1/(1 + W G) ∈ (0, 1) per step (G = μ n⁰/ε the
// friction's sticking stiffness, W the tangential Delassus operator): it
// never overshoots. The clamp bounds the anchor's recoil speed by κ ε and
// lets sliding contacts (|v_t| ≫ ε) slide as before. Each solve stays convex
// (b is a constant shift of v_c); the Newton iteration is unchanged.
//
// Anchors persist across steps by contact identity: same geom pair and
// nearest contact point in the frame of the first geom's body (within a
// tenth of the smaller positive bounding radius of the two geoms, found by
// bisection over the anchors sorted by pair); β is stored in that frame too,
// so a grasp held by a moving, rotating hand keeps its anchors. Unmatched
// contacts start at β = 0; a slip below kSlipDeadband·v_s leaves β as it is
// and a contact sliding faster than kSlidingReset·ε has none.
//
// An anchored contact's ε stops growing with h above the model's timestep
// (ε = max(v_s, μ R_t f_n⁰ min(h, opt.timestep)), option anchor_eps_cap;
// cenic-math §4.10): within a step the anchored friction carries a change of
// load only by slipping at a speed ∝ ε, so with ε ∝ h a load near the friction
// bound that keeps changing creeps ∝ h² at the long steps of dense output.
#pragma once

#include <mujoco/mujoco.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/icf_model.h"

namespace mjcenic::adapter {

class StictionAnchors {
 public:
  // κ: the largest |β| (holds loads up to ρ = κ/sqrt(1 + κ²) = 0.995 of the
  // friction bound without creep).
  static constexpr double kMaxBias = 10.0;
  // A slip below kSlipDeadband·v_s leaves β as it is: once a contact sticks
  // the problem stops changing from step to step (Newton's warm start is
  // then already the solution), at a residual creep below 2e-9 m/s
  // (0.002 µm/s) for the default v_s = 1e-4 m/s.
  static constexpr double kSlipDeadband = 2e-5;
  // A contact sliding faster than kSlidingReset·ε drops its anchor (β = 0):
  // sliding friction is the regularized law's, without a bias. A sticking
  // contact slips below ε ρ/sqrt(1 − ρ²) < ε at the loads an anchor can hold
  // before β settles (ρ < 0.95), so 3ε separates the two.
  static constexpr double kSlidingReset = 3.0;

  void Clear() {
    anchors_.clear();
    next_.clear();
    last_time_ = -std::numeric_limits<double>::infinity();
  }

  // Sets the anchor β of every contact of `model` (built by the
  // adapter from d, with `records`) from the anchors of the last accepted
  // state. With `advance` (d holds a newly accepted state, later than the last
  // one advanced), first integrates each contact's slip (J v_slip)_t into its
  // anchor and keeps the result; an earlier time clears the anchors. v_slip
  // (nv): the state's velocity (the step's end velocity); h_slip: the time
  // step of the solve that produced it (step doubling: the second half step),
  // whose ε the slip is measured in (cenic-math §4.9).
  // Each anchored contact's bias β ε uses the model's ε at its own time step
  // (the model is set to its step already); nothing else of the model changes.
  void Apply(const mjModel* m, const mjData* d, const std::vector<ContactRecord>& records,
             double h_slip, bool advance, const double* v_slip, icf::IcfModel* model);
  // No anchor kept (Apply on a model without contacts then does nothing).
  bool empty() const { return anchors_.empty(); }

 private:
  struct Anchor {
    uint64_t pair;   // PairKey(geom[0], geom[1]) of the contact
    double pos[3];   // contact point in the frame of geom[0]'s body
    double beta[3];  // β in that frame
  };
  static uint64_t PairKey(const int geom[2]) {
    return static_cast<uint64_t>(static_cast<uint32_t>(geom[0])) << 32 |
           static_cast<uint32_t>(geom[1]);
  }
  // hint: the last call's range of anchors (first, past the end); updated.
  // Apply's advance of contact c (body `body`, its point `local` in the
  // body's frame; matched: it had an anchor): β (in *b1, *b2, the tangent
  // components) grown by the slip at v_slip over ε̄ and capped at κ, the new
  // anchor appended to next_. False (and the contact's anchor cleared) if it
  // slides.
  bool AdvanceAnchor(const mjData* d, int c, int body, const ContactRecord& rec,
                     const double local[3], bool matched, const double* v_slip, double h_slip,
                     double cap, icf::IcfModel* model, double* b1, double* b2);
  const Anchor* Match(const mjModel* m, const ContactRecord& rec, const double* local,
                      size_t hint[2]) const;

  std::vector<Anchor> anchors_, next_;  // anchors_ sorted by pair
  double last_time_ = -std::numeric_limits<double>::infinity();
};

}  // namespace mjcenic::adapter
