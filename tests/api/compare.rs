//! compare tests.
