//! Downloads over HTTPS (ureq with rustls, certificates from the platform's store, proxies from
//! `HTTPS_PROXY`/`ALL_PROXY`), streamed into a temporary file while its SHA-256 is computed.

use std::io::{Read, Write};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::files::{Partial, hex};
use crate::progress::{Progress, Reporter};

/// Why a download failed, in words (the caller adds the URL and what to do offline).
pub(crate) enum Failure {
    /// The network, the server or the connection.
    Network(String),
    /// Writing the file.
    Io(std::io::Error),
}

/// Downloads `url` (about `size` bytes) into `part`, returning the SHA-256 of what arrived.
/// A stalled connection fails after a minute without data.
pub(crate) fn download(
    url: &str,
    file: &str,
    size: u64,
    part: &mut Partial,
    progress: Progress,
) -> Result<String, Failure> {
    use ureq::tls::{RootCerts, TlsConfig};
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(
            TlsConfig::builder()
                .root_certs(RootCerts::PlatformVerifier)
                .build(),
        )
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .user_agent(concat!("heimdall-models/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent();
    let response = agent
        .get(url)
        .call()
        .map_err(|e| Failure::Network(e.to_string()))?;
    let total = response.body().content_length().unwrap_or(size);
    // A pinned archive is never larger than its pinned size; a larger answer is not it.
    let mut reader = response
        .into_body()
        .into_with_config()
        .limit(size.max(total).saturating_add(1))
        .reader();
    let reporter = Reporter::start(progress, file, url, total);
    let out = part
        .file
        .as_mut()
        .ok_or_else(|| Failure::Io(std::io::Error::other("the file is closed")))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Failure::Network(e.to_string())),
        };
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(Failure::Io)?;
        reporter.advance(n as u64);
    }
    reporter.finish();
    Ok(hex(&hasher.finalize()))
}
