//! Fault injection for tests and failure drills. Always here: the plan language
//! ([`FaultPlan`], [`parse_plans`]), [`plans`], which also says whether this build can run
//! them, and [`wrap`], the one way a caller puts plans on a backend. Only with the
//! `fault-injection` feature: `FaultyBackend`, which wraps any backend and, on chosen
//! partition proofs (counted by their quotient + H step, the first backend call of every
//! partition), fails with a device error, corrupts the A evaluation handed to it, corrupts
//! the H MSM result, or panics, passing every other call through unchanged; without the feature a
//! non-empty plan is refused with [`FaultError::NotBuilt`], so a release build cannot be
//! configured into corrupting proofs. It knows backends, not who configures the plans (the
//! daemon's `engine.inject_fault`) nor how a failed partition is handled.

use std::str::FromStr;
use std::sync::Arc;

use super::Backend;

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The call fails as a device failure would (`BackendError::Device`).
    DeviceError,
    /// One value of the A evaluation is changed before the quotient is computed.
    CorruptEvaluation,
    /// The H MSM's result is moved off by the generator.
    CorruptMsm,
    /// The call panics, as a bug in a backend would (the engine must contain it).
    Panic,
}

/// Which partition proofs a fault hits: the calls numbered `skip` to `skip + times − 1`
/// (from 0, in the order the wrapped backend sees them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultPlan {
    /// What the fault does.
    pub kind: FaultKind,
    /// How many proving calls pass untouched before the first fault.
    pub skip: u64,
    /// How many consecutive calls the fault hits (`u64::MAX` for all of them).
    pub times: u64,
}

impl FromStr for FaultPlan {
    type Err = String;

    /// `KIND[,skip=N][,times=N|all]` with KIND one of `device-error`, `corrupt-evaluation`,
    /// `corrupt-msm`, `panic`; by default the first partition only.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts = s.split(',').map(str::trim);
        let kind = match parts.next().unwrap_or("") {
            "device-error" => FaultKind::DeviceError,
            "corrupt-evaluation" => FaultKind::CorruptEvaluation,
            "corrupt-msm" => FaultKind::CorruptMsm,
            "panic" => FaultKind::Panic,
            other => return Err(format!("unknown fault {other:?}: want device-error, corrupt-evaluation, corrupt-msm or panic")),
        };
        let mut plan = FaultPlan { kind, skip: 0, times: 1 };
        for p in parts {
            let (k, v) = p.split_once('=').ok_or_else(|| format!("{p:?}: want key=value"))?;
            let n = || v.parse::<u64>().map_err(|e| format!("{k}={v:?}: {e}"));
            match k {
                "skip" => plan.skip = n()?,
                "times" if v == "all" => plan.times = u64::MAX,
                "times" => plan.times = n()?,
                _ => return Err(format!("unknown fault setting {k:?}: want skip or times")),
            }
        }
        Ok(plan)
    }
}

/// Several plans, `;`-separated in text (`device-error;corrupt-msm,skip=1`); on each call the
/// first plan that covers it applies.
pub fn parse_plans(s: &str) -> Result<Vec<FaultPlan>, String> {
    s.split(';').filter(|p| !p.trim().is_empty()).map(str::parse).collect()
}

/// Whether this build has fault injection (the `fault-injection` feature).
pub const AVAILABLE: bool = cfg!(feature = "fault-injection");

/// Why fault plans cannot be put on a backend.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// The text is not a list of plans.
    #[error("{0}")]
    Plan(String),
    /// Plans were asked for, but the `fault-injection` feature is off.
    #[error("this build has no fault injection; build with --features fault-injection")]
    NotBuilt,
}

/// The plans `text` names (as [`parse_plans`]), refused with [`FaultError::NotBuilt`] when
/// there is at least one and this build cannot inject faults: what a config check calls.
pub fn plans(text: &str) -> Result<Vec<FaultPlan>, FaultError> {
    let plans = parse_plans(text).map_err(FaultError::Plan)?;
    if !plans.is_empty() && !AVAILABLE {
        return Err(FaultError::NotBuilt);
    }
    Ok(plans)
}

