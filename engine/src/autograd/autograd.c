/*
** autograd.c -- reverse-mode automatic differentiation: per-tensor autograd
** metadata, graph nodes, recording, and the backward engine.
**
** Guarantees:
** - Grad mode is thread-local. Ops record a node only in grad mode and when
**   an input requires grad; the ops an op calls inside do not record.
** - A tensor references its grad_fn; a node references the nodes and the
**   leaves its inputs came from, never its outputs: saved tensors are
**   metadata-free aliases (as PyTorch's SavedVariable), so tensor -> node ->
**   saved tensor cannot make a cycle.
** - Saved tensors remember their storage version; a change in place before
**   the backward is an error with PyTorch's message, never a wrong gradient.
** - The backward runs nodes in dependency order (every gradient for a node
**   summed before it runs), with explicit stacks (no recursion: deep graphs
**   are fine). Gradients reaching an input are reduced to its shape (the
**   broadcast it took part in) and cast to its dtype here, once, for every
**   formula. Without retain_graph, saved tensors are freed after the run.
*/
#include "autograd/autograd.h"
#include "core/errmsg.h"
#include "core/iter.h"

#include <stdio.h>
#include <stdlib.h>

/* -- Grad mode ------------------------------------------------------------ */

static _Thread_local int grad_disabled;  /* 0: grad mode on (the default) */
static _Thread_local int inference_on;   /* inference mode: nothing records */

/* em_ag_pause() returns whether the op it guards should record, and turns
** recording off for the ops it calls; em_ag_resume(on) undoes it. In
** inference mode nothing records, so both leave grad mode as the user set
** it (an enable_grad inside inference mode stays visible to
** is_grad_enabled). */
int em_ag_pause(void) {
  if (inference_on) return 0;
  int on = !grad_disabled;
  grad_disabled = 1;
  return on;
}
void em_ag_resume(int on) {
  if (!inference_on) grad_disabled = !on;
}
/* Ops record when grad mode is on and inference mode off: inference mode
** (PyTorch's InferenceMode) overrides an enable_grad inside it, whose grad
** mode is still what is_grad_enabled reports (em_grad_mode). */
int em_grad_enabled(void) { return !grad_disabled && !inference_on; }
int em_grad_mode(void) { return !grad_disabled; }
void em_set_grad_enabled(int on) { grad_disabled = !on; }
int em_inference_mode(void) { return inference_on; }
void em_set_inference_mode(int on) { inference_on = on != 0; }

static em_node *grad_fn_of(const em_tensor *t);

int em_ag_any(int n, const em_tensor *const *ts) {
  for (int i = 0; i < n; i++) {
    if (!ts[i]) continue;
    if (ts[i]->view_base) (void)grad_fn_of(ts[i]);  /* a stale view catches up */
    if (ts[i]->requires_grad) return 1;
  }
  return 0;
}

/* -- Metadata --------------------------------------------------------------- */

typedef struct em_ag_meta {
  em_autograd_head head;  /* first: em_tensor_release calls head.release */
  em_tensor *grad;
  em_node *grad_fn;  /* one reference; NULL for leaves */
  int output_nr;
  int retains_grad;
  /* the post-accumulate-grad hook of a leaf (em_tensor_set_grad_hook) and,
  ** per backward run (hook_mark), the deliveries still to come */
  em_grad_hook_fn hook;
  void *hook_ctx;
  void (*hook_free)(void *ctx);
  uint64_t hook_mark;
  int64_t hook_pending;
  int hook_got;
  /* the tensor hook of a leaf (em_tensor_set_hook) and, per backward run,
  ** the sum of the gradients it waits for */
  em_tensor_hook_fn pre;
  void *pre_ctx;
  void (*pre_free)(void *ctx);
  em_tensor *pre_buf;
} em_ag_meta;

static em_ag_meta *meta_of(const em_tensor *t) { return (em_ag_meta *)t->autograd; }

static void meta_release(em_tensor *t);

static em_status meta_get(em_tensor *t, em_ag_meta **out) {
  if (!t->autograd) {
    /* malloc + memset, not calloc: glibc's calloc bypasses the per-thread
    ** cache, and every view of a float tensor gets one of these */
    em_ag_meta *m = malloc(sizeof *m);
    if (m) memset(m, 0, sizeof *m);
    if (!m) {
      *out = NULL;
      return em_fail(EM_E_NOMEM, "autograd: out of memory");
    }
    m->head.release = meta_release;
    t->autograd = m;
  }
  *out = t->autograd;
  return EM_OK;
}

static void meta_release(em_tensor *t) {
  em_ag_meta *m = meta_of(t);
  if (!m) return;
  if (m->grad_fn && m->retains_grad && m->grad_fn->retain &&
      m->grad_fn->retain[m->output_nr] == t)
    m->grad_fn->retain[m->output_nr] = NULL;
  em_tensor_release(m->grad);
  em_node_release(m->grad_fn);
  if (m->hook_free) m->hook_free(m->hook_ctx);
  if (m->pre_free) m->pre_free(m->pre_ctx);
  em_tensor_release(m->pre_buf);
  free(m);
  t->autograd = NULL;
}

static void refresh_view(em_tensor *t);

/* t's grad_fn; a view whose storage was written in place since its history
** was set (through its base or another view) gets a fresh history first, as
** PyTorch regenerates a view's grad_fn. */
static em_node *grad_fn_of(const em_tensor *t) {
  if (t->view_base && t->view_version != em_storage_version(t->storage))
    refresh_view((em_tensor *)t);
  return t->autograd ? meta_of(t)->grad_fn : NULL;
}

/* A new tensor object over t's data with no autograd metadata. */
static em_status plain_alias(const em_tensor *t, em_tensor **out) {
  return em_tensor_alloc(t->storage, t->offset, t->ndim, t->sizes, t->strides,
                         t->dtype, out);
}

/* -- Nodes ------------------------------------------------------------------ */

static const char *const kind_names[] = {
#define EM_AG_NAME(k, n) n,
    EM_FOR_EACH_GRAD_OP(EM_AG_NAME)
#undef EM_AG_NAME
};

void em_node_retain(em_node *n) {
  if (n) atomic_fetch_add_explicit(&n->refcount, 1, memory_order_relaxed);
}

static void free_saved(em_node *n) {
  for (int k = 0; k < n->nsaved; k++) {
    em_ag_saved *s = &n->saved[k];
    em_tensor_release(s->data);
    if (!s->is_output) em_node_release(s->fn);
    em_tensor_release(s->leaf);
    memset(s, 0, sizeof *s);
  }
}

/* Nodes form chains as long as the graph: releasing one may release the
** next. A worklist keeps that iterative. */
void em_node_release(em_node *n) {
  em_node *stack_local[64];
  em_node **stack = stack_local;
  int sp = 0, cap = 64;
  while (n || sp) {
    if (!n) n = stack[--sp];
    if (atomic_fetch_sub_explicit(&n->refcount, 1, memory_order_acq_rel) != 1) {
      n = NULL;
      continue;
    }
    free_saved(n);
    for (int i = 0; i < n->nin; i++) {
      em_tensor_release(n->next[i].leaf);
      em_node *c = n->next[i].node;
      if (!c) continue;
      if (sp == cap) {
        em_node **bigger = malloc(sizeof *bigger * (size_t)cap * 2);
        if (!bigger) { em_node_release(c); continue; } /* recursion fallback */
        memcpy(bigger, stack, sizeof *bigger * (size_t)sp);
        if (stack != stack_local) free(stack);
        stack = bigger;
        cap *= 2;
      }
      stack[sp++] = c;
    }
    if (n->inner) {
      if (sp < cap) stack[sp++] = n->inner;
      else em_node_release(n->inner);
    }
    free(n->next);
    free(n->in);
    free(n->out);
    free(n->saved);
    free(n->retain);
    free(n->buf);
    while (n->prehooks) {
      em_ag_prehook *h = n->prehooks;
      n->prehooks = h->next;
      if (h->free_ctx) h->free_ctx(h->ctx);
      free(h);
    }
    if (n->custom_free) n->custom_free(n->custom_ctx);
    free(n->owned_name);
    free(n);
    n = NULL;
  }
  if (stack != stack_local) free(stack);
}

