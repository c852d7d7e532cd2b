//! `cuzk-pipeline` owns the one way cuzk runs a proof: the proof-kind seam ([`kind`]: what
//! the engine needs from a kind of proof, implemented above this crate for Filecoin), the
//! process-wide resident circuits keyed by circuit id ([`resources`]: each circuit's PCE and
//! Groth16 parameters, loaded once and shared), and the engine that overlaps CPU synthesis
//! with GPU (or CPU) proving ([`engine`]: stage threads joined by bounded channels with the
//! partition as the unit of work), a byte budget that admits a partition only when its
//! working set fits ([`budget`]) and a trace of every stage with RSS sampled in between
//! ([`trace`]). It knows Groth16 and the seam, not Filecoin, the CLI or gRPC.
//!
//! # Example
//!
//! The byte budget and the trace the engine runs every partition under: a lease holds bytes
//! until it is dropped (or gives parts back early), a request larger than the whole budget is
//! refused instead of waiting forever, and every stage is recorded with its times and RSS.
//!
//! ```
//! use cuzk_pipeline::{Budget, PipelineError, Trace};
//!
//! let budget = Budget::new(100);
//! let mut lease = budget.acquire(70)?;
//! lease.release(30); // a buffer of the partition was freed
//! assert_eq!(budget.in_use(), 40);
//! drop(lease); // the partition finished (or failed, or panicked)
//! assert_eq!((budget.in_use(), budget.high_water()), (0, 70));
//! assert!(matches!(budget.acquire(101), Err(PipelineError::OverBudget { need: 101, budget: 100 })));
//!
//! let trace = Trace::new();
//! trace.mark("run starts");
//! let sum = trace.record("witness", 1, 0, "witness-0", "", || (1..=10u64).sum::<u64>());
//! assert_eq!(sum, 55);
//! let rows = trace.stage_summaries(|_| true);
//! assert_eq!((rows[0].stage, rows[0].count), ("witness", 1));
//! assert!(trace.svg("a run").contains("<svg"));
//! # Ok::<(), PipelineError>(())
//! ```

#![warn(missing_docs)]

pub mod budget;
pub mod engine;
pub mod kind;
pub mod queue;
pub mod resources;
pub mod trace;

use std::sync::Arc;

pub use budget::{Budget, Lease};
pub use engine::{Config, Device, DeviceErrorPolicy, Engine, HostVectors, Job, JobSource, Outcome, PartitionInput, Ticket, WorkingSet};
pub use kind::{CircuitId, JobOptions, ProofKind};
pub use queue::Priority;
pub use trace::Trace;

/// An error from below or beside the engine (a proof kind, the PCE layer, the prover),
/// shared so that an outcome can be cloned and its source chain kept.
pub type SharedError = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Why a job (or one of its partitions) did not produce a proof.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PipelineError {
    /// The engine cannot be built as configured (no proving device, a worker thread that
    /// could not start); the message says why.
    #[error("invalid engine configuration: {0}")]
    Config(String),
    /// The request was refused by its proof kind (parse, checks, circuit or parameters).
    #[error("{kind} request refused")]
    Request {
        /// The proof kind's name ([`ProofKind::name`]).
        kind: &'static str,
        /// The kind's own error.
        #[source]
        source: SharedError,
    },
    /// The engine could not run the job as given (no partitions, wrong randomness, ...).
    #[error("{0}")]
    Job(String),
    /// One partition needs more bytes than the whole budget, so it could never be admitted.
    #[error("a partition's working set of {need} bytes exceeds the whole byte budget of {budget} bytes")]
    OverBudget {
        /// The partition's estimated working set in bytes.
        need: u64,
        /// The whole budget in bytes.
        budget: u64,
    },
    /// The proof kind's witness synthesis failed.
    #[error("witness synthesis failed")]
    Witness(#[source] SharedError),
    /// The mat-vec or the Groth16 prover failed (other than a device failure).
    #[error("proving failed")]
    Prove(#[source] SharedError),
    /// The proving device failed on this partition (retried on the CPU when so configured).
    #[error("the proving device failed: {0}")]
    Device(String),
    /// The finished proof was checked with the kind's verifier and rejected (or the check
    /// failed).
    #[error("the finished proof failed verification")]
    Verify(#[source] SharedError),
    /// A stage panicked on this partition; the engine caught it and carries on.
    #[error("the {stage} stage panicked: {message}")]
    Panic {
        /// The stage (`parse`, `witness`, `prove`, `assemble`, `verify`, ...).
        stage: &'static str,
        /// The panic's message.
        message: String,
    },
    /// This partition was not run because another partition of its proof had already failed.
    #[error("skipped: another partition of this proof failed")]
    Skipped,
    /// The engine was shut down before the job finished.
    #[error("the engine is shutting down")]
    Shutdown,
}

impl PipelineError {
    /// Wraps any typed error as a shared source.
    pub fn shared(e: impl std::error::Error + Send + Sync + 'static) -> SharedError {
        Arc::new(e)
    }

    /// The whole chain as one line: this error and every source, joined by ": ".
    pub fn chain(&self) -> String {
        error_chain(self)
    }
}

/// An error that is only a message (for tests and for sources that carry nothing else).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Message(pub String);

/// `msg` as a shared error.
pub fn message(msg: impl Into<String>) -> SharedError {
    Arc::new(Message(msg.into()))
}

/// `e` and its sources as one line, joined by ": " (what logs and the daemon print).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let msg = s.to_string();
        if !out.ends_with(&msg) {
            out.push_str(": ");
            out.push_str(&msg);
        }
        cur = s.source();
    }
    out
}
