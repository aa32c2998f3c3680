//! vehicles (in progress).
