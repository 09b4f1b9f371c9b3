//! The support score: how much of the claim the quote (and the best sentences beside it) say,
//! as a calibrated probability, and the verdict its thresholds give.

use super::window::Window;

/// A support score in [0, 1], kept in thousandths (so events compare exactly); JSON writes
/// it as a number with three decimals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Support(u16);

impl Support {
    /// The score of `value`, clamped to [0, 1].
    pub fn new(value: f32) -> Self {
        let v = if value.is_nan() {
            0.0
        } else {
            value.clamp(0.0, 1.0)
        };
        Support((v * 1000.0).round() as u16)
    }

    /// The score as a number in [0, 1].
    pub fn value(self) -> f32 {
        f32::from(self.0) / 1000.0
    }

    /// The score in thousandths (0 to 1000).
    pub fn thousandths(self) -> u16 {
        self.0
    }

    /// The verdict the documented thresholds give this score.
    pub fn verdict(self) -> Verdict {
        if self.0 >= SUPPORTED_FROM {
            Verdict::Supported
        } else if self.0 >= WEAK_FROM {
            Verdict::Weak
        } else {
            Verdict::Unsupported
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Support {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(f64::from(self.0) / 1000.0)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Support {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = <f64 as serde::Deserialize>::deserialize(d)?;
        if !(0.0..=1.0).contains(&v) {
            return Err(serde::de::Error::custom(format_args!(
                "support {v} is outside [0, 1]"
            )));
        }
        Ok(Support::new(v as f32))
    }
}

/// What the support score says of a citation. The words say what is known: `unsupported`
/// means that nothing found in the cited source says the claim, not that the claim is false.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Verdict {
    /// The quote says what the claim says (support ≥ 0.5).
    Supported,
    /// The quote says part of it (support from 0.25 up to 0.5).
    Weak,
    /// Nothing found in the source says it (support below 0.25).
    Unsupported,
}

impl Verdict {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Supported => "supported",
            Verdict::Weak => "weak",
            Verdict::Unsupported => "unsupported",
        }
    }
}

/// Support at or above this (thousandths) is [`Verdict::Supported`].
pub(crate) const SUPPORTED_FROM: u16 = 500;
/// Support at or above this and below [`SUPPORTED_FROM`] is [`Verdict::Weak`].
pub(crate) const WEAK_FROM: u16 = 250;

/// The most support a quote that states another year than the claim's gets (`unsupported`).
const CONTRADICTED_AT_MOST: f32 = 0.2;
/// The most support a quote whose negation differs from the claim's gets (`weak`).
const NEGATION_AT_MOST: f32 = 0.45;

/// The calibrated support of a window, with `negation_differs` when exactly one of the claim
/// and the quote negates.
pub(crate) fn support_of(w: &Window, negation_differs: bool) -> Support {
    use super::knob;
    // Weights chosen on WiCE dev (support AUROC 0.931 before the caps below, 0.925 with
    // them; supported vs not_supported; the
    // numbers' weight is kept small: on WiCE it costs AUROC, a year of the context is often
    // missing from a quote that supports the claim); the intercept puts the score that 90%
    // of supported claims reach at 0.25, the `unsupported` threshold.
    let z = knob("A0", -6.6)
        + knob("AQ", 3.0) * w.cov_quote
        + knob("AT", 5.0) * w.cov_top
        + knob("AS", 6.0) * w.cov_source
        - knob("AN", 0.7) * w.numbers_missing
        - if negation_differs {
            knob("ANEG", 0.8)
        } else {
            0.0
        };
    let mut p = 1.0 / (1.0 + (-z).exp());
    // A quote that states another year contradicts the claim: at most unsupported's
    // ceiling. A quote that does not share the claim's negation (or negates what the claim
    // states) cannot fully support it: at most weak.
    if w.numbers_differ {
        p = p.min(knob("CAPYEAR", CONTRADICTED_AT_MOST));
    }
    if negation_differs {
        p = p.min(knob("CAPNEG", NEGATION_AT_MOST));
    }
    Support::new(p)
}
