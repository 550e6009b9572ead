//! What benchmarks that alternate rounds of two variants share: the process's CPU time and
//! the median of the rounds.

use std::time::Duration;

use anyhow::{Result, bail};

/// The CPU time this process has used (user and system, all threads), from `/proc/self/stat`
/// in clock ticks of 1/100 s (Linux's `USER_HZ`).
pub(crate) fn cpu_time() -> Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        bail!("no command in /proc/self/stat");
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
    let mut fields = rest.split_whitespace().skip(11);
    let (Some(user), Some(system)) = (fields.next(), fields.next()) else {
        bail!("no CPU times in /proc/self/stat");
    };
    let ticks = user.parse::<u64>()? + system.parse::<u64>()?;
    Ok(Duration::from_millis(ticks * 10))
}

/// The median of `values` (the upper one of an even count).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
