// MuJoCo → ICF: turns (mjModel, mjData), with MuJoCo's stages evaluated at a
// state (mujoco_stages.h), into a plain ICF problem (icf::IcfModel), following
// docs/mujoco-mapping.md, and records where each constraint came from, so that
// constraint_forces.h can report the solved impulses the other way.
#pragma once

#include <string>
#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/adapter/contact_options.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/parameters.h"

namespace mjcenic::adapter {

// Opening of the warning that lists mj_step integrator / solver settings of
// the model that mjcenic replaces by design (integrator, solver, noslip).
inline constexpr char kReplacedSettingsWarning[] =
    "MJCF options replaced by mjcenic and ignored";

// Generalized force of a user controller linearized per dof (cenic-math §9):
// along the step, τ_i(v) = tau_i − kq_i·(h v_i) − kv_i·(v_i − v0_i), i.e. a gain
// row with κ = h kq + kv (made explicit where κ < 0). When given to Build it
// replaces the actuators and qfrc_applied.
struct DofFeedback {
  std::vector<double> tau;     // τ at the build state
  std::vector<double> kq, kv;  // −∂τ_i/∂q_i, −∂τ_i/∂v_i (diagonal only)
};

// Where ICF contact c of a Build came from: MuJoCo's geom pair, point
// and frame (rows: normal, tangent 1, tangent 2), so that its impulse can be
// reported as a MuJoCo contact force.
struct ContactRecord {
  int geom[2];
  double pos[3];
  double frame[9];
  int torque = -1;  // its ContactTorquePool constraint (condim 4/6), or -1
  double depth = 0;  // max(0, −dist) at the build state [m] (cenic-math §11.10)
};

// Where a limit, coupling or friction-loss row of a Build came from, so
// that its impulse can be reported in MuJoCo's efc_force: the constraint type
// (mjCNSTR_LIMIT_JOINT, _LIMIT_TENDON, _EQUALITY, _FRICTION_DOF, _FRICTION_TENDON),
// the object id (efc_id) and which of the object's rows (limits: 0 lower, 1
// upper; equalities: k-th row; otherwise 0); `index` is the row in its pool
// (limits, couplings or dry_friction, by type).
struct RowRecord {
  int type, id, sub, index;
  bool operator<(const RowRecord& o) const {
    return type != o.type ? type < o.type : id != o.id ? id < o.id : sub < o.sub;
  }
};

// Which of an efc row's object rows it is (RowRecord::sub), for a forwarded d.
// `prev_row` is row − 1's (type, id, sub) or {-1,-1,-1}.
int EfcRowSub(const mjModel* m, const mjData* d, int row, const RowRecord& prev_row);

// Where every constraint of one Build came from (the inverse map of the
// build, used to write impulses back as MuJoCo forces).
struct BuildRecords {
  std::vector<ContactRecord> contacts;  // one per ICF contact, in pool order
  std::vector<RowRecord> rows;          // limit, coupling and friction-loss rows, sorted
};

// MuJoCo's name of an object, or "" if it has none.
std::string ObjectName(const mjModel* m, int type, int id);

// What one problem build saw (for statistics).
struct BuildInfo {
  int ncontact = 0;
  double max_penetration = 0;  // max(−dist) over active contacts [m]
  double time_contacts = 0;    // wall time in AddContacts [s] (with phase timers)
};

class MujocoAdapter {
 public:
  MujocoAdapter(const mjModel* m, const ContactOptions& contact);

  // The contact's nominal penetration x_nom = m_c g_ref / k [m]
  // (docs/mujoco-mapping.md §5.7): the depth at which its mapped stiffness
  // carries its share of weight. Used by the penetration check
  // (cenic-math §11.10).
  double NominalPenetration(const mjModel* m, const mjContact& con);
  // The nominal violation g_ref τ_r² [m] of the large-violation spring
  // (cenic-math §5.2) of a joint (type mjCNSTR_LIMIT_JOINT) or tendon limit:
  // the violation at which the spring K = 1/(w τ_r²) carries the weight of
  // its effective mass 1/w. Used by the penetration check (cenic-math §11.10).
  static double LimitSpringNominal(const mjModel* m, int type, int id);

  // Warnings about unsupported or approximated features, one per feature.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Whether Build times its contact mapping (BuildInfo::time_contacts).
  void set_phase_timers(bool on) { phase_timers_ = on; }

  // Builds the ICF problem with constants `params` at the state held in d
  // (stages computed, actuation computed with the step's ctrl) for time step
  // h; `records` receives where each constraint came from. With `feedback`, a
  // linearized user controller replaces the actuators and qfrc_applied.
  void Build(const mjModel* m, mjData* d, double h, const icf::IcfParameters& params,
             const DofFeedback* feedback, icf::IcfModel* model, BuildRecords* records,
             BuildInfo* info);

