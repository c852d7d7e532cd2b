//! A client connection to a daemon over a unix socket or TCP (what `cuzk client` and the
//! tests use; Curio uses its own generated client for the same service), optionally over TLS
//! (`https://` or [`Options::ca`]) and with the client and admin tokens sent on every call.

use std::path::PathBuf;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Uri};

use crate::auth::{ADMIN_HEADER, TOKEN_HEADER};
use crate::config::Listen;
use crate::proto::proving_engine_client::ProvingEngineClient;
use crate::DaemonError;

/// Largest message the client sends or accepts.
pub const MAX_MESSAGE: usize = 256 << 20;

/// A connected client.
pub type Client = ProvingEngineClient<InterceptedService<Channel, Credentials>>;

/// How to reach a daemon beyond its address.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Sent as `authorization: Bearer TOKEN`.
    pub token: Option<String>,
    /// Sent as `x-cuzk-admin-token`.
    pub admin_token: Option<String>,
    /// TLS on TCP, trusting this PEM CA certificate (the daemon's own when self-signed).
    pub ca: Option<PathBuf>,
    /// The name the daemon's certificate is checked against (default: the host of the address).
    pub domain: Option<String>,
}

/// The tokens sent with every call.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    token: Option<MetadataValue<Ascii>>,
    admin: Option<MetadataValue<Ascii>>,
}

impl tonic::service::Interceptor for Credentials {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(t) = &self.token {
            r.metadata_mut().insert(TOKEN_HEADER, t.clone());
        }
        if let Some(t) = &self.admin {
            r.metadata_mut().insert(ADMIN_HEADER, t.clone());
        }
        Ok(r)
    }
}

impl Credentials {
    fn new(o: &Options) -> Result<Credentials, DaemonError> {
        let value = |what: &str, t: &str| {
            t.parse::<MetadataValue<Ascii>>().map_err(|_| DaemonError::Config(format!("the {what} is not printable ASCII")))
        };
        Ok(Credentials {
            token: o.token.as_deref().map(|t| value("token", &format!("Bearer {}", t.trim()))).transpose()?,
            admin: o.admin_token.as_deref().map(|t| value("admin token", t.trim())).transpose()?,
        })
    }
}

/// Connects to `addr` (`unix:///PATH` or `tcp://HOST:PORT`) without tokens or TLS.
pub async fn connect(addr: &str) -> Result<Client, DaemonError> {
    connect_with(addr, &Options::default()).await
}

/// Connects to `addr` with `opts`.
pub async fn connect_with(addr: &str, opts: &Options) -> Result<Client, DaemonError> {
    let listen = Listen::parse(addr)?;
    let transport = |e: tonic::transport::Error| DaemonError::Transport(format!("connecting to {addr}: {e}"));
    let channel = match listen {
        Listen::Tcp(a) => {
            let mut ep = Endpoint::try_from(format!("{}://{a}", if opts.ca.is_some() { "https" } else { "http" })).map_err(transport)?;
            if let Some(ca) = &opts.ca {
                let pem = std::fs::read(ca).map_err(|e| DaemonError::io(format!("reading the CA certificate {}", ca.display()), e))?;
                let domain = opts.domain.clone().unwrap_or_else(|| a.ip().to_string());
                ep = ep
                    .tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)).domain_name(domain))
                    .map_err(transport)?;
            }
            ep.connect().await.map_err(transport)?
        }
        Listen::Unix(path) => Endpoint::try_from("http://localhost")
            .map_err(transport)?
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move { Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
            }))
            .await
            .map_err(transport)?,
    };
    Ok(ProvingEngineClient::with_interceptor(channel, Credentials::new(opts)?)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE))
}
