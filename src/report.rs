// SPDX-License-Identifier: GPL-2.0-only
//! What the analysis of one module found, as plain data: the rule it was
//! judged by, the counts, each weak or doubtful entry. [`crate::process`] fills it in; [`crate::render`] turns it into
//! words, for people or as JSON. Nothing here is wording.

use crate::decide::{Doubt, Found};
use crate::risk::AtRisk;
use crate::rule::Rule;

/// How many entries the table has, and what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub entries: usize,
    /// Dead: neutralised (or to be), whichever rule found them.
    pub weak: usize,
    /// Kept because the tool cannot be sure.
    pub doubt: usize,
}

/// Where an entry points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The section the location is in; for an entry whose target the rule
    /// cannot read, the callsite table itself.
    pub section: String,
    /// Offset from that section's start (in the table: the word's offset).
    pub offset: u64,
    /// The entry's word offset in the callsite table.
    pub table_offset: u64,
}

/// What the tool decided for one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A symbol explains it: the kernel keeps the record.
    Kept { location: Location },
    /// Dead: neutralised. `symbol` is the nearest symbol before it,
    /// `distance` how far past that symbol (0 without one), `by` the rule
    /// that found it.
    Weak { location: Location, symbol: Option<String>, distance: u64, by: Found },
    /// Kept because the tool cannot be sure, for this reason.
    Doubt { location: Location, why: Doubt },
}

impl Finding {
    #[must_use]
    pub fn location(&self) -> &Location {
        match self {
            Finding::Kept { location } | Finding::Weak { location, .. } | Finding::Doubt { location, .. } => location,
        }
    }
}

/// The report on one module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The rule the module was judged by, once one was chosen.
    pub rule: Option<Rule>,
    /// Once the table was decided.
    pub counts: Option<Counts>,
    /// Weak and doubtful entries, in table order; kept ones too with
    /// `--verbose`.
    pub findings: Vec<Finding>,
    /// Why nothing is done to the module, when nothing is.
    pub nothing: Option<String>,
    /// The module carries an appended signature.
    pub signed: bool,
    /// Functions whose `ftrace_location()` can resolve to a dead record, as
    /// the module is, and once processed (docs/at-risk.md).
    pub at_risk: Vec<AtRisk>,
    pub at_risk_after: Vec<AtRisk>,
}

impl Report {
    /// A module left as it is, for this reason.
    #[must_use]
    pub fn nothing(reason: String) -> Report {
        Report { nothing: Some(reason), ..Report::default() }
    }
}
