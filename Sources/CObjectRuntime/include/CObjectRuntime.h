// Reference-count operations of the Swift runtime that the object registry needs and Swift does not expose:
// retaining an object only if it is not being deinitialized, and holding an unowned count on an object by
// address (see Sources/ObjectGraph/Context/ObjectRegistry.swift). Thin C wrappers, so that Swift code calls
// ordinary C functions instead of naming runtime symbols itself (which the compiler reserves).
#ifndef C_OBJECT_RUNTIME_H
#define C_OBJECT_RUNTIME_H

#include <stdbool.h>

/// Retains `object` unless its deinitialization has begun; returns it retained, or NULL.
void *_Nullable ambar_try_retain(void *_Nonnull object);
/// Adds one unowned reference: the object's memory stays allocated (not the object alive) until it is released.
void ambar_unowned_retain(void *_Nonnull object);
/// Releases one unowned reference; the last one frees the memory of a deinitialized object.
void ambar_unowned_release(void *_Nonnull object);
/// Whether `object`'s deinitialization has begun (its strong count reached zero).
bool ambar_is_deallocating(void *_Nonnull object);

#endif
