#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| loom_protocol::fuzzing::node_signed_identity(data));
