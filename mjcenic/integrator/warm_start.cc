#include "mjcenic/integrator/warm_start.h"

#include <algorithm>
#include <cmath>

#include "mjcenic/icf/icf_model.h"

namespace mjcenic {

namespace {
// The guess applies with a tight Newton tolerance only (fixed mode's
// default 1e-8): a loose solve would carry the guess's offset into the step.
constexpr double kTightTolerance = 1e-7;

// A change h|a|_M below ε max(1, |D r|) (the requested tolerance, never
// looser than the solver's island tolerance): v_t is (nearly) the solution
// already, keep it.
inline bool NearRest(double aa, double rr, double h, double tolerance) {
  const double tol = tolerance * std::max(1.0, std::sqrt(rr));
  return h * h * aa < tol * tol;
}

// The factor c of one island from its M-weighted sums aa = |a|²,
// dd = |a − a_old|², ao = ⟨a, a_old⟩, oo = |a_old|² and rr = |D r|².
inline double GuessFactor(bool smooth, double aa, double dd, double ao, double oo, double rr,
                          double h, double tolerance) {
  double c;
  if (smooth) {
    c = dd < aa ? 1.0 : 0.0;  // the acceleration is predictable
  } else {
    c = oo > 0 ? std::clamp(ao / oo, -1.0, 1.0) : 0.0;
    if (!(aa - 2 * c * ao + c * c * oo < 0.5 * aa)) c = 0.0;  // |a − c a_old|² ≥ ½|a|²
  }
  if (NearRest(aa, rr, h, tolerance)) c = 0.0;
  return c;
}

inline int IslandOfDof(const icf::IcfModel& mm, int i) {
  return mm.num_islands ? mm.island_of_clique[mm.clique_of_dof[i]] : 0;
}
}  // namespace

void WarmStart::Configure(int nv, bool fixed_steps) {
  nv_ = nv;
  fixed_steps_ = fixed_steps;
  for (auto* x : {&accel_, &accel_old_, &v_end_}) x->resize(nv);
  const int ni = std::max(nv, 1);  // at most one island per dof
  sums_.resize(5 * ni);
  c_.resize(ni);
  smooth_.resize(ni);
  piece_.resize(ni);
}

void WarmStart::BeginStep(const double* v_start) {
  continues_ = valid_ && std::equal(v_end_.begin(), v_end_.end(), v_start);
}

bool WarmStart::EndsAt(const double* v) const {
  return valid_ && std::equal(v_end_.begin(), v_end_.end(), v);
}

void WarmStart::Accept(const double* v_start, const double* v_end, double h) {
  // a_old is the acceleration of the step just before only if this step
  // started where that one ended.
  old_valid_ = continues_;
  std::swap(accel_, accel_old_);
  for (int i = 0; i < nv_; ++i) accel_[i] = (v_end[i] - v_start[i]) / h;
  std::copy(v_end, v_end + nv_, v_end_.begin());
  valid_ = true;
}

bool WarmStart::Propose(const icf::IcfModel& mm, const double* v_start, double h,
                        double tolerance, double* v_guess, double* guess_dir) {
  if (!(fixed_steps_ && tolerance <= kTightTolerance && continues_ && old_valid_) || nv_ == 0) {
    std::copy(v_start, v_start + nv_, v_guess);
    std::fill(guess_dir, guess_dir + nv_, 0.0);
    return false;
  }
  const bool one = mm.num_islands <= 1;
  if (one)
    OneIslandFactor(mm, v_start, h, tolerance, v_guess);
  else
    IslandFactors(mm, v_start, h, tolerance, v_guess);
  bool any = false;
  for (int i = 0; i < nv_; ++i) {
    const int k = one ? 0 : IslandOfDof(mm, i);
    const double c = c_[k];
    any = any || c != 0.0;
    guess_dir[i] = c * h * accel_[i];
    v_guess[i] = v_start[i] + guess_dir[i];
  }
  return any;
}

void WarmStart::OneIslandFactor(const icf::IcfModel& mm, const double* v_start, double h,
                                double tolerance, double* v_guess) {
  // IslandFactors for one island: its sums in registers (the same terms in
  // the same order), no per-island tables, and the pieces compared only
  // when a limit or gain row can change c, stopping at the first change.
  double aa = 0.0, dd = 0.0, ao = 0.0, oo = 0.0, rr = 0.0;
  const double *Md = mm.M_diag.data(), *r = mm.r.data();
  for (int i = 0; i < nv_; ++i) {
    const double a = accel_[i], o = accel_old_[i], Mi = Md[i];
    aa += Mi * a * a;
    dd += Mi * (a - o) * (a - o);
    ao += Mi * a * o;
    oo += Mi * o * o;
    rr += r[i] * r[i] / Mi;
  }
  double* s = sums_.data();
  s[0] = aa, s[1] = dd, s[2] = ao, s[3] = oo, s[4] = rr;
  const bool smooth = mm.HasSmoothRows();
  smooth_[0] = smooth;
  double c = GuessFactor(smooth, aa, dd, ao, oo, rr, h, tolerance);
  if (c != 0.0 && !smooth && (mm.limits.size() > 0 || mm.gains.size() > 0)) {
    for (int i = 0; i < nv_; ++i) v_guess[i] = v_start[i] + c * h * accel_[i];
    if (mm.PieceChanges(v_start, v_guess)) c = 0.0;
  }
  c_[0] = c;
}

void WarmStart::IslandFactors(const icf::IcfModel& mm, const double* v_start, double h,
                              double tolerance, double* v_guess) {
  const int ni = std::max(mm.num_islands, 1);
  double* sums = sums_.data();
  std::fill(sums, sums + 5 * ni, 0.0);
  const double *Md = mm.M_diag.data(), *r = mm.r.data();
  for (int i = 0; i < nv_; ++i) {
    double* s = sums + 5 * IslandOfDof(mm, i);  // aa, dd, ao, oo, rr
    const double a = accel_[i], o = accel_old_[i], Mi = Md[i];
    s[0] += Mi * a * a;
    s[1] += Mi * (a - o) * (a - o);
    s[2] += Mi * a * o;
    s[3] += Mi * o * o;
    s[4] += r[i] * r[i] / Mi;
  }
  // (Without contact, contact-torque or dry-friction rows no island is
  // smooth; the pieces are compared only if some island's c can change.)
  if (mm.HasSmoothRows())
    mm.MarkSmoothIslands(smooth_.data());
  else
    std::fill(smooth_.begin(), smooth_.begin() + ni, 0);
  bool check_pieces = false;
  for (int k = 0; k < ni; ++k) {
    const double* s = sums + 5 * k;
    c_[k] = GuessFactor(smooth_[k], s[0], s[1], s[2], s[3], s[4], h, tolerance);
    check_pieces = check_pieces || (c_[k] != 0.0 && !smooth_[k]);
  }
  if (check_pieces) {
    for (int i = 0; i < nv_; ++i) v_guess[i] = v_start[i] + c_[IslandOfDof(mm, i)] * h * accel_[i];
    mm.MarkPieceChanges(v_start, v_guess, piece_.data());
    for (int k = 0; k < ni; ++k)
      if (!smooth_[k] && piece_[k]) c_[k] = 0.0;
  }
}

}  // namespace mjcenic
