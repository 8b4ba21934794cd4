// The islands linear solver of the ICF Hessian (see linear_solver.h).
#include "mjcenic/icf/linear/internal.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace mjcenic::icf::detail {

namespace {

// ---------------------------------------------------------------- islands --

// One dense lower-triangular block per island, factorized in place; for many
// small independent systems (a hundred robots, piles of separate objects)
// this costs Σ nᵢ³/3 and no sparse bookkeeping. When an island grows large
// and its trees are small, the whole system goes through BlockSolver.
class IslandsSolver final : public LinearSolver {
 public:
  bool Prepare(const IcfModel& model) override {
    // An island of many small trees: block elimination over the tree graph
    // (§8.7) instead of its dense n³/3 (a settled pile of free bodies is one
    // or two islands of ~100 dofs whose coupling graph is sparse).
    const bool by_block = UseBlock(model);
    if (by_block) {
      const bool changed = graph_->Prepare(model) || !by_block_;
      by_block_ = true;
      last_island_.clear();  // back to dense blocks: a new partition
      if (changed) ++pattern_id_, ++analyses_;
      return changed;
    }
    // The same partition as the last Prepare (the usual case from one step
    // to the next): every array below would come out the same.
    if (!by_block_ && !island_.empty() && model.nv == static_cast<int>(island_.size()) &&
        model.num_islands == seen_num_islands_ && model.island_of_clique == seen_island_of_clique_ &&
        model.clique_of_dof == seen_clique_of_dof_)
      return false;
    seen_num_islands_ = model.num_islands;
    seen_island_of_clique_ = model.island_of_clique;
    seen_clique_of_dof_ = model.clique_of_dof;
    const bool left_block = by_block_;
    by_block_ = false;
    const int nv = model.nv;
    const int ni = std::max(model.num_islands, 1);
    island_.resize(nv);
    local_.resize(nv);
    size_.assign(ni, 0);
    for (int i = 0; i < nv; ++i) {
      const int isl = model.num_islands ? model.island_of_clique[model.clique_of_dof[i]] : 0;
      island_[i] = isl;
      local_[i] = size_[isl]++;
    }
    // Islands factorized by the column Cholesky hold their dofs in reverse
    // order, leaves first (as the dense kind, cenic-math §8.4), so that it
    // skips the zeros of their trees; smaller ones keep dof order.
    for (int i = 0; i < nv; ++i)
      if (size_[island_[i]] >= kMinColumnCholeskyDofs) local_[i] = size_[island_[i]] - 1 - local_[i];
    offset_.resize(ni + 1);
    start_.resize(ni + 1);
    offset_[0] = start_[0] = 0;
    for (int k = 0; k < ni; ++k) {
      offset_[k + 1] = offset_[k] + static_cast<size_t>(size_[k]) * size_[k];
      start_[k + 1] = start_[k] + size_[k];
    }
    // Dofs gathered island by island (position start_[isl] + local).
    order_.resize(nv);
    for (int i = 0; i < nv; ++i) order_[start_[island_[i]] + local_[i]] = i;
    // Column j of its island's block starts at col_[j]; every term (i, j)
    // of H has i and j in the same island, so it lands at col_[j] + local_[i]
    // (col_[i] + local_[j] in a reversed island).
    col_.resize(nv);
    for (int j = 0; j < nv; ++j)
      col_[j] = offset_[island_[j]] + static_cast<size_t>(local_[j]) * size_[island_[j]];
    if (L_.size() < offset_[ni]) L_.resize(offset_[ni]);
    x_.resize(nv);
    dinv_.resize(nv);
    const bool changed = island_ != last_island_ || left_block;
    if (changed) {
      last_island_ = island_;
      ++pattern_id_;
      ++analyses_;
    }
    return changed;
  }
  bool SetFrozen(const char* frozen) override {
    frozen_ = frozen;
    graph_->SetFrozen(frozen);  // the block factorization skips them too
    return frozen != nullptr;
  }
  bool AssembleAndFactor(const IcfModel& model, const IcfData& data) override {
    if (by_block_) return graph_->AssembleAndFactor(model, data);
    const int ni = static_cast<int>(size_.size());
    // (The flags and the dof → island table through locals: GCC re-read the
    // members at every test; cenic-math §8.9.)
    const char* const frozen_flags = frozen_;
    const int* const island_of = island_.data();
    auto frozen = [frozen_flags](int k) { return frozen_flags != nullptr && frozen_flags[k] != 0; };
    // H is assembled straight into the factor's storage (no copy of it is
    // kept: DenseH assembles it again, cenic-math §8.9).
    for (int k = 0; k < ni; ++k)
      if (!frozen(k)) std::fill(L_.begin() + offset_[k], L_.begin() + offset_[k + 1], 0.0);
    auto keep = [frozen_flags, island_of](int dof) {
      return frozen_flags == nullptr || frozen_flags[island_of[dof]] == 0;
    };
    // A: entry (i, j), i ≥ j, of the column-major lower triangle; a < b in
    // a reversed island (its dofs in reverse order).
    for (int i = 0; i < model.nv; ++i) {
      if (!keep(i)) continue;
      auto add = [this](int i, int j, double x) {
        const int a = local_[i], b = local_[j];
        L_[a >= b ? col_[j] + a : col_[i] + b] += x;
      };
      const int adr = model.M_rowadr[i], nnz = model.M_rownnz[i];
      for (int k = 0; k < nnz; ++k) add(i, model.M_colind[adr + k], model.M[adr + k]);
      add(i, i, model.h * model.D[i] + model.h * model.h * model.K[i]);
    }
    // Σ JᵀGJ: each constraint's dofs mapped once (its island is reversed or
    // not as a whole), then every term (a ≥ b by position, so dof a ≥ dof b)
    // added where the entry-by-entry mapping above puts it.
    AccumulateConstraintTerms(
        model, data, &block_,
        [this](const auto& dofs) {
          const int n = static_cast<int>(dofs.size());
          if (static_cast<int>(map_loc_.size()) < n) map_loc_.resize(n), map_col_.resize(n);
          for (int k = 0; k < n; ++k) map_loc_[k] = local_[dofs[k]], map_col_[k] = col_[dofs[k]];
          const bool reversed = n > 0 && size_[island_[dofs[0]]] >= kMinColumnCholeskyDofs;
          const int* loc = map_loc_.data();
          const size_t* col = map_col_.data();
          double* L = L_.data();
          return [=](int a, int b, double x) {
            L[reversed ? col[a] + loc[b] : col[b] + loc[a]] += x;
          };
        },
        keep);
    model_ = &model;
    data_ = &data;
    for (int k = 0; k < ni; ++k) {
      if (size_[k] == 0 || frozen(k)) continue;
      // In place, lower triangle: the column Cholesky of §8.4 (plain loops
      // for a finger or a free body), Eigen's blocked LLT above 128 dofs.
      if (!FactorLower(L_.data() + offset_[k], size_[k], dinv_.data() + start_[k])) return false;
    }
    return true;
  }
  void Solve(const double* b, double* x) override {
    if (by_block_) return graph_->Solve(b, x);
    const int nv = static_cast<int>(order_.size());
    for (int p = 0; p < nv; ++p) x_[p] = b[order_[p]];
    for (size_t k = 0; k < size_.size(); ++k) {
      const int n = size_[k];
      if (n == 0) continue;
      if (frozen_ && frozen_[k]) {
        std::fill(x_.begin() + start_[k], x_.begin() + start_[k] + n, 0.0);
        continue;
      }
      SolveLower(L_.data() + offset_[k], n, dinv_.data() + start_[k], x_.data() + start_[k]);
    }
    for (int p = 0; p < nv; ++p) x[order_[p]] = x_[p];
  }
  Eigen::MatrixXd DenseH() const override {
    if (by_block_) return graph_->DenseH();
    // The H of the last assembly, assembled again from its model and data
    // (the same sums in the same order, every island).
    if (!model_) return Eigen::MatrixXd();
    const int nv = model_->nv;
    Eigen::MatrixXd full = Eigen::MatrixXd::Zero(nv, nv);
    std::vector<double> scratch;
    AccumulateHessian(*model_, *data_, &scratch, [&](int i, int j, double x) {
      full(i, j) += x;
      if (i != j) full(j, i) += x;
    });
    return full;
  }

