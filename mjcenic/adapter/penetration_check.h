// Penetration check of error control (docs/cenic-math.md §11.10): the
// largest growth, between a step's start x_t and a later state, of a
// contact's depth over its geom pair's deepest depth at x_t and over the
// depth at x_t of its own material points (the collider reports points it
// picks anew at every query), in units of its tolerance c·max(x_nom, 10⁻³ L),
// and of a joint/tendon limit's violation
// over its violation at x_t, in units of c·10⁻³ (L for lengths, 1 rad for
// angles), or, for a limit violated at x_t by more than the violation
// tolerance (on its spring, §5.2), of c·max(g_ref τ_r² U/L, 10⁻³ U). A limit
// first met inside a step (a ball joint's row, present only once violated, or
// a nonlinear tendon's) is reached too late exactly like a contact.
// Before a step, its sweep limit keeps geoms from passing through each other
// between two queries (SweepLimit).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"

namespace mjcenic::adapter {

class PenetrationCheck {
 public:
  explicit PenetrationCheck(const mjModel* m);
  // A new start build at d's stages (its contacts in `start`): the start
  // depths are rebuilt on the next Ratio; the limit violations and the poses
  // of the geoms in contact are read now.
  void CaptureStart(const mjModel* m, const mjData* d);
  // The growth ratio at the state in d (stages current) against the start;
  // violation_tolerance: δ of the limit spring (IcfParameters).
  double Ratio(const mjModel* m, const mjData* d, const BuildRecords& start,
               MujocoAdapter* builder, double tolerance, double length_scale,
               double violation_tolerance);

  // The positive violations efc_margin − efc_pos of d's joint and tendon
  // limit rows (MuJoCo's rows at d's stages), keyed by type, object and side,
  // sorted by key, into *out.
  static void LimitViolations(const mjModel* m, const mjData* d,
                              std::vector<std::pair<std::uint64_t, double>>* out);
  // A limit's unit: L for a length (slide joint, spatial tendon, fixed
  // tendon over a slide joint), 1 for an angle (hinge, ball, fixed tendon
  // over hinges).
  static double LimitUnit(const mjModel* m, int type, int id, double length_scale);
  // The step h, or less so that no two geoms that may collide and may meet
  // within it pass through each other between a step's two end queries at
  // the speeds of d's state (stages current): a pair whose bounding spheres
  // are closer than their relative travel h·s_ab caps h at the sum of their
  // thicknesses over s_ab (cenic-math §11.10, "Between the queries").
  double SweepLimit(const mjModel* m, const mjData* d, double h);

 private:
  using Keyed = std::vector<std::pair<std::uint64_t, double>>;
  void StartDepths(const BuildRecords& start);
  // The depth at x_t of the material points of contact c (at d's state) of
  // two geoms whose start poses were captured: < 0 separated.
  double StartDepthOfPoints(const mjData* d, const mjContact& c) const;
  Keyed start_depths_, start_limits_, check_limits_;
  // The start poses (xpos, xmat) of the geoms in contact at x_t, valid where
  // pose_stamp_ equals stamp_.
  std::vector<double> start_pose_;
  // Sweep limit: each geom's thickness (smallest extent; +∞ for planes and
  // height fields, 0 if it never collides), and per step its velocity at its
  // centre (ω, v) and the speed bound |v| + |ω| r_bound of its points.
  std::vector<double> thickness_, geom_vel_, geom_speed_;
  // Per body: its collidable geoms' smallest thickness and largest reach
  // |pos| + r_bound from the body's origin; the moving bodies with a finite
  // smallest thickness.
  std::vector<double> body_thin_, body_reach_;
  std::vector<int> sweep_bodies_;
  // Whether some geom may travel farther than its thickness within h (a
  // bound per body: false means no geom does).
  bool AnyGeomFast(const mjModel* m, const mjData* d, double h);
  // Geom g's velocity (ω, v at its centre) into geom_vel_; returns the bound
  // |v| + |ω| r_bound on its points' speed.
  double GeomSpeed(const mjModel* m, const mjData* d, int g);
  std::vector<unsigned> pose_stamp_;
  unsigned stamp_ = 0;
  bool start_depths_valid_ = false;
  bool has_limits_ = false;
};

}  // namespace mjcenic::adapter
