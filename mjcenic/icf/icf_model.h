// The ICF convex problem (cenic-math.md §3):
//   ℓ(v) = ½ vᵀ A v − rᵀ v + Σ_i ℓ_i(J_i v),
//   A = M + h D + h² K,   r = (M + h D) v0 + h f.
// M is the mass matrix (with armature), D and K diagonal implicit damping and
// stiffness, f the explicit generalized forces at the linearization point
// (it contains −D v0 and the spring force at q0, so the implicit terms act on
// v and on q0 + h v). The model is built once per geometry query and stays
// constant during a solve; SetTimeStep() re-derives everything that depends on
// h (the full step and the first half step of step doubling share a model).
#pragma once

#include <span>
#include <vector>

#include "mjcenic/icf/parameters.h"
#include "mjcenic/icf/pools.h"

namespace mjcenic::icf {

struct IcfModel {
  int nv = 0;
  // Cliques (kinematic trees): contiguous dof ranges [clique_start[c],
  // clique_start[c+1]). M is block diagonal over cliques.
  std::vector<int> clique_start;
  std::vector<int> clique_of_dof;
  // Islands: cliques joined by constraints (computed by Finalize). A is block
  // diagonal over cliques and every constraint lives inside one island, so ℓ
  // is a sum of independent island costs (the line search takes one step
  // length per island).
  std::vector<int> island_of_clique;
  int num_islands = 0;
  int largest_island = 0;  // dofs of the largest island
  double island_cubes = 0;  // Σ over islands of (dofs)³: 3× the flops of dense island factors
  double clique_cubes = 0;  // Σ over cliques of (dofs)³: the same for dense clique blocks
  // M: symmetric, lower triangle in CSR (columns ascending, diagonal last).
  std::vector<int> M_rowadr, M_rownnz, M_colind;
  std::vector<double> M;
  // Whether M's pattern has the kinematic-tree layout (cenic-math §8.8):
  // -1 unknown (ConstraintsFollowTree checks the pattern), else 0/1 as
  // NoteMassPattern found it when the pattern was set (Reset forgets it).
  int mass_tree_layout = -1;
  std::vector<double> M_diag, D, K, v0, f;
  // The builder's mark of what D and K were last filled from (its damper and
  // spring flags; -1 unknown, as after Reset): they depend on the model
  // only, and are not written again while it is unchanged (cenic-math §8.9).
  int damper_spring_source = -1;
  IcfParameters params;

  ContactPool contacts;
  LimitPool limits;
  CouplingPool couplings;
  GainPool gains;
  DryFrictionPool dry_friction;
  ContactTorquePool contact_torques;  // condim 4/6: torsional and rolling friction

  // Time-step dependent.
  double h = 0;
  std::vector<double> r;

  // Sizes every per-dof array for nv dofs and one clique; clears the pools.
  void Reset(int nv);
  // Evaluates the lagged quantities at v0 (call once v0 and all constraints
  // are set), then SetTimeStep(h).
  void Finalize(double h);
  // Fills island_of_clique / num_islands from the constraints' dofs (Finalize
  // calls it; call again after adding constraints to a finalized model).
  void ComputeIslands();
  // Island of a constraint over `dofs` (0 for a constraint without dofs).
  int IslandOf(std::span<const int> dofs) const {
    return dofs.empty() || num_islands == 0 ? 0 : island_of_clique[clique_of_dof[dofs[0]]];
  }
  void SetTimeStep(double h);
  // Initial guess of a fixed step (cenic-math §8.1.1), per island (num_islands
  // entries, or one): smooth[i] = 1 if island i has a contact, contact-torque
  // or dry-friction row (a cost that is not piecewise quadratic), else 0;
  // HasSmoothRows: the same test for the whole model.
  void MarkSmoothIslands(char* smooth) const;
  bool HasSmoothRows() const {
    return contacts.size() > 0 || contact_torques.size() > 0 || dry_friction.size() > 0;
  }
  // marked[i] = 1 for every dof some row of some pool acts on (others are
  // left as they are): the dofs whose step is not the smooth dynamics alone.
  void MarkRowDofs(char* marked) const;
  // Moves the configuration at which position-dependent terms are linearized
  // by dq (velocity coordinates): contact gaps, limit and coupling residuals,
  // actuator lengths and springs. Call after Finalize(), then SetTimeStep().
  // (Used by the trapezoid variant, whose end configuration is
  // q0 + dq + h v rather than q0 + h v.)
  void ShiftConfiguration(const double* dq);
  // r ← r + p: adds a constant generalized impulse p to the momentum balance
  // A v = r + Σ Jᵀγ, until the next SetTimeStep() recomputes r. (Used by the
  // trapezoid variant to replace M̂ v̂ in r by M̂ v_t + h/2 F_t.)
  void AddImpulse(const double* p);
  double ADiag(int i) const { return M_diag[i] + h * D[i] + h * h * K[i]; }
  // y = A x
  void MultiplyA(const double* x, double* y) const;
  // y = M x
  void MultiplyM(const double* x, double* y) const;
  // Checks sizes, symmetry layout and finiteness; returns an empty string or
  // a description of the first problem found.
  const char* Validate() const;

 private:
  std::vector<int> island_parent_;  // union–find workspace of ComputeIslands
  bool RowsSpanCliques() const;     // some row's dofs lie in two cliques
  int FindIsland(int clique);       // union–find root (path halving)
  void JoinIslands();               // unions over every row spanning cliques
};

// Calls f(pool) for every constraint pool of the model (icf_data.h has the
// form that also passes each pool's data).
template <class F>
void ForEachPool(const IcfModel& m, F&& f) {
  f(m.contacts);
  f(m.limits);
  f(m.couplings);
  f(m.gains);
  f(m.dry_friction);
  f(m.contact_torques);
}

}  // namespace mjcenic::icf
