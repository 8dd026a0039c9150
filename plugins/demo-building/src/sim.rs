//! The building: a zone conditioned by one air handler, run by a small
//! control program, as a deterministic function of time.
//!
//! Each tick, with `dt` the seconds since the last one (capped at 5 minutes):
//! - Outdoor air follows a daily sinusoid, 10 °C ± 8 K, warmest at 15:00.
//! - The occupancy sensor follows the schedule: weekdays 07:00–19:00.
//! - The control program commands, at priority 16 (so an operator's command
//!   at a higher priority wins): the fan on while occupied (or overridden)
//!   and the mode is not Off; the damper/valve to the output of a PI loop on
//!   the zone temperature (40 %/K, 0.05 %/K·s; at least 15 % for ventilation
//!   while the fan runs). Heat mode heats toward the setpoint, Cool mode
//!   cools toward the cooling setpoint, Auto does both with a dead band.
//! - Unoccupied, the setpoints are set back by 3 K.
//! - Supply air settles (τ 30 s) toward 35 °C when heating, 13 °C when
//!   cooling, a zone/outdoor mix otherwise; the zone settles (τ 5 min)
//!   toward the supply air in proportion to the damper, or floats toward
//!   half the outdoor temperature plus 11 °C with the fan off.
//! - The zone reading adds a ±0.05 K wobble (a 97 s sine), as sensors do.

use crate::config::Role;
use trellis_guest_sdk::{DateTime, ObjectIdentifier, PresentValue, Store};

const MODE_OFF: u32 = 1;
const MODE_HEAT: u32 = 2;
const MODE_COOL: u32 = 3;
const MODE_AUTO: u32 = 4;
const FAN_STATUS_OFF: u32 = 1;
const FAN_STATUS_ON: u32 = 2;
const PROGRAM_PRIORITY: u8 = 16;
/// Proportional gain of the zone loop, % per K.
const KP: f64 = 40.0;
/// Integral gain of the zone loop, % per K per second.
const KI: f64 = 0.05;
/// Damper position for ventilation while the fan runs, %.
const MINIMUM_DAMPER: f64 = 15.0;

/// The objects the simulation drives, by role.
#[derive(Debug, Default, Clone)]
pub struct Points {
    pub zone_temperature: Option<ObjectIdentifier>,
    pub outdoor_temperature: Option<ObjectIdentifier>,
    pub supply_air_temperature: Option<ObjectIdentifier>,
    pub damper_command: Option<ObjectIdentifier>,
    pub zone_setpoint: Option<ObjectIdentifier>,
    pub cooling_setpoint: Option<ObjectIdentifier>,
    pub occupancy: Option<ObjectIdentifier>,
    pub fan_command: Option<ObjectIdentifier>,
    pub occupancy_override: Option<ObjectIdentifier>,
    pub operating_mode: Option<ObjectIdentifier>,
    pub fan_status: Option<ObjectIdentifier>,
}

impl Points {
    /// Assign `id` to `role`; each role is taken once.
    pub fn assign(&mut self, role: Role, id: ObjectIdentifier) -> Result<(), String> {
        let slot = match role {
            Role::ZoneTemperature => &mut self.zone_temperature,
            Role::OutdoorTemperature => &mut self.outdoor_temperature,
            Role::SupplyAirTemperature => &mut self.supply_air_temperature,
            Role::DamperCommand => &mut self.damper_command,
            Role::ZoneSetpoint => &mut self.zone_setpoint,
            Role::CoolingSetpoint => &mut self.cooling_setpoint,
            Role::Occupancy => &mut self.occupancy,
            Role::FanCommand => &mut self.fan_command,
            Role::OccupancyOverride => &mut self.occupancy_override,
            Role::OperatingMode => &mut self.operating_mode,
            Role::FanStatus => &mut self.fan_status,
        };
        if let Some(other) = slot {
            return Err(format!("role {role:?} is taken by {other} already"));
        }
        *slot = Some(id);
        Ok(())
    }