 private:
  void ScanModel(const mjModel* m);
  // ScanModel's parts: each body's chain of dofs and inverse mass; the
  // per-geom static friction of <custom> numerics.
  void ScanBodies(const mjModel* m);
  void ScanStaticFriction(const mjModel* m);
  // Build's parts: M (pattern on a reset model), v0, D and K; the explicit
  // forces f = passive − bias + applied + Σ Jᵀ xfrc.
  void SetMassAndPassive(const mjModel* m, const mjData* d, const icf::IcfParameters& params,
                         icf::IcfModel* model);
  void AddExplicitForces(const mjModel* m, mjData* d, const DofFeedback* feedback,
                         icf::IcfModel* model);
  // Actuators as implicit gain rows or explicit forces, merged force limits
  // (mapping §4.4), and the warnings about actuator features.
  void ScanActuators(const mjModel* m);
  // Warns once about mj_step settings mjcenic replaces by design.
  void ScanReplacedSettings(const mjModel* m);
  void AddContacts(const mjModel* m, const mjData* d, const icf::IcfParameters& params,
                   icf::IcfModel* model, std::vector<ContactRecord>* records, BuildInfo* info);
  void AddActuators(const mjModel* m, const mjData* d, icf::IcfModel* model);
  void AddTendonSprings(const mjModel* m, const mjData* d, icf::IcfModel* model);
  void AddLimits(const mjModel* m, const mjData* d, icf::IcfModel* model,
                 std::vector<RowRecord>* records);
  void AddEfcRows(const mjModel* m, const mjData* d, icf::IcfModel* model,
                  std::vector<RowRecord>* records);
  // Translational Jacobian columns of the point p on body b: dofs ascending;
  // with `rot`, also the rotational columns (angular velocity of the body).
  void PointJacobian(const mjModel* m, const mjData* d, int body, const double p[3],
                     std::vector<int>* dofs, std::vector<double>* cols,
                     std::vector<double>* rot = nullptr) const;
  // FrameRows for a contact whose bodies no dof moves both of (dofs_: b1's
  // chain and b2's, b1's first if a_first, in ascending order), straight from cdof.
  void DisjointFrameRows(const mjModel* m, const mjData* d, const mjContact& con, int b1, int b2,
                         bool a_first, double* J) const;
  // J (3 × dofs_) = frame · (cols_b − cols_a), the sides' columns over
  // dofs_b_ / dofs_a_ (contact rows in the contact frame).
  void FrameRows(const double frame[9], const std::vector<double>& cols_a,
                 const std::vector<double>& cols_b, double* J) const;
  // Sorts the build's row records: [0, limit_records) from AddLimits, the rest
  // from AddEfcRows (out of line: its merge kept inline changed the inlining
  // of the pools' Put in Build).
  [[gnu::noinline]] void SortRecords(size_t limit_records, std::vector<RowRecord>* records);
  // dofs_ and row_ of efc row `row` (sparse: mj_isSparse(m)).
  void EfcRow(const mjModel* m, const mjData* d, int row, bool sparse);
  double FrictionLossSpeed(const mjModel* m, const mjData* d, int row);
  static double ReferenceGravity(const mjModel* m);  // |gravity|, else 9.81
  double OmegaMax(const mjModel* m) const;           // cap on sqrt(k/m_c), 0: none
  void ContactKey(const mjModel* m, const mjContact& con, double key[11]) const;
  // k and d of the contact mapping for `key` (solref, solimp, m_c, λ, timestep, ±g_ref).
  void MappedContact(const double key[11], double omega_max, double* k, double* d);

  ContactOptions contact_;
  bool phase_timers_ = false;
  std::vector<std::string> warnings_;
  std::vector<int> clique_start_, clique_of_dof_;
  std::vector<double> damping_, stiffness_;       // implicit D, K per dof
  std::vector<int> limited_joints_;               // hinge/slide joints with limits
  std::vector<char> implicit_actuator_;           // actuator handled as gain row
  std::vector<double> act_lo_, act_hi_;           // merged force limits
  // Dofs moving body b (ascending): chain_dofs_[chain_adr_[b] .. chain_adr_[b + 1]).
  std::vector<int> chain_adr_, chain_dofs_;
  std::vector<double> inv_mass_;                  // 1/m of each body's weld group (0: anchored)
  std::vector<double> geom_mu_static_;            // per-geom μ_s override (< 0: none)
  // Memo of the solref/solimp → (k, d) mapping: one entry per distinct input
  // (the bisection is the costliest part of a contact), linear probing.
  // AddContacts' parts: the dofs of a contact between bodies b1 and b2 into
  // dofs_ (true if the bodies' chains share no dof; then *a_first says
  // whose chain comes first), and its stiffness k and dissipation d.
  struct ContactConstants {
    double timestep;
    bool refsafe;
    double g_ref, omega_max;
  };
  bool ContactDofs(const mjModel* m, const mjData* d, const mjContact& con, int b1, int b2,
                   bool torques, bool* a_first);
  void ContactLaw(const mjModel* m, const mjContact& con, int b1, int b2, double mu,
                  const ContactConstants& cc, double* k, double* d);
  // The last contact's inputs and outputs of the solref/solimp mapping
  // (valid within one AddContacts).
  struct LawMemo {
    bool valid = false;
    int b1 = 0, b2 = 0, dim = 0;
    double mu = 0, solref[2] = {}, solimp[5] = {};
    double m_c = 0, lambda = 0, k_map = 0, d_map = 0;
  } law_memo_;
  struct MapEntry {
    double key[11];
    double k, d;
    bool used = false;
  };
  std::vector<MapEntry> map_cache_;
  // The last friction-loss row's (solref, solimp, timestep), refsafe, and
  // its d₀ and B (FrictionLossSpeed).
  struct FrictionMemo {
    double key[mjNREF + mjNIMP + 1];
    bool refsafe = false, valid = false;
    double d0 = 0, B = 0;
    [[gnu::noinline, gnu::cold]] void Fill(const double* solref, const double* solimp,
                                           double timestep, bool refsafe_);
  } friction_memo_;
  // Scratch (grows, never shrinks).
  std::vector<int> dofs_a_, dofs_b_, dofs_;
  std::vector<double> cols_a_, cols_b_, rot_a_, rot_b_, row_;
  std::vector<int> perm_;
  std::vector<RowRecord> merged_rows_;
  // Rows of the limit, gain, coupling and dry-friction pools made so far by the current Build: the
  // pools still hold the previous build's rows past them (PutSingle, cenic-math §8.9).
  int limit_rows_ = 0, gain_rows_ = 0, coupling_rows_ = 0, friction_rows_ = 0;
};

}  // namespace mjcenic::adapter
