//! insights (in progress).