/// `backend` with `plans` injected: `backend` itself when there are none, a `FaultyBackend`
/// around it otherwise, or [`FaultError::NotBuilt`] when this build has no fault injection.
pub fn wrap(backend: Arc<dyn Backend>, plans: &[FaultPlan]) -> Result<Arc<dyn Backend>, FaultError> {
    if plans.is_empty() {
        return Ok(backend);
    }
    #[cfg(feature = "fault-injection")]
    {
        Ok(Arc::new(FaultyBackend::new(backend, plans.to_vec())))
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        Err(FaultError::NotBuilt)
    }
}

#[cfg(feature = "fault-injection")]
pub use faulty::FaultyBackend;

#[cfg(feature = "fault-injection")]
mod faulty {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use blstrs::{G1Affine, G1Projective, Scalar};
    use ff::Field;
    use group::Group;

    use super::{FaultKind, FaultPlan};
    use crate::backend::{Backend, BackendError, BackendResult};

    /// A backend that injects the faults of its plans into the one it wraps.
    pub struct FaultyBackend {
        inner: Arc<dyn Backend>,
        plans: Vec<FaultPlan>,
        calls: AtomicU64,
        hits: AtomicU64,
    }

    impl FaultyBackend {
        /// Wraps `inner`. Its `quotient_msm_h` calls (one per partition proof) are counted from
        /// 0, and each is hit by the first of `plans` that covers it (none: it passes through).
        pub fn new(inner: Arc<dyn Backend>, plans: Vec<FaultPlan>) -> Self {
            FaultyBackend { inner, plans, calls: AtomicU64::new(0), hits: AtomicU64::new(0) }
        }

        /// Faults injected so far.
        pub fn injected(&self) -> u64 {
            self.hits.load(Ordering::Relaxed)
        }

        fn hit(&self) -> Option<(u64, FaultKind)> {
            let n = self.calls.fetch_add(1, Ordering::Relaxed);
            let plan = self.plans.iter().find(|p| n >= p.skip && n - p.skip < p.times)?;
            self.hits.fetch_add(1, Ordering::Relaxed);
            Some((n, plan.kind))
        }
    }

    impl FaultyBackend {
        fn inner(&self) -> &dyn Backend {
            self.inner.as_ref()
        }
    }

    crate::backend_pass_through!(FaultyBackend, inner);

    impl Backend for FaultyBackend {
        fn name(&self) -> &str {
            self.inner.name()
        }

        fn overlap_h(&self) -> bool {
            self.inner.overlap_h()
        }

        fn keeps_prover_vectors(&self) -> bool {
            self.inner.keeps_prover_vectors()
        }

        fn resident_report(&self) -> crate::backend::ResidentReport {
            self.inner.resident_report()
        }

        fn holds_matrices(&self, m: &crate::backend::Matrices) -> bool {
            self.inner.holds_matrices(m)
        }

        fn forget_bases(&self, g1: &[&[G1Affine]], g2: &[&[blstrs::G2Affine]]) -> u64 {
            self.inner.forget_bases(g1, g2)
        }

