//! Hostile clients against a daemon on loopback (CPU backend, bundled 2 KiB C1, no GPU): each
//! scenario is bounded in time and count so that it runs in CI on a 2-core machine, and each
//! checks that no honest proof is lost, the daemon keeps serving and every honest proof it
//! returns passes verify_seal. Scenarios run one at a time (a process-wide lock), and each
//! prints one line `hostile: NAME | bound | lost | peak RSS` for docs/RELIABILITY.md.
//! Curio's own client (insecure credentials, no token, over the unix socket and over TCP with
//! `auth.insecure`) is covered in `curio_compat.rs`.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use cuzk_daemon::client::{Client, Credentials, Options};
use cuzk_daemon::proto::{self, await_proof_response::Status as S, proving_engine_client::ProvingEngineClient, SubmitProofRequest};
use tonic::Code;

/// One scenario at a time: the proofs share two cores and the peak RSS is the process's.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Bytes the daemon's log lines took (a subscriber that counts and discards them).
static LOGGED: AtomicU64 = AtomicU64::new(0);

/// The first 4 MiB of the log, to read what a job's lines carry.
static LOG_TEXT: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

struct Counting;
impl std::io::Write for Counting {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LOGGED.fetch_add(b.len() as u64, Ordering::Relaxed);
        let mut t = LOG_TEXT.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() < 4 << 20 {
            t.extend_from_slice(b);
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Panics anywhere in this process (the daemon's threads included) since it started.
static PANICS: AtomicU64 = AtomicU64::new(0);

fn init_logging() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::Relaxed);
            previous(info)
        }));
    });
    if std::env::var_os("HOSTILE_LOG").is_some() {
        let _ = tracing_subscriber::fmt().with_max_level(tracing::Level::DEBUG).try_init();
        return;
    }
    let _ = tracing_subscriber::fmt().with_ansi(false).with_writer(|| Counting).with_max_level(tracing::Level::INFO).try_init();
}

/// Resets the process's peak RSS (Linux: clear_refs 5), so a scenario reports its own.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    START_RSS.store(cuzk_core::mem::snapshot().rss_bytes, Ordering::Relaxed);
}

/// The RSS when the running scenario reset the peak.
static START_RSS: AtomicU64 = AtomicU64::new(0);

fn report(name: &str, bound: &str, lost: usize, t0: Instant) {
    let m = cuzk_core::mem::snapshot();
    println!(
        "hostile: {name} | {bound} | proofs lost {lost} | panics {} | peak RSS {} MiB (at start {} MiB) | {:.1} s",
        PANICS.load(Ordering::Relaxed),
        m.peak_bytes >> 20,
        START_RSS.load(Ordering::Relaxed) >> 20,
        t0.elapsed().as_secs_f64()
    );
}

fn garbage(request_id: &str) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: request_id.into(),
        proof_kind: proto::ProofKind::PorepSealCommit as i32,
        vanilla_proof: b"{\"not\": \"a c1\"}".to_vec(),
        ..Default::default()
    }
}

/// A client whose connections come from `local` (127.0.0.x), so the daemon sees another peer.
async fn connect_from(local: &'static str, addr: SocketAddr) -> Client {
    let ch = tonic::transport::Endpoint::try_from(format!("http://{addr}"))
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| async move {
            let s = tokio::net::TcpSocket::new_v4()?;
            s.bind(format!("{local}:0").parse().unwrap())?;
            let stream = s.connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
        }))
        .await
        .unwrap();
    ProvingEngineClient::with_interceptor(ch, Credentials::default())
}

fn tcp_addr(h: &cuzk_daemon::Handle) -> SocketAddr {
    match &h.listen {
        cuzk_daemon::Listen::Tcp(a) => *a,
        other => panic!("not TCP: {other}"),
    }
}

