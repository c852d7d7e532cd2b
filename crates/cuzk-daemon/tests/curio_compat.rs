//! Curio's client as it is: insecure channel credentials, no token, a request shaped as Curio
//! builds it (deterministic request id, the C1 bytes, miner and sector). It must keep working
//! out of the box over the unix socket (even when the operator set a token for TCP) and over
//! TCP with `auth.insecure`; each proves the 2 KiB fixture and the proof passes verify_seal.
//! The socket's directory is created 0700 and the socket is 0600; a world-writable directory
//! is refused.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;
use cuzk_daemon::proto::{self, await_proof_response::Status as S};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curio_without_a_token_proves_over_the_unix_socket_and_insecure_tcp() {
    let (bytes, id, c1) = setup();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "only-for-tcp").unwrap();
    let sock = dir.path().join("run/cuzk/cuzk.sock");
    let mut cfg = config(1);
    cfg.listen = format!("unix://{}", sock.display());
    cfg.auth.insecure = false;
    cfg.auth.token_file = dir.path().join("token").display().to_string();
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(sock.parent().unwrap()), 0o700, "the socket's directory is private");
    assert_eq!(mode(&sock), 0o600, "the socket is the daemon user's only");
    let rid = format!("porep-{}-{}", id.miner_id, id.sector_number);
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let r = prove(&mut c, porep(&bytes, id, &rid, proto::Priority::Normal)).await;
    assert_eq!(r.status, S::Completed as i32, "{}", r.error_message);
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &r.proof).unwrap();
    assert!(h.stop().await.unwrap());
    assert!(!sock.exists());

    // TCP with the explicit insecure setting and no token: Curio's host:port.
    let h = cuzk_daemon::start(&config(1), cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let s = c.submit_proof(porep(&bytes, id, &rid, proto::Priority::Normal)).await.unwrap().into_inner();
    let r = c.await_proof(proto::AwaitProofRequest { job_id: s.job_id, timeout_ms: 0 }).await.unwrap().into_inner();
    assert_eq!(r.status, S::Completed as i32, "{}", r.error_message);
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &r.proof).unwrap();
    c.get_status(proto::GetStatusRequest {}).await.unwrap();
    assert!(h.stop().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_writable_socket_directory_is_refused() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut cfg = config(1);
    cfg.listen = format!("unix://{}", open.join("cuzk.sock").display());
    let e = cuzk_daemon::start(&cfg, cpu(), &settings()).await.err().expect("refused");
    assert!(e.to_string().contains("world-writable"), "{e}");
}
