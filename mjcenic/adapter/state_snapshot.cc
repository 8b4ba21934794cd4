#include "mjcenic/adapter/state_snapshot.h"
#include "mjcenic/icf/short_arrays.h"

#include <algorithm>
#include <cstring>

namespace mjcenic {

namespace {

// The double arrays of the snapshot, in comparison order (qpos first: it is
// what differs after a step).
template <class Fn>
void ForEachArray(const mjModel* m, const mjData* d, bool with_inputs, Fn&& fn) {
  fn(d->qpos, m->nq);
  fn(d->qvel, m->nv);
  fn(d->act, m->na);
  fn(d->mocap_pos, 3 * m->nmocap);
  fn(d->mocap_quat, 4 * m->nmocap);
  if (with_inputs) {
    fn(d->ctrl, m->nu);
    fn(d->qfrc_applied, m->nv);
    fn(d->xfrc_applied, 6 * m->nbody);
  }
}

}  // namespace

void StateSnapshot::Capture(const mjModel* m, const mjData* d, bool options) {
  long n = 0;
  ForEachArray(m, d, with_inputs_, [&](const double*, long k) { n += k; });
  if (static_cast<long>(values_.size()) != n) values_.resize(n);  // the first capture
  double* out = values_.data();
  ForEachArray(m, d, with_inputs_, [&](const double* x, long k) {
    CopyShort(x, k, out);  // (inline: cenic-math §8.9.5)
    out += k;
  });
  if (m->neq > 0 || !eq_active_.empty()) eq_active_.assign(d->eq_active, d->eq_active + m->neq);
  if (options) std::memcpy(&opt_, &m->opt, sizeof(mjOption));
  data_ = d;
  valid_ = true;
}

bool StateSnapshot::Matches(const mjModel* m, const mjData* d) const {
  if (!valid_ || d != data_) return false;
  const double* ref = values_.data();
  bool same = true;
  ForEachArray(m, d, with_inputs_, [&](const double* x, long k) {
    if (same) same = SameBits(x, ref, k);  // (memcmp's equality, inline)
    ref += k;
  });
  return same && (m->neq == 0 || std::memcmp(d->eq_active, eq_active_.data(), m->neq) == 0) &&
         std::memcmp(&m->opt, &opt_, sizeof(mjOption)) == 0;
}

}  // namespace mjcenic
