//! Synthetic C1 outputs: the real structure of a sector size's commit-phase-1 output — its
//! partitions, the challenges its seed derives, each challenge's DRG and expander parents from
//! the real graph, Merkle paths with the real tree shapes and the index digits of the nodes
//! they prove — filled with random field elements. The real `StackedCircuit` synthesizes from
//! it at full size, so it measures a 32 GiB partition on a machine that never sealed one; the
//! circuit is not satisfied and no proof of it verifies. The file says so (`cuzk_synthetic`),
//! [`super::c1::prepare`] skips the checks that need real data, and every command that reads
//! one says so too.

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::constants::{DefaultPieceHasher, DefaultTreeDomain};
use filecoin_proofs::with_shape;
use filecoin_proofs_api::RegisteredSealProof;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{base_path_length, MerkleProof, MerkleTreeTrait};
use storage_proofs_porep::stacked::{self, Column, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof};

use super::sector;
use crate::{Error, Result};

/// Why a synthetic C1 is refused where a verified proof is asked for.
pub const NOT_PROVABLE: &str = "a synthetic C1 (gen-c1 --synthetic: random contents) has no valid proof; \
     prove it only to time proving, with verification off (--no-verify)";

/// The JSON key that marks a synthetic C1.
pub const MARKER: &str = "cuzk_synthetic";

/// A synthetic C1 for `rp` (filecoin-proofs-api's form, with [`MARKER`] set), reproducible
/// from `seed`.
pub fn generate(rp: RegisteredSealProof, seed: u64) -> Result<serde_json::Value> {
    with_shape!(sector::sector_size_of(rp), generate_shaped, rp, seed)
}

fn random<D: Domain>(rng: &mut impl Rng) -> D {
    D::from(Fr::random(rng))
}

fn randoms<D: Domain>(rng: &mut impl Rng, n: usize) -> Vec<D> {
    (0..n).map(|_| random(rng)).collect()
}

/// A path of shape (A, B, C) for `node` among `leaves`, from a random leaf to `root`: base
/// levels with the node's base-A digits inside its sub-tree, then the sub-tree and top-tree
/// levels.
fn path<H: Hasher, A, B, C>(rng: &mut impl Rng, node: usize, leaves: usize, root: H::Domain) -> MerkleProof<H, A, B, C>
where
    A: filecoin_hashers::PoseidonArity,
    B: filecoin_hashers::PoseidonArity,
    C: filecoin_hashers::PoseidonArity,
{
    let leaf = random(rng);
    let (a, b, c) = (A::to_usize(), B::to_usize(), C::to_usize());
    let per_sub = leaves / b.max(1) / c.max(1);
    let mut levels = Vec::new();
    let mut idx = node % per_sub;
    for _ in 0..base_path_length::<A, B, C>(leaves) {
        levels.push((randoms(rng, a - 1), idx % a));
        idx /= a;
    }
    let mut upper = node / per_sub;
    for arity in [b, c].into_iter().filter(|&x| x > 0) {
        levels.push((randoms(rng, arity - 1), upper % arity));
        upper /= arity;
    }
    MerkleProof::from_parts(leaf, root, levels)
}

