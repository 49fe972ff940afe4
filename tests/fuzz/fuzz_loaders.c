/*
** fuzz_loaders.c -- libFuzzer targets for the file loaders: .npy
** (em_npy_decode), .npz (em_npz_load_buffer), ember's format
** (em_load_buffer), .safetensors (em_safetensors_decode) and PyTorch
** checkpoints (em_torch_load_buffer, whose value tree is then written back
** out by em_torch_save). Pick one with -DFUZZ_NPY, -DFUZZ_NPZ, -DFUZZ_EMBER,
** -DFUZZ_SAFETENSORS or -DFUZZ_TORCH.
** Each input must load or fail with a message; under ASan/UBSan any
** out-of-bounds read, leak or undefined behaviour is a crash. A loaded
** tensor is read end to end, so a view that reaches outside its storage
** would be caught too (its first 4096 elements and its last). tools/fuzz.sh builds and runs them; without
** libFuzzer, replay.c runs the committed corpus as a ctest.
*/
#include <stddef.h>
#include <stdint.h>

#include "ember.h"

/* Reads the first elements and the last one (a valid file may hold an
** expanded view of 2^60 elements over one stored value: reading it all
** would only time out). */
static void touch(const em_tensor *t) {
  int64_t n = em_tensor_numel(t);
  double acc = 0, v;
  for (int64_t i = 0; i < n && i < 4096; i++)
    if (em_get_f64(t, i, &v) == EM_OK) acc += v;
  if (n > 0 && em_get_f64(t, n - 1, &v) == EM_OK) acc += v;
  (void)acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
#if defined(FUZZ_NPY)
  em_tensor *t;
  if (em_npy_decode(data, size, &t) == EM_OK) {
    touch(t);
    em_tensor_release(t);
  }
#elif defined(FUZZ_NPZ)
  em_npz *z;
  if (em_npz_load_buffer(data, size, &z) == EM_OK) {
    for (int64_t i = 0; i < em_npz_count(z); i++) touch(em_npz_tensor(z, i));
    em_npz_free(z);
  }
#elif defined(FUZZ_EMBER)
  em_loaded *f;
  if (em_load_buffer(data, size, &f) == EM_OK) {
    for (int64_t i = 0; i < em_loaded_count(f); i++) touch(em_loaded_tensor(f, i));
    em_loaded_free(f);
  }
#elif defined(FUZZ_SAFETENSORS)
  em_safetensors *f;
  if (em_safetensors_decode(data, size, &f) == EM_OK) {
    for (int64_t i = 0; i < em_safetensors_count(f); i++) {
      if (!em_safetensors_name(f, i)) __builtin_trap();
      touch(em_safetensors_tensor(f, i));
    }
    for (int64_t i = 0; i < em_safetensors_meta_count(f); i++)
      if (!em_safetensors_meta_key(f, i) || !em_safetensors_meta_value(f, i)) __builtin_trap();
    em_safetensors_free(f);
  }
#elif defined(FUZZ_TORCH)
  em_pytree *t;
  if (em_torch_load_buffer(data, size, &t) == EM_OK) {
    em_pyvalue v;
    for (int64_t i = 0; em_pytree_get(t, i, &v) == EM_OK; i++)
      if (v.kind == EM_PY_TENSOR) touch(v.tensor);
    em_torch_save("/dev/null", t); /* the pickler over whatever the file built */
    em_pytree_free(t);
  }
#else
#error "define FUZZ_NPY, FUZZ_NPZ, FUZZ_EMBER, FUZZ_SAFETENSORS or FUZZ_TORCH"
#endif
  return 0;
}
