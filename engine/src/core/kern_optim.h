/*
** kern_optim.h -- the optimizer family of the kernel table
** (core/kernels.h): one fused, in-place update of a parameter from its
** gradient and its state (ops/optim.c has the checks, the state made on a
** first step, and the version bumps).
**
** Each entry runs over an iterator the op built over the parameter's shape
** with the operands listed at the entry (any strides; operand numbers are
** fixed: an absent state slot is the parameter again, never read nor
** written). The op guarantees: one floating dtype dt for all operands, the
** written operands do not overlap themselves or each other, and the
** gradient shares memory with the parameter only in the same layout (each
** element is read before it is written). it->numel may be 0.
*/
#ifndef EMBER_KERN_OPTIM_H
#define EMBER_KERN_OPTIM_H

#include "core/iter.h"

/* The scalars of one update, in double as PyTorch's Python computes them
** (a kernel converts them to its compute type once). */
typedef struct em_optim_params {
  double lr, momentum, dampening, weight_decay;  /* SGD; lr, weight_decay shared */
  double beta1, beta2, eps, step_size, bc2_sqrt; /* Adam: lr / bias_correction1,
                                                 ** sqrt(bias_correction2) */
  double alpha;                                  /* RMSprop (momentum shared) */
  int nesterov, maximize;
  int first;          /* SGD: the momentum buffer is new (buf = d) */
  int amsgrad, decoupled, centered, has_momentum;
  /* the optimizers of the .other entry (em_optim_kind) */
  int kind;
  double rho;          /* Adadelta */
  double bc1, bc2;     /* NAdam: bc2; RAdam: bc1 and sqrt(bias_correction2) */
  double c1, c2;       /* NAdam: the two addcdiv values; RAdam: c1 = rect;
                       ** ASGD: c1 = 1 - lambd * eta, c2 = eta */
  double mu;           /* ASGD: the average's weight */
  double etaminus, etaplus, step_min, step_max; /* Rprop */
  int rectify;         /* RAdam: rho_t > 5 */
} em_optim_params;

typedef struct em_optim_kernels {
  /* Operands: 0 param, 1 grad, 2 momentum buffer (the param without
  ** momentum). PyTorch 1.13's sgd, op for op. */
  void (*sgd)(const em_iter *it, em_dtype dt, const em_optim_params *p);
  /* Operands: 0 param, 1 grad, 2 exp_avg, 3 exp_avg_sq, 4 max_exp_avg_sq
  ** (the param without amsgrad). Adam, or AdamW with decoupled. */
  void (*adam)(const em_iter *it, em_dtype dt, const em_optim_params *p);
  /* Operands: 0 param, 1 grad, 2 square_avg, 3 momentum_buffer, 4 grad_avg
  ** (the param where absent). */
  void (*rmsprop)(const em_iter *it, em_dtype dt, const em_optim_params *p);
  /* Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop (p->kind, an
  ** em_optim_kind). Operands: 0 param, 1 grad, 2 and 3 the state of
  ** em_optim_step (3 the param for those with one state tensor). */
  void (*other)(const em_iter *it, em_dtype dt, const em_optim_params *p);
  /* n updates of one family (an em_optim_family) and dtype at once: its[i]
  ** and ps[i] are what the family's entry above would get for parameter i,
  ** each iterator one dim with every operand contiguous (stride = the
  ** element size; an absent slot is the parameter's pointer). The
  ** parameters do not overlap each other. What a device gains by it is one
  ** launch for many tensors (cuda); the CPU runs them in turn. */
  void (*multi)(int family, em_dtype dt, int n, const em_iter *its, const em_optim_params *ps);
} em_optim_kernels;

/* The families of the entries above, for multi. */
typedef enum em_optim_family {
  EM_OPTF_SGD, EM_OPTF_ADAM, EM_OPTF_RMSPROP, EM_OPTF_OTHER
} em_optim_family;

extern const em_optim_kernels em_cpu_optim_kernels, em_meta_optim_kernels;

#endif
