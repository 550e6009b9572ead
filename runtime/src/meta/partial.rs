//! placeholder: filled in by the meta types work
