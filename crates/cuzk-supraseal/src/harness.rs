//! The SupraSeal rounds (built only with feature `supraseal`): loads the C1, the shared
//! parameters, SupraSeal's SRS from the same `.params` file and the PCE; makes the cuzk
//! CPU-backend reference proof with seeded (r, s); then, per round, feeds SupraSeal from the
//! old path and from cuzk's new path and checks every proof against the reference.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Affine, G2Affine, Scalar};
use cuzk_core::atomic::write_atomically;
use cuzk_core::mem::{self, StageTracer};
use cuzk_filecoin::porep::c1::{prepare, C1};
use cuzk_filecoin::porep::circuits::circuits;
use cuzk_filecoin::porep::params::ParamPaths;
use cuzk_filecoin::porep::sector::{self, SectorIdentity, SectorMeta};
use cuzk_filecoin::porep::{verify, PorepInput};
use cuzk_filecoin::update::input::UpdateInput;
use cuzk_filecoin::update::kind::SnapDeals;
use cuzk_filecoin::{PorepC2, Settings};
use cuzk_pce::matrix::{popcount, PreCompiledCircuit};
use ff::Field;
use filecoin_proofs::with_shape;
use group::prime::PrimeCurveAffine;
use rand::SeedableRng;
use rayon::prelude::*;
use serde::Serialize;
use storage_proofs_core::merkle::MerkleTreeTrait;
use supraseal_c2::SRS;

use crate::{median, pack_bits, Args};

/// One round's figures (seconds, summed over partitions where the stage runs per partition).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Round {
    pub round: usize,
    /// Old path: bellperson-style full synthesis of every partition (in parallel, as
    /// bellperson's SupraSeal prover does).
    pub old_synthesis_s: f64,
    /// SupraSeal's GPU prover on the old path's assignment (all partitions in one call).
    pub old_supraseal_s: f64,
    /// Old path from built circuits to proof bytes: SupraSeal C2 end to end.
    pub old_total_s: f64,
    pub new_witness_s: f64,
    pub new_matvec_s: f64,
    /// SupraSeal's GPU prover on cuzk's witness and mat-vec output.
    pub new_supraseal_s: f64,
    /// cuzk's synthesis with SupraSeal's prover.
    pub new_total_s: f64,
    pub old_proof_equal: bool,
    pub new_proof_equal: bool,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub c1: String,
    pub threads: usize,
    pub partitions: usize,
    pub constraints: usize,
    /// SupraSeal reading its SRS from the `.params` file.
    pub srs_load_s: f64,
    /// cuzk's CPU-backend reference proof (same r, s).
    pub cpu_reference_s: f64,
    pub rounds: Vec<Round>,
    /// Medians over the warm rounds (all but the first).
    pub median_old_supraseal_s: f64,
    pub median_old_total_s: f64,
    pub median_new_supraseal_s: f64,
    pub median_new_total_s: f64,
    pub all_equal: bool,
    pub verified: bool,
    pub peak_rss_bytes: u64,
}