  // Islands larger than this are factorized by block elimination when the
  // trees qualify for it (≤ kMaxBlockTrees trees of ≤ kMaxBlockTreeDofs).
  static constexpr int kMaxDenseIslandDofs = 48;

 private:
  static bool UseBlock(const IcfModel& m) {
    if (m.largest_island <= kMaxDenseIslandDofs) return false;
    const int trees = static_cast<int>(m.clique_start.size()) - 1;
    if (trees > kMaxBlockTrees) return false;
    for (int c = 0; c < trees; ++c)
      if (m.clique_start[c + 1] - m.clique_start[c] > kMaxBlockTreeDofs) return false;
    return true;
  }

  std::unique_ptr<LinearSolver> graph_ = MakeBlockSolver();
  bool by_block_ = false;
  std::vector<int> island_, last_island_, local_, size_, start_, order_;
  std::vector<size_t> offset_, col_;
  std::vector<double> L_, x_, dinv_;
  const char* frozen_ = nullptr;  // per island, or null
  std::vector<int> map_loc_;     // AssembleAndFactor: a constraint's local_ and col_
  std::vector<size_t> map_col_;
  const IcfModel* model_ = nullptr;  // of the last assembly (DenseH)
  const IcfData* data_ = nullptr;
  // The partition the arrays above were made for (Prepare's early return).
  int seen_num_islands_ = -1;
  std::vector<int> seen_island_of_clique_, seen_clique_of_dof_;
};

}  // namespace

std::unique_ptr<LinearSolver> MakeIslandsSolver() {
  return std::make_unique<IslandsSolver>();
}

}  // namespace mjcenic::icf::detail
