#include "mjcenic/adapter/stiction_anchors.h"

#include <algorithm>
#include <cmath>

namespace mjcenic::adapter {

namespace {
// x_local = Rᵀ (x − p) for body b (p = 0 for directions).
void ToBody(const mjData* d, int b, const double* x, bool point, double* out) {
  const double* R = d->xmat + 9 * b;
  const double* p = d->xpos + 3 * b;
  double y[3];
  for (int i = 0; i < 3; ++i) y[i] = x[i] - (point ? p[i] : 0.0);
  for (int i = 0; i < 3; ++i) out[i] = R[i] * y[0] + R[3 + i] * y[1] + R[6 + i] * y[2];
}
// mju_dot3's sum, (a₀b₀ + a₁b₁) + a₂b₂, inline (no call into libmujoco per contact).
inline double Dot3(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
void FromBody(const mjData* d, int b, const double* x, double* out) {
  const double* R = d->xmat + 9 * b;
  for (int i = 0; i < 3; ++i) out[i] = R[3 * i] * x[0] + R[3 * i + 1] * x[1] + R[3 * i + 2] * x[2];
}
}  // namespace

const StictionAnchors::Anchor* StictionAnchors::Match(const mjModel* m, const ContactRecord& rec,
                                                      const double* local, size_t hint[2]) const {
  // A tenth of the smaller positive bounding radius (a plane's is 0, a
  // height field's spans the terrain and would match any contact on it).
  const double r0 = m->geom_rbound[rec.geom[0]], r1 = m->geom_rbound[rec.geom[1]];
  const double r = r0 > 0 && r1 > 0 ? std::min(r0, r1) : std::max(r0, r1);
  const double radius = 0.1 * r;
  const Anchor* best = nullptr;
  double best_d2 = radius * radius;
  const uint64_t key = PairKey(rec.geom);
  // The pair's first anchor (lower bound). The contacts of a step mostly come
  // in the anchors' pair order, so the last contact's range start (the same
  // pair) or end (the next pair) usually is it: a position p is the lower
  // bound iff the anchor before it is below the key and the one at it is not
  // (the bound is unique), checked before bisecting (cenic-math §8.9).
  const size_t n = anchors_.size();
  auto is_bound = [&](size_t p) {
    return p <= n && (p == 0 || anchors_[p - 1].pair < key) && (p == n || anchors_[p].pair >= key);
  };
  auto it = is_bound(hint[0])   ? anchors_.begin() + hint[0]
            : is_bound(hint[1]) ? anchors_.begin() + hint[1]
                                : std::lower_bound(anchors_.begin(), anchors_.end(), key,
                                                   [](const Anchor& a, uint64_t k) { return a.pair < k; });
  hint[0] = static_cast<size_t>(it - anchors_.begin());
  for (; it != anchors_.end() && it->pair == key; ++it) {
    const Anchor& a = *it;
    const double dx = a.pos[0] - local[0], dy = a.pos[1] - local[1], dz = a.pos[2] - local[2];
    const double d2 = dx * dx + dy * dy + dz * dz;
    if (d2 <= best_d2) {
      best_d2 = d2;
      best = &a;
    }
  }
  hint[1] = static_cast<size_t>(it - anchors_.begin());
  return best;
}

void StictionAnchors::Apply(const mjModel* m, const mjData* d,
                            const std::vector<ContactRecord>& records, double h_slip,
                            bool advance, const double* v_slip, icf::IcfModel* model) {
  icf::ContactPool& pool = model->contacts;
  // No contact and no anchor: nothing to set, keep or clear (a contact-free
  // scene's step; cenic-math §8.9). last_time_ stays: with no anchor, a
  // time reset has nothing to clear, and the next contacts come at a later
  // state.
  if (pool.size() == 0 && anchors_.empty()) return;
  const icf::IcfParameters& p = model->params;
  if (advance && d->time < last_time_) Clear();  // time reset: a new run
  advance = advance && d->time > last_time_;  // a rebuild at the same state does not advance
  if (advance) {
    last_time_ = d->time;
    next_.clear();
    // One anchor per contact at most. When a step has more contacts than
    // ever before, room for twice as many: steps with more contacts later on
    // do not allocate (docs/architecture.md, "Conventions": no allocation per step after warm-up).
    const size_t n = static_cast<size_t>(pool.size());
    if (next_.capacity() < n) next_.reserve(2 * n);
  }
  if (!advance && anchors_.empty()) return;
  // Anchored contacts' ε uses min(h, h_R) (cenic-math §4.10).
  const double inf = std::numeric_limits<double>::infinity();
  const double cap = p.anchor_eps_cap && m->opt.timestep > 0 ? m->opt.timestep : inf;
  size_t hint[2] = {0, 0};  // Match's last range of anchors
  for (int c = 0; c < pool.size(); ++c) {
    if (!(pool.fn0[c] > 0 && pool.mu_s[c] > 0)) continue;  // not touching, or frictionless
    const ContactRecord& rec = records[c];
    const int body = m->geom_bodyid[rec.geom[0]];
    double local[3];
    ToBody(d, body, rec.pos, true, local);
    const Anchor* a = Match(m, rec, local, hint);
    if (!a && !advance) continue;
    // Anchor β in the contact frame (rows 1, 2 of the frame: the tangents).
    double b1 = 0, b2 = 0;
    if (a) {
      double bw[3];
      FromBody(d, body, a->beta, bw);
      b1 = Dot3(rec.frame + 3, bw);
      b2 = Dot3(rec.frame + 6, bw);
    }
    if (advance && !AdvanceAnchor(d, c, body, rec, local, a != nullptr, v_slip, h_slip, cap,
                                  model, &b1, &b2))
      continue;  // sliding: no anchor
    pool.SetAnchor(c, b1, b2, cap, p);  // b_t = β ε at this step's (capped) ε
  }
  if (advance) {
    std::sort(next_.begin(), next_.end(),  // in place, no allocation
              [](const Anchor& a, const Anchor& b) { return a.pair < b.pair; });
    anchors_.swap(next_);
  }
}

bool StictionAnchors::AdvanceAnchor(const mjData* d, int c, int body, const ContactRecord& rec,
                                    const double local[3], bool matched, const double* v_slip,
                                    double h_slip, double cap, icf::IcfModel* model, double* b1,
                                    double* b2) {
  icf::ContactPool& pool = model->contacts;
  const icf::IcfParameters& p = model->params;
  const double inf = std::numeric_limits<double>::infinity();
  // β += (J v_slip)_t / ε̄, |β| ≤ κ, with ε̄ (§4.6) of the solve that
  // produced v_slip (its step h_slip, not this model's step: with ε ∝ h the
  // iteration would otherwise only halve the slip per step after step
  // doubling's half steps, cenic-math §4.9).
  double vc[3];
  pool.rows.Multiply(c, v_slip, vc);
  // A matched contact was anchored in that solve, so its ε had the cap.
  const double eps = std::max(p.stiction_tolerance,
                              pool.mu[c] * pool.Rt[c] * pool.fn0[c] *
                                  std::min(h_slip, matched ? cap : inf));
  const double slip2 = vc[1] * vc[1] + vc[2] * vc[2];  // |slip|²
  const double reset = kSlidingReset * eps, dead = kSlipDeadband * p.stiction_tolerance;
  if (slip2 > reset * reset) {  // sliding: no anchor
    pool.SetAnchor(c, 0, 0, inf, p);
    return false;
  }
  if (slip2 >= dead * dead) {
    *b1 += vc[1] / eps;
    *b2 += vc[2] / eps;
  }
  if (*b1 * *b1 + *b2 * *b2 > kMaxBias * kMaxBias) {
    const double norm = std::hypot(*b1, *b2);
    *b1 *= kMaxBias / norm;
    *b2 *= kMaxBias / norm;
  }
  Anchor& n = next_.emplace_back();
  n.pair = PairKey(rec.geom);
  std::copy(local, local + 3, n.pos);
  double bw[3];
  for (int i = 0; i < 3; ++i) bw[i] = *b1 * rec.frame[3 + i] + *b2 * rec.frame[6 + i];
  ToBody(d, body, bw, false, n.beta);
  return true;
}

}  // namespace mjcenic::adapter