/// One partition's assignment as SupraSeal reads it.
struct Assigned<'a> {
    inputs: &'a [Scalar],
    aux: &'a [Scalar],
    a: &'a [Scalar],
    b: &'a [Scalar],
    c: &'a [Scalar],
    a_aux: &'a [u64],
    b_input: &'a [u64],
    b_aux: &'a [u64],
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// SupraSeal's prover over all partitions in one call; its panics become errors.
fn supraseal_prove(parts: &[Assigned<'_>], rs: &[(Scalar, Scalar)], srs: &SRS) -> Result<Vec<u8>> {
    let first = parts.first().context("no partitions")?;
    for p in parts {
        if p.a.len() != first.a.len() || p.aux.len() != first.aux.len() || p.inputs.len() != first.inputs.len() {
            bail!("SupraSeal needs equally sized partitions");
        }
        if p.a_aux != first.a_aux || p.b_input != first.b_input || p.b_aux != first.b_aux {
            bail!("SupraSeal takes one density set for all partitions; these differ");
        }
    }
    let ptrs = |f: fn(&Assigned<'_>) -> *const Scalar| parts.iter().map(f).collect::<Vec<_>>();
    let (a, b, c) = (ptrs(|p| p.a.as_ptr()), ptrs(|p| p.b.as_ptr()), ptrs(|p| p.c.as_ptr()));
    let (inp, aux) = (ptrs(|p| p.inputs.as_ptr()), ptrs(|p| p.aux.as_ptr()));
    let r: Vec<Scalar> = rs.iter().map(|x| x.0).collect();
    let s: Vec<Scalar> = rs.iter().map(|x| x.1).collect();
    let mut proofs: Vec<Proof<Bls12>> =
        (0..parts.len()).map(|_| Proof { a: G1Affine::identity(), b: G2Affine::identity(), c: G1Affine::identity() }).collect();
    catch_unwind(AssertUnwindSafe(|| {
        supraseal_c2::generate_groth16_proof::<Scalar, u64, Proof<Bls12>>(
            &a,
            &b,
            &c,
            first.a.len(),
            &inp,
            &aux,
            first.inputs.len(),
            first.aux.len(),
            first.a_aux,
            first.b_input,
            first.b_aux,
            popcount(first.a_aux),
            popcount(first.b_input),
            popcount(first.b_aux),
            parts.len(),
            &r,
            &s,
            &mut proofs,
            srs,
        )
    }))
    .map_err(|e| {
        let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
        anyhow::anyhow!("SupraSeal failed: {}", msg.unwrap_or_else(|| "panic without a message".into()))
    })?;
    let mut out = Vec::new();
    for p in &proofs {
        p.write(&mut out)?;
    }
    Ok(out)
}

/// This process's PoRep kind, its directories applied to filecoin-proofs first.
fn porep_kind() -> Result<std::sync::Arc<PorepC2>> {
    let settings = Settings::from_vars(|k| std::env::var_os(k));
    settings.apply()?;
    let witness = std::env::var("CUZK_WITNESS").unwrap_or_default().parse().map_err(|e| anyhow::anyhow!("CUZK_WITNESS: {e}"))?;
    Ok(std::sync::Arc::new(PorepC2::with_settings(&settings).with_witness(witness)))
}

pub fn run(args: &Args) -> Result<bool> {
    let c1_path = args.c1.as_ref().context("the whole-C1 mode needs --c1 (--update is for partition mode)")?;
    let kind = porep_kind()?;
    let (meta, c1) = load_c1(c1_path)?;
    let id = meta.identity();
    let rp = c1.registered_proof;
    // Loaded (and checked) once here; the engine's reference proof below shares this copy.
    kind.shared_params(rp, &StageTracer::new())?;
    let paths = ParamPaths::for_proof(rp)?;
    let t = Instant::now();
    let srs = SRS::try_new(paths.params.clone(), true)
        .map_err(|e| anyhow::anyhow!("SupraSeal cannot read {}: {}", paths.params.display(), String::from(e)))?;
    let srs_load_s = secs(t);
    println!("SupraSeal SRS from {}: {srs_load_s:.3} s", paths.params.display());
    let (pce, _) = kind.shared_pce(rp)?;
    let partitions = usize::from(c1.porep_config().partitions);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
    let rs: Vec<(Scalar, Scalar)> = (0..partitions).map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng))).collect();

    let t = Instant::now();
    // The reference: the new path on the CPU backend through the engine, unverified (the
    // proofs are compared with it and verified at the end).
    let engine = cuzk_pipeline::Engine::start(cuzk_pipeline::Config::cpu(1, cuzk_pipeline::budget::default_budget()))?;
    let input = std::sync::Arc::new(PorepInput { c1: c1.clone(), identity: id });
    let opts = cuzk_pipeline::JobOptions { randomness: Some(rs.clone()), verify: false };
    let reference = engine.submit(kind.job(input, opts))?.wait().result.map_err(|e| anyhow::anyhow!(e.chain()))?;
    engine.shutdown();
    let cpu_reference_s = secs(t);
    println!("cuzk CPU-backend reference proof: {cpu_reference_s:.3} s");

    let mut report = Report {
        c1: c1_path.display().to_string(),
        threads: rayon::current_num_threads(),
        partitions,
        constraints: pce.num_constraints,
        srs_load_s,
        cpu_reference_s,
        rounds: Vec::new(),
        median_old_supraseal_s: f64::NAN,
        median_old_total_s: f64::NAN,
        median_new_supraseal_s: f64::NAN,
        median_new_total_s: f64::NAN,
        all_equal: false,
        verified: false,
        peak_rss_bytes: 0,
    };
    let mut last = Vec::new();
    for k in 0..args.repeats.max(1) {
        let (round, proof) = with_shape!(c1.sector_size(), round_shaped, &c1, &id, &pce, &srs, &rs, &reference, k)?;
        println!(
            "round {k}: SupraSeal C2 end to end {:.3} s (synthesis {:.3} + GPU {:.3}); cuzk synthesis + SupraSeal GPU {:.3} s \
             (witness {:.3} + mat-vec {:.3} + GPU {:.3}); proofs equal to the reference: {} / {}",
            round.old_total_s,
            round.old_synthesis_s,
            round.old_supraseal_s,
            round.new_total_s,
            round.new_witness_s,
            round.new_matvec_s,
            round.new_supraseal_s,
            round.old_proof_equal,
            round.new_proof_equal
        );
        report.rounds.push(round);
        last = proof;
        mem::malloc_trim();
    }
    let warm: Vec<&Round> = report.rounds.iter().skip(usize::from(report.rounds.len() > 1)).collect();
    let med = |f: fn(&Round) -> f64| median(warm.iter().map(|r| f(r)).collect());
    report.median_old_supraseal_s = med(|r| r.old_supraseal_s);
    report.median_old_total_s = med(|r| r.old_total_s);
    report.median_new_supraseal_s = med(|r| r.new_supraseal_s);
    report.median_new_total_s = med(|r| r.new_total_s);
    report.all_equal = report.rounds.iter().all(|r| r.old_proof_equal && r.new_proof_equal);
    report.verified = verify::verify_seal(&c1, &id, &last)?.is_valid();
    report.peak_rss_bytes = mem::snapshot().peak_bytes;
    println!(
        "warm medians: SupraSeal GPU {:.3} s, SupraSeal C2 end to end {:.3} s, cuzk synthesis + SupraSeal GPU {:.3} s; \
         all proofs equal: {}, verify_seal: {}",
        report.median_old_supraseal_s, report.median_old_total_s, report.median_new_total_s, report.all_equal, report.verified
    );
    if let Some(p) = &args.json {
        write_atomically(p, |w| serde_json::to_writer_pretty(w, &report).map_err(std::io::Error::other))?;
    }
    Ok(report.all_equal && report.verified)
}

