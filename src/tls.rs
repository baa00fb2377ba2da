//! One TLS crypto provider for every HTTPS client merlya builds (the model's API, MCP servers over
//! HTTP): ring, installed as rustls's process default before any client exists. The providers
//! reqwest and rmcp pick by default would link aws-lc as well, a second crypto library in the
//! release binary (ADR 0027).

/// Installs ring as the process's TLS provider, once; later calls do nothing.
pub fn ensure_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means a provider is already installed (by an embedding program): that one stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_https_client_can_be_built_once_the_provider_is_installed() {
        super::ensure_crypto_provider();
        super::ensure_crypto_provider();
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
        assert!(reqwest::Client::builder().build().is_ok());
    }
}
