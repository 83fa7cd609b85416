//! Value parsers for the numeric options of every command: a number out of range, NaN or an infinity is a usage
//! error (clap prints the message and exits with code 2), never a clamp or a panic further down.
//!
//! ```
//! # use clap::Parser;
//! #[derive(Parser)]
//! struct Args {
//!     #[arg(long, value_parser = bzhead::args::float(0.0, 86_400.0))]
//!     r#for: Option<f64>,
//!     #[arg(long, default_value_t = 50, value_parser = bzhead::args::int(0u64, 60_000))]
//!     stagger_ms: u64,
//! }
//! assert!(Args::try_parse_from(["x", "--for", "NaN"]).is_err());
//! assert!(Args::try_parse_from(["x", "--for", "1e19"]).is_err());
//! assert!(Args::try_parse_from(["x", "--stagger-ms", "99999999999999999999"]).is_err());
//! assert_eq!(Args::try_parse_from(["x", "--for", "2.5"]).unwrap().r#for, Some(2.5));
//! ```

use std::fmt::Display;
use std::str::FromStr;

/// Longest time any duration option may ask for: a year, in seconds. Far longer than any use, and short enough that
/// adding it to any `Instant` cannot overflow.
pub const MAX_SECONDS: f64 = 365.0 * 86_400.0;

/// Most milliseconds any millisecond option may ask for: a day.
pub const MAX_MS: u64 = 86_400_000;

/// A parser for a finite decimal number from `min` to `max` (both included). NaN, infinities and anything outside
/// the range are refused with a message that gives the range.
pub fn float(min: f64, max: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number (expected {min} to {max})"))?;
        if !v.is_finite() {
            return Err(format!("{s:?} is not a finite number (expected {min} to {max})"));
        }
        if !(min..=max).contains(&v) {
            return Err(format!("{s} is out of range (expected {min} to {max})"));
        }
        Ok(v)
    }
}

/// A parser for a whole number from `min` to `max` (both included), in decimal. Anything else (a sign where none
/// fits, a fraction, an exponent, a number past the type) is refused with a message that gives the range.
pub fn int<T>(min: T, max: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: FromStr + PartialOrd + Display + Copy + Send + Sync + 'static,
{
    move |s: &str| {
        let v: T = s.trim().parse().map_err(|_| format!("{s:?} is not a whole number from {min} to {max}"))?;
        if v < min || v > max {
            return Err(format!("{s} is out of range (expected {min} to {max})"));
        }
        Ok(v)
    }
}

/// [`float`] for a duration in seconds: from `min` to [`MAX_SECONDS`].
pub fn seconds(min: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    float(min, MAX_SECONDS)
}

/// [`int`] for a duration in milliseconds: from `min` to [`MAX_MS`].
pub fn millis(min: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    int(min, MAX_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_refuse_nan_infinities_and_the_range() {
        let p = float(0.0, 10.0);
        for bad in ["NaN", "nan", "inf", "-inf", "infinity", "1e19", "-1", "10.5", "", "x", "1,5"] {
            assert!(p(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(p("0"), Ok(0.0));
        assert_eq!(p(" 2.5 "), Ok(2.5));
        assert_eq!(p("1e1"), Ok(10.0));
        assert!(p("NaN").unwrap_err().contains("0 to 10"));
    }

    #[test]
    fn ints_refuse_fractions_exponents_and_the_range() {
        let p = int(1u32, 16);
        for bad in ["0", "17", "-1", "1.5", "1e1", "NaN", "inf", "99999999999999999999", ""] {
            assert!(p(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(p("16"), Ok(16));
        assert!(p("17").unwrap_err().contains("1 to 16"));
        assert!(millis(1)("86400001").is_err());
        assert!(seconds(0.0)("31536001").is_err());
    }
}