static void tmeta_of(const em_tensor *t, em_ag_tmeta *m) {
  m->is_tensor = t != NULL;
  if (!t) return;
  m->ndim = t->ndim;
  m->dtype = t->dtype;
  m->device = t->storage->device;
  memcpy(m->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
}

/* floating or complex: the dtypes that carry gradients */
static int is_float(const em_tensor *t) {
  return t && em_ag_diff_dtype(t->dtype);
}

/* The edge a gradient for t takes: its grad_fn, or t itself as a leaf. */
static void edge_of(const em_tensor *t, em_ag_edge *e) {
  memset(e, 0, sizeof *e);
  em_node *fn = t ? grad_fn_of(t) : NULL;
  if (!t || !t->requires_grad || !is_float(t)) return;
  if (fn) {
    e->node = fn;
    e->nr = meta_of(t)->output_nr;
    em_node_retain(fn);
  } else {
    e->leaf = (em_tensor *)t;
    em_tensor_retain(e->leaf);
  }
}

/* The saved inputs a node's backward will read: a product's operand is
** read only for the other operand's gradient (PyTorch saves it only then),
** so an in-place change of a parameter that was only multiplied by (x * w
** with w needing no grad, x @ w, F.linear) does not fail the backward. */
static int needed_saves(em_ag_kind kind, const em_ag_params *p, const em_node *n) {
  int s = p->save_in;
#define HAS(j) (n->nin > (j) && (n->next[j].node || n->next[j].leaf))
  switch (kind) {
    case EM_AG_EW:
      if (p->op == EM_OP_MUL) {
        if (!HAS(1)) s &= ~1;
        if (!HAS(0)) s &= ~2;
      } else if (p->op == EM_OP_DIV && p->ew.rounding == EM_ROUND_NONE) {
        if (!HAS(1)) s &= ~1;  /* the divisor is read by both gradients */
      } else if (p->op == EM_OP_LERP) {
        /* start and end are read only for a tensor weight's gradient, the
        ** weight only for theirs (PyTorch's LerpBackward0/1) */
        if (!HAS(2)) s &= ~3;
        if (!HAS(0) && !HAS(1)) s &= ~4;
      }
      break;
    case EM_AG_MM: case EM_AG_BMM: case EM_AG_MATMUL: case EM_AG_LINEAR:
      if (!HAS(1)) s &= ~1;
      if (!HAS(0)) s &= ~2;
      break;
    case EM_AG_ADDMM:
      if (!HAS(2)) s &= ~2;
      if (!HAS(1)) s &= ~4;
      break;
    default: break;
  }
#undef HAS
  return s;
}

static em_status save(em_node *n, int k, const em_tensor *t, int is_output, int out_nr) {
  em_ag_saved *s = &n->saved[k];
  em_status st = plain_alias(t, &s->data);
  if (st != EM_OK) return st;
  s->version = em_storage_version(t->storage);
  s->is_output = is_output;
  if (is_output) {
    s->fn = n;
    s->nr = out_nr;
  } else if (t->requires_grad && is_float(t)) {
    em_node *fn = grad_fn_of(t);
    if (fn) {
      s->fn = fn;
      s->nr = meta_of(t)->output_nr;
      em_node_retain(fn);
    } else {
      s->leaf = (em_tensor *)t;
      em_tensor_retain(s->leaf);
    }
  }
  n->has_saved = 1;
  return EM_OK;
}

static em_status node_new(em_ag_kind kind, int nin, int nout, const em_ag_params *p,
                          em_node **out) {
  em_node *n = calloc(1, sizeof *n);
  if (!n) return em_fail(EM_E_NOMEM, "autograd: out of memory");
  atomic_init(&n->refcount, 1);
  n->kind = kind;
  if (p) n->p = *p;
  n->name = p && p->name ? p->name : kind_names[kind];
  n->nin = nin;
  n->nout = nout;
  n->nsaved = nin + nout + 4;
  n->next = calloc((size_t)nin + 1, sizeof *n->next);
  n->in = calloc((size_t)nin + 1, sizeof *n->in);
  n->out = calloc((size_t)nout + 1, sizeof *n->out);
  n->saved = calloc((size_t)n->nsaved, sizeof *n->saved);
  n->retain = calloc((size_t)nout + 1, sizeof *n->retain);
  n->buf = calloc((size_t)nout + 1, sizeof *n->buf);
  if (!n->next || !n->in || !n->out || !n->saved || !n->retain || !n->buf) {
    em_node_release(n);
    return em_fail(EM_E_NOMEM, "autograd: out of memory");
  }
  *out = n;
  return EM_OK;
}

/* Makes n the grad_fn of out (output nr k). */
static em_status set_history(em_tensor *out, em_node *n, int k) {
  em_ag_meta *m;
  em_status st = meta_get(out, &m);
  if (st != EM_OK) return st;
  em_node_retain(n);
  if (m->grad_fn && m->retains_grad && m->grad_fn->retain &&
      m->grad_fn->retain[m->output_nr] == out)
    m->grad_fn->retain[m->output_nr] = NULL;
  em_node_release(m->grad_fn);
  m->grad_fn = n;
  m->output_nr = k;
  out->view_version = em_storage_version(out->storage);
  if (m->retains_grad) n->retain[k] = out;
  out->requires_grad = true;
  return EM_OK;
}

static em_status copy_slices(em_node *n, em_tensor *v, em_tensor *b);

em_status em_ag_record(em_ag_kind kind, int nin, const em_tensor *const *in, int nout,
                       em_tensor *const *out, const em_ag_params *p) {
  int any_float = 0;
  for (int k = 0; k < nout; k++) any_float |= is_float(out[k]);
  if (!any_float) return EM_OK;  /* integer/bool results carry no gradient */
  if (nout == 1 && nin >= 1 && in[0] == out[0] &&
      atomic_load(&out[0]->storage->ag_reinterpreted))
    return em_fail(EM_E_RUNTIME, "%s: an in-place operation on a tensor whose storage is also "
                   "viewed as another dtype (view_as_real/view_as_complex, z.real, z.imag) "
                   "in the autograd graph is not supported; clone() the tensor first",
                   p && p->name ? p->name : "autograd");
  em_node *n;
  em_status st = node_new(kind, nin, nout, p, &n);
  if (st != EM_OK) return st;
  for (int i = 0; i < nin; i++) {
    tmeta_of(in[i], &n->in[i]);
    edge_of(in[i], &n->next[i]);
  }
  for (int k = 0; k < nout; k++) tmeta_of(out[k], &n->out[k]);
  /* saved inputs; an input that is also an output (in place) is saved as
  ** an output, and its value from before the op comes in p->pre */
  int keep_in = p ? needed_saves(kind, p, n) : 0;
  for (int i = 0; i < nin && st == EM_OK; i++) {
    /* save_in has a bit for each of the first 31 inputs (cat/stack of
    ** more inputs save none: shifting by 32 or more is undefined) */
    if (!(p && i < 31 && (keep_in >> i & 1)) || !in[i]) continue;
    int k = 0;
    while (k < nout && out[k] != in[i]) k++;
    if (i < 3 && p->pre[i])
      st = save(n, i, p->pre[i], 0, 0);
    else if (i > 0 && in[i] == in[0] && p->pre[0])  /* a.mul_(a): the old a */
      st = save(n, i, p->pre[0], 0, 0);
    else
      st = save(n, k < nout ? EM_AG_SV_OUT(n, k) : i, in[i], k < nout, k);
  }
  for (int k = 0; k < nout && st == EM_OK; k++)
    if (p && k < 31 && (p->save_out >> k & 1)) st = save(n, EM_AG_SV_OUT(n, k), out[k], 1, k);
  if (st == EM_OK && p && p->extra) st = save(n, EM_AG_SV_EXTRA(n), p->extra, 0, 0);
  for (int j = 0; j < 3 && st == EM_OK && p; j++)
    if (p->more[j]) st = save(n, EM_AG_SV_PRE(n, j), p->more[j], 0, 0);
  /* an in-place write into a view rebases its base's history */
  em_tensor *base = NULL;
  if (nout == 1 && nin >= 1 && in[0] == out[0]) base = out[0]->view_base;
  if (st == EM_OK && base && is_float(base)) {
    st = copy_slices(n, out[0], base);
  } else {
    for (int k = 0; k < nout && st == EM_OK; k++)
      if (is_float(out[k])) st = set_history(out[k], n, k);
  }
  em_node_release(n);
  return st;
}

/* PyTorch's error for a node whose saved values were freed by an earlier
** backward (retain_graph not given). */
static em_status freed_graph_error(const em_node *n) {
  return em_fail(EM_E_RUNTIME,
                 "backward: trying to backward through the graph a second time (or "
                 "directly access saved tensors after they have already been freed). "
                 "Saved intermediate values of the graph are freed when you call "
                 ":backward() or autograd.grad(). Specify retain_graph=true if you "
                 "need to backward through the graph a second time or if you need to "
                 "access saved tensors after calling backward (in %s)", n->name);
}

em_status em_ag_saved_get(em_node *n, int k, em_tensor **out) {
  em_ag_saved *s = &n->saved[k];
  if (!s->data) {
    if (n->freed)
      return freed_graph_error(n);
    return em_fail(EM_E_RUNTIME, "autograd: %s has no saved tensor %d", n->name, k + 1);
  }
  uint64_t v = em_storage_version(s->data->storage);
  if (v != s->version) {
    char b[EM_SHAPE_BUF];
    if (s->is_output)
      return em_fail(EM_E_RUNTIME,
                     "one of the variables needed for gradient computation has been "
                     "modified by an inplace operation: [ember.%s %s], which is output %d "
                     "of %s, is at version %llu; expected version %llu instead. Hint: the "
                     "operation that failed was %s",
                     em_dtype_name(s->data->dtype),
                     em_fmt_shape(b, sizeof b, s->data->ndim, s->data->sizes), s->nr + 1,
                     n->name, (unsigned long long)v, (unsigned long long)s->version,
                     n->name);
    return em_fail(EM_E_RUNTIME,
                   "one of the variables needed for gradient computation has been "
                   "modified by an inplace operation: [ember.%s %s] is at version %llu; "
                   "expected version %llu instead. Hint: the operation that failed was %s",
                   em_dtype_name(s->data->dtype),
                   em_fmt_shape(b, sizeof b, s->data->ndim, s->data->sizes),
                   (unsigned long long)v, (unsigned long long)s->version, n->name);
  }
  /* recording the backward (create_graph): the saved tensor comes back
  ** with its history, so gradients flow through it */
  if (em_grad_enabled() && (s->fn || s->leaf)) {
    if (s->leaf) {
      em_tensor_retain(s->leaf);
      *out = s->leaf;
      return EM_OK;
    }
    em_tensor *t;
    em_status st = plain_alias(s->data, &t);
    if (st == EM_OK) st = set_history(t, s->fn, s->nr);
    if (st != EM_OK) {
      em_tensor_release(t);
      return st;
    }
    *out = t;
    return EM_OK;
  }
  em_tensor_retain(s->data);
  *out = s->data;
  return EM_OK;
}

/* -- Custom ops ------------------------------------------------------------------ */

em_status em_autograd_record(const char *name, int nin, const em_tensor *const *inputs,
                             int nout, em_tensor *const *outputs, int nsaved,
                             const em_tensor *const *saved, em_autograd_backward_fn backward,
                             void *ctx, void (*free_ctx)(void *ctx)) {
  int any_float = 0;
  for (int k = 0; k < nout; k++) any_float |= is_float(outputs[k]);
  if (!em_grad_enabled() || !em_ag_any(nin, inputs) || !any_float || nin < 0 || nout < 0 ||
      nsaved < 0) {
    if (free_ctx) free_ctx(ctx);
    if (nin < 0 || nout < 0 || nsaved < 0)
      return em_fail(EM_E_VALUE, "autograd_record: negative counts");
    return EM_OK;
  }
  em_ag_params p;
  memset(&p, 0, sizeof p);
  em_node *n;
  em_status st = node_new(EM_AG_CUSTOM, nin, nout, &p, &n);
  if (st != EM_OK) {
    if (free_ctx) free_ctx(ctx);
    return st;
  }
  n->custom_fn = backward;
  n->custom_ctx = ctx;
  n->custom_free = free_ctx;
  n->owned_name = strdup(name ? name : "CustomBackward");
  em_ag_saved *sv = calloc((size_t)nsaved + 1, sizeof *sv);
  if (!n->owned_name || !sv) {
    free(sv);
    em_node_release(n);
    return em_fail(EM_E_NOMEM, "autograd_record: out of memory");
  }
  n->name = n->owned_name;
  free(n->saved);
  n->saved = sv;
  n->nsaved = nsaved;
  for (int i = 0; i < nin; i++) {
    tmeta_of(inputs[i], &n->in[i]);
    edge_of(inputs[i], &n->next[i]);
  }
  for (int k = 0; k < nout; k++) tmeta_of(outputs[k], &n->out[k]);
  for (int j = 0; j < nsaved && st == EM_OK; j++) {
    if (!saved[j]) continue;
    int k = 0;
    while (k < nout && outputs[k] != saved[j]) k++;
    st = save(n, j, saved[j], k < nout, k);
  }
  for (int k = 0; k < nout && st == EM_OK; k++)
    if (is_float(outputs[k])) st = set_history(outputs[k], n, k);
  em_node_release(n);
  return st;
}

/* -- Gather-like ops ------------------------------------------------------------ */

em_status em_ag_arange_like(const em_tensor *t, em_tensor **out) {
  em_scalar one = {EM_SCALAR_INT, 1, 0}, end = {EM_SCALAR_INT, em_tensor_numel(t) + 1, 0};
  em_tensor *a;
  int on = em_ag_pause();
  em_status st = em_arange(one, end, one, EM_INT64, em_tensor_device(t), &a);
  if (st == EM_OK) {
    st = em_tensor_alloc(a->storage, 0, t->ndim, t->sizes, t->strides, EM_INT64, out);
    if (st == EM_OK) em_contiguous_strides(t->ndim, t->sizes, (*out)->strides);
    em_tensor_release(a);
  }
  em_ag_resume(on);
  return st;
}

em_status em_ag_record_gather(const char *name, const em_tensor *in, const em_tensor *pos,
                              em_tensor *out) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = name;
  p.extra = pos;
  p.i[0] = out->storage == in->storage;  /* a view */
  const em_tensor *ins[1] = {in};
  return em_ag_record(EM_AG_GATHER, 1, ins, 1, &out, &p);
}

