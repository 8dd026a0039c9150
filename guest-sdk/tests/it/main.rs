//! Integration tests of the guest SDK.