/// The report of partition mode.
#[derive(Debug, Serialize)]
pub struct PartitionReport {
    /// The C1 or SnapDeals request proved.
    pub input: String,
    pub synthetic: bool,
    pub partition: usize,
    pub params: String,
    pub threads: usize,
    pub constraints: usize,
    pub pce_s: f64,
    pub witness_s: f64,
    pub matvec_s: f64,
    /// SupraSeal reading its SRS from the `.params` file.
    pub srs_load_s: f64,
    /// SupraSeal's GPU prover on the one partition, per round (the first is cold).
    pub supraseal_s: Vec<f64>,
    pub median_warm_supraseal_s: f64,
    pub proofs_equal_across_rounds: bool,
    /// Against the `--expect` report's proof (cuzk's), when given.
    pub equal_to_expected: Option<bool>,
    pub proof_hex: String,
    pub peak_rss_bytes: u64,
}

/// Partition mode: one partition, SupraSeal's prover under the given `.params` file.
pub fn run_partition(args: &Args) -> Result<bool> {
    let k = args.partition.context("partition mode needs --partition")?;
    let params_path = args.params.clone().context("partition mode needs --params")?;
    let Subject { source, synthetic, pce, pce_s, w, witness_s } = partition_subject(args, k)?;
    if synthetic {
        println!("{source}: SYNTHETIC input (random contents; its circuits are not satisfied)");
    }
    let t = Instant::now();
    let e = pce.evaluate(&w.inputs, &w.aux)?;
    let matvec_s = secs(t);
    println!("PCE {pce_s:.1} s, witness {witness_s:.3} s, mat-vec {matvec_s:.3} s");
    let t = Instant::now();
    let srs = SRS::try_new(params_path.clone(), true)
        .map_err(|e| anyhow::anyhow!("SupraSeal cannot read {}: {}", params_path.display(), String::from(e)))?;
    let srs_load_s = secs(t);
    println!("SupraSeal SRS from {}: {srs_load_s:.3} s", params_path.display());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
    let rs = [(Scalar::random(&mut rng), Scalar::random(&mut rng))];
    let part = Assigned {
        inputs: &w.inputs,
        aux: &w.aux,
        a: &e.a,
        b: &e.b,
        c: &e.c,
        a_aux: &pce.a_aux_density,
        b_input: &pce.b_input_density,
        b_aux: &pce.b_aux_density,
    };
    let mut times = Vec::new();
    let mut proofs = Vec::new();
    for round in 0..args.repeats.max(1) {
        let t = Instant::now();
        let proof = supraseal_prove(std::slice::from_ref(&part), &rs, &srs)?;
        times.push(secs(t));
        println!("round {round}: SupraSeal GPU prover {:.3} s", times[round]);
        proofs.push(proof);
    }
    let expected = match &args.expect {
        Some(p) => {
            let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).with_context(|| format!("reading {}", p.display()))?)
                .with_context(|| format!("{} is not JSON", p.display()))?;
            let hex_proof = v["proof_hex"].as_str().with_context(|| format!("{} has no proof_hex", p.display()))?;
            Some(hex::decode(hex_proof).with_context(|| format!("{}: proof_hex is not hex", p.display()))?)
        }
        None => None,
    };
    let report = PartitionReport {
        input: source,
        synthetic,
        partition: k,
        params: params_path.display().to_string(),
        threads: rayon::current_num_threads(),
        constraints: pce.num_constraints,
        pce_s,
        witness_s,
        matvec_s,
        srs_load_s,
        median_warm_supraseal_s: median(times.iter().skip(usize::from(times.len() > 1)).copied().collect()),
        supraseal_s: times,
        proofs_equal_across_rounds: proofs.iter().all(|p| *p == proofs[0]),
        equal_to_expected: expected.as_ref().map(|x| *x == proofs[0]),
        proof_hex: hex::encode(&proofs[0]),
        peak_rss_bytes: mem::snapshot().peak_bytes,
    };
    println!(
        "warm median SupraSeal GPU prover {:.3} s; proofs equal across rounds: {}; equal to cuzk's: {}",
        report.median_warm_supraseal_s,
        report.proofs_equal_across_rounds,
        report.equal_to_expected.map_or("not compared".to_string(), |b| b.to_string())
    );
    if let Some(p) = &args.json {
        write_atomically(p, |w| serde_json::to_writer_pretty(w, &report).map_err(std::io::Error::other))?;
    }
    Ok(report.proofs_equal_across_rounds && report.equal_to_expected != Some(false))
}