int em_ag_strided_view(const em_tensor *b, const em_tensor *v) {
  int64_t n = em_tensor_numel(b), st[EM_MAX_DIMS], sz[EM_MAX_DIMS];
  int k = 0;
  if (v->offset < b->offset) return 0;
  int64_t hi = v->offset - b->offset;  /* the last element's position in b */
  for (int d = 0; d < v->ndim; d++) {
    if (v->sizes[d] == 0) return 1;      /* no elements: zeros */
    if (v->sizes[d] == 1) continue;
    if (v->strides[d] <= 0) return 0;    /* broadcast or reversed */
    hi += (v->sizes[d] - 1) * v->strides[d];
    int j = k++;                         /* insert by stride */
    while (j > 0 && st[j - 1] > v->strides[d]) {
      st[j] = st[j - 1];
      sz[j] = sz[j - 1];
      j--;
    }
    st[j] = v->strides[d];
    sz[j] = v->sizes[d];
  }
  if (hi >= n) return 0;
  int64_t reach = 0;  /* the span of the dims with smaller strides, plus one */
  for (int j = 0; j < k; j++) {
    if (st[j] <= reach) return 0;        /* overlaps the smaller dims */
    reach += (sz[j] - 1) * st[j];
  }
  return 1;
}

em_status em_ag_record_strided(const char *name, const em_tensor *b, em_tensor *v) {
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = name;
  p.i[0] = v->offset - b->offset;
  p.nlist = v->ndim;
  for (int d = 0; d < v->ndim; d++) p.list[d] = v->strides[d];
  const em_tensor *ins[1] = {b};
  return em_ag_record(EM_AG_STRIDED, 1, ins, 1, &v, &p);
}

em_status em_ag_record_indexed(const char *name, const em_tensor *t, int64_t dim,
                               int keepdim, const em_tensor *indices, em_tensor *values) {
  int on = em_ag_pause();
  em_tensor *ar = NULL, *idx = NULL, *pos = NULL, *pos2 = NULL;
  em_status st = em_ag_arange_like(t, &ar);
  int nd = t->ndim;
  if (st == EM_OK && nd == 0) {  /* a 0-d input: the one element */
    st = em_clone(ar, &pos2);
  } else if (st == EM_OK) {
    if (!keepdim && indices->ndim < nd) st = em_unsqueeze(indices, dim, &idx);
    else { em_tensor_retain((em_tensor *)indices); idx = (em_tensor *)indices; }
    if (st == EM_OK) st = em_gather(ar, dim, idx, &pos);
    if (st == EM_OK) st = em_reshape(pos, values->ndim, values->sizes, &pos2);
  }
  em_ag_resume(on);
  if (st == EM_OK) st = em_ag_record_gather(name, t, pos2, values);
  em_tensor_release(ar);
  em_tensor_release(idx);
  em_tensor_release(pos);
  em_tensor_release(pos2);
  return st;
}

