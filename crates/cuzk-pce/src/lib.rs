//! `cuzk-pce` will own the Pre-Compiled Constraint Evaluator: a recording constraint system
//! that extracts A, B and C as compact CSR once per circuit topology (with input/aux column
//! tagging), density bitmaps, the parallel sparse mat-vec, the on-disk cache and the
//! in-process shared registry. It must not know about GPUs or pipelines. No code yet.
