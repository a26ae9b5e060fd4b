//! SNIA PTS steady-state detection (SNIA Solid State Storage Performance
//! Test Specification, Enterprise v1.1, §3.4): over a window of the last
//! five rounds, the data excursion (max − min) is at most 20 % of the
//! window's average, and the excursion of the least-squares line across the
//! window is at most 10 % of that average.

/// Window length in rounds.
pub const WINDOW_ROUNDS: usize = 5;

/// Result of checking one window.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SteadyCheck {
    pub mean: f64,
    pub data_excursion: f64,
    pub slope_excursion: f64,
    pub steady: bool,
}

/// The least-squares line through `w` (x = 0, 1, 2, …): its mean and its
/// slope per step. The line passes through the mean at the middle x.
pub fn least_squares(w: &[f64]) -> (f64, f64) {
    let n = w.len() as f64;
    let mean = w.iter().sum::<f64>() / n;
    let xm = (n - 1.0) / 2.0;
    let sxy: f64 = w
        .iter()
        .enumerate()
        .map(|(i, y)| (i as f64 - xm) * (y - mean))
        .sum();
    let sxx: f64 = (0..w.len()).map(|i| (i as f64 - xm).powi(2)).sum();
    (mean, sxy / sxx)
}

/// Checks the window ending at the last element of `rounds`.
pub fn check_window(rounds: &[f64]) -> Option<SteadyCheck> {
    if rounds.len() < WINDOW_ROUNDS {
        return None;
    }
    let w = &rounds[rounds.len() - WINDOW_ROUNDS..];
    let n = w.len() as f64;
    let (mean, slope) = least_squares(w);
    let max = w.iter().copied().fold(f64::MIN, f64::max);
    let min = w.iter().copied().fold(f64::MAX, f64::min);
    let data_excursion = max - min;
    let slope_excursion = (slope * (n - 1.0)).abs();
    let steady =
        mean != 0.0 && data_excursion <= 0.20 * mean.abs() && slope_excursion <= 0.10 * mean.abs();
    Some(SteadyCheck {
        mean,
        data_excursion,
        slope_excursion,
        steady,
    })
}

/// First round (1-based, the window's last) at which the series is steady.
pub fn converged_round(rounds: &[f64]) -> Option<usize> {
    (WINDOW_ROUNDS..=rounds.len())
        .find(|&end| check_window(&rounds[..end]).is_some_and(|c| c.steady))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_series_converges_at_first_window() {
        assert_eq!(converged_round(&[100.0; 8]), Some(5));
    }

    #[test]
    fn drifting_series_never_converges() {
        // 5 % per round: data excursion 20 %+ of the mean and slope too steep
        let s: Vec<f64> = (0..20).map(|i| 100.0 * 1.05f64.powi(i)).collect();
        assert_eq!(converged_round(&s), None);
    }

    #[test]
    fn noisy_but_level_series_converges() {
        let s = [100.0, 108.0, 93.0, 104.0, 97.0, 102.0];
        let c = check_window(&s).unwrap();
        assert!(c.steady, "{c:?}");
    }

    #[test]
    fn decaying_then_flat_converges_late() {
        let mut s: Vec<f64> = (0..10).map(|i| 300.0 - 20.0 * i as f64).collect();
        s.extend([100.0; 6]);
        let r = converged_round(&s).unwrap();
        assert!(r > 10, "converged too early at {r}");
    }

    #[test]
    fn too_noisy_never_converges() {
        let s: Vec<f64> = (0..30)
            .map(|i| if i % 2 == 0 { 70.0 } else { 130.0 })
            .collect();
        assert_eq!(converged_round(&s), None);
    }

    #[test]
    fn short_series_is_undecided() {
        assert!(check_window(&[1.0, 2.0]).is_none());
    }
}
