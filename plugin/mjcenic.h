/* mjcenic C API: error-controlled ICF stepping for MuJoCo models.
 *
 *   mjcenicStepper* s = mjcenic_create(m, NULL, err, sizeof(err));
 *   while (...) { if (mjcenic_stepper_step(s, d, err, sizeof(err))) handle(err); }
 *   mjcenic_destroy(s);
 *
 * or, for code written around mj_step, swap one call:
 *
 *   mjcenic_step(m, d);      // instead of mj_step(m, d)
 */
#ifndef MJCENIC_H_
#define MJCENIC_H_

#include <mujoco/mujoco.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mjcenicStepper_ mjcenicStepper;
typedef struct mjcenicOptions_ mjcenicOptions;

/* Statistics (see README "Statistics"). */
typedef struct {
  long steps, rejected_steps, solves, newton_iterations, factorizations, ls_iterations,
      geometry_queries;
  double h_min, h_median, h_max, last_h;  /* accepted internal step sizes [s] */
  double max_penetration;                 /* [m] */
  double time_geometry, time_assembly, time_solve, time_total;  /* wall time [s] */
} mjcenicStats;

/* Options: defaults, overlaid by m's mjcenic plugin <config> if m is given
 * (NULL on a bad config value, message in error). Keys as in the README
 * (accuracy, mode, max_step, stiction_tolerance, ...). */
mjcenicOptions* mjcenic_options_create(const mjModel* m, char* error, int error_sz);
void mjcenic_options_destroy(mjcenicOptions* o);
/* Returns 0, or 1 with a message naming the key. */
int mjcenic_options_set(mjcenicOptions* o, const char* key, const char* value, char* error,
                        int error_sz);
mjcenicStepper* mjcenic_create_with_options(const mjModel* m, const mjcenicOptions* o,
                                            char* error, int error_sz);
/* Advances d to time t (>= d->time), ending exactly on t. 0 on success. */
int mjcenic_advance_to(mjcenicStepper* s, mjData* d, double t, char* error, int error_sz);
/* One accepted internal step of the size the controller chooses. */
int mjcenic_step_once(mjcenicStepper* s, mjData* d, char* error, int error_sz);
void mjcenic_get_stats(const mjcenicStepper* s, mjcenicStats* stats);

/* Creates a stepper for m with default options overlaid by m's plugin
 * config, if any; NULL on error (message in
 * error, if given). The stepper must not outlive m. */
mjcenicStepper* mjcenic_create(const mjModel* m, char* error, int error_sz);
void mjcenic_destroy(mjcenicStepper* s);

/* Advances d by m->opt.timestep. Returns 0 on success; otherwise d is left
 * unchanged and error holds the reason. */
int mjcenic_stepper_step(mjcenicStepper* s, mjData* d, char* error, int error_sz);

/* Same signature as mj_step. Uses the stepper of d's mjcenic plugin instance
 * if the model declares one; otherwise keeps one stepper per (m, d) pair internally
 * (released with mjcenic_forget). On failure d is left unchanged, a MuJoCo
 * warning is raised (mjWARN_BADQACC) and the message is printed through
 * mju_warning. */
void mjcenic_step(const mjModel* m, mjData* d);

/* Releases the stepper mjcenic_step keeps for d (call before mj_deleteData). */
void mjcenic_forget(const mjData* d);

#ifdef __cplusplus
}
#endif

#endif  /* MJCENIC_H_ */
