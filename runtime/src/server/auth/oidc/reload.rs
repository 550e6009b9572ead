//! The JWT authenticators in force, reloaded when their files change, as kube-apiserver
//! reloads `--authentication-config` (`pkg/kubeapiserver/options/authentication.go`, `ApplyTo`):
//! a changed file that loads and passes validation replaces the authenticators; one that does
//! not decode or validate is logged and ignored until its text changes again (it never will
//! load as it is); one that cannot be read is tried again. The `anonymous` section may not
//! change: a file that changes it is refused as upstream refuses it, since anonymous
//! authentication is fixed at start.
//!
//! Upstream watches the file (with a one-minute resync); kapi looks at the files when a JWT
//! is presented, at most once per [`RELOAD_CHECK`], so a server nobody sends tokens to never
//! reads them, and a change is in force for the first token after it. The key set files of
//! `--authentication-config-jwks` are part of the configuration and reload with it.

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::{AnonymousConfig, AuthenticationConfigError, JwtAuthenticators, Sources};

/// How often, at most, the files are read to see whether they changed.
pub(crate) const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// The authenticators in force, and where they come from.
#[derive(Debug, Default)]
pub(crate) struct LiveJwt {
    current: RwLock<Arc<JwtAuthenticators>>,
    /// `None`: configured in code or not at all, never reloaded.
    reload: Option<Reload>,
}

#[derive(Debug)]
struct Reload {
    sources: Sources,
    /// The `anonymous` section read at start, which a reload may not change.
    anonymous: Option<AnonymousConfig>,
    looked: Mutex<Looked>,
}

/// When the files were last read, and the bytes last acted on (loaded, or refused for good).
#[derive(Debug)]
struct Looked {
    at: Instant,
    tracked: Vec<Vec<u8>>,
}

impl LiveJwt {
    /// The authenticators of `sources` as they are now, reloaded when they change; and the
    /// configuration's `anonymous` section.
    pub(crate) fn load(
        sources: Sources,
    ) -> Result<(Self, Option<AnonymousConfig>), AuthenticationConfigError> {
        let texts = sources.read()?;
        let (jwt, anonymous) = sources.load(&texts)?;
        let live = Self {
            current: RwLock::new(Arc::new(jwt)),
            reload: Some(Reload {
                sources,
                anonymous: anonymous.clone(),
                looked: Mutex::new(Looked {
                    at: Instant::now(),
                    tracked: texts,
                }),
            }),
        };
        Ok((live, anonymous))
    }

    /// The authenticators in force, after taking in a change of their files (see the module
    /// docs for when the files are read).
    pub(crate) fn current(&self) -> Arc<JwtAuthenticators> {
        if let Some(reload) = &self.reload
            && let Some(replacement) = reload.replacement()
        {
            *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(replacement);
        }
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Reload {
    /// New authenticators when the files changed since last acted on and load; `None`
    /// otherwise, or while another request is looking.
    fn replacement(&self) -> Option<JwtAuthenticators> {
        let Ok(mut looked) = self.looked.try_lock() else {
            return None;
        };
        if looked.at.elapsed() < RELOAD_CHECK {
            return None;
        }
        looked.at = Instant::now();
        let texts = match self.sources.read() {
            Ok(texts) => texts,
            Err(error) => {
                // It may come back: not tracked, so it is read again.
                tracing::error!(%error, "failed to read authentication config file");
                return None;
            }
        };
        if texts == looked.tracked {
            return None;
        }
        looked.tracked = texts;
        let loaded = self
            .sources
            .load(&looked.tracked)
            .and_then(|(jwt, anonymous)| {
                if anonymous == self.anonymous {
                    Ok(jwt)
                } else {
                    Err(AuthenticationConfigError::Invalid(
                        "anonymous: Forbidden: changed from initial configuration file".to_owned(),
                    ))
                }
            });
        match loaded {
            Ok(jwt) => {
                tracing::info!(path = %self.sources.path.display(), "reloaded authentication config");
                Some(jwt)
            }
            Err(error) => {
                tracing::error!(%error, "failed to load authentication config; the last one stays in force");
                None
            }
        }
    }
}

#[allow(
    clippy::unwrap_used,
    reason = "a test: a failed unwrap is a failed test"
)]
#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn config(issuer: &str, anonymous: &str) -> String {
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n\
             jwt:\n- issuer:\n    url: {issuer}\n    audiences: [kapi]\n  claimMappings:\n    \
             username:\n      claim: sub\n      prefix: ''\n{anonymous}"
        )
    }

    fn issuers(live: &LiveJwt) -> Vec<String> {
        live.current()
            .authenticators
            .iter()
            .map(|a| a.config.issuer.url.clone())
            .collect()
    }

    /// Waits out the check interval, so the next `current` reads the files.
    fn later() {
        std::thread::sleep(RELOAD_CHECK + Duration::from_millis(50));
    }

    #[test]
    fn a_changed_file_replaces_the_authenticators_and_a_bad_one_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.yaml");
        let anonymous = "anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n";
        std::fs::write(&path, config("https://one.example", anonymous)).unwrap();
        let sources = Sources {
            path: path.clone(),
            disallowed: Vec::new(),
            key_files: BTreeMap::new(),
        };
        let (live, read) = LiveJwt::load(sources).unwrap();
        assert_eq!(read.unwrap().conditions[0].path, "/livez");
        assert_eq!(issuers(&live), ["https://one.example"]);

        // Within the interval the file is not read again.
        std::fs::write(&path, config("https://two.example", anonymous)).unwrap();
        assert_eq!(issuers(&live), ["https://one.example"]);
        later();
        assert_eq!(issuers(&live), ["https://two.example"]);

        // Invalid (an http issuer), then a changed anonymous section: both ignored.
        std::fs::write(&path, config("http://three.example", anonymous)).unwrap();
        later();
        assert_eq!(issuers(&live), ["https://two.example"]);
        std::fs::write(&path, config("https://four.example", "")).unwrap();
        later();
        assert_eq!(issuers(&live), ["https://two.example"]);

        // Gone for a while, then back and valid.
        std::fs::remove_file(&path).unwrap();
        later();
        assert_eq!(issuers(&live), ["https://two.example"]);
        std::fs::write(&path, config("https://five.example", anonymous)).unwrap();
        later();
        assert_eq!(issuers(&live), ["https://five.example"]);
    }
}
