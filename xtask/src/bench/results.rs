//! The runs of a benchmark and their medians.

use super::process::Outcome;

/// One measured configuration: a scenario at an object count (and, for churn, a handler count).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Case {
    /// `sync`, `strip`, `metadata`, `churn`, `relist` or `lister`.
    pub(crate) scenario: &'static str,
    pub(crate) objects: usize,
    pub(crate) handlers: usize,
}

/// One peer run.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) case: Case,
    pub(crate) peer: String,
    pub(crate) outcome: Result<Outcome, String>,
}

/// Every run of a benchmark.
#[derive(Debug, Default)]
pub(crate) struct Results {
    pub(crate) samples: Vec<Sample>,
}

/// What the runs of one peer in one case came to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    /// Not run.
    Missing,
    /// The peer's library cannot do this.
    Unsupported(String),
    /// Every run failed; the first error.
    Failed(String),
    /// The median figures of the successful runs.
    Measured { runs: usize, failed: usize },
}

impl Results {
    /// The median of `metric` over the successful runs of `peer` in `case`.
    pub(crate) fn median(&self, case: &Case, peer: &str, metric: &str) -> Option<f64> {
        let mut values: Vec<f64> = self
            .of(case, peer)
            .filter_map(|s| match &s.outcome {
                Ok(Outcome::Result(value)) => value[metric].as_f64(),
                _ => None,
            })
            .collect();
        median(&mut values)
    }

    /// How the runs of `peer` in `case` went.
    pub(crate) fn cell(&self, case: &Case, peer: &str) -> Cell {
        let samples: Vec<&Sample> = self.of(case, peer).collect();
        let runs = samples.iter().filter(|s| matches!(s.outcome, Ok(Outcome::Result(_)))).count();
        let failed = samples.iter().filter(|s| s.outcome.is_err()).count();
        if runs > 0 {
            return Cell::Measured { runs, failed };
        }
        for sample in &samples {
            match &sample.outcome {
                Ok(Outcome::Unsupported(reason)) => return Cell::Unsupported(reason.clone()),
                Err(error) => return Cell::Failed(error.clone()),
                Ok(Outcome::Result(_)) => {}
            }
        }
        Cell::Missing
    }

    /// The cases run, in order, for one scenario.
    pub(crate) fn cases(&self, scenario: &str) -> Vec<Case> {
        let mut cases: Vec<Case> = self
            .samples
            .iter()
            .filter(|s| s.case.scenario == scenario)
            .map(|s| s.case.clone())
            .collect();
        cases.sort();
        cases.dedup();
        cases
    }

    fn of<'a>(&'a self, case: &'a Case, peer: &'a str) -> impl Iterator<Item = &'a Sample> {
        self.samples.iter().filter(move |s| &s.case == case && s.peer == peer)
    }
}

/// The median (the mean of the middle two for an even count).
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        f64::midpoint(values[mid - 1], values[mid])
    } else {
        values[mid]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn medians_skip_failures_and_say_why_nothing_was_measured() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
        let case = Case { scenario: "sync", objects: 10, handlers: 1 };
        let sample =
            |peer: &str, outcome| Sample { case: case.clone(), peer: peer.into(), outcome };
        let results = Results {
            samples: vec![
                sample("a", Ok(Outcome::Result(json!({"sync_ms": 5.0})))),
                sample("a", Err("boom".into())),
                sample("a", Ok(Outcome::Result(json!({"sync_ms": 7.0})))),
                sample("b", Ok(Outcome::Unsupported("no".into()))),
                sample("c", Err("crash".into())),
            ],
        };
        assert_eq!(results.median(&case, "a", "sync_ms"), Some(6.0));
        assert_eq!(results.cell(&case, "a"), Cell::Measured { runs: 2, failed: 1 });
        assert_eq!(results.cell(&case, "b"), Cell::Unsupported("no".into()));
        assert_eq!(results.cell(&case, "c"), Cell::Failed("crash".into()));
        assert_eq!(results.cell(&case, "d"), Cell::Missing);
    }
}
