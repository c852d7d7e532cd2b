//! The accept loop in front of the gRPC server: it bounds the open connections
//! (`net.max_connections`; a connection beyond is closed at once), gives each new one
//! `net.handshake_timeout_ms` to finish TLS (on TCP, when configured) and send the 24-byte
//! HTTP/2 client preface, and closes one that does not (a slow-loris client holds a slot for
//! that long at most) or that sends something else. The connections it hands on carry their
//! [`Peer`]: the TCP address without its port, or the unix peer's uid. It knows sockets, TLS
//! and the preface, not gRPC.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::service::Peer;

/// What every HTTP/2 (so every gRPC) client sends first.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A byte stream the server can serve.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// A bound listener.
pub enum Listener {
    /// A TCP listener (TLS is the [`Gate`]'s business).
    Tcp(TcpListener),
    /// A unix socket listener.
    Unix(UnixListener),
}

/// The limits of the accept loop.
#[derive(Clone)]
pub struct Gate {
    /// Most connections open at once (`net.max_connections`); later ones are closed at once.
    pub max_connections: usize,
    /// Time a new connection has to finish TLS and send the HTTP/2 preface
    /// (`net.handshake_timeout_ms`).
    pub handshake: Duration,
    /// TLS on TCP connections.
    pub tls: Option<TlsAcceptor>,
}

/// An accepted connection whose preface has been read (and is replayed to the server).
pub struct Conn {
    io: Box<dyn Io>,
    peer: Peer,
    replayed: usize,
    _slot: OwnedSemaphorePermit,
}

impl AsyncRead for Conn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.replayed < PREFACE.len() {
            let n = (PREFACE.len() - self.replayed).min(buf.remaining());
            buf.put_slice(&PREFACE[self.replayed..self.replayed + n]);
            self.replayed += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = Peer;

    fn connect_info(&self) -> Peer {
        self.peer.clone()
    }
}

impl Listener {
    async fn accept(&self) -> io::Result<(Box<dyn Io>, Peer, bool)> {
        match self {
            Listener::Tcp(l) => {
                let (s, a) = l.accept().await?;
                let _ = s.set_nodelay(true);
                Ok((Box::new(s), Peer(format!("tcp:{}", a.ip())), true))
            }
            Listener::Unix(l) => {
                let (s, _) = l.accept().await?;
                let who = s.peer_cred().map(|c| format!("unix:uid={}", c.uid())).unwrap_or_else(|_| "unix".into());
                Ok((Box::new(s), Peer(who), false))
            }
        }
    }
}

/// The connections `listener` accepts within `gate`, preface read, until the receiver is
/// dropped (then the listener is closed).
pub fn incoming(listener: Listener, gate: Gate) -> tokio_stream::wrappers::ReceiverStream<io::Result<Conn>> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(accept_loop(listener, gate, tx));
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

async fn accept_loop(listener: Listener, gate: Gate, tx: mpsc::Sender<io::Result<Conn>>) {
    let slots = Arc::new(Semaphore::new(gate.max_connections));
    let refused = AtomicU64::new(0);
    loop {
        let accepted = tokio::select! {
            _ = tx.closed() => return,
            a = listener.accept() => a,
        };
        let (io, peer, tcp) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors, a connection reset before accept: wait a little.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            let n = refused.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    refused = n,
                    max = gate.max_connections,
                    "connection limit reached (net.max_connections): closing new connections"
                );
            }
            continue;
        };
        let (tls, tx, handshake) = (if tcp { gate.tls.clone() } else { None }, tx.clone(), gate.handshake);
        tokio::spawn(async move {
            match tokio::time::timeout(handshake, prepare(io, tls)).await {
                Ok(Ok(io)) => {
                    let _ = tx.send(Ok(Conn { io, peer, replayed: 0, _slot: slot })).await;
                }
                Ok(Err(e)) => tracing::debug!(peer = %peer.0, error = %e, "connection closed before its preface"),
                Err(_) => tracing::debug!(peer = %peer.0, "connection closed: no preface within net.handshake_timeout_ms"),
            }
        });
    }
}

/// TLS (when configured), then the HTTP/2 preface read and checked.
async fn prepare(io: Box<dyn Io>, tls: Option<TlsAcceptor>) -> io::Result<Box<dyn Io>> {
    let mut io: Box<dyn Io> = match tls {
        Some(a) => Box::new(a.accept(io).await?),
        None => io,
    };
    let mut head = [0u8; 24];
    io.read_exact(&mut head).await?;
    if &head != PREFACE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not an HTTP/2 client preface"));
    }
    Ok(io)
}

/// The TLS acceptor of a PEM certificate chain and private key (HTTP/2 by ALPN).
pub fn tls_acceptor(cert: &str, key: &str) -> Result<TlsAcceptor, crate::DaemonError> {
    use tokio_rustls::rustls;
    let bad = |what: &str, path: &str, why: String| crate::DaemonError::Config(format!("{what} {path:?}: {why}"));
    let read = |path: &str| std::fs::read(path).map_err(|e| bad("reading", path, e.to_string()));
    let certs = rustls_pemfile::certs(&mut read(cert)?.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad("auth.tls_cert", cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("auth.tls_cert", cert, "no certificate in it".into()));
    }
    let key_der = rustls_pemfile::private_key(&mut read(key)?.as_slice())
        .map_err(|e| bad("auth.tls_key", key, e.to_string()))?
        .ok_or_else(|| bad("auth.tls_key", key, "no private key in it".into()))?;
    // ring is the one provider this build has (tonic's client uses it too).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("auth.tls_cert", cert, e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| bad("auth.tls_key", key, e.to_string()))?;
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}
