//! Argument types that several subcommands take (the sector flags, the engine and backend
//! choices, the value enums) and the turning of a backend choice into proving devices. It
//! knows clap and the backends; it must not know which command uses what, nor print results.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use cuzk_filecoin::porep::sector;
use cuzk_filecoin::porep::RegisteredSealProof;

/// What every request generator (`gen-post`, `gen-update`) takes.
#[derive(Args)]
pub struct GenArgs {
    /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB).
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    #[arg(long, default_value_t = 1000)]
    pub miner_id: u64,
    /// Seed for every random byte written (same seed, same files).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory (made when missing).
    #[arg(long)]
    pub out: std::path::PathBuf,
}

impl GenArgs {
    /// The sector size in bytes, once the output directory exists.
    pub fn prepare(&self) -> Result<u64> {
        let size = sector::parse_sector_size(&self.sector_size)?;
        std::fs::create_dir_all(&self.out).with_context(|| format!("{}: cannot create the output directory", self.out.display()))?;
        Ok(size)
    }
}

#[derive(Args)]
pub struct SectorArgs {
    /// Miner id (the prover id is its ID-address payload). Default: from the C1's .meta.json.
    #[arg(long)]
    pub miner_id: Option<u64>,
    /// Sector number. Default: from the C1's .meta.json.
    #[arg(long)]
    pub sector_number: Option<u64>,
    /// Sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB); needed for filecoin-proofs' plain C1 form
    /// when no .meta.json is next to it, and checked against the file otherwise.
    #[arg(long)]
    pub sector_size: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// The new path: witness-only synthesis, the cached PCE matrices, cuzk's Groth16 prover.
    Pce,
    /// bellperson's synthesis and prover on the real StackedCircuit (the old, reference path).
    Bellperson,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WitnessArg {
    /// The PoRep allocation sequence walked with SHA-256 on machine words.
    Native,
    /// The circuit's own gadgets through a witness-only constraint system.
    Gadgets,
}

impl WitnessArg {
    pub fn mode(self) -> cuzk_filecoin::porep::pce::WitnessMode {
        match self {
            WitnessArg::Native => cuzk_filecoin::porep::pce::WitnessMode::Native,
            WitnessArg::Gadgets => cuzk_filecoin::porep::pce::WitnessMode::Gadgets,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

pub fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// CUDA when this build has it and a device is present, else the CPU (one log line says why).
    Auto,
    /// rayon + blst on this machine's cores.
    Cpu,
    /// sppark on CUDA device 0 (an error when the build or the machine has none).
    Cuda,
}

#[derive(Args)]
pub struct EngineArgs {
    /// Which prover to run.
    #[arg(long, value_enum, default_value = "pce")]
    pub engine: Engine,
    /// Where the new path's MSMs and NTTs run.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendArg,
}

/// The proving devices for the pipeline: every visible CUDA device (`CUDA_VISIBLE_DEVICES`
/// is honoured by the CUDA runtime) or the CPU.
pub fn make_devices(b: BackendArg) -> Result<Vec<cuzk_pipeline::Device>> {
    make_devices_with(b, &cuzk_gpu::GpuOptions::default())
}

/// [`make_devices`], each GPU opened with `gpu` (resident SRS budget, MSM pieces).
pub fn make_devices_with(b: BackendArg, gpu: &cuzk_gpu::GpuOptions) -> Result<Vec<cuzk_pipeline::Device>> {
    let cpu =
        || vec![cuzk_pipeline::Device { name: "cpu".into(), backend: std::sync::Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) }];
    let gpus = || -> Result<Vec<cuzk_pipeline::Device>, cuzk_gpu::GpuError> {
        let n = cuzk_gpu::devices()?.len();
        (0..n)
            .map(|i| {
                let backend = std::sync::Arc::from(cuzk_gpu::open_with(i, gpu)?);
                Ok(cuzk_pipeline::Device { name: format!("gpu{i}"), backend })
            })
            .collect()
    };
    match b {
        BackendArg::Cpu => Ok(cpu()),
        BackendArg::Cuda => {
            let v = gpus().context("--backend cuda")?;
            if v.is_empty() {
                bail!("--backend cuda: no CUDA device is visible");
            }
            Ok(v)
        }
        BackendArg::Auto => match gpus() {
            Ok(v) if !v.is_empty() => Ok(v),
            Ok(_) => {
                tracing::info!("backend auto: using the CPU backend because no CUDA device is visible");
                Ok(cpu())
            }
            Err(e) => {
                tracing::info!("backend auto: using the CPU backend because {e}");
                Ok(cpu())
            }
        },
    }
}

/// A byte size on the command line ("24GiB", "512MiB", "1.5GiB", bytes).
pub fn byte_size(s: &str) -> Result<u64, String> {
    cuzk_daemon::config::parse_bytes(s).map_err(|e| e.to_string())
}

/// [`make_backend`], a GPU opened with `options` (resident SRS budget, MSM pieces).
pub fn make_backend_with(b: BackendArg, options: &cuzk_gpu::GpuOptions) -> Result<std::sync::Arc<dyn cuzk_core::backend::Backend>> {
    let cpu = || -> std::sync::Arc<dyn cuzk_core::backend::Backend> { std::sync::Arc::new(cuzk_core::backend::cpu::CpuBackend::new()) };
    let gpu = || cuzk_gpu::open_with(0, options).map(std::sync::Arc::from);
    match b {
        BackendArg::Cpu => Ok(cpu()),
        BackendArg::Cuda => gpu().context("--backend cuda"),
        BackendArg::Auto => match gpu() {
            Ok(b) => Ok(b),
            Err(e) => {
                tracing::info!("backend auto: using the CPU backend because {e}");
                Ok(cpu())
            }
        },
    }
}

pub fn make_backend(b: BackendArg) -> Result<std::sync::Arc<dyn cuzk_core::backend::Backend>> {
    make_backend_with(b, &cuzk_gpu::GpuOptions::default())
}

/// `--side-msms`: where a CUDA backend's side MSMs (L, A, B) get their scalars.
#[derive(Clone, Debug, clap::Args)]
pub struct SideMsmsArg {
    /// Where the side MSMs (L, A, B) get their scalars on a CUDA backend: device (the
    /// default: from the witness kept on the GPU after its upload, selected, split and
    /// gathered there) or host (the host selects and splits the aux: the earlier layout, kept
    /// as the reference). Run once per value to compare; the proofs are the same bytes.
    #[arg(long = "side-msms", default_value = "device", value_parser = cuzk_gpu::SideMsms::parse)]
    side_msms: cuzk_gpu::SideMsms,
}

impl SideMsmsArg {
    /// The place chosen.
    pub fn place(&self) -> cuzk_gpu::SideMsms {
        self.side_msms
    }

    /// `--side-msms device`.
    pub fn on_device(&self) -> bool {
        self.side_msms == cuzk_gpu::SideMsms::Device
    }
}

/// The seal proof of a `--sector-size` value (2KiB, 8MiB, 512MiB, 32GiB, 64GiB).
pub fn proof_for(size: &str) -> Result<RegisteredSealProof> {
    Ok(sector::registered_proof(sector::parse_sector_size(size)?)?)
}