em_status em_ag_record_inplace(const char *name, em_tensor *t, const em_tensor *src,
                               const em_tensor *pos, int accumulate, double alpha) {
  if (!em_ag_diff_dtype(t->dtype)) return EM_OK;
  em_ag_params p;
  memset(&p, 0, sizeof p);
  p.name = name;
  p.extra = pos;
  p.i[0] = accumulate;
  p.d[0] = alpha;
  const em_tensor *in[2] = {t, src};
  return em_ag_record(EM_AG_INDEXPUT, src ? 2 : 1, in, 1, &t, &p);
}

em_status em_ag_unsupported(const char *op, const em_tensor *t, const em_tensor *src) {
  if (!em_grad_enabled() || !(t->requires_grad || (src && src->requires_grad))) return EM_OK;
  return em_fail(EM_E_RUNTIME, "%s: automatic differentiation is not supported for this "
                 "operation; run it under no_grad or on detached tensors", op);
}

/* -- Views and in-place writes into them ---------------------------------------- */

/* t takes over v's history (grad_fn and output nr): the in-place view ops
** (as_strided_, squeeze_, t_, ...) record the out-of-place view v of t and
** give t its node. t keeps its own base (none when t is not a view: v's base
** is then t itself); a view's version is v's, taken when v was recorded. */
em_status em_ag_take_history(em_tensor *t, const em_tensor *v) {
  em_ag_meta *mv = meta_of(v), *mt = meta_of(t);
  if (!mv || !mv->grad_fn || !mt)
    return em_fail(EM_E_RUNTIME, "as_strided_: internal error: no history to take");
  em_node_retain(mv->grad_fn);
  em_node_release(mt->grad_fn);
  mt->grad_fn = mv->grad_fn;
  mt->output_nr = mv->output_nr;
  if (t->view_base) t->view_version = v->view_version;
  return EM_OK;
}

em_status em_ag_set_base(em_tensor *out, const em_tensor *src) {
  em_tensor *b = src->view_base ? src->view_base : (em_tensor *)src;
  em_tensor_retain(b);
  em_tensor_release(out->view_base);
  out->view_base = b;
  out->view_version = em_storage_version(out->storage);
  return EM_OK;
}

/* The view's elements taken from its base's current history. On failure
** (out of memory) the old history stays. */
static void refresh_view(em_tensor *t) {
  em_tensor *b = t->view_base;
  t->view_version = em_storage_version(t->storage);
  if (!b->requires_grad) return;  /* b is never a view: no history to refresh */
  em_tensor *pos = NULL;
  if (em_ag_view_positions(b, t, &pos) == EM_OK) {
    em_status st = em_ag_record_gather("AsStridedBackward0", b, pos, t);
    (void)st;
  }
  em_tensor_release(pos);
  t->view_version = em_storage_version(t->storage);
}

static void extent(const em_tensor *t, int64_t *lo, int64_t *hi) {
  *lo = *hi = t->offset;
  for (int d = 0; d < t->ndim; d++) {
    int64_t span = (t->sizes[d] - 1) * t->strides[d];
    if (span < 0) *lo += span; else *hi += span;
  }
}

/* b contiguous: element (i1..in) of v is flat position
** 1 + (v.offset - b.offset) + sum(ik * stride_k) of b. */
static em_status contiguous_positions(const em_tensor *b, const em_tensor *v,
                                      em_tensor **pos) {
  em_scalar first = {EM_SCALAR_INT, 1 + v->offset - b->offset, 0};
  em_tensor *p = NULL;
  em_status st = em_full(v->ndim, v->sizes, first, EM_INT64, em_tensor_device(v), &p);
  for (int d = 0; d < v->ndim && st == EM_OK; d++) {
    if (v->sizes[d] <= 1 || v->strides[d] == 0) continue;
    em_scalar z = {EM_SCALAR_INT, 0, 0}, e = {EM_SCALAR_INT, v->sizes[d] * v->strides[d], 0};
    em_scalar step = {EM_SCALAR_INT, v->strides[d], 0};
    em_tensor *ar = NULL, *arv = NULL;
    int64_t sz[EM_MAX_DIMS];
    for (int k = 0; k < v->ndim; k++) sz[k] = k == d ? v->sizes[d] : 1;
    st = em_arange(z, e, step, EM_INT64, em_tensor_device(v), &ar);
    if (st == EM_OK) st = em_reshape(ar, v->ndim, sz, &arv);
    if (st == EM_OK) {
      em_operand ops[2] = {{p, {EM_SCALAR_INT, 0, 0}}, {arv, {EM_SCALAR_INT, 0, 0}}};
      st = em_elementwise(EM_OP_ADD, 2, ops, NULL, p, NULL);
    }
    em_tensor_release(ar);
    em_tensor_release(arv);
  }
  if (st != EM_OK) {
    em_tensor_release(p);
    return st;
  }
  *pos = p;
  return EM_OK;
}

em_status em_ag_view_positions(const em_tensor *b, const em_tensor *v, em_tensor **pos) {
  int on = em_ag_pause();
  int64_t vlo0, vhi0;
  extent(v, &vlo0, &vhi0);
  if (em_tensor_is_contiguous(b) &&
      (em_tensor_numel(v) == 0 ||
       (vlo0 >= b->offset && vhi0 < b->offset + em_tensor_numel(b)))) {
    em_status st = contiguous_positions(b, v, pos);
    em_ag_resume(on);
    return st;
  }
  int64_t lo, hi, vlo, vhi;
  extent(b, &lo, &hi);
  extent(v, &vlo, &vhi);
  if (em_tensor_numel(v) == 0) vlo = vhi = lo;
  if (vlo < lo) lo = vlo;
  if (vhi > hi) hi = vhi;
  int64_t e = hi - lo + 1;
  em_scalar outside = {EM_SCALAR_INT, em_tensor_numel(b) + 1, 0};
  em_tensor *buf = NULL, *bv = NULL, *vv = NULL, *ar = NULL;
  em_status st = em_full(1, &e, outside, EM_INT64, em_tensor_device(b), &buf);
  if (st == EM_OK)
    st = em_tensor_alloc(buf->storage, b->offset - lo, b->ndim, b->sizes, b->strides,
                         EM_INT64, &bv);
  if (st == EM_OK) st = em_ag_arange_like(b, &ar);
  if (st == EM_OK && em_tensor_numel(b) > 0) st = em_copy_(bv, ar);
  if (st == EM_OK)
    st = em_tensor_alloc(buf->storage, v->offset - lo, v->ndim, v->sizes, v->strides,
                         EM_INT64, &vv);
  if (st == EM_OK) st = em_clone(vv, pos);
  em_tensor_release(buf);
  em_tensor_release(bv);
  em_tensor_release(vv);
  em_tensor_release(ar);
  em_ag_resume(on);
  return st;
}

/* In-place op node n wrote into view v of base b: b's history becomes a
** CopySlices over n, and v becomes a fresh view of b. */
static em_status copy_slices(em_node *n, em_tensor *v, em_tensor *b) {
  em_tensor *pos = NULL;
  em_status st = em_ag_view_positions(b, v, &pos);
  em_node *cs = NULL;
  em_ag_params p;
  memset(&p, 0, sizeof p);
  if (st == EM_OK) st = node_new(EM_AG_COPYSLICES, n->nin, 1, &p, &cs);
  if (st == EM_OK) {
    tmeta_of(b, &cs->in[0]);
    edge_of(b, &cs->next[0]);
    tmeta_of(b, &cs->out[0]);
    for (int i = 1; i < n->nin; i++) {
      cs->in[i] = n->in[i];
      cs->next[i] = n->next[i];
      em_node_retain(cs->next[i].node);
      em_tensor_retain(cs->next[i].leaf);
    }
    em_node_retain(n);
    cs->inner = n;
    st = save(cs, EM_AG_SV_EXTRA(cs), pos, 0, 0);
  }
  if (st == EM_OK) st = set_history(b, cs, 0);
  if (st == EM_OK) st = em_ag_record_gather("AsStridedBackward0", b, pos, v);
  em_node_release(cs);
  em_tensor_release(pos);
  return st;
}

/* -- In-place checks -------------------------------------------------------------- */

