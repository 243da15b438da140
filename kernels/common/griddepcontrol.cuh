// Programmatic dependent launch (sm_90): a kernel lets the next kernel of its stream start before it ends, and
// that next kernel waits, where it must, for this one's memory. experiments/pdl, on chapter 10's kernel.
// Both instructions act only on a launch that carries CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (the
// dependent's launch); in a plain launch the previous kernel has finished before this one starts, so the wait
// returns at once and the trigger has no one to release.
#pragma once

// griddepcontrol.wait: this thread waits until every prerequisite grid in flight has completed and all of its
// memory operations are performed and visible to this grid (PTX ISA, "griddepcontrol"). Before it, read nothing
// the previous kernel may write and write nothing it may read; "memory" keeps the compiler from hoisting
// loads or stores above it.
__device__ __forceinline__ void griddepcontrol_wait() {
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

// griddepcontrol.launch_dependents: the dependent grid may be scheduled once every CTA of this grid has issued it
// or completed; it may then start before this grid completes, with no guarantee that it does (PTX ISA,
// "griddepcontrol"). The first issue in a CTA counts; repeats by its other threads change nothing. It says nothing
// about memory: the dependent sees this grid's writes only after its own griddepcontrol.wait.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
