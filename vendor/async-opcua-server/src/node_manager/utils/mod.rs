mod opaque_node_id;
mod operations;
mod result;
mod sync_sampler;

pub use opaque_node_id::*;
pub use operations::{get_namespaces_for_user, get_node_metadata};
pub(crate) use result::{consume_results, IntoResult};
pub use sync_sampler::SyncSampler;