em_status em_ag_check_inplace(const char *op, const em_tensor *t) {
  if (t->hook_view) /* callers ask only in grad mode */
    return em_fail(EM_E_VALUE, "%s: the output of a module with a full backward hook is a view "
                   "and is being modified in-place; this is refused (PyTorch's "
                   "BackwardHookFunction rule): clone() the output first", op);
  if (t->multi_view) /* callers ask only in grad mode */
    return em_fail(EM_E_VALUE, "%s: the tensor is a view returned by a function that returns "
                   "several views (split, chunk, unbind), or a view of one, and is being modified "
                   "in-place; this is refused (PyTorch's rule): clone() it first", op);
  if (t->nograd_view) /* callers ask only in grad mode */
    return em_fail(EM_E_VALUE, "%s: a view was created in no_grad mode and is being modified "
                   "in-place with grad mode enabled; this is ambiguous and refused (PyTorch's "
                   "rule): make the view in grad mode, or write into a clone", op);
  if (!t->requires_grad) return EM_OK;
  em_node *fn = grad_fn_of(t);
  /* PyTorch's check_inplace: a view that requires grad whose base is a leaf
  ** (the base need not require grad: requires_grad_() on a view of a tensor
  ** that does not, then a view of that) */
  em_tensor *b = t->view_base;
  if (b && !grad_fn_of(b))
    return em_fail(EM_E_VALUE, "%s: a view of a leaf tensor that requires grad is "
                   "being used in an in-place operation", op);
  if (!fn)
    return em_fail(EM_E_VALUE, "%s: a leaf tensor that requires grad is being used in "
                   "an in-place operation", op);
  return EM_OK;
}

em_status em_check_out(const char *op, const em_tensor *out) {
  if (!out || !em_grad_enabled()) return EM_OK;
  if (out->requires_grad) return em_fail(EM_E_VALUE, EM_MSG_OUT_NOT_DIFFERENTIABLE, op);
  if (out->nograd_view || out->hook_view || out->multi_view) return em_ag_check_inplace(op, out);
  return EM_OK;
}

/* -- Public flags and accessors ------------------------------------------------------ */

em_tensor *em_tensor_grad(const em_tensor *t) {
  em_ag_meta *m = meta_of(t);
  if (!m || !m->grad) return NULL;
  em_tensor_retain(m->grad);
  return m->grad;
}

em_status em_tensor_set_grad(em_tensor *t, em_tensor *g) {
  if (g) {
    char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
    int same = g->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = g->sizes[d] == t->sizes[d];
    if (!same)
      return em_fail(EM_E_VALUE, "grad: assigned grad has data of a different size: %s "
                     "for a tensor of size %s",
                     em_fmt_shape(b1, sizeof b1, g->ndim, g->sizes),
                     em_fmt_shape(b2, sizeof b2, t->ndim, t->sizes));
    if (g->dtype != t->dtype)
      return em_fail(EM_E_TYPE, "grad: assigned grad has data of type ember.%s for a "
                     "tensor of type ember.%s", em_dtype_name(g->dtype),
                     em_dtype_name(t->dtype));
  }
  em_ag_meta *m;
  em_status st = meta_get(t, &m);
  if (st != EM_OK) return st;
  em_tensor_retain(g);
  em_tensor_release(m->grad);
  m->grad = g;
  return EM_OK;
}

const char *em_tensor_grad_fn_name(const em_tensor *t) {
  em_node *fn = grad_fn_of(t);
  return fn ? fn->name : NULL;
}

/* Names the node that made out as PyTorch names it, when that node is new
** (not src's own: an op that handed src back made none). name is static. */
void em_ag_rename(const em_tensor *src, const em_tensor *out, const char *name) {
  em_node *fn = out ? grad_fn_of(out) : NULL;
  if (!fn || fn->owned_name || (src && grad_fn_of(src) == fn)) return;
  fn->name = name;
}

void em_tensor_mark_hook_view(em_tensor *t) {
  if (t) t->hook_view = true;
}

em_status em_tensor_name_grad_fn(em_tensor *t, const char *name) {
  if (!name || !*name) return em_fail(EM_E_VALUE, "name_grad_fn: expected a non-empty name");
  em_node *fn = grad_fn_of(t);
  if (!fn) return em_fail(EM_E_VALUE, "name_grad_fn: the tensor has no grad_fn (a leaf)");
  char *copy = strdup(name);
  if (!copy) return em_fail(EM_E_NOMEM, "name_grad_fn: out of memory");
  free(fn->owned_name);
  fn->owned_name = copy;
  fn->name = copy;
  return EM_OK;
}

int em_tensor_is_leaf(const em_tensor *t) { return grad_fn_of(t) == NULL; }

int em_tensor_retains_grad(const em_tensor *t) {
  return t->autograd && meta_of(t)->retains_grad;
}

em_status em_tensor_retain_grad(em_tensor *t) {
  if (!t->requires_grad)
    return em_fail(EM_E_RUNTIME, "retain_grad: can't retain_grad on Tensor that has "
                   "requires_grad=false");
  em_node *fn = grad_fn_of(t);
  if (!fn) return EM_OK;  /* leaves keep their grad anyway */
  em_ag_meta *m = meta_of(t);
  m->retains_grad = 1;
  fn->retain[m->output_nr] = t;
  return EM_OK;
}

em_status em_tensor_requires_grad_(em_tensor *t, int on) {
  if (grad_fn_of(t)) {
    if (on) return EM_OK;
    return em_fail(EM_E_RUNTIME,
                   "requires_grad_: you can only change requires_grad flags of leaf "
                   "variables. If you want to use a computed variable in a subgraph that "
                   "doesn't require differentiation use var_no_grad = var:detach().");
  }
  return em_tensor_set_requires_grad(t, on);
}

em_status em_detach(const em_tensor *t, em_tensor **out) { return plain_alias(t, out); }

em_status em_detach_(em_tensor *t) {
  /* PyTorch refuses a differentiable view: its history is its base's */
  if (t->view_base)
    return em_fail(EM_E_VALUE, "detach_: can't detach views in-place; use detach() instead");
  em_ag_meta *m = meta_of(t);
  if (m && m->grad_fn) {
    if (m->retains_grad && m->grad_fn->retain[m->output_nr] == t)
      m->grad_fn->retain[m->output_nr] = NULL;
    em_node_release(m->grad_fn);
    m->grad_fn = NULL;
    m->retains_grad = 0;
  }
  t->requires_grad = false;
  return EM_OK;
}

em_grad_fn *em_tensor_grad_fn(const em_tensor *t) {
  em_node *fn = grad_fn_of(t);
  em_node_retain(fn);
  return fn;
}
void em_grad_fn_retain(em_grad_fn *fn) { em_node_retain(fn); }
void em_grad_fn_release(em_grad_fn *fn) {
  if (fn) em_node_release(fn);
}
const char *em_grad_fn_name(const em_grad_fn *fn) { return fn->name; }
int em_grad_fn_next(const em_grad_fn *fn, int i, em_grad_fn **next, em_tensor **leaf, int *nr) {
  if (!fn || i < 0 || i >= fn->nin) return 0;
  const em_ag_edge *e = &fn->next[i];
  *next = e->node;
  em_node_retain(e->node);
  *leaf = e->node ? NULL : e->leaf;
  if (*leaf) em_tensor_retain(*leaf);
  *nr = e->nr;
  return 1;
}

int em_tensor_grad_fn_next(const em_tensor *t, int i, const char **name, int *nr) {
  em_node *fn = grad_fn_of(t);
  if (!fn || i < 0 || i >= fn->nin) return 0;
  em_ag_edge *e = &fn->next[i];
  *name = e->node ? e->node->name : e->leaf ? "AccumulateGrad" : NULL;
  *nr = e->nr;
  return 1;
}

/* -- Backward engine -------------------------------------------------------------------- */

static _Atomic uint64_t run_counter;

typedef struct run {
  uint64_t mark;
  em_node **nodes;
  int64_t nnodes, cap;
  int create_graph, accumulate;
  int ntargets;
  const em_tensor *const *targets;
  em_node **tnode;   /* target i: (tnode, tnr) or a leaf */
  int *tnr;
  em_tensor **results;
} run;

static em_status push_node(run *r, em_node *n) {
  if (r->nnodes == r->cap) {
    int64_t cap = r->cap ? r->cap * 2 : 64;
    em_node **b = realloc(r->nodes, sizeof *b * (size_t)cap);
    if (!b) return em_fail(EM_E_NOMEM, "backward: out of memory");
    r->nodes = b;
    r->cap = cap;
  }
  r->nodes[r->nnodes++] = n;
  return EM_OK;
}

