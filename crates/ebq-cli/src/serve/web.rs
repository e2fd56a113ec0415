//! TLS and basic auth for `/metrics` from a web configuration file in the
//! Prometheus exporter-toolkit format (what node_exporter and ebpf_exporter read
//! with `--web.config.file`), named by `web_config_file` in ebq.toml:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt      # PEM certificate chain, server certificate first
//!   key_file: server.key       # PEM private key (PKCS#8, PKCS#1 or SEC1)
//! basic_auth_users:
//!   prometheus: $2y$10$…       # bcrypt hash of the password (htpasswd -B)
//! ```
//!
//! Either section may be left out. Relative paths are relative to the web
//! configuration file. Other exporter-toolkit keys (`client_auth_type`,
//! `http_server_config`, cipher lists) are refused rather than ignored, so a
//! file never means less than its author thinks. Checking a bcrypt hash costs
//! milliseconds by design; a password that matched once is remembered in
//! memory, per user, so a scrape every few seconds does not pay it again.

use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebConfig {
    tls_server_config: Option<RawTls>,
    basic_auth_users: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert_file: String,
    key_file: String,
}

/// What the server enforces: TLS (when configured) and the users allowed.
pub struct WebConfig {
    /// The TLS server configuration, when `tls_server_config` is present.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// User → bcrypt hash; empty: no authentication.
    users: BTreeMap<String, String>,
    /// User → password that matched its hash before (saves the bcrypt cost).
    verified: Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig").field("tls", &self.tls.is_some()).field("users", &self.users.keys()).finish()
    }
}

/// The outcome of checking a request's `Authorization` header.
#[derive(Debug, PartialEq, Eq)]
pub enum Auth {
    /// No users configured, or the credentials match.
    Allowed,
    /// Missing or wrong credentials: answer 401.
    Denied,
}

impl WebConfig {
    /// Reads and checks `path` (certificates and key loaded now, so a bad file
    /// fails at start, and `serve --check` reports it).
    pub fn load(path: &Path) -> Result<WebConfig, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("error: web_config_file {}: {e}", path.display()))?;
        let raw: RawWebConfig =
            serde_yaml::from_str(&text).map_err(|e| format!("error: web_config_file {}: {e}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let tls = raw.tls_server_config.map(|t| tls_config(dir, &t)).transpose()?;
        let users = raw.basic_auth_users.unwrap_or_default();
        for (user, hash) in &users {
            if hash.parse::<bcrypt::HashParts>().is_err() {
                return Err(format!(
                    "error: web_config_file {}: basic_auth_users.{user} is not a bcrypt hash ($2y$…; htpasswd -nBC 10 {user})",
                    path.display()
                ));
            }
        }
        Ok(WebConfig { tls, users, verified: Mutex::new(BTreeMap::new()) })
    }

    /// Whether a request with `authorization` (the header's value) may read the page.
    pub fn check(&self, authorization: Option<&str>) -> Auth {
        if self.users.is_empty() {
            return Auth::Allowed;
        }
        let Some((user, password)) = authorization.and_then(basic_credentials) else { return Auth::Denied };
        let Some(hash) = self.users.get(&user) else { return Auth::Denied };
        if let Ok(v) = self.verified.lock() {
            if v.get(&user) == Some(&password) {
                return Auth::Allowed;
            }
        }
        if bcrypt::verify(&password, hash).unwrap_or(false) {
            if let Ok(mut v) = self.verified.lock() {
                v.insert(user, password);
            }
            Auth::Allowed
        } else {
            Auth::Denied
        }
    }
}

/// `Basic dXNlcjpwYXNz` → (user, password).
fn basic_credentials(header: &str) -> Option<(String, String)> {
    let (scheme, token) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(token.trim()).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

fn tls_config(dir: &Path, t: &RawTls) -> Result<Arc<rustls::ServerConfig>, String> {
    let file = |f: &str| -> PathBuf { dir.join(f) };
    let (cert_path, key_path) = (file(&t.cert_file), file(&t.key_file));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .and_then(|certs| certs.collect())
        .map_err(|e| format!("error: tls_server_config.cert_file {}: {e}", cert_path.display()))?;
    if certs.is_empty() {
        return Err(format!("error: tls_server_config.cert_file {}: no certificate in it", cert_path.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .map_err(|e| format!("error: tls_server_config.key_file {}: {e}", key_path.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| format!("error: tls_server_config: {e}"))?;
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_decode_and_a_matching_password_is_allowed() {
        assert_eq!(basic_credentials("Basic dXNlcjpwYTpzcw=="), Some(("user".into(), "pa:ss".into())));
        assert_eq!(basic_credentials("Bearer abc"), None);
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let web =
            WebConfig { tls: None, users: [("prom".to_string(), hash)].into(), verified: Mutex::new(BTreeMap::new()) };
        let header = |u: &str, p: &str| {
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}")))
        };
        assert_eq!(web.check(None), Auth::Denied);
        assert_eq!(web.check(Some(&header("prom", "wrong"))), Auth::Denied);
        assert_eq!(web.check(Some(&header("other", "s3cret"))), Auth::Denied);
        assert_eq!(web.check(Some(&header("prom", "s3cret"))), Auth::Allowed);
        assert_eq!(web.check(Some(&header("prom", "s3cret"))), Auth::Allowed, "remembered");
        assert_eq!(web.check(Some(&header("prom", "wrong"))), Auth::Denied, "still checked");
    }
}
