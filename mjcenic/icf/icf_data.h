// Everything of the ICF problem that changes with v (cenic-math.md §3.3):
// constraint velocities, impulses, constraint Hessians, the cost and its
// gradient; plus the per-direction line-search quantities (§3.4).
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <type_traits>
#include <vector>

#include "mjcenic/icf/icf_model.h"

namespace mjcenic::icf {

template <int kRows>
struct PoolData {
  std::vector<double> vc;     // J v + b          (kRows per constraint)
  std::vector<double> gamma;  // γ                (kRows per constraint)
  std::vector<double> G;      // G                (kRows² per constraint)
  std::vector<double> cost;   // ℓ_i
  std::vector<double> vc_base, u;  // line search: v_c at α=0 and J w
  std::vector<int> island;         // line search: island of each constraint
  void Resize(int n) {
    island.resize(n);
    vc.resize(kRows * n);
    gamma.resize(kRows * n);
    G.resize(kRows * kRows * n);
    cost.resize(n);
    vc_base.resize(kRows * n);
    u.resize(kRows * n);
  }
};

struct IcfData {
  std::vector<double> v;       // current iterate
  std::vector<double> Av;      // A v
  std::vector<double> grad;    // ∇ℓ(v) = A v − r − Σ Jᵀγ
  double cost = 0;             // ℓ(v)
  PoolData<3> contacts, contact_torques;
  PoolData<1> limits, couplings, gains, dry_friction;
  // Islands (TagIslands): each dof's island, and the count used (1 when the
  // solve treats the system as one island).
  std::vector<int> dof_island;
  int num_islands = 1;
  // Line search (§3.4), per island i: ℓ_i(α) = ½ a_i α² + b_i α + c_i + Σ ℓ_c;
  // ℓ_i(0) (ls_l0, Evaluate's) and ℓ_i'(0) (ls_d0, PrepareLineSearch's).
  std::vector<double> w, Aw;
  std::vector<double> ls_a, ls_b, ls_c, ls_l0, ls_d0;
  // Primal-dual friction (cenic-math §8.1.7): each contact's friction dual z (2 values).
  std::vector<double> friction_dual;

  void Resize(const IcfModel& model) {
    const int nv = model.nv;
    const int ni = std::max(model.num_islands, 1);
    // Called once per Evaluate: nothing to do when the shape is unchanged.
    const std::array<int, 8> shape = {nv, ni, model.contacts.size(), model.limits.size(),
                                      model.couplings.size(), model.gains.size(),
                                      model.dry_friction.size(), model.contact_torques.size()};
    if (shape == shape_) return;
    shape_ = shape;
    v.resize(nv);
    Av.resize(nv);
    grad.resize(nv);
    w.resize(nv);
    Aw.resize(nv);
    ls_a.resize(ni);
    ls_b.resize(ni);
    ls_c.resize(ni);
    ls_l0.resize(ni);
    ls_d0.resize(ni);
    dof_island.resize(nv);
    contacts.Resize(model.contacts.size());
    friction_dual.resize(2 * model.contacts.size());
    limits.Resize(model.limits.size());
    couplings.Resize(model.couplings.size());
    gains.Resize(model.gains.size());
    dry_friction.Resize(model.dry_friction.size());
    contact_torques.Resize(model.contact_torques.size());
  }

 private:
  std::array<int, 8> shape_ = {-1, -1, -1, -1, -1, -1, -1, -1};  // of the last Resize
};

// Calls f(pool, pool_data) for every constraint pool of the model (d: the
// data, const or not).
template <class Data, class F>
  requires std::same_as<std::remove_const_t<Data>, IcfData>
void ForEachPool(const IcfModel& m, Data& d, F&& f) {
  f(m.contacts, d.contacts);
  f(m.limits, d.limits);
  f(m.couplings, d.couplings);
  f(m.gains, d.gains);
  f(m.dry_friction, d.dry_friction);
  f(m.contact_torques, d.contact_torques);
}

}  // namespace mjcenic::icf
