// Contact sweeps: a second starting velocity for Newton on islands where
// objects land (cenic-math.md §8.1.4–8.1.5).
//
// An impact is a contact with v_n < v̂ and d (v̂ − v_n) > kImpactSpeed at the
// guess between trees of ≤ kFreeBodyDofs dofs (free bodies, for which diag(A)
// is nearly A): its Hunt–Crossley impulse is dominated by the term quadratic
// in v_n, from which Newton only halves v_n per iteration, while the sweep's
// closed-form normal root lands next to the solution. Candidates: an island of
// ≤ kImpactMaxDofs dofs holding an impact (kImpactSweeps sweeps), and a larger
// island (a pile) once at least kPileImpactShare of its contacts, and at least
// kPileImpactCount of them, are impacts (kPileImpactSweeps sweeps).
// The sweeps are nonlinear Gauss–Seidel over the contacts with A replaced by
// its diagonal, each contact's own normal and friction law solved exactly.
// The caller keeps the sweep guess on an island only where ℓ_i is lower
// there, so the minimizer is the same.
#pragma once

#include <vector>

#include "mjcenic/icf/icf_data.h"
#include "mjcenic/icf/icf_model.h"

namespace mjcenic::icf {

class ContactSweeps {
 public:
  static constexpr int kImpactSweeps = 20;
  static constexpr double kImpactSpeed = 3;
  static constexpr int kImpactMaxDofs = 24;
  static constexpr double kPileImpactShare = 0.03;
  static constexpr int kPileImpactCount = 8;
  static constexpr int kPileImpactSweeps = 8;
  // An island stops sweeping once a sweep changes its impulses by at most
  // this fraction of their size (Σ|Δγ| ≤ ρ Σ|γ|).
  static constexpr double kStop = 1e-3;
  static constexpr int kFreeBodyDofs = 6;

  // Sizes the work (every solve with contacts, so that a rare impact after
  // warm-up allocates nothing).
  void Size(const IcfModel& m, int num_islands);
  // d: evaluated at the guess (island tags, contact velocities). Sets
  // took[i] for the islands with !optimal[i] that are candidates (see the
  // header); returns their number.
  int MarkCandidates(const IcfModel& m, const IcfData& d, const char* optimal, char* took);
  // The sweep guess on the islands marked in `took`, from v_guess (d.Av =
  // A v_guess), into v (other dofs untouched).
  void Sweep(const IcfModel& m, const IcfData& d, const double* v_guess, const char* took,
             double* v);

 private:
  // One contact's normal and friction laws against W (diag model); returns
  // Δγ into dg and updates γ in g.
  void SolveContact(const IcfModel& m, int c, const double* v, double* g, double* dg) const;
  std::vector<double> Ai_, W_, gamma_, change_;
  std::vector<char> active_;
  std::vector<int> dofs_, impacts_, count_;
};

}  // namespace mjcenic::icf
