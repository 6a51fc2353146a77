//! Socket bytes to typed watch events.
