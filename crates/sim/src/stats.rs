//! Small statistics shared by sweeps, `compare` and the paper reproductions.
//!
//! **One rule for empty input:** a statistic of no values is NaN (there is nothing to average), never 0.
//! A caller that wants another value for an empty set says so where it calls (`if x.is_empty() { … }`), so a
//! missing measurement cannot pass for a measured zero. A spread of a single value is 0.

/// Arithmetic mean; NaN for empty input.
pub fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        f64::NAN
    } else {
        x.iter().sum::<f64>() / x.len() as f64
    }
}

/// Sample standard deviation (n − 1); NaN for empty input, 0 for one value.
pub fn std(x: &[f64]) -> f64 {
    mean_sd(x).1
}

/// Mean and sample standard deviation (n − 1): (NaN, NaN) for empty input, (x, 0) for one value.
pub fn mean_sd(x: &[f64]) -> (f64, f64) {
    if x.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = x.len() as f64;
    let m = mean(x);
    if x.len() < 2 {
        return (m, 0.0);
    }
    let v = x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1.0);
    (m, v.sqrt())
}

/// Standard error of the mean (sample standard deviation / √n); NaN for empty input, 0 for one value.
pub fn sem(x: &[f64]) -> f64 {
    match x.len() {
        0 => f64::NAN,
        1 => 0.0,
        n => std(x) / (n as f64).sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_is_nan_and_one_value_has_no_spread() {
        assert!(mean(&[]).is_nan() && std(&[]).is_nan() && sem(&[]).is_nan());
        assert!(mean_sd(&[]).0.is_nan() && mean_sd(&[]).1.is_nan());
        assert_eq!(mean_sd(&[5.0]), (5.0, 0.0));
        assert_eq!((std(&[5.0]), sem(&[5.0])), (0.0, 0.0));
    }

    #[test]
    fn sample_forms() {
        assert_eq!(mean(&[1.0, 3.0]), 2.0);
        assert!((std(&[1.0, 3.0]) - 2f64.sqrt()).abs() < 1e-12);
        assert!((sem(&[1.0, 3.0]) - 1.0).abs() < 1e-12);
        let (m, s) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        assert!((s - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }
}
