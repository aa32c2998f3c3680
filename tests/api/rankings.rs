//! rankings tests.
