//! compare (in progress).
