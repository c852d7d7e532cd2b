//! Who may call the daemon: the client token (`authorization: Bearer TOKEN`) that TCP requires
//! (unless `auth.insecure` and no token is set) and the unix socket requires only with
//! `auth.token_on_unix`, and the admin token (`x-cuzk-admin-token: TOKEN`) that PreloadSRS and
//! EvictSRS need when one is set. Tokens are read once from their files at start and compared
//! through their SHA-256 digests in constant time, so neither their contents nor their length
//! leak through timing. It knows the metadata headers and the config keys, not the RPCs.

use sha2::{Digest, Sha256};
use tonic::metadata::MetadataMap;
use tonic::Status;

use crate::config::DaemonConfig;
use crate::DaemonError;

/// The header carrying the client token, as `Bearer TOKEN`.
pub const TOKEN_HEADER: &str = "authorization";
/// The header carrying the admin token (the bare token).
pub const ADMIN_HEADER: &str = "x-cuzk-admin-token";
/// Longest token file read.
const MAX_TOKEN: u64 = 4096;

/// The tokens one listener checks.
#[derive(Clone, Debug, Default)]
pub struct Auth {
    token: Option<[u8; 32]>,
    admin: Option<[u8; 32]>,
    /// The client token must be presented (it is set, and the transport asks for it).
    required: bool,
}

fn digest(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// Equal digests, in time that does not depend on where they differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// The token in `path` (surrounding whitespace removed), never empty.
fn read_token(key: &str, path: &str) -> Result<[u8; 32], DaemonError> {
    use std::io::Read;
    let bad = |why: String| DaemonError::Config(format!("{key} {path:?}: {why}"));
    let f = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut text = String::new();
    f.take(MAX_TOKEN + 1).read_to_string(&mut text).map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > MAX_TOKEN {
        return Err(bad(format!("longer than {MAX_TOKEN} bytes")));
    }
    let t = text.trim();
    if t.is_empty() {
        return Err(bad("the token file is empty".into()));
    }
    Ok(digest(t.as_bytes()))
}

impl Auth {
    /// The tokens of `cfg` for a TCP listener (`unix` false) or the unix socket.
    pub fn from_config(cfg: &DaemonConfig, unix: bool) -> Result<Auth, DaemonError> {
        let a = &cfg.auth;
        let token = (!a.token_file.is_empty()).then(|| read_token("auth.token_file", &a.token_file)).transpose()?;
        let admin = (!a.admin_token_file.is_empty()).then(|| read_token("auth.admin_token_file", &a.admin_token_file)).transpose()?;
        let required = token.is_some() && (!unix || a.token_on_unix);
        Ok(Auth { token, admin, required })
    }

    /// Tokens given directly (tests).
    pub fn with_tokens(token: Option<&str>, admin: Option<&str>) -> Auth {
        Auth { token: token.map(|t| digest(t.as_bytes())), admin: admin.map(|t| digest(t.as_bytes())), required: token.is_some() }
    }

    /// Whether a client must present the token.
    pub fn token_required(&self) -> bool {
        self.required
    }

    /// Passes a request that carries the client token when one is required (or the admin
    /// token); UNAUTHENTICATED otherwise.
    #[allow(clippy::result_large_err)] // tonic's handlers answer with a Status
    pub fn check(&self, md: &MetadataMap) -> Result<(), Status> {
        let Some(want) = &self.token.filter(|_| self.required) else { return Ok(()) };
        let given = md.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        let admin = self.admin.as_ref().zip(header(md, ADMIN_HEADER)).is_some_and(|(a, g)| same(a, &digest(g.as_bytes())));
        match given {
            Some(g) if same(want, &digest(g.trim().as_bytes())) => Ok(()),
            _ if admin => Ok(()),
            Some(_) => Err(Status::unauthenticated("wrong token")),
            None => Err(Status::unauthenticated(format!("this daemon needs a token: send \"{TOKEN_HEADER}: Bearer TOKEN\""))),
        }
    }

    /// [`Auth::check`], then the admin token when one is set; PERMISSION_DENIED without it.
    #[allow(clippy::result_large_err)]
    pub fn check_admin(&self, md: &MetadataMap) -> Result<(), Status> {
        self.check(md)?;
        let Some(want) = &self.admin else { return Ok(()) };
        match header(md, ADMIN_HEADER) {
            Some(g) if same(want, &digest(g.trim().as_bytes())) => Ok(()),
            Some(_) => Err(Status::permission_denied("wrong admin token")),
            None => Err(Status::permission_denied(format!("an admin call: send \"{ADMIN_HEADER}: TOKEN\""))),
        }
    }
}

fn header<'a>(md: &'a MetadataMap, name: &str) -> Option<&'a str> {
    md.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(pairs: &[(&'static str, &str)]) -> MetadataMap {
        let mut m = MetadataMap::new();
        for (k, v) in pairs {
            m.insert(*k, v.parse().unwrap());
        }
        m
    }

    #[test]
    fn tokens_are_checked_and_admin_calls_need_the_admin_token() {
        let a = Auth::with_tokens(Some("s3cret"), Some("root"));
        assert_eq!(a.check(&md(&[])).unwrap_err().code(), tonic::Code::Unauthenticated);
        assert_eq!(a.check(&md(&[(TOKEN_HEADER, "Bearer s3cre")])).unwrap_err().code(), tonic::Code::Unauthenticated);
        assert_eq!(a.check(&md(&[(TOKEN_HEADER, "s3cret")])).unwrap_err().code(), tonic::Code::Unauthenticated);
        a.check(&md(&[(TOKEN_HEADER, "Bearer s3cret")])).unwrap();
        let user = md(&[(TOKEN_HEADER, "Bearer s3cret")]);
        assert_eq!(a.check_admin(&user).unwrap_err().code(), tonic::Code::PermissionDenied);
        let wrong = md(&[(TOKEN_HEADER, "Bearer s3cret"), (ADMIN_HEADER, "rooot")]);
        assert_eq!(a.check_admin(&wrong).unwrap_err().code(), tonic::Code::PermissionDenied);
        a.check_admin(&md(&[(TOKEN_HEADER, "Bearer s3cret"), (ADMIN_HEADER, "root")])).unwrap();
        // No token configured: everything passes but admin calls still need the admin token.
        let open = Auth::with_tokens(None, Some("root"));
        open.check(&md(&[])).unwrap();
        assert_eq!(open.check_admin(&md(&[])).unwrap_err().code(), tonic::Code::PermissionDenied);
        Auth::default().check_admin(&md(&[])).unwrap();
        assert!(same(&digest(b"a"), &digest(b"a")) && !same(&digest(b"a"), &digest(b"b")));
    }

    #[test]
    fn token_files_are_read_trimmed_and_empty_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("token");
        std::fs::write(&f, "  s3cret\n").unwrap();
        let mut cfg = DaemonConfig::default();
        cfg.auth.token_file = f.display().to_string();
        let tcp = Auth::from_config(&cfg, false).unwrap();
        assert!(tcp.token_required());
        tcp.check(&md(&[(TOKEN_HEADER, "Bearer s3cret")])).unwrap();
        assert!(!Auth::from_config(&cfg, true).unwrap().token_required(), "optional on the unix socket");
        cfg.auth.token_on_unix = true;
        assert!(Auth::from_config(&cfg, true).unwrap().token_required());
        std::fs::write(&f, "\n").unwrap();
        assert!(Auth::from_config(&cfg, false).unwrap_err().to_string().contains("empty"));
    }
}
