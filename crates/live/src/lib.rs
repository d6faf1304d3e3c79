//! # ackshape-live
//!
//! The live driver of `ackshape-core` (work in progress).
