pub(crate) mod continuation_points;
pub(crate) mod controller;
pub(crate) mod instance;
pub(crate) mod manager;
#[macro_use]
pub(crate) mod message_handler;
mod services;
