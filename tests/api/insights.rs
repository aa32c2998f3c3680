//! insights tests.
