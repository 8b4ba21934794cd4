#include "mjcenic/icf/linear/linear_solver.h"

#include <algorithm>
#include <memory>
#include <type_traits>

#include "mjcenic/icf/linear/internal.h"

namespace mjcenic::icf {


namespace detail {

bool MassMatrixHasTreeLayout(const IcfModel& m) {
  const int nv = m.nv;
  if (static_cast<int>(m.M_rowadr.size()) != nv || static_cast<int>(m.M_rownnz.size()) != nv)
    return false;
  // M's layout: row i is its parent's row followed by i (the elimination of
  // §8.8 updates the parent rows through that prefix).
  for (int i = 0; i < nv; ++i) {
    const int adr = m.M_rowadr[i], nnz = m.M_rownnz[i];
    if (nnz < 1 || m.M_colind[adr + nnz - 1] != i) return false;
    if (nnz == 1) continue;
    const int p = m.M_colind[adr + nnz - 2];
    if (p >= i || m.M_rownnz[p] != nnz - 1 ||
        !std::equal(m.M_colind.begin() + m.M_rowadr[p],
                    m.M_colind.begin() + m.M_rowadr[p] + nnz - 1, m.M_colind.begin() + adr))
      return false;
  }
  return true;
}

}  // namespace detail

void NoteMassPattern(IcfModel* m) { m->mass_tree_layout = detail::MassMatrixHasTreeLayout(*m); }

bool ConstraintsFollowTree(const IcfModel& m) {
  if (!(m.mass_tree_layout >= 0 ? m.mass_tree_layout == 1 : detail::MassMatrixHasTreeLayout(m)))
    return false;
  // Every constraint's dofs (ascending) are ancestors of its last dof.
  bool ok = true;
  auto check = [&](const auto& pool) {
    for (int c = 0; ok && c < pool.size(); ++c) {
      const auto dofs = pool.rows.dofs(c);
      if (dofs.size() < 2) continue;
      const int last = dofs.back();
      const int* row = m.M_colind.data() + m.M_rowadr[last];
      const int* end = row + m.M_rownnz[last];
      for (int dof : dofs) {
        while (row != end && *row < dof) ++row;
        if (row == end || *row != dof) {
          ok = false;
          break;
        }
      }
    }
  };
  ForEachPool(m, check);
  return ok;
}

LinearSolverKind ChooseLinearSolver(const IcfModel& m, LinearSolverKind requested) {
  if (requested == LinearSolverKind::kTree)
    return ConstraintsFollowTree(m) ? LinearSolverKind::kTree : LinearSolverKind::kDense;
  if (requested != LinearSolverKind::kAuto) return requested;
  if (m.num_islands > 1) {
    if (m.largest_island <= kMaxIslandDofs) return LinearSolverKind::kIslands;
    const int trees = std::max<int>(static_cast<int>(m.clique_start.size()) - 1, 1);
    if (m.nv >= kMinTreeDofsForLargeIslands * trees) {
      // Islands of whole robots (a crowd in contact): dense island blocks
      // cost Σ nᵢ³/3, the Woodbury form Σ n_c³/3 + r³/3 (§8.6); the cheaper.
      const double r = CouplingRank(m, nullptr);
      if (m.clique_cubes + r * r * r < m.island_cubes) return LinearSolverKind::kLowRank;
      if (m.largest_island <= kMaxIslandDofsLargeTrees) return LinearSolverKind::kIslands;
    }
  }
  if (m.nv < 64)
    return ConstraintsFollowTree(m) ? LinearSolverKind::kTree : LinearSolverKind::kDense;
  if (m.largest_island >= kMinPcgDofs) {
    int widest = 0;
    for (size_t c = 0; c + 1 < m.clique_start.size(); ++c)
      widest = std::max(widest, m.clique_start[c + 1] - m.clique_start[c]);
    if (widest <= kMaxPcgCliqueDofs) return LinearSolverKind::kPcg;
  }
  // Fraction of the lower triangle covered by the clique blocks.
  double blocks = 0;
  for (size_t c = 0; c + 1 < m.clique_start.size(); ++c) {
    const double n = m.clique_start[c + 1] - m.clique_start[c];
    blocks += 0.5 * n * (n + 1);
  }
  const double full = 0.5 * m.nv * (m.nv + 1.0);
  if (blocks >= 0.25 * full) return LinearSolverKind::kDense;
  // §8.6–§8.7: rows over three or more trees fill a Cholesky factor, the
  // Woodbury correction takes them at the cost of their rank; couplings of
  // pairs of trees only add edges to the tree graph, which the block
  // Cholesky factorizes with little fill.
  int wide = 0;
  const int rank = CouplingRank(m, &wide);
  if (wide > 0 && rank <= kMaxLowRank && rank <= m.nv) return LinearSolverKind::kLowRank;
  const int trees = static_cast<int>(m.clique_start.size()) - 1;
  int widest = 0;
  for (int c = 0; c < trees; ++c)
    widest = std::max(widest, m.clique_start[c + 1] - m.clique_start[c]);
  if (trees <= kMaxBlockTrees && widest <= kMaxBlockTreeDofs) return LinearSolverKind::kBlock;
  return rank <= kMaxLowRank && rank <= m.nv ? LinearSolverKind::kLowRank
                                             : LinearSolverKind::kSparse;
}

int CouplingRank(const IcfModel& m, int* wide) {
  int rank = 0, w = 0;
  auto count = [&](const auto& pool) {
    constexpr int R = std::remove_cvref_t<decltype(pool.rows)>::rows;
    for (int c = 0; c < pool.size(); ++c) {
      const auto dofs = pool.rows.dofs(c);
      if (dofs.empty()) continue;
      const int first = m.clique_of_dof[dofs.front()], last = m.clique_of_dof[dofs.back()];
      if (first == last) continue;
      rank += R;
      if (wide) {
        for (int dof : dofs) {
          const int q = m.clique_of_dof[dof];
          if (q != first && q != last) {
            ++w;
            break;
          }
        }
      }
    }
  };
  ForEachPool(m, count);
  if (wide) *wide = w;
  return rank;
}

std::unique_ptr<LinearSolver> MakeLinearSolver(LinearSolverKind kind, double pcg_tolerance,
                                                 int pcg_max_iterations) {
  if (kind == LinearSolverKind::kPcg) return detail::MakePcgSolver(pcg_tolerance, pcg_max_iterations);
  if (kind == LinearSolverKind::kSparse) return detail::MakeSparseSolver();
  if (kind == LinearSolverKind::kLowRank) return detail::MakeLowRankSolver();
  if (kind == LinearSolverKind::kBlock) return detail::MakeBlockSolver();
  if (kind == LinearSolverKind::kIslands) return detail::MakeIslandsSolver();
  if (kind == LinearSolverKind::kTree) return detail::MakeTreeSolver();
  return detail::MakeDenseSolver();
}

}  // namespace mjcenic::icf