fn generate_shaped<Tree: 'static + MerkleTreeTrait>(rp: RegisteredSealProof, seed: u64) -> Result<serde_json::Value> {
    type H<T> = <T as MerkleTreeTrait>::Hasher;
    type D<T> = <H<T> as Hasher>::Domain;
    let config = rp.as_v1_config();
    let pp = filecoin_proofs::parameters::public_params::<Tree>(&config).map_err(Error::filecoin)?;
    let nodes = pp.graph.size();
    let layers = pp.num_layers;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let replica_id: D<Tree> = random(&mut rng);
    let comm_d: <DefaultPieceHasher as Hasher>::Domain = random(&mut rng);
    let (comm_c, comm_r_last): (D<Tree>, D<Tree>) = (random(&mut rng), random(&mut rng));
    let comm_r = <H<Tree> as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    let (interactive_seed, ticket): ([u8; 32], [u8; 32]) = (rng.gen(), rng.gen());
    let pub_in = stacked::PublicInputs::<D<Tree>, _> {
        replica_id,
        seed: Some(interactive_seed),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
    };
    let (base_degree, exp_degree) = (pp.graph.base_graph().degree(), pp.graph.expansion_degree());
    let partitions = usize::from(config.partitions);
    let vanilla = (0..partitions)
        .into_par_iter()
        .map(|k| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(k as u64 + 1)));
            let challenges = pub_in.challenges(&pp.challenges, nodes, Some(k));
            challenges
                .into_iter()
                .map(|c| {
                    let column = |rng: &mut ChaCha8Rng, node: usize| {
                        let col = Column::new(node as u32, randoms(rng, layers)).map_err(Error::filecoin)?;
                        let proof = path(rng, node, nodes, comm_c);
                        ColumnProof::from_column(col, proof).map_err(Error::filecoin)
                    };
                    let mut drg = vec![0u32; base_degree];
                    pp.graph.base_graph().parents(c, &mut drg).map_err(Error::filecoin)?;
                    let mut exp = vec![0u32; exp_degree];
                    pp.graph.expanded_parents(c, &mut exp).map_err(Error::filecoin)?;
                    let replica_column_proofs = ReplicaColumnProof {
                        c_x: column(&mut rng, c)?,
                        drg_parents: drg.iter().map(|&p| column(&mut rng, p as usize)).collect::<Result<_>>()?,
                        exp_parents: exp.iter().map(|&p| column(&mut rng, p as usize)).collect::<Result<_>>()?,
                    };
                    let parents_of = |layer: usize| if layer == 1 { base_degree } else { base_degree + exp_degree };
                    Ok(stacked::Proof::<Tree, DefaultPieceHasher> {
                        comm_d_proofs: path(&mut rng, c, nodes, comm_d),
                        comm_r_last_proof: path(&mut rng, c, nodes, comm_r_last),
                        replica_column_proofs,
                        labeling_proofs: (1..=layers)
                            .map(|l| LabelingProof::new(l as u32, c as u64, randoms(&mut rng, parents_of(l))))
                            .collect(),
                        encoding_proof: EncodingProof::new(layers as u32, c as u64, randoms(&mut rng, parents_of(layers))),
                    })
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let fr_bytes = |d: [u8; 32]| serde_json::to_value(d).map_err(|e| Error::Invalid(e.to_string()));
    let tree_domain: DefaultTreeDomain = {
        let fr: Fr = replica_id.into();
        fr.into()
    };
    let mut variant = serde_json::Map::new();
    variant.insert(
        super::c1::variant_for(sector::sector_size_of(rp)),
        serde_json::to_value(&vanilla).map_err(|e| Error::Invalid(e.to_string()))?,
    );
    let mut out = serde_json::Map::new();
    out.insert("registered_proof".into(), serde_json::to_value(rp).map_err(|e| Error::Invalid(e.to_string()))?);
    out.insert("vanilla_proofs".into(), serde_json::Value::Object(variant));
    out.insert("comm_r".into(), fr_bytes(domain_bytes(comm_r))?);
    out.insert("comm_d".into(), fr_bytes(domain_bytes(comm_d))?);
    out.insert("replica_id".into(), serde_json::to_value(tree_domain).map_err(|e| Error::Invalid(e.to_string()))?);
    out.insert("seed".into(), fr_bytes(interactive_seed)?);
    out.insert("ticket".into(), fr_bytes(ticket)?);
    out.insert(MARKER.into(), serde_json::Value::Bool(true));
    Ok(serde_json::Value::Object(out))
}

fn domain_bytes<D: Domain>(d: D) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// Writes a synthetic C1 for `rp` as `out_dir/c1.json` with its `c1.meta.json` (miner 0,
/// sector 0: a synthetic C1 belongs to no sector). Returns the metadata.
pub fn write(rp: RegisteredSealProof, seed: u64, out_dir: &std::path::Path, command: &str) -> Result<sector::SectorMeta> {
    let c1 = generate(rp, seed)?;
    std::fs::create_dir_all(out_dir).map_err(|e| Error::io(out_dir, e))?;
    let hex_field = |k: &str| -> String {
        let bytes: Vec<u8> = serde_json::from_value(c1[k].clone()).unwrap_or_default();
        hex::encode(bytes)
    };
    let identity = sector::SectorIdentity { miner_id: 0, sector_number: 0 };
    let meta = sector::SectorMeta {
        registered_proof: rp,
        miner_id: 0,
        sector_number: 0,
        prover_id: hex::encode(identity.prover_id()),
        comm_r: hex_field("comm_r"),
        comm_d: hex_field("comm_d"),
        ticket: hex_field("ticket"),
        seed: hex_field("seed"),
        generated_by: format!("{command} (SYNTHETIC: random contents, not provable)"),
    };
    let c1_path = out_dir.join("c1.json");
    cuzk_core::atomic::write_atomically(&c1_path, |w| serde_json::to_writer(w, &c1).map_err(std::io::Error::other))?;
    cuzk_core::atomic::write_atomically(&sector::meta_path_for(&c1_path), |w| {
        serde_json::to_writer_pretty(&mut *w, &meta).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })?;
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::porep::c1::{prepare, C1};
    use filecoin_proofs::{SectorShape2KiB, SectorShape32GiB};
    use storage_proofs_core::merkle::MerkleProofTrait;

    fn parse(v: &serde_json::Value) -> Result<C1> {
        C1::parse(std::path::Path::new("synthetic.json"), &serde_json::to_vec(v).unwrap(), None)
    }

    #[test]
    fn a_synthetic_c1_has_the_real_structure_and_only_the_marker_relaxes_the_checks() {
        let rp = sector::registered_proof(2048).unwrap();
        let v = generate(rp, 1).unwrap();
        assert_eq!(v, generate(rp, 1).unwrap(), "the same seed must give the same C1");
        assert_ne!(v, generate(rp, 2).unwrap());
        let c1 = parse(&v).unwrap();
        assert!(c1.synthetic);
        let id = sector::SectorIdentity { miner_id: 0, sector_number: 0 };
        let p = prepare::<SectorShape2KiB>(&c1, &id).unwrap();
        let cfg = rp.as_v1_config();
        assert_eq!(p.vanilla.len(), usize::from(cfg.partitions));
        // Its challenges are the ones the seed derives.
        let want = p.public_inputs.challenges(&p.public_params.vanilla_params.challenges, 64, Some(0));
        let got: Vec<usize> = p.vanilla[0].iter().map(|q| q.comm_d_proofs.path_index()).collect();
        assert_eq!(got, want);

        // Without the marker it is an ordinary C1 whose vanilla proofs do not verify.
        let mut unmarked = v.clone();
        unmarked.as_object_mut().unwrap().remove(MARKER);
        let c1 = parse(&unmarked).unwrap();
        assert!(!c1.synthetic);
        let e = prepare::<SectorShape2KiB>(&c1, &id).err().expect("random contents must fail the real checks").to_string();
        assert!(e.contains("does not hash to its root") || e.contains("another sector") || e.contains("do not verify"), "{e}");
    }

    #[test]
    fn a_synthetic_ni_porep_c1_has_the_variants_partitions_and_challenges() {
        let rp = RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep;
        let c1 = parse(&generate(rp, 4).unwrap()).unwrap();
        assert_eq!(c1.registered_proof, rp);
        let p = prepare::<SectorShape2KiB>(&c1, &sector::SectorIdentity { miner_id: 0, sector_number: 0 }).unwrap();
        let interactive = sector::registered_proof(2048).unwrap().as_v1_config().partitions;
        assert_eq!(p.vanilla.len(), usize::from(rp.as_v1_config().partitions));
        assert!(p.vanilla.len() > usize::from(interactive), "NI-PoRep proves more partitions than V1_1");
        // Each partition's challenges are the non-interactive ones of its index.
        for k in [0, p.vanilla.len() - 1] {
            let want = p.public_inputs.challenges(&p.public_params.vanilla_params.challenges, 64, Some(k));
            let got: Vec<usize> = p.vanilla[k].iter().map(|q| q.comm_d_proofs.path_index()).collect();
            assert_eq!(got, want, "partition {k}");
        }
    }

    #[test]
    fn a_synthetic_32gib_c1_passes_the_structural_checks() {
        let rp = sector::registered_proof(32 << 30).unwrap();
        let c1 = parse(&generate(rp, 3).unwrap()).unwrap();
        let p = prepare::<SectorShape32GiB>(&c1, &sector::SectorIdentity { miner_id: 0, sector_number: 0 }).unwrap();
        assert_eq!(p.vanilla.len(), 10);
        assert!(p.vanilla.iter().all(|part| part.len() == 18));
        let proof = &p.vanilla[0][0];
        assert_eq!(proof.labeling_proofs.len(), 11);
        assert_eq!((proof.replica_column_proofs.drg_parents.len(), proof.replica_column_proofs.exp_parents.len()), (6, 8));
    }
}
