#include "mjcenic/adapter/penetration_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mjcenic::adapter {

namespace {
constexpr double kDepthFloor = 1e-3;  // tolerance floor 10⁻³ L (§11.10)

std::uint64_t PairKey(int g1, int g2) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(g1)) << 32) |
         static_cast<std::uint32_t>(g2);
}

// The value kept for key in a sorted list, 0 if absent (binary search).
double Lookup(const std::vector<std::pair<std::uint64_t, double>>& sorted, std::uint64_t key) {
  const auto it = std::lower_bound(
      sorted.begin(), sorted.end(), key,
      [](const std::pair<std::uint64_t, double>& e, std::uint64_t k) { return e.first < k; });
  return it != sorted.end() && it->first == key ? it->second : 0.0;
}
}  // namespace

PenetrationCheck::PenetrationCheck(const mjModel* m)
    : start_pose_(12 * static_cast<size_t>(m->ngeom)), pose_stamp_(m->ngeom, 0) {
  // At most two rows per limited joint or tendon, reserved here (no
  // allocation while stepping).
  int limit_rows = 0;
  for (int j = 0; j < m->njnt; ++j) limit_rows += m->jnt_limited[j] ? 2 : 0;
  for (int t = 0; t < m->ntendon; ++t) limit_rows += m->tendon_limited[t] ? 2 : 0;
  has_limits_ = limit_rows > 0;
  thickness_.assign(m->ngeom, 0.0);
  geom_vel_.assign(6 * static_cast<size_t>(m->ngeom), 0.0);
  geom_speed_.assign(m->ngeom, 0.0);
  for (int g = 0; g < m->ngeom; ++g) {
    if ((m->geom_contype[g] | m->geom_conaffinity[g]) == 0) continue;
    const double* size = m->geom_size + 3 * g;
    const double* half = m->geom_aabb + 6 * g + 3;  // local bounding box
    double w = std::numeric_limits<double>::infinity();  // planes, height fields
    switch (m->geom_type[g]) {
      case mjGEOM_SPHERE:
      case mjGEOM_CAPSULE: w = 2 * size[0]; break;
      case mjGEOM_CYLINDER: w = 2 * std::min(size[0], size[1]); break;
      case mjGEOM_ELLIPSOID:
      case mjGEOM_BOX: w = 2 * std::min({size[0], size[1], size[2]}); break;
      case mjGEOM_MESH:
      case mjGEOM_SDF: w = 2 * std::min({half[0], half[1], half[2]}); break;
      default: break;
    }
    thickness_[g] = w;
  }
  // Per moving body with collidable geoms: the thinnest of them and the
  // farthest reach of their points from the body's origin, |pos| + r_bound
  // (pos is in the body's frame), a hair larger against round-off.
  body_thin_.assign(m->nbody, std::numeric_limits<double>::infinity());
  body_reach_.assign(m->nbody, 0.0);
  for (int g = 0; g < m->ngeom; ++g) {
    const int b = m->geom_bodyid[g];
    if (!(thickness_[g] > 0) || m->body_weldid[b] == 0) continue;
    const double* pos = m->geom_pos + 3 * g;
    const double reach = std::hypot(pos[0], pos[1], pos[2]) + m->geom_rbound[g];
    body_thin_[b] = std::min(body_thin_[b], thickness_[g]);
    body_reach_[b] = std::max(body_reach_[b], reach * (1 + 1e-9));
  }
  // (A body whose geoms are all planes or height fields is never fast.)
  for (int b = 0; b < m->nbody; ++b)
    if (body_thin_[b] < std::numeric_limits<double>::infinity()) sweep_bodies_.push_back(b);
  start_limits_.reserve(limit_rows);
  check_limits_.reserve(limit_rows);
}

namespace {
// Body b's velocity at the world point p into vel = (ω, v(p)): cvel is [ω, v]
// in the world frame with v at its tree's centre of mass c, so
// v(p) = v + ω × (p − c).
void PointVelocity(const mjModel* m, const mjData* d, int b, const double* p, double* vel) {
  const double* cvel = d->cvel + 6 * b;
  const double* c = d->subtree_com + 3 * m->body_rootid[b];
  const double r[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]};
  vel[0] = cvel[0], vel[1] = cvel[1], vel[2] = cvel[2];
  vel[3] = cvel[3] + cvel[1] * r[2] - cvel[2] * r[1];
  vel[4] = cvel[4] + cvel[2] * r[0] - cvel[0] * r[2];
  vel[5] = cvel[5] + cvel[0] * r[1] - cvel[1] * r[0];
}

