/*
** errmsg.h -- the engine's shared error texts, one definition each (as
** LuaJIT's lj_errmsg.h). Each is a printf format whose first argument is
** the op's name; em_fail checks the arguments against it:
**   em_fail(EM_E_RUNTIME, EM_MSG_DEVICE_MISMATCH, "add", "cpu", "meta");
** An op still names itself and the values; a message that only one op
** raises stays in that op's file.
*/
#ifndef EMBER_ERRMSG_H
#define EMBER_ERRMSG_H

/* op, device, device */
#define EM_MSG_DEVICE_MISMATCH                                              \
  "%s: expected all tensors to be on the same device, but found at least " \
  "two devices, %s and %s"
/* device: where no op is at hand (a storage); the binding names the op.
** A device without a kernel table: cuda in a build without CUDA (a build
** with CUDA says why a device is missing: cuda/runtime.c). */
#define EM_MSG_NO_DEVICE                                                    \
  "device %s is not available: ember was built without CUDA (configure "   \
  "with the CUDA Toolkit and -DEMBER_CUDA=ON)"
/* op, device */
#define EM_MSG_DEVICE_UNAVAILABLE "%s: " EM_MSG_NO_DEVICE
/* op, device: an op whose kernels a device does not have */
#define EM_MSG_DEVICE_UNSUPPORTED "%s: not implemented for device %s"
/* op, device: the value-reading paths (item, tolist, data, printing, npy) */
#define EM_MSG_CPU_ONLY "%s: the tensor is on %s; use :cpu() first"
/* op: reading values of a meta tensor */
#define EM_MSG_META_NO_DATA "%s: a meta tensor has no data"
/* op: an op whose result's shape depends on the values */
#define EM_MSG_META_DATA_DEPENDENT                                          \
  "%s: not supported on the meta device: the result's shape depends on "    \
  "the values"
/* op, dtype */
#define EM_MSG_DTYPE_NOT_IMPLEMENTED "%s: not implemented for %s tensors"
/* op, what, dtype */
#define EM_MSG_EXPECTED_FLOAT "%s: expected %s of dtype float32 or float64, got %s"
/* op */
#define EM_MSG_INTERNAL_OVERLAP                                             \
  "%s: unsupported operation: more than one element of the written-to "     \
  "tensor refers to a single memory location; clone() the tensor before "   \
  "performing the operation"
/* op */
#define EM_MSG_OUT_NOT_DIFFERENTIABLE                                       \
  "%s: functions with out= arguments don't support automatic "              \
  "differentiation, but one of the arguments requires grad"

#endif
