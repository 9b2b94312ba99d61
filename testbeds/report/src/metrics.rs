//! Metrics computed once for every kind of run: percentiles and Jain's fairness index.

/// Nearest-rank percentile of a sorted slice (`q` in 0..=1).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// Jain's fairness index (Jain, Chiu, Hawe 1984): (Σx)² / (n·Σx²), 1 = perfectly fair;
/// 1 for an empty or all-zero set.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || s2 == 0.0 {
        1.0
    } else {
        s * s / (x.len() as f64 * s2)
    }
}