// The bound |v(p)| + |ω| R on the speed of points within R of p.
double SpeedBound(const double* vel, double R) {
  return std::sqrt(vel[3] * vel[3] + vel[4] * vel[4] + vel[5] * vel[5]) +
         std::sqrt(vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2]) * R;
}
}  // namespace

double PenetrationCheck::GeomSpeed(const mjModel* m, const mjData* d, int g) {
  // At the geom's centre; its points are within r_bound of it.
  double* vel = geom_vel_.data() + 6 * g;
  PointVelocity(m, d, m->geom_bodyid[g], d->geom_xpos + 3 * g, vel);
  return SpeedBound(vel, m->geom_rbound[g]);
}

bool PenetrationCheck::AnyGeomFast(const mjModel* m, const mjData* d, double h) {
  // A body's points within its reach R of its origin x move at most
  // |v(x)| + |ω| R, a bound on each of its geoms' speed: if that travel over
  // h is within its thinnest geom, none of its geoms is fast.
  for (const int b : sweep_bodies_) {
    double vel[6];
    PointVelocity(m, d, b, d->xpos + 3 * b, vel);
    if (!(body_thin_[b] < SpeedBound(vel, body_reach_[b]) * h)) continue;
    // The bound does not clear the body: its geoms one by one, as below.
    for (int g = m->body_geomadr[b]; g < m->body_geomadr[b] + m->body_geomnum[b]; ++g)
      if (thickness_[g] > 0 && thickness_[g] < GeomSpeed(m, d, g) * h) return true;
  }
  return false;
}

double PenetrationCheck::SweepLimit(const mjModel* m, const mjData* d, double h) {
  // No geom travels farther than its thickness (the common case): no pair
  // binds, and the per-geom pass below is skipped.
  if (!AnyGeomFast(m, d, h)) return h;
  const int ng = m->ngeom;
  for (int g = 0; g < ng; ++g) {
    const bool moving = thickness_[g] > 0 && m->body_weldid[m->geom_bodyid[g]] != 0;
    geom_speed_[g] = moving ? GeomSpeed(m, d, g) : 0.0;  // static: 0
  }
  // A pair can pass through each other unseen only if one of them travels
  // farther than its own thickness (w_a + w_b ≥ (s_a + s_b) h otherwise).
  const bool filter_parent = !(m->opt.disableflags & mjDSBL_FILTERPARENT);
  for (int a = 0; a < ng; ++a) {
    const double sa = geom_speed_[a], wa = thickness_[a];
    if (!(wa < sa * h)) continue;
    const int ba = m->body_weldid[m->geom_bodyid[a]];
    const double* va = geom_vel_.data() + 6 * a;
    for (int b = 0; b < ng; ++b) {
      const double wb = thickness_[b];
      if (b == a || !(wb > 0)) continue;
      const double sb = geom_speed_[b];
      if (b < a && thickness_[b] < sb * h) continue;  // the pair was seen from b
      const int bb = m->body_weldid[m->geom_bodyid[b]];
      if (ba == bb) continue;  // rigidly attached
      if (!((m->geom_contype[a] & m->geom_conaffinity[b]) ||
            (m->geom_contype[b] & m->geom_conaffinity[a])))
        continue;
      if (filter_parent && ((ba && m->body_weldid[m->body_parentid[ba]] == bb && bb) ||
                            (bb && m->body_weldid[m->body_parentid[bb]] == ba && ba)))
        continue;  // parent and child (not the world) do not collide
      const double* vb = geom_vel_.data() + 6 * b;
      const double s = std::hypot(va[3] - vb[3], va[4] - vb[4], va[5] - vb[5]) +
                       std::hypot(va[0], va[1], va[2]) * m->geom_rbound[a] +
                       std::hypot(vb[0], vb[1], vb[2]) * m->geom_rbound[b];
      if (!(s * h > wa + wb)) continue;
      const double* xa = d->geom_xpos + 3 * a;
      const double* xb = d->geom_xpos + 3 * b;
      const double gap = std::hypot(xa[0] - xb[0], xa[1] - xb[1], xa[2] - xb[2]) -
                         m->geom_rbound[a] - m->geom_rbound[b];
      if (gap > s * h) continue;  // they cannot meet within h
      h = (wa + wb) / s;
    }
  }
  return h;
}