    /// Check that every object suits its role: its kind of value, and a
    /// priority array where the program commands it.
    pub fn check(&self, store: &Store) -> Result<(), String> {
        let analog = [
            self.zone_temperature,
            self.outdoor_temperature,
            self.supply_air_temperature,
            self.damper_command,
            self.zone_setpoint,
            self.cooling_setpoint,
        ];
        let binary = [self.occupancy, self.fan_command, self.occupancy_override];
        let multi = [self.operating_mode, self.fan_status];
        let kind_ok = |ids: &[Option<ObjectIdentifier>], f: fn(PresentValue) -> bool| {
            ids.iter().flatten().try_for_each(|id| match store.present_value(*id) {
                Some(v) if f(v) => Ok(()),
                _ => Err(format!("{id} does not have the kind of value its role needs")),
            })
        };
        kind_ok(&analog, |v| matches!(v, PresentValue::Analog(_)))?;
        kind_ok(&binary, |v| matches!(v, PresentValue::Binary(_)))?;
        kind_ok(&multi, |v| matches!(v, PresentValue::MultiState(_)))?;
        for id in [self.damper_command, self.fan_command].into_iter().flatten() {
            if !store.is_commandable(id) {
                return Err(format!("{id} is commanded by the control program and must be commandable"));
            }
        }
        Ok(())
    }
}

/// The simulation's own state (what the objects do not show).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sim {
    /// Zone temperature without the sensor's wobble.
    pub zone: f64,
    /// Supply air temperature.
    pub supply: f64,
    /// Integral term of the zone loop, %.
    pub integral: f64,
    /// Time of the last tick.
    pub last: Option<DateTime>,
}

impl Sim {
    /// Start from the values the objects were configured with.
    pub fn new(points: &Points, store: &Store) -> Self {
        let read = |id: Option<ObjectIdentifier>, default: f64| {
            id.and_then(|id| store.analog(id)).map(f64::from).unwrap_or(default)
        };
        Sim {
            zone: read(points.zone_temperature, 20.0),
            supply: read(points.supply_air_temperature, 20.0),
            integral: 0.0,
            last: None,
        }
    }

