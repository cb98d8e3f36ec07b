//! Layout algebra tests.