void PenetrationCheck::CaptureStart(const mjModel* m, const mjData* d) {
  start_depths_valid_ = false;
  if (has_limits_) LimitViolations(m, d, &start_limits_);
  if (++stamp_ == 0) {  // (wrapped: no pose is valid)
    std::fill(pose_stamp_.begin(), pose_stamp_.end(), 0u);
    stamp_ = 1;
  }
  for (int i = 0; i < d->ncon; ++i)
    for (const int g : d->contact[i].geom) {
      if (g < 0 || pose_stamp_[g] == stamp_) continue;
      pose_stamp_[g] = stamp_;
      std::copy(d->geom_xpos + 3 * g, d->geom_xpos + 3 * g + 3, start_pose_.data() + 12 * g);
      std::copy(d->geom_xmat + 9 * g, d->geom_xmat + 9 * g + 9, start_pose_.data() + 12 * g + 3);
    }
}

double PenetrationCheck::StartDepthOfPoints(const mjData* d, const mjContact& c) const {
  // The contact's surface points a (on geom 0) and b (on geom 1), b − a =
  // dist·n, and its normal n, carried with their geoms' rigid motion back to
  // x_t: local = Rᵀ(world − x) at d, world = x⁰ + R⁰ local at x_t (the normal
  // with geom 0); the depth there is −n⁰·(b⁰ − a⁰).
  const int g0 = c.geom[0], g1 = c.geom[1];
  double a[3], b[3], a0[3] = {0, 0, 0}, b0[3] = {0, 0, 0}, n0[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) {
    a[k] = c.pos[k] - 0.5 * c.dist * c.frame[k] - d->geom_xpos[3 * g0 + k];
    b[k] = c.pos[k] + 0.5 * c.dist * c.frame[k] - d->geom_xpos[3 * g1 + k];
  }
  const double* R0 = d->geom_xmat + 9 * g0;
  const double* R1 = d->geom_xmat + 9 * g1;
  const double* P0 = start_pose_.data() + 12 * g0;
  const double* P1 = start_pose_.data() + 12 * g1;
  for (int j = 0; j < 3; ++j) {  // local coordinate j
    const double la = R0[j] * a[0] + R0[3 + j] * a[1] + R0[6 + j] * a[2];
    const double lb = R1[j] * b[0] + R1[3 + j] * b[1] + R1[6 + j] * b[2];
    const double ln = R0[j] * c.frame[0] + R0[3 + j] * c.frame[1] + R0[6 + j] * c.frame[2];
    for (int k = 0; k < 3; ++k) {
      a0[k] += P0[3 + 3 * k + j] * la;
      b0[k] += P1[3 + 3 * k + j] * lb;
      n0[k] += P0[3 + 3 * k + j] * ln;
    }
  }
  double depth = 0;
  for (int k = 0; k < 3; ++k) depth -= n0[k] * ((P1[k] + b0[k]) - (P0[k] + a0[k]));
  return depth;
}

void PenetrationCheck::StartDepths(const BuildRecords& start) {
  // The deepest start depth per geom pair, sorted by pair (built once per
  // start build; a lookup is then a binary search, not a scan).
  start_depths_.clear();
  for (const ContactRecord& r : start.contacts)
    start_depths_.push_back({PairKey(r.geom[0], r.geom[1]), r.depth});
  std::sort(start_depths_.begin(), start_depths_.end());
  size_t n = 0;
  for (const auto& e : start_depths_) {
    if (n > 0 && start_depths_[n - 1].first == e.first)
      start_depths_[n - 1].second = std::max(start_depths_[n - 1].second, e.second);
    else
      start_depths_[n++] = e;
  }
  start_depths_.resize(n);
  start_depths_valid_ = true;
}

