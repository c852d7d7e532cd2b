//! A client connection to a daemon over a unix socket or TCP (what `cuzk client` and the
//! tests use; Curio uses its own generated client for the same service).

use crate::config::Listen;
use crate::proto::proving_engine_client::ProvingEngineClient;
use crate::DaemonError;
use tonic::transport::{Channel, Endpoint, Uri};

/// Largest message the client sends or accepts.
pub const MAX_MESSAGE: usize = 256 << 20;

/// Connects to `addr` (`unix:///PATH` or `tcp://HOST:PORT`).
pub async fn connect(addr: &str) -> Result<ProvingEngineClient<Channel>, DaemonError> {
    let listen = Listen::parse(addr)?;
    let transport = |e: tonic::transport::Error| DaemonError::Transport(format!("connecting to {addr}: {e}"));
    let channel = match listen {
        Listen::Tcp(a) => Endpoint::try_from(format!("http://{a}")).map_err(transport)?.connect().await.map_err(transport)?,
        Listen::Unix(path) => Endpoint::try_from("http://localhost")
            .map_err(transport)?
            .connect_with_connector(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move { Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
            }))
            .await
            .map_err(transport)?,
    };
    Ok(ProvingEngineClient::new(channel).max_decoding_message_size(MAX_MESSAGE).max_encoding_message_size(MAX_MESSAGE))
}
