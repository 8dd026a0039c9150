mod capabilities;
mod endpoint;
mod limits;
mod server;

pub use capabilities::{HistoryServerCapabilities, ServerCapabilities};
pub use endpoint::{EndpointIdentifier, ServerEndpoint};
pub use limits::{Limits, OperationalLimits, SubscriptionLimits};
pub use server::{CertificateValidation, TcpConfig};
pub use server::{ServerConfig, ServerUserToken, ANONYMOUS_USER_TOKEN_ID};
