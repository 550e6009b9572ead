//! Latency samples and the figures drawn from them: nearest-rank percentiles, maximum, and
//! throughput over a measured span. Every scenario records into a [`Samples`] and reads its
//! figures back through [`Summary`].

use std::time::Duration;

/// Latencies recorded by one scenario, plus the failures it saw.
#[derive(Debug, Default, Clone)]
pub(crate) struct Samples {
    latencies: Vec<Duration>,
    errors: u64,
    first_error: Option<String>,
}

impl Samples {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            latencies: Vec::with_capacity(capacity),
            ..Self::default()
        }
    }

    pub(crate) fn record(&mut self, latency: Duration) {
        self.latencies.push(latency);
    }

    /// Counts a failed operation; the first reason is kept for the report.
    pub(crate) fn fail(&mut self, why: impl std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(why.to_string());
        }
    }

    pub(crate) fn merge(&mut self, other: Samples) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    pub(crate) fn summary(mut self) -> Summary {
        self.latencies.sort_unstable();
        Summary {
            sorted: self.latencies,
            errors: self.errors,
            first_error: self.first_error,
        }
    }
}

/// Sorted latencies, ready for percentile queries.
#[derive(Debug, Clone)]
pub(crate) struct Summary {
    sorted: Vec<Duration>,
    errors: u64,
    first_error: Option<String>,
}

impl Summary {
    pub(crate) fn count(&self) -> usize {
        self.sorted.len()
    }

    pub(crate) fn errors(&self) -> u64 {
        self.errors
    }

    pub(crate) fn first_error(&self) -> Option<&str> {
        self.first_error.as_deref()
    }

    /// The nearest-rank percentile: the smallest sample with at least `p` % of the samples at
    /// or below it (so p99 of 100 samples is the 99th, and p100 is the maximum). Zero when
    /// nothing was recorded, which the report shows together with the zero count.
    pub(crate) fn percentile(&self, p: f64) -> Duration {
        let n = self.sorted.len();
        if n == 0 {
            return Duration::ZERO;
        }
        let rank = ((p.clamp(0.0, 100.0) / 100.0) * n as f64).ceil() as usize;
        self.sorted[rank.clamp(1, n) - 1]
    }

    pub(crate) fn p50(&self) -> Duration {
        self.percentile(50.0)
    }

    pub(crate) fn p99(&self) -> Duration {
        self.percentile(99.0)
    }

    pub(crate) fn max(&self) -> Duration {
        self.sorted.last().copied().unwrap_or_default()
    }

    pub(crate) fn min(&self) -> Duration {
        self.sorted.first().copied().unwrap_or_default()
    }
}

/// Operations per second of `count` operations over `span`.
pub(crate) fn rate(count: usize, span: Duration) -> f64 {
    let secs = span.as_secs_f64();
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

/// Milliseconds with enough digits for sub-millisecond figures.
pub(crate) fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(millis: &[u64]) -> Summary {
        let mut samples = Samples::default();
        for &m in millis {
            samples.record(Duration::from_millis(m));
        }
        samples.summary()
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let hundred: Vec<u64> = (1..=100).rev().collect();
        let cases: [(&[u64], f64, u64); 9] = [
            (&hundred, 50.0, 50),
            (&hundred, 99.0, 99),
            (&hundred, 99.5, 100),
            (&hundred, 100.0, 100),
            (&hundred, 0.0, 1),
            (&[7], 50.0, 7),
            (&[7], 99.0, 7),
            (&[3, 1, 2], 50.0, 2),
            (&[10, 20], 50.0, 10),
        ];
        for (input, p, want) in cases {
            assert_eq!(
                summary(input).percentile(p),
                Duration::from_millis(want),
                "p{p} of {input:?}"
            );
        }
    }

    #[test]
    fn empty_and_merged_samples() {
        let empty = summary(&[]);
        assert_eq!(
            (empty.count(), empty.p99(), empty.max()),
            (0, Duration::ZERO, Duration::ZERO)
        );

        let mut a = Samples::default();
        a.record(Duration::from_millis(5));
        a.fail("first");
        let mut b = Samples::default();
        b.record(Duration::from_millis(1));
        b.fail("second");
        a.merge(b);
        let s = a.summary();
        assert_eq!(
            (s.count(), s.errors(), s.first_error()),
            (2, 2, Some("first"))
        );
        assert_eq!(
            (s.min(), s.max()),
            (Duration::from_millis(1), Duration::from_millis(5))
        );
    }

    #[test]
    fn rates_and_formatting() {
        assert_eq!(rate(500, Duration::from_secs(2)), 250.0);
        assert_eq!(rate(5, Duration::ZERO), 0.0);
        assert_eq!(ms(Duration::from_micros(1234)), "1.23 ms");
        assert_eq!(ms(Duration::from_micros(123_456)), "123.5 ms");
    }
}
