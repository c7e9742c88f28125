#include "CObjectRuntime.h"

// Exported by the Swift runtime (libswiftCore, declared with SWIFT_RUNTIME_EXPORT in swift/Runtime/HeapObject.h);
// the compiler emits calls to them for `weak` and `unowned` references.
extern void *swift_tryRetain(void *object);
extern void *swift_unownedRetain(void *object);
extern void swift_unownedRelease(void *object);
extern bool swift_isDeallocating(void *object);

void *ambar_try_retain(void *object) { return swift_tryRetain(object); }
void ambar_unowned_retain(void *object) { (void)swift_unownedRetain(object); }
void ambar_unowned_release(void *object) { swift_unownedRelease(object); }
bool ambar_is_deallocating(void *object) { return swift_isDeallocating(object); }
