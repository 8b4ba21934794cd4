// Evaluation of the ICF problem at a velocity (cenic-math.md §3.3) and along
// a direction (§3.4): the model evaluates itself into its data. Everything
// here reads the constant IcfModel and writes only IcfData; the Newton
// iteration that calls it lives in IcfSolver.
#pragma once

#include "mjcenic/icf/icf_data.h"
#include "mjcenic/icf/icf_model.h"

namespace mjcenic::icf {

// Sizes `d` for `m` and tags the islands (cenic-math §8.2 per island): each
// dof's island (d->dof_island), each row's (its first dof's), and
// d->num_islands (1 without islands_on or with < 2 islands of m).
void TagIslands(const IcfModel& m, bool islands_on, IcfData* d);

// ℓ(v), ∇ℓ(v), γ and G of every row at v, and per island i the line
// search's constants at this base point (§3.4, §8.3): c_i = Σ v(½Av − r)
// (d->ls_c) and ℓ_i(0) = c_i + Σ ℓ_c (d->ls_l0). Needs TagIslands.
// frozen (per island, or null): islands whose v has not changed since their
// rows were evaluated; their costs still enter the totals, their gradient
// entries and rows are left as they are (cenic-math §8.9; ignored with one
// island).
// advanced_alpha (per island, or null): d->Av already holds A v
// (AdvanceProducts) and each row's v_c follows from the line search's
// v_c(0) + α_i u (§3.4) without a product with J.
// dual: the contacts' friction blocks use the primal-dual friction duals
// d->friction_dual (cenic-math §8.1.7).
void Evaluate(const IcfModel& m, const double* v, IcfData* d, const char* frozen = nullptr,
              const double* advanced_alpha = nullptr, bool dual = false);

// After v += α_i w on island i: A v += α_i A w (the constraint velocities
// follow in the next Evaluate with advanced_alpha).
void AdvanceProducts(const IcfModel& m, const double* alpha, IcfData* d);

// Sets up the line search along w from the last Evaluate's point (§3.4):
// A w, per island a_i = wᵀAw, b_i = (Av − r)ᵀw (d->ls_a, d->ls_b) and
// ℓ_i'(0) = ∇ℓ_iᵀ w (d->ls_d0); each row's v_c(0) and u = J w. Rows of
// islands marked in `frozen` keep their stored v_c(0) and u (never read).
void PrepareLineSearch(const IcfModel& m, const double* w, IcfData* d,
                       const char* frozen = nullptr);

// ℓ_i(v + α_i w) and its first two derivatives in α_i, for each island i
// with active[i], along the direction of the last PrepareLineSearch.
void EvalAlongLineIslands(const IcfModel& m, const IcfData& d, const double* alpha,
                          const char* active, double* cost, double* d1, double* d2);

// Primal-dual friction (cenic-math §8.1.7): z ← t̂ at the current contact
// velocities (the exact Hessian's dual).
void StartFrictionDual(const IcfModel& m, IcfData* d);
// The duals' Newton update after the step v += α_i w (islands not frozen),
// with α_i capped at alpha_cap (an extended search's α_max, §8.3).
void UpdateFrictionDual(const IcfModel& m, const char* frozen, const double* alpha,
                        double alpha_cap, IcfData* d);

}  // namespace mjcenic::icf