        fn quotient_msm_h(
            &self,
            mut a: Vec<Scalar>,
            b: Vec<Scalar>,
            c: Vec<Scalar>,
            h_bases: &[G1Affine],
        ) -> BackendResult<(G1Projective, Duration)> {
            let Some((n, kind)) = self.hit() else { return self.inner.quotient_msm_h(a, b, c, h_bases) };
            tracing::warn!(call = n, ?kind, "injecting a backend fault");
            match kind {
                FaultKind::DeviceError => Err(BackendError::Device(format!("injected fault: device error on partition call {n}"))),
                FaultKind::CorruptEvaluation => {
                    if let Some(x) = a.first_mut() {
                        *x += Scalar::ONE;
                    }
                    self.inner.quotient_msm_h(a, b, c, h_bases)
                }
                FaultKind::CorruptMsm => {
                    let (h, t) = self.inner.quotient_msm_h(a, b, c, h_bases)?;
                    Ok((h + G1Projective::generator(), t))
                }
                FaultKind::Panic => panic!("injected fault: panic on partition call {n}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::CpuBackend;

    #[test]
    fn plans_parse_and_bad_ones_are_named() {
        assert_eq!("device-error".parse(), Ok(FaultPlan { kind: FaultKind::DeviceError, skip: 0, times: 1 }));
        assert_eq!("corrupt-msm, skip=2, times=all".parse(), Ok(FaultPlan { kind: FaultKind::CorruptMsm, skip: 2, times: u64::MAX }));
        assert!("melt".parse::<FaultPlan>().unwrap_err().contains("melt"));
        assert_eq!("panic,times=2".parse(), Ok(FaultPlan { kind: FaultKind::Panic, skip: 0, times: 2 }));
        assert!("device-error,times=x".parse::<FaultPlan>().unwrap_err().contains("times"));
        assert!("device-error,when=now".parse::<FaultPlan>().unwrap_err().contains("when"));
        let two = parse_plans("device-error; corrupt-msm,skip=1").unwrap();
        assert_eq!(two[1], FaultPlan { kind: FaultKind::CorruptMsm, skip: 1, times: 1 });
        assert!(parse_plans("").unwrap().is_empty());
    }

    #[test]
    fn no_plans_wrap_to_the_backend_itself_and_plans_need_the_feature() {
        let cpu: Arc<dyn Backend> = Arc::new(CpuBackend::new());
        assert!(Arc::ptr_eq(&wrap(cpu.clone(), &[]).unwrap(), &cpu));
        assert_eq!(plans(" ; "), Ok(vec![]));
        assert!(matches!(plans("melt"), Err(FaultError::Plan(m)) if m.contains("melt")));
        let one = parse_plans("device-error").unwrap();
        if AVAILABLE {
            assert_eq!(plans("device-error"), Ok(one.clone()));
            assert!(!Arc::ptr_eq(&wrap(cpu.clone(), &one).unwrap(), &cpu));
        } else {
            assert_eq!(plans("device-error"), Err(FaultError::NotBuilt));
            assert_eq!(wrap(cpu, &one).err(), Some(FaultError::NotBuilt));
            assert!(FaultError::NotBuilt.to_string().contains("--features fault-injection"));
        }
    }

    #[cfg(feature = "fault-injection")]
    #[test]
    fn only_the_planned_calls_are_faulted_and_each_fault_changes_the_answer() {
        use crate::backend::{BackendError, Msm};
        use blstrs::{G1Affine, G1Projective, Scalar};
        use ff::Field;
        use group::Group;
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let n = 16;
        let v = |rng: &mut rand_chacha::ChaCha8Rng| (0..n).map(|_| Scalar::random(&mut *rng)).collect::<Vec<_>>();
        let (a, b) = (v(&mut rng), v(&mut rng));
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let bases: Vec<G1Affine> = (0..n - 1).map(|_| (G1Projective::random(&mut rng)).into()).collect();
        let cpu: Arc<dyn Backend> = Arc::new(CpuBackend::new());
        let want = cpu.quotient_msm_h(a.clone(), b.clone(), c.clone(), &bases).unwrap().0;
        for kind in [FaultKind::DeviceError, FaultKind::CorruptEvaluation, FaultKind::CorruptMsm, FaultKind::Panic] {
            let f = FaultyBackend::new(cpu.clone(), vec![FaultPlan { kind, skip: 1, times: 2 }]);
            let call = || {
                let r =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.quotient_msm_h(a.clone(), b.clone(), c.clone(), &bases)));
                r.map_err(|_| BackendError::Device("panicked".into())).and_then(|r| r).map(|r| r.0)
            };
            let got: Vec<_> = (0..4).map(|_| call()).collect();
            assert_eq!(got[0].as_ref().unwrap(), &want, "{kind:?}: call 0 passes");
            assert_eq!(got[3].as_ref().unwrap(), &want, "{kind:?}: call 3 passes");
            for g in &got[1..3] {
                match (kind, g) {
                    (FaultKind::DeviceError, Err(BackendError::Device(m))) => assert!(m.contains("injected")),
                    (FaultKind::DeviceError, other) => panic!("want a device error: {other:?}"),
                    (FaultKind::Panic, Err(BackendError::Device(m))) => assert_eq!(m, "panicked"),
                    (FaultKind::Panic, other) => panic!("want a panic: {other:?}"),
                    (_, r) => assert_ne!(r.as_ref().unwrap(), &want, "{kind:?} must change the result"),
                }
            }
            assert_eq!(f.injected(), 2);
            // Everything else passes through.
            assert_eq!(
                Msm::<G1Affine>::msm(&f, &bases, &a[..n - 1]).unwrap(),
                Msm::<G1Affine>::msm(cpu.as_ref(), &bases, &a[..n - 1]).unwrap()
            );
        }
    }
}