async fn status(c: &mut Client) -> proto::GetStatusResponse {
    c.get_status(proto::GetStatusRequest {}).await.unwrap().into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_request_id_is_retried_and_then_proves() {
    let _one = SERIAL.lock().await;
    init_logging();
    // The capture keeps the first 4 MiB: start it here, so that a scenario that ran before
    // (the garbage flood logs a line per submit) cannot have filled it.
    LOG_TEXT.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let (bytes, id, c1) = setup();
    reset_peak();
    let t0 = Instant::now();
    // The first proof's device call fails (policy fail): the job is FAILED. Curio retries the
    // sector with the same deterministic id, which must prove, not return the old failure.
    let mut cfg = config(1);
    cfg.engine.inject_fault = "device-error".into();
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let rid = format!("porep-{}-{}", id.miner_id, id.sector_number);
    let first = prove(&mut c, porep(&bytes, id, &rid, proto::Priority::Normal)).await;
    assert_eq!(first.status, S::Failed as i32, "{first:?}");
    assert!(first.error_message.contains("injected"), "{}", first.error_message);
    // The retry also asks to skip verification, which this daemon does not allow: it verifies.
    let retry_req = SubmitProofRequest { skip_verify: true, ..porep(&bytes, id, &rid, proto::Priority::Normal) };
    let retry = prove(&mut c, retry_req).await;
    assert_ne!(retry.job_id, first.job_id, "a FAILED id gets a new job");
    assert_eq!(retry.status, S::Completed as i32, "{}", retry.error_message);
    assert!(retry.verified, "skip_verify is not honoured unless jobs.allow_skip_verify");
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &retry.proof).expect("the retried proof is valid");
    let again = c.submit_proof(porep(&bytes, id, &rid, proto::Priority::Normal)).await.unwrap().into_inner();
    assert_eq!(again.job_id, retry.job_id, "a COMPLETED id still answers its job");
    // The job's log lines carry its id and its request id (the job span).
    if std::env::var_os("HOSTILE_LOG").is_none() {
        let log = String::from_utf8_lossy(&LOG_TEXT.lock().unwrap()).to_string();
        let mine: Vec<&str> = log.lines().filter(|l| l.contains(&retry.job_id)).collect();
        for what in ["queued", "started", "finished"] {
            let line = mine.iter().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no {what} line for the job in:\n{log}"));
            assert!(line.contains(&format!("request={rid}")), "{line}");
        }
    }
    // A synthetic C1 is refused by default, before it reaches the engine.
    let text = String::from_utf8(bytes.clone()).unwrap();
    let synthetic = text.replacen('{', "{\"cuzk_synthetic\":true,", 1).into_bytes();
    let r = prove(&mut c, SubmitProofRequest { vanilla_proof: synthetic, ..porep(&bytes, id, "", proto::Priority::Normal) }).await;
    assert_eq!(r.status, S::Failed as i32);
    assert!(r.error_message.contains("jobs.allow_synthetic"), "refused by the daemon, not later: {}", r.error_message);
    assert!(h.stop().await.unwrap());
    report("failed id retried (Curio's retry)", "1 failed + 1 retried proof", 0, t0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clients_job_cannot_be_guessed_cancelled_or_taken_by_its_request_id() {
    let _one = SERIAL.lock().await;
    init_logging();
    let (bytes, id, _) = setup();
    reset_peak();
    let t0 = Instant::now();
    let h = cuzk_daemon::start(&config(1), cpu(), &settings()).await.unwrap();
    h.service.jobs().hold(true);
    let addr = tcp_addr(&h);
    let mut victim = connect_from("127.0.0.1", addr).await;
    let mut thief = connect_from("127.0.0.2", addr).await;
    let rid = format!("porep-{}-{}", id.miner_id, id.sector_number);
    let mine = victim.submit_proof(porep(&bytes, id, &rid, proto::Priority::Normal)).await.unwrap().into_inner();
    // The same (guessable) request id from another client is that client's own job.
    let theirs = thief.submit_proof(porep(&bytes, id, &rid, proto::Priority::Normal)).await.unwrap().into_inner();
    assert_ne!(theirs.job_id, mine.job_id, "another client's request id must not reveal the job");
    for j in [&mine.job_id, &theirs.job_id] {
        assert_eq!(j.len(), 32, "{j}");
    }
    // The thief guesses neighbours of its own id (what sequential ids allowed) and a few more.
    let own = u128::from_str_radix(&theirs.job_id, 16).unwrap();
    let mut guesses: Vec<u128> = (1..=1000u128).flat_map(|d| [own.wrapping_sub(d), own.wrapping_add(d)]).collect();
    guesses.extend((0..1000u128).map(|k| k << 64));
    for g in &guesses {
        let e = thief.cancel_proof(proto::CancelProofRequest { job_id: format!("{g:032x}") }).await.unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
    }
    let v = victim.await_proof(proto::AwaitProofRequest { job_id: mine.job_id.clone(), timeout_ms: 1 }).await.unwrap().into_inner();
    assert_eq!(v.status, S::Timeout as i32, "the victim's job is still queued: {v:?}");
    assert!(h.stop().await.unwrap());
    report("guess/cancel another's job", &format!("{} guesses", guesses.len()), 0, t0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbage_flood_does_not_evict_an_uncollected_proof() {
    let _one = SERIAL.lock().await;
    init_logging();
    let (bytes, id, c1) = setup();
    reset_peak();
    let t0 = Instant::now();
    let mut cfg = config(1);
    // Smaller than the default so the flood passes it several times over in a few seconds.
    cfg.jobs.retain = 500;
    cfg.jobs.retain_rejected = 500;
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let addr = h.listen.to_string();
    let mut c = cuzk_daemon::client::connect(&addr).await.unwrap();
    let honest = c.submit_proof(porep(&bytes, id, "honest", proto::Priority::Normal)).await.unwrap().into_inner();
    // Finished but not collected: watched through status, not AwaitProof.
    let deadline = Instant::now() + Duration::from_secs(300);
    while status(&mut c).await.total_proofs_completed < 1 {
        assert!(Instant::now() < deadline, "the honest proof did not finish");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let flood_t0 = Instant::now();
    let (sent, max, until) = (Arc::new(AtomicU64::new(0)), 100_000u64, flood_t0 + Duration::from_secs(8));
    let mut tasks = Vec::new();
    for k in 0..32 {
        let (sent, addr) = (sent.clone(), addr.clone());
        tasks.push(tokio::spawn(async move {
            let mut g = cuzk_daemon::client::connect(&addr).await.unwrap();
            let mut n = 0u64;
            while Instant::now() < until && sent.fetch_add(1, Ordering::Relaxed) < max {
                let r = g.submit_proof(garbage(&format!("junk-{k}-{n}"))).await.unwrap().into_inner();
                assert!(!r.job_id.is_empty());
                n += 1;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let flooded = sent.load(Ordering::Relaxed).min(max);
    let flood_s = flood_t0.elapsed().as_secs_f64();
    assert!(flooded > 2 * 500, "the flood must pass the retention limits ({flooded} sent)");
    let r = c.await_proof(proto::AwaitProofRequest { job_id: honest.job_id.clone(), timeout_ms: 0 }).await.unwrap().into_inner();
    assert_eq!(r.status, S::Completed as i32, "the uncollected proof was forgotten: {}", r.error_message);
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &r.proof).unwrap();
    let counts = h.service.jobs().counts();
    assert!(counts.rejected_retained <= 500 && counts.retained <= 500, "{counts:?}");
    assert!(h.stop().await.unwrap());
    report("garbage flood", &format!("{flooded} submits in {flood_s:.1} s (cap 100000 or 8 s)"), 0, t0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_ids_and_messages_are_refused_and_logs_stay_small() {
    let _one = SERIAL.lock().await;
    init_logging();
    let (bytes, id, _) = setup();
    reset_peak();
    let t0 = Instant::now();
    let mut cfg = config(1);
    cfg.jobs.max_request = "1MiB".into();
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let mut c = cuzk_daemon::client::connect(&h.listen.to_string()).await.unwrap();
    let logged = LOGGED.load(Ordering::Relaxed);
    let huge = "x".repeat(900 << 10);
    for _ in 0..64 {
        let e = c.submit_proof(garbage(&huge)).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(e.message().len() < 200, "the id is not echoed");
    }
    let e = c.submit_proof(garbage(&"y".repeat(257))).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let ok = c.submit_proof(garbage(&"z\n".repeat(128))).await.unwrap().into_inner();
    assert!(!ok.job_id.is_empty(), "256 bytes is within the limit");
    let e = c.await_proof(proto::AwaitProofRequest { job_id: huge.clone(), timeout_ms: 1 }).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let e = c.cancel_proof(proto::CancelProofRequest { job_id: huge.clone() }).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    // A message over jobs.max_request is refused by the decoder, whatever it carries.
    let big = SubmitProofRequest { vanilla_proof: vec![b' '; 2 << 20], ..porep(&bytes, id, "big", proto::Priority::Normal) };
    let e = c.submit_proof(big).await.unwrap_err();
    assert!(matches!(e.code(), Code::OutOfRange | Code::ResourceExhausted), "{e:?}");
    let s = status(&mut c).await;
    assert_eq!(s.total_proofs_failed, 1, "only the one garbage request within the limits became a job");
    let grew = LOGGED.load(Ordering::Relaxed) - logged;
    assert!(grew < 64 << 10, "{grew} bytes of log for 64 refused 900 KiB ids");
    assert!(h.stop().await.unwrap());
    report("oversized ids and messages", &format!("64 x 900 KiB ids, 2 MiB message; {grew} log bytes"), 0, t0);
}

/// The TLS daemon of the token tests: client token "s3cret", admin token "r00t".
async fn tls_daemon(dir: &std::path::Path) -> cuzk_daemon::Handle {
    let tls = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls");
    std::fs::write(dir.join("token"), "s3cret\n").unwrap();
    std::fs::write(dir.join("admin"), "r00t\n").unwrap();
    let mut cfg = config(1);
    cfg.auth.insecure = false;
    cfg.auth.token_file = dir.join("token").display().to_string();
    cfg.auth.admin_token_file = dir.join("admin").display().to_string();
    cfg.auth.tls_cert = tls.join("cert.pem").display().to_string();
    cfg.auth.tls_key = tls.join("key.pem").display().to_string();
    cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap()
}

fn tls_opts(token: Option<&str>, admin: Option<&str>) -> Options {
    let ca = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tls/ca.pem");
    Options { token: token.map(Into::into), admin_token: admin.map(Into::into), ca: Some(ca), domain: Some("localhost".into()) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_needs_tls_and_the_token_and_admin_calls_the_admin_token() {
    let _one = SERIAL.lock().await;
    init_logging();
    setup();
    reset_peak();
    let t0 = Instant::now();
    // Plain TCP without `insecure` does not even start.
    let mut plain = config(1);
    plain.auth.insecure = false;
    let e = cuzk_daemon::start(&plain, cpu(), &settings()).await.err().expect("refused");
    assert!(e.to_string().contains("auth.insecure"), "{e}");

    let dir = tempfile::tempdir().unwrap();
    let h = tls_daemon(dir.path()).await;
    let addr = h.listen.to_string();
    let code = |r: Result<tonic::Response<proto::GetStatusResponse>, tonic::Status>| r.map(|_| Code::Ok).unwrap_or_else(|e| e.code());
    let mut none = cuzk_daemon::client::connect_with(&addr, &tls_opts(None, None)).await.unwrap();
    assert_eq!(code(none.get_status(proto::GetStatusRequest {}).await), Code::Unauthenticated);
    let e = none.submit_proof(garbage("x")).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let mut wrong = cuzk_daemon::client::connect_with(&addr, &tls_opts(Some("s3crex"), None)).await.unwrap();
    assert_eq!(code(wrong.get_status(proto::GetStatusRequest {}).await), Code::Unauthenticated);
    let mut user = cuzk_daemon::client::connect_with(&addr, &tls_opts(Some("s3cret"), None)).await.unwrap();
    assert_eq!(code(user.get_status(proto::GetStatusRequest {}).await), Code::Ok);
    let e = user.evict_srs(proto::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    let e = user.preload_srs(proto::PreloadSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    let mut bad_admin = cuzk_daemon::client::connect_with(&addr, &tls_opts(Some("s3cret"), Some("r00"))).await.unwrap();
    let e = bad_admin.evict_srs(proto::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied);
    let mut admin = cuzk_daemon::client::connect_with(&addr, &tls_opts(Some("s3cret"), Some("r00t"))).await.unwrap();
    admin.evict_srs(proto::EvictSrsRequest { circuit_id: "porep-2k".into() }).await.unwrap();
    // A plain-text client gets nothing from the TLS port.
    let plain_client = tokio::time::timeout(Duration::from_secs(15), async {
        let mut c = cuzk_daemon::client::connect_with(&addr, &Options { token: Some("s3cret".into()), ..Default::default() }).await?;
        c.get_status(proto::GetStatusRequest {}).await.map_err(|e| cuzk_daemon::DaemonError::Transport(e.to_string()))
    })
    .await;
    assert!(!matches!(plain_client, Ok(Ok(_))), "plain text must not be served on the TLS port");
    assert!(h.stop().await.unwrap());
    report("no token / wrong token / admin", "TLS, 2 bad tokens, 5 admin calls", 0, t0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_loris_connections_are_closed_and_an_honest_client_is_served() {
    let _one = SERIAL.lock().await;
    init_logging();
    setup();
    reset_peak();
    let t0 = Instant::now();
    let mut cfg = config(1);
    cfg.net.max_connections = 64;
    cfg.net.handshake_timeout_ms = 1000;
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    let addr = tcp_addr(&h);
    // 300 connections: half send nothing, half a partial HTTP/2 preface, and all hold on.
    let mut loris = Vec::new();
    for k in 0..300 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        if k % 2 == 1 {
            use tokio::io::AsyncWriteExt;
            let _ = s.write_all(b"PRI * HTTP/2.0\r\n").await;
        }
        loris.push(s);
    }
    // The honest client: it may be turned away while the slots are full, but within a few
    // handshake timeouts it is served.
    let served = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            if let Ok(mut c) = cuzk_daemon::client::connect(&addr.to_string()).await {
                if let Ok(r) = c.submit_proof(garbage("honest")).await {
                    return r.into_inner();
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("an honest client must be served while 300 slow-loris connections are open");
    assert!(!served.job_id.is_empty());
    // Every slow-loris connection is closed by the daemon (EOF or reset), none served.
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        use tokio::io::AsyncReadExt;
        for s in &mut loris {
            let mut b = [0u8; 64];
            loop {
                match s.read(&mut b).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "slow-loris connections must be closed");
    assert!(h.stop().await.unwrap());
    report("slow loris", "300 idle/partial-preface connections, 64 slots, 1 s deadline", 0, t0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_clients_and_an_honest_proof() {
    let _one = SERIAL.lock().await;
    init_logging();
    let (bytes, id, c1) = setup();
    reset_peak();
    let t0 = Instant::now();
    let h = cuzk_daemon::start(&config(1), cpu(), &settings()).await.unwrap();
    let addr = h.listen.to_string();
    let honest = {
        let (addr, bytes) = (addr.clone(), bytes.clone());
        tokio::spawn(async move {
            let mut c = cuzk_daemon::client::connect(&addr).await.unwrap();
            prove(&mut c, porep(&bytes, id, "honest", proto::Priority::Normal)).await
        })
    };
    const CLIENTS: usize = 1000;
    let mut tasks = Vec::new();
    for k in 0..CLIENTS {
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = cuzk_daemon::client::connect(&addr).await.unwrap();
            let s = c.submit_proof(garbage(&format!("client-{k}"))).await.unwrap().into_inner();
            let r = c.await_proof(proto::AwaitProofRequest { job_id: s.job_id, timeout_ms: 0 }).await.unwrap().into_inner();
            assert_eq!(r.status, S::Failed as i32);
            c.get_status(proto::GetStatusRequest {}).await.unwrap();
        }));
    }
    let answered = tokio::time::timeout(Duration::from_secs(120), async {
        let mut n = 0;
        for t in tasks {
            t.await.unwrap();
            n += 1;
        }
        n
    })
    .await
    .expect("1000 clients answered within 120 s");
    assert_eq!(answered, CLIENTS);
    let r = tokio::time::timeout(Duration::from_secs(600), honest).await.unwrap().unwrap();
    assert_eq!(r.status, S::Completed as i32, "{}", r.error_message);
    cuzk_filecoin::porep::verify::ensure_valid(&c1, &id, &r.proof).unwrap();
    assert!(h.stop().await.unwrap());
    report("1000 concurrent clients", "1000 connections x (submit, await, status) + 1 proof", 0, t0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_and_each_client_have_a_bound_and_a_cancel_frees_a_slot() {
    let _one = SERIAL.lock().await;
    init_logging();
    let (bytes, id, _) = setup();
    reset_peak();
    let t0 = Instant::now();
    let mut cfg = config(1);
    cfg.jobs.max_per_client = 2;
    cfg.jobs.max_queued = 3;
    let h = cuzk_daemon::start(&cfg, cpu(), &settings()).await.unwrap();
    h.service.jobs().hold(true);
    let addr = tcp_addr(&h);
    let (mut a, mut b) = (connect_from("127.0.0.1", addr).await, connect_from("127.0.0.2", addr).await);
    let req = |rid: &str| porep(&bytes, id, rid, proto::Priority::Normal);
    let a1 = a.submit_proof(req("a1")).await.unwrap().into_inner();
    a.submit_proof(req("a2")).await.unwrap();
    let e = a.submit_proof(req("a3")).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert!(e.message().contains("max_per_client"), "{}", e.message());
    b.submit_proof(req("b1")).await.unwrap();
    let e = b.submit_proof(req("b2")).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted);
    assert!(e.message().contains("max_queued"), "{}", e.message());
    // Refused submissions left nothing behind; a cancel gives the slot back.
    assert_eq!(status(&mut a).await.total_proofs_failed, 0);
    a.cancel_proof(proto::CancelProofRequest { job_id: a1.job_id }).await.unwrap();
    a.submit_proof(req("a3")).await.unwrap();
    assert!(h.stop().await.unwrap());
    report("queue and per-client limits", "max_queued 3, max_per_client 2, 2 clients", 0, t0);
}
