//! Temperature of one ioMemory device: a single thermal node (controller,
//! NAND and heat sink) with a heat capacity, cooled to ambient air through
//! a thermal resistance that falls with airflow.
//!
//! `C dT/dt = P − (T − T_ambient) / R(airflow)`, integrated exactly over
//! each step at constant power. Parameters and sources: docs/MODEL.md.

use serde::{Deserialize, Serialize};

/// Where the card runs.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Air temperature at the card's inlet, °C.
    pub ambient_c: f64,
    /// Airflow over the card, linear feet per minute.
    pub airflow_lfm: f64,
    /// A Duo's external power cable is connected (single cards ignore it).
    pub external_power: bool,
}

impl Default for Environment {
    fn default() -> Environment {
        Environment {
            ambient_c: 25.0,
            airflow_lfm: 300.0,
            external_power: true,
        }
    }
}

/// Write throttling starts at this internal temperature (°C).
pub const THROTTLE_ON_C: f64 = 78.0;
/// ... and stops once the device has cooled below this (°C).
pub const THROTTLE_OFF_C: f64 = 75.0;
/// The device powers off at this internal temperature (°C).
pub const POWER_OFF_C: f64 = 85.0;
/// Heat capacity of one member, J/K.
pub const HEAT_CAPACITY_J_PER_K: f64 = 40.0;
/// Conductance to ambient air in still air, W/K.
pub const STILL_AIR_W_PER_K: f64 = 0.167;
/// Conductance gained per √(airflow / 100 LFM), W/K (forced convection
/// grows with the square root of air speed over a flat plate).
pub const FORCED_AIR_W_PER_K: f64 = 0.126;

/// The thermal state of one member.
#[derive(Clone, Debug)]
pub struct Thermal {
    ambient_c: f64,
    resistance_k_per_w: f64,
    capacity_j_per_k: f64,
    temperature_c: f64,
    temperature_max_c: f64,
}

impl Thermal {
    /// A device at ambient temperature.
    /// `cooling_share` scales the conductance (and heat capacity) of one
    /// ioDimm of a Duo, on which the parameters are calibrated.
    pub fn new(env: Environment, cooling_share: f64) -> Thermal {
        let airflow = env.airflow_lfm.max(0.0);
        let conductance =
            cooling_share * (STILL_AIR_W_PER_K + FORCED_AIR_W_PER_K * (airflow / 100.0).sqrt());
        Thermal {
            ambient_c: env.ambient_c,
            resistance_k_per_w: 1.0 / conductance,
            capacity_j_per_k: HEAT_CAPACITY_J_PER_K * cooling_share,
            temperature_c: env.ambient_c,
            temperature_max_c: env.ambient_c,
        }
    }

    pub fn temperature_c(&self) -> f64 {
        self.temperature_c
    }

    pub fn temperature_max_c(&self) -> f64 {
        self.temperature_max_c
    }

    pub fn raise_max(&mut self, t: f64) {
        self.temperature_max_c = self.temperature_max_c.max(t);
    }

    /// The temperature `power_w` held for `dt_s` seconds leads to.
    pub fn advance(&mut self, power_w: f64, dt_s: f64) -> f64 {
        let target = self.ambient_c + power_w * self.resistance_k_per_w;
        let tau = self.resistance_k_per_w * self.capacity_j_per_k;
        self.temperature_c = target + (self.temperature_c - target) * (-dt_s / tau).exp();
        self.temperature_max_c = self.temperature_max_c.max(self.temperature_c);
        self.temperature_c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settles_at_ambient_plus_power_times_resistance() {
        let env = Environment {
            ambient_c: 30.0,
            airflow_lfm: 300.0,
            external_power: true,
        };
        let mut t = Thermal::new(env, 1.0);
        for _ in 0..10_000 {
            t.advance(10.0, 1.0);
        }
        let r = 1.0 / (STILL_AIR_W_PER_K + FORCED_AIR_W_PER_K * 3f64.sqrt());
        assert!((t.temperature_c() - (30.0 + 10.0 * r)).abs() < 1e-6);
        assert!(t.temperature_max_c() >= t.temperature_c());
    }

    #[test]
    fn less_airflow_runs_hotter() {
        let at = |lfm| {
            let mut t = Thermal::new(
                Environment {
                    ambient_c: 25.0,
                    airflow_lfm: lfm,
                    external_power: true,
                },
                1.0,
            );
            t.advance(12.0, 600.0)
        };
        assert!(at(0.0) > at(100.0));
        assert!(at(100.0) > at(300.0));
    }
}