    /// Advance to `now` and write the results to the store.
    pub fn tick(&mut self, points: &Points, store: &mut Store, now: DateTime) {
        let dt = match self.last {
            Some(last) => (now.unix_ms.saturating_sub(last.unix_ms) as f64 / 1000.0).min(300.0),
            None => 0.0,
        };
        self.last = Some(now);
        let t = now.unix_secs_f64();

        let hour = now.local_seconds_of_day() / 3600.0;
        let outdoor = 10.0 + 8.0 * (std::f64::consts::TAU * (hour - 9.0) / 24.0).sin();
        update(store, points.outdoor_temperature, PresentValue::Analog(outdoor as f32));

        let date = now.local_date();
        let scheduled = (1..=5).contains(&date.weekday) && (7.0..19.0).contains(&hour);
        update(store, points.occupancy, PresentValue::Binary(scheduled));
        let sensed = points.occupancy.and_then(|id| store.binary(id)).unwrap_or(scheduled);
        let overridden = points.occupancy_override.and_then(|id| store.binary(id)).unwrap_or(false);
        let occupied = sensed || overridden;

        let mode = points.operating_mode.and_then(|id| store.multi_state(id)).unwrap_or(MODE_AUTO);
        let setback = if occupied { 0.0 } else { 3.0 };
        let heat_sp = points.zone_setpoint.and_then(|id| store.analog(id)).map(f64::from).unwrap_or(21.0) - setback;
        let cool_sp = points.cooling_setpoint.and_then(|id| store.analog(id)).map(f64::from).unwrap_or(24.0) + setback;
        let cool_sp = cool_sp.max(heat_sp + 1.0);

        command(store, points.fan_command, PresentValue::Binary(occupied && mode != MODE_OFF));
        let fan_on = match points.fan_command {
            Some(id) => store.binary(id).unwrap_or(false),
            None => occupied && mode != MODE_OFF,
        };
        update(store, points.fan_status, PresentValue::MultiState(if fan_on { FAN_STATUS_ON } else { FAN_STATUS_OFF }));

        // The PI loop: output -100..=100 %, positive heats, negative cools.
        let (error, lo, hi) = match mode {
            MODE_HEAT => (heat_sp - self.zone, 0.0, 100.0),
            MODE_COOL => (cool_sp - self.zone, -100.0, 0.0),
            MODE_AUTO if self.zone < heat_sp => (heat_sp - self.zone, -100.0, 100.0),
            MODE_AUTO if self.zone > cool_sp => (cool_sp - self.zone, -100.0, 100.0),
            MODE_AUTO => (0.0, -100.0, 100.0),
            _ => (0.0, 0.0, 0.0),
        };
        let output = if fan_on {
            self.integral = (self.integral + KI * error * dt).clamp(lo, hi);
            (KP * error + self.integral).clamp(lo, hi)
        } else {
            self.integral = 0.0;
            0.0
        };
        let (heating, cooling) = (output > 0.0, output < 0.0);
        let program = if fan_on { output.abs().max(MINIMUM_DAMPER) } else { 0.0 };
        command(store, points.damper_command, PresentValue::Analog(program as f32));
        let damper = match points.damper_command {
            Some(id) => store.analog(id).map(f64::from).unwrap_or(program),
            None => program,
        }
        .clamp(0.0, 100.0)
            / 100.0;

        let supply_target = match (fan_on, heating, cooling) {
            (false, _, _) => self.zone,
            (true, true, _) => self.zone + (35.0 - self.zone) * damper,
            (true, _, true) => self.zone + (13.0 - self.zone) * damper,
            (true, false, false) => 0.8 * self.zone + 0.2 * outdoor,
        };
        self.supply = settle(self.supply, supply_target, dt, 30.0);
        update(store, points.supply_air_temperature, PresentValue::Analog(self.supply as f32));

        let free = 0.5 * outdoor + 11.0;
        let zone_target = if fan_on { free + (self.supply - free) * damper } else { free };
        self.zone = settle(self.zone, zone_target, dt, 300.0);
        let wobble = 0.05 * (std::f64::consts::TAU * t / 97.0).sin();
        update(store, points.zone_temperature, PresentValue::Analog((self.zone + wobble) as f32));
    }

    /// The state for a hot swap: zone, supply and integral, little-endian f64.
    pub fn state_bytes(&self) -> Vec<u8> {
        [self.zone, self.supply, self.integral].iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// Take over [`state_bytes`](Self::state_bytes) (empty: a version with no
    /// state; keep the configured start).
    pub fn restore(&mut self, bytes: &[u8]) -> Result<(), String> {
        if bytes.is_empty() {
            return Ok(());
        }
        if bytes.len() != 24 {
            return Err(format!("demo-building state is {} bytes; this version reads 24", bytes.len()));
        }
        let f = |i: usize| f64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
        let (zone, supply, integral) = (f(0), f(1), f(2));
        if ![zone, supply, integral].iter().all(|x| x.is_finite()) {
            return Err("demo-building state holds a value that is not a number".into());
        }
        *self = Sim { zone, supply, integral, last: self.last };
        Ok(())
    }
}

/// First-order lag: `x` after `dt` seconds toward `target` with time constant `tau`.
fn settle(x: f64, target: f64, dt: f64, tau: f64) -> f64 {
    x + (target - x) * (1.0 - (-dt / tau).exp())
}

/// The model's value for an input; ignored while it is out of service.
fn update(store: &mut Store, id: Option<ObjectIdentifier>, v: PresentValue) {
    if let Some(id) = id {
        let _ = store.update(id, v);
    }
}

/// The control program's command at priority 16.
fn command(store: &mut Store, id: Option<ObjectIdentifier>, v: PresentValue) {
    if let Some(id) = id {
        let _ = store.command(id, PROGRAM_PRIORITY, Some(v));
    }
}