/// The C1 at `path` with the sector metadata beside it.
fn load_c1(path: &std::path::Path) -> Result<(SectorMeta, C1)> {
    let meta_path = sector::meta_path_for(path);
    let meta = SectorMeta::load(&meta_path).with_context(|| format!("reading {}", meta_path.display()))?;
    let c1 = C1::load(path, Some(meta.registered_proof))?;
    Ok((meta, c1))
}

/// One partition's circuit, its witness and what they took.
struct Subject {
    source: String,
    synthetic: bool,
    pce: std::sync::Arc<PreCompiledCircuit>,
    pce_s: f64,
    w: cuzk_pce::witness::WitnessCs,
    witness_s: f64,
}

/// Partition `k` of the C1 or of the SnapDeals request `args` names: its PCE (made if missing)
/// and cuzk's witness.
fn partition_subject(args: &Args, k: usize) -> Result<Subject> {
    if let Some(path) = &args.update {
        let settings = Settings::from_vars(|k| std::env::var_os(k));
        settings.apply()?;
        let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let input = UpdateInput::from_file_bytes(&path.display().to_string(), &bytes)?;
        let kind = SnapDeals::with_settings(&settings);
        kind.check(&input, false)?;
        let t = Instant::now();
        let (pce, _) = kind.shared_pce(input.registered_proof)?;
        let pce_s = secs(t);
        let t = Instant::now();
        let w = cuzk_filecoin::update::circuit::partition_witness(&input, &pce, k)?;
        return Ok(Subject { source: input.source.clone(), synthetic: input.synthetic, pce, pce_s, w, witness_s: secs(t) });
    }
    let c1_path = args.c1.as_ref().context("partition mode needs --c1 or --update")?;
    let kind = porep_kind()?;
    let (meta, c1) = load_c1(c1_path)?;
    let t = Instant::now();
    let (pce, _) = kind.shared_pce(c1.registered_proof)?;
    let pce_s = secs(t);
    let t = Instant::now();
    let w = cuzk_filecoin::porep::pce::partition_witness(&c1, &meta.identity(), &pce, k, kind.witness_mode())?;
    Ok(Subject { source: c1_path.display().to_string(), synthetic: c1.synthetic, pce, pce_s, w, witness_s: secs(t) })
}

