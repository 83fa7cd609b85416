//! Integration tests against real servers on loopback.