/* Post-accumulate-grad hooks: a hooked leaf counts the edges into it from
** the nodes of this run (discover), and its hook runs once, after the last
** of them has delivered (or had nothing to deliver), when at least one
** gradient reached its .grad: PyTorch's AccumulateGrad runs once per
** backward, after every contribution to the leaf is summed. */
static void hook_expect(run *r, const em_tensor *leaf) {
  em_ag_meta *m = meta_of(leaf);
  if (!r->accumulate || !m || (!m->hook && !m->pre)) return;
  if (m->hook_mark != r->mark) {
    m->hook_mark = r->mark;
    m->hook_pending = 0;
    m->hook_got = 0;
    em_tensor_release(m->pre_buf); /* left by a failed run */
    m->pre_buf = NULL;
  }
  m->hook_pending++;
}

static em_status accumulate_grad(em_tensor *t, em_tensor *g, int create_graph);

/* Runs a tensor hook on g: *out is g (a new reference) or its replacement,
** checked against g's shape and dtype. */
static em_status run_tensor_hook(em_tensor_hook_fn fn, void *ctx, em_tensor *g,
                                 em_tensor **out) {
  em_tensor *x = NULL;
  em_status st = fn(ctx, g, &x);
  if (st != EM_OK) {
    em_tensor_release(x);
    return st;
  }
  if (!x) {
    em_tensor_retain(g);
    *out = g;
    return EM_OK;
  }
  int same = x->ndim == g->ndim;
  for (int d = 0; same && d < g->ndim; d++) same = x->sizes[d] == g->sizes[d];
  if (!same || x->dtype != g->dtype) {
    char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
    st = em_fail(EM_E_RUNTIME, "backward: a hook returned a gradient of %s %s where %s %s "
                 "was expected (hooks may not change the shape or the dtype)",
                 em_dtype_name(x->dtype), em_fmt_shape(b1, sizeof b1, x->ndim, x->sizes),
                 em_dtype_name(g->dtype), em_fmt_shape(b2, sizeof b2, g->ndim, g->sizes));
    em_tensor_release(x);
    return st;
  }
  *out = x;
  return EM_OK;
}

static em_status hook_arrive(run *r, em_tensor *leaf) {
  em_ag_meta *m = meta_of(leaf);
  if (!r->accumulate || !m || (!m->hook && !m->pre) || m->hook_mark != r->mark) return EM_OK;
  if (--m->hook_pending > 0) return EM_OK;
  if (m->pre && m->pre_buf) {
    em_tensor *g = m->pre_buf, *h = NULL;
    m->pre_buf = NULL;
    em_status st = run_tensor_hook(m->pre, m->pre_ctx, g, &h);
    em_tensor_release(g);
    if (st == EM_OK) st = accumulate_grad(leaf, h, r->create_graph);
    em_tensor_release(h);
    if (st != EM_OK) return st;
  }
  if (!m->hook || !m->hook_got) return EM_OK;
  m->hook_got = 0;
  return m->hook(m->hook_ctx, leaf);
}

/* Every node reachable from the roots, each once, with its count of edges
** from other reachable nodes. */
static em_status discover(run *r, int nroots, em_node *const *roots) {
  em_status st = EM_OK;
  for (int i = 0; i < nroots && st == EM_OK; i++) {
    em_node *n = roots[i];
    if (!n || n->mark == r->mark) continue;
    n->mark = r->mark;
    n->deps = 0;
    st = push_node(r, n);
  }
  /* r->nodes doubles as the worklist: scan it while it grows */
  for (int64_t w = 0; w < r->nnodes && st == EM_OK; w++) {
    em_node *n = r->nodes[w];
    for (int i = 0; i < n->nin && st == EM_OK; i++) {
      em_node *c = n->next[i].node;
      if (!c && n->next[i].leaf) hook_expect(r, n->next[i].leaf);
      if (!c) continue;
      if (c->mark != r->mark) {
        c->mark = r->mark;
        c->deps = 0;
        st = push_node(r, c);
      }
      c->deps++;
    }
  }
  return st;
}

static em_status add_into(em_tensor **slot, em_tensor *g) {
  if (!*slot) {
    em_tensor_retain(g);
    *slot = g;
    return EM_OK;
  }
  em_tensor *s;
  em_status st = em_binary(EM_OP_ADD, *slot, g, &s);
  if (st != EM_OK) return st;
  em_tensor_release(*slot);
  *slot = s;
  return EM_OK;
}

/* A gradient for a .grad: owned (not shared with anything the caller holds)
** unless the graph of the gradient is being kept. */
static em_status own_grad(em_tensor *g, int create_graph, em_tensor **out) {
  if (create_graph || (em_tensor_refcount(g) == 1 && em_tensor_is_contiguous(g) &&
                       !g->autograd)) {
    em_tensor_retain(g);
    *out = g;
    return EM_OK;
  }
  return em_clone(g, out);
}

static em_status accumulate_grad(em_tensor *t, em_tensor *g, int create_graph) {
  em_ag_meta *m;
  em_status st = meta_get(t, &m);
  if (st != EM_OK) return st;
  m->hook_got = 1;
  if (!m->grad) return own_grad(g, create_graph, &m->grad);
  if (!create_graph && !m->grad->requires_grad && em_tensor_refcount(m->grad) >= 1 &&
      !em_has_internal_overlap(m->grad)) {
    em_operand ops[2] = {{m->grad, {EM_SCALAR_INT, 0, 0}}, {g, {EM_SCALAR_INT, 0, 0}}};
    return em_elementwise(EM_OP_ADD, 2, ops, NULL, m->grad, NULL);
  }
  em_tensor *s;
  st = em_binary(EM_OP_ADD, m->grad, g, &s);
  if (st != EM_OK) return st;
  em_tensor_release(m->grad);
  m->grad = s;
  return EM_OK;
}

static int target_of_leaf(run *r, const em_tensor *leaf) {
  for (int j = 0; j < r->ntargets; j++)
    if (!r->tnode[j] && r->targets[j] == leaf) return j;
  return -1;
}

/* Sends g along edge e. */
static em_status deliver(run *r, const em_ag_edge *e, em_tensor *g) {
  if (e->node) return add_into(&e->node->buf[e->nr], g);
  if (!e->leaf) return EM_OK;
  int j = target_of_leaf(r, e->leaf);
  if (j >= 0) return add_into(&r->results[j], g);
  if (!r->accumulate) return EM_OK;
  em_ag_meta *m = meta_of(e->leaf);
  if (m && m->pre && m->hook_mark == r->mark) return add_into(&m->pre_buf, g);
  return accumulate_grad(e->leaf, g, r->create_graph);
}

/* g summed down to shape (ndim, sizes) over the dims a broadcast added. */
static em_status sum_to(em_node *n, int i, em_tensor *g, const em_ag_tmeta *m,
                        em_tensor **out) {
  int same = g->ndim == m->ndim;
  for (int d = 0; same && d < m->ndim; d++) same = g->sizes[d] == m->sizes[d];
  if (same) {
    em_tensor_retain(g);
    *out = g;
    return EM_OK;
  }
  em_tensor *gx = NULL;
  if (g->ndim < m->ndim) {  /* the target has extra leading dims (of size 1) */
    int64_t sz[EM_MAX_DIMS];
    int extra = m->ndim - g->ndim;
    for (int d = 0; d < m->ndim; d++) sz[d] = d < extra ? 1 : g->sizes[d - extra];
    em_status st = em_reshape(g, m->ndim, sz, &gx);
    if (st != EM_OK) return st;
    st = sum_to(n, i, gx, m, out);
    em_tensor_release(gx);
    return st;
  }
  int lead = g->ndim - m->ndim, ok = lead >= 0, nd = 0;
  int64_t dims[EM_MAX_DIMS];
  for (int d = 0; ok && d < g->ndim; d++) {
    if (d < lead) { dims[nd++] = d + 1; continue; }
    int64_t want = m->sizes[d - lead];
    if (want == g->sizes[d]) continue;
    if (want == 1) dims[nd++] = d + 1;
    else ok = 0;
  }
  if (!ok) {
    char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
    return em_fail(EM_E_RUNTIME, "backward: function %s returned an invalid gradient at "
                   "index %d - got %s but expected shape compatible with %s", n->name,
                   i + 1, em_fmt_shape(b1, sizeof b1, g->ndim, g->sizes),
                   em_fmt_shape(b2, sizeof b2, m->ndim, m->sizes));
  }
  em_tensor *s = NULL, *rv = NULL, *rs = NULL, *rc = NULL;
  em_status st;
  if (em_dtype_kindof(g->dtype) == EM_KIND_COMPLEX) {  /* the sum of the (re, im) view */
    st = em_view_as_real(g, &rv);
    if (st == EM_OK) st = em_reduce(EM_REDUCE_SUM, rv, nd, dims, 1, -1, &rs);
    if (st == EM_OK) st = em_contiguous(rs, &rc);
    if (st == EM_OK) st = em_view_as_complex(rc, &s);
    em_tensor_release(rv);
    em_tensor_release(rs);
    em_tensor_release(rc);
  } else {
    st = em_reduce(EM_REDUCE_SUM, g, nd, dims, 1, -1, &s);
  }
  if (st != EM_OK) return st;
  st = em_reshape(s, m->ndim, m->sizes, out);
  em_tensor_release(s);
  return st;
}