#[allow(clippy::too_many_arguments)]
fn round_shaped<Tree: 'static + MerkleTreeTrait>(
    c1: &C1,
    id: &SectorIdentity,
    pce: &PreCompiledCircuit,
    srs: &SRS,
    rs: &[(Scalar, Scalar)],
    reference: &[u8],
    k: usize,
) -> Result<(Round, Vec<u8>)> {
    let prepared = prepare::<Tree>(c1, id)?;
    let list = circuits(&prepared)?;
    let mut round = Round { round: k, ..Default::default() };

    // Old path: what bellperson's `cuda-supraseal` prover does.
    let t = Instant::now();
    let full = list
        .par_iter()
        .map(|c| cuzk_pce::reference::synthesize(c.clone()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .context("old-path synthesis")?;
    round.old_synthesis_s = secs(t);
    let dens: Vec<[Vec<u64>; 3]> =
        full.iter().map(|f| [pack_bits(&f.a_aux_density), pack_bits(&f.b_input_density), pack_bits(&f.b_aux_density)]).collect();
    let parts: Vec<Assigned<'_>> = full
        .iter()
        .zip(&dens)
        .map(|(f, d)| Assigned {
            inputs: &f.inputs,
            aux: &f.aux,
            a: &f.eval.a,
            b: &f.eval.b,
            c: &f.eval.c,
            a_aux: &d[0],
            b_input: &d[1],
            b_aux: &d[2],
        })
        .collect();
    let t = Instant::now();
    let old = supraseal_prove(&parts, rs, srs)?;
    round.old_supraseal_s = secs(t);
    round.old_total_s = round.old_synthesis_s + round.old_supraseal_s;
    round.old_proof_equal = old == reference;
    drop(parts);
    drop(full);

    // New path: cuzk's witness-only synthesis and PCE mat-vec, SupraSeal's prover.
    let mut wits = Vec::with_capacity(list.len());
    let mut evals = Vec::with_capacity(list.len());
    for c in list {
        let t = Instant::now();
        let w = cuzk_pce::witness::checked_witness(c, pce)?;
        round.new_witness_s += secs(t);
        let t = Instant::now();
        evals.push(pce.evaluate(&w.inputs, &w.aux)?);
        round.new_matvec_s += secs(t);
        wits.push(w);
    }
    let parts: Vec<Assigned<'_>> = wits
        .iter()
        .zip(&evals)
        .map(|(w, e)| Assigned {
            inputs: &w.inputs,
            aux: &w.aux,
            a: &e.a,
            b: &e.b,
            c: &e.c,
            a_aux: &pce.a_aux_density,
            b_input: &pce.b_input_density,
            b_aux: &pce.b_aux_density,
        })
        .collect();
    let t = Instant::now();
    let new = supraseal_prove(&parts, rs, srs)?;
    round.new_supraseal_s = secs(t);
    round.new_total_s = round.new_witness_s + round.new_matvec_s + round.new_supraseal_s;
    round.new_proof_equal = new == reference;
    Ok((round, new))
}
