#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| loom_protocol::fuzzing::e2ee(data));
