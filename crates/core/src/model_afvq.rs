//! Paper 002's steady-state two-way throughput model (placeholder, filled in below).
