//! What belongs to the process, below every front door (HTTP today): its configuration's
//! limits, logging, metrics, credentials and quotas, memory and scheduling. Nothing here imports
//! a front door or the engine; both use it.

pub mod credentials;
pub mod keys;
pub mod keys_reload;
pub mod limits;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod priority;
