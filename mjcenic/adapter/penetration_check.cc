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

PenetrationCheck::PenetrationCheck(const mjModel* m) {
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
                               MujocoAdapter* builder, double tolerance, double length_scale) {
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
    const double growth = -c.dist - Lookup(start_depths_, PairKey(c.geom[0], c.geom[1]));
    if (!(growth > 0)) continue;
    const double tol = tolerance * std::max(builder->NominalPenetration(m, c), floor);
    if (tol > 0) ratio = std::max(ratio, growth / tol);
  }
  if (!has_limits_) return ratio;
  // Limits: growth of each row's violation over its violation at x_t.
  LimitViolations(m, d, &check_limits_);
  for (const auto& [key, violation] : check_limits_) {
    const double growth = violation - Lookup(start_limits_, key);
    if (!(growth > 0)) continue;
    const int type = static_cast<int>(key >> 62), id = static_cast<int>((key >> 1) & 0x7fffffff);
    const double tol =
        tolerance * kDepthFloor *
        LimitUnit(m, type == 0 ? mjCNSTR_LIMIT_JOINT : mjCNSTR_LIMIT_TENDON, id, length_scale);
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
