//! `cuzk-pipeline` will own the crossbeam scheduler that overlaps CPU synthesis with GPU
//! proving (load, witness, mat-vec, prove, finalize; partitions as the unit of work; N
//! pipelines per GPU; a byte budget; a per-stage RSS and timing trace). It must not know
//! about the CLI or gRPC. No code yet: the pipeline issue builds it.
