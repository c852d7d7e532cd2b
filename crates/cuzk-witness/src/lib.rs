//! `cuzk-witness` will own witness-only synthesis: a bellpepper `ConstraintSystem` that
//! records only the input and aux assignments (`enforce` and namespaces do nothing), and fast
//! native witness paths for the hot gadgets (SHA-256, Poseidon). It must not know about
//! constraint matrices or GPUs. No code yet: the witness issue builds it.