double PenetrationCheck::Ratio(const mjModel* m, const mjData* d, const BuildRecords& start,
                               MujocoAdapter* builder, double tolerance, double length_scale,
                               double violation_tolerance) {
  // Contacts: growth over the deepest start depth of the geom pair (0 for a
  // pair not in contact at x_t). Floor: the position resolution of the
  // default accuracy, 10⁻³ L (stiff contacts have x_nom of micrometres and
  // would otherwise force tiny steps).
  const double floor = kDepthFloor * length_scale;
  if (!start_depths_valid_) StartDepths(start);
  double ratio = 0;
  for (int i = 0; i < d->ncon; ++i) {
    const mjContact& c = d->contact[i];
    if (c.exclude != 0 || !(c.dist < 0)) continue;
    double growth = -c.dist - Lookup(start_depths_, PairKey(c.geom[0], c.geom[1]));
    if (!(growth > 0)) continue;
    const double tol = tolerance * std::max(builder->NominalPenetration(m, c), floor);
    if (!(tol > 0) || !(growth > ratio * tol)) continue;
    // A point the pair's start contacts did not report (the collider's
    // multi-point contact picks its points anew at every query) may have been
    // as deep at x_t: the growth is also at most that of its own material
    // points since x_t.
    if (c.geom[0] >= 0 && c.geom[1] >= 0 && pose_stamp_[c.geom[0]] == stamp_ &&
        pose_stamp_[c.geom[1]] == stamp_)
      growth = std::min(growth, -c.dist - std::max(0.0, StartDepthOfPoints(d, c)));
    ratio = std::max(ratio, growth / tol);
  }
  if (!has_limits_) return ratio;
  // Limits: growth of each row's violation over its violation at x_t, in
  // units of 10⁻³ U, or, for a row on its large-violation spring at x_t
  // (violated by more than δ, §5.2), of the spring's own nominal violation
  // g_ref τ_r² (in U: × U/L) where that is larger.
  LimitViolations(m, d, &check_limits_);
  for (const auto& [key, violation] : check_limits_) {
    const double start_violation = Lookup(start_limits_, key);
    const double growth = violation - start_violation;
    if (!(growth > 0)) continue;
    const int type = key >> 62 ? mjCNSTR_LIMIT_TENDON : mjCNSTR_LIMIT_JOINT;
    const int id = static_cast<int>((key >> 1) & 0x7fffffff);
    const double unit = LimitUnit(m, type, id, length_scale);
    double scale = kDepthFloor * unit;
    if (start_violation > violation_tolerance && length_scale > 0)
      scale = std::max(scale, MujocoAdapter::LimitSpringNominal(m, type, id) * unit / length_scale);
    const double tol = tolerance * scale;
    if (tol > 0) ratio = std::max(ratio, growth / tol);
  }
  return ratio;
}

void PenetrationCheck::LimitViolations(const mjModel* m, const mjData* d,
                                       std::vector<std::pair<std::uint64_t, double>>* out) {
  // A row exists once its distance is below its margin; mjcenic's residual is
  // efc_pos − efc_margin (docs/mujoco-mapping.md §6.1). Key: bit 62 the type
  // (0 joint, 1 tendon), bits 1… the object, bit 0 the side (EfcRowSub).
  out->clear();
  RowRecord prev{-1, -1, -1, -1};
  for (int row = 0; row < d->nefc; ++row) {
    const int type = d->efc_type[row];
    if (type != mjCNSTR_LIMIT_JOINT && type != mjCNSTR_LIMIT_TENDON) continue;
    const RowRecord here{type, d->efc_id[row], EfcRowSub(m, d, row, prev), -1};
    prev = here;
    const double violation = d->efc_margin[row] - d->efc_pos[row];
    if (!(violation > 0)) continue;
    const std::uint64_t key = (static_cast<std::uint64_t>(type == mjCNSTR_LIMIT_TENDON) << 62) |
                              (static_cast<std::uint64_t>(here.id) << 1) |
                              static_cast<std::uint64_t>(here.sub & 1);
    out->push_back({key, violation});
  }
  std::sort(out->begin(), out->end());
}

double PenetrationCheck::LimitUnit(const mjModel* m, int type, int id, double L) {
  if (type == mjCNSTR_LIMIT_JOINT) return m->jnt_type[id] == mjJNT_SLIDE ? L : 1.0;
  for (int w = m->tendon_adr[id]; w < m->tendon_adr[id] + m->tendon_num[id]; ++w) {
    if (m->wrap_type[w] != mjWRAP_JOINT) return L;  // spatial
    if (m->jnt_type[m->wrap_objid[w]] == mjJNT_SLIDE) return L;
  }
  return 1.0;
}

}  // namespace mjcenic::adapter
