//! CuTe-style layout algebra.
