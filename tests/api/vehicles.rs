//! vehicles tests.
