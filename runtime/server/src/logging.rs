//! The binary's log: structured events from the server library (`tracing`), written to
//! standard error as text or JSON lines.
//!
//! Verbosity follows kube-apiserver's klog levels (`-v`/`--v=N`): up to 2 shows `INFO` and
//! above (startup, shutdown steps, storage faults, panics); 3 and 4 add `DEBUG` from kapi, among
//! them one `HTTP` line per request as upstream logs at 3; 5 and more add `TRACE` from kapi and
//! `DEBUG` from its libraries. A `RUST_LOG` filter (`tracing-subscriber`'s `EnvFilter` syntax,
//! e.g. `RUST_LOG=kapi::httplog=debug`) replaces the level chosen by `-v` when set.

use std::io::IsTerminal as _;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How log events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (upstream's `text`).
    Text,
    /// One JSON object per event (upstream's `json`).
    Json,
}

/// The filter for klog verbosity `v`.
pub fn directives(v: u8) -> &'static str {
    match v {
        0..=2 => "info",
        3..=4 => "info,kapi=debug,kapi_apiserver=debug",
        _ => "debug,kapi=trace,kapi_apiserver=trace",
    }
}

/// Installs the process's subscriber: `RUST_LOG` if set, else the level for `v`; and a panic
/// hook that logs each panic's message and location as an `ERROR` event.
pub fn init(v: u8, format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(directives(v)));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    // A subscriber already installed (a test calling this twice) keeps its place.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    std::panic::set_hook(Box::new(|info| {
        let location = info.location().map(ToString::to_string).unwrap_or_default();
        let message = info.payload_as_str().unwrap_or("(no message)");
        tracing::error!(panic = message, location, "panicked");
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_maps_to_levels_as_klog_does() {
        assert_eq!(directives(0), "info");
        assert_eq!(directives(2), "info");
        assert!(directives(3).contains("kapi=debug"));
        assert!(directives(7).contains("kapi=trace"));
        for v in [0, 3, 9] {
            assert!(EnvFilter::try_new(directives(v)).is_ok());
        }
    }
}