static em_status zeros_of(const em_ag_tmeta *m, em_tensor **out) {
  return em_zeros(m->ndim, m->sizes, m->dtype, m->device, out);
}

/* Anomaly mode (T.autograd.set_detect_anomaly): every gradient a node
** returns is checked for NaN, and the backward fails naming the node, as
** PyTorch's "Function 'XBackward0' returned nan values". Per thread. */
static _Thread_local int anomaly_on;
void em_set_detect_anomaly(int on) { anomaly_on = on != 0; }
int em_is_anomaly_enabled(void) { return anomaly_on; }

static em_status check_nan(const em_node *n, int i, const em_tensor *g) {
  em_dtype_kind k = em_dtype_kindof(g->dtype);
  if ((k != EM_KIND_FLOAT && k != EM_KIND_COMPLEX) || g->storage->device.type == EM_META)
    return EM_OK;
  int on = em_ag_pause();
  em_tensor *nan = NULL, *any = NULL;
  int64_t hit = 0;
  em_status st = em_unary(EM_OP_ISNAN, g, &nan);
  if (st == EM_OK) st = em_reduce(EM_REDUCE_ANY, nan, 0, NULL, 0, -1, &any);
  if (st == EM_OK) st = em_get_i64(any, 0, &hit);
  em_tensor_release(nan);
  em_tensor_release(any);
  em_ag_resume(on);
  if (st == EM_OK && hit)
    st = em_fail(EM_E_RUNTIME, "backward: Function '%s' returned nan values in its gradient "
                 "for input %d (anomaly detection)", n->name, i + 1);
  return st;
}

/* Runs one ready node: its summed output gradients in buf. */
static em_status run_node(run *r, em_node *n) {
  em_status st = EM_OK;
  for (em_ag_prehook *h = n->prehooks; h && st == EM_OK; h = h->next) {
    if (h->nr >= n->nout || !n->buf[h->nr]) continue;
    em_tensor *g = NULL;
    st = run_tensor_hook(h->fn, h->ctx, n->buf[h->nr], &g);
    if (st == EM_OK) {
      em_tensor_release(n->buf[h->nr]);
      n->buf[h->nr] = g;
    }
  }
  if (st != EM_OK) return st;
  /* gradients wanted at this node's outputs (autograd.grad of non-leaves),
  ** and retained ones (by autograd.grad too, as PyTorch's retain_grad hook) */
  for (int j = 0; j < r->ntargets && st == EM_OK; j++)
    if (r->tnode[j] == n && n->buf[r->tnr[j]]) st = add_into(&r->results[j], n->buf[r->tnr[j]]);
  for (int k = 0; k < n->nout && st == EM_OK; k++)
    if (n->retain[k] && n->buf[k])
      st = accumulate_grad(n->retain[k], n->buf[k], r->create_graph);
  if (st != EM_OK) return st;
  int needed = 0;
  for (int i = 0; i < n->nin; i++) needed |= n->next[i].node || n->next[i].leaf;
  if (!needed) return EM_OK;
  if (n->freed)
    return freed_graph_error(n);
  for (int k = 0; k < n->nout && st == EM_OK; k++)
    if (!n->buf[k] && em_ag_diff_dtype(n->out[k].dtype) &&
        n->out[k].is_tensor)
      st = zeros_of(&n->out[k], &n->buf[k]);
  if (st != EM_OK) return st;
  em_tensor **gin = calloc((size_t)n->nin + 1, sizeof *gin);
  if (!gin) return em_fail(EM_E_NOMEM, "backward: out of memory");
  st = em_ag_apply(n, n->buf, gin);
  for (int i = 0; anomaly_on && i < n->nin && st == EM_OK; i++)
    if (gin[i]) st = check_nan(n, i, gin[i]);
  for (int i = 0; i < n->nin && st == EM_OK; i++) {
    em_ag_edge *e = &n->next[i];
    if (!gin[i] && !e->node && e->leaf) st = hook_arrive(r, e->leaf);
    if (!gin[i] || (!e->node && !e->leaf)) continue;
    em_tensor *g = NULL, *c = NULL;
    st = sum_to(n, i, gin[i], &n->in[i], &g);
    em_tensor_release(gin[i]);  /* so a fresh gradient can become .grad uncopied */
    gin[i] = NULL;
    if (st == EM_OK && g->dtype != n->in[i].dtype) {
      st = em_to(g, n->in[i].dtype, n->in[i].device, 0, &c);
      em_tensor_release(g);
      g = c;
    }
    if (st == EM_OK) st = deliver(r, e, g);
    if (st == EM_OK && !e->node) st = hook_arrive(r, e->leaf);
    em_tensor_release(g);
  }
  for (int i = 0; i < n->nin; i++) em_tensor_release(gin[i]);
  free(gin);
  return st;
}

static void clear_bufs(em_node *n) {
  for (int k = 0; k < n->nout; k++) {
    em_tensor_release(n->buf[k]);
    n->buf[k] = NULL;
  }
}

