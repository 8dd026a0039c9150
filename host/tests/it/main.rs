//! Host integration tests.
