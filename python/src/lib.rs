//! The `trellis` Python package's native module (`trellis._native`): the
//! Rust client (`client`) and gateway (`gateway`) behind asyncio
//! futures, and the conversions between BACnet and Python values
//! (`values`, `records`, `errors`).
//!
//! The Python side (`python/trellis/`) gives these their coroutines,
//! keyword arguments, dataclasses and exceptions; this module stays thin.
//! Requests run on one shared tokio runtime (`bridge`), served gateways
//! on runtimes and threads of their own.
//!
//! Must never: hold the GIL while waiting on the network, or panic across
//! the boundary (every failure is a Python exception).

mod bridge;
mod client;
mod errors;
mod gateway;
mod records;
mod values;

use pyo3::prelude::*;

/// Every enumeration the package names, as (enumeration, [(name, value)]):
/// what `tools/gen_enums.py` writes `trellis/_enums.py` from.
#[pyfunction]
fn enum_tables() -> Vec<(&'static str, Vec<(&'static str, u32)>)> {
    use bacnet::enums::*;
    fn table<T: Copy + Into<u32>>(known: &[(T, &'static str)]) -> Vec<(&'static str, u32)> {
        known.iter().map(|(v, n)| (*n, (*v).into())).collect()
    }
    vec![
        ("ObjectType", table(bacnet::ObjectType::KNOWN)),
        ("PropertyIdentifier", table(PropertyIdentifier::KNOWN)),
        ("EngineeringUnits", table(EngineeringUnits::KNOWN)),
        ("ErrorClass", table(ErrorClass::KNOWN)),
        ("ErrorCode", table(ErrorCode::KNOWN)),
        ("Segmentation", table(Segmentation::KNOWN)),
        ("EventState", table(EventState::KNOWN)),
        ("Reliability", table(Reliability::KNOWN)),
        ("EnableDisable", table(EnableDisable::KNOWN)),
        ("ReinitializedState", table(ReinitializedState::KNOWN)),
        ("RejectReason", RejectReason::KNOWN.iter().map(|(v, n)| (*n, u32::from(v.0))).collect()),
        ("AbortReason", AbortReason::KNOWN.iter().map(|(v, n)| (*n, u32::from(v.0))).collect()),
    ]
}

/// The native module.
#[pymodule]
#[pyo3(name = "_native")]
fn trellis_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<client::NativeClient>()?;
    m.add_class::<client::CovListener>()?;
    m.add_class::<gateway::NativeGateway>()?;
    m.add_function(wrap_pyfunction!(enum_tables, m)?)?;
    m.add_class::<bridge::Canceller>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
