//! A circuit breaker: after N consecutive failures, calls fail at once for a
//! cool-down, so a dead provider does not stall every agent turn for minutes.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Shared breaker state.
pub struct Breaker {
    threshold: u32,
    cooldown: Duration,
    state: Mutex<(u32, Option<Instant>)>,
}

impl Breaker {
    /// Opens after `threshold` failures in a row, for `cooldown`.
    pub fn new(threshold: u32, cooldown: Duration) -> Self {
        Self { threshold: threshold.max(1), cooldown, state: Mutex::new((0, None)) }
    }

    /// `Err(seconds left)` while open; half-opens after the cool-down.
    pub fn check(&self) -> Result<(), (u32, u64)> {
        let Ok(mut state) = self.state.lock() else { return Ok(()) };
        match state.1 {
            Some(until) if Instant::now() < until => {
                Err((state.0, until.saturating_duration_since(Instant::now()).as_secs().max(1)))
            }
            Some(_) => {
                // Half-open: one more failure re-opens it at once.
                state.1 = None;
                state.0 = self.threshold - 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Records a success: closes the breaker.
    pub fn success(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = (0, None);
        }
    }

    /// Records a failure; opens the breaker at the threshold.
    pub fn failure(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.0 += 1;
            if state.0 >= self.threshold {
                state.1 = Some(Instant::now() + self.cooldown);
                tracing::warn!(failures = state.0, "LLM circuit breaker opened");
            }
        }
    }

    /// Whether calls are being refused now.
    pub fn is_open(&self) -> bool {
        self.state.lock().map(|s| s.1.is_some_and(|until| Instant::now() < until)).unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_threshold_and_half_opens_after_cooldown() {
        let b = Breaker::new(3, Duration::from_millis(30));
        for _ in 0..2 {
            b.failure();
        }
        assert!(b.check().is_ok());
        b.failure();
        assert!(b.is_open() && b.check().is_err());
        std::thread::sleep(Duration::from_millis(40));
        assert!(b.check().is_ok(), "half-open after the cool-down");
        b.failure();
        assert!(b.is_open(), "one failure re-opens it");
        std::thread::sleep(Duration::from_millis(40));
        assert!(b.check().is_ok());
        b.success();
        b.failure();
        assert!(!b.is_open());
    }
}
