//! What the devices keep resident reaches the daemon's status and metrics, and evicting a
//! circuit makes every device drop its copies of that circuit's parameter sections (the
//! exact host slices the registry held), with the device bytes freed in the answer. The
//! device here is the CPU backend behind a recorder that reports a residency and records
//! what it is told to forget; the CUDA backend's own policy is tested in cuzk-gpu. (In its own
//! process: it loads the process-wide parameter registry.)

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use cuzk_core::backend::cpu::CpuBackend;
use cuzk_core::backend::{Backend, ResidentReport};
use cuzk_core::{G1Affine, G2Affine};
use cuzk_daemon::proto;

const REPORT: ResidentReport = ResidentReport {
    sections: 5,
    bytes: 3 << 20,
    budget_bytes: Some(8 << 20),
    evictions: 2,
    streamed: 1,
    matrices: 2,
    matrix_bytes: 7 << 20,
    pinned_host_bytes: 0,
};
const FREED: u64 = 1234;

/// (curve, host address, points) of every slice a device was told to forget.
type Forgotten = Arc<Mutex<Vec<(u8, usize, usize)>>>;

struct Recorder {
    cpu: CpuBackend,
    forgotten: Forgotten,
}

impl Recorder {
    fn inner(&self) -> &CpuBackend {
        &self.cpu
    }
}
cuzk_core::backend_pass_through!(Recorder, inner);
impl Backend for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn resident_report(&self) -> ResidentReport {
        REPORT
    }
    fn forget_bases(&self, g1: &[&[G1Affine]], g2: &[&[G2Affine]]) -> u64 {
        let mut f = self.forgotten.lock().unwrap();
        f.extend(g1.iter().map(|b| (1, b.as_ptr() as usize, b.len())));
        f.extend(g2.iter().map(|b| (2, b.as_ptr() as usize, b.len())));
        FREED
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_device_residency_and_eviction_frees_the_device_copies() {
    setup();
    let forgotten = Forgotten::default();
    let device =
        cuzk_pipeline::Device { name: "rec0".into(), backend: Arc::new(Recorder { cpu: CpuBackend::new(), forgotten: forgotten.clone() }) };
    let h = cuzk_daemon::start(&config(1), vec![device], &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();

    let s = c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner();
    let g = &s.gpus[0];
    assert_eq!(g.name, "rec0");
    assert_eq!((g.resident_sections, g.resident_bytes, g.resident_budget_bytes, g.resident_evictions), (5, 3 << 20, 8 << 20, 2));
    assert_eq!((g.resident_matrices, g.resident_matrix_bytes), (2, 7 << 20));
    let m = c.get_metrics(proto::GetMetricsRequest {}).await.unwrap().into_inner().prometheus_text;
    for want in [
        format!("cuzk_device_resident_bytes{{device=\"rec0\"}} {}", 3 << 20),
        format!("cuzk_device_resident_budget_bytes{{device=\"rec0\"}} {}", 8 << 20),
        "cuzk_device_resident_evictions_total{device=\"rec0\"} 2".to_string(),
        format!("cuzk_device_resident_matrix_bytes{{device=\"rec0\"}} {}", 7 << 20),
        "cuzk_device_streamed_sections_total{device=\"rec0\"} 1".to_string(),
    ] {
        assert!(m.lines().any(|l| l == want), "missing {want:?} in\n{m}");
    }

    // Nothing loaded: evicting frees nothing and tells no device anything.
    let ev = c.evict_srs(proto::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(!ev.was_loaded);
    assert_eq!(ev.device_freed_bytes, 0);
    assert!(forgotten.lock().unwrap().is_empty());

    c.preload_srs(proto::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap();
    let circuit = cuzk_filecoin::curio::parse_circuit("porep-2k").unwrap();
    let kinds = cuzk_filecoin::Kinds::new(&settings(), Default::default());
    let params = kinds.resident(circuit).1.expect("preloaded parameters are resident");
    let g1 = |v: &[G1Affine]| (1u8, v.as_ptr() as usize, v.len());
    let p = params.sections();
    let want = vec![g1(p.h), g1(p.l), g1(p.a), g1(p.b_g1), (2u8, p.b_g2.as_ptr() as usize, p.b_g2.len())];
    drop(params);

    let ev = c.evict_srs(proto::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap().into_inner();
    assert!(ev.was_loaded && ev.freed_bytes > 0);
    assert_eq!(ev.device_freed_bytes, FREED, "the device's answer is passed on");
    assert_eq!(*forgotten.lock().unwrap(), want, "the device is told the exact sections the host let go");
    assert!(h.stop().await.unwrap());
}