static em_status run_backward(int nroots, em_tensor *const *roots, em_tensor *const *grads,
                              int ntargets, const em_tensor *const *targets,
                              em_tensor **results, int keep_graph, int create_graph,
                              int accumulate, const char *op) {
  run r;
  memset(&r, 0, sizeof r);
  r.mark = atomic_fetch_add(&run_counter, 1) + 1;
  r.create_graph = create_graph;
  r.accumulate = accumulate;
  r.ntargets = ntargets;
  r.targets = targets;
  r.results = results;
  em_status st = EM_OK;
  em_tensor **rg = calloc((size_t)nroots + 1, sizeof *rg);
  em_node **rn = calloc((size_t)nroots + 1, sizeof *rn);
  r.tnode = calloc((size_t)ntargets + 1, sizeof *r.tnode);
  r.tnr = calloc((size_t)ntargets + 1, sizeof *r.tnr);
  if (!rg || !rn || !r.tnode || !r.tnr) st = em_fail(EM_E_NOMEM, "%s: out of memory", op);
  for (int j = 0; j < ntargets && st == EM_OK; j++) {
    const em_tensor *t = targets[j];
    if (!t->requires_grad)
      st = em_fail(EM_E_RUNTIME, "%s: one of the differentiated tensors (input %d) does "
                   "not require grad", op, j + 1);
    r.tnode[j] = grad_fn_of(t);
    r.tnr[j] = r.tnode[j] ? meta_of(t)->output_nr : 0;
  }
  /* root gradients: given (cast to the root's dtype) or 1 for scalars */
  for (int i = 0; i < nroots && st == EM_OK; i++) {
    em_tensor *t = roots[i];
    char b1[EM_SHAPE_BUF], b2[EM_SHAPE_BUF];
    if (!t->requires_grad) {
      st = em_fail(EM_E_RUNTIME, "%s: element %d of tensors does not require grad and "
                   "does not have a grad_fn", op, i + 1);
      break;
    }
    rn[i] = grad_fn_of(t);
    if (grads && grads[i]) {
      em_tensor *g = grads[i];
      int same = g->ndim == t->ndim;
      for (int d = 0; same && d < t->ndim; d++) same = g->sizes[d] == t->sizes[d];
      if (!same) {
        st = em_fail(EM_E_VALUE, "%s: mismatch in shape: grad_output[%d] has a shape of "
                     "%s and output[%d] has a shape of %s", op, i + 1,
                     em_fmt_shape(b1, sizeof b1, g->ndim, g->sizes), i + 1,
                     em_fmt_shape(b2, sizeof b2, t->ndim, t->sizes));
        break;
      }
      /* any real dtype is cast to the output's below (PyTorch's engine casts
      ** an integer or bool gradient too) */
      if ((em_dtype_kindof(g->dtype) == EM_KIND_COMPLEX) !=
          (em_dtype_kindof(t->dtype) == EM_KIND_COMPLEX)) {
        st = em_fail(EM_E_TYPE, "%s: for complex tensors, both grad_output and output are "
                     "required to have the same dtype. Mismatch in dtype: grad_output[%d] "
                     "has a dtype of ember.%s and output[%d] has a dtype of ember.%s", op, i + 1,
                     em_dtype_name(g->dtype), i + 1, em_dtype_name(t->dtype));
        break;
      }
      if (!em_device_equal(em_tensor_device(g), em_tensor_device(t))) {
        char d1[32], d2[32];
        st = em_fail(EM_E_RUNTIME, "%s: gradient %d is on %s, but output %d is on %s", op,
                     i + 1, em_device_str(em_tensor_device(g), d1, sizeof d1), i + 1,
                     em_device_str(em_tensor_device(t), d2, sizeof d2));
        break;
      }
      st = em_to(g, t->dtype, em_tensor_device(t), 0, &rg[i]);
    } else {
      if (em_dtype_kindof(t->dtype) == EM_KIND_COMPLEX) {
        st = em_fail(EM_E_RUNTIME, "%s: grad can be implicitly created only for real scalar "
                     "outputs (output %d is ember.%s)", op, i + 1, em_dtype_name(t->dtype));
        break;
      }
      if (em_tensor_numel(t) != 1) {
        st = em_fail(EM_E_RUNTIME, "%s: grad can be implicitly created only for scalar "
                     "outputs (output %d has shape %s)", op, i + 1,
                     em_fmt_shape(b1, sizeof b1, t->ndim, t->sizes));
        break;
      }
      em_scalar one = {EM_SCALAR_FLOAT, 0, 1.0};
      st = em_full(t->ndim, t->sizes, one, t->dtype, em_tensor_device(t), &rg[i]);
    }
  }
  int prev = em_ag_pause();
  em_ag_resume(create_graph);
  if (st == EM_OK) st = discover(&r, nroots, rn);
  for (int i = 0; i < nroots && st == EM_OK; i++) {
    em_ag_edge e;
    edge_of(roots[i], &e);
    if (!e.node && e.leaf) hook_expect(&r, e.leaf);
    st = deliver(&r, &e, rg[i]);
    if (st == EM_OK && !e.node && e.leaf) st = hook_arrive(&r, e.leaf);
    em_node_release(e.node);
    em_tensor_release(e.leaf);
  }
  /* dependency order: a node runs once every node feeding it has */
  em_node **ready = NULL;
  int64_t nready = 0;
  if (st == EM_OK && r.nnodes) {
    ready = malloc(sizeof *ready * (size_t)r.nnodes);
    if (!ready) st = em_fail(EM_E_NOMEM, "%s: out of memory", op);
  }
  for (int64_t w = 0; w < r.nnodes && st == EM_OK; w++)
    if (r.nodes[w]->deps == 0) ready[nready++] = r.nodes[w];
  while (nready && st == EM_OK) {
    em_node *n = ready[--nready];
    st = run_node(&r, n);
    clear_bufs(n);
    for (int i = 0; i < n->nin && st == EM_OK; i++) {
      em_node *c = n->next[i].node;
      if (c && --c->deps == 0) ready[nready++] = c;
    }
    if (st == EM_OK && !keep_graph && n->has_saved) {
      free_saved(n);
      n->freed = 1;
    }
  }
  em_ag_resume(prev);
  for (int64_t w = 0; w < r.nnodes; w++) {
    clear_bufs(r.nodes[w]);
    r.nodes[w]->mark = 0;
  }
  free(ready);
  free(r.nodes);
  for (int i = 0; i < nroots; i++) em_tensor_release(rg ? rg[i] : NULL);
  free(rg);
  free(rn);
  free(r.tnode);
  free(r.tnr);
  return st;
}

em_status em_tensor_set_grad_hook(em_tensor *t, em_grad_hook_fn fn, void *ctx,
                                  void (*free_ctx)(void *ctx)) {
  if (fn && (!t->requires_grad || grad_fn_of(t))) {
    if (free_ctx) free_ctx(ctx);
    return em_fail(EM_E_RUNTIME, "register_post_accumulate_grad_hook: %s",
                   t->requires_grad ? "post accumulate grad hooks cannot be registered on "
                                      "non-leaf tensors"
                                    : "cannot register a hook on a tensor that doesn't "
                                      "require gradient");
  }
  em_ag_meta *m;
  em_status st = meta_get(t, &m);
  if (st != EM_OK) {
    if (free_ctx) free_ctx(ctx);
    return st;
  }
  if (m->hook_free) m->hook_free(m->hook_ctx);
  m->hook = fn;
  m->hook_ctx = fn ? ctx : NULL;
  m->hook_free = fn ? free_ctx : NULL;
  m->hook_mark = 0;
  if (!fn && free_ctx) free_ctx(ctx);
  return EM_OK;
}

em_status em_tensor_set_hook(em_tensor *t, em_tensor_hook_fn fn, void *ctx,
                             void (*free_ctx)(void *ctx)) {
  if (fn && !t->requires_grad) {
    if (free_ctx) free_ctx(ctx);
    return em_fail(EM_E_RUNTIME, "register_hook: cannot register a hook on a tensor that "
                   "doesn't require gradient");
  }
  em_node *n = grad_fn_of(t);
  if (n) {
    int nr = meta_of(t)->output_nr;
    em_ag_prehook **pp = &n->prehooks;
    while (*pp && (*pp)->nr != nr) pp = &(*pp)->next;
    if (*pp) { /* replace (or remove) this output's hook */
      em_ag_prehook *h = *pp;
      if (h->free_ctx) h->free_ctx(h->ctx);
      if (fn) {
        h->fn = fn;
        h->ctx = ctx;
        h->free_ctx = free_ctx;
      } else {
        *pp = h->next;
        free(h);
      }
      return EM_OK;
    }
    if (!fn) return EM_OK;
    em_ag_prehook *h = malloc(sizeof *h);
    if (!h) {
      if (free_ctx) free_ctx(ctx);
      return em_fail(EM_E_NOMEM, "register_hook: out of memory");
    }
    h->nr = nr;
    h->fn = fn;
    h->ctx = ctx;
    h->free_ctx = free_ctx;
    h->next = NULL;
    *pp = h;
    return EM_OK;
  }
  em_ag_meta *m;
  em_status st = meta_get(t, &m);
  if (st != EM_OK) {
    if (free_ctx) free_ctx(ctx);
    return st;
  }
  if (m->pre_free) m->pre_free(m->pre_ctx);
  m->pre = fn;
  m->pre_ctx = fn ? ctx : NULL;
  m->pre_free = fn ? free_ctx : NULL;
  m->hook_mark = 0;
  if (!fn && free_ctx) free_ctx(ctx);
  return EM_OK;
}

void *em_tensor_hook_ctx(const em_tensor *t, em_tensor_hook_fn fn) {
  if (!fn) return NULL;
  em_node *n = grad_fn_of(t);
  if (n) {
    int nr = meta_of(t)->output_nr;
    for (em_ag_prehook *h = n->prehooks; h; h = h->next)
      if (h->nr == nr) return h->fn == fn ? h->ctx : NULL;
    return NULL;
  }
  em_ag_meta *m = meta_of(t);
  return m && m->pre == fn ? m->pre_ctx : NULL;
}

void *em_tensor_grad_hook_ctx(const em_tensor *t, em_grad_hook_fn fn) {
  em_ag_meta *m = meta_of(t);
  return m && fn && m->hook == fn ? m->hook_ctx : NULL;
}

em_status em_backward(int n, em_tensor *const *tensors, em_tensor *const *grads,
                      int retain_graph, int create_graph) {
  return run_backward(n, tensors, grads, 0, NULL, NULL, retain_graph || create_graph,
                      create_graph, 1, "backward");
}

em_status em_autograd_grad(int nout, em_tensor *const *outputs, em_tensor *const *grads,
                           int nin, const em_tensor *const *inputs, int retain_graph,
                           int create_graph, int allow_unused, em_tensor **results) {
  for (int j = 0; j < nin; j++) results[j] = NULL;
  em_status st = run_backward(nout, outputs, grads, nin, inputs, results,
                              retain_graph || create_graph, create_graph, 0, "grad");
  for (int j = 0; j < nin && st == EM_OK; j++)
    if (!results[j] && !allow_unused)
      st = em_fail(EM_E_RUNTIME, "grad: one of the differentiated tensors (input %d) "
                   "appears to not have been used in the graph. Set allow_unused=true if "
                   "this is the desired behavior.", j + 1);
  if (st != EM_OK)
    for (int j = 0; j < nin; j++) {
      em_tensor_release(results[j]);
      results[j] = NULL;
    }
  return st;
}
