//! The one table the benchmark prints: each figure, the target beside it where the issue sets
//! one, and whether it was met. Markdown, so it can go into BENCHMARKS.md as printed.

use std::fmt::Write as _;

/// A figure and, when it has one, its target.
#[derive(Debug)]
struct Row {
    figure: String,
    measured: String,
    target: Option<(String, bool)>,
}

/// The rows in the order the scenarios ran, and notes printed under the table.
#[derive(Debug, Default)]
pub(crate) struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Report {
    /// A figure without a target.
    pub(crate) fn figure(&mut self, figure: impl Into<String>, measured: impl Into<String>) {
        self.rows.push(Row {
            figure: figure.into(),
            measured: measured.into(),
            target: None,
        });
    }

    /// A figure with its target and whether it was met.
    pub(crate) fn target(
        &mut self,
        figure: impl Into<String>,
        measured: impl Into<String>,
        target: impl Into<String>,
        met: bool,
    ) {
        self.rows.push(Row {
            figure: figure.into(),
            measured: measured.into(),
            target: Some((target.into(), met)),
        });
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub(crate) fn render(&self) -> String {
        let mut out = String::from("| figure | measured | target | met |\n|---|---:|---|---|\n");
        for row in &self.rows {
            let (target, met) = match &row.target {
                Some((target, true)) => (target.as_str(), "**met**"),
                Some((target, false)) => (target.as_str(), "**not met**"),
                None => ("", ""),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {target} | {met} |",
                row.figure, row.measured
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "\n{note}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_show_targets_and_verdicts() {
        let mut report = Report::default();
        report.figure("a", "1");
        report.target("b", "2 ms", "≤ 5 ms", true);
        report.target("c", "9 ms", "≤ 5 ms", false);
        report.note("n");
        let text = report.render();
        assert!(text.contains("| a | 1 |  |  |"), "{text}");
        assert!(text.contains("| b | 2 ms | ≤ 5 ms | **met** |"), "{text}");
        assert!(
            text.contains("| c | 9 ms | ≤ 5 ms | **not met** |"),
            "{text}"
        );
        assert!(text.ends_with("\nn\n"), "{text}");
    }
}
