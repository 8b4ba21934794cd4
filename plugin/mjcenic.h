/* mjcenic C API: error-controlled ICF stepping for MuJoCo models.
 *
 *   mjcenicStepper* s = mjcenic_create(m, err, sizeof(err));
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

/* Statistics (docs/statistics.md). Members are only ever appended, so a
 * program built against an older header keeps working; mjcenic_get_stat reads
 * any statistic by name, including ones added after this struct was frozen. */
typedef struct {
  long steps, rejected_steps, solves, newton_iterations, factorizations, ls_iterations,
      geometry_queries;
  double h_min, h_median, h_max, last_h;  /* accepted internal step sizes [s] */
  double max_penetration;                 /* [m] */
  double time_geometry, time_assembly, time_solve, time_total;  /* wall time [s] */
  long controller_calls;                  /* user controller evaluations */
  double last_error;                      /* error estimate of the last accepted step */
  long contacts;                          /* active contacts summed over problem builds */
  double time_contacts, time_evaluate, time_factorize, time_line_search,
      time_writeback;                     /* wall time by phase [s] (docs/statistics.md) */
  long island_solves, island_newton_iterations; /* per-island Newton count (docs/statistics.md) */
} mjcenicStats;

/* Options: defaults, overlaid by m's mjcenic plugin <config> if m is given
 * (NULL on a bad config value, message in error). Keys as in the options tables (README, docs/options.md)
 * (accuracy, mode, max_step, stiction_tolerance, ...). */
mjcenicOptions* mjcenic_options_create(const mjModel* m, char* error, int error_sz);
void mjcenic_options_destroy(mjcenicOptions* o);
/* Returns 0, or 1 with a message naming the key. */
int mjcenic_options_set(mjcenicOptions* o, const char* key, const char* value, char* error,
                        int error_sz);
mjcenicStepper* mjcenic_create_with_options(const mjModel* m, const mjcenicOptions* o,
                                            char* error, int error_sz);
/* The stepping calls below return 0 on success, else 1 with the reason in
 * error: bad input, solver failure, step-size underflow, an mjData made for
 * another model, or a MuJoCo fatal error (mju_error, e.g. an arena too small)
 * inside the step; d then keeps its state from before the call, and the
 * process goes on (MuJoCo's error handler is not called; see docs/c-api.md). */
/* Advances d to time t (>= d->time), ending exactly on t. */
int mjcenic_advance_to(mjcenicStepper* s, mjData* d, double t, char* error, int error_sz);
/* One accepted internal step of the size the controller chooses. */
int mjcenic_step_once(mjcenicStepper* s, mjData* d, char* error, int error_sz);
void mjcenic_get_stats(const mjcenicStepper* s, mjcenicStats* stats);
/* One statistic by name (as in docs/statistics.md); 0, or 1 for an unknown name. */
int mjcenic_get_stat(const mjcenicStepper* s, const char* name, double* value);
/* Names of the statistics and of the options, i = 0, 1, ...; NULL past the end. */
const char* mjcenic_stat_name(int i);
const char* mjcenic_option_name(int i);

/* Creates a stepper for m with default options overlaid by m's plugin
 * config, if any; NULL on error (message in
 * error, if given). The stepper must not outlive m. */
mjcenicStepper* mjcenic_create(const mjModel* m, char* error, int error_sz);
void mjcenic_destroy(mjcenicStepper* s);

/* Advances d by m->opt.timestep. */
int mjcenic_stepper_step(mjcenicStepper* s, mjData* d, char* error, int error_sz);

/* Same signature as mj_step. Uses the stepper of d's mjcenic plugin instance
 * if the model declares one; otherwise one it keeps per (m, d): a new mjData
 * or mjModel at a reused address, or a d whose time the caller changed
 * (a reset), gets a fresh stepper; at most 64 are kept (least recently
 * stepped released first). On failure d is left unchanged, a MuJoCo
 * warning is raised (mjWARN_BADQACC) and the message is printed through
 * mju_warning; a MuJoCo fatal error goes to MuJoCo's handler, as in mj_step. */
void mjcenic_step(const mjModel* m, mjData* d);

/* Releases the stepper mjcenic_step keeps for d (optional; frees it early). */
void mjcenic_forget(const mjData* d);
/* Number of steppers mjcenic_step keeps (diagnostics). */
int mjcenic_registry_size(void);

#ifdef __cplusplus
}
#endif

#endif  /* MJCENIC_H_ */
