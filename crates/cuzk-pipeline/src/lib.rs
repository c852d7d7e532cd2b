//! `cuzk-pipeline` owns the proving engine that overlaps CPU synthesis with GPU (or CPU)
//! proving: stage threads joined by bounded crossbeam channels with the partition as the unit
//! of work ([`engine`]), a byte budget that admits a partition only when its working set fits
//! ([`budget`]), a trace of every stage with RSS sampled in between ([`trace`]), and the
//! PoRep job source that turns a C1 into partitions over the process-wide PCE and parameters
//! ([`porep`]). It knows nothing of the CLI or of gRPC.

pub mod budget;
pub mod engine;
pub mod porep;
pub mod trace;

pub use budget::{Budget, Lease};
pub use engine::{Config, Device, DeviceErrorPolicy, Engine, Job, JobSource, Outcome, PartitionInput, Ticket, WorkingSet};
pub use trace::Trace;

/// Why a job (or one of its partitions) did not produce a proof.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PipelineError {
    #[error("invalid engine configuration: {0}")]
    Config(String),
    #[error("{0}")]
    Job(String),
    #[error("a partition's working set of {need} bytes exceeds the whole byte budget of {budget} bytes")]
    OverBudget { need: u64, budget: u64 },
    #[error("witness synthesis failed: {0}")]
    Witness(String),
    #[error("proving failed: {0}")]
    Prove(String),
    /// The proving device failed on this partition (retried on the CPU when so configured).
    #[error("the proving device failed: {0}")]
    Device(String),
    #[error("the finished proof failed verification: {0}")]
    Verify(String),
    #[error("the {stage} stage panicked: {message}")]
    Panic { stage: &'static str, message: String },
    #[error("skipped: another partition of this proof failed")]
    Skipped,
    #[error("the engine is shutting down")]
    Shutdown,
}
