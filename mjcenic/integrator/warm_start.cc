#include "mjcenic/integrator/warm_start.h"

#include <algorithm>
#include <cmath>

#include "mjcenic/icf/icf_model.h"

namespace mjcenic {

namespace {
// A change h|a|_M below ε max(1, |D r|) (the requested tolerance, never
// looser than the solver's island tolerance): v_t is (nearly) the solution
// already, keep it.
inline bool NearRest(double aa, double rr, double h, double tolerance) {
  const double tol = tolerance * std::max(1.0, std::sqrt(rr));
  return h * h * aa < tol * tol;
}

// The factor c of an island with a contact, contact-torque or dry-friction
// row, from its M-weighted sums aa = |a|², dd = |a − a_old|² and rr = |D r|²:
// 1 where the acceleration is predictable, 0 near rest.
inline double GuessFactor(double aa, double dd, double rr, double h, double tolerance) {
  double c = dd < aa ? 1.0 : 0.0;  // the acceleration is predictable
  if (NearRest(aa, rr, h, tolerance)) c = 0.0;
  return c;
}

inline int IslandOfDof(const icf::IcfModel& mm, int i) {
  return mm.num_islands ? mm.island_of_clique[mm.clique_of_dof[i]] : 0;
}
}  // namespace

void WarmStart::Configure(int nv) {
  nv_ = nv;
  valid_ = old_valid_ = continues_ = false;
  for (auto* x : {&accel_, &accel_old_, &v_end_}) x->resize(nv);
  const int ni = std::max(nv, 1);  // at most one island per dof
  sums_.resize(3 * ni);
  c_.resize(ni);
  smooth_.resize(ni);
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
  // A problem without smooth rows is piecewise quadratic: from v_t, in the
  // pieces of the last solution, one exact Newton step solves it (§8.1.1).
  if (!(continues_ && old_valid_) || nv_ == 0 || !mm.HasSmoothRows()) {
    std::copy(v_start, v_start + nv_, v_guess);
    std::fill(guess_dir, guess_dir + nv_, 0.0);
    return false;
  }
  const bool one = mm.num_islands <= 1;
  if (one)
    OneIslandFactor(mm, h, tolerance);
  else
    IslandFactors(mm, h, tolerance);
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

void WarmStart::OneIslandFactor(const icf::IcfModel& mm, double h, double tolerance) {
  // IslandFactors for one island (with smooth rows): its sums in registers,
  // the same terms in the same order, no per-island tables.
  double aa = 0.0, dd = 0.0, rr = 0.0;
  const double *Md = mm.M_diag.data(), *r = mm.r.data();
  for (int i = 0; i < nv_; ++i) {
    const double a = accel_[i], o = accel_old_[i], Mi = Md[i];
    aa += Mi * a * a;
    dd += Mi * (a - o) * (a - o);
    rr += r[i] * r[i] / Mi;
  }
  c_[0] = GuessFactor(aa, dd, rr, h, tolerance);
}

void WarmStart::IslandFactors(const icf::IcfModel& mm, double h, double tolerance) {
  // Islands without smooth rows start at v_t (c = 0), as a whole problem of
  // piecewise-quadratic rows does (Propose).
  const int ni = std::max(mm.num_islands, 1);
  double* sums = sums_.data();
  std::fill(sums, sums + 3 * ni, 0.0);
  const double *Md = mm.M_diag.data(), *r = mm.r.data();
  for (int i = 0; i < nv_; ++i) {
    double* s = sums + 3 * IslandOfDof(mm, i);  // aa, dd, rr
    const double a = accel_[i], o = accel_old_[i], Mi = Md[i];
    s[0] += Mi * a * a;
    s[1] += Mi * (a - o) * (a - o);
    s[2] += r[i] * r[i] / Mi;
  }
  mm.MarkSmoothIslands(smooth_.data());
  for (int k = 0; k < ni; ++k) {
    const double* s = sums + 3 * k;
    c_[k] = smooth_[k] ? GuessFactor(s[0], s[1], s[2], h, tolerance) : 0.0;
  }
}

}  // namespace mjcenic
