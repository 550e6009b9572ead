//! Timing a step in a loop without a server, for the `*-steps` benchmarks.

use std::time::Instant;

/// Mean microseconds of `f` over `n` runs.
pub(crate) fn time(n: u32, mut f: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..n {
        f();
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}
