// ICF → MuJoCo: the inverse of the build. Writes the impulses γ of a solved
// ICF problem into d's efc_force / efc_state (docs/mujoco-mapping.md §1.4),
// so that mj_contactForce, touch sensors and cfrc_ext report them as MuJoCo
// would. Contacts are matched to the build's records by geom pair and
// nearest point, limits, equalities and friction loss by MuJoCo type, object
// and row; rows that were not in the solved problem stay zero.
#pragma once

#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/icf_data.h"

namespace mjcenic::adapter {

class ConstraintForces {
 public:
  // Zeroes d's efc_force and efc_state, then, if `records` is given, writes
  // impulse / h of each constraint that `records` (from the Build of the
  // problem solved with step h) pairs with a row of d (forwarded at the
  // step's end). `data` holds that solve's impulses.
  void Write(const mjModel* m, const BuildRecords* records, const icf::IcfData& data, double h,
             mjData* d);

 private:
  // Limit, equality and friction-loss rows.
  static void WriteRows(const mjModel* m, const std::vector<RowRecord>& rows,
                        const icf::IcfData& data, double h, mjData* d);
  // WriteContacts' parts: the records sorted by geom pair (order_,
  // sorted_keys_), and the unused record of con's pair nearest to its point
  // (marked used; -1 if none). hint: the last contact's range start and end.
  void IndexRecords(const std::vector<ContactRecord>& rec);
  int MatchRecord(const std::vector<ContactRecord>& rec, const mjContact& con, int hint[2]);
  void WriteContacts(const mjModel* m, const std::vector<ContactRecord>& rec,
                     const icf::IcfData& data, double h, mjData* d);
  // One contact's force f (normal, 2 tangents, spin, 2 rolling; its frame)
  // projected into MuJoCo's cone and encoded in efc_force.
  static void EncodeContact(const mjContact& con, bool pyramidal, double f[6], mjData* d);

  // Scratch (grows, never shrinks): records sorted by geom pair, their pair
  // keys in that order, and used flags. rec_keys_: the pair key of each
  // record (by record index) that order_ was sorted for; the same key
  // sequence gives the same sort, so it is kept (docs/cenic-math.md §8.9).
  std::vector<int> order_;
  std::vector<unsigned long long> sorted_keys_, rec_keys_;
  std::vector<char> used_;
};

}  // namespace mjcenic::adapter
