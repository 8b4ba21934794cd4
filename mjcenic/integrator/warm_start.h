// Newton's starting velocity of a step's full solve (cenic-math.md §8.1.1–8.1.3), from the history of
// accepted steps' mean accelerations. ℓ is strictly convex, so the guess
// changes the iteration count, never the solution (beyond the solver
// tolerance).
//
// The history: a = (v − v_t)/h of the last accepted step and the v it ended
// with; a_old of the step before it, kept only while the step started where
// the one before ended. The guess, island by island, in every mode, when the
// step starts at the last accepted end velocity and a_old is known, else v_t:
//   v_t + c h a, c from the island's M-weighted sums (GuessFactor): on an
//   island with contact, contact-torque or dry-friction rows c = 1 if
//   |a − a_old|_M < |a|_M, else 0; c = 0 near rest (h |a|_M below the
//   island's tolerance) and on an island of piecewise-quadratic rows only
//   (limits, gains, couplings), which one exact Newton step from v_t solves.
#pragma once

#include <vector>

namespace mjcenic {
namespace icf {
struct IcfModel;
}

class WarmStart {
 public:
  // nv dofs; forgets the history.
  void Configure(int nv);
  // A step begins from v_start: whether it is the end velocity of the last
  // accepted step (then the history applies; read by Propose and Accept).
  void BeginStep(const double* v_start);
  bool continues() const { return continues_; }
  // Whether v is the end velocity of the last accepted step.
  bool EndsAt(const double* v) const;
  // Newton's starting point for the problem mm (time step h) from v_start
  // into v_guess, and guess_dir = v_guess − v_start. Returns whether some
  // island was extrapolated (such an island takes at least one Newton
  // iteration: accepted at k = 0, the guess's error would keep its sign step
  // after step and accumulate).
  bool Propose(const icf::IcfModel& mm, const double* v_start, double h, double tolerance,
               double* v_guess, double* guess_dir);
  // An accepted step of size h from v_start to v_end.
  void Accept(const double* v_start, const double* v_end, double h);

 private:
  // The factor c of each island (c_), for a model with smooth rows.
  void IslandFactors(const icf::IcfModel& mm, double h, double tolerance);
  // IslandFactors for a model of one island (num_islands ≤ 1).
  void OneIslandFactor(const icf::IcfModel& mm, double h, double tolerance);

  int nv_ = 0;
  std::vector<double> accel_, accel_old_, v_end_;
  bool valid_ = false, old_valid_ = false, continues_ = false;
  // Per island k (sized max(nv, 1)): the sums Σ M a², Σ M (a − a_old)²,
  // Σ r²/M at 3k; the factor c (of h a); whether it has smooth rows.
  std::vector<double> sums_, c_;
  std::vector<char> smooth_;
};

}  // namespace mjcenic
