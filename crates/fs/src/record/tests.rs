//! Unit tests of the record layout.
