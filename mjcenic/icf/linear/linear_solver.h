// The linear solvers of the Newton direction H w = −∇ℓ, one per file in
// icf/linear/: storage and factorization of the ICF Hessian
// H = A + Σ_i J_iᵀ G_i J_i  (cenic-math.md §3.3, §8.4), dense (Eigen), dense
// per island (H is block diagonal over islands, see IcfModel) or sparse
// (SuiteSparse CHOLMOD), block-sparse over the trees (kBlock), tree blocks plus
// a Woodbury correction (kLowRank); or, for one large island of small trees, no
// factorization at all: preconditioned conjugate gradients (kPcg). The sparse pattern is block-structured over
// cliques: a dense lower block per clique plus a dense block for every pair of
// cliques coupled by a constraint. Symbolic analysis is redone only when that
// pattern changes; the pattern keeps couplings that disappeared as long as the
// superset stays small, so contact making/breaking rarely triggers analysis.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <Eigen/Dense>

#include "mjcenic/icf/icf_data.h"
#include "mjcenic/icf/icf_model.h"

namespace mjcenic::icf {

enum class LinearSolverKind { kAuto, kDense, kSparse, kIslands, kPcg, kLowRank, kBlock, kTree };

// Decides kAuto, first row that applies (docs/architecture.md, "The automatic
// linear solver", names the scenes measured for each row):
//   several islands, each ≤ kMaxIslandDofs dofs                → kIslands
//     (humanoid100, 100_humanoids, clutter, mesh_pile, stonehenge, leaves,
//     particle_free2d, Allegro and aloha scenes, slider_crank; an island of
//     > 48 dofs of small trees is factorized by kBlock inside it, §8.7)
//   several islands, trees averaging ≥ kMinTreeDofsForLargeIslands:
//     Σ n_c³ + r³ < Σ nᵢ³ (trees n_c, coupling rows r, islands nᵢ) → kLowRank
//     else each island ≤ kMaxIslandDofsLargeTrees dofs            → kIslands
//     (100_humanoids once its robots pile up, islands of 5–20 humanoids)
//   nv < 64, every constraint on one root-to-leaf chain       → kTree
//     (pendulum, servo_arm, kuka_iiwa_14, shadow hand, unitree_g1, tumbling_box)
//   nv < 64 otherwise                                          → kDense
//     (humanoid, car, box_stack, franka scenes, newton_cradle)
//   an island ≥ kMinPcgDofs dofs, every tree ≤ kMaxPcgCliqueDofs → kPcg
//     (replicate/particle.xml once its 1000 particles form one island)
//   tree blocks ≥ 25 % of the lower triangle                   → kDense
//   a constraint over ≥ 3 trees, coupling rows ≤ min(kMaxLowRank, nv) → kLowRank
//     (replicate/tendon.xml: a tendon over many trees)
//   ≤ kMaxBlockTrees trees of ≤ kMaxBlockTreeDofs dofs          → kBlock
//     (stonehenge, mesh_pile once their stones form one island)
//   coupling rows ≤ min(kMaxLowRank, nv)                        → kLowRank
//   else                                                        → kSparse
//     (replicate/particle.xml while its pile forms: islands of 129–999 dofs)
// A request for kTree falls back to kDense on a problem whose constraints do
// not follow the tree.
// Islands of up to kMaxIslandDofs dofs, or of up to kMaxIslandDofsLargeTrees
// when the trees average at least kMinTreeDofsForLargeIslands dofs (dense
// within themselves): 100_humanoids (27-dof trees, islands ≤ 297 dofs) is 18 %
// faster with dense island blocks than with CHOLMOD, stonehenge (6-dof stones,
// an island of ~250) 1.6× slower. Between islands of large trees and the
// Woodbury form (dense tree blocks, r × r capacitance) the factorizations'
// flop counts decide: islands of 243 dofs coupled by r ≈ 240 rows factorize
// 3× faster by lowrank (docs/architecture.md, "The automatic linear solver").
inline constexpr int kMaxIslandDofs = 128;
inline constexpr int kMaxIslandDofsLargeTrees = 320;
inline constexpr int kMinTreeDofsForLargeIslands = 12;
inline constexpr int kMinPcgDofs = 1000;
inline constexpr int kMaxPcgCliqueDofs = 12;
inline constexpr int kMaxLowRank = 160;
inline constexpr int kMaxBlockTrees = 128;
inline constexpr int kMaxBlockTreeDofs = 12;
LinearSolverKind ChooseLinearSolver(const IcfModel& model, LinearSolverKind requested);
// True when M's rows have the kinematic-tree layout (row i = the row of its
// parent dof plus i) and every constraint's dofs lie on one root-to-leaf chain
// of dofs: then H = A + Σ JᵀGJ has M's sparsity and kTree applies.
bool ConstraintsFollowTree(const IcfModel& model);
// Records in model->mass_tree_layout whether M's pattern (M_rowadr, M_rownnz,
// M_colind, set once per model by the adapter) has the tree layout, so that
// ConstraintsFollowTree does not check it again per solve (cenic-math §8.9).
void NoteMassPattern(IcfModel* model);
// Rows (Σ R_i) of the constraints whose dofs span more than one tree; *wide
// (optional): how many of those constraints span three trees or more.
int CouplingRank(const IcfModel& model, int* wide = nullptr);

class LinearSolver {
 public:
  virtual ~LinearSolver() = default;
  // Prepares the storage for `model` (pattern, sizes). Returns true when the
  // sparsity pattern changed (a new symbolic analysis is needed). A kind may
  // also take A = M + h D + h² K here (lowrank: its tree blocks), so call it
  // again whenever the model or its h changes (every solve does).
  virtual bool Prepare(const IcfModel& model) = 0;
  // H = A + Σ JᵀGJ at the constraint Hessians in `data`, then factorizes.
  // Returns false if H is not numerically positive definite.
  virtual bool AssembleAndFactor(const IcfModel& model, const IcfData& data) = 0;
  // The problem whose H the next Solve() means (iterative kinds multiply by
  // the current H = A + Σ JᵀGJ of `data`; direct kinds ignore it).
  virtual void Bind(const IcfModel& /*model*/, const IcfData& /*data*/) {}
  // x = H⁻¹ b with the last factorization (x may alias b); kPcg: H x = b
  // to the relative residual pcg_tolerance.
  virtual void Solve(const double* b, double* x) = 0;
  // Tolerance and iteration cap of iterative kinds (direct kinds ignore it).
  virtual void SetIterative(double /*tolerance*/, int /*max_iterations*/) {}
  // Islands whose Newton iteration has converged (per island, null: none).
  // Kinds that factorize per island skip their assembly and factorization and
  // return 0 for their part of Solve(); the others ignore it (the solver
  // zeroes a frozen island's direction itself). Returns true if this kind
  // skips work, so that its factorization covers only the unfrozen islands.
  virtual bool SetFrozen(const char* /*frozen_island*/) { return false; }
  // Iterations of the last Solve (iterative kinds; 0 for direct ones).
  virtual int last_iterations() const { return 0; }
  // Dense copy of the last assembled H (tests). Kinds that skip frozen
  // islands (SetFrozen) leave those islands' blocks as the last full
  // assembly had them; the islands kind rebuilds H with the dense kind's
  // routine, so only its solves test its own assembly.
  virtual Eigen::MatrixXd DenseH() const = 0;
  // Identifier of the current pattern (changes when Prepare() returns true).
  std::uint64_t pattern_id() const { return pattern_id_; }
  int analyses() const { return analyses_; }

 protected:
  std::uint64_t pattern_id_ = 0;
  int analyses_ = 0;
  std::vector<double> block_;  // scratch for J_iᵀ G_i J_i
};

// pcg_*: relative residual ‖H x − b‖ ≤ tol ‖b‖ and iteration cap of kPcg.
std::unique_ptr<LinearSolver> MakeLinearSolver(LinearSolverKind kind,
                                                 double pcg_tolerance = 1e-4,
                                                 int pcg_max_iterations = 500);

}  // namespace mjcenic::icf
