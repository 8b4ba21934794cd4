#include "mjcenic/adapter/penetration_check.h"

#include <algorithm>

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
  start_limits_.reserve(limit_rows);
  check_limits_.reserve(limit_rows);
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
