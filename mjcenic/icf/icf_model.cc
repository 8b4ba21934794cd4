#include "mjcenic/icf/icf_model.h"

#include <algorithm>

#include <cmath>

namespace mjcenic::icf {

void IcfModel::Reset(int n) {
  nv = n;
  clique_start.assign({0, n});
  clique_of_dof.assign(n, 0);
  M_rowadr.resize(n);
  M_rownnz.resize(n);
  M_colind.clear();
  M.clear();
  mass_tree_layout = -1;
  M_diag.assign(n, 0);
  D.assign(n, 0);
  K.assign(n, 0);
  damper_spring_source = -1;
  v0.assign(n, 0);
  f.assign(n, 0);
  r.assign(n, 0);
  contacts.Clear();
  limits.Clear();
  couplings.Clear();
  gains.Clear();
  dry_friction.Clear();
  contact_torques.Clear();
  h = 0;
}

bool IcfModel::RowsSpanCliques() const {
  auto spans = [&](const auto& pool) {
    if (pool.rows.all_single()) return false;
    for (int k = 0; k < pool.size(); ++k) {
      const std::span<const int> dofs = pool.rows.dofs(k);
      if (dofs.size() >= 2 && clique_of_dof[dofs.front()] != clique_of_dof[dofs.back()])
        return true;
    }
    return false;
  };
  return spans(contacts) || spans(limits) || spans(couplings) || spans(gains) ||
         spans(dry_friction) || spans(contact_torques);
}

int IcfModel::FindIsland(int c) {
  while (island_parent_[c] != c) c = island_parent_[c] = island_parent_[island_parent_[c]];
  return c;
}

void IcfModel::JoinIslands() {
  // A constraint inside one clique joins nothing: its dofs are sorted and a
  // clique is a contiguous dof range, so first and last dof in the same
  // clique settle it (one-dof rows: limits, actuators, friction loss).
  // Skipping those leaves the partition, and so the numbering, as is.
  auto join = [&](const auto& pool) {
    if (pool.rows.all_single()) return;
    for (int k = 0; k < pool.size(); ++k) {
      const std::span<const int> dofs = pool.rows.dofs(k);
      if (dofs.size() < 2 || clique_of_dof[dofs.front()] == clique_of_dof[dofs.back()])
        continue;
      // One union per run of dofs in one clique (the dofs ascend, so a
      // clique's dofs are consecutive): the same partition, without a find
      // per dof of a tendon or a body–body contact (cenic-math §8.9).
      int last = clique_of_dof[dofs[0]];
      const int root = FindIsland(last);
      for (int dof : dofs.subspan(1)) {
        const int q = clique_of_dof[dof];
        if (q == last) continue;
        last = q;
        const int other = FindIsland(q);
        if (other != root) island_parent_[other] = root;
      }
    }
  };
  join(contacts);
  join(limits);
  join(couplings);
  join(gains);
  join(dry_friction);
  join(contact_torques);
}

namespace {
double Cube(int n) { return static_cast<double>(n) * n * n; }
}  // namespace

void IcfModel::ComputeIslands() {
  const int ncl = std::max(static_cast<int>(clique_start.size()) - 1, 0);
  // One clique (a chain, a free body), or no row over two cliques (each
  // tree alone, e.g. slider_crank's two trees): each clique its own island,
  // numbered in clique order, as the union–find below numbers them, without
  // its workspace passes (cenic-math §8.9.2).
  if (ncl == 1 || !RowsSpanCliques()) {
    island_of_clique.resize(ncl);
    island_parent_.resize(ncl);
    largest_island = 0;
    clique_cubes = 0;
    for (int c = 0; c < ncl; ++c) {
      island_of_clique[c] = c;
      const int n = clique_start[c + 1] - clique_start[c];
      island_parent_[c] = n;
      largest_island = std::max(largest_island, n);
      clique_cubes += Cube(n);
    }
    island_cubes = clique_cubes;
    num_islands = ncl;
    return;
  }
  island_parent_.resize(ncl);
  for (int c = 0; c < ncl; ++c) island_parent_[c] = c;
  JoinIslands();
  // Number the roots 0, 1, ... in clique order.
  island_of_clique.assign(ncl, -1);
  num_islands = 0;
  for (int c = 0; c < ncl; ++c) {
    const int root = FindIsland(c);
    if (island_of_clique[root] < 0) island_of_clique[root] = num_islands++;
    island_of_clique[c] = island_of_clique[root];
  }
  // Dofs per island (reusing the union–find workspace).
  island_parent_.assign(num_islands, 0);
  largest_island = 0;
  clique_cubes = 0;
  for (int c = 0; c < ncl; ++c) {
    const int n = clique_start[c + 1] - clique_start[c];
    island_parent_[island_of_clique[c]] += n;
    clique_cubes += Cube(n);
  }
  island_cubes = 0;
  for (int k = 0; k < num_islands; ++k) {
    largest_island = std::max(largest_island, island_parent_[k]);
    island_cubes += Cube(island_parent_[k]);
  }
}

void IcfModel::Finalize(double h_) {
  ComputeIslands();
  // (An empty pool's Lag and SetTimeStep loop over no rows: they are not
  // called, its h is set; cenic-math §8.9.2.)
  if (contacts.size() > 0) contacts.Lag(v0.data(), params);
  if (contact_torques.size() > 0) contact_torques.Lag(contacts);
  if (gains.size() > 0) gains.Lag(v0.data());
  SetTimeStep(h_);
}

void IcfModel::SetTimeStep(double h_) {
  h = h_;
  // r = M v0 + h D v0 + h f   (§3.2; K acts on v only, see header)
  MultiplyM(v0.data(), r.data());
  for (int i = 0; i < nv; ++i) r[i] += h * D[i] * v0[i] + h * f[i];
  if (contacts.size() > 0) contacts.SetTimeStep(h, params); else contacts.h = h;
  if (limits.size() > 0) limits.SetTimeStep(h, params);
  if (couplings.size() > 0) couplings.SetTimeStep(h, params);
  if (gains.size() > 0) gains.SetTimeStep(h, params); else gains.h = h;
  if (dry_friction.size() > 0) dry_friction.SetTimeStep(h, params); else dry_friction.h = h;
  if (contact_torques.size() > 0) contact_torques.SetTimeStep(h); else contact_torques.h = h;
}

void IcfModel::MarkSmoothIslands(char* smooth) const {
  std::fill(smooth, smooth + std::max(num_islands, 1), 0);
  for (int c = 0; c < contacts.size(); ++c) smooth[IslandOf(contacts.rows.dofs(c))] = 1;
  for (int c = 0; c < contact_torques.size(); ++c)
    smooth[IslandOf(contact_torques.rows.dofs(c))] = 1;
  for (int c = 0; c < dry_friction.size(); ++c) smooth[IslandOf(dry_friction.rows.dofs(c))] = 1;
}

void IcfModel::MarkRowDofs(char* marked) const {
  const auto mark = [marked](const auto& rows) {
    for (int c = 0; c < rows.size(); ++c)
      for (int i : rows.dofs(c)) marked[i] = 1;
  };
  mark(contacts.rows);
  mark(limits.rows);
  mark(couplings.rows);
  mark(gains.rows);
  mark(dry_friction.rows);
  mark(contact_torques.rows);
}

void IcfModel::ShiftConfiguration(const double* dq) {
  double x[3];
  for (int c = 0; c < contacts.size(); ++c) {
    contacts.rows.Multiply(c, dq, x);
    contacts.fe0[c] -= contacts.k[c] * x[0];  // φ += n̂ᵀ J dq
  }
  for (int c = 0; c < limits.size(); ++c) {
    limits.rows.Multiply(c, dq, x);
    limits.g0[c] += x[0];
  }
  for (int c = 0; c < couplings.size(); ++c) {
    couplings.rows.Multiply(c, dq, x);
    couplings.g0[c] += x[0];
  }
  for (int c = 0; c < gains.size(); ++c) {
    gains.rows.Multiply(c, dq, x);
    gains.c[c] -= gains.kq[c] * x[0];  // c depends on the length with slope −kq
  }
  for (int i = 0; i < nv; ++i) f[i] -= K[i] * dq[i];
}

void IcfModel::AddImpulse(const double* p) {
  for (int i = 0; i < nv; ++i) r[i] += p[i];
}

void IcfModel::MultiplyM(const double* x_in, double* y_out) const {
  // Row i's own sum is stored when the row is reached (no row before i
  // touches y[i]); rows below add their transposed terms later. (0.0 + yi:
  // what adding it to a cleared y[i] gave, also for yi = −0.) x and y do not
  // overlap, so x[j] and the row stay in registers across the y[j] updates.
  const double* __restrict x = x_in;
  double* __restrict y = y_out;
  const int* __restrict rowadr = M_rowadr.data();
  const int* __restrict rownnz = M_rownnz.data();
  const int* __restrict colind = M_colind.data();
  const double* __restrict Mv = M.data();
  for (int i = 0; i < nv; ++i) {
    const int adr = rowadr[i], n = rownnz[i] - 1;  // strictly lower part: j < i
    const int* col = colind + adr;
    const double* row = Mv + adr;
    const double xi = x[i];
    double yi = row[n] * xi;  // diagonal is last
    for (int k = 0; k < n; ++k) {
      const int j = col[k];
      yi += row[k] * x[j];
      y[j] += row[k] * xi;
    }
    y[i] = 0.0 + yi;
  }
}

void IcfModel::MultiplyA(const double* x, double* y) const {
  MultiplyM(x, y);
  for (int i = 0; i < nv; ++i) y[i] += (h * D[i] + h * h * K[i]) * x[i];
}

const char* IcfModel::Validate() const {
  if (static_cast<int>(M_rowadr.size()) != nv || static_cast<int>(M_rownnz.size()) != nv)
    return "mass matrix row arrays do not have nv entries";
  for (int i = 0; i < nv; ++i) {
    const int nnz = M_rownnz[i];
    if (nnz < 1 || M_colind[M_rowadr[i] + nnz - 1] != i)
      return "mass matrix row does not end with its diagonal";
    if (!(M_diag[i] > 0) || !std::isfinite(M_diag[i]))
      return "mass matrix diagonal is not positive and finite";
    if (!std::isfinite(f[i]) || !std::isfinite(v0[i]) || !(D[i] >= 0) || !(K[i] >= 0))
      return "non-finite force/velocity or negative damping/stiffness";
  }
  for (double x : M)
    if (!std::isfinite(x)) return "mass matrix has non-finite entries";
  return "";
}

}  // namespace mjcenic::icf
